"""ISA levels this CPU lacks, run over emulated kernel sets (ukernels/dispatch.c):

* the AMX level: the AMX GEMM kernel (ukernels/gemm_amx.c) compiled over a software tile unit
  (ukernels/amx_emulate.h), chosen when the process starts with DNNQ_EMULATE_AMX=1; the
  emulation stops the process where the real tile unit would fault (a tile out of shape or
  not configured);
* the avx2_vnni level: the AVX-VNNI kernel (ukernels/gemm_avxvnni.c) with the EVEX encoding of
  the same ymm vpdpbusd, chosen with DNNQ_EMULATE_AVX_VNNI=1 on an AVX512-VNNI CPU.

The GEMM family's tests, the convolutions that run those kernels and (AVX-VNNI) the RNN cells
are run in subprocesses so, against oneDNN, numpy and the other levels.  Run alone under
``DNNQ_EMULATE_AMX=1`` the tests below the drivers check the AMX convolutions (1x1 GEMMs and
the tiled path's k x k micro-tiles) directly."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq.primitives import _plan
from dnnq.primitives._kernels import _gemm
from _threads import dnnq_threads
from test_brgemm import source_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
INFO = dnnq.cpu_info()
EMULATED = INFO.get("amx_emulated", False)
CAN_EMULATE = INFO.get("avx512_vnni", False) and INFO.get("avx512bw", False) and \
    INFO.get("avx512vl", False)

#: the GEMM family's tests, run at every level including the emulated one
GEMM_TESTS = ["test_matmul.py", "test_gemm_kernel.py", "test_gemm_api.py",
              "test_gemm_api_exact.py", "test_thread_split.py", "test_brgemm.py",
              "test_fused_compensation.py"]
#: the convolutions (1x1 GEMMs and the tiled path run AMX tiles at that level) against
#: oneDNN and numpy
CONV_AMX_TESTS = ["test_convolution.py", "test_convolution_tiles.py",
                  "test_convolution_exec.py", "test_convolution_layers.py",
                  "test_deconv_kernel_stride.py"]
#: convolutions and RNN cells on the batch-reduce micro-kernel of the avx2_vnni level
AVX_VNNI_TESTS = ["test_convolution.py", "test_convolution_tiles.py", "test_rnn.py"]


def _run_emulated(var, tests, skip_reasons):
    """pytest on ``tests`` in a process started with ``var``=1; no test may skip for one of
    ``skip_reasons`` (the emulation must have been on)."""
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    env[var] = "1"
    env.pop("DNNQ_MAX_CPU_ISA", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-rs", "-p",
                        "no:cacheprovider", *[os.path.join(HERE, t) for t in tests]],
                       capture_output=True, text=True, env=env, cwd=HERE, timeout=1200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert " passed" in out and "error" not in out.splitlines()[-1], out[-2000:]
    for reason in skip_reasons:
        assert reason not in out, out[-3000:]


needs_avx512_vnni = pytest.mark.skipif(
    not CAN_EMULATE or EMULATED or INFO.get("avx_vnni_emulated", False),
    reason="runs an emulated level in a subprocess (needs AVX512-VNNI with AVX512-VL)")


@needs_avx512_vnni
def test_gemm_family_at_the_emulated_amx_level():
    # (this file's AMX checks run instead of skipping; no AMX test skips for want of AMX)
    _run_emulated("DNNQ_EMULATE_AMX", GEMM_TESTS + ["test_emulated_levels.py"] +
                  CONV_AMX_TESTS, ["DNNQ_EMULATE_AMX=1 runs these", "no AMX"])


@needs_avx512_vnni
@pytest.mark.skipif(INFO.get("avx_vnni", False), reason="the CPU has AVX-VNNI itself")
def test_gemm_convolutions_and_rnn_at_the_emulated_avx2_vnni_level():
    # (from the tests' folder, as the run below: a checkout's root would import its sources)
    r = subprocess.run([sys.executable, "-c", "import dnnq; "
                        "print(dnnq.available_isa_levels())"], capture_output=True, text=True,
                       env=dict(os.environ, DNNQ_EMULATE_AVX_VNNI="1"), cwd=HERE)
    assert "avx2_vnni" in r.stdout, r.stdout + r.stderr
    _run_emulated("DNNQ_EMULATE_AVX_VNNI", GEMM_TESTS + AVX_VNNI_TESTS, [])


emulated_only = pytest.mark.skipif(not EMULATED, reason="DNNQ_EMULATE_AMX=1 runs these")


def _attr(weights_mask, src_zp, dst_zp, post_ops):
    """Common source and dst scales, weights scales by `weights_mask`, zero points (masks 0)
    where asked, eltwise / sum post-ops (("sum", scale, zero point) or eltwise arguments)."""
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(dnnq.DNNL_ARG_SRC, 0)
    attr.set_scales_mask(dnnq.DNNL_ARG_WEIGHTS, weights_mask)
    attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)
    if src_zp:
        attr.set_zero_points_mask(dnnq.DNNL_ARG_SRC, 0)
    if dst_zp:
        attr.set_zero_points_mask(dnnq.DNNL_ARG_DST, 0)
    po = dnnq.PostOps()
    for op in post_ops:
        if op[0] == "sum":
            po.append_sum(op[1], op[2])
        else:
            po.append_eltwise(*op)
    attr.set_post_ops(po)
    return attr


def _conv(cap, shape, OC, sdt, ddt, post_ops=(), src_zp=False, threads=1):
    """A 1x1 channels-last convolution created under the ISA cap `cap`."""
    N, IC, H, W = shape
    old = dnnq.set_max_cpu_isa(cap)
    try:
        attr = _attr(1, src_zp, ddt in ("u8", "s8"), post_ops)
        return dnnq.Convolution(MD(shape, sdt, "nhwc"), MD((OC, IC, 1, 1), "s8"),
                                MD((N, OC, H, W), ddt, "nhwc"), bias_desc=MD((OC,), "f32"),
                                strides=1, padding_l=0, padding_r=0, attr=attr)
    finally:
        dnnq.set_max_cpu_isa(old)


def _run(conv, src, w, bias, ws, prev, src_zp, threads, dst_scale=2.5, dst_zp=None):
    """One execution: source scale 0.05, weights scales ws, the dst scale, zero points where
    given (None: none), the dst's previous values for a sum where given."""
    a = {dnnq.DNNL_ARG_SRC: src, dnnq.DNNL_ARG_WEIGHTS: conv.prepare_weights(w),
         dnnq.DNNL_ARG_BIAS: bias,
         dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_SRC: np.float32([0.05]),
         dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_WEIGHTS: ws,
         dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST: np.float32([dst_scale])}
    if src_zp is not None:
        a[dnnq.DNNL_ARG_ATTR_ZERO_POINTS | dnnq.DNNL_ARG_SRC] = np.int32([src_zp])
    if dst_zp is not None:
        a[dnnq.DNNL_ARG_ATTR_ZERO_POINTS | dnnq.DNNL_ARG_DST] = np.int32([dst_zp])
    if prev is not None:
        a[dnnq.DNNL_ARG_DST] = prev.copy()
    with dnnq_threads(threads):
        return conv.execute(a)


