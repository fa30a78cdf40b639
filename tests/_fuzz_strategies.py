"""Hypothesis strategies drawing fuzz cases (plain data, see ``_fuzz_runner``) for every public
entry point of dnnq.

Each family draws a problem that is valid most of the time (so the kernels run, not only the
checks) and then, with some probability, makes it wrong or odd: wild descriptor dims (1, huge,
2^63, ragged, non-int), data types (invalid names, numpy dtypes dnnq refuses), tags, masks with
invalid bits, post-op chains (eltwise with extreme alpha / beta, binary with broadcast or
non-broadcastable shapes, sum with scale / zero point / dt, depthwise), and execution arguments
(missing / extra keys, wrong dtype / shape / type, strided / Fortran / reversed / unaligned /
read-only views, scales NaN / inf / 0 / negative / huge, zero points beyond s32).
"""
import hypothesis.strategies as st

from dnnq import args as A

U8, S8, S32, F32 = "u8", "s8", "s32", "f32"
DTS = (U8, S8, S32, F32)
WILD_DTS = ("f16", "bf16", "u16", "uint8", "i1", "", None, 3, "F32", "s4")
WILD_DIMS = (0, -1, 2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 62, 2 ** 63, 2 ** 64, True, 2.0, "3",
             None)
SIZES = (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 129, 200)
SMALL = (1, 2, 3, 4, 5, 7, 8)
FILLS = ("rand", "rand", "small", "edge")
ELTWISE_ALGS = ("relu", "tanh", "elu", "square", "abs", "sqrt", "linear", "soft_relu",
                "logistic", "exp", "gelu_tanh", "gelu_erf", "swish", "log", "clip", "clip_v2",
                "pow", "round", "mish", "hardswish", "hardsigmoid", "eltwise_relu", "nope")
BINARY_ALGS = ("add", "sub", "mul", "div", "min", "max", "ge", "gt", "le", "lt", "eq", "ne",
               "binary_add", "xor")
ALPHAS = (0.0, 1.0, -1.0, 0.5, 2.0, 0.0, 1.0, 1e-30, 1e30, 3.4e38, -3.4e38, -0.0, 2 ** 70)
WILD_ALPHAS = (1e39, float("nan"), float("inf"), 10 ** 400, True, "1", None)
SCALE_VALUES = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1.0, 1e38, 1e39, 1e-45,
                1e-30, 2.0 ** 127)
ZP_VALUES = (2 ** 31, -2 ** 31 - 1, 2 ** 40, -2 ** 63, 0.5, float("nan"), 255, -129, 2 ** 31 - 1)
EXTRA_KEYS = (A.DNNL_ARG_SRC_2, A.DNNL_ARG_DST_1, A.DNNL_ARG_WEIGHTS_1, A.DNNL_ARG_BIAS,
              A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC, A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST,
              A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | A.DNNL_ARG_SRC_1, A.DNNL_ARG_MULTIPLE_SRC + 7,
              99999, -1, 0, True, "src", 2 ** 64, 1.0)


def rare(draw, p=8):
    """True with probability 1/p (shrinks to False)."""
    return draw(st.integers(0, p - 1)) == p - 1


# Whether the case being drawn may be wrong at creation: a third of the cases are; the others
# draw only valid descriptors, attributes and post-ops (their execution arguments may still be
# mutated), so that most cases reach the kernels.
_STATE = {"wild": False}


def begin(draw):
    _STATE["wild"] = draw(st.integers(0, 2)) == 2


def wild(draw, p=8):
    """In a wild case, True with probability 1/p: make this part invalid or extreme."""
    return _STATE["wild"] and rare(draw, p)


def dt_of(draw, valid):
    return draw(st.sampled_from(WILD_DTS)) if wild(draw, 12) else draw(st.sampled_from(valid))


def dims_wild(draw, dims):
    """``dims`` or, rarely, with one dim replaced by a wild value (or the rank changed)."""
    dims = list(dims)
    if wild(draw, 10):
        how = draw(st.integers(0, 3))
        if how == 0 and dims:
            dims[draw(st.integers(0, len(dims) - 1))] = draw(st.sampled_from(WILD_DIMS))
        elif how == 1:
            dims.append(draw(st.sampled_from((1, 2))))
        elif how == 2 and len(dims) > 1:
            dims.pop()
        else:
            return draw(st.sampled_from(((), (1,) * 13, "abc", 5, [[1, 2], [3]])))
    return tuple(dims)


def md(draw, dims, dt, tag=None):
    return ("md", dims_wild(draw, dims), dt, tag)


def fill(draw):
    return draw(st.sampled_from(FILLS))


def cl_tag(draw, ndims, weights=False):
    """None (plain) or the channels-last tag of that rank (rarely a wrong tag)."""
    if wild(draw, 15):
        return draw(st.sampled_from(("nchw", "hwio", "abcd", "zz", 7, "any", "tnc", "nhwc")))
    if not draw(st.booleans()):
        return None
    data = {3: "nwc", 4: "nhwc", 5: "ndhwc"}
    wei = {3: "wio", 4: "hwio", 5: "dhwio"}
    return (wei if weights else data).get(ndims)


def mask_of(draw, good):
    """One of the masks a primitive should take, or (rarely) any bits / a semantic mask."""
    if wild(draw, 4):
        return draw(st.sampled_from((1 << 12, 1 << 13, 1 << 14, 255, 1 << 11, -1, 2 ** 40, 1.0,
                                     True, None, 3, 6, 7)))
    return draw(st.sampled_from(good))


def alpha(draw):
    return draw(st.sampled_from(WILD_ALPHAS if wild(draw, 4) else ALPHAS))


# ---- post-op chains -------------------------------------------------------------------------

