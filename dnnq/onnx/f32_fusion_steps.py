"""f32 patterns between a model's layers that run as one dnnq primitive each, with the bits of
the numpy steps they replace (planner's f32 patterns; docs/onnx.md): a QuantizeLinear after
an Add / Mul or a Concat, ``x + x * s`` (and the QuantizeLinear of it plus another map), and
the f32 unary activations."""
from functools import partial

import numpy as np

import dnnq
from dnnq import args as A
from dnnq.primitives import _impls, _pointwise as pw
from dnnq.primitives._kernels import _codes, _toolkit
from dnnq.memory import MemoryDesc
from dnnq.onnx import ops_numpy
from dnnq.onnx.buffers import BufferPool
from dnnq.onnx.steps import (BinaryStep, EltwiseStep, PrimStep, ReorderStep, Step,
                             _is_channels_last, layout_tag)

F32 = np.float32


class FusedBinaryStep(BinaryStep):
    """``QuantizeLinear(op(a, b))`` for op Add / Mul, each operand f32 or the dequantized
    form of an int8 tensor (read as int8 with its scale and zero point), as one dnnq.Binary
    pass writing the quantized result (planner: _emit_f32_binary_quantized).  The shapes are
    known at the first run only: where dnnq.Binary cannot take them (neither operand of the
    full shape, an operand not f32), the steps it replaces run instead -- a dequantizing
    Reorder per int8 operand, the op in numpy, the quantizing Reorder -- with their bits."""

    def __init__(self, nodes, alg, op, src0, src1, dst, q0, q1, qd):
        super().__init__(nodes, alg, src0, src1, dst, q0, q1, qd)
        self.op = op
        self._apart = None  # the replaced steps, made on the first misfit

    def _fits(self, x0, x1):
        for x, q in ((x0, self.q0), (x1, self.q1)):
            if not isinstance(x, np.ndarray) or x.ndim == 0 or \
                    (q is None and x.dtype != np.float32):
                return False
        try:
            out = np.broadcast_shapes(x0.shape, x1.shape)
        except ValueError:
            return False
        return out in (x0.shape, x1.shape)

    def run(self, env):
        if self._fits(env[self.inputs[0]], env[self.inputs[1]]):
            super().run(env)
            return
        self._repeat = None
        if self._apart is None:
            names = [f"{self.outputs[0]}::{k}" for k in ("a", "b", "sum")]
            deq = [ReorderStep([f"{n} (dequantize)"], x, n, q, None)
                   for x, n, q in zip(self.inputs, names, (self.q0, self.q1)) if q is not None]
            self._apart = (names, deq, ReorderStep([f"{self.outputs[0]} (quantize)"], names[2],
                                                   self.outputs[0], None, self.qd))
        names, deq, quant = self._apart
        for st in deq:
            st.run(env)
        xs = [env[n] if q is not None else env[x]
              for x, n, q in zip(self.inputs, names, (self.q0, self.q1))]
        env[names[2]] = ops_numpy.run_op(self.op, xs, {}, 13)[0]
        quant.run(env)
        for n in names:
            env.pop(n, None)


