"""logistic, swish, tanh and gelu_tanh as oneDNN's JIT eltwise kernels compute them, and
every transcendental post-op the same at every ISA level (docs/post_ops.md).

1. dnnq's Eltwise equals oneDNN's bit for bit for these four algorithms, oneDNN capped at each
   x86 level this CPU has (its injector uses one formula at every level; checked here in
   subprocesses, as another CPU's oneDNN would run them).
2. Independently of oneDNN: within a few ulp of the float64 formulas.
3. The GEMM epilogues (fused AVX-512 lanes, AVX2, the generic row) give the same bits for
   every transcendental post-op at every dnnq level and thread count, on values spread over
   the functions' whole curved range (a scale that leaves them near 0 hides differences).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from dnnq import MemoryDesc as MD
from _levels import assert_same_bits, at_every_level

F = np.float32
JIT_ALGS = [("logistic", 0.0), ("swish", 1.0), ("swish", 1.702), ("swish", -0.5), ("tanh", 0.0),
            ("gelu_tanh", 0.0)]


def _values(seed=0):
    """Values across every branch of the formulas: small and large magnitudes, the cut-offs
    of exp (-87.3, 88.7), tanh's linear and saturated ranges, subnormals, +-0, +-inf, NaN."""
    rng = np.random.default_rng(seed)
    parts = [(rng.standard_normal(6000) * s).astype(F) for s in (1e-4, 0.05, 0.7, 3, 12, 60)]
    edges = np.float32([0.0, -0.0, 1e-40, -1e-40, 2.4e-4, -2.4e-4, 87.3, -87.3, 88.72, -88.72,
                        89.0, -89.0, 9.0, -9.0, 9.1, -9.1, 16.6, -16.6, 3e38, -3e38, np.inf,
                        -np.inf, np.nan])
    around = np.concatenate([np.nextafter(edges[4:20], F(np.inf)),
                             np.nextafter(edges[4:20], F(-np.inf))])
    return np.concatenate(parts + [edges, around.astype(F)])


def _dnnq_eltwise(x, alg, alpha):
    e = dnnq.Eltwise(alg, MD(x.shape, "f32"), MD(x.shape, "f32"), alpha, 0.0)
    return e.execute({dnnq.DNNL_ARG_SRC: x})


def _caps():
    caps = ["AVX2"]
    info = dnnq.cpu_info()
    if info.get("avx512f") and info.get("avx512bw"):
        caps.append("AVX512_CORE")
    return caps


_CAPPED = """
import sys, numpy as np, dnnq, dnnq.testing as T
sys.path.insert(0, {here!r})
from test_eltwise_jit_formulas import JIT_ALGS, _values, _dnnq_eltwise
x = _values()
for alg, alpha in JIT_ALGS:
    want = T.eltwise(x, alg, alpha, 0.0)
    got = _dnnq_eltwise(x, alg, alpha)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    if bad.size:
        i = bad[0]
        print(f"{{alg}} {{alpha}}: {{bad.size}} differ, e.g. x={{x[i]!r}} dnnq={{got[i]!r}} "
              f"oneDNN={{want[i]!r}}")
        sys.exit(1)
print("ok")
"""


@onednn_ref.requires_onednn
@pytest.mark.parametrize("cap", _caps())
def test_equals_onednn_jit_eltwise_at_each_cap(cap):
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=cap, DNNL_MAX_CPU_ISA=cap)
    here = os.path.dirname(os.path.abspath(__file__))
    # -P: no current directory on sys.path (a checkout's uncompiled sources there)
    r = subprocess.run([sys.executable, "-P", "-c", _CAPPED.format(here=here)],
                       capture_output=True, text=True, env=env, timeout=300)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0 and out.endswith("ok"), out[-3000:]


def _f64_formula(alg, alpha, x):
    xd = x.astype(np.float64)
    with np.errstate(over="ignore"):
        if alg == "logistic":
            return 1.0 / (1.0 + np.exp(-xd))
        if alg == "swish":  # logistic of the f32 product alpha * x, as the formula says
            return xd / (1.0 + np.exp(-(F(alpha) * x).astype(np.float64)))
        if alg == "tanh":
            return np.tanh(xd)
        g = np.sqrt(2.0 / np.pi) * xd * (1.0 + 0.044715 * xd * xd)
        return 0.5 * xd * (1.0 + np.tanh(g))


