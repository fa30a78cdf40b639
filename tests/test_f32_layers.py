"""f32 layers (f32 source and weights; dst f32, s8 or u8; docs/f32_layers.md) against the real
oneDNN 3.2 -- its f32 primitive, then its quantizing reorder for an int8 dst -- and against the
float64 models of tests/_f32_ref.py; the same bits at every ISA level and thread count."""
import pickle

import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP, InvalidArguments, Unimplemented)
from dnnq.primitives import _dispatch
from dnnq.primitives._kernels import _codes, _gemm
import dnnq.testing as onednn
from _f32_ref import conv_f64, deconv_f64, sum_bound, fake_quantize, quantize

needs_onednn = onednn.requires_onednn
LEVELS = list(_dispatch.available_isa_levels())
F32 = np.float32


def rand(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


# ---- problems ----------------------------------------------------------------------------------
class Conv:
    """One f32 (de)convolution: data, the dnnq primitive for a dst type, oneDNN's f32 result."""

    def __init__(self, rng, src, wei, strides, pl, pr=None, dil=None, deconv=False, bias=True,
                 tag=None):
        nsp = len(src) - 2
        self.x, self.w = rand(rng, src), rand(rng, wei, 0.3)
        self.geom = dict(strides=strides, padding_l=pl, padding_r=pl if pr is None else pr,
                         dilates=dil if dil is not None else (0,) * nsp)
        self.deconv, self.tag = deconv, tag
        fn = deconv_f64 if deconv else conv_f64
        self.exact, self.mag = fn(self.x, self.w, strides, pl, self.geom["padding_r"],
                                  self.geom["dilates"])
        self.OC = self.exact.shape[1]
        self.b = rand(rng, (self.OC,)) if bias else None
        if bias:
            self.exact = self.exact + self.b.reshape((1, -1) + (1,) * nsp)
            self.mag = self.mag + np.abs(self.b).reshape((1, -1) + (1,) * nsp)
        self.K = int(np.prod(self.w.shape[-nsp - 1:]))  # products per output, at most

    def primitive(self, dst_dt="f32", attr=None):
        cls = dnnq.Deconvolution if self.deconv else dnnq.Convolution
        return cls(MD(self.x.shape, "f32", self.tag), MD(self.w.shape, "f32"),
                   MD(self.exact.shape, dst_dt, self.tag),
                   MD((self.OC,), "f32") if self.b is not None else None, attr=attr,
                   **self.geom)

    def args(self, p, prepared=True):
        x = self.x
        if self.tag:
            x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
            x = np.moveaxis(x, -1, 1)
        a = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: p.prepare_weights(self.w) if prepared else self.w}
        if self.b is not None:
            a[DNNL_ARG_BIAS] = self.b
        return a

    def onednn(self, post_ops=(), dst_prev=None):
        fn = onednn.deconvolution if self.deconv else onednn.convolution
        return fn(self.x, self.w, self.b, "f32", post_ops=post_ops, dst_prev=dst_prev,
                  **self.geom)


class Gemm:
    """One f32 MatMul (2-D / batched with broadcast) or InnerProduct."""

    def __init__(self, rng, src, wei, ip=False, bias=True):
        self.ip = ip
        self.x, self.w = rand(rng, src), rand(rng, wei, 0.3)
        if ip:
            w2 = self.w.reshape(self.w.shape[0], -1).astype(np.float64)
            x2 = self.x.reshape(self.x.shape[0], -1).astype(np.float64)
            self.exact, self.mag = x2 @ w2.T, np.abs(x2) @ np.abs(w2).T
            self.K = x2.shape[1]
            N = self.w.shape[0]
            self.bshape = (N,)
        else:
            x64, w64 = self.x.astype(np.float64), self.w.astype(np.float64)
            self.exact, self.mag = x64 @ w64, np.abs(x64) @ np.abs(w64)
            self.K = self.x.shape[-1]
            N = self.w.shape[-1]
            self.bshape = (1,) * (self.x.ndim - 1) + (N,)
        self.b = rand(rng, self.bshape) if bias else None
        if bias:
            self.exact = self.exact + self.b
            self.mag = self.mag + np.abs(self.b)
        self.OC = N

    def primitive(self, dst_dt="f32", attr=None):
        cls = dnnq.InnerProduct if self.ip else dnnq.MatMul
        return cls(MD(self.x.shape, "f32"), MD(self.w.shape, "f32"),
                   MD(self.exact.shape, dst_dt),
                   MD(self.bshape, "f32") if self.b is not None else None, attr=attr)

    def args(self, p, prepared=True):
        a = {DNNL_ARG_SRC: self.x,
             DNNL_ARG_WEIGHTS: p.prepare_weights(self.w) if prepared else self.w}
        if self.b is not None:
            a[DNNL_ARG_BIAS] = self.b
        return a

    def onednn(self, post_ops=(), dst_prev=None):
        if self.ip:
            return onednn.inner_product(self.x, self.w, self.b, "f32", post_ops=post_ops,
                                        dst_prev=dst_prev)
        return onednn.matmul(self.x, self.w, self.b, "f32", post_ops=post_ops,
                             dst_prev=dst_prev)