class F32ConcatQuantizeStep(Step):
    """``QuantizeLinear(Concat(x_0, x_1, ...))`` along the channels of f32 4-D maps, each
    input maybe a nearest Resize by whole factors along H / W that nothing else reads
    (take_resize: PP-OCRv4 det's neck in a conv-only QDQ file concatenates three upsampled
    maps and one): each input quantized at its own size by the quantizing Reorder the
    QuantizeLinear ran, then copied (repeated) into its channel slice of the channels-last
    int8 result -- the same bytes (nearest resizing and concatenating move values,
    quantizing is per value), one pass over the large output instead of a resize, a
    concatenation and a quantization of it.  Other shapes or dtypes run the replaced steps
    (numpy's resize and concatenation, the quantizing Reorder)."""

    primitive = "Concat"
    fresh_output = True

    def __init__(self, nodes, inputs, output, qd):
        super().__init__(nodes, inputs, [output])
        self.qd = qd
        self.n_data = len(inputs)
        self._resized = {}  # input i -> the nearest Resize step it stands for
        self._quant = {}    # tag -> ReorderStep quantizing input i into a channels-last temp
        self._residual = {}  # input i -> (F32ScaleResidualStep, its quantizer, gate's name)
        self._temps = {}    # (input i, shape) -> the channels-last int8 array it is quantized to
        self._apart = None

    def take_scale_residual(self, i, step):
        """Input i is ``x + x * s``, the output of ``step`` (an F32ScaleResidualStep nothing
        else reads): quantize it from x and s in one pass (ScaleResidualQuantizer) instead
        of reading the f32 map ``step`` writes.  Returns True (taken)."""
        x, s = step.inputs
        self._residual[i] = (step, ScaleResidualQuantizer(None, self.qd), s)
        self.nodes = self.nodes + step.nodes
        self.inputs = list(self.inputs)
        self.inputs[i] = x
        if s not in self.inputs:
            self.inputs.append(s)
        return True

    @property
    def impl_info(self):
        return ("resize into, " if self._resized else "") + \
            ("x + x * s, " if self._residual else "") + "quantize, copy"

    def take_resize(self, i, step):
        """Input i is the output of ``step``, a nearest Resize nothing else reads: quantize
        its (smaller) input and repeat it into the output instead."""
        self._resized[i] = step
        self.nodes = self.nodes + step.nodes
        self.inputs = list(self.inputs)
        self.inputs[i] = step.inputs[0]
        self.inputs += [x for x in step.inputs[1:] if x and x not in self.inputs]

    def _reps(self, env, i, x):
        st = self._resized.get(i)
        if st is None:
            return (1, 1, 1, 1), x.shape
        # (a residual's x + x * s is not computed: x has its shape)
        sizes, reps = st.nearest_geometry(env, x if i in self._residual else None)
        return reps, None if reps is None else tuple(sizes)

    def _residual_inputs(self, env, xs, force=False):
        """xs with each taken ``x + x * s`` computed by its step (the replaced path), or None
        when every one of them fits its quantizer (and not ``force``)."""
        if not force and all(r[1].fits(xs[i], env[r[2]]) for i, r in self._residual.items()):
            return None
        xs = list(xs)
        for i, (step, _, _) in self._residual.items():
            step.run(env)
            xs[i] = env.pop(step.outputs[0])
        return xs

    def run(self, env):
        if self._repeated(env):
            return
        xs = [env[n] for n in self.inputs[:self.n_data]]
        if self._residual:
            apart = self._residual_inputs(env, xs)
            if apart is not None:
                self._repeat = None
                self._run_apart(env, apart)
                return
        geo = [self._reps(env, i, x) if isinstance(x, np.ndarray) else (None, None)
               for i, x in enumerate(xs)]
        ok = all(isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 4 and
                 r is not None and r[0] == 1 and r[1] == 1 for x, (r, _) in zip(xs, geo))
        if ok:
            n, _, h, w = geo[0][1]
            ok = all(sh[0] == n and sh[2:] == (h, w) for _, sh in geo)
        if not ok:
            self._repeat = None
            self._run_apart(env, self._residual_inputs(env, xs, True) if self._residual else xs)
            return
        dtype = np.uint8 if self.qd.dt == "u8" else np.int8
        shape = (n, h, w, sum(sh[1] for _, sh in geo))
        y, kept = self.out_array(env, shape, dtype)
        yb, copy, off, parts = y.view(np.uint8), _toolkit.repeat_pixels_into, 0, []
        for i, (x, (reps, sh)) in enumerate(zip(xs, geo)):
            if i in self._residual:
                _, fuse, s_name = self._residual[i]
                tmp = self._temps.get((i, x.shape))
                if tmp is None:
                    n_, c_, h_, w_ = x.shape
                    tmp = self._temps[(i, x.shape)] = np.empty((n_, h_, w_, c_), dtype)
                q, s = tmp.transpose(0, 3, 1, 2), env[s_name]
                fuse.run(x, s, None, q)
                qb = tmp.view(np.uint8)
                copy(qb, yb, reps[2], reps[3], off, dnnq.get_num_threads())
                parts.append(((None, partial(fuse.run, x, s, None, q)), qb, qb, reps[2],
                              reps[3], off))
                off += sh[1]
                continue
            st = self._quant.get(i)
            if st is None:
                tmp = f"{self.outputs[0]}::q{i}"
                st = self._quant[i] = ReorderStep([tmp], self.inputs[i], tmp, None, self.qd)
                st.channels_last_out = True
                # the quantized input into an array of its own, the same every run, so that
                # the step's call can be repeated (the reorder's, then the copy)
                st.keeps_output = st.outputs_private = True
                st.pool, st.pool_slot = BufferPool(1), 0
            st.memo_ok = self.memo_ok
            st.run(env)
            q = env.pop(st.outputs[0]).transpose(0, 2, 3, 1)
            qb = np.ascontiguousarray(q).view(np.uint8)
            copy(qb, yb, reps[2], reps[3], off, dnnq.get_num_threads())
            parts.append((st._repeat, qb, q, reps[2], reps[3], off))
            off += sh[1]
        env[self.outputs[0]] = self.transposed(y, (0, 3, 1, 2), kept)
        if all(p[0] is not None for p in parts):
            calls = [(p[0][1], p[1], p[3], p[4], p[5]) for p in parts]

            def call():
                nt = dnnq.get_num_threads()
                for quantize, qb, rh, rw, at in calls:
                    quantize()
                    copy(qb, yb, rh, rw, at, nt)
        else:
            call = None
        self._remember(env, call, kept, [(p[1], p[2]) for p in parts])

    def _run_apart(self, env, xs):
        """The replaced steps: the resizes and the concatenation in numpy, the quantizing
        Reorder."""
        full = []
        for i, x in enumerate(xs):
            st = self._resized.get(i)
            if st is not None:
                params = [x] + [None if not p else env[p] for p in st.inputs[1:]]
                x = ops_numpy.run_op(st.op, params, st.attrs, st.opset)[0]
            full.append(x)
        tmp = f"{self.outputs[0]}::f32"
        env[tmp] = ops_numpy.run_op("Concat", full, {"axis": 1}, 13)[0]
        if self._apart is None:
            self._apart = ReorderStep([tmp], tmp, self.outputs[0], None, self.qd)
        self._apart.run(env)
        env.pop(tmp, None)


