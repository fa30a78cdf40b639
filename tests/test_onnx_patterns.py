"""Every fusion pattern of dnnq.onnx on small generated models, quantized by ONNX Runtime
(QDQ, u8 activations, s8 per-channel weights) and compared with ONNX Runtime running the same
file, and with the f32 model.

dnnq rounds once per fused chain where ONNX Runtime rounds after every op, so the outputs may
differ by a few quantization steps; dnnq's must be at least as close to the f32 output.
"""
import types

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from _onnx_builder import RNG, Builder, weights as _w  # noqa: E402
from _onnx_models import cosine, ort_arithmetic, quantize_qdq  # noqa: E402


#: dnnq's default rounding computes ONNX Runtime's x86-64 (AVX2) int8 kernels' arithmetic
ORT_ARITHMETIC = ort_arithmetic()


def _run(tmp_path, model, x_shape, *, steps=4, calib=3, expect=(), op_types=None):
    """Quantize, run both, compare; returns the session rounding once per fused chain (whose
    plan the tests check), after checking that the default session (rounding at every
    QuantizeLinear) gives ONNX Runtime's output bytes."""
    f32 = str(tmp_path / "f32.onnx")
    qdq = str(tmp_path / "qdq.onnx")
    onnx.save(model, f32)
    xs = [RNG.standard_normal(x_shape).astype(np.float32) for _ in range(calib)]
    quantize_qdq(f32, qdq, [{"x": x} for x in xs], op_types=op_types)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(f32, so, providers=["CPUExecutionProvider"])
    peer = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])
    sess = donnx.InferenceSession(qdq, rounding="chain")
    every = donnx.InferenceSession(qdq)
    for x in xs[:2]:
        ours = sess.run(None, {"x": x})[0]
        theirs = peer.run(None, {"x": x})[0]
        if ORT_ARITHMETIC:  # the default rounding: ONNX Runtime's int8 results (a final
            # f32 Tanh / Sigmoid differs in its last bits: ONNX Runtime's approximations)
            np.testing.assert_array_max_ulp(every.run(None, {"x": x})[0], theirs, maxulp=4)
        want = ref.run(None, {"x": x})[0]
        assert ours.shape == theirs.shape == want.shape
        assert ours.dtype == np.float32
        span = float(np.abs(want).max()) + 1e-6
        # a few quantization steps of the output (u8: span / 255 per step)
        assert np.abs(ours - theirs).max() <= steps * 2 * span / 255 + 1e-6
        assert cosine(ours, want) >= cosine(theirs, want) - 2e-3
    prims = [r["primitive"] for r in sess.plan()]
    for p in expect:
        assert p in prims, (p, prims)
    return sess


def _covered(sess, primitive):
    return [r["nodes"] for r in sess.plan() if r["primitive"] == primitive]


@pytest.mark.parametrize("act", ["Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish"])
def test_conv_activation_fused(tmp_path, act):
    b = Builder()
    y = b.conv("x", 8, 16)
    if act == "Clip":
        y = b.op("Clip", [y, b.const(np.float32(0)), b.const(np.float32(6))])
    elif act == "LeakyRelu":
        y = b.op("LeakyRelu", [y], alpha=0.1)
    else:
        y = b.op(act, [y])
    sess = _run(tmp_path, b.model((1, 8, 10, 12), y, opset=14), (1, 8, 10, 12),
                expect=["Convolution"])
    convs = _covered(sess, "Convolution")
    assert len(convs) == 1 and any(act in n for n in convs[0]) or act in ("Relu", "Clip")


def test_conv_batchnorm_folded(tmp_path):
    b = Builder()
    c = 16
    gamma = _w(c, scale=1.0)
    gamma[:3] = -np.abs(gamma[:3])  # negative scales: the weights change sign
    y = b.conv("x", 8, c)
    y = b.op("BatchNormalization", [y, b.const(gamma), b.const(_w(c)), b.const(_w(c)),
                                    b.const(np.abs(_w(c)) + 0.5)])
    y = b.op("Relu", [y])
    sess = _run(tmp_path, b.model((1, 8, 9, 9), y), (1, 8, 9, 9), expect=["Convolution"])
    assert any(any("BatchNormalization" in n for n in nodes)
               for nodes in _covered(sess, "Convolution"))


@pytest.mark.parametrize("gate", ["Sigmoid", "HardSigmoid", "ppocr"])
def test_conv_gated_activation(tmp_path, gate):
    b = Builder()
    y = b.conv("x", 4, 8)
    if gate == "ppocr":  # x * Clip(x + 3, 0, 6) / 6 as PaddleOCR's exporter writes hardswish
        t = b.op("Add", [y, b.const(np.float32(3))])
        t = b.op("Clip", [t, b.const(np.float32(0)), b.const(np.float32(6))])
        y = b.op("Div", [b.op("Mul", [y, t]), b.const(np.float32(6))])
    else:
        y = b.op("Mul", [y, b.op(gate, [y])])
    _run(tmp_path, b.model((1, 4, 12, 12), y), (1, 4, 12, 12), expect=["Convolution"])


def test_residual_add_is_a_sum_post_op(tmp_path):
    b = Builder()
    a = b.op("Relu", [b.conv("x", 8, 8)])
    y = b.conv(a, 8, 8, k=1)
    y = b.op("Relu", [b.op("Add", [y, a])])
    sess = _run(tmp_path, b.model((1, 8, 11, 13), y), (1, 8, 11, 13))
    convs = _covered(sess, "Convolution")
    assert any(any(n.startswith("Add") for n in nodes) for nodes in convs)
    rows = [r for r in sess.plan() if r["primitive"] == "Convolution"]
    assert len(rows[-1]["inputs"]) == 2  # the residual is the sum post-op's input


def test_scale_residual_is_one_binary(tmp_path):
    """PP-OCRv4's residual squeeze-excitation, x + x * s with s a per-channel gate
    (GlobalAveragePool -> 1x1 convolutions -> HardSigmoid): one Binary pass x * (1 + s) that
    covers the Mul, its rounding pair and the Add, within a few steps of ONNX Runtime's."""
    b = Builder()
    x = b.conv("x", 8, 16)
    s = b.op("GlobalAveragePool", [x])
    s = b.op("Relu", [b.conv(s, 16, 4, k=1)])
    s = b.op("HardSigmoid", [b.conv(s, 4, 16, k=1)])
    y = b.op("Add", [x, b.op("Mul", [x, s])])
    y = b.conv(y, 16, 8, k=1)
    sess = _run(tmp_path, b.model((1, 8, 20, 24), y), (1, 8, 20, 24))
    fused = [nodes for nodes in _covered(sess, "Binary")
             if any(n.startswith("Mul") for n in nodes) and any(n.startswith("Add")
                                                               for n in nodes)]
    assert len(fused) == 1, _covered(sess, "Binary")
    every = donnx.InferenceSession(str(tmp_path / "qdq.onnx"), rounding="every")
    assert len([r for r in every.plan() if r["primitive"] == "Binary"]) == 2


