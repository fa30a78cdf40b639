"""asv / script: the real models of docs/onnx_quantize.md, whole, batch 1, in one process with
the same threads: dnnq int8 (the model quantized by ``dnnq.onnx.quantize``), dnnq f32 (the
f32 file), ONNX Runtime int8 (its own ``quantize_static`` model of the same file: its fastest
int8 form) and OpenVINO int8 (dnnq's QDQ file, the layout its own quantizer writes).

``track_ratio_vs_*``: the peer's time / dnnq int8's time (> 1: dnnq faster), best of
interleaved rounds; ``track_ratio_int8_vs_f32``: dnnq f32 / dnnq int8.  Shapes as in issue
27's table: PP-OCRv4 det 1x3x736x960, rec 1x3x48x480, cls 1x3x48x192, ddddocr 1x1x64x192,
ddddocr common_det 1x3x416x416, silero VAD 335 frames.  Needs onnx, onnxruntime, Pillow and
the model packages (``pip install --no-deps rapidocr-onnxruntime==1.4.4 ddddocr==1.6.1
silero-vad==6.2.3``); OpenVINO is optional.  As a script:
``python -P asv_bench/benchmarks/bench_onnx.py [threads] [seconds]``.
"""
import importlib.util
import logging
import os
import tempfile
import time

import numpy as np

import dnnq

MODELS = {
    "ppocr_det": ("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_det_infer.onnx"),
    "ppocr_rec": ("rapidocr_onnxruntime", "models", "ch_PP-OCRv4_rec_infer.onnx"),
    "ppocr_cls": ("rapidocr_onnxruntime", "models", "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    "ddddocr": ("ddddocr", "common.onnx"),
    "ddddocr_det": ("ddddocr", "common_det.onnx"),
    "silero": ("silero_vad", "data", "silero_vad_16k_sequence.onnx"),
}
RECURRENT = ("ddddocr", "silero")


def _file(name):
    spec = importlib.util.find_spec(MODELS[name][0])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *MODELS[name][1:])
    return path if os.path.exists(path) else None


def _text(text, height, width, gray=False):
    from dnnq.demo.ocr import FONT
    from PIL import Image, ImageDraw, ImageFont
    img = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(img).text((4, height // 8), text, fill="black",
                             font=ImageFont.truetype(FONT, int(height * 0.6)))
    a = np.asarray(img.convert("L") if gray else img).astype(np.float32) / 255
    return a[None, None] if gray else ((a - 0.5) / 0.5).transpose(2, 0, 1)[None].copy()


def _inputs(name, variant):
    """A representative input (variant 0: the timed one; 1, 2: calibration)."""
    words = ["Benchmark 2026 text", "Calibration WXYZ 42", "quick brown fox 07"][variant]
    if name == "ppocr_det":
        from dnnq.demo.ocr import normalize, render_page
        page = render_page([words, words[::-1]], size=(960, 736), font_size=40)
        return {"x": normalize(page)}
    if name in ("ppocr_rec", "ppocr_cls"):
        return {"x": _text(words, 48, 480 if name == "ppocr_rec" else 192)}
    if name == "ddddocr":
        return {"input1": _text(words[:6], 64, 192, gray=True)}
    if name == "ddddocr_det":
        x = (_text(words[:5], 416, 416) * 0.5 + 0.5) * 255
        return {"images": np.ascontiguousarray(x[:, ::-1])}
    rng = np.random.default_rng(variant)
    t = np.arange(335 * 576) / 16000
    f0 = (140, 110, 190)[variant]
    sig = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 10))
    sig = 0.3 * sig * (np.sin(2 * np.pi * 0.5 * t) > 0) + 0.01 * rng.standard_normal(t.size)
    state = np.zeros((1, 1, 128), np.float32)
    return {"input": sig.astype(np.float32).reshape(335, 576), "h": state, "c": state}