def _run_1x1(conv, src, w, bias, ws, prev, src_zp, threads):
    """_run as the 1x1 tests take it: source zero point 9 where asked, dst zero point 5 for
    an 8-bit dst (the attribute _conv sets)."""
    return _run(conv, src, w, bias, ws, prev, 9 if src_zp else None, threads,
                dst_zp=5 if conv.dst_desc.dt in ("u8", "s8") else None)


_RNG = np.random.default_rng(2024)


def _data(shape, OC, sdt, ddt, with_prev):
    N, IC, H, W = shape
    lo, hi = (0, 256) if sdt == "u8" else (-128, 128)
    src = _RNG.integers(lo, hi, shape).astype(np.uint8 if sdt == "u8" else np.int8)
    w = _RNG.integers(-128, 128, (OC, IC, 1, 1)).astype(np.int8)
    bias = _RNG.normal(0, 50, OC).astype(np.float32)
    ws = _RNG.uniform(0.0005, 0.004, OC).astype(np.float32)
    prev = None
    if with_prev:
        prev = _RNG.integers(0, 100, (N, OC, H, W)).astype(
            {"u8": np.uint8, "s8": np.int8, "f32": np.float32, "s32": np.int32}[ddt])
    return src, w, bias, ws, prev


# sizes below, at and past the AMX tiles: 16 / 32 rows (pixels), 64-byte k blocks (IC),
# 16-column tiles in 32 / 64-column panels (OC)
SHAPES = [((1, 16, 2, 4), 16), ((1, 63, 3, 5), 17), ((1, 64, 4, 4), 33), ((1, 65, 1, 17), 64),
          ((2, 129, 4, 8), 65), ((1, 200, 5, 7), 130), ((1, 3, 11, 3), 5), ((1, 256, 8, 5), 48),
          ((3, 40, 2, 16), 96), ((1, 480, 3, 12), 120)]


