"""Convolution, deconvolution and matrix-product layers on dnnq's primitives.

A layer is what the fusion found (``fusion.LayerSpec``): the source (int8 with its scale and
zero point, or f32), weights already in dnnq's form (s8 with per-output-channel scales, or
f32), an f32 bias, a post-op chain and the destination (int8 with its scale and zero point,
or f32). The primitive depends on the source's shape, so it is created (and the weights
packed) once per input shape: at session creation for models with static shapes, at the
first run of a new shape otherwise.
"""
import numpy as np

import dnnq
from dnnq import args as A
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.onnx.buffers import REUSE, KeptOutput

F32 = np.float32
DATA_TAGS = {3: "nwc", 4: "nhwc", 5: "ndhwc"}
WEI_TAGS = {3: "oiw", 4: "oihw", 5: "oidhw"}
GWEI_TAGS = {3: "goiw", 4: "goihw", 5: "goidhw"}


def conv_padding(node_label, attrs, in_spatial, kernel, strides, dil, deconv=False):
    """(padding_l, padding_r) of an ONNX Conv / ConvTranspose / pooling node for this input."""
    nd = len(in_spatial)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = list(attrs.get("pads", [0] * (2 * nd)))
        return pads[:nd], pads[nd:]
    if auto == "VALID":
        return [0] * nd, [0] * nd
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise InvalidArguments(f"node {node_label!r}: auto_pad {auto!r}; expected NOTSET, "
                               "SAME_UPPER, SAME_LOWER or VALID")
    pl, pr = [], []
    for i in range(nd):
        ext = (kernel[i] - 1) * dil[i] + 1
        if deconv:
            total = max(0, (in_spatial[i] - 1) * strides[i] + ext - in_spatial[i] * strides[i])
        else:
            out = -(-in_spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + ext - in_spatial[i])
        small, big = total // 2, total - total // 2
        pl.append(big if auto == "SAME_LOWER" else small)
        pr.append(small if auto == "SAME_LOWER" else big)
    return pl, pr


def _postops(ops, dst_ndims, channels, matmul):
    """dnnq PostOps and the execution arguments of their inputs."""
    po = dnnq.PostOps()
    exec_args = {}
    sum_src = None
    for op in ops:
        kind = op[0]
        if kind == "eltwise":
            po.append_eltwise(op[1], op[2], op[3])
        elif kind == "binary":
            vals = np.ascontiguousarray(op[2], F32).reshape(-1)
            if matmul:
                dims = (1,) * (dst_ndims - 1) + (vals.size,)
            else:
                dims = (1, vals.size) + (1,) * (dst_ndims - 2)
            idx = len(po)
            po.append_binary(op[1], MemoryDesc(dims, "f32"))
            exec_args[A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | A.DNNL_ARG_SRC_1] = \
                vals.reshape(dims)
        elif kind == "sum":
            q = op[2]
            po.append_sum(float(q.scale[0]), int(q.zp[0]), q.dt)
            sum_src = op[1]
        else:  # pragma: no cover - fusion builds only the kinds above
            raise AssertionError(kind)
    return po, exec_args, sum_src


_SRC, _DST = A.DNNL_ARG_SRC, A.DNNL_ARG_DST


def _then(first, second):
    """``second`` after ``first`` (None: nothing) on the same argument dict."""
    if first is None:
        return second

    def both(args):
        first(args)
        second(args)
    return both


def _direct_execute(prim):
    """The C-level execute of a convolution or matrix product (``args -> destination``, or
    None where the arguments need the checked path), when its ``execute`` is only that call
    (no fused depthwise post-op) and DNNQ_VERBOSE, which execute logs, is off."""
    if getattr(prim, "_fused", None) is not None:
        return None
    ex = getattr(prim, "_exec", None)
    return None if ex is None else ex.run


def _direct_call(prim, a, update=None):
    """The repeat of ``prim``'s call on the argument dict ``a`` (``update(a)`` first: this
    run's values of arguments made per run): its C-level execute (execute, its checks and
    its error, where the C path refuses the arguments), else the checked path's call
    prepared once where the primitive can bind it (a configuration the C path does not
    take); None where it has neither."""
    direct = _direct_execute(prim)
    if direct is not None:
        def once():
            if direct(a) is None:
                prim.execute(a)
    else:
        bind = getattr(prim, "_bound_call", None)
        once = bind(a) if bind is not None else None
        if once is None:
            return None
    if update is None:
        return once

    def call():
        update(a)
        once()
    return call


