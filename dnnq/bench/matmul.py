"""Matmul problems for the driver: u8 x s8 -> dst with per-N weight scales and an f32 bias
(the issue's target configuration), timed for dnnq and, when given, oneDNN."""
import os
import time

import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.bench.problems import parse_matmul, parse_ip, parse_quant, parse_post_ops

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


def _mask(name, nd, per_oc_dim):
    if name == "common":
        return 0
    if name in ("per_oc", "per_n"):
        return 1 << per_oc_dim
    if name.startswith("per_dim_"):
        return sum(1 << int(c) for c in name[len("per_dim_"):])
    return int(name)


def build(driver, desc, knobs, rng):
    """A dnnq primitive, its execution args and the matching oneDNN call for one problem."""
    sdt, wdt, ddt = (knobs["dt"].split(":") + ["s8", "s8"])[:3]
    if driver == "matmul":
        sd, wd, name = parse_matmul(desc)
        nd = len(sd)
        dd = tuple(max(a, b) for a, b in zip(sd[:-2], wd[:-2])) + (sd[-2], wd[-1])
        n_dim, n = nd - 1, wd[-1]
        cls = dnnq.MatMul
    else:
        sd, wd, name = parse_ip(desc)
        dd, n_dim, n = (sd[0], wd[0]), 1, wd[0]
        cls = dnnq.InnerProduct
    info = np.iinfo(np.uint8 if sdt == "u8" else np.int8)
    src = rng.integers(info.min, info.max + 1, sd, dtype=info.dtype)
    wei = rng.integers(-128, 128, wd, dtype=np.int8)
    bdt = knobs["bia-dt"]
    bias_shape = (1,) * (len(dd) - 1) + (n,)
    bias = rng.normal(0, 1, bias_shape).astype(np.float32) if bdt not in ("", "undef") else None
    attr = PrimitiveAttr()
    args, ref_kw = {}, {}
    key_of = {"src": DNNL_ARG_SRC, "wei": DNNL_ARG_WEIGHTS, "dst": DNNL_ARG_DST}
    wei_oc_dim = 0 if driver == "ip" else len(wd) - 1
    for arg, (mname, value) in parse_quant(knobs["attr-scales"], "scales").items():
        mask = _mask(mname, len(dd), wei_oc_dim if arg == "wei" else n_dim)
        attr.set_scales_mask(key_of[arg], mask)
        count = 1 if mask == 0 else n
        vals = np.full(count, value, np.float32) if value is not None else \
            rng.uniform(1e-3, 1e-2, count).astype(np.float32)
        args[DNNL_ARG_SCALE | key_of[arg]] = vals
        ref_kw[f"{arg}_scales"], ref_kw[f"{arg}_scale_mask"] = vals, mask
    for arg, (mname, value) in parse_quant(knobs["attr-zero-points"], "zero-points").items():
        mask = _mask(mname, len(dd), n_dim)
        attr.set_zero_points_mask(key_of[arg], mask)
        count = 1 if mask == 0 else (sd[-1] if arg == "src" else n)
        vals = np.full(count, int(value or 0), np.int32) if value is not None else \
            rng.integers(-4, 5, count).astype(np.int32)
        args[DNNL_ARG_ATTR_ZERO_POINTS | key_of[arg]] = vals
        ref_kw[f"{arg}_zp"], ref_kw[f"{arg}_zp_mask"] = vals, mask
    ops, ref_ops, has_sum = PostOps(), [], False
    for i, op in enumerate(parse_post_ops(knobs["attr-post-ops"])):
        if op[0] == "eltwise":
            ops.append_eltwise(op[1], op[2], op[3])
            ref_ops.append(op)
        elif op[0] == "sum":
            ops.append_sum(op[1], op[2])
            ref_ops.append(op)
            has_sum = True
        else:
            shape = {"common": (1,) * len(dd), "per_tensor": dd}.get(
                op[3], (1,) * (len(dd) - 1) + (n,))
            s1 = rng.normal(0, 1, shape).astype(np.float32)
            ops.append_binary(op[1], MemoryDesc(shape, "f32"))
            args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = s1
            ref_ops.append(("binary", op[1], s1))
    attr.set_post_ops(ops)
    p = cls(MemoryDesc(sd, sdt), MemoryDesc(wd, wdt), MemoryDesc(dd, ddt),
            MemoryDesc(bias_shape, "f32") if bias is not None else None, attr=attr)
    dst_np = MemoryDesc(dd, ddt).numpy_dtype
    prev = rng.integers(0, 50, dd).astype(dst_np) if has_sum else None
    args.update({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: p.prepare_weights(wei),
                 DNNL_ARG_DST: prev.copy() if has_sum else np.empty(dd, dst_np)})
    if bias is not None:
        args[DNNL_ARG_BIAS] = bias
    return dict(p=p, args=args, src=src, wei=wei, bias=bias, ddt=ddt, ref_kw=ref_kw,
                ref_ops=ref_ops, prev=prev, ops=2 * int(np.prod(dd)) * sd[-1] if driver ==
                "matmul" else 2 * dd[0] * dd[1] * int(np.prod(sd[1:])), name=name)


