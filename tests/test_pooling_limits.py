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
import dnnq.testing as R

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
    """Every layout pair (plain or channels-last source into a plain or channels-last
    destination), every C in the sweep.  r06 (AVX-512 s32 max pooling from a channels-last
    source into a plain destination stepped 64 channels per 16-lane vector, leaving channels
    16..63 of each 64 unwritten) slipped through because the older tests used channels-last
    on both sides, or C < 64 for the mixed pairs, and a freshly allocated destination that
    often held the right values by chance: here the destination is pre-filled with garbage."""
    for C in CHANNELS:
        for alg, k, pad in (("max", 1, 0), ("max", 3, 1), ("avg_include_padding", 3, 1)):
            if dt in ("s8", "u8") and C not in (15, 16, 17, 63, 64, 65, 127, 128, 129):
                continue  # 8-bit: the direct kernels have their own sweeps in test_pooling.py
            ref = _ref(dt, C, alg, k, pad)
            for src_tag in (None, "nwc"):
                x = _cl(_src(dt, C)) if src_tag else _src(dt, C)
                for dst_tag in (None, "nwc"):
                    p = dnnq.Pooling(alg, MD((1, C, 5), dt, src_tag), MD((1, C, 5), dt, dst_tag),
                                     strides=1, kernel=k, padding_l=pad, padding_r=pad)
                    # a destination full of garbage: every element must be written
                    dst = np.full((1, C, 5), 99, NP[dt])
                    if dst_tag == "nwc":
                        dst = _cl(dst)
                    p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_DST: dst})
                    assert np.array_equal(dst, ref), (isa, dt, C, alg, src_tag, dst_tag,
                                                      np.flatnonzero((dst != ref).any(-1)))


# ----------------------------------------------------------------------------- huge geometries

def _pool(alg, shape, dt, tag, dst_dt=None, **geom):
    ns = len(shape) - 2
    sp = lambda v: [v] * ns if np.isscalar(v) else list(v)  # noqa: E731
    k, s, pl, pr = (sp(geom[n]) for n in ("kernel", "strides", "padding_l", "padding_r"))
    osp = tuple((shape[2 + i] - k[i] + pl[i] + pr[i]) // s[i] + 1 for i in range(ns))
    return dnnq.Pooling(alg, MD(shape, dt, tag), MD(shape[:2] + osp, dst_dt or dt, tag),
                        **geom)


def _layout(x, tag):
    if tag is None:
        return x
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    return np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))


def test_geometry_beyond_the_limit_is_rejected():
    """r01 / r02: a 2^62 kernel made the tap-list size (channels-last) and the 16 * KW column
    table (plain) wrap: heap overrun, wild writes.  Kernel, stride, dilation + 1 and the
    padded source are limited to 2^61 (sums of three stay inside int64)."""
    big = 2 ** 62
    for tag in (None, "nwc"):
        with pytest.raises(dnnq.InvalidArguments, match=r"kernel got \[4611686018427387904\].*2\^61"):
            _pool("max", (1, 1, 9), "f32", tag, kernel=big, strides=1, padding_l=big - 9,
                  padding_r=0)
        with pytest.raises(dnnq.InvalidArguments, match=r"strides got .*2\^61"):
            dnnq.Pooling("max", MD((1, 1, 9), "f32", tag), MD((1, 1, 1), "f32", tag),
                         kernel=9, strides=big, padding_l=0, padding_r=0)
        with pytest.raises(dnnq.InvalidArguments, match=r"dilation got .*2\^61"):
            dnnq.Pooling("max", MD((1, 1, 9), "f32", tag), MD((1, 1, 9), "f32", tag),
                         kernel=1, strides=1, dilation=2 ** 61)
        with pytest.raises(dnnq.InvalidArguments, match=r"padding_l .*padded source.*2\^61"):
            _pool("max", (1, 1, 9), "f32", tag, kernel=2 ** 61, strides=1,
                  padding_l=2 ** 61 - 8, padding_r=0)
        with pytest.raises(dnnq.InvalidArguments, match="kernel"):
            _pool("max", (1, 1, 9), "f32", tag, kernel=2 ** 64 + 1, strides=1,
                  padding_l=2 ** 64 - 8, padding_r=0)


