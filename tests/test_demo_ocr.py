"""dnnq-demo ocr: PP-OCRv4 det + rec through dnnq.onnx in f32 and int8 (dnnq.onnx.quantize).

The readings are checked against the rendered text itself (the independent reference): the
f32 and int8 pipelines read the default page exactly, and a line given on the command line
too. ONNX Runtime's f32 models read the same boxes (the pipeline's box finder on its map).
Needs ``pip install --no-deps rapidocr-onnxruntime==1.4.4`` (README)."""
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("PIL")

from dnnq.demo import ocr  # noqa: E402
from dnnq.demo.__main__ import main  # noqa: E402

try:
    ocr.model_file(ocr.DET)
except ocr.DemoError as exc:
    pytest.skip(str(exc), allow_module_level=True)
if not os.path.exists(ocr.FONT):
    pytest.skip(f"{ocr.FONT} missing (apt-get install fonts-dejavu-core)",
                allow_module_level=True)


def test_reads_the_page_in_f32_and_int8(capsys):
    lines = ["Pack 12 boxes by Friday", *ocr.LINES[1:]]
    code = main(["ocr", "--no-peers", "--threads", "1", "--min-time", "0.01",
                 *[a for t in lines for a in ("--line", t)]])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "int8 and float32 read the same text: yes" in out
    assert "read exactly by float32: yes" in out
    for t in lines:
        assert f"{t:<36s} | {t}\n" in out
    assert "dnnq int8 / dnnq float32:" in out


def test_line_boxes_on_onnxruntime_map():
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    det = ort.InferenceSession(ocr.model_file(ocr.DET), so, providers=["CPUExecutionProvider"])
    page = ocr.render_page(ocr.LINES)
    boxes = ocr.line_boxes(det.run(None, {"x": ocr.normalize(page)})[0])
    assert len(boxes) == 3
    # each box holds one rendered line: dark pixels inside, 70 pixels apart, top to bottom
    tops = [b[0] for b in boxes]
    assert all(40 < b - a < 100 for a, b in zip(tops, tops[1:]))
    for t, b, l, r in boxes:
        assert (page[t:b, l:r] < 128).any()


def test_bad_arguments(capsys):
    assert main(["ocr", "--line", "a", "--line", "b", "--line", "c", "--line", "d"]) == 2
    assert "at most 3" in capsys.readouterr().err
    assert main(["ocr", "--threads", "-1"]) == 2
    assert "--threads" in capsys.readouterr().err
    np.testing.assert_array_equal(ocr.ctc_decode(np.eye(3)[[0, 1, 1, 0, 2]][None],
                                                 ["blank", "a", "b"]), "ab")