def _se_and_hardswish_model():
    """A squeeze-excitation residual (x + x * s) and PaddleOCR's hard swish chain."""
    b = Builder()
    x = b.conv("x", 8, 16)
    s = b.op("GlobalAveragePool", [x])
    s = b.op("HardSigmoid", [b.conv(s, 16, 16, k=1)])
    y = b.op("Add", [x, b.op("Mul", [x, s])])
    y = b.conv(y, 16, 8, k=1)
    t = b.op("Clip", [b.op("Add", [y, b.const(np.float32(3))]), b.const(np.float32(0)),
                      b.const(np.float32(6))])
    y = b.op("Div", [b.op("Mul", [y, t]), b.const(np.float32(6))])
    return b.model((1, 8, 12, 14), y)


def test_quantized_tensors_read_out_of_the_model(tmp_path):
    """Every QuantizeLinear output of a QDQ model also made a graph output (a user reading
    the int8 tensors of their model, as one does to find where quantization hurts): the
    session builds and runs, and each tensor is ONNX Runtime's within a step. A pair read
    out of the model keeps its rounding, including the product of a squeeze-excitation
    gate that is otherwise skipped inside the one Binary pass (this failed at creation:
    'read before anything computes it')."""
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(_se_and_hardswish_model(), f32)
    xs = [RNG.standard_normal((1, 8, 12, 14)).astype(np.float32) for _ in range(3)]
    quantize_qdq(f32, qdq, [{"x": x} for x in xs])
    m = onnx.load(qdq)
    inits = {i.name for i in m.graph.initializer}
    zps = {i.name: i.data_type for i in m.graph.initializer}
    outs = [(n.output[0], zps[n.input[2]]) for n in m.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] not in inits]
    assert len(outs) >= 10
    m.graph.output.extend([helper.make_tensor_value_info(o, dt, None) for o, dt in outs])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    peer = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    for rounding in ("chain", "every"):
        sess = donnx.InferenceSession(m.SerializeToString(), rounding=rounding)
        for x in xs[:2]:
            ours = sess.run(None, {"x": x})
            theirs = peer.run(None, {"x": x})
            for (name, _), a, b in zip(outs, ours[1:], theirs[1:]):
                assert a.dtype == b.dtype and a.shape == b.shape, name
                assert np.abs(a.astype(np.int32) - b.astype(np.int32)).max() <= 1, name


@pytest.mark.parametrize("kind", ["depthwise", "grouped", "strided"])
def test_conv_geometries(tmp_path, kind):
    b = Builder()
    if kind == "depthwise":
        y = b.conv("x", 16, 16, group=16)
    elif kind == "grouped":
        y = b.conv("x", 16, 32, group=4)
    else:
        y = b.conv("x", 16, 24, k=3, stride=2)
    _run(tmp_path, b.model((1, 16, 13, 17), b.op("Relu", [y])), (1, 16, 13, 17),
         expect=["Convolution"])


def test_conv1d_and_deconv(tmp_path):
    b = Builder()
    w = b.const(_w(8, 4, 3))
    y = b.op("Conv", ["x", w, b.const(_w(8))], kernel_shape=[3], pads=[1, 1])
    y = b.op("Relu", [y])
    _run(tmp_path, b.model((1, 4, 50), y), (1, 4, 50), expect=["Convolution"])
    b = Builder()
    w = b.const(_w(8, 6, 2, 2))
    y = b.op("ConvTranspose", ["x", w, b.const(_w(6))], kernel_shape=[2, 2], strides=[2, 2])
    _run(tmp_path, b.model((1, 8, 7, 9), b.op("Relu", [y])), (1, 8, 7, 9),
         expect=["Deconvolution"])


def test_matmul_and_gemm(tmp_path):
    b = Builder()
    y = b.op("MatMul", ["x", b.const(_w(24, 40))])
    y = b.op("Add", [y, b.const(_w(40))])
    y = b.op("Gemm", [b.op("Relu", [y]), b.const(_w(10, 40)), b.const(_w(10))], transB=1)
    _run(tmp_path, b.model((5, 24), y), (5, 24), expect=["MatMul"])


def test_matmul_of_two_activations(tmp_path):
    b = Builder()
    q = b.op("MatMul", ["x", b.const(_w(16, 16))])
    k = b.op("MatMul", ["x", b.const(_w(16, 16))])
    kt = b.op("Transpose", [k], perm=[0, 2, 1])
    y = b.op("MatMul", [q, kt])
    y = b.op("Softmax", [y], axis=-1)
    _run(tmp_path, b.model((2, 6, 16), y), (2, 6, 16), expect=["MatMul"])


def test_pooling_concat_resize_movement(tmp_path):
    b = Builder()
    a = b.op("Relu", [b.conv("x", 8, 8)])
    p = b.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])
    q = b.op("AveragePool", [a], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0])
    c = b.op("Concat", [p, q], axis=1)
    r = b.op("Resize", [c, "", b.const(np.float32([1, 1, 2, 2]))], mode="nearest")
    g = b.op("GlobalAveragePool", [b.conv(r, 16, 8)])
    y = b.op("Flatten", [g], axis=1)
    sess = _run(tmp_path, b.model((1, 8, 12, 12), y), (1, 8, 12, 12), expect=["Pooling"])
    assert "Concat" in [r["primitive"] for r in sess.plan()]


def test_int8_binary_and_lookup_table(tmp_path):
    b = Builder()
    a = b.conv("x", 4, 8)
    s = b.op("Sigmoid", [b.op("GlobalAveragePool", [a])])
    y = b.op("Mul", [a, s])  # squeeze-and-excitation: a per-channel product of activations
    y = b.op("Tanh", [b.op("Add", [y, b.conv("x", 4, 8)])])
    sess = _run(tmp_path, b.model((1, 4, 10, 10), y), (1, 4, 10, 10), steps=10)
    prims = [r["primitive"] for r in sess.plan()]
    assert "Binary" in prims or "Convolution" in prims


def test_f32_ops_between_quantized_layers(tmp_path):
    b = Builder()
    a = b.conv("x", 8, 8)
    # LayerNorm-like f32 arithmetic on the dequantized tensor
    m = b.op("ReduceMean", [a], axes=[1])
    d = b.op("Sub", [a, m])
    v = b.op("ReduceMean", [b.op("Mul", [d, d])], axes=[1])
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [v, b.const(np.float32(1e-5))])])])
    y = b.conv(y, 8, 4, k=1)
    _run(tmp_path, b.model((1, 8, 6, 6), y), (1, 8, 6, 6), steps=8,
         expect=["Convolution", "Reorder"])