class WeightedLayer(KeptOutput):
    """Common run-time part: a cache of (primitive, packed weights, args) per input shape."""

    primitive_name = ""
    fresh_output = True    # see steps.Step

    def __init__(self, spec):
        self.spec = spec
        self._kept = {}  # input shape -> the kept destination, or None
        self.inputs = [spec.src] + ([spec.sum_src] if spec.sum_src else []) + \
            ([spec.runtime_weights] if spec.runtime_weights else [])
        self.outputs = [spec.dst]
        self._plans = {}
        self.impl_info = None
        # the common case (no sum, no run-time weights, no layout conversion): per source
        # shape (primitive, args, the kept destination or None, post), so that a run does a
        # dict copy and one call
        self._simple = {} if spec.sum_src is None and spec.runtime_weights is None else None

    @property
    def _memo(self):
        """The repeat of the last run's call (KeptOutput._remember), or None."""
        return self._repeat

    def run(self, env):
        # the inputs and kept destination of the last run again (the session's buffers are
        # the same arrays every run): the same argument dict to the C-level execute, no copy
        # and no execute frame -- a third of a small layer's time (PP-OCR cls)
        if self._repeated(env):
            return
        x = env[self.spec.src]
        if self._simple is not None:
            fast = self._simple.get(x.shape)
            if fast is not None:
                prim, args, dst, post = fast
                a = dict(args)
                a[_SRC] = x
                if dst is not None and env.get(REUSE):
                    a[_DST] = dst
                y = prim.execute(a)
                env[self.spec.dst] = self._post(y, post, _DST in a)
                self._remember(env, _direct_call(prim, a), _DST in a)
                return
        self._run(env)
        # cached once the destination is decided: a run that may not reuse (the session's
        # first, or one overlapping another) leaves it to the next
        if self._simple is not None and (not self.keeps_output or env.get(REUSE)):
            prim, args, dst_desc, pre, post = self._plans[x.shape]
            if pre is None:
                self._simple[x.shape] = (prim, args, self._kept.get(x.shape), post)

    def _run(self, env):
        x = env[self.spec.src]
        key = x.shape if self.spec.runtime_weights is None else \
            (x.shape, env[self.spec.runtime_weights].shape)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(env)
            self.impl_info = plan[0].impl_info
        prim, args, dst_desc, pre, post = plan
        a = dict(args)
        stage = None  # (staging array, view of the source): pre's copy, repeated in place
        if pre is not None:  # (pre copies a transposed source: staged for the repeat)
            x, stage = self.staged_copy(env, (key, x.strides), x, tuple(plan[0].src_desc.dims),
                                        lambda: pre(x))
        a[A.DNNL_ARG_SRC] = x
        if self.spec.runtime_weights is not None:
            # packed here: execute then takes its C path (plain weights go through the
            # checked one, 5x the time for attention's small batched products)
            a[A.DNNL_ARG_WEIGHTS] = prim.prepare_weights(
                self._runtime_weights(env[self.spec.runtime_weights], prim))
        dst = self.kept_desc(env, dst_desc)
        kept = dst is not None
        if kept:
            self._kept[key] = dst
            a[A.DNNL_ARG_DST] = dst
        update, views = None, [(a[_SRC], env[self.spec.src])]
        if stage is not None:
            buf, view = stage
            update, views = (lambda args: np.copyto(buf, view)), [(view, env[self.spec.src])]
        if self.spec.sum_src is not None:
            if dst is None:
                dst = dst_desc.empty()
            prev = env[self.spec.sum_src]
            pv = prev.reshape(dst.shape) if prev.shape != dst.shape else prev
            np.copyto(dst, pv)
            a[A.DNNL_ARG_DST] = dst
            # the sum post-op reads dst: the copy repeats first (pv reading prev in place)
            update = _then(update, lambda args: np.copyto(args[_DST], pv))
            views = views + [(pv, prev)]
        if self.spec.runtime_weights is not None:
            w, src0, pack = env[self.spec.runtime_weights], env[self.spec.src], \
                prim.prepare_weights

            def weights(args):  # this run's weights (and source, when pre copies it)
                if pre is not None and stage is None:
                    args[_SRC] = pre(src0)
                args[A.DNNL_ARG_WEIGHTS] = pack(self._runtime_weights(w, prim))
            # (both a sum and run-time weights: not repeated)
            if self.spec.sum_src is None:
                update, views = _then(update, weights), views if stage is not None else []
            else:
                update = False
        y = prim.execute(a)
        env[self.spec.dst] = self._post(y, post, kept)
        self._remember(env, None if update is False else _direct_call(prim, a, update),
                       kept, views)

    def _post(self, y, post, kept):
        """The output: ``post(y)`` (a reshape) or ``y``; for the kept destination the same
        view object every run (KeptOutput.kept_view)."""
        if post is None:
            return y
        return self.kept_view(y, post, post) if kept else post(y)

    def _qargs(self, attr, wmask):
        """Scales / zero points of an int8 layer into ``attr`` and the execution args."""
        s = self.spec
        a = {}
        # rounding="every" computes ONNX Runtime's requantization with post-ops
        # (fusion._requantize_as_qlinear, a dividing QuantizeLinear): the scales they hold
        # stay 1 here
        src_in_post_ops, dst_in_post_ops = s.scales_in_post_ops
        if s.src_q is not None:
            wm = 0 if s.wscale.size == 1 else wmask
            if not src_in_post_ops:
                attr.set_scales_mask(A.DNNL_ARG_SRC, 0)
                a[A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC] = s.src_q.scale
                attr.set_scales_mask(A.DNNL_ARG_WEIGHTS, wm)
                a[A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS] = s.wscale
            if s.src_q.zp[0] != 0:
                attr.set_zero_points_mask(A.DNNL_ARG_SRC, 0)
                a[A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_SRC] = s.src_q.zp
            if s.wzp is not None and np.any(s.wzp != 0):
                attr.set_zero_points_mask(A.DNNL_ARG_WEIGHTS, 0 if s.wzp.size == 1 else wm)
                a[A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_WEIGHTS] = s.wzp
        if s.dst_q is not None:
            if not dst_in_post_ops:
                attr.set_scales_mask(A.DNNL_ARG_DST, 0)
                a[A.DNNL_ARG_SCALE | A.DNNL_ARG_DST] = s.dst_q.scale
            if s.dst_q.zp[0] != 0:
                attr.set_zero_points_mask(A.DNNL_ARG_DST, 0)
                a[A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST] = s.dst_q.zp
        return a

    @property
    def src_dt(self):
        return "f32" if self.spec.src_q is None else self.spec.src_q.dt

    @property
    def dst_dt(self):
        return "f32" if self.spec.dst_q is None else self.spec.dst_q.dt

    def _create(self, make, what):
        try:
            return make()
        except Unimplemented as exc:
            raise Unimplemented(f"{self.spec.label()}: dnnq cannot run this {what}: {exc}"
                                ) from None
        except InvalidArguments as exc:
            raise InvalidArguments(f"{self.spec.label()}: {exc}") from None


