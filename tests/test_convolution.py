"""Convolution and Deconvolution against the real oneDNN 3.2 (bit-exact) on every ISA level,
and against the independent numpy model of tests/_conv_ref.py for what oneDNN lacks (weights
zero points) or computes on its slow reference path (per-channel source / destination zero
points)."""
import hashlib

import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS,
                  DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP)
import dnnq.testing as onednn_ref
from _quant_ref import NP
from _conv_ref import conv_acc, deconv_acc, quantized
from _onednn_kernels import exact_dot_products

needs_onednn = onednn_ref.requires_vnni
CL = {3: "nwc", 4: "nhwc", 5: "ndhwc"}
_ONEDNN_CACHE = {}


def rand(rng, dt, shape):
    if dt == "f32":
        return rng.normal(0, 2, shape).astype(np.float32)
    if dt == "s32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    info = np.iinfo(NP[dt])
    return rng.integers(info.min, info.max + 1, shape, dtype=NP[dt])


def channels_last(x):
    """The same logical array laid out channels-last (as numpy / PyTorch channels_last)."""
    nd = x.ndim
    return np.ascontiguousarray(np.moveaxis(x, 1, -1)).transpose((0, nd - 1) + tuple(range(1, nd - 1)))


class Case:
    """One (de)convolution problem with data, run by dnnq and by the references."""

    def __init__(self, rng, *, mb=1, G=1, ICg=8, OCg=8, isp=(7, 7), k=(3, 3), s=(1, 1),
                 pl=(1, 1), pr=None, d=(0, 0), src_dt="u8", dst_dt="s32", deconv=False,
                 grouped=None, bias_dt=None, src_tag=None, dst_tag=None, q=None, post_ops=(),
                 sum_prev=False):
        self.deconv = deconv
        self.grouped = G > 1 if grouped is None else grouped
        self.src = rand(rng, src_dt, (mb, G * ICg) + tuple(isp))
        wshape = ((G, OCg, ICg) if self.grouped else (G * OCg, ICg)) + tuple(k)
        self.wei = rand(rng, "s8", wshape)
        self.geom = dict(strides=tuple(s), padding_l=tuple(pl),
                         padding_r=tuple(pl if pr is None else pr), dilates=tuple(d))
        fn = deconv_acc if deconv else conv_acc
        q = dict(q or {})
        self.q = q
        self.acc = fn(self.src, self.wei, self.geom["strides"], self.geom["padding_l"],
                      self.geom["padding_r"], self.geom["dilates"], src_zp=q.get("src_zp"),
                      wei_zp=q.get("wei_zp"))
        self.dst_shape = self.acc.shape
        self.dst_dt = dst_dt
        self.bias = None if bias_dt is None else rand(rng, bias_dt, (G * OCg,))
        self.src_tag, self.dst_tag = src_tag, dst_tag
        self.post_ops = list(post_ops)
        self.dst_prev = rand(rng, dst_dt, self.dst_shape) if sum_prev else None

    # -- dnnq ---------------------------------------------------------------------------------
    def run_dnnq(self, prepared=True, dst_layout=None):
        attr = PrimitiveAttr()
        args = {}
        q = self.q
        for key, arg, setter, prefix in (
                ("src_scales", DNNL_ARG_SRC, attr.set_scales_mask, DNNL_ARG_SCALE),
                ("wei_scales", DNNL_ARG_WEIGHTS, attr.set_scales_mask, DNNL_ARG_SCALE),
                ("dst_scales", DNNL_ARG_DST, attr.set_scales_mask, DNNL_ARG_SCALE),
                ("src_zp", DNNL_ARG_SRC, attr.set_zero_points_mask, DNNL_ARG_ATTR_ZERO_POINTS),
                ("wei_zp", DNNL_ARG_WEIGHTS, attr.set_zero_points_mask, DNNL_ARG_ATTR_ZERO_POINTS),
                ("dst_zp", DNNL_ARG_DST, attr.set_zero_points_mask, DNNL_ARG_ATTR_ZERO_POINTS)):
            if q.get(key) is not None:
                setter(arg, q.get(key.replace("scales", "scale") + "_mask", 0))
                args[prefix | arg] = np.asarray(q[key])
        ops = PostOps()
        for i, op in enumerate(self.post_ops):
            if op[0] == "eltwise":
                ops.append_eltwise(op[1], op[2], op[3])
            elif op[0] == "binary":
                ops.append_binary(op[1], MemoryDesc(op[2].shape, "f32"))
                args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = op[2]
            else:
                ops.append_sum(op[1], op[2])
        attr.set_post_ops(ops)
        cls = dnnq.Deconvolution if self.deconv else dnnq.Convolution
        p = cls(MemoryDesc(self.src.shape, self.src.dtype, self.src_tag),
                MemoryDesc(self.wei.shape, "s8"),
                MemoryDesc(self.dst_shape, self.dst_dt, self.dst_tag),
                None if self.bias is None else MemoryDesc(self.bias.shape, self.bias.dtype),
                attr=attr, **self.geom)
        args[DNNL_ARG_SRC] = channels_last(self.src) if self.src_tag else self.src
        args[DNNL_ARG_WEIGHTS] = p.prepare_weights(self.wei) if prepared else self.wei
        if self.bias is not None:
            args[DNNL_ARG_BIAS] = self.bias
        if self.dst_prev is not None:
            prev = self.dst_prev
            # (a copy either way: with one channel the channels-last array is a view of
            # prev, and dnnq writes the destination in place)
            args[DNNL_ARG_DST] = channels_last(prev.copy()) if self.dst_tag else prev.copy()
        out = p.execute(args)
        assert out.shape == self.dst_shape
        return out, p

    # -- references ---------------------------------------------------------------------------
    def _key(self):
        h = hashlib.sha1()
        for a in (self.src, self.wei, self.bias, self.dst_prev):
            h.update(b"-" if a is None else a.tobytes() + str(a.dtype).encode())
        h.update(repr((self.deconv, self.dst_dt, self.geom, sorted(
            (k, np.asarray(v).tolist()) for k, v in self.q.items()),
            [(op[0], op[1], np.asarray(op[2]).tolist()) + op[3:] for op in self.post_ops])).encode())
        return h.hexdigest()

    def run_onednn(self):
        """oneDNN's result (computed once per problem: the ISA levels of dnnq share it)."""
        key = self._key()
        if key not in _ONEDNN_CACHE:
            _ONEDNN_CACHE[key] = self._run_onednn()
        return _ONEDNN_CACHE[key]

    def _run_onednn(self, raw=False):
        """oneDNN's result where its kernel computes exact dot products on this host; where
        it saturates s16 pairs (its AVX2 fallback, _onednn_kernels.py) the numpy model of
        the exact numerics stands in (dnnq's default numerics are exact on every CPU).
        raw: oneDNN's result whatever its kernel (set_int8_numerics("avx2") checks)."""
        fn = onednn_ref.deconvolution if self.deconv else onednn_ref.convolution
        kw = {k: v for k, v in self.q.items() if v is not None and k != "wei_zp"}
        ops = [op if op[0] != "binary" else ("binary", op[1], op[2]) for op in self.post_ops]
        out, impl = fn(self.src, self.wei, self.bias, self.dst_dt, post_ops=ops,
                       dst_prev=self.dst_prev, return_impl=True, **self.geom, **kw)
        self.onednn_impl = impl
        if not raw and not exact_dot_products(impl):
            return self.run_numpy()
        return out

    def run_numpy(self):
        q = self.q
        ws = q.get("wei_scales")
        return quantized(self.acc, self.dst_dt, src_scale=q.get("src_scales"), wei_scales=ws,
                         bias=self.bias, post_ops=self.post_ops, dst_prev=self.dst_prev,
                         dst_scale=None if q.get("dst_scales") is None else
                         np.float32(np.asarray(q["dst_scales"]).reshape(-1)[0]),
                         dst_zp=q.get("dst_zp"))


