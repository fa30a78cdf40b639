"""Pooling: bit-identical to oneDNN 3.2 (plain layouts run its ref:any / simple_nchw kernels,
channels-last its jit kernels), and to a direct numpy model for dnnq's extensions."""
import numpy as np
import pytest

import dnnq
from dnnq.primitives import _dispatch
from dnnq import MemoryDesc as MD, PrimitiveAttr, PostOps
from dnnq import args as A
import dnnq.testing as R

F = np.float32
NP = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "f32": F}
ALGS = ("max", "avg_include_padding", "avg_exclude_padding")
CL = {3: "nwc", 4: "nhwc", 5: "ndhwc"}

# (src shape, kernel, strides, dilation, padding_l, padding_r)
GEOMS = [
    ((2, 8, 9, 9), 3, 2, 0, 1, 1),
    ((2, 8, 9, 9), 2, 2, 0, 0, 0),
    ((2, 8, 7, 6), (2, 3), (1, 2), (1, 0), (1, 0), (0, 1)),
    ((2, 4, 5, 6, 7), 2, 2, 0, 0, 1),
    ((2, 4, 5, 6, 7), (3, 2, 3), (1, 2, 2), (0, 1, 0), (1, 0, 1), (1, 1, 0)),
    ((2, 8, 11), 3, 1, 2, 1, 2),
    ((1, 3, 20), 4, 3, 0, 2, 3),
    ((1, 600, 3, 3), 3, 1, 0, 1, 1),   # C > one chunk of channels
    ((1, 2, 3, 700), (1, 3), 1, 0, (0, 1), (0, 1)),   # OW > one chunk
]


def gen(rng, dt, shape):
    if dt == "f32":
        return (rng.standard_normal(shape) * 30).astype(F)
    if dt == "s32":
        return rng.integers(-100000, 100000, size=shape).astype(np.int32)
    lo, hi = (-128, 128) if dt == "s8" else (0, 256)
    return rng.integers(lo, hi, size=shape).astype(NP[dt])


def out_shape(shape, k, s, d, pl, pr):
    ns = len(shape) - 2
    sp = lambda v: [v] * ns if np.isscalar(v) else list(v)  # noqa: E731
    k, s, d, pl, pr = map(sp, (k, s, d, pl, pr))
    return tuple(shape[:2]) + tuple((shape[2 + i] - ((k[i] - 1) * (d[i] + 1) + 1) + pl[i] + pr[i])
                                    // s[i] + 1 for i in range(ns))


def to_cl(x):
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    return np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))


def pool(x, alg, geom, dst_dt=None, *, layout=None, attr=None, args=None):
    shape, k, s, d, pl, pr = geom
    dt = dnnq.as_dt(x.dtype)
    tag = CL[x.ndim] if layout == "cl" else None
    p = dnnq.Pooling(alg, MD(shape, dt, tag), MD(out_shape(shape, k, s, d, pl, pr),
                                                  dst_dt or dt, tag),
                     kernel=k, strides=s, dilation=d, padding_l=pl, padding_r=pr, attr=attr)
    a = {A.DNNL_ARG_SRC: x}
    a.update(args or {})
    return p.execute(a), p


