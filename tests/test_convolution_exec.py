"""The C-level execute path of Convolution / Deconvolution
(dnnq/primitives/_kernels/_conv_exec.pyx).

Its configurations run through it (``p._exec.run(args)`` answers) bit-identical to the real
oneDNN 3.2 on every ISA level and in both layouts; every argument it must not take (wrong
type, byte order, strides, sizes, owner, values, keys, aliasing) makes it hand over (None) to
the checked path, which then gives oneDNN's result or raises InvalidArguments."""
import numpy as np
import pytest

import dnnq
from dnnq import (InvalidArguments, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                  DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS)
from test_convolution import Case, assert_same, channels_last, needs_onednn

SS, WS, DS = (DNNL_ARG_SCALE | a for a in (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST))
ZS, ZD = (DNNL_ARG_ATTR_ZERO_POINTS | a for a in (DNNL_ARG_SRC, DNNL_ARG_DST))

# (kernel kind, Case geometry): 1x1 (the GEMM driver), folded taps (few channels), the
# batch-reduce over taps (past one 64-column panel), depthwise (past 64 channels), grouped,
# deconvolution, 1-D and 3-D
GEOMETRIES = {
    "1x1": dict(mb=2, ICg=37, OCg=70, isp=(5, 3), k=(1, 1), pl=(0, 0)),
    "fold": dict(ICg=3, OCg=17, isp=(11, 9), k=(7, 7), s=(2, 2), pl=(3, 3)),
    "brgconv": dict(mb=2, ICg=20, OCg=65, isp=(6, 7), k=(3, 3), pl=(1, 1)),
    "dw": dict(G=67, ICg=1, OCg=1, isp=(9, 8), k=(3, 3), s=(2, 2), pl=(1, 1), grouped=True),
    "grouped": dict(G=3, ICg=5, OCg=5, isp=(6, 6), k=(3, 3), pl=(1, 1)),  # dst shaped as src
    "deconv": dict(ICg=9, OCg=11, isp=(4, 5), k=(3, 3), s=(2, 2), pl=(1, 1), deconv=True),
    "1d": dict(ICg=6, OCg=66, isp=(13,), k=(3,), s=(1,), pl=(2,), pr=(0,), d=(0,)),
    "3d": dict(ICg=4, OCg=8, isp=(4, 5, 3), k=(3, 1, 2), s=(1, 2, 1), pl=(1, 0, 1),
               d=(0, 0, 0)),
}
CL = {3: "nwc", 4: "nhwc", 5: "ndhwc"}


def _case(rng, name, *, src_dt="u8", dst_dt="u8", cl=(True, True), sum_prev=False,
          src_zp=3):
    g = dict(GEOMETRIES[name])
    OC = g.get("G", 1) * g["OCg"]
    nd = len(g["isp"]) + 2
    q = {"src_zp": [src_zp], "src_scales": [0.25],
         "wei_scales": rng.uniform(0.001, 0.01, OC).astype(np.float32),
         "wei_scale_mask": 3 if g.get("grouped", g.get("G", 1) > 1) else 1,
         "dst_scales": [1.5]}
    if dst_dt in ("u8", "s8"):
        q["dst_zp"] = [-5]
    # the sum first: oneDNN 3.2's strided deconvolution with an eltwise before the sum runs
    # its AVX2 kernel (pair saturation; tests/test_sum_post_op.py), not this path's numerics
    ops = ([("sum", 0.5, 0)] if sum_prev else []) + [("eltwise", "relu", 0.0, 0.0)]
    return Case(rng, src_dt=src_dt, dst_dt=dst_dt, bias_dt="f32", q=q, post_ops=ops,
                src_tag=CL[nd] if cl[0] else None, dst_tag=CL[nd] if cl[1] else None,
                sum_prev=sum_prev, **g)


def _args(c, p):
    """The arguments of Case.run_dnnq, as a caller of the C path passes them."""
    q = c.q
    args = {DNNL_ARG_SRC: channels_last(c.src) if c.src_tag else c.src.copy(),
            DNNL_ARG_WEIGHTS: p.prepare_weights(c.wei), DNNL_ARG_BIAS: c.bias,
            SS: np.float32(q["src_scales"]), WS: q["wei_scales"], DS: np.float32(q["dst_scales"]),
            ZS: np.int32(q["src_zp"])}
    if "dst_zp" in q:
        args[ZD] = np.int32(q["dst_zp"])
    if c.dst_prev is not None:
        args[DNNL_ARG_DST] = channels_last(c.dst_prev) if c.dst_tag else c.dst_prev.copy()
    return args


def _fresh_dst(c, p, args):
    if c.dst_prev is not None:
        return channels_last(c.dst_prev) if c.dst_tag else c.dst_prev.copy()
    return p.dst_desc.empty()