def post_ops(draw, dst_dims, dst_dt, *, allow_sum=True, allow_binary=True, dw=None):
    """A post-op chain for a destination of ``dst_dims``; returns (ops, tensors, quant)."""
    ops, tensors = [], []
    n = draw(st.integers(0, 3)) if draw(st.booleans()) else 0
    for i in range(n):
        kind = draw(st.sampled_from(("eltwise", "eltwise", "binary", "sum")))
        if kind == "binary" and allow_binary:
            alg = draw(st.sampled_from(BINARY_ALGS if wild(draw, 4) else BINARY_ALGS[:-1]))
            how = draw(st.integers(0, 3)) if not wild(draw, 4) else 4
            nd = len(dst_dims)
            if how == 0:
                d1 = tuple(dst_dims)
            elif how == 1:
                d1 = (1,) * nd
            elif how == 2:
                d1 = tuple(dst_dims[j] if j == 1 % nd else 1 for j in range(nd))
            elif how == 3:
                d1 = tuple(draw(st.sampled_from((1, dst_dims[j]))) for j in range(nd))
            else:
                d1 = tuple(d + draw(st.integers(0, 1)) for d in dst_dims)
            src1 = md(draw, d1, dt_of(draw, DTS), None)
            ops.append(("binary", alg, src1))
            tensors.append((A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1, src1,
                            fill(draw)))
        elif kind == "sum" and allow_sum:
            scale = draw(st.sampled_from((1.0, 0.5, 2.0, -1.0, 0.0, 1e30)))
            zp = draw(st.sampled_from((0, 0, 3, -128, 255)))
            sdt = draw(st.sampled_from((None, dst_dt))) if not rare(draw, 4) else \
                draw(st.sampled_from(DTS))
            if wild(draw, 4):
                scale = draw(st.sampled_from((float("nan"), 10 ** 400, 1e39, "1")))
            if wild(draw, 4):
                zp = draw(st.sampled_from((2 ** 31, -2 ** 40, 1.5, True)))
            if wild(draw, 4):
                sdt = draw(st.sampled_from(WILD_DTS))
            ops.append(("sum", scale, zp, sdt))
        else:
            alg = draw(st.sampled_from(ELTWISE_ALGS if wild(draw, 4) else ELTWISE_ALGS[:-2]))
            ops.append(("eltwise", alg, alpha(draw), alpha(draw)))
    quant = []
    if dw is not None and draw(st.integers(0, 3)) == 0:
        C, k, s, wdt, bdt, ddt = dw
        pos = draw(st.integers(0, len(ops)))
        ops.insert(pos, ("dw", wdt, bdt, ddt, k, s, 1))
        # post-op indices after the inserted one shift by one
        tensors = [(((key // A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) + (1 if key //
                   A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) - 1 >= pos else 0)) *
                   A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0)) | A.DNNL_ARG_SRC_1, m, f)
                   for key, m, f in tensors]
        dww = ("md", (C, 1, 1, k, k), S8, None)
        tensors.append((A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS, dww, fill(draw)))
        if bdt is not None:
            tensors.append((A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_BIAS,
                            ("md", (C,), bdt, None), "small"))
        quant.append((A.DNNL_ARG_SCALE | A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS,
                      A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS, 0, False))
    return ops, tensors, quant


def attr_spec(draw, scale_choices, zp_choices, dims_of, dst_dims=None, dst_dt=None, **po_kw):
    """An attribute: scales / zero points on some of the given args (with their masks), and a
    post-op chain; returns (attr data, extra tensors, quant list, has_sum)."""
    spec = {"scales": [], "zps": []}
    quant = []
    for arg, masks in scale_choices:
        if draw(st.booleans()):
            m = mask_of(draw, masks)
            spec["scales"].append((arg, m))
            if isinstance(arg, int):
                quant.append((A.DNNL_ARG_SCALE | arg, arg, m, False))
    for arg, masks in zp_choices:
        if rare(draw, 3):
            m = mask_of(draw, masks)
            spec["zps"].append((arg, m))
            if isinstance(arg, int):
                quant.append((A.DNNL_ARG_ATTR_ZERO_POINTS | arg, arg, m, True))
    tensors = []
    has_sum = False
    if dst_dims is not None:
        ops, tensors, q2 = post_ops(draw, dst_dims, dst_dt, **po_kw)
        if ops:
            spec["post_ops"] = ops
        quant += q2
        has_sum = any(op[0] == "sum" for op in ops)
    if wild(draw, 15):  # an attribute the primitive does not use
        spec["rnn_data"] = (draw(st.sampled_from((1.0, 64.0, float("nan"), 10 ** 400))),
                            draw(st.sampled_from((0.0, 128.0, -1.0, 2 ** 70))))
    return spec, tensors, quant, has_sum


def arg_mutations(draw, quant_keys):
    """Mutations of the execution arguments (usually none)."""
    muts = []
    for _ in range(draw(st.integers(1, 2)) if rare(draw, 4) else 0):
        sel = draw(st.integers(0, 63))
        op = draw(st.sampled_from(("drop", "extra", "stride2", "fortran", "reversed",
                                   "unaligned", "readonly", "readonly_dst", "dtype", "shape",
                                   "value", "type")))
        if op == "extra":
            muts.append((op, sel, draw(st.sampled_from(EXTRA_KEYS)),
                         draw(st.sampled_from(((1,), (3, 2), None)))))
        elif op == "dtype":
            muts.append((op, sel, draw(st.sampled_from(("float64", "int64", "uint16", "bool",
                                                        "float16", "complex64", "uint8", "int8",
                                                        "int32", "float32")))))
        elif op == "shape":
            muts.append((op, sel, draw(st.sampled_from(("add_dim", "drop_dim", "grow",
                                                        "shrink", "flat", "scalar", "empty")))))
        elif op == "value":
            if quant_keys:  # aim at a scale or zero point: the selector picks among all keys
                muts.append((op, sel, draw(st.sampled_from(SCALE_VALUES + ZP_VALUES)),
                             draw(st.integers(0, 7))))
        elif op == "type":
            muts.append((op, sel, draw(st.sampled_from(("list", "none", "str", "pyscalar",
                                                        "object")))))
        else:
            muts.append((op, sel))
    return muts


def finish(draw, family, ctor, tensors, outputs, quant, *, has_sum=False, ref=None,
           prepare=False, isa=True, extra_dims=None, strict_keys=None):
    from dnnq import available_isa_levels
    quant_keys = [q[0] for q in quant]
    muts = arg_mutations(draw, quant_keys)
    # value mutations aim at a scale / zero point: they name it (the others pick a key by a
    # selector, modulo the keys present then)
    fixed = []
    for m in muts:
        if m[0] == "value":
            m = (m[0], draw(st.sampled_from(quant_keys)), m[2], m[3])
        fixed.append(m)
    case = {"family": family, "ctor": ctor, "tensors": tensors, "outputs": outputs,
            "quant": quant, "mutations": fixed, "seed": draw(st.integers(0, 2 ** 20)),
            "dst_is_input": has_sum, "prepare": prepare,
            "isa": draw(st.sampled_from(available_isa_levels())) if isa else None,
            # other thread counts split the work differently (tails, partitions)
            "threads": draw(st.sampled_from((None, None, 1, 3, 8))),
            # arrays with a descriptor: another dtype / shape / type must be refused
            "strict_keys": [t[0] for t in tensors] if strict_keys is None else strict_keys}
    # the references take the edge values of integers (saturation), not f32 NaN / inf
    if ref and all(t[2] != "edge" or t[1][2] != F32 for t in tensors):
        case["ref"] = ref
    if extra_dims:
        case["extra_dims"] = extra_dims
    return case