def run_problems(problems, min_time, ref, use_torch):
    rng = np.random.default_rng(0)
    print(f"dnnq {dnnq.__version__}  isa={dnnq.get_effective_cpu_isa()}  "
          f"threads={dnnq.get_num_threads()}  peers="
          f"{'oneDNN 3.2 (ONEDNN_MAX_CPU_ISA=' + os.environ.get('ONEDNN_MAX_CPU_ISA', '') + ')' if ref else 'none'}")
    print(f"{'problem':24s} {'kernel':26s} {'dnnq us':>9s} {'GOPS':>7s} "
          f"{'oneDNN us':>10s} {'ratio':>6s} {'torch us':>9s} {'ratio':>6s}  notes")
    ratios, torch_ratios = [], []
    failures = 0
    for driver, desc, knobs in problems:
        label = f"{driver}:{desc}"[:24]
        if driver not in ("matmul", "ip"):
            print(f"{label:24s} skipped: the {driver} driver is not implemented in dnnq yet")
            continue
        try:
            b = build(driver, desc, knobs, rng)
        except dnnq.DnnqError as e:
            print(f"{label:24s} {type(e).__name__}: {e}")
            failures += 1
            continue
        p, args = b["p"], b["args"]
        ref_fn = None
        if ref is not None:
            fn = ref.matmul if driver == "matmul" else ref.inner_product
            ref_fn = lambda: fn(b["src"], b["wei"], b["bias"] if driver == "matmul" or b["bias"] is None
                                else b["bias"].reshape(-1), b["ddt"], post_ops=b["ref_ops"],
                                dst_prev=b["prev"], **b["ref_kw"])
        if knobs["mode"].upper() == "C":
            run_args = dict(args)
            if b["prev"] is not None:
                run_args[DNNL_ARG_DST] = b["prev"].copy()
            out = p.execute(run_args)
            if ref_fn is None:
                print(f"{label:24s} {p.impl_info:26s} no oneDNN to compare with")
                continue
            try:
                r = ref_fn()
            except Exception as e:  # oneDNN refuses the configuration
                print(f"{label:24s} {p.impl_info:26s} oneDNN: {e}")
                continue
            bad = int(np.count_nonzero(out != r)) if out.dtype != np.float32 else \
                int(np.count_nonzero(out.view(np.int32) != r.view(np.int32)))
            failures += bad > 0
            print(f"{label:24s} {p.impl_info:26s} {'PASSED' if not bad else 'FAILED'}: "
                  f"{out.size - bad} of {out.size} elements bit-identical to oneDNN")
            continue
        t_dnnq = best_time(lambda: p.execute(args), min_time)
        line = f"{label:24s} {p.impl_info:26s} {t_dnnq * 1e6:9.1f} {b['ops'] / t_dnnq / 1e9:7.0f}"
        notes = []
        # the oneDNN handle binds its buffers once: no sum post-op (it would need the
        # destination refilled before every execution)
        timed_peer = driver == "matmul" and b["prev"] is None
        simple = timed_peer and not b["ref_ops"] and "src_zp" not in b["ref_kw"] and \
            "dst_zp" not in b["ref_kw"] and len(b["src"].shape) == 2
        if ref is not None and timed_peer:
            h = ref.MatmulHandle(b["src"], b["wei"], b["bias"], b["ddt"], post_ops=b["ref_ops"],
                                 **b["ref_kw"])
            t_ref = best_time(h.execute, min_time)
            same = np.array_equal(h.execute(), p.execute(args))
            failures += not same
            ratios.append(t_dnnq / t_ref)
            line += f" {t_ref * 1e6:10.1f} {t_dnnq / t_ref:6.2f}"
            notes.append(h.impl + ("" if same else " RESULTS DIFFER"))
            h.close()
        else:
            line += f" {'-':>10s} {'-':>6s}"
        tl = None
        if use_torch and simple and b["src"].dtype == np.uint8 and "src_scales" in b["ref_kw"] \
                and "wei_scales" in b["ref_kw"] and "dst_scales" in b["ref_kw"] and b["bias"] is not None:
            kw = b["ref_kw"]
            ws = kw["wei_scales"] if kw["wei_scales"].size > 1 else \
                np.full(b["wei"].shape[-1], kw["wei_scales"][0], np.float32)
            tl = torch_linear(b["src"], b["wei"], b["bias"], kw["src_scales"], ws,
                              kw["dst_scales"], dnnq.get_num_threads())
        if tl is not None:
            t_t = best_time(tl[0], min_time)
            torch_ratios.append(t_dnnq / t_t)
            line += f" {t_t * 1e6:9.1f} {t_dnnq / t_t:6.2f}"
            notes.append(tl[1])
        else:
            line += f" {'-':>9s} {'-':>6s}"
        print(line + "  " + ", ".join(notes), flush=True)
    for peer, rs in (("oneDNN", ratios), ("PyTorch quantized Linear", torch_ratios)):
        if rs:
            gm = float(np.exp(np.mean(np.log(rs))))
            print(f"geometric mean time ratio dnnq/{peer}: {gm:.3f} over {len(rs)} problems "
                  f"(< 1 means dnnq is faster); max {max(rs):.2f}")
    return 1 if failures else 0