def model(x, alg, geom):
    """Direct numpy pooling: s32 / f32 accumulation in (d, h, w) tap order, f32 average."""
    shape, k, s, d, pl, pr = geom
    ns = len(shape) - 2
    sp = lambda v: [v] * ns if np.isscalar(v) else list(v)  # noqa: E731
    k, s, d, pl, pr = map(sp, (k, s, d, pl, pr))
    osp = out_shape(shape, k, s, d, pl, pr)[2:]
    acc_dt = F if x.dtype == F else np.int64
    lowest = np.finfo(F).min if x.dtype == F else np.iinfo(x.dtype).min
    out = np.zeros(shape[:2] + tuple(osp), F)
    for o in np.ndindex(*osp):
        taps = [[o[i] * s[i] - pl[i] + kk * (d[i] + 1) for kk in range(k[i])] for i in range(ns)]
        valid = [[t for t in tp if 0 <= t < shape[2 + i]] for i, tp in enumerate(taps)]
        idx = np.ix_(*[np.array(v, int) for v in valid])
        win = x[(slice(None), slice(None)) + idx].reshape(shape[0], shape[1], -1)
        n = win.shape[-1]
        if alg == "max":
            v = win.max(-1).astype(F) if n else np.full(shape[:2], lowest, F)
        else:
            acc = np.zeros(shape[:2], acc_dt)
            for t in range(n):
                acc = (acc + win[..., t].astype(acc_dt)).astype(acc_dt)
            cnt = int(np.prod(k)) if alg == "avg_include_padding" else n
            v = acc.astype(F) / F(cnt)
        out[(slice(None), slice(None)) + o] = v
    return out


def sat(v, dt):
    if dt == "f32":
        return v.astype(F)
    info = np.iinfo(NP[dt])
    hi = 2147483520.0 if dt == "s32" else info.max
    return np.clip(np.rint(v.astype(np.float64)), info.min, hi).astype(NP[dt])


# ----------------------------------------------------------------------------- vs oneDNN

@R.requires_onednn
@pytest.mark.parametrize("dt", ["s8", "u8", "s32", "f32"])
def test_pooling_matches_onednn(isa, rng_seed, dt):
    """Every algorithm and geometry, plain and channels-last layouts: bit-identical."""
    rng = np.random.default_rng(rng_seed)
    n = 0
    for geom in GEOMS:
        shape, k, s, d, pl, pr = geom
        x = gen(rng, dt, shape)
        for alg in ALGS:
            ref = R.pooling(x, alg, kernel=k, strides=s, dilation=d, padding_l=pl, padding_r=pr)
            out, _ = pool(x, alg, geom)
            assert np.array_equal(out, ref), (dt, alg, geom, int((out != ref).sum()))
            if x.ndim == 4 and shape[1] <= 8:
                xc = to_cl(x)
                ref = R.pooling(xc, alg, kernel=k, strides=s, dilation=d, padding_l=pl,
                                padding_r=pr, channels_last=True)
                out, p = pool(xc, alg, geom, layout="cl")
                assert p.impl_info.endswith("pooling_nspc")
                assert np.array_equal(out, ref), (dt, alg, geom, "cl")
            n += 1
    assert n == len(GEOMS) * 3


@R.requires_onednn
@pytest.mark.parametrize("dt", ["u8", "s8", "s32", "f32"])
def test_pooling_post_ops_match_onednn(isa, rng_seed, dt):
    """Post-ops act on the unrounded f32 average.  oneDNN's kernels differ in the details and
    dnnq follows the one oneDNN picks: channels-last integer averages (jit_int) multiply by
    f32(1/count) and fuse linear; plain / max integer cases (ref:any) divide and round
    alpha*x before adding beta; f32 (jit) divides and fuses.  The linear parameters below are
    chosen so that the variants differ."""
    rng = np.random.default_rng(rng_seed)
    geom = ((2, 16, 9, 9), 3, 1, 0, 1, 1)
    x0 = gen(rng, dt, geom[0])
    per_ch = rng.uniform(-20, 20, (1, 16, 1, 1)).astype(F)
    posts = ([("eltwise", "linear", 0.3, -2.0)], [("eltwise", "linear", 1.7, 0.3)],
             [("eltwise", "relu", 0.25, 0.0), ("binary", "add", per_ch)],
             [("binary", "mul", np.array([[[[0.37]]]], F)), ("eltwise", "round")])
    for layout in ("cl", "plain"):
        x = to_cl(x0) if layout == "cl" else x0
        for alg in ALGS:
            for post in posts:
                ops, extra = PostOps(), {}
                for i, op in enumerate(post):
                    if op[0] == "eltwise":
                        ops.append_eltwise(op[1], *op[2:])
                    else:
                        ops.append_binary(op[1], MD(op[2].shape, "f32"))
                        extra[A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1] = op[2]
                attr = PrimitiveAttr()
                attr.set_post_ops(ops)
                ref = R.pooling(x, alg, kernel=3, strides=1, padding_l=1, padding_r=1,
                                post_ops=post, channels_last=layout == "cl")
                out, _ = pool(x, alg, geom, layout=layout, attr=attr, args=extra)
                assert np.array_equal(out, ref), (layout, alg, post[0][1:3])


