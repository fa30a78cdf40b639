"""Bad input to MatMul / InnerProduct: every case raises InvalidArguments or Unimplemented
naming the argument, never crashes or answers wrongly."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq import MatMul, MemoryDesc
from _quant_ref import matmul_acc

M, K, N = 4, 8, 6
RNG = np.random.default_rng(0)
X = RNG.integers(0, 256, (M, K), dtype=np.uint8)
W = RNG.integers(-128, 128, (K, N), dtype=np.int8)


def attr_with(scales=(), zps=(), ops=None):
    a = PrimitiveAttr()
    for arg, mask in scales:
        a.set_scales_mask(arg, mask)
    for arg, mask in zps:
        a.set_zero_points_mask(arg, mask)
    if ops is not None:
        a.set_post_ops(ops)
    return a


def mm(dst_dt="s32", attr=None, bias=None, src=("u8", (M, K)), wei=("s8", (K, N)),
       dst_dims=(M, N)):
    return dnnq.MatMul(MD(src[1], src[0]), MD(wei[1], wei[0]), MD(dst_dims, dst_dt), bias,
                       attr=attr)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(src=("f32", (M, K))), dnnq.Unimplemented, "src data type f32"),
    (dict(wei=("u8", (K, N))), dnnq.Unimplemented, "weights data type u8"),
    (dict(wei=("s8", (K + 1, N))), dnnq.InvalidArguments, "K="),
    (dict(dst_dims=(M, N + 1)), dnnq.InvalidArguments, "dst dims"),
    (dict(src=("u8", (2, M, K)), wei=("s8", (3, K, N)), dst_dims=(3, M, N)),
     dnnq.InvalidArguments, "src batch 2"),
    (dict(src=("u8", (M, K)), wei=("s8", (1, K, N)), dst_dims=(1, M, N)), dnnq.InvalidArguments,
     "same number of dims"),
    (dict(bias=MD((N + 1,), "f32")), dnnq.InvalidArguments, "bias"),
    (dict(src=("u8", (1, 1, M, K)), wei=("s8", (1, 1, K, N)), dst_dims=(1, 1, M, N)),
     dnnq.InvalidArguments, "src dims"),
])
def test_bad_descriptors(kw, exc, match):
    with pytest.raises(exc, match=match):
        mm(**kw)


def test_non_descriptor_argument():
    with pytest.raises(dnnq.InvalidArguments, match="MemoryDesc"):
        dnnq.MatMul((M, K), MD((K, N), "s8"), MD((M, N), "s32"))


@pytest.mark.parametrize("scales,zps,exc,match", [
    ([(DNNL_ARG_WEIGHTS, 1)], [], dnnq.Unimplemented, "supported masks: 0, 2"),
    ([(DNNL_ARG_SRC, 2)], [], dnnq.Unimplemented, "supported masks: 0"),
    ([(DNNL_ARG_DST, 1)], [], dnnq.Unimplemented, "supported masks: 0"),
    ([(DNNL_ARG_WEIGHTS, 4)], [], dnnq.InvalidArguments, "mask"),          # bit >= ndims
    ([(DNNL_ARG_BIAS, 0)], [], (dnnq.Unimplemented, dnnq.InvalidArguments), "bias"),
    ([], [(DNNL_ARG_WEIGHTS, 1)], dnnq.Unimplemented, "supported masks: 0, 2"),
    ([], [(DNNL_ARG_SRC, 1)], dnnq.Unimplemented, "supported masks: 0, 2"),
    ([(DNNL_ARG_WEIGHTS, dnnq.DNNL_MASK_PER_CHANNEL_OIHW)], [], dnnq.InvalidArguments,
     "semantic"),
])
def test_unsupported_masks(scales, zps, exc, match):
    with pytest.raises(exc, match=match):
        mm(attr=attr_with(scales, zps))


def test_depthwise_post_op_is_unimplemented():
    ops = PostOps()
    ops.append_dw("s8", "f32", "u8", 3, 1, 1)
    with pytest.raises(dnnq.Unimplemented, match="post_op\\[0\\]"):
        mm(attr=attr_with(ops=ops))


def test_binary_src1_must_broadcast():
    ops = PostOps()
    ops.append_binary("add", MD((M, N + 1), "f32"))
    with pytest.raises(dnnq.InvalidArguments, match="post_op\\[0\\].src_1"):
        mm(attr=attr_with(ops=ops))


def test_execution_errors():
    p = mm("s8", attr_with([(DNNL_ARG_WEIGHTS, 2)], [(DNNL_ARG_SRC, 0)]))
    good = {DNNL_ARG_SRC: X, DNNL_ARG_WEIGHTS: W,
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.full(N, 0.5, np.float32),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.array([3], np.int32)}
    p.execute(good)

    def bad(match, **change):
        args = dict(good)
        for k, v in change.items():
            key = {"src": DNNL_ARG_SRC, "wei": DNNL_ARG_WEIGHTS, "dst": DNNL_ARG_DST,
                   "ws": DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS,
                   "zs": DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                   "ds": DNNL_ARG_SCALE | DNNL_ARG_DST}[k]
            if v is None:
                args.pop(key)
            else:
                args[key] = v
        with pytest.raises(dnnq.InvalidArguments, match=match):
            p.execute(args)

    bad("src", src=X.astype(np.int8))                       # dtype
    bad("src", src=X[:, :-1])                               # shape
    bad("src", src=X.tolist())                              # not an array
    bad("weights", wei=W.astype(np.uint8))
    bad("missing src", src=None)
    bad("scale.weights", ws=np.ones(N + 1, np.float32))     # count
    bad("scale.weights", ws=np.full(N, np.nan, np.float32))
    bad("scale.weights", ws=np.zeros(N, np.float32))
    bad("scale.weights", ws=-np.ones(N, np.float32))
    bad("scale.weights", ws=np.array(["a"] * N))
    bad("missing scale.weights", ws=None)
    bad("zero_point.src", zs=np.array([2**31], np.int64))
    bad("zero_point.src", zs=np.array([1.5]))
    bad("scale.dst", ds=np.ones(1, np.float32))             # no mask set for dst scales
    bad("dst", dst=np.empty((M, N), np.int32))              # dst dtype
    bad("dst", dst=np.empty((M, N), np.int8)[::-1])         # not C-contiguous
    with pytest.raises(dnnq.InvalidArguments, match="execute"):
        p.execute([X, W])


def test_dst_overlapping_src_is_refused():
    p = dnnq.MatMul(MD((M, K), "u8"), MD((K, K), "s8"), MD((M, K), "u8"))
    buf = np.array(X)
    with pytest.raises(dnnq.InvalidArguments, match="src overlaps dst"):
        p.execute({DNNL_ARG_SRC: buf, DNNL_ARG_WEIGHTS: W[:, :1].repeat(K, 1)[:K],
                   DNNL_ARG_DST: buf})


def test_sum_post_op_needs_dst():
    ops = PostOps()
    ops.append_sum(1.0)
    p = mm("s32", attr_with(ops=ops))
    with pytest.raises(dnnq.InvalidArguments, match="sum"):
        p.execute({DNNL_ARG_SRC: X, DNNL_ARG_WEIGHTS: W})


def test_weights_packed_for_another_primitive_are_refused():
    p1, p2 = mm("s32"), mm("s8")
    with pytest.raises(dnnq.InvalidArguments, match="packed"):
        p2.execute({DNNL_ARG_SRC: X, DNNL_ARG_WEIGHTS: p1.prepare_weights(W)})


def test_non_contiguous_inputs_are_accepted_by_copying():
    p = mm("s32")
    xs = np.asfortranarray(X)
    ws = np.asfortranarray(W)
    out = p.execute({DNNL_ARG_SRC: xs, DNNL_ARG_WEIGHTS: ws})
    np.testing.assert_array_equal(out, matmul_acc(X, W))
    # a strided view (every other column of a wider array)
    wide = np.zeros((M, 2 * K), np.uint8)
    wide[:, ::2] = X
    np.testing.assert_array_equal(p.execute({DNNL_ARG_SRC: wide[:, ::2], DNNL_ARG_WEIGHTS: W}),
                                  matmul_acc(X, W))


def test_unknown_execution_argument():
    p = mm("s32")
    with pytest.raises(dnnq.InvalidArguments, match="not used"):
        p.execute({DNNL_ARG_SRC: X, DNNL_ARG_WEIGHTS: W, DNNL_ARG_BIAS: np.zeros(N, np.float32)})
    with pytest.raises(dnnq.InvalidArguments, match="not used"):
        p.execute({DNNL_ARG_SRC: X, DNNL_ARG_WEIGHTS: W,
                   DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1: np.zeros((M, N))})


def test_inner_product_shape_errors():
    with pytest.raises(dnnq.InvalidArguments, match="weights dims"):
        dnnq.InnerProduct(MD((2, 8, 3, 3), "u8"), MD((5, 8, 2, 2), "s8"), MD((2, 5), "s8"))
    with pytest.raises(dnnq.InvalidArguments, match="dst dims"):
        dnnq.InnerProduct(MD((2, 8), "u8"), MD((5, 8), "s8"), MD((2, 6), "s8"))


def test_weights_packed_under_another_isa_are_refused():
    # the packed layout depends on the kernel (AVX-512 packs u8 = w + 128 for s8 sources)
    levels = dnnq.available_isa_levels()
    if len(levels) < 2:
        pytest.skip("one ISA level on this CPU")
    desc = (MD((M, K), "s8"), MD((K, N), "s8"), MD((M, N), "s32"))
    old = dnnq.set_max_cpu_isa(levels[-1])
    try:
        p_hi = dnnq.MatMul(*desc)
        dnnq.set_max_cpu_isa(levels[0])
        p_lo = dnnq.MatMul(*desc)
    finally:
        dnnq.set_max_cpu_isa(old)
    Xs = X.view(np.int8)
    with pytest.raises(dnnq.InvalidArguments, match="packed"):
        p_lo.execute({DNNL_ARG_SRC: Xs, DNNL_ARG_WEIGHTS: p_hi.prepare_weights(W)})
    np.testing.assert_array_equal(p_lo.execute({DNNL_ARG_SRC: Xs, DNNL_ARG_WEIGHTS: W}),
                                  p_hi.execute({DNNL_ARG_SRC: Xs, DNNL_ARG_WEIGHTS: W}))


def test_rnn_qparams_are_refused_by_gemm_primitives():
    """RNN-only attributes must not be silently ignored (they would change nothing)."""
    from dnnq import InnerProduct
    for setter in (lambda a: a.set_rnn_data_qparams(0.5, 1.0),
                   lambda a: a.set_rnn_weights_qparams(0, [2.0])):
        attr = PrimitiveAttr()
        setter(attr)
        with pytest.raises(dnnq.Unimplemented, match="RNN"):
            MatMul(MemoryDesc((2, 4), "u8"), MemoryDesc((4, 3), "s8"),
                   MemoryDesc((2, 3), "s32"), attr=attr)
        with pytest.raises(dnnq.Unimplemented, match="RNN"):
            InnerProduct(MemoryDesc((2, 4), "u8"), MemoryDesc((3, 4), "s8"),
                         MemoryDesc((2, 3), "s32"), attr=attr)


@pytest.mark.parametrize("key_name", ["scale_wei", "scale_src", "zp_dst", "bias"])
def test_inputs_that_are_views_of_dst_are_refused(key_name):
    """Every input, scales and zero points included, must lie outside dst: the kernel would
    read them after overwriting them."""
    B, M, K, N = 2, 4, 8, 16
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 4)
    attr.set_scales_mask(DNNL_ARG_SRC, 0)
    attr.set_zero_points_mask(DNNL_ARG_DST, 0)
    mm = MatMul(MemoryDesc((B, M, K), "u8"), MemoryDesc((B, K, N), "s8"),
                MemoryDesc((B, M, N), "s32"), MemoryDesc((1, 1, N), "f32"), attr=attr)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (B, M, K)).astype(np.uint8)
    w = mm.prepare_weights(rng.integers(-128, 127, (B, K, N)).astype(np.int8))
    dst = np.ones((B, M, N), np.int32)
    dst_f = dst.view(np.float32)
    args = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DNNL_ARG_DST: dst,
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.ones(N, np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_SRC: np.ones(1, np.float32),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.zeros(1, np.int32),
            DNNL_ARG_BIAS: np.zeros((1, 1, N), np.float32)}
    dst_f[0, 0] = 1.0
    view = {"scale_wei": (DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS, dst_f[0, 0]),
            "scale_src": (DNNL_ARG_SCALE | DNNL_ARG_SRC, dst_f[0, 0, :1]),
            "zp_dst": (DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dst[1, 1, 3:4]),
            "bias": (DNNL_ARG_BIAS, dst_f[1, 0].reshape(1, 1, N))}[key_name]
    args[view[0]] = view[1]
    with pytest.raises(dnnq.InvalidArguments, match="overlaps"):
        mm.execute(args)


def test_packed_weights_cannot_be_replaced():
    """Execution trusts the packed buffer's size: it is read-only after packing."""
    mm = MatMul(MemoryDesc((4, 64), "u8"), MemoryDesc((64, 64), "s8"), MemoryDesc((4, 64), "s32"))
    pw = mm.prepare_weights(np.ones((64, 64), np.int8))
    for attr in ("packed", "colsum", "K", "N", "batch", "batch_stride", "owner"):
        with pytest.raises(AttributeError):
            setattr(pw, attr, getattr(pw, attr))
    assert not pw.packed.flags.writeable
    with pytest.raises(ValueError):
        pw.packed[:1] = 0
