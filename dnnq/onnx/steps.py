"""The executed steps of a session that run one dnnq primitive on their inputs (besides the
weighted layers of layers.py): quantize / dequantize / requantize reorders, pooling, binary,
eltwise and softmax ops, and the base classes every step derives from.  The numpy ops and the
int8 data movement are in move_steps.py, the f32 patterns between layers that become one
primitive in f32_fusion_steps.py.

Every step has ``inputs`` / ``outputs`` (names in the run's environment), ``nodes`` (the ONNX
nodes it covers), ``primitive`` (the dnnq primitive's name or ``numpy:<op>``), ``impl_info``
and ``run(env)``. Primitives depend on the input shape: each step keeps one per shape.
"""
import numpy as np

import dnnq
from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._kernels import _codes
from dnnq.primitives._pointwise import _same_layout
from dnnq.primitives.reorder import QuantizeLinear
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.onnx.buffers import REUSE, KeptOutput, copies_then
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
        copies = ()
        if reuse and self.replayable:
            srcs, copies = self._staged(run, srcs)
        y = run(*srcs, reuse=reuse)
        last = run.last
        if reuse and last is not None:
            # the runner wrote the kept array (run.last: its checked path, not execute's new
            # array): the same view of it each run
            y = self.kept_view(run.kept, run, run.desc.logical_view)
        run.last = None  # (held by the repeat alone: a caller's input is not kept alive)
        if reuse and self.replayable and last is not None:
            kernel = run._run
            self._armed = copies_then(copies, lambda: kernel(last, last["dst"]))
        return y

    def _staged(self, run, srcs):
        """``srcs`` with each source that the bound runner would send to its checked path
        for its layout alone (a strided view: a transposed or sliced attention head) copied
        into a staging array of the runner's layout, the same array every run -- the copy
        execute would make, but the call can then be repeated (the copy first) -- and the
        (staging, source) pairs."""
        out, copies = list(srcs), []
        for i, (x, (_, _, dt, dims, strides, _)) in enumerate(zip(srcs, run.slots)):
            if type(x) is not np.ndarray or x.dtype != dt or x.shape != dims or \
                    _same_layout(x.strides, strides, dims) or 0 in dims:
                continue
            staging = self.__dict__.setdefault("_staging", {})
            buf = staging.get((id(run), i))
            if buf is None:  # (runners live as long as the step)
                nbytes = int(np.prod(dims)) * np.dtype(dt).itemsize
                buf = staging[(id(run), i)] = np.ndarray(dims, dt, np.empty(nbytes, np.uint8),
                                                         0, strides)
            np.copyto(buf, x)
            out[i] = buf
            copies.append((buf, x))
        return out, tuple(copies)

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
    """Quantize (f32 -> int8; a model input per tensor by ONNX's formula,
    reorder.QuantizeLinear), dequantize (int8 -> f32) or requantize (int8 -> int8)."""

    primitive = "Reorder"
    fresh_output = True
    replayable = True
    #: write a channels-last destination (set by the planner when convolutions read it)
    channels_last_out = False

    def __init__(self, nodes, src, dst, src_q, dst_q, onnx_formula=False):
        """onnx_formula: quantize by ONNX's formula (reorder.QuantizeLinear: the planner's
        choice for a model input) rather than oneDNN's order."""
        super().__init__(nodes, [src], [dst])
        self.src_q, self.dst_q, self.onnx_formula = src_q, dst_q, onnx_formula

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
        if self.onnx_formula and self.src_q is None and self.dst_q.per_tensor:
            # ONNX's formula (round, then the zero point), not Reorder's (oneDNN's)
            prim = QuantizeLinear(MemoryDesc(shape, sdt, tag), MemoryDesc(shape, ddt, dtag),
                                  float(self.dst_q.scale.reshape(-1)[0]),
                                  int(self.dst_q.zp.reshape(-1)[0]))
            return prim, {}, x.shape
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


def pool_geometry(label, op, attrs, shape):
    """(kernel, strides, dilations, padding_l, padding_r, output sizes) of an ONNX pooling
    node on an input of ``shape``; padding_r is what the output sizes need (ceil_mode)."""
    nsp = len(shape) - 2
    a = attrs
    if op.startswith("Global"):
        k, s, d, pl, pr = list(shape[2:]), [1] * nsp, [1] * nsp, [0] * nsp, [0] * nsp
    else:
        k = list(a["kernel_shape"])
        s = list(a.get("strides", [1] * nsp))
        d = list(a.get("dilations", [1] * nsp))
        pl, pr = conv_padding(label, a, shape[2:], k, s, d)
    out = []
    for i in range(nsp):
        ext = (k[i] - 1) * d[i] + 1
        span = shape[2 + i] + pl[i] + pr[i] - ext
        o = (-(-span // s[i]) if a.get("ceil_mode", 0) else span // s[i]) + 1
        if a.get("ceil_mode", 0) and (o - 1) * s[i] >= shape[2 + i] + pl[i]:
            o -= 1  # the last window must start inside the input or the left padding
        pr[i] = (o - 1) * s[i] + ext - shape[2 + i] - pl[i]
        out.append(o)
    return k, s, d, pl, pr, out


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
        a = self.attrs
        k, s, d, pl, pr, out = pool_geometry(self.nodes[0], self.op, a, x.shape)
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


class EltwiseStep(PrimStep):
    """A unary activation on dnnq.Eltwise with source / destination scales and zero points."""

    primitive = "Eltwise"
    fresh_output = True
    replayable = True
    #: the destination C-contiguous whatever the source's layout (else the source's layout)
    plain_dst = False

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
                            MemoryDesc(shape, "f32" if self.qd is None else self.qd.dt,
                                       None if self.plain_dst else tag),
                            self.alpha, self.beta, attr)
        return prim, a, x.shape

    def execute(self, plan, env):
        prim, a, shape = plan
        args = dict(a)
        args[A.DNNL_ARG_SRC] = x = env[self.inputs[0]].reshape(prim.src_desc.dims)
        run = self._bound(plan, args, (A.DNNL_ARG_SRC,))
        y = self._call(run, (x,), env) if run is not None else prim.execute(args)
        env[self.outputs[0]] = y if y.shape == shape else y.reshape(shape)


class SoftmaxStep(PrimStep):
    """Softmax (opset 13: one axis) on dnnq.Softmax, f32 source, f32 or int8 destination."""

    primitive = "Softmax"
    fresh_output = True
    replayable = True

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
        args[A.DNNL_ARG_SRC] = x = env[self.inputs[0]]
        run = self._bound(plan, args, (A.DNNL_ARG_SRC,))
        env[self.outputs[0]] = self._call(run, (x,), env) if run is not None else \
            plan[0].execute(args)
