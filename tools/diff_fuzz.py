"""Differential fuzzing against the real oneDNN 3.2: random MatMul / Convolution problems with
random attributes (scales, zero points, bias types, post-op chains of every eltwise and binary
algorithm and sums with any scale), and LSTM / GRU problems (random shapes, layers,
directions, states, legacy qparams and destination types, 1 or 2 threads, plain or prepared
weights), run by dnnq and by oneDNN, compared bit for bit.

    python -P tools/diff_fuzz.py --family matmul|ip|conv|rnn --cases 500 --seed 1 [--isa LEVEL]

Prints each mismatch (the problem, the count and the first differing values) and a summary;
exits 1 when any problem differs.  Problems oneDNN refuses are counted and skipped.  A long
run is a soak test; tests/test_diff_fuzz.py runs a short fixed-seed one in CI.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import dnnq  # noqa: E402
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC,  # noqa: E402
                  DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCALE, DNNL_ARG_SRC_1,
                  DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.testing import _primitives as onednn, _capi  # noqa: E402

NP = {"f32": np.float32, "s32": np.int32, "s8": np.int8, "u8": np.uint8}
# (alg, alpha, beta) draws valid for oneDNN 3.2's eltwise post-op: the algorithms dnnq computes
# bit-identically (SPEC section 5: the transcendental ones are a few ulp from oneDNN's own
# approximations, so they cannot be compared bit for bit); log of a negative value still
# makes NaN for the NaN-store rules
ELTWISE = [("relu", (0.0, 0.0)), ("relu", (0.1, 0.0)), ("square", None), ("abs", None),
           ("sqrt", None), ("linear", (0.37, -1.3)), ("linear", (-2.0, 0.5)),
           ("clip", (-2.0, 3.5)), ("clip_v2", (-1.0, 2.0)), ("round", None),
           ("hardswish", (1.0 / 6.0, 0.5)), ("hardsigmoid", (1.0 / 6.0, 0.5))]
# the comparisons are left out: oneDNN 3.2's brgemm MatMul fails to create a primitive with
# them (dnnl_runtime_error), and after the first such failure in a process every later brgemm
# creation fails too; they are tested against numpy models in tests/test_matmul.py
BINARY = ["add", "sub", "mul", "div", "min", "max"]


#: draw int8 data no vpmaddubsw pair can saturate (u8 below 128, s8 even within [-64, 62]:
#: sources shifted by +128 stay below 191, halved s8 weights stay exact), so that oneDNN's
#: kernels without VNNI compute exact sums too (tools/onednn_capped.py sets it)
PAIR_SAFE = False
#: (oneDNN's implementation name, dnnq's impl_info) of the last case run, and its
#: test_convolution.Case for a convolution (its numpy model)
LAST_IMPLS = (None, None)
LAST_CASE = None


def data(rng, dt, shape, spread=3.0):
    if dt == "f32":
        return (rng.standard_normal(shape) * spread).astype(np.float32)
    if dt == "s32":
        return rng.integers(-300, 300, shape).astype(np.int32)
    if PAIR_SAFE and dt == "u8":
        return rng.integers(0, 128, shape).astype(np.uint8)
    if PAIR_SAFE and dt == "s8":
        return (2 * rng.integers(-32, 32, shape)).astype(np.int8)
    info = np.iinfo(NP[dt])
    return rng.integers(info.min, info.max + 1, shape).astype(NP[dt])


def draw_post_ops(rng, dst_dt, binary_shapes):
    """[(kind, ...)] in the bridge's form plus the arrays of the binary ops."""
    ops = []
    for _ in range(int(rng.integers(0, 4))):
        r = rng.random()
        if r < 0.45:
            alg, ab = ELTWISE[int(rng.integers(len(ELTWISE)))]
            a, b = ab if ab is not None else (0.0, 0.0)
            ops.append(("eltwise", alg, float(a), float(b)))
        elif r < 0.8:
            shape = binary_shapes[int(rng.integers(len(binary_shapes)))]
            src1 = (rng.standard_normal(shape) * 2).astype(np.float32)
            ops.append(("binary", BINARY[int(rng.integers(len(BINARY)))], src1))
        elif not any(o[0] == "sum" for o in ops):
            scale = float(rng.choice([1.0, 0.5, 0.3, 1.7, 2.0]))
            zp = int(rng.choice([0, 0, 3, -2])) if dst_dt in ("s8", "u8") else 0
            ops.append(("sum", scale, zp))
    return ops


