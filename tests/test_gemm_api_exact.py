"""dnnq.gemm_u8s8s32 / gemm_s8s8s32 bit for bit against oneDNN 3.2's dnnl_gemm_* (the real
library through dnnq.testing): thousands of random problems (alpha / beta random and
special, ties, saturation of beta * C, wrapping co and accumulators, ao / bo / co, all three
offsetc, transa / transb, M / N / K tails, one and several K blocks, s8 and u8 A), plus a
hypothesis search for mismatches.

Where the result rounds is a function of the problem alone: dnnq follows oneDNN at
avx512_core_vnni on one thread at every dnnq level and thread count (oneDNN's own rounding
moves with its ISA level and thread splits; docs/numerics.md "Across machines").  oneDNN
reads DNNL_MAX_CPU_ISA and OMP_NUM_THREADS once per process: where this process's oneDNN runs
another level, tests/_gemm_cases.py runs in subprocesses with oneDNN capped.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dnnq
import dnnq.testing as onednn_ref
import _gemm_cases as gc

pytestmark = onednn_ref.requires_vnni

HERE = os.path.dirname(os.path.abspath(__file__))
def _omp():
    """The libgomp oneDNN runs on (to run it on one thread in this process)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libgomp" in line and "/" in line})
    return ctypes.CDLL(paths[0]) if paths else None


@pytest.fixture
def one_thread():
    """oneDNN and dnnq on one thread (oneDNN's K split and shared-A driver need more)."""
    omp = _omp()
    before = omp.omp_get_max_threads() if omp else 1
    dnnq_before = dnnq.get_num_threads()
    if omp:
        omp.omp_set_num_threads(1)
    dnnq.set_num_threads(1)
    yield
    if omp:
        omp.omp_set_num_threads(before)
    dnnq.set_num_threads(dnnq_before)


def _script(level, threads, cases, seed, *flags):
    """dnnq at `level` on `threads` threads against oneDNN at avx512_core_vnni on one."""
    # oneDNN 3 reads ONEDNN_MAX_CPU_ISA before DNNL_MAX_CPU_ISA (the benchmark driver sets the
    # former in this process's environment): both are set
    env = dict(os.environ, DNNL_MAX_CPU_ISA="AVX512_CORE_VNNI",
               ONEDNN_MAX_CPU_ISA="AVX512_CORE_VNNI", OMP_NUM_THREADS="1",
               OMP_WAIT_POLICY="passive", DNNQ_MAX_CPU_ISA=level)
    cmd = [sys.executable, os.path.join(HERE, "_gemm_cases.py"), "--dnnq-isa", level,
           "--threads", str(threads), "--cases", str(cases), "--seed", str(seed), *flags]
    return subprocess.Popen(cmd, env=env, cwd=HERE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _check(proc):
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return out


NATIVE = gc.onednn_level(onednn_ref.cpu_isa()) == gc.REFERENCE_LEVEL


def test_random_problems_match_onednn(isa, one_thread):
    """2,500 random problems at this dnnq level, every element equal to oneDNN at
    avx512_core_vnni (in-process when oneDNN runs at that level here, else 600 in a
    subprocess with oneDNN capped there)."""
    if NATIVE:
        failures, elements, kinds = gc.run_cases(np.random.default_rng(20261123), 2500)
        assert not failures, "\n".join(failures[:10]) + f"\n{len(failures)} cases differ"
        # the sequences the cases went through: one and several rounded blocks, exact s32
        assert kinds.get("blocks", 0) > 300 and kinds.get("one", 0) > 300 and kinds.get("int")
    else:
        out = _check(_script(isa, 1, 600, 7))
        assert out.startswith("ok 600")


def test_threads_do_not_change_the_result():
    """dnnq at 2 and 6 threads, on the shapes where oneDNN's own result moves with its thread
    count (its shared-A driver sums later K blocks as s32 at 2 threads; it splits a long K
    across 6 threads): equal to oneDNN on one thread, at two dnnq levels."""
    levels = [lvl for lvl in ("avx512_core_vnni", "avx2") if lvl in dnnq.available_isa_levels()]
    procs = [_script(levels[0], 2, 80, 11, "--shared-a"), _script(levels[0], 6, 30, 12, "--ksplit"),
             _script(levels[-1], 2, 200, 13), _script(levels[-1], 6, 20, 14, "--ksplit")]
    outs = [_check(p) for p in procs]
    assert all(o.startswith("ok ") for o in outs), outs


def _s32s(draw_values):
    return st.sampled_from([-2**31, -2**31 + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1]) | draw_values


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_hunts_mismatches(data, one_thread):
    """Hypothesis looks for a problem where dnnq and oneDNN differ: long K with accumulators
    past 2^24, alpha / beta as any f32 (0.5 ties included), C and co at the s32 bounds, every
    offsetc, transa / transb, s8 and u8 A."""
    s8 = data.draw(st.booleans(), label="s8")
    M = data.draw(st.integers(1, 6), label="M")
    N = data.draw(st.integers(1, 6), label="N")
    K = data.draw(st.sampled_from([1, 3, 4, 5, 127, 384, 385, 767, 1536, 3071, 3072, 3073,
                                   4600]) | st.integers(1, 5000), label="K")
    adt = np.int8 if s8 else np.uint8
    info = np.iinfo(adt)
    a_val = data.draw(st.sampled_from([info.min, info.max, None]), label="a_fill")
    b_val = data.draw(st.sampled_from([-128, 127, None]), label="b_fill")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    A = (np.full((M, K), a_val) if a_val is not None
         else rng.integers(info.min, info.max + 1, (M, K))).astype(adt)
    B = (np.full((K, N), b_val) if b_val is not None
         else rng.integers(-128, 128, (K, N))).astype(np.int8)
    f32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-8, max_value=8)
    alpha = data.draw(st.sampled_from([0.5, -0.5, 1.0, -1.0, 0.0, 1.5]) | f32, label="alpha")
    beta = data.draw(st.sampled_from([0.0, 1.0, 0.5, -1.0, 2.0]) | f32, label="beta")
    C = rng.choice([-2**31, 2**31 - 1, 0, 12345, -7], (M, N)).astype(np.int32)
    offsetc = data.draw(st.sampled_from("FCR"), label="offsetc")
    n_co = {"F": 1, "C": M, "R": N}[offsetc]
    co = np.array(data.draw(st.lists(_s32s(st.integers(-100, 100)), min_size=n_co,
                                     max_size=n_co), label="co"), np.int32)
    transa = data.draw(st.booleans(), label="transa")
    transb = data.draw(st.booleans(), label="transb")
    A = np.ascontiguousarray(A.T) if transa else A  # stored as (K, M) / (N, K)
    B = np.ascontiguousarray(B.T) if transb else B
    kw = dict(alpha=alpha, beta=beta, offsetc=offsetc, co=co, transa=transa, transb=transb,
              ao=data.draw(st.sampled_from([0, info.min, info.max, 1]), label="ao"),
              bo=data.draw(st.sampled_from([0, -128, 127, -1]), label="bo"))
    fn = "gemm_s8s8s32" if s8 else "gemm_u8s8s32"
    ref = getattr(onednn_ref, fn)(A, B, C.copy(), **kw)
    out = getattr(dnnq, fn)(A, B, C.copy(), **kw)
    np.testing.assert_array_equal(out, ref)


