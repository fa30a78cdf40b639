"""The executed steps of a session other than the weighted layers: quantize / dequantize /
requantize reorders, int8 pooling, binary and eltwise ops, data movement on int8 arrays, and
the numpy f32 ops.

Every step has ``inputs`` / ``outputs`` (names in the run's environment), ``nodes`` (the ONNX
nodes it covers), ``primitive`` (the dnnq primitive's name or ``numpy:<op>``), ``impl_info``
and ``run(env)``. Primitives depend on the input shape: each step keeps one per shape.
"""
import functools

import numpy as np

import dnnq
from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._kernels import _codes, _toolkit
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.onnx import ops_numpy
from dnnq.onnx.buffers import REUSE, KeptOutput
from dnnq.onnx.layers import DATA_TAGS, conv_padding
from dnnq.onnx.quant import dequantize_np

F32 = np.float32


def toolkit_isa():
    """(ISA code, VBMI allowed) of the toolkit kernels under the ISA cap: the level the
    toolkit implementation list chooses, and VBMI's byte lookups where the cap allows them
    (the same bytes either way)."""
    isa = _impls.choose("lookup table", _impls.TOOLKIT).isa
    return _codes.ISA[isa], _impls.optional_feature("avx512_vbmi", isa)


def layout_tag(ndim):
    return DATA_TAGS.get(ndim)


class Step(KeptOutput):
    primitive = ""
    impl_info = None
    #: the step writes a fresh array (never a view of an input): the session may let it
    #: keep that array across runs (``keeps_output``: set by the session when the output
    #: reaches no graph output; the array may be shared by liveness, buffers.py)
    fresh_output = False
    #: no output reaches a graph output, even as a view (set by the session): arrays the
    #: step hands out are never the caller's
    outputs_private = False

    def __init__(self, nodes, inputs, outputs):
        self.nodes, self.inputs, self.outputs = list(nodes), list(inputs), list(outputs)

    def aliased_inputs(self, output):
        """The inputs whose memory ``output`` may share (it may be a view of them): all of
        them unless the step knows better (the session keeps an array only where no graph
        output can be a view of it)."""
        return self.inputs


class PrimStep(Step):
    """A dnnq primitive created per input shape by ``self.make(env) -> (prim, args, fn)``;
    ``fn(prim, args, env)`` runs it."""

    #: the output is the bound runner's on the inputs' arrays as they are (no per-run
    #: conversion of them, no pass after it but views): a warm run whose inputs are the last
    #: run's arrays repeats the runner's kernel call (``_memo``)
    replayable = False

    def __init__(self, nodes, inputs, outputs):
        super().__init__(nodes, inputs, outputs)
        self._plans = {}
        self._runners = {}
        self._big = {}
        self._armed = None  # set by _call: the runner's kernel call on the arrays it checked

    def _bound(self, plan, args, dynamic):
        """The primitive's bound runner (ToolkitPrimitive.bind: the static arguments checked
        once), made at the plan's first run; None when it has none."""
        key = id(plan)  # plans live as long as the step
        if key not in self._runners:
            self._runners[key] = plan[0].bind(args, dynamic)
        return self._runners[key]

    def _call(self, run, srcs, env):
        """The bound runner on ``srcs``, writing into its previous array where the session
        lets this step keep its output (Step.keeps_output)."""
        reuse = self.keeps_output and bool(env.get(REUSE))
        if reuse:
            reuse = self._big.get(id(run))
            if reuse is None:  # runners live as long as the step
                desc = run.desc
                run.kept = self.kept_array(env, tuple(desc.physical_shape), desc.numpy_dtype)
                reuse = self._big[id(run)] = run.kept is not None
        y = run(*srcs, reuse=reuse)
        last = run.last
        if reuse and last is not None:
            # the runner wrote the kept array (run.last: its checked path, not execute's new
            # array): the same view of it each run
            y = self.kept_view(run.kept, run, run.desc.logical_view)
        run.last = None  # (held by the repeat alone: a caller's input is not kept alive)
        if reuse and self.replayable and last is not None:
            kernel = run._run
            self._armed = lambda: kernel(last, last["dst"])
        return y

    def run(self, env):
        if self._repeated(env):  # (a third of a small pooling's time)
            return
        key = tuple(env[n].shape for n in self.inputs if n in env)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self.make(env)
            self.impl_info = plan[0].impl_info
        self._armed = None
        self.execute(plan, env)
        armed, self._armed = self._armed, None
        self._remember(env, armed, True)  # (armed: None unless the output was kept)


def _qargs(arg, qp, attr, a):
    """Scale / zero point of ``qp`` on the tensor ``arg`` (mask 0 or per-channel)."""
    if qp is None:
        return
    mask = 0 if qp.per_tensor else (1 << qp.axis)
    attr.set_scales_mask(arg, mask)
    a[A.DNNL_ARG_SCALE | arg] = qp.scale
    if np.any(qp.zp != 0):
        attr.set_zero_points_mask(arg, mask)
        a[A.DNNL_ARG_ATTR_ZERO_POINTS | arg] = qp.zp