def _quantized(name, tmp):
    """(f32 path, dnnq's QDQ path, ORT's QDQ path or None)."""
    import onnx
    import dnnq.onnx as donnx
    src = _file(name)
    calib = [_inputs(name, 1), _inputs(name, 2)]
    ops = ("Conv", "ConvTranspose", "MatMul", "Gemm") + (("LSTM",) if name in RECURRENT else ())
    ours = os.path.join(tmp, f"{name}.dnnq.onnx")
    onnx.save(donnx.quantize(src, calib, op_types=ops), ours)
    theirs = os.path.join(tmp, f"{name}.ort.onnx")
    try:
        from onnx import version_converter
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)
        m = onnx.load(src)
        if m.opset_import[0].version < 13:  # per-axis DequantizeLinear needs opset 13
            m = version_converter.convert_version(m, 13)
        g = m.graph  # Constant-node weights as initializers (ORT quantizes them as weights)
        keep = []
        for n in g.node:
            if n.op_type == "Constant" and [a.name for a in n.attribute] == ["value"]:
                t = onnx.TensorProto()
                t.CopyFrom(n.attribute[0].t)
                t.name = n.output[0]
                g.initializer.append(t)
            else:
                keep.append(n)
        del g.node[:]
        g.node.extend(keep)
        f32 = os.path.join(tmp, f"{name}.f32.onnx")
        onnx.save(m, f32)
        logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer's advice

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter(calib)

            def get_next(self):
                return next(self.it, None)
        quantize_static(f32, theirs, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=True)
    except Exception:  # no ORT quantizer, or it refused the model
        theirs = None
    return src, ours, theirs


def _runners(name, threads, tmp):
    import dnnq.onnx as donnx
    src, ours, theirs = _quantized(name, tmp)
    feed = _inputs(name, 0)
    runs = {}
    for key, path in (("dnnq_int8", ours), ("dnnq_f32", src)):
        s = donnx.InferenceSession(path, threads=threads)
        runs[key] = lambda s=s: s.run(None, feed)
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        so.log_severity_level = 3
        if theirs is not None:
            s = ort.InferenceSession(theirs, so, providers=["CPUExecutionProvider"])
            runs["ort_int8"] = lambda s=s: s.run(None, feed)
    except ImportError:
        pass
    try:
        import openvino as ov
        core = ov.Core()
        c = core.compile_model(core.read_model(ours), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
        req = c.create_infer_request()
        runs["openvino_int8"] = lambda: req.infer(feed)
    except ImportError:
        pass
    for run in runs.values():
        run()
    return runs


def best_rounds(runs, seconds):
    best = {k: float("inf") for k in runs}
    end = time.perf_counter() + seconds
    while True:
        for k, run in runs.items():
            t = time.perf_counter()
            run()
            best[k] = min(best[k], time.perf_counter() - t)
        if time.perf_counter() > end:
            return best


class OnnxModels:
    params = (list(MODELS), [1, 2])
    param_names = ["model", "threads"]
    timeout = 600

    def setup(self, model, threads):
        if _file(model) is None:
            raise NotImplementedError(f"the package of {model} is not installed")
        try:
            self.tmp = tempfile.TemporaryDirectory()
            dnnq.set_num_threads(threads)
            self.runs = _runners(model, threads, self.tmp.name)
        except ImportError as e:
            raise NotImplementedError(f"needs onnx / onnxruntime / Pillow: {e}")
        self.best = best_rounds(self.runs, 8.0)

    def teardown(self, model, threads):
        self.tmp.cleanup()

    def _ratio(self, peer):
        if peer not in self.best:
            raise NotImplementedError(f"{peer} is not installed")
        return self.best[peer] / self.best["dnnq_int8"]

    def track_ratio_vs_openvino_int8(self, model, threads):
        return self._ratio("openvino_int8")

    def track_ratio_vs_ort_int8(self, model, threads):
        return self._ratio("ort_int8")

    def track_ratio_int8_vs_f32(self, model, threads):
        return self._ratio("dnnq_f32")

    def track_ms_dnnq_int8(self, model, threads):
        return self.best["dnnq_int8"] * 1e3

    track_ratio_vs_openvino_int8.unit = "OpenVINO int8 time / dnnq int8 time"
    track_ratio_vs_ort_int8.unit = "ONNX Runtime int8 time / dnnq int8 time"
    track_ratio_int8_vs_f32.unit = "dnnq f32 time / dnnq int8 time"
    track_ms_dnnq_int8.unit = "ms"


if __name__ == "__main__":
    import sys
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    dnnq.set_num_threads(threads)
    print(f"threads={threads}; ms per run, best of interleaved rounds over ~{seconds:.0f} s")
    for name in MODELS:
        if _file(name) is None:
            print(f"{name}: package not installed")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            best = best_rounds(_runners(name, threads, tmp), seconds)
        print(f"{name:12s} " + "  ".join(f"{k} {v * 1e3:8.2f}" for k, v in best.items()))
