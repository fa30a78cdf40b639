"""Eltwise and Binary against oneDNN 3.2 (bit-identical for the exact algorithms and every
integer output; a stated tolerance after transcendental functions) and against numpy models
for dnnq's extensions (scales / zero points on eltwise, dst scale and zero points on binary)."""
import math

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A
from dnnq.eltwise_math import eltwise_reference, binary_reference, fma_f32
import dnnq.testing as R
from _quant_ref import saturate_rne as sat, gen

F = np.float32
NP = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "f32": F}
EXACT = ("relu", "linear", "clip", "clip_v2", "abs", "square", "sqrt", "round", "hardsigmoid",
         "hardswish")
TRANSCENDENTAL = ("tanh", "elu", "soft_relu", "logistic", "exp", "gelu_tanh", "gelu_erf",
                  "swish", "log", "mish", "pow")
BIN_ALGS = ("add", "sub", "mul", "div", "min", "max", "ge", "gt", "le", "lt", "eq", "ne")
PARAMS = {"clip": (-1.5, 2.0), "clip_v2": (-1.5, 2.0), "hardsigmoid": (0.2, 0.5),
          "hardswish": (0.2, 0.5), "linear": (1.37, 0.713), "relu": (0.3, 0.0),
          "soft_relu": (1.0, 0.0), "swish": (0.7, 0.0), "elu": (0.8, 0.0), "pow": (0.5, 2.0)}






def eltwise(x, alg, a=0.0, b=0.0, dst_dt=None, attr=None, args=None, tag=None):
    dt = dnnq.as_dt(x.dtype)
    p = dnnq.Eltwise(alg, MD(x.shape, dt, tag), MD(x.shape, dst_dt or dt, tag), a, b, attr)
    kw = {A.DNNL_ARG_SRC: x}
    kw.update(args or {})
    return p.execute(kw)


def binary(a, b, alg, dst_dt=None, *, s0=None, s1=None, attr=None, args=None, tags=(None,) * 3):
    attr = attr or PrimitiveAttr()
    kw = {A.DNNL_ARG_SRC_0: a, A.DNNL_ARG_SRC_1: b}
    if s0 is not None:
        attr.set_scales_mask(A.DNNL_ARG_SRC_0, 0)
        kw[A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_0] = s0
    if s1 is not None:
        attr.set_scales_mask(A.DNNL_ARG_SRC_1, 0)
        kw[A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_1] = s1
    kw.update(args or {})
    d0, d1 = dnnq.as_dt(a.dtype), dnnq.as_dt(b.dtype)
    p = dnnq.Binary(alg, MD(a.shape, d0, tags[0]), MD(b.shape, d1, tags[1]),
                    MD(a.shape, dst_dt or d0, tags[2]), attr)
    return p.execute(kw)


def post_ops_attr(post):
    """A PrimitiveAttr with the bridge-style post-op list; returns (attr, extra exec args)."""
    ops, extra = PostOps(), {}
    for i, op in enumerate(post):
        if op[0] == "eltwise":
            ops.append_eltwise(op[1], *op[2:])
        elif op[0] == "binary":
            ops.append_binary(op[1], MD(op[2].shape, dnnq.as_dt(op[2].dtype)))
            extra[A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1] = op[2]
        else:
            ops.append_sum(*op[1:])
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    return attr, extra


def onednn_with_attr(kind, x, dst_dt, post, y=None, alg=None, a=0.0, b=0.0, dst_prev=None):
    """eltwise / binary through the bridge's internals, with post-ops and a prefilled dst (the
    bridge's own wrappers take neither)."""
    from dnnq.testing._attr import Attr, alg_kind, run, prefilled_dst
    from dnnq.testing._capi import Scope, const, np_dtype
    with Scope() as s:
        attr = Attr(s).post_ops(post, x.ndim)
        dst = prefilled_dst(x.shape, dst_dt, dst_prev)
        if kind == "eltwise":
            pd = s.pd("dnnl_eltwise_forward_primitive_desc_create", s.lib.engine,
                      const("dnnl_forward_inference"), alg_kind("eltwise", alg), s.md_of(x),
                      s.md(x.shape, dst_dt), float(a), float(b), attr.handle)
            inputs = {const("DNNL_ARG_SRC"): x}
        else:
            y = y.reshape((1,) * (x.ndim - y.ndim) + y.shape)
            pd = s.pd("dnnl_binary_primitive_desc_create", s.lib.engine,
                      alg_kind("binary", alg), s.md_of(x), s.md_of(y), s.md(x.shape, dst_dt),
                      attr.handle)
            inputs = {const("DNNL_ARG_SRC_0"): x, const("DNNL_ARG_SRC_1"): y}
        run(s, pd, inputs, {const("DNNL_ARG_DST"): dst}, attr.exec_args({}),
            prefill=[const("DNNL_ARG_DST")])
        assert dst.dtype == np_dtype(dst_dt)
        return dst


