"""dnnq-bench --onnx MODEL.onnx: a whole model against ONNX Runtime (and OpenVINO where
installed). Only what is printed and returned is asserted, never a time."""
import os
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import dnnq  # noqa: E402
from dnnq.bench import __main__ as drv  # noqa: E402
from test_onnx_quantize import small_cnn  # noqa: E402


def test_model_against_the_runtimes(tmp_path):
    """The program, in a process of its own: the f32 model and the one quantized by dnnq."""
    path = str(tmp_path / "small.onnx")
    onnx.save(small_cnn(), path)
    r = subprocess.run([sys.executable, "-m", "dnnq.bench", "--min-time=0.001", "--threads=1",
                        "--onnx", path, "--quantize=dnnq", path],
                       cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false"))
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


@pytest.fixture
def run_main(capsys):
    """drv.main in this process (it sets dnnq's threads: put back afterwards)."""
    before = dnnq.get_num_threads()

    def run(*argv):
        code = drv.main(["--min-time=0.001", "--threads=1", "--no-peers", *argv])
        out = capsys.readouterr()
        return code, out.out, out.err
    yield run
    dnnq.set_num_threads(before)


def test_usage_and_row_errors(tmp_path, run_main):
    code, out, err = run_main("--onnx", str(tmp_path / "notes.txt"))
    assert code == 2 and "expected the path of an .onnx model" in err
    code, out, err = run_main("--onnx", str(tmp_path / "missing.onnx"))
    assert code == 1 and "is not a file" in out
    m = small_cnn()
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "h"
    path = str(tmp_path / "dyn.onnx")
    onnx.save(m, path)
    code, out, err = run_main("--onnx", path)
    assert code == 1 and "symbolic shape" in out and "--shape" in out
    code, out, err = run_main("--onnx", "--shape=1x3x12", path)
    assert code == 1 and "InvalidArguments: input 'x'" in out
    code, out, err = run_main("--onnx", "--shape=1x3x12x16", "--quantize=yes", path)
    assert code == 2 and "expected no or dnnq" in err
    code, out, err = run_main("--onnx", "--shape=1x3xa", path)
    assert code == 2 and "shapes like 1x3x48x320" in err
    code, out, err = run_main("--onnx", "--shape=1x3x12x16", path)
    assert code == 0 and "ORT: --no-peers" in out
