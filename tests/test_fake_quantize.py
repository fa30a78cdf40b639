"""FakeQuantize against a direct numpy transcription of the OpenVINO FakeQuantize-1 definition
(evaluated in f32), standalone and as a post-op chain on several primitives."""
import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A

F = np.float32


def fq_reference(x, il, ih, ol, oh, levels):
    """OpenVINO FakeQuantize-1, every operation in f32, round = half to even."""
    x = np.asarray(x, F)
    il, ih, ol, oh = (np.broadcast_to(np.asarray(v, F), x.shape) for v in (il, ih, ol, oh))
    with np.errstate(all="ignore"):
        mid = np.rint((x - il) / (ih - il) * F(levels - 1)) / F(levels - 1) * (oh - ol) + ol
    return np.where(x <= np.minimum(il, ih), ol,
                    np.where(x > np.maximum(il, ih), oh, mid)).astype(F)


def bounds(rng, c, shape=None, reversed_=False):
    shape = shape or (c, 1, 1)
    il = rng.uniform(-3, 0.5, shape).astype(F)
    ih = (il + rng.uniform(0.2, 5, shape)).astype(F)
    ol = rng.uniform(-2, 0.5, shape).astype(F)
    oh = (ol + rng.uniform(-3, 3, shape)).astype(F)
    if reversed_:
        il, ih = ih, il
    return il, ih, ol, oh


def chain_via(prim_kind, x, il, ih, ol, oh, levels):
    """Run the post-op chain after an identity-like primitive."""
    ops = PostOps()
    extra = dnnq.append_fake_quantize(ops, il, ih, ol, oh, levels)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    d = MD(x.shape, "f32")
    if prim_kind == "eltwise":
        p = dnnq.Eltwise("relu", d, d, 1.0, 0.0, attr)   # identity (x > 0 ? x : 1 * x)
        args = {A.DNNL_ARG_SRC: x}
    else:
        p = dnnq.Binary("add", d, MD((1,), "f32"), d, attr)
        args = {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: np.zeros(1, F)}
    args.update(extra)
    return p.execute(args)


@pytest.mark.parametrize("levels", [2, 3, 16, 255, 256, 65536])
def test_standalone_equals_the_definition(isa, rng_seed, levels):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((3, 8, 7, 6)) * 3).astype(F)
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    for per_channel in (True, False):
        shape = (8, 1, 1) if per_channel else ()
        il, ih, ol, oh = bounds(rng, 8, shape)
        for rev in (False, True):
            a, b = (ih, il) if rev else (il, ih)
            out = dnnq.fake_quantize(x, a, b, ol, oh, levels)
            ref = fq_reference(x, a, b, ol, oh, levels)
            assert np.array_equal(out, ref, equal_nan=True), (per_channel, rev)
    # bounds hitting the data exactly, and the in-range points at the boundaries
    il, ih = np.array([-1.0], F), np.array([1.0], F)
    xs = np.array([-1.0, -0.999, 0.0, 0.999, 1.0, 1.001, -1.001], F)
    assert np.array_equal(dnnq.fake_quantize(xs, il, ih, -0.5, 0.5, levels),
                          fq_reference(xs, il, ih, -0.5, 0.5, levels))


@pytest.mark.parametrize("levels", [2, 256])
@pytest.mark.parametrize("kind", ["eltwise", "binary"])
def test_chain_is_exact_up_to_the_documented_top_level(isa, rng_seed, levels, kind):
    """The chain equals the definition for every x <= input_high; above it gives the formula's
    top level f32(f32(oh - ol) + ol), which is output_high whenever that sum is exact."""
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((2, 8, 9, 9)) * 3).astype(F)
    il, ih, ol, oh = bounds(rng, 8)
    out = chain_via(kind, x, il, ih, ol, oh, levels)
    ref = fq_reference(x, il, ih, ol, oh, levels)
    top = ((oh - ol).astype(F) + ol).astype(F)
    below = x <= np.broadcast_to(ih, x.shape)
    assert np.array_equal(out[below], ref[below])
    assert np.array_equal(out[~below], np.broadcast_to(top, x.shape)[~below])
    # symmetric outputs or output_low 0: the top level is exact, so is the whole chain
    oh2 = (np.abs(oh) + F(0.5)).astype(F)
    for ol2 in (-oh2, np.zeros_like(oh2)):
        out = chain_via(kind, x, il, ih, ol2, oh2, levels)
        assert np.array_equal(out, fq_reference(x, il, ih, ol2, oh2, levels))