@emulated_only
@pytest.mark.parametrize("shape,OC", SHAPES)
@pytest.mark.parametrize("sdt,ddt", [("u8", "u8"), ("s8", "s8"), ("u8", "f32"), ("s8", "s32")])
def test_one_by_one_amx_equals_avx512_vnni(shape, OC, sdt, ddt):
    """Every 1x1 convolution of 8 pixels or more runs the AMX GEMM and gives the AVX512-VNNI
    kernels' bits (s8 sources go through the XOR-ed staging copy)."""
    data = _data(shape, OC, sdt, ddt, False)
    amx = _conv("avx512_core_amx", shape, OC, sdt, ddt)
    vnni = _conv("avx512_core_vnni", shape, OC, sdt, ddt)
    assert amx.impl_info.startswith("avx512_core_amx:brgconv_1x1"), amx.impl_info
    assert vnni.impl_info.startswith("avx512_core_vnni:"), vnni.impl_info
    got = _run_1x1(amx, *data, False, 1)
    want = _run_1x1(vnni, *data, False, 1)
    np.testing.assert_array_equal(got, want)
    if ddt == "s32":  # the integer sums themselves, against numpy
        src, w, bias, ws, _ = data
        acc = np.einsum("nchw,oc->nohw", src.astype(np.int64), w[:, :, 0, 0].astype(np.int64))
        ref = (acc.astype(np.float64) * (0.05 * ws.astype(np.float64))[None, :, None, None]
               + bias[None, :, None, None]) / 2.5
        assert np.abs(got.astype(np.float64) - np.rint(ref)).max() <= 1


@emulated_only
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("post_ops", [
    (("relu", 0.0, 0.0),),
    (("clip", 0.0, 6.0), ("hardswish", 1 / 6, 0.5)),
    (("sum", 0.75, 3), ("relu", 0.0, 0.0)),
], ids=["relu", "chain", "sum"])
def test_one_by_one_amx_post_ops_zero_points_threads(post_ops, threads):
    """Post-op chains, the sum post-op, a source zero point and 1 - 3 threads: the AMX level
    equals the AVX512-VNNI one."""
    for shape, OC in SHAPES[1:6]:
        with_sum = post_ops[0][0] == "sum"
        data = _data(shape, OC, "u8", "u8", with_sum)
        amx = _conv("avx512_core_amx", shape, OC, "u8", "u8", post_ops, src_zp=True)
        vnni = _conv("avx512_core_vnni", shape, OC, "u8", "u8", post_ops, src_zp=True)
        assert amx.impl_info.startswith("avx512_core_amx:"), amx.impl_info
        np.testing.assert_array_equal(_run_1x1(amx, *data, True, threads),
                                      _run_1x1(vnni, *data, True, 1))