def problems(rng):
    """Sizes below, at and past the vector widths (8 / 16 columns, 64-column panels, 6-row
    tiles), every driver: tiled, folded, 1x1 GEMM, general (deconvolution), depthwise."""
    return {
        "mm_small": Gemm(rng, (5, 3), (3, 7)),
        "mm_panels": Gemm(rng, (13, 70), (70, 129)),
        "mm_longk": Gemm(rng, (7, 600), (600, 17)),  # K blocks of the GEMM driver
        "mm_batch": Gemm(rng, (3, 9, 20), (1, 20, 65)),
        "ip_4d": Gemm(rng, (6, 5, 3, 3), (33, 5, 3, 3), ip=True),
        "conv_3x3": Conv(rng, (2, 19, 9, 11), (70, 19, 3, 3), (1, 1), (1, 1)),
        "conv_s2_nhwc": Conv(rng, (1, 16, 10, 9), (24, 16, 3, 3), (2, 2), (1, 0), (0, 1),
                             tag="nhwc"),
        "conv_stem": Conv(rng, (1, 3, 21, 21), (64, 3, 7, 7), (2, 2), (3, 3)),  # folded KW
        "conv_1x1": Conv(rng, (2, 33, 5, 5), (17, 33, 1, 1), (1, 1), (0, 0), tag="nhwc"),
        "conv_dil": Conv(rng, (1, 8, 12, 12), (9, 8, 3, 3), (1, 1), (2, 2), dil=(1, 1)),
        "conv_group": Conv(rng, (1, 12, 7, 7), (3, 5, 4, 3, 3), (1, 1), (1, 1)),
        "conv_dw": Conv(rng, (2, 70, 8, 8), (70, 1, 1, 3, 3), (2, 1), (1, 1), tag="nhwc"),
        "conv_1d": Conv(rng, (2, 10, 17), (20, 10, 5), (2,), (2,)),
        "conv_3d": Conv(rng, (1, 6, 4, 5, 6), (10, 6, 2, 3, 3), (1, 1, 2), (0, 1, 1)),
        "deconv_s2": Conv(rng, (1, 12, 5, 6), (20, 12, 3, 3), (2, 2), (1, 1), deconv=True),
        "deconv_dw": Conv(rng, (1, 16, 4, 4), (16, 1, 1, 4, 4), (2, 2), (1, 1), deconv=True),
    }


def random_conv(rng, deconv):
    """A random (de)convolution: 1-D / 2-D / 3-D, groups, depthwise, strides, dilation,
    asymmetric and large padding, either layout."""
    nsp = int(rng.choice([1, 2, 2, 3]))
    kind = rng.choice(["plain", "grouped", "depthwise"], p=[0.6, 0.2, 0.2])
    if kind == "depthwise":
        G, ICg, OCg = int(rng.choice([2, 16, 17, 64, 70])), 1, 1
    elif kind == "grouped":
        G, ICg, OCg = int(rng.integers(2, 4)), int(rng.integers(1, 12)), int(rng.integers(1, 40))
    else:
        G, ICg, OCg = 1, int(rng.choice([1, 3, 8, 17, 33])), int(rng.choice([1, 7, 16, 65]))
    k = tuple(int(rng.integers(1, 4)) for _ in range(nsp))
    s = tuple(int(rng.integers(1, 3)) for _ in range(nsp))
    d = tuple(int(rng.choice([0, 0, 1])) for _ in range(nsp))
    ext = [(k[i] - 1) * (d[i] + 1) + 1 for i in range(nsp)]
    if deconv:
        isp = tuple(int(rng.integers(1, 6)) for _ in range(nsp))
        pl = tuple(int(rng.integers(0, ext[i])) for i in range(nsp))
        pr = tuple(max(0, min(int(rng.integers(0, ext[i])),
                              (isp[i] - 1) * s[i] + ext[i] - 1 - pl[i])) for i in range(nsp))
    else:
        isp = tuple(int(rng.integers(max(1, ext[i] - 1), ext[i] + 7)) for i in range(nsp))
        pl = tuple(int(rng.integers(0, ext[i] + 1)) for i in range(nsp))
        pr = tuple(max(int(rng.integers(0, ext[i] + 1)), ext[i] - isp[i] - pl[i])
                   for i in range(nsp))
    grouped = G > 1
    wei = ((G, OCg, ICg) if grouped else (OCg, ICg)) + k
    tag = {1: "nwc", 2: "nhwc", 3: "ndhwc"}[nsp] if rng.random() < 0.5 else None
    return Conv(rng, (int(rng.integers(1, 3)), G * ICg) + isp, wei, s, pl, pr, d, deconv,
                bias=bool(rng.random() < 0.7), tag=tag)


