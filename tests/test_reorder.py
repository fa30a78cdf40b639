"""Reorder, quantize and dequantize: bit-identical to oneDNN 3.2 (through the bridge) wherever
oneDNN executes the case, and to an independent numpy model of the formula elsewhere.

The model (ONEDNN_FACTS section 3, refined by probing oneDNN: its ``jit:uni`` reorder applies
the steps one at a time)::

    f = f32(src) - f32(src_zp);  f = f * src_scale;  f = f * f32(1/dst_scale);  f = f + f32(dst_zp)
    dst = sat(rne(f))  with NaN -> 127 (s8) / 0 (u8) / 2147483520 (s32)

except f32 -> f32 with one layout and both scales common (``simple:any``): f * f32(ss * f32(1/ds)).
"""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr
from dnnq import args as A
import dnnq.testing as R
from _quant_ref import saturate_rne as sat

F = np.float32
NP = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "f32": F}
DTS = ("f32", "s32", "s8", "u8")
TAGS = {3: "acb", 4: "acdb", 5: "acdeb"}
DNNQ_TAGS = {3: "nwc", 4: "nhwc", 5: "ndhwc"}




def bshape(shape, mask):
    return tuple(d if mask >> i & 1 else 1 for i, d in enumerate(shape))


def count(shape, mask):
    return int(np.prod([d for i, d in enumerate(shape) if mask >> i & 1]))


def model(x, dst_dt, ss=None, sm=0, ds=None, dm=0, szp=None, szm=0, dzp=None, dzm=0,
          combined=False):
    f = np.asarray(x).astype(F)
    sh = x.shape
    with np.errstate(all="ignore"):
        if szp is not None:
            f = f - np.asarray(szp).astype(F).reshape(bshape(sh, szm))
        if combined:
            f = f * (np.asarray(ss, F) * (F(1) / np.asarray(ds, F))).reshape(bshape(sh, 0))
        else:
            if ss is not None:
                f = f * np.asarray(ss, F).reshape(bshape(sh, sm))
            if ds is not None:
                f = f * (F(1) / np.asarray(ds, F)).reshape(bshape(sh, dm))
        if dzp is not None:
            f = f + np.asarray(dzp).astype(F).reshape(bshape(sh, dzm))
    return sat(f, dst_dt)


def gen(rng, dt, shape, big=300.0):
    if dt == "f32":
        return (rng.standard_normal(shape) * big).astype(F)
    if dt == "s32":
        return rng.integers(-2**24, 2**24, size=shape).astype(np.int32)
    lo, hi = (-128, 128) if dt == "s8" else (0, 256)
    return rng.integers(lo, hi, size=shape).astype(NP[dt])


def run(x, dst_dt, *, src_tag=None, dst_tag=None, ss=None, sm=0, ds=None, dm=0, szp=None,
        szm=0, dzp=None, dzm=0, dst=None):
    attr = PrimitiveAttr()
    args = {A.DNNL_ARG_SRC: x}
    for v, m, arg, kind in ((ss, sm, A.DNNL_ARG_SRC, "s"), (ds, dm, A.DNNL_ARG_DST, "s"),
                            (szp, szm, A.DNNL_ARG_SRC, "z"), (dzp, dzm, A.DNNL_ARG_DST, "z")):
        if v is None:
            continue
        if kind == "s":
            attr.set_scales_mask(arg, m)
            args[A.DNNL_ARG_SCALE | arg] = v
        else:
            attr.set_zero_points_mask(arg, m)
            args[A.DNNL_ARG_ATTR_ZERO_POINTS | arg] = v
    if dst is not None:
        args[A.DNNL_ARG_DST] = dst
    src_dt = dnnq.as_dt(x.dtype)
    p = dnnq.Reorder(MD(x.shape, src_dt, src_tag), MD(x.shape, dst_dt, dst_tag), attr)
    return p.execute(args)


def scales(rng, n, dst_dt, side):
    s = rng.uniform(0.01, 2.0, n).astype(F)
    if side == "dst" and dst_dt in ("s8", "u8"):
        s *= 100
    return s


# ----------------------------------------------------------------------------- vs oneDNN