# ---- the families ---------------------------------------------------------------------------

@st.composite
def matmul_case(draw):
    begin(draw)
    M, K, N = (draw(st.sampled_from(SIZES)) for _ in range(3))
    batched = rare(draw, 4)
    if batched:
        B = draw(st.sampled_from((1, 2, 3)))
        sb, wb = draw(st.sampled_from(((B, B), (1, B), (B, 1))))
        sd, wd, dd = (sb, M, K), (wb, K, N), (max(sb, wb), M, N)
    else:
        sd, wd, dd = (M, K), (K, N), (M, N)
    n = len(dd)
    src_dt = dt_of(draw, (U8, S8))
    dst_dt = dt_of(draw, DTS)
    src, wei, dst = md(draw, sd, src_dt), md(draw, wd, dt_of(draw, (S8,))), md(draw, dd, dst_dt)
    bias = None
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_WEIGHTS, wei, fill(draw))]
    if draw(st.booleans()):
        bd = draw(st.sampled_from(((1,) * (n - 1) + (N,), dd, (1,) * n, (N,), (M, 1))))
        bias = md(draw, bd, dt_of(draw, DTS))
        tensors.append((A.DNNL_ARG_BIAS, bias, "small"))
    tensors.append((A.DNNL_ARG_DST, dst, "rand"))
    pern = 1 << (n - 1)
    spec, pt, quant, has_sum = attr_spec(
        draw, [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_WEIGHTS, (0, pern)), (A.DNNL_ARG_DST, (0,))],
        [(A.DNNL_ARG_SRC, (0, pern)), (A.DNNL_ARG_WEIGHTS, (0, pern)),
         (A.DNNL_ARG_DST, (0, pern))], None, dd, dst_dt)
    attr = ("attr", spec) if spec["scales"] or spec["zps"] or len(spec) > 2 else None
    ctor = ("MatMul", [src, wei, dst, bias], {"attr": attr})
    ref = "matmul_s32" if (attr is None and bias is None and dst_dt == S32 and not batched
                           and src[1] == sd and wei[1] == wd and dst[1] == dd and K <= 256) else None
    return finish(draw, "matmul", ctor, tensors + pt, [A.DNNL_ARG_DST], quant,
                  has_sum=has_sum, ref=ref, prepare=draw(st.booleans()))


@st.composite
def inner_product_case(draw):
    begin(draw)
    N, IC, OC = (draw(st.sampled_from(SIZES)) for _ in range(3))
    sp = tuple(draw(st.sampled_from(SMALL)) for _ in range(draw(st.integers(0, 2))))
    sd, wd, dd = (N, IC) + sp, (OC, IC) + sp, (N, OC)
    src_dt, dst_dt = dt_of(draw, (U8, S8)), dt_of(draw, DTS)
    src, wei, dst = md(draw, sd, src_dt), md(draw, wd, S8), md(draw, dd, dst_dt)
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_WEIGHTS, wei, fill(draw))]
    bias = None
    if draw(st.booleans()):
        bias = md(draw, draw(st.sampled_from(((OC,), (1, OC)))), dt_of(draw, DTS))
        tensors.append((A.DNNL_ARG_BIAS, bias, "small"))
    tensors.append((A.DNNL_ARG_DST, dst, "rand"))
    spec, pt, quant, has_sum = attr_spec(
        draw, [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_WEIGHTS, (0, 1)), (A.DNNL_ARG_DST, (0,))],
        [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_WEIGHTS, (0, 1)), (A.DNNL_ARG_DST, (0, 2))],
        None, dd, dst_dt)
    attr = ("attr", spec)
    ctor = ("InnerProduct", [src, wei, dst, bias], {"attr": attr})
    return finish(draw, "inner_product", ctor, tensors + pt, [A.DNNL_ARG_DST], quant,
                  has_sum=has_sum, prepare=draw(st.booleans()))


def _spatial(draw, nsp, choices, wild):
    vals = [draw(st.sampled_from(choices)) for _ in range(nsp)]
    if globals()["wild"](draw, 6):
        vals[draw(st.integers(0, nsp - 1))] = draw(st.sampled_from(wild))
    return vals