@pytest.mark.parametrize("alg,alpha", JIT_ALGS)
def test_close_to_the_float64_formula(alg, alpha):
    x = _values(1)
    x = x[np.isfinite(x)]
    y = _dnnq_eltwise(x, alg, alpha).astype(np.float64)
    ref = _f64_formula(alg, alpha, x)
    # a few ulp of the result (oneDNN's exp polynomial: up to ~12 relative to the result
    # near exp's underflow); gelu_tanh also loses 1 + tanh(g)'s rounding, ~ulp(1) |x| / 2,
    # where tanh(g) is near -1; exp below the normal range is 0 (oneDNN's cut-off), so a
    # logistic there is off by up to 1.2e-38, times |x| in swish
    rtol, xtol = {"logistic": (2e-6, 0.0), "swish": (2e-6, 0.0), "tanh": (1e-6, 0.0),
                  "gelu_tanh": (1e-6, 2e-7)}[alg]
    bound = rtol * np.abs(ref) + xtol * np.abs(x) + 2e-38 * np.maximum(1.0, np.abs(x))
    bad = np.flatnonzero(np.abs(y - ref) > bound)
    assert bad.size == 0, (alg, x[bad[:5]], y[bad[:5]], ref[bad[:5]])


def test_specials():
    """NaN stays NaN; the limits at +-inf; the sign of zero kept."""
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0])
    lg = _dnnq_eltwise(x, "logistic", 0.0)
    assert np.isnan(lg[0]) and lg[1] == 1.0 and lg[2] == 0.0 and lg[3] == lg[4] == 0.5
    th = _dnnq_eltwise(x, "tanh", 0.0)
    assert np.isnan(th[0]) and th[1] == 1.0 and th[2] == -1.0
    assert np.signbit(th[4]) and not np.signbit(th[3])
    sw = _dnnq_eltwise(x, "swish", 1.0)
    assert np.isnan(sw[0]) and sw[1] == np.inf


@pytest.mark.parametrize("dst_dt", ["f32", "u8"])
@pytest.mark.parametrize("alg", ["gelu_erf", "gelu_tanh", "logistic", "swish", "tanh"])
def test_transcendental_epilogues_same_at_every_level(alg, dst_dt):
    """MatMul (M, N past the 16-lane and 4-vector blocks) and a convolution: the primitive
    made at each level, the result identical.  The linear post-op first spreads the
    accumulators over [-6, 6], where the functions curve; with GELU's erf / tanh taken
    from libm outside AVX-512 this fails (8 of 4096 values differed in the first bits)."""
    rng = np.random.default_rng(len(alg) + (dst_dt == "u8"))
    M, K, N = 67, 256, 70
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    ops = dnnq.PostOps()
    ops.append_eltwise("linear", 6.0 / (128 * 128 * np.sqrt(K) * 1.5), 0.0)
    ops.append_eltwise(alg, 1.0, 0.0)
    if dst_dt == "u8":
        ops.append_eltwise("linear", 40.0, 128.0)
    attr = dnnq.PrimitiveAttr()
    attr.set_post_ops(ops)

    def mm():
        p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), dst_dt), attr=attr)
        return p.execute({dnnq.DNNL_ARG_SRC: a, dnnq.DNNL_ARG_WEIGHTS: w})

    x = rng.integers(0, 256, (1, 32, 9, 11)).astype(np.uint8)
    wc = rng.integers(-128, 128, (40, 32, 3, 3)).astype(np.int8)

    def conv():
        p = dnnq.Convolution(MD(x.shape, "u8"), MD(wc.shape, "s8"), MD((1, 40, 9, 11), dst_dt),
                             strides=(1, 1), padding_l=(1, 1), padding_r=(1, 1), attr=attr)
        return p.execute({dnnq.DNNL_ARG_SRC: x, dnnq.DNNL_ARG_WEIGHTS: wc})

    for draw in (mm, conv):
        runs = at_every_level(draw)
        spread = np.ptp(runs[0][1].astype(np.float64))
        assert spread > (0.5 if dst_dt == "f32" else 20), (alg, spread)  # not all saturated
        assert_same_bits(runs, (alg, draw.__name__))