class ReorderStep(PrimStep):
    """Quantize (f32 -> int8), dequantize (int8 -> f32) or requantize (int8 -> int8)."""

    primitive = "Reorder"
    fresh_output = True
    replayable = True
    #: write a channels-last destination (set by the planner when convolutions read it)
    channels_last_out = False

    def __init__(self, nodes, src, dst, src_q, dst_q):
        super().__init__(nodes, [src], [dst])
        self.src_q, self.dst_q = src_q, dst_q

    def make(self, env):
        x = env[self.inputs[0]]
        if self.src_q is not None and not self.src_q.per_tensor:
            self.src_q.axis %= max(x.ndim, 1)
        if self.dst_q is not None and not self.dst_q.per_tensor:
            self.dst_q.axis %= max(x.ndim, 1)
        shape = x.shape if x.ndim else (1,)
        sdt = "f32" if self.src_q is None else self.src_q.dt
        ddt = "f32" if self.dst_q is None else self.dst_q.dt
        tag = layout_tag(len(shape)) if _is_channels_last(x) else None
        dtag = layout_tag(len(shape)) if self.channels_last_out else tag
        attr = dnnq.PrimitiveAttr()
        a = {}
        _qargs(A.DNNL_ARG_SRC, self.src_q, attr, a)
        _qargs(A.DNNL_ARG_DST, self.dst_q, attr, a)
        prim = dnnq.Reorder(MemoryDesc(shape, sdt, tag), MemoryDesc(shape, ddt, dtag), attr)
        return prim, a, x.shape

    def execute(self, plan, env):
        prim, a, shape = plan
        x = env[self.inputs[0]]
        if x.dtype != prim.src_desc.numpy_dtype:
            raise InvalidArguments(f"node {self.nodes[0]!r}: input {self.inputs[0]!r} of type "
                                   f"{x.dtype}; expected {prim.src_desc.numpy_dtype}")
        if x.ndim == 0:
            x = x.reshape(1)
        args = dict(a)
        args[A.DNNL_ARG_SRC] = x
        run = self._bound(plan, args, (A.DNNL_ARG_SRC,))
        y = self._call(run, (x,), env) if run is not None else prim.execute(args)
        env[self.outputs[0]] = y if y.shape == shape else y.reshape(shape)


def _is_channels_last(x):
    """An array laid out channels-last (as dnnq's convolutions write them)."""
    return x.ndim in (3, 4, 5) and x.shape[1] > 1 and x.strides[1] == x.itemsize and \
        not x.flags.c_contiguous