@st.composite
def conv_case(draw, deconv=False):
    begin(draw)
    nsp = draw(st.sampled_from((1, 2, 2, 2, 3)))
    N = draw(st.sampled_from((1, 1, 2)))
    G = draw(st.sampled_from((1, 1, 1, 2, 3))) if not rare(draw, 5) else 0  # 0: depthwise
    if G == 0:
        C = draw(st.sampled_from((1, 3, 16, 17, 32, 64, 65)))
        G, icg, ocg = C, 1, 1
    else:
        icg = draw(st.sampled_from((1, 2, 3, 4, 8, 16, 17, 33, 64)))
        ocg = draw(st.sampled_from((1, 2, 3, 4, 8, 16, 17, 33, 64, 65)))
    IC, OC = G * icg, G * ocg
    k = _spatial(draw, nsp, (1, 1, 2, 3), (0, 2 ** 20, 2 ** 31, 2 ** 62, 2 ** 63))
    s = _spatial(draw, nsp, (1, 1, 2, 3), (0, -1, 2 ** 40))
    d = _spatial(draw, nsp, (0, 0, 0, 1), (-2, 2 ** 40))
    pl = _spatial(draw, nsp, (0, 0, 1, 2), (-1, 2 ** 40, 2 ** 62))
    pr = _spatial(draw, nsp, (0, 0, 1, 2), (-1, 2 ** 40, 2 ** 62))
    ish = [draw(st.sampled_from((1, 2, 3, 4, 5, 7, 8, 9))) for _ in range(nsp)]
    def out_sizes():
        try:
            if deconv:
                return [(i - 1) * si - a - b + (kk - 1) * (dd + 1) + 1
                        for i, si, a, b, kk, dd in zip(ish, s, pl, pr, k, d)]
            return [(i + a + b - ((kk - 1) * (dd + 1) + 1)) // si + 1
                    for i, si, a, b, kk, dd in zip(ish, s, pl, pr, k, d)]
        except (ZeroDivisionError, TypeError):
            return [1] * nsp

    osh = out_sizes()
    if any(o < 1 for o in osh) and not _STATE["wild"]:  # make it fit: no padding, larger src
        pl, pr = [0] * nsp, [0] * nsp
        ish = [max(i, (kk - 1) * (dd + 1) + 1) for i, kk, dd in zip(ish, k, d)]
        osh = out_sizes()
    osh = [max(o, 1) for o in osh]
    if wild(draw, 6):
        osh[0] += 1
    sd, dd_ = (N, IC, *ish), (N, OC, *osh)
    grouped = G > 1 or rare(draw, 6)
    wd = (G, ocg, icg, *k) if grouped else (OC, IC, *k)
    src_dt, dst_dt = dt_of(draw, (U8, S8)), dt_of(draw, DTS)
    src = md(draw, sd, src_dt, cl_tag(draw, len(sd)))
    wei = md(draw, wd, S8, cl_tag(draw, len(wd), weights=True) if not grouped else None)
    dst = md(draw, dd_, dst_dt, cl_tag(draw, len(dd_)))
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_WEIGHTS, wei, fill(draw))]
    bias = None
    if draw(st.booleans()):
        bias = md(draw, (OC,), dt_of(draw, DTS))
        tensors.append((A.DNNL_ARG_BIAS, bias, "small"))
    dw = None
    if not deconv and nsp == 2 and not grouped and k == [1, 1]:
        dw = (OC, draw(st.sampled_from((3, 3, 1, 5))), draw(st.sampled_from((1, 2))),
              dt_of(draw, (S8,)), draw(st.sampled_from((None, F32, S32))),
              dt_of(draw, DTS))
    wmask = (0, 3) if grouped else (0, 1)
    spec, pt, quant, has_sum = attr_spec(
        draw, [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_WEIGHTS, wmask), (A.DNNL_ARG_DST, (0,))],
        [(A.DNNL_ARG_SRC, (0, 2)), (A.DNNL_ARG_WEIGHTS, wmask), (A.DNNL_ARG_DST, (0, 2))],
        None, dd_, dst_dt, dw=dw)
    has_dw = any(op[0] == "dw" for op in spec.get("post_ops", ()))
    if has_dw:  # the destination is the depthwise output: let execute allocate it
        outputs = []
    else:
        tensors.append((A.DNNL_ARG_DST, dst, "rand"))
        outputs = [A.DNNL_ARG_DST]
    kw = {"strides": s, "padding_l": pl, "padding_r": pr, "attr": ("attr", spec)}
    if any(d) or draw(st.booleans()):
        kw["dilates"] = d
    if rare(draw, 10):  # one int for every spatial dim
        kw["strides"] = s[0]
    cls = "Deconvolution" if deconv else "Convolution"
    extra = {}
    if has_dw:
        extra[A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS] = (OC, 1, 1, dw[1], dw[1])
    return finish(draw, cls.lower(), (cls, [src, wei, dst, bias], kw), tensors + pt, outputs,
                  quant, has_sum=has_sum, prepare=draw(st.booleans()), extra_dims=extra)


_RNN_CELLS = {"lstm": ("LSTM", 4), "gru": ("GRU", 3), "lbr_gru": ("LBRGRU", 3),
              "vanilla_rnn": ("VanillaRNN", 1)}