def test_rounding_details(one_thread):
    """The details the random problems rarely hit, each against oneDNN: ties round half away
    from zero; a long K rounds once per K block (K = 3100: blocks 1536, 1536, 28; K = 70000
    saturates on the way); alpha and beta are used as f32."""
    for A, B, kw in [
        (np.array([[1, 3, 5, 7]], np.uint8).T @ np.ones((1, 1), np.uint8),
         np.ones((1, 1), np.int8), dict(alpha=0.5)),
        (np.full((2, 3100), 255, np.uint8), np.full((3100, 2), 127, np.int8),
         dict(alpha=0.3, beta=0.0)),
        (np.full((1, 70000), 255, np.uint8), np.full((70000, 1), 127, np.int8),
         dict(alpha=1.0 + 2**-20)),
    ]:
        ref = onednn_ref.gemm_u8s8s32(A, B, **kw)
        np.testing.assert_array_equal(dnnq.gemm_u8s8s32(A, B, **kw), ref)
    # the f32 alpha: 0.1 as f32 is 0.100000001490116..., so 5 * 10**8 * alpha is 50000000.745
    A = np.full((1, 1), 1, np.uint8)
    B = np.full((1, 1), 1, np.int8)
    C = np.full((1, 1), 500_000_000, np.int32)
    kw = dict(alpha=0.0, beta=0.1)
    np.testing.assert_array_equal(dnnq.gemm_u8s8s32(A, B, C.copy(), **kw),
                                  onednn_ref.gemm_u8s8s32(A, B, C.copy(), **kw))
    assert dnnq.gemm_u8s8s32(A, B, C.copy(), **kw)[0, 0] == 50_000_001  # f64 0.1 gives 50000000


@pytest.mark.parametrize("fn", ["gemm_u8s8s32", "gemm_s8s8s32"])
def test_any_strides_and_read_only(isa, fn):
    """Views with any strides (negative, non-unit inner, transposed) and read-only arrays are
    read in place: the exact s32 product equals numpy's (alpha 1, beta 0: no rounding)."""
    rng = np.random.default_rng(5)
    adt = np.int8 if fn == "gemm_s8s8s32" else np.uint8
    big_a = rng.integers(np.iinfo(adt).min, np.iinfo(adt).max + 1, (40, 150)).astype(adt)
    big_b = rng.integers(-128, 128, (150, 140)).astype(np.int8)
    big_a.flags.writeable = False
    for a, b, ta, tb in [(big_a[::2, 1:140:3], big_b[:47, ::-2], False, False),
                         (big_a[::-1, :70].T, big_b[:70, 5:75], True, False),
                         (big_a[:33, :99], big_b[::-1, :99][:50], False, True)]:
        opa = a.T if ta else a
        opb = b.T if tb else b
        want = opa.astype(np.int64) @ opb.astype(np.int64)
        got = getattr(dnnq, fn)(a, b, transa=ta, transb=tb, co=np.array([-7]))
        np.testing.assert_array_equal(got, want - 7)


def test_c_sharing_memory_with_an_input_is_refused():
    """C is written in place while A, B and co are read: a C viewing their memory raises."""
    buf = np.zeros((4, 16), np.int32)
    A = buf.view(np.uint8)[:, :8]          # (4, 8) u8 inside C's bytes
    B = np.ones((8, 16), np.int8)
    with pytest.raises(dnnq.InvalidArguments, match="C: shares memory with A"):
        dnnq.gemm_u8s8s32(A, B, buf)
    co = buf[0]
    with pytest.raises(dnnq.InvalidArguments, match="C: shares memory with co"):
        dnnq.gemm_u8s8s32(np.ones((4, 8), np.uint8), B, buf, co=co, offsetc="R")
    np.testing.assert_array_equal(buf, 0)  # nothing written
