"""Channels-last 8-bit averages over large windows (the window rows summed as byte streams,
tk_pool_stream8.h; one output's rows split over threads when there are fewer outputs than
threads): bit-identical to oneDNN and to the exact-sum model at 1, 2 and 3 threads.

Channel counts below, at and past the vector widths (units of lcm(C, vector) bytes, of whole
pixels with a partial vector, or channel slices of one pixel); window rows that do not end on a
unit boundary; padded borders; 16-bit lanes past their flush interval; s32 sums near 2^31."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as R
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A
from dnnq.primitives._kernels import _toolkit
from test_pooling import CL, F, NP, _threads, gen, model_cl_average, out_shape, to_cl

CHANNELS = (1, 3, 15, 16, 17, 24, 63, 64, 65, 96, 130, 600)
AVG = ("avg_include_padding", "avg_exclude_padding")
LINEAR = ("eltwise", "linear", 7.5, -900.0)  # a folded requantize, as PP-OCR's pools


@pytest.fixture(autouse=True)
def split_small_windows():
    """Split the rows of any window over the threads (by default only windows of 256 KB or
    more are), so that the small windows below exercise the split's boundaries."""
    old = _toolkit.pool_split_min_bytes(1)
    yield
    _toolkit.pool_split_min_bytes(old)


def _pool(x, alg, geom, post=None, dst_dt=None):
    shape, k, s, d, pl, pr = geom
    dt = dnnq.as_dt(x.dtype)
    attr = None
    if post:
        ops = PostOps()
        ops.append_eltwise(*post[1:])
        attr = PrimitiveAttr()
        attr.set_post_ops(ops)
    tag = CL[x.ndim]
    p = dnnq.Pooling(alg, MD(shape, dt, tag), MD(out_shape(*geom), dst_dt or dt, tag),
                     kernel=k, strides=s, dilation=d, padding_l=pl, padding_r=pr, attr=attr)
    return p.execute({A.DNNL_ARG_SRC: x})


def _geoms(C):
    """(geometry, post-op): global windows of two images (fewer outputs than 3 threads) with
    and without a post-op (> 256 taps: not the no-post-op int8 kernel), a strided padded
    window, a dilated one (rows of taps, adjacent along w), a 3-D and a 1-D one."""
    yield ((2, C, 5, 13), (5, 13), 1, 0, 0, 0), LINEAR
    yield ((2, C, 9, 31), (9, 31), 1, 0, 0, 0), None
    yield ((1, C, 9, 11), (5, 7), (3, 4), 0, (2, 3), (2, 1)), LINEAR
    yield ((1, C, 8, 11), (3, 9), (2, 2), (1, 0), (1, 2), (1, 2)), LINEAR
    if C in (3, 17, 96, 130):
        yield ((1, C, 3, 4, 7), (3, 4, 5), (1, 1, 2), 0, (0, 1, 1), (0, 0, 1)), LINEAR
        yield ((2, C, 40), 30, 10, 0, 3, 3), LINEAR


@R.requires_onednn
@pytest.mark.parametrize("dt", ["u8", "s8"])
def test_large_window_average_matches_onednn(isa, rng_seed, dt):
    rng = np.random.default_rng(rng_seed)
    for C in CHANNELS:
        for geom, post in _geoms(C):
            shape, k, s, d, pl, pr = geom
            x = to_cl(gen(rng, dt, shape))
            for alg in AVG:
                ref = R.pooling(x, alg, kernel=k, strides=s, dilation=d, padding_l=pl,
                                padding_r=pr, channels_last=True,
                                post_ops=[post] if post else ())
                for nt in (1, 2, 3):
                    with _threads(nt):
                        out = _pool(x, alg, geom, post)
                    assert np.array_equal(out, ref), (isa, dt, C, geom, alg, nt,
                                                      int((out != ref).sum()))


def _extremes(rng, dt, shape):
    lo, hi = (-128, 127) if dt == "s8" else (0, 255)
    yield np.full(shape, lo if dt == "s8" else hi, NP[dt])
    yield rng.choice(np.array([lo, hi, lo + 1, hi - 1], NP[dt]), size=shape)


@pytest.mark.parametrize("dt", ["u8", "s8"])
def test_large_window_average_flushes_lanes(isa, rng_seed, dt):
    """Windows of more than 256 units per lane (the 16-bit lanes' flush interval) at the
    extremes of the data type, into f32 (the unrounded average): the exact sum times
    f32(1 / count) of the model, at 1 and 2 threads."""
    rng = np.random.default_rng(rng_seed)
    for shape in ((1, 1, 130, 131), (1, 3, 300, 200), (1, 96, 21, 30), (1, 600, 17, 18)):
        H, W = shape[2:]
        for x in _extremes(rng, dt, shape):
            for alg in AVG:
                want = model_cl_average(x, alg, (H, W), (1, 1), (0, 0), (0, 0))
                for nt in (1, 2):
                    with _threads(nt):
                        out = _pool(to_cl(x), alg, (shape, (H, W), 1, 0, 0, 0), dst_dt="f32")
                    assert np.array_equal(out, want), (isa, dt, shape, alg, nt)


@pytest.mark.parametrize("dt", ["u8", "s8"])
def test_large_window_average_near_s32_limit(isa, dt):
    """A window of 2900 * 2900 taps of 255 (s8: -128): sums of +-2.1e9 / -1.1e9, the largest
    the s32 accumulation of oneDNN's kernels holds, exact."""
    v = 255 if dt == "u8" else -128
    x = to_cl(np.full((1, 1, 2900, 2900), v, NP[dt]))
    want = np.full((1, 1, 1, 1), F(v * 2900 * 2900) * (F(1) / F(2900 * 2900)), F)
    for nt in (1, 2):
        with _threads(nt):
            out = _pool(x, "avg_exclude_padding", (x.shape, (2900, 2900), 1, 0, 0, 0),
                        dst_dt="f32")
        assert np.array_equal(out, want), (isa, dt, nt, out, want)