def test_threads_per_step_keep_the_results(tmp_path):
    """With two threads the session times each step on one and on two threads at the second
    run of a shape and keeps the faster (plan()'s ``threads``): the outputs stay those of one
    thread, bit for bit, on every run (the choosing run included) and for a second shape."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("HardSwish", [y])
    y = b.conv(y, 16, 16, k=1)
    y = b.op("Add", [y, b.conv(y, 16, 16, group=16)])
    model = b.model(("N", 8, 20, 24), y, opset=14)
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(model, f32)
    xs = [RNG.standard_normal((1, 8, 20, 24)).astype(np.float32) for _ in range(3)]
    quantize_qdq(f32, qdq, [{"x": x} for x in xs])
    one = donnx.InferenceSession(qdq, threads=1)
    two = donnx.InferenceSession(qdq, threads=2, profile=True)
    for x in xs + [np.concatenate(xs[:2])] * 3:
        assert np.array_equal(two.run(None, {"x": x})[0], one.run(None, {"x": x})[0])
    rows = two.plan()
    assert all(r["threads"] in (1, 2) for r in rows)
    assert all(r["time_ms"] is not None for r in rows)
    assert all(r["threads"] == 1 for r in one.plan())


def _quantized_and_peer(tmp_path, model, x_shape):
    """(QDQ file of ``model`` calibrated on 3 random inputs, ONNX Runtime's session on it)."""
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(model, f32)
    xs = [RNG.standard_normal(x_shape).astype(np.float32) for _ in range(3)]
    quantize_qdq(f32, qdq, [{"x": x} for x in xs])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return qdq, ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])


@pytest.mark.skipif(not ORT_ARITHMETIC,
                    reason="ONNX Runtime's QLinearAdd is its x86-64 AVX2 kernel's arithmetic")
def test_rounding_every_quantize_follows_onnxruntime(tmp_path):
    """rounding="every": each QuantizeLinear of the model rounds, and where ONNX Runtime
    runs a quantized Add / Mul as QLinearAdd / QLinearMul (here the scalar Mul and the
    per-channel Add after the convolution, their constants quantized), its arithmetic is
    computed, not the f32 op's: the layer's chain ends at its first rounding, the Mul runs
    in a table, the Add as a step of its own (two FMAs per value): ONNX Runtime's bytes,
    where the default fused chain may drift by a few steps."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Mul", [y, b.const(np.float32(0.7))])
    y = b.op("Add", [y, b.const(_w(1, 16, 1, 1))])
    y = b.op("HardSwish", [y])
    y = b.op("Mul", [y, b.const(np.float32(1.3))])
    y = b.conv(y, 16, 8, k=1)
    qdq, peer = _quantized_and_peer(tmp_path, b.model((1, 8, 12, 12), y, opset=14),
                                    (1, 8, 12, 12))
    every = _bit_exact_with_onnxruntime(qdq, peer, (1, 8, 12, 12))
    rows = [(r["primitive"], r["impl_info"]) for r in every.plan()]
    assert ("Binary", "int8 one pass (ONNX Runtime's QLinearAdd)") in rows, rows
    with pytest.raises(dnnq.InvalidArguments, match="rounding"):
        donnx.InferenceSession(qdq, rounding="once")



def test_default_rounding_comes_from_the_models_metadata(tmp_path):
    """rounding=None (default): the model's ``dnnq.rounding`` metadata property ("chain" in
    the files dnnq.onnx.quantize writes), else "every"; an explicit rounding wins; any other
    value of the property is refused, naming it."""
    b = Builder()
    y = b.conv(b.op("Relu", [b.conv("x", 4, 8)]), 8, 4, k=1)
    qdq, _ = _quantized_and_peer(tmp_path, b.model((1, 4, 8, 8), y, opset=14), (1, 4, 8, 8))
    m = onnx.load(qdq)
    assert donnx.InferenceSession(m).rounding == "every"
    prop = m.metadata_props.add()
    prop.key, prop.value = "dnnq.rounding", "chain"
    assert donnx.InferenceSession(m).rounding == "chain"
    assert donnx.InferenceSession(m, rounding="every").rounding == "every"
    prop.value = "once"
    with pytest.raises(dnnq.InvalidArguments, match="dnnq.rounding.*once"):
        donnx.InferenceSession(m)

def test_rounding_every_tables_one_input_graphs(tmp_path):
    """rounding="every": PP-OCR's hard swish x * Clip(x + 3, 0, 6) / 6 with a rounding pair
    after each op, between a scalar affine x * a + b before and after it, depends on the
    int8 tensor x alone: one 256-entry table made from the graph's own nodes, equal to ONNX
    Runtime's result (the table rounds where the model does)."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Relu", [y])
    y = b.op("Mul", [y, b.const(np.float32(-0.7))])
    y = b.op("Add", [y, b.const(np.float32(0.2))])
    t = b.op("Add", [y, b.const(np.float32(3.0))])
    t = b.op("Clip", [t, b.const(np.float32(0.0)), b.const(np.float32(6.0))])
    y = b.op("Div", [b.op("Mul", [y, t]), b.const(np.float32(6.0))])
    y = b.op("Mul", [y, b.const(np.float32(1.3))])
    y = b.conv(y, 16, 8, k=1)
    qdq, peer = _quantized_and_peer(tmp_path, b.model((1, 8, 12, 12), y, opset=14),
                                    (1, 8, 12, 12))
    every = donnx.InferenceSession(qdq, rounding="every")
    x = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    ours = every.run(None, {"x": x})[0]
    tables = [r for r in every.plan() if r["primitive"] == "lookup table"]
    assert len(tables) == 1
    # the convolution ends at its first rounding (after the Relu) and the table takes all the
    # rest, from the Mul on (a lookup, not a dozen post-ops per element); ORT's quantizer may
    # drop the Clip
    info = tables[0]["impl_info"]
    assert info.startswith("graph:Mul+Add+Add+") and info.endswith("+Mul+Div+Mul"), info
    theirs = peer.run(None, {"x": x})[0]
    step = float(np.abs(theirs).max()) / 100
    assert np.abs(ours - theirs).max() <= step