@emulated_only
def test_amx_keeps_the_vnni_kernels_below_8_pixels_and_for_other_convolutions():
    """Below 8 pixels (per image), for fewer than 16 bytes of K per tap and for depthwise
    convolutions the AMX level runs the AVX512-VNNI kernels; a 3x3 convolution of 32 input
    channels runs AMX tiles."""
    assert not _conv("avx512_core_amx", (4, 64, 1, 7), 64, "u8", "u8").impl_info.startswith(
        "avx512_core_amx")
    amx = "avx512_core_amx"
    # (32 channels: a kernel row's three taps folded into one K of 96 at this level)
    assert _kxk(amx, (1, 32, 9, 9), 32, 3, 1, 1, "u8", "s32").impl_info == \
        "avx512_core_amx:brgconv_fold"
    assert _kxk(amx, (1, 64, 9, 9), 32, 3, 1, 1, "u8", "s32").impl_info == \
        "avx512_core_amx:brgconv"
    assert _kxk(amx, (1, 32, 2, 3), 32, 3, 1, 1, "u8", "s32").impl_info.startswith(
        "avx512_core_vnni:")  # 6 pixels
    # 8 input channels per group: 8 bytes of K per tap (16: AMX)
    assert _kxk(amx, (1, 32, 9, 9), 32, 3, 1, 1, "u8", "s32", groups=4).impl_info.startswith(
        "avx512_core_vnni:")
    assert _kxk(amx, (1, 32, 9, 9), 32, 3, 1, 1, "u8", "s32", groups=2).impl_info.startswith(
        "avx512_core_amx:")
    assert _kxk(amx, (1, 32, 9, 9), 32, 3, 1, 1, "u8", "s32", groups=32).impl_info.startswith(
        "avx512_core_vnni:dw")


