"""Matmul problems for the driver: u8 x s8 -> dst with per-N weight scales and an f32 bias
(the issue's target configuration), timed for dnnq and, when given, oneDNN."""
import os
import time

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                  DNNL_ARG_BIAS, DNNL_ARG_SCALE)

# BERT-base linear layers (M = tokens) and an LSTM gate GEMM (batch 32, 4 gates x 512)
DEFAULT_MATMULS = [
    "1x768:768x768", "1x768:768x3072", "128x768:768x768", "128x768:768x3072",
    "512x768:768x768", "512x768:768x3072", "512x3072:3072x768", "32x512:512x2048",
]


def parse(desc):
    a, b = desc.lower().split(":")
    M, K = (int(x) for x in a.split("x"))
    K2, N = (int(x) for x in b.split("x"))
    if K != K2:
        raise SystemExit(f"bad matmul descriptor {desc!r}: K {K} != {K2}")
    return M, K, N


def best_time(fn, min_time):
    fn()
    n, t = 1, 0.0
    while True:  # calibrate a repeat count of about min_time / 5
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t > min_time / 5:
            break
        n *= 2
    best = t / n
    for _ in range(4):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def run_matmul(problems, opts, ref):
    sdt, wdt, ddt = opts.dt.split(":")
    rng = np.random.default_rng(0)
    print(f"dnnq {dnnq.__version__}  isa={dnnq.get_effective_cpu_isa()}  "
          f"threads={dnnq.get_num_threads()}  dt={opts.dt}  peers="
          f"{'oneDNN 3.2 (ONEDNN_MAX_CPU_ISA=' + os.environ.get('ONEDNN_MAX_CPU_ISA', '') + ')' if ref else 'none'}")
    print(f"{'problem':22s} {'kernel':28s} {'dnnq us':>9s} {'GOPS':>7s} "
          f"{'oneDNN us':>10s} {'ratio':>6s}  oneDNN kernel")
    ratios = []
    failures = 0
    for desc in problems:
        M, K, N = parse(desc)
        info = np.iinfo(np.uint8 if sdt == "u8" else np.int8)
        src = rng.integers(info.min, info.max + 1, (M, K), dtype=info.dtype)
        wei = rng.integers(-128, 128, (K, N), dtype=np.int8)
        bias = rng.normal(0, 1, (1, N)).astype(np.float32)
        ws = rng.uniform(1e-3, 1e-2, N).astype(np.float32)
        ss, ds = np.array([0.05], np.float32), np.array([0.5], np.float32)
        attr = PrimitiveAttr()
        attr.set_scales_mask(DNNL_ARG_SRC, 0)
        attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
        attr.set_scales_mask(DNNL_ARG_DST, 0)
        p = dnnq.MatMul(MemoryDesc((M, K), sdt), MemoryDesc((K, N), wdt),
                        MemoryDesc((M, N), ddt), MemoryDesc((1, N), "f32"), attr=attr)
        dst = np.empty((M, N), MemoryDesc((M, N), ddt).numpy_dtype)
        args = {DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: p.prepare_weights(wei), DNNL_ARG_BIAS: bias,
                DNNL_ARG_SCALE | DNNL_ARG_SRC: ss, DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws,
                DNNL_ARG_SCALE | DNNL_ARG_DST: ds, DNNL_ARG_DST: dst}
        t_dnnq = best_time(lambda: p.execute(args), opts.min_time)
        gops = 2 * M * K * N / t_dnnq / 1e9
        line = f"{desc:22s} {p.impl_info:28s} {t_dnnq * 1e6:9.1f} {gops:7.0f}"
        if ref is not None:
            h = ref.MatmulHandle(src, wei, bias, ddt, src_scales=ss, wei_scales=ws,
                                 wei_scale_mask=2, dst_scales=ds)
            t_ref = best_time(h.execute, opts.min_time)
            same = np.array_equal(h.execute(), p.execute(args))
            failures += not same
            ratios.append(t_dnnq / t_ref)
            line += f" {t_ref * 1e6:10.1f} {t_dnnq / t_ref:6.2f}  {h.impl}" + \
                ("" if same else "  RESULTS DIFFER")
            h.close()
        print(line, flush=True)
    if ratios:
        gm = float(np.exp(np.mean(np.log(ratios))))
        print(f"geometric mean time ratio dnnq/oneDNN: {gm:.3f} over {len(ratios)} problems "
              f"(< 1 means dnnq is faster); max {max(ratios):.2f}")
    return 1 if failures else 0
