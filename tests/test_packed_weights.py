"""Packed weights (issue 13, item 6) of Convolution, Deconvolution and the RNNs, as MatMul's:
immutable attributes and read-only buffers, and at execute a check that they were packed for a
primitive of this description and have this description's sizes.  The `object.__setattr__`
cases go around the immutability (the one path Python leaves open) to prove the execute-time
size check: without it the kernels would read past the buffers."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, InvalidArguments
from dnnq import (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_SRC_LAYER,
                  DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER)

import _primitive_cases as pc

CONV = ["Convolution", "Deconvolution"]
RNN = ["LSTM", "GRU", "LBRGRU", "VanillaRNN"]


@pytest.fixture
def no_cache():
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        yield
    finally:
        dnnq.set_primitive_cache_capacity(old)


def _depthwise():
    rng = np.random.default_rng(3)
    C = 70
    p = dnnq.Convolution(MD((1, C, 5, 5), "u8", "nhwc"), MD((C, 1, 1, 3, 3), "s8"),
                         MD((1, C, 5, 5), "s32", "nhwc"), strides=1, padding_l=1, padding_r=1)
    w = rng.integers(-128, 128, (C, 1, 1, 3, 3), dtype=np.int8)
    x = rng.integers(0, 256, (1, C, 5, 5), dtype=np.uint8)
    return p, {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: p.prepare_weights(w)}, {DNNL_ARG_WEIGHTS: w}


CONV_CASES = {"Convolution": pc.convolution, "Deconvolution": pc.deconvolution,
              "depthwise": _depthwise}


@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv_packed_weights_are_immutable(name):
    p, args, _ = CONV_CASES[name]()
    pw = args[DNNL_ARG_WEIGHTS]
    for attr in ("packed", "dw", "colsum", "tapsum", "plain", "owner", "origin", "new"):
        with pytest.raises(AttributeError):
            setattr(pw, attr, None)
    with pytest.raises(AttributeError):
        del pw.packed
    for attr in ("packed", "dw", "colsum", "tapsum", "plain"):
        arr = getattr(pw, attr)
        if arr is not None:
            assert not arr.flags.writeable
            with pytest.raises(ValueError):
                arr[...] = 0


# (case, buffer): depthwise weights have no GEMM panels, the others no depthwise buffer
TRUNCATIONS = [(name, field) for name in sorted(CONV_CASES)
               for field in ("packed", "dw", "plain", "colsum")
               if (field == "dw") == (name == "depthwise") or field in ("plain", "colsum")]


def _half(arr):
    return arr.reshape(-1)[:arr.size // 2].copy()


@pytest.mark.parametrize("name, field", TRUNCATIONS)
def test_conv_truncated_buffers_are_refused_at_execute(name, field):
    p, args, _ = CONV_CASES[name]()
    pw = args[DNNL_ARG_WEIGHTS]
    ref = pc.outputs(p.execute(pc.fresh(args)))
    bad = pw.for_owner(pw.owner)
    object.__setattr__(bad, field, _half(getattr(pw, field)))
    with pytest.raises(InvalidArguments, match="sizes"):
        p.execute({**pc.fresh(args), DNNL_ARG_WEIGHTS: bad})
    # the fast path (channels-last arrays, no binary post-op) checks as well
    assert pc.outputs(p.execute(pc.fresh(args))) == ref


def test_conv_truncated_buffers_are_refused_on_the_fast_path():
    p, args, _ = _depthwise()
    assert p._fast
    pw = args[DNNL_ARG_WEIGHTS]
    bad = pw.for_owner(pw.owner)
    object.__setattr__(bad, "dw", _half(pw.dw))
    with pytest.raises(InvalidArguments, match="sizes"):
        p.execute({**args, DNNL_ARG_WEIGHTS: bad})


@pytest.mark.parametrize("name", CONV)
def test_conv_weights_of_another_description_are_refused(name, no_cache):
    p, args, plain = CONV_CASES[name]()
    ctor_args, kw = p._ctor_args
    same = type(p)(*ctor_args, **kw)  # an equal description packs alike: accepted
    assert same is not p
    assert pc.outputs(same.execute(pc.fresh(args))) == pc.outputs(p.execute(pc.fresh(args)))
    attr = PrimitiveAttr()  # same shapes, another attribute
    other = type(p)(*ctor_args[:4], **{**kw, "attr": attr})
    with pytest.raises(InvalidArguments, match="another description"):
        other.execute({DNNL_ARG_SRC: args[DNNL_ARG_SRC], DNNL_ARG_WEIGHTS: args[DNNL_ARG_WEIGHTS],
                       dnnq.DNNL_ARG_BIAS: args[dnnq.DNNL_ARG_BIAS]})


def _rnn(name):
    return pc.CASES[name]()


@pytest.mark.parametrize("name", RNN)
def test_rnn_packed_weights_are_immutable(name):
    p, args, _ = _rnn(name)
    pw = args[DNNL_ARG_WEIGHTS_LAYER]
    for attr in ("packed", "comp", "owner", "which", "origin", "new"):
        with pytest.raises(AttributeError):
            setattr(pw, attr, None)
    assert type(pw.packed) is tuple and all(type(row) is tuple for row in pw.packed)
    for row in pw.packed:
        for buf in row:
            with pytest.raises(ValueError):
                buf[:1] = 0
    with pytest.raises(ValueError):
        pw.comp[...] = 0


@pytest.mark.parametrize("name", RNN)
def test_rnn_truncated_buffers_are_refused_at_execute(name):
    p, args, _ = _rnn(name)
    pw = args[DNNL_ARG_WEIGHTS_ITER]
    ref = pc.outputs(p.execute(pc.fresh(args)))
    short = tuple(tuple(_half(b) for b in row) for row in pw.packed)
    for field, value in (("packed", short), ("packed", pw.packed[:1]),
                         ("packed", [list(row) for row in pw.packed]),
                         ("comp", pw.comp[..., :1].copy())):
        bad = dnnq.primitives.rnn.PackedRnnWeights(pw.packed, pw.comp, pw.owner, pw.which)
        object.__setattr__(bad, field, value)
        with pytest.raises(InvalidArguments, match="sizes"):
            p.execute({**pc.fresh(args), DNNL_ARG_WEIGHTS_ITER: bad})
    assert pc.outputs(p.execute(pc.fresh(args))) == ref


@pytest.mark.parametrize("name", RNN)
def test_rnn_weights_of_another_description_or_argument_are_refused(name, no_cache):
    p, args, plain = _rnn(name)
    ref = pc.outputs(p.execute(pc.fresh(args)))
    ctor_args, kw = p._ctor_args
    same = type(p)(*ctor_args, **kw)
    assert same is not p
    assert pc.outputs(same.execute(pc.fresh(args))) == ref
    # layer weights given as iter weights (same shapes here: C == H)
    swapped = {**pc.fresh(args), DNNL_ARG_WEIGHTS_ITER: args[DNNL_ARG_WEIGHTS_LAYER]}
    with pytest.raises(InvalidArguments, match="another primitive or for another argument"):
        p.execute(swapped)
    # another description (per-tensor weights scales instead of per gate and channel)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_zero_points_mask(DNNL_ARG_SRC_LAYER, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS_LAYER, 0).set_scales_mask(DNNL_ARG_WEIGHTS_ITER, 0)
    other = type(p)(*ctor_args, **{**kw, "attr": attr})
    oargs = {**pc.fresh(args)}
    for k in (DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER):
        oargs[dnnq.DNNL_ARG_SCALE | k] = np.float32([30.0])
    with pytest.raises(InvalidArguments, match="another primitive"):
        other.execute(oargs)
    # ... which packs its own from the plain weights
    oargs.update(plain)
    other.execute(oargs)