@R.requires_onednn
@pytest.mark.parametrize("layout", ["cl", "plain"])
def test_pooling_bind_runs_like_onednn(isa, rng_seed, layout):
    """Pooling.bind: a linear post-op (a requantizing average, as ONNX sessions bind it)
    validated once; each call gives oneDNN's result, another layout or dtype goes through
    execute (same results, same errors)."""
    rng = np.random.default_rng(rng_seed)
    geom = ((1, 88, 3, 96), (3, 96), 1, 0, 0, 0)
    x0 = gen(rng, "u8", geom[0])
    x = to_cl(x0) if layout == "cl" else x0
    ops = PostOps()
    ops.append_eltwise("linear", 0.61, 17.3)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    for alg in ("avg_exclude_padding", "max"):
        tag = CL[4] if layout == "cl" else None
        p = dnnq.Pooling(alg, MD(geom[0], "u8", tag), MD((1, 88, 1, 1), "u8", tag),
                         kernel=[3, 96], strides=1, padding_l=0, padding_r=0, attr=attr)
        run = p.bind({A.DNNL_ARG_SRC: x})
        want = R.pooling(x, alg, kernel=[3, 96], strides=1, padding_l=0, padding_r=0,
                         post_ops=[("eltwise", "linear", 0.61, 17.3)], dst_dt="u8",
                         channels_last=layout == "cl")
        assert np.array_equal(run(x), want)
        other = x0 if layout == "cl" else to_cl(x0)
        assert np.array_equal(run(other), want)   # another layout: through execute
        with pytest.raises(dnnq.InvalidArguments, match="src"):
            run(x.astype(np.int8))


# ----------------------------------------------------------------------------- vs numpy

@pytest.mark.parametrize("dt", ["s8", "u8", "s32", "f32"])
def test_pooling_model(isa, rng_seed, dt):
    """Against the direct numpy model, including windows entirely in the padding (max gives
    the lowest value) and the f32 destination extension (unrounded average)."""
    rng = np.random.default_rng(rng_seed)
    geoms = GEOMS[:7] + [((1, 3, 4), 2, 1, 0, 3, 0)]
    for geom in geoms:
        x = gen(rng, dt, geom[0])
        for alg in ALGS:
            if alg == "avg_exclude_padding" and geom[4] == 3:
                continue
            m = model(x, alg, geom)
            out, _ = pool(x, alg, geom)
            if dt == "s32" and alg == "max":
                assert np.array_equal(out.astype(np.int64), m.astype(np.int64)) or \
                    np.array_equal(out.astype(F), m)
            else:
                assert np.array_equal(out, sat(m, dt)), (alg, geom)
            if dt != "f32":
                out32, _ = pool(x, alg, geom, "f32")
                assert out32.dtype == F and np.array_equal(out32, m), (alg, geom)


