"""``dnnq-demo ocr``: read rendered text lines with PP-OCRv4 (detection + recognition, the ONNX
files of the ``rapidocr-onnxruntime`` package) through ``dnnq.onnx``, in float32 and in int8
(both models quantized by ``dnnq.onnx.quantize``, calibrated on other rendered lines); print
the text read by both, whether they agree, and the time per page against ONNX Runtime (and
OpenVINO where installed) on the same files, same threads. See docs/demo.md.

The page is rendered with Pillow in DejaVu Sans (nothing is downloaded). The pipeline is
rapidocr's, without OpenCV: detection at the page's size, the text map thresholded at 0.3,
each band of text rows a line box, grown as rapidocr's unclip (ratio 1.6) grows it, cropped,
scaled to 48 pixels high and right-padded to 480, recognised, CTC-decoded with the model's
dictionary.
"""
import argparse
import importlib.util
import os
import sys
import time

import numpy as np

from dnnq.demo.model import DemoError

PACKAGE = "rapidocr_onnxruntime"
DET = "ch_PP-OCRv4_det_infer.onnx"
REC = "ch_PP-OCRv4_rec_infer.onnx"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PAGE = (960, 224)        # width, height of the detector's input (multiples of 32)
REC_W = 480              # the recogniser's input width (48 x 480, as the benchmark)
THRESH = 0.3             # rapidocr's text map threshold
UNCLIP = 1.6             # rapidocr's unclip ratio

LINES = ["Quantized models read text", "The quick brown fox jumps over",
         "Invoice 2026-11-27: 42.50 EUR"]
CALIBRATION = [["Pack my box with five dozen", "Sphinx of black quartz, judge",
                "Calibration 0123456789 WXYZ"],
               ["How vexingly quick daft zebras", "jump; bright vixens (42%)",
                "Lorem ipsum dolor sit amet"]]


def model_file(name):
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DemoError(f"the OCR models come from the {PACKAGE} package, which is not "
                        "installed: pip install --no-deps rapidocr-onnxruntime==1.4.4")
    path = os.path.join(list(spec.submodule_search_locations)[0], "models", name)
    if not os.path.exists(path):
        raise DemoError(f"{path} is missing from the installed {PACKAGE}")
    return path


def render_page(lines, size=PAGE, font_size=30):
    """A white page (uint8 HxWx3) with ``lines`` in DejaVu Sans, 70 pixels apart."""
    from PIL import Image, ImageDraw, ImageFont
    if not os.path.exists(FONT):
        raise DemoError(f"{FONT} is missing (apt-get install fonts-dejavu-core)")
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, font_size)
    for i, t in enumerate(lines):
        d.text((24, 14 + 70 * i), t, font=font, fill="black")
    return np.asarray(img)


def normalize(img):
    """PP-OCR's (x / 255 - 0.5) / 0.5, NCHW float32."""
    x = (img.astype(np.float32) / 255 - 0.5) / 0.5
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def line_boxes(prob):
    """(top, bottom, left, right) of each band of text rows in the detector's map, grown by
    rapidocr's unclip distance (area x 1.6 / perimeter)."""
    text = prob[0, 0] > THRESH
    rows = text.any(1)
    boxes, r = [], 0
    h, w = text.shape
    while r < h:
        if not rows[r]:
            r += 1
            continue
        r0 = r
        while r < h and rows[r]:
            r += 1
        cols = np.flatnonzero(text[r0:r].any(0))
        bh, bw = r - r0, cols[-1] + 1 - cols[0]
        if bh < 3:
            continue
        d = int(round(bh * bw * UNCLIP / (2 * (bh + bw))))
        boxes.append((max(0, r0 - d), min(h, r + d), max(0, cols[0] - d),
                      min(w, cols[-1] + 1 + d)))
    return boxes


def rec_input(img, box):
    from PIL import Image
    t, b, l, r = box
    crop = Image.fromarray(img[t:b, l:r])
    w = min(REC_W, max(1, int(round(crop.width * 48 / crop.height))))
    x = normalize(np.asarray(crop.resize((w, 48), Image.BILINEAR)))
    out = np.zeros((1, 3, 48, REC_W), np.float32)
    out[..., :w] = x
    return out


