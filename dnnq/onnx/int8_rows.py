"""Softmax and layer normalization that read a quantized activation: one pass over the int8
rows (ukernels/tk_rows8.h) in place of "dequantize to f32, the f32 op, quantize".

Both are exact where they can be and host-independent everywhere: the softmax's exponentials
come from a 256-entry table (``exp(f32(d) * scale)`` for the integer ``d = q - max(row)``,
correctly rounded by :func:`dnnq.eltwise_math.eltwise_table`) summed in a fixed order; the
layer normalization's mean and variance are integer sums of the quantized values. The output
is int8 when one QuantizeLinear reads the op (its scale and zero point), f32 otherwise.
"""
import numpy as np

import dnnq
from dnnq.eltwise_math import eltwise_table
from dnnq.errors import InvalidArguments
from dnnq.onnx import ops_numpy, ort_arith
from dnnq.onnx.buffers import copies_then
from dnnq.onnx.move_steps import physical
from dnnq.onnx.quant import quantize_np
from dnnq.onnx.steps import BinaryStep, Step, toolkit_isa
from dnnq.primitives._kernels import _codes, _toolkit

F32 = np.float32
_NP = {"u8": np.uint8, "s8": np.int8}


def _staged_call(call, stage):
    """``call``, after the staging copy ``stage`` ((array, source view) or None)."""
    return call if stage is None else copies_then((stage,), call)


def _threads(n):
    """Rows split over threads only when there is enough work to pay the wake-up."""
    return dnnq.get_num_threads() if n >= 1 << 16 else 1


class _Int8RowsStep(Step):
    """Shared: rows of the int8 source along the trailing ``len`` elements, the destination
    data type and quantization."""

    fresh_output = True

    def __init__(self, nodes, src, dst, qs, qd):
        super().__init__(nodes, [src], [dst])
        self.qs, self.qd = qs, qd
        self.src_dt = _codes.DT["f32" if qs is None else qs.dt]
        if qd is None:
            self.dst_dt, self.out_dtype, self.inv, self.zp = _codes.DT["f32"], F32, 1.0, 0
        else:
            self.dst_dt, self.out_dtype = _codes.DT[qd.dt], _NP[qd.dt]
            self.inv = float(F32(1) / F32(qd.scale[0]))
            self.zp = int(qd.zp[0])
        self._isa, self._vbmi = toolkit_isa()

    @staticmethod
    def _rows(x, lead):
        """x as (rows, len) with dense rows, len = the product of x's dims from ``lead``."""
        rows = int(np.prod(x.shape[:lead], dtype=np.int64))
        x2 = x.reshape(rows, -1) if x.size else x.reshape(rows, int(np.prod(x.shape[lead:])))
        if x2.shape[1] > 1 and x2.strides[1] != x2.itemsize:
            x2 = np.ascontiguousarray(x2)
        return x2

    def _staged_rows(self, env, x, lead):
        """(``_rows(x, lead)``, None), or where those rows are a copy of ``x`` (a transposed
        source) the staged copy (KeptOutput.staged_copy) and its (array, view) pair."""
        rows = int(np.prod(x.shape[:lead], dtype=np.int64))
        shape = (rows, int(np.prod(x.shape[lead:], dtype=np.int64)))
        return self.staged_copy(env, (x.shape, x.strides, lead), x, shape,
                                lambda: self._rows(x, lead))


