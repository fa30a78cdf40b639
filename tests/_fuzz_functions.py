"""Hypothesis strategies drawing fuzz cases for dnnq's functions (gemm_*, fake_quantize,
quantize / dequantize, dnnq.calibrate) and API objects (MemoryDesc, PrimitiveAttr, PostOps,
dnnq.args, the runtime setters); see ``_fuzz_strategies``."""
import hypothesis.strategies as st

from dnnq import args as A

from _fuzz_draw import (U8, S8, S32, F32, DTS, SIZES, SMALL, WILD_ALPHAS, _STATE, attr_spec,
                        begin, cl_tag, data_dims, dims_wild, dt_of, fill, finish, rare, wild)

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
