"""How each fuzzed family is called (CALLS) and the cheap numpy references (REFERENCES) of the
fuzz test; the cases are described in ``_fuzz_runner`` and drawn in ``_fuzz_strategies``."""
import numpy as np

import dnnq
from dnnq import args as A

from _fuzz_runner import Violation, build


def _primitive(case, args):
    cls, pos, kw = case["ctor"]
    p = getattr(dnnq, cls)(*build(pos), **{k: build(v) for k, v in kw.items()})
    rnn = cls in ("LSTM", "GRU", "LBRGRU", "VanillaRNN")
    if case.get("prepare") and not rnn and isinstance(args.get(A.DNNL_ARG_WEIGHTS), np.ndarray):
        args[A.DNNL_ARG_WEIGHTS] = p.prepare_weights(args[A.DNNL_ARG_WEIGHTS])
    if case.get("prepare") and rnn:
        keys = (A.DNNL_ARG_WEIGHTS_LAYER, A.DNNL_ARG_WEIGHTS_ITER)
        if all(isinstance(args.get(k), np.ndarray) for k in keys):
            args.update(p.prepare_weights({k: args[k] for k in keys}))
    return p.execute(args)


def _gemm(case, args):
    fn = getattr(dnnq, case["fn"])
    return fn(args.get("A"), args.get("B"), args.get("C"), co=args.get("co"),
              **{k: build(v) for k, v in case["kw"].items()})


def _fake_quantize(case, args):
    kw = {k: build(v) for k, v in case["kw"].items()}
    bounds = [kw[k] for k in ("il", "ih", "ol", "oh")]
    if not case.get("as_post_op"):
        return dnnq.fake_quantize(args.get("x"), *bounds, kw["levels"])
    ops = dnnq.PostOps()
    extra = dnnq.append_fake_quantize(ops, *bounds, kw["levels"])
    attr = dnnq.PrimitiveAttr()
    attr.set_post_ops(ops)
    md = build(case["md"])
    p = dnnq.Eltwise("linear", md, md, 1.0, 0.0, attr=attr)
    return p.execute({**args, **extra})


def _quantize(case, args):
    kw = {k: build(v) for k, v in case["kw"].items()}
    if case["fn"] == "quantize":
        return dnnq.quantize(args.get("x"), args.get("scale", kw.get("scale")),
                             args.get("zp", kw.get("zp")), kw["dt"], axis=kw.get("axis"))
    return dnnq.dequantize(args.get("x"), args.get("scale", kw.get("scale")),
                           args.get("zp", kw.get("zp")), axis=kw.get("axis"))


def _calibrate(case, args):
    kw = {k: build(v) for k, v in case["kw"].items()}
    fn = getattr(dnnq.calibrate, case["fn"])
    return fn(args.get("x"), **kw)


def _api(case, args):
    """A list of descriptor / attribute / post-op / argument-id calls; each one alone."""
    out = []
    first = None
    for call in case["calls"]:
        try:
            out.append(_api_call(call))
        except (dnnq.InvalidArguments, dnnq.Unimplemented, MemoryError) as exc:
            first = first or exc
            if not str(exc).strip():
                raise
            out.append(type(exc).__name__)
    return out


