"""``QuantizeLinear(Add(Add(x, Mul(x, s)), y))`` -- a squeeze-excitation residual on an f32
convolution output plus another map, quantized for the next layer (PP-OCRv4 det's neck in
dnnq's own int8 model) -- as one pass (f32_fusion_steps.ScaleResidualQuantizer): the bytes
of numpy's f32 operations and of the steps it replaces, at channel counts below, at and past
every vector width, in both operand orders, at 1 and 2 threads."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx.f32_fusion_steps import ScaleResidualQuantizer  # noqa: E402
from dnnq.onnx.quant import QParams  # noqa: E402

RNG = np.random.default_rng(23)
F32 = np.float32
FUSED = "x + x * s, + y, quantize"


def _numpy_reference(x, s, y, q_other, qd):
    """The f32 operations in the model's order, each rounded once, then the destination's
    ``* f32(1 / scale) + zp``, rounded half to even and saturated."""
    with np.errstate(all="ignore"):
        t = x * s
        t = t + x
        if y is not None:
            if q_other is None:
                t = t + y
            else:
                d = y.astype(F32)
                if q_other.zp[0]:
                    d = d - F32(q_other.zp[0])
                t = t + d * q_other.scale[0]
        inv = np.divide(F32(1), qd.scale[0], dtype=F32)
        t = t * inv
        if qd.zp[0]:
            t = t + F32(qd.zp[0])
    lo, hi = (0, 255) if qd.dt == "u8" else (-128, 127)
    return np.clip(np.rint(t), lo, hi).astype(np.uint8 if qd.dt == "u8" else np.int8)


def _channels_last(a):
    n, c, h, w = a.shape
    out = np.empty((n, h, w, c), a.dtype).transpose(0, 3, 1, 2)
    out[...] = a
    return out


@pytest.mark.parametrize("channels", [1, 7, 16, 17, 40, 96])
@pytest.mark.parametrize("y_kind", [None, "u8", "s8", "f32"])
@pytest.mark.parametrize("dst", ["u8", "s8"])
def test_quantizer_matches_numpy_in_both_layouts(channels, y_kind, dst):
    """The channels-last kernel (tk_scale_residual.h) and the pointwise engine's program (any
    other layout) give numpy's bytes, saturated values included."""
    shape = (2, channels, 5, 7)
    x = (RNG.standard_normal(shape) * 6).astype(F32)
    s = RNG.random((1, channels, 1, 1)).astype(F32)
    q_other = None
    y = None
    if y_kind == "f32":
        y = (RNG.standard_normal(shape) * 3).astype(F32)
    elif y_kind is not None:
        lo, hi, dt = (0, 256, np.uint8) if y_kind == "u8" else (-128, 128, np.int8)
        y = RNG.integers(lo, hi, shape).astype(dt)
        q_other = QParams(0.0371, 119 if y_kind == "u8" else -7, y_kind)
    qd = QParams(0.0613, 131 if dst == "u8" else 3, dst)
    want = _numpy_reference(x, s, y, q_other, qd)
    dt = np.uint8 if dst == "u8" else np.int8
    before = dnnq.get_num_threads()
    for th in (1, 2):
        dnnq.set_num_threads(th)
        try:
            for layout in (_channels_last, np.ascontiguousarray):
                f = ScaleResidualQuantizer(q_other, qd)
                xx, yy = layout(x), None if y is None else layout(y)
                out = layout(np.zeros(shape, dt))
                f.run(xx, s, yy, out)
                np.testing.assert_array_equal(out, want)
        finally:
            dnnq.set_num_threads(before)


def test_quantizer_kernel_and_program_agree_on_non_finite_values():
    """NaN and infinities: the channels-last kernel and the engine's program store the same
    bytes (the clamp's bound taken for NaN)."""
    shape = (1, 19, 3, 4)
    x = (RNG.standard_normal(shape) * 1e3).astype(F32)
    x.reshape(-1)[::5] = np.nan
    x.reshape(-1)[1::7] = np.inf
    x.reshape(-1)[2::7] = -np.inf
    s = RNG.standard_normal((1, 19, 1, 1)).astype(F32)
    y = RNG.integers(0, 256, shape).astype(np.uint8)
    q_other, qd = QParams(0.5, 10, "u8"), QParams(0.25, 3, "s8")
    f = ScaleResidualQuantizer(q_other, qd)
    a = _channels_last(np.zeros(shape, np.int8))
    f.run(_channels_last(x), s, _channels_last(y), a)
    b = np.zeros(shape, np.int8)
    f.run(x, s, y, b)
    np.testing.assert_array_equal(a, b)