@pytest.mark.parametrize("seed", range(8))
def test_random_geometries(isa, seed):
    """Random (de)convolutions: f32 within the summation bound of float64, the u8 dst within
    1 of the exact value quantized; against oneDNN's f32 primitive where it takes them."""
    rng = np.random.default_rng(4000 + seed)
    for _ in range(4):
        pb = random_conv(rng, deconv=bool(rng.random() < 0.35))
        p = pb.primitive()
        out = p.execute(pb.args(p, prepared=bool(rng.random() < 0.5)))
        assert np.all(np.abs(out - pb.exact) <= sum_bound(pb.mag, pb.K) + 1e-30), pb.geom
        q = pb.primitive("u8", quant_attr())
        args = pb.args(q)
        args.update(quant_args(0.02, 100))
        qo = q.execute(args)
        assert np.abs(qo.astype(int) - quantize(pb.exact, "u8", 0.02, 100)).max() <= 1
        if onednn.available():
            try:
                ref = pb.onednn()
            except onednn.OnednnError:
                continue
            assert np.all(np.abs(out - ref) <= 2 * sum_bound(pb.mag, pb.K) + 1e-30), pb.geom


@pytest.fixture(scope="module")
def probs():
    return problems(np.random.default_rng(2511))


def quant_attr(zp=True):
    a = PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_DST, 0)
    if zp:
        a.set_zero_points_mask(DNNL_ARG_DST, 0)
    return a