@pytest.mark.parametrize("dt", ["f32", "s32", "s8", "u8"])
def test_kernel_at_the_limit(isa, dt):
    """The largest accepted kernel (2^61, padded source exactly 2^61): every window holds the
    whole source, so max is the source's max and the include-padding average is sum / 2^61."""
    big = 2 ** 61
    x = (np.arange(9) % 5 + 1).astype(NP[dt]).reshape(1, 1, 9)
    for tag in (None, "nwc"):
        for alg in ("max", "avg_include_padding"):
            p = _pool(alg, (1, 1, 9), dt, tag, "f32", kernel=big, strides=1,
                      padding_l=big - 9, padding_r=0)
            out = p.execute({A.DNNL_ARG_SRC: _layout(x, tag)})
            want = 5.0 if alg == "max" else F(x.sum()) / F(2.0 ** 61)
            assert out.shape == (1, 1, 1) and out[0, 0, 0] == F(want), (tag, alg, out)


def test_window_product_past_2_64(isa):
    """r03 / r05: KD*KH*KW = 2^64 wrapped to 0 -- the u8 ndhwc pooling took the <= 256-tap
    fast path and overflowed its 256-entry stack array; the include-padding average divided
    by 0.  The product is kept exact: the count is f32(2^64)."""
    K, I = [2 ** 21, 2 ** 21, 2 ** 22], [6, 5, 2]
    rng = np.random.default_rng(3)
    for dt in ("u8", "s8"):
        x = rng.integers(0, 100, size=(1, 3, *I)).astype(NP[dt])
        for tag in (None, "ndhwc"):
            geom = dict(kernel=K, strides=1, padding_l=[k - i for k, i in zip(K, I)],
                        padding_r=0)
            p = _pool("max", (1, 3, *I), dt, tag, **geom)
            out = p.execute({A.DNNL_ARG_SRC: _layout(x, tag)})
            assert np.array_equal(out.reshape(3), x.reshape(3, -1).max(axis=1)), (dt, tag)
            p = _pool("avg_include_padding", (1, 3, *I), dt, tag, "f32", **geom)
            out = p.execute({A.DNNL_ARG_SRC: _layout(x, tag)})
            want = x.reshape(3, -1).sum(axis=1).astype(F) / F(2.0 ** 64)
            assert np.array_equal(out.reshape(3), want), (dt, tag, out.ravel(), want)


def test_huge_kernel_writes_dst(isa):
    """r04: a 2^40 kernel made the tap list (channels-last) / column table (plain) too big to
    allocate and execute returned with dst unwritten.  Scratch now follows the taps inside the
    source: the result is computed."""
    K = 2 ** 40
    x = np.arange(1, 5, dtype=F).reshape(1, 1, 4)
    for tag in (None, "nwc"):
        for alg, want in (("avg_include_padding", F(10.0) / F(2.0 ** 40)), ("max", F(4.0))):
            p = _pool(alg, (1, 1, 4), "f32", tag, kernel=K, strides=1, padding_l=K - 4,
                      padding_r=0)
            d = np.full((1, 1, 1), 12345.0, F)
            p.execute({A.DNNL_ARG_SRC: _layout(x, tag), A.DNNL_ARG_DST: d})
            assert d[0, 0, 0] == want, (tag, alg, d)


