"""dnnq's checkpoint / select post-ops (extensions beyond oneDNN 3.2) on every primitive that
takes post-ops, against an independent numpy model: per element, ``f = value if saved <alg>
cond else f`` with ``saved`` the value at the latest checkpoint and IEEE comparisons (NaN
false except ne)."""

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A
from dnnq.post_ops import SELECT_ALGS

from _quant_ref import gen, saturate_rne
from _threads import run_in_threads

F = np.float32
CMP = {"le": np.less_equal, "lt": np.less, "ge": np.greater_equal, "gt": np.greater,
       "eq": np.equal, "ne": np.not_equal}


def po(i, arg=A.DNNL_ARG_SRC_1):
    return A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | arg


class Chain:
    """[binary div D] checkpoint, binary mul M, select alg(cond) -> value; with the arrays for
    execution and the numpy model of the chain on the primitive's f32 value ``base``."""

    def __init__(self, rng, alg, dims, cond_shape, value_shape, div_shape=None, hit=None):
        self.alg = alg
        self.ops = PostOps()
        self.args = {}
        self.div = None
        if div_shape is not None:  # zeros make +-inf and NaN (0 / 0) before the checkpoint
            self.div = rng.choice(np.array([0.0, 1.0, -2.0, 0.5], F), div_shape).astype(F)
            self.args[po(len(self.ops))] = self.div
            self.ops.append_binary("div", MD(div_shape, "f32"))
        self.ops.append_checkpoint()
        self.mul = (rng.standard_normal(dims) * 2).astype(F)
        self.args[po(len(self.ops))] = self.mul
        self.ops.append_binary("mul", MD(dims, "f32"))
        self.cond = (rng.standard_normal(cond_shape) * 2).astype(F)
        if hit is not None:  # make some conditions equal to values of saved (eq / le / ge)
            flat = self.cond.reshape(-1)
            flat[::2] = np.resize(np.asarray(hit, F).reshape(-1), flat[::2].shape)
        self.value = (rng.standard_normal(value_shape) * 10).astype(F)
        self.sel = len(self.ops)
        self.args[po(self.sel)] = self.cond
        self.args[po(self.sel, A.DNNL_ARG_SRC_2)] = self.value
        self.ops.append_select(alg, MD(cond_shape, "f32"), MD(value_shape, "f32"))
        self.attr = PrimitiveAttr()
        self.attr.set_post_ops(self.ops)

    def model(self, base):
        base = np.asarray(base, F)
        with np.errstate(all="ignore"):
            saved = (base / self.div).astype(F) if self.div is not None else base
            v = (saved * self.mul).astype(F)
            take = CMP[self.alg](saved, np.broadcast_to(self.cond, saved.shape))
        return np.where(take, np.broadcast_to(self.value, v.shape), v).astype(F)


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == F:
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), \
            np.argwhere(a.view(np.uint32) != b.view(np.uint32))[:5]
    else:
        assert np.array_equal(a, b)


def special_f32(rng, shape):
    x = (rng.standard_normal(shape) * 2).astype(F)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
    return x


# ---- toolkit primitives ------------------------------------------------------------------------
@pytest.mark.parametrize("alg", SELECT_ALGS)
def test_select_on_eltwise_and_binary(isa, rng_seed, alg):
    rng = np.random.default_rng(rng_seed)
    dims = (2, 5, 3, 4)
    x = special_f32(rng, dims)
    for cond_shape, value_shape in (((1, 5, 1, 1), (1,)), (dims, (5, 1, 1)), ((4,), dims),
                                    ((1,), (2, 1, 3, 1))):
        c = Chain(rng, alg, dims, cond_shape, value_shape, hit=x)
        d = MD(dims, "f32")
        # relu with alpha 1 and mul by 1 are the identity on every f32 (NaN, -0.0 included)
        e = dnnq.Eltwise("relu", d, d, 1.0, 0.0, c.attr)
        same(e.execute({A.DNNL_ARG_SRC: x, **c.args}), c.model(x))
        b = dnnq.Binary("mul", d, MD((1,), "f32"), d, c.attr)
        out = b.execute({A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: np.ones(1, F), **c.args})
        same(out, c.model(x))


@pytest.mark.parametrize("dst_dt", ["f32", "s8", "u8"])
def test_select_on_int8_eltwise_and_channels_last_binary(isa, rng_seed, dst_dt):
    rng = np.random.default_rng(rng_seed)
    dims = (2, 6, 3, 5)
    x = rng.integers(-128, 128, dims).astype(np.int8)
    xf = x.astype(F)
    for alg in ("le", "gt", "ne"):
        c = Chain(rng, alg, dims, (1, 6, 1, 1), (1, 6, 3, 1), hit=xf)
        e = dnnq.Eltwise("abs", MD(dims, "s8"), MD(dims, dst_dt), attr=c.attr)
        same(e.execute({A.DNNL_ARG_SRC: x, **c.args}), saturate_rne(c.model(np.abs(xf)), dst_dt))
        dcl = MD(dims, dst_dt, tag="nhwc")
        b = dnnq.Binary("add", MD(dims, "s8", tag="nhwc"), MD((1, 6, 1, 1), "f32"), dcl, c.attr)
        y = (rng.standard_normal((1, 6, 1, 1))).astype(F)
        out = b.execute({A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: y, **c.args})
        same(out, saturate_rne(c.model(xf + y), dst_dt))