def test_rounding_every_layer_cut_before_a_table_still_divides(tmp_path):
    """rounding="every": a convolution whose chain the planner cuts at its first rounding (a
    table takes the rest) keeps that rounding's QuantizeLinear division (x / s, rounded) --
    also where its bias is f32 (ONNX Runtime then runs the convolution in f32, not as a
    QLinearConv, and the layer has no requantization post-ops of its own)."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.op("Mul", [y, b.const(np.float32(-0.7))])
    y = b.op("Add", [y, b.const(np.float32(0.2))])
    y = b.op("HardSwish", [y])
    y = b.conv(y, 16, 8, k=1)
    qdq, _ = _quantized_and_peer(tmp_path, b.model((1, 8, 12, 12), y, opset=14),
                                 (1, 8, 12, 12))
    m = onnx.load(qdq)
    conv = next(n for n in m.graph.node if n.op_type == "Conv")
    producer = {o: n for n in m.graph.node for o in n.output}
    deq = producer[conv.input[2]]  # the int32 bias's DequantizeLinear: an f32 bias instead
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    bias = ((inits[deq.input[0]].astype(np.float64) * inits[deq.input[1]]).astype(np.float32))
    m.graph.node.remove(deq)
    m.graph.initializer.append(numpy_helper.from_array(bias, conv.input[2]))
    # int32 bias: QLinearConv's requantization (times x_s * w_s / y_s); f32 bias: the division
    for model, requant in ((m, "div"), (onnx.load(qdq), "mul")):
        every = donnx.InferenceSession(model.SerializeToString(), rounding="every")
        rows = every.plan()
        assert [r["primitive"] for r in rows].count("lookup table") == 1, rows
        first = next(st for st in every._steps if getattr(st, "spec", None) is not None)
        assert first.spec.nodes[0].op_type == "Conv" and len(first.spec.nodes) == 2
        ops = [op[:2] for op in first.spec.post_ops]
        assert ops[-2:] == [("binary", requant), ("eltwise", "round")], ops


def _bit_exact_with_onnxruntime(qdq, peer, shape, seeds=range(4)):
    """rounding="every" against ONNX Runtime on the same QDQ file: the same bytes on inputs
    beyond the calibration range (every rounding of the model, saturation included)."""
    every = donnx.InferenceSession(qdq, rounding="every")
    for seed in seeds:
        x = (1.5 * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)
        np.testing.assert_array_equal(every.run(None, {"x": x})[0], peer.run(None, {"x": x})[0])
    return every


@pytest.mark.skipif(not ORT_ARITHMETIC,
                    reason="ONNX Runtime's QLinearAdd is its x86-64 AVX2 kernel's arithmetic")
def test_rounding_every_int8_add_and_mul_are_onnxruntimes(tmp_path):
    """rounding="every": an Add of two int8 activations is ONNX Runtime's QLinearAdd (two
    FMAs on the raw values with the zero points in a constant), a Mul ONNX Runtime's
    QLinearMul (the exact integer product times (s_a s_b) / s_c, plus the zero point), also
    as a channel gate on a channels-last tensor: bit for bit with ONNX Runtime."""
    b = Builder()
    a = b.conv("x", 8, 16)
    c = b.conv("x", 8, 16)
    s = b.op("Add", [a, c])
    m = b.op("Mul", [b.op("Relu", [s]), c])
    g = b.op("HardSigmoid", [b.conv(b.op("GlobalAveragePool", [m]), 16, 16, k=1)])
    y = b.conv(b.op("Mul", [m, g]), 16, 8, k=1)
    qdq, peer = _quantized_and_peer(tmp_path, b.model((1, 8, 24, 24), y, opset=14),
                                    (1, 8, 24, 24))
    every = _bit_exact_with_onnxruntime(qdq, peer, (1, 8, 24, 24))
    infos = [r["impl_info"] for r in every.plan() if r["primitive"] == "Binary"]
    assert "int8 one pass (ONNX Runtime's QLinearAdd)" in infos, infos
    assert infos.count("int8 one pass (ONNX Runtime's QLinearMul)") == 2, infos


def test_rounding_every_int32_bias_beyond_24_bits(tmp_path):
    """rounding="every": QLinearConv adds its int32 bias to the int32 sum and converts once;
    a bias of 2^24 or more (no f32 holds it) is split into an f32-exact high part, added
    after the layer's sum as a post-op, and a low part within +-127 as the layer's bias, so
    the sum is still rounded once: bit for bit with ONNX Runtime."""
    b = Builder()
    y = b.conv(b.conv("x", 8, 32), 32, 16, k=1)
    qdq, _ = _quantized_and_peer(tmp_path, b.model((1, 8, 24, 24), y, opset=14),
                                 (1, 8, 24, 24))
    m = onnx.load(qdq)
    conv = [n for n in m.graph.node if n.op_type == "Conv"][1]
    producer = {o: n for n in m.graph.node for o in n.output}
    inits = {t.name: t for t in m.graph.initializer}
    qb = inits[producer[conv.input[2]].input[0]]
    bias = numpy_helper.to_array(qb).astype(np.int64)
    # large biases (in the units of x_s * w_s), each channel's sum kept near its range
    big = bias + np.array([(-1) ** i * (2 ** 24 + 12345 * i) for i in range(bias.size)])
    qb.CopyFrom(numpy_helper.from_array(big.astype(np.int32), qb.name))
    qy = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and
              n.input[0] == conv.output[0])
    ys = inits[qy.input[1]]
    ys.CopyFrom(numpy_helper.from_array(
        numpy_helper.to_array(ys) * np.float32(40), ys.name))  # the output scale grown
    path = str(tmp_path / "big_bias.onnx")
    onnx.save(m, path)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    peer = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    every = _bit_exact_with_onnxruntime(path, peer, (1, 8, 24, 24))
    layer = [st.spec for st in every._steps if getattr(st, "spec", None) is not None][1]
    assert layer.post_ops[0][:2] == ("binary", "add")
    assert np.abs(layer.bias).max() <= 127



def test_split_integer_bias_is_exact():
    """The split of an int32 bias: low + high is the bias exactly, high exact in f32, low
    within +-127 where the bias needs more than 24 bits (then f32(sum + low) is exact and
    adding high rounds once), the bias whole where it fits."""
    from dnnq.onnx.fusion import _split_integer_bias
    small = np.array([0, 1, -7, 2 ** 24 - 1, -(2 ** 24 - 1)])
    low, high = _split_integer_bias(small)
    assert high is None and (low.astype(np.int64) == small).all()
    b = np.array([0, 5, -7, 2 ** 24, -(2 ** 24) - 1, 232414431, -2 ** 31, 2 ** 31 - 1,
                  123456789, -99999999])
    low, high = _split_integer_bias(b)
    assert (low.astype(np.int64) + high.astype(np.int64) == b).all()
    assert (np.abs(low[np.abs(b) >= 2 ** 24]) <= 127).all()
    assert (high.astype(np.float64) == high.astype(np.int64)).all()

def _decomposed_layernorm(b, x, c):
    mean = b.op("ReduceMean", [x], axes=[-1])
    d = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [d, b.const(np.float32(2.0))])], axes=[-1])
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, b.const(np.float32(1e-5))])])])
    y = b.op("Mul", [y, b.const(1 + _w(c, scale=0.2))])
    return b.op("Add", [y, b.const(_w(c, scale=0.2))])


def test_decomposed_layernorm_is_one_step(tmp_path):
    """ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add (paddle2onnx's layer
    norm, PP-OCRv4's recognizer) with ORT's rounding pairs between: one LayerNormalization
    step, close to ONNX Runtime (default rounding); rounding="every" keeps the ops."""
    b = Builder()
    w1, w2 = b.const(_w(16, 24)), b.const(_w(24, 8))
    y = b.op("MatMul", ["x", w1])
    y = _decomposed_layernorm(b, y, 24)
    y = b.op("MatMul", [y, w2])
    sess = _run(tmp_path, b.model((1, 10, 16), y), (1, 10, 16))
    rows = [r for r in sess.plan() if r["primitive"] == "LayerNormalization (int8 rows)"]
    assert len(rows) == 1 and len(rows[0]["nodes"]) >= 9
    assert rows[0]["dtypes_in"] == ["u8"] and rows[0]["dtypes_out"] == ["u8"]
    assert not any(r["primitive"].startswith("numpy:ReduceMean") for r in sess.plan())
    every = donnx.InferenceSession(str(tmp_path / "qdq.onnx"), rounding="every")
    assert not any(r["primitive"] == "numpy:LayerNormalization" for r in every.plan())


def test_decomposed_layernorm_f32_matches_onnxruntime():
    b = Builder()
    y = _decomposed_layernorm(b, "x", 24)
    m = b.model((2, 5, 24), y)
    x = RNG.standard_normal((2, 5, 24)).astype(np.float32) * 3 + 1
    sess = donnx.InferenceSession(m)
    assert [r["primitive"] for r in sess.plan()] == ["LayerNormalization (f32 rows)"]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)


def test_reshape_to_a_computed_shape_stays_int8(tmp_path):
    """A Reshape whose shape is computed at run time (Shape -> Gather -> Concat, as exporters
    write attention heads) moves the int8 tensor: no dequantize / quantize around it."""
    b = Builder()
    y = b.op("MatMul", ["x", b.const(_w(16, 24))])
    dims = b.op("Shape", [y])
    n = b.op("Gather", [dims, b.const(np.int64([0, 1]))])
    shape = b.op("Concat", [n, b.const(np.int64([4, 6]))], axis=0)
    y = b.op("Reshape", [y, shape])
    y = b.op("Transpose", [y], perm=[0, 2, 1, 3])
    y = b.op("MatMul", [y, b.const(_w(6, 5))])
    sess = _run(tmp_path, b.model((1, 10, 16), y), (1, 10, 16))
    prims = [r["primitive"] for r in sess.plan()]
    views = [r for r in sess.plan() if r["primitive"] == "int8 views (cached)"]
    assert len(views) == 1 and any(n.startswith("Reshape") for n in views[0]["nodes"]), prims
    assert views[0]["dtypes_in"][0] == "u8", views
    assert prims.count("Reorder") == 2, prims  # the model's input and output only


def test_one_input_graph_is_a_table_by_default(tmp_path):
    """x * Sigmoid(1.702 x) after a MatMul (PP-OCRv4 rec's MLP) depends on the int8 x alone:
    one lookup table whose inner pairs only clamp (default rounding), within a few output
    steps of ONNX Runtime."""
    b = Builder()
    y = b.op("MatMul", ["x", b.const(_w(16, 24))])
    y = b.op("Mul", [y, b.op("Sigmoid", [b.op("Mul", [y, b.const(np.float32(1.702))])])])
    y = b.op("MatMul", [y, b.const(_w(24, 8))])
    sess = _run(tmp_path, b.model((1, 10, 16), y), (1, 10, 16))
    tables = [r for r in sess.plan() if r["primitive"] == "lookup table"]
    assert [r["impl_info"] for r in tables] == ["graph:Mul+Sigmoid+Mul"]
    assert not any(r["primitive"] == "Binary" for r in sess.plan())


@pytest.mark.parametrize("stride", [2, 3])
def test_resize_into_concat(tmp_path, stride):
    """A nearest Resize read only by a Concat resizes into the Concat's output (its input
    requantized first where the scales differ); sizes that do not repeat whole elements
    (stride 3: 5 -> 14 columns) take the general resize. Both within a few steps of ONNX
    Runtime."""
    b = Builder()
    a = b.op("Relu", [b.conv("x", 8, 8)])
    small = b.op("Relu", [b.conv(a, 8, 16, stride=stride)])
    up = b.op("Resize", [small, "", "", b.const(np.int64([1, 16, 12, 14]))], mode="nearest")
    y = b.op("Concat", [b.conv(a, 8, 4, k=1), up], axis=1)
    y = b.conv(y, 20, 8, k=1)
    sess = _run(tmp_path, b.model((1, 8, 12, 14), y), (1, 8, 12, 14))
    rows = [r for r in sess.plan() if r["primitive"] == "Concat"]
    assert len(rows) == 1 and rows[0]["impl_info"].startswith("resize into ")
    assert not any("Resize" in r["primitive"] for r in sess.plan())


def test_softmax_writes_its_quantized_output(tmp_path):
    """DequantizeLinear -> Softmax -> QuantizeLinear: one pass over the int8 rows, no
    dequantizing or quantizing Reorder around it."""
    b = Builder()
    y = b.op("MatMul", ["x", b.const(_w(16, 24))])
    y = b.op("Softmax", [y], axis=-1)
    y = b.op("MatMul", [y, b.const(_w(24, 8))])
    sess = _run(tmp_path, b.model((1, 10, 16), y, opset=13), (1, 10, 16))
    rows = [r for r in sess.plan() if r["primitive"] == "Softmax (int8 rows)"]
    assert len(rows) == 1 and any("QuantizeLinear" in n for n in rows[0]["nodes"])
    assert rows[0]["dtypes_in"] == ["u8"] and rows[0]["dtypes_out"] == ["u8"]
    assert not any(r["primitive"] == "Reorder" for r in sess.plan()[1:-1])


@pytest.mark.parametrize("moves", [0, 1, 2])
@pytest.mark.parametrize("rounding", ["chain", "every"])
def test_softmax_dequantized_to_the_output(rounding, moves):
    """Softmax -> QuantizeLinear -> DequantizeLinear (-> Reshape -> QuantizeLinear ->
    DequantizeLinear ...) -> output, as the recognizer ends: by default one int8-rows step
    writing f32 (the pairs skipped, the reshapes on f32), equal to the f32 softmax of the
    dequantized input to a few ulps; rounding="every" keeps the rounding, as ONNX Runtime."""
    b = Builder()
    s, z = b.const(np.float32(0.05)), b.const(np.uint8(120))
    so, zo = b.const(np.float32(1 / 255)), b.const(np.uint8(0))
    y = b.op("DequantizeLinear", [b.op("QuantizeLinear", ["x", s, z]), s, z])
    y = b.op("Softmax", [y], axis=-1)
    y = b.op("DequantizeLinear", [b.op("QuantizeLinear", [y, so, zo]), so, zo])
    for i in range(moves):
        y = b.op("Reshape", [y, b.const(np.int64([1, 6, 5, 40] if i == 0 else [30, 40]))])
        y = b.op("DequantizeLinear", [b.op("QuantizeLinear", [y, so, zo]), so, zo])
    m = b.model((6, 5, 40), y, opset=13)
    x = (RNG.standard_normal((6, 5, 40)) * 3).astype(np.float32)
    sess = donnx.InferenceSession(m, rounding=rounding)
    got = sess.run(None, {"x": x})[0]
    plan = sess.plan()
    soft = [r for r in plan if r["primitive"] == ("Softmax (int8 rows)" if rounding == "chain"
                                                   else "Softmax (QLinearSoftmax rows)")]
    assert len(soft) == 1
    q = np.clip(np.rint(x / np.float32(0.05)) + 120, 0, 255)
    d = (q - 120) * 0.05
    e = np.exp(d - d.max(-1, keepdims=True))
    ref = (e / e.sum(-1, keepdims=True)).reshape(got.shape)
    if rounding == "chain":
        assert soft[0]["dtypes_out"] == ["f32"], plan
        assert not any(r["primitive"] == "Reorder" for r in plan[1:]), plan
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)
    else:  # rounded to the output's grid, as ONNX Runtime's QLinearSoftmax (ort_arith)
        assert soft[0]["dtypes_out"] == ["u8"], plan
        np.testing.assert_allclose(got * 255, np.rint(ref * 255), atol=1.01)
        assert np.all(np.abs(got * 255 - np.rint(got * 255)) < 1e-3)
        if ORT_ARITHMETIC:
            # ONNX Runtime 1.32's QLinearSoftmax is MLAS's portable kernel on x86-64 (its
            # order of additions decides the sum's roundings)
            so = ort.SessionOptions()
            so.log_severity_level = 3
            peer = ort.InferenceSession(m.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            np.testing.assert_array_equal(got, peer.run(None, {"x": x})[0])


@pytest.mark.parametrize("opset,axis,x_shape,tail", [
    (13, 1, (1, 10, 12), True),   # an axis that is not the last: moved to the rows
    (11, 1, (2, 6, 4), True),     # opsets 1 - 12: the dims from axis on as one row
    (13, -1, (1, 10, 16), False),  # the graph's output (quantized by ORT, then dequantized)
])
def test_softmax_on_int8_rows(tmp_path, opset, axis, x_shape, tail):
    """Softmax reading a quantized activation: one int8-rows step at any axis and opset,
    within a few output steps of ONNX Runtime and at least as close to f32."""
    b = Builder()
    if opset >= 13:
        y = b.op("MatMul", ["x", b.const(_w(x_shape[-1], 24))])
    else:  # (ORT's per-channel weights need opset 13: a per-tensor product here)
        y = b.op("Mul", ["x", b.const(np.float32(2.5))])
    y = b.op("Softmax", [y], axis=axis)
    if tail and opset >= 13:
        y = b.op("MatMul", [y, b.const(_w(24, 8))])
    elif tail:
        y = b.op("Add", [y, b.const(_w(x_shape[-1]))])
    sess = _run(tmp_path, b.model(x_shape, y, opset=opset), x_shape)
    rows = [r for r in sess.plan() if r["primitive"] == "Softmax (int8 rows)"]
    # (the graph's output: its pair skipped, the step writes f32)
    assert len(rows) == 1 and rows[0]["dtypes_out"] == (["u8"] if tail else ["f32"])


def test_softmax_on_int8_rows_f32_output():
    """No QuantizeLinear after the Softmax: the int8-rows step writes f32, within a few
    ulps of ONNX Runtime on the same model (its exp and sum order differ)."""
    b = Builder()
    q = b.op("QuantizeLinear", ["x", b.const(np.float32(0.05)), b.const(np.uint8(120))])
    y = b.op("DequantizeLinear", [q, b.const(np.float32(0.05)), b.const(np.uint8(120))])
    y = b.op("Softmax", [y], axis=-1)
    m = b.model((3, 7, 40), y)
    x = RNG.standard_normal((3, 7, 40)).astype(np.float32) * 3
    sess = donnx.InferenceSession(m)
    rows = [r for r in sess.plan() if r["primitive"] == "Softmax (int8 rows)"]
    assert len(rows) == 1 and rows[0]["dtypes_out"] == ["f32"]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], ref.run(None, {"x": x})[0],
                               rtol=2e-6, atol=1e-7)


def test_layernormalization_op_on_int8_rows(tmp_path):
    """The LayerNormalization op (opset 17) reading a quantized activation: one int8-rows
    step with the QuantizeLinear after it."""
    b = Builder()
    y = b.op("MatMul", ["x", b.const(_w(16, 24))])
    y = b.op("LayerNormalization", [y, b.const(1 + _w(24, scale=0.2)),
                                    b.const(_w(24, scale=0.2))], axis=-1, epsilon=1e-5)
    y = b.op("MatMul", [y, b.const(_w(24, 8))])
    sess = _run(tmp_path, b.model((1, 10, 16), y, opset=17), (1, 10, 16))
    rows = [r for r in sess.plan() if r["primitive"] == "LayerNormalization (int8 rows)"]
    assert len(rows) == 1 and rows[0]["dtypes_out"] == ["u8"]


@pytest.mark.parametrize("op,c,hw", [("Mul", 8, 6), ("Sub", 24, 5), ("Add", 16, 7)])
def test_int8_binary_one_pass(tmp_path, op, c, hw):
    """Two int8 activations of one shape (Mul / Sub / Add that no layer takes as a sum
    post-op), and a channel gate on an odd number of pixels: one pass over the int8 data."""
    b = Builder()
    a0 = b.op("Relu", [b.conv("x", 4, c)])
    a1 = b.op("Relu", [b.conv("x", 4, c)])
    if op == "Add":  # (an Add of a convolution's output would be its sum post-op)
        a0, a1 = (b.op("MaxPool", [v], kernel_shape=[3, 3], pads=[1] * 4) for v in (a0, a1))
    y = b.op(op, [a0, a1])
    g = b.op("Sigmoid", [b.op("GlobalAveragePool", [y])])
    y = b.op("Mul", [y, g])
    y = b.op("Tanh", [b.op("Conv", [y, b.const(_w(4, c, 1, 1))], kernel_shape=[1, 1])])
    sess = _run(tmp_path, b.model((1, 4, hw, hw), y), (1, 4, hw, hw), steps=10)
    one_pass = [r for r in sess.plan() if r["primitive"] == "Binary" and
                r["impl_info"] == "int8 one pass"]
    assert len(one_pass) == 2, sess.plan()


def test_max_pool_after_an_f32_chain_runs_int8(tmp_path):
    """Conv -> hard swish left in f32 by the quantizer -> MaxPool -> QuantizeLinear (PP-OCR's
    classifier): the quantization moves before the pooling (max commutes with a monotone
    rounding), the convolution writes int8 and the pooling runs on it."""
    b = Builder()
    y = b.conv("x", 4, 16)
    y = b.op("Div", [b.op("Mul", [y, b.op("Clip", [b.op("Add", [y, b.const(np.float32(3))]),
                                                   b.const(np.float32(0)),
                                                   b.const(np.float32(6))])]),
                     b.const(np.float32(6))])
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.conv(y, 16, 8, k=1)
    sess = _run(tmp_path, b.model((1, 4, 12, 10), y), (1, 4, 12, 10),
                op_types=["Conv", "MaxPool"])
    rows = sess.plan()
    pools = [r for r in rows if r["primitive"] == "Pooling"]
    assert len(pools) == 1 and pools[0]["dtypes_in"] == ["u8"], rows
    assert rows[1]["primitive"] == "Convolution" and rows[1]["dtypes_out"] == ["u8"], rows


def _qdq_model(op_nodes, x_shape, opset=17):
    """x -> QuantizeLinear -> DequantizeLinear -> ``op_nodes`` (reading "xd", writing "y")."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"])] + op_nodes
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.float32(0.05), "s"),
         numpy_helper.from_array(np.uint8(128), "z"),
         numpy_helper.from_array(np.ones(5, np.float32), "g"),
         numpy_helper.from_array(np.zeros(5, np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def test_int8_rows_steps_name_bad_axes():
    """Softmax / LayerNormalization on int8 rows with an axis the input does not have, or a
    scale that does not broadcast: InvalidArguments naming the node."""
    x = {"x": np.zeros((2, 5), np.float32)}
    sm = donnx.InferenceSession(_qdq_model(
        [helper.make_node("Softmax", ["xd"], ["y"], axis=3, name="sm")], ("N", 5)))
    with pytest.raises(dnnq.InvalidArguments, match="sm.*axis 3.*rank 2"):
        sm.run(None, x)
    ln = donnx.InferenceSession(_qdq_model(
        [helper.make_node("LayerNormalization", ["xd", "g", "b"], ["y"], axis=-3,
                          name="ln")], ("N", 5)))
    with pytest.raises(dnnq.InvalidArguments, match="ln.*last 3 dims.*rank 2"):
        ln.run(None, x)
    bad = donnx.InferenceSession(_qdq_model(
        [helper.make_node("LayerNormalization", ["xd", "g", "b"], ["y"], axis=-1,
                          name="ln2")], ("N", 4)))
    with pytest.raises(dnnq.InvalidArguments, match="ln2.*broadcast"):
        bad.run(None, {"x": np.zeros((2, 4), np.float32)})


@pytest.mark.parametrize("op", ["Mul", "Add"])
def test_broadcast_source_first(tmp_path, op):
    """Mul(gate, x) / Add(bias_row, x) with the smaller int8 tensor first: the sources swap
    (dnnq.Binary broadcasts its second only; the gate runs the one-pass kernel)."""
    b = Builder()
    a = b.op("Relu", [b.conv("x", 4, 8)])
    g = b.op("Sigmoid", [b.op("GlobalAveragePool", [a])])
    y = b.op(op, [g, a])
    y = b.op("Tanh", [b.op("Conv", [y, b.const(_w(4, 8, 1, 1))], kernel_shape=[1, 1])])
    sess = _run(tmp_path, b.model((1, 4, 6, 6), y), (1, 4, 6, 6), steps=10)
    rows = [r for r in sess.plan() if r["primitive"] == "Binary"]
    assert len(rows) == 1
    if op == "Mul":
        assert rows[0]["impl_info"] == "int8 one pass"


def test_lookup_table_requantized_for_its_concat(tmp_path):
    """A lookup table read only by a Concat of another scale: its 256 entries requantized
    once to the Concat's (the same bytes as requantizing its output on every run)."""
    b = Builder()
    a = b.op("Sigmoid", [b.conv("x", 4, 8)])
    c = b.op("Concat", [a, b.op("Relu", [b.conv("x", 4, 8)])], axis=1)
    y = b.conv(c, 16, 8, k=1)
    sess = _run(tmp_path, b.model((1, 4, 9, 7), y), (1, 4, 9, 7))
    tables = [r for r in sess.plan() if r["primitive"] == "lookup table"]
    assert tables and tables[0]["impl_info"].endswith("(requantized for the concatenation)"), \
        sess.plan()
    assert [r["impl_info"] for r in sess.plan() if r["primitive"] == "Concat"] == ["copy"]


@pytest.mark.parametrize("one, many, keeps", [
    (10e-6, 2e-6, False),      # saves 80 % but only 8 us: the wake-up costs about that
    (100e-6, 70e-6, True),     # 30 % and 30 us
    (100e-6, 85e-6, False),    # 15 %
    (140e-6, 130e-6, False),   # below 150 us: the 20 % rule alone
    (150e-6, 200e-6, True),    # large: a disturbed trial does not take its threads away
    (1e-3, 1.45e-3, True),
    (1e-3, 1.6e-3, False),     # all threads much slower: a core other work holds
    (5e-3, 60e-3, False),
])
def test_per_step_thread_rule(one, many, keeps):
    from dnnq.onnx.session import parallel_doubtful, parallel_pays
    assert parallel_pays(one, many) is keeps
    # refused although large: the trials met a core another process held
    assert parallel_doubtful(one, many) is (one >= 150e-6 and not keeps)


def test_doubtful_choice_needs_a_quarter_of_the_large_steps():
    from dnnq.onnx.session import choice_doubtful
    ms = 1e-3
    # one large step of several made slower: no sign of a busy core (det's 1x1 12 -> 96)
    assert not choice_doubtful([0.7 * ms, 3 * ms, 3 * ms, 10e-6], [1.1 * ms, 1.6 * ms,
                                                                  1.6 * ms, 50e-6])
    # most of the large steps' time made slower: a core another process held
    assert choice_doubtful([0.7 * ms, 3 * ms, 3 * ms], [1.1 * ms, 5 * ms, 1.6 * ms])
    assert not choice_doubtful([100e-6, 10e-6], [400e-6, 90e-6])  # no large step


def _two_conv_model(tmp_path):
    """(the QDQ file of a 3x3 conv then a 1x1 conv, its input): a model of two layers for
    the thread-choice tests."""
    b = Builder()
    y = b.conv("x", 8, 16)
    y = b.conv(y, 16, 8, k=1)
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(b.model((1, 8, 12, 12), y), f32)
    x = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    quantize_qdq(f32, qdq, [{"x": x}])
    return qdq, x


def test_doubtful_thread_choice_is_made_again(tmp_path, monkeypatch):
    """A thread choice that tells of a busy core (parallel_doubtful) is made again 8, then
    32, then 128 runs later, at most three times; a sound one stays; every run gives the
    one-thread results."""
    qdq, x = _two_conv_model(tmp_path)
    ref = donnx.InferenceSession(qdq, threads=1).run(None, {"x": x})[0]
    real = donnx.InferenceSession._choose_threads
    # (run 0: the choice at creation; user runs from 1)
    for verdicts, runs, choices in (([True] * 5, 200, [0, 9, 42, 171]),
                                    ([True, False, True], 200, [0, 9]),
                                    ([False], 50, [0])):
        made, run_no = [], [0]

        def choose(self, env, n, _v=verdicts):
            made.append(run_no[0])
            choice, _, one_s = real(self, env, n)
            return choice, _v[min(len(made), len(_v)) - 1], one_s
        monkeypatch.setattr(donnx.InferenceSession, "_choose_threads", choose)
        sess = donnx.InferenceSession(qdq, threads=2)
        for i in range(1, runs + 1):
            run_no[0] = i
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], ref)
        assert made == choices, (verdicts, made)
        monkeypatch.undo()