@R.requires_onednn
@pytest.mark.parametrize("dt", ["f32", "u8"])
def test_wide_kernel_plain_and_channels_last_match_onednn(isa, dt):
    """Kernels wider than one chunk of outputs (1024) run the plain layout output-major: still
    every tap in order (the f32 sums round as oneDNN's)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1, 3, 3000)) * 30).astype(F) if dt == "f32" else \
        rng.integers(0, 256, size=(1, 3, 3000)).astype(np.uint8)
    for k, s, pl, pr in ((1500, 100, 7, 3), (1025, 1, 0, 0), (2999, 7, 1000, 1000)):
        for alg in ("max", "avg_include_padding", "avg_exclude_padding"):
            for tag in (None, "nwc"):
                ref = R.pooling(_layout(x, tag), alg, kernel=k, strides=s, padding_l=pl,
                                padding_r=pr, channels_last=tag is not None)
                p = _pool(alg, (1, 3, 3000), dt, tag, kernel=k, strides=s, padding_l=pl,
                          padding_r=pr)
                out = p.execute({A.DNNL_ARG_SRC: _layout(x, tag)})
                assert np.array_equal(out, ref), (k, s, alg, tag, int((out != ref).sum()))


_NOMEM_SCRIPT = r"""
import resource, sys
import numpy as np
import dnnq
from dnnq import MemoryDesc as MD, DNNL_ARG_SRC, DNNL_ARG_DST
dnnq.set_max_cpu_isa(sys.argv[1])
dnnq.set_num_threads(1)
n = 1 << 24  # 64 MB of f32; a window over all of it needs a 128 MB tap list
p = dnnq.Pooling("max", MD((1, 1, n), "f32", "nwc"), MD((1, 1, 1), "f32", "nwc"),
                 kernel=n, strides=1)
x = np.ones((1, n, 1), np.float32).transpose(0, 2, 1)
d = np.zeros((1, 1, 1), np.float32)
p.execute({DNNL_ARG_SRC: x, DNNL_ARG_DST: d})
assert d[0, 0, 0] == 1.0
with open("/proc/self/status") as f:
    vm = [int(l.split()[1]) for l in f if l.startswith("VmSize")][0] * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (48 << 20), resource.RLIM_INFINITY))
try:
    p.execute({DNNL_ARG_SRC: x, DNNL_ARG_DST: d})
except MemoryError as e:
    print("MemoryError", e)
else:
    print("no error")
"""


def test_failed_scratch_allocation_raises_memory_error(isa):
    """A kernel whose scratch cannot be allocated (address space limited in a subprocess)
    raises MemoryError instead of returning with dst unwritten."""
    import subprocess
    import sys
    # -P: never the uncompiled dnnq/ of the checkout (CI runs from its root)
    r = subprocess.run([sys.executable, "-P", "-c", _NOMEM_SCRIPT, isa], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MemoryError"), (r.stdout, r.stderr)


@R.requires_onednn
@pytest.mark.parametrize("alg", ["max", "avg_include_padding", "avg_exclude_padding"])
def test_s32_beyond_f32_precision_matches_onednn(isa, alg):
    """s32 values beyond 2^24: oneDNN's channels-last kernel (jit_int) is exact, its plain
    one (ref:any) reads the taps as f32 and accumulates in f32 -- dnnq follows each (found by
    the fuzz test: dnnq's plain result used to be the exact integer).  Values stay below
    2^31 - 128: where jit_int's average reaches 2^31 in f32 it converts without saturation
    (INT_MIN), which dnnq does not reproduce (it saturates; docs/toolkit.md)."""
    rng = np.random.default_rng(5)
    for shape in ((1, 4, 3, 3), (2, 2, 5, 5), (1, 17, 6, 5), (2, 70, 4, 4)):
        x = rng.integers(-2**31, 2**31 - 128, shape, dtype=np.int64).astype(np.int32)
        x.reshape(-1)[:2] = (2**24 + 1, -2**31)
        for tag in (None, "nhwc"):
            xs = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) \
                if tag else x
            for k, pad in ((1, 0), (3, 1), (2, 0)):
                ref = np.array(R.pooling(xs, alg, kernel=k, strides=1, padding_l=pad,
                                         padding_r=pad, channels_last=tag is not None))
                p = dnnq.Pooling(alg, MD(shape, "s32", tag), MD(ref.shape, "s32", tag),
                                 strides=1, kernel=k, padding_l=pad, padding_r=pad)
                out = p.execute({A.DNNL_ARG_SRC: xs})
                assert np.array_equal(out, ref), (shape, tag, k, np.argwhere(out != ref)[:4])
