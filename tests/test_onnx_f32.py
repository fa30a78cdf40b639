"""Plain f32 models through dnnq.onnx: convolutions and matrix products on dnnq's f32 layers
(SPEC section 6, "f32 layers"), the rest in numpy; compared with ONNX Runtime. Where this dnnq
has no f32 layers the session must refuse the model at creation, naming the node."""
import platform

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402

RNG = np.random.default_rng(11)


def _has_f32_layers():
    md = dnnq.MemoryDesc
    try:
        dnnq.Convolution(md((1, 2, 3, 3), "f32", "nhwc"), md((2, 2, 1, 1), "f32"),
                         md((1, 2, 3, 3), "f32", "nhwc"), strides=1, padding_l=0,
                         padding_r=0)
        dnnq.MatMul(md((2, 3), "f32"), md((3, 4), "f32"), md((2, 4), "f32"))
    except (dnnq.Unimplemented, dnnq.InvalidArguments):
        return False
    return True


def _c(arr, name, inits):
    arr = np.asarray(arr)
    inits.append(numpy_helper.from_array(arr if arr.dtype == np.int64 else
                                         arr.astype(np.float32), name))
    return name


def _model():
    inits = []
    w = lambda *s: (RNG.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    n = [helper.make_node("Conv", ["x", _c(w(16, 3, 3, 3), "w1", inits),
                                   _c(w(16), "b1", inits)], ["c1"], name="conv1",
                          pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("BatchNormalization", ["c1", _c(np.abs(w(16)) + 0.5, "g", inits),
                                                 _c(w(16), "be", inits), _c(w(16), "m", inits),
                                                 _c(np.abs(w(16)) + 0.5, "v", inits)],
                          ["bn"], name="bn"),
         helper.make_node("Relu", ["bn"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", _c(w(16, 1, 3, 3), "w2", inits)], ["dw"], name="dw",
                          pads=[1, 1, 1, 1], group=16),
         helper.make_node("Sigmoid", ["dw"], ["sg"]),
         helper.make_node("Mul", ["dw", "sg"], ["sw"], name="swish"),
         helper.make_node("MaxPool", ["sw"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["p"], ["g1"]),
         helper.make_node("Flatten", ["g1"], ["f"]),
         helper.make_node("Gemm", ["f", _c(w(10, 16), "w3", inits), _c(w(10), "b3", inits)],
                          ["fc"], name="fc", transB=1),
         helper.make_node("Softmax", ["fc"], ["y"], axis=-1)]
    g = helper.make_graph(n, "f32", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                   [1, 3, 20, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_f32_model_matches_onnxruntime_or_is_refused():
    m = _model()
    if not _has_f32_layers():
        with pytest.raises(dnnq.Unimplemented, match=r"conv1.*f32"):
            donnx.InferenceSession(m)
        return
    s = donnx.InferenceSession(m)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(2):
        x = RNG.standard_normal((1, 3, 20, 24)).astype(np.float32)
        np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-6)
    rows = s.plan()
    convs = [r for r in rows if r["primitive"] == "Convolution"]
    assert len(convs) == 2 and all(r["dtypes_in"][0] == "f32" for r in convs)
    assert "bn" in convs[0]["nodes"] and "relu" in convs[0]["nodes"]  # folded, fused
    assert "swish" in convs[1]["nodes"]
    assert "MatMul" in [r["primitive"] for r in rows]


def _elementwise_model():
    """f32 Add / Mul / Sub / Div between channels-last convolution outputs, a broadcast
    per-channel scale, and a transposed (channels-first) tensor: the layouts numpy's new
    arrays take differ from operand to operand."""
    inits = []
    w = lambda *s: (RNG.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    n = [helper.make_node("Conv", ["x", _c(w(16, 16, 1, 1), "w1", inits)], ["c1"], name="c1"),
         helper.make_node("Conv", ["x", _c(w(16, 1, 3, 3), "w2", inits)], ["c2"], name="c2",
                          pads=[1, 1, 1, 1], group=16),
         helper.make_node("Mul", ["c1", _c(w(1, 16, 1, 1), "s", inits)], ["m"], name="mul_s"),
         helper.make_node("Add", ["c1", "m"], ["a"], name="residual"),
         helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 1, 3, 2]),
         helper.make_node("Transpose", ["xt"], ["xc"], perm=[0, 1, 3, 2]),
         helper.make_node("Mul", ["a", "xc"], ["mx"], name="mul_layouts"),
         helper.make_node("Sub", ["mx", "c2"], ["d"], name="sub"),
         helper.make_node("Div", ["d", _c(np.abs(w(1, 16, 1, 1)) + 1, "q", inits)], ["y0"],
                          name="div"),
         # a sum over the channels: numpy sums a contiguous axis pairwise, a strided one in
         # sequence, so its bits follow y0's memory order
         helper.make_node("ReduceSum", ["y0", _c(np.array([1]), "ax", inits)], ["y"],
                          keepdims=1)]
    g = helper.make_graph(n, "f32_elementwise",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 33, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 33, 40]),
                           helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 16, 33, 40])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_f32_elementwise_into_kept_buffers():
    """Add / Sub / Mul / Div of f32 maps write into the session's kept buffers from the second
    run on: every run gives the first run's bits (the kept arrays take the memory order
    numpy's new arrays had: the reduction after them sums in the same order), ONNX Runtime's
    values, and the returned arrays are the caller's (a graph output, m, is never kept)."""
    if not _has_f32_layers():
        pytest.skip("no f32 layers")
    m = _elementwise_model()
    s = donnx.InferenceSession(m, threads=1)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    kinds = {r["nodes"][0]: r["primitive"] for r in s.plan()}
    assert kinds["residual"] == "numpy:Add" and kinds["mul_layouts"] == "numpy:Mul"
    for trial in range(2):
        x = RNG.standard_normal((1, 16, 33, 40)).astype(np.float32)
        outs = [s.run(None, {"x": x}) for _ in range(4)]
        for o in outs[1:]:
            for a, b in zip(outs[0], o):
                assert np.array_equal(a, b)
        assert not np.shares_memory(outs[0][1], outs[1][1])
        want = ref.run(None, {"x": x})
        for a, b in zip(outs[-1], want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_kept_elementwise_output_takes_numpys_layout(op):
    """The kept array of an f32 Add / Sub / Mul / Div step has the memory order numpy's new
    array would have (the steps after it read the same layout on the first run, whose
    arrays are new, and on the later ones), the same values, and is the same array every
    run; other dtypes take numpy's path."""
    from dnnq.onnx import ops_numpy
    from dnnq.onnx.buffers import REUSE
    from dnnq.onnx.move_steps import NumpyStep
    # (338 KB: above the size a step keeps without the session's pool)
    cl = RNG.standard_normal((1, 66, 80, 16)).astype(np.float32).transpose(0, 3, 1, 2)
    c = RNG.standard_normal((1, 16, 66, 80)).astype(np.float32) + 3
    s = (RNG.standard_normal((1, 16, 1, 1)) + 3).astype(np.float32)
    fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
    for a, b in ((cl, c), (c, cl), (cl, s), (s, c), (cl, cl)):
        st = NumpyStep("n", op, {}, 13, ["a", "b"], ["y"], {})
        st.keeps_output = True
        want = fn(a, b)
        got = []
        for _ in range(3):
            env = {"a": a, "b": b, REUSE: True}
            st.run(env)
            got.append(env["y"])
        assert got[0] is got[1] is got[2]
        assert ops_numpy.memory_order(got[0]) == ops_numpy.memory_order(want)
        assert np.array_equal(got[0], want)
    st = NumpyStep("n", op, {}, 13, ["a", "b"], ["y"], {})
    st.keeps_output = True
    env = {"a": np.arange(6.0).reshape(2, 3), "b": np.full((2, 3), 2.0), REUSE: True}
    st.run(env)
    assert env["y"].dtype == np.float64
    np.testing.assert_array_equal(env["y"], fn(env["a"], env["b"]))


def _cl(shape):
    n, c, h, w = shape
    return RNG.standard_normal((n, h, w, c)).astype(np.float32).transpose(0, 3, 1, 2)


def _resize_step(scales, mode="nearest"):
    from dnnq.onnx.move_steps import NumpyStep
    consts = {"roi": np.zeros(0, np.float32), "sc": np.asarray(scales, np.float32)}
    return NumpyStep("resize", "Resize", {"mode": mode}, 13, ["x", "roi", "sc"], ["y"],
                     consts), consts


@pytest.mark.parametrize("case", ["x2", "x4_w3", "nchw", "linear", "channels", "f64"])
def test_f32_nearest_resize_as_pixel_copies(case):
    """A nearest Resize by whole factors along H and W of a channels-last f32 map is a
    compiled pixel copy into the kept (channels-last) array, numpy's values exactly; the
    other cases take numpy's path, with its values."""
    from dnnq.onnx import ops_numpy
    from dnnq.onnx.buffers import REUSE
    x = {"x2": _cl((1, 24, 40, 60)), "x4_w3": _cl((2, 17, 20, 30)),
         "nchw": RNG.standard_normal((1, 24, 40, 60)).astype(np.float32),
         "linear": _cl((1, 24, 40, 60)), "channels": _cl((1, 24, 40, 60)),
         "f64": _cl((1, 24, 40, 60)).astype(np.float64)}[case]
    scales = {"x4_w3": [1, 1, 4, 3], "channels": [1, 2, 2, 2]}.get(case, [1, 1, 2, 2])
    st, consts = _resize_step(scales, "linear" if case == "linear" else "nearest")
    st.keeps_output = True
    want = ops_numpy.run_op("Resize", [x, consts["roi"], consts["sc"]], st.attrs, 13)[0]
    got = []
    for _ in range(3):
        env = {"x": x, "roi": consts["roi"], "sc": consts["sc"], REUSE: True}
        st.run(env)
        got.append(env["y"])
    for g in got:
        np.testing.assert_array_equal(g, want)
    copied = case in ("x2", "x4_w3")
    assert (got[0] is got[1] is got[2]) == copied
    if copied:
        assert got[0].transpose(0, 2, 3, 1).flags.c_contiguous


def test_f32_channel_concat_as_pixel_copies():
    """A Concat along the channels of channels-last 4-D f32 maps (24, 17, 1, 64 channels)
    copies each into its channel slice of the kept array: numpy's values, channels-last,
    the same array every run; other axes and layouts take numpy's path."""
    from dnnq.onnx.buffers import REUSE
    from dnnq.onnx.move_steps import NumpyStep
    xs = [_cl((2, c, 20, 21)) for c in (24, 17, 1, 64)]  # 356 KB: kept without a pool
    names = [f"x{i}" for i in range(len(xs))]
    st = NumpyStep("cat", "Concat", {"axis": 1}, 13, names, ["y"], {})
    st.keeps_output = True
    want = np.concatenate(xs, axis=1)
    got = []
    for _ in range(3):
        env = dict(zip(names, xs))
        env[REUSE] = True
        st.run(env)
        got.append(env["y"])
    assert got[0] is got[1] is got[2] and got[0].transpose(0, 2, 3, 1).flags.c_contiguous
    np.testing.assert_array_equal(got[0], want)
    for axis, arrays in ((3, [_cl((1, 8, 5, w)) for w in (3, 4)]),
                         (1, [RNG.standard_normal((1, c, 5, 6)).astype(np.float32)
                              for c in (2, 3)])):
        st = NumpyStep("cat", "Concat", {"axis": axis}, 13, ["a", "b"], ["y"], {})
        st.keeps_output = True
        env = {"a": arrays[0], "b": arrays[1], REUSE: True}
        st.run(env)
        np.testing.assert_array_equal(env["y"], np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "Exp", "Softplus", "Mish"])
def test_f32_unary_eltwise_step(op):
    """F32EltwiseStep gives the numpy step's values bit for bit (both dnnq.Eltwise), C-contiguous
    from a channels-last source too, into the same kept array every run; other dtypes and
    layouts (f64, a strided view) take numpy's path."""
    from dnnq.onnx import ops_numpy
    from dnnq.onnx.buffers import REUSE
    from dnnq.onnx.f32_patterns import _F32_ELTWISE
    from dnnq.onnx.f32_fusion_steps import F32EltwiseStep
    base = _cl((1, 32, 48, 60)) * np.float32(3)
    for x, fast in ((base, True), (np.ascontiguousarray(base), True),
                    (base.astype(np.float64), False), (base[:, :, ::2], False)):
        st = F32EltwiseStep("n", op, {}, 13, "x", "y", *_F32_ELTWISE[op])
        st.keeps_output = True
        want = ops_numpy.run_op(op, [x], {}, 13)[0]
        got = []
        for _ in range(3):
            env = {"x": x, REUSE: True}
            st.run(env)
            got.append(env["y"])
        for g in got:
            assert g.dtype == want.dtype and (g.flags.c_contiguous or not fast)
            np.testing.assert_array_equal(g, want)
        assert (got[0] is got[1] is got[2]) == fast


def _se_model(mul_order, add_order, expose_product):
    """Conv -> GlobalAveragePool -> Sigmoid gate s; y = Add(x, Mul(x, s)) in either operand
    order; the product also a graph output when ``expose_product``."""
    inits = []
    w = lambda *s: (RNG.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    mul_in = ["c", "s"] if mul_order else ["s", "c"]
    add_in = ["c", "m"] if add_order else ["m", "c"]
    n = [helper.make_node("Conv", ["x", _c(w(40, 16, 1, 1), "w1", inits)], ["c"], name="c1"),
         helper.make_node("GlobalAveragePool", ["c"], ["g"]),
         helper.make_node("Sigmoid", ["g"], ["s"]),
         helper.make_node("Mul", mul_in, ["m"], name="gate"),
         helper.make_node("Add", add_in, ["y"], name="residual")]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 30, 44])]
    if expose_product:
        outs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 40, 30, 44]))
    g = helper.make_graph(n, "se", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                  [1, 16, 30, 44])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("mul_order,add_order,expose", [(True, True, False), (False, False, False),
                                                        (True, False, True)])