def test_pooling_s32_max_is_exact_and_dst_in_place(isa, rng_seed):
    """s32 max over the full range: exact in channels-last (oneDNN's jit_int); in the plain
    layout every tap goes through f32 first, as oneDNN's ref:any does (round to nearest even,
    then saturation at 2147483520, the largest f32 below 2^31)."""
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(-2**31, 2**31 - 1, size=(2, 3, 6, 6), dtype=np.int64).astype(np.int32)
    x.reshape(-1)[:2] = (2**31 - 1, 2**24 + 1)
    want = x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    for tag in ("nhwc", None):
        p = dnnq.Pooling("max", MD(x.shape, "s32", tag), MD((2, 3, 3, 3), "s32", tag),
                         kernel=2, strides=2, padding_l=0, padding_r=0)
        xs = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) if tag else x
        dst = np.zeros((2, 3, 3, 3), np.int32)
        if tag:
            dst = np.ascontiguousarray(dst.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        out = p.execute({A.DNNL_ARG_SRC: xs, A.DNNL_ARG_DST: dst})
        assert out is dst
        expect = want if tag else np.minimum(want.astype(F).astype(np.float64),
                                             2147483520.0).astype(np.int32)
        assert np.array_equal(dst, expect), tag


def test_pooling_plain_to_channels_last_destination(isa, rng_seed):
    rng = np.random.default_rng(rng_seed)
    geom = ((2, 5, 7, 7), 3, 2, 0, 1, 1)
    x = gen(rng, "u8", geom[0])
    p = dnnq.Pooling("avg_include_padding", MD(geom[0], "u8"), MD((2, 5, 4, 4), "u8", "nhwc"),
                     kernel=3, strides=2, padding_l=1, padding_r=1)
    out = p.execute({A.DNNL_ARG_SRC: x})
    assert np.array_equal(out, sat(model(x, "avg_include_padding", geom), "u8"))
    assert out.transpose(0, 2, 3, 1).flags.c_contiguous


# ----------------------------------------------------------------------------- errors

def test_pooling_errors():
    src = MD((1, 2, 8, 8), "u8")
    kw = dict(kernel=2, strides=2)
    with pytest.raises(dnnq.InvalidArguments, match="alg"):
        dnnq.Pooling("mean", src, MD((1, 2, 4, 4), "u8"), **kw)
    with pytest.raises(dnnq.InvalidArguments, match=r"// 2 \+ 1 = 4"):
        dnnq.Pooling("max", src, MD((1, 2, 5, 5), "u8"), **kw)
    with pytest.raises(dnnq.InvalidArguments, match="N=1 and C=2"):
        dnnq.Pooling("max", src, MD((1, 3, 4, 4), "u8"), **kw)
    with pytest.raises(dnnq.Unimplemented, match="dst data type s8"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "s8"), **kw)
    with pytest.raises(dnnq.InvalidArguments, match="strides"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), kernel=2, strides=0)
    with pytest.raises(dnnq.InvalidArguments, match="kernel"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), kernel=(2, 2, 2), strides=2)
    with pytest.raises(dnnq.InvalidArguments, match="kernel is required"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), kernel=None, strides=2)
    with pytest.raises(dnnq.InvalidArguments, match="entirely in the padding"):
        dnnq.Pooling("avg_exclude_padding", src, MD((1, 2, 6, 6), "u8"), kernel=2, strides=2,
                     padding_l=2, padding_r=2)
    with pytest.raises(dnnq.InvalidArguments, match="does not fit"):
        dnnq.Pooling("max", src, MD((1, 2, 1, 1), "u8"), kernel=12, strides=1)
    with pytest.raises(dnnq.InvalidArguments, match="dims"):
        dnnq.Pooling("max", MD((2, 8), "u8"), MD((2, 4), "u8"), kernel=2, strides=2)
    attr = PrimitiveAttr()
    attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
    with pytest.raises(dnnq.Unimplemented, match="scales"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), attr=attr, **kw)
    attr = PrimitiveAttr()
    attr.set_post_ops(PostOps().append_sum())
    with pytest.raises(dnnq.Unimplemented, match="sum"):
        dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), attr=attr, **kw)
    p = dnnq.Pooling("max", src, MD((1, 2, 4, 4), "u8"), **kw)
    with pytest.raises(dnnq.InvalidArguments, match="shape"):
        p.execute({A.DNNL_ARG_SRC: np.zeros((1, 2, 8, 9), np.uint8)})
    with pytest.raises(dnnq.InvalidArguments, match="missing src"):
        p.execute({})


