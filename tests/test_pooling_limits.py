"""Pooling regressions found by fuzzing: channel sweeps across every vector width of the
channels-last kernels (against oneDNN), and geometries whose sizes do not fit 64-bit
arithmetic or memory (huge kernels, paddings, windows): computed without wrapping, or
rejected at creation with InvalidArguments naming the argument."""
import functools

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD
from dnnq import args as A
import onednn_ref as R

F = np.float32
NP = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "f32": F}
CL = {3: "nwc", 4: "nhwc", 5: "ndhwc"}
# below, at and past every vector width (16 / 32 / 64 lanes) and 64-byte block
CHANNELS = sorted(set(range(1, 20)) | {31, 32, 33, 47, 48, 49, 63, 64, 65, 79, 80, 95, 96,
                                       97, 111, 112, 113, 127, 128, 129, 130})


def _src(dt, C, W=5):
    """A deterministic source (1, C, W) with distinct values per channel and position."""
    v = (np.arange(C * W, dtype=np.int64).reshape(1, C, W) * 7919) % 251 - 120
    if dt == "u8":
        v = v + 120
    if dt == "s32":  # beyond 8 bits, below 2^24 (oneDNN's ref:any rounds s32 through f32)
        v = v * 10007
    return v.astype(NP[dt])


def _cl(x):
    return np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)


@functools.lru_cache(maxsize=None)
def _ref(dt, C, alg, k, pad):
    """oneDNN's result (channels-last src and dst: its jit kernels), logical dims."""
    out = R.pooling(_cl(_src(dt, C)), alg, kernel=k, strides=1, padding_l=pad, padding_r=pad,
                    channels_last=True)
    out = np.array(out)
    out.setflags(write=False)
    return out


@R.requires_onednn
@pytest.mark.parametrize("dt", ["s32", "f32", "s8", "u8"])
def test_channels_last_channel_sweep_matches_onednn(isa, dt):
    """Channels-last source into a plain or a channels-last destination, every C in the
    sweep: r06 (AVX-512 s32 max pooling stepped 64 channels per 16-lane vector, leaving
    channels 16..63 of each 64 unwritten)."""
    for C in CHANNELS:
        x = _cl(_src(dt, C))
        for alg, k, pad in (("max", 1, 0), ("max", 3, 1), ("avg_include_padding", 3, 1)):
            if dt in ("s8", "u8") and C not in (15, 16, 17, 63, 64, 65, 127, 128, 129):
                continue  # 8-bit: the direct kernels have their own sweeps in test_pooling.py
            ref = _ref(dt, C, alg, k, pad)
            for dst_tag in (None, "nwc"):
                p = dnnq.Pooling(alg, MD((1, C, 5), dt, "nwc"), MD((1, C, 5), dt, dst_tag),
                                 strides=1, kernel=k, padding_l=pad, padding_r=pad)
                # a destination full of garbage: every element must be written
                dst = np.full((1, C, 5), 99, NP[dt])
                if dst_tag == "nwc":
                    dst = _cl(dst)
                p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_DST: dst})
                assert np.array_equal(dst, ref), (isa, dt, C, alg, dst_tag,
                                                  np.flatnonzero((dst != ref).any(-1)))