def _model(channels, y_quantized, y_first, dst, z_shape=None):
    """x -> QDQ -> 1x1 Conv (int8, f32 output c) -> GlobalAveragePool -> Sigmoid = s;
    t = c + c * s; u = t + y (y = DQ(Q(z)) or the f32 input z); out = DQ(Q(u))."""
    inits = []

    def const(arr, name):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    cin = 8
    w = RNG.integers(-127, 128, (channels, cin, 1, 1)).astype(np.int8)
    ws = (RNG.random(channels) * 0.01 + 0.002).astype(F32)
    qdt = np.uint8 if dst == "u8" else np.int8
    nodes = [
        helper.make_node("QuantizeLinear", ["x", const(F32(0.02), "sx"),
                                            const(np.uint8(128), "zx")], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", [const(w, "wq"), const(ws, "ws"),
                                              const(np.zeros(channels, np.int8), "wz")],
                         ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", const((RNG.standard_normal(channels) * 0.1)
                                                    .astype(F32), "b")], ["c"],
                         kernel_shape=[1, 1], name="conv"),
        helper.make_node("GlobalAveragePool", ["c"], ["g"]),
        helper.make_node("Sigmoid", ["g"], ["s"]),
        helper.make_node("Mul", ["c", "s"], ["m"], name="gate"),
        helper.make_node("Add", ["c", "m"], ["t"], name="residual"),
    ]
    y = "z"
    if y_quantized:
        nodes += [helper.make_node("QuantizeLinear", ["z", const(F32(0.031), "sz"),
                                                      const(np.uint8(121), "zz")], ["zq"]),
                  helper.make_node("DequantizeLinear", ["zq", "sz", "zz"], ["zd"])]
        y = "zd"
    nodes += [helper.make_node("Add", [y, "t"] if y_first else ["t", y], ["u"], name="outer"),
              helper.make_node("QuantizeLinear", ["u", const(F32(0.047), "su"),
                                                  const(qdt(5), "zu")], ["uq"], name="q"),
              helper.make_node("DequantizeLinear", ["uq", "su", "zu"], ["out"])]
    shape = [1, channels, 6, 9]
    g = helper.make_graph(
        nodes, "se",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 6, 9]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, z_shape or shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _probe(model, names):
    """``model`` with the values ``names`` also graph outputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    return m


@pytest.mark.parametrize("channels", [5, 16, 40, 96])
@pytest.mark.parametrize("y_quantized,y_first", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("dst", ["u8", "s8"])
def test_session_fuses_the_four_nodes_with_their_bytes(channels, y_quantized, y_first, dst,
                                                       monkeypatch):
    model = _model(channels, y_quantized, y_first, dst)
    x = RNG.standard_normal((1, 8, 6, 9)).astype(F32)
    z = (RNG.standard_normal((1, channels, 6, 9)) * 2).astype(F32)
    feed = {"x": x, "z": z}
    sess = donnx.InferenceSession(model, rounding="chain")
    rows = {tuple(r["nodes"]): r for r in sess.plan()}
    key = [k for k in rows if "gate" in k]
    assert len(key) == 1 and set(key[0]) >= {"gate", "residual", "outer", "q"}, list(rows)
    assert rows[key[0]]["impl_info"] == FUSED
    # numpy's f32 operations on the convolution's output and the gate, read out of the model
    c, s = donnx.InferenceSession(_probe(model, ["c", "s"]), rounding="chain").run(
        None, feed)[1:]
    q_other = None
    y = z
    if y_quantized:
        q_other = QParams(0.031, 121, "u8")
        y = np.clip(np.rint(z / F32(0.031)) + 121, 0, 255).astype(np.uint8)
    qd = QParams(0.047, 5, dst)
    want_q = _numpy_reference(c, s, y, q_other, qd)
    want = (want_q.astype(F32) - F32(5)) * F32(0.047)
    # the steps it replaces
    from dnnq.onnx.planner import Planner
    with monkeypatch.context() as mp:
        mp.setattr(Planner, "_scale_residual_quantized", lambda self, add: None)
        apart = donnx.InferenceSession(model, rounding="chain")
    assert not any(r["impl_info"] == FUSED for r in apart.plan())
    ref = apart.run(None, feed)[0]
    np.testing.assert_array_equal(ref, want)
    for th in (1, 2):
        s2 = donnx.InferenceSession(model, rounding="chain", threads=th)
        for _ in range(3):  # first run, then warm runs (kept arrays, repeated calls)
            np.testing.assert_array_equal(s2.run(None, feed)[0], want)


def test_a_broadcast_operand_runs_the_replaced_steps():
    """y a per-channel f32 vector (broadcast by the Add): the fused pass does not take it,
    the two steps it replaces run, with numpy's bytes."""
    model = _model(24, False, False, "u8", z_shape=[1, 24, 1, 1])
    x = RNG.standard_normal((1, 8, 6, 9)).astype(F32)
    z = RNG.standard_normal((1, 24, 1, 1)).astype(F32)
    sess = donnx.InferenceSession(model, rounding="chain")
    assert any(r["impl_info"] == FUSED for r in sess.plan())
    c, s = donnx.InferenceSession(_probe(model, ["c", "s"]), rounding="chain").run(
        None, {"x": x, "z": z})[1:]
    q = _numpy_reference(c, s, np.broadcast_to(z, c.shape), None, QParams(0.047, 5, "u8"))
    want = (q.astype(F32) - F32(5)) * F32(0.047)
    for _ in range(2):
        np.testing.assert_array_equal(sess.run(None, {"x": x, "z": z})[0], want)


