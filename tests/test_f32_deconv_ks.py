"""f32 deconvolutions whose kernel is the stride (no padding, dilation or groups, kw * OC <= 64:
the 2x2 stride-2 upsampling heads of U-Net / DBNet): the f32_deconv_ks kernel, one f32 GEMM of
kw * OC columns per (source row, kernel row), its outputs gathered into epilogue rows.  It
gives the column-phase f32 kernel's bits (one tap reaches each output: the same chain of
FMAs, the same epilogue), which these tests check with that kernel forced, and float64's
values within the summation bound; with post-ops and an int8 dst against oneDNN."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.primitives import _impls
import dnnq.testing as onednn
from _f32_ref import deconv_f64, sum_bound
from _threads import dnnq_threads

F32 = np.float32


def _deconv(x_shape, w_shape, k, dst_dt="f32", attr=None, bias=True, tag=None):
    nsp = len(x_shape) - 2
    OC = w_shape[0]
    dst = (x_shape[0], OC) + tuple(s * k[i] for i, s in enumerate(x_shape[2:]))
    return dnnq.Deconvolution(MD(x_shape, "f32", tag), MD(w_shape, "f32"), MD(dst, dst_dt, tag),
                              MD((OC,), "f32") if bias else None, strides=k,
                              padding_l=(0,) * nsp, padding_r=(0,) * nsp, attr=attr)


# each creation walks the implementation list (a cached primitive keeps its kernel)
pytestmark = pytest.mark.usefixtures("no_primitive_cache")


def _column_kernel(monkeypatch):
    """Creation under the f32 list without the deconv_ks entry: the column-phase kernel."""
    monkeypatch.setattr(_impls, "CONV_F32",
                        tuple(e for e in _impls.CONV_F32 if e.name != "deconv_ks_f32"))


def _channels_last(x):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)


def _run(p, x, w, b, extra=None, threads=1):
    a = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: p.prepare_weights(w)}
    if b is not None:
        a[DNNL_ARG_BIAS] = b
    a.update(extra or {})
    with dnnq_threads(threads):
        return p.execute(a)


# (source shape, OC, kernel = stride): kw * OC below, at and past 16 / 32 / 64 columns (past
# 64 the column kernel runs), epilogue rows of several source pixels (kw * OC < 32) and of
# one; rows of 1 - 70 source pixels (6-row micro-tiles, 32-row epilogue chunks); 1-D, 3-D
CASES = [
    ((1, 24, 7, 9), 1, (2, 2)),
    ((1, 24, 5, 70), 1, (2, 2)),
    ((2, 5, 4, 6), 3, (2, 2)),
    ((1, 16, 3, 33), 8, (2, 2)),
    ((1, 24, 6, 11), 24, (2, 2)),
    ((1, 9, 2, 13), 32, (2, 2)),
    ((1, 17, 3, 5), 21, (3, 3)),
    ((1, 8, 1, 1), 16, (4, 4)),
    ((2, 12, 9), 7, (4,)),
    ((1, 6, 2, 3, 4), 5, (2, 2, 2)),
    ((1, 4, 3, 3), 33, (2, 2)),      # kw * OC = 66: the column kernel
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-oc{c[1]}-k{c[2]}" for c in CASES])
@pytest.mark.parametrize("tag", [None, "cl"])
def test_kernel_is_stride_same_bits_as_column_kernel_and_float64(case, tag, monkeypatch):
    x_shape, OC, k = case
    rng = np.random.default_rng(sum(x_shape) + OC)
    x = rng.standard_normal(x_shape).astype(F32)
    w = (rng.standard_normal((OC, x_shape[1]) + k) * 0.3).astype(F32)
    b = rng.standard_normal(OC).astype(F32)
    nsp = len(k)
    tg = {1: "nwc", 2: "nhwc", 3: "ndhwc"}[nsp] if tag else None
    xx = _channels_last(x) if tag else x
    p = _deconv(x_shape, w.shape, k, tag=tg)
    wide = k[-1] * OC > 64
    assert "brgconv_f32" in p.impl_info, p.impl_info
    got = _run(p, xx, w, b)
    exact, mag = deconv_f64(x, w, k, (0,) * nsp, (0,) * nsp, (0,) * nsp)
    exact = exact + b.reshape((1, -1) + (1,) * nsp)
    assert np.all(np.abs(got - exact) <= sum_bound(mag + np.abs(b).reshape((1, -1) + (1,) * nsp),
                                                   x_shape[1]) + 1e-30)
    _column_kernel(monkeypatch)
    q = _deconv(x_shape, w.shape, k, tag=tg)
    np.testing.assert_array_equal(got, _run(q, xx, w, b))
    assert wide or p._impl.name == "deconv_ks_f32", p._impl.name
    assert q._impl.name != "deconv_ks_f32"


def _post_attr(with_sum, bin_oc, dst_q):
    a = PrimitiveAttr()
    po = PostOps()
    if with_sum:
        po.append_sum(0.5)
    po.append_eltwise("relu", 0.1, 0.0)
    po.append_binary("add", MD(bin_oc, "f32"))
    po.append_eltwise("clip", -1.0, 2.5)
    a.set_post_ops(po)
    if dst_q:
        a.set_scales_mask(DNNL_ARG_DST, 0)
        a.set_zero_points_mask(DNNL_ARG_DST, 0)
    return a


@pytest.mark.parametrize("dst_dt", ["f32", "u8", "s8"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("case", [((2, 24, 5, 9), 1, (2, 2)), ((1, 24, 4, 40), 24, (2, 2)),
                                  ((1, 10, 3, 7), 12, (3, 3))])
def test_post_ops_int8_dst_threads_same_bits_as_column_kernel(case, threads, dst_dt,
                                                              monkeypatch):
    """A per-channel binary input, sum, eltwise chains and a quantized dst (repeated per
    output column), 1 - 3 threads."""
    x_shape, OC, k = case
    rng = np.random.default_rng(OC * 7 + threads)
    x = _channels_last(rng.standard_normal(x_shape).astype(F32))
    w = (rng.standard_normal((OC, x_shape[1]) + k) * 0.3).astype(F32)
    b = rng.standard_normal(OC).astype(F32)
    dst_shape = (x_shape[0], OC) + tuple(s * k[i] for i, s in enumerate(x_shape[2:]))
    bin_oc = (1, OC, 1, 1)
    src1 = rng.standard_normal(bin_oc).astype(F32)
    dq = dst_dt != "f32"
    prev = rng.integers(0, 100, dst_shape).astype(np.uint8 if dst_dt == "u8" else np.int8) \
        if dq else rng.standard_normal(dst_shape).astype(F32)
    prev = _channels_last(prev)
    extra = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(2) | DNNL_ARG_SRC_1: src1}
    if dq:
        extra[DNNL_ARG_SCALE | DNNL_ARG_DST] = np.array([0.03], F32)
        extra[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = np.array([7], np.int32)
    outs = []
    for column in (False, True):
        if column:
            _column_kernel(monkeypatch)
        p = _deconv(x_shape, w.shape, k, dst_dt, _post_attr(True, bin_oc, dq), tag="nhwc")
        assert (p._impl.name == "deconv_ks_f32") != column
        e = {**extra, DNNL_ARG_DST: prev.copy()}
        outs.append(_run(p, x, w, b, e, threads=threads if not column else 1))
    np.testing.assert_array_equal(outs[0], outs[1])


@onednn.requires_onednn
def test_against_onednn():
    """The f32 values against oneDNN's f32 deconvolution (within the summation bound)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 24, 6, 10)).astype(F32)
    w = (rng.standard_normal((2, 24, 2, 2)) * 0.3).astype(F32)
    b = rng.standard_normal(2).astype(F32)
    p = _deconv(x.shape, w.shape, (2, 2))
    got = _run(p, x, w, b)
    ref = onednn.deconvolution(x, w, b, "f32", strides=(2, 2), padding_l=(0, 0),
                               padding_r=(0, 0), dilates=(0, 0))
    _, mag = deconv_f64(x, w, (2, 2), (0, 0), (0, 0), (0, 0))
    assert np.all(np.abs(got - ref) <= 2 * sum_bound(mag + np.abs(b).reshape(1, -1, 1, 1), 24)
                  + 1e-30)