def test_chain_per_tensor_bounds_on_int8_pooling(isa, rng_seed):
    """FakeQuantize fused into a u8 average pooling (its f32 value before the store)."""
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(0, 256, (2, 4, 6, 6)).astype(np.uint8)
    ops = PostOps()
    extra = dnnq.append_fake_quantize(ops, 10.0, 200.0, 0.0, 255.0, 256)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    p = dnnq.Pooling("avg_include_padding", MD(x.shape, "u8"), MD((2, 4, 3, 3), "f32"),
                     kernel=2, strides=2, attr=attr)
    out = p.execute({A.DNNL_ARG_SRC: x, **extra})
    avg = x.astype(F).reshape(2, 4, 3, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(
        2, 4, 3, 3, 4)
    s = avg[..., 0]
    for i in range(1, 4):
        s = (s + avg[..., i]).astype(F)
    v = (s / F(4)).astype(F)
    # output_low 0, output_high 255: the top level is exact, the chain equals the definition
    assert np.array_equal(out, fq_reference(v, 10.0, 200.0, 0.0, 255.0, 256))


def test_append_returns_post_op_inputs_and_checks(isa):
    ops = PostOps().append_eltwise("relu")
    extra = dnnq.append_fake_quantize(ops, [[0.0], [1.0]], [[2.0], [3.0]], 0.0, 1.0, 4)
    assert len(ops) == 10 and ops.kind(1) == "binary" and ops[1].alg == "max"
    assert ops[5].alg == "linear" and ops[5].alpha == 3.0 and ops[6].alg == "round"
    keys = sorted(extra)
    assert keys == [A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1
                    for i in (1, 2, 3, 4, 7, 8, 9)]
    assert all(v.shape == (2, 1) and v.dtype == F for v in extra.values())
    with pytest.raises(dnnq.Unimplemented, match="input_low > input_high"):
        dnnq.append_fake_quantize(PostOps(), 1.0, 0.0, 0.0, 1.0, 4)
    for bad in (1, 0, 65537, 2.0, True):
        with pytest.raises(dnnq.InvalidArguments, match="levels"):
            dnnq.append_fake_quantize(PostOps(), 0.0, 1.0, 0.0, 1.0, bad)
    with pytest.raises(dnnq.InvalidArguments, match="broadcast"):
        dnnq.append_fake_quantize(PostOps(), np.zeros(3), np.ones(4), 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="not finite"):
        dnnq.append_fake_quantize(PostOps(), np.nan, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="post_ops"):
        dnnq.append_fake_quantize([], 0.0, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="at most 32"):
        big = PostOps()
        for _ in range(25):
            big.append_eltwise("relu")
        dnnq.append_fake_quantize(big, 0.0, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="float32"):
        dnnq.fake_quantize(np.zeros(3), 0.0, 1.0, 0.0, 1.0, 4)
    with pytest.raises(dnnq.InvalidArguments, match="do not broadcast to x"):
        dnnq.fake_quantize(np.zeros((2, 3), F), np.zeros(2), 1.0, 0.0, 1.0, 4)


def test_equal_input_bounds(isa):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0], F)
    out = dnnq.fake_quantize(x, 0.5, 0.5, -1.0, 1.0, 256)
    assert np.array_equal(out, fq_reference(x, 0.5, 0.5, -1.0, 1.0, 256))
    assert np.array_equal(chain_via("eltwise", x, 0.5, 0.5, -1.0, 1.0, 256)[x <= 0.5],
                          out[x <= 0.5])


def test_reversed_bounds_chain_refused_standalone_exact(isa):
    """Reversed bounds: x = input_high must give output_low and the next f32 above it the top
    level, yet the formula's first step f32(x - input_low) merges the two (docs/toolkit.md
    section 7: why no post-op chain can separate them); append_fake_quantize refuses, per
    tensor and per channel, and the standalone form is exact there."""
    il, ih = F(5.0), F(1.0)
    xs = np.array([ih, np.nextafter(ih, F(2))], F)
    assert (xs[0] - il) == (xs[1] - il)
    ref = fq_reference(xs, il, ih, -1.0, 2.0, 256)
    assert ref[0] == F(-1.0) and ref[1] != ref[0]
    assert np.array_equal(dnnq.fake_quantize(xs, il, ih, -1.0, 2.0, 256), ref)
    for a, b in ((il, ih), (np.array([[0.0], [5.0]], F), np.array([[1.0], [1.0]], F))):
        with pytest.raises(dnnq.Unimplemented, match="input_low > input_high"):
            dnnq.append_fake_quantize(PostOps(), a, b, -1.0, 2.0, 256)