def test_f32_scale_residual_one_binary_pass(mul_order, add_order, expose):
    """Add(x, Mul(x, s)) of f32 maps is one Binary step (x * s, a binary add post-op of x):
    numpy's bits (x + x * s with its two roundings), run after run; not fused where the
    product is a graph output."""
    if not _has_f32_layers():
        pytest.skip("no f32 layers")
    m = _se_model(mul_order, add_order, expose)
    s = donnx.InferenceSession(m, threads=1)
    rows = {tuple(r["nodes"]): r["primitive"] for r in s.plan()}
    fused = ("gate", "residual") in rows
    assert fused == (not expose)
    if fused:
        assert rows[("gate", "residual")] == "Binary"
    probe = m.graph.output.add()
    probe.CopyFrom(helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 40, 30, 44]))
    probe = m.graph.output.add()
    probe.CopyFrom(helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 40, 1, 1]))
    p = donnx.InferenceSession(m, threads=1)  # the same conv and gate, returned
    x = RNG.standard_normal((1, 16, 30, 44)).astype(np.float32)
    outs = p.run(None, {"x": x})
    c, g = outs[-2], outs[-1]
    want = c + c * g
    for _ in range(3):
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)


def _session_without(model, pattern, monkeypatch):
    """A session of ``model`` with the planner's f32 pattern ``pattern`` switched off (the
    steps it replaces run instead): the reference the fused steps are checked against."""
    from dnnq.onnx.planner import Planner
    monkeypatch.setattr(Planner, pattern, lambda self, n, label: False)
    return donnx.InferenceSession(model, threads=1, rounding="chain")