class F32EltwiseStep(EltwiseStep):
    """An f32 unary op that dnnq.Eltwise computes (Sigmoid, Tanh, Exp, Log, Softplus, Mish:
    ops_numpy's _toolkit_eltwise runs the same primitive, so the same bits) as a step made
    once per shape, into its kept array, instead of a primitive made, a contiguous copy and
    a new array every run (PP-OCRv4 rec's swish gates, conv-only QDQ file: 0.77 -> 0.3 ms).
    Its output is C-contiguous, as the numpy step's is (a channels-last source is read as
    it is), so the steps after it read the layout they always did.  Other dtypes and
    layouts run the numpy step's way."""

    plain_dst = True

    def __init__(self, node, op, attrs, opset, src, dst, alg, alpha, beta):
        super().__init__([node], src, dst, alg, alpha, beta, None, None)
        self.op, self.attrs, self.opset = op, attrs, opset
        self.fresh_output = True

    def run(self, env):
        x = env[self.inputs[0]]
        if isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size and \
                (x.flags.c_contiguous or _is_channels_last(x)):
            super().run(env)
            return
        self._repeat = None
        env[self.outputs[0]] = self._numpy(x)

    def _numpy(self, x):
        """The replaced numpy step, for inputs the primitive does not take."""
        return ops_numpy.run_op(self.op, [x], self.attrs, self.opset)[0]


class F32SwishStep(F32EltwiseStep):
    """``Mul(x, Sigmoid(Mul(x, c)))`` (or ``Mul(x, Sigmoid(x))``, c = 1) of f32 values as one
    Eltwise swish (alpha c) into a C-contiguous array, the layout numpy gives the last Mul
    (the Sigmoid's output is C-contiguous): dnnq's swish is x * logistic(f32(c x)) with the
    logistic the Sigmoid step runs, so the same bits as the three steps.  Other dtypes and
    layouts run the three ops in numpy."""

    def __init__(self, nodes, src, dst, alpha):
        super().__init__(nodes[0], "Mul", {}, 13, src, dst, "swish", alpha, 0.0)
        self.nodes = list(nodes)

    def _numpy(self, x):
        z = x if self.alpha == 1.0 else \
            ops_numpy.run_op("Mul", [x, np.float32(self.alpha)], {}, 13)[0]
        sig = ops_numpy.run_op("Sigmoid", [z], {}, 13)[0]
        return ops_numpy.run_op("Mul", [x, sig], {}, 13)[0]