@pytest.mark.parametrize("tag", [None, "nhwc"])
@pytest.mark.parametrize("src_dt,dst_dt", [("u8", "f32"), ("u8", "u8"), ("s8", "s8")])
def test_select_on_pooling(isa, rng_seed, tag, src_dt, dst_dt):
    rng = np.random.default_rng(rng_seed)
    x = gen(rng, src_dt, (2, 7, 4, 6))
    # a 1x1 average is the value itself (an integer, exact in f32)
    for alg in SELECT_ALGS:
        c = Chain(rng, alg, (2, 7, 4, 6), (1, 7, 1, 1), (2, 1, 4, 6), hit=x.astype(F))
        p = dnnq.Pooling("avg_include_padding", MD(x.shape, src_dt, tag=tag),
                         MD(x.shape, dst_dt, tag=tag), kernel=1, strides=1, attr=c.attr)
        same(p.execute({A.DNNL_ARG_SRC: x, **c.args}), saturate_rne(c.model(x.astype(F)), dst_dt))


def test_select_uses_the_latest_checkpoint_and_survives_a_sum(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    dims = (3, 40)
    x = special_f32(rng, dims)
    prev = (rng.standard_normal(dims)).astype(F)
    m = (rng.standard_normal(dims)).astype(F)
    cond, val = np.zeros((1, 40), F), np.full((3, 1), 7.0, F)
    ops = (PostOps().append_checkpoint().append_binary("mul", MD(dims, "f32"))
           .append_checkpoint().append_sum(1.0).append_select("gt", MD((1, 40), "f32"),
                                                              MD((3, 1), "f32"))
           .append_select("le", MD((1, 40), "f32"), MD((3, 1), "f32")))
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    with np.errstate(invalid="ignore"):
        saved = (x * m).astype(F)
        v = (saved + prev).astype(F)
        v = np.where(saved > cond, val, v)
        v = np.where(saved <= cond, -val, v).astype(F)
    d = MD(dims, "f32")
    e = dnnq.Eltwise("relu", d, d, 1.0, 0.0, attr)
    dst = prev.copy()
    e.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_DST: dst, po(1): m, po(4): cond,
               po(4, A.DNNL_ARG_SRC_2): val, po(5): cond, po(5, A.DNNL_ARG_SRC_2): -val})
    same(dst, v)


# ---- GEMM primitives ----------------------------------------------------------------------------
@pytest.mark.parametrize("alg", SELECT_ALGS)
@pytest.mark.parametrize("dst_dt", ["f32", "s8"])
def test_select_on_matmul(isa, rng_seed, alg, dst_dt):
    rng = np.random.default_rng(rng_seed)
    M, K, N = 5, 9, 70  # two column panels: per-column inputs are read at n0 + n
    src = rng.integers(0, 256, (M, K)).astype(np.uint8)
    wei = rng.integers(-128, 128, (K, N)).astype(np.int8)
    acc = (src.astype(np.int64) @ wei.astype(np.int64)).astype(F)
    for cond_shape, value_shape, div_shape in (((N,), (M, N), None), ((M, 1), (1,), (M, N)),
                                               ((M, N), (N,), (N,)), ((1, 1), (M, 1), None)):
        c = Chain(rng, alg, (M, N), cond_shape, value_shape, div_shape, hit=acc / 3)
        p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), dst_dt), attr=c.attr)
        same(p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: wei, **c.args}),
             saturate_rne(c.model(acc), dst_dt))
        # packed weights: the fast path must not take a chain with selects
        pw = p.prepare_weights(wei)
        same(p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: pw, **c.args}),
             saturate_rne(c.model(acc), dst_dt))