class PoolStep(PrimStep):
    """MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool on dnnq.Pooling: int8 (the
    destination type the source's, or f32 for an average requantized by a Reorder) or f32."""

    primitive = "Pooling"
    fresh_output = True

    def __init__(self, nodes, src, dst, op, attrs, dt, requant=None, requant_linear=None):
        super().__init__(nodes, [src], [dst])
        self.op, self.attrs, self.dt, self.requant = op, attrs, dt, requant
        # (source, destination quantization) of an average stored in another scale / zero
        # point: ((avg - zp_in) * s_in) / s_out + zp_out as a linear post-op alpha * avg + beta
        self.requant_linear = requant_linear
        self.replayable = requant is None  # (a requantizing Reorder runs after it)

    def make(self, env):
        x = env[self.inputs[0]]
        if x.ndim not in (3, 4, 5):
            raise InvalidArguments(f"node {self.nodes[0]!r}: input of shape {x.shape}; "
                                   "expected 3, 4 or 5 dims")
        nsp = x.ndim - 2
        a = self.attrs
        if self.op.startswith("Global"):
            k, s, d, pl, pr = list(x.shape[2:]), [1] * nsp, [1] * nsp, [0] * nsp, [0] * nsp
        else:
            k = list(a["kernel_shape"])
            s = list(a.get("strides", [1] * nsp))
            d = list(a.get("dilations", [1] * nsp))
            pl, pr = conv_padding(self.nodes[0], a, x.shape[2:], k, s, d)
        out = []
        for i in range(nsp):
            ext = (k[i] - 1) * d[i] + 1
            span = x.shape[2 + i] + pl[i] + pr[i] - ext
            o = (-(-span // s[i]) if a.get("ceil_mode", 0) else span // s[i]) + 1
            if a.get("ceil_mode", 0) and (o - 1) * s[i] >= x.shape[2 + i] + pl[i]:
                o -= 1  # the last window must start inside the input or the left padding
            pr[i] = (o - 1) * s[i] + ext - x.shape[2 + i] - pl[i]
            out.append(o)
        if "Max" in self.op:
            alg = "max"
        else:
            alg = "avg_include_padding" if a.get("count_include_pad", 0) else \
                "avg_exclude_padding"
        tag = layout_tag(x.ndim)
        dst_dt = "f32" if self.requant is not None else self.dt
        attr = None
        if self.requant_linear is not None:
            qs, qd = self.requant_linear
            alpha = float(qs.scale[0]) / float(qd.scale[0])
            beta = float(qd.zp[0]) - float(qs.zp[0]) * alpha
            ops = dnnq.PostOps()
            ops.append_eltwise("linear", alpha, beta)
            attr = dnnq.PrimitiveAttr()
            attr.set_post_ops(ops)
            dst_dt = qd.dt
        prim = dnnq.Pooling(alg, MemoryDesc(x.shape, self.dt, tag),
                            MemoryDesc((x.shape[0], x.shape[1], *out), dst_dt, tag),
                            strides=s, kernel=k, dilation=[v - 1 for v in d], padding_l=pl,
                            padding_r=pr, attr=attr)
        return prim, None, None

    def execute(self, plan, env):
        x = env[self.inputs[0]]
        run = self._bound(plan, {A.DNNL_ARG_SRC: x}, (A.DNNL_ARG_SRC,))
        y = self._call(run, (x,), env) if run is not None else \
            plan[0].execute({A.DNNL_ARG_SRC: x})
        if self.requant is not None:
            y = self.requant(y)
        env[self.outputs[0]] = y


class BinaryStep(PrimStep):
    """Add / Sub / Mul / Div / Min / Max on dnnq.Binary with the sources' scales and zero
    points and the destination's (int8 or f32)."""

    primitive = "Binary"
    fresh_output = True

    def __init__(self, nodes, alg, src0, src1, dst, q0, q1, qd, const1=None, one_plus=None):
        ins = [src0] + ([src1] if const1 is None else [])
        super().__init__(nodes, ins, [dst])
        self.alg, self.q0, self.q1, self.qd, self.const1 = alg, q0, q1, qd, const1
        #: QParams of an int8 src1 s: the second operand is 1 + s in f32 (planner's
        #: _emit_scale_residual: x + x * s as x * (1 + s))
        self.one_plus = one_plus
        self.replayable = one_plus is None  # (1 + s is a new array each run)

    def _swapped(self, x0, x1):
        """Whether the sources go to dnnq.Binary in the other order: it broadcasts its second
        source only, so a commutative op whose first input is the smaller one (Mul(gate, x))
        swaps them."""
        try:
            out = np.broadcast_shapes(x0.shape, x1.shape)
        except ValueError:
            raise InvalidArguments(f"node {self.nodes[0]!r}: inputs of shapes {x0.shape} and "
                                   f"{x1.shape} do not broadcast") from None
        if out == x0.shape:
            return False
        if out == x1.shape and self.const1 is None and self.one_plus is None and \
                self.alg in ("add", "mul", "min", "max"):
            return True
        raise Unimplemented(f"node {self.nodes[0]!r}: broadcast of {x1.shape} into "
                            f"{x0.shape} grows the first input; dnnq.Binary broadcasts "
                            "the second only")

    def make(self, env):
        x0 = env[self.inputs[0]]
        x1 = self.const1 if self.const1 is not None else env[self.inputs[1]]
        swap = self._swapped(x0, x1)
        q0, q1 = (self.q1, self.q0) if swap else (self.q0, self.q1)
        if swap:
            x0, x1 = x1, x0
        attr = dnnq.PrimitiveAttr()
        a = {}
        _qargs(A.DNNL_ARG_SRC_0, q0, attr, a)
        _qargs(A.DNNL_ARG_SRC_1, q1, attr, a)
        _qargs(A.DNNL_ARG_DST, self.qd, attr, a)
        shape0 = x0.shape if x0.ndim else (1,)
        s1 = (1,) * (len(shape0) - x1.ndim) + x1.shape
        tag = layout_tag(len(shape0)) if _is_channels_last(x0) else None
        dt0 = "f32" if q0 is None else q0.dt
        dt1 = "f32" if q1 is None else q1.dt
        ddt = "f32" if self.qd is None else self.qd.dt
        tag1 = tag if s1 == shape0 and _is_channels_last(x1) else None
        prim = dnnq.Binary(self.alg, MemoryDesc(shape0, dt0, tag), MemoryDesc(s1, dt1, tag1),
                           MemoryDesc(shape0, ddt, tag), attr)
        if self.const1 is not None:
            a[A.DNNL_ARG_SRC_1] = np.ascontiguousarray(self.const1.reshape(s1))
        return prim, a, (s1, x0.shape, swap)

    def execute(self, plan, env):
        prim, a, (s1, shape, swap) = plan
        args = dict(a)
        x0 = env[self.inputs[1 if swap else 0]]
        args[A.DNNL_ARG_SRC_0] = x0.reshape(prim.src0_desc.dims) if x0.ndim == 0 else x0
        dynamic = (A.DNNL_ARG_SRC_0,)
        if self.const1 is None:
            x1 = env[self.inputs[0 if swap else 1]]
            if self.one_plus is not None:
                q = self.one_plus
                x1 = dequantize_np(x1, q.scale[0], q.zp[0]) + F32(1)
            args[A.DNNL_ARG_SRC_1] = x1.reshape(s1)
            dynamic += (A.DNNL_ARG_SRC_1,)
        run = self._bound(plan, args, dynamic)
        y = self._call(run, [args[k] for k in dynamic], env) if run is not None else \
            prim.execute(args)
        env[self.outputs[0]] = y.reshape(shape)


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
        self._apart = None
        self.impl_info = "quantize, copy"

    def take_resize(self, i, step):
        """Input i is the output of ``step``, a nearest Resize nothing else reads: quantize
        its (smaller) input and repeat it into the output instead."""
        self._resized[i] = step
        self.nodes = self.nodes + step.nodes
        self.inputs = list(self.inputs)
        self.inputs[i] = step.inputs[0]
        self.inputs += [x for x in step.inputs[1:] if x and x not in self.inputs]
        self.impl_info = "resize into, quantize, copy"

    def _reps(self, env, i, x):
        st = self._resized.get(i)
        if st is None:
            return (1, 1, 1, 1), x.shape
        sizes, reps = st.nearest_geometry(env)
        return reps, None if reps is None else tuple(sizes)

    def run(self, env):
        xs = [env[n] for n in self.inputs[:self.n_data]]
        geo = [self._reps(env, i, x) if isinstance(x, np.ndarray) else (None, None)
               for i, x in enumerate(xs)]
        ok = all(isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 4 and
                 r is not None and r[0] == 1 and r[1] == 1 for x, (r, _) in zip(xs, geo))
        if ok:
            n, _, h, w = geo[0][1]
            ok = all(sh[0] == n and sh[2:] == (h, w) for _, sh in geo)
        if not ok:
            self._run_apart(env, xs)
            return
        dtype = np.uint8 if self.qd.dt == "u8" else np.int8
        shape = (n, h, w, sum(sh[1] for _, sh in geo))
        y, kept = self.out_array(env, shape, dtype)
        off = 0
        for i, (x, (reps, sh)) in enumerate(zip(xs, geo)):
            st = self._quant.get(i)
            if st is None:
                tmp = f"{self.outputs[0]}::q{i}"
                st = self._quant[i] = ReorderStep([tmp], self.inputs[i], tmp, None, self.qd)
                st.channels_last_out = True
            st.run(env)
            q = env.pop(st.outputs[0]).transpose(0, 2, 3, 1)
            _toolkit.repeat_pixels_into(np.ascontiguousarray(q).view(np.uint8),
                                        y.view(np.uint8), reps[2], reps[3], off,
                                        dnnq.get_num_threads())
            off += sh[1]
        env[self.outputs[0]] = self.transposed(y, (0, 3, 1, 2), kept)

    def _run_apart(self, env, xs):
        """The replaced steps: the resizes and the concatenation in numpy, the quantizing
        Reorder."""
        full = []
        for i, x in enumerate(xs):
            st = self._resized.get(i)
            if st is not None:
                params = [None if not p else env[p] for p in st.inputs]
                x = ops_numpy.run_op(st.op, params, st.attrs, st.opset)[0]
            full.append(x)
        tmp = f"{self.outputs[0]}::f32"
        env[tmp] = ops_numpy.run_op("Concat", full, {"axis": 1}, 13)[0]
        if self._apart is None:
            self._apart = ReorderStep([tmp], tmp, self.outputs[0], None, self.qd)
        self._apart.run(env)
        env.pop(tmp, None)


class EltwiseStep(PrimStep):
    """A unary activation on dnnq.Eltwise with source / destination scales and zero points."""

    primitive = "Eltwise"
    replayable = True

    def __init__(self, nodes, src, dst, alg, alpha, beta, qs, qd):
        super().__init__(nodes, [src], [dst])
        self.alg, self.alpha, self.beta, self.qs, self.qd = alg, alpha, beta, qs, qd

    def make(self, env):
        x = env[self.inputs[0]]
        shape = x.shape if x.ndim else (1,)
        attr = dnnq.PrimitiveAttr()
        a = {}
        _qargs(A.DNNL_ARG_SRC, self.qs, attr, a)
        _qargs(A.DNNL_ARG_DST, self.qd, attr, a)
        tag = layout_tag(len(shape)) if _is_channels_last(x) else None
        prim = dnnq.Eltwise(self.alg, MemoryDesc(shape, "f32" if self.qs is None else self.qs.dt,
                                                 tag),
                            MemoryDesc(shape, "f32" if self.qd is None else self.qd.dt, tag),
                            self.alpha, self.beta, attr)
        return prim, a, x.shape

    def execute(self, plan, env):
        prim, a, shape = plan
        args = dict(a)
        args[A.DNNL_ARG_SRC] = x = env[self.inputs[0]].reshape(prim.src_desc.dims)
        run = self._bound(plan, args, (A.DNNL_ARG_SRC,))
        y = self._call(run, (x,), env) if run is not None else prim.execute(args)
        env[self.outputs[0]] = y if y.shape == shape else y.reshape(shape)


class F32EltwiseStep(EltwiseStep):
    """An f32 unary op that dnnq.Eltwise computes (Sigmoid, Tanh, Exp, Log, Softplus, Mish:
    ops_numpy's _toolkit_eltwise runs the same primitive, so the same bits) as a step made
    once per shape, into its kept array, instead of a primitive made, a contiguous copy and
    a new array every run (PP-OCRv4 rec's swish gates, conv-only QDQ file: 0.77 -> 0.3 ms).
    Its output is C-contiguous, as the numpy step's is (a channels-last source is read as
    it is), so the steps after it read the layout they always did.  Other dtypes and
    layouts run the numpy step's way."""

    def __init__(self, node, op, attrs, opset, src, dst, alg, alpha, beta):
        super().__init__([node], src, dst, alg, alpha, beta, None, None)
        self.op, self.attrs, self.opset = op, attrs, opset
        self.fresh_output = True

    def make(self, env):
        x = env[self.inputs[0]]
        shape = x.shape if x.ndim else (1,)
        tag = layout_tag(len(shape)) if _is_channels_last(x) else None
        prim = dnnq.Eltwise(self.alg, MemoryDesc(shape, "f32", tag), MemoryDesc(shape, "f32"),
                            self.alpha, self.beta)
        return prim, {}, x.shape

    def run(self, env):
        x = env[self.inputs[0]]
        if isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size and \
                (x.flags.c_contiguous or _is_channels_last(x)):
            super().run(env)
            return
        self._repeat = None
        env[self.outputs[0]] = ops_numpy.run_op(self.op, [x], self.attrs, self.opset)[0]


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
        if not (isinstance(x, np.ndarray) and isinstance(s, np.ndarray) and
                x.dtype == np.float32 and s.dtype == np.float32 and x.ndim >= 1 and
                s.ndim <= x.ndim and (x.flags.c_contiguous or _is_channels_last(x))):
            return False
        try:
            return np.broadcast_shapes(x.shape, s.shape) == x.shape
        except ValueError:
            return False

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


class SoftmaxStep(PrimStep):
    """Softmax (opset 13: one axis) on dnnq.Softmax, f32 source, f32 or int8 destination."""

    primitive = "Softmax"

    def __init__(self, nodes, src, dst, axis, qd):
        super().__init__(nodes, [src], [dst])
        self.axis, self.qd = axis, qd

    def make(self, env):
        x = env[self.inputs[0]]
        attr = dnnq.PrimitiveAttr()
        a = {}
        if self.qd is not None:
            attr.set_scales_mask(A.DNNL_ARG_DST, 0)
            a[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = self.qd.scale
        prim = dnnq.Softmax("softmax", MemoryDesc(x.shape, "f32"),
                            MemoryDesc(x.shape, "f32" if self.qd is None else self.qd.dt),
                            self.axis % x.ndim, attr)
        return prim, a, None

    def execute(self, plan, env):
        args = dict(plan[1])
        args[A.DNNL_ARG_SRC] = env[self.inputs[0]]
        env[self.outputs[0]] = plan[0].execute(args)


#: numpy ops whose output may be a view of their first input only (the others are shapes,
#: axes, bounds)
_VIEWS_OF_FIRST = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity",
                   "Slice", "Expand"}


#: element-wise ops whose f32 result NumpyStep writes into its kept array (numpy's ufunc with
#: ``out=``: the same values as a new array)
_F32_UFUNCS = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


class NumpyStep(Step):
    """An ONNX op in numpy (data movement, shapes, cheap element-wise math), on f32 values or
    on int8 arrays where the op only moves data.  Into the step's kept array (buffers.py): no
    allocation and no page faults on large maps, and the steps reading it find the same array
    every run, so they may repeat their calls:
    - Add / Sub / Mul / Div of f32 arrays, laid out as numpy lays out a new result (PP-OCRv4
      det's neck, conv-only QDQ file: its Mul / Add rows 3.1 -> 1.6 ms);
    - a nearest Resize by whole factors along H and W of a channels-last 4-D f32 map, and a
      Concat along the channels of channels-last 4-D f32 maps: compiled pixel copies
      (toolkit repeat_pixels_into on the f32 bytes) into a channels-last array, where numpy
      gathered through index arrays and copied 24-channel slices."""

    def __init__(self, node, op, attrs, opset, inputs, outputs, consts):
        super().__init__([node], inputs, outputs)
        self.op, self.attrs, self.opset = op, attrs, opset
        self.consts = consts
        self.primitive = f"numpy:{op}"
        self._ufunc = _F32_UFUNCS.get(op)
        self._copies = op in ("Resize", "Upsample", "Concat")  # _run_copies
        self.fresh_output = self._ufunc is not None or self._copies
        self._orders = {}  # operand shapes and strides -> the output's memory order
        self._geometry = {}  # (shape, parameters) -> (sizes, repeat factors or None)

    def run(self, env):
        if self._ufunc is not None and (self._repeated(env) or self._run_ufunc(env)):
            return
        if self._copies and (self._repeated(env) or self._run_copies(env)):
            return
        xs = [None if not n else env[n] for n in self.inputs]
        ys = ops_numpy.run_op(self.op, xs, self.attrs, self.opset, len(self.outputs))
        for n, y in zip(self.outputs, ys):
            if n:
                env[n] = y

    def nearest_geometry(self, env):
        """(output sizes, whole repeat factors per axis or None) of this nearest Resize for
        this run's input, cached per input shape and parameters (the nearest indices cost
        more than the key); (None, None) for other modes."""
        x = env[self.inputs[0]]
        params = [None if not p else env[p] for p in self.inputs]
        key = (x.shape,) + tuple(None if p is None else tuple(np.ravel(p).tolist())
                                 for p in params[1:])
        got = self._geometry.get(key)
        if got is None:
            got = self._geometry[key] = ops_numpy.nearest_repeats(
                x.shape, params, self.attrs, self.opset)[:2] \
                if self.attrs.get("mode", "nearest") == "nearest" else (None, None)
        return got

    def _run_copies(self, env):
        """A Resize / Concat of channels-last 4-D f32 maps as compiled pixel copies into the
        kept array; False (nothing done) where that does not apply."""
        if self.op == "Concat":
            xs = [env[n] for n in self.inputs if n]
            if len(xs) < 2 or self.attrs.get("axis", 1) % 4 != 1:
                return False
            reps = (1, 1, 1, 1)
        else:
            xs = [env[self.inputs[0]]]
        if not all(isinstance(v, np.ndarray) and v.dtype == np.float32 and v.ndim == 4
                   for v in xs):
            return False
        phys = [v.transpose(0, 2, 3, 1) for v in xs]
        if not all(p.flags.c_contiguous for p in phys):
            return False
        if self.op == "Concat":
            n, _, h, w = xs[0].shape
            if any(v.shape[0] != n or v.shape[2:] != (h, w) for v in xs[1:]):
                return False
            shape = (n, h, w, sum(v.shape[1] for v in xs))
        else:
            sizes, reps = self.nearest_geometry(env)
            if reps is None or reps[0] != 1 or reps[1] != 1:
                return False
            shape = (sizes[0], sizes[2], sizes[3], sizes[1])
        y = self.kept_array(env, shape, np.float32)
        if y is None:
            return False
        dst = y.view(np.uint8)
        offsets = np.cumsum([0] + [v.shape[1] * 4 for v in xs])
        copies = [(p.view(np.uint8), dst, reps[2], reps[3], int(off))
                  for p, off in zip(phys, offsets)]
        copy = _toolkit.repeat_pixels_into

        def call():
            nt = dnnq.get_num_threads()
            for a in copies:
                copy(*a, nt)

        call()
        env[self.outputs[0]] = self.transposed(y, (0, 3, 1, 2), True)
        self._remember(env, call, True, [(a[0], x) for a, x in zip(copies, xs)] +
                       [(dst, y)])
        return True

    def _run_ufunc(self, env):
        """The f32 op into the kept array; False (nothing done) for other inputs or without
        one."""
        a, b = env[self.inputs[0]], env[self.inputs[1]]
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and
                a.dtype == np.float32 and b.dtype == np.float32):
            return False
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return False
        fn = self._ufunc
        # the memory order numpy gives a new result of these operands (its 'K' order: the
        # operands' layouts, the second's where they differ), learnt once per layout, so
        # the steps reading the output see the layout (and give the bits) they always did
        key = (a.shape, a.strides, b.shape, b.strides)
        order = self._orders.get(key)
        if order is None:
            with np.errstate(all="ignore"):
                order = self._orders[key] = ops_numpy.memory_order(fn(a, b))
        y = self.kept_array(env, tuple(shape[i] for i in order), np.float32)
        if y is None:
            return False
        out = self.kept_view(y, ("order", order),
                             lambda v: v.transpose(ops_numpy.inverse_order(order)))

        def call():
            with np.errstate(all="ignore"):
                fn(a, b, out=out)

        call()
        env[self.outputs[0]] = out
        self._remember(env, call, True)
        return True

    def aliased_inputs(self, output):
        if self.op in ("Shape", "Size"):  # new arrays of the shape
            return ()
        return self.inputs[:1] if self.op in _VIEWS_OF_FIRST else self.inputs


class QuantizedMoveStep(NumpyStep):
    """A data-movement op on int8 arrays (exact: it commutes with dequantization). Resize
    works on the channels-last memory of its input and keeps that layout; a nearest resize
    by whole factors of a channels-last 4-D tensor is a compiled pixel copy into a kept
    array."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.primitive = f"numpy:{self.op} (int8)"
        #: a Resize writes a new array (the other moves may return views of their input)
        self.fresh_output = self.op in ("Resize", "Upsample")
        self._made = None  # (inputs, outputs) of the last run of a view move: _move

    def run(self, env):
        if self.op not in ("Resize", "Upsample"):
            self._move(env)
            return
        if self._repeated(env):
            return
        x = env[self.inputs[0]]
        sizes, reps = self.nearest_geometry(env)
        if reps is not None and _pixels(x, reps) is not None:
            self._repeat_pixels(env, x, tuple(sizes), reps)
            return
        self._repeat = None
        phys, inv = physical(x)
        xs = [None if not n else env[n] for n in self.inputs]
        if inv is not None:
            order = sorted(range(x.ndim), key=lambda i: -x.strides[i])
            xs[0] = phys
            for i in range(1, len(xs)):
                if xs[i] is not None and xs[i].size == x.ndim:
                    xs[i] = xs[i][order]
        y = ops_numpy.run_op(self.op, xs, self.attrs, self.opset)[0]
        env[self.outputs[0]] = y if inv is None else y.transpose(inv)

    def _move(self, env):
        """The op; its outputs are the last run's objects when its inputs are the last run's
        arrays, the parameters read-only and every output a view of the data: the steps
        reading them may then repeat their last calls (Step._repeated)."""
        xs = [None if not n else env[n] for n in self.inputs]
        made = self._made
        if made is not None and all(a is b for a, b in zip(xs, made[0])):
            ys = made[1]
        else:
            ys = ops_numpy.run_op(self.op, xs, self.attrs, self.opset, len(self.outputs))
            x = xs[0]
            self._made = (xs, ys) if (
                self.memo_ok and isinstance(x, np.ndarray) and
                all(p is None or (isinstance(p, np.ndarray) and not p.flags.writeable)
                    for p in xs[1:]) and
                all(isinstance(y, np.ndarray) and np.may_share_memory(y, x) for y in ys)) \
                else None
        for n, y in zip(self.outputs, ys):
            if n:
                env[n] = y

    def _repeat_pixels(self, env, x, sizes, reps):
        """Nearest upsampling by whole factors (rh, rw) of the channels-last ``x``: each
        output row a compiled copy of its source row's pixels (the general resize computes
        index arrays and gathers: det's x2 upsamplings 0.2 - 0.5 ms each)."""
        n, c, ho, wo = sizes
        phys = (n, ho, wo, c)
        y, kept = self.out_array(env, phys, x.dtype)
        copy, a = _toolkit.repeat_pixels_into, (_pixels(x, reps), y.view(np.uint8),
                                                reps[2], reps[3], 0)

        def call():
            copy(*a, dnnq.get_num_threads())
        call()
        env[self.outputs[0]] = self.transposed(y, (0, 3, 1, 2), kept)
        self._remember(env, call, kept, ((a[0], x), (a[1], y)))


def _pixels(x, reps):
    """The 8-bit channels-last 4-D ``x`` as C-contiguous (N, H, W, C) bytes for the compiled
    pixel copy (toolkit repeat_pixels_into) of repeat factors ``reps`` (whole, along H and W
    only), or None where it does not apply."""
    if x.ndim != 4 or x.dtype.itemsize != 1 or reps[0] != 1 or reps[1] != 1:
        return None
    xs = x.transpose(0, 2, 3, 1)
    return xs.view(np.uint8) if xs.flags.c_contiguous else None


def physical(x):
    """(C-contiguous view of ``x``'s memory, permutation back to ``x``) for arrays that are
    a transpose of contiguous memory (dnnq's channels-last outputs); else (copy, None)."""
    if x.flags.c_contiguous:
        return x, None
    order = ops_numpy.memory_order(x)
    v = x.transpose(order)
    if not v.flags.c_contiguous:
        return np.ascontiguousarray(x), None
    return v, ops_numpy.inverse_order(order)


class LutStep(Step):
    """A chain of element-wise ops between two int8 roundings as a 256-entry table."""

    primitive = "lookup table"
    fresh_output = True

    def __init__(self, nodes, spec):
        super().__init__(nodes, [spec.src], [spec.dst])
        from dnnq.eltwise_math import eltwise_table
        from dnnq.onnx.quant import quantize_np
        qs, qd = spec.src_q, spec.dst_q
        table = getattr(spec, "table", None)  # tables.match_table's, from the graph's nodes
        if table is None:
            grid = np.arange(256, dtype=np.int64) - (128 if qs.dt == "s8" else 0)
            v = dequantize_np(grid, qs.scale[0], qs.zp[0])
            for _, alg, alpha, beta in spec.post_ops:
                v = eltwise_table(alg, v, alpha, beta)  # the same bytes on every CPU
            zp = np.asarray(qd.zp[0], np.uint8 if qd.dt == "u8" else np.int8)
            table = quantize_np(v, qd.scale[0], zp)
            if qs.dt == "s8":  # index by the byte (the s8 value's two's complement)
                table = np.roll(table, -128)
            self.impl_info = "+".join(p[1] for p in spec.post_ops)
        else:
            self.impl_info = "graph:" + "+".join(
                n.op_type for n in spec.nodes
                if n.op_type not in ("QuantizeLinear", "DequantizeLinear"))
        self.table = np.ascontiguousarray(table.view(np.uint8))
        self.out_dtype = table.dtype
        self.s8 = qs.dt == "s8"
        # the toolkit's table kernel at the level the toolkit list chooses (VBMI's byte
        # lookups where the cap allows them; the same bytes either way)
        self._isa_code, self._vbmi = toolkit_isa()

    def run(self, env):
        x = env[self.inputs[0]]
        if self._repeated(env):
            return
        src, copy, y, inv, kept = _rows_in_memory_order(x, self.out_dtype, self, env)
        lookup, a = _toolkit.table_lookup, (self._isa_code, self._vbmi, src, self.table,
                                            y.reshape(src.shape).view(np.uint8))

        def call():
            if copy is not None:  # the rows copied from x again (a repeat reads this run's x)
                copy()
            lookup(*a, dnnq.get_num_threads())
        lookup(*a, dnnq.get_num_threads())
        env[self.outputs[0]] = self.transposed(y, inv, kept)
        self._remember(env, call, kept, ((a[4], y),) if copy is not None else
                       ((src, x), (a[4], y)))


def _rows_in_memory_order(x, out_dtype, step, env):
    """(x's bytes as rows of dense bytes at one row stride -- a view where its memory allows,
    e.g. a channel slice of a channels-last tensor, else a copy --, None or the call that
    copies x into those rows again, an empty array of x's shape in x's memory order
    (``step``'s kept array when it keeps one), the permutation back to x's axes or None,
    whether the array is the kept one)."""
    if not x.ndim:
        return x.reshape(1, 1).view(np.uint8), None, np.empty((), out_dtype), None, False
    order = ops_numpy.memory_order(x)
    v = x.transpose(order)
    rows = v.view()
    copy = None
    try:
        rows.shape = (-1, v.shape[-1]) if v.size else (0, 0)
    except AttributeError:  # not one row stride: copied
        dense = np.ascontiguousarray(v)
        rows = dense.reshape(-1, v.shape[-1])
        copy = functools.partial(np.copyto, dense, v)
    if rows.strides[-1] != 1 and rows.size:
        strided = rows
        rows = np.ascontiguousarray(strided)
        copy = functools.partial(np.copyto, rows, strided)
    inv = None if order == tuple(range(x.ndim)) else ops_numpy.inverse_order(order)
    y, kept = step.out_array(env, v.shape, out_dtype)
    return rows.view(np.uint8), copy, y, inv, kept


class ConcatStep(Step):
    """Concat of int8 tensors into one int8 tensor (channels-last for 3-5 dims): inputs of
    other scales / zero points are requantized first (dnnq.Reorder)."""

    primitive = "Concat"
    fresh_output = True

    def __init__(self, nodes, inputs, output, axis, qps, qd):
        super().__init__(nodes, inputs, [output])
        self.axis, self.qps, self.qd = axis, qps, qd
        self._re = {}
        self._descs = {}  # output shape -> its MemoryDesc
        self._same = None  # per input: its quantization is the output's (no requantize)
        #: input i -> the nearest Resize step that made it (planner: take_resize)
        self._resized = {}

    def take_resize(self, i, step):
        """Input i is the output of ``step``, an int8 nearest Resize that nothing else reads:
        the concatenation resizes into its own output instead (requantizing the smaller
        tensor first), one pass over the large one instead of three."""
        self._resized[i] = step
        self.nodes = self.nodes + step.nodes
        self.inputs = list(self.inputs)
        self.inputs[i] = step.inputs[0]  # the smaller tensor (run reads it from step)
        self.inputs += [x for x in step.inputs[1:] if x and x not in self.inputs]

    @property
    def impl_info(self):
        return ("resize into " if self._resized else "") + (
            "copy" if all(q.same_as(self.qd) for q in self.qps) else "requantize+copy")

    def _requant(self, i, x):
        """Input ``i`` requantized to the output's scale and zero point: (the array, the bound
        runner that wrote it or None); the runner writes the same array on every call."""
        key = (i, x.shape)
        prim = self._re.get(key)
        if prim is None:
            attr = dnnq.PrimitiveAttr()
            a = {}
            _qargs(A.DNNL_ARG_SRC, self.qps[i], attr, a)
            _qargs(A.DNNL_ARG_DST, self.qd, attr, a)
            tag = layout_tag(x.ndim) if _is_channels_last(x) else None
            prim = dnnq.Reorder(MemoryDesc(x.shape, self.qps[i].dt, tag),
                                MemoryDesc(x.shape, self.qd.dt, tag), attr)
            a[A.DNNL_ARG_SRC] = x
            # the bound runner: the static arguments checked once (the checked execute
            # was most of a small concatenation's time)
            self._re[key] = prim = (prim, a, prim.bind(a, (A.DNNL_ARG_SRC,)))
        prim, a, run = prim
        if run is None:
            args = dict(a)
            args[A.DNNL_ARG_SRC] = x
            return prim.execute(args), None
        return run(x, reuse=True), run  # read once, by this concatenation's copy

    @staticmethod
    def _repeat_pixels(x, reps, out, at):
        """The compiled copy for a channels-last 4-D part upsampled along H and W into the
        channel slice from ``at``; False where it does not apply."""
        xs, ds = _pixels(x, reps), _pixels(out, (1, 1))
        if xs is None or ds is None:
            return False
        _toolkit.repeat_pixels_into(xs, ds, reps[2], reps[3], at, dnnq.get_num_threads())
        return True

    def run(self, env):
        if self._repeated(env):
            return
        n = len(self.qps)
        parts = []  # (tensor, repeat factors or None, its shape in the output)
        for i, name in enumerate(self.inputs[:n]):
            rs = self._resized.get(i)
            if rs is None:
                x = env[name]
                parts.append((x, None, x.shape))
                continue
            x = env[rs.inputs[0]]
            sizes, reps = rs.nearest_geometry(env)
            if reps is None:  # not whole repeats: the general resize, then the copy
                rs.run(env)
                x = env[rs.outputs[0]]
                parts.append((x, None, x.shape))
            else:
                parts.append((x, reps, tuple(sizes)))
        nd = len(parts[0][2])
        ax = self.axis % nd
        shape = list(parts[0][2])
        shape[ax] = sum(p[2][ax] for p in parts)
        desc = self._descs.get(tuple(shape))
        if desc is None:
            desc = self._descs[tuple(shape)] = MemoryDesc(
                tuple(shape), self.qd.dt, layout_tag(nd) if ax == 1 else None)
        out = self.kept_desc(env, desc)
        kept = out is not None
        if out is None:
            out = desc.empty()
        same = self._same
        if same is None:  # the planner has settled the inputs' quantization by the first run
            same = self._same = [q.same_as(self.qd) for q in self.qps]
        at = 0
        # the run's calls, for warm runs to repeat: (the input, its bound requantize or None,
        # the pixels copied, where); None once a part takes another path
        calls = [] if not self._resized and ax == 1 else None
        for i, (x, reps, shp) in enumerate(parts):
            src, requant = x, None
            if not same[i]:
                x, requant = self._requant(i, x)
            sl = [slice(None)] * nd
            sl[ax] = slice(at, at + shp[ax])
            compiled = ax == 1 and self._repeat_pixels(x, reps or (1,) * nd, out, at)
            if not compiled and reps is None:
                out[tuple(sl)] = x
            elif not compiled:
                ops_numpy.repeat_into(x, reps, out[tuple(sl)])
            # (a requantize without a bound runner is not repeated)
            calls = calls if compiled and (requant is not None or same[i]) else None
            if calls is not None:
                calls.append((src, requant, _pixels(x, (1,) * nd), at))
            at += shp[ax]
        env[self.outputs[0]] = out
        if calls is not None:
            self._remember_copies(env, calls, out, kept)

    def _remember_copies(self, env, calls, out, kept):
        """Let warm runs repeat the requantizes (bound runners, writing the same arrays) and
        the compiled pixel copies of this run into the kept output."""
        dst, copy = _pixels(out, (1, 1)), _toolkit.repeat_pixels_into

        def call():
            t = dnnq.get_num_threads()
            for src, requant, pixels, at in calls:
                if requant is not None:
                    requant(src, reuse=True)
                copy(pixels, dst, 1, 1, at, t)
        self._remember(env, call, kept, [(p, s) for s, r, p, _ in calls if r is None])
