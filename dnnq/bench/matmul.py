"""The driver's matmul and ip kinds (``--matmul MxK:KxN``, ``--ip mbXicXocX``).

Default problem configuration (the issue's target): u8 source, s8 weights, s8 destination,
one common source scale, per-N (per output channel) weight scales, a common destination
scale, an f32 bias, no zero points, no post-ops.  Peers: oneDNN 3.2 (``dnnq.testing``,
timed through ``MatmulHandle.runner()`` / ``InnerProductHandle.runner()``: argument array
built once) and PyTorch's quantized Linear (u8 2-D sources with src / wei / dst scales and a
bias, no zero points or post-ops).
"""
import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.bench.problems import mask_of, parse_matmul, parse_ip, parse_quant, parse_post_ops
from dnnq.bench.registry import Case, register, register_set, split_dt

SETTINGS = {"dt": "u8:s8:s8", "bia-dt": "f32",
            "attr-scales": "src:common:0.05+wei:per_oc+dst:common:0.5",
            "attr-zero-points": "", "attr-post-ops": ""}
SUMMARY = ("u8 src, s8 weights, s8 dst (--dt=src:wei:dst), f32 bias (--bia-dt), scales: "
           "src common 0.05, weights per output channel (random in [1e-3, 1e-2)), dst common "
           "0.5 (--attr-scales), no zero points (--attr-zero-points), no post-ops "
           "(--attr-post-ops)")


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
    mask = mask_of(name, 1 << per_oc_dim)
    return (1 << nd) - 1 if mask is None else mask


def build(driver, parsed, knobs, rng):
    """A dnnq primitive, its execution args and the matching oneDNN call for one problem."""
    sdt, wdt, ddt = split_dt(knobs["dt"])
    if driver == "matmul":
        sd, wd, name = parsed
        nd = len(sd)
        dd = tuple(max(a, b) for a, b in zip(sd[:-2], wd[:-2])) + (sd[-2], wd[-1])
        n_dim, n = nd - 1, wd[-1]
        cls = dnnq.MatMul
    else:
        sd, wd, name = parsed
        dd, n_dim, n = (sd[0], wd[0]), 1, wd[0]
        cls = dnnq.InnerProduct
    f32 = sdt == "f32" or wdt == "f32"
    if f32:  # an f32 layer: N(0, 1) data, weights scaled to keep the sums O(1)
        src = rng.standard_normal(sd).astype(np.float32)
        wei = (rng.standard_normal(wd) / np.sqrt(sd[-1] if driver == "matmul" else
                                                 np.prod(sd[1:]))).astype(np.float32)
    else:
        info = np.iinfo(np.uint8 if sdt == "u8" else np.int8)
        src = rng.integers(info.min, info.max + 1, sd, dtype=info.dtype)
        wei = rng.integers(-128, 128, wd, dtype=np.int8)
    bdt = knobs["bia-dt"].lower()
    bias_shape = (1,) * (len(dd) - 1) + (n,)
    bias = rng.normal(0, 1, bias_shape).astype(np.float32) if bdt not in ("", "undef") else None
    attr = PrimitiveAttr()
    args, ref_kw = {}, {}
    key_of = {"src": DNNL_ARG_SRC, "wei": DNNL_ARG_WEIGHTS, "dst": DNNL_ARG_DST}
    wei_oc_dim = 0 if driver == "ip" else len(wd) - 1
    for arg, (mname, value) in parse_quant(knobs["attr-scales"], "scales").items():
        if f32 and (arg != "dst" or ddt == "f32"):
            continue  # f32 inputs take no scales; an f32 dst none by default
        mask = _mask(mname, len(dd), wei_oc_dim if arg == "wei" else n_dim)
        attr.set_scales_mask(key_of[arg], mask)
        count = 1 if mask == 0 else n
        vals = np.full(count, value, np.float32) if value is not None else \
            rng.uniform(1e-3, 1e-2, count).astype(np.float32)
        args[DNNL_ARG_SCALE | key_of[arg]] = vals
        ref_kw[f"{arg}_scales"], ref_kw[f"{arg}_scale_mask"] = vals, mask
    for arg, (mname, value) in parse_quant(knobs["attr-zero-points"], "zero-points").items():
        if f32 and arg != "dst":
            continue  # f32 inputs take no zero points
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
    return dict(p=p, args=args, src=src, wei=wei, bias=bias, ddt=ddt, ref_kw=ref_kw, f32=f32,
                ref_ops=ref_ops, prev=prev, ops=2 * int(np.prod(dd)) * sd[-1] if driver ==
                "matmul" else 2 * dd[0] * dd[1] * int(np.prod(sd[1:])), name=name)




def _torch_peer(driver, b, threads):
    """PyTorch's quantized Linear on the same problem, or the reason it is not timed."""
    kw = b["ref_kw"]
    why = None
    if b["f32"]:
        why = "f32"  # an f32 layer: oneDNN's f32 primitive and numpy are the peers
    elif b["src"].dtype != np.uint8:
        why = "s8 source"
    elif b["src"].ndim != 2:
        why = "batched"
    elif b["ref_ops"] or "src_zp" in kw or "dst_zp" in kw:
        why = "post-ops/zp"
    elif not all(f"{a}_scales" in kw for a in ("src", "wei", "dst")) or b["bias"] is None:
        why = "needs scales+bias"
    elif b["ddt"] != "u8" and b["ddt"] != "s8":
        why = f"{b['ddt']} dst"
    if why:
        return f"n/a: {why}"
    wei = b["wei"] if driver == "matmul" else b["wei"].T
    ws = kw["wei_scales"] if kw["wei_scales"].size > 1 else \
        np.full(wei.shape[-1], kw["wei_scales"][0], np.float32)
    tl = torch_linear(b["src"], wei, b["bias"], kw["src_scales"], ws, kw["dst_scales"], threads)
    return "not installed" if tl is None else tl


