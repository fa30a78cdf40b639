"""Layer normalization of f32 values in dnnq.onnx (F32LayerNormStep, ukernels/tk_rows8.h):
the decomposed pattern older exporters write (paddle2onnx's PP-OCRv4 recognizer) and the
opset-17 op, in one pass per row with mean and variance in double summed in one fixed order.

Checked against a float64 model and ONNX Runtime; its bits must not depend on the memory
order of the input (a transposed view and a contiguous copy of the same values), the ISA
level or the thread count; a QuantizeLinear that alone reads it is fused and must equal the
f32 result quantized in numpy."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx.quant import dequantize_np, quantize_np  # noqa: E402
from _levels import assert_same_bits, at_every_level  # noqa: E402

F = np.float32


def _c(inits, name, v, dt=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(v, dt), name))
    return name


def _model(shape, n_norm, transpose=False, op17=False, quantize=False, seed=0):
    """y = LayerNorm(x) over the trailing ``n_norm`` dims with gamma / beta; ``transpose``:
    x given as its last two dims swapped and transposed back first; ``quantize``: a
    QuantizeLinear / DequantizeLinear pair after it."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    norm_shape = shape[-n_norm:]
    gamma = _c(inits, "gamma", rng.uniform(0.5, 1.5, norm_shape))
    beta = _c(inits, "beta", rng.standard_normal(norm_shape) * 0.3)
    x = "x"
    in_shape = list(shape)
    if transpose:
        perm = list(range(len(shape)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        in_shape = [shape[p] for p in perm]
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=perm))
        x = "xt"
    axes = list(range(-n_norm, 0))
    if op17:
        nodes.append(helper.make_node("LayerNormalization", [x, gamma, beta], ["ln"],
                                      axis=-n_norm, epsilon=1e-5, name="ln"))
    else:
        nodes += [helper.make_node("ReduceMean", [x], ["m"], axes=axes, keepdims=1, name="ln"),
                  helper.make_node("Sub", [x, "m"], ["d"]),
                  helper.make_node("Pow", ["d", _c(inits, "two", 2.0)], ["d2"]),
                  helper.make_node("ReduceMean", ["d2"], ["v"], axes=axes, keepdims=1),
                  helper.make_node("Add", ["v", _c(inits, "eps", 1e-5)], ["ve"]),
                  helper.make_node("Sqrt", ["ve"], ["sd"]),
                  helper.make_node("Div", ["d", "sd"], ["nrm"]),
                  helper.make_node("Mul", ["nrm", gamma], ["sc"]),
                  helper.make_node("Add", ["sc", beta], ["ln"])]
    out = "ln"
    if quantize:
        nodes += [helper.make_node("QuantizeLinear", ["ln", _c(inits, "s", 0.02),
                                                      _c(inits, "z", 128, np.uint8)], ["q"],
                                   name="q"),
                  helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
        out = "y"
    g = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, in_shape)], [helper.make_tensor_value_info(
            out, TensorProto.FLOAT, list(shape))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17 if op17 else 13)])
    m.ir_version = 8
    return m, onnx.numpy_helper.to_array(inits[0]), onnx.numpy_helper.to_array(inits[1])


def _f64_layernorm(x, n_norm, gamma, beta, eps=1e-5):
    xd = x.astype(np.float64)
    axes = tuple(range(-n_norm, 0))
    mean = xd.mean(axis=axes, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=axes, keepdims=True)
    return (xd - mean) / np.sqrt(var + eps) * gamma + beta


def _x(shape, seed, offset=3.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * rng.uniform(0.1, 4) + offset).astype(F)


@pytest.mark.parametrize("op17", [False, True])
@pytest.mark.parametrize("shape,n_norm", [((1, 60, 120), 1), ((2, 5, 1), 1), ((3, 7), 1),
                                          ((1, 4, 8), 1), ((1, 4, 9), 1), ((2, 3, 17), 1),
                                          ((1, 6, 384), 1), ((2, 3, 4, 5), 2)])