class QuantizedSoftmaxStep(_Int8RowsStep):
    """Softmax over one axis of an int8 activation (opset 13; ``coerce``: opsets 1 - 12, the
    dims from ``axis`` on as one row)."""

    primitive = "Softmax (int8 rows)"

    def __init__(self, nodes, src, dst, axis, qs, qd, coerce=False):
        super().__init__(nodes, src, dst, qs, qd)
        self.axis, self.coerce = axis, coerce
        d = np.arange(-255, 1, dtype=np.int32).astype(F32)
        self.exp_table = np.ascontiguousarray(
            eltwise_table("exp", d * F32(qs.scale[0])), dtype=F32)
        self.impl_info = "table exp, fixed-order sum" + ("" if qd is None else ", requantize")

    def run(self, env):
        if self._repeated(env):
            return
        x = env[self.inputs[0]]
        shape0 = x.shape
        if x.ndim == 0:
            x = x.reshape(1)
        nd = x.ndim
        if not -nd <= self.axis < nd:
            raise InvalidArguments(f"node {self.nodes[0]!r}: Softmax axis {self.axis} for an "
                                   f"input of rank {nd}; expected an axis in [{-nd}, {nd - 1}]")
        a = self.axis % nd
        if self.coerce:
            xm, back = x, None
        else:
            xm = np.moveaxis(x, a, -1) if a != nd - 1 else x
            back = a if a != nd - 1 else None
        x2, stage = self._staged_rows(env, xm, a if self.coerce else xm.ndim - 1)
        y, kept = self.out_array(env, xm.shape, self.out_dtype)
        softmax, n = _toolkit.qsoftmax_run, x.size
        args = (self._isa, self._vbmi, x2.view(np.uint8), y.reshape(x2.shape), self.src_dt,
                self.dst_dt, self.exp_table, self.inv, self.zp)

        def call():
            softmax(*args, _threads(n))
        call()
        y = y if back is None else np.moveaxis(y, -1, back)
        env[self.outputs[0]] = y.reshape(shape0) if not shape0 else y
        self._remember(env, _staged_call(call, stage), kept,
                       ((args[2] if stage is None else stage[1], x), (args[3], y)))


class QuantizedLayerNormStep(_Int8RowsStep):
    """Layer normalization over the trailing ``k`` dims of an int8 activation, with
    constant scale (gamma) and shift (beta)."""

    primitive = "LayerNormalization (int8 rows)"

    def __init__(self, nodes, src, dst, k, eps, gamma, beta, qs, qd):
        super().__init__(nodes, src, dst, qs, qd)
        self.k, self.eps = k, float(eps)
        self.gamma = None if gamma is None else np.asarray(gamma, F32)
        self.beta = None if beta is None else np.asarray(beta, F32)
        self._affine = {}
        self.impl_info = "integer moments" + ("" if qd is None else ", requantize")

    def _source(self, x2):
        """The kernel's source rows (bytes) with their scale and zero point."""
        return x2.view(np.uint8), float(self.qs.scale[0]), int(self.qs.zp[0])

    def _gamma_beta(self, trailing):
        """gamma / beta broadcast to the trailing dims, flattened (once per shape)."""
        got = self._affine.get(trailing)
        if got is None:
            n = int(np.prod(trailing))
            try:
                got = tuple(np.full(n, fill, F32) if v is None else
                            np.ascontiguousarray(np.broadcast_to(v, trailing), F32).reshape(-1)
                            for v, fill in ((self.gamma, 1.0), (self.beta, 0.0)))
            except ValueError:
                raise InvalidArguments(
                    f"node {self.nodes[0]!r}: layer normalization scale / shift of shapes "
                    f"{None if self.gamma is None else self.gamma.shape} / "
                    f"{None if self.beta is None else self.beta.shape} for normalized dims "
                    f"{trailing}; expected shapes that broadcast to them") from None
            self._affine[trailing] = got
        return got

    def run(self, env):
        if self._repeated(env):
            return
        x = env[self.inputs[0]]
        if not 1 <= self.k <= x.ndim:
            raise InvalidArguments(f"node {self.nodes[0]!r}: layer normalization over the last "
                                   f"{self.k} dims of an input of rank {x.ndim}; expected 1 to "
                                   f"{x.ndim} dims")
        lead = x.ndim - self.k
        g, b = self._gamma_beta(tuple(x.shape[lead:]))
        x2, stage = self._staged_rows(env, x, lead)
        y, kept = self.out_array(env, x.shape, self.out_dtype)
        norm, n = _toolkit.qlayernorm_run, x.size
        src, scale, zp = self._source(x2)
        args = (self._isa, src, y.reshape(x2.shape), self.src_dt, self.dst_dt, scale, zp, g, b,
                self.eps, self.inv, self.zp)

        def call():
            norm(*args, _threads(n))
        call()
        env[self.outputs[0]] = y
        self._remember(env, _staged_call(call, stage), kept,
                       ((args[1] if stage is None else stage[1], x), (args[2], y)))