def assert_same(out, ref, bits=False, ref_name="reference"):
    """Equal element for element (any NaN matches a NaN); `bits`: f32 compared as bits too,
    so -0.0 is not +0.0."""
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if out.dtype == np.float32:
        eq = out.view(np.int32) == ref.view(np.int32) if bits else out == ref
        bad = ~(eq | (np.isnan(out) & np.isnan(ref)))
    else:
        bad = out != ref
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{bad.sum()} of {bad.size} differ; first at {i}: dnnq "
                             f"{out[i]!r} {ref_name} {ref[i]!r}")


def random_case(rng, *, deconv=False, quant=True):
    """A random geometry: 1-D / 2-D / 3-D, groups, depthwise, strides, asymmetric and large
    padding, dilation, both layouts, every data type, the full quantization chain."""
    nsp = int(rng.choice([1, 2, 2, 2, 3]))
    kind = rng.choice(["plain", "grouped", "depthwise"], p=[0.6, 0.2, 0.2])
    if kind == "depthwise":
        G, ICg, OCg = int(rng.choice([1, 3, 16, 31, 64, 65, 130])), 1, 1
        G = max(G, 2)
    elif kind == "grouped":
        G, ICg, OCg = int(rng.integers(2, 5)), int(rng.integers(1, 20)), int(rng.integers(1, 70))
    else:
        G = 1
        ICg = int(rng.choice([1, 3, 4, 5, 16, 17, 32, 63, 64, 65, 100]))
        OCg = int(rng.choice([1, 7, 16, 63, 64, 65, 128, 129]))
    k = tuple(int(rng.integers(1, 5 if nsp < 3 else 4)) for _ in range(nsp))
    s = tuple(int(rng.integers(1, 4)) for _ in range(nsp))
    d = tuple(int(rng.choice([0, 0, 1, 2])) for _ in range(nsp))
    ext = [(k[i] - 1) * (d[i] + 1) + 1 for i in range(nsp)]
    if deconv:
        isp = tuple(int(rng.integers(1, 8 if nsp < 3 else 5)) for _ in range(nsp))
        pl = tuple(int(rng.integers(0, ext[i])) for i in range(nsp))
        pr = tuple(min(int(rng.integers(0, ext[i])), (isp[i] - 1) * s[i] + ext[i] - 1 - pl[i])
                   for i in range(nsp))
        pl = tuple(min(pl[i], (isp[i] - 1) * s[i] + ext[i] - 1) for i in range(nsp))
        pr = tuple(max(0, min(pr[i], (isp[i] - 1) * s[i] + ext[i] - 1 - pl[i])) for i in range(nsp))
    else:
        isp = tuple(int(rng.integers(max(1, ext[i] - 2), ext[i] + (12 if nsp < 3 else 5)))
                    for i in range(nsp))
        pl = tuple(int(rng.integers(0, ext[i] + 2)) for i in range(nsp))
        pr = tuple(int(rng.integers(0, ext[i] + 2)) for i in range(nsp))
        pl = tuple(max(pl[i], ext[i] - isp[i] - pr[i]) for i in range(nsp))
    src_dt = str(rng.choice(["u8", "s8"]))
    dst_dt = str(rng.choice(["u8", "s8", "s32", "f32"]))
    OC = G * OCg
    grouped = G > 1 or bool(rng.random() < 0.2)
    q, ops = {}, []
    bias_dt = None
    if quant:
        lo, hi = (0, 256) if src_dt == "u8" else (-128, 128)
        q["src_zp"] = [int(rng.integers(lo, hi))]
        q["src_scales"] = [float(rng.uniform(0.05, 0.5))]
        q["wei_scales"] = rng.uniform(0.001, 0.01, OC).astype(np.float32)
        q["wei_scale_mask"] = 3 if grouped else 1
        q["dst_scales"] = [float(rng.uniform(0.5, 4))]
        if dst_dt in ("u8", "s8"):
            q["dst_zp"] = [int(rng.integers(-20, 20))]
        bias_dt = str(rng.choice(["f32", "s32", "s8", "u8"]))
        ops = [("eltwise", "relu", float(rng.choice([0.0, 0.25])), 0.0)]
    return Case(rng, mb=int(rng.integers(1, 3)), G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl,
                pr=pr, d=d, src_dt=src_dt, dst_dt=dst_dt, deconv=deconv, bias_dt=bias_dt,
                src_tag=CL[nsp + 2] if rng.random() < 0.5 else None,
                dst_tag=CL[nsp + 2] if rng.random() < 0.5 else None, q=q, post_ops=ops,
                grouped=grouped)


