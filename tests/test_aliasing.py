"""Aliasing (issue 13, item 3): what may share memory with a primitive's destination.

As oneDNN: in place -- the input being the destination's very memory (same dtype, shape and
strides) -- for Eltwise (src), Binary (src0), Sum (input 0) and Softmax (src); it is compared
with the out-of-place execution on copies.  Every other overlap (partial, a view with other
strides, a scale, zero point, post-op input, bias, weights, RNN state, a Concat / Sum input, two
RNN outputs) raises InvalidArguments naming both arguments, before anything is written."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps, InvalidArguments
from dnnq import (DNNL_ARG_SRC, DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST, DNNL_ARG_SCALE,
                  DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER,
                  DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.primitives._common import arg_name, overlaps
from dnnq.primitives.rnn import _ALL_NAMES

import _primitive_cases as pc

NAMES = sorted(pc.CASES)
RNN = {"LSTM", "GRU", "LBRGRU", "VanillaRNN"}


def _name(prim_name, key):
    return (_ALL_NAMES.get(key) if prim_name in RNN else None) or arg_name(key)


def _out_key(name):
    return DNNL_ARG_DST_LAYER if name in RNN else DNNL_ARG_DST


def _overlapping(out_like, in_like):
    """(out, inp): new arrays shaped / typed as the two given, whose memory overlaps by the
    last 4 bytes of out (one buffer; inp holds in_like's values)."""
    n_out = out_like.nbytes
    off = max(0, (n_out - 4) // 4 * 4)
    buf = np.zeros(off + in_like.nbytes + n_out + 8, np.uint8)
    out = buf[:n_out].view(out_like.dtype).reshape(out_like.shape)
    out[...] = out_like
    inp = buf[off:off + in_like.nbytes].view(in_like.dtype).reshape(in_like.shape)
    inp[...] = in_like
    return out, inp


def _inputs(name):
    """(primitive, args with plain weights too, the name of each ndarray input)."""
    p, args, plain = pc.CASES[name]()
    out = p.execute(pc.fresh(args))
    dst = out[_out_key(name)] if isinstance(out, dict) else out
    keys = [k for k, v in args.items() if isinstance(v, np.ndarray) and k != _out_key(name)]
    return p, args, plain, np.ascontiguousarray(dst), keys


@pytest.mark.parametrize("name", NAMES)
def test_every_input_overlapping_dst_is_refused(name):
    p, args, plain, dst_like, keys = _inputs(name)
    cases = [(k, args) for k in keys] + [(k, {**args, **plain}) for k in plain]
    assert cases
    for key, base in cases:
        dst, inp = _overlapping(dst_like, base[key])
        before = dst.copy()
        bad = {**pc.fresh(base), key: inp, _out_key(name): dst}
        with pytest.raises(InvalidArguments) as info:
            p.execute(bad)
        msg = str(info.value)
        assert f"{_name(name, key)} overlaps {_name(name, _out_key(name))}" in msg, msg
        assert np.array_equal(dst.view(np.uint8), before.view(np.uint8))  # nothing written


@pytest.mark.parametrize("name", sorted(RNN))
def test_rnn_outputs_overlapping_each_other_are_refused(name):
    p, args, _ = pc.CASES[name]()
    out = p.execute(pc.fresh(args))
    layer, it = _overlapping(np.ascontiguousarray(out[DNNL_ARG_DST_LAYER]),
                             np.ascontiguousarray(out[DNNL_ARG_DST_ITER]))
    with pytest.raises(InvalidArguments, match="dst_iter overlaps dst_layer|dst_layer overlaps "
                                               "dst_iter"):
        p.execute({**pc.fresh(args), DNNL_ARG_DST_LAYER: layer, DNNL_ARG_DST_ITER: it})


@pytest.mark.parametrize("name", NAMES)
def test_disjoint_neighbours_in_one_buffer_are_accepted(name):
    """An input next to dst in one buffer (no element shared) runs as it would apart."""
    p, args, plain, dst_like, keys = _inputs(name)
    ref = pc.outputs(p.execute(pc.fresh(args)))
    key = keys[0]
    x = args[key]
    buf = np.zeros(dst_like.nbytes + x.nbytes + 64, np.uint8)
    dst = buf[:dst_like.nbytes].view(dst_like.dtype).reshape(dst_like.shape)
    dst[...] = args.get(_out_key(name), dst_like)
    start = -(-dst_like.nbytes // 64) * 64
    inp = buf[start:start + x.nbytes].view(x.dtype).reshape(x.shape)
    inp[...] = x
    got = p.execute({**pc.fresh(args), key: inp, _out_key(name): dst})
    assert pc.outputs(got) == ref


def test_interleaved_strided_views_are_exact():
    """Two strided views of one buffer that share no element are not an overlap (the exact
    test behind the bounds test); one more shared element is."""
    buf = np.zeros((8, 16), np.float32)
    a, b = buf[:, ::2], buf[:, 1::2]
    assert np.may_share_memory(a, b) and not overlaps(a, b)
    assert overlaps(a, buf[:, 2:3])
    p = dnnq.Eltwise("square", MD((8, 8), "f32"), MD((8, 8), "f32"))
    rng = np.random.default_rng(0)
    a[...] = rng.standard_normal(a.shape)
    p.execute({DNNL_ARG_SRC: a, DNNL_ARG_DST: b})
    np.testing.assert_array_equal(b, a * a)


# ---- in place: allowed where oneDNN allows it ----------------------------------------------
DTS = ("f32", "s32", "s8", "u8")
SHAPES = [(3, 5), (2, 70, 33), (1, 4, 90, 100)]  # the last: 36000 elements, threaded


def _gen(rng, dt, shape):
    if dt == "f32":
        return (rng.standard_normal(shape) * 40).astype(np.float32)
    info = np.iinfo(np.dtype({"s32": "int32", "s8": "int8", "u8": "uint8"}[dt]))
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, shape, endpoint=True).astype(info.dtype)


def _check_in_place(p, args, key, shape, tag=None, dt=None):
    """Run p with args[key] and dst the very same array; compare with copies."""
    # out of place: separate copies (dst holding src's values, as a sum post-op reads them)
    ref = p.execute({**{k: (v.copy() if isinstance(v, np.ndarray) else v)
                        for k, v in args.items()}, DNNL_ARG_DST: args[key].copy()})
    x = args[key]
    if tag is not None:  # the caller's channels-last layout, shared by both
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        x = np.moveaxis(x, -1, 1)
    same = {**args, key: x, DNNL_ARG_DST: x}
    out = p.execute(same)
    assert out is x
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", DTS)
def test_eltwise_in_place(isa, dt, shape):
    rng = np.random.default_rng(1)
    ops = PostOps().append_binary("add", MD((1,) * (len(shape) - 1) + shape[-1:], "f32"))
    ops.append_sum(0.5)  # reads dst, which is src here
    attr = PrimitiveAttr().set_post_ops(ops).set_scales_mask(DNNL_ARG_SRC, 0)
    tag = "nhwc" if len(shape) == 4 else None
    p = dnnq.Eltwise("clip", MD(shape, dt, tag), MD(shape, dt, tag), -20.0, 30.0, attr=attr)
    args = {DNNL_ARG_SRC: _gen(rng, dt, shape), DNNL_ARG_SCALE | DNNL_ARG_SRC: np.float32([1.5]),
            DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1:
                rng.standard_normal((1,) * (len(shape) - 1) + shape[-1:]).astype(np.float32)}
    _check_in_place(p, args, DNNL_ARG_SRC, shape, tag)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", DTS)
def test_binary_in_place_on_src0(isa, dt, shape):
    rng = np.random.default_rng(2)
    s1 = (1,) + shape[1:2] + (1,) * (len(shape) - 2)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_SRC_0, 0)
    p = dnnq.Binary("sub", MD(shape, dt), MD(s1, "s8"), MD(shape, dt), attr=attr)
    args = {DNNL_ARG_SRC_0: _gen(rng, dt, shape), DNNL_ARG_SRC_1: _gen(rng, "s8", s1),
            DNNL_ARG_SCALE | DNNL_ARG_SRC_0: np.float32([0.75])}
    _check_in_place(p, args, DNNL_ARG_SRC_0, shape)
    # src1 (broadcast, another dtype) is never dst's memory
    dst, src1 = _overlapping(args[DNNL_ARG_SRC_0], args[DNNL_ARG_SRC_1])
    with pytest.raises(InvalidArguments, match="src_1 overlaps dst"):
        p.execute({**args, DNNL_ARG_SRC_1: src1, DNNL_ARG_DST: dst})


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", DTS)
def test_sum_in_place_on_input_0(isa, dt, shape):
    rng = np.random.default_rng(3)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_MULTIPLE_SRC + 1, 0)
    p = dnnq.Sum(MD(shape, dt), [MD(shape, dt), MD(shape, "u8")], attr=attr)
    args = {DNNL_ARG_MULTIPLE_SRC: _gen(rng, dt, shape),
            DNNL_ARG_MULTIPLE_SRC + 1: _gen(rng, "u8", shape),
            DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + 1): np.float32([0.5])}
    _check_in_place(p, args, DNNL_ARG_MULTIPLE_SRC, shape)
    # input 1 is not the in-place one, even as dst's very memory
    if dt == "u8":
        x = args[DNNL_ARG_MULTIPLE_SRC + 1].copy()
        with pytest.raises(InvalidArguments, match=r"multiple_src\[1\] overlaps dst"):
            p.execute({**args, DNNL_ARG_MULTIPLE_SRC + 1: x, DNNL_ARG_DST: x})


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", ("f32", "s8", "u8"))
def test_softmax_in_place(isa, dt, shape):
    rng = np.random.default_rng(4)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_DST, 0)
    p = dnnq.Softmax("softmax", MD(shape, dt), MD(shape, dt), 1, attr=attr)
    args = {DNNL_ARG_SRC: _gen(rng, dt, shape), DNNL_ARG_SCALE | DNNL_ARG_DST:
            np.float32([1 / 128 if dt != "f32" else 1.0])}
    _check_in_place(p, args, DNNL_ARG_SRC, shape)