# ----------------------------------------------------------------------------- int8 fast paths

# channels-last s8 / u8 into the same type without post-ops run the direct int8 kernels
# (separable: max in int8, average in u16 / s32 then one f32 step); C not a multiple of the
# vector width (64 bytes AVX-512, 32 AVX2) exercises the tails
FAST_GEOMS = [
    ((2, 3, 9, 9), 3, 2, 0, 1, 1),
    ((1, 17, 8, 8), 2, 2, 0, 0, 0),
    ((1, 67, 7, 9), 3, 2, 0, 1, 0),
    ((2, 64, 8, 8), 3, 2, 0, 1, 1),
    ((1, 130, 5, 6), (2, 3), (1, 2), (1, 0), (1, 0), (0, 1)),
    ((1, 33, 4, 5, 6), (3, 2, 3), (1, 2, 2), (0, 1, 0), (1, 0, 1), (1, 1, 0)),
    ((2, 19, 11), 3, 1, 2, 1, 2),
]


@R.requires_onednn
@pytest.mark.parametrize("dt", ["s8", "u8"])
def test_pooling_int8_fast_path_matches_onednn_and_generic(isa, rng_seed, dt):
    """Bit-identical to oneDNN's jit kernels and to dnnq's generic path (the f32-destination
    variant, rounded: the unrounded value the generic epilogue stores)."""
    rng = np.random.default_rng(rng_seed)
    for geom in FAST_GEOMS:
        shape, k, s, d, pl, pr = geom
        x = to_cl(gen(rng, dt, shape))
        if dt == "s8":  # the extremes too (u16 sums of the +128 offset)
            x.reshape(-1)[:5] = [-128, -128, 127, 127, -128]
        for alg in ALGS:
            ref = R.pooling(x, alg, kernel=k, strides=s, dilation=d, padding_l=pl,
                            padding_r=pr, channels_last=True)
            out, p = pool(x, alg, geom, layout="cl")
            assert np.array_equal(out, ref), (dt, alg, geom, int((out != ref).sum()))
            generic, _ = pool(x, alg, geom, "f32", layout="cl")
            assert np.array_equal(out, sat(generic, dt)), (dt, alg, geom)


@pytest.mark.parametrize("alg", ALGS)
def test_pooling_int8_fast_path_threads_and_large_windows(isa, rng_seed, alg):
    """Work split mid-row over threads, windows entirely in the padding (max: lowest value),
    and a window of more than 256 taps (the generic path)."""
    rng = np.random.default_rng(rng_seed)
    for geom in (((3, 70, 13, 13), 3, 2, 0, 1, 1), ((1, 5, 4, 4), 2, 1, 0, 3, 0),
                 ((1, 67, 20, 20), 17, 3, 0, 0, 0)):
        if alg == "avg_exclude_padding" and geom[4] == 3:
            continue
        for dt in ("s8", "u8"):
            x = gen(rng, dt, geom[0])
            m = sat(model(x, alg, geom), dt)
            for nt in (1, 2, 3):
                with _threads(nt):
                    out, _ = pool(to_cl(x), alg, geom, layout="cl")
                assert np.array_equal(out, m), (alg, geom, dt, nt)


class _threads:
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.prev = _dispatch.get_num_threads()
        dnnq.set_num_threads(self.n)

    def __exit__(self, *exc):
        dnnq.set_num_threads(self.prev)