def dnnq_attr(q, ops):
    attr, args = PrimitiveAttr(), {}
    for key, arg, setter, prefix in (
            ("src_scales", DNNL_ARG_SRC, attr.set_scales_mask, DNNL_ARG_SCALE),
            ("wei_scales", DNNL_ARG_WEIGHTS, attr.set_scales_mask, DNNL_ARG_SCALE),
            ("dst_scales", DNNL_ARG_DST, attr.set_scales_mask, DNNL_ARG_SCALE),
            ("src_zp", DNNL_ARG_SRC, attr.set_zero_points_mask, DNNL_ARG_ATTR_ZERO_POINTS),
            ("dst_zp", DNNL_ARG_DST, attr.set_zero_points_mask, DNNL_ARG_ATTR_ZERO_POINTS)):
        if key in q:
            setter(arg, q[key.replace("scales", "scale") + "_mask"])
            args[prefix | arg] = np.asarray(q[key])
    po = PostOps()
    for i, op in enumerate(ops):
        if op[0] == "eltwise":
            po.append_eltwise(op[1], op[2], op[3])
        elif op[0] == "binary":
            po.append_binary(op[1], MD(op[2].shape, "f32"))
            args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = op[2]
        else:
            po.append_sum(op[1], op[2])
    attr.set_post_ops(po)
    return attr, args


def draw_quant(rng, dst_dt, n_out, per_out_mask, src_dt):
    q = {}
    if rng.random() < 0.7:
        q["src_scales"], q["src_scale_mask"] = np.float32([rng.uniform(0.001, 0.1)]), 0
    if rng.random() < 0.8:
        per = rng.random() < 0.6
        q["wei_scales"] = rng.uniform(0.001, 0.05, n_out if per else 1).astype(np.float32)
        q["wei_scale_mask"] = per_out_mask if per else 0
    if rng.random() < 0.5:
        q["dst_scales"], q["dst_scale_mask"] = np.float32([rng.uniform(0.05, 4.0)]), 0
    if rng.random() < 0.4:
        q["src_zp"], q["src_zp_mask"] = np.int32([rng.integers(-5, 20)]), 0
    if dst_dt in ("s8", "u8") and rng.random() < 0.4:
        q["dst_zp"], q["dst_zp_mask"] = np.int32([rng.integers(-10, 10)]), 0
    return q


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:  # every element differs
        return np.zeros(want.shape, bool)
    if got.dtype == np.float32:
        return got.view(np.int32) == want.view(np.int32)
    return got == want


