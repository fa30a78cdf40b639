"""The same answer on every machine (docs/numerics.md "Across machines").

1. oneDNN capped at each ISA level this CPU has (as another CPU's oneDNN would run): dnnq's
   default numerics, at each of its levels and at 1 and 2 threads, equal oneDNN's result bit
   for bit (tools/onednn_capped.py, in subprocesses: oneDNN reads its cap once per process).
2. Invariance: a few hundred random problems per family give identical bits at every dnnq
   ISA level and at 1 and 2 threads -- the result is a function of the problem alone.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from dnnq import MemoryDesc as MD, DNNL_ARG_SRC, DNNL_ARG_DST

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
sys.path.insert(0, TOOLS)
import diff_fuzz  # noqa: E402
from _levels import assert_same_bits, at_every_level  # noqa: E402

LEVELS = list(dnnq.available_isa_levels())
FEATURES = dnnq.cpu_info()


def _onednn_caps():
    """oneDNN caps this CPU can run, each with the oneDNN ISA it must then report."""
    caps = [("AVX2", "avx2")]
    if FEATURES.get("avx_vnni") and not FEATURES.get("avx_vnni_emulated"):
        caps.append(("AVX2_VNNI", "avx2_vnni"))
    if FEATURES.get("avx512f") and FEATURES.get("avx512bw"):
        caps.append(("AVX512_CORE", "avx512_core"))
    if FEATURES.get("avx512_vnni"):
        caps.append(("AVX512_CORE_VNNI", "avx512_core_vnni"))
        caps.append(("AVX512_CORE_BF16", None))  # where the CPU has BF16 (else its best)
    if FEATURES.get("amx_int8") and FEATURES.get("os_grants_amx") and \
            not FEATURES.get("amx_emulated"):  # (oneDNN runs on the real CPU)
        caps.append(("AVX512_CORE_AMX", "avx512_core_amx"))
    return caps


@onednn_ref.requires_onednn
@pytest.mark.parametrize("cap,expected", _onednn_caps())
def test_equals_onednn_capped_at_each_level(cap, expected):
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=cap, DNNL_MAX_CPU_ISA=cap, OMP_NUM_THREADS="2",
               OMP_WAIT_POLICY="passive")
    env.pop("DNNQ_MAX_CPU_ISA", None)
    r = subprocess.run([sys.executable, "-P", os.path.join(TOOLS, "onednn_capped.py"),
                        "--cases", "120", "--seed", str(7 + len(cap))],
                       capture_output=True, text=True, env=env, timeout=900)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0 and out.startswith("ok "), out[-4000:]
    if expected is not None:
        assert f"oneDNN at {expected}" in out, out  # the cap reached oneDNN
    compared, exact = (int(v) for v in out.split()[1:3])
    assert compared >= 300 and exact >= compared * 0.9, out


# -- invariance ------------------------------------------------------------------------------

_runs = at_every_level  # draw() -> numpy result, run at every level and at 1 and 2 threads
_assert_invariant = assert_same_bits


def _fuzz_family(case_fn, seed, cases):
    for i in range(cases):
        def draw():
            desc, got, _ = case_fn(np.random.default_rng(seed * 100_000 + i))
            return np.zeros(1, np.uint8) if got is None else np.asarray(got)
        _assert_invariant(_runs(draw), f"case {i}")


@onednn_ref.requires_onednn
@pytest.mark.parametrize("family,cases", [("matmul", 200), ("ip", 120), ("conv", 200),
                                          ("rnn", 40)])
def test_diff_fuzz_families_are_invariant(family, cases):
    """MatMul, InnerProduct, every (de)convolution kind of tools/diff_fuzz.py (depthwise,
    plain depthwise, grouped, strided and GEMM-based deconvolutions ...), LSTM / GRU: full-range
    data and random attributes."""
    fn = {"matmul": diff_fuzz.matmul_case, "ip": diff_fuzz.ip_case,
          "conv": diff_fuzz.conv_case, "rnn": diff_fuzz.rnn_case}[family]
    _fuzz_family(fn, len(family), cases)


def _int8(rng, dt, shape):
    info = np.iinfo(np.uint8 if dt == "u8" else np.int8)
    return rng.integers(info.min, info.max + 1, shape).astype(info.dtype)


def test_gemm_functions_are_invariant():
    rng = np.random.default_rng(1)
    for _ in range(150):
        M, N, K = (int(rng.integers(1, 70)) for _ in range(3))
        K = int(rng.choice([K, 400, 1600, 3100]))
        s8 = bool(rng.integers(2))
        A = _int8(rng, "s8" if s8 else "u8", (M, K))
        B = _int8(rng, "s8", (K, N))
        C = rng.integers(-2**31, 2**31, (M, N)).astype(np.int32)
        kw = dict(alpha=float(rng.choice([1.0, 0.5, 1 / 3, -2.0])),
                  beta=float(rng.choice([0.0, 1.0, 0.75])),
                  ao=0 if s8 else int(rng.integers(0, 256)), bo=int(rng.integers(-128, 128)),
                  co=rng.integers(-1000, 1000, N).astype(np.int32), offsetc="R")
        fn = dnnq.gemm_s8s8s32 if s8 else dnnq.gemm_u8s8s32
        if s8:  # refused under the avx2 numerics only; keep the problem valid everywhere
            kw.update(alpha=1.0, beta=float(round(kw["beta"])), ao=0, bo=0)
        _assert_invariant(_runs(lambda: fn(A, B, C.copy(), **kw)), (M, N, K, kw))


def test_pooling_softmax_eltwise_binary_are_invariant():
    rng = np.random.default_rng(2)
    for i in range(120):
        dt = str(rng.choice(["u8", "s8", "f32"]))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 70)), int(rng.integers(5, 12)),
                 int(rng.integers(5, 12)))
        x = (rng.standard_normal(shape) * 10).astype(np.float32) if dt == "f32" else \
            _int8(rng, dt, shape)
        tag = "nhwc" if rng.integers(2) else None
        xin = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1) if tag else x
        alg = str(rng.choice(["max", "avg_include_padding", "avg_exclude_padding"]))
        k = (int(rng.integers(2, 4)), int(rng.integers(2, 4)))
        d = (int(rng.integers(0, 2)), 0)
        oh = [(shape[2 + j] + 2 - ((k[j] - 1) * (d[j] + 1) + 1)) // 1 + 1 for j in range(2)]
        pool = dnnq.Pooling(alg, MD(shape, dt, tag), MD(shape[:2] + tuple(oh), dt, tag),
                            strides=(1, 1), kernel=k, dilation=d, padding_l=(1, 1),
                            padding_r=(1, 1))
        _assert_invariant(_runs(lambda: pool.execute({DNNL_ARG_SRC: xin})), ("pool", i))
        xf = (rng.standard_normal(shape) * 4).astype(np.float32)
        sm = dnnq.Softmax(str(rng.choice(["softmax", "logsoftmax"])), MD(shape, "f32"),
                          MD(shape, str(rng.choice(["f32", "u8"]))), int(rng.integers(0, 4)))
        args = {DNNL_ARG_SRC: xf}
        if sm.dst_desc.dt == "u8":
            attr = dnnq.PrimitiveAttr()
            attr.set_scales_mask(DNNL_ARG_DST, 0)
            sm = dnnq.Softmax(sm.alg, MD(shape, "f32"), MD(shape, "u8"), sm.axis, attr=attr)
            args[dnnq.DNNL_ARG_SCALE | DNNL_ARG_DST] = np.float32([1 / 255])
        _assert_invariant(_runs(lambda: sm.execute(args)), ("softmax", i))
        alg = str(rng.choice(["relu", "gelu_erf", "tanh", "logistic", "linear", "swish",
                              "hardswish", "elu", "exp", "soft_relu", "mish", "clip"]))
        el = dnnq.Eltwise(alg, MD(shape, "f32"), MD(shape, "f32"), 0.5, 0.25 if alg != "clip" else 2.0)
        _assert_invariant(_runs(lambda: el.execute({DNNL_ARG_SRC: xf})), ("eltwise", alg))
        y = (rng.standard_normal(shape) * 4).astype(np.float32)
        b = dnnq.Binary(str(rng.choice(["add", "mul", "div", "max"])), MD(shape, "f32"),
                        MD(shape, "f32"), MD(shape, str(rng.choice(["f32", "s8"]))))
        _assert_invariant(_runs(lambda: b.execute({DNNL_ARG_SRC: xf, dnnq.DNNL_ARG_SRC_1: y})),
                          ("binary", i))


def test_transcendental_post_ops_are_invariant():
    """MatMul and Convolution with transcendental eltwise post-ops (libm-based at every level)
    and an f32 / u8 destination: the same bits at every level and thread count."""
    rng = np.random.default_rng(3)
    for i, alg in enumerate(["gelu_erf", "gelu_tanh", "tanh", "logistic", "swish", "elu",
                             "exp", "soft_relu", "mish", "log"] * 2):
        dst_dt = "f32" if i < 10 else "u8"
        ops = dnnq.PostOps()
        ops.append_eltwise("linear", 0.01, 0.0)
        ops.append_eltwise(alg, 1.0 if alg != "log" else 0.0, 0.0)
        attr = dnnq.PrimitiveAttr()
        attr.set_post_ops(ops)
        M, K, N = int(rng.integers(1, 40)), int(rng.integers(1, 300)), int(rng.integers(1, 80))
        a = _int8(rng, "u8", (M, K))
        w = _int8(rng, "s8", (K, N))
        if alg == "log":
            w = np.abs(w).astype(np.int8)
        mm = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), dst_dt), attr=attr)
        _assert_invariant(_runs(lambda: mm.execute({DNNL_ARG_SRC: a, dnnq.DNNL_ARG_WEIGHTS: w})),
                          ("matmul", alg))
        x = _int8(rng, "u8", (1, 16, 9, 9))
        wc = _int8(rng, "s8", (24, 16, 3, 3))
        if alg == "log":
            wc = np.abs(wc).astype(np.int8)
        cv = dnnq.Convolution(MD(x.shape, "u8"), MD(wc.shape, "s8"), MD((1, 24, 9, 9), dst_dt),
                              strides=(1, 1), padding_l=(1, 1), padding_r=(1, 1), attr=attr)
        _assert_invariant(_runs(lambda: cv.execute({DNNL_ARG_SRC: x, dnnq.DNNL_ARG_WEIGHTS: wc})),
                          ("conv", alg))


def test_matmul_weights_zero_point_epilogues_are_invariant():
    """A MatMul with a weights zero point takes the fused epilogues where a level has them
    (its per-row term taken out of the tile first) and the row epilogue elsewhere: the same
    bits at every level and thread count, with and without transcendental post-ops."""
    rng = np.random.default_rng(4)
    for i, alg in enumerate(["relu", "gelu_erf", "gelu_tanh", "hardswish", "tanh"] * 2):
        ops = dnnq.PostOps()
        ops.append_eltwise("linear", 0.01, 0.0)
        ops.append_eltwise(alg, 1.0, 0.0)
        attr = dnnq.PrimitiveAttr()
        attr.set_post_ops(ops)
        per_n = i >= 5
        attr.set_zero_points_mask(dnnq.DNNL_ARG_WEIGHTS, 2 if per_n else 0)
        M, K, N = int(rng.integers(1, 40)), int(rng.integers(1, 300)), int(rng.integers(1, 80))
        a, w = _int8(rng, "u8", (M, K)), _int8(rng, "s8", (K, N))
        wzp = rng.integers(-60, 60, N if per_n else 1).astype(np.int32)
        mm = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), "u8"), attr=attr)
        args = {DNNL_ARG_SRC: a, dnnq.DNNL_ARG_WEIGHTS: w,
                dnnq.DNNL_ARG_ATTR_ZERO_POINTS | dnnq.DNNL_ARG_WEIGHTS: wzp}
        _assert_invariant(_runs(lambda: mm.execute(args)), ("matmul wzp", alg, per_n))


def test_innermost_softmax_vector_exp_is_invariant():
    """The softmax along the axis innermost in memory (its vector exp and 16-lane sum,
    tk_softmax.h): the same bits at every level and thread count, for rows below, at and past
    16 and 64 elements, subnormal-range exponents, +-inf, NaN, a channels-last tensor."""
    rng = np.random.default_rng(11)
    for L in (1, 5, 16, 17, 63, 64, 65, 1037):
        x = (rng.standard_normal((5, L)) * 40).astype(np.float32)
        x[1, L // 2] = np.nan
        x[2, :] = -95.0
        x[2, 0] = 0.0
        x[3, L - 1] = np.inf
        x[4, 0] = -np.inf
        for alg in ("softmax", "logsoftmax"):
            for dt in ("f32", "u8"):
                attr = dnnq.PrimitiveAttr()
                args = {DNNL_ARG_SRC: x}
                if dt == "u8":
                    attr.set_scales_mask(DNNL_ARG_DST, 0)
                    args[dnnq.DNNL_ARG_SCALE | DNNL_ARG_DST] = np.float32([1 / 255])
                sm = dnnq.Softmax(alg, MD(x.shape, "f32"), MD(x.shape, dt), 1, attr=attr)
                _assert_invariant(_runs(lambda: sm.execute(args)), ("softmax", L, alg, dt))
    xc = (rng.standard_normal((2, 7, 3, 5)) * 9).astype(np.float32)
    xcl = np.ascontiguousarray(xc.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    sm = dnnq.Softmax("softmax", MD(xc.shape, "f32", "nhwc"), MD(xc.shape, "f32", "nhwc"), 1)
    _assert_invariant(_runs(lambda: sm.execute({DNNL_ARG_SRC: xcl})), "softmax nhwc")