@st.composite
def rnn_case(draw, cell):
    begin(draw)
    cls, G = _RNN_CELLS[cell]
    T, N = draw(st.sampled_from((1, 2, 3, 5))), draw(st.sampled_from((1, 2, 3)))
    L = draw(st.sampled_from((1, 1, 2)))
    H = draw(st.sampled_from((1, 2, 4, 8, 16, 17, 33)))
    C = H if L > 1 and not wild(draw, 10) else draw(st.sampled_from((1, 2, 4, 8, 16, 17, 33)))
    direction = draw(st.sampled_from(("unidirectional_left2right", "unidirectional_right2left",
                                      "bidirectional_concat", "bidirectional_sum",
                                      "sideways", None)) if wild(draw, 20) else
                     st.sampled_from(("unidirectional_left2right", "unidirectional_right2left",
                                      "bidirectional_concat", "bidirectional_sum")))
    D = 2 if str(direction).startswith("bidirectional") else 1
    data_dt = draw(st.sampled_from((U8, U8, F32))) if not wild(draw, 20) else dt_of(draw, DTS)
    dst_dt = data_dt if data_dt == F32 or draw(st.booleans()) else dt_of(draw, (U8, F32))
    nb = G + (cell == "lbr_gru")
    dlc = H * (2 if direction == "bidirectional_concat" else 1)
    src_layer = md(draw, (T, N, C), data_dt)
    with_iter = draw(st.booleans())
    src_iter = md(draw, (L, D, N, H), data_dt) if with_iter else None
    c_iter = md(draw, (L, D, N, H), F32) if with_iter and cell == "lstm" else None
    wl = md(draw, (L, D, C, G, H), dt_of(draw, (S8,)))
    wi = md(draw, (L, D, H, G, H), S8)
    bias = md(draw, (L, D, nb, H), dt_of(draw, (F32,))) if not rare(draw, 6) else None
    dst_layer = md(draw, (T, N, dlc), dst_dt)
    dst_iter = md(draw, (L, D, N, H), data_dt) if draw(st.booleans()) else None
    dst_c = md(draw, (L, D, N, H), F32) if dst_iter is not None and cell == "lstm" else None
    tensors = [(A.DNNL_ARG_SRC_LAYER, src_layer, fill(draw)),
               (A.DNNL_ARG_WEIGHTS_LAYER, wl, "small"), (A.DNNL_ARG_WEIGHTS_ITER, wi, "small")]
    if src_iter is not None:
        tensors.append((A.DNNL_ARG_SRC_ITER, src_iter, fill(draw)))
    if c_iter is not None:
        tensors.append((A.DNNL_ARG_SRC_ITER_C, c_iter, "small"))
    if bias is not None:
        tensors.append((A.DNNL_ARG_BIAS, bias, "small"))
    outputs = [A.DNNL_ARG_DST_LAYER]
    tensors.append((A.DNNL_ARG_DST_LAYER, dst_layer, "rand"))
    for key, m in ((A.DNNL_ARG_DST_ITER, dst_iter), (A.DNNL_ARG_DST_ITER_C, dst_c)):
        if m is not None:
            tensors.append((key, m, "rand"))
            outputs.append(key)
    spec, quant = {"scales": [], "zps": []}, []
    form = draw(st.sampled_from(("legacy", "unified"))) if not wild(draw, 3) else \
        draw(st.sampled_from(("none", "mixed")))
    wmask = draw(st.sampled_from((0, 24))) if not wild(draw, 10) else \
        draw(st.sampled_from((1, 8, 16, 255, -1, 2 ** 40)))
    if form in ("legacy", "mixed"):
        spec["rnn_data"] = (draw(st.sampled_from((64.0, 127.0, 1.0, 0.01))),
                            draw(st.sampled_from((128.0, 0.0, 64.0, 255.0))))
        if wild(draw, 3):
            spec["rnn_data"] = (draw(st.sampled_from((0.0, -1.0, float("nan"), 1e39, 10 ** 400,
                                                      1e-45))),
                                draw(st.sampled_from((-1.0, 300.0, float("inf"), 2 ** 70))))
        nws = G * H if wmask == 24 else 1
        ws = [float(draw(st.sampled_from((64.0, 100.0, 1.0, 0.5)))) for _ in range(nws)]
        if wild(draw, 8):
            ws[0] = draw(st.sampled_from((0.0, -1.0, float("nan"), float("inf"))))
        if wild(draw, 15):
            ws = ws + [1.0]
        spec["rnn_wei"] = (wmask, ws)
    if form in ("unified", "mixed"):
        spec["scales"] = [(A.DNNL_ARG_SRC_LAYER, 0), (A.DNNL_ARG_WEIGHTS_LAYER, wmask),
                          (A.DNNL_ARG_WEIGHTS_ITER, wmask)]
        spec["zps"] = [(A.DNNL_ARG_SRC_LAYER, 0)]
        quant = [(A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_LAYER, A.DNNL_ARG_SRC_LAYER, 0, False),
                 (A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_LAYER, A.DNNL_ARG_SRC_LAYER, 0,
                  True),
                 (A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS_LAYER, A.DNNL_ARG_WEIGHTS_LAYER, wmask,
                  False, 2),
                 (A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS_ITER, A.DNNL_ARG_WEIGHTS_LAYER, wmask,
                  False, 2 + wild(draw, 4))]
    pos = [direction, src_layer, src_iter] + ([c_iter] if cell == "lstm" else []) + \
        [wl, wi, bias, dst_layer, dst_iter] + ([dst_c] if cell == "lstm" else [])
    if cell == "vanilla_rnn":
        pos = [draw(st.sampled_from(("relu", "tanh", "logistic"))) if not wild(draw, 8)
               else "gelu"] + pos
    ctor = (cls, pos, {"attr": ("attr", spec)})
    return finish(draw, cell, ctor, tensors, outputs, quant, prepare=draw(st.booleans()))


@st.composite
def pooling_case(draw):
    begin(draw)
    nsp = draw(st.sampled_from((1, 2, 2, 3)))
    N = draw(st.sampled_from((1, 2)))
    C = draw(st.sampled_from((1, 3, 8, 16, 17, 24, 32, 33, 48, 64, 65, 80, 128, 130)))
    alg = draw(st.sampled_from(("max", "avg_include_padding", "avg_exclude_padding",
                                "pooling_max"))) if not wild(draw, 8) else "min"
    k = _spatial(draw, nsp, (1, 2, 3), (0, 2 ** 20, 2 ** 31, 2 ** 40, 2 ** 61, 2 ** 62,
                                        2 ** 63))
    s = _spatial(draw, nsp, (1, 1, 2, 3), (0, 2 ** 40, 2 ** 62))
    d = _spatial(draw, nsp, (0, 0, 0, 1), (-1, 2 ** 40, 2 ** 62))
    pl = _spatial(draw, nsp, (0, 0, 1), (2 ** 20, 2 ** 40, 2 ** 62))
    pr = _spatial(draw, nsp, (0, 0, 1), (2 ** 20, 2 ** 40, 2 ** 62))
    ish = [draw(st.sampled_from((1, 2, 3, 4, 5, 8, 9))) for _ in range(nsp)]
    try:
        osh = [(i - ((kk - 1) * (dd + 1) + 1) + a + b) // si + 1
               for i, kk, dd, a, b, si in zip(ish, k, d, pl, pr, s)]
    except ZeroDivisionError:
        osh = [1] * nsp
    osh = [max(1, o) for o in osh]
    if wild(draw, 6):
        osh[-1] += 1
    src_dt = dt_of(draw, DTS)
    dst_dt = src_dt if draw(st.integers(0, 3)) else dt_of(draw, (F32, U8, S8))
    src = md(draw, (N, C, *ish), src_dt, cl_tag(draw, nsp + 2))
    dst = md(draw, (N, C, *osh), dst_dt, cl_tag(draw, nsp + 2))
    spec, pt, quant, has_sum = attr_spec(draw, [], [], None, (N, C, *osh), dst_dt,
                                         allow_sum=False) if rare(draw, 3) else \
        ({"scales": [], "zps": []}, [], [], False)
    kw = {"strides": s, "kernel": k, "padding_l": pl, "padding_r": pr,
          "attr": ("attr", spec) if len(spec) > 2 or rare(draw, 10) else None}
    if any(d) or draw(st.booleans()):
        kw["dilation"] = d
    src_fill = fill(draw)
    # (s32 beyond 2^24 is exact or rounded through f32 depending on oneDNN's kernel choice:
    # the reference takes ordinary values only)
    ref = "pool" if (alg != "min" and src_dt in DTS and dst_dt in (src_dt, F32) and
                     not (src_dt == S32 and src_fill == "edge") and
                     kw["attr"] is None and src[1] == (N, C, *ish) and
                     dst[1] == (N, C, *osh)) else None
    tensors = [(A.DNNL_ARG_SRC, src, src_fill), (A.DNNL_ARG_DST, dst, "rand")] + pt
    return finish(draw, "pooling", ("Pooling", [alg, src, dst], kw), tensors,
                  [A.DNNL_ARG_DST], quant, has_sum=has_sum, ref=ref)