def _api_call(call):
    what = call[0]
    if what == "md":
        _, dims, dt, tag, method, marg = call
        md = dnnq.MemoryDesc(dims, dt, tag)
        if method == "logical_view":
            return md.logical_view(build(marg))
        if method == "check_array":
            return md.check_array(build(marg), "x")
        if method == "from_array":
            return dnnq.MemoryDesc.from_array(build(marg), tag)
        if method == "props":
            return (md.nelems, md.dims, md.dt, md.physical_shape, md.strides, hash(md),
                    repr(md), md == dnnq.MemoryDesc(dims, dt, tag))
        return md
    if what == "attr":
        attr = build(("attr", call[1]))
        return (attr.scales_args(), attr.zero_points_args(), attr.rnn_data_qparams,
                repr(attr.rnn_weights_qparams), len(attr.post_ops or ()), attr.key())
    if what == "arg":
        x = call[1]
        parts = A.decode(x)
        name = A.name(x)
        if A.encode(parts) != x or A.from_name(name) != x:
            raise Violation(f"args: {x!r} decodes to {parts} named {name!r}, which do not "
                            "encode back to it")
        if A.from_onednn_v3(A.to_onednn_v3(x)) != x:
            raise Violation(f"args: {x!r} does not survive to_onednn_v3 / from_onednn_v3")
        return name
    if what == "arg_name":
        return A.from_name(call[1])
    if what == "arg_v3":
        return A.from_onednn_v3(call[1])
    if what == "post_op_id":
        return A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(call[1])
    if what == "mask":
        return dnnq.scale_count(call[1], call[2])
    if what == "as_dt":
        return dnnq.as_dt(call[1])
    if what == "runtime":
        fn, value = call[1], call[2]
        if fn == "set_num_threads":
            old = dnnq.get_num_threads()
            try:
                dnnq.set_num_threads(value)
            finally:
                dnnq.set_num_threads(old)
        elif fn == "set_verbose":
            old = dnnq.get_verbose()
            try:
                dnnq.set_verbose(value)
            finally:
                dnnq.set_verbose(old)
        elif fn == "set_max_cpu_isa":
            old = dnnq.set_max_cpu_isa(value)
            dnnq.set_max_cpu_isa(old)
        elif fn == "set_primitive_cache_capacity":
            old = dnnq.set_primitive_cache_capacity(value)
            dnnq.set_primitive_cache_capacity(old)
        return None
    raise AssertionError(call)


def _self_test_crash(case, args):
    import os
    os.abort()


