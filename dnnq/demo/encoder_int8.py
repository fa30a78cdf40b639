"""all-MiniLM-L6-v2 with every linear layer int8 through dnnq's public API.

The recipe (docs/demo.md explains it for any model's linear layers):

* weights: s8, one scale per output channel, symmetric (``dnnq.calibrate.minmax(w, "s8",
  axis=0, symmetric=True)`` then ``dnnq.quantize(w, scale, 0, "s8", axis=0)``);
* activations entering a linear layer: u8, one scale and zero point per tensor
  (``dnnq.calibrate.minmax``), chosen once on a calibration set (static) or from each batch
  (dynamic); quantized by a dnnq ``Reorder``;
* each linear layer is one ``dnnq.InnerProduct`` (weights ``(out, in)`` as nn.Linear stores
  them) with its bias fused; the residual adds are ``sum`` post-ops into the f32 destination
  that holds the residual; GELU is a fused ``gelu_erf`` post-op of the feed-forward input
  layer, whose destination is u8 on the next layer's input grid (static; dynamic: f32, then
  quantized with the batch's range) -- or, with ``gelu="lut"``, that layer writes its u8
  pre-activation and GELU is a 256-entry u8 -> u8 table onto the next layer's input grid
  (one more rounding; it was the faster form before dnnq's AVX-512 epilogue had GELU);
* LayerNorm, softmax and the two attention matmuls (Q·Kᵀ and P·V) stay float32 (numpy).

A primitive's row count M is fixed at creation, and weights packed by one primitive serve
only that primitive, so rows (real tokens, or batch × tokens without ``skip_padding``) are
padded up to a few buckets and each bucket has its own primitives and packed weights
(created at first use).

Speed (docs/demo.md): with ``skip_padding=True`` (off by default, so that the demo's engines
do the same work) the per-token steps skip the batch's padding tokens, and with static scales a batch is split over the threads by sentences
(``split_sentences``), each part with single-threaded primitives.
"""
import numpy as np

import dnnq
from dnnq import (MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS)
from dnnq import calibrate

from dnnq.demo._parallel import split_rows, split_batch
from dnnq.demo.encoder_f32 import (Float32Encoder, embed, attention, layer_norm, mask_bias,
                                   mean_pool_normalize, gelu_erf)

_F32 = np.float32
_SRC_SCALE = DNNL_ARG_SCALE | DNNL_ARG_SRC
_WEI_SCALE = DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS
_DST_SCALE = DNNL_ARG_SCALE | DNNL_ARG_DST
_SRC_ZP = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC
_DST_ZP = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST


def row_bucket(m):
    """Rows are padded up to this many (few distinct primitive shapes, little padding)."""
    step = 8 if m <= 128 else 32 if m <= 1024 else 128
    return -(-m // step) * step


def qparams(x):
    """u8 per-tensor (scale, zero point) covering x's range, as 1-element arrays: the
    asymmetric ``dnnq.calibrate.minmax(x, "u8")``, computed from the two extremes in Python
    floats (the same values -- tests/test_demo.py checks it -- without calibrate's float64
    copy of the tensor and checks, which matter when this runs for every batch)."""
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = min(max(round(-lo / scale), 0), 255)          # round() is half-to-even, as np.rint
    s32 = np.array([scale], _F32)
    if not s32[0] > 0:
        s32[0] = np.finfo(np.float32).tiny
    return s32, np.array([zp], np.int32)


def apply_table(table, q):
    """``table[q]`` for a u8 ``table`` (or its :func:`pair_table`) and a C-contiguous 2-D u8
    array ``q`` with an even row length, two bytes at a time: a 65536-entry u16 table over q's u16 view (numpy's take converts its
    indices to intp, so the byte table cost 4.5 ns an element, the pair table about half
    that), rows split over the threads."""
    if table.shape == (256,):
        if q.size <= 1 << 17 or q.shape[-1] % 2:   # building the pair table costs more
            return np.take(table, q)
        table = pair_table(table)
    out = np.empty_like(q)
    q16, out16 = q.view(np.uint16), out.view(np.uint16)
    split_rows(lambda lo, hi: np.take(table, q16[lo:hi], out=out16[lo:hi]), q.shape[0], 64)
    return out


def pair_table(table):
    """The u16 -> u16 table applying a u8 table to both bytes of a little-endian u16."""
    i = np.arange(65536)
    return (table[i & 255].astype(np.uint16) | (table[i >> 8].astype(np.uint16) << 8))


def gelu_table(pre_q, out_q=None):
    """The 256-entry u8 -> u8 GELU table from the pre-activation's quantization ``pre_q``
    (scale, zero point) to the output's ``out_q``; without ``out_q``, the output's is chosen
    to cover exactly the 256 values GELU takes on the pre-activation's grid.  Returns
    (table, out_q)."""
    (s_pre,), (z_pre,) = pre_q
    grid = (np.float64(s_pre) * (np.arange(256) - int(z_pre))).astype(_F32).reshape(1, 256)
    g = gelu_erf(grid).astype(np.float64).reshape(256)
    if out_q is None:
        out_q = qparams(g)
    (s_out,), (z_out,) = out_q
    table = np.clip(np.rint(g / np.float64(s_out)) + int(z_out), 0, 255).astype(np.uint8)
    return table, out_q


class Quantizer:
    """f32 -> u8 with one scale and zero point, through a dnnq Reorder per row bucket."""

    def __init__(self, width):
        self.width = width
        self._prims = {}

    def __call__(self, x, scale, zp):
        m = x.shape[0]
        prim = self._prims.get(m)
        if prim is None:
            attr = PrimitiveAttr()
            attr.set_scales_mask(DNNL_ARG_DST, 0)
            attr.set_zero_points_mask(DNNL_ARG_DST, 0)
            prim = dnnq.Reorder(MemoryDesc((m, self.width), "f32"),
                                MemoryDesc((m, self.width), "u8"), attr)
            self._prims[m] = prim
        return prim.execute({DNNL_ARG_SRC: x, _DST_SCALE: scale, _DST_ZP: zp})


class QLinear:
    """One nn.Linear (weight (out, in), bias (out,)) as a dnnq InnerProduct: u8 source with a
    per-tensor scale and zero point, s8 weights with per-output-channel scales, f32 bias; an
    f32 destination (``residual``: added into the given destination by a sum post-op) or a u8
    one (``dst_u8``; call with ``dst_q=(scale, zero_point)``), optionally through a fused
    ``gelu_erf`` post-op (``gelu``)."""

    def __init__(self, weight, bias, *, residual=False, gelu=False, dst_u8=False):
        self.n, self.k = weight.shape
        w_scale, _ = calibrate.minmax(weight, "s8", axis=0, symmetric=True)
        self.w_scale = np.ascontiguousarray(w_scale, _F32)
        self.w_s8 = dnnq.quantize(np.ascontiguousarray(weight, _F32), self.w_scale, 0, "s8", axis=0)
        self.bias = np.ascontiguousarray(bias, _F32)
        self.residual, self.gelu, self.dst_u8 = residual, gelu, dst_u8
        self._prims = {}

    def _primitive(self, m):
        got = self._prims.get(m)
        if got is None:
            attr = PrimitiveAttr()
            attr.set_scales_mask(DNNL_ARG_SRC, 0)
            attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1)          # per output channel (dim 0)
            attr.set_zero_points_mask(DNNL_ARG_SRC, 0)
            ops = PostOps()
            if self.gelu:
                ops.append_eltwise("gelu_erf")
            if self.residual:
                ops.append_sum(1.0)
            attr.set_post_ops(ops)
            if self.dst_u8:
                attr.set_scales_mask(DNNL_ARG_DST, 0)
                attr.set_zero_points_mask(DNNL_ARG_DST, 0)
            prim = dnnq.InnerProduct(MemoryDesc((m, self.k), "u8"), MemoryDesc((self.n, self.k), "s8"),
                                     MemoryDesc((m, self.n), "u8" if self.dst_u8 else "f32"),
                                     MemoryDesc((self.n,), "f32"), attr=attr)
            got = self._prims[m] = (prim, prim.prepare_weights(self.w_s8))
        return got

    def __call__(self, x_u8, scale, zp, dst=None, dst_q=None):
        prim, packed = self._primitive(x_u8.shape[0])
        args = {DNNL_ARG_SRC: x_u8, DNNL_ARG_WEIGHTS: packed, DNNL_ARG_BIAS: self.bias,
                _SRC_SCALE: scale, _WEI_SCALE: self.w_scale, _SRC_ZP: zp}
        if dst is not None:
            args[DNNL_ARG_DST] = dst
        if dst_q is not None:
            args[_DST_SCALE], args[_DST_ZP] = dst_q
        return prim.execute(args)


