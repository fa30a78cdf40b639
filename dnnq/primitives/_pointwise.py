"""Shared machinery of the toolkit primitives (Reorder, Eltwise, Binary, Sum, Concat, Pooling).

* :class:`Program` builds a pointwise loop nest and its stage program for the C engine
  (``ukernels/dnnq_toolkit.h``): operands are tensors or runtime parameter vectors with
  element strides over the destination's *logical* dims; the program is compiled into a
  ``PwPlan`` whose iteration order is the destination's physical order with mergeable dims
  collapsed (so a per-tensor quantization of a contiguous tensor is one flat loop).
* ``QuantAttr``: the attribute planner shared with the GEMM family
  (:class:`dnnq.primitives._attr_plan.AttrPlan`).
* helpers for descriptors, output arrays and the run itself.
"""
import copy
import time

import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.primitives import _dispatch, _impls, _verbose
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.post_ops import ELTWISE_ALGS, BINARY_ALGS
from dnnq.primitives._kernels import _toolkit as _tk, _codes
from dnnq.primitives import _plan
from dnnq.primitives._common import (  # noqa: F401 (re-exported)
    arg_name, check_md, check_known_args, check_overlaps)
from dnnq.primitives._attr_plan import (  # noqa: F401 (re-exported: the toolkit primitives' names)
    AttrPlan as QuantAttr, fetch_post_op_inputs, resolve_data_mask)

DT_CODE = _codes.DT
ISA_CODE = _codes.ISA
ELT = _codes.ELTWISE
BIN = _codes.BINARY
CHUNK = _tk.CHUNK
# oneDNN's reference-kernel eltwise codes (primitives._plan) without abs, which the
# toolkit's models have not been checked against
REF_ELTWISE_CODE = {k: v for k, v in _plan.REF_ELTWISE_CODE.items() if k != ELT["abs"]}
_PARALLEL_MIN = 1 << 15   # elements below which a run stays on one thread
_BLOCK = 1 << 14          # work-item length along a long innermost dim

F32 = np.float32


def tensor_strides(desc, dims, name):
    """Element strides over the logical ``dims`` of a tensor described by ``desc`` (its own
    dense layout), broadcast numpy-style: ``desc`` may have fewer dims (right-aligned) and size
    1 where ``dims`` is larger (stride 0).  Raises InvalidArguments naming ``name`` otherwise."""
    dd = tuple(desc.dims)
    dims = tuple(dims)
    if len(dd) > len(dims):
        raise InvalidArguments(f"{name}: dims {dd} have more dimensions than {dims}; expected at "
                               f"most {len(dims)} dims broadcastable to {dims}")
    own = desc.strides
    pad = len(dims) - len(dd)
    out = [0] * len(dims)
    for i, (d, s) in enumerate(zip(dd, own)):
        t = dims[pad + i]
        if d == t:
            out[pad + i] = s if d > 1 else 0
        elif d == 1:
            out[pad + i] = 0
        else:
            raise InvalidArguments(f"{name}: dims {dd} do not broadcast to {dims}; expected each "
                                   "dimension equal or 1 (right-aligned)")
    return tuple(out)