def test_select_on_batched_matmul_and_inner_product(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    B, M, K, N = 3, 4, 8, 67
    src = rng.integers(-128, 128, (B, M, K)).astype(np.int8)
    wei = rng.integers(-128, 128, (1, K, N)).astype(np.int8)
    acc = (src.astype(np.int64) @ wei.astype(np.int64)).astype(F)
    for alg in ("le", "gt"):
        c = Chain(rng, alg, (B, M, N), (B, 1, N), (B, M, 1), (1, 1, N), hit=acc)
        p = dnnq.MatMul(MD((B, M, K), "s8"), MD((1, K, N), "s8"), MD((B, M, N), "f32"),
                        attr=c.attr)
        same(p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: wei, **c.args}), c.model(acc))
    Nb, IC, OC = 6, 10, 65
    x = rng.integers(0, 256, (Nb, IC)).astype(np.uint8)
    w = rng.integers(-128, 128, (OC, IC)).astype(np.int8)
    bias = rng.standard_normal(OC).astype(F)
    base = ((x.astype(np.int64) @ w.astype(np.int64).T).astype(F) + bias).astype(F)
    for alg in ("lt", "ge", "eq"):
        c = Chain(rng, alg, (Nb, OC), (OC,), (Nb, OC), hit=base)
        p = dnnq.InnerProduct(MD((Nb, IC), "u8"), MD((OC, IC), "s8"), MD((Nb, OC), "u8"),
                              MD((OC,), "f32"), attr=c.attr)
        out = p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_WEIGHTS: w, A.DNNL_ARG_BIAS: bias,
                         **c.args})
        same(out, saturate_rne(c.model(base), "u8"))


def test_select_with_sum_on_matmul(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    M, K, N = 7, 5, 20
    src = rng.integers(0, 256, (M, K)).astype(np.uint8)
    wei = rng.integers(-128, 128, (K, N)).astype(np.int8)
    acc = (src.astype(np.int64) @ wei.astype(np.int64)).astype(F)
    prev = rng.standard_normal((M, N)).astype(F)
    cond = np.median(acc, axis=0).astype(F)
    ops = PostOps().append_checkpoint().append_sum(2.0).append_select(
        "gt", MD((N,), "f32"), MD((1,), "f32"))
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), "f32"), attr=attr)
    dst = prev.copy()
    p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: wei, A.DNNL_ARG_DST: dst,
               po(2): cond, po(2, A.DNNL_ARG_SRC_2): np.full(1, -1.5, F)})
    ref = np.where(acc > cond, F(-1.5), (acc + F(2) * prev).astype(F)).astype(F)
    same(dst, ref)


def test_matmul_select_inputs_are_per_call_across_threads(rng_seed):
    """Concurrent executions of one primitive with different select inputs (the kernel's post-op
    table, select values included, is copied per call)."""
    rng = np.random.default_rng(rng_seed)
    M, K, N = 64, 32, 96
    src = rng.integers(0, 256, (M, K)).astype(np.uint8)
    wei = rng.integers(-128, 128, (K, N)).astype(np.int8)
    acc = (src.astype(np.int64) @ wei.astype(np.int64)).astype(F)
    ops = PostOps().append_checkpoint().append_select("le", MD((N,), "f32"), MD((M, N), "f32"))
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), "f32"), attr=attr)
    pw = p.prepare_weights(wei)

    def work(t):
        r = np.random.default_rng(t)
        for _ in range(20):
            cond = r.standard_normal(N).astype(F) * 100
            val = r.standard_normal((M, N)).astype(F)
            out = p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: pw, po(1): cond,
                             po(1, A.DNNL_ARG_SRC_2): val})
            np.testing.assert_array_equal(out, np.where(acc <= cond, val, acc))

    run_in_threads(work, [(t,) for t in range(4)])  # re-raises a worker's failure here


# ---- validation and errors ------------------------------------------------------------------
def test_select_validation():
    d = MD((1,), "f32")
    with pytest.raises(dnnq.InvalidArguments, match="checkpoint"):
        PostOps().append_eltwise("relu").append_select("le", d, d)
    ops = PostOps().append_checkpoint().append_select("select_gt", d, d)
    assert ops.kind(0) == "checkpoint" and ops.kind(1) == "select"
    assert ops[1].alg == "gt" and ops[1].cond_desc == d and ops.select_positions() == [1]
    assert ops == PostOps().append_checkpoint().append_select("gt", d, d)
    assert ops != PostOps().append_checkpoint().append_select("ge", d, d)
    with pytest.raises(dnnq.InvalidArguments, match="select algorithm"):
        PostOps().append_checkpoint().append_select("add", d, d)
    with pytest.raises(dnnq.InvalidArguments, match="f32"):
        PostOps().append_checkpoint().append_select("le", MD((1,), "s8"), d)
    with pytest.raises(dnnq.InvalidArguments, match="value_desc"):
        PostOps().append_checkpoint().append_select("le", d, np.zeros(1, F))
    big = PostOps().append_checkpoint()
    for _ in range(30):
        big.append_eltwise("relu")
    with pytest.raises(dnnq.InvalidArguments, match="position"):
        big.append_select("le", d, d)
    assert A.name(po(3, A.DNNL_ARG_SRC_2)) == "post_op[3].src_2"
    with pytest.raises(dnnq.InvalidArguments):
        PrimitiveAttr().set_scales_mask(po(3, A.DNNL_ARG_SRC_2), 0)