def _kxk(cap, shape, OC, k, stride, pad, sdt, ddt, post_ops=(), src_zp=None, groups=1,
         dilation=0):
    """A k x k channels-last convolution created under the ISA cap `cap` (src_zp: a source
    zero point given at execution, mask 0)."""
    N, IC, H, W = shape
    OH = (H + 2 * pad - (k - 1) * (dilation + 1) - 1) // stride + 1
    OW = (W + 2 * pad - (k - 1) * (dilation + 1) - 1) // stride + 1
    wdims = (OC, IC, k, k) if groups == 1 else (groups, OC // groups, IC // groups, k, k)
    old = dnnq.set_max_cpu_isa(cap)
    try:
        attr = _attr(3 if groups > 1 else 1, src_zp is not None, False, post_ops)  # per OC
        return dnnq.Convolution(MD(shape, sdt, "nhwc"), MD(wdims, "s8"),
                                MD((N, OC, OH, OW), ddt, "nhwc"), bias_desc=MD((OC,), "f32"),
                                strides=stride, padding_l=pad, padding_r=pad,
                                dilates=dilation, attr=attr)
    finally:
        dnnq.set_max_cpu_isa(old)


def _run_kxk(conv, src, w, bias, ws, src_zp, prev, threads):
    return _run(conv, src, w, bias, ws, prev, src_zp, threads, dst_scale=6.5)


def _sums_numpy(src, w, stride, pad, dilation, groups, src_zp):
    """The exact integer sums of a grouped 2-D convolution (N, OC, OH, OW), int64."""
    x = src.astype(np.int64) - (src_zp or 0)
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    G = groups
    wg = w.reshape((G, -1) + w.shape[-3:]).astype(np.int64)  # (G, OCg, ICg, k, k)
    k, d = w.shape[-1], dilation + 1
    N, IC, H, W = x.shape
    OH = (H - (k - 1) * d - 1) // stride + 1
    OW = (W - (k - 1) * d - 1) // stride + 1
    out = np.zeros((N, G, wg.shape[1], OH, OW), np.int64)
    xg = x.reshape(N, G, IC // G, H, W)
    for i in range(k):
        for j in range(k):
            win = xg[:, :, :, i * d:i * d + stride * (OH - 1) + 1:stride,
                     j * d:j * d + stride * (OW - 1) + 1:stride]
            out += np.einsum("ngchw,goc->ngohw", win, wg[:, :, :, i, j])
    return out.reshape(N, -1, OH, OW)


# k x k convolutions on AMX tiles (the tiled path): pixels per output row below, at and past
# 16 / 32 (a micro-tile's rows), bytes of K per tap at and around 32 / 64 / 128 (k blocks and
# their tails), output channels within and past 16 / 32 / 64-column panels; padded borders
# (zero-point rows), strides, dilation, groups of 32 or more channels, folded kernel rows
KXK = [
    # (shape, OC, k, stride, pad, groups, dilation)
    ((1, 32, 5, 17), 16, 3, 1, 1, 1, 0),
    ((1, 96, 12, 40), 24, 3, 1, 1, 1, 0),
    ((2, 64, 9, 9), 64, 3, 2, 1, 1, 0),
    ((1, 130, 6, 33), 70, 3, 1, 1, 1, 0),
    ((1, 48, 20, 20), 33, 5, 1, 2, 1, 0),
    ((1, 40, 3, 50), 130, 3, 1, 0, 1, 0),
    ((1, 256, 7, 7), 40, 3, 1, 1, 1, 0),
    ((1, 33, 4, 64), 17, 1, 2, 0, 1, 0),
    ((1, 64, 10, 31), 32, 3, 1, 2, 1, 1),
    ((1, 128, 6, 16), 96, 3, 1, 1, 2, 0),
    ((1, 16, 12, 40), 80, 3, 1, 1, 1, 0),     # 16 channels: kernel rows folded (K = 48)
    ((3, 63, 4, 15), 65, 3, 1, 1, 1, 0),
    ((1, 24, 8, 48), 24, 3, 1, 1, 1, 0),      # 24 bytes of K per tap: one staged block
    ((1, 64, 5, 20), 64, 3, 1, 1, 4, 0),      # 16 channels per group
    ((1, 96, 9, 70), 24, 3, 1, 1, 1, 0),      # 96 channels: kernel rows folded (K = 288)
    ((2, 40, 7, 33), 17, 3, 2, 1, 1, 0),      # folded, stride 2
]


def _kxk_data(shape, OC, k, groups, sdt, ddt, with_prev, dst_shape):
    N, IC, H, W = shape
    lo, hi = (0, 256) if sdt == "u8" else (-128, 128)
    src = _RNG.integers(lo, hi, shape).astype(np.uint8 if sdt == "u8" else np.int8)
    wdims = (OC, IC, k, k) if groups == 1 else (groups, OC // groups, IC // groups, k, k)
    w = _RNG.integers(-128, 128, wdims).astype(np.int8)
    bias = _RNG.normal(0, 50, OC).astype(np.float32)
    ws = _RNG.uniform(0.0005, 0.004, OC).astype(np.float32)
    prev = None
    if with_prev:
        prev = _RNG.integers(0, 100, dst_shape).astype(
            {"u8": np.uint8, "s8": np.int8, "f32": np.float32, "s32": np.int32}[ddt])
    return src, w, bias, ws, prev


@emulated_only
@pytest.mark.parametrize("case", KXK, ids=[f"{c[0]}x{c[1]}k{c[2]}s{c[3]}" for c in KXK])
@pytest.mark.parametrize("sdt,ddt", [("u8", "u8"), ("s8", "f32"), ("u8", "s32"), ("s8", "s32")])
def test_kxk_amx_tiles_equal_avx512_vnni_and_numpy(case, sdt, ddt):
    """k x k convolutions of 16 bytes of K per tap or more run AMX tiles and give the
    AVX512-VNNI kernels' bits; their integer sums equal numpy's."""
    shape, OC, k, stride, pad, groups, dil = case
    amx = _kxk("avx512_core_amx", shape, OC, k, stride, pad, sdt, ddt, groups=groups,
               dilation=dil)
    vnni = _kxk("avx512_core_vnni", shape, OC, k, stride, pad, sdt, ddt, groups=groups,
                dilation=dil)
    assert amx.impl_info.startswith("avx512_core_amx:brgconv"), amx.impl_info
    assert vnni.impl_info.startswith("avx512_core_vnni:"), vnni.impl_info
    src, w, bias, ws, _ = _kxk_data(shape, OC, k, groups, sdt, ddt, False, None)
    got = _run_kxk(amx, src, w, bias, ws, None, None, 1)
    np.testing.assert_array_equal(got, _run_kxk(vnni, src, w, bias, ws, None, None, 1))
    if ddt == "s32":  # the sums themselves: s32 = rne(acc * 0.05 * ws + bias) / 6.5 ...
        acc = _sums_numpy(src, w, stride, pad, dil, groups, None).astype(np.float64)
        ref = (acc * (0.05 * ws.astype(np.float64))[None, :, None, None] +
               bias[None, :, None, None]) / 6.5
        assert np.abs(got.astype(np.float64) - ref).max() <= 1


@emulated_only
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("post_ops,src_zp", [
    ((("relu", 0.0, 0.0),), None),
    ((("clip", 0.0, 6.0), ("hardswish", 1 / 6, 0.5)), 7),
    ((("sum", 0.75, 3), ("relu", 0.0, 0.0)), 300),   # a zero point u8 cannot hold
], ids=["relu", "chain-zp", "sum-zp300"])
def test_kxk_amx_post_ops_zero_points_threads(post_ops, src_zp, threads):
    """Post-op chains, the sum post-op, source zero points (one the source type cannot hold:
    per-tap corrections at the borders) and 1 - 3 threads: the AMX level equals the
    AVX512-VNNI one."""
    for shape, OC, k, stride, pad, groups, dil in KXK[:7]:
        N, _, H, W = shape
        OH = (H + 2 * pad - (k - 1) * (dil + 1) - 1) // stride + 1
        OW = (W + 2 * pad - (k - 1) * (dil + 1) - 1) // stride + 1
        with_sum = post_ops[0][0] == "sum"
        data = _kxk_data(shape, OC, k, groups, "u8", "u8", with_sum, (N, OC, OH, OW))
        src, w, bias, ws, prev = data
        amx = _kxk("avx512_core_amx", shape, OC, k, stride, pad, "u8", "u8", post_ops,
                   src_zp, groups, dil)
        vnni = _kxk("avx512_core_vnni", shape, OC, k, stride, pad, "u8", "u8", post_ops,
                    src_zp, groups, dil)
        assert amx.impl_info.startswith("avx512_core_amx:"), amx.impl_info
        np.testing.assert_array_equal(_run_kxk(amx, src, w, bias, ws, src_zp, prev, threads),
                                      _run_kxk(vnni, src, w, bias, ws, src_zp, prev, 1))


def _deconv_ks(cap, shape, OC, k, sdt, ddt, src_zp):
    """A kernel = stride deconvolution (the deconv_ks kernel) created under the cap `cap`."""
    N, IC, H, W = shape
    old = dnnq.set_max_cpu_isa(cap)
    try:
        attr = _attr(1, src_zp is not None, False, (("relu", 0.0, 0.0),))
        return dnnq.Deconvolution(MD(shape, sdt, "nhwc"), MD((OC, IC, k, k), "s8"),
                                  MD((N, OC, H * k, W * k), ddt, "nhwc"),
                                  bias_desc=MD((OC,), "f32"), strides=k, padding_l=0,
                                  padding_r=0, attr=attr)
    finally:
        dnnq.set_max_cpu_isa(old)


@emulated_only
@pytest.mark.parametrize("shape,OC,k", [((1, 24, 5, 40), 24, 2), ((2, 64, 3, 9), 8, 2),
                                        ((1, 33, 4, 17), 21, 3), ((1, 130, 2, 33), 2, 2),
                                        ((1, 16, 6, 70), 32, 2)])
@pytest.mark.parametrize("sdt,ddt,src_zp", [("u8", "u8", None), ("s8", "f32", 5),
                                             ("u8", "s32", 3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_deconv_kernel_stride_amx_equals_avx512_vnni(shape, OC, k, sdt, ddt, src_zp, threads):
    """Deconvolutions whose kernel is the stride (deconv_ks) run their GEMMs on AMX tiles of
    up to 32 source pixels and give the AVX512-VNNI kernels' bits (s8 sources and zero
    points: the left-out taps' products computed on AMX tiles too)."""
    N, IC, H, W = shape
    lo, hi = (0, 256) if sdt == "u8" else (-128, 128)
    src = _RNG.integers(lo, hi, shape).astype(np.uint8 if sdt == "u8" else np.int8)
    w = _RNG.integers(-128, 128, (OC, IC, k, k)).astype(np.int8)
    bias = _RNG.normal(0, 50, OC).astype(np.float32)
    ws = _RNG.uniform(0.0005, 0.004, OC).astype(np.float32)
    amx = _deconv_ks("avx512_core_amx", shape, OC, k, sdt, ddt, src_zp)
    vnni = _deconv_ks("avx512_core_vnni", shape, OC, k, sdt, ddt, src_zp)
    assert amx._impl.name == "deconv_ks_amx", amx._impl.name
    assert vnni._impl.name == "deconv_ks", vnni._impl.name
    np.testing.assert_array_equal(_run_kxk(amx, src, w, bias, ws, src_zp, None, threads),
                                  _run_kxk(vnni, src, w, bias, ws, src_zp, None, 1))


def _amx_case(rng, mr, Ks, modes, s8, accumulate, width):
    """One call of the AMX batch-reduce kernel against numpy int64 (wrapping s32): pairs of
    dense A (a row stride of 0 too: the zero-point row of padded taps), A by row pointers, or
    pointers with rows at a shared padding row; each panel followed by non-zero bytes up to
    its last whole k block, which the zero-padded A must cancel."""
    pad_off = 8192 - 700
    vals = source_bytes(rng, 8192, pad_off, 600, s8)
    pairs, ref = [], np.zeros((mr, 64), np.int64)
    for K, mode in zip(Ks, modes):
        w = rng.integers(-128, 128, (K, 64)).astype(np.int8)
        packed, _ = _gemm.pack_weights_vnni(w)
        K4 = (K + 3) // 4
        panel = rng.integers(-128, 128, -(-K // 64) * 64 * 64).astype(np.int8)
        panel[:K4 * 256] = packed[:K4 * 256]
        if mode in ("dense", "stride0"):
            lda = 0 if mode == "stride0" else K + int(rng.integers(0, 70))
            off = int(rng.integers(0, 300))
            offs = off + lda * np.arange(mr)
            pairs.append((None, (off, lda), panel, K))
        else:
            offs = rng.integers(0, pad_off - K, mr).astype(np.int64)
            if mode == "padded":
                offs[rng.random(mr) < 0.5] = pad_off
            pairs.append((offs, None, panel, K))
        a = np.stack([vals[o:o + K] for o in offs]).astype(np.int64) + (128 if s8 else 0)
        ref += a @ w.astype(np.int64)
    c0 = rng.integers(-2**20, 2**20, (mr, 64)).astype(np.int32)
    c = c0.copy()
    assert _gemm.brgemm_micro_kernel(_plan.ISA_CODE["avx512_core_amx"], vals.view(np.uint8),
                                     pairs, s8, accumulate, c, width, amx=True)
    expect = ref + (c0 if accumulate else 0)
    expect = (expect.astype(np.uint64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(c[:, :width], expect[:, :width])


@emulated_only
@pytest.mark.parametrize("width", [64, 32, 16])
@pytest.mark.parametrize("s8", [False, True])
def test_amx_batch_reduce_kernel_against_numpy(width, s8):
    """Every row count up to 32 (one and two 16-row A tiles), K below / at / past 64-byte k
    blocks, every A mode, overwrite and accumulate, several pairs a call."""
    rng = np.random.default_rng(31 + width + s8)
    for mr in range(1, _gemm.AMX_BR_ROWS + 1):
        for K in (1, 3, 4, 17, 63, 64, 65, 128, 130):
            mode = ("dense", "stride0", "indirect", "padded")[(mr + K) % 4]
            _amx_case(rng, mr, [K], [mode], s8, bool((mr * K) % 2), width)
    for _ in range(20):
        mr = int(rng.integers(1, _gemm.AMX_BR_ROWS + 1))
        n = int(rng.integers(1, 10))
        _amx_case(rng, mr, [int(k) for k in rng.integers(1, 200, n)],
                  [str(m) for m in rng.choice(["dense", "stride0", "indirect", "padded"], n)],
                  s8, bool(rng.integers(0, 2)), width)
