"""The fused depthwise post-op (PostOps.append_dw) against oneDNN 3.2's fused convolution
(bit-exact) on every ISA level, and its bad input."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, InvalidArguments, Unimplemented,
                  DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_POST_OP_DW, DNNL_ARG_ATTR_ZERO_POINTS)
import dnnq.testing as onednn_ref

F = np.float32
DW = DNNL_ARG_ATTR_POST_OP_DW
_REF = {}


def run(rng, *, N=1, H=8, W=9, IC=16, C=32, stride=1, src_dt="u8", mid_dt="u8", fin_dt="u8",
        tag=None, dst_scale=(2.0,), dw_dst_scale=(4.0,), bias=True, dw_bias=True, src_zp=None,
        ws_mask=1, dws_mask=3, after=()):
    info = np.iinfo(np.uint8 if src_dt == "u8" else np.int8)
    x = rng.integers(info.min, info.max + 1, (N, IC, H, W), dtype=info.dtype)
    w = rng.integers(-128, 128, (C, IC, 1, 1), dtype=np.int8)
    dww = rng.integers(-128, 128, (C, 1, 1, 3, 3), dtype=np.int8)
    b = rng.normal(0, 3, C).astype(F) if bias else None
    dwb = rng.normal(0, 3, C).astype(F) if dw_bias else None
    ws = rng.uniform(0.001, 0.01, C if ws_mask else 1).astype(F)
    dws = rng.uniform(0.01, 0.05, C if dws_mask else 1).astype(F)
    ops_ref = [("eltwise", "relu", 0.0, 0.0)]
    kw = dict(strides=1, padding_l=0, src_scales=[0.5], wei_scales=ws, wei_scale_mask=ws_mask,
              dw_wei_scales=dws, dw_wei_scale_mask=dws_mask, post_ops=ops_ref)
    attr = PrimitiveAttr()
    args = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DW | DNNL_ARG_WEIGHTS: dww,
            DNNL_ARG_SCALE | DNNL_ARG_SRC: F([0.5]), DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws,
            DNNL_ARG_SCALE | DW | DNNL_ARG_WEIGHTS: dws}
    for arg, m in ((DNNL_ARG_SRC, 0), (DNNL_ARG_WEIGHTS, ws_mask), (DW | DNNL_ARG_WEIGHTS, dws_mask)):
        attr.set_scales_mask(arg, m)
    if dst_scale:
        kw["dst_scales"] = dst_scale
        attr.set_scales_mask(DNNL_ARG_DST, 0)
        args[DNNL_ARG_SCALE | DNNL_ARG_DST] = F(dst_scale)
    if dw_dst_scale:
        kw["dw_dst_scales"] = dw_dst_scale
        attr.set_scales_mask(DW | DNNL_ARG_DST, 0)
        args[DNNL_ARG_SCALE | DW | DNNL_ARG_DST] = F(dw_dst_scale)
    if src_zp is not None:
        kw["src_zp"] = [src_zp]
        attr.set_zero_points_mask(DNNL_ARG_SRC, 0)
        args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = np.int32([src_zp])
    ops = PostOps()
    ops.append_eltwise("relu")
    ops.append_dw("s8", "f32" if dw_bias else None, fin_dt, 3, stride, 1)
    for op in after:
        ops.append_eltwise(*op[1:])
    attr.set_post_ops(ops)
    if b is not None:
        args[DNNL_ARG_BIAS] = b
    if dwb is not None:
        args[DW | DNNL_ARG_BIAS] = dwb
    p = dnnq.Convolution(MemoryDesc(x.shape, src_dt, tag), MemoryDesc(w.shape, "s8"),
                         MemoryDesc((N, C, H, W), mid_dt, tag),
                         None if b is None else MemoryDesc((C,), "f32"),
                         strides=(1, 1), padding_l=(0, 0), padding_r=(0, 0), attr=attr)
    if tag:
        args[DNNL_ARG_SRC] = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    out = p.execute(args)
    key = (x.tobytes(), w.tobytes(), dww.tobytes(), N, H, W, stride, mid_dt, fin_dt, repr(kw),
           None if b is None else b.tobytes(), None if dwb is None else dwb.tobytes(), after)
    if key not in _REF:
        kw["post_ops"] = ops_ref
        r = onednn_ref.convolution_dw(x, w, b, mid_dt, dww, dwb, fin_dt, dw_stride=stride,
                                      dw_padding=1, **kw)
        _REF[key] = r
    return out, _REF[key], p


@onednn_ref.requires_vnni
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("shape", [(8, 9), (17, 16), (1, 1), (30, 7)])
def test_fused_dw_vs_onednn(isa, stride, shape):
    rng = np.random.default_rng(shape[0] * 10 + stride)
    H, W = shape
    for kw in (dict(), dict(src_dt="s8", mid_dt="s8", fin_dt="f32", tag="nhwc", N=2),
               dict(fin_dt="s32", dst_scale=None, dw_dst_scale=None, bias=False, dw_bias=False,
                    ws_mask=0, dws_mask=0),
               dict(C=70, IC=3, fin_dt="s8")):
        out, ref, p = run(rng, H=H, W=W, stride=stride, **kw)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        assert np.array_equal(out, ref), f"{(out != ref).sum()} of {out.size} differ"
        assert "+" in p.impl_info and p.impl_info.endswith(":dw")


@pytest.mark.parametrize("stride", [1, 2])
def test_fused_dw_source_zero_point_vs_numpy(isa, stride):
    """oneDNN 3.2's ref_fused_convolution mishandles a source zero point (its results change
    once the attribute is set, even to 0), so this case is checked against the numpy model of
    the two convolutions (tests/_conv_ref.py) instead."""
    from _conv_ref import conv_acc, quantized
    rng = np.random.default_rng(stride)
    C, IC, H, W = 40, 5, 9, 7
    x = rng.integers(0, 256, (1, IC, H, W), dtype=np.uint8)
    w = rng.integers(-128, 128, (C, IC, 1, 1), dtype=np.int8)
    dww = rng.integers(-128, 128, (C, 1, 1, 3, 3), dtype=np.int8)
    ws = rng.uniform(0.001, 0.01, C).astype(F)
    attr = PrimitiveAttr()
    attr.set_zero_points_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_scales_mask(DNNL_ARG_DST, 0)
    ops = PostOps()
    ops.append_dw("s8", None, "s32", 3, stride, 1)
    attr.set_post_ops(ops)
    p = dnnq.Convolution(MemoryDesc(x.shape, "u8"), MemoryDesc(w.shape, "s8"),
                         MemoryDesc((1, C, H, W), "u8"), strides=(1, 1), padding_l=(0, 0),
                         padding_r=(0, 0), attr=attr)
    out = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DW | DNNL_ARG_WEIGHTS: dww,
                     DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.int32([37]),
                     DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws,
                     DNNL_ARG_SCALE | DNNL_ARG_DST: F([0.5])})
    mid = quantized(conv_acc(x, w, (1, 1), (0, 0), (0, 0), src_zp=37), "u8", wei_scales=ws,
                    dst_scale=F(0.5))
    acc = conv_acc(mid, dww, (stride, stride), (1, 1), (1, 1))
    want = quantized(acc, "s32", src_scale=[0.5])
    assert np.array_equal(out, want)


def _attr_dw(*, k=3, s=1):
    ops = PostOps()
    ops.append_dw("s8", None, "u8", k, s, 1)
    a = PrimitiveAttr()
    a.set_post_ops(ops)
    return a


def test_fused_dw_errors():
    M = MemoryDesc
    with pytest.raises(InvalidArguments, match="1x1"):
        dnnq.Convolution(M((1, 8, 6, 6), "u8"), M((8, 8, 3, 3), "s8"), M((1, 8, 6, 6), "u8"),
                         strides=1, padding_l=1, padding_r=1, attr=_attr_dw())
    with pytest.raises(InvalidArguments, match="1x1"):
        dnnq.Convolution(M((1, 8, 6, 6), "u8"), M((8, 8, 1, 1), "s8"), M((1, 8, 3, 3), "u8"),
                         strides=2, padding_l=0, padding_r=0, attr=_attr_dw())
    with pytest.raises(InvalidArguments, match="1x1"):
        dnnq.Convolution(M((1, 8, 6), "u8"), M((8, 8, 1), "s8"), M((1, 8, 6), "u8"),
                         strides=1, padding_l=0, padding_r=0, attr=_attr_dw())
    with pytest.raises(Unimplemented, match="intermediate"):
        dnnq.Convolution(M((1, 8, 6, 6), "u8"), M((8, 8, 1, 1), "s8"), M((1, 8, 6, 6), "f32"),
                         strides=1, padding_l=0, padding_r=0, attr=_attr_dw())
    a = _attr_dw()
    a.set_scales_mask(DW | DNNL_ARG_WEIGHTS, 1)
    with pytest.raises(Unimplemented, match="dw.weights"):
        dnnq.Convolution(M((1, 8, 6, 6), "u8"), M((8, 8, 1, 1), "s8"), M((1, 8, 6, 6), "u8"),
                         strides=1, padding_l=0, padding_r=0, attr=a)
    p = dnnq.Convolution(M((1, 8, 6, 6), "u8"), M((8, 8, 1, 1), "s8"), M((1, 8, 6, 6), "u8"),
                         strides=1, padding_l=0, padding_r=0, attr=_attr_dw())
    x = np.zeros((1, 8, 6, 6), np.uint8)
    w = np.zeros((8, 8, 1, 1), np.int8)
    with pytest.raises(InvalidArguments, match="depthwise weights"):
        p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w})
    with pytest.raises(InvalidArguments, match="shape"):
        p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w,
                   DW | DNNL_ARG_WEIGHTS: np.zeros((8, 1, 1, 3, 2), np.int8)})
    out = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w,
                     DW | DNNL_ARG_WEIGHTS: np.zeros((8, 1, 1, 3, 3), np.int8)})
    assert out.shape == (1, 8, 6, 6) and out.dtype == np.uint8