# ----------------------------------------------------------------------------- eltwise

@R.requires_onednn
def test_eltwise_exact_algorithms_match_onednn(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (4, 8, 33))
    x[0, 0, :4] = [0.5, 1.5, -2.5, 2.5]  # round: half to even
    for alg in EXACT:
        a, b = PARAMS.get(alg, (0.0, 0.0))
        xx = np.abs(x) if alg == "sqrt" else x
        ref = R.eltwise(xx, alg, a, b)
        out = eltwise(xx, alg, a, b)
        assert np.array_equal(out, ref), alg
        assert np.array_equal(out, eltwise_reference(alg, xx, a, b)), alg


SPECIAL = np.array([-1.5, -0.0, 0.0, np.nan, -np.nan, -np.inf, np.inf, 2.0, -1e-45, 1e-45,
                    -3.4e38, 3.4e38] * 3, F)


@R.requires_onednn
@pytest.mark.parametrize("alpha", [0.0, -0.0, 0.25])
def test_eltwise_relu_special_values_bits_match_onednn(isa, alpha):
    """relu on -0.0, NaN, +-inf and denormals, compared as bits (+0.0 is not -0.0): oneDNN's
    JIT kernel computes max(x, 0) for alpha = 0 (every negative, -0.0 and NaN give +0.0) and
    x > 0 ? x : alpha * x otherwise; with post-ops its reference kernel runs
    x > 0 ? x : alpha * x always (shared/repro/turn3/p03)."""
    x = SPECIAL.reshape(2, 18)
    ref = R.eltwise(x, "relu", alpha, 0.0)
    out = eltwise(x, "relu", alpha, 0.0)
    assert np.array_equal(out.view(np.int32), ref.view(np.int32)) or \
        np.array_equal(np.isnan(out), np.isnan(ref)) and np.array_equal(
            out[~np.isnan(out)].view(np.int32), ref[~np.isnan(ref)].view(np.int32)), (out, ref)
    post = [("eltwise", "linear", 1.0, 0.0)]
    attr, extra = post_ops_attr(post)
    ref = onednn_with_attr("eltwise", x, "f32", post, alg="relu", a=alpha, b=0.0)
    out = eltwise(x, "relu", alpha, 0.0, attr=attr, args=extra)
    keep = ~np.isnan(ref)
    assert np.array_equal(np.isnan(out), ~keep)
    assert np.array_equal(out[keep].view(np.int32), ref[keep].view(np.int32)), (out, ref)


@R.requires_onednn
@pytest.mark.parametrize("dt", ["s8", "u8", "s32"])
def test_eltwise_int8_relu_linear_match_onednn(isa, rng_seed, dt):
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, dt, (3, 16, 20))
    for alg, a, b in (("relu", 0.3, 0.0), ("relu", 0.0, 0.0), ("linear", 1.37, 0.713),
                      ("linear", 0.5, 0.25), ("linear", -2.0, 1.5)):
        assert np.array_equal(eltwise(x, alg, a, b), R.eltwise(x, alg, a, b)), (alg, a, b)


