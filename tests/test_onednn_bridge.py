"""Proves the oneDNN test bridge (dnnq.testing) against independent numpy models.

The models are written here from the documented quantization formula
(reference/ONEDNN_FACTS.md §1), not from the bridge:

    acc = Σ (src - src_zp)(wei - wei_zp)           exact integers
    v   = f32(acc) * f32(src_scale * wei_scale)     + f32(bias), post-ops (f32)
    d   = v * f32(1 / dst_scale) + dst_zp           then round-half-even and saturate

Each test compares with exact equality unless the operation is transcendental.
Without oneDNN these tests fail on x86-64 Linux and skip elsewhere (dnnq.testing.requires_onednn).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dnnq.testing as dnnl
from dnnq.testing import OnednnError

pytestmark = dnnl.requires_onednn
#: int8 compute compared with the exact model (oneDNN saturates in s16 without VNNI).
exact = dnnl.requires_vnni

F = np.float32


# ----------------------------------------------------------------------------- numpy models

def sat(d, dt):
    """Round half to even and saturate to an integer type (f32 passes through)."""
    dt = np.dtype(dt)
    if dt == np.float32:
        return np.asarray(d, F)
    info = np.iinfo(dt)
    hi = 2147483520.0 if dt == np.int32 else info.max  # largest f32 below 2**31
    return np.clip(np.rint(d), info.min, hi).astype(dt)


def epilogue(acc, dst_dt, ss=1.0, ws=1.0, bias=None, post=None, ds=1.0, dzp=0):
    """The f32 epilogue of conv / matmul / ip; ``ws`` broadcasts over the output channel."""
    v = np.asarray(acc).astype(F) * (F(ss) * np.asarray(ws, F))
    if bias is not None:
        v = v + np.asarray(bias).astype(F)
    if post is not None:
        v = post(v)
    d = v * (F(1) / F(ds)) + F(dzp)
    return sat(d, dst_dt)


def i64(a):
    return np.asarray(a).astype(np.int64)


def conv_acc(x, w, zp, strides, pl, pr, dil):
    """Direct convolution in int64; padded taps hold the zero point (contribute 0)."""
    w = i64(w) if w.ndim == x.ndim + 1 else i64(w)[None]
    G, OG, IG, *K = w.shape
    nsp, N = x.ndim - 2, x.shape[0]
    xp = np.pad(i64(x) - zp, [(0, 0), (0, 0)] + list(zip(pl, pr)))
    osz = [(x.shape[2 + i] + pl[i] + pr[i] - (K[i] - 1) * (dil[i] + 1) - 1) // strides[i] + 1
           for i in range(nsp)]
    acc = np.zeros((N, G, OG, *osz), np.int64)
    for taps in np.ndindex(*K):
        sl = tuple(slice(t * (d + 1), t * (d + 1) + (o - 1) * s + 1, s)
                   for t, d, o, s in zip(taps, dil, osz, strides))
        patch = xp[(slice(None), slice(None)) + sl].reshape(N, G, IG, *osz)
        acc += np.einsum("ngi...,goi->ngo...", patch, w[(Ellipsis,) + taps])
    return acc.reshape(N, G * OG, *osz)


def deconv_acc(x, w, zp, strides, pl, pr, dil):
    """Deconvolution by scatter: dst[ih*S - PL + kh*(D+1)] += (src - zp) * w[oc, ic, kh]."""
    w = i64(w) if w.ndim == x.ndim + 1 else i64(w)[None]
    G, OG, IG, *K = w.shape
    nsp, N = x.ndim - 2, x.shape[0]
    isz = x.shape[2:]
    full = [(isz[i] - 1) * strides[i] + (K[i] - 1) * (dil[i] + 1) + 1 for i in range(nsp)]
    acc = np.zeros((N, G, OG, *full), np.int64)
    xs = (i64(x) - zp).reshape(N, G, IG, *isz)
    for taps in np.ndindex(*K):
        sl = tuple(slice(t * (d + 1), t * (d + 1) + (n - 1) * s + 1, s)
                   for t, d, n, s in zip(taps, dil, isz, strides))
        acc[(slice(None),) * 3 + sl] += np.einsum("ngi...,goi->ngo...", xs, w[(Ellipsis,) + taps])
    crop = tuple(slice(pl[i], full[i] - pr[i]) for i in range(nsp))
    return acc[(slice(None),) * 3 + crop].reshape(N, G * OG, *[full[i] - pl[i] - pr[i] for i in range(nsp)])


def pool_ref(x, alg, k, s, pl, pr):
    """2-D pooling: max, or avg = rne(sum / count) (count = window or valid taps)."""
    pad = [(0, 0), (0, 0)] + list(zip(pl, pr))
    xp, valid = np.pad(i64(x), pad), np.pad(np.ones(x.shape, bool), pad)
    osz = [(x.shape[2 + i] + pl[i] + pr[i] - k[i]) // s[i] + 1 for i in range(2)]
    mx = np.full((*x.shape[:2], *osz), np.iinfo(np.int64).min)
    tot, cnt = np.zeros_like(mx), np.zeros_like(mx)
    for kh, kw in np.ndindex(*k):
        sl = (Ellipsis, slice(kh, kh + (osz[0] - 1) * s[0] + 1, s[0]),
              slice(kw, kw + (osz[1] - 1) * s[1] + 1, s[1]))
        mx = np.where(valid[sl], np.maximum(mx, xp[sl]), mx)
        tot, cnt = tot + xp[sl], cnt + valid[sl]
    if alg == "max":
        return mx
    return np.rint(tot / (k[0] * k[1] if alg == "avg_include_padding" else cnt))


def rng_for(seed=0):
    return np.random.default_rng(seed)


def ints(rng, dt, shape, lo=None, hi=None):
    info = np.iinfo(dt)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1,
                        shape).astype(dt)


# ----------------------------------------------------------------------------- infrastructure

def test_constants_come_from_headers():
    c = dnnl.const
    assert dnnl.version()[:2] == (3, 2)
    assert (c("DNNL_ARG_SRC"), c("DNNL_ARG_DST"), c("DNNL_ARG_WEIGHTS"), c("DNNL_ARG_BIAS")) == (1, 17, 33, 41)
    assert (c("DNNL_ARG_ATTR_SCALES"), c("DNNL_ARG_ATTR_ZERO_POINTS")) == (4096, 8192)
    assert dnnl.arg_multiple_post_op(0) == 32768 and dnnl.arg_multiple_post_op(2) == 3 * 32768
    assert (c("f32"), c("s32"), c("s8"), c("u8")) == (3, 4, 5, 6)
    assert c("dnnl_nchw") == c("dnnl_abcd") and c("dnnl_nhwc") == c("dnnl_acdb")
    assert (c("dnnl_unimplemented"), c("dnnl_invalid_arguments")) == (3, 2)
    assert c("dnnl_eltwise_hardswish") == c("dnnl_eltwise_relu") + 20


def test_header_parser_matches_compiled_program():
    # a C compiler is there wherever dnnq was built from source (CI included): no skip
    assert shutil.which("cc") or shutil.which("gcc"), "no C compiler to cross-check the parser"
    from dnnq.testing import _capi, _enums

    values = dnnl.header_values()
    assert len(values) > 1500
    assert _enums.compile_check(values, _capi.LIB.include_dir) == values


def test_errors_carry_status_and_call():
    a, w = np.ones((2, 3), np.uint8), np.ones((3, 4), np.int8)
    with pytest.raises(OnednnError) as e:
        dnnl.matmul(a, w, wei_scales=np.ones(3), wei_scale_mask=1)
    assert e.value.status == "unimplemented" and e.value.call == "dnnl_matmul_primitive_desc_create"
    with pytest.raises(ValueError, match="needs 4 values"):
        dnnl.matmul(a, w, wei_scales=np.ones(3), wei_scale_mask=2)


# ----------------------------------------------------------------------------- matmul

@exact
def test_matmul_u8s8_to_s8_per_column_scales_and_src_zp():
    rng = rng_for(1)
    M, K, N = 7, 33, 48
    a, w = ints(rng, np.uint8, (M, K)), ints(rng, np.int8, (K, N))
    ws, bias = rng.uniform(0.005, 0.04, N).astype(F), rng.normal(0, 2, N).astype(F)
    ss, ds, szp, dzp = F(0.05), F(0.37), 37, -5
    out, impl = dnnl.matmul(a, w, bias, "s8", src_scales=[ss], wei_scales=ws, wei_scale_mask=2,
                            dst_scales=[ds], src_zp=[szp], dst_zp=[dzp], return_impl=True)
    ref = epilogue((i64(a) - szp) @ i64(w), np.int8, ss, ws, bias, ds=ds, dzp=dzp)
    assert impl and out.dtype == np.int8
    np.testing.assert_array_equal(out, ref)
    assert 0 < np.count_nonzero(np.isin(ref, (-128, 127))) < ref.size / 2  # exercises saturation too


@exact
@pytest.mark.parametrize("dst_dt", [np.int8, np.uint8, np.int32, np.float32])
def test_matmul_s8_src(dst_dt):
    rng = rng_for(2)
    a, w = ints(rng, np.int8, (5, 40)), ints(rng, np.int8, (40, 16))
    ws, bias = rng.uniform(0.01, 0.03, 16).astype(F), rng.integers(-500, 500, 16).astype(np.int32)
    kw = dict(src_scales=[0.02], wei_scales=ws, wei_scale_mask=2, dst_scales=[0.25], src_zp=[-20],
              dst_zp=[3])
    out = dnnl.matmul(a, w, bias, dst_dt, **kw)
    ref = epilogue((i64(a) + 20) @ i64(w), dst_dt, 0.02, ws, bias, ds=0.25, dzp=3)
    np.testing.assert_array_equal(out, ref)
    plain = dnnl.matmul(a, w, bias, dst_dt, weights_any=False, **kw)
    np.testing.assert_array_equal(plain, out)


def test_matmul_rounding_is_half_even_and_saturates():
    w = np.arange(-8, 9, dtype=np.int8).reshape(1, 17)
    out = dnnl.matmul(np.ones((1, 1), np.uint8), w, None, "s8", src_scales=[0.5])
    np.testing.assert_array_equal(out[0], np.rint(np.arange(-8, 9) / 2))
    big = dnnl.matmul(np.full((1, 4), 255, np.uint8), np.full((4, 2), 127, np.int8), None, "s8")
    assert (big == 127).all()


@exact
def test_matmul_s32_dst_saturates_at_largest_f32_below_2_31():
    a, w = np.full((2, 64), 255, np.uint8), np.array([[127, -128]] * 64, np.int8)
    out = dnnl.matmul(a, w, None, "s32", src_scales=[1e6])
    np.testing.assert_array_equal(out, [[2147483520, -2147483648]] * 2)


@exact
def test_matmul_batched_with_broadcast():
    rng = rng_for(3)
    a, w = ints(rng, np.uint8, (3, 4, 20)), ints(rng, np.int8, (1, 20, 8))
    ws, bias = rng.uniform(0.01, 0.02, 8).astype(F), rng.normal(size=(1, 1, 8)).astype(F)
    out = dnnl.matmul(a, w, bias, "u8", src_scales=[0.1], wei_scales=ws, wei_scale_mask=4,
                      dst_scales=[2.0], dst_zp=[128])
    np.testing.assert_array_equal(out, epilogue(i64(a) @ i64(w), np.uint8, 0.1, ws, bias, ds=2.0, dzp=128))


@exact
def test_matmul_post_ops_before_dst_scale():
    rng = rng_for(4)
    a, w = ints(rng, np.uint8, (6, 24)), ints(rng, np.int8, (24, 10))
    add_col, mul_full = rng.normal(0, 3, (1, 10)).astype(F), ints(rng, np.int8, (6, 10), -3, 3)
    prev = ints(rng, np.int8, (6, 10))
    ops = [("eltwise", "relu", 0.25, 0.0), ("binary", "add", add_col), ("binary", "mul", mul_full),
           ("eltwise", "linear", 0.5, 1.5), ("sum", 0.75, 4), ("eltwise", "round")]

    def post(v):
        v = np.where(v > 0, v, v * F(0.25))
        v = (v + add_col) * mul_full.astype(F)
        v = v * F(0.5) + F(1.5)
        v = v + F(0.75) * (prev.astype(F) - F(4))
        return np.rint(v)

    out = dnnl.matmul(a, w, None, "s8", src_scales=[0.01], dst_scales=[0.7], dst_zp=[2],
                      post_ops=ops, dst_prev=prev)
    np.testing.assert_array_equal(out, epilogue(i64(a) @ i64(w), np.int8, 0.01, post=post, ds=0.7, dzp=2))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 9), st.integers(1, 70), st.integers(1, 40), st.integers(0, 2**32 - 1),
       st.sampled_from([np.uint8, np.int8]), st.sampled_from([np.uint8, np.int8, np.float32]))
@exact
def test_matmul_random_shapes(m, k, n, seed, src_dt, dst_dt):
    rng = rng_for(seed)
    a, w = ints(rng, src_dt, (m, k)), ints(rng, np.int8, (k, n))
    ss, ds = F(rng.uniform(0.001, 0.1)), F(rng.uniform(0.05, 3))
    ws, bias = rng.uniform(1e-3, 0.05, n).astype(F), rng.normal(0, 5, n).astype(F)
    szp, dzp = int(rng.integers(-30, 30)), int(rng.integers(-10, 10))
    out = dnnl.matmul(a, w, bias, dst_dt, src_scales=[ss], wei_scales=ws, wei_scale_mask=2,
                      dst_scales=[ds], src_zp=[szp], dst_zp=[dzp])
    np.testing.assert_array_equal(out, epilogue((i64(a) - szp) @ i64(w), dst_dt, ss, ws, bias, ds=ds, dzp=dzp))


# ONEDNN_FACTS §3: "ok" = a fast kernel, "ref" = only ref:any, else the error status.
MATMUL_MASKS = [
    (2, "src", "scale", 0, "ok"), (2, "src", "scale", 2, "unimplemented"),
    (2, "wei", "scale", 0, "ok"), (2, "wei", "scale", 2, "ok"),
    (2, "wei", "scale", 1, "unimplemented"), (2, "wei", "scale", 3, "unimplemented"),
    (2, "dst", "scale", 0, "ok"), (2, "dst", "scale", 2, "unimplemented"),
    (2, "src", "zp", 0, "ok"), (2, "src", "zp", 2, "ref"), (2, "src", "zp", 1, "unimplemented"),
    (2, "wei", "zp", 0, "ok"), (2, "wei", "zp", 2, "unimplemented"),
    (2, "dst", "zp", 0, "ok"), (2, "dst", "zp", 2, "ref"),
    (3, "wei", "scale", 4, "ok"), (3, "wei", "scale", 2, "unimplemented"),
    (3, "wei", "scale", 6, "unimplemented"), (3, "src", "zp", 4, "unimplemented"),
    (3, "dst", "zp", 4, "unimplemented"),
]


@exact
@pytest.mark.parametrize("src_dt", [np.uint8, np.int8])
@pytest.mark.parametrize("nd,arg,kind,mask,expected", MATMUL_MASKS)
def test_matmul_mask_table(nd, arg, kind, mask, expected, src_dt):
    rng = rng_for(5)
    lead = (2,) * (nd - 2)
    a, w = ints(rng, src_dt, lead + (4, 6), 0, 100), ints(rng, np.int8, lead + (6, 5))
    dims = {"src": a.shape, "wei": w.shape, "dst": lead + (4, 5)}[arg]
    count = int(np.prod([d for i, d in enumerate(dims) if mask >> i & 1]))
    vals = rng.uniform(0.5, 2, count).astype(F) if kind == "scale" else rng.integers(-3, 4, count)
    key = f"{arg}_{'scales' if kind == 'scale' else 'zp'}"
    kw = {key: vals, f"{arg}_{kind}_mask": mask}
    if expected not in ("ok", "ref"):
        with pytest.raises(OnednnError) as e:
            dnnl.matmul(a, w, None, "f32", **kw)
        assert e.value.status == expected
        return
    out, impl = dnnl.matmul(a, w, None, "f32", return_impl=True, **kw)
    assert ("ref" in impl) == (expected == "ref"), impl
    bshape = [1] * len(dims)  # broadcast the per-dim values for the model
    for i, d in enumerate(dims):
        if mask >> i & 1:
            bshape[i] = d
    v = vals.reshape(bshape)
    if kind == "zp":
        acc = (i64(a) - v if arg == "src" else i64(a)) @ (i64(w) - v if arg == "wei" else i64(w))
        ref = epilogue(acc, np.float32, dzp=v if arg == "dst" else 0)
    else:
        acc = i64(a) @ i64(w)
        ref = epilogue(acc, np.float32, ss=v if arg == "src" else 1, ws=v if arg == "wei" else 1,
                       ds=v if arg == "dst" else 1)
    np.testing.assert_array_equal(out, ref)


# ----------------------------------------------------------------------------- reorder

@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_reorder_quantize_and_dequantize(dt):
    rng = rng_for(6)
    x = rng.normal(0, 4, (2, 3, 5, 6)).astype(F)
    x.flat[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e30, -np.inf]
    zp = 0 if dt == np.int8 else 128
    q = dnnl.reorder(x, dt, dst_scales=[1.0], dst_zp=[zp])
    np.testing.assert_array_equal(q, sat(x + F(zp), dt))
    assert list(q.flat[:6].astype(int) - zp) == [0, 2, 2, 0, -2, -2]
    cs = rng.uniform(0.01, 0.1, 3).astype(F)  # per channel (mask 2 = dim 1)
    q = dnnl.reorder(x, dt, dst_scales=cs, dst_scale_mask=2, dst_zp=[zp])
    np.testing.assert_array_equal(q, sat(x * (F(1) / cs[:, None, None]) + F(zp), dt))
    y = dnnl.reorder(q, "f32", src_scales=cs, src_scale_mask=2, src_zp=[zp])
    np.testing.assert_array_equal(y, (q.astype(F) - F(zp)) * cs[:, None, None])


def test_reorder_nan_quantizes_like_onednn():
    x = np.array([np.nan, np.inf, -np.inf, 3.0], F)
    np.testing.assert_array_equal(dnnl.reorder(x, "u8", dst_scales=[0.5]), [0, 255, 0, 6])
    np.testing.assert_array_equal(dnnl.reorder(x, "s8", dst_scales=[0.5]), [127, 127, -128, 6])


def test_reorder_requantize_and_scaled_f32():
    rng = rng_for(7)
    q = ints(rng, np.int8, (4, 6, 3))
    a, b = F(0.037), F(0.011)
    out = dnnl.reorder(q, "u8", src_scales=[a], src_zp=[3], dst_scales=[b], dst_zp=[100])
    np.testing.assert_array_equal(out, sat((q.astype(F) - F(3)) * a * (F(1) / b) + F(100), np.uint8))
    x = rng.normal(size=500).astype(F)
    # f32 -> f32 with both scales: one multiplier src_scale * (1 / dst_scale), in f32.
    np.testing.assert_array_equal(dnnl.reorder(x, "f32", src_scales=[a], dst_scales=[b]),
                                  x * (a * (F(1) / b)))


def test_reorder_zero_point_rules():
    x = np.ones((2, 3, 4, 4), F)
    with pytest.raises(OnednnError) as e:  # zp on the f32 side
        dnnl.reorder(x, "s8", src_zp=[1])
    assert (e.value.status, e.value.call) == ("invalid_arguments", "dnnl_reorder_primitive_desc_create")
    with pytest.raises(OnednnError) as e:  # per-channel zp: created, refused at execution
        dnnl.reorder(x, "s8", dst_zp=np.ones(3, np.int32), dst_zp_mask=2)
    assert (e.value.status, e.value.call) == ("invalid_arguments", "dnnl_primitive_execute")


def test_reorder_layouts():
    rng = rng_for(8)
    x = rng.normal(size=(2, 5, 3, 4)).astype(F)
    nhwc = dnnl.reorder(x, "f32", dst_tag="nhwc")
    assert nhwc.shape == x.shape and nhwc.strides == (240, 4, 80, 20)
    np.testing.assert_array_equal(nhwc, x)
    cl_view = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(dnnl.reorder(cl_view, "s8", dst_scales=[0.1]),
                                  sat(x * (F(1) / F(0.1)), np.int8))
    blocked = dnnl.reorder(x, "f32", dst_tag="nChw16c")
    assert blocked.size == 2 * 16 * 3 * 4
    np.testing.assert_array_equal(blocked.reshape(2, 3, 4, 16)[..., :5], x.transpose(0, 2, 3, 1))


# ----------------------------------------------------------------------------- gemm

@pytest.mark.parametrize("transa,transb,offsetc", [(False, False, "F"), (False, True, "C"),
                                                   (True, False, "R"), (True, True, "C")])
@exact
def test_gemm_u8s8s32_offsets(transa, transb, offsetc):
    rng = rng_for(9)
    M, N, K = 5, 7, 19
    A, B = ints(rng, np.uint8, (M, K)), ints(rng, np.int8, (K, N))
    C = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    co = rng.integers(-50, 50, {"F": 1, "C": M, "R": N}[offsetc]).astype(np.int32)
    out = dnnl.gemm_u8s8s32(A.T.copy() if transa else A, B.T.copy() if transb else B, C,
                            transa=transa, transb=transb, beta=1.0, ao=7, bo=-3, co=co, offsetc=offsetc)
    co_b = {"F": co, "C": co[:, None], "R": co[None, :]}[offsetc]  # "C": one value per row
    np.testing.assert_array_equal(out, (i64(A) - 7) @ (i64(B) + 3) + C + co_b)


@exact
def test_gemm_s8s8s32_alpha_rounds_half_away_and_wraps():
    rng = rng_for(10)
    A, B = ints(rng, np.int8, (6, 9)), ints(rng, np.int8, (9, 4))
    acc = (i64(A) + 2) @ (i64(B) - 1)
    out = dnnl.gemm_s8s8s32(A, B, alpha=0.5, ao=-2, bo=1)
    np.testing.assert_array_equal(out, np.sign(acc) * np.floor(np.abs(acc) / 2 + 0.5))
    big = dnnl.gemm_u8s8s32(np.full((1, 70000), 255, np.uint8), np.full((70000, 1), 127, np.int8))
    assert big[0, 0] == -2028017296  # s32 accumulation wraps


# ----------------------------------------------------------------------------- inner product

@exact
@pytest.mark.parametrize("spatial", [(), (3, 2)])
def test_inner_product(spatial):
    rng = rng_for(11)
    x, w = ints(rng, np.uint8, (4, 8, *spatial)), ints(rng, np.int8, (12, 8, *spatial))
    ws, bias = rng.uniform(1e-3, 5e-3, 12).astype(F), rng.normal(size=12).astype(F)
    prev = ints(rng, np.int8, (4, 12))
    out, impl = dnnl.inner_product(x, w, bias, "s8", src_scales=[0.05], wei_scales=ws,
                                   wei_scale_mask=1, dst_scales=[0.3], dst_prev=prev,
                                   post_ops=[("sum", 0.5)], return_impl=True)
    acc = i64(x).reshape(4, -1) @ i64(w).reshape(12, -1).T
    ref = epilogue(acc, np.int8, 0.05, ws, bias, post=lambda v: v + F(0.5) * prev.astype(F), ds=0.3)
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(OnednnError) as e:
        dnnl.inner_product(x, w, src_zp=[1])
    assert e.value.status == "unimplemented"


# ----------------------------------------------------------------------------- (de)convolution

@exact
@pytest.mark.parametrize("src_dt,zp", [(np.uint8, 37), (np.int8, -20)])
def test_conv_src_zero_point_with_padding(src_dt, zp):
    rng = rng_for(12)
    x, w = ints(rng, src_dt, (2, 8, 9, 7)), ints(rng, np.int8, (16, 8, 3, 3))
    ws, bias = rng.uniform(1e-4, 3e-4, 16).astype(F), rng.normal(size=16).astype(F)
    out = dnnl.convolution(x, w, bias, "u8", strides=2, padding_l=(1, 2), padding_r=(0, 1),
                           src_scales=[0.5], wei_scales=ws, wei_scale_mask=1, dst_scales=[0.04],
                           src_zp=[zp], dst_zp=[100])
    acc = conv_acc(x, w, zp, (2, 2), (1, 2), (0, 1), (0, 0))
    np.testing.assert_array_equal(out, epilogue(acc, np.uint8, 0.5, ws[:, None, None], bias[:, None, None],
                                                ds=0.04, dzp=100))
    zero_pad = acc - conv_acc(np.pad(x, [(0, 0), (0, 0), (1, 0), (2, 1)], constant_values=0), w, zp,
                              (2, 2), (0, 0), (0, 0), (0, 0))
    assert zero_pad.any()  # the "padding = 0" model differs, so the test discriminates


@exact
def test_conv_groups_depthwise_dilation_post_ops():
    rng = rng_for(13)
    x = ints(rng, np.uint8, (1, 8, 8, 8))
    for w in (ints(rng, np.int8, (4, 2, 2, 3, 3)), ints(rng, np.int8, (8, 1, 1, 3, 3))):
        ws = rng.uniform(1e-3, 3e-3, 8).astype(F)
        per_c = rng.normal(0, 2, (1, 8, 1, 1)).astype(F)
        prev = ints(rng, np.int8, (1, 8, 6, 6))
        out, impl = dnnl.convolution(x, w, None, "s8", padding_l=1, dilates=1, src_zp=[5],
                                     wei_scales=ws, wei_scale_mask=3, post_ops=[
                                         ("binary", "add", per_c), ("sum", 1.0, -1)],
                                     dst_prev=prev, return_impl=True)
        acc = conv_acc(x, w, 5, (1, 1), (1, 1), (1, 1), (1, 1))
        ref = epilogue(acc, np.int8, 1, ws[:, None, None],
                       post=lambda v: v + per_c[0] + (prev.astype(F) + F(1)))
        np.testing.assert_array_equal(out, ref)


@exact
@pytest.mark.parametrize("shape,k", [((2, 4, 11), (3,)), ((1, 4, 4, 5, 3), (3, 2, 3))])
def test_conv_1d_3d(shape, k):
    rng = rng_for(14)
    x, w = ints(rng, np.int8, shape), ints(rng, np.int8, (6, 4, *k))
    n = len(k)
    out = dnnl.convolution(x, w, None, "s32", padding_l=1, strides=1)
    np.testing.assert_array_equal(out, conv_acc(x, w, 0, (1,) * n, (1,) * n, (1,) * n, (0,) * n))


def test_conv_mask_table():
    x, w = np.ones((1, 4, 5, 5), np.uint8), np.ones((8, 4, 3, 3), np.int8)
    wg = np.ones((2, 4, 2, 3, 3), np.int8)
    for weights, mask, count in ((w, 2, 4), (w, 3, 32), (wg, 1, 2)):
        with pytest.raises(OnednnError) as e:
            dnnl.convolution(x, weights, wei_scales=np.ones(count), wei_scale_mask=mask)
        assert e.value.status == "unimplemented"
    with pytest.raises(OnednnError) as e:
        dnnl.convolution(x, w, wei_zp=[1])
    assert e.value.status == "unimplemented"
    for arg, count in (("src", 4), ("dst", 8)):
        _, impl = dnnl.convolution(x, w, **{f"{arg}_zp": np.ones(count, int), f"{arg}_zp_mask": 2},
                                   return_impl=True)
        assert impl == "ref:any"


@exact
@pytest.mark.parametrize("grouped", [False, True])
def test_deconvolution(grouped):
    rng = rng_for(15)
    x = ints(rng, np.uint8, (2, 4, 5, 4))
    w = ints(rng, np.int8, (2, 3, 2, 3, 2) if grouped else (6, 4, 3, 2))
    ws = rng.uniform(1e-3, 2e-3, 6).astype(F)
    out = dnnl.deconvolution(x, w, None, "s8", strides=2, padding_l=(1, 0), padding_r=(0, 1),
                             src_zp=[11], wei_scales=ws, wei_scale_mask=3 if grouped else 1,
                             dst_scales=[0.5])
    acc = deconv_acc(x, w, 11, (2, 2), (1, 0), (0, 1), (0, 0))
    assert out.shape == acc.shape == (2, 6, 10, 7)
    np.testing.assert_array_equal(out, epilogue(acc, np.int8, 1, ws[:, None, None], ds=0.5))


# ----------------------------------------------------------------------------- other primitives

@pytest.mark.parametrize("alg", ["max", "avg_include_padding", "avg_exclude_padding"])
@pytest.mark.parametrize("dt,channels_last", [(np.int8, False), (np.uint8, True), (np.int8, True)])
def test_pooling(alg, dt, channels_last):
    rng = rng_for(16)
    x = ints(rng, dt, (2, 5, 7, 6))
    for k, s, pl, pr in (((2, 2), (2, 2), (0, 0), (0, 0)), ((3, 3), (2, 1), (1, 1), (1, 0))):
        out = dnnl.pooling(x, alg, kernel=k, strides=s, padding_l=pl, padding_r=pr,
                           channels_last=channels_last)
        np.testing.assert_array_equal(out, pool_ref(x, alg, k, s, pl, pr))


def test_eltwise_exact_algorithms():
    rng = rng_for(17)
    x = (rng.normal(0, 3, (3, 4, 5)).astype(F) * 4).round() / 4  # many exact halves
    cases = {("relu", 0.1, 0): np.where(x > 0, x, x * F(0.1)), ("round", 0, 0): np.rint(x),
             ("clip_v2", -1, 2.5): np.clip(x, F(-1), F(2.5)), ("abs", 0, 0): np.abs(x),
             ("square", 0, 0): x * x, ("linear", 0.5, -1): x * F(0.5) + F(-1)}
    for (alg, a, b), ref in cases.items():
        np.testing.assert_array_equal(dnnl.eltwise(x, alg, a, b), ref, err_msg=alg)
    np.testing.assert_allclose(dnnl.eltwise(x, "tanh"), np.tanh(x), rtol=1e-6, atol=1e-6)
    xs = ints(rng, np.int8, (4, 9))
    np.testing.assert_array_equal(dnnl.eltwise(xs, "relu", 0.5), sat(np.where(xs > 0, xs, xs * F(0.5)), np.int8))


@pytest.mark.parametrize("alg,op", [("add", np.add), ("mul", np.multiply), ("div", np.divide),
                                    ("sub", np.subtract), ("max", np.maximum), ("ge", np.greater_equal)])
def test_binary_with_source_scales(alg, op):
    rng = rng_for(18)
    a, b = ints(rng, np.int8, (2, 3, 4)), ints(rng, np.uint8, (3, 1), 1, 255)
    s0, s1 = F(0.37), F(0.011)
    ref = op(a.astype(F) * s0, b.astype(F) * s1).astype(F)
    np.testing.assert_array_equal(dnnl.binary(a, b, alg, "f32", src0_scale=[s0], src1_scale=[s1]), ref)
    np.testing.assert_array_equal(dnnl.binary(a, b, alg, "s8", src0_scale=[s0], src1_scale=[s1]),
                                  sat(ref, np.int8))


def test_sum_and_concat():
    rng = rng_for(19)
    xs, xf = ints(rng, np.int8, (2, 3, 4)), rng.normal(0, 50, (2, 3, 4)).astype(F)
    out = dnnl.sum([xs, xf, xs], [0.5, 0.25, 1.75], "s8")
    ref = F(0.5) * xs.astype(F) + F(0.25) * xf + F(1.75) * xs.astype(F)
    np.testing.assert_array_equal(out, sat(ref, np.int8))
    parts = [xs, xs[:, :2] // 2]
    np.testing.assert_array_equal(dnnl.concat(parts, 1), np.concatenate(parts, 1))
    out = dnnl.concat(parts, 1, "u8", scales=[0.5, 2.5])
    ref = np.concatenate([sat(p.astype(F) * F(s), np.uint8) for p, s in zip(parts, (0.5, 2.5))], 1)
    np.testing.assert_array_equal(out, ref)


def test_softmax():
    rng = rng_for(20)
    x = rng.normal(0, 2, (3, 4, 6)).astype(F)
    e = np.exp(x - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(dnnl.softmax(x, "softmax", 1), sm, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(dnnl.softmax(x, "logsoftmax", 1), np.log(sm), rtol=2e-6, atol=2e-6)
    q = dnnl.softmax(x, "softmax", 1, "u8", dst_scale=[1 / 255])
    assert np.abs(q.astype(int) - np.rint(sm * 255)).max() <= 1
    # oneDNN 3.2 applies the src scale to the output, not to the input:
    # dst = softmax(src) * src_scale / dst_scale.
    np.testing.assert_allclose(dnnl.softmax(x, "softmax", 1, src_scale=[0.1]), sm * F(0.1), rtol=2e-6)


# ----------------------------------------------------------------------------- RNN

def _sig(x):
    return 1 / (1 + np.exp(-x))


def _rnn_setup(rng, T, N, C, H, G, mask):
    x, h0 = ints(rng, np.uint8, (T, N, C)), ints(rng, np.uint8, (1, 1, N, H))
    wl, wi = rng.normal(0, 0.3, (1, 1, C, G, H)).astype(F), rng.normal(0, 0.3, (1, 1, H, G, H)).astype(F)
    b = rng.normal(0, 0.2, (1, 1, G, H)).astype(F)
    ws = np.full((G, 1), 100, F) if mask == 0 else rng.uniform(60, 120, (G, H)).astype(F)
    wq = [np.clip(np.rint(w[0, 0] * ws), -128, 127).astype(np.int64) for w in (wl, wi)]
    return x, h0, wl, wi, b, ws, wq


@pytest.mark.parametrize("mask", [0, 24])
def test_lstm_int8(mask):
    rng, (T, N, C, H) = rng_for(21), (3, 2, 5, 4)
    scale, shift = F(40), F(120)
    x, h0, wl, wi, b, ws, (ql, qi) = _rnn_setup(rng, T, N, C, H, 4, mask)
    c0 = rng.normal(size=(1, 1, N, H)).astype(F)
    (dl, di, dc), impl = dnnl.lstm(x, h0, c0, wl, wi, b, data_scale=scale, data_shift=shift,
                                   wei_scales=ws.ravel()[:1] if mask == 0 else ws.ravel(),
                                   wei_scale_mask=mask, return_impl=True)
    h, c, comp, hs = i64(h0[0, 0]), c0[0, 0].astype(np.float64), ql.sum(0) + qi.sum(0), []
    for t in range(T):
        acc = np.einsum("nc,cgh->ngh", i64(x[t]), ql) + np.einsum("nc,cgh->ngh", h, qi)
        g = (acc - shift * comp) / (ws * scale) + b[0, 0]
        c = _sig(g[:, 1]) * c + _sig(g[:, 0]) * np.tanh(g[:, 2])
        h = np.clip(np.rint(_sig(g[:, 3]) * np.tanh(c) * scale + shift), 0, 255).astype(np.int64)
        hs.append(h)
    np.testing.assert_array_equal(dl, hs)
    np.testing.assert_array_equal(di[0, 0], h)
    np.testing.assert_allclose(dc[0, 0], c, rtol=1e-5, atol=1e-6)
    f32_layer = dnnl.lstm(x, h0, c0, wl, wi, b, data_scale=scale, data_shift=shift,
                          wei_scales=ws.ravel()[:1] if mask == 0 else ws.ravel(),
                          wei_scale_mask=mask, dst_layer_dt="f32")[0]
    np.testing.assert_array_equal(f32_layer, (dl.astype(F) - shift) / scale)  # dequantized u8


@pytest.mark.parametrize("mask", [0, 24])
def test_gru_int8_requantizes_r_times_h(mask):
    rng, (T, N, C, H) = rng_for(22), (4, 3, 5, 6)
    scale, shift = F(30), F(100)
    x, h0, wl, wi, b, ws, (ql, qi) = _rnn_setup(rng, T, N, C, H, 3, mask)
    dl, di = dnnl.gru(x, h0, wl, wi, b, data_scale=scale, data_shift=shift,
                      wei_scales=ws.ravel()[:1] if mask == 0 else ws.ravel(), wei_scale_mask=mask)

    def q(v):
        return np.clip(np.rint(v * scale + shift), 0, 255).astype(np.int64)

    def deq(a_u8, w):
        return (np.einsum("nc,cgh->ngh", a_u8, w) - shift * w.sum(0)) / (ws[:w.shape[1]] * scale)

    h, hs = i64(h0[0, 0]), []
    for t in range(T):
        hf, ax, ah = (h - shift) / scale, deq(i64(x[t]), ql), deq(h, qi)
        u, r = _sig(ax[:, 0] + ah[:, 0] + b[0, 0, 0]), _sig(ax[:, 1] + ah[:, 1] + b[0, 0, 1])
        rh = q(r * hf)
        o = np.tanh(ax[:, 2] + (np.einsum("nc,ch->nh", rh, qi[:, 2]) - shift * qi[:, 2].sum(0))
                    / (ws[2] * scale) + b[0, 0, 2])
        h = q(u * hf + (1 - u) * o)
        hs.append(h)
    np.testing.assert_array_equal(dl, hs)
    np.testing.assert_array_equal(di[0, 0], h)


# ----------------------------------------------------------------------------- AMX LSTM probe

_LSTM_AT_AMX = """
import numpy as np, dnnq.testing as t
from dnnq.testing import _rnn_amx_probe as probe
rng = np.random.default_rng(1)
T, N, C, H = 8, 1, 64, 64  # a shape oneDNN 3.2's AMX LSTM dies on (tests/test_rnn.py's draw)
try:
    t.lstm(rng.integers(0, 256, (T, N, C), dtype=np.uint8), None, None,
           rng.integers(-127, 128, (1, 1, C, 4, H), dtype=np.int8),
           rng.integers(-127, 128, (1, 1, H, 4, H), dtype=np.int8),
           np.zeros((1, 1, 4, H), np.float32), data_scale=64.0, data_shift=128.0,
           wei_scales=np.array([100.0], np.float32), absent_states=True)
    print("ran", t.cpu_isa(), probe.faults())
except t.OnednnError as e:
    print("refused", t.cpu_isa(), probe.faults(), e)
"""


def test_amx_lstm_is_refused_where_it_would_kill_the_process():
    """oneDNN 3.2's AMX LSTM dies with SIGILL on some hosts (dnnq/testing/_rnn_amx_probe.py):
    there the bridge must refuse it with OnednnError and say how to avoid it; elsewhere it
    runs.  The child runs oneDNN at AMX and probes afresh (no verdict inherited)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_AMX", DNNL_MAX_CPU_ISA="AVX512_CORE_AMX",
               OMP_NUM_THREADS="1")
    env.pop("DNNQ_ONEDNN_AMX_RNN_FAULTS", None)
    r = subprocess.run([sys.executable, "-P", "-c", _LSTM_AT_AMX], env=env, capture_output=True,
                       text=True, timeout=300)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0, out[-3000:]
    word, isa, faults = out.split()[:3]
    if faults == "True":
        assert word == "refused" and isa.startswith("avx512_core_amx"), out
        assert "ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI" in out, out
    else:
        assert word == "ran", out