@R.requires_onednn
def test_reorder_matches_onednn_every_type_pair(isa, rng_seed):
    """Every src/dst type pair, scales on either / both sides (common and per-channel), common
    zero points on the integer sides: bit-identical to oneDNN."""
    rng = np.random.default_rng(rng_seed)
    shape = (2, 16, 5, 7)
    n = 0
    for sdt in DTS:
        for ddt in DTS:
            for sm, dm in ((None, None), (0, None), (None, 0), (0, 0), (2, 0), (0, 2), (2, 2),
                           (15, None)):
                x = gen(rng, sdt, shape)
                kw = {}
                if sm is not None:
                    kw.update(ss=scales(rng, count(shape, sm), ddt, "src"), sm=sm)
                if dm is not None:
                    kw.update(ds=scales(rng, count(shape, dm), ddt, "dst"), dm=dm)
                if sdt != "f32":
                    kw["szp"] = np.array([rng.integers(-10, 10)], np.int32)
                if ddt != "f32":
                    kw["dzp"] = np.array([rng.integers(-10, 10)], np.int32)
                ref = R.reorder(x, ddt, src_scales=kw.get("ss"), src_scale_mask=kw.get("sm", 0),
                                dst_scales=kw.get("ds"), dst_scale_mask=kw.get("dm", 0),
                                src_zp=kw.get("szp"), dst_zp=kw.get("dzp"))
                out = run(x, ddt, **kw)
                assert out.dtype == ref.dtype and out.shape == ref.shape
                assert np.array_equal(out, ref), (sdt, ddt, sm, dm, int((out != ref).sum()))
                n += 1
    assert n == 128


@R.requires_onednn
@pytest.mark.parametrize("shape", [(3, 8, 5), (2, 16, 5, 7), (2, 4, 3, 5, 6), (1, 3, 13, 37),
                                   (2, 2, 5, 17), (1, 4, 6, 33), (2, 3, 41)])
def test_reorder_layout_changes_match_onednn(isa, rng_seed, shape):
    """plain -> channels-last, channels-last -> plain and channels-last -> channels-last, with
    quantization / dequantization on the way (2 - 4 channels to 8 bits: converted plain, then
    the planes interleaved)."""
    rng = np.random.default_rng(rng_seed)
    nd = len(shape)
    perm = (0,) + tuple(range(2, nd)) + (1,)
    for sdt, ddt in (("f32", "s8"), ("s8", "f32"), ("u8", "s8"), ("f32", "f32"),
                     ("s32", "s32"), ("u8", "u8")):
        x = gen(rng, sdt, shape)
        ds = scales(rng, shape[1], ddt, "dst")
        ss = scales(rng, 1, ddt, "src")
        # plain -> channels-last
        ref = R.reorder(x, ddt, src_scales=ss, dst_scales=ds, dst_scale_mask=2,
                        dst_tag=TAGS[nd])
        out = run(x, ddt, dst_tag=DNNQ_TAGS[nd], ss=ss, ds=ds, dm=2)
        assert np.array_equal(out, ref), (sdt, ddt, "plain->cl")
        assert out.transpose(perm).flags.c_contiguous
        # channels-last -> plain (the source array laid out channels-last)
        xc = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
        ref = R.reorder(xc, ddt, src_scales=ss, dst_scales=ds, dst_scale_mask=2)
        out = run(xc, ddt, src_tag=DNNQ_TAGS[nd], ss=ss, ds=ds, dm=2)
        assert np.array_equal(out, ref), (sdt, ddt, "cl->plain")
        # channels-last -> channels-last
        ref = R.reorder(xc, ddt, src_scales=ss, dst_scales=ds[:1], dst_tag=TAGS[nd])
        out = run(xc, ddt, src_tag=DNNQ_TAGS[nd], dst_tag=DNNQ_TAGS[nd], ss=ss, ds=ds[:1])
        assert np.array_equal(out, ref), (sdt, ddt, "cl->cl")


@R.requires_onednn
def test_image_to_channels_last_on_threads_matches_onednn(isa, rng_seed):
    """A model's input (f32 image, 3 planes) quantized to u8 channels-last: its planes are
    interleaved over the threads in bands of pixels, into a scratch array kept between
    calls; the same bytes as oneDNN at 1, 2 and 3 threads, run after run."""
    rng = np.random.default_rng(rng_seed)
    shape = (1, 3, 256, 385)  # 98560 pixels: bands of 64 and a partial one
    prev = dnnq.get_num_threads()
    try:
        for nt in (1, 2, 3):
            dnnq.set_num_threads(nt)
            for _ in range(2):
                x = gen(rng, "f32", shape)
                ref = R.reorder(x, "u8", dst_scales=np.array([0.02], F), dst_tag="acdb")
                out = run(x, "u8", dst_tag="nhwc", ds=np.array([0.02], F))
                assert np.array_equal(out, ref), nt
    finally:
        dnnq.set_num_threads(prev)


