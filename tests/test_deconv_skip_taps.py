"""The deconvolution's column-phase driver (ukernels/conv_deconv.c): along an output row the
pixels of one column phase read consecutive source pixels for every tap that reaches them,
so each run is a dense batch-reduce GEMM over those taps only; the taps left out read only
the zero-point row, whose products are added back when it is not zero bytes (s8 sources,
zero points).  `_conv.set_skip_zero_taps(False)` runs every tap in the general driver
instead.

Swept against oneDNN (numpy's model where oneDNN is not there), both ways: strides 1 - 4
(kernels shorter than, equal to and longer than the stride: rows no tap reaches), dilation,
asymmetric and large paddings, 1-D / 2-D / 3-D, groups and channel counts around the
micro-kernel's 4 / 32 / 64 blocks, output rows wider than a tile, several images, u8 sources
with zero point 0, s8 sources and non-zero zero points, weights zero points, f32 / s32 / u8 /
s8 dsts with post-ops, 1 and 2 threads.  (Where oneDNN's tap-less rows bug applies, the
reference is numpy's model.)"""
import itertools

import numpy as np
import pytest

import dnnq
from dnnq.primitives._kernels import _conv
from test_convolution import Case, assert_same
from test_convolution_dw3x3 import reference

GEOMETRIES = [
    # (isp, k, s, d, pl, pr)
    ((14, 14), (4, 4), (2, 2), (0, 0), (1, 1), (1, 1)),   # k = 2 s: two taps per dim reach
    ((9, 11), (2, 2), (2, 2), (0, 0), (0, 0), (0, 0)),    # one tap per pixel
    ((7, 9), (3, 3), (2, 2), (0, 0), (1, 1), (1, 1)),     # one or two taps, alternating
    ((6, 8), (1, 2), (3, 2), (0, 0), (0, 1), (0, 0)),     # kernel < stride: tap-less rows
    ((5, 23), (3, 5), (2, 3), (1, 0), (2, 1), (1, 3)),    # dilation, asymmetric padding
    ((4, 40), (3, 3), (4, 2), (0, 0), (2, 2), (0, 2)),    # rows past two micro-tiles
    ((17,), (4,), (2,), (0,), (1,), (2,)),                # 1-D
    ((3, 4, 5), (2, 3, 2), (2, 1, 2), (0, 0, 1), (0, 1, 1), (1, 1, 0)),  # 3-D
    ((5, 5), (3, 3), (1, 1), (0, 0), (1, 1), (1, 1)),     # stride 1: only the borders skip
    # kernel = stride: one tap per pixel (the column-phase driver's single pairs)
    ((5, 7), (3, 3), (3, 3), (0, 0), (1, 0), (2, 1)),     # asymmetric padding
    ((3, 45), (2, 2), (2, 2), (0, 0), (0, 0), (0, 0)),    # phase runs past a 32-row tile
    ((19,), (4,), (4,), (0,), (1,), (2,)),                # 1-D
    ((2, 3, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), (0, 0, 0)),  # 3-D
]

ONE_TAP = [i for i, (_, k, s, d, _, _) in enumerate(GEOMETRIES)
           if tuple(k) == tuple(s) and not any(d)]

CONFIGS = [
    # (src_dt, src_zp, dst_dt, G, ICg, OCg, bias, post-ops)
    ("u8", 0, "s32", 1, 32, 64, None, []),
    ("u8", 0, "u8", 1, 17, 65, "f32", [("eltwise", "relu", 0.0, 0.0)]),
    ("u8", 0, "f32", 3, 5, 7, "f32", [("eltwise", "linear", 0.5, 1.0)]),
    ("u8", 0, "s8", 1, 64, 16, "s32", [("eltwise", "relu", 0.0, 0.0)]),
    ("s8", 0, "s32", 1, 20, 24, None, []),
    ("u8", 9, "s32", 2, 8, 8, None, []),
]


@pytest.fixture(params=[True, False], ids=["skip", "all_taps"])
def skip_taps(request):
    old = _conv.set_skip_zero_taps(request.param)
    cache = dnnq.set_primitive_cache_capacity(0)
    yield request.param
    dnnq.set_primitive_cache_capacity(cache)
    _conv.set_skip_zero_taps(old)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
def test_deconv_skip_taps(skip_taps, geometry, threads):
    isp, k, s, d, pl, pr = GEOMETRIES[geometry]
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for i, (src_dt, zp, dst_dt, G, ICg, OCg, bias, post) in enumerate(CONFIGS):
            rng = np.random.default_rng([geometry, threads, i])
            q = {"src_scales": [0.05], "wei_scales": [0.01], "dst_scales": [2.0]}
            if zp:
                q["src_zp"] = [zp]
            c = Case(rng, mb=1 + i % 2, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl, pr=pr,
                     d=d, src_dt=src_dt, dst_dt=dst_dt, deconv=True, grouped=G > 1,
                     bias_dt=bias, q=q, post_ops=post)
            out, _ = c.run_dnnq()
            # oneDNN's tap-less rows bug (kernel shorter than the stride along d or h, with an
            # s8 source or a zero point: docs/convolution.md): numpy's model there
            bug = (src_dt == "s8" or zp) and any(
                kk < ss for kk, ss in zip(k[:-1], s[:-1]))
            assert_same(out, c.run_numpy() if bug else reference(c))
    finally:
        dnnq.set_num_threads(old)