def quant_args(scale, zp=None):
    a = {DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([scale], F32)}
    if zp is not None:
        a[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = np.array([zp], np.int32)
    return a


def int8_close(out, ref, min_equal=0.999):
    """within 1 everywhere, equal on at least min_equal of the elements (rounding ties of
    f32 results that differ by an ulp)"""
    d = np.abs(out.astype(np.int32) - ref.astype(np.int32))
    assert d.max() <= 1, f"differs by {d.max()}"
    assert (d == 0).mean() >= min_equal, f"equal on {(d == 0).mean():.5f}"


# ---- the micro-kernel --------------------------------------------------------------------------
def test_micro_kernel_same_bits_every_level():
    """The f32 batch-reduce kernel (dense, indirect and multi-pair A, overwrite and accumulate,
    every row count and column count around the vector widths, K around the unrolls) gives
    the same bits at every level and is within the summation bound of the exact sum."""
    rng = np.random.default_rng(7)
    base = rand(rng, 4096)
    for mr in (1, 2, 5, 6):
        for nc in (1, 7, 8, 9, 16, 17, 33, 64):
            Ks = [1, 3, 16, 31]
            panels = [rand(rng, K * 64) for K in Ks]
            offs = [None, rng.integers(0, 4096 - 31, mr).astype(np.int64), None,
                    rng.integers(0, 4096 - 31, mr).astype(np.int64)]
            pairs = [(offs[i], (int(rng.integers(0, 100)), 40), panels[i], Ks[i])
                     for i in range(4)]
            init = rand(rng, (mr, 64))
            outs = {}
            for acc in (False, True):
                for isa in LEVELS:
                    c = init.copy()
                    _gemm.brgemm_f32_micro_kernel(_codes.ISA[isa], base, pairs, nc, acc, c)
                    outs[(isa, acc)] = c[:, :nc]
                # float64 model
                exact = init[:, :nc].astype(np.float64) if acc else np.zeros((mr, nc))
                mag = np.abs(exact)
                for (o, (off, lda), panel, K) in pairs:
                    rows = [base[o[r]:o[r] + K] if o is not None else
                            base[off + r * lda:off + r * lda + K] for r in range(mr)]
                    a = np.array(rows, np.float64)
                    b = panel.reshape(K, 64)[:, :nc].astype(np.float64)
                    exact += a @ b
                    mag += np.abs(a) @ np.abs(b)
                first = outs[(LEVELS[0], acc)]
                for isa in LEVELS[1:]:
                    assert np.array_equal(first.view(np.int32), outs[(isa, acc)].view(np.int32)), \
                        (isa, mr, nc, acc)
                assert np.all(np.abs(first - exact) <= sum_bound(mag, 64)), (mr, nc, acc)


# ---- the same bits everywhere ------------------------------------------------------------------
def test_same_bits_every_level_and_thread_count(probs):
    """Every driver, f32 and u8 destinations: equal bits at every ISA level this CPU runs,
    at 1 and 2 threads (one accumulation order, docs/f32_layers.md)."""
    old_isa, old_threads = dnnq.set_max_cpu_isa("all"), dnnq.get_num_threads()
    results = {}
    try:
        for isa in LEVELS:
            dnnq.set_max_cpu_isa(isa)
            for threads in (1, 2):
                dnnq.set_num_threads(threads)
                for name, pb in probs.items():
                    for dt in ("f32", "u8"):
                        attr = quant_attr() if dt == "u8" else None
                        p = pb.primitive(dt, attr)
                        args = pb.args(p)
                        if dt == "u8":
                            args.update(quant_args(0.05, 100))
                        out = np.asarray(p.execute(args)).copy()
                        key = (name, dt)
                        if key not in results:
                            results[key] = (isa, threads, out)
                        else:
                            ref = results[key][2]
                            same = np.array_equal(out.view(np.uint8), ref.view(np.uint8))
                            assert same, f"{name} {dt}: {isa} / {threads} threads differ from " \
                                f"{results[key][:2]}"
    finally:
        dnnq.set_max_cpu_isa(old_isa)
        dnnq.set_num_threads(old_threads)


# ---- against float64 and oneDNN ----------------------------------------------------------------
def test_against_float64(probs, isa):
    """f32 results within the summation bound of the exact sum; plain weights give the same
    bits as prepared ones."""
    for name, pb in probs.items():
        p = pb.primitive()
        out = p.execute(pb.args(p))
        assert "f32" in p.impl_info
        err = np.abs(out.astype(np.float64) - pb.exact)
        assert np.all(err <= sum_bound(pb.mag, pb.K) + 1e-30), name
        again = p.execute(pb.args(p, prepared=False))
        assert np.array_equal(out, again), name


@needs_onednn
def test_against_onednn_f32(probs, isa):
    """f32 destination against oneDNN's f32 primitive: within the bound of two f32 sums of
    the same products (2 (K + 1) u sum |p|).  Measured: the convolutions equal oneDNN's
    brgconv bit for bit, MatMul with K <= 512 too (docs/f32_layers.md)."""
    for name, pb in probs.items():
        p = pb.primitive()
        out = p.execute(pb.args(p))
        ref = pb.onednn()
        diff = np.abs(out.astype(np.float64) - ref)
        assert np.all(diff <= 2 * sum_bound(pb.mag, pb.K) + 1e-30), name


@needs_onednn
@pytest.mark.parametrize("dt", ["u8", "s8"])
def test_against_onednn_int8_dst(probs, dt):
    """u8 / s8 destination with dst scale and zero point against oneDNN's f32 primitive
    followed by its quantizing reorder: within 1, equal on >= 99.9 % of the elements."""
    for name, pb in probs.items():
        p = pb.primitive(dt, quant_attr())
        args = pb.args(p)
        zp = 7 if dt == "u8" else -3
        args.update(quant_args(0.03, zp))
        out = p.execute(args)
        ref = onednn.reorder(pb.onednn(), dt, dst_scales=np.array([0.03], F32),
                             dst_zp=np.array([zp], np.int32))
        int8_close(out, ref)


POST_OPS = {
    "relu": lambda rng, c: [("eltwise", "relu", 0.0, 0.0)],
    "linear_add": lambda rng, c: [("eltwise", "linear", 0.5, -0.25),
                                  ("binary", "add", rand(rng, c))],
    "sum": lambda rng, c: [("sum", 0.5, 3)],
    "mul_clip": lambda rng, c: [("binary", "mul", rand(rng, c)), ("eltwise", "clip", -1.0, 2.0)],
}


@needs_onednn
@pytest.mark.parametrize("ops", list(POST_OPS))
@pytest.mark.parametrize("name", ["conv_3x3", "conv_s2_nhwc", "mm_panels", "mm_batch", "ip_4d",
                                  "deconv_s2"])
@pytest.mark.parametrize("dt", ["f32", "u8", "s8"])
def test_post_ops_against_onednn(probs, name, ops, dt):
    """The post-op chain (eltwise, binary per channel, sum with scale and zero point) after an
    f32 layer, f32 or int8 dst, against oneDNN's f32 primitive with the same post-ops (an
    int8 dst: then its quantizing reorder; a sum reads the int8 prev as f32)."""
    rng = np.random.default_rng(abs(hash((name, ops))) % 2**32)
    pb = probs[name]
    nd = pb.exact.ndim
    chan = (1,) * (nd - 1) + (pb.OC,) if isinstance(pb, Gemm) else \
        (1, pb.OC) + (1,) * (nd - 2)
    chain = POST_OPS[ops](rng, chan)
    po = PostOps()
    extra = {}
    for i, op in enumerate(chain):
        if op[0] == "eltwise":
            po.append_eltwise(op[1], op[2], op[3])
        elif op[0] == "binary":
            po.append_binary(op[1], MD(op[2].shape, "f32"))
            extra[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = op[2]
        else:
            po.append_sum(op[1], op[2])
    attr = quant_attr() if dt != "f32" else PrimitiveAttr()
    attr.set_post_ops(po)
    p = pb.primitive(dt, attr)
    args = pb.args(p)
    args.update(extra)
    if dt != "f32":
        args.update(quant_args(0.05, 4))
    prev = None
    if ops == "sum":
        prev = (rng.integers(0, 60, pb.exact.shape) if dt != "f32"
                else rand(rng, pb.exact.shape)).astype(MD((1,), dt).numpy_dtype)
        dst = prev.copy()
        if pb.__class__ is Conv and pb.tag:
            dst = np.moveaxis(np.ascontiguousarray(np.moveaxis(prev, 1, -1)), -1, 1)
        args[DNNL_ARG_DST] = dst
    out = np.asarray(p.execute(args))
    # oneDNN's f32 primitives take a sum without zero point: prev - zp given instead (exact)
    ref_chain = [("sum", op[1], 0) if op[0] == "sum" else op for op in chain]
    ref = pb.onednn(post_ops=ref_chain,
                    dst_prev=None if prev is None else prev.astype(F32) - F32(chain[0][2]))
    if dt == "f32":
        # the post-ops of these chains are exact given their input: a difference of the sums
        # is bounded as without post-ops, scaled by at most 0.5 x 1 (linear, mul by N(0,1))
        scale = np.max(np.abs(chain[0][2])) + 1 if ops == "mul_clip" else 1.0
        tol = 2 * scale * sum_bound(pb.mag, pb.K) + 4 * np.spacing(np.abs(ref))
        assert np.all(np.abs(out - ref) <= tol), ops
    else:
        int8_close(out, quantize(ref, dt, 0.05, 4))


# ---- FakeQuantize and partially quantized chains -------------------------------------------
def _fq_bounds(C, nd, rng, per_channel):
    shape = (1, C) + (1,) * (nd - 2) if per_channel else (1,) * nd
    lo = -rng.uniform(0.5, 2.0, shape).astype(F32)
    hi = rng.uniform(0.5, 2.0, shape).astype(F32)
    return lo, hi


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("dt", ["f32", "u8"])
def test_fake_quantize_after_f32_conv(probs, isa, per_channel, dt):
    """append_fake_quantize after an f32 convolution (and a u8 dst whose scale and zero point
    map the FakeQuantize levels onto 0..255): equal to OpenVINO's FakeQuantize of the f32
    convolution's own result (float32 numpy)."""
    rng = np.random.default_rng(5)
    pb = probs["conv_3x3"]
    nd = pb.exact.ndim
    il, ih = _fq_bounds(pb.OC, nd, rng, per_channel)
    ol, oh = (il, ih) if dt == "f32" else (np.zeros_like(il), np.full_like(ih, 255.0))
    po = PostOps()
    fq_args = dnnq.append_fake_quantize(po, il, ih, ol, oh, 256)
    attr = PrimitiveAttr()
    attr.set_post_ops(po)
    p = pb.primitive(dt, attr)
    args = pb.args(p)
    args.update(fq_args)
    out = p.execute(args)
    plain = pb.primitive("f32")
    y = plain.execute(pb.args(plain))
    ref = fake_quantize(y, il, ih, ol, oh, 256)
    if dt == "u8":
        ref = quantize(ref, "u8")
    assert np.array_equal(out, ref)


@needs_onednn
def test_partially_quantized_chain_end_to_end():
    """f32 conv + FakeQuantize -> u8 (dst scale / zero point) -> int8 conv (u8 x s8, per-OC
    weight scales) -> s8 -> dequantize -> f32 MatMul, against the same chain of oneDNN
    primitives (f32 conv, FakeQuantize in numpy, reorders, int8 conv, f32 matmul)."""
    rng = np.random.default_rng(11)
    N, C, H = 2, 16, 10
    x = rand(rng, (N, 3, H, H))
    w1 = rand(rng, (C, 3, 3, 3), 0.5)
    b1 = rand(rng, (C,))
    lo, hi = np.float32(-2.0), np.float32(3.0)
    s1, z1 = np.float32((hi - lo) / 255), int(round(-lo / ((hi - lo) / 255)))
    # dnnq: layer 1 (f32 -> u8 through FakeQuantize levels)
    po = PostOps()
    fq = dnnq.append_fake_quantize(po, lo.reshape(1, 1, 1, 1), hi.reshape(1, 1, 1, 1),
                                   lo.reshape(1, 1, 1, 1), hi.reshape(1, 1, 1, 1), 256)
    a1 = quant_attr()
    a1.set_post_ops(po)
    geo = dict(strides=1, padding_l=1, padding_r=1)
    c1 = dnnq.Convolution(MD(x.shape, "f32"), MD(w1.shape, "f32"), MD((N, C, H, H), "u8", "nhwc"),
                          MD((C,), "f32"), attr=a1, **geo)
    args = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: c1.prepare_weights(w1), DNNL_ARG_BIAS: b1, **fq}
    args.update(quant_args(s1, z1))
    q1 = c1.execute(args)
    # layer 2: int8 conv, u8 -> s8
    w2 = rng.integers(-60, 60, (8, C, 3, 3)).astype(np.int8)
    ws2 = rng.uniform(0.002, 0.01, 8).astype(F32)
    a2 = PrimitiveAttr()
    a2.set_scales_mask(DNNL_ARG_SRC, 0)
    a2.set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    a2.set_scales_mask(DNNL_ARG_DST, 0)
    a2.set_zero_points_mask(DNNL_ARG_SRC, 0)
    c2 = dnnq.Convolution(MD(q1.shape, "u8", "nhwc"), MD(w2.shape, "s8"), MD((N, 8, H, H), "s8"),
                          attr=a2, **geo)
    s2 = np.float32(0.05)
    q2 = c2.execute({DNNL_ARG_SRC: q1, DNNL_ARG_WEIGHTS: w2,
                     DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([s1], F32),
                     DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: ws2,
                     DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([s2], F32),
                     DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.array([z1], np.int32)})
    deq = dnnq.Reorder(MD(q2.shape, "s8"), MD(q2.shape, "f32"), attr=_src_scale_attr())
    f = deq.execute({DNNL_ARG_SRC: q2, DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([s2], F32)})
    flat = np.ascontiguousarray(f.reshape(N, -1))
    w3 = rand(rng, (flat.shape[1], 10), 0.05)
    mm = dnnq.MatMul(MD(flat.shape, "f32"), MD(w3.shape, "f32"), MD((N, 10), "f32"))
    out = mm.execute({DNNL_ARG_SRC: flat, DNNL_ARG_WEIGHTS: w3})
    # oneDNN: the same chain
    y1 = onednn.convolution(x, w1, b1, "f32", **geo)
    r1 = onednn.reorder(fake_quantize(y1, lo, hi, lo, hi, 256), "u8", dst_scales=np.array([s1], F32),
                        dst_zp=np.array([z1], np.int32))
    int8_close(q1, r1)
    r2 = onednn.convolution(r1, w2, None, "s8", **geo, src_scales=np.array([s1], F32),
                            wei_scales=ws2, wei_scale_mask=1, dst_scales=np.array([s2], F32),
                            src_zp=np.array([z1], np.int32))
    assert np.array_equal(q2, r2) or (q1 != r1).any()
    rf = onednn.reorder(r2, "f32", src_scales=np.array([s2], F32))
    r3 = onednn.matmul(np.ascontiguousarray(rf.reshape(N, -1)), w3, None, "f32")
    if np.array_equal(q2, r2):
        K = flat.shape[1]
        mag = np.abs(flat).astype(np.float64) @ np.abs(w3).astype(np.float64)
        assert np.all(np.abs(out - r3) <= 2 * sum_bound(mag, K))


def _src_scale_attr():
    a = PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_SRC, 0)
    return a


