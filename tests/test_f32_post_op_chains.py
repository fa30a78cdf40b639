"""Eltwise post-op chains of exact arithmetic after f32 layers (relu with a slope, linear, clip,
clip_v2, hardsigmoid, hardswish, round): the AVX-512 kernels apply them from the accumulator
registers (postop_avx512.h), the other levels in the generic epilogue.  Both are checked bit for
bit against numpy's f32 arithmetic applied to the layer's own output without post-ops (whose
bits are the same at every level, test_f32_layers.py), NaN and infinities included, at every
ISA level this CPU runs and at 1 and 2 threads."""
import numpy as np
import pytest

import dnnq
from dnnq import PrimitiveAttr, PostOps
from _f32_ref import quantize
from _threads import dnnq_threads
from test_f32_layers import Conv, Gemm, LEVELS, quant_attr, quant_args

F32 = np.float32


def _clip(x, lo, hi):  # t = x > lo ? x : lo; t > hi ? hi : t (a NaN gives lo)
    t = np.where(x > lo, x, lo)
    return np.where(t > hi, hi, t)


def _clip_v2(x, lo, hi):  # ... t < hi ? t : hi
    t = np.where(x > lo, x, lo)
    return np.where(t < hi, t, hi)


def _hardsigmoid(x, a, b):  # x a + b rounded twice, min(., 1) then max(., 0): NaN -> 1
    t = x * a + b
    t = np.where(t < F32(1), t, F32(1))
    return np.where(t > F32(0), t, F32(0))


# numpy's f32 operations, one rounding each, as oneDNN's JIT does them.  linear is one fused
# multiply-add there: its alpha is a power of two here, so x * alpha is exact and the fused and
# unfused forms agree.
STEP = {
    "relu": lambda x, a, b: np.where(x > 0, x, x * a),
    "linear": lambda x, a, b: x * a + b,
    "clip": lambda x, a, b: _clip(x, a, b),
    "clip_v2": lambda x, a, b: _clip_v2(x, a, b),
    "hardsigmoid": _hardsigmoid,
    "hardswish": lambda x, a, b: x * _hardsigmoid(x, a, b),
    "round": lambda x, a, b: np.rint(x),
}

CHAINS = {
    "relu_slope": [("relu", 0.25, 0.0)],
    "clip": [("clip", -0.5, 0.75)],
    "clip_v2": [("clip_v2", -0.5, 0.75)],
    "hardsigmoid": [("hardsigmoid", 1 / 6, 0.5)],
    # PP-OCRv4's activation and learnable affine block after every depthwise / 1x1 layer
    "hardswish_affine": [("hardswish", 1 / 6, 0.5), ("linear", 0.5, 0.125),
                         ("linear", 2.0, -0.375)],
    "round_clip": [("linear", 4.0, 0.0), ("round", 0.0, 0.0), ("clip_v2", -3.0, 3.0),
                   ("hardsigmoid", 0.25, 0.5)],
}


def problems(rng):
    """One of each f32 driver that fuses its epilogue on AVX-512 (depthwise, 1x1 as a GEMM,
    MatMul, tiled k x k, folded stem) and the deconvolution, which does not; sizes past the
    vector widths so a masked last vector is there."""
    return {
        "conv_dw": Conv(rng, (2, 37, 9, 8), (37, 1, 1, 3, 3), (1, 1), (1, 1), tag="nhwc"),
        "conv_dw5_s2": Conv(rng, (1, 70, 11, 12), (70, 1, 1, 5, 5), (2, 2), (2, 2),
                            tag="nhwc"),
        "conv_1x1": Conv(rng, (1, 33, 5, 7), (81, 33, 1, 1), (1, 1), (0, 0), tag="nhwc"),
        "mm": Gemm(rng, (13, 40), (40, 70)),
        "conv_3x3": Conv(rng, (1, 19, 9, 11), (24, 19, 3, 3), (1, 1), (1, 1), tag="nhwc"),
        "conv_stem": Conv(rng, (1, 3, 21, 21), (17, 3, 3, 3), (2, 2), (1, 1), tag="nhwc"),
        "deconv_s2": Conv(rng, (1, 12, 5, 6), (20, 12, 3, 3), (2, 2), (1, 1), deconv=True),
    }


@pytest.fixture(scope="module")
def probs():
    rng = np.random.default_rng(1129)
    ps = problems(rng)
    for i, pb in enumerate(ps.values()):
        # sources scaled so the clip bounds and the hardsigmoid's knees bite; a few NaN and
        # infinities in every other problem
        pb.x = pb.x * F32(0.5)
        if i % 2:
            flat = pb.x.reshape(-1)
            flat[::97] = np.nan
            flat[31::89] = np.inf
            flat[57::101] = -np.inf
    return ps


def _run(pb, chain, dt):
    po = PostOps()
    for alg, a, b in chain:
        po.append_eltwise(alg, a, b)
    attr = quant_attr() if dt != "f32" else PrimitiveAttr()
    attr.set_post_ops(po)
    p = pb.primitive(dt, attr)
    args = pb.args(p)
    if dt != "f32":
        args.update(quant_args(0.0625, 3))
    return np.asarray(p.execute(args)).copy()


def _same(a, b):
    """equal values, NaN where NaN (f32), or equal integers"""
    if a.dtype != F32:
        return np.array_equal(a, b)
    return np.array_equal(np.isnan(a), np.isnan(b)) and \
        np.array_equal(a[~np.isnan(a)].view(np.int32), b[~np.isnan(b)].view(np.int32))


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("name", ["conv_dw", "conv_dw5_s2", "conv_1x1", "mm", "conv_3x3",
                                  "conv_stem", "deconv_s2"])
def test_chain_bits_against_numpy(probs, name, chain):
    pb = probs[name]
    ops = CHAINS[chain]
    old = dnnq.set_max_cpu_isa("all")
    try:
        for isa in LEVELS:
            dnnq.set_max_cpu_isa(isa)
            for threads in (1, 2):
                with dnnq_threads(threads), np.errstate(invalid="ignore"):
                    base = _run(pb, [], "f32")
                    ref = base
                    for alg, a, b in ops:
                        ref = STEP[alg](ref, F32(a), F32(b)).astype(F32)
                    out = _run(pb, ops, "f32")
                    assert _same(out, ref), (isa, threads, "f32")
                    q = _run(pb, ops, "u8")
                    assert _same(q, quantize(ref, "u8", 0.0625, 3)), (isa, threads, "u8")
    finally:
        dnnq.set_max_cpu_isa(old)
