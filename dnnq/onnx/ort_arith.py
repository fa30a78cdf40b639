"""Steps that compute what ONNX Runtime's int8 kernels compute, for ``rounding="every"``.

A session made with ``rounding="every"`` rounds at every ``QuantizeLinear`` of the model, as
ONNX Runtime does; where ONNX Runtime replaces a ``DequantizeLinear -> op -> QuantizeLinear``
group by an int8 kernel of its own, that kernel's arithmetic decides single roundings, and
single roundings spread through a deep model. The steps here follow those kernels' order of
operations (the convolutions' and matrix products' requantization is the layers' form, see
``fusion._requantize_as_qlinear``).
"""
import numpy as np

import dnnq
from dnnq.onnx.quant import RANGE
from dnnq.onnx.steps import Step, pool_geometry
from dnnq.primitives._kernels import _ort_arith

F32 = np.float32


class AveragePoolStep(Step):
    """``DequantizeLinear -> AveragePool -> QuantizeLinear`` as ONNX Runtime's
    QLinearAveragePool: each value dequantized in f32 (``x_scale * (q - zero_point)``), the
    window's values added in f32 one by one in row-major window order, divided by the count
    (the window's size, or its part inside the input without ``count_include_pad``), then
    ``round_half_even(y / y_scale + y_zero_point)`` saturated -- the zero point added before
    the rounding, unlike QuantizeLinear's. In numpy: the window offsets' shifted maps added
    in order (padding adds +0, which leaves an f32 sum as it is)."""

    primitive = "numpy:AveragePool"
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
            g = self._geo[shape] = (k, s, d, pads, out, count)
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
        k, s, d, pads, out, count = self._geometry(x.shape)
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
    QLinearSoftmax (MLAS's AVX2 kernel, which it runs on AVX2 and AVX-512 hosts alike):

    * a 256-entry f32 table ``exp((i - 255 + shift) * x_scale)`` computed in double, with
      ``shift = max(0, log(FLT_MAX / D) - 5) / x_scale`` (the row's sum cannot overflow);
    * each value's entry at ``q + 255 - max(row)``;
    * the sum in f32: blocks of 16 values go to 8 lanes (lane ``j`` takes values ``j`` and
      ``8 + j`` of each block, in order), the ``D mod 16`` values left are summed on their
      own from 0, then the 8 lanes are added to that, lane 0 first;
    * ``scale = (1 / sum) * floor(1 / y_scale)`` (f32; the floor is ONNX Runtime's), each
      entry times ``scale``, plus the zero point (two roundings), rounded half to even,
      saturated.

    The rows run in ``_kernels._ort_arith.qlinear_softmax_u8`` (one thread per row)."""

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
            xs = float(F32(self.qin.scale[0]))
            shift = max(0.0, float(np.log(np.float64(F32(np.finfo(F32).max) / F32(d)))) - 5.0) \
                / xs
            i = np.arange(256, dtype=np.float64)
            t = self._tables[d] = np.exp((i - 255 + shift) * xs).astype(F32)
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
                                      F32(self.qout.zp[0]), dnnq.get_num_threads())
        if back is None:
            q = q.reshape(x.shape)
        else:
            q = np.moveaxis(q.reshape(back), -1, a).reshape(x.shape)
        env[self.outputs[0]] = np.ascontiguousarray(q)
