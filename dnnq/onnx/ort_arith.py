"""Steps that compute what ONNX Runtime's int8 kernels compute, for ``rounding="every"``.

A session made with ``rounding="every"`` rounds at every ``QuantizeLinear`` of the model, as
ONNX Runtime does; where ONNX Runtime replaces a ``DequantizeLinear -> op -> QuantizeLinear``
group by an int8 kernel of its own, that kernel's arithmetic decides single roundings, and
single roundings spread through a deep model. The steps here follow those kernels' order of
operations (the convolutions' and matrix products' requantization is the layers' form, see
``fusion._requantize_as_qlinear``).
"""
from fractions import Fraction

import numpy as np

import dnnq
from dnnq.onnx import ops_numpy
from dnnq.onnx.quant import RANGE, dequantize_np, quantize_np
from dnnq.onnx.steps import Step, pool_geometry
from dnnq.primitives._kernels import _ort_arith

F32 = np.float32


def f32_fma(a, b, c):
    """fma(a, b, c) of f32 values rounded once to f32 (half to even), as the FMA
    instructions compute it: the exact value as a fraction, then the nearest f32."""
    exact = Fraction(float(F32(a))) * Fraction(float(F32(b))) + Fraction(float(F32(c)))
    near = F32(float(exact))  # within one f32 step of the exact value
    best = None
    for v in (np.nextafter(near, F32(-np.inf)), near, np.nextafter(near, F32(np.inf))):
        d = abs(Fraction(float(v)) - exact)
        if best is None or d < best[0] or (d == best[0] and
                                           int(v.view(np.uint32)) % 2 == 0):
            best = (d, v)
    return F32(best[1])


def f32_fma_small(a, b, c):
    """fma(a, b, c) rounded once to f32, elementwise, for integer ``a`` below 2^20 in
    magnitude and f32 ``b``, ``c`` (arrays broadcast): the product is exact in f64, the
    sum's f64 rounding error is found exactly (Knuth's two-sum) and only a sum that f64
    rounded onto the middle between two f32 values is decided by that error (f32_fma)."""
    a = np.asarray(a, np.float64)
    p = a * np.asarray(b, F32).astype(np.float64)
    c64 = np.asarray(c, F32).astype(np.float64)
    p, c64 = np.broadcast_arrays(p, c64)
    s = p + c64
    t = s - p
    err = (p - (s - t)) + (c64 - t)
    r = s.astype(F32)
    other = np.nextafter(r, np.where(s > r, F32(np.inf), F32(-np.inf)).astype(F32))
    tie = (err != 0) & ((r.astype(np.float64) + other.astype(np.float64)) * 0.5 == s)
    if tie.any():
        bf, cf = np.broadcast_to(np.asarray(b, F32), r.shape), np.broadcast_to(
            np.asarray(c, F32), r.shape)
        af = np.broadcast_to(a, r.shape)
        for i in zip(*np.nonzero(tie)):
            r[i] = f32_fma(af[i], bf[i], cf[i])
    return r


def _saturate(v, dt):
    lo, hi = RANGE[dt]
    return np.clip(np.rint(v.astype(np.float64)), lo, hi).astype(np.uint8 if dt == "u8"
                                                                  else np.int8)


def qlinear_add(a, a_q, b, b_q, c_q):
    """ONNX Runtime's QLinearAdd of 8-bit arrays ``a``, ``b`` (broadcast; ``a`` the operand
    of full size) with QParams a_q, b_q, c_q (per tensor): see qlinear_add_constants."""
    ra, rb, fixed = qlinear_add_constants(a_q.scale[0], a_q.zp[0], b_q.scale[0], b_q.zp[0],
                                          c_q.scale[0], c_q.zp[0])
    inner = f32_fma_small(np.asarray(b, np.int64), rb, fixed)
    return _saturate(f32_fma_small(np.asarray(a, np.int64), ra, inner), c_q.dt)