@needs_onednn
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("cl", [(True, True), (False, False), (True, False)])
def test_c_path_vs_onednn(isa, name, cl):
    rng = np.random.default_rng([list(GEOMETRIES).index(name), int(cl[0]), int(cl[1])])
    for src_dt, dst_dt, sum_prev in (("u8", "u8", False), ("s8", "s8", True),
                                     ("u8", "f32", False), ("s8", "s32", False)):
        if sum_prev and not cl[1]:
            continue  # a plain dst with a sum: the checked path (below)
        c = _case(rng, name, src_dt=src_dt, dst_dt=dst_dt, cl=cl, sum_prev=sum_prev,
                  src_zp=-7 if src_dt == "s8" else 3)
        ref = c.run_onednn()
        _, p = c.run_dnnq()
        assert p._exec is not None
        args = _args(c, p)
        out = p._exec.run(args)  # the C path takes these arguments
        assert out is not None
        assert_same(out, ref)
        if sum_prev:
            continue
        # without dst: a fresh array in the descriptor's layout
        args.pop(DNNL_ARG_DST, None)
        out = p._exec.run(args)
        assert out is not None and out.shape == c.dst_shape
        assert_same(out, ref)
        assert out.strides == p.dst_desc.empty().strides
        # a given dst is written in place and returned (twice: pooled plain copies reused)
        for _ in range(2):
            dst = _fresh_dst(c, p, args)
            assert p._exec.run({**args, DNNL_ARG_DST: dst}) is dst
            assert_same(dst, ref)


def _hand_over_cases():
    """name -> f(args, c, p) returning the arguments the C path must refuse, and what the
    checked path does with them ("same": oneDNN's result, "raise": InvalidArguments)."""
    def swap(a):
        return a.astype(a.dtype.newbyteorder())

    def strided(a):
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        v = big[..., ::2]
        v[...] = a
        return v

    def unaligned(a):  # the same values one byte past alignment: typed C reads need aligned
        raw = np.empty(a.nbytes + 1, np.uint8)
        u = raw[1:].view(a.dtype).reshape(a.shape)
        u[...] = a
        assert not u.flags.aligned
        return u

    def readonly(a):
        a = a.copy()
        a.flags.writeable = False
        return a

    def other_weights(args, c, p):
        attr = dnnq.PrimitiveAttr()
        other = type(p)(p.src_desc, p.weights_desc, p.dst_desc, p.bias_desc, attr=attr,
                        **c.geom)
        return {**args, DNNL_ARG_WEIGHTS: other.prepare_weights(c.wei)}

    def dst_on_scale(key):
        def make(args, c, p):  # a scale array viewing the first element of dst (f32)
            dst = p.dst_desc.empty()
            flat = dst.transpose(p.dst_desc.physical_order).reshape(-1)
            flat[:1] = args[key][:1]
            return {**args, DNNL_ARG_DST: dst, key: flat[:1]}
        return make

    return {
        "not a dict": ("raise", lambda a, c, p: list(a.items())),
        "bool key": ("raise", lambda a, c, p: {**{k: v for k, v in a.items()
                                                   if k != DNNL_ARG_SRC}, True: a[DNNL_ARG_SRC]}),
        "float key": ("raise", lambda a, c, p: {**{k: v for k, v in a.items()
                                                    if k != SS}, float(SS): a[SS]}),
        "unknown key": ("raise", lambda a, c, p: {**a, DNNL_ARG_SCALE | 99: a[SS]}),
        "missing bias": ("raise", lambda a, c, p: {k: v for k, v in a.items()
                                                    if k != DNNL_ARG_BIAS}),
        "strided src": ("same", lambda a, c, p: {**a, DNNL_ARG_SRC: strided(a[DNNL_ARG_SRC])}),
        "swapped src scale": ("same", lambda a, c, p: {**a, SS: swap(a[SS])}),
        "swapped wei scales": ("same", lambda a, c, p: {**a, WS: swap(a[WS])}),
        "strided wei scales": ("same", lambda a, c, p: {**a, WS: strided(a[WS])}),
        "swapped bias": ("raise", lambda a, c, p: {**a, DNNL_ARG_BIAS: swap(a[DNNL_ARG_BIAS])}),
        "unaligned bias": ("same", lambda a, c, p: {**a, DNNL_ARG_BIAS: unaligned(
            a[DNNL_ARG_BIAS])}),
        "unaligned wei scales": ("same", lambda a, c, p: {**a, WS: unaligned(a[WS])}),
        "unaligned src scale": ("same", lambda a, c, p: {**a, SS: unaligned(a[SS])}),
        "unaligned dst zero point": ("same", lambda a, c, p: {**a, ZD: unaligned(a[ZD])}),
        "unaligned dst": ("same", lambda a, c, p: {**a, DNNL_ARG_DST: p.dst_desc.logical_view(
            unaligned(np.zeros(p.dst_desc.physical_shape, np.float32)))}),
        "2-D bias": ("raise", lambda a, c, p: {**a, DNNL_ARG_BIAS: a[DNNL_ARG_BIAS][None]}),
        "f64 src scale": ("same", lambda a, c, p: {**a, SS: a[SS].astype(np.float64)}),
        "zero wei scale": ("raise", lambda a, c, p: {**a, WS: np.where(
            np.arange(a[WS].size) == a[WS].size - 1, 0, a[WS]).astype(np.float32)}),
        "nan dst scale": ("raise", lambda a, c, p: {**a, DS: np.float32([np.nan])}),
        "inf src scale": ("raise", lambda a, c, p: {**a, SS: np.float32([np.inf])}),
        "zp past u8": ("same", None),  # built in the test (the case's own zero point)
        "wrong owner": ("raise", other_weights),
        "plain weights": ("same", lambda a, c, p: {**a, DNNL_ARG_WEIGHTS: c.wei}),
        "readonly dst": ("raise", lambda a, c, p: {**a, DNNL_ARG_DST: readonly(
            p.dst_desc.empty())}),
        "strided dst": ("same", lambda a, c, p: {**a, DNNL_ARG_DST: strided(
            np.zeros(c.dst_shape, p.dst_desc.numpy_dtype))}),
        "dst is src": ("raise", lambda a, c, p: {**a, DNNL_ARG_DST: a[DNNL_ARG_SRC]}),
        "dst on src scale": ("raise", dst_on_scale(SS)),
        "dst on dst scale": ("raise", dst_on_scale(DS)),
    }