@R.requires_onednn
def test_f32_to_f32_with_both_common_scales_folds_them_like_onednn(isa, rng_seed):
    """oneDNN's simple:any multiplies by f32(ss * f32(1/ds)) once: dnnq matches it, and the
    test can tell the two orders apart (the two-step model differs)."""
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((4, 8, 6, 5)) * 1e3).astype(F)
    ss, ds = np.array([0.37], F), np.array([1.93], F)
    ref = R.reorder(x, "f32", src_scales=ss, dst_scales=ds)
    out = run(x, "f32", ss=ss, ds=ds)
    assert np.array_equal(out, ref)
    assert np.array_equal(out, model(x, "f32", ss=ss, ds=ds, combined=True))
    assert not np.array_equal(out, model(x, "f32", ss=ss, ds=ds))  # the orders differ here
    # per-channel on one side: the two-step order (oneDNN too)
    ss2 = rng.uniform(0.1, 2, 8).astype(F)
    ref = R.reorder(x, "f32", src_scales=ss2, src_scale_mask=2, dst_scales=ds)
    assert np.array_equal(run(x, "f32", ss=ss2, sm=2, ds=ds), ref)
    # same channels-last layout on both sides: still folded
    xc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    ref = R.reorder(xc, "f32", src_scales=ss, dst_scales=ds, dst_tag="acdb")
    assert np.array_equal(run(xc, "f32", src_tag="nhwc", dst_tag="nhwc", ss=ss, ds=ds), ref)


@R.requires_onednn
def test_non_finite_and_boundary_values_match_onednn(isa):
    """NaN -> +127 (s8), 0 (u8), 2147483520 (s32); +-inf and huge values saturate; exact
    halves round to even."""
    sp = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.5, -2.5, 3.5, 0.5, -0.5, 1.5, 3e9,
                   -3e9, 2147483520, 2147483648, -2147483648, -2147483904, 127.5, 128.4,
                   -128.5, 255.5, -0.4, 254.5, -127.5] * 3, F)
    x = sp.reshape(2, 36)
    for dt in ("s8", "u8", "s32"):
        assert np.array_equal(run(x, dt), R.reorder(x, dt)), dt
        ref = R.reorder(x, dt, dst_scales=[1.0, 0.5], dst_scale_mask=1)
        assert np.array_equal(run(x, dt, ds=np.array([1.0, 0.5], F), dm=1), ref), dt
        assert np.array_equal(run(x, dt), model(x, dt)), dt


@R.requires_onednn
def test_quantize_dequantize_helpers_match_onednn(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((3, 6, 4, 4)) * 4).astype(F)
    for dt in ("s8", "u8"):
        ref = R.reorder(x, dt, dst_scales=[0.03], dst_zp=[7])
        q = dnnq.quantize(x, 0.03, 7, dt)
        assert np.array_equal(q, ref)
        ref = R.reorder(q, "f32", src_scales=[0.03], src_zp=[7])
        assert np.array_equal(dnnq.dequantize(q, 0.03, 7), ref)
        s = rng.uniform(0.01, 0.05, 6).astype(F)
        ref = R.reorder(x, dt, dst_scales=s, dst_scale_mask=2)
        assert np.array_equal(dnnq.quantize(x, s, None, dt, axis=1), ref)
        ref = R.reorder(ref, "f32", src_scales=s, src_scale_mask=2)
        assert np.array_equal(dnnq.dequantize(dnnq.quantize(x, s, 0, dt, axis=1), s, axis=1),
                              ref)


# ----------------------------------------------------------------------------- vs numpy