def qlinear_mul(a, a_q, b, b_q, c_q):
    """ONNX Runtime's QLinearMul of 8-bit arrays (broadcast): f32((a - a_zp)(b - b_zp)) times
    qlinear_mul_ratio, plus f32(c_zp), rounded half to even, saturated."""
    prod = ((np.asarray(a, np.int64) - int(a_q.zp[0])) *
            (np.asarray(b, np.int64) - int(b_q.zp[0]))).astype(F32)
    r = qlinear_mul_ratio(a_q.scale[0], b_q.scale[0], c_q.scale[0])
    return _saturate((prod * r) + F32(c_q.zp[0]), c_q.dt)


def qlinear_mul_ratio(a_scale, b_scale, c_scale):
    """ONNX Runtime's QLinearMul (MLAS) multiplies the exact product of the two operands'
    offsets ``(a - a_zp)(b - b_zp)``, converted to f32, by ``a_scale * b_scale / c_scale``
    (f32, in that order), adds ``f32(c_zp)`` (a separate rounding) and rounds half to even:
    the ratio."""
    return F32(F32(F32(a_scale) * F32(b_scale)) / F32(c_scale))


def qlinear_add_constants(a_scale, a_zp, b_scale, b_zp, c_scale, c_zp):
    """ONNX Runtime's QLinearAdd (MLAS's AVX2 kernel, on every x86-64 CPU with AVX2)
    computes ``fma(a, r_a, fma(b, r_b, fixed))`` from the raw 8-bit values, rounds half to
    even and saturates, with ``r_a = a_scale / c_scale``, ``r_b = b_scale / c_scale`` and
    ``fixed = c_zp - (r_a a_zp + r_b b_zp)`` where the compiler made the sum one FMA,
    ``fma(r_a, a_zp, r_b b_zp)`` (checked against ONNX Runtime 1.32: the other groupings
    differ from it on some scales).  ``a`` is the operand of full size: ONNX Runtime swaps
    the operands when the first one is the broadcast one.  Returns (r_a, r_b, fixed)."""
    ra = F32(F32(a_scale) / F32(c_scale))
    rb = F32(F32(b_scale) / F32(c_scale))
    fixed = F32(F32(c_zp) - f32_fma(ra, F32(a_zp), F32(rb * F32(b_zp))))
    return ra, rb, fixed


def qlinear_binary_group(p, g, n):
    """(QuantizeLinear node, its QParams, the two operands' QParams) where ONNX Runtime runs
    the Add / Mul ``n`` as QLinearAdd / QLinearMul: both operands per-tensor
    ``DequantizeLinear`` outputs (activations or constants) of one 8-bit type, the result
    read by one per-tensor ``QuantizeLinear`` of that type; else None.  ``p``: the planner
    (``node_qparams``), ``g``: the graph."""
    if n.op_type not in ("Add", "Mul") or len(n.input) != 2:
        return None
    cons = g.consumers.get(n.output[0], [])
    q = g.nodes[cons[0]] if len(cons) == 1 else None
    qq = None if q is None or q.op_type != "QuantizeLinear" else p.node_qparams(q)
    if qq is None or not qq.per_tensor or qq.dt not in ("u8", "s8"):
        return None
    qps = []
    for x in n.input:
        i = g.producer.get(x)
        d = None if i is None else g.nodes[i]
        qp = None if d is None or d.op_type != "DequantizeLinear" else p.node_qparams(d)
        if qp is None or not qp.per_tensor or qp.dt != qq.dt:
            return None
        qps.append(qp)
    return q, qq, qps


