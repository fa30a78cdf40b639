"""FakeQuantize against a direct numpy transcription of the OpenVINO FakeQuantize-1 definition
(evaluated in f32), standalone and as a post-op chain on several primitives, bit for bit:
ordered, reversed, equal and per-channel mixed bounds, inputs on the bounds and one f32 either
side of them, +-inf, levels 2 ... 65536, every dispatch level."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A

from _quant_ref import saturate_rne

F = np.float32
LEVELS = [2, 3, 256, 65536]


def fq_reference(x, il, ih, ol, oh, levels):
    """OpenVINO FakeQuantize-1, every operation in f32, round = half to even."""
    x = np.asarray(x, F)
    il, ih, ol, oh = (np.broadcast_to(np.asarray(v, F), x.shape) for v in (il, ih, ol, oh))
    with np.errstate(all="ignore"):
        mid = np.rint((x - il) / (ih - il) * F(levels - 1)) / F(levels - 1) * (oh - ol) + ol
    return np.where(x <= np.minimum(il, ih), ol,
                    np.where(x > np.maximum(il, ih), oh, mid)).astype(F)


def bits(a):
    return np.asarray(a, F).view(np.uint32)


def assert_bits(out, ref):
    """Bit for bit (a NaN only has to be a NaN); the first mismatches in the message."""
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.dtype == F:
        nan = np.isnan(out) & np.isnan(ref)
        bad = (bits(out) != bits(ref)) & ~nan
    else:
        bad = out != ref
    assert not bad.any(), (np.argwhere(bad)[:4], out[bad][:4], ref[bad][:4])


def bounds(rng, c, shape=None, reversed_=False):
    shape = shape or (c, 1, 1)
    il = rng.uniform(-3, 0.5, shape).astype(F)
    ih = (il + rng.uniform(0.2, 5, shape)).astype(F)
    ol = rng.uniform(-2, 0.5, shape).astype(F)
    oh = (ol + rng.uniform(-3, 3, shape)).astype(F)
    if reversed_:
        il, ih = ih, il
    return il, ih, ol, oh


def mixed_bounds(rng, shape):
    """Per element: ordered, reversed or equal input bounds (each present), outputs rising or
    falling, some with a top level f32(f32(oh - ol) + ol) that rounds (ol tiny vs oh)."""
    il, ih, ol, oh = bounds(rng, None, shape)
    kind = np.arange(il.size).reshape(shape) % 4
    il, ih = np.where(kind == 1, ih, il), np.where(kind == 1, il, ih)   # reversed
    ih = np.where(kind == 2, il, ih)                                      # equal
    ol = np.where(kind == 3, F(-1.3), ol).astype(F)                       # a rounding top:
    oh = np.where(kind == 3, F(0.1), oh).astype(F)                        # f32(1.4 - 1.3) != 0.1
    return il.astype(F), ih.astype(F), ol, oh


def probes(rng, x_shape, il, ih, extra=()):
    """x of x_shape whose elements are the bounds (broadcast), one f32 either side of each,
    +-inf, and values inside and around [min, max]."""
    lo = np.broadcast_to(np.minimum(il, ih), x_shape)
    hi = np.broadcast_to(np.maximum(il, ih), x_shape)
    up, down = F(np.inf), F(-np.inf)
    cands = [lo, hi, np.nextafter(lo, up), np.nextafter(lo, down), np.nextafter(hi, up),
             np.nextafter(hi, down), np.full(x_shape, up), np.full(x_shape, down),
             (lo + (hi - lo) * rng.uniform(0, 1, x_shape)).astype(F),
             (lo + (hi - lo + 2) * rng.uniform(-1, 1.5, x_shape)).astype(F)]
    cands += [np.broadcast_to(np.asarray(e, F), x_shape) for e in extra]
    pick = rng.integers(0, len(cands), x_shape)
    return np.choose(pick, cands).astype(F)


def fq_ops(il, ih, ol, oh, levels, ops=None):
    ops = PostOps() if ops is None else ops
    extra = dnnq.append_fake_quantize(ops, il, ih, ol, oh, levels)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    return ops, attr, extra


def chain_via(prim_kind, x, il, ih, ol, oh, levels):
    """Run the post-op chain after an identity primitive (f32 in, f32 out)."""
    _, attr, extra = fq_ops(il, ih, ol, oh, levels)
    d = MD(x.shape, "f32")
    if prim_kind == "eltwise":
        p = dnnq.Eltwise("relu", d, d, 1.0, 0.0, attr)   # identity (x > 0 ? x : 1 * x)
        args = {A.DNNL_ARG_SRC: x}
    else:
        p = dnnq.Binary("mul", d, MD((1,), "f32"), d, attr)   # x * 1: the identity
        args = {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: np.ones(1, F)}
    args.update(extra)
    return p.execute(args)


# ---- the chain's form ------------------------------------------------------------------------
def test_chain_form_portable_unless_needed(isa):
    ops, _, extra = fq_ops([[0.0], [1.0]], [[2.0], [3.0]], 0.0, 1.0, 4,
                           PostOps().append_eltwise("relu"))
    assert len(ops) == 10 and ops.kind(1) == "binary" and ops[1].alg == "max"
    assert ops[5].alg == "linear" and ops[5].alpha == 3.0 and ops[6].alg == "round"
    assert {ops.kind(i) for i in range(len(ops))} == {"eltwise", "binary"}
    assert sorted(extra) == [A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1
                             for i in (1, 2, 3, 4, 7, 8, 9)]
    assert all(v.shape == (2, 1) and v.dtype == F for v in extra.values())
    # reversed bounds in one channel, a rounding top level, equal bounds, a -0.0 output_low:
    # checkpoint, the nine, select le lo -> ol, select gt hi -> oh
    assert ((F(0.1) - F(-1.3)).astype(F) + F(-1.3)).astype(F) != F(0.1)
    for il, ih, ol, oh in (([0.0, 3.0], [2.0, 1.0], 0.0, 1.0), (0.0, 1.0, -1.3, 0.1),
                           (1.0, 1.0, 0.0, 1.0), (0.0, 1.0, -0.0, 1.0)):
        ops, _, extra = fq_ops(il, ih, ol, oh, 4)
        kinds = [ops.kind(i) for i in range(len(ops))]
        assert kinds[0] == "checkpoint" and kinds[-2:] == ["select", "select"]
        assert len(ops) == 12 and (ops[10].alg, ops[11].alg) == ("le", "gt")
        sel = [A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) for i in (10, 11)]
        lo, hi = np.minimum(il, ih), np.maximum(il, ih)
        assert_bits(extra[sel[0] | A.DNNL_ARG_SRC_1], np.broadcast_to(F(lo), np.shape(lo) or (1,)))
        assert_bits(extra[sel[1] | A.DNNL_ARG_SRC_1], np.broadcast_to(F(hi), np.shape(hi) or (1,)))
        assert_bits(extra[sel[0] | A.DNNL_ARG_SRC_2], np.broadcast_to(F(ol), (np.size(lo),)))
        assert_bits(extra[sel[1] | A.DNNL_ARG_SRC_2], np.broadcast_to(F(oh), (np.size(lo),)))


def test_append_checks(isa):
    for bad in (1, 0, 65537, 2.0, True):
        with pytest.raises(dnnq.InvalidArguments, match="levels"):
            dnnq.append_fake_quantize(PostOps(), 0.0, 1.0, 0.0, 1.0, bad)
    with pytest.raises(dnnq.InvalidArguments, match="broadcast"):
        dnnq.append_fake_quantize(PostOps(), np.zeros(3), np.ones(4), 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="not finite"):
        dnnq.append_fake_quantize(PostOps(), np.nan, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="post_ops"):
        dnnq.append_fake_quantize([], 0.0, 1.0, 0.0, 1.0, 4)
    for n_before, reversed_ in ((24, False), (20, True)):
        big = PostOps()
        for _ in range(n_before):
            big.append_eltwise("relu")
        a, b = (1.0, 0.0) if reversed_ else (0.0, 1.0)
        with pytest.raises(dnnq.InvalidArguments, match="at most 32"):
            dnnq.append_fake_quantize(big, a, b, 0.0, 1.0, 4)
        assert len(big) == n_before  # nothing appended
    with pytest.raises(dnnq.InvalidArguments, match="float32"):
        dnnq.fake_quantize(np.zeros(3), 0.0, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="do not broadcast to x"):
        dnnq.fake_quantize(np.zeros((2, 3), F), np.zeros(2), 1.0, 0.0, 1.0, 4)


# ---- toolkit primitives ----------------------------------------------------------------------
@pytest.mark.parametrize("levels", LEVELS)
@pytest.mark.parametrize("kind", ["eltwise", "binary"])
def test_chain_equals_the_definition_on_eltwise_and_binary(isa, rng_seed, levels, kind):
    rng = np.random.default_rng(rng_seed)
    shape = (2, 8, 9, 9)
    cases = [mixed_bounds(rng, (8, 1, 1)), bounds(rng, 8, reversed_=True), bounds(rng, 8),
             mixed_bounds(rng, (9,)), tuple(F(v) for v in (5.0, 1.0, -1.0, 2.0)),
             tuple(F(v) for v in (0.5, 0.5, -1.0, 1.0))]
    # symmetric outputs / output_low 0: the top level is exact (the nine-op form)
    il, ih, ol, oh = bounds(rng, 8)
    oh2 = (np.abs(oh) + F(0.5)).astype(F)
    cases += [(il, ih, -oh2, oh2), (il, ih, np.zeros_like(oh2), oh2)]
    for il, ih, ol, oh in cases:
        x = probes(rng, shape, il, ih, extra=(0.0, 1.0))
        out = chain_via(kind, x, il, ih, ol, oh, levels)
        assert_bits(out, fq_reference(x, il, ih, ol, oh, levels))


def test_reversed_bounds_that_x_minus_input_low_merges(isa):
    """input_low 5, input_high 1: f32(1 - 5) == f32(nextafter(1) - 5), yet x = 1 gives
    output_low and the next f32 above it the top of the falling staircase."""
    il, ih = F(5.0), F(1.0)
    xs = np.array([ih, np.nextafter(ih, F(2)), np.nextafter(ih, F(0)), il,
                   np.nextafter(il, F(9)), np.nextafter(il, F(0)), 3.0, np.inf, -np.inf], F)
    assert (xs[0] - il) == (xs[1] - il)
    for levels in LEVELS:
        ref = fq_reference(xs, il, ih, -1.0, 2.0, levels)
        assert ref[0] == F(-1.0) and ref[1] != ref[0] and ref[4] == F(2.0)
        for kind in ("eltwise", "binary"):
            assert_bits(chain_via(kind, xs, il, ih, -1.0, 2.0, levels), ref)
        assert_bits(dnnq.fake_quantize(xs, il, ih, -1.0, 2.0, levels), ref)


@pytest.mark.parametrize("dst_dt", ["s8", "u8"])
def test_chain_with_int8_destination_and_dst_scale(isa, rng_seed, dst_dt):
    """f32 source, int8 destination: the chain's f32 value times f32(1 / dst_scale), rounded
    half to even and saturated."""
    rng = np.random.default_rng(rng_seed)
    shape = (3, 6, 5, 7)
    for levels in LEVELS:
        il, ih, ol, oh = mixed_bounds(rng, (1, 6, 1, 1))
        ol, oh = (ol * 40).astype(F), (oh * 40).astype(F)
        x = probes(rng, shape, il, ih)
        _, attr, extra = fq_ops(il, ih, ol, oh, levels)
        attr.set_scales_mask(A.DNNL_ARG_DST, 0)
        ds = F(0.37)
        p = dnnq.Eltwise("relu", MD(shape, "f32"), MD(shape, dst_dt), 1.0, 0.0, attr)
        out = p.execute({A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | A.DNNL_ARG_DST: np.array([ds]),
                         **extra})
        ref = (fq_reference(x, il, ih, ol, oh, levels) * (F(1) / ds)).astype(F)
        assert_bits(out, saturate_rne(ref, dst_dt))


@pytest.mark.parametrize("tag", [None, "nhwc"])
@pytest.mark.parametrize("levels", LEVELS)
def test_chain_on_pooling(isa, rng_seed, tag, levels):
    """f32 average pooling with a 1x1 window (its value is the input: the probes reach the
    chain unchanged), and u8 average pooling 2x2 into u8 with per-channel bounds."""
    rng = np.random.default_rng(rng_seed)
    shape = (2, 5, 4, 6)
    il, ih, ol, oh = mixed_bounds(rng, (1, 5, 1, 1))
    x = probes(rng, shape, il, ih)
    x[x == 0] = F(1.0)  # (0 + -0.0) / 1 is +0.0: keep the pooling's own value exact
    _, attr, extra = fq_ops(il, ih, ol, oh, levels)
    p = dnnq.Pooling("avg_include_padding", MD(shape, "f32", tag=tag), MD(shape, "f32", tag=tag),
                     kernel=1, strides=1, attr=attr)
    assert_bits(p.execute({A.DNNL_ARG_SRC: x, **extra}), fq_reference(x, il, ih, ol, oh, levels))
    # u8 2x2 average into u8: bounds on and around the averages (multiples of 0.25)
    xu = rng.integers(0, 256, shape).astype(np.uint8)
    s = xu.astype(F).reshape(2, 5, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 5, 2, 3, 4)
    v = ((((s[..., 0] + s[..., 1]).astype(F) + s[..., 2]).astype(F) + s[..., 3]) / F(4)).astype(F)
    ilu = np.array([60.25, 200.0, 100.0, 128.0, 7.5], F).reshape(1, 5, 1, 1)
    ihu = np.array([190.0, 60.0, 100.0, 127.75, 250.5], F).reshape(1, 5, 1, 1)
    olu = np.array([0.0, 10.0, 255.0, 3.0, 250.0], F).reshape(1, 5, 1, 1)
    ohu = np.array([255.0, 250.0, 0.0, 200.0, 1.0], F).reshape(1, 5, 1, 1)
    _, attr, extra = fq_ops(ilu, ihu, olu, ohu, levels)
    p = dnnq.Pooling("avg_include_padding", MD(shape, "u8", tag=tag),
                     MD((2, 5, 2, 3), "u8", tag=tag), kernel=2, strides=2, attr=attr)
    out = p.execute({A.DNNL_ARG_SRC: xu, **extra})
    assert_bits(out, saturate_rne(fq_reference(v, ilu, ihu, olu, ohu, levels), "u8"))


# ---- GEMM primitives -------------------------------------------------------------------------
def column_bounds(rng, v):
    """Per-column bounds taken from the values ``v`` (M, N) of that column (and one f32 beside
    them), ordered, reversed or equal, so that the inputs sit on and next to the bounds."""
    M, N = v.shape
    r = rng.integers(0, M, (2, N))
    a, b = v[r[0], np.arange(N)], v[r[1], np.arange(N)]
    a = np.where(np.arange(N) % 3 == 0, np.nextafter(a, F(np.inf)), a).astype(F)
    b = np.where(np.arange(N) % 5 == 0, np.nextafter(b, F(-np.inf)), b).astype(F)
    kind = np.arange(N) % 4
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    il = np.where(kind == 1, hi, lo).astype(F)
    ih = np.where(kind == 1, lo, np.where(kind == 2, lo, hi)).astype(F)
    ol = rng.uniform(-2, 0.5, N).astype(F)
    oh = (ol + rng.uniform(-3, 3, N)).astype(F)
    ol = np.where(np.arange(N) % 7 == 3, F(-1.3), ol).astype(F)  # rounding top levels
    oh = np.where(np.arange(N) % 7 == 3, F(0.1), oh).astype(F)
    return il, ih, ol, oh


@pytest.mark.parametrize("levels", LEVELS)
def test_chain_on_matmul_per_column(isa, rng_seed, levels):
    """MatMul f32 dst with per-N weight scales, +-inf added by a binary post-op before the
    chain, per-column bounds of shape (N,); and an s8 dst with a dst scale."""
    rng = np.random.default_rng(rng_seed)
    M, K, N = 24, 13, 70
    src = rng.integers(0, 256, (M, K)).astype(np.uint8)
    wei = rng.integers(-128, 128, (K, N)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, N).astype(F)
    inf_add = np.where(rng.uniform(size=(M, N)) < 0.05, F(np.inf), F(0)).astype(F)
    inf_add[rng.uniform(size=(M, N)) < 0.05] = -np.inf
    v = ((src.astype(np.int64) @ wei.astype(np.int64)).astype(F) * ws).astype(F)
    v = (v + inf_add).astype(F)
    il, ih, ol, oh = column_bounds(rng, np.where(np.isfinite(v), v, F(0)))
    for dst_dt in ("f32", "s8"):
        ops = PostOps().append_binary("add", MD((M, N), "f32"))
        ops, attr, extra = fq_ops(il, ih, ol, oh, levels, ops)
        assert ops.kind(1) == "checkpoint"  # reversed columns: the select form
        attr.set_scales_mask(A.DNNL_ARG_WEIGHTS, 2)
        args = {A.DNNL_ARG_SRC: src, A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS: ws,
                A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | A.DNNL_ARG_SRC_1: inf_add, **extra}
        ref = fq_reference(v, il, ih, ol, oh, levels)
        if dst_dt == "s8":
            attr.set_scales_mask(A.DNNL_ARG_DST, 0)
            args[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = np.array([0.02], F)
            ref = saturate_rne((ref * (F(1) / F(0.02))).astype(F), "s8")
        p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), dst_dt), attr=attr)
        for w in (wei, p.prepare_weights(wei)):
            assert_bits(p.execute({**args, A.DNNL_ARG_WEIGHTS: w}), ref)


@pytest.mark.parametrize("levels", LEVELS)
def test_chain_on_inner_product(isa, rng_seed, levels):
    rng = np.random.default_rng(rng_seed)
    Nb, IC, OC = 20, 3 * 2 * 2, 66
    src = rng.integers(-128, 128, (Nb, 3, 2, 2)).astype(np.int8)
    wei = rng.integers(-128, 128, (OC, 3, 2, 2)).astype(np.int8)
    bias = rng.standard_normal(OC).astype(F)
    acc = src.reshape(Nb, IC).astype(np.int64) @ wei.reshape(OC, IC).astype(np.int64).T
    v = ((acc.astype(F) * F(0.01)).astype(F) + bias).astype(F)
    il, ih, ol, oh = column_bounds(rng, v)
    for dst_dt in ("f32", "u8"):
        _, attr, extra = fq_ops(il, ih, (ol * 50).astype(F), (oh * 50).astype(F), levels)
        attr.set_scales_mask(A.DNNL_ARG_WEIGHTS, 0)
        p = dnnq.InnerProduct(MD((Nb, 3, 2, 2), "s8"), MD((OC, 3, 2, 2), "s8"),
                              MD((Nb, OC), dst_dt), MD((OC,), "f32"), attr=attr)
        out = p.execute({A.DNNL_ARG_SRC: src, A.DNNL_ARG_WEIGHTS: wei, A.DNNL_ARG_BIAS: bias,
                         A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS: np.array([0.01], F), **extra})
        ref = fq_reference(v, il, ih, (ol * 50).astype(F), (oh * 50).astype(F), levels)
        assert_bits(out, saturate_rne(ref, dst_dt))


# ---- NaN, signed zeros, standalone -----------------------------------------------------------
def test_nan_input_in_the_chain(isa):
    """A NaN input gives the chain's value at min(il, ih) (the clamp replaces it): output_low
    for ordered bounds, the top level f32(f32(oh - ol) + ol) for reversed ones."""
    x = np.array([np.nan, -np.nan, 0.5], F)
    for il, ih, ol, oh, levels in ((0.0, 1.0, -0.5, 0.5, 256), (0.0, 1.0, -1.3, 0.1, 3),
                                   (1.0, 0.0, -0.5, 0.7, 256), (1.0, 0.0, -1.3, 0.1, 2)):
        F32 = [F(v) for v in (il, ih, ol, oh)]
        want = F32[2] if il < ih else ((F32[3] - F32[2]).astype(F) + F32[2]).astype(F)
        for kind in ("eltwise", "binary"):
            out = chain_via(kind, x, il, ih, ol, oh, levels)
            assert_bits(out[:2], [want, want])
            assert_bits(out[2:], fq_reference(x[2:], il, ih, ol, oh, levels))


def test_signed_zeros_are_exact(isa):
    """-0.0 output bounds, and x == input_low > input_high where the formula's product is -0.0
    (0 / negative span): the sign of a zero result is the definition's too."""
    x = np.array([-1.0, 0.0, -0.0, 0.25, 0.5, 1.0, 2.0, -np.inf, np.inf], F)
    for il, ih, ol, oh in ((0.0, 1.0, -0.0, 1.0), (0.0, 1.0, 1.0, -0.0), (1.0, 1.0, -0.0, -0.0),
                           (1.0, 0.5, 1.0, -0.0), (1.0, 0.5, -0.0, 1.0), (1.0, 0.5, -0.0, -1.0),
                           (0.0, -0.5, -0.0, 1.0), (-0.0, -0.5, -0.0, 1.0),
                           (0.0, -0.5, -0.0, 0.0)):
        ref = fq_reference(x, il, ih, ol, oh, 256)
        assert_bits(chain_via("eltwise", x, il, ih, ol, oh, 256), ref)
        assert_bits(dnnq.fake_quantize(x, il, ih, ol, oh, 256), ref)


