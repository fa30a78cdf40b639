"""Deconvolutions whose kernel is the stride (the deconv_ks kernel, ukernels/conv_deconv_ks.c:
one GEMM of kw * OC columns per source row and kernel row, the epilogue over rows of several
source pixels' outputs) against the real oneDNN 3.2, bit for bit: output channels 1 - 33
(kw * OC below, at and past the 64 columns it takes), kernels 2x2, 3x3 and 2x1, rows narrower
and wider than an epilogue row (64 // (kw * OC) pixels) and the micro-kernel's rows, u8 / s8
sources with and without a zero point (the per-kernel-row compensation), per-channel
constants (weights scales, bias, a binary input) repeated over the epilogue's columns, a
post-op chain and a sum, 1 - 3 threads and every ISA level."""
import numpy as np
import pytest

import dnnq
from _quant_ref import NP
from _onednn_kernels import MODELLED_HOST
from test_convolution import Case, assert_same, needs_onednn
from test_deconv_impl import check_against_onednn, run_both

pytestmark = needs_onednn

OCS = (1, 2, 3, 4, 8, 16, 24, 33)
KERNELS = ((2, 2), (3, 3), (2, 1))
# (src_dt, src zero point, dst_dt, chain)
CONFIGS = (("u8", 0, "u8", "binary"), ("s8", 3, "s8", "relu_sum"), ("u8", 7, "f32", "sum"),
           ("u8", 0, "s32", "none"))


def make_case(rng, oc, k, config, isp, mb=1):
    src_dt, zp, dst_dt, chain = config
    q = {"src_scales": [0.061], "wei_scales": rng.uniform(0.002, 0.02, oc).astype(np.float32),
         "wei_scale_mask": 1}
    if dst_dt in ("u8", "s8"):
        q["dst_scales"] = [0.742]
        q["dst_zp"] = [154 if dst_dt == "u8" else -3]
    if zp:
        q["src_zp"] = [zp]
    if chain == "none" and dst_dt == "s32":
        q = {}  # the raw s32 sums (no attributes)
    c = Case(rng, mb=mb, ICg=24 if oc != 3 else 5, OCg=oc, isp=isp, k=k, s=k, pl=(0, 0),
             src_dt=src_dt, dst_dt=dst_dt, deconv=True, src_tag="nhwc", dst_tag="nhwc",
             bias_dt="f32" if chain != "none" else None, q=q)
    if chain == "binary":
        chan = rng.normal(0, 4, (1, oc, 1, 1)).astype(np.float32)
        one = np.float32(rng.normal(0, 2)).reshape(1, 1, 1, 1)
        c.post_ops = [("binary", "add", chan), ("eltwise", "relu", 0.0, 0.0),
                      ("binary", "mul", one)]
    elif chain == "relu_sum":
        c.post_ops = [("eltwise", "relu", 0.0, 0.0), ("sum", 0.5, 0)]
    elif chain == "sum":
        c.post_ops = [("sum", 1.0, 0), ("eltwise", "linear", 0.37, -1.3)]
    if any(op[0] == "sum" for op in c.post_ops):
        c.dst_prev = (np.rint(rng.normal(0, 8, c.dst_shape)).astype(np.float32)
                      if dst_dt == "f32" else
                      rng.integers(0, 100, c.dst_shape).astype(NP[dst_dt]))
    return c