def _chain_attr():
    ops = PostOps().append_eltwise("relu").append_checkpoint().append_select(
        "le", MD((1,), "f32"), MD((1,), "f32"))
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    return attr


def test_missing_select_inputs_name_the_argument(isa):
    attr = _chain_attr()
    one = np.ones(1, F)
    d = MD((2, 3, 4, 4), "f32")
    x = np.ones(d.dims, F)
    cases = [
        (dnnq.Eltwise("relu", d, d, attr=attr), {A.DNNL_ARG_SRC: x}),
        (dnnq.Binary("add", d, d, d, attr=attr), {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: x}),
        (dnnq.Pooling("max", d, MD((2, 3, 2, 2), "f32"), kernel=2, strides=2, attr=attr),
         {A.DNNL_ARG_SRC: x}),
        (dnnq.MatMul(MD((2, 3), "u8"), MD((3, 4), "s8"), MD((2, 4), "f32"), attr=attr),
         {A.DNNL_ARG_SRC: np.ones((2, 3), np.uint8), A.DNNL_ARG_WEIGHTS: np.ones((3, 4), np.int8)}),
        (dnnq.InnerProduct(MD((2, 3), "u8"), MD((4, 3), "s8"), MD((2, 4), "f32"), attr=attr),
         {A.DNNL_ARG_SRC: np.ones((2, 3), np.uint8), A.DNNL_ARG_WEIGHTS: np.ones((4, 3), np.int8)}),
    ]
    for prim, args in cases:
        with pytest.raises(dnnq.InvalidArguments, match=r"missing post_op\[2\]\.src_2"):
            prim.execute({**args, po(2): one})
        with pytest.raises(dnnq.InvalidArguments, match=r"missing post_op\[2\]\.src_1"):
            prim.execute({**args, po(2, A.DNNL_ARG_SRC_2): one})
        with pytest.raises(dnnq.InvalidArguments, match=r"post_op\[2\]\.src_2"):
            prim.execute({**args, po(2): one, po(2, A.DNNL_ARG_SRC_2): np.ones(2, F)})
        out = prim.execute({**args, po(2): one, po(2, A.DNNL_ARG_SRC_2): one * 5})
        assert out.dtype == F


def test_primitives_without_post_ops_refuse_the_extensions():
    attr = _chain_attr()
    d = MD((2, 8), "f32")
    for make in (lambda: dnnq.Reorder(d, MD((2, 8), "s8"), attr),
                 lambda: dnnq.Sum(d, [d, d], attr),
                 lambda: dnnq.Concat(MD((4, 8), "f32"), 0, [d, d], attr),
                 lambda: dnnq.Softmax("softmax", d, d, 1, attr)):
        with pytest.raises(dnnq.Unimplemented, match="post_op"):
            make()
    only_ckpt = PrimitiveAttr()
    only_ckpt.set_post_ops(PostOps().append_checkpoint())
    with pytest.raises(dnnq.Unimplemented, match="checkpoint"):
        dnnq.Reorder(d, MD((2, 8), "s8"), only_ckpt)


def test_select_broadcast_errors_at_creation():
    ops = PostOps().append_checkpoint().append_select("le", MD((3,), "f32"), MD((1,), "f32"))
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    d = MD((2, 4), "f32")
    with pytest.raises(dnnq.InvalidArguments, match="src_1"):
        dnnq.Eltwise("relu", d, d, attr=attr)
    with pytest.raises(dnnq.InvalidArguments, match="src_1"):
        dnnq.MatMul(MD((2, 3), "u8"), MD((3, 4), "s8"), d, attr=attr)


def test_signed_zero_parameters_are_distinct_chains(isa):
    """linear beta -0.0 keeps a -0.0 product (FakeQuantize's select form relies on it), +0.0
    does not: the two chains compare unequal and the primitive cache keeps them apart."""
    x = np.array([-0.0, 0.0, -1.0, 2.0], F)
    d = MD(x.shape, "f32")
    outs = []
    for beta in (0.0, -0.0, 0.0):
        ops = PostOps().append_eltwise("linear", 3.0, beta)
        attr = PrimitiveAttr()
        attr.set_post_ops(ops)
        outs.append(dnnq.Eltwise("relu", d, d, 1.0, 0.0, attr).execute({A.DNNL_ARG_SRC: x}))
    assert PostOps().append_eltwise("linear", 3.0, -0.0) != \
        PostOps().append_eltwise("linear", 3.0, 0.0)
    with np.errstate(all="ignore"):
        want = [(F(3) * x + F(b)).astype(F) for b in (0.0, -0.0, 0.0)]
    for out, ref in zip(outs, want):
        same(out, ref)
    assert np.signbit(outs[1][0]) and not np.signbit(outs[0][0])