@pytest.mark.parametrize("levels", [2, 3, 16, 255, 256, 65536])
def test_standalone_equals_the_definition(isa, rng_seed, levels):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((3, 8, 7, 6)) * 3).astype(F)
    x[0, 0, 0, :5] = [np.nan, np.inf, -np.inf, 0.0, -np.nan]
    for per_channel in (True, False):
        shape = (8, 1, 1) if per_channel else ()
        il, ih, ol, oh = bounds(rng, 8, shape)
        for rev in (False, True):
            a, b = (ih, il) if rev else (il, ih)
            out = dnnq.fake_quantize(x, a, b, ol, oh, levels)
            assert_bits(out, fq_reference(x, a, b, ol, oh, levels))  # NaN stays NaN (bits)
    il, ih, ol, oh = mixed_bounds(rng, (8, 1, 1))
    x = probes(rng, (3, 8, 7, 6), il, ih, extra=(np.nan,))
    assert_bits(dnnq.fake_quantize(x, il, ih, ol, oh, levels),
                fq_reference(x, il, ih, ol, oh, levels))


def test_equal_input_bounds(isa):
    x = np.array([-1.0, 0.0, 0.5, np.nextafter(F(0.5), F(1)), 1.0, 2.0], F)
    ref = fq_reference(x, 0.5, 0.5, -1.0, 1.0, 256)
    assert ref[3] == F(1.0) and ref[2] == F(-1.0)
    assert_bits(dnnq.fake_quantize(x, 0.5, 0.5, -1.0, 1.0, 256), ref)
    assert_bits(chain_via("eltwise", x, 0.5, 0.5, -1.0, 1.0, 256), ref)


@pytest.mark.parametrize("levels", [2, 3, 65536])
def test_grid_of_bounds_and_inputs(isa, levels):
    """Every combination of (il, ih, ol, oh) from a grid with signed zeros, equal, reversed and
    huge bounds (one per row), against inputs on the grid and one f32 either side, +-inf."""
    vals = np.array([-1.0, -0.0, 0.0, 0.5, 1e-7, -1.3, 0.1, 3e38], F)
    grid = np.array(np.meshgrid(vals, vals, vals, vals, indexing="ij"), F).reshape(4, -1).T
    il, ih, ol, oh = (grid[:, i:i + 1] for i in range(4))
    xs = np.concatenate([vals, np.nextafter(vals, F(np.inf)), np.nextafter(vals, F(-np.inf)),
                         np.array([np.inf, -np.inf, 0.3], F)]).astype(F)
    x = np.broadcast_to(xs, (len(grid), len(xs))).copy()
    ref = fq_reference(x, il, ih, ol, oh, levels)
    for kind in ("eltwise", "binary"):
        assert_bits(chain_via(kind, x, il, ih, ol, oh, levels), ref)
    assert_bits(dnnq.fake_quantize(x, il, ih, ol, oh, levels), ref)