def differences(got, want, ok):
    """'N of M differ; first: dnnq X oneDNN Y' for a comparison `ok` = same(got, want)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"dnnq gives {got.dtype}{got.shape}, oneDNN {want.dtype}{want.shape}"
    j = np.flatnonzero(~ok.ravel())[0]
    return (f"{int((~ok).sum())} of {ok.size} differ; first: dnnq {got.ravel()[j]!r} "
            f"oneDNN {want.ravel()[j]!r}")


def matmul_case(rng):
    M, K, N = (int(rng.choice(v)) for v in ((1, 3, 6, 13), (1, 4, 17, 64, 130), (1, 15, 64, 70)))
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(["f32", "s32", "s8", "u8"]))
    bias_dt = rng.choice([None, "f32", "s32", "s8", "u8"])
    bias_shape = [(N,), (1, N), (M, N)][int(rng.integers(3))]
    src, wei = data(rng, src_dt, (M, K)), data(rng, "s8", (K, N))
    bias = None if bias_dt is None else data(rng, str(bias_dt), bias_shape, 30.0)
    q = draw_quant(rng, dst_dt, N, 2, src_dt)
    ops = draw_post_ops(rng, dst_dt, [(1, N), (M, N), (1, 1), (M, 1)])
    prev = data(rng, dst_dt, (M, N), 30.0) if any(o[0] == "sum" for o in ops) else None
    desc = f"matmul {src_dt}x s8 -> {dst_dt} M{M} K{K} N{N} bias {bias_dt}{bias_shape} " \
           f"q {sorted(k for k in q if not k.endswith('mask'))} ops {[o[:2] for o in ops]}"
    try:
        want, impl = onednn.matmul(src, wei, None if bias is None else bias.reshape(
            (1,) * (2 - bias.ndim) + bias.shape), dst_dt, post_ops=ops, dst_prev=prev,
            return_impl=True, **q)
    except _capi.OnednnError:
        return desc, None, None
    attr, args = dnnq_attr(q, ops)
    bd = None if bias is None else MD(bias.shape if bias.ndim == 2 else (1, N), str(bias_dt))
    p = dnnq.MatMul(MD((M, K), src_dt), MD((K, N), "s8"), MD((M, N), dst_dt), bd, attr=attr)
    args.update({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: wei})
    if bias is not None:
        args[DNNL_ARG_BIAS] = bias if bias.ndim == 2 else bias.reshape(1, N)
    if prev is not None:
        args[DNNL_ARG_DST] = prev.copy()
    global LAST_IMPLS
    LAST_IMPLS = (impl, p.impl_info)
    return desc + f" [{impl} / {p.impl_info}]", p.execute(args), want


def ip_case(rng):
    """InnerProduct: oneDNN 3.2 has no zero points there (dnnq's extension is not drawn)."""
    Nb, IC, OC = (int(rng.choice(v)) for v in ((1, 3, 6, 13), (1, 4, 17, 64, 130), (1, 15, 64, 70)))
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(["f32", "s32", "s8", "u8"]))
    bias_dt = rng.choice([None, "f32", "s32", "s8", "u8"])
    src, wei = data(rng, src_dt, (Nb, IC)), data(rng, "s8", (OC, IC))
    bias = None if bias_dt is None else data(rng, str(bias_dt), (OC,), 30.0)
    q = draw_quant(rng, dst_dt, OC, 1, src_dt)
    for k in ("src_zp", "src_zp_mask", "dst_zp", "dst_zp_mask"):
        q.pop(k, None)
    ops = draw_post_ops(rng, dst_dt, [(1, OC), (Nb, OC), (1, 1)])
    prev = data(rng, dst_dt, (Nb, OC), 30.0) if any(o[0] == "sum" for o in ops) else None
    desc = f"ip {src_dt} -> {dst_dt} N{Nb} IC{IC} OC{OC} bias {bias_dt} " \
           f"q {sorted(k for k in q if not k.endswith('mask'))} ops {[o[:2] for o in ops]}"
    try:
        want, impl = onednn.inner_product(src, wei, bias, dst_dt, post_ops=ops, dst_prev=prev,
                                          return_impl=True, **q)
    except _capi.OnednnError:
        return desc, None, None
    attr, args = dnnq_attr(q, ops)
    p = dnnq.InnerProduct(MD((Nb, IC), src_dt), MD((OC, IC), "s8"), MD((Nb, OC), dst_dt),
                          None if bias is None else MD((OC,), str(bias_dt)), attr=attr)
    args.update({DNNL_ARG_SRC: src, DNNL_ARG_WEIGHTS: wei})
    if bias is not None:
        args[DNNL_ARG_BIAS] = bias
    if prev is not None:
        args[DNNL_ARG_DST] = prev.copy()
    global LAST_IMPLS
    LAST_IMPLS = (impl, p.impl_info)
    return desc + f" [{impl} / {p.impl_info}]", p.execute(args), want


#: how many problems each plain depthwise kernel took (dnnq.primitives._impls.CONV's
#: dw3x3_plain entries: 0 copies, 1 / 2 column kernel, 3 flat kernel), printed at the end
PLAIN_KERNELS = {}