# the fused single-pass average (x86 vector levels: windows of at most 16 taps, C >= 32):
# power-of-two counts rounded in integers (1, 2, 4, 8, 16 taps; include-padding borders with
# fewer taps than the count), others through f32 (3, 6, 9, 12, 15); C with vector tails
# (AVX-512: 64, AVX2: 32 + 16 + the overlapped last 16) and below 32 (the separable path)
FUSED_GEOMS = [
    ((2, 64, 8, 8), 2, 2, 0, 0, 0),
    ((1, 65, 7, 9), 2, 2, 0, 1, 1),
    ((1, 100, 9, 9), 3, 2, 0, 1, 1),
    ((1, 40, 6, 7), 3, 1, 0, 1, 1),
    ((1, 33, 9, 10), 4, 4, 0, (3, 2), (1, 3)),
    ((1, 130, 5, 6), (1, 2), (1, 2), 0, 0, (0, 1)),
    ((1, 48, 5, 5), 1, 2, 0, 0, 0),
    ((1, 96, 7, 8), (3, 5), (2, 3), (1, 0), (2, 1), (1, 2)),
    ((1, 32, 4, 5, 6), 2, 2, 0, 1, 1),
    ((1, 36, 4, 5, 6), (3, 2, 2), (1, 2, 2), (0, 1, 0), (1, 0, 1), (1, 1, 0)),
    ((2, 50, 13), 3, 2, 1, 2, 2),
    ((1, 17, 8, 8), 2, 2, 0, 0, 0),
    ((1, 3, 9, 9), 3, 2, 0, 1, 1),
]


def _fused_inputs(rng, dt, shape):
    lo, hi = (-128, 127) if dt == "s8" else (0, 255)
    yield gen(rng, dt, shape)
    yield np.full(shape, lo, NP[dt])
    yield np.full(shape, hi, NP[dt])
    yield rng.choice(np.array([lo, hi, lo + 1, hi - 1], NP[dt]), size=shape)  # extremes, ties
    yield (rng.integers(0, 2, size=shape) * 2 + (0 if dt == "u8" else -1)).astype(NP[dt])


@pytest.mark.parametrize("dt", ["s8", "u8"])
@pytest.mark.parametrize("alg", ["avg_include_padding", "avg_exclude_padding"])
def test_pooling_int8_fused_average_matches_model(isa, rng_seed, dt, alg):
    rng = np.random.default_rng(rng_seed)
    for geom in FUSED_GEOMS:
        for x in _fused_inputs(rng, dt, geom[0]):
            m = sat(model(x, alg, geom), dt)
            out, _ = pool(to_cl(x), alg, geom, layout="cl")
            assert np.array_equal(out, m), (isa, dt, alg, geom, int((out != m).sum()))


@R.requires_onednn
@pytest.mark.parametrize("dt", ["s8", "u8"])
def test_pooling_int8_fused_average_matches_onednn(isa, rng_seed, dt):
    rng = np.random.default_rng(rng_seed)
    for geom in FUSED_GEOMS:
        shape, k, s, d, pl, pr = geom
        for x in _fused_inputs(rng, dt, shape):
            x = to_cl(x)
            for alg in ("avg_include_padding", "avg_exclude_padding"):
                ref = R.pooling(x, alg, kernel=k, strides=s, dilation=d, padding_l=pl,
                                padding_r=pr, channels_last=True)
                out, _ = pool(x, alg, geom, layout="cl")
                assert np.array_equal(out, ref), (isa, dt, alg, geom, int((out != ref).sum()))


@pytest.mark.parametrize("alg", ["avg_include_padding", "avg_exclude_padding"])
def test_pooling_int8_fused_average_threads(isa, rng_seed, alg):
    """Work split mid-row (interior / border outputs of a row in different threads)."""
    rng = np.random.default_rng(rng_seed)
    geom = ((3, 70, 11, 13), 3, 2, 0, 1, 1)
    for dt in ("s8", "u8"):
        x = gen(rng, dt, geom[0])
        m = sat(model(x, alg, geom), dt)
        for nt in (1, 2, 3, 5):
            with _threads(nt):
                out, _ = pool(to_cl(x), alg, geom, layout="cl")
            assert np.array_equal(out, m), (alg, dt, nt)