# ---- random geometry vs oneDNN, every ISA level ----------------------------------------------

@needs_onednn
@pytest.mark.parametrize("seed", range(10))
def test_conv_random_vs_onednn(isa, seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(3):
        c = random_case(rng, quant=seed % 2 == 0)
        out, _ = c.run_dnnq()
        assert_same(out, c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("seed", range(6))
def test_deconv_random_vs_onednn(isa, seed):
    rng = np.random.default_rng(2000 + seed)
    for _ in range(3):
        c = random_case(rng, deconv=True, quant=seed % 2 == 0)
        out, _ = c.run_dnnq()
        assert_same(out, c.run_onednn())


@pytest.mark.parametrize("seed", range(6))
def test_conv_random_vs_numpy(isa, seed):
    """The numpy model agrees as well (it also stands for the cases oneDNN lacks below)."""
    rng = np.random.default_rng(3000 + seed)
    c = random_case(rng, deconv=seed % 3 == 2)
    out, _ = c.run_dnnq(prepared=seed % 2 == 0)
    assert_same(out, c.run_numpy())


# ---- the sizes around every block: channels 16/32/64, 64-column panels, K % 4, row tiles ----

@pytest.mark.parametrize("ic", [1, 3, 4, 5, 16, 17, 32, 64, 65])
def test_channel_sweep(isa, ic):
    """Below, at and past every block (vector widths, K % 4, 64-column panels, row tiles) vs
    the numpy model; one point per input-channel count vs oneDNN."""
    rng = np.random.default_rng(ic)
    for oc in (1, 64, 65, 129):
        for ow in (1, 6, 7, 13):
            c = Case(rng, ICg=ic, OCg=oc, isp=(3, ow), k=(3, 3), pl=(1, 1), src_dt="s8",
                     dst_dt="s32", src_tag="nhwc", dst_tag="nhwc", q={"src_zp": [-7]})
            assert_same(c.run_dnnq()[0], c.run_numpy())
    if onednn_ref.available() and onednn_ref.has_vnni():
        assert_same(c.run_dnnq()[0], c.run_onednn())


@pytest.mark.parametrize("c_", [1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 200])
def test_depthwise_sweep(isa, c_):
    """Channel counts around the vector widths and 64-channel panels, vs oneDNN (s8 source,
    stride 2) and the numpy model (all)."""
    rng = np.random.default_rng(c_)
    for src_dt in ("u8", "s8"):
        for s in (1, 2):
            c = Case(rng, G=c_, ICg=1, OCg=1, isp=(9, 11), k=(3, 3), s=(s, s), pl=(1, 1),
                     grouped=True, src_dt=src_dt, dst_dt="u8", src_tag="nhwc", dst_tag="nhwc",
                     bias_dt="f32",
                     q={"src_zp": [9 if src_dt == "u8" else -9], "src_scales": [0.5],
                        "wei_scales": rng.uniform(0.01, 0.02, c_).astype(np.float32),
                        "wei_scale_mask": 3, "dst_scales": [0.25], "dst_zp": [3]},
                     post_ops=[("eltwise", "relu", 0.0, 0.0)])
            out, p = c.run_dnnq()
            assert p.impl_info.endswith(":dw")
            assert_same(out, c.run_numpy())
            if src_dt == "s8" and s == 2 and onednn_ref.available() and onednn_ref.has_vnni():
                assert_same(out, c.run_onednn())


# ---- borders: large padding, zero points with padding ------------------------------------------

@needs_onednn
@pytest.mark.parametrize("src_dt,zp", [("u8", 0), ("u8", 37), ("u8", 255), ("s8", -20),
                                       ("s8", -128)])
@pytest.mark.parametrize("kind", ["plain", "fold", "grouped", "depthwise", "deconv"])
def test_zero_point_in_padding(isa, src_dt, zp, kind):
    rng = np.random.default_rng(abs(zp) + len(kind))
    G, ICg, OCg = {"plain": (1, 20, 70), "fold": (1, 3, 16), "grouped": (2, 5, 9),
                   "depthwise": (24, 1, 1), "deconv": (1, 6, 10)}[kind]
    c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=(5, 6), k=(5, 4), s=(2, 1), pl=(4, 3), pr=(2, 3),
             src_dt=src_dt, dst_dt="s32", deconv=kind == "deconv", src_tag="nhwc",
             q={"src_zp": [zp]})
    out, p = c.run_dnnq()
    if kind == "fold":
        assert p.impl_info.endswith(":brgconv_fold")
    assert_same(out, c.run_onednn())


@pytest.mark.parametrize("src_dt,zp", [("u8", 300), ("u8", -5), ("s8", 200), ("s8", -1000)])
@pytest.mark.parametrize("kind", ["plain", "fold", "depthwise"])
def test_zero_point_outside_the_source_type(isa, src_dt, zp, kind):
    """A zero point the source type cannot hold: the padding rows are clamped and the
    difference is added back per padded tap (numpy model: oneDNN agrees, it is exact)."""
    rng = np.random.default_rng(abs(zp))
    G, ICg, OCg = {"plain": (1, 9, 20), "fold": (1, 3, 8), "depthwise": (20, 1, 1)}[kind]
    c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=(6, 5), k=(3, 3), pl=(2, 2), src_dt=src_dt,
             dst_dt="s32", src_tag="nhwc", q={"src_zp": [zp]})
    assert_same(c.run_dnnq()[0], c.run_numpy())