def _self_test_half_written(case, args):
    dst = args[A.DNNL_ARG_DST]
    dst.reshape(-1)[: dst.size // 2] = 1  # the other half keeps the poison
    return dst


def _self_test_type_error(case, args):
    raise TypeError("not an allowed exception type")


CALLS = {
    # the oracle's own tests (test_fuzz.py): a crash, an unwritten output, a leaked TypeError
    "_crash": _self_test_crash, "_half_written": _self_test_half_written,
    "_type_error": _self_test_type_error,
    "gemm": _gemm, "fake_quantize": _fake_quantize, "quantize": _quantize,
    "calibrate": _calibrate, "api": _api,
}
for _fam in ("matmul", "inner_product", "convolution", "deconvolution", "lstm", "gru",
             "lbr_gru", "vanilla_rnn", "pooling", "reorder", "eltwise", "binary", "sum",
             "concat", "softmax"):
    CALLS[_fam] = _primitive


# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------

def _expect(name, got, want):
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype or \
            not np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
        bad = np.argwhere(got != want) if got.shape == want.shape else "shape"
        raise Violation(f"{name}: result differs from the numpy reference "
                        f"({got.dtype}{got.shape} vs {want.dtype}{want.shape}); first "
                        f"differences at {bad[:5] if not isinstance(bad, str) else bad}")


def _ref_matmul(case, args, result):
    x = args[A.DNNL_ARG_SRC].astype(np.int64)
    w = args[A.DNNL_ARG_WEIGHTS].astype(np.int64)
    _expect("MatMul s32", result, np.matmul(x, w).astype(np.int32))


def _ref_gemm(case, args, result):
    a, b = args["A"].astype(np.int64), args["B"].astype(np.int64)
    kw = case["kw"]
    if kw.get("transa"):
        a = a.T
    if kw.get("transb"):
        b = b.T
    _expect(case["fn"], result, (a @ b).astype(np.int32))


_LIMITS = {"u8": (0, 255), "s8": (-128, 127), "s32": (-2 ** 31, 2147483520)}


def _ref_reorder(case, args, result):
    x = args[A.DNNL_ARG_SRC]
    dst_dt = case["ctor"][1][1][2]
    if dst_dt == "f32":
        want = x.astype(np.float32)
    elif x.dtype == np.float32:
        lo, hi = _LIMITS[dst_dt]
        want = np.clip(np.rint(x.astype(np.float64)), lo, hi).astype(dnnq.memory.numpy_dtype(
            dst_dt))
    else:
        lo, hi = _LIMITS[dst_dt]
        hi = 2 ** 31 - 1 if dst_dt == "s32" else hi
        want = np.clip(x.astype(np.int64), lo, hi).astype(dnnq.memory.numpy_dtype(dst_dt))
    _expect("Reorder", result, want)


def _ref_relu(case, args, result):
    x = args[A.DNNL_ARG_SRC]
    _expect("Eltwise relu", result, np.where(x > 0, x, np.float32(0) * x))


def _ref_pool(case, args, result):
    """Max / average pooling in numpy: taps in (d, h, w) order, f32 sums of f32 sources in
    that order, the average f32(sum) / f32(count) -- times f32(1 / count) for an integer
    source with src and dst channels-last (the kernel table of dnnq.primitives.pooling) --
    then saturate(rne) (f32 dst: the value)."""
    x = args[A.DNNL_ARG_SRC]
    alg = case["ctor"][1][0].replace("pooling_", "")
    dst_dt = case["ctor"][1][2][2]
    kw = case["ctor"][2]
    nsp = x.ndim - 2

    def per(v, default):
        v = default if v is None else v
        return [v] * nsp if isinstance(v, int) else list(v)

    k, s = per(kw["kernel"], 1), per(kw["strides"], 1)
    d = per(kw.get("dilation"), 0)
    pl = per(kw.get("padding_l"), 0)
    pr = per(kw.get("padding_r"), None) if kw.get("padding_r") is not None else pl
    out_sp = [(x.shape[2 + i] - ((k[i] - 1) * (d[i] + 1) + 1) + pl[i] + pr[i]) // s[i] + 1
              for i in range(nsp)]
    f32 = x.dtype == np.float32
    low = np.finfo(np.float32).min if f32 else np.iinfo(x.dtype).min
    acc_t = np.float32 if f32 else np.int64
    acc = np.full(x.shape[:2] + tuple(out_sp), low if alg == "max" else 0, acc_t)
    count = np.zeros(tuple(out_sp), np.int64)
    for o in np.ndindex(*out_sp):
        idx = (slice(None), slice(None)) + tuple(o)
        for t in np.ndindex(*k):
            pos = [o[i] * s[i] - pl[i] + t[i] * (d[i] + 1) for i in range(nsp)]
            if all(0 <= pos[i] < x.shape[2 + i] for i in range(nsp)):
                tap = x[(slice(None), slice(None)) + tuple(pos)].astype(acc_t)
                acc[idx] = np.maximum(acc[idx], tap) if alg == "max" else acc[idx] + tap
                count[o] += 1
    if alg == "max":
        v = acc.astype(np.float32) if dst_dt == "f32" else acc.astype(x.dtype)
        return _expect("Pooling max", result, v)
    n = np.float32(int(np.prod(k))) if alg == "avg_include_padding" else \
        count.astype(np.float32)
    cl = ("nwc", "nhwc", "ndhwc")
    if not f32 and case["ctor"][1][1][3] in cl and case["ctor"][1][2][3] in cl:
        # oneDNN's jit_int (src and dst channels-last): by 1/count; ref:any divides
        v = acc.astype(np.float32) * (np.float32(1) / n)
    else:
        v = acc.astype(np.float32) / n
    if dst_dt != "f32":
        lo, hi = _LIMITS[dst_dt]
        v = np.clip(np.rint(v.astype(np.float64)), lo, hi).astype(x.dtype)
    _expect(f"Pooling {alg}", result, v)


REFERENCES = {"matmul_s32": _ref_matmul, "gemm": _ref_gemm, "reorder": _ref_reorder,
              "relu": _ref_relu, "pool": _ref_pool}