HAND_OVER = _hand_over_cases()


@needs_onednn
@pytest.mark.parametrize("what", list(HAND_OVER))
def test_hand_over_to_the_checked_path(isa, what):
    expect, make = HAND_OVER[what]
    rng = np.random.default_rng(7)
    dst_dt = "f32" if what.startswith("dst on") or what == "unaligned dst" else "u8"
    if what == "zp past u8":
        c = _case(rng, "brgconv", dst_dt=dst_dt, src_zp=300)
    elif what == "dst is src":
        c = _case(rng, "grouped", dst_dt="u8")  # same dtype and shape as src
        assert c.dst_shape == c.src.shape
    else:
        c = _case(rng, "brgconv", dst_dt=dst_dt)
    _, p = c.run_dnnq()
    assert p._exec is not None
    args = _args(c, p)
    if what != "zp past u8":  # the unchanged arguments take the C path
        assert p._exec.run(args) is not None
    bad = args if make is None else make(args, c, p)
    assert p._exec.run(bad) is None
    if expect == "raise":
        with pytest.raises(InvalidArguments):
            p.execute(bad)
    else:
        assert_same(p.execute(bad), c.run_onednn())


@needs_onednn
def test_sum_into_plain_dst_is_checked_path(isa):
    """A sum post-op with a plain dst needs the previous dst transposed first: the checked
    path does it."""
    rng = np.random.default_rng(11)
    c = _case(rng, "brgconv", src_dt="s8", dst_dt="s8", cl=(True, False), sum_prev=True)
    _, p = c.run_dnnq()
    args = _args(c, p)
    assert p._exec.run(args) is None
    assert_same(p.execute(args), c.run_onednn())
    del args[DNNL_ARG_DST]
    assert p._exec.run(args) is None
    with pytest.raises(InvalidArguments, match="sum"):
        p.execute(args)


def test_configurations_without_the_c_path():
    """Binary post-ops, weights zero points, per-channel zero points and non-f32 bias keep
    the checked path (no C executor)."""
    src = dnnq.MemoryDesc((1, 4, 5, 5), "u8", "nhwc")
    wei = dnnq.MemoryDesc((8, 4, 3, 3), "s8")
    dst = dnnq.MemoryDesc((1, 8, 5, 5), "s32", "nhwc")
    geom = dict(strides=1, padding_l=1, padding_r=1)
    assert dnnq.Convolution(src, wei, dst, **geom)._exec is not None
    assert dnnq.Convolution(src, wei, dst, dnnq.MemoryDesc((8,), "s32"), **geom)._exec is None
    for arg, mask in ((DNNL_ARG_WEIGHTS, 0), (DNNL_ARG_SRC, 2), (DNNL_ARG_DST, 2)):
        attr = dnnq.PrimitiveAttr()
        attr.set_zero_points_mask(arg, mask)
        assert dnnq.Convolution(src, wei, dst, attr=attr, **geom)._exec is None
    attr = dnnq.PrimitiveAttr()
    ops = dnnq.PostOps()
    ops.append_binary("add", dnnq.MemoryDesc((1, 8, 5, 5), "f32"))
    attr.set_post_ops(ops)
    assert dnnq.Convolution(src, wei, dst, attr=attr, **geom)._exec is None
    # (a binary input the same for every pixel -- per channel or per tensor, f32 -- takes
    # the C path: tests/test_conv_binary_epilogue.py)
    for dims, dt, c_path in (((1, 8, 1, 1), "f32", True), ((1, 1, 1, 1), "f32", True),
                             ((1, 1, 5, 1), "f32", False), ((1, 8, 1, 1), "s8", False)):
        attr, ops = dnnq.PrimitiveAttr(), dnnq.PostOps()
        ops.append_binary("mul", dnnq.MemoryDesc(dims, dt))
        attr.set_post_ops(ops)
        assert (dnnq.Convolution(src, wei, dst, attr=attr, **geom)._exec is not None) == c_path
