"""Hypothesis strategies drawing fuzz cases (plain data, see ``_fuzz_runner``) for every public
primitive; ``_fuzz_functions`` has those of the functions and API objects, ``_fuzz_draw`` the
building blocks (what is drawn, and how often it is wrong: its docstring).  ``FAMILIES`` maps
each family name to its strategy."""
import hypothesis.strategies as st

from dnnq import args as A

from _fuzz_draw import (U8, S8, S32, F32, DTS, SIZES, SMALL, ELTWISE_ALGS, BINARY_ALGS, _STATE,
                        _spatial, alpha, attr_spec, begin, cl_tag, data_dims, dt_of, fill,
                        finish, mask_of, md, rare, wild)
from _fuzz_functions import (api_case, calibrate_case, fake_quantize_case, gemm_case,
                             quantize_case)

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