# ---- per-channel zero points, weights zero points (extension) ---------------------------------

@pytest.mark.parametrize("kind", ["plain", "fold", "grouped", "depthwise", "deconv"])
def test_per_channel_zero_points_vs_numpy(isa, kind):
    rng = np.random.default_rng(len(kind))
    G, ICg, OCg = {"plain": (1, 20, 70), "fold": (1, 3, 16), "grouped": (3, 5, 9),
                   "depthwise": (24, 1, 1), "deconv": (2, 6, 10)}[kind]
    IC, OC = G * ICg, G * OCg
    for src_dt in ("u8", "s8"):
        lo, hi = (0, 256) if src_dt == "u8" else (-128, 128)
        q = {"src_zp": rng.integers(lo, hi, IC).astype(np.int32), "src_zp_mask": 2,
             "dst_zp": rng.integers(-10, 10, OC).astype(np.int32), "dst_zp_mask": 2,
             "wei_scales": rng.uniform(0.01, 0.02, OC).astype(np.float32),
             "wei_scale_mask": 3 if G > 1 else 1}
        c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=(6, 7), k=(3, 2), s=(1, 2), pl=(2, 1),
                 src_dt=src_dt, dst_dt="s8", deconv=kind == "deconv", src_tag="nhwc",
                 dst_tag="nhwc", q=q)
        assert_same(c.run_dnnq()[0], c.run_numpy())


@needs_onednn
def test_per_channel_zero_points_vs_onednn_reference_path(isa):
    """oneDNN runs per-IC source / per-OC destination zero points on ref:any; exact here in s32
    (no rounding involved)."""
    rng = np.random.default_rng(5)
    q = {"src_zp": rng.integers(0, 256, 12).astype(np.int32), "src_zp_mask": 2}
    c = Case(rng, ICg=12, OCg=20, isp=(6, 7), k=(3, 3), pl=(1, 1), dst_dt="s32", q=q)
    assert_same(c.run_dnnq()[0], c.run_onednn())


@pytest.mark.parametrize("kind", ["plain", "fold", "grouped", "depthwise", "deconv"])
@pytest.mark.parametrize("mask", [0, "per_oc"])
def test_weights_zero_points_vs_numpy(isa, kind, mask):
    """Extension (ONNX QLinearConv, OpenVINO asymmetric weights): the windowed source sums
    compensate, exact at borders and with a source zero point."""
    rng = np.random.default_rng(len(kind) + (mask == 0))
    G, ICg, OCg = {"plain": (1, 20, 70), "fold": (1, 3, 16), "grouped": (3, 5, 9),
                   "depthwise": (24, 1, 1), "deconv": (2, 6, 10)}[kind]
    OC = G * OCg
    grouped = G > 1
    for src_dt in ("u8", "s8"):
        q = {"src_zp": [7 if src_dt == "u8" else -7],
             "wei_zp": (rng.integers(-20, 20, OC).astype(np.int32) if mask else [11]),
             "wei_zp_mask": 0 if mask == 0 else (3 if grouped else 1)}
        c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=(6, 7), k=(3, 2), s=(2, 1), pl=(2, 1),
                 src_dt=src_dt, dst_dt="s32", deconv=kind == "deconv", q=q)
        assert_same(c.run_dnnq()[0], c.run_numpy())


# ---- data types, layouts, post-ops --------------------------------------------------------------