def data_dims(draw, lo=1, hi=4):
    nd = draw(st.integers(lo, hi))
    return tuple(draw(st.sampled_from(SIZES if i == nd - 1 else SMALL)) for i in range(nd))


@st.composite
def reorder_case(draw):
    begin(draw)
    dims = data_dims(draw)
    sdt, ddt = dt_of(draw, DTS), dt_of(draw, DTS)
    src = md(draw, dims, sdt, cl_tag(draw, len(dims)))
    dst = md(draw, dims, ddt, cl_tag(draw, len(dims)))
    nd = len(dims)
    anymask = tuple(range(1 << nd)) + (1 << 12,)
    spec, pt, quant, _ = attr_spec(draw, [(A.DNNL_ARG_SRC, anymask), (A.DNNL_ARG_DST, anymask)],
                                   [(A.DNNL_ARG_SRC, anymask), (A.DNNL_ARG_DST, anymask)],
                                   None)
    attr = ("attr", spec) if spec["scales"] or spec["zps"] or len(spec) > 2 else None
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_DST, dst, "rand")]
    return finish(draw, "reorder", ("Reorder", [src, dst], {"attr": attr}), tensors,
                  [A.DNNL_ARG_DST], quant, ref="reorder" if attr is None else None)


@st.composite
def eltwise_case(draw):
    begin(draw)
    dims = data_dims(draw)
    alg = draw(st.sampled_from(ELTWISE_ALGS if wild(draw, 4) else ELTWISE_ALGS[:-2]))
    sdt, ddt = dt_of(draw, DTS), dt_of(draw, DTS)
    src = md(draw, dims, sdt, cl_tag(draw, len(dims)))
    dst = md(draw, dims, ddt, cl_tag(draw, len(dims)))
    alpha_, beta = alpha(draw), alpha(draw)
    spec, pt, quant, has_sum = attr_spec(
        draw, [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_DST, (0,))],
        [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_DST, (0,))], None, dims, ddt)
    attr = ("attr", spec) if spec["scales"] or spec["zps"] or len(spec) > 2 else None
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_DST, dst, "rand")] + pt
    ref = "relu" if (alg == "relu" and alpha_ == 0.0 and sdt == ddt == F32 and attr is None
                     and src[1] == dims == dst[1]) else None
    return finish(draw, "eltwise", ("Eltwise", [alg, src, dst, alpha_, beta], {"attr": attr}),
                  tensors, [A.DNNL_ARG_DST], quant, has_sum=has_sum, ref=ref)


@st.composite
def binary_case(draw):
    begin(draw)
    dims = data_dims(draw)
    nd = len(dims)
    how = draw(st.integers(0, 3)) if not wild(draw, 3) else draw(st.integers(4, 5))
    if how == 0:
        d1 = dims
    elif how == 1:
        d1 = (1,) * nd
    elif how == 2:
        d1 = tuple(draw(st.sampled_from((1, d))) for d in dims)
    elif how == 3:
        d1 = dims[draw(st.integers(0, nd - 1)):]
    elif how == 4:
        d1 = tuple(d + 1 for d in dims)
    else:
        d1 = (2,) + dims
    alg = draw(st.sampled_from(BINARY_ALGS if wild(draw, 4) else BINARY_ALGS[:-1]))
    s0 = md(draw, dims, dt_of(draw, DTS), cl_tag(draw, nd))
    s1 = md(draw, d1, dt_of(draw, DTS), cl_tag(draw, len(d1)))
    ddt = dt_of(draw, DTS)
    dst = md(draw, dims, ddt, cl_tag(draw, nd))
    spec, pt, quant, has_sum = attr_spec(
        draw, [(A.DNNL_ARG_SRC_0, (0,)), (A.DNNL_ARG_SRC_1, (0,)), (A.DNNL_ARG_DST, (0,))],
        [(A.DNNL_ARG_SRC_0, (0,)), (A.DNNL_ARG_SRC_1, (0,)), (A.DNNL_ARG_DST, (0,))],
        None, dims, ddt)
    tensors = [(A.DNNL_ARG_SRC_0, s0, fill(draw)), (A.DNNL_ARG_SRC_1, s1, fill(draw)),
               (A.DNNL_ARG_DST, dst, "rand")] + pt
    return finish(draw, "binary", ("Binary", [alg, s0, s1, dst], {"attr": ("attr", spec)}),
                  tensors, [A.DNNL_ARG_DST], quant, has_sum=has_sum)


