"""GELU post-ops (gelu_erf, gelu_tanh) in the GEMM epilogue.

On AVX-512 they run vectorised in the fused epilogue (erf from a table of polynomials, tanh
oneDNN's approximation: dnnq/primitives/_kernels/ukernels/eltwise_avx512.h); elsewhere
through libm in the generic epilogue.  Both are checked on every ISA level against an
independent float64 model (math.erf / math.tanh) with the bound below, and against the real
oneDNN 3.2 with the bound SPEC 5 states for transcendental post-ops (an int8 result may differ
by 1 on rare elements)."""
import math
import zlib

import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_BIAS)
from test_matmul import rand, run_dnnq, run_ref, needs_onednn

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, -3e38,
                     1e-45, 3.92, -3.92, 4.0, -4.0, 9.02, -9.02], np.float32)


def gelu_f64(alg, x):
    x = float(x)
    if alg == "gelu_erf":
        return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * x * (1.0 + 0.044715 * x * x)))


def gelu_via_bias(alg, values, rows):
    """The post-op applied to `values` (f32): a MatMul whose accumulator is 0 and whose bias
    is the values, so the post-op's input is exactly them; every one of `rows` rows."""
    n = values.size
    attr = PrimitiveAttr()
    ops = PostOps()
    ops.append_eltwise(alg)
    attr.set_post_ops(ops)
    p = dnnq.MatMul(MemoryDesc((rows, 8), "u8"), MemoryDesc((8, n), "s8"),
                    MemoryDesc((rows, n), "f32"), MemoryDesc((1, n), "f32"), attr=attr)
    return p.execute({DNNL_ARG_SRC: np.full((rows, 8), 3, np.uint8),
                      DNNL_ARG_WEIGHTS: p.prepare_weights(np.zeros((8, n), np.int8)),
                      DNNL_ARG_BIAS: values.reshape(1, n)})


@pytest.mark.parametrize("alg", ["gelu_erf", "gelu_tanh"])
@pytest.mark.parametrize("rows", [1, 6, 7, 13])
def test_gelu_post_op_against_float64_model(isa, alg, rows):
    """|got - gelu(x)| <= 2.5e-7 * |x| / 2 + 4 ulp(gelu(x)): the formula's own f32 roundings
    (1 + erf(.) loses up to an ulp of 1, scaled by x / 2) plus a few ulp for erf / tanh.
    Sweep -12..12 (erf, tanh saturate at 3.9 / 9.0) in 64-column panels with a partial one,
    rows across the 6-row tiles."""
    x = np.concatenate([np.linspace(-12.0, 12.0, 20001), np.geomspace(1e-38, 1.0, 300),
                        -np.geomspace(1e-38, 1.0, 300)]).astype(np.float32)
    got = gelu_via_bias(alg, x, rows)
    assert np.array_equal(got, np.broadcast_to(got[0], got.shape), equal_nan=True)
    ref = np.array([gelu_f64(alg, v) for v in x])
    bound = 2.5e-7 * np.abs(x.astype(np.float64)) / 2 + 4 * np.spacing(np.abs(ref).astype(np.float32))
    err = np.abs(got[0].astype(np.float64) - ref)
    worst = np.argmax(err - bound)
    assert np.all(err <= bound), f"x={x[worst]}: {got[0][worst]} vs {ref[worst]}"


@pytest.mark.parametrize("alg", ["gelu_erf", "gelu_tanh"])
def test_gelu_post_op_special_values(isa, alg):
    """NaN stays NaN, +inf gives +inf, -inf gives NaN (-inf * 0, as 0.5 x (1 + erf(x / sqrt 2))
    computes it in f32), saturated tails give x and -0.0, tiny values x / 2."""
    got = gelu_via_bias(alg, SPECIALS, 6)[0]
    assert np.isnan(got[4]) and np.isnan(got[3]) and got[2] == np.inf
    for i in (0, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15):
        x = SPECIALS[i]
        want = gelu_f64(alg, x) if abs(x) < 1e30 else (x if x > 0 else -0.0)
        bound = 2.5e-7 * abs(float(x)) / 2 + 4 * np.spacing(np.float32(abs(want)))
        assert abs(float(got[i]) - want) <= bound, (x, got[i], want)
    # the saturated negative tail is -0.0 (x * +0), not +0.0
    assert np.signbit(got[8]) and got[8] == 0.0


@needs_onednn
@pytest.mark.parametrize("alg", ["gelu_erf", "gelu_tanh"])
@pytest.mark.parametrize("dst_dt", ["u8", "s8", "f32"])
@pytest.mark.parametrize("with_sum", [False, True])
def test_gelu_post_op_chains_vs_onednn(isa, alg, dst_dt, with_sum):
    """What a transformer's feed-forward layer runs: per-N weight scales, bias, GELU, then
    (int8 dst) the next layer's scale and zero point, optionally a sum post-op.  Pre-activations
    span about -8..8.  Bound (SPEC 5): f32 within 2e-6 relative / 1e-5 absolute, int8 within 1
    on at most 1 % of the elements."""
    rng = np.random.default_rng(zlib.crc32(repr((alg, dst_dt, with_sum, isa)).encode()))
    M, K, N = 37, 384, 200
    src, wei = rand(rng, "u8", (M, K)), rand(rng, "s8", (K, N))
    bias = rng.normal(0, 1, (1, N)).astype(np.float32)
    q = dict(src_scales=np.array([0.004], np.float32),
             wei_scales=rng.uniform(2e-4, 1e-3, N).astype(np.float32), wei_scale_mask=2,
             src_zp=np.array([128], np.int32))
    if dst_dt != "f32":
        q.update(dst_scales=np.array([0.03], np.float32), dst_zp=np.array([20], np.int32))
    ops = [("eltwise", alg, 0.0, 0.0)] + ([("sum", 0.5, 0)] if with_sum else [])
    prev = rand(rng, dst_dt, (M, N)) if with_sum else None
    out, _ = run_dnnq(src, wei, bias, dst_dt, q, ops, dst_prev=prev)
    ref = run_ref(src, wei, bias, dst_dt, q, ops, dst_prev=prev)
    if dst_dt == "f32":
        np.testing.assert_allclose(out, ref, rtol=2e-6, atol=1e-5)
    else:
        diff = np.abs(out.astype(np.int32) - ref.astype(np.int32))
        assert diff.max() <= 1 and (diff > 0).mean() <= 0.01
        assert len(np.unique(out)) > 50   # the range is really exercised


@needs_onednn
@pytest.mark.parametrize("alg", ["gelu_erf", "gelu_tanh"])
def test_inner_product_gelu_u8_vs_onednn(isa, alg):
    """The demo's feed-forward layer: InnerProduct, per-OC weight scales, GELU, u8 dst (oneDNN's
    inner product takes no dst zero point)."""
    rng = np.random.default_rng(zlib.crc32(repr((alg, isa)).encode()))
    M, K, N = 70, 128, 130
    src, wei = rand(rng, "u8", (M, K)), rand(rng, "s8", (N, K))
    bias = rng.normal(0, 1, (N,)).astype(np.float32)
    q = dict(src_scales=np.array([0.01], np.float32),
             wei_scales=rng.uniform(5e-4, 2e-3, N).astype(np.float32), wei_scale_mask=1,
             dst_scales=np.array([0.02], np.float32))
    ops = [("eltwise", alg, 0.0, 0.0)]
    out, _ = run_dnnq(src, wei, bias, "u8", q, ops, ip=True)
    ref = run_ref(src, wei, bias, "u8", q, ops, ip=True)
    diff = np.abs(out.astype(np.int32) - ref.astype(np.int32))
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.01