class F32LayerNormStep(QuantizedLayerNormStep):
    """Layer normalization over the trailing ``k`` dims of an f32 tensor in one pass per row
    (tk_rows8.h, ``tk_layernorm_f32_row``): mean and variance in double, summed in one fixed
    order, so the result depends on the values alone -- not on the memory order they come
    in (numpy's reductions sum a contiguous axis pairwise and a strided one in sequence),
    the ISA level or the thread count.  f32 output, or int8 where one QuantizeLinear alone
    reads it (its scale and zero point).  Another dtype runs numpy's formula."""

    primitive = "LayerNormalization (f32 rows)"

    def __init__(self, nodes, src, dst, k, eps, gamma, beta, qd=None):
        super().__init__(nodes, src, dst, k, eps, gamma, beta, None, qd)
        self.impl_info = "double moments" + ("" if qd is None else ", quantize")

    @staticmethod
    def _source(x2):
        return x2, 1.0, 0  # f32 rows: no scale, no zero point

    def run(self, env):
        x = env[self.inputs[0]]
        if isinstance(x, np.ndarray) and x.dtype == F32:
            super().run(env)
            return
        self._repeat = None
        ins = [x, np.float32(1) if self.gamma is None else self.gamma]
        ins += [] if self.beta is None else [self.beta]
        y = ops_numpy.run_op("LayerNormalization", ins, {"axis": -self.k,
                                                         "epsilon": self.eps}, 17)[0]
        if self.qd is not None:
            y = quantize_np(y, self.qd.scale, np.asarray(self.qd.zp).astype(_NP[self.qd.dt]))
        env[self.outputs[0]] = y


def _dense_order(x):
    """x's memory as a C-contiguous array and the permutation back to x (None: x is
    C-contiguous), or (None, None) when its memory is not a transpose of dense memory."""
    if x.flags.c_contiguous:
        return x, None
    v, inv = physical(x)
    return (v, inv) if inv is not None else (None, None)


