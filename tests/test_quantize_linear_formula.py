"""ONNX's QuantizeLinear formula, saturate(round(x / scale) + zero_point), for f32 tensors in
dnnq.onnx (dnnq.primitives.reorder.QuantizeLinear): the division, the rounding before the zero
point, NaN to the type's lowest value -- against numpy's evaluation of the formula and against
ONNX Runtime on values at half steps of the grid, where oneDNN's order (Reorder: x * (1 /
scale) + zero_point, rounded once) gives other bytes."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import dnnq
import dnnq.onnx
from dnnq.primitives.reorder import QuantizeLinear

RANGE = {"u8": (0, 255), "s8": (-128, 127)}
NP = {"u8": np.uint8, "s8": np.int8}


def onnx_formula(x, scale, zp, dt):
    lo, hi = RANGE[dt]
    with np.errstate(over="ignore", invalid="ignore"):
        t = x / np.float32(scale)
    t = np.where(np.isnan(t), np.float32(lo - zp), np.clip(t, lo - zp, hi - zp))
    return (np.rint(t).astype(np.int32) + zp).astype(NP[dt])


def half_steps(rng, shape):
    """A normalised image's values: k / 127.5 - 1 (in f32), within an ulp of the half steps of
    the grid of scale 2 / 255."""
    k = rng.integers(0, 256, shape).astype(np.float32)
    return (k / np.float32(127.5) - np.float32(1)).astype(np.float32)


@pytest.mark.parametrize("dt,zp", [("u8", 128), ("u8", 3), ("s8", 0), ("s8", -7)])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 63, 64, 65, 1000])
def test_formula_at_half_steps(dt, zp, n):
    rng = np.random.default_rng(n)
    x = half_steps(rng, (n,))
    x[: min(n, 5)] = np.float32([np.nan, np.inf, -np.inf, 3e38, -0.0])[: min(n, 5)]
    s = float(np.float32(2 / 255))
    q = QuantizeLinear(dnnq.MemoryDesc(x.shape, "f32"), dnnq.MemoryDesc(x.shape, dt), s, zp)
    np.testing.assert_array_equal(q.execute({dnnq.DNNL_ARG_SRC: x}), onnx_formula(x, s, zp, dt))


@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5, 16])
def test_images_going_channels_last(channels):
    """An NCHW image into the channels-last bytes the first convolution reads (2 - 4 planes
    take the interleaving path)."""
    rng = np.random.default_rng(channels)
    x = half_steps(rng, (2, channels, 9, 37))
    s = float(np.float32(2 / 255))
    q = QuantizeLinear(dnnq.MemoryDesc(x.shape, "f32"), dnnq.MemoryDesc(x.shape, "u8", "nhwc"),
                       s, 128)
    out = q.execute({dnnq.DNNL_ARG_SRC: x})
    np.testing.assert_array_equal(out, onnx_formula(x, s, 128, "u8"))
    assert out.strides[1] == 1  # channels-last


@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("width", [1, 7, 8, 15, 16, 17, 33])
@pytest.mark.parametrize("dt,zp", [("u8", 128), ("u8", 0), ("s8", -7)])
def test_planes_one_pass_kernel(channels, width, dt, zp):
    """2 - 4 planes into channels-last bytes in one pass (tk_quantize_planes.h): ONNX's
    formula at half steps of the grid, with NaN, infinities and huge values in the whole
    vectors and in the tail, at 1 and 2 threads, and the same bytes as the two-pass plan (the
    pointwise program, then the interleaving) it replaced."""
    from dnnq.primitives.reorder import _QuantizePlanes
    rng = np.random.default_rng(width * 10 + channels)
    x = half_steps(rng, (2, channels, 5, width)) * np.float32(1.7)
    flat = x.reshape(-1)
    flat[::11] = np.nan
    flat[3::13] = np.inf
    flat[5::17] = -np.inf
    flat[7::19] = -3e38
    s = float(np.float32(2 / 255))
    q = QuantizeLinear(dnnq.MemoryDesc(x.shape, "f32"), dnnq.MemoryDesc(x.shape, dt, "nhwc"),
                       s, zp)
    assert isinstance(q._plan, _QuantizePlanes)
    want = onnx_formula(x, s, zp, dt)
    before = dnnq.get_num_threads()
    try:
        for th in (1, 2):
            dnnq.set_num_threads(th)
            out = q.execute({dnnq.DNNL_ARG_SRC: x})
            np.testing.assert_array_equal(out, want)
            assert out.strides[1] == out.itemsize
    finally:
        dnnq.set_num_threads(before)
    phys = np.empty((2, 5, width, channels), NP[dt])
    q._plan.apart.run({"src": x, "dst": phys})
    np.testing.assert_array_equal(phys.transpose(0, 3, 1, 2), want)


def test_reorder_rounds_otherwise():
    """The reason for the class: oneDNN's order gives other bytes on such an image."""
    rng = np.random.default_rng(5)
    x = half_steps(rng, (4096,))
    s = np.float32(2 / 255)
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)
    attr.set_zero_points_mask(dnnq.DNNL_ARG_DST, 0)
    r = dnnq.Reorder(dnnq.MemoryDesc(x.shape, "f32"), dnnq.MemoryDesc(x.shape, "u8"), attr)
    y = r.execute({dnnq.DNNL_ARG_SRC: x, dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST: np.float32([s]),
                   dnnq.DNNL_ARG_ATTR_ZERO_POINTS | dnnq.DNNL_ARG_DST: np.int32([128])})
    assert (y != onnx_formula(x, s, 128, "u8")).mean() > 0.01


def test_session_input_quantized_as_onnx_runtime_does():
    """A QDQ model's input QuantizeLinear: dnnq.onnx's bytes are ONNX Runtime's."""
    ort = pytest.importorskip("onnxruntime")
    shape = [1, 3, 16, 40]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])]
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [2 / 255]),
             helper.make_tensor("z", TensorProto.UINT8, [], [128])]
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     shape)],
                          [helper.make_tensor_value_info("q", TensorProto.UINT8, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    data = m.SerializeToString()
    x = half_steps(np.random.default_rng(9), shape)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = dnnq.onnx.InferenceSession(data, threads=1).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kwargs,match", [
    (dict(scale=0.0), "scale"), (dict(scale=-1.0), "scale"), (dict(scale=float("nan")), "scale"),
    (dict(scale=1e-50), "scale"), (dict(scale=1e39), "scale"), (dict(zero_point=256), "zero_point"),
    (dict(zero_point=1.5), "zero_point"), (dict(dst="s32"), "types"), (dict(src="u8"), "types")])
def test_bad_arguments(kwargs, match):
    k = dict(scale=0.5, zero_point=128, src="f32", dst="u8", **{})
    k.update(kwargs)
    with pytest.raises(dnnq.InvalidArguments, match=match):
        QuantizeLinear(dnnq.MemoryDesc((4,), k["src"]), dnnq.MemoryDesc((4,), k["dst"]),
                       k["scale"], k["zero_point"])
