"""Convolution._bound_call: the checked execute path's preparation done once, for a caller that
passes the same argument dict and arrays every time (dnnq.onnx's warm runs of layers with
binary post-ops whose inputs the C-level path does not take).  Its result must equal execute's for
every new source, and it must fall back to execute -- never run on stale bindings -- when an
argument object changes."""
import numpy as np
import pytest

import dnnq
from dnnq import (DNNL_ARG_ATTR_MULTIPLE_POST_OP, DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_DST,
                  DNNL_ARG_SCALE, DNNL_ARG_SRC, DNNL_ARG_SRC_1, DNNL_ARG_WEIGHTS, MemoryDesc,
                  PostOps, PrimitiveAttr)

RNG = np.random.default_rng(23)


def _layer(kind, n_pix, tag="nhwc", deconv=False, ic=24, oc=40, binary=True, sum_po=False):
    """A u8 -> u8 layer with per-channel binary mul / add post-ops (a BatchNormalization
    after a rounding pair, as dnnq.onnx builds it for rounding="every"), and its args."""
    k = {"1x1": 1, "3x3": 3, "dw": 3}[kind]
    group = ic if kind == "dw" else 1
    if kind == "dw":
        oc = ic
    src_shape = (1, ic, n_pix, 7)
    attr = PrimitiveAttr()
    for arg in (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST):
        attr.set_scales_mask(arg, 0 if arg != DNNL_ARG_WEIGHTS else 3 if kind == "dw" else 1)
    attr.set_zero_points_mask(DNNL_ARG_DST, 0)
    ops = PostOps()
    args = {}
    if sum_po:
        ops.append_sum(0.5, 3, "u8")
    ops.append_eltwise("linear", 1 / 0.37, 0.0)
    ops.append_eltwise("round", 0.0, 0.0)
    ops.append_eltwise("clip", -20.0, 235.0)
    ops.append_eltwise("linear", 0.37, 0.0)
    if binary:
        base = len(ops)
        ops.append_binary("mul", MemoryDesc((1, oc, 1, 1), "f32"))
        ops.append_binary("add", MemoryDesc((1, oc, 1, 1), "f32"))
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(base) | DNNL_ARG_SRC_1] = \
            RNG.uniform(0.5, 1.5, (1, oc, 1, 1)).astype(np.float32)
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(base + 1) | DNNL_ARG_SRC_1] = \
            RNG.uniform(-3, 3, (1, oc, 1, 1)).astype(np.float32)
    attr.set_post_ops(ops)
    if deconv:
        wshape = (oc, ic, 2, 2)
        geom = dict(strides=(2, 2), padding_l=(0, 0), padding_r=(0, 0))
        dst_sp = (2 * n_pix, 14)
        cls = dnnq.Deconvolution
    else:
        wshape = (oc, ic // group, k, k) if group == 1 else (group, 1, 1, k, k)
        geom = dict(strides=(1, 1), padding_l=(k // 2,) * 2, padding_r=(k // 2,) * 2)
        dst_sp = (n_pix, 7)
        cls = dnnq.Convolution
    prim = cls(MemoryDesc(src_shape, "u8", tag), MemoryDesc(wshape, "s8"),
               MemoryDesc((1, oc) + dst_sp, "u8", tag), attr=attr, **geom)
    w = RNG.integers(-60, 61, wshape, dtype=np.int8)
    args.update({
        DNNL_ARG_WEIGHTS: prim.prepare_weights(w),
        DNNL_ARG_SCALE | DNNL_ARG_SRC: np.float32([0.05]),
        DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: RNG.uniform(0.01, 0.03, oc).astype(np.float32),
        DNNL_ARG_SCALE | DNNL_ARG_DST: np.float32([0.4]),
        DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.int32([11]),
    })
    src = MemoryDesc(src_shape, "u8", tag).empty()
    dst = MemoryDesc((1, oc) + dst_sp, "u8", tag).empty()
    args[DNNL_ARG_SRC] = src
    args[DNNL_ARG_DST] = dst
    return prim, args


def _fresh_result(prim, args):
    """execute on copies of the arrays (no binding, the checked or C-level path)."""
    a = {k: (v.copy(order="K") if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    return prim.execute(a).copy()


@pytest.mark.parametrize("kind,n_pix,deconv", [("1x1", 5, False), ("1x1", 17, False),
                                               ("3x3", 9, False), ("dw", 6, False),
                                               ("1x1", 4, True)])
@pytest.mark.parametrize("sum_po", [False, True])
def test_bound_call_follows_the_source(kind, n_pix, deconv, sum_po):
    prim, args = _layer(kind, n_pix, deconv=deconv, sum_po=sum_po)
    # (the C-level path takes these per-channel inputs too: execute's result there is the
    # reference; _bound_call repeats the checked path's call)
    src, dst = args[DNNL_ARG_SRC], args[DNNL_ARG_DST]
    src[...] = RNG.integers(0, 256, src.shape, dtype=np.uint8)
    dst[...] = RNG.integers(0, 256, dst.shape, dtype=np.uint8)
    want = _fresh_result(prim, args)
    call = prim._bound_call(args)
    assert call is not None
    np.testing.assert_array_equal(call(), want)
    before = dnnq.get_num_threads()
    try:
        for threads in (1, 2, 3):
            dnnq.set_num_threads(threads)
            src[...] = RNG.integers(0, 256, src.shape, dtype=np.uint8)
            dst[...] = RNG.integers(0, 256, dst.shape, dtype=np.uint8)  # the sum reads it
            want = _fresh_result(prim, args)
            assert call() is dst
            np.testing.assert_array_equal(dst, want)
    finally:
        dnnq.set_num_threads(before)


def test_bound_call_falls_back_when_an_argument_changes():
    prim, args = _layer("3x3", 8)
    src = args[DNNL_ARG_SRC]
    src[...] = RNG.integers(0, 256, src.shape, dtype=np.uint8)
    call = prim._bound_call(args)
    # another array object for the binary input: its values, not the bound ones
    key = DNNL_ARG_ATTR_MULTIPLE_POST_OP(5) | DNNL_ARG_SRC_1
    args[key] = args[key] * 0 + 2.5
    want = _fresh_result(prim, args)
    np.testing.assert_array_equal(call(), want)
    # another destination array: written, not the bound one
    old_dst = args[DNNL_ARG_DST].copy()
    args[DNNL_ARG_DST] = new_dst = np.zeros_like(old_dst)
    out = call()
    np.testing.assert_array_equal(new_dst, want)
    assert out is new_dst
    # a new scale object
    args[DNNL_ARG_SCALE | DNNL_ARG_DST] = np.float32([0.8])
    np.testing.assert_array_equal(call(), _fresh_result(prim, args))
    # an added argument: execute names it
    args[DNNL_ARG_SRC_1] = np.zeros(1, np.float32)
    with pytest.raises(dnnq.InvalidArguments):
        call()


def test_no_binding_where_a_call_would_copy():
    prim, args = _layer("1x1", 6, tag=None)  # plain src / dst: channels-last copies
    assert prim._bound_call(args) is None
    prim, args = _layer("1x1", 6)
    del args[DNNL_ARG_DST]  # a new destination each call
    assert prim._bound_call(args) is None
    prim, args = _layer("1x1", 6)
    args[DNNL_ARG_SRC] = np.ascontiguousarray(args[DNNL_ARG_SRC])  # plain strides: a copy
    assert prim._bound_call(args) is None