class Program:
    """A pointwise loop nest over logical ``dims`` iterated in ``order`` (the destination's
    physical order), with operands and stages; ``build(isa)`` makes the C plan."""

    def __init__(self, dims, order):
        self.dims = tuple(int(d) for d in dims)
        self.order = tuple(order)
        self.operands = []     # [key, dt, logical strides, offset, writable]
        self._index = {}
        self.stages = []

    # operands ---------------------------------------------------------------------------
    def operand(self, key, dt, strides, offset=0, writable=False):
        """Register (or find) an operand bound at run time to ``arrays[key]``; returns its
        index.  ``strides``: element strides over the logical dims."""
        strides = tuple(int(s) for s in strides)
        k = (key, dt, strides, offset)
        if k in self._index:
            i = self._index[k]
            self.operands[i][4] |= writable
            return i
        self._index[k] = len(self.operands)
        self.operands.append([key, dt, strides, offset, writable])
        return len(self.operands) - 1

    # stages -------------------------------------------------------------------------------
    def _stage(self, op, buf=0, arg=0, arg2=0, alg=0, alpha=0.0, beta=0.0, params=(-1,) * 6,
               arg3=-1):
        self.stages.append((op, buf, arg, arg2, alg, float(alpha), float(beta), tuple(params),
                            arg3))

    def binary2(self, buf, alg, k0, k1, zp0=None, s0=None, zp1=None, s1=None, store_k=None,
                dst_mul=None, dst_add=None):
        """buf = alg((f32(src0) - zp0) * s0, (f32(src1) - zp1) * s1) (absent steps skipped;
        uses buf + 1 too), stored into operand ``store_k`` when given, after ``* dst_mul``
        then ``+ dst_add`` (a destination scale's reciprocal and zero point: the same two
        roundings as bin_opnd mul / add before the store)."""
        if store_k is None and (dst_mul is not None or dst_add is not None):
            raise AssertionError("binary2: dst_mul / dst_add apply to a stored result")
        params = tuple(-1 if k is None else k for k in (zp0, s0, zp1, s1, dst_mul, dst_add))
        self._stage(_tk.BINARY2, buf, k0, k1, BIN[alg], params=params,
                    arg3=-1 if store_k is None else store_k)

    def affine(self, buf, src_k, sub=None, mul1=None, mul2=None, add=None, store_k=None):
        """buf = (((f32(src) - sub) * mul1) * mul2) + add (absent steps skipped), stored into
        operand ``store_k`` too when given.  Arguments are operand indices."""
        params = tuple(-1 if k is None else k for k in (sub, mul1, mul2, add))
        self._stage(_tk.AFFINE, buf, src_k, -1 if store_k is None else store_k, params=params)

    def load(self, buf, k):
        self._stage(_tk.LOAD, buf, k)

    def bin_opnd(self, buf, alg, k):
        self._stage(_tk.BIN_OPND, buf, k, 0, BIN[alg])

    def bin_buf(self, buf, alg, other):
        self._stage(_tk.BIN_BUF, buf, other, 0, BIN[alg])

    def sum_fma(self, buf, prev, scale, zero_point):
        """buf = fma(scale, buf[prev] - zero_point, buf): oneDNN's JIT sum (one rounding)."""
        self._stage(_tk.SUM, buf, prev, 0, 0, scale, zero_point)

    def bin_const(self, buf, alg, c):
        self._stage(_tk.BIN_CONST, buf, 0, 0, BIN[alg], c)

    def eltwise(self, buf, alg, alpha=0.0, beta=0.0, fused_linear=True):
        """``fused_linear=False``: linear as ``alpha * x`` then ``+ beta`` (two roundings), as
        oneDNN's reference (ref:any) kernels; its JIT kernels fuse them into one fma."""
        code = ELT[alg]
        if not fused_linear:  # oneDNN's reference kernel (linear, hardsigmoid, hardswish)
            code = REF_ELTWISE_CODE.get(code, code)
        elif code == ELT["relu"] and alpha == 0.0:
            code = _tk.ELT_RELU_MAX0  # its JIT kernels: max(x, 0), so -0.0 and NaN give +0.0
        self._stage(_tk.ELTWISE, buf, 0, 0, code, alpha, beta)

    def store(self, buf, k):
        self._stage(_tk.STORE, buf, k)

    def save(self, buf, to):
        """buf ``to`` = buf ``buf`` (the checkpoint post-op)."""
        self._stage(_tk.SAVE, buf, to)

    def select(self, buf, alg, saved, cond_k, value_k, scratch):
        """buf = alg(buf ``saved``, cond) ? value : buf (the select post-op; ``alg`` a
        comparison, IEEE); the value operand is loaded into buf ``scratch``."""
        self._stage(_tk.SELECT, buf, cond_k, value_k, BIN[alg], params=(saved, scratch, -1, -1))

    def copy(self, src_k, dst_k):
        self._stage(_tk.COPY, 0, src_k, dst_k)

    # plan ---------------------------------------------------------------------------------
    def iteration(self, collapse=True):
        """(dims, per-operand strides) in iteration order, size-1 dims dropped and mergeable
        neighbours merged when ``collapse`` is True; ``collapse="rows"`` merges only the outer
        (row) dims, keeping the innermost dim and the row numbering (row-major) unchanged."""
        dims = [self.dims[i] for i in self.order]
        sts = [[op[2][i] for i in self.order] for op in self.operands]
        if collapse == "rows":
            if len(dims) <= 2:
                return dims, sts
            rd, rs = self._merge(dims[:-1], [s[:-1] for s in sts], drop_ones=False)
            return rd + dims[-1:], [a + s[-1:] for a, s in zip(rs, sts)]
        if not collapse:
            return dims, sts
        return self._merge(dims, sts, drop_ones=True)

    @staticmethod
    def _merge(dims, sts, drop_ones):
        if drop_ones:
            keep = [i for i, d in enumerate(dims) if d != 1] or [len(dims) - 1]
            dims = [dims[i] for i in keep]
            sts = [[s[i] for i in keep] for s in sts]
        out_d, out_s = [dims[0]], [[s[0]] for s in sts]
        for i in range(1, len(dims)):
            if all(os_[-1] == s[i] * dims[i] for os_, s in zip(out_s, sts)):
                out_d[-1] *= dims[i]
                for os_, s in zip(out_s, sts):
                    os_[-1] = s[i]
            else:
                out_d.append(dims[i])
                for os_, s in zip(out_s, sts):
                    os_.append(s[i])
        return out_d, out_s

    def build(self, isa, collapse=True):
        dims, sts = self.iteration(collapse)
        if collapse is True:
            groups = _row_groups(dims, sts)
            if groups is not None:
                return self._build_grouped(isa, dims, sts, *groups)
        return self._bound(isa, dims, sts, [op[3] for op in self.operands],
                           [op[0] for op in self.operands])

    def _bound(self, isa, dims, sts, offsets, keys):
        inner = dims[-1]
        block = 0 if inner <= 2 * _BLOCK else _BLOCK
        ops = [(DT_CODE[op[1]], tuple(st), off)
               for op, st, off in zip(self.operands, sts, offsets)]
        plan = _tk.PwPlan(ISA_CODE[isa], dims, block, ops, list(self.stages),
                          _impls.optional_feature("avx512_vbmi", isa))
        return BoundPlan(plan, keys, [bool(op[4]) for op in self.operands])

    def _build_grouped(self, isa, dims, sts, k, tiled):
        """Rows of C elements run k at a time as rows of k C: the operands laid out row after
        row keep their memory, an operand broadcast over the rows (a per-channel vector, an
        SE block's scales) binds to its row repeated k times (made at run time); the R % k
        rows left run on the plain plan."""
        R, C = dims
        q, r = divmod(R, k)
        wide_sts, keys = [], []
        for i, (op, (so, si)) in enumerate(zip(self.operands, sts)):
            if i in tiled:
                wide_sts.append((0, 1))
                keys.append(("rows", k, op[0]))
            else:
                wide_sts.append((0 if so == 0 else k * C, si))
                keys.append(op[0])
        main = self._bound(isa, [q, k * C], wide_sts, [op[3] for op in self.operands], keys)
        main.tiles = [(("rows", k, op[0]), op[0], op[3], C, k)
                      for i, op in enumerate(self.operands) if i in tiled]
        if r:
            offs = [op[3] + (q * k * so) for op, (so, si) in zip(self.operands, sts)]
            main.tail = self._bound(isa, [r, C], sts, offs, [op[0] for op in self.operands])
        return main


