"""Steps of numpy ops (shapes, data movement, cheap element-wise math on f32 values) and of
int8 data movement (Resize / Concat as compiled pixel copies, lookup tables), on the step
classes of steps.py."""
import functools

import numpy as np

import dnnq
from dnnq import args as A
from dnnq.primitives._kernels import _toolkit
from dnnq.memory import MemoryDesc
from dnnq.onnx import ops_numpy
from dnnq.onnx.buffers import copies_then
from dnnq.onnx.quant import dequantize_np
from dnnq.onnx.steps import Step, _is_channels_last, _qargs, layout_tag, toolkit_isa


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

    def nearest_geometry(self, env, x=None):
        """(output sizes, whole repeat factors per axis or None) of this nearest Resize for
        this run's input (``x``: an array of its shape, where the input itself is not in
        ``env``), cached per input shape and parameters (the nearest indices cost more than
        the key); (None, None) for other modes."""
        x = env[self.inputs[0]] if x is None else x
        params = [x] + [None if not p else env[p] for p in self.inputs[1:]]
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
                return self._run_concat(env, xs)
            reps = (1, 1, 1, 1)
        else:
            xs = [env[self.inputs[0]]]
        if not all(isinstance(v, np.ndarray) and v.dtype == np.float32 and v.ndim == 4
                   for v in xs):
            return self.op == "Concat" and self._run_concat(env, xs)
        phys = [v.transpose(0, 2, 3, 1) for v in xs]
        if not all(p.flags.c_contiguous for p in phys):
            return self.op == "Concat" and self._run_concat(env, xs)
        if self.op == "Concat":
            n, _, h, w = xs[0].shape
            if any(v.shape[0] != n or v.shape[2:] != (h, w) for v in xs[1:]):
                return self._run_concat(env, xs)
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

    def _run_concat(self, env, xs):
        """Concat as one copy per input into its slice of the kept array, laid out as numpy's
        Concat step lays out its result (ops_numpy.concat_order); False (nothing done) for
        inputs of mixed dtypes or ranks, shapes that do not join, or without a kept
        array."""
        if not xs or not all(isinstance(v, np.ndarray) and v.dtype == xs[0].dtype and
                             v.ndim == xs[0].ndim >= 1 for v in xs):
            return False
        nd = xs[0].ndim
        axis = self.attrs.get("axis", 1)
        if not -nd <= axis < nd:
            return False
        axis %= nd
        if any(v.shape[:axis] != xs[0].shape[:axis] or
               v.shape[axis + 1:] != xs[0].shape[axis + 1:] for v in xs[1:]):
            return False
        shape = list(xs[0].shape)
        shape[axis] = sum(v.shape[axis] for v in xs)
        order = ops_numpy.concat_order(xs)
        y = self.kept_array(env, tuple(shape[i] for i in order), xs[0].dtype)
        if y is None:
            return False
        out = self.kept_view(y, ("order", order),
                             lambda v: v.transpose(ops_numpy.inverse_order(order)))
        copies, at = [], 0
        for v in xs:
            sl = [slice(None)] * nd
            sl[axis] = slice(at, at + v.shape[axis])
            copies.append((out[tuple(sl)], v))
            at += v.shape[axis]
        call = copies_then(copies)
        call()
        env[self.outputs[0]] = out
        self._remember(env, call, True)  # (the copies read the inputs themselves)
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
