"""Random dnnq.gemm_u8s8s32 / gemm_s8s8s32 problems compared bit for bit with oneDNN's
dnnl_gemm_* (tests/test_gemm_api_exact.py).

dnnq rounds where oneDNN 3.2 at avx512_core_vnni on one thread rounds, at every dnnq level
and thread count (the result is a function of the problem).  Also a script: run in a
subprocess with DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI and OMP_NUM_THREADS=1 set (oneDNN reads
them once per process) it compares dnnq at the given level and thread count:

    python tests/_gemm_cases.py --dnnq-isa avx2 --threads 2 --cases 300 --seed 1 [--ksplit]

prints "ok <cases> <elements>" or the first mismatches and exits 1.
"""
import argparse
import ctypes
import os
import sys

import numpy as np

ALPHAS = (1.0, -1.0, 0.0, 0.5, -0.5, 2.0, 0.25, 1.5, 1.0 / 3.0, 3.0)
BETAS = (0.0, 1.0, -1.0, 0.5, 2.0, -0.75)
S32 = (-2**31, 2**31 - 1)
#: the oneDNN level (on one thread) whose rounding dnnq follows at every level
REFERENCE_LEVEL = "avx512_core_vnni"


def onednn_level(onednn_isa):
    """The dnnq level whose numerics match oneDNN running at ISA `onednn_isa`."""
    if onednn_isa.startswith("avx512_core_amx"):
        return "avx512_core_amx"
    if onednn_isa.startswith("avx512_core"):
        return "avx512_core_vnni"  # the gemm blocking depends only on avx512_core + VNNI
    if onednn_isa.startswith("avx2_vnni"):
        return "avx2_vnni"
    if onednn_isa.startswith("avx2"):
        return "avx2"
    return "default"


def onednn_threads():
    """omp_get_max_threads() of the libgomp oneDNN runs on (its thread count)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libgomp" in line and "/" in line}
    for path in sorted(paths):
        return ctypes.CDLL(path).omp_get_max_threads()
    return 1


def _dims(rng, ksplit):
    if ksplit:  # few rows, long K: oneDNN splits K across 6+ threads
        return (int(rng.integers(1, 129)), int(rng.integers(40, 400)),
                int(rng.integers(3072, 5200)))
    M = int(rng.choice([rng.integers(1, 9), rng.integers(1, 25), rng.integers(60, 70)]))
    N = int(rng.choice([rng.integers(1, 9), rng.integers(1, 25), rng.integers(60, 70)]))
    K = int(rng.choice([rng.integers(1, 65), rng.integers(100, 400), rng.integers(380, 800),
                        rng.integers(2900, 3300)]))
    if M * N * K > 600_000:  # keep the batch fast
        K = int(rng.integers(1, 400))
    return M, N, K


def random_case(rng, u8_small=False, ksplit=False, shared_a=False):
    """One problem: (fn name, A, B, C or None, kwargs).  ksplit: shapes where oneDNN splits K
    across 6+ threads; shared_a: alpha = 1 with a rounded first K block and bo != 0, where
    oneDNN's multi-threaded shared-A driver sums the later blocks without saturating."""
    s8 = not u8_small and bool(rng.integers(2))
    M, N, K = _dims(rng, ksplit)
    if shared_a:
        M, N, K = int(rng.integers(20, 60)), int(rng.integers(20, 60)), int(rng.integers(390, 800))
    transa, transb = bool(rng.integers(2)), bool(rng.integers(2))
    adt = np.int8 if s8 else np.uint8
    lo, hi = (-128, 128) if s8 else (0, 128 if u8_small else 256)
    extreme = rng.integers(4) == 0  # large accumulators (> 2^24): every value at its bound
    a = (np.full((M, K), lo if s8 and rng.integers(2) else hi - 1) if extreme
         else rng.integers(lo, hi, (M, K))).astype(adt)
    b = (np.full((K, N), int(rng.choice([-128, 127]))) if extreme
         else rng.integers(-128, 128, (K, N))).astype(np.int8)
    A = np.ascontiguousarray(a.T) if transa else a
    B = np.ascontiguousarray(b.T) if transb else b
    alpha = float(rng.choice(ALPHAS)) if rng.integers(2) else float(rng.normal() * 2)
    beta = float(rng.choice(BETAS)) if rng.integers(2) else float(rng.normal() * 2)
    c_kind = rng.integers(3)
    if c_kind == 0:
        C = rng.integers(-1000, 1000, (M, N))
    elif c_kind == 1:  # saturation of beta * C
        C = rng.integers(*S32, (M, N), endpoint=True)
    else:
        C = rng.choice([S32[0], S32[1], S32[1] - 1, S32[0] + 1, 0], (M, N))
    if shared_a:
        alpha, beta = 1.0, float(rng.choice([0.5, 1.5, -1.0, 2.0]))
    C = C.astype(np.int32) if beta != 0.0 or rng.integers(2) else None
    ao = int(rng.integers(lo if u8_small else np.iinfo(adt).min, hi if u8_small else
                          np.iinfo(adt).max + 1)) if rng.integers(2) else 0
    bo = int(rng.integers(-128, 128)) if rng.integers(2) or shared_a else 0
    bo = bo or (1 if shared_a else 0)
    offsetc = str(rng.choice(["F", "C", "R"]))
    n_co = {"F": 1, "C": M, "R": N}[offsetc]
    co = (rng.integers(*S32, n_co, endpoint=True) if rng.integers(3) == 0
          else rng.integers(-50, 50, n_co)).astype(np.int32) if rng.integers(4) else None
    kw = dict(transa=transa, transb=transb, alpha=alpha, beta=beta, ao=ao, bo=bo, co=co,
              offsetc=offsetc)
    return ("gemm_s8s8s32" if s8 else "gemm_u8s8s32"), A, B, C, kw