def test_any_mask_zero_points_and_scales_follow_the_model(isa, rng_seed):
    """Beyond oneDNN (which executes only common zero points and wants equal scale masks):
    zero points and scales with any mask on either side, zero points on f32 sides."""
    rng = np.random.default_rng(rng_seed)
    shape = (3, 4, 5, 6)
    for sdt, ddt in (("u8", "s8"), ("s8", "f32"), ("f32", "u8"), ("f32", "f32"),
                     ("s32", "s8")):
        for sm, dm, szm, dzm in ((1, 2, 3, 12), (6, 9, 0, 15), (8, 0, 5, 2)):
            x = gen(rng, sdt, shape)
            kw = dict(ss=scales(rng, count(shape, sm), ddt, "src"), sm=sm,
                      ds=scales(rng, count(shape, dm), ddt, "dst"), dm=dm,
                      szp=rng.integers(-9, 9, count(shape, szm)).astype(np.int32), szm=szm,
                      dzp=rng.integers(-9, 9, count(shape, dzm)).astype(np.int32), dzm=dzm)
            out = run(x, ddt, **kw)
            assert np.array_equal(out, model(x, ddt, **kw)), (sdt, ddt, sm, dm, szm, dzm)


def test_semantic_masks_resolve_to_the_channel(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (2, 5, 3, 3))
    s = rng.uniform(0.01, 0.1, 5).astype(F)
    out = run(x, "s8", ds=s, dm=dnnq.DNNL_MASK_PER_CHANNEL_NCHW)
    assert np.array_equal(out, model(x, "s8", ds=s, dm=2))


def test_equal_types_without_attributes_copy_exactly(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(-2**31, 2**31 - 1, size=(7, 9, 11), dtype=np.int64).astype(np.int32)
    out = run(x, "s32", dst_tag="nwc")
    assert np.array_equal(out, x)  # no detour through f32 (which would round large values)
    xf = gen(rng, "f32", (4, 33))
    assert np.array_equal(run(xf, "f32"), xf)


def test_destination_written_in_place_and_in_place_aliasing(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (4, 8, 6, 6))
    dst = np.zeros((4, 8, 6, 6), np.int8)
    out = run(x, "s8", ds=np.array([0.05], F), dst=dst)
    assert out is dst and np.array_equal(dst, model(x, "s8", ds=[0.05]))
    # channels-last dst array given in its own layout: written in place too
    dcl = np.zeros((4, 6, 6, 8), np.int8).transpose(0, 3, 1, 2)
    out = run(x, "s8", dst_tag="nhwc", ds=np.array([0.05], F), dst=dcl)
    assert out is dcl and np.array_equal(dcl, model(x, "s8", ds=[0.05]))
    # src and dst the same buffer: oneDNN's reorder does not execute in place, nor does
    # dnnq's (docs/aliasing.md); the destination is left as it was
    y = x.copy()
    with pytest.raises(dnnq.InvalidArguments, match="src overlaps dst"):
        run(y, "f32", ss=np.array([2.0], F), dst=y)
    assert np.array_equal(y, x)


def test_large_tensor_uses_threads_and_blocks(isa, rng_seed):
    """Long rows are cut into work items: every element is still written once."""
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (3, 70001))
    s = rng.uniform(0.5, 2, 3).astype(F)
    out = run(x, "u8", ds=s, dm=1, dzp=np.array([128], np.int32))
    assert np.array_equal(out, model(x, "u8", ds=s, dm=1, dzp=[128]))


@R.requires_onednn
def test_int8_requantization_long_rows_match_onednn(isa, rng_seed):
    """8-bit -> 8-bit with long rows (on CPUs with AVX-512 VBMI this takes the 256-entry table
    path): per-tensor and per-channel scales, zero points, both signednesses."""
    rng = np.random.default_rng(rng_seed)
    shape = (2, 6, 20, 30)
    for sdt, ddt in (("s8", "u8"), ("u8", "s8"), ("u8", "u8"), ("s8", "s8")):
        x = gen(rng, sdt, shape)
        for sm in (0, 2):
            ss = scales(rng, count(shape, sm), ddt, "src")
            ds = np.array([rng.uniform(0.5, 2.0)], F)
            zs, zd = np.array([rng.integers(-20, 20)], np.int32), np.array([17], np.int32)
            ref = R.reorder(x, ddt, src_scales=ss, src_scale_mask=sm, dst_scales=ds,
                            src_zp=zs, dst_zp=zd)
            out = run(x, ddt, ss=ss, sm=sm, ds=ds, szp=zs, dzp=zd)
            assert np.array_equal(out, ref), (sdt, ddt, sm)