def test_not_fused_where_rounding_at_every_quantize_or_the_sum_is_read():
    """rounding="every" (ONNX Runtime's arithmetic) keeps its own steps; a sum that is also a
    graph output is not fused away."""
    model = _model(16, True, False, "u8")
    every = donnx.InferenceSession(model, rounding="every")
    assert not any(r["impl_info"] == FUSED for r in every.plan())
    read = donnx.InferenceSession(_probe(model, ["t"]), rounding="chain")
    assert not any(r["impl_info"] == FUSED for r in read.plan())


def _fma(a, b, c):
    """f32(a * b + c) rounded once (the product of two f32 values is exact in f64; the f64
    sum's own rounding cannot cross an f32 rounding boundary at these magnitudes)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


@pytest.mark.parametrize("stage", ["gate", "operand", "destination"])
def test_each_operation_rounded_once_in_order(stage):
    """Values built so that the exact result of one stage lies within an ulp or two of a
    half-way point of the 8-bit grid: rounding the product and the sum separately (numpy's
    order) and fusing them (an FMA) store different bytes for some of them, so a kernel
    that contracts or reorders that stage fails here."""
    C, P = 33, 600
    k = RNG.integers(20, 230, (P, C)).astype(np.float64) + 0.5
    s = np.zeros(C, F32)
    y, q_other, qd = None, None, QParams(1.0, 0, "u8")
    if stage == "gate":        # x * s + x
        s = RNG.uniform(0.05, 0.95, C).astype(F32)
        x = (k / (1.0 + s.astype(np.float64))).astype(F32)
        fused = _fma(x, np.broadcast_to(s, x.shape), x)
    elif stage == "operand":   # x + (f32(y) - zp) * scale, the two terms cancelling
        q_other = QParams(9.37, 9, "u8")
        y = RNG.integers(0, 256, (P, C)).astype(np.uint8)
        d = y.astype(F32) - F32(9)
        x = (k - d.astype(np.float64) * np.float64(F32(9.37))).astype(F32)
        fused = _fma(d, np.full(d.shape, F32(9.37)), x)
    else:                      # x * f32(1 / scale) + zp, the two terms cancelling
        qd = QParams(0.0371, 250, "u8")
        k = np.floor(k) % 60 + 1.5
        inv = np.divide(F32(1), F32(0.0371), dtype=F32)
        x = ((k - 250.0) / np.float64(inv)).astype(F32)
        fused = _fma(x, np.full(x.shape, inv), np.full(x.shape, F32(250)))
    if stage != "destination":
        fused = fused.astype(np.float64)
    x4 = x.reshape(1, P, 1, C).transpose(0, 3, 1, 2)          # channels-last (1, C, P, 1)
    y4 = None if y is None else y.reshape(1, P, 1, C).transpose(0, 3, 1, 2)
    want = _numpy_reference(x4, s.reshape(1, C, 1, 1), y4, q_other, qd)
    assert not np.array_equal(np.clip(np.rint(fused), 0, 255).astype(np.uint8).reshape(P, C),
                              want.transpose(0, 2, 3, 1).reshape(P, C)), \
        "the values do not tell the orders apart"
    for layout in (_channels_last, np.ascontiguousarray):  # the kernel, the engine's program
        out = layout(np.zeros(x4.shape, np.uint8))
        ScaleResidualQuantizer(q_other, qd).run(layout(x4), s.reshape(1, C, 1, 1),
                                                None if y4 is None else layout(y4), out)
        np.testing.assert_array_equal(out, want)


def _concat_model():
    """Two squeeze-excitation residuals on f32 convolution outputs, the second at half size
    and upsampled (nearest x2), concatenated and quantized: PP-OCRv4 det's neck output."""
    inits = []

    def const(arr, name):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    nodes = [
        helper.make_node("QuantizeLinear", ["x", const(F32(0.02), "sx"),
                                            const(np.uint8(128), "zx")], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"])]
    outs = []
    for j, (c, stride) in enumerate(((24, 1), (20, 2))):
        w = RNG.integers(-127, 128, (c, 8, 1, 1)).astype(np.int8)
        ws = (RNG.random(c) * 0.01 + 0.002).astype(F32)
        nodes += [
            helper.make_node("DequantizeLinear", [const(w, f"w{j}"), const(ws, f"ws{j}"),
                                                  const(np.zeros(c, np.int8), f"wz{j}")],
                             [f"wd{j}"], axis=0),
            helper.make_node("Conv", ["xd", f"wd{j}"], [f"c{j}"], kernel_shape=[1, 1],
                             strides=[stride, stride]),
            helper.make_node("GlobalAveragePool", [f"c{j}"], [f"g{j}"]),
            helper.make_node("HardSigmoid", [f"g{j}"], [f"s{j}"]),
            helper.make_node("Mul", [f"c{j}", f"s{j}"], [f"m{j}"], name=f"gate{j}"),
            helper.make_node("Add", [f"m{j}", f"c{j}"], [f"t{j}"], name=f"residual{j}")]
        outs.append(f"t{j}")
    nodes += [
        helper.make_node("Resize", ["t1", "", const(np.array([1, 1, 2, 2], F32), "rs")],
                         ["r1"], mode="nearest"),
        helper.make_node("Concat", ["t0", "r1"], ["cat"], axis=1, name="concat"),
        helper.make_node("QuantizeLinear", ["cat", const(F32(0.043), "sq"),
                                            const(np.uint8(7), "zq")], ["catq"]),
        helper.make_node("DequantizeLinear", ["catq", "sq", "zq"], ["out"])]
    g = helper.make_graph(
        nodes, "cat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 14])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 44, 10, 14])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_concat_quantizes_the_residuals_it_reads(monkeypatch):
    """QuantizeLinear(Concat(x0 + x0 * s0, Resize(x1 + x1 * s1))): the Concat quantizes each
    residual from x and s (no f32 map of it): the bytes of numpy's operations and of the
    steps it replaces, run after run, at 1 and 2 threads."""
    from dnnq.onnx import f32_fusion_steps as FS
    model = _concat_model()
    x = RNG.standard_normal((1, 8, 10, 14)).astype(F32)
    sess = donnx.InferenceSession(model, rounding="chain")
    row = [r for r in sess.plan() if r["primitive"] == "Concat"]
    assert len(row) == 1 and "x + x * s" in row[0]["impl_info"]
    assert {"gate0", "residual0", "gate1", "residual1"} <= set(row[0]["nodes"])
    c0, s0, c1, s1 = donnx.InferenceSession(_probe(model, ["c0", "s0", "c1", "s1"]),
                                            rounding="chain").run(None, {"x": x})[1:]
    t0, t1 = c0 * s0 + c0, c1 * s1 + c1
    cat = np.concatenate([t0, t1.repeat(2, axis=2).repeat(2, axis=3)], axis=1)
    q = _numpy_reference(cat, np.zeros((1, 1, 1, 1), F32), None, None,
                         QParams(0.043, 7, "u8"))
    want = (q.astype(F32) - F32(7)) * F32(0.043)
    with monkeypatch.context() as mp:
        mp.setattr(FS.F32ConcatQuantizeStep, "take_scale_residual", lambda self, i, st: False)
        apart = donnx.InferenceSession(model, rounding="chain")
    assert all("x + x * s" not in str(r["impl_info"]) for r in apart.plan())
    np.testing.assert_array_equal(apart.run(None, {"x": x})[0], want)
    for th in (1, 2):
        s2 = donnx.InferenceSession(model, rounding="chain", threads=th)
        for _ in range(3):
            np.testing.assert_array_equal(s2.run(None, {"x": x})[0], want)