def test_phase_path_taken():
    """every (non-depthwise) deconvolution plan takes the column-phase driver; it then runs for
    u8 sources with zero point 0 (the cases above compare it with oneDNN)"""
    rng = np.random.default_rng(5)
    assert len(ONE_TAP) >= 4
    for isp, k, s, d, pl, pr in GEOMETRIES:
        c = Case(rng, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d, ICg=4, OCg=4, deconv=True)
        _, p = c.run_dnnq()
        assert p._plan.phase_deconv() or p._impl.kernel == "deconv_ks", (isp, k, s)


@pytest.mark.parametrize("tag", [None, "channels_last"])
@pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
def test_phase_post_ops(isa, skip_taps, geometry, tag):
    """the phase runs write their rows s pixels apart (and are cut where taps leave the source;
    with an s8 source or a zero point each piece adds the zero-point row's products of the taps
    it leaves out): per-pixel binary inputs and the sum's
    previous dst are read at the same places (fused epilogue at AVX-512, else the tile
    epilogue with its strides scaled; ICg = 6 has a K % 4 tail)"""
    isp, k, s, d, pl, pr = GEOMETRIES[geometry]
    rng = np.random.default_rng([geometry, 7])
    if tag:
        tag = {1: "nwc", 2: "nhwc", 3: "ndhwc"}[len(isp)]
    for (ICg, OCg, dst_dt), (src_dt, zp) in itertools.product(
            ((6, 40, "u8"), (16, 70, "s8"), (8, 9, "f32")), (("u8", 0), ("s8", 0), ("u8", 7))):
        # s8 sources and zero points: the pieces' compensation (deconv_zc)
        q = {"wei_scales": [0.01], "dst_scales": [0.5]}
        if zp:
            q["src_zp"] = [zp]
        c = Case(rng, mb=2, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d,
                 deconv=True, src_tag=tag, dst_tag=tag, bias_dt="f32", dst_dt=dst_dt,
                 src_dt=src_dt, q=q)
        src1 = rng.normal(0, 4, c.dst_shape).astype(np.float32)
        chan = rng.normal(0, 4, (1, OCg) + (1,) * len(isp)).astype(np.float32)
        c.post_ops = [("binary", "add", src1), ("binary", "mul", chan),
                      ("sum", 1.0, 0), ("eltwise", "relu", 0.0, 0.0)]
        # (integer-valued f32 previous contents: oneDNN fuses the sum as one FMA, dnnq's
        # epilogue multiplies then adds; exact either way for these, test_sum_post_op)
        if dst_dt == "f32":
            c.dst_prev = np.rint(rng.normal(0, 8, c.dst_shape)).astype(np.float32)
        else:
            c.dst_prev = rng.integers(0, 100, c.dst_shape).astype(np.dtype(dst_dt.replace(
                "u8", "uint8").replace("s8", "int8")))
        out, _ = c.run_dnnq()
        bug = (src_dt == "s8" or zp) and any(kk < ss for kk, ss in zip(k[:-1], s[:-1]))
        assert_same(out, c.run_numpy() if bug else reference(c))


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_balanced_pixel_blocks(threads):
    """a deconvolution's pixel blocks: multiples of the micro-kernel's rows, near the asked
    size, and the item count a multiple of the threads (static runs of equal work)"""
    from dnnq.primitives.convolution import _balanced_block
    for npix in (7, 100, 784, 3136, 3137, 12544):
        for units in (1, 2, 3):
            mc = _balanced_block(npix, 192, 6, units, threads)
            assert mc % 6 == 0 and 0 < mc <= 192
            items = units * -(-npix // mc)
            if npix >= 6 * threads * 4:
                assert items % threads == 0, (npix, units, mc)


@pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
def test_phase_weights_zero_points_vs_numpy(skip_taps, geometry):
    """weights zero points (beyond oneDNN): the phase runs stage the per-pixel source sums the
    epilogue subtracts (strided_epilogue_args), every pixel's at its own place"""
    isp, k, s, d, pl, pr = GEOMETRIES[geometry]
    rng = np.random.default_rng([geometry, 11])
    for src_dt, zp in (("u8", 0), ("s8", 0), ("u8", 5)):
        q = {"wei_zp": rng.integers(-9, 9, 2 * 7).astype(np.int32), "wei_zp_mask": 3}
        if zp:
            q["src_zp"] = [zp]
        c = Case(rng, mb=2, G=2, ICg=6, OCg=7, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d,
                 src_dt=src_dt, dst_dt="s32", deconv=True, grouped=True, q=q)
        assert_same(c.run_dnnq()[0], c.run_numpy())