def check(c, oc, kw):
    """The kernel deconv_ks where kw * OC <= 64; bit for bit with oneDNN where its kernel on
    this host shares dnnq's numerics (exact dot products, the same f32 order), against the
    numpy model elsewhere (test_deconv_impl.check_against_onednn); on the host dnnq's
    kernel rules model, always against oneDNN."""
    got, want, impl, p = run_both(c)
    assert p._impl.kernel == ("deconv_ks" if kw * oc <= 64 else "deconv_phases"), \
        (oc, kw, p._impl)
    assert check_against_onednn(c, got, want, impl, p) or not MODELLED_HOST, impl


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: f"{k[0]}x{k[1]}")
@pytest.mark.parametrize("oc", OCS)
def test_kernel_stride_vs_onednn(oc, k):
    """every config at 1, 2 and 3 threads; row widths around an epilogue row's pixels"""
    rng = np.random.default_rng([oc, k[0], k[1]])
    pe = max(1, 64 // (k[1] * oc))
    widths = sorted({3, pe, pe + 1, 2 * pe + 5})
    old = dnnq.get_num_threads()
    try:
        for i, config in enumerate(CONFIGS):
            iw = widths[i % len(widths)]
            c = make_case(rng, oc, k, config, (2 + i % 3, iw), mb=1 + i % 2)
            for threads in (1, 2, 3):
                dnnq.set_num_threads(threads)
                check(c, oc, k[1])
    finally:
        dnnq.set_num_threads(old)


@pytest.mark.parametrize("oc,k", [(1, (2, 2)), (3, (3, 3)), (24, (2, 2)), (8, (2, 1))])
def test_kernel_stride_every_level(isa, oc, k):
    """the same bits at every ISA level (the portable, AVX2 and AVX-512 micro-kernels and
    epilogues; at AVX-512 the fused micro-kernel where an epilogue row is one pixel)"""
    rng = np.random.default_rng([oc, 5])
    for config in CONFIGS[:3]:
        c = make_case(rng, oc, k, config, (3, 37))
        check(c, oc, k[1])


def test_zero_point_the_source_cannot_hold():
    """a u8 source with zero point 300 (padding rows clamped, per-tap corrections): the plan
    runs the general driver instead, with oneDNN's bits"""
    rng = np.random.default_rng(3)
    c = make_case(rng, 2, (2, 2), ("u8", 300, "u8", "none"), (3, 9))
    check(c, 2, 2)


def test_declined_problems_fall_through():
    """weights zero points, per-pixel binary inputs, padding and groups take the column-phase
    driver, each with its reason at DNNQ_VERBOSE=2 (dnnq.primitives._impls.CONV)"""
    from dnnq.primitives import _impls
    rng = np.random.default_rng(4)
    cases = {
        "wei_zp": Case(rng, OCg=4, isp=(3, 5), k=(2, 2), s=(2, 2), pl=(0, 0), deconv=True,
                       q={"wei_zp": [2]}),
        "padding": Case(rng, OCg=4, isp=(3, 5), k=(2, 2), s=(2, 2), pl=(1, 0), pr=(0, 1),
                        deconv=True),
        "groups": Case(rng, G=2, OCg=4, isp=(3, 5), k=(2, 2), s=(2, 2), pl=(0, 0),
                       deconv=True),
    }
    pixel = Case(rng, OCg=4, isp=(3, 5), k=(2, 2), s=(2, 2), pl=(0, 0), deconv=True)
    pixel.post_ops = [("binary", "add",
                       rng.normal(0, 1, (1, 1) + pixel.dst_shape[2:]).astype(np.float32))]
    cases["pixel_binary"] = pixel
    for name, c in cases.items():
        got, p = c.run_dnnq()
        assert p._impl.kernel != "deconv_ks", name
        why = _impls._kernel_is_stride(p._conv_problem(), _impls.conv_cap(p._isa))
        assert why, name
        assert_same(got, c.run_numpy())


@pytest.mark.parametrize("isp,k,tag", [((37,), (4,), "nwc"), ((2, 3, 5), (2, 2, 2), "ndhwc"),
                                       ((3, 21), (2, 2), None)])
def test_kernel_stride_1d_3d_plain(isp, k, tag):
    """1-D and 3-D (every kernel row (kd, kh) its own GEMM), and plain (nchw) data"""
    rng = np.random.default_rng(len(isp))
    for oc in (1, 5):
        for src_dt, zp in (("u8", 0), ("s8", 2)):
            q = {"src_scales": [0.05], "wei_scales": [0.01], "dst_scales": [0.5]}
            if zp:
                q["src_zp"] = [zp]
            c = Case(rng, ICg=8, OCg=oc, isp=isp, k=k, s=k, pl=(0,) * len(isp),
                     d=(0,) * len(isp), src_dt=src_dt, dst_dt="u8", deconv=True, src_tag=tag,
                     dst_tag=tag, bias_dt="f32", q=q,
                     post_ops=[("eltwise", "relu", 0.0, 0.0)])
            check(c, oc, k[-1])