class AveragePoolStep(Step):
    """``DequantizeLinear -> AveragePool -> QuantizeLinear`` as ONNX Runtime's
    QLinearAveragePool: each value dequantized in f32 (``x_scale * (q - zero_point)``), the
    window's values added in f32 one by one in row-major window order, divided by the count
    (the window's size, or its part inside the input without ``count_include_pad``), then
    ``round_half_even(y / y_scale + y_zero_point)`` saturated -- the zero point added before
    the rounding, unlike QuantizeLinear's. 2-D maps in a compiled pass
    (``_kernels._ort_arith.qlinear_average_pool_2d``), others in numpy: the window offsets'
    shifted maps added in order (padding adds +0, which leaves an f32 sum as it is)."""

    primitive = "AveragePool (QLinearAveragePool)"
    fresh_output = True

    def __init__(self, nodes, src, dst, attrs, qin, qout):
        super().__init__(nodes, [src], [dst])
        self.attrs, self.qin, self.qout = attrs, qin, qout
        self.impl_info = "ONNX Runtime's QLinearAveragePool arithmetic"
        self._geo = {}

    def _geometry(self, shape):
        g = self._geo.get(shape)
        if g is None:
            k, s, d, pl, pr, out = pool_geometry(self.nodes[0], "AveragePool", self.attrs,
                                                 shape)
            # (pr < 0: the windows stop short of the input's end; nothing to pad there)
            pads = [(a, max(b, 0)) for a, b in zip(pl, pr)]
            ones = np.pad(np.ones(shape[2:], F32), pads)
            count = self._window_sum(ones[None, None], k, s, d, out)
            if self.attrs.get("count_include_pad", 0):
                count = np.full_like(count, F32(np.prod(k)))
            # (the compiled pass reads the counts as one C-contiguous 2-D map)
            g = self._geo[shape] = (k, s, d, pads, out, count,
                                    np.ascontiguousarray(count.reshape(count.shape[-2:]), F32)
                                    if len(shape) == 4 else None)
        return g

    @staticmethod
    def _window_sum(xp, k, s, d, out):
        acc = None
        for offs in np.ndindex(*k):
            view = xp[(Ellipsis,) + tuple(
                slice(o * dd, o * dd + (n - 1) * ss + 1, ss)
                for o, dd, n, ss in zip(offs, d, out, s))]
            acc = view.astype(F32) if acc is None else acc + view  # f32 adds, in order
        return acc

    def run(self, env):
        x = env[self.inputs[0]]
        k, s, d, pads, out, count, count_2d = self._geometry(x.shape)
        if x.ndim == 4:  # the compiled pass (any memory order of x)
            y = np.empty(x.shape[:2] + tuple(out), x.dtype)
            _ort_arith.qlinear_average_pool_2d(
                x.view(np.uint8), y.view(np.uint8), count_2d,
                k[0], k[1], s[0], s[1], d[0], d[1], pads[0][0], pads[1][0],
                F32(self.qin.scale[0]), int(self.qin.zp[0]), F32(self.qout.scale[0]),
                int(self.qout.zp[0]), self.qout.dt == "s8", dnnq.get_num_threads())
            env[self.outputs[0]] = y
            return
        deq = F32(self.qin.scale[0]) * (x.astype(np.int32) -
                                        np.int32(self.qin.zp[0])).astype(F32)
        if any(a or b for a, b in pads):  # (no copy for unpadded windows)
            deq = np.pad(deq, [(0, 0), (0, 0)] + pads)
        y = self._window_sum(deq, k, s, d, out) / count
        y = y / F32(self.qout.scale[0]) + F32(self.qout.zp[0])
        lo, hi = RANGE[self.qout.dt]
        q = np.clip(np.rint(y), lo, hi)
        env[self.outputs[0]] = q.astype(np.uint8 if self.qout.dt == "u8" else np.int8)