def charset(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    chars = dict((p.key, p.value) for p in m.metadata_props)["character"].splitlines()
    return ["blank"] + chars + [" "]


def ctc_decode(logits, chars):
    out, prev = [], None
    for i in logits[0].argmax(-1):
        if i != prev and i != 0:
            out.append(chars[i])
        prev = i
    return "".join(out).strip()


class Engine:
    """One runtime on one (det, rec) pair of models: ``read(img)`` -> lines of text."""

    def __init__(self, name, det, rec, chars):
        self.name, self.det, self.rec, self.chars = name, det, rec, chars

    def read(self, img):
        prob = self.det(normalize(img))
        return [ctc_decode(self.rec(rec_input(img, b)), self.chars)
                for b in line_boxes(prob)]

    def models(self, page, crops):
        """The models alone on fixed inputs (the timed work: det on the page, rec per line)."""
        self.det(page)
        for c in crops:
            self.rec(c)


def _dnnq(model, threads):
    import dnnq.onnx
    s = dnnq.onnx.InferenceSession(model, threads=threads)
    name = s.get_inputs()[0].name
    return lambda x: s.run(None, {name: x})[0]


def _ort(model, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else model
    s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return lambda x: s.run(None, {name: x})[0]


def _openvino(model, threads):
    import openvino as ov
    core = ov.Core()
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else \
        open(model, "rb").read()
    compiled = core.compile_model(core.read_model(data, b""), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    return lambda x: req.infer([x])[compiled.outputs[0]]


def _available(mod):
    return importlib.util.find_spec(mod) is not None


def _best_ms(fn, min_time):
    fn()
    best, spent = float("inf"), 0.0
    while spent < min_time or best == float("inf"):
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        best, spent = min(best, t), spent + t
    return best * 1e3


def run(args):
    import dnnq
    threads = args.threads or dnnq.get_num_threads()
    if threads < 1:
        raise DemoError(f"--threads {threads}: expected a positive number")
    before = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)  # the calibration runs too
    try:
        return _run(args, threads)
    finally:
        dnnq.set_num_threads(before)


def _run(args, threads):
    import dnnq
    import dnnq.onnx
    import onnx
    lines = args.line or LINES
    if len(lines) > 3:
        raise DemoError(f"{len(lines)} lines given; the page holds at most 3")
    det_path, rec_path = model_file(DET), model_file(REC)
    chars = charset(rec_path)
    page = render_page(lines)
    t0 = time.perf_counter()
    calib_pages = [render_page(c) for c in CALIBRATION]
    det_calib = [{"x": normalize(p)} for p in calib_pages]
    f32_det = _dnnq(det_path, threads)
    rec_calib = [{"x": rec_input(p, b)} for p in calib_pages for b in line_boxes(f32_det(
        normalize(p)))]
    det_q = dnnq.onnx.quantize(onnx.load(det_path), det_calib)
    rec_q = dnnq.onnx.quantize(onnx.load(rec_path), rec_calib)
    t_quant = time.perf_counter() - t0

    engines = [Engine("dnnq float32", f32_det, _dnnq(rec_path, threads), chars),
               Engine("dnnq int8", _dnnq(det_q, threads), _dnnq(rec_q, threads), chars)]
    peers_missing = []
    if not args.no_peers:
        for mod, label, make in (("onnxruntime", "ONNX Runtime", _ort),
                                 ("openvino", "OpenVINO", _openvino)):
            if not _available(mod):
                peers_missing.append(mod)
                continue
            engines.append(Engine(f"{label} float32", make(det_path, threads),
                                  make(rec_path, threads), chars))
            engines.append(Engine(f"{label} int8", make(det_q, threads),
                                  make(rec_q, threads), chars))

    texts = {e.name: e.read(page) for e in engines}
    ref, q8 = texts["dnnq float32"], texts["dnnq int8"]
    x_page = normalize(page)
    crops = [rec_input(page, b) for b in line_boxes(engines[0].det(x_page))]
    times = {}
    for _ in range(3):  # interleaved rounds, the best of each engine kept
        for e in engines:
            t = _best_ms(lambda e=e: e.models(x_page, crops), args.min_time / 3)
            times[e.name] = min(times.get(e.name, t), t)

    print(f"PP-OCRv4 det + rec from {PACKAGE}; dnnq {dnnq.__version__}, ISA "
          f"{dnnq.get_effective_cpu_isa()}, {threads} thread(s)")
    print(f"int8: both models quantized by dnnq.onnx.quantize (Conv / MatMul s8 weights per "
          f"channel, u8 activations) from {len(det_calib)} calibration pages, "
          f"{len(rec_calib)} lines; {t_quant:.1f} s")
    print()
    print(f"{'float32':<36s} | int8")
    for i in range(max(len(ref), len(q8))):
        a = ref[i] if i < len(ref) else ""
        b = q8[i] if i < len(q8) else ""
        print(f"{a:<36s} | {b}{'' if a == b else '   <- differs'}")
    agree = ref == q8
    print(f"int8 and float32 read the same text: {'yes' if agree else 'NO'}; rendered text "
          f"read exactly by float32: {'yes' if ref == list(lines) else 'no'}")
    for e in engines[2:]:
        if texts[e.name] != ref:
            print(f"  {e.name} reads: {texts[e.name]}")
    print()
    print(f"time per page (det {PAGE[0]}x{PAGE[1]} + rec 48x{REC_W} x {len(crops)} lines), "
          "best of 3 interleaved rounds, same threads:")
    for e in engines:
        print(f"  {e.name:<22s} {times[e.name]:8.1f} ms")
    i8 = times["dnnq int8"]
    print(f"  dnnq int8 / dnnq float32: {i8 / times['dnnq float32']:.2f}x")
    for label in ("ONNX Runtime", "OpenVINO"):
        if f"{label} int8" in times:
            print(f"  dnnq int8 / {label} int8 (same QDQ files): "
                  f"{i8 / times[label + ' int8']:.2f}x")
    if peers_missing:
        print(f"  (not installed: pip install {' '.join(peers_missing)})")
    return 0 if agree else 1


def parser():
    p = argparse.ArgumentParser(
        prog="dnnq-demo ocr",
        description="Read rendered text lines with PP-OCRv4 (detection + recognition) through "
                    "dnnq in float32 and int8 (quantized by dnnq.onnx.quantize); print both "
                    "readings, whether they agree, and the time per page against ONNX Runtime "
                    "and OpenVINO where installed. Exit status 1 when the readings differ.")
    p.add_argument("--line", action="append", metavar="TEXT", help="a text line to render "
                   "(repeat, up to 3; default: three built-in lines)")
    p.add_argument("--threads", type=int, default=0, help="threads for every runtime "
                   "(default: dnnq's, i.e. OMP_NUM_THREADS or all cores)")
    p.add_argument("--no-peers", action="store_true", help="time dnnq only")
    p.add_argument("--min-time", type=float, default=1.0, help=argparse.SUPPRESS)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return run(args)
    except DemoError as e:
        sys.stderr.write(f"dnnq-demo ocr: error: {e}\n")
        return 2