# ---- NaN and inf -------------------------------------------------------------------------------
@needs_onednn
@pytest.mark.parametrize("name", ["conv_3x3", "mm_panels", "conv_dw", "conv_1x1"])
def test_nan_inf_propagation(probs, isa, name):
    """NaN and +-inf in the source propagate as in oneDNN's f32 primitive (f32 dst: NaN where
    it has NaN, the same infinities); with a u8 / s8 dst NaN stores 0 / +127 and +-inf
    saturate, as its quantizing reorder does."""
    pb = probs[name]
    x0 = pb.x
    rng = np.random.default_rng(3)
    x = x0.copy()
    flat = x.reshape(-1)
    idx = rng.choice(flat.size, 3 * max(1, flat.size // 200), replace=False)
    flat[idx[0::3]] = np.nan
    flat[idx[1::3]] = np.inf
    flat[idx[2::3]] = -np.inf
    pb.x = x
    try:
        p = pb.primitive()
        out = p.execute(pb.args(p))
        ref = pb.onednn()
        assert np.array_equal(np.isnan(out), np.isnan(ref))
        assert np.array_equal(np.isinf(out) & (out > 0), np.isinf(ref) & (ref > 0))
        assert np.array_equal(np.isinf(out) & (out < 0), np.isinf(ref) & (ref < 0))
        assert np.isnan(out).any()
        for dt in ("u8", "s8"):
            p = pb.primitive(dt, quant_attr(zp=False))
            args = pb.args(p)
            args.update(quant_args(0.1))
            q = p.execute(args)
            r = onednn.reorder(ref, dt, dst_scales=np.array([0.1], F32))
            nan = np.isnan(ref)
            assert np.all(q[nan] == (0 if dt == "u8" else 127))
            int8_close(q[~nan], r[~nan], 0.99)
    finally:
        pb.x = x0


@needs_onednn
@pytest.mark.parametrize("name", ["conv_3x3", "mm_panels"])
def test_nan_through_relu(probs, name):
    """relu (alpha 0) after NaN sources: max(x, 0) gives 0, as oneDNN's f32 kernels."""
    pb = probs[name]
    x0 = pb.x
    x = x0.copy()
    x.reshape(-1)[::17] = np.nan
    pb.x = x
    try:
        po = PostOps()
        po.append_eltwise("relu", 0.0, 0.0)
        attr = PrimitiveAttr()
        attr.set_post_ops(po)
        p = pb.primitive("f32", attr)
        out = p.execute(pb.args(p))
        ref = pb.onednn(post_ops=[("eltwise", "relu", 0.0, 0.0)])
        assert not np.isnan(ref).any() and not np.isnan(out).any()
        assert np.all(np.abs(out - ref) <= 2 * sum_bound(pb.mag, pb.K) + 1e-30)
    finally:
        pb.x = x0


# ---- data types and attributes refused ---------------------------------------------------------
def _conv(src="f32", wei="f32", dst="f32", bias=None, attr=None):
    return dnnq.Convolution(MD((1, 4, 5, 5), src), MD((8, 4, 3, 3), wei), MD((1, 8, 5, 5), dst),
                            None if bias is None else MD((8,), bias), strides=1, padding_l=1,
                            padding_r=1, attr=attr)


def _mm(src="f32", wei="f32", dst="f32", bias=None, attr=None):
    return dnnq.MatMul(MD((3, 4), src), MD((4, 5), wei), MD((3, 5), dst),
                       None if bias is None else MD((1, 5), bias), attr=attr)


@pytest.mark.parametrize("make", [_conv, _mm])
def test_undefined_mixes_unimplemented(make):
    for kw, what in ((dict(src="u8"), "src data type u8 with weights data type f32"),
                     (dict(wei="s8"), "src data type f32 with weights data type s8"),
                     (dict(dst="s32"), "dst data type s32"),
                     (dict(bias="s32"), "bias data type s32")):
        with pytest.raises(Unimplemented) as e:
            make(**kw)
        msg = str(e.value)
        assert what in msg and ("f32 src" in msg or "f32 layer" in msg), msg


@pytest.mark.parametrize("make", [_conv, _mm])
@pytest.mark.parametrize("arg,kind", [(DNNL_ARG_SRC, "scales"), (DNNL_ARG_WEIGHTS, "scales"),
                                      (DNNL_ARG_SRC, "zero points"),
                                      (DNNL_ARG_WEIGHTS, "zero points")])
def test_input_quantization_refused(make, arg, kind):
    a = PrimitiveAttr()
    (a.set_scales_mask if kind == "scales" else a.set_zero_points_mask)(arg, 0)
    with pytest.raises(InvalidArguments) as e:
        make(attr=a)
    msg = str(e.value)
    name = "src" if arg == DNNL_ARG_SRC else "weights"
    assert f"{kind} of {name}" in msg and "dst scale and zero point" in msg, msg


def test_pickled_f32_weights_and_wrong_dtype():
    rng = np.random.default_rng(1)
    for make, w in ((_conv, rand(rng, (8, 4, 3, 3))), (_mm, rand(rng, (4, 5)))):
        p = make()
        pw = p.prepare_weights(w)
        back = pickle.loads(pickle.dumps(pw))
        x = rand(rng, p.src_desc.dims)
        assert np.array_equal(p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw}),
                              p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: back}))
        with pytest.raises(InvalidArguments):
            p.execute({DNNL_ARG_SRC: x.astype(np.float64), DNNL_ARG_WEIGHTS: pw})
        with pytest.raises(InvalidArguments):
            p.prepare_weights(w.astype(np.int8))