def _gomp():
    """The libgomp oneDNN and dnnq share (its thread count is theirs)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libgomp" in line and "/" in line})
    return ctypes.CDLL(paths[0]) if paths else None


def compare(fn, A, B, C, kw, threads=None):
    """(dnnq result, oneDNN result); C is not modified.  threads: dnnq's thread count
    (oneDNN then runs on one; None: both as they are)."""
    import dnnq
    import dnnq.testing as onednn_ref
    ref_c = C.copy() if C is not None else None
    omp = _gomp() if threads is not None else None
    if omp is not None:
        omp.omp_set_num_threads(1)
    ref = getattr(onednn_ref, fn)(A, B, ref_c, **kw)
    if threads is not None:
        dnnq.set_num_threads(threads)
    out = getattr(dnnq, fn)(A, B, C.copy() if C is not None else None, **kw)
    return out, ref


def plan_kind(fn, A, B, kw, isa, threads):
    """Which of oneDNN's K sequences the case takes: "ksplit" (K slices on threads),
    "shared_a" (rounded first block then s32 sums), "blocks" (several rounded blocks),
    "one" (one rounded block) or "int" (exact s32)."""
    from dnnq.primitives._gemm_kplan import k_plan
    M, K = A.shape[::-1] if kw["transa"] else A.shape
    N = B.shape[0] if kw["transb"] else B.shape[1]
    plan = k_plan(isa, M, N, K, float(np.float32(kw["alpha"])), float(np.float32(kw["beta"])),
                  threads, kw["ao"], kw["bo"], fn == "gemm_s8s8s32")
    if len(plan) > 1:
        return "ksplit"
    blocks = plan[0]
    if len(blocks) > 1 and not blocks[-1][2]:
        return "shared_a"
    return "int" if not blocks[0][2] else "blocks" if len(blocks) > 1 else "one"


def run_cases(rng, cases, u8_small=False, ksplit=False, shared_a=False, threads=None):
    """Compare `cases` random problems (dnnq on `threads` threads, oneDNN on one; None: as
    they are); returns (failure descriptions, elements, kind counts)."""
    failures, elements, kinds = [], 0, {}
    for _ in range(cases):
        case = random_case(rng, u8_small, ksplit, shared_a)
        kind = plan_kind(case[0], case[1], case[2], case[4], REFERENCE_LEVEL, 1)
        kinds[kind] = kinds.get(kind, 0) + 1
        out, ref = compare(*case, threads=threads)
        elements += out.size
        if not np.array_equal(out, ref):
            failures.append(describe(*case, out, ref))
    return failures, elements, kinds


def describe(fn, A, B, C, kw, out, ref):
    bad = out != ref
    k = A.shape[0] if kw["transa"] else A.shape[1]
    shown = {k_: v for k_, v in kw.items() if k_ != "co"}
    return (f"{fn} M,N,K={out.shape + (k,)} {shown} co={None if kw['co'] is None else kw['co'][:3]}"
            f" C={'None' if C is None else (C.min(), C.max())}: {int(bad.sum())} differ, "
            f"dnnq {out[bad][:4]} oneDNN {ref[bad][:4]}")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--dnnq-isa", required=True)
    p.add_argument("--threads", type=int, default=1, help="dnnq's (oneDNN runs on one)")
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--u8-small", action="store_true",
                   help="u8 A below 128 only (oneDNN without VNNI saturates in s16)")
    p.add_argument("--ksplit", action="store_true")
    p.add_argument("--shared-a", action="store_true")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dnnq
    dnnq.set_max_cpu_isa(args.dnnq_isa)
    if dnnq.get_effective_cpu_isa() != args.dnnq_isa:
        print(f"dnnq level {dnnq.get_effective_cpu_isa()} is not {args.dnnq_isa}")
        return 1
    import dnnq.testing as onednn_ref
    if onednn_level(onednn_ref.cpu_isa()) != REFERENCE_LEVEL:  # the cap did not reach oneDNN
        print(f"oneDNN runs at {onednn_ref.cpu_isa()}, not at {REFERENCE_LEVEL}")
        return 1
    if onednn_threads() != 1:
        print(f"oneDNN runs {onednn_threads()} threads, not 1")
        return 1
    rng = np.random.default_rng(args.seed)
    failures, elements, kinds = run_cases(rng, args.cases, args.u8_small, args.ksplit,
                                          args.shared_a, threads=args.threads)
    if dnnq.get_num_threads() != args.threads:
        print(f"dnnq ran {dnnq.get_num_threads()} threads, not {args.threads}")
        return 1
    if failures:
        print("\n".join(failures[:10]))
        print(f"{len(failures)} of {args.cases} cases differ")
        return 1
    print("ok", args.cases, elements, " ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