def test_int8_requantization_many_channels_threads(isa, rng_seed):
    """Per-channel parameters over more channels than the per-thread table cache has ways."""
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "s8", (3, 200, 300))
    ss = rng.uniform(0.01, 2.0, 200).astype(F)
    zd = np.array([128], np.int32)
    prev = dnnq.get_num_threads()
    try:
        for nt in (1, 2):
            dnnq.set_num_threads(nt)
            out = run(x, "u8", ss=ss, sm=2, ds=np.array([0.5], F), dzp=zd)
            assert np.array_equal(out, model(x, "u8", ss=ss, sm=2, ds=[0.5], dzp=zd))
    finally:
        dnnq.set_num_threads(prev)


def test_quantize_dequantize_model(rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((5, 7)) * 3).astype(F)
    s = rng.uniform(0.01, 0.05, 7).astype(F)
    z = rng.integers(-5, 5, 7).astype(np.int32)
    q = dnnq.quantize(x, s, z, "s8", axis=-1)
    expect = sat(x * (F(1) / s) + z.astype(F), "s8")
    assert np.array_equal(q, expect)
    back = dnnq.dequantize(q, s, z, axis=1)
    assert np.array_equal(back, (q.astype(F) - z.astype(F)) * s)
    q32 = dnnq.quantize(x, 1e-6, None, "s32")
    assert q32.dtype == np.int32 and np.array_equal(q32, sat(x * (F(1) / F(1e-6)), "s32"))


# ----------------------------------------------------------------------------- errors

def test_reorder_errors():
    d = MD((2, 3), "f32")
    with pytest.raises(dnnq.InvalidArguments, match="dims"):
        dnnq.Reorder(d, MD((3, 2), "s8"))
    with pytest.raises(dnnq.InvalidArguments, match="src_desc"):
        dnnq.Reorder("x", d)
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_SRC, 4)
    with pytest.raises(dnnq.InvalidArguments, match="mask"):
        dnnq.Reorder(d, MD((2, 3), "s8"), attr)
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_WEIGHTS, 0)
    with pytest.raises(dnnq.Unimplemented, match="weights"):
        dnnq.Reorder(d, MD((2, 3), "s8"), attr)
    attr = PrimitiveAttr()
    attr.set_post_ops(dnnq.PostOps().append_eltwise("relu"))
    with pytest.raises(dnnq.Unimplemented, match="post_op"):
        dnnq.Reorder(d, MD((2, 3), "s8"), attr)
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_DST, 2)
    p = dnnq.Reorder(d, MD((2, 3), "s8"), attr)
    x = np.ones((2, 3), F)
    with pytest.raises(dnnq.InvalidArguments, match="scale.dst"):
        p.execute({A.DNNL_ARG_SRC: x})  # missing scales
    with pytest.raises(dnnq.InvalidArguments, match="exactly 3"):
        p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [1.0, 2.0]})
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(dnnq.InvalidArguments, match="scale"):
            p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [1.0, bad, 1.0]})
    with pytest.raises(dnnq.InvalidArguments, match="dtype"):
        p.execute({A.DNNL_ARG_SRC: x.astype(np.float64), A.DNNL_ARG_SCALE | A.DNNL_ARG_DST:
                   [1.0] * 3})
    with pytest.raises(dnnq.InvalidArguments, match="not used"):
        p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [1.0] * 3,
                   A.DNNL_ARG_WEIGHTS: x})
    with pytest.raises(dnnq.InvalidArguments, match="shape"):
        p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [1.0] * 3,
                   A.DNNL_ARG_DST: np.zeros((3, 2), np.int8)})


def test_quantize_errors():
    x = np.ones((2, 3), F)
    with pytest.raises(dnnq.InvalidArguments, match="dt"):
        dnnq.quantize(x, 1.0, 0, "f32")
    with pytest.raises(dnnq.InvalidArguments, match="x dtype"):
        dnnq.quantize(x.astype(np.float64), 1.0, 0, "s8")
    with pytest.raises(dnnq.InvalidArguments, match="axis"):
        dnnq.quantize(x, [1.0, 1.0], 0, "s8", axis=2)
    with pytest.raises(dnnq.InvalidArguments, match="exactly 3"):
        dnnq.quantize(x, [1.0, 1.0], None, "s8", axis=1)
    with pytest.raises(dnnq.InvalidArguments, match="zero_point"):
        dnnq.quantize(x, 1.0, 0.5, "u8")
    with pytest.raises(dnnq.InvalidArguments, match="scale"):
        dnnq.dequantize(np.ones((2, 3), np.int8), -1.0)
    with pytest.raises(dnnq.InvalidArguments, match="x dtype"):
        dnnq.dequantize(x, 1.0)