# ---- pooling -----------------------------------------------------------------------------------
@needs_onednn
@pytest.mark.parametrize("alg", ["max", "avg_include_padding", "avg_exclude_padding"])
@pytest.mark.parametrize("dt", ["u8", "s8"])
@pytest.mark.parametrize("tag", [None, "nhwc"])
def test_pooling_f32_to_int8(isa, alg, dt, tag):
    """f32 pooling into an s8 / u8 dst with dst scale and zero point (ext: oneDNN 3.2 has no
    f32 -> int8 pooling) equals oneDNN's f32 pooling followed by its quantizing reorder, NaN
    and infinities included."""
    rng = np.random.default_rng(9)
    x = rand(rng, (2, 20, 7, 7), 3.0)
    x.reshape(-1)[::37] = np.nan
    x.reshape(-1)[5::53] = np.inf
    a = quant_attr()
    p = dnnq.Pooling(alg, MD(x.shape, "f32", tag), MD((2, 20, 4, 4), dt, tag), strides=2,
                     kernel=3, padding_l=1, attr=a)
    xi = x if tag is None else np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    zp = 10 if dt == "u8" else -5
    out = p.execute({DNNL_ARG_SRC: xi, **quant_args(0.05, zp)})
    ref = onednn.reorder(onednn.pooling(x, alg, "f32", kernel=3, strides=2, padding_l=1,
                                        channels_last=tag is not None), dt,
                         dst_scales=np.array([0.05], F32), dst_zp=np.array([zp], np.int32))
    assert np.array_equal(out, ref)