def conv_case(rng, kind=None):
    from test_convolution import Case
    kind = kind or str(rng.choice(["3x3", "1x1", "s2", "dw", "grouped", "deconv", "stem",
                                   "deconv_k4", "deconv_dw", "deconv_g", "dw_plain"]))
    g = {"3x3": dict(ICg=int(rng.choice([3, 16, 37])), OCg=int(rng.choice([8, 64, 70]))),
         "1x1": dict(ICg=int(rng.choice([16, 37])), OCg=70, k=(1, 1), pl=(0, 0)),
         "s2": dict(ICg=16, OCg=33, s=(2, 2), isp=(9, 8)),
         "dw": dict(G=int(rng.choice([16, 37, 70])), ICg=1, OCg=1, grouped=True,
                    s=(1, 1) if rng.random() < 0.5 else (2, 2), isp=(9, 9)),
         "grouped": dict(G=4, ICg=8, OCg=8),
         "deconv": dict(ICg=9, OCg=11, isp=(4, 5), s=(2, 2), deconv=True),
         "stem": dict(ICg=3, OCg=16, k=(7, 7), s=(2, 2), pl=(3, 3), isp=(15, 15)),
         # oneDNN: brg_conv+brgconv_strided; jit_deconvolution (u8) or the GEMM-based
         # deconvolution (s8); the GEMM-based one (channels per group not multiples of 4)
         "deconv_k4": dict(ICg=9, OCg=11, isp=(4, 5), k=(4, 4), s=(2, 2), deconv=True),
         "deconv_dw": dict(G=int(rng.choice([16, 37])), ICg=1, OCg=1, grouped=True,
                           s=(1, 1) if rng.random() < 0.5 else (2, 2), isp=(5, 6), deconv=True),
         "deconv_g": dict(G=3, ICg=5, OCg=3, isp=(4, 5), s=(2, 2), deconv=True),
         # plain data, planes of 3 - 40 rows of 3 - 130 columns: the flat kernel's window
         # kinds and rows mode, the column kernel, the copies
         "dw_plain": dict(G=int(rng.choice([16, 37, 70, 130])), ICg=1, OCg=1, grouped=True,
                          s=tuple(int(v) for v in rng.integers(1, 3, 2)),
                          isp=(int(rng.integers(3, 41)), int(rng.integers(3, 131))))}[kind]
    src_dt = str(rng.choice(["u8", "s8"]))
    # (dw_plain: mostly what the plain kernels' fused epilogue takes: 8-bit dst, f32 bias,
    # relu / linear post-ops)
    fused = kind == "dw_plain" and rng.random() < 0.8
    dst_dt = str(rng.choice(["s8", "u8"] if fused else ["f32", "s32", "s8", "u8"]))
    bias_dt = rng.choice([None, "f32"] if fused else [None, "f32", "s32", "s8", "u8"])
    G = g.get("G", 1)
    OC = G * g["OCg"]
    q = draw_quant(rng, dst_dt, OC, 3 if g.get("grouped") or G > 1 else 1, src_dt)
    # the dst shape decides the binary shapes: made by Case, so draw the ops after it
    tag = None if kind == "dw_plain" else str(rng.choice(["", "nhwc"])) or None
    c = Case(rng, src_dt=src_dt, dst_dt=dst_dt, bias_dt=None if bias_dt is None else str(bias_dt),
             q={k: v for k, v in q.items()}, src_tag=tag, dst_tag=tag, **g)
    if PAIR_SAFE:
        from _conv_ref import conv_acc, deconv_acc
        c.src, c.wei = data(rng, src_dt, c.src.shape), data(rng, "s8", c.wei.shape)
        acc = deconv_acc if c.deconv else conv_acc
        g = c.geom
        c.acc = acc(c.src, c.wei, g["strides"], g["padding_l"], g["padding_r"], g["dilates"],
                    src_zp=c.q.get("src_zp"), wei_zp=c.q.get("wei_zp"))
    N_, C_, H_, W_ = c.dst_shape
    ops = draw_post_ops(rng, dst_dt, [(1, C_, 1, 1), (N_, C_, H_, W_), (1, 1, 1, 1)])
    if fused:
        ops = [o for o in ops if o[0] == "eltwise" and o[1] in ("relu", "linear")]
    c.post_ops = ops
    c.dst_prev = (data(rng, dst_dt, c.dst_shape, 30.0) if any(o[0] == "sum" for o in ops)
                  else None)
    desc = f"conv {kind} {src_dt} -> {dst_dt} tag {tag} bias {bias_dt} " \
           f"q {sorted(k for k in q if not k.endswith('mask'))} ops {[o[:2] for o in ops]}"
    fn = onednn.deconvolution if c.deconv else onednn.convolution
    kw = {k: v for k, v in c.q.items() if v is not None and k != "wei_zp"}
    try:
        want, impl = fn(c.src, c.wei, c.bias, c.dst_dt, post_ops=c.post_ops,
                        dst_prev=c.dst_prev, return_impl=True, **c.geom, **kw)
    except _capi.OnednnError:
        return desc, None, None
    got, p = c.run_dnnq()
    global LAST_IMPLS, LAST_CASE
    LAST_IMPLS, LAST_CASE = (impl, p.impl_info), c
    if kind == "dw_plain":
        PLAIN_KERNELS[p._dw_plain] = PLAIN_KERNELS.get(p._dw_plain, 0) + 1
    return desc + f" [{impl} / {p.impl_info}]", got, want