@needs_onednn
@pytest.mark.parametrize("dst_dt", ["u8", "s8", "s32", "f32"])
@pytest.mark.parametrize("bias_dt", [None, "f32", "s32", "s8", "u8"])
def test_dst_and_bias_types(isa, dst_dt, bias_dt):
    rng = np.random.default_rng(7)
    q = {"src_scales": [0.25], "wei_scales": rng.uniform(0.01, 0.05, 40).astype(np.float32),
         "wei_scale_mask": 1, "dst_scales": [0.5]}
    if dst_dt in ("u8", "s8"):
        q["dst_zp"] = [5]
    c = Case(rng, ICg=19, OCg=40, isp=(6, 6), k=(3, 3), pl=(1, 1), dst_dt=dst_dt,
             bias_dt=bias_dt, q=q)
    assert_same(c.run_dnnq()[0], c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("src_tag,dst_tag", [(None, None), ("cl", None), (None, "cl"),
                                             ("cl", "cl")])
def test_layouts(isa, nsp, src_tag, dst_tag):
    rng = np.random.default_rng(nsp)
    cl = CL[nsp + 2]
    c = Case(rng, mb=2, ICg=10, OCg=33, isp=(5,) * nsp, k=(3,) * nsp, s=(2,) * nsp,
             pl=(1,) * nsp, d=(1,) * nsp, dst_dt="u8", src_tag=src_tag and cl,
             dst_tag=dst_tag and cl, q={"dst_scales": [64.0]})
    assert_same(c.run_dnnq()[0], c.run_onednn())


@needs_onednn
def test_weights_tag_hwio(isa):
    rng = np.random.default_rng(3)
    c = Case(rng, ICg=7, OCg=9, isp=(5, 5), k=(3, 2), pl=(1, 0), dst_dt="s32")
    p = dnnq.Convolution(MemoryDesc(c.src.shape, "u8"), MemoryDesc(c.wei.shape, "s8", "hwio"),
                         MemoryDesc(c.dst_shape, "s32"), **c.geom)
    w_hwio = np.ascontiguousarray(c.wei.transpose(2, 3, 1, 0)).transpose(3, 2, 0, 1)
    out = p.execute({DNNL_ARG_SRC: c.src, DNNL_ARG_WEIGHTS: w_hwio})
    assert_same(out, c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("shape", ["per_tensor", "per_channel", "per_image", "full",
                                   "per_image_channel"])
@pytest.mark.parametrize("alg", ["add", "max"])
def test_binary_post_op(isa, shape, alg):
    rng = np.random.default_rng(11)
    N, OC, OH, OW = 2, 70, 5, 6
    src1_shape = {"per_tensor": (1, 1, 1, 1), "per_channel": (1, OC, 1, 1),
                  "per_image": (N, 1, 1, 1), "full": (N, OC, OH, OW),
                  "per_image_channel": (N, OC, 1, 1)}[shape]
    src1 = rng.normal(0, 2, src1_shape).astype(np.float32)
    for tag in (None, "nhwc"):
        c = Case(rng, mb=N, ICg=13, OCg=OC, isp=(OH, OW), k=(3, 3), pl=(1, 1), dst_dt="s8",
                 src_tag=tag, dst_tag=tag, q={"wei_scales": [0.01]},
                 post_ops=[("binary", alg, src1), ("eltwise", "linear", 0.5, 1.0)])
        assert_same(c.run_dnnq()[0], c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("dst_dt", ["u8", "s8", "s32", "f32"])
def test_sum_post_op(isa, dst_dt):
    rng = np.random.default_rng(13)
    for kind, (G, ICg, OCg) in (("plain", (1, 9, 20)), ("depthwise", (16, 1, 1))):
        for tag in (None, "nhwc"):
            c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=(5, 6), k=(3, 3), pl=(1, 1), dst_dt=dst_dt,
                     src_tag=tag, dst_tag=tag,
                     q={"wei_scales": [0.02], "dst_scales": [0.5]},
                     post_ops=[("sum", 1.5, 3 if dst_dt != "f32" else 0),
                               ("eltwise", "relu", 0.0, 0.0)], sum_prev=True)
            if dst_dt == "f32":
                # oneDNN adds the sum as one fused multiply-add (verified: fma(1.5, prev, v)
                # matches every element, v + f32(1.5 * prev) does not); the shared GEMM
                # epilogue multiplies then adds, so f32 destinations are compared with
                # integer-valued previous contents, where the product is exact either way
                c.dst_prev = np.rint(c.dst_prev)
            assert_same(c.run_dnnq()[0], c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("alg,alpha,beta", [("relu", 0.1, 0), ("linear", 2.0, -3.0),
                                            ("clip", -5.0, 5.0), ("round", 0, 0),
                                            ("abs", 0, 0), ("square", 0, 0)])
def test_eltwise_post_ops(isa, alg, alpha, beta):
    rng = np.random.default_rng(17)
    c = Case(rng, ICg=9, OCg=20, isp=(5, 6), k=(3, 3), pl=(1, 1), dst_dt="s8",
             q={"wei_scales": [0.003]}, post_ops=[("eltwise", alg, alpha, beta)])
    assert_same(c.run_dnnq()[0], c.run_onednn())


# the chains the AVX-512 fused epilogue computes (_gemm.fused_epilogue_flags): clips, hard
# sigmoid / swish, linear, round, relu with a slope and sum, as the quantized models'
# activations give them (a QDQ pair folded to a clip around each activation, or emulated as
# linear, round, clip, linear)
FUSED_CHAIN = [("eltwise", "clip", -6.0, 9.0), ("eltwise", "hardswish", 1 / 6, 0.5),
               ("eltwise", "linear", 8.0, 0.0), ("eltwise", "round", 0.0, 0.0),
               ("eltwise", "clip", -3.0, 40.0), ("eltwise", "linear", 0.125, 0.0),
               ("eltwise", "clip_v2", -0.4, 5.0), ("eltwise", "linear", 0.7, -0.25),
               ("eltwise", "hardsigmoid", 0.2, 0.5), ("eltwise", "relu", 0.3, 0.0)]


@needs_onednn
@pytest.mark.parametrize("dst_dt", ["u8", "s8", "s32", "f32"])
def test_fused_epilogue_chain(isa, dst_dt):
    """Tiles of 1 - 17 rows (the chain runs over blocks of 8), panels of 1 - 70 columns, the
    plain, 1x1 and depthwise drivers, inf / huge values from the bias, with and without a sum
    (integer previous contents for f32: see test_sum_post_op).  (A NaN is not compared: how
    oneDNN's clip treats it differs between its kernels.)"""
    rng = np.random.default_rng(29)
    shapes = (("plain", 1, 9, 70, (3, 3), (5, 6)), ("1x1", 1, 24, 20, (1, 1), (3, 17)),
              ("depthwise", 40, 1, 1, (3, 3), (4, 9)), ("depthwise 5x5", 17, 1, 1, (5, 5), (6, 7)),
              ("one column", 1, 5, 1, (3, 3), (2, 2)))
    for name, G, ICg, OCg, k, isp in shapes:
        for with_sum in (False, True):
            ops = list(FUSED_CHAIN)
            if with_sum:
                ops.insert(2, ("sum", 1.5, 3 if dst_dt not in ("f32", "s32") else 0))
            c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, pl=(k[0] // 2, k[1] // 2),
                     dst_dt=dst_dt, bias_dt="f32", q={"wei_scales": [0.002]}, post_ops=ops,
                     src_tag="nhwc", dst_tag="nhwc", sum_prev=with_sum)
            special = np.float32([np.inf, -np.inf, 3e38, -3e38, -0.0])
            c.bias[:len(special)] = special[:len(c.bias)]
            if with_sum and dst_dt == "f32":
                c.dst_prev = np.rint(c.dst_prev)
            assert_same(c.run_dnnq()[0], c.run_onednn(), ref_name=f"oneDNN ({name})")


# the chains the AVX-512 micro-kernel applies in registers (ukernels/epilogue_chain_avx512.h):
# one bounded by its clips (no clamp needed) and ones a final linear takes past the dst type
# (clamped), with a sum and a dst zero point
BOUNDED_CHAIN = [("eltwise", "clip", -4.96, 4.77), ("eltwise", "hardswish", 0.1666, 0.5),
                 ("eltwise", "clip", -0.38, 4.75), ("eltwise", "linear", 0.62, 0.0),
                 ("eltwise", "clip", -0.238, 2.95), ("eltwise", "linear", 30.0, 0.0886)]
UNBOUNDED_CHAIN = [("eltwise", "clip", -4.0, 4.0), ("eltwise", "hardswish", 1 / 6, 0.5),
                   ("eltwise", "relu", 0.5, 0.0), ("eltwise", "linear", 90.0, -7.0)]


@needs_onednn
@pytest.mark.parametrize("src_dt", ["u8", "s8"])
def test_chain_in_registers(isa, src_dt):
    """u8 and s8 sources (an s8 one XOR-ed to u8 in the kernel), tiles of 1 - 13 rows, panels
    of 1 - 70 columns, 1x1 and 3x3, K a multiple of 4 (the accumulators in registers) or not
    (the stored tile); 16 depthwise channels (the stored tile by groups of 4 pixels)."""
    rng = np.random.default_rng(31)
    shapes = ((1, 16, 17, (1, 1), (1, 13)), (1, 12, 70, (1, 1), (2, 7)),
              (1, 8, 33, (3, 3), (3, 5)), (1, 7, 1, (3, 3), (4, 4)), (1, 5, 48, (1, 1), (5, 3)),
              (16, 1, 1, (3, 3), (3, 31)), (16, 1, 1, (3, 3), (2, 6)))
    chains = ((BOUNDED_CHAIN, "u8", False), (UNBOUNDED_CHAIN, "s8", False),
              (UNBOUNDED_CHAIN[:2] + [("sum", 1.5, 3)] + UNBOUNDED_CHAIN[2:], "u8", True))
    for G, ICg, OCg, k, isp in shapes:
        for ops, dst_dt, with_sum in chains:
            c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, pl=(k[0] // 2, k[1] // 2),
                     src_dt=src_dt, dst_dt=dst_dt, bias_dt="f32",
                     q={"wei_scales": [0.002], "dst_scales": [0.5], "dst_zp": [3]},
                     post_ops=ops, src_tag="nhwc", dst_tag="nhwc", sum_prev=with_sum)
            assert_same(c.run_dnnq()[0], c.run_onednn(),
                        ref_name=f"oneDNN ({G}x{ICg}x{OCg} {k} {isp} {dst_dt})")


@needs_onednn
@pytest.mark.parametrize("clip_lo", [-0.38, -0.3749])
def test_chain_clip_bound_after_hardswish(isa, clip_lo):
    """A clip after the hard swish whose lower bound lies below the hard swish's minimum
    (-0.375 at x = -1.5: the quantized ONNX models' chain; the kernel leaves out that max) or
    just above it (it must stay): the source sweeps x around -1.5 in steps of 0.001, and
    linear(100) then the dst zero point make -0.3749 and -0.375 different bytes."""
    rng = np.random.default_rng(41)
    ops = [("eltwise", "clip", -4.0, 4.0), ("eltwise", "hardswish", 1 / 6, 0.5),
           ("eltwise", "clip", clip_lo, 4.0), ("eltwise", "linear", 100.0, 0.0)]
    c = Case(rng, ICg=4, OCg=20, isp=(16, 16), k=(1, 1), pl=(0, 0), dst_dt="u8",
             bias_dt="f32", q={"wei_scales": [0.001], "dst_zp": [128]}, post_ops=ops,
             src_tag="nhwc", dst_tag="nhwc")
    c.src[...] = 0
    c.src[0, 0] = np.arange(256, dtype=np.uint8).reshape(16, 16)
    c.wei[...] = 0
    c.wei[:, 0] = 1
    c.bias = (-1.62 + 0.003 * np.arange(20)).astype(np.float32)
    out = c.run_dnnq()[0]
    assert_same(out, c.run_onednn(), ref_name=f"oneDNN (clip from {clip_lo})")
    if clip_lo > -0.375:  # the bound applied: no byte below round(100 * clip_lo) + 128
        assert out.min() == 91


def test_fake_quantize_chain(isa):
    """The FakeQuantize chain (with dnnq's checkpoint / select for reversed bounds) fused into
    the epilogue equals the standalone FakeQuantize on the convolution's f32 output."""
    rng = np.random.default_rng(19)
    c = Case(rng, ICg=9, OCg=20, isp=(5, 6), k=(3, 3), pl=(1, 1), dst_dt="f32",
             q={"wei_scales": [0.01]})
    plain, _ = c.run_dnnq()
    il = rng.uniform(-3, 0, (1, 20, 1, 1)).astype(np.float32)
    ih = rng.uniform(0.5, 3, (1, 20, 1, 1)).astype(np.float32)
    il[0, :5], ih[0, :5] = ih[0, :5].copy(), il[0, :5].copy()  # reversed bounds: select ops
    ops = PostOps()
    extra = dnnq.append_fake_quantize(ops, il, ih, -1.0, 2.0, 17)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 0)
    attr.set_post_ops(ops)
    p = dnnq.Convolution(MemoryDesc(c.src.shape, "u8"), MemoryDesc(c.wei.shape, "s8"),
                         MemoryDesc(c.dst_shape, "f32"), attr=attr, **c.geom)
    args = {DNNL_ARG_SRC: c.src, DNNL_ARG_WEIGHTS: c.wei,
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.float32([0.01])}
    args.update(extra)
    out = p.execute(args)
    assert_same(out, dnnq.fake_quantize(plain, il, ih, -1.0, 2.0, 17))


# ---- repeated execution, threads, memory ------------------------------------------------------

@needs_onednn
def test_threads_and_reuse(isa):
    rng = np.random.default_rng(23)
    c = Case(rng, mb=3, ICg=32, OCg=130, isp=(14, 15), k=(3, 3), pl=(1, 1), dst_dt="s32",
             src_tag="nhwc", dst_tag="nhwc", q={"src_zp": [3]})
    ref = c.run_onednn()
    old = dnnq.get_num_threads()
    try:
        for n in (1, 2):
            dnnq.set_num_threads(n)
            out, p = c.run_dnnq()
            assert_same(out, ref)
    finally:
        dnnq.set_num_threads(old)


def test_dst_in_place(isa):
    rng = np.random.default_rng(29)
    c = Case(rng, ICg=4, OCg=8, isp=(5, 5), k=(3, 3), pl=(1, 1), dst_dt="s32", dst_tag="nhwc")
    out, p = c.run_dnnq()
    dst = np.zeros((1, 5, 5, 8), np.int32).transpose(0, 3, 1, 2)
    got = p.execute({DNNL_ARG_SRC: c.src, DNNL_ARG_WEIGHTS: c.wei, DNNL_ARG_DST: dst})
    assert got is dst
    assert_same(dst, out)


# ---- 1x1 stride-1 convolutions: the plain GEMM path ------------------------------------------

@needs_onednn
@pytest.mark.parametrize("src_dt", ["u8", "s8"])
@pytest.mark.parametrize("deconv", [False, True])
def test_one_by_one_gemm_path(isa, src_dt, deconv):
    rng = np.random.default_rng(31)
    src1 = rng.normal(0, 2, (2, 1, 1, 1)).astype(np.float32)  # per image
    for nsp in (1, 2, 3):
        c = Case(rng, mb=2, ICg=37, OCg=70, isp=(5, 3, 4)[:nsp], k=(1,) * nsp, s=(1,) * nsp,
                 pl=(0,) * nsp, d=(0,) * nsp, src_dt=src_dt, dst_dt="s8", deconv=deconv,
                 src_tag=CL[nsp + 2], dst_tag=CL[nsp + 2], bias_dt="s32",
                 q={"src_zp": [3], "wei_scales": rng.uniform(0.001, 0.01, 70).astype(np.float32),
                    "wei_scale_mask": 1, "dst_scales": [2.0], "dst_zp": [-4]},
                 post_ops=[("binary", "add", src1.reshape((2, 1) + (1,) * nsp)),
                           ("sum", 0.5, 2)], sum_prev=True)
        out, p = c.run_dnnq()
        assert ":brgconv_1x1" in p.impl_info  # (+ref_order with a full binary input)
        assert_same(out, c.run_onednn())
    q = {"src_zp": [3], "wei_zp": rng.integers(-9, 9, 70).astype(np.int32), "wei_zp_mask": 1,
         "dst_zp": rng.integers(-9, 9, 70).astype(np.int32), "dst_zp_mask": 2,
         "dst_scales": [8.0]}
    c = Case(rng, ICg=37, OCg=70, isp=(5, 6), k=(1, 1), pl=(0, 0), src_dt=src_dt, dst_dt="u8",
             deconv=deconv, q=q)
    assert_same(c.run_dnnq()[0], c.run_numpy())


@pytest.mark.parametrize("level", [0] + ([3] if "avx512_core_vnni" in dnnq.available_isa_levels()
                                           else []))
def test_layout_transpose_vs_numpy(level):
    """The plain <-> channels-last copies around the kernels (16 x 16 / 4 x 4 register blocks,
    at the AVX-512 level 64-, 32- and 16-column bands of bytes, and the edges) equal numpy's
    moveaxis."""
    from dnnq.primitives._kernels import _conv
    rng = np.random.default_rng(37)
    for dt in (np.uint8, np.int8, np.int32, np.float32):
        for shp in [(1, 3, 5, 7), (2, 16, 16, 16), (1, 33, 17, 19), (3, 64, 8, 9), (1, 1, 1, 1),
                    (2, 130, 1, 31), (1, 4, 4, 4), (1, 112, 5, 13), (2, 47, 9, 9),
                    (1, 200, 3, 7), (1, 1024, 7, 7), (1, 512, 14, 14), (2, 18, 4, 5),
                    (1, 16, 4, 4), (1, 15, 4, 4)]:
            x = rng.integers(-100, 100, shp).astype(dt)
            cl = np.empty(shp[:1] + shp[2:] + shp[1:2], dt)
            _conv.transpose_channels(x, cl, True, level)
            assert np.array_equal(cl, np.moveaxis(x, 1, -1))
            back = np.empty(shp, dt)
            _conv.transpose_channels(cl, back, False, level)
            assert np.array_equal(back, x)
    # threads on bands of 64 pixels of a large image (a model's input to channels-last):
    # pixel counts below, at and past whole bands per thread
    for dt in (np.uint8, np.float32):
        for shp in [(1, 3, 736, 960), (2, 3, 129, 65), (1, 4, 1, 16384), (1, 3, 257, 257)]:
            x = rng.integers(-100, 100, shp).astype(dt)
            for nthreads in (2, 3):
                cl = np.full(shp[:1] + shp[2:] + shp[1:2], 7, dt)
                _conv.transpose_channels(x, cl, True, level, nthreads)
                assert np.array_equal(cl, np.moveaxis(x, 1, -1)), (shp, nthreads)


@pytest.mark.parametrize("level", [0] + ([3] if "avx512_core_vnni" in dnnq.available_isa_levels()
                                           else []))
@pytest.mark.parametrize("by_rows", [False, True])
def test_layout_transpose_column_ranges_vs_numpy(level, by_rows):
    """The byte transposes on sizes below / at / past 16, 32 and 64 in both dims (the AVX-512
    level's 64 x 16 blocks of tall sources, its 64- / 32- / 16-column bands, the overlapping
    last blocks and the masked ones of fewer than 16 rows), whole and over column ranges as
    the threaded copies cut them (bands of 64 columns, the last one shorter): the range's dst
    rows equal numpy's transpose, the other dst rows are untouched.  `by_rows`: ranges of
    src rows instead (a thread's channel band of the copy to channels-last, transpose_rows):
    the range's dst columns, every other dst byte untouched."""
    from dnnq.primitives._kernels import _conv
    rng = np.random.default_rng(41 if by_rows else 38)
    sizes = [1, 7, 15, 16, 17, 31, 32, 33, 49, 63, 64, 65, 100, 127, 128, 129, 196]
    for rows in sizes + [512, 1024]:
        for cols in sizes + ([784] if rows <= 64 or by_rows else []):
            for dt in (np.uint8, np.int32):
                x = rng.integers(-100, 100, (rows, cols)).astype(dt)
                n = rows if by_rows else cols
                ranges = [(0, n)] + [(c, min(c + 64, n)) for c in range(0, n, 64)]
                ranges += [(3, n - 2)] if n >= 21 else []
                for c0, c1 in ranges:
                    d = np.full((cols, rows), 77, dt)
                    want = np.full((cols, rows), 77, dt)
                    if by_rows:
                        _conv.transpose_rows(x, d, c0, c1, level)
                        want[:, c0:c1] = x.T[:, c0:c1]
                    else:
                        _conv.transpose_columns(x, d, c0, c1, level)
                        want[c0:c1] = x.T[c0:c1]
                    assert np.array_equal(d, want), (rows, cols, dt, c0, c1, by_rows)


def test_huge_geometry_creation_returns():
    """Creation of a (de)convolution whose dims no tensor could hold (an output height of
    2^39 from a padding of 2^40; a kernel 2^31 wide, whose coordinate table's size overflowed:
    both found by the fuzz soak) returns at once and does not crash: the tiled path and the
    deconvolution coordinate table are built only up to sane sizes (their loops ran minutes,
    the overflowed table was written past its end).  Run in a child process so that a regression fails on the timeout instead of
    hanging the suite."""
    import subprocess
    import sys
    code = (
        "import dnnq as D\n"
        "src = D.MemoryDesc((2, 1, 2, 3), 'u8', 'nhwc')\n"
        "w = D.MemoryDesc((64, 1, 1, 2), 's8', 'hwio')\n"
        "dst = D.MemoryDesc((2, 64, 549755813890, 2), 'f32', 'nhwc')\n"
        "p = D.Convolution(src, w, dst, None, strides=[2, 1], padding_l=[1099511627776, 0],\n"
        "                  padding_r=[2, 0])\n"
        "src = D.MemoryDesc((1, 8, 1 << 30, 1), 'u8', 'nhwc')\n"
        "w = D.MemoryDesc((8, 8, 2, 1), 's8', 'oihw')\n"
        "dst = D.MemoryDesc((1, 8, 1 << 31, 1), 'u8', 'nhwc')\n"
        "q = D.Deconvolution(src, w, dst, None, strides=[2, 1], padding_l=0, padding_r=0)\n"
        "src = D.MemoryDesc((2, 64, 4), 'u8', 'ncw')\n"
        "w = D.MemoryDesc((4, 64, 2147483648), 's8', 'oiw')\n"
        "dst = D.MemoryDesc((2, 4, 4294967300), 's32', 'nwc')\n"
        "r = D.Deconvolution(src, w, dst, None, strides=2, padding_l=0, padding_r=1,\n"
        "                    dilates=1)\n"
        "print(p.impl_info, q.impl_info, r.impl_info)\n")
    r = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip()