@needs_onednn
@pytest.mark.parametrize("dt", ["f32", "u8"])
def test_fake_quantize_after_f32_pooling(dt):
    """append_fake_quantize (per channel) on an f32 average pooling, f32 or u8 dst: OpenVINO's
    FakeQuantize of oneDNN's f32 pooling result."""
    rng = np.random.default_rng(4)
    x = rand(rng, (1, 8, 9, 9), 2.0)
    il, ih = _fq_bounds(8, 4, rng, True)
    ol, oh = (il, ih) if dt == "f32" else (np.zeros_like(il), np.full_like(ih, 255.0))
    po = PostOps()
    fq = dnnq.append_fake_quantize(po, il, ih, ol, oh, 256)
    attr = PrimitiveAttr()
    attr.set_post_ops(po)
    p = dnnq.Pooling("avg_exclude_padding", MD(x.shape, "f32", "nhwc"),
                     MD((1, 8, 5, 5), dt, "nhwc"), strides=2, kernel=3, padding_l=1, attr=attr)
    xi = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    out = p.execute({DNNL_ARG_SRC: xi, **fq})
    y = onednn.pooling(x, "avg_exclude_padding", "f32", kernel=3, strides=2, padding_l=1,
                       channels_last=True)
    ref = fake_quantize(y, il, ih, ol, oh, 256)
    assert np.array_equal(out, quantize(ref, "u8") if dt == "u8" else ref)