class F32ScaleResidualStep(PrimStep):
    """``Add(x, Mul(x, s))`` of f32 tensors (the squeeze-excitation blocks of PP-OCRv4's
    detector in a conv-only QDQ file: s a per-channel gate) as one pass, dnnq.Binary's
    ``x * s`` with a binary ``add`` post-op of ``x``: numpy's two roundings in its order,
    hence its bits, in one pass over x instead of two and a temporary (a 96 x 56 x 240 map:
    1.1 -> 0.3 ms).  Where x is not the full-shape f32 operand, or not channels-last / C-
    contiguous, the two ops run in numpy."""

    primitive = "Binary"
    fresh_output = True

    def __init__(self, nodes, x, s, dst):
        super().__init__(nodes, [x, s], [dst])

    def make(self, env):
        x, s = env[self.inputs[0]], env[self.inputs[1]]
        tag = layout_tag(x.ndim) if _is_channels_last(x) else None
        s1 = (1,) * (x.ndim - s.ndim) + s.shape
        tag1 = tag if s1 == x.shape and _is_channels_last(s) else None
        d = MemoryDesc(x.shape, "f32", tag)
        po = dnnq.PostOps()
        po.append_binary("add", d)
        attr = dnnq.PrimitiveAttr()
        attr.set_post_ops(po)
        prim = dnnq.Binary("mul", d, MemoryDesc(s1, "f32", tag1), d, attr)
        return prim, {}, s1

    def _fits(self, x, s):
        return _gate_fits(x, s)

    def run(self, env):
        x, s = env[self.inputs[0]], env[self.inputs[1]]
        if not self._fits(x, s):
            self._repeat = None
            with np.errstate(all="ignore"):
                env[self.outputs[0]] = x + x * s
            return
        super().run(env)

    def execute(self, plan, env):
        prim, _, s1 = plan
        x, s = env[self.inputs[0]], env[self.inputs[1]]
        args = {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: s.reshape(s1),
                A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | A.DNNL_ARG_SRC_1: x}
        kept = self.kept_desc(env, prim.dst_desc)
        if kept is not None:
            args[A.DNNL_ARG_DST] = kept
        y = prim.execute(args)
        if kept is not None:  # the same call again on a warm run with the same inputs
            self._armed = lambda: prim.execute(args)
        env[self.outputs[0]] = y


#: rows of the scale-residual kernel shorter than this are grouped into rows of about this
#: many elements (the per-row tail through padded copies made 24-channel rows slow)
_ROW_GROUP = 256


