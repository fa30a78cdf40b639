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


def torch_linear(x_u8, w_s8, bias, ss, ws, ds, threads):
    """PyTorch's quantized Linear on the same problem (quint8 x qint8 per-channel -> quint8,
    f32 bias), or None when PyTorch is not installed.  Returns (callable, engine name)."""
    try:
        import warnings
        import torch
    except ImportError:
        return None
    warnings.filterwarnings("ignore", message=".*quantized tensor creation.*")
    torch.set_num_threads(threads)
    engine = "x86" if "x86" in torch.backends.quantized.supported_engines else "fbgemm"
    torch.backends.quantized.engine = engine
    N, K = w_s8.shape[1], w_s8.shape[0]
    xq = torch._make_per_tensor_quantized_tensor(torch.from_numpy(x_u8), float(ss[0]), 0)
    wq = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(np.ascontiguousarray(w_s8.T)), torch.from_numpy(ws.astype(np.float64)),
        torch.zeros(N, dtype=torch.long), 0)
    lin = torch.ao.nn.quantized.Linear(K, N, dtype=torch.qint8)
    lin.set_weight_bias(wq, torch.from_numpy(bias.reshape(-1).copy()))
    lin.scale, lin.zero_point = float(ds[0]), 0
    return (lambda: lin(xq)), f"torch:{engine}"


def run_matmul(problems, opts, ref):
    sdt, wdt, ddt = opts.dt.split(":")
    rng = np.random.default_rng(0)
    print(f"dnnq {dnnq.__version__}  isa={dnnq.get_effective_cpu_isa()}  "
          f"threads={dnnq.get_num_threads()}  dt={opts.dt}  peers="
          f"{'oneDNN 3.2 (ONEDNN_MAX_CPU_ISA=' + os.environ.get('ONEDNN_MAX_CPU_ISA', '') + ')' if ref else 'none'}")
    use_torch = not opts.no_peers
    print(f"{'problem':22s} {'kernel':28s} {'dnnq us':>9s} {'GOPS':>7s} "
          f"{'oneDNN us':>10s} {'ratio':>6s} {'torch us':>9s} {'ratio':>6s}  peers")
    ratios, torch_ratios = [], []
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
        peers = []
        if ref is not None:
            h = ref.MatmulHandle(src, wei, bias, ddt, src_scales=ss, wei_scales=ws,
                                 wei_scale_mask=2, dst_scales=ds)
            t_ref = best_time(h.execute, opts.min_time)
            same = np.array_equal(h.execute(), p.execute(args))
            failures += not same
            ratios.append(t_dnnq / t_ref)
            line += f" {t_ref * 1e6:10.1f} {t_dnnq / t_ref:6.2f}"
            peers.append(h.impl + ("" if same else " RESULTS DIFFER"))
            h.close()
        else:
            line += f" {'-':>10s} {'-':>6s}"
        tl = torch_linear(src, wei, bias, ss, ws, ds, dnnq.get_num_threads()) \
            if use_torch and sdt == "u8" else None
        if tl is not None:
            t_t = best_time(tl[0], opts.min_time)
            torch_ratios.append(t_dnnq / t_t)
            line += f" {t_t * 1e6:9.1f} {t_dnnq / t_t:6.2f}"
            peers.append(tl[1])
        else:
            line += f" {'-':>9s} {'-':>6s}"
        print(line + "  " + ", ".join(peers), flush=True)
    for peer, rs in (("oneDNN", ratios), ("PyTorch quantized Linear", torch_ratios)):
        if rs:
            gm = float(np.exp(np.mean(np.log(rs))))
            print(f"geometric mean time ratio dnnq/{peer}: {gm:.3f} over {len(rs)} problems "
                  f"(< 1 means dnnq is faster); max {max(rs):.2f}")
    return 1 if failures else 0