def test_pooling_int8_src_takes_no_dst_scale():
    a = quant_attr(zp=False)
    with pytest.raises(Unimplemented, match="scales"):
        dnnq.Pooling("max", MD((1, 2, 4, 4), "u8"), MD((1, 2, 2, 2), "u8"), kernel=2, strides=2,
                     attr=a)


def test_api_details_of_f32_layers():
    """What a model runtime relies on: a 1-D bias on MatMul, a pickled primitive, plain and
    strided inputs, append_dw refused after an f32 layer."""
    rng = np.random.default_rng(12)
    x, w, b = rand(rng, (5, 20)), rand(rng, (20, 9)), rand(rng, (9,))
    p = dnnq.MatMul(MD((5, 20), "f32"), MD((20, 9), "f32"), MD((5, 9), "f32"), MD((9,), "f32"))
    out = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DNNL_ARG_BIAS: b})
    exact = x.astype(np.float64) @ w + b
    assert np.all(np.abs(out - exact) <= sum_bound(np.abs(x) @ np.abs(w) + np.abs(b), 20))
    q = pickle.loads(pickle.dumps(p))
    strided = np.asfortranarray(x)  # not C-contiguous: the checked path copies it
    assert np.array_equal(q.execute({DNNL_ARG_SRC: strided, DNNL_ARG_WEIGHTS: w,
                                     DNNL_ARG_BIAS: b}), out)
    ops = PostOps()
    ops.append_dw("s8", "f32", "u8", 3, 1, 1)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    with pytest.raises(Unimplemented, match="append_dw"):
        dnnq.Convolution(MD((1, 4, 5, 5), "f32"), MD((8, 4, 1, 1), "f32"),
                         MD((1, 8, 5, 5), "f32"), strides=1, padding_l=0, padding_r=0, attr=attr)