@st.composite
def sum_case(draw):
    begin(draw)
    dims = data_dims(draw)
    n = draw(st.integers(1, 4)) if not wild(draw, 30) else draw(st.sampled_from((0, 513)))
    srcs = [md(draw, dims, dt_of(draw, DTS), cl_tag(draw, len(dims))) for _ in range(min(n, 4))]
    if n > 4:
        srcs = srcs * (n // len(srcs)) + srcs[:n % len(srcs)]
    dst = md(draw, dims, dt_of(draw, DTS), cl_tag(draw, len(dims)))
    spec, quant = {"scales": [], "zps": []}, []
    for i in range(min(n, 4)):
        if draw(st.booleans()):
            m = mask_of(draw, (0,))
            spec["scales"].append((A.DNNL_ARG_MULTIPLE_SRC + i, m))
            quant.append((A.DNNL_ARG_SCALE | (A.DNNL_ARG_MULTIPLE_SRC + i),
                          A.DNNL_ARG_MULTIPLE_SRC + i, m, False))
    tensors = [(A.DNNL_ARG_MULTIPLE_SRC + i, m, fill(draw)) for i, m in enumerate(srcs[:6])]
    tensors.append((A.DNNL_ARG_DST, dst, "rand"))
    return finish(draw, "sum", ("Sum", [dst, srcs], {"attr": ("attr", spec)}), tensors,
                  [A.DNNL_ARG_DST], quant)


@st.composite
def concat_case(draw):
    begin(draw)
    dims = list(data_dims(draw))
    nd = len(dims)
    axis = draw(st.integers(-nd, nd - 1)) if not wild(draw, 20) else \
        draw(st.sampled_from((nd, -nd - 1, 2 ** 40, True, 1.0, None)))
    ax = axis % nd if isinstance(axis, int) and -nd <= axis < nd else 0
    n = draw(st.integers(1, 4))
    sizes = [draw(st.sampled_from(SIZES)) for _ in range(n)]
    srcs = []
    for sz in sizes:
        d = list(dims)
        d[ax] = sz
        srcs.append(md(draw, tuple(d), dt_of(draw, DTS), cl_tag(draw, nd)))
    dd = list(dims)
    dd[ax] = sum(sizes) + (1 if wild(draw, 20) else 0)
    dst = md(draw, tuple(dd), dt_of(draw, DTS), cl_tag(draw, nd))
    spec, quant = {"scales": [], "zps": []}, []
    for i in range(n):
        if draw(st.booleans()):
            m = mask_of(draw, (0,))
            spec["scales"].append((A.DNNL_ARG_MULTIPLE_SRC + i, m))
            quant.append((A.DNNL_ARG_SCALE | (A.DNNL_ARG_MULTIPLE_SRC + i),
                          A.DNNL_ARG_MULTIPLE_SRC + i, m, False))
    tensors = [(A.DNNL_ARG_MULTIPLE_SRC + i, m, fill(draw)) for i, m in enumerate(srcs)]
    tensors.append((A.DNNL_ARG_DST, dst, "rand"))
    return finish(draw, "concat", ("Concat", [dst, axis, srcs], {"attr": ("attr", spec)}),
                  tensors, [A.DNNL_ARG_DST], quant)


@st.composite
def softmax_case(draw):
    begin(draw)
    dims = data_dims(draw)
    nd = len(dims)
    axis = draw(st.integers(-nd, nd - 1)) if not wild(draw, 20) else \
        draw(st.sampled_from((nd, 2 ** 40, True, None)))
    alg = draw(st.sampled_from(("softmax", "logsoftmax", "softmax", "softmax_accurate")))
    src = md(draw, dims, dt_of(draw, (F32, S8, U8)), cl_tag(draw, nd))
    dst = md(draw, dims, dt_of(draw, (F32, S8, U8)), cl_tag(draw, nd))
    spec, pt, quant, _ = attr_spec(draw, [(A.DNNL_ARG_SRC, (0,)), (A.DNNL_ARG_DST, (0,))], [],
                                   None)
    tensors = [(A.DNNL_ARG_SRC, src, fill(draw)), (A.DNNL_ARG_DST, dst, "rand")]
    return finish(draw, "softmax", ("Softmax", [alg, src, dst, axis], {"attr": ("attr", spec)}),
                  tensors, [A.DNNL_ARG_DST], quant)


@st.composite
def gemm_case(draw):
    begin(draw)
    M, K, N = (draw(st.sampled_from(SIZES + (0,) if rare(draw, 10) else SIZES))
               for _ in range(3))
    fn = draw(st.sampled_from(("gemm_u8s8s32", "gemm_s8s8s32")))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    adt = U8 if fn == "gemm_u8s8s32" else S8
    a = ("md", (K, M) if ta else (M, K), adt, None)
    b = ("md", (N, K) if tb else (K, N), S8, None)
    c = ("md", (M, N), S32, None)
    kw = {"transa": ta, "transb": tb}
    plain = True
    if draw(st.booleans()):
        plain = False
        kw["alpha"] = draw(st.sampled_from((1.0, 0.5, 2.0, -1.0, 0.0, 1e-3)
                                           if not wild(draw, 3) else WILD_ALPHAS))
        kw["beta"] = draw(st.sampled_from((0.0, 1.0, 0.5, -2.0) if not wild(draw, 3) else
                                          WILD_ALPHAS))
        kw["ao"] = draw(st.sampled_from(((0, 3, 255, 128) if adt == U8 else (0, -3, 127, -128))
                                        if not wild(draw, 3) else
                                        (256, -1, 2 ** 31, 1.5, True)))
        kw["bo"] = draw(st.sampled_from((0, -3, 127, -128) if not wild(draw, 3) else
                                        (128, -129, 2 ** 40, None)))
    if wild(draw, 10):
        kw["transa"] = draw(st.sampled_from(("yes", 1, None, "N")))
    tensors = [("A", ("md", dims_wild(draw, a[1]), adt, None), fill(draw)), ("B", b, fill(draw))]
    if draw(st.booleans()) or (kw.get("beta", 0.0) != 0.0 and not wild(draw, 4)):
        tensors.append(("C", c, "small"))
    offc = draw(st.sampled_from(("F", "C", "R", None)) if not wild(draw, 10) else
                st.sampled_from(("X", "f", 0, "RC")))
    if offc is not None:
        plain = False
        kw["offsetc"] = offc
        n = {"F": 1, "C": M, "R": N}.get(offc, 1)
        tensors.append(("co", ("md", (n,), S32, None), "small"))
    beta_reads_c = kw.get("beta", 0.0) not in (0.0, 0, None)
    outputs = ["C"] if any(t[0] == "C" for t in tensors) else []
    ref = "gemm" if plain and isinstance(kw["transa"], bool) and K <= 256 and M and N and K \
        else None
    return finish(draw, "gemm", None, tensors, outputs, [], has_sum=beta_reads_c, ref=ref,
                  strict_keys=["A", "B"]) | \
        {"fn": fn, "kw": kw, "any_shape_keys": ["A", "B"]}  # only their dtype is fixed


def _bound(draw, C):
    kind = draw(st.integers(0, 6))
    if kind <= 3:
        return draw(st.sampled_from((-1.0, 0.0, 1.0, 2.5, -3.0, 0.25)))
    if kind == 4:
        return ("np", "float32", [draw(st.sampled_from((-1.0, 0.0, 1.0, 2.0))) for _ in range(C)])
    if kind == 5:
        return draw(st.sampled_from((float("nan"), float("inf"), 1e39, "1", None, True)))
    return ("np", "float32", [[1.0, 2.0]])


@st.composite
def fake_quantize_case(draw):
    begin(draw)
    dims = data_dims(draw, 2, 4)
    C = dims[1]
    x = ("md", dims, F32, None)
    kw = {k: _bound(draw, C) for k in ("il", "ih", "ol", "oh")}
    for k in ("il", "ih", "ol", "oh"):  # per-channel arrays broadcast as (C, 1, ...)
        v = kw[k]
        if isinstance(v, tuple) and len(v[2]) == C and not isinstance(v[2][0], list):
            kw[k] = ("npr", "float32", v[2], (C,) + (1,) * (len(dims) - 2))
    kw["levels"] = draw(st.sampled_from((2, 3, 16, 255, 256, 65536) if not wild(draw, 6) else
                                        (0, 1, 65537, 2 ** 40, 2.5, None)))
    post = draw(st.booleans())
    tensors = [("x" if not post else A.DNNL_ARG_SRC, x, fill(draw))]
    case = finish(draw, "fake_quantize", None, tensors, [], [], strict_keys=[])
    return case | {"kw": kw, "as_post_op": post, "md": x}


@st.composite
def quantize_case(draw):
    begin(draw)
    dims = data_dims(draw, 1, 3)
    fn = draw(st.sampled_from(("quantize", "dequantize")))
    dt = dt_of(draw, (U8, S8, S32)) if fn == "quantize" else None
    xdt = F32 if fn == "quantize" else dt_of(draw, (U8, S8, S32))
    axis = draw(st.sampled_from((None, None, 0, -1, len(dims), 2 ** 40)))
    n = dims[axis] if isinstance(axis, int) and -len(dims) <= axis < len(dims) else 1
    tensors = [("x", ("md", dims, xdt, None), fill(draw)),
               ("scale", ("md", (n,), F32, None), "pos")]
    kw = {"dt": dt, "axis": axis}
    if draw(st.booleans()):
        tensors.append(("zp", ("md", (n,), S32, None), "small"))
    else:
        kw["zp"] = draw(st.sampled_from((None, 0, 3, 2 ** 40, 1.5)))
    case = finish(draw, "quantize", None, tensors, [], [], strict_keys=[])
    return case | {"fn": fn, "kw": kw}


@st.composite
def calibrate_case(draw):
    begin(draw)
    fn = draw(st.sampled_from(("minmax", "percentile", "rnn_data_qparams",
                               "rnn_weights_qparams")))
    if fn == "rnn_weights_qparams":
        dims = tuple(draw(st.sampled_from(SMALL)) for _ in range(5)) if not rare(draw, 5) \
            else data_dims(draw)
    else:
        dims = data_dims(draw)
    tensors = [("x", ("md", dims, dt_of(draw, (F32,)), None), fill(draw))]
    kw = {}
    if fn in ("minmax", "percentile"):
        kw["dt"] = dt_of(draw, (U8, S8, S32))
        kw["axis"] = draw(st.sampled_from((None, 0, -1, len(dims), (0,), "0")))
        kw["symmetric"] = draw(st.booleans())
        if fn == "percentile":
            kw["pct"] = draw(st.sampled_from((99.9, 100.0, 50.0, 101.0, float("nan"), 75)))
    case = finish(draw, "calibrate", None, tensors, [], [], isa=False, strict_keys=[])
    return case | {"fn": fn, "kw": kw}


_ARG_IDS = st.one_of(st.sampled_from(sorted(A.all_valid_args())[:2000]),
                     st.integers(-2, 2 ** 20), st.sampled_from((2 ** 31, 2 ** 63, 2 ** 64, True,
                                                               1.5, None, "1")))


@st.composite
def api_case(draw):
    _STATE["wild"] = True
    calls = []
    for _ in range(draw(st.integers(1, 6))):
        what = draw(st.sampled_from(("md", "attr", "arg", "arg", "arg_name", "arg_v3",
                                     "post_op_id", "mask", "as_dt", "runtime")))
        if what == "md":
            dims = data_dims(draw)
            dt = dt_of(draw, DTS)
            tag = cl_tag(draw, len(dims)) if not rare(draw, 5) else \
                draw(st.sampled_from(("any", "x", "abcdef", "ldigo", 1.0)))
            method = draw(st.sampled_from(("props", "logical_view", "check_array",
                                           "from_array")))
            marg = draw(st.sampled_from((("np", "float32", [1.0]), [1], None,
                                         ("np", "int8", [[1, 2], [3, 4]]), 3)))
            calls.append(("md", dims_wild(draw, dims), dt, tag, method, marg))
        elif what == "attr":
            spec, _, _, _ = attr_spec(
                draw, [(draw(_ARG_IDS), (0, 1, 2, 3))], [(draw(_ARG_IDS), (0, 1))], None,
                (2, 3), F32)
            if rare(draw, 3):
                spec["rnn_wei"] = (draw(st.sampled_from((0, 24, -1, 2 ** 40, None))),
                                   draw(st.sampled_from(([1.0], [0.0], [float("nan")], [],
                                                         [1.0, 2.0], "x"))))
            calls.append(("attr", spec))
        elif what in ("arg", "arg_v3"):
            calls.append((what, draw(_ARG_IDS)))
        elif what == "arg_name":
            calls.append((what, draw(st.sampled_from(
                ("src", "scale.src", "post_op[0].scale.src_1", "post_op[31].src_1",
                 "post_op[-1].src_1", "multiple_src[511]", "multiple_src[512]", "dw.weights",
                 "scale.scale.src", "", ".", "zero_point.multiple_dst[3]", 17, None,
                 "post_op[99999999999999999999].src")))))
        elif what == "post_op_id":
            calls.append((what, draw(st.sampled_from((0, 30, 31, -1, 2 ** 64, True, 1.0)))))
        elif what == "mask":
            calls.append((what, dims_wild(draw, data_dims(draw)),
                          draw(st.sampled_from((0, 1, 3, 15, 1 << 12, 1 << 20, -1, 2 ** 64,
                                                True, None)))))
        elif what == "as_dt":
            calls.append((what, dt_of(draw, DTS)))
        else:
            fn = draw(st.sampled_from(("set_num_threads", "set_verbose", "set_max_cpu_isa",
                                       "set_primitive_cache_capacity")))
            calls.append((what, fn, draw(st.sampled_from(
                (1, 2, 0, -1, 2 ** 31, 2 ** 64, 100000, None, "2", True, 1.5, "avx2",
                 "default", "all", "sse41")))))
    return {"family": "api", "calls": calls, "seed": 0, "isa": None}


FAMILIES = {
    "matmul": matmul_case(), "inner_product": inner_product_case(),
    "convolution": conv_case(), "deconvolution": conv_case(deconv=True),
    "lstm": rnn_case("lstm"), "gru": rnn_case("gru"), "lbr_gru": rnn_case("lbr_gru"),
    "vanilla_rnn": rnn_case("vanilla_rnn"), "pooling": pooling_case(),
    "reorder": reorder_case(), "eltwise": eltwise_case(), "binary": binary_case(),
    "sum": sum_case(), "concat": concat_case(), "softmax": softmax_case(),
    "gemm": gemm_case(), "fake_quantize": fake_quantize_case(), "quantize": quantize_case(),
    "calibrate": calibrate_case(), "api": api_case(),
}