class ScaleResidualQuantizer:
    """``QuantizeLinear((x + x * s) [+ y])`` -- x an f32 map, s an f32 gate broadcast into it
    (a squeeze-excitation's per-channel scales), y an f32 map or the dequantized form of an
    8-bit one, of x's shape -- as one pass of the toolkit engine writing 8-bit values: no
    f32 map of ``x + x * s`` (nor of the sum) in memory.  The stages are those of the steps
    it replaces, in their order and roundings: dnnq.Binary's ``x * s`` with a binary add
    post-op of x (F32ScaleResidualStep), the operand's dequantization ``(f32(y) - zp) *
    scale`` and the add (FusedBinaryStep's), the destination's ``* f32(1 / scale) + zp`` and
    the saturating store (its, and the quantizing Reorder's), so the same bytes.  The plan is
    made per shapes and layouts; ``fits`` says which inputs it takes."""

    def __init__(self, q_other, qd):
        self.q_other, self.qd = q_other, qd
        self._plans = {}
        self._isa = _impls.choose("binary", _impls.TOOLKIT).isa  # (the toolkit's level)
        q = q_other
        # the row kernel's arguments after the arrays: y's and dst's types, y_zp, y_scale,
        # f32(1 / dst scale), dst_zp
        self._row_args = (_codes.DT["f32" if q is None else q.dt], _codes.DT[qd.dt],
                          0.0 if q is None else float(F32(q.zp[0])),
                          1.0 if q is None else float(q.scale[0]),
                          float(pw.reciprocal(qd.scale[:1])[0]), float(F32(qd.zp[0])))

    def fits(self, x, s, y=None, with_y=False):
        if not (_gate_fits(x, s) and x.size and _physical(s) is not None):
            return False
        if not with_y:
            return True
        want = F32 if self.q_other is None else \
            (np.uint8 if self.q_other.dt == "u8" else np.int8)
        return type(y) is np.ndarray and y.dtype == want and y.shape == x.shape and \
            _physical(y) is not None

    @staticmethod
    def _strides(a, ndim):
        """Element strides of ``a`` over ``ndim`` dims (right-aligned, 0 where broadcast)."""
        st = [0] * (ndim - a.ndim) + [0 if d == 1 else b // a.itemsize
                                      for d, b in zip(a.shape, a.strides)]
        return tuple(st)

    def _plan(self, x, s, y, dst):
        key = (x.shape, x.strides, s.shape, s.strides,
               None if y is None else y.strides, dst.strides)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        nd = x.ndim
        prog = pw.Program(x.shape, ops_numpy.memory_order(dst))
        zero = (0,) * nd
        xk = prog.operand("x", "f32", self._strides(x, nd))
        sk = prog.operand("s", "f32", self._strides(s, nd))
        dk = prog.operand("dst", self.qd.dt, self._strides(dst, nd), writable=True)
        prog.binary2(0, "mul", xk, sk)       # x * s (buffer 1: the stage's scratch)
        prog.bin_opnd(0, "add", xk)          # + x: the binary add post-op
        if y is not None:
            q = self.q_other
            dt = "f32" if q is None else q.dt
            yk = prog.operand("y", dt, self._strides(y, nd))
            if q is None:
                prog.bin_opnd(0, "add", yk)
            else:
                sub = prog.operand("y_zp", "f32", zero) if np.any(q.zp != 0) else None
                prog.affine(2, yk, sub=sub, mul1=prog.operand("y_scale", "f32", zero))
                prog.bin_buf(0, "add", 2)
        prog.bin_opnd(0, "mul", prog.operand("inv_dst_scale", "f32", zero))
        if np.any(self.qd.zp != 0):
            prog.bin_opnd(0, "add", prog.operand("dst_zp", "f32", zero))
        prog.store(0, dk)
        arrays = {"inv_dst_scale": pw.reciprocal(np.asarray(self.qd.scale, F32).reshape(1)),
                  "dst_zp": np.asarray(self.qd.zp).astype(F32).reshape(1)}
        if self.q_other is not None:
            arrays["y_scale"] = np.asarray(self.q_other.scale, F32).reshape(1)
            arrays["y_zp"] = np.asarray(self.q_other.zp).astype(F32).reshape(1)
        plan = self._plans[key] = (prog.build(self._isa), arrays)
        return plan

    def _rows(self, x, s, y, dst):
        """(x, s, y, dst) as tk_scale_residual.h's rows -- (pixels, C) views of channels-last
        4-D maps, s the C gate values -- or None where the maps are not all channels-last or
        s is not one value per channel."""
        if x.ndim != 4 or not _is_channels_last(x) or \
                (1,) * (4 - s.ndim) + s.shape != (1, x.shape[1], 1, 1):
            return None
        rows = []
        for a in (x, y, dst):
            if a is None:
                rows.append(None)
                continue
            p = a.transpose(0, 2, 3, 1)
            if not p.flags.c_contiguous:
                return None
            rows.append(p.reshape(-1, x.shape[1]))
        return rows[0], np.ascontiguousarray(s, F32).reshape(-1), rows[1], rows[2]

    def _rows_run(self, x, y, dst, s, size):
        _toolkit.scale_residual_run(_codes.ISA[self._isa], x, s, y, dst, *self._row_args,
                                    pw.threads_for(size))

    def run(self, x, s, y, dst):
        """Write the result into ``dst`` (x's shape, the destination's 8-bit type)."""
        rows = self._rows(x, s, y, dst)
        if rows is not None:
            xr, sr, yr, dr = rows
            R, C = xr.shape
            k = _ROW_GROUP // C
            if k > 1 and R >= k:  # short rows (24 channels): k pixels per row, s k times
                q, rest = divmod(R, k)
                self._rows_run(*(None if a is None else a[:q * k].reshape(q, k * C)
                                 for a in (xr, yr, dr)), np.tile(sr, k), x.size)
                if rest:
                    self._rows_run(xr[q * k:], yr if yr is None else yr[q * k:],
                                   dr[q * k:], sr, x.size)
            else:
                self._rows_run(xr, yr, dr, sr, x.size)
            return
        bound, consts = self._plan(x, s, y, dst)
        arrays = dict(consts)
        arrays.update(x=_physical(x), s=_physical(s), dst=_physical(dst))
        if y is not None:
            arrays["y"] = _physical(y)
        bound.run(arrays)