@R.requires_onednn
def test_eltwise_transcendental_close_to_onednn_and_to_f64(isa, rng_seed):
    """The transcendental algorithms use libm: within 1e-5 (absolute, plus 1e-5 relative) of
    oneDNN's JIT approximations, and within 2e-6 relative (plus 1e-6 absolute near zero) of the
    float64 value of the formula."""
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (2000,))
    truth = {
        "tanh": lambda v, a, b: np.tanh(v),
        "elu": lambda v, a, b: np.where(v > 0, v, a * np.expm1(v)),
        "soft_relu": lambda v, a, b: np.log1p(np.exp(a * v)) / a,
        "logistic": lambda v, a, b: 1 / (1 + np.exp(-v)),
        "exp": lambda v, a, b: np.exp(v),
        "gelu_tanh": lambda v, a, b: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                           * (v + 0.044715 * v ** 3))),
        "gelu_erf": lambda v, a, b: 0.5 * v * (1 + np.array([math.erf(t / math.sqrt(2))
                                                             for t in v])),
        "swish": lambda v, a, b: v / (1 + np.exp(-a * v)),
        "log": lambda v, a, b: np.log(v),
        "mish": lambda v, a, b: v * np.tanh(np.log1p(np.exp(v))),
        "pow": lambda v, a, b: a * v ** b,
    }
    for alg in TRANSCENDENTAL:
        a, b = PARAMS.get(alg, (0.0, 0.0))
        xx = np.abs(x) + F(1e-3) if alg in ("log", "pow") else x
        out = eltwise(xx, alg, a, b)
        ref = R.eltwise(xx, alg, a, b)
        assert np.allclose(out, ref, rtol=1e-5, atol=1e-5), alg
        t = truth[alg](xx.astype(np.float64), a, b)
        assert np.allclose(out, t, rtol=2e-6, atol=1e-6), alg


@R.requires_onednn
def test_eltwise_with_post_ops_matches_onednn_reference_kernel(isa, rng_seed):
    """oneDNN runs an eltwise with post-ops on ref:any, whose linear rounds twice: dnnq too."""
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, "f32", (4, 16, 8), 100)
    per_ch = rng.standard_normal((1, 16, 1)).astype(F)
    for alg, a, b, post in (("linear", 1.37, 0.713, [("eltwise", "relu", 1.0, 0.0)]),
                            ("relu", 1.0, 0.0, [("eltwise", "linear", 1.37, 0.713)]),
                            ("abs", 0.0, 0.0, [("binary", "mul", per_ch),
                                               ("eltwise", "clip", -50.0, 60.0)])):
        attr, extra = post_ops_attr(post)
        ref = onednn_with_attr("eltwise", x, "f32", post, alg=alg, a=a, b=b)
        assert np.array_equal(eltwise(x, alg, a, b, attr=attr, args=extra), ref), alg
    xi = gen(rng, "s8", (4, 16, 8))
    attr, extra = post_ops_attr([("eltwise", "linear", 0.3, -2.0)])
    ref = onednn_with_attr("eltwise", xi, "s8", [("eltwise", "linear", 0.3, -2.0)], alg="relu")
    assert np.array_equal(eltwise(xi, "relu", attr=attr, args=extra), ref)