@pytest.mark.parametrize("costs, want", [
    # per step (one thread, all threads) in us, and what a step on all the threads costs
    # more when the step before it ran on one: the per-step rule keeps step 0 parallel and
    # step 1 on one thread, but whole runs on two threads are faster
    (([300, 100], [100, 90], 60), [2, 2]),
    # no penalty: the per-step plan is the fastest whole run
    (([300, 100], [100, 140], 0), [2, 1]),
    # both steps slower on two threads: one thread throughout
    (([100, 100], [300, 300], 0), [1, 1]),
])
def test_thread_choice_compares_whole_runs(tmp_path, monkeypatch, costs, want):
    """The per-step thread choice, every step on one thread and every step on all of them are
    compared as whole runs, and the fastest whole run is the choice: a step's time depends on
    the threads of the step that wrote its input, which timing steps apart misses.  A fake
    clock gives each step a cost by its threads and its predecessor's."""
    from dnnq.onnx import session as session_mod
    qdq, x = _two_conv_model(tmp_path)
    sess = donnx.InferenceSession(qdq, threads=2)
    sess.run(None, {"x": x})
    steps = [st for st in sess._steps if st.primitive == "Convolution"]
    assert len(steps) == 2, sess.plan()
    one, many, penalty = costs
    now, prev = [0.0], [1]

    def timed(st, k, run=None):
        def run_step(env):
            run(env)
            t = dnnq.get_num_threads()
            us = (many if t > 1 else one)[k] + (penalty if t > 1 and prev[0] == 1 else 0)
            now[0] += us * 1e-6
            prev[0] = t
        return run_step
    for k, st in enumerate(steps):
        monkeypatch.setattr(st, "run", timed(st, k, st.run))
    others = [i for i, st in enumerate(sess._steps) if st not in steps]
    monkeypatch.setattr(session_mod, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    env = sess._check_feed({"x": x})
    choice, _, _ = sess._choose_threads(env, 2)
    conv_choice = [choice[i] for i, st in enumerate(sess._steps) if st in steps]
    assert conv_choice == want, choice
    # the steps that cost nothing on the fake clock follow the plan that won (the per-step
    # rule gives them one thread)
    assert all(choice[i] == (2 if want == [2, 2] else 1) for i in others), choice


@pytest.mark.parametrize("factors, compiled", [((2, 2), True), ((2, 3), True),
                                               ((1, 4), True), ((1.5, 2), False)])
def test_nearest_resize_of_int8_is_a_pixel_repeat(tmp_path, factors, compiled):
    """A nearest Resize of an int8 convolution output: by whole factors a compiled pixel
    copy (kept output, repeated on warm runs), else the general resize; either way each
    output pixel is its source pixel's value (checked against numpy's repeat of the
    model's own resize input, a second graph output, at several inputs and warm runs)."""
    b = Builder()
    c = b.op("Relu", [b.conv("x", 8, 24)])
    r = b.op("Resize", [c, "", b.const(np.float32([1, 1, *factors]))], mode="nearest")
    y = b.conv(r, 24, 8, k=1)  # a reader: the resize output stays inside the session
    g = b.op("Concat", [b.op("GlobalAveragePool", [y]), b.op("GlobalMaxPool", [r])], axis=1)
    m = b.model((1, 8, 10, 12), g)
    m.graph.output.extend([helper.make_tensor_value_info(c, TensorProto.FLOAT, None),
                           helper.make_tensor_value_info(r, TensorProto.FLOAT, None)])
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(m, f32)
    quantize_qdq(f32, qdq, [{"x": RNG.standard_normal((1, 8, 10, 12)).astype(np.float32)}
                            for _ in range(2)])
    sess = donnx.InferenceSession(qdq)
    steps = [st for st in sess._steps if "Resize" in st.primitive]
    assert len(steps) == 1
    for i in range(4):
        x = (RNG.standard_normal((1, 8, 10, 12)) * (1 + i)).astype(np.float32)
        _, src, up = sess.run(None, {"x": x})
        h, w = (int(10 * factors[0]), int(12 * factors[1]))
        assert up.shape == (1, 24, h, w)
        # ONNX's half_pixel coordinates, round_prefer_floor: ceil(v - 0.5)
        rows = np.ceil((np.arange(h) + 0.5) / factors[0] - 1).astype(int)
        cols = np.ceil((np.arange(w) + 0.5) / factors[1] - 1).astype(int)
        np.testing.assert_array_equal(up, src[:, :, np.clip(rows, 0, 9)][:, :, :, np.clip(cols, 0, 11)])
    assert (steps[0]._repeat is not None) == compiled or not steps[0].keeps_output


def test_run_threads_sets_each_steps_threads_whatever_was_left(tmp_path, monkeypatch):
    """A run with a per-step plan sets each step's threads even when the run before it left
    another count set (the thread choice runs plans back to back: a plan on all threads
    after one that ended on one thread ran on one)."""
    qdq, x = _two_conv_model(tmp_path)
    sess = donnx.InferenceSession(qdq, threads=2)
    sess.run(None, {"x": x})
    seen = []
    for st in sess._steps:
        def run_step(env, _run=st.run):
            seen.append(dnnq.get_num_threads())
            _run(env)
        monkeypatch.setattr(st, "run", run_step)
    env = sess._check_feed({"x": x})
    n = len(sess._steps)
    before = dnnq.get_num_threads()
    try:
        dnnq.set_num_threads(2)
        sess._run_threads(env, [2] * (n - 1) + [1], 2, timed=False)
        seen.clear()
        sess._run_threads(env, [2] * n, 2, timed=False)
        assert seen == [2] * n, seen
    finally:
        dnnq.set_num_threads(before)