def _f32_int8_add_model(order):
    """y = Q(Add(Tanh(x), DQ(Q(z)))) with a DequantizeLinear after it: an f32 value no layer
    computes plus a dequantized int8 map (operands in either order)."""
    inits = []
    for name, v, dt in (("sz", 0.03, None), ("zz", 120, np.uint8), ("sy", 0.05, None),
                        ("zy", 131, np.uint8)):
        inits.append(numpy_helper.from_array(np.asarray(v, dt or np.float32), name))
    add_in = ["c", "dz"] if order else ["dz", "c"]
    n = [helper.make_node("Tanh", ["x"], ["c"], name="tanh"),
         helper.make_node("QuantizeLinear", ["z", "sz", "zz"], ["qz"]),
         helper.make_node("DequantizeLinear", ["qz", "sz", "zz"], ["dz"]),
         helper.make_node("Add", add_in, ["a"], name="add"),
         helper.make_node("QuantizeLinear", ["a", "sy", "zy"], ["qy"], name="qy"),
         helper.make_node("DequantizeLinear", ["qy", "sy", "zy"], ["y"])]
    shape = [1, 24, 20, 36]
    g = helper.make_graph(n, "f32_int8_add",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("order", [True, False])
def test_f32_plus_int8_add_into_quantize(order, monkeypatch):
    """QuantizeLinear(Add(f32 x, DequantizeLinear(int8 r))) is one Binary step reading r as
    int8 and writing the Add's QuantizeLinear: the bits of the dequantize / numpy add /
    quantize steps it replaces, and ONNX Runtime's values within one step."""
    m = _f32_int8_add_model(order)
    s = donnx.InferenceSession(m, threads=1, rounding="chain")
    rows = {tuple(r["nodes"]): r for r in s.plan()}
    assert rows[("add", "qy")]["primitive"] == "Binary"
    assert rows[("add", "qy")]["dtypes_out"] == ["u8"]
    apart = _session_without(m, "_emit_f32_binary_quantized", monkeypatch)
    assert not any(r["primitive"] == "Binary" for r in apart.plan())
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(2):
        feed = {"x": RNG.standard_normal((1, 24, 20, 36)).astype(np.float32) * 2,
                "z": RNG.standard_normal((1, 24, 20, 36)).astype(np.float32) * 2}
        y = s.run(None, feed)[0]
        np.testing.assert_array_equal(y, apart.run(None, feed)[0])
        np.testing.assert_allclose(y, ref.run(None, feed)[0], atol=0.05 * 1.01)


@pytest.mark.parametrize("gate_shape", [[1, 24, 1, 1], [1, 24, 20, 36], [1, 1, 20, 1]])
def test_f32_product_into_quantize(gate_shape, monkeypatch):
    """QuantizeLinear(Mul(x, s)) of f32 values (a squeeze-excitation gate before the next
    layer's QuantizeLinear) is one Binary step: the bits of the numpy product and the
    quantizing Reorder; a gate of another shape than Binary broadcasts (here (1, 1, 20, 1)
    fits; see the misfit test below) keeps them."""
    inits = [numpy_helper.from_array(np.asarray(0.04, np.float32), "sy"),
             numpy_helper.from_array(np.asarray(7, np.uint8), "zy")]
    n = [helper.make_node("Tanh", ["x"], ["c"], name="tanh"),
         helper.make_node("Sigmoid", ["g"], ["s"], name="gate"),
         helper.make_node("Mul", ["c", "s"], ["m"], name="mul"),
         helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["qy"], name="qy"),
         helper.make_node("DequantizeLinear", ["qy", "sy", "zy"], ["y"])]
    shape = [1, 24, 20, 36]
    g = helper.make_graph(n, "gate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                                      helper.make_tensor_value_info("g", TensorProto.FLOAT,
                                                                    gate_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    s = donnx.InferenceSession(m, threads=1, rounding="chain")
    assert {tuple(r["nodes"]): r["primitive"] for r in s.plan()}[("mul", "qy")] == "Binary"
    apart = _session_without(m, "_emit_f32_binary_quantized", monkeypatch)
    for _ in range(2):
        feed = {"x": RNG.standard_normal(shape).astype(np.float32) * 2,
                "g": RNG.standard_normal(gate_shape).astype(np.float32)}
        for _ in range(2):
            np.testing.assert_array_equal(s.run(None, feed)[0], apart.run(None, feed)[0])


def test_fused_binary_misfit_runs_the_replaced_steps():
    """Operands dnnq.Binary cannot take (neither of the full shape: (1, C, 1, 1) + (1, 1, H,
    W)) run as the dequantize / numpy / quantize steps would, with their bits."""
    from dnnq.onnx.quant import QParams
    from dnnq.onnx.f32_fusion_steps import FusedBinaryStep
    from dnnq.onnx.steps import ReorderStep
    qd = QParams(np.array([0.05], np.float32), np.array([131], np.uint8), "u8", 1)
    qr = QParams(np.array([0.03], np.float32), np.array([120], np.uint8), "u8", 1)
    a = RNG.standard_normal((1, 24, 1, 1)).astype(np.float32)
    r = RNG.integers(0, 256, (1, 1, 20, 36)).astype(np.uint8)
    st = FusedBinaryStep(["add"], "add", "Add", "a", "r", "y", None, qr, qd)
    env = {"a": a, "r": r}
    st.run(env)
    deq = ReorderStep(["d"], "r", "rd", qr, None)
    quant = ReorderStep(["q"], "s", "y", None, qd)
    ref = {"r": r}
    deq.run(ref)
    ref["s"] = a + ref["rd"]
    quant.run(ref)
    np.testing.assert_array_equal(env["y"], ref["y"])
    assert set(env) == {"a", "r", "y"}


def _concat_quantize_model(three_d):
    """QuantizeLinear(Concat(Resize x4 x2 (Tanh(a)), Resize x2 (Tanh(b)), Tanh(c))) along the
    channels (4-D), or a plain 3-D concatenation (no resize)."""
    inits = [numpy_helper.from_array(np.asarray(0.01, np.float32), "sy"),
             numpy_helper.from_array(np.asarray(128, np.uint8), "zy"),
             numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    if three_d:
        shapes = [[1, 8, 30], [1, 5, 30], [1, 3, 30]]
        n = [helper.make_node("Tanh", [v], [f"t{v}"]) for v in "abc"]
        cat_in = ["ta", "tb", "tc"]
    else:
        shapes = [[1, 8, 10, 24], [1, 5, 20, 24], [1, 3, 40, 48]]
        inits += [numpy_helper.from_array(np.asarray(s, np.float32), f"s{k}")
                  for k, s in (("4", [1, 1, 4, 2]), ("2", [1, 1, 2, 2]))]
        n = [helper.make_node("Tanh", [v], [f"t{v}"]) for v in "abc"]
        n += [helper.make_node("Resize", ["ta", "roi", "s4"], ["ra"], mode="nearest"),
              helper.make_node("Resize", ["tb", "roi", "s2"], ["rb"], mode="nearest")]
        cat_in = ["ra", "rb", "tc"]
    out = [1, 16] + shapes[0][2:] if three_d else [1, 16, 40, 48]
    n += [helper.make_node("Concat", cat_in, ["cat"], name="cat", axis=1),
          helper.make_node("QuantizeLinear", ["cat", "sy", "zy"], ["q"], name="q"),
          helper.make_node("DequantizeLinear", ["q", "sy", "zy"], ["y"])]
    g = helper.make_graph(n, "concat_q",
                          [helper.make_tensor_value_info(v, TensorProto.FLOAT, s)
                           for v, s in zip("abc", shapes)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m, shapes


@pytest.mark.parametrize("three_d", [False, True])
def test_f32_concat_into_quantize(three_d, monkeypatch):
    """QuantizeLinear(Concat) of f32 maps, the nearest Resizes read only by it taken in: each
    input quantized at its own size and repeated into its channel slice: the bytes of the
    resize / concatenate / quantize steps it replaces (3-D inputs run those steps), and ONNX
    Runtime's values."""
    m, shapes = _concat_quantize_model(three_d)
    s = donnx.InferenceSession(m, threads=1, rounding="chain")
    rows = [r for r in s.plan() if "cat" in r["nodes"]]
    assert len(rows) == 1 and rows[0]["primitive"] == "Concat" and "q" in rows[0]["nodes"]
    if not three_d:
        assert rows[0]["impl_info"] == "resize into, quantize, copy"
        assert sum("Resize" in str(r["nodes"]) for r in s.plan()) == 1
    apart = _session_without(m, "_emit_f32_concat_quantized", monkeypatch)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(2):
        feed = {v: RNG.standard_normal(sh).astype(np.float32) for v, sh in zip("abc", shapes)}
        for _ in range(2):
            y = s.run(None, feed)[0]
            np.testing.assert_array_equal(y, apart.run(None, feed)[0])
        np.testing.assert_allclose(y, ref.run(None, feed)[0], atol=0.0101)


def _swish_model(form, quantized=True, channels_last=False):
    """QuantizeLinear(Mul(t, Sigmoid(Mul(t, 1.702)))) ("beta"), QuantizeLinear(Mul(Sigmoid(t),
    t)) ("plain"), or the plain form with the gate also a graph output ("exposed");
    t = Tanh(x) * 3.  ``quantized=False``: the f32 product is the output;
    ``channels_last``: x given as NHWC and transposed, so t is a channels-last view."""
    inits = [numpy_helper.from_array(np.asarray(0.02, np.float32), "sy"),
             numpy_helper.from_array(np.asarray(60, np.uint8), "zy"),
             numpy_helper.from_array(np.asarray(1.702, np.float32), "beta"),
             numpy_helper.from_array(np.asarray(3.0, np.float32), "three")]
    shape = [1, 16, 12, 50]
    x_shape = [1, 12, 50, 16] if channels_last else shape
    n = [helper.make_node("Tanh", ["x"], ["t0"])]
    if channels_last:
        n.append(helper.make_node("Transpose", ["t0"], ["t0t"], perm=[0, 3, 1, 2]))
    n.append(helper.make_node("Mul", ["t0t" if channels_last else "t0", "three"], ["t"],
                              name="scale"))
    if form == "beta":
        n += [helper.make_node("Mul", ["t", "beta"], ["tb"], name="mul_beta"),
              helper.make_node("Sigmoid", ["tb"], ["g"], name="sig"),
              helper.make_node("Mul", ["t", "g"], ["m"], name="mul")]
    else:
        n += [helper.make_node("Sigmoid", ["t"], ["g"], name="sig"),
              helper.make_node("Mul", ["g", "t"], ["m"], name="mul")]
    if quantized:
        n += [helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["q"], name="q"),
              helper.make_node("DequantizeLinear", ["q", "sy", "zy"], ["y"])]
    outs = [helper.make_tensor_value_info("y" if quantized else "m", TensorProto.FLOAT, shape)]
    if form == "exposed":
        outs.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, shape))
    g = helper.make_graph(n, "swish", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     x_shape)], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m, shape