class SoftmaxStep(Step):
    """``DequantizeLinear -> Softmax -> QuantizeLinear`` on u8 as ONNX Runtime's
    QLinearSoftmax (MLAS's portable kernel, which ONNX Runtime 1.32 runs on every x86-64
    CPU: it registers none of its AVX2 / AVX-512 ones):

    * a 256-entry f32 table ``exp((i - 255 + shift) * x_scale)`` computed in double, with
      ``shift = max(0, logf(FLT_MAX / D) - 5) / x_scale`` (the logarithm in f32: the row's
      sum cannot overflow);
    * each value's entry at ``q + 255 - max(row)``;
    * the sum in f32, one value after the other;
    * each entry times ``floor(1 / y_scale) / sum`` (f32; the floor is ONNX Runtime's, and
      the division comes first: checked against ONNX Runtime 1.32, which gives that and not
      ``(entry * floor) / sum`` on rows where they differ), rounded half to even, plus the
      zero point as an integer, saturated at 255.

    The table comes from ``_kernels._ort_arith.qlinear_softmax_table`` (the C library's
    ``logf`` and ``exp``, as ONNX Runtime's), the rows run in ``qlinear_softmax_u8`` (one
    thread per row)."""

    primitive = "Softmax (QLinearSoftmax rows)"
    fresh_output = True

    def __init__(self, nodes, src, dst, axis, coerce, qin, qout):
        super().__init__(nodes, [src], [dst])
        self.axis, self.coerce, self.qin, self.qout = axis, coerce, qin, qout
        self.impl_info = "ONNX Runtime's QLinearSoftmax arithmetic"
        self._tables = {}
        one = F32(1)
        self._y_scale = F32(np.floor(one / F32(qout.scale[0])))

    def _table(self, d):
        t = self._tables.get(d)
        if t is None:
            t = self._tables[d] = _ort_arith.qlinear_softmax_table(F32(self.qin.scale[0]), d)
        return t

    def run(self, env):
        x = env[self.inputs[0]]
        nd = max(x.ndim, 1)
        a = self.axis % nd
        if self.coerce:
            rows = x.reshape(int(np.prod(x.shape[:a], dtype=np.int64)), -1)
            back = None
        else:
            xm = np.moveaxis(x.reshape(x.shape or (1,)), a, -1)
            back = xm.shape
            rows = xm.reshape(-1, xm.shape[-1])
        rows = np.ascontiguousarray(rows)
        q = np.empty(rows.shape, np.uint8)
        _ort_arith.qlinear_softmax_u8(rows, q, self._table(rows.shape[1]), self._y_scale,
                                      int(self.qout.zp[0]), dnnq.get_num_threads())
        if back is None:
            q = q.reshape(x.shape)
        else:
            q = np.moveaxis(q.reshape(back), -1, a).reshape(x.shape)
        env[self.outputs[0]] = np.ascontiguousarray(q)


class ChannelTableStep(Step):
    """An op with per-channel constants between a ``DequantizeLinear`` and a
    ``QuantizeLinear`` of 8-bit maps (a BatchNormalization ONNX Runtime runs in f32 there) as
    one 256-entry table per channel: each table computed at creation by the op itself on the
    256 dequantized values and quantized as the ``QuantizeLinear`` does, so the same bytes as
    dequantize, op, quantize; a lookup per value (``_kernels._ort_arith.channel_lookup``)."""

    primitive = "lookup table (per channel)"
    fresh_output = True

    def __init__(self, nodes, src, dst, table, out_dtype, op):
        super().__init__(nodes, [src], [dst])
        self.table, self.out_dtype = table, out_dtype
        self.impl_info = f"graph:{op}, {table.shape[0]} channels"

    def run(self, env):
        x = env[self.inputs[0]]
        if x.ndim != 4 or x.shape[1] != self.table.shape[0]:
            c = np.arange(self.table.shape[0]).reshape((1, -1) + (1,) * max(x.ndim - 2, 0))
            y = self.table[c, x.view(np.uint8)]  # (other ranks: numpy's indexing)
        else:
            y = np.empty_like(x, dtype=np.uint8)
            _ort_arith.channel_lookup(x.view(np.uint8), y, self.table, dnnq.get_num_threads())
        env[self.outputs[0]] = y.view(self.out_dtype)


def channel_table(op, attrs, opset, consts, qin, qout, channels):
    """(channels, 256) bytes: ``op`` (ONNX semantics, ops_numpy) on each channel's 256
    dequantized values, indexed by the source byte, quantized by qout (ONNX's formula)."""
    byte = np.arange(256)
    vals = byte.astype(np.uint8).view(np.int8) if qin.dt == "s8" else byte.astype(np.uint8)
    deq = dequantize_np(vals, qin.scale[0], qin.zp[0]).astype(F32)
    x = np.ascontiguousarray(np.broadcast_to(deq, (1, channels, 256)))
    y = ops_numpy.run_op(op, [x] + list(consts), attrs, opset)[0]
    q = quantize_np(y, qout.scale[0], np.asarray(qout.zp[0]).astype(
        np.uint8 if qout.dt == "u8" else np.int8))
    return np.ascontiguousarray(q.reshape(channels, 256).view(np.uint8))