class ConvLayer(WeightedLayer):
    """Conv / ConvTranspose (1-D, 2-D, 3-D, groups) as dnnq.Convolution / Deconvolution,
    channels-last source and destination."""

    def __init__(self, spec):
        super().__init__(spec)
        self.primitive_name = "Deconvolution" if spec.kind == "deconv" else "Convolution"

    def _plan(self, env):
        s = self.spec
        x = env[s.src]
        if x.ndim not in (3, 4, 5):
            raise InvalidArguments(f"{s.label()}: input {s.src!r} of shape {x.shape}; "
                                   "expected 3, 4 or 5 dims (N, C, spatial...)")
        w = s.weights  # dnnq layout: (G, OC/G, IC/G, k...) or (OC, IC, k...)
        G = s.group
        nsp = x.ndim - 2
        k = list(w.shape[-nsp:])
        ic = w.shape[-nsp - 1] * G
        oc = w.shape[0] * (w.shape[1] if G > 1 else 1)
        if x.shape[1] != ic:
            raise InvalidArguments(f"{s.label()}: input {s.src!r} has {x.shape[1]} channels; "
                                   f"the weights take {ic}")
        strides = list(s.attrs.get("strides", [1] * nsp))
        dil = list(s.attrs.get("dilations", [1] * nsp))
        pl, pr = conv_padding(s.label(), s.attrs, x.shape[2:], k, strides, dil,
                              deconv=s.kind == "deconv")
        out = []
        for i in range(nsp):
            ext = (k[i] - 1) * dil[i] + 1
            if s.kind == "deconv":
                opad = list(s.attrs.get("output_padding", [0] * nsp))[i]
                pr[i] -= opad
                o = (x.shape[2 + i] - 1) * strides[i] - pl[i] - pr[i] + ext
            else:
                o = (x.shape[2 + i] + pl[i] + pr[i] - ext) // strides[i] + 1
            if o < 1:
                raise InvalidArguments(f"{s.label()}: input {s.src!r} of shape {x.shape} gives "
                                       f"an output size {o} along spatial dim {i}; expected "
                                       ">= 1")
            out.append(o)
        tag = DATA_TAGS[x.ndim]
        src_md = MemoryDesc(x.shape, self.src_dt, tag)
        wdt = "f32" if s.src_q is None else "s8"
        wmd = MemoryDesc(w.shape, wdt, GWEI_TAGS[x.ndim] if G > 1 else WEI_TAGS[x.ndim])
        dst_md = MemoryDesc((x.shape[0], oc, *out), self.dst_dt, tag)
        bmd = MemoryDesc((oc,), "f32") if s.bias is not None else None
        attr = dnnq.PrimitiveAttr()
        args = self._qargs(attr, 3 if G > 1 else 1)
        po, pargs, _ = _postops(s.post_ops, x.ndim, oc, matmul=False)
        args.update(pargs)
        if len(po):
            attr.set_post_ops(po)
        cls = dnnq.Deconvolution if s.kind == "deconv" else dnnq.Convolution
        prim = self._create(lambda: cls(src_md, wmd, dst_md, bmd, strides=strides,
                                        padding_l=pl, padding_r=pr,
                                        dilates=[d - 1 for d in dil], attr=attr),
                            f"{'f32 ' if s.src_q is None else ''}{self.primitive_name.lower()}")
        args[A.DNNL_ARG_WEIGHTS] = prim.prepare_weights(w)
        if s.bias is not None:
            args[A.DNNL_ARG_BIAS] = s.bias
        return prim, args, dst_md, None, None