def test_eltwise_int8_with_scales_and_zero_points_model(isa, rng_seed):
    """Extension: src / dst scales and zero points, any algorithm, mixed types."""
    rng = np.random.default_rng(rng_seed)
    for sdt, ddt in (("u8", "u8"), ("s8", "u8"), ("u8", "f32"), ("f32", "s8"), ("s32", "s8")):
        x = gen(rng, sdt, (3, 8, 10))
        for alg in ("tanh", "logistic", "gelu_erf", "relu", "linear", "hardswish"):
            a, b = PARAMS.get(alg, (0.0, 0.0))
            attr = PrimitiveAttr()
            args, f = {}, x.astype(F)
            if sdt != "f32":
                attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
                attr.set_zero_points_mask(A.DNNL_ARG_SRC, 0)
                args[A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC] = [0.03]
                args[A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC] = [5]
                f = (f - F(5)) * F(0.03)
            v = eltwise_reference(alg, f, a, b)
            if ddt != "f32":
                attr.set_scales_mask(A.DNNL_ARG_DST, 0)
                attr.set_zero_points_mask(A.DNNL_ARG_DST, 0)
                args[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = [0.01]
                args[A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST] = [3]
                v = v * (F(1) / F(0.01)) + F(3)
            out = eltwise(x, alg, a, b, ddt, attr, args)
            want = sat(v, ddt)
            if alg in EXACT:
                assert np.array_equal(out, want), (sdt, ddt, alg)
            elif ddt == "f32":
                assert np.allclose(out, want, rtol=1e-5, atol=1e-6), (sdt, ddt, alg)
            else:  # after a transcendental function an int8 result may move by 1
                diff = np.abs(out.astype(np.int64) - want.astype(np.int64))
                assert diff.max() <= 1 and (diff > 0).mean() < 0.01, (sdt, ddt, alg)


def test_eltwise_channels_last_and_in_place(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = np.ascontiguousarray(gen(rng, "f32", (2, 5, 6, 7)).transpose(0, 2, 3, 1)).transpose(
        0, 3, 1, 2)
    out = eltwise(x, "clip", -1.0, 1.0, tag="nhwc")
    assert np.array_equal(out, np.clip(x, -1, 1)) and out.transpose(0, 2, 3, 1).flags.c_contiguous
    y = gen(rng, "f32", (3, 40))
    expect = fma_f32(F(2.0), y, F(1.0))
    p = dnnq.Eltwise("linear", MD(y.shape, "f32"), MD(y.shape, "f32"), 2.0, 1.0)
    assert p.execute({A.DNNL_ARG_SRC: y, A.DNNL_ARG_DST: y}) is y
    assert np.array_equal(y, expect)


# ----------------------------------------------------------------------------- binary

@R.requires_onednn
def test_binary_matches_onednn(isa, rng_seed):
    """Every algorithm, type combination and broadcast, with source scales: bit-identical."""
    rng = np.random.default_rng(rng_seed)
    shape = (2, 8, 5, 5)
    n = 0
    for d0, d1, dd in (("s8", "u8", "s8"), ("u8", "s8", "u8"), ("f32", "f32", "f32"),
                       ("s8", "f32", "f32"), ("u8", "u8", "f32"), ("f32", "s8", "u8"),
                       ("s32", "s8", "s32"), ("s8", "s32", "s8")):
        for bshape in ((2, 8, 5, 5), (1, 8, 1, 1), (1, 1, 1, 1), (2, 1, 5, 1)):
            a, b = gen(rng, d0, shape), gen(rng, d1, bshape)
            for alg in BIN_ALGS:
                s0, s1 = [0.37], [0.021] if d1 != "f32" else [1.3]
                ref = R.binary(a, b, alg, dd, src0_scale=s0, src1_scale=s1)
                out = binary(a, b, alg, dd, s0=s0, s1=s1)
                assert np.array_equal(out, ref), (d0, d1, dd, bshape, alg)
                n += 1
    assert n == 8 * 4 * 12


@R.requires_onednn
def test_binary_post_ops_match_onednn(isa, rng_seed):
    """eltwise, binary and sum post-ops; linear fused on oneDNN's jit:uni (int8 dst / all f32)
    and rounded twice on its ref:any (f32 dst from int8 sources, s32)."""
    rng = np.random.default_rng(rng_seed)
    shape = (2, 16, 4, 4)
    per_ch = rng.uniform(-3, 3, (1, 16, 1, 1)).astype(F)
    for d0, d1, dd in (("s8", "s8", "s8"), ("f32", "f32", "f32"), ("s8", "s8", "f32"),
                       ("u8", "s8", "u8"), ("s32", "s8", "s8")):
        a, b = gen(rng, d0, shape, 30), gen(rng, d1, shape, 30)
        for post in ([("eltwise", "linear", 0.37, -2.0)],
                     [("eltwise", "relu", 0.1, 0.0), ("binary", "max", per_ch),
                      ("eltwise", "linear", 1.7, 0.3)],
                     [("sum", 0.5, 0)] if dd != "f32" else [("sum", 0.5)],
                     [("binary", "div", per_ch), ("sum", 2.0)],
                     # inexact scale * prev: fused (one rounding) on jit:uni, two on ref:any
                     [("sum", 0.3, 0)] if dd != "f32" else [("sum", 0.3)],
                     [("eltwise", "relu", 0.0, 0.0), ("sum", 0.7)]):
            prev = gen(rng, dd, shape, 30)
            attr, extra = post_ops_attr(post)
            ref = onednn_with_attr("binary", a, dd, post, y=b, alg="add", dst_prev=prev)
            dst = prev.copy()
            extra[A.DNNL_ARG_DST] = dst
            out = binary(a, b, "add", dd, attr=attr, args=extra)
            assert out is dst and np.array_equal(out, ref), (d0, d1, dd, post)


def test_binary_extensions_model(isa, rng_seed):
    """Extension: zero points on both sources, dst scale and zero point; channels-last."""
    rng = np.random.default_rng(rng_seed)
    a, b = gen(rng, "u8", (2, 6, 5, 4)), gen(rng, "s8", (6, 1, 1))
    args = {A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_0: [128],
            A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_1: [-3],
            A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: [10],
            A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [0.05]}
    ac = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for alg in BIN_ALGS:
        attr = PrimitiveAttr()
        for arg in (A.DNNL_ARG_SRC_0, A.DNNL_ARG_SRC_1, A.DNNL_ARG_DST):
            attr.set_zero_points_mask(arg, 0)
        attr.set_scales_mask(A.DNNL_ARG_DST, 0)
        out = binary(ac, b, alg, "s8", s0=[0.02], s1=[0.01], attr=attr, args=dict(args),
                     tags=("nhwc", None, "nhwc"))
        x0 = (a.astype(F) - F(128)) * F(0.02)
        x1 = (b.astype(F) - F(-3)) * F(0.01)
        want = sat(binary_reference(alg, x0, x1) * (F(1) / F(0.05)) + F(10), "s8")
        assert np.array_equal(out, want), alg


@pytest.mark.parametrize("shape,bshape", [((1, 200, 2, 96), (1, 200, 1, 1)),
                                          ((1, 88, 3, 96), (1, 88, 1, 1)),
                                          ((1, 8, 12, 96), (1, 8, 1, 1)),
                                          ((2, 70, 3, 5), (2, 70, 3, 5)),
                                          ((1, 64, 1, 3), (1, 64, 1, 3)),
                                          ((1, 130, 1, 1), (1, 130, 1, 1))])
def test_binary_int8_dst_quantization_rows(isa, rng_seed, shape, bshape):
    """The int8 binary with destination scale and zero point in one pass (channels-last rows
    below, at and past the 64-byte vector, the last vector overlapping the previous one), and
    in place (dst = src0: the overlap is not taken), against the numpy model."""
    rng = np.random.default_rng(rng_seed)
    a, b = gen(rng, "u8", shape), gen(rng, "u8", bshape)
    ac = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    bc = np.ascontiguousarray(b.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for alg in ("add", "mul", "max"):
        attr = PrimitiveAttr()
        for arg in (A.DNNL_ARG_SRC_0, A.DNNL_ARG_SRC_1, A.DNNL_ARG_DST):
            attr.set_zero_points_mask(arg, 0)
            attr.set_scales_mask(arg, 0)
        kw = {A.DNNL_ARG_SRC_0: ac, A.DNNL_ARG_SRC_1: bc,
              A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_0: [0.021],
              A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_1: [0.013],
              A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: [0.0043 if alg == "mul" else 0.017],
              A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_0: [3],
              A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC_1: [128],
              A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST: [7]}
        p = dnnq.Binary(alg, MD(shape, "u8", "nhwc"), MD(bshape, "u8", "nhwc"),
                        MD(shape, "u8", "nhwc"), attr)
        x0 = (a.astype(F) - F(3)) * F(0.021)
        x1 = (b.astype(F) - F(128)) * F(0.013)
        ds = F(0.0043 if alg == "mul" else 0.017)
        want = sat(binary_reference(alg, x0, x1) * (F(1) / ds) + F(7), "u8")
        assert np.array_equal(p.execute(dict(kw)), want), alg
        inplace = ac.copy()
        kw[A.DNNL_ARG_SRC_0] = kw[A.DNNL_ARG_DST] = inplace
        assert p.execute(kw) is inplace and np.array_equal(inplace, want), (alg, "in place")


def test_binary_src1_with_fewer_dims_broadcasts(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    a, b = gen(rng, "f32", (3, 4, 5)), gen(rng, "f32", (5,))
    assert np.array_equal(binary(a, b, "sub"), a - b)


# ----------------------------------------------------------------------------- errors

def test_eltwise_binary_errors():
    d = MD((2, 3), "f32")
    with pytest.raises(dnnq.InvalidArguments, match="eltwise algorithm"):
        dnnq.Eltwise("gelu", d, d)
    with pytest.raises(dnnq.InvalidArguments, match="beta >= alpha"):
        dnnq.Eltwise("clip", d, d, 2.0, 1.0)
    with pytest.raises(dnnq.InvalidArguments, match="dims"):
        dnnq.Eltwise("relu", d, MD((3, 2), "f32"))
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_SRC, 1)
    with pytest.raises(dnnq.Unimplemented, match="supported masks: 0"):
        dnnq.Eltwise("relu", d, d, attr=attr)
    with pytest.raises(dnnq.InvalidArguments, match="binary algorithm"):
        dnnq.Binary("pow", d, d, d)
    with pytest.raises(dnnq.InvalidArguments, match="broadcast"):
        dnnq.Binary("add", d, MD((2, 2), "f32"), d)
    with pytest.raises(dnnq.InvalidArguments, match="src0 dims"):
        dnnq.Binary("add", MD((1, 3), "f32"), d, d)
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_SRC_1, 2)
    with pytest.raises(dnnq.Unimplemented, match="scales mask 2 of src_1"):
        dnnq.Binary("add", d, d, d, attr)
    attr = PrimitiveAttr()
    attr.set_post_ops(PostOps().append_sum())
    p = dnnq.Binary("add", d, d, d, attr)
    x = np.ones((2, 3), F)
    with pytest.raises(dnnq.InvalidArguments, match="sum post-op"):
        p.execute({A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: x})
    p = dnnq.Binary("add", d, MD((1, 3), "f32"), d)
    with pytest.raises(dnnq.InvalidArguments, match="src1"):
        p.execute({A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: x})
    with pytest.raises(dnnq.InvalidArguments, match="missing src1"):
        p.execute({A.DNNL_ARG_SRC_0: x})


@R.requires_onednn
def test_binary_int8_fast_path_matches_onednn_and_generic(isa, rng_seed):
    """s8 / u8 sources and destination, common scales, no post-ops: the fused 64-wide (AVX-512)
    / 32-wide (AVX2) loop without a clamp before the conversion.  Bit-identical to oneDNN and to
    the generic staged path (forced by an identity post-op), for rows that are not a multiple
    of the vector width, large scales that saturate, and scales large enough that the fast
    loop is not allowed (results beyond 2^30: the clamping path)."""
    rng = np.random.default_rng(rng_seed)
    ident = PostOps().append_eltwise("linear", 1.0, 0.0)
    for shape in ((1, 3, 1, 1), (1, 17, 1, 1), (1, 67, 1, 1), (2, 3, 7, 11), (1, 1000, 1, 3),
                  (2, 64, 9, 9)):
        for d0, d1, dd in (("s8", "s8", "s8"), ("u8", "s8", "u8"), ("s8", "u8", "u8"),
                           ("u8", "u8", "s8")):
            a, b = gen(rng, d0, shape), gen(rng, d1, shape)
            a.reshape(-1)[:2] = [np.iinfo(a.dtype).min, np.iinfo(a.dtype).max]
            for s0, s1 in (([0.37], [0.021]), ([0.5], [0.25]), ([3.1], [7.7]),
                           ([1e7], [3e6]), ([1e30], [2e30])):
                for alg in ("add", "sub", "mul", "min", "max", "div"):
                    ref = R.binary(a, b, alg, dd, src0_scale=s0, src1_scale=s1)
                    out = binary(a, b, alg, dd, s0=s0, s1=s1)
                    assert np.array_equal(out, ref), (shape, d0, d1, dd, s0, alg)
                    attr = PrimitiveAttr()
                    attr.set_post_ops(ident)
                    gen_out = binary(a, b, alg, dd, s0=s0, s1=s1, attr=attr)
                    assert np.array_equal(out, gen_out), (shape, d0, d1, dd, s0, alg)


@R.requires_onednn
def test_binary_broadcast_short_channels_last_rows(isa, rng_seed):
    """Channels-last data times a per-channel vector (an SE block's multiply) with few
    channels: the engine runs several rows at once against the vector repeated
    (_pointwise._row_groups), with the leftover rows on the plain plan.  Equal to oneDNN on
    the plain layout, where no grouping applies, for channel counts below, at and past the
    grouping's limits and row counts with and without leftover rows."""
    rng = np.random.default_rng(rng_seed)
    for c, h, w in ((1, 3, 5), (3, 7, 11), (8, 12, 96), (24, 9, 23), (100, 5, 6), (127, 4, 5),
                    (128, 3, 3)):
        a = gen(rng, "u8", (1, c, h, w))
        b = gen(rng, "u8", (1, c, 1, 1))
        a_cl = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        b_cl = np.ascontiguousarray(b.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        for alg in ("mul", "add", "max"):
            ref = R.binary(a, b, alg, "u8", src0_scale=[0.37], src1_scale=[0.021])
            out = binary(a_cl, b_cl, alg, "u8", s0=[0.37], s1=[0.021],
                         tags=("nhwc", "nhwc", "nhwc"))
            assert np.array_equal(out, ref), (c, h, w, alg)


def test_bind_runs_like_execute(isa, rng_seed):
    """ToolkitPrimitive.bind: sources in the described layout take the bound path, others
    (another layout, another dtype) go through execute -- same results, same errors; the
    static arguments are checked at bind time."""
    rng = np.random.default_rng(rng_seed)
    shape = (1, 24, 5, 7)
    attr = PrimitiveAttr()
    for arg in (A.DNNL_ARG_SRC_0, A.DNNL_ARG_SRC_1, A.DNNL_ARG_DST):
        attr.set_scales_mask(arg, 0)
    p = dnnq.Binary("mul", MD(shape, "u8", "nhwc"), MD((1, 24, 1, 1), "u8", "nhwc"),
                    MD(shape, "u8", "nhwc"), attr)
    static = {A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_0: np.float32([0.37]),
              A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_1: np.float32([0.021]),
              A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: np.float32([0.05])}
    a = gen(rng, "u8", shape)
    b = gen(rng, "u8", (1, 24, 1, 1))
    a_cl = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    want = p.execute({**static, A.DNNL_ARG_SRC_0: a, A.DNNL_ARG_SRC_1: b})
    run = p.bind({**static, A.DNNL_ARG_SRC_0: a_cl, A.DNNL_ARG_SRC_1: b})
    assert np.array_equal(run(a_cl, b), want)     # bound path
    assert np.array_equal(run(a, b), want)        # plain layout: through execute
    # a (1, C, 1, 1) operand viewed channels-last (its size-1 dims' strides differ from the
    # plain ones) addresses the same bytes: the bound path takes it
    b_cl = np.lib.stride_tricks.as_strided(b, strides=(24, 1, 24, 24))
    assert b_cl.strides != b.strides
    slow, calls = type(run)._slow, []
    type(run)._slow = lambda self, srcs: calls.append(1) or slow(self, srcs)
    try:
        assert np.array_equal(run(a_cl, b_cl), want) and not calls
        assert np.array_equal(run(a_cl[:, :, ::-1], b), p.execute(
            {**static, A.DNNL_ARG_SRC_0: a_cl[:, :, ::-1], A.DNNL_ARG_SRC_1: b})) and calls
    finally:
        type(run)._slow = slow
    with pytest.raises(dnnq.InvalidArguments, match="src0"):
        run(a.astype(np.int8), b)
    bad = dict(static)
    bad[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = np.float32([-1.0])
    with pytest.raises(dnnq.InvalidArguments):
        p.bind({**bad, A.DNNL_ARG_SRC_0: a_cl, A.DNNL_ARG_SRC_1: b})