# the quantization points of one layer: inputs of qkv, attention output, ffn in, ffn out
POINTS = ("qkv", "attn_out", "ffn_in", "ffn_out")


class Int8Encoder:
    """The encoder with its 36 linear layers int8 through dnnq (see the module docstring).

    ``Int8Encoder(weights, calibration=(ids, mask))`` -- static: activation scales chosen once
    on the calibration batch (or ``calibration=`` another encoder's ``static``: the same
    scales without the float32 pass, e.g. on Dask workers); ``Int8Encoder(weights,
    dynamic=True)`` -- from each batch."""

    def __init__(self, weights, calibration=None, dynamic=False, n_layers=None, gelu="post_op",
                 fuse_residual=True, split_sentences=True, skip_padding=False):
        if not dynamic and calibration is None:
            raise ValueError("static quantization needs a calibration batch (ids, mask)")
        if gelu not in ("lut", "post_op"):
            raise ValueError(f"gelu={gelu!r}; expected 'lut' or 'post_op'")
        self.gelu = gelu
        self.fuse_residual = fuse_residual
        self.split_sentences = split_sentences
        self.skip_padding = skip_padding
        self.w = weights
        c = self.config = weights.config
        self.dynamic = dynamic
        self.name = "dnnq int8 (dynamic)" if dynamic else "dnnq int8"
        self.n_layers = c.layers if n_layers is None else n_layers
        self.layers = []
        for i in range(self.n_layers):
            lw = lambda n: weights.layer(i, n)  # noqa: E731
            wqkv = np.concatenate([lw(f"attention.self.{p}.weight") for p in ("query", "key", "value")])
            bqkv = np.concatenate([lw(f"attention.self.{p}.bias") for p in ("query", "key", "value")])
            self.layers.append(dict(
                qkv=QLinear(wqkv, bqkv),
                attn_out=QLinear(lw("attention.output.dense.weight"), lw("attention.output.dense.bias"),
                                 residual=fuse_residual),
                ffn_in=QLinear(lw("intermediate.dense.weight"), lw("intermediate.dense.bias"),
                               gelu=gelu == "post_op", dst_u8=not dynamic),
                ffn_out=QLinear(lw("output.dense.weight"), lw("output.dense.bias"),
                                residual=fuse_residual),
                ln1=(lw("attention.output.LayerNorm.weight"), lw("attention.output.LayerNorm.bias")),
                ln2=(lw("output.LayerNorm.weight"), lw("output.LayerNorm.bias"))))
        self._quant = {c.hidden: Quantizer(c.hidden), c.intermediate: Quantizer(c.intermediate)}
        self.static = None
        if not dynamic:
            self.static = dict(calibration) if isinstance(calibration, dict) else \
                self.calibrate(*calibration)
            if self.gelu == "lut":
                self.luts = [pair_table(self._gelu_lut(i)) for i in range(self.n_layers)]

    def _gelu_lut(self, i):
        """u8 -> u8 table: the quantized pre-activation (the feed-forward input layer's u8
        output) to the quantized GELU output (the output layer's u8 input)."""
        return gelu_table(self.static[i, "ffn_pre"], self.static[i, "ffn_out"])[0]

    def calibrate(self, ids, mask):
        """Per-tensor u8 (scale, zero point) of every quantization point, from the float32
        model's activations on the calibration batch (padding tokens excluded)."""
        record = {}
        Float32Encoder(self.w).hidden_states(ids, mask, self.n_layers, record=record)
        keep = mask.reshape(-1) > 0
        out = {}
        for key, x in record.items():
            if x is not None:
                s, z = calibrate.minmax(x[keep], "u8")
                out[key] = np.asarray(s, _F32).reshape(1), np.asarray(z, np.int32).reshape(1)
        return out

    def _q(self, x, m, key):
        """Quantize f32 rows x (the first m are real) to u8; returns (x_u8, scale, zp)."""
        if self.dynamic:
            s, z = qparams(x[:m])
        else:
            s, z = self.static[key]
        return self._quant[x.shape[1]](x, s, z), s, z

    def _residual(self, linear, xq, sc, zp, x):
        if self.fuse_residual:
            return linear(xq, sc, zp, dst=x)                     # sum post-op, in place
        y = linear(xq, sc, zp)
        y += x
        return y

    def hidden_states(self, ids, mask):
        """The last hidden state (B*S, hidden).  With ``skip_padding`` every
        per-token step -- the linear layers, their quantization, LayerNorm -- runs on the real
        tokens only (rows packed), and only attention sees the padded (B, S) layout; the
        padding rows of the result are then 0 (they are masked out of everything that reads
        them).  The real tokens' values are the same either way (rows are independent outside
        attention, and padding gets exactly zero attention weight); only ``dynamic`` scales
        change, as they no longer see the padding tokens."""
        c = self.config
        b, s = ids.shape
        tokens = np.flatnonzero(mask.reshape(-1) > 0) if self.skip_padding else None
        if tokens is not None and tokens.size == b * s:
            tokens = None                                        # nothing to skip
        m = b * s if tokens is None else tokens.size
        mp = row_bucket(m)
        x = np.zeros((mp, c.hidden), _F32)
        x[:m] = embed(self.w, ids) if tokens is None else embed(self.w, ids)[tokens]
        mb = mask_bias(mask)
        ctx = np.zeros((mp, c.hidden), _F32)
        for i, p in enumerate(self.layers):
            xq, sc, zp = self._q(x, m, (i, "qkv"))
            qkv = p["qkv"](xq, sc, zp)
            if tokens is None:
                ctx[:m] = attention(qkv[:m], mb, c.heads)
            else:                                                # to (B, S) and back
                full = np.zeros((b * s, qkv.shape[1]), _F32)
                full[tokens] = qkv[:m]
                ctx[:m] = attention(full, mb, c.heads)[tokens]
            xq, sc, zp = self._q(ctx, m, (i, "attn_out"))
            x = self._residual(p["attn_out"], xq, sc, zp, x)    # x + ctx Wo^T + bo
            x = layer_norm(x, *p["ln1"], c.eps)
            xq, sc, zp = self._q(x, m, (i, "ffn_in"))
            if self.gelu == "post_op" and self.dynamic:          # f32 GELU(x W1^T + b1), quantized
                fq, sc, zp = self._q(p["ffn_in"](xq, sc, zp), m, None)
            elif self.gelu == "post_op":                         # u8 GELU(x W1^T + b1) straight out
                fq = p["ffn_in"](xq, sc, zp, dst_q=self.static[i, "ffn_out"])
                sc, zp = self.static[i, "ffn_out"]
            else:                                                # u8 x W1^T + b1, GELU by table
                if self.dynamic:                                 # f32 out, this batch's range
                    pre, sc, zp = self._q(p["ffn_in"](xq, sc, zp), m, None)
                    lut, (sc, zp) = gelu_table((sc, zp))
                else:
                    pre = p["ffn_in"](xq, sc, zp, dst_q=self.static[i, "ffn_pre"])
                    lut = self.luts[i]
                    sc, zp = self.static[i, "ffn_out"]
                fq = apply_table(lut, pre)
            x = self._residual(p["ffn_out"], fq, sc, zp, x)     # x + f W2^T + b2
            x = layer_norm(x, *p["ln2"], c.eps)
        if tokens is None:
            return x[:m]
        out = np.zeros((b * s, c.hidden), _F32)
        out[tokens] = x[:m]
        return out

    def encode(self, ids, mask):
        """L2-normalised mean-pooled embeddings (B, hidden).  With ``split_sentences`` (the
        default) and static scales, a batch of at least 4 sentences per thread is split over
        the threads, each part encoded with single-threaded primitives
        (:class:`dnnq.demo._parallel.BatchSplit`); smaller batches split every step's rows
        instead.  Dynamic scales are never split: they come from the whole batch."""
        if self.split_sentences and not self.dynamic:
            return split_batch(self._encode, ids, mask)
        return self._encode(ids, mask)

    def _encode(self, ids, mask):
        return mean_pool_normalize(self.hidden_states(ids, mask), mask)