@pytest.mark.parametrize("prim", ["Eltwise", "Binary", "Sum", "Softmax"])
def test_in_place_needs_the_very_same_memory(prim):
    """Partial overlaps, other strides and another dtype over the same bytes are refused."""
    rng = np.random.default_rng(5)
    n = 12
    key = {"Eltwise": DNNL_ARG_SRC, "Binary": DNNL_ARG_SRC_0, "Sum": DNNL_ARG_MULTIPLE_SRC,
           "Softmax": DNNL_ARG_SRC}[prim]

    def make(dt_src, dt_dst):
        if prim == "Eltwise":
            return dnnq.Eltwise("relu", MD((n, n), dt_src), MD((n, n), dt_dst)), {}
        if prim == "Binary":
            return (dnnq.Binary("add", MD((n, n), dt_src), MD((1, n), "f32"), MD((n, n), dt_dst)),
                    {DNNL_ARG_SRC_1: np.ones((1, n), np.float32)})
        if prim == "Sum":
            return dnnq.Sum(MD((n, n), dt_dst), [MD((n, n), dt_src)]), {}
        return dnnq.Softmax("softmax", MD((n, n), dt_src), MD((n, n), dt_dst), 1), {}

    p, extra = make("s8", "s8")
    buf = _gen(rng, "s8", (n + 1, n))
    for what, src, dst in (("partial", buf[1:], buf[:-1]), ("transposed", buf[:n].T, buf[:n]),
                           ("reversed rows", buf[:n][::-1], buf[:n])):
        before = buf.copy()
        with pytest.raises(InvalidArguments, match="exactly") as info:
            p.execute({**extra, key: src, DNNL_ARG_DST: dst})
        assert _name(prim, key) in str(info.value), what
        assert np.array_equal(buf, before), what
    p, extra = make("u8", "s8")  # the same bytes read as u8, written as s8
    x = _gen(rng, "s8", (n, n))
    with pytest.raises(InvalidArguments, match="exactly"):
        p.execute({**extra, key: x.view(np.uint8), DNNL_ARG_DST: x})


def test_r08_matmul_weights_scales_viewing_dst_are_refused():
    B, M, K, N = 2, 4, 8, 16
    attr = PrimitiveAttr().set_scales_mask(dnnq.DNNL_ARG_WEIGHTS, 4)
    mm = dnnq.MatMul(MD((B, M, K), "u8"), MD((B, K, N), "s8"), MD((B, M, N), "f32"), attr=attr)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (B, M, K)).astype(np.uint8)
    w = mm.prepare_weights(rng.integers(-128, 127, (B, K, N)).astype(np.int8))
    dst = np.ones((B, M, N), np.float32)
    with pytest.raises(InvalidArguments, match="scale.weights overlaps dst"):
        mm.execute({DNNL_ARG_SRC: x, dnnq.DNNL_ARG_WEIGHTS: w,
                    DNNL_ARG_SCALE | dnnq.DNNL_ARG_WEIGHTS: dst[0, 0], DNNL_ARG_DST: dst})
    assert (dst == 1).all()