def test_matches_the_float64_formula_and_onnxruntime(shape, n_norm, op17):
    m, gamma, beta = _model(shape, n_norm, op17=op17)
    s = donnx.InferenceSession(m)
    rows = [r for r in s.plan() if "LayerNormalization" in r["primitive"]]
    assert len(rows) == 1 and rows[0]["primitive"] == "LayerNormalization (f32 rows)", s.plan()
    for seed in range(3):
        x = _x(shape, seed)
        y = s.run(None, {"x": x})[0]
        ref = _f64_layernorm(x, n_norm, gamma, beta)
        # t = f32((x - mean) / sd) rounded once, then two f32 roundings
        np.testing.assert_allclose(y, ref, rtol=4e-7, atol=4e-7 * np.abs(beta).max() + 1e-7)
    ort = pytest.importorskip("onnxruntime")
    r = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = _x(shape, 9)
    np.testing.assert_allclose(s.run(None, {"x": x})[0], r.run(None, {"x": x})[0],
                               rtol=2e-5, atol=2e-5)


def test_bits_do_not_depend_on_the_input_layout():
    """The same values as a transposed view (the model's Transpose) and as a contiguous
    array: the same bits (numpy's mean sums a strided axis in another order than a
    contiguous one)."""
    shape = (1, 60, 120)
    m_t, _, _ = _model(shape, 1, transpose=True)
    m_c, _, _ = _model(shape, 1)
    st, sc = donnx.InferenceSession(m_t), donnx.InferenceSession(m_c)
    for seed in range(3):
        x = _x(shape, seed, offset=50.0)
        yt = st.run(None, {"x": np.ascontiguousarray(np.swapaxes(x, -1, -2))})[0]
        yc = sc.run(None, {"x": x})[0]
        assert np.array_equal(yt.view(np.uint32), yc.view(np.uint32))


def test_same_bits_at_every_level_and_thread_count():
    shape = (3, 70, 129)  # rows split over threads (>= 2^16 elements), tails past 8 and 16
    m, _, _ = _model(shape, 1)
    x = _x(shape, 4, offset=-20.0)
    assert_same_bits(at_every_level(lambda: donnx.InferenceSession(
        m, threads=dnnq.get_num_threads()).run(None, {"x": x})[0]))


@pytest.mark.parametrize("op17", [False, True])
def test_quantize_after_it_is_fused(op17):
    shape = (1, 60, 120)
    mq, _, _ = _model(shape, 1, op17=op17, quantize=True)
    mf, _, _ = _model(shape, 1, op17=op17)
    sq, sf = donnx.InferenceSession(mq, rounding="chain"), donnx.InferenceSession(mf)
    rows = [r for r in sq.plan() if "LayerNormalization" in r["primitive"]]
    assert len(rows) == 1 and rows[0]["dtypes_out"] == ["u8"], sq.plan()
    assert not [r for r in sq.plan() if r["primitive"] == "Reorder" and
                any(n.startswith("q") for n in r["nodes"])], sq.plan()
    for seed in range(3):
        x = _x(shape, seed, offset=0.0)
        want = dequantize_np(quantize_np(sf.run(None, {"x": x})[0], F(0.02), np.uint8(128)),
                             F(0.02), np.uint8(128))
        assert np.array_equal(sq.run(None, {"x": x})[0], want)


def test_other_dtypes_run_numpy():
    """A float64 input (a graph whose LayerNormalization reads double values) runs numpy's
    formula rather than failing."""
    from dnnq.onnx.int8_rows import F32LayerNormStep
    step = F32LayerNormStep(["ln"], "x", "y", 1, 1e-5, np.ones(5, F), np.zeros(5, F))
    env = {"x": np.arange(10, dtype=np.float64).reshape(2, 5)}
    step.run(env)
    ref = _f64_layernorm(env["x"], 1, 1.0, 0.0)
    np.testing.assert_allclose(env["y"], ref, rtol=1e-5, atol=1e-6)
