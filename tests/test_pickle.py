"""Pickling (issue 13, item 7): every primitive pickles as its class and constructor
arguments and is created again when loaded (validated, dispatched for the loading machine and
ISA cap, re-planned); packed weights pickle as their plain weights and primitive and are packed
again.  The reference is the original primitive's own execution (bit for bit)."""
import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps, InvalidArguments
from dnnq import DNNL_ARG_WEIGHTS, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_SRC
from dnnq.primitives._cache import rebuild_primitive
from dnnq.post_ops import _rebuild_post_ops

import _primitive_cases as pc

NAMES = sorted(pc.CASES)


@pytest.fixture
def no_cache():
    """Without the primitive cache, unpickling really creates a new primitive."""
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        yield
    finally:
        dnnq.set_primitive_cache_capacity(old)


def test_every_exported_primitive_has_a_case():
    # a primitive added to dnnq.__all__ later must get a case here (and so pickle)
    assert set(pc.CASES) == set(pc.primitive_classes())


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_executes_identically(name, no_cache):
    p, args, _ = pc.CASES[name]()
    ref = pc.outputs(p.execute(pc.fresh(args)))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is type(p) and q is not p
    assert q.impl_info == p.impl_info
    assert pc.outputs(q.execute(pc.fresh(args))) == ref
    # the packed weights pickled on their own: packed again, accepted by the unpickled copy
    # of their primitive (and by the original)
    args2 = pickle.loads(pickle.dumps(args))
    assert pc.outputs(q.execute(pc.fresh(args2))) == ref
    assert pc.outputs(p.execute(pc.fresh(args2))) == ref
    # together: one primitive, its weights packed by it
    p3, args3 = pickle.loads(pickle.dumps((p, args)))
    assert pc.outputs(p3.execute(args3)) == ref


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_with_the_cache_returns_the_cached_primitive(name):
    p, args, _ = pc.CASES[name]()
    assert pickle.loads(pickle.dumps(p)) is p


def test_pickle_holds_the_description_at_creation(no_cache):
    """The caller changing their attribute after creation changes neither the primitive nor
    its pickle (the constructor arguments are copied when it is created)."""
    rng = np.random.default_rng(0)
    attr = PrimitiveAttr().set_scales_mask(DNNL_ARG_SRC, 0)
    p = dnnq.Eltwise("relu", MD((3, 4), "f32"), MD((3, 4), "u8"), attr=attr)
    attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)  # after creation
    attr.set_post_ops(PostOps().append_eltwise("abs"))
    x = rng.standard_normal((3, 4)).astype(np.float32) * 50
    args = {DNNL_ARG_SRC: x, dnnq.DNNL_ARG_SCALE | DNNL_ARG_SRC: np.float32([2.0])}
    q = pickle.loads(pickle.dumps(p))
    np.testing.assert_array_equal(q.execute(args), np.clip(np.rint(np.maximum(x * 2, 0)), 0, 255))
    np.testing.assert_array_equal(q.execute(args), p.execute(args))


@pytest.mark.parametrize("name", [n for n in NAMES if pc.CASES[n]()[2]])
def test_packed_weights_unpack_to_the_plain_weights(name):
    p, args, plain = pc.CASES[name]()
    for arg, w in plain.items():
        packed = args[arg]
        state = packed.__reduce__()[1]
        assert state[0] is p
        np.testing.assert_array_equal(state[-1], w)
        again = pickle.loads(pickle.dumps(packed))
        assert type(again) is type(packed) and again is not packed
        for attr in ("packed", "dw", "colsum", "comp"):
            if hasattr(packed, attr) and getattr(packed, attr) is not None:
                np.testing.assert_array_equal(np.asarray(getattr(again, attr), dtype=object),
                                              np.asarray(getattr(packed, attr), dtype=object))


def test_matmul_s8_source_weights_are_shifted_and_unpacked(no_cache):
    """The AVX-512 signed-source kernel stores u8 = w + 128: unpacking undoes it."""
    p, args, plain = pc.matmul()
    pw = args[DNNL_ARG_WEIGHTS]
    np.testing.assert_array_equal(pw.unpack()[0], plain[DNNL_ARG_WEIGHTS])


@pytest.mark.parametrize("name", NAMES)
def test_unpickled_primitive_is_dispatched_for_the_loading_isa_cap(name, no_cache):
    p, args, _ = pc.CASES[name]()
    blob = pickle.dumps((p, args))
    previous = dnnq.set_max_cpu_isa("default")
    try:
        q, qargs = pickle.loads(blob)
        direct, dargs, _ = pc.CASES[name]()  # created under the cap
    finally:
        dnnq.set_max_cpu_isa(previous)
    assert q.impl_info == direct.impl_info
    if dnnq.get_effective_cpu_isa() != "default":  # the pickle did not carry the kernel
        assert q.impl_info != p.impl_info
    assert pc.outputs(q.execute(qargs)) == pc.outputs(direct.execute(dargs))


def test_attributes_and_descriptors_round_trip():
    ops = PostOps()
    ops.append_eltwise("linear", 2.0, -0.0).append_binary("max", MD((1, 4), "s8"))
    ops.append_sum(0.5, -3, "u8").append_checkpoint()
    ops.append_select("lt", MD((1, 4), "f32"), MD((1, 1), "f32"))
    ops.append_dw("s8", None, "u8", 3, 2, 1)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 3).set_zero_points_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_rnn_data_qparams(64.0, 12.5).set_rnn_weights_qparams(24, np.float32([1, 2, 3]))
    attr.set_post_ops(ops)
    for obj in (ops, attr, MD((2, 3, 4, 5), "u8", "nhwc")):
        again = pickle.loads(pickle.dumps(obj))
        assert again == obj and again is not obj
        assert repr(again) == repr(obj)
    assert pickle.loads(pickle.dumps(attr)).key() == attr.key()  # -0.0 kept