class MatMulLayer(WeightedLayer):
    """MatMul / Gemm as dnnq.MatMul: constant weights packed once; a source of more than 3
    dims folded into rows; an activation as the second operand (attention) converted to s8."""

    primitive_name = "MatMul"

    def _plan(self, env):
        s = self.spec
        x = env[s.src]
        if s.runtime_weights is None:
            K, N = s.weights.shape
            if x.shape[-1] != K:
                raise InvalidArguments(f"{s.label()}: input {s.src!r} of shape {x.shape}; "
                                       f"expected the last dim {K}")
            lead = x.shape[:-1]
            rows = int(np.prod(lead)) if lead else 1
            src_md = MemoryDesc((rows, K), self.src_dt)
            wmd = MemoryDesc((K, N), "f32" if s.src_q is None else "s8")
            dst_md = MemoryDesc((rows, N), self.dst_dt)
            out_shape = lead + (N,)
            # dense sources take MatMul's C path (a slice of a transposed tensor, as an
            # attention head is, would go through the checked one)
            pre = (lambda v: np.ascontiguousarray(v.reshape(rows, K)))
            post = (lambda v: v.reshape(out_shape))
            nd = 2
        else:
            wshape = env[s.runtime_weights].shape
            if x.ndim < 2 or len(wshape) < 2 or x.shape[-1] != wshape[-2]:
                raise InvalidArguments(f"{s.label()}: inputs of shapes {x.shape} and {wshape}; "
                                       "expected (..., M, K) and (..., K, N)")
            batch = np.broadcast_shapes(x.shape[:-2], wshape[:-2])
            B = int(np.prod(batch)) if batch else 1
            M, K, N = x.shape[-2], x.shape[-1], wshape[-1]
            xb = int(np.prod(x.shape[:-2])) if x.ndim > 2 else 1
            wb = int(np.prod(wshape[:-2])) if len(wshape) > 2 else 1
            if xb not in (1, B) or wb not in (1, B) or \
                    (xb == B and x.shape[:-2] != batch and B > 1) or \
                    (wb == B and wshape[:-2] != batch and B > 1):
                raise Unimplemented(f"{s.label()}: batch dims {x.shape[:-2]} x {wshape[:-2]}; "
                                    "dnnq.onnx broadcasts a batch of 1 only")
            src_md = MemoryDesc((B if xb > 1 else 1, M, K), self.src_dt)
            wmd = MemoryDesc((B if wb > 1 else 1, K, N), "s8")
            dst_md = MemoryDesc((B, M, N), self.dst_dt)
            out_shape = tuple(batch) + (M, N)
            pre = (lambda v: np.ascontiguousarray(v.reshape(src_md.dims)))
            post = (lambda v: v.reshape(out_shape))
            nd = 3
        attr = dnnq.PrimitiveAttr()
        args = self._qargs(attr, 2 if nd == 2 else 4)
        po, pargs, _ = _postops(s.post_ops, nd, dst_md.dims[-1], matmul=True)
        args.update(pargs)
        if len(po):
            attr.set_post_ops(po)
        bmd = MemoryDesc((1,) * (nd - 1) + (dst_md.dims[-1],), "f32") \
            if s.bias is not None else None
        prim = self._create(lambda: dnnq.MatMul(src_md, wmd, dst_md, bmd, attr=attr),
                            f"{'f32 ' if s.src_q is None else ''}matmul")
        if s.runtime_weights is None:
            args[A.DNNL_ARG_WEIGHTS] = prim.prepare_weights(s.weights)
        if s.bias is not None:
            args[A.DNNL_ARG_BIAS] = s.bias.reshape(bmd.dims)
        return prim, args, dst_md, pre, post

    def _runtime_weights(self, b, prim):
        """An activation as MatMul weights: s8 (u8 shifted by 128, its zero point too)."""
        if b.dtype == np.uint8:
            b = (b.view(np.int8) ^ np.int8(-128))  # u8 - 128 as s8, exactly
        # (the dims of this input shape's plan: a session fed several shapes has one
        # plan per shape)
        return b.reshape(prim.weights_desc.dims)  # any strides: the packing reads them
