"""Building blocks of the fuzz strategies (``_fuzz_strategies``, ``_fuzz_functions``), which
draw fuzz cases (plain data, see ``_fuzz_runner``) for every public entry point of dnnq.

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


def _spatial(draw, nsp, choices, wild):
    vals = [draw(st.sampled_from(choices)) for _ in range(nsp)]
    if globals()["wild"](draw, 6):
        vals[draw(st.integers(0, nsp - 1))] = draw(st.sampled_from(wild))
    return vals


def data_dims(draw, lo=1, hi=4):
    nd = draw(st.integers(lo, hi))
    return tuple(draw(st.sampled_from(SIZES if i == nd - 1 else SMALL)) for i in range(nd))