def _swish_sessions(m, form, dt_out, monkeypatch):
    """dnnq's session of a _swish_model (its plan checked: one Eltwise for the swish nodes
    writing ``dt_out``, none where the gate is exposed), the session with the fusion off
    and ORT's."""
    s = donnx.InferenceSession(m, threads=1, rounding="chain")
    rows = [r for r in s.plan() if "mul" in r["nodes"]]
    assert len(rows) == 1
    fused = rows[0]["primitive"] == "Eltwise"
    assert fused == (form != "exposed")
    if fused:
        assert "sig" in rows[0]["nodes"] and rows[0]["dtypes_out"] == [dt_out]
        assert ("q" in rows[0]["nodes"]) == (dt_out == "u8")
    apart = _session_without(m, "_emit_f32_swish", monkeypatch)
    return s, apart, ort.InferenceSession(m.SerializeToString(),
                                          providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("form", ["beta", "plain", "exposed"])
def test_f32_swish_into_quantize(form, monkeypatch):
    """x * Sigmoid(beta * x) (or x * Sigmoid(x)) before a QuantizeLinear is one Eltwise swish
    writing int8: the bits of the Mul / Sigmoid / Mul / QuantizeLinear steps it replaces, and
    ONNX Runtime's values; not fused where the gate is a graph output."""
    m, shape = _swish_model(form)
    s, apart, ref = _swish_sessions(m, form, "u8", monkeypatch)
    for _ in range(2):
        feed = {"x": RNG.standard_normal(shape).astype(np.float32)}
        for _ in range(2):
            y = s.run(None, feed)[0]
            np.testing.assert_array_equal(y, apart.run(None, feed)[0])
        np.testing.assert_allclose(y, ref.run(None, feed)[0], atol=0.0201)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("form", ["beta", "plain", "exposed"])
def test_f32_swish(form, channels_last, monkeypatch):
    """x * Sigmoid(beta * x) (or x * Sigmoid(x)) of f32 values with an f32 result is one
    Eltwise swish: the bits and the C-contiguous layout of the Mul / Sigmoid / Mul steps,
    ONNX Runtime's values; not fused where the gate is a graph output."""
    m, shape = _swish_model(form, quantized=False, channels_last=channels_last)
    s, apart, ref = _swish_sessions(m, form, "f32", monkeypatch)
    x_shape = [shape[0], shape[2], shape[3], shape[1]] if channels_last else shape
    for _ in range(2):
        feed = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
        for _ in range(2):
            y, want = s.run(None, feed)[0], apart.run(None, feed)[0]
            assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
            assert y.strides == want.strides
        np.testing.assert_allclose(y, ref.run(None, feed)[0], rtol=1e-5, atol=1e-6)


def test_standalone_batch_normalization_is_onnxruntimes():
    """A BatchNormalization no layer takes runs ONNX Runtime's order: a = (1 / sqrt(var +
    eps)) * scale, b = B - mean * a, y = x * a + b (scale / sqrt(var + eps) rounds otherwise
    for some channels): the same bytes as ONNX Runtime (x86-64)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("compares bytes with ONNX Runtime's x86-64 build")
    rng = np.random.default_rng(12)
    c = 64
    inits = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in (
        ("s", 1 + 0.5 * rng.standard_normal(c)), ("b", rng.standard_normal(c)),
        ("m", rng.standard_normal(c)), ("v", 0.1 + rng.random(c)))]
    g = helper.make_graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                            ["y"], epsilon=1e-3)], "bn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 7, 9])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, c, 7, 9])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    ours = donnx.InferenceSession(m)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((2, c, 7, 9)).astype(np.float32)
    np.testing.assert_array_equal(ours.run(None, {"x": x})[0], ref.run(None, {"x": x})[0])