def _f32_tolerance(driver, b, env, bias):
    """2 (K + 1) u sum |products| (+ |bias|), from oneDNN's f32 primitive on |src|, |wei|:
    the bound of two f32 sums of the same products in different orders."""
    K = int(np.prod(b["src"].shape[1:])) if driver == "ip" else b["src"].shape[-1]

    def tolerance():
        fn = env.onednn.inner_product if driver == "ip" else env.onednn.matmul
        mag = fn(np.abs(b["src"]), np.abs(b["wei"]), None if bias is None else np.abs(bias),
                 "f32")
        return 2 * (K + 1) * 2.0 ** -24 * mag.astype(np.float64)
    return tolerance


def create(driver, parsed, settings, env):
    b = build(driver, parsed, settings, env.rng)
    p, args = b["p"], b["args"]
    prev = b["prev"]
    case = Case(kernel=p.impl_info, ops=b["ops"], dnnq=lambda: p.execute(args))
    handle = None
    if env.onednn is None:
        case.peers["oneDNN"] = case.reference = env.onednn_absent
    else:
        cls = env.onednn.MatmulHandle if driver == "matmul" else env.onednn.InnerProductHandle
        bias = b["bias"] if driver == "matmul" or b["bias"] is None else b["bias"].reshape(-1)
        ref_dt, ref_kw, ref_prev = b["ddt"], b["ref_kw"], prev
        if b["f32"]:
            # oneDNN's f32 primitive is the timed peer (it has no f32 -> int8 matmul); the
            # check puts its f32 result through its quantizing reorder
            ref_dt, ref_kw = "f32", {}
            ref_prev = None if prev is None else prev.astype(np.float32)
        try:
            handle = cls(b["src"], b["wei"], bias, ref_dt, post_ops=b["ref_ops"],
                         dst_prev=ref_prev, **ref_kw)
        except env.onednn.OnednnError as exc:
            case.peers["oneDNN"] = "refused"
            case.reference = f"oneDNN refused: {exc}"
            case.notes.append(f"oneDNN: {exc}")
        else:
            run_ref = handle.runner()
            case.peers["oneDNN"] = run_ref
            case.notes.append(handle.impl)

            def reference():
                run_ref()
                if not b["f32"] or b["ddt"] == "f32":
                    return handle.dst
                kw = b["ref_kw"]
                return env.onednn.reorder(handle.dst, b["ddt"],
                                          dst_scales=kw.get("dst_scales"),
                                          dst_zp=kw.get("dst_zp"))
            case.reference = reference
            if b["f32"]:
                case.tolerance = _f32_tolerance(driver, b, env, bias)
            if not env.onednn.has_vnni() and not b["f32"]:  # --peer-isa=AVX2: s16 saturation
                case.reference = "oneDNN without VNNI is not exact (s16 saturation)"
    if prev is not None:  # a sum post-op reads the destination: refill both before a check
        def before_check():
            args[DNNL_ARG_DST][...] = prev
            if handle is not None:
                handle.dst[...] = prev
        case.before_check = before_check
    if not env.use_torch:
        case.peers["torch"] = "--no-peers"
    else:
        tl = _torch_peer(driver, b, env.threads)
        case.peers["torch"] = tl if isinstance(tl, str) else tl[0]
        if not isinstance(tl, str):
            case.notes.append(tl[1])
    if b["f32"] and driver == "matmul":
        case.peers["numpy"] = _numpy_peer(b, env.threads, case.notes)
    if handle is not None:
        case.close = handle.close
    return case


#: the BERT-base layer matmuls (sequence lengths 1, 128 and 512), and one of a 512-wide model
BERT_BASE = ["1x768:768x768", "1x768:768x3072", "128x768:768x768", "128x768:768x3072",
             "512x768:768x768", "512x768:768x3072", "512x3072:3072x768", "32x512:512x2048"]


def _numpy_peer(b, threads, notes):
    """numpy's f32 matmul (its BLAS: OpenBLAS in the wheels, limited to the driver's threads
    through threadpoolctl where installed) on the f32 layer's data, into a preallocated
    output, bias added: the plain f32 GEMM a user would call."""
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(threads, user_api="blas")  # for the rest of the process
    except ImportError:
        notes.append("numpy: its BLAS's own thread count (threadpoolctl not installed)")
    x, w, bias = b["src"], b["wei"], b["bias"]
    out = np.empty(np.broadcast_shapes(x.shape[:-1], w.shape[:-2] + (1,)) + (w.shape[-1],),
                   np.float32)

    def run():
        np.matmul(x, w, out=out)
        if bias is not None:
            np.add(out, bias, out=out)
    return run


register("matmul", parse=parse_matmul, create=lambda *a: create("matmul", *a),
         settings=SETTINGS, summary=SUMMARY, syntax='[BxMxK|MxK]:[BxKxN|KxN][_n"NAME"]',
         example="128x768:768x3072, batched 12x128x64:12x64x128")
register_set("matmul", "bert_base", BERT_BASE, "BERT-base's layer matmuls at sequence "
             "lengths 1, 128 and 512, and a 512-wide FFN (the default problems)")
register("ip", parse=parse_ip, create=lambda *a: create("ip", *a),
         settings=SETTINGS, summary=SUMMARY, syntax='mbXicX[idX][ihX][iwX]ocX[_n"NAME"]',
         example="mb128ic768oc3072")
