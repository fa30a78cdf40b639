"""dnnq.onnx's recurrent ops on f32 inputs (no DequantizeLinear before them): oneDNN's int8
RNN with the input divided by a scale k (docs/onnx.md "Recurrent ops").  k is a function of
each input alone, so a result never depends on the inputs run before it."""
import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx.rnn import _input_scale  # noqa: E402

RNG = np.random.default_rng(11)
I, H = 12, 16


def _lstm_model():
    """A bidirectional LSTM over (T, 1, I) inputs, T free, its Y the output."""
    w = (RNG.standard_normal((2, 4 * H, I)) * 0.3).astype(np.float32)
    r = (RNG.standard_normal((2, 4 * H, H)) * 0.3).astype(np.float32)
    b = (RNG.standard_normal((2, 8 * H)) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in ((w, "W"), (r, "R"), (b, "B"))]
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=H,
                            direction="bidirectional", name="lstm")
    g = helper.make_graph([node], "lstm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", 1, I])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def test_f32_lstm_result_depends_on_its_input_alone():
    """An input run after inputs of larger range, of another length, or first in a fresh
    session gives the same bits (k used to grow with the inputs seen, so a later run of the
    same input gave other values); the values follow ONNX Runtime's f32 LSTM within the
    grid's error."""
    m = _lstm_model()
    xs = [(RNG.standard_normal((T, 1, I)) * a).astype(np.float32)
          for T, a in ((9, 1.0), (9, 6.0), (14, 0.2), (9, 1.0), (5, 40.0))]
    fresh = [donnx.InferenceSession(m, threads=1).run(None, {"x": x})[0] for x in xs]
    sess = donnx.InferenceSession(m, threads=1)
    for _ in range(2):
        for x, want in zip(xs + xs[::-1], fresh + fresh[::-1]):
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)
    ort = pytest.importorskip("onnxruntime")
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for x, got in zip(xs, fresh):
        if _input_scale(x) <= 4:  # (the input on a u8 grid of step k / 127.5: coarse above)
            np.testing.assert_allclose(got, ref.run(None, {"x": x})[0], atol=0.06)


@pytest.mark.parametrize("xmax,k", [(0.0, 2.0 ** -10), (1e-9, 2.0 ** -10), (0.25, 0.25),
                                    (0.26, 0.5), (1.0, 1.0), (1.5, 2.0), (3.0e5, 2.0 ** 19),
                                    (np.inf, 2.0 ** 127)])
def test_input_scale_is_the_next_power_of_two(xmax, k):
    x = np.float32([[0.0, -xmax, xmax / 2]])
    assert _input_scale(x) == k
    if math.isfinite(xmax):
        assert np.abs(x).max() / k <= 1.0