def _gate_fits(x, s):
    """x an f32 map (C-contiguous or channels-last) and s an f32 gate broadcast into it
    without growing it: what dnnq.Binary's ``x * s`` (and the one-pass quantizer) take."""
    if not (type(x) is np.ndarray and type(s) is np.ndarray and x.dtype == F32 and
            s.dtype == F32 and x.ndim >= 1 and s.ndim <= x.ndim and
            (x.flags.c_contiguous or _is_channels_last(x))):
        return False
    try:
        return np.broadcast_shapes(x.shape, s.shape) == x.shape
    except ValueError:
        return False


def _physical(a):
    """``a`` as the engine binds it: its memory in order (a transpose of ``a`` that is
    C-contiguous: channels-last maps too), else None."""
    p = a.transpose(ops_numpy.memory_order(a))
    return p if p.flags.c_contiguous else None


class F32ScaleResidualQuantizeStep(Step):
    """``QuantizeLinear(Add(Add(x, Mul(x, s)), y))`` -- PP-OCRv4 det's neck in dnnq's own
    int8 model: a squeeze-excitation residual on an f32 convolution output plus the
    upsampled int8 map of the level below, quantized for the next convolution -- as one
    ScaleResidualQuantizer pass (planner: the Mul deferred to the outer Add,
    _emit_f32_scale_residual): the same bytes as the F32ScaleResidualStep and
    FusedBinaryStep it replaces, with two f32 maps fewer written and read (the 96 x 184 x
    240 level: 7.3 -> 2.6 ms).  Inputs it does not take run those two steps."""

    primitive = "Binary"
    fresh_output = True

    def __init__(self, nodes, x, s, y, inner, dst, q_other, qd):
        super().__init__(nodes, [x, s, y], [dst])
        self.inner = inner  # the name of x + x * s (the replaced steps' f32 value)
        self.fuse = ScaleResidualQuantizer(q_other, qd)
        self.impl_info = "x + x * s, + y, quantize"
        self._apart = None

    def run(self, env):
        if self._repeated(env):
            return
        x, s, y = (env[n] for n in self.inputs)
        if not self.fuse.fits(x, s, y, with_y=True):
            self._repeat = None
            self._run_apart(env)
            return
        dtype = np.uint8 if self.fuse.qd.dt == "u8" else np.int8
        if _is_channels_last(x):
            order = (0,) + tuple(range(2, x.ndim)) + (1,)
            y_out, kept = self.out_array(env, tuple(x.shape[i] for i in order), dtype)
            out = self.transposed(y_out, ops_numpy.inverse_order(order), kept)
        else:
            y_out, kept = self.out_array(env, x.shape, dtype)
            out = y_out
        self.fuse.run(x, s, y, out)
        env[self.outputs[0]] = out
        fuse = self.fuse
        self._remember(env, lambda: fuse.run(x, s, y, out), kept)

    def _run_apart(self, env):
        if self._apart is None:
            x, s, y = self.inputs
            q = self.fuse.q_other
            self._apart = (F32ScaleResidualStep(self.nodes[:2], x, s, self.inner),
                           FusedBinaryStep(self.nodes[2:], "add", "Add", self.inner, y,
                                           self.outputs[0], None, q, self.fuse.qd))
        for st in self._apart:
            st.run(env)
        env.pop(self.inner, None)
