"""Real ONNX models from PyPI packages, quantized by ONNX Runtime, and their inputs / decoders.

The packages are read as files (``importlib.util.find_spec``), never imported: rapidocr, ddddocr
and silero-vad import OpenCV / PyTorch at import time. Nothing is downloaded.
"""
import importlib.util
import os
import platform

import numpy as np

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def ort_arithmetic():
    """Whether ONNX Runtime here runs the int8 kernels whose arithmetic dnnq's rounding="every"
    computes: its x86-64 build on a CPU with AVX2 (QLinearAdd is MLAS's AVX2 kernel there;
    other CPUs run other kernels). Tests comparing bytes with ONNX Runtime ask this."""
    import dnnq
    return platform.machine().lower() in ("x86_64", "amd64") and \
        bool(dnnq.cpu_info().get("avx2"))


def package_file(package, *parts):
    """Path of a file shipped by ``package`` (None if the package is not installed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    return path if os.path.exists(path) else None


MODELS = {
    "ppocr_det": ("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx"),
    "ppocr_rec": ("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_rec_infer.onnx"),
    "ppocr_cls": ("rapidocr_onnxruntime", "models", "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    "ddddocr": ("ddddocr", "common.onnx"),
    "silero": ("silero_vad", "data", "silero_vad_16k_sequence.onnx"),
}


def model_path(name):
    return package_file(*MODELS[name])


def prepare_f32(src):
    """The f32 model as ORT's quantizer needs it: opset >= 13 (ORT 1.32 writes per-axis
    DequantizeLinear into older opsets without upgrading them) and Constant-node weights as
    initializers (the quantizer treats Constant outputs as activations: u8, per tensor)."""
    import onnx
    from onnx import version_converter
    m = onnx.load(src)
    if m.opset_import[0].version < 13:
        m = version_converter.convert_version(m, 13)
    g = m.graph
    keep = []
    for n in g.node:
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            g.initializer.append(t)
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    return m


def ort_session(path):
    """ONNX Runtime's CPU session on ``path``: one thread, warnings off (the peer the tests
    compare with, as its users create it)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def quantize_qdq(f32_path, dst, feeds, op_types=None):
    """ORT's quantize_static: QDQ, u8 activations, s8 per-channel weights, MinMax."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    quantize_static(f32_path, dst, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True, op_types_to_quantize=op_types)


# --- inputs ----------------------------------------------------------------------------------
def render_text(text, height, size=None, pad=8, rotate=False, gray=False, width=None):
    """``text`` in DejaVu Sans, black on white, scaled to ``height`` pixels: uint8 HxWx3."""
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype(FONT, size or int(height * 0.7))
    box = font.getbbox(text)
    w, h = box[2] - box[0] + 2 * pad, box[3] - box[1] + 2 * pad
    img = Image.new("RGB", (w, h), "white")
    ImageDraw.Draw(img).text((pad - box[0], pad - box[1]), text, font=font, fill="black")
    if rotate:
        img = img.rotate(180)
    new_w = width or max(1, int(round(w * height / h)))
    img = img.resize((new_w, height), Image.BILINEAR)
    if gray:
        img = img.convert("L")
    return np.asarray(img)


def ppocr_input(img, width=None):
    """PP-OCR's normalisation: (x / 255 - 0.5) / 0.5, NCHW, right-padded with zeros."""
    x = (img.astype(np.float32) / 255 - 0.5) / 0.5
    x = x.transpose(2, 0, 1)[None]
    if width is not None and x.shape[3] < width:
        x = np.concatenate([x, np.zeros(x.shape[:3] + (width - x.shape[3],), np.float32)], 3)
    return np.ascontiguousarray(x)


def page(lines, size=(320, 160)):
    """A white page with text lines (uint8 HxWx3) for the detector."""
    from PIL import Image, ImageDraw, ImageFont
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 22)
    for i, t in enumerate(lines):
        d.text((16, 20 + 48 * i), t, font=font, fill="black")
    return np.asarray(img)


def speech_like(seconds=1.2, sr=16000, seed=0):
    """A synthetic signal: a voiced burst (harmonics of 140 Hz with a syllable envelope)
    between stretches of low noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    voiced = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12))
    env = np.clip(np.sin(2 * np.pi * 3 * t), 0, None) * ((t > 0.3) & (t < 0.9))
    x = 0.3 * voiced * env + 0.005 * rng.standard_normal(t.size)
    return x.astype(np.float32)


# --- decoders --------------------------------------------------------------------------------
def ctc_greedy(indices, blank=0):
    out, prev = [], None
    for i in indices:
        if i != prev and i != blank:
            out.append(int(i))
        prev = i
    return out


def ppocr_charset(model_file):
    import onnx
    m = onnx.load(model_file, load_external_data=False)
    chars = dict((p.key, p.value) for p in m.metadata_props)["character"].splitlines()
    return ["blank"] + chars + [" "]


def ddddocr_charset():
    path = package_file("ddddocr", "charsets.py")
    spec = importlib.util.spec_from_file_location("_ddddocr_charsets", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CHARSET_BETA


def cosine(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))