class Int8BinaryStep(BinaryStep):
    """Add / Sub / Mul of two int8 activations into an int8 one in a single pass
    (tk_rows8.h: the dequantized values' sum or product, rounded once): same-shape sources
    in the same memory order, or a channels-last source times a per-channel gate (1, C, 1,
    ...; ``x * (1 + s)`` too). Other shapes and layouts run dnnq.Binary (BinaryStep)."""

    def __init__(self, *a, ort_form=False, qconst=None, **k):
        """ort_form: compute ONNX Runtime's QLinearAdd / QLinearMul (ort_arith) where ONNX
        Runtime runs them (Add / Mul, the three tensors of one 8-bit type), for a session
        rounding at every QuantizeLinear; qconst: (8-bit values, QParams) of a quantized
        constant second operand (with ort_form; ``const1`` its f32 values)."""
        super().__init__(*a, **k)
        self._isa = toolkit_isa()[0]
        self._layouts = {}  # (shapes, strides) -> how to run them, or None: dnnq.Binary
        q0, qd = self.q0, self.qd
        q1 = self.one_plus if self.one_plus is not None else \
            qconst[1] if qconst is not None else self.q1
        self._qconst = None  # the constant's columns (f32, its shape) with qconst
        inv = F32(1) / F32(qd.scale[0])
        s0, s1 = F32(q0.scale[0]), F32(q1.scale[0])
        self._dts = (_codes.DT[q0.dt], _codes.DT[q1.dt], _codes.DT[qd.dt])
        self._zps = (int(q0.zp[0]), int(q1.zp[0]), int(qd.zp[0]))
        self._op = {"mul": _toolkit.Q8_MUL}.get(self.alg, _toolkit.Q8_ADD)
        self._c = 0.0  # the f32 the kernel adds last
        if self.alg == "mul":
            self._a = (float(s0 * s1 * inv), 0.0)
        else:
            self._a = (float(s0 * inv), float((s1 if self.alg == "add" else -s1) * inv))
        self._gate = (float(s1), self.one_plus is not None, float(s0 * inv), 1.0)
        # Mul(gate, x): the gate first (its scale and zero point those of source 0)
        self._gate_first = (float(s0), False, float(s1 * inv), 1.0)
        self.ort_form = ort_form and self.one_plus is None and self.alg in ("add", "mul") \
            and q0.dt == q1.dt == qd.dt
        if self.ort_form:
            z0, z1, zd = self._zps
            if self.alg == "mul":  # y = f32((q0 - z0)(q1 - z1)) r + f32(zd)
                r = ort_arith.qlinear_mul_ratio(s0, s1, qd.scale[0])
                self._a, self._c, self._zps = (float(r), 0.0), float(zd), (z0, z1, 0)
                self._gate = self._gate_first = (1.0, False, 1.0, float(r))
            else:  # y = fma(q0, r0, fma(q1, r1, fixed))
                r0, r1, fixed = ort_arith.qlinear_add_constants(s0, z0, s1, z1,
                                                                qd.scale[0], zd)
                self._op, self._a, self._c = _toolkit.Q8_ADD_FMA, (float(r0), float(r1)), \
                    float(fixed)
                self._zps = (0, 0, 0)
            if qconst is not None:
                b = np.asarray(qconst[0]).astype(np.int64)
                if self.alg == "mul":  # the constant's offsets, exact in f32
                    self._op, cols = _toolkit.Q8_MUL_COLS, (b - z1).astype(F32)
                else:  # the inner FMA, fma(b, r1, fixed), once per constant value
                    self._op, cols = _toolkit.Q8_ADD_FMA_COLS, \
                        ort_arith.f32_fma_small(b, r1, fixed)
                self._qconst = cols
        elif qconst is not None:
            raise ValueError("Int8BinaryStep: a quantized constant needs ort_form")
        self.out_dtype = _NP[qd.dt]
        self.impl_info = "int8 one pass" + (" (ONNX Runtime's QLinear%s)" % self.alg.title()
                                            if self.ort_form else "")

    def run(self, env):
        if self._qconst is not None:
            self._run_const(env)
            return
        x0 = env[self.inputs[0]]
        x1 = env[self.inputs[1]]
        if self._repeated(env):  # (a gate's multipliers are recomputed in the call)
            return
        key = (x0.shape, x0.strides, x1.shape, x1.strides)
        lay = self._layouts.get(key, 0)
        if lay == 0:
            lay = self._layouts[key] = self._layout(x0, x1)
        if lay is None:
            super().run(env)
            self.impl_info = "dnnq.Binary: " + str(self.impl_info)
            return
        c = self._c
        order, inv, rows, rep, swap = lay
        if swap:
            x0, x1 = x1, x0
        v0 = x0 if order is None else x0.transpose(order)
        n = v0.size
        y, kept = self.out_array(env, v0.shape, self.out_dtype)
        d0, d1, dd = self._dts
        z0, z1, zd = self._zps
        if swap:
            d0, d1, z0, z1 = d1, d0, z1, z0
        binary, gate_cols = _toolkit.q8_binary_run, _toolkit.q8_gate_cols
        if rep == 0:  # same shapes
            v1 = x1 if order is None else x1.transpose(order)
            a = (self._isa, self._op, v0.reshape(rows, -1), v1.reshape(rows, -1),
                 y.reshape(rows, -1), d0, d1, dd, z0, z1, zd, *self._a, None)

            def call():
                binary(*a, _threads(n), c)
        else:
            scale, one_plus, m, a0 = self._gate_first if swap else self._gate
            g = np.ascontiguousarray(x1).reshape(-1).view(np.uint8)
            a = (self._isa, _toolkit.Q8_MUL_COLS, v0.reshape(rows, -1), None,
                 y.reshape(rows, -1), d0, d0, dd, z0, 0, zd, a0, 0.0)

            def call():
                binary(*a, gate_cols(g, d1, scale, z1, one_plus, m, rep), _threads(n), c)
        call()
        env[self.outputs[0]] = self.transposed(y, inv, kept)
        self._remember(env, call, kept, ((a[2], x0), (a[4], y)) +
                       (((g, x1),) if rep else ((a[3], x1),)))

    def _run_const(self, env):
        """x op constant: the constant's columns along x's memory order, rows of them."""
        x0 = env[self.inputs[0]]
        if self._repeated(env):
            return
        key = (x0.shape, x0.strides)
        lay = self._layouts.get(key, 0)
        if lay == 0:
            lay = self._layouts[key] = self._const_layout(x0)
        if lay is None:
            super().run(env)
            self.impl_info = "dnnq.Binary: " + str(self.impl_info)
            return
        order, inv, rows, cols = lay
        v0 = x0 if order is None else x0.transpose(order)
        y, kept = self.out_array(env, v0.shape, self.out_dtype)
        d0, _, dd = self._dts
        a = (self._isa, self._op, v0.reshape(rows, -1), None, y.reshape(rows, -1), d0, d0, dd,
             self._zps[0], 0, self._zps[2], self._a[0], 0.0, cols)
        n = v0.size

        def call():
            _toolkit.q8_binary_run(*a, _threads(n), self._c)
        call()
        env[self.outputs[0]] = self.transposed(y, inv, kept)
        self._remember(env, call, kept, ((a[2], x0), (a[4], y)))

    def _const_layout(self, x0):
        """(memory order of x0 or None, its inverse, rows, columns) where the constant,
        broadcast to x0 and laid out in x0's memory order, is the same row of columns
        repeated; None where x0's memory is not dense or the constant grows it."""
        c = self._qconst
        try:
            if np.broadcast_shapes(x0.shape, c.shape) != x0.shape:
                return None
        except ValueError:
            return None
        v0, inv = _dense_order(x0)
        if v0 is None or v0.size == 0:
            return None
        order = None if inv is None else tuple(int(i) for i in np.argsort(inv))
        full = np.broadcast_to(c.reshape((1,) * (x0.ndim - c.ndim) + c.shape), x0.shape)
        if order is not None:
            full = full.transpose(order)
        varies = [d for d in range(full.ndim) if full.strides[d] != 0 and full.shape[d] > 1]
        k = varies[0] if varies else full.ndim  # the leading dims repeat the same row
        row = np.ascontiguousarray(full[(0,) * k]).reshape(-1)
        length = row.size
        if length < 16 and v0.size % 16 == 0 and (16 % length == 0 or length == 1):
            row = np.tile(row, 16 // length)  # whole vectors per row
        return order, inv, v0.size // row.size, row.astype(F32)

    def _layout(self, x0, x1):
        """(memory order of the large source or None, its inverse, rows, rep, swapped) for
        the one-pass kernel: rep 0 for same-shape sources, else the gate's repeat per row
        (channels-last rows of rep pixels), swapped when the gate comes first (Mul(gate,
        x)); None where dnnq.Binary runs instead."""
        if self.alg == "mul" and self.one_plus is None and x0.ndim >= 2 and \
                x1.ndim == x0.ndim and x0.size < x1.size:
            got = self._layout(x1, x0)
            return None if got is None else got[:4] + (True,)
        v0, inv = _dense_order(x0)
        if v0 is None or v0.size == 0:
            return None
        order = None if inv is None else tuple(int(i) for i in np.argsort(inv))
        if x1.shape == x0.shape and self.one_plus is None:
            v1, _ = _dense_order(x1)
            if x0.strides != x1.strides or v1 is None:  # (equal: the same memory order)
                return None
            k = 0  # rows: the leading dims of the memory order, up to 64 Ki elements a row
            while k < v0.ndim and v0.size // max(1, int(np.prod(v0.shape[:k]))) > 65536:
                k += 1
            return order, inv, int(np.prod(v0.shape[:k])), 0, False
        C = x0.shape[1] if x0.ndim >= 2 else 0
        if self.alg != "mul" or x0.ndim < 2 or x1.size != C or x1.shape not in (
                (1, C) + (1,) * (x0.ndim - 2), (C,) + (1,) * (x0.ndim - 2)):
            return None
        if x0.ndim > 2 and (inv is None or inv[1] != x0.ndim - 1):
            return None  # the channel dim is not innermost in memory
        pixels = v0.size // C
        rep = 16 // int(np.gcd(C, 16))  # whole vectors per row where the pixels allow
        if pixels % rep:
            rep = 1
        return order, inv, pixels // rep, rep, False