@pytest.mark.parametrize("dt", ["s8", "u8"])
@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("shape,kernel,dilation", [
    ((2, 19, 11, 9), (3, 5), (1, 0)),
    ((1, 16, 11), (5,), (1,)),
    ((2, 1, 11, 9, 7), (5, 3, 2), (1, 0, 0)),     # shared/repro/turn3/p02
    ((1, 70, 5, 11, 9), (5, 3, 2), (0, 1, 0)),
])
def test_dilated_channels_last_int8(isa, dt, alg, shape, kernel, dilation):
    """Channels-last int8 pooling with a dilated window: oneDNN's jit_int kernel declines
    dilation and its reference kernel runs it (average = rne(sum / count), not sum times an
    f32 1 / count): bit for bit against oneDNN, at every level."""
    rng = np.random.default_rng(len(shape) * 10 + sum(kernel))
    info = np.iinfo(NP[dt])
    x = rng.integers(info.min, info.max + 1, shape).astype(NP[dt])
    nsp = len(shape) - 2
    geom = dict(kernel=kernel, strides=(1,) * nsp, dilation=dilation,
                padding_l=(1,) * nsp, padding_r=(1,) * nsp)
    want = R.pooling(x, alg, channels_last=True, **geom)
    xl = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    p = dnnq.Pooling(alg, MD(shape, dt, CL[len(shape)]), MD(want.shape, dt, CL[len(shape)]),
                     **geom)
    np.testing.assert_array_equal(p.execute({A.DNNL_ARG_SRC: xl}), want)


def model_cl_average(x, alg, k, s, pl, pr):
    """Channels-last integer average as oneDNN's jit_int kernels compute it: the exact sum
    times f32(1 / count) (2-D only)."""
    N, C, H, W = x.shape
    oh = (H + pl[0] + pr[0] - k[0]) // s[0] + 1
    ow = (W + pl[1] + pr[1] - k[1]) // s[1] + 1
    out = np.zeros((N, C, oh, ow), F)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - pl[0], j * s[1] - pl[1]
            hs = slice(max(h0, 0), min(h0 + k[0], H))
            ws = slice(max(w0, 0), min(w0 + k[1], W))
            win = x[:, :, hs, ws].astype(np.int64)
            cnt = k[0] * k[1] if alg == "avg_include_padding" else win.shape[2] * win.shape[3]
            out[:, :, i, j] = win.sum((2, 3)).astype(F) * (F(1) / F(cnt))
    return out


@pytest.mark.parametrize("dt", ["s8", "u8"])
def test_pooling_few_channels_average_rows_model(isa, rng_seed, dt):
    """Channels-last 8-bit averages of fewer channels than a vector into f32 (the rows of a
    window summed as byte streams, tk_pool_stream8.h), padded, strided, and global windows of
    more taps than the int8 fast path takes (an SE block's pool before its requantization)."""
    rng = np.random.default_rng(rng_seed)
    for shape, k, s, pl, pr in (((1, 8, 12, 96), (12, 96), (1, 1), (0, 0), (0, 0)),
                                ((2, 3, 9, 11), (3, 3), (2, 2), (1, 1), (1, 1)),
                                ((1, 15, 7, 40), (7, 40), (1, 1), (0, 0), (0, 0)),
                                ((1, 1, 5, 9), (2, 4), (1, 3), (1, 0), (0, 2))):
        x = gen(rng, dt, shape)
        for alg in ("avg_include_padding", "avg_exclude_padding"):
            ref = model_cl_average(x, alg, k, s, pl, pr)
            out, _ = pool(to_cl(x), alg, (shape, k, s, 0, pl, pr), "f32", layout="cl")
            assert np.array_equal(out, ref), (dt, alg, shape)