#: rows (innermost runs) shorter than this are grouped into rows of at least _ROW_GROUP
#: elements where the operands allow it (_row_groups): the engine's fixed cost per row
#: (the stage program's set-up) made a broadcast multiply of 24-channel nhwc data run at a
#: tenth of the speed of the same multiply on 192 channels
_SHORT_ROW = 128
_ROW_GROUP = 512


def _row_groups(dims, sts):
    """(k, indices of the operands to repeat) when the 2-D iteration ``dims`` = (R, C) has
    short rows whose operands are each a scalar, laid out row after row, or one row
    broadcast over the rows; else None."""
    if len(dims) != 2 or dims[1] >= _SHORT_ROW or dims[0] < 2:
        return None
    R, C = dims
    tiled = set()
    for i, (so, si) in enumerate(sts):
        if (so, si) == (0, 0) or (so, si) == (C, 1):
            continue
        if (so, si) == (0, 1):
            tiled.add(i)
            continue
        return None
    return min(R, -(-_ROW_GROUP // C)), tiled


class BoundPlan:
    """A PwPlan and the keys of the arrays its operands bind to; ``tiles``: operands bound to
    a row repeated (Program._build_grouped), ``tail``: the plan of the rows left over."""

    __slots__ = ("plan", "keys", "writable", "n_elems", "tiles", "tail")

    def __init__(self, plan, keys, writable):
        self.plan, self.keys, self.writable = plan, keys, writable
        self.n_elems = plan.n_elems
        self.tiles, self.tail = (), None

    def run(self, arrays):
        for tkey, key, off, C, k in self.tiles:
            row = np.asarray(arrays[key]).ravel(order="K")[off:off + C]
            rows = np.empty((k, C), row.dtype)  # the row k times (np.tile costs 3x this)
            rows[...] = row
            arrays[tkey] = rows.reshape(-1)
        self.plan.run([arrays[k] for k in self.keys], self.writable,
                      threads_for(self.n_elems))
        if self.tail is not None:
            self.tail.run(arrays)


def threads_for(n_elems):
    return _dispatch.get_num_threads() if n_elems >= _PARALLEL_MIN else 1


def reciprocal(scales):
    """f32(1 / scale), computed in f32 as oneDNN does."""
    return np.divide(F32(1.0), scales, dtype=F32)


def add_post_ops(prog, qa, dims, dst_k, dst_dt, buf=0, tmp=3, saved=2, fused_linear=True):
    """Append the attribute's post-ops (eltwise, binary, sum, checkpoint, select) acting on
    ``buf``; binary inputs and select conditions bind to the keys ``("post_op", i)``, select
    values to ``("post_op_value", i)``; returns {key: desc} of those inputs.  ``tmp`` is a
    scratch buffer (sum, select), ``saved`` holds the checkpoint's value; both must differ from
    ``buf`` and from the buffers the program keeps across its post-ops.
    ``fused_linear``: see :meth:`Program.eltwise` (the sum post-op is fused alike)."""
    if len({buf, tmp, saved}) != 3:  # pragma: no cover - callers pass distinct buffers
        raise AssertionError("add_post_ops: buf, tmp and saved must be distinct buffers")
    binaries = {}
    for i, op in enumerate(qa.post_ops):
        if op.kind == "eltwise":
            prog.eltwise(buf, op.alg, op.alpha, op.beta, fused_linear)
        elif op.kind == "binary":
            name = f"{qa.prim}: post_op[{i}] src1"
            st = tensor_strides(op.src1_desc, dims, name)
            k = prog.operand(("post_op", i), op.src1_desc.dt, st)
            prog.bin_opnd(buf, op.alg, k)
            binaries[("post_op", i)] = op.src1_desc
        elif op.kind == "sum":
            if op.dt is not None and op.dt != dst_dt:
                raise Unimplemented(f"{qa.prim}: post_op[{i}] sum with data type {op.dt} differs "
                                    f"from the destination data type {dst_dt}; supported: None "
                                    "or the destination data type")
            prog.load(tmp, dst_k)
            if fused_linear:  # oneDNN's JIT kernels fuse the sum too
                prog.sum_fma(buf, tmp, op.scale, float(F32(op.zero_point)))
                continue
            if op.zero_point:
                prog.bin_const(tmp, "sub", float(F32(op.zero_point)))
            prog.bin_const(tmp, "mul", op.scale)
            prog.bin_buf(buf, "add", tmp)
        elif op.kind == "checkpoint":
            prog.save(buf, saved)
        elif op.kind == "select":
            keys = []
            for key, desc, what in ((("post_op", i), op.cond_desc, "src_1"),
                                    (("post_op_value", i), op.value_desc, "src_2")):
                st = tensor_strides(desc, dims, f"{qa.prim}: post_op[{i}] {what}")
                keys.append(prog.operand(key, desc.dt, st))
                binaries[key] = desc
            prog.select(buf, op.alg, saved, keys[0], keys[1], tmp)
        else:  # pragma: no cover - QuantAttr filters the kinds
            raise Unimplemented(f"{qa.prim}: post_op[{i}] of kind {op.kind} is not supported")
    return binaries


def require(prim, args, key, what):
    if key not in args:
        raise InvalidArguments(f"{prim}.execute: missing {what} ({arg_name(key)})")
    return args[key]


def output(prim, desc, args, inputs=()):
    """(user array or None, physical buffer to write).  A given DNNL_ARG_DST must match
    ``desc`` and be writeable; when it is laid out differently a contiguous copy is returned
    (its contents kept, for a sum post-op) and the caller copies back with ``finish``."""
    user = args.get(A.DNNL_ARG_DST)
    if user is None:
        return None, np.empty(desc.physical_shape, desc.numpy_dtype)
    phys = desc.check_output(user, "dst")
    return user, phys


def unalias(phys, arrays):
    """Copy inputs that share memory with the output buffer (the in-place input that
    check_overlaps let through: the kernels read it from a copy)."""
    for k, v in list(arrays.items()):
        if type(v) is np.ndarray and v is not phys and np.may_share_memory(v, phys):
            arrays[k] = v.copy()


def finish(desc, user, phys):
    if user is None:
        return desc.logical_view(phys)
    desc.copy_back(user, phys)
    return user


def run_into_dst(prim, plan, desc, args, arrays, has_sum=False, in_place=None):
    """The end of every single-plan execute: the destination (given or new; a sum post-op
    needs the given one), overlaps refused (but ``in_place``, the input id that may be dst's
    very memory, whose copy is read), the plan run, the result returned."""
    if has_sum and A.DNNL_ARG_DST not in args:
        raise InvalidArguments(f"{prim}.execute: a sum post-op reads the previous destination, "
                               "but no DNNL_ARG_DST array was given")
    user, phys = output(prim, desc, args)
    if user is not None:
        if check_overlaps(prim, args, in_place={A.DNNL_ARG_DST: in_place} if in_place else None):
            unalias(phys, arrays)  # in place: the kernels read a copy of that input
    arrays["dst"] = phys
    plan.run(arrays)
    return finish(desc, user, phys)


class ToolkitPrimitive:
    """Common bits: verbose lines and timing around ``_run``."""

    _kind = "toolkit"
    impl_info = ""
    #: {source argument id: (plan array key, descriptor attribute)} of the primitives that
    #: have bind() (None: no bound runner)
    _dynamic = None
    _bound_run = None  # bind's runner class (BoundRun unless the primitive runs its own way)

    def _descs(self):
        return ()

    def _problem(self):
        return ""

    def _verbose(self, event, ms):
        _verbose.line(event, self._kind, self.impl_info, self._descs(), self.attr,
                      self._problem(), ms)

    def bind(self, args, dynamic=None):
        """A runner for repeated executions that change only the source arrays.

        The other arguments of ``args`` (scales, zero points, post-op inputs) are validated
        here, once.  Each call of the runner checks only each source's type, dtype, shape and
        layout, then runs the kernel; a source that differs from those of ``args`` goes
        through :meth:`execute` (with the rest of ``args``), so errors read the same.

        Parameters
        ----------
        args : dict
            A complete execution-argument dict, as :meth:`execute` takes, without
            ``DNNL_ARG_DST``.
        dynamic : sequence of int, optional
            The argument ids the runner takes, in that order (default: every source, in
            argument-id order).  The others stay those of ``args``.

        Returns
        -------
        callable or None
            ``runner(*sources, reuse=False) -> numpy.ndarray``: a new destination each call,
            or with ``reuse=True`` the array of the runner's previous ``reuse=True`` call,
            overwritten (for a caller that no longer reads it: no allocation); None for a
            primitive without one (Sum, Concat, or a sum post-op, which reads a given
            destination).

        Raises
        ------
        InvalidArguments
            As :meth:`execute`, for ``args``.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> attr = dnnq.PrimitiveAttr()
        >>> attr.set_scales_mask(dnnq.DNNL_ARG_DST, 0)
        >>> q = dnnq.Reorder(dnnq.MemoryDesc((4,), "f32"), dnnq.MemoryDesc((4,), "u8"), attr)
        >>> run = q.bind({dnnq.DNNL_ARG_SRC: np.zeros(4, np.float32),
        ...               dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST: np.float32([0.5])})
        >>> run(np.float32([0.0, 0.7, 1.3, 200.0]))
        array([  0,   1,   3, 255], dtype=uint8)
        """
        if self._dynamic is None or getattr(self, "_has_sum", False) or A.DNNL_ARG_DST in args:
            return None
        arrays = self._arrays(args)
        slots = []
        for arg in sorted(self._dynamic) if dynamic is None else dynamic:
            key, desc_attr = self._dynamic[arg]
            desc = getattr(self, desc_attr)
            slots.append((arg, key, desc.numpy_dtype, tuple(desc.dims),
                          desc.logical_view(np.empty(desc.physical_shape,
                                                     desc.numpy_dtype)).strides,
                          desc._order if desc.is_channels_last else None))
        return self._bound_run(self, args, arrays, slots)

    def _timed(self, fn, *a):
        if _verbose._level:
            t0 = time.perf_counter()
            out = fn(*a)
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
            return out
        return fn(*a)

    def _created(self):
        if _verbose.enabled(2):
            self._verbose("create", None)


def kernel_name(isa):
    return _tk.kernel_isa_name(ISA_CODE[isa])


def _same_layout(a, b, dims):
    """Strides `a` and `b` address the same elements of an array of `dims` (a dim of one
    element has any stride: a (1, C, 1, 1) channels-last view and its plain twin)."""
    return all(x == y for x, y, d in zip(a, b, dims) if d != 1)


class BoundRun:
    """ToolkitPrimitive.bind's runner."""

    __slots__ = ("prim", "args", "arrays", "slots", "desc", "plan", "kept", "last")

    def __init__(self, prim, args, arrays, slots):
        self.prim, self.args, self.arrays, self.slots = prim, dict(args), arrays, slots
        self.desc, self.plan = prim.dst_desc, prim._plan
        self.kept = None
        #: the arrays of the last reuse=True call that passed the checks (None after one
        #: that did not): ``_run(last, last["dst"])`` repeats it, for callers that know the
        #: sources are the same arrays (dnnq.onnx's warm steps)
        self.last = None

    def __call__(self, *srcs, reuse=False):
        arrays = dict(self.arrays)
        for x, (arg, key, dt, dims, strides, order) in zip(srcs, self.slots):
            if type(x) is not np.ndarray or x.dtype != dt or x.shape != dims or \
                    not x.flags.aligned or (x.strides != strides and
                                            not _same_layout(x.strides, strides, dims)):
                self.last = None
                return self._slow(srcs)
            arrays[key] = x if order is None else x.transpose(order)
        desc = self.desc
        phys = self.kept if reuse else None
        if phys is None:
            phys = np.empty(desc.physical_shape, desc.numpy_dtype)
            if reuse:
                self.kept = phys
        arrays["dst"] = phys
        self.last = arrays if reuse else None
        if _verbose._level:
            return self.prim._timed(self._run, arrays, phys)
        return self._run(arrays, phys)

    def _run(self, arrays, phys):
        self.plan.run(arrays)
        return self.desc.logical_view(phys)

    def _slow(self, srcs):
        args = dict(self.args)
        for x, slot in zip(srcs, self.slots):
            args[slot[0]] = x
        return self.prim.execute(args)


ToolkitPrimitive._bound_run = BoundRun