def test_loading_validates_again():
    """A pickle is never trusted: what it holds goes through the public constructors."""
    with pytest.raises(InvalidArguments):
        _rebuild_post_ops((("eltwise", ("no_such_alg", 0.0, 0.0)),))
    with pytest.raises(InvalidArguments):
        _rebuild_post_ops((("shell", ()),))
    with pytest.raises(InvalidArguments):  # K of the weights differs from the source's
        rebuild_primitive(dnnq.MatMul, (MD((2, 3), "u8"), MD((4, 5), "s8"), MD((2, 5), "f32")),
                          {})
    with pytest.raises(InvalidArguments):
        rebuild_primitive(dict, ((),), {})
    # plain weights of the wrong shape in a packed-weights pickle
    p, args, plain = pc.matmul()
    fn, (prim, w) = args[DNNL_ARG_WEIGHTS].__reduce__()
    with pytest.raises(InvalidArguments):
        fn(prim, w[:-1])


def test_rnn_packed_weights_pickle_with_their_argument(no_cache):
    p, args, plain = pc.CASES["GRU"]()
    wl, wi = pickle.loads(pickle.dumps((args[DNNL_ARG_WEIGHTS_LAYER],
                                        args[DNNL_ARG_WEIGHTS_ITER])))
    assert wl.which == DNNL_ARG_WEIGHTS_LAYER and wi.which == DNNL_ARG_WEIGHTS_ITER
    np.testing.assert_array_equal(wl.unpack(p.weights_layer_desc), plain[DNNL_ARG_WEIGHTS_LAYER])


def test_primitives_execute_identically_in_spawned_processes():
    """The basis of process pools: pickled primitives and arguments (packed weights too)
    executed by two spawned workers give the parent's results."""
    blobs, expected = [], []
    for name in NAMES:
        p, args, _ = pc.CASES[name]()
        expected.append((name, p.impl_info, pc.outputs(p.execute(pc.fresh(args)))))
        blobs.append(pickle.dumps((p, pc.fresh(args))))
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        got = list(pool.map(pc.execute_pickled, blobs))
    assert got == expected


def test_fused_depthwise_convolution_round_trip(no_cache):
    """A convolution with the fused depthwise post-op (append_dw): the chain pickles with its
    depthwise entry, the 1x1 weights with their primitive, and the band primitives are
    created again."""
    rng = np.random.default_rng(9)
    IC, C, H, W = 8, 70, 9, 7
    attr = PrimitiveAttr()
    attr.set_zero_points_mask(DNNL_ARG_SRC, 0)
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1).set_scales_mask(dnnq.DNNL_ARG_DST, 0)
    attr.set_post_ops(PostOps().append_dw("s8", None, "s32", 3, 2, 1))
    p = dnnq.Convolution(MD((1, IC, H, W), "u8"), MD((C, IC, 1, 1), "s8"),
                         MD((1, C, H, W), "u8"), strides=(1, 1), padding_l=(0, 0),
                         padding_r=(0, 0), attr=attr)
    DW = dnnq.DNNL_ARG_ATTR_POST_OP_DW
    args = {DNNL_ARG_SRC: rng.integers(0, 256, (1, IC, H, W), dtype=np.uint8),
            DNNL_ARG_WEIGHTS: p.prepare_weights(rng.integers(-128, 128, (C, IC, 1, 1),
                                                             dtype=np.int8)),
            DW | DNNL_ARG_WEIGHTS: rng.integers(-128, 128, (C, 1, 1, 3, 3), dtype=np.int8),
            dnnq.DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.int32([37]),
            dnnq.DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: rng.uniform(0.001, 0.01, C).astype(np.float32),
            dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST: np.float32([0.5])}
    ref = pc.outputs(p.execute(pc.fresh(args)))
    q, qargs = pickle.loads(pickle.dumps((p, args)))
    assert q is not p and q.impl_info == p.impl_info
    assert pc.outputs(q.execute(qargs)) == ref
    assert pc.outputs(q.execute(pickle.loads(pickle.dumps(args)))) == ref


@pytest.mark.parametrize("groups, wtag", [(1, "hwio"), (3, None), ("depthwise", None)])
def test_grouped_and_channels_last_conv_weights_unpack(groups, wtag, no_cache):
    rng = np.random.default_rng(4)
    if groups == "depthwise":
        C = 20
        src, wdims, dst = (1, C, 6, 5), (C, 1, 1, 3, 3), (1, C, 6, 5)
    else:
        src, wdims, dst = (2, 6 * groups, 6, 5), (groups, 5, 6, 3, 3), (2, 5 * groups, 6, 5)
        if groups == 1:
            wdims = wdims[1:]
    p = dnnq.Convolution(MD(src, "u8", "nhwc"), MD(wdims, "s8", wtag), MD(dst, "s32", "nhwc"),
                         strides=1, padding_l=1, padding_r=1)
    w = rng.integers(-128, 128, wdims, dtype=np.int8)
    pw = p.prepare_weights(w)
    np.testing.assert_array_equal(pw.__reduce__()[1][1], w)
    x = rng.integers(0, 256, src, dtype=np.uint8)
    ref = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw})
    q, qw = pickle.loads(pickle.dumps((p, pw)))
    np.testing.assert_array_equal(q.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: qw}), ref)
