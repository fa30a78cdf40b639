"""dnnq-bench --onnx MODEL.onnx: a whole model against ONNX Runtime (and OpenVINO where
installed). Only what is printed and returned is asserted, never a time."""
import os
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_onnx_quantize import small_cnn  # noqa: E402


def bench(tmp_path, *argv):
    return subprocess.run([sys.executable, "-m", "dnnq.bench", "--min-time=0.001", *argv],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false"))


def test_model_against_the_runtimes(tmp_path):
    path = str(tmp_path / "small.onnx")
    onnx.save(small_cnn(), path)
    r = bench(tmp_path, "--threads=1", "--onnx", path, "--quantize=dnnq", path)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines()
            if ln.startswith("--onnx ") and "default problem configuration" not in ln]
    assert len(rows) == 2
    f32, q = rows
    assert " 0 int8" in f32 and "quantized by dnnq.onnx.quantize" in q
    for row in rows:
        assert "ORT output cosine to dnnq's" in row and "(dnnq/ORT " in row
        assert "OpenVINO" in row  # a time, or why not ("not installed")
    # GOPS from the model's convolutions and products: a positive figure
    gops = float(q.split("int8")[1].split()[1])
    assert gops > 0


def test_usage_errors(tmp_path):
    r = bench(tmp_path, "--onnx", str(tmp_path / "missing.onnx"))
    assert r.returncode == 2 and "is not a file" in r.stderr
    m = small_cnn()
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "h"
    path = str(tmp_path / "dyn.onnx")
    onnx.save(m, path)
    r = bench(tmp_path, "--onnx", path)
    assert r.returncode == 1 and "symbolic shape" in r.stdout and "--shape" in r.stdout
    r = bench(tmp_path, "--onnx", "--shape=1x3x12", path)
    assert r.returncode == 1 and "InvalidArguments: input 'x'" in r.stdout
    r = bench(tmp_path, "--onnx", "--shape=1x3x12x16", "--quantize=yes", path)
    assert r.returncode == 1 and "--quantize=yes: expected no or dnnq" in r.stdout