def rnn_case(rng):
    """One LSTM / GRU problem (tests/test_rnn.py's helpers); its outputs as one byte array."""
    import test_rnn as tr
    cell = str(rng.choice(["lstm", "gru"]))
    direction = str(rng.choice(tr.DIRS))
    L = int(rng.choice([1, 1, 2, 3]))
    H = int(rng.choice([1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 130]))
    C = H if L > 1 else int(rng.integers(1, 140))
    T, N = int(rng.integers(1, 10)), int(rng.choice([1, 1, 2, 5, 7, 13, 32, 33]))
    init, per_oc = bool(rng.random() < 0.5), bool(rng.random() < 0.7)
    dt = str(rng.choice(["u8", "f32"]))
    scale = float(rng.choice([64.0, 127.0, 31.5, 200.0]))
    shift = float(rng.choice([128.0, 0.0, 64.0, 100.0]))
    nt, prepared = int(rng.integers(1, 3)), bool(rng.random() < 0.5)
    p = tr.make(cell, direction, T, N, C, H, L, init=init, per_oc=per_oc,
                seed=int(rng.integers(1 << 30)), dst_layer_dt=dt, scale=scale, shift=shift)
    desc = (f"{cell} {direction} T{T} N{N} C{C} H{H} L{L} init {init} per_oc {per_oc} dst {dt} "
            f"scale {scale} shift {shift} threads {nt} prepared {prepared}")
    # oneDNN at one thread: its 3.2 GRU with bidirectional_sum at 2 threads corrupts its heap
    # for some shapes (N = 32 with H = 31 or 63: "double free or corruption" a few calls
    # later; docs/testing.md)
    before = dnnq.get_num_threads()
    dnnq.set_num_threads(1)
    try:
        want = tr.onednn(p)
    except _capi.OnednnError:
        return desc, None, None
    finally:
        dnnq.set_num_threads(before)
    dnnq.set_num_threads(nt)
    try:
        got = tr.run(tr.primitive(p, tr.legacy_attr(p)), p, prepared=prepared)
    except (dnnq.InvalidArguments, dnnq.Unimplemented) as exc:
        return desc + f" [dnnq refused: {exc}]", np.zeros(1, np.uint8), np.ones(1, np.uint8)
    finally:
        dnnq.set_num_threads(before)
    if [a.shape for a in got] != [a.shape for a in want]:
        return desc + " [output shapes differ]", np.zeros(1, np.uint8), np.ones(1, np.uint8)
    flat = lambda outs: np.concatenate([np.ascontiguousarray(a).view(np.uint8).ravel()  # noqa
                                        for a in outs])
    return desc, flat(got), flat(want)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", choices=["matmul", "ip", "conv", "rnn"], required=True)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--isa", default=None, help="dnnq ISA cap (default: the CPU's best)")
    ap.add_argument("--verbose", action="store_true", help="also list the refused problems")
    ap.add_argument("--kind", default=None,
                    help="conv only: one kind of problem (e.g. dw_plain: plain depthwise planes)")
    o = ap.parse_args(argv)
    if o.isa:
        dnnq.set_max_cpu_isa(o.isa)
    rng = np.random.default_rng(o.seed)
    fn = {"matmul": matmul_case, "ip": ip_case,
          "conv": lambda r: conv_case(r, o.kind), "rnn": rnn_case}[o.family]
    bad = refused = 0
    for i in range(o.cases):
        desc, got, want = fn(rng)
        if want is None:
            refused += 1
            if o.verbose:
                print(f"case {i}: refused by oneDNN: {desc}")
            continue
        ok = same(got, want)
        if not ok.all():
            bad += 1
            print(f"case {i}: {desc}: {differences(got, want, ok)}")
    print(f"{o.family}: {o.cases} cases, {refused} refused by oneDNN, {bad} differ")
    if PLAIN_KERNELS:
        print("plain depthwise kernels (0 copies, 1 / 2 column, 3 flat): " +
              ", ".join(f"{k}: {n}" for k, n in sorted(PLAIN_KERNELS.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
