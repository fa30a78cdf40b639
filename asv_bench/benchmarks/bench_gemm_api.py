"""asv: dnnq.gemm_u8s8s32 (packs B on every call, as oneDNN's dnnl_gemm_u8s8s32 does) on
128x768x3072, plain (alpha 1, beta 0) and with alpha / beta / ao / bo / co, 1 and 2 threads.

Run as a script for the same-run ratios against MatMul (u8 x s8 -> s32, weights packed once)
and oneDNN's dnnl_gemm_u8s8s32 (through ctypes, its argument tuple built once; OMP_NUM_THREADS
sets oneDNN's threads, so give it the same count):

    OMP_NUM_THREADS=1 python -P asv_bench/benchmarks/bench_gemm_api.py
"""
import os
import sys
import time

import numpy as np

import dnnq
from dnnq import MemoryDesc, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS

M, K, N = 128, 768, 3072
FULL = dict(alpha=0.5, beta=1.5, ao=3, bo=-2, offsetc="R")


def _data():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 256, (M, K), dtype=np.uint8)
    B = rng.integers(-128, 128, (K, N), dtype=np.int8)
    C = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    co = rng.integers(-50, 50, N).astype(np.int32)
    return A, B, C, co


class GemmU8S8S32:
    params = ([1, 2], ["plain", "alpha_beta_offsets"])
    param_names = ["threads", "kind"]

    def setup(self, threads, kind):
        dnnq.set_num_threads(threads)
        self.A, self.B, self.C, self.co = _data()
        self.kw = {} if kind == "plain" else dict(FULL, co=self.co)

    def time_gemm(self, threads, kind):
        dnnq.gemm_u8s8s32(self.A, self.B, self.C, **self.kw)


def _best(fns, reps=60):
    """Best time of each function, the functions interleaved call by call so that a noisy
    moment of a shared machine hits all of them alike."""
    for f in fns:
        f()
    ts = [[] for _ in fns]
    for _ in range(reps):
        for f, t_list in zip(fns, ts):
            t = time.perf_counter()
            f()
            t_list.append(time.perf_counter() - t)
    return [min(t_list) for t_list in ts]


def main():
    import ctypes
    import dnnq.testing as onednn_ref
    threads = int(os.environ.get("OMP_NUM_THREADS", "0")) or dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    A, B, C, co = _data()
    mm = dnnq.MatMul(MemoryDesc((M, K), "u8"), MemoryDesc((K, N), "s8"),
                     MemoryDesc((M, N), "s32"))
    margs = {DNNL_ARG_SRC: A, DNNL_ARG_WEIGHTS: mm.prepare_weights(B)}
    fn = onednn_ref._capi.lib().dll.dnnl_gemm_u8s8s32
    Cd, Co = C.copy(), C.copy()
    zero = np.zeros(1, np.int32)
    plain = (b"N", b"N", b"F", M, N, K, 1.0, A.ctypes.data, K, 0, B.ctypes.data, N, 0, 0.0,
             Co.ctypes.data, N, zero.ctypes.data)
    full = (b"N", b"N", b"R", M, N, K, FULL["alpha"], A.ctypes.data, K, FULL["ao"],
            B.ctypes.data, N, FULL["bo"], FULL["beta"], Co.ctypes.data, N, co.ctypes.data)
    print(f"{M}x{K}x{N}, {threads} thread(s), best of 60 interleaved calls each, same process "
          f"(oneDNN {'.'.join(map(str, onednn_ref.version()))} at {onednn_ref.cpu_isa()}, "
          f"dnnq at {dnnq.get_effective_cpu_isa()})")
    t_gemm, t_mm, t_one = _best([lambda: dnnq.gemm_u8s8s32(A, B, Cd), lambda: mm.execute(margs),
                                 lambda: fn(*plain)])
    print(f"  plain: gemm_u8s8s32 {t_gemm * 1e3:.3f} ms, MatMul {t_mm * 1e3:.3f} ms, oneDNN "
          f"gemm {t_one * 1e3:.3f} ms -> gemm/MatMul {t_gemm / t_mm:.2f}, "
          f"gemm/oneDNN {t_gemm / t_one:.2f}")
    t_gemm, t_one = _best([lambda: dnnq.gemm_u8s8s32(A, B, Cd, co=co, **FULL),
                           lambda: fn(*full)], reps=20)
    print(f"  alpha 0.5, beta 1.5, ao 3, bo -2, co per column: gemm_u8s8s32 {t_gemm * 1e3:.3f} "
          f"ms, oneDNN gemm {t_one * 1e3:.3f} ms -> gemm/oneDNN {t_gemm / t_one:.2f}")


if __name__ == "__main__":
    main()
