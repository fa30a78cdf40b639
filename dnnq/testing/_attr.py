"""Primitive attributes (runtime scales, zero points, post-ops) and the execution helper.

:class:`Attr` records what was set at creation time so that, once the primitive
descriptor exists, it can produce the matching execution arguments (the scale /
zero-point memories and the binary post-op sources).  :func:`run` executes a
primitive with user (plain-layout) numpy arrays, reordering them into and out
of the layouts the primitive chose when it was created with ``format_tag_any``.
"""

from __future__ import annotations

import numpy as np

from ._capi import (Scope, arg_multiple_post_op, as_operand, const, dt_name, md_equal, np_dtype,
                    query_md)

_ELTWISE = ("relu", "tanh", "elu", "square", "abs", "sqrt", "linear", "soft_relu", "hardsigmoid",
            "logistic", "exp", "gelu_tanh", "swish", "log", "clip", "clip_v2", "pow", "gelu_erf",
            "round", "mish", "hardswish")
_BINARY = ("add", "mul", "max", "min", "div", "sub", "ge", "gt", "le", "lt", "eq", "ne")


def alg_kind(kind: str, name: str) -> int:
    """``dnnl_<kind>_<name>`` (``name`` may already carry the ``<kind>_`` prefix)."""
    name = name[len("dnnl_"):] if name.startswith("dnnl_") else name
    name = name[len(kind) + 1:] if name.startswith(kind + "_") else name
    known = {"eltwise": _ELTWISE, "binary": _BINARY}.get(kind)
    if known is not None and name not in known:
        raise ValueError(f"unknown {kind} algorithm {name!r}; known: {', '.join(known)}")
    return const(f"dnnl_{kind}_{name}")


def mask_count(dims, mask: int) -> int:
    """Number of scale / zero-point values for ``mask`` over ``dims``."""
    count = 1
    for i, d in enumerate(dims):
        if mask >> i & 1:
            count *= int(d)
    return count


def broadcast_to_ndims(a: np.ndarray, ndims: int) -> np.ndarray:
    """Prepend unit dimensions (oneDNN wants equal ranks for broadcast operands)."""
    if a.ndim > ndims:
        raise ValueError(f"operand of shape {a.shape} has more than {ndims} dimensions")
    return a.reshape((1,) * (ndims - a.ndim) + a.shape)


class Attr:
    """A ``dnnl_primitive_attr_t`` plus the runtime values it will need at execution."""

    def __init__(self, scope: Scope):
        self.scope = scope
        self.handle = scope.create("dnnl_primitive_attr_create", "dnnl_primitive_attr_destroy")
        self._runtime = []  # (exec arg, values, dtype, mask, base arg)
        self._binary_src = {}  # exec arg -> array
        self.sum_dt = None

    def scales(self, arg: int, values, mask: int = 0) -> "Attr":
        if values is not None:
            self.scope.call("dnnl_primitive_attr_set_scales_mask", self.handle, arg, int(mask))
            self._runtime.append((const("DNNL_ARG_ATTR_SCALES") | arg, values, np.float32, mask, arg))
        return self

    def zero_points(self, arg: int, values, mask: int = 0) -> "Attr":
        if values is not None:
            self.scope.call("dnnl_primitive_attr_set_zero_points_mask", self.handle, arg, int(mask))
            self._runtime.append((const("DNNL_ARG_ATTR_ZERO_POINTS") | arg, values, np.int32, mask, arg))
        return self

    def post_ops(self, ops, dst_ndims: int) -> "Attr":
        """Append ``("eltwise", alg, alpha=0, beta=0)``, ``("binary", alg, src1)``,
        ``("sum", scale=1, zero_point=0, dt=None)`` entries in chain order."""
        if not ops:
            return self
        scope = self.scope
        po = scope.create("dnnl_post_ops_create", "dnnl_post_ops_destroy")
        for i, op in enumerate(ops):
            kind, params = op[0], op[1:]
            if kind == "eltwise":
                alg, alpha, beta = (tuple(params) + (0.0, 0.0))[:3]
                scope.call("dnnl_post_ops_append_eltwise", po, alg_kind("eltwise", alg),
                           float(alpha), float(beta))
            elif kind == "binary":
                alg, src1 = params
                src1 = broadcast_to_ndims(as_operand(src1), dst_ndims)
                scope.call("dnnl_post_ops_append_binary", po, alg_kind("binary", alg),
                           scope.md_of(src1))
                self._binary_src[arg_multiple_post_op(i) | const("DNNL_ARG_SRC_1")] = src1
            elif kind == "sum":
                scale, zp, dt = (tuple(params) + (1.0, 0, None)[len(params):])[:3]
                dnnl_dt = const("dnnl_data_type_undef") if dt is None else const("dnnl_" + dt_name(dt))
                self.sum_dt = None if dt is None else dt_name(dt)
                scope.call("dnnl_post_ops_append_sum", po, float(scale), int(zp), dnnl_dt)
            elif kind == "dw":  # ("dw", weights_dt, bias_dt or None, dst_dt, kernel, stride, pad)
                wdt, bdt, ddt, k, st, pad = params
                undef = const("dnnl_data_type_undef")
                scope.call("dnnl_post_ops_append_dw", po, const("dnnl_" + dt_name(wdt)),
                           undef if bdt is None else const("dnnl_" + dt_name(bdt)),
                           const("dnnl_" + dt_name(ddt)), int(k), int(st), int(pad))
            else:
                raise ValueError(f"unknown post-op kind {kind!r} (eltwise, binary, sum, dw)")
        scope.call("dnnl_primitive_attr_set_post_ops", self.handle, po)
        return self

    def exec_args(self, dims_by_arg: dict) -> dict:
        """Execution memories for the runtime values; counts are checked against the
        masks over ``dims_by_arg[base arg]`` when the dims are known."""
        args = {}
        for exec_arg, values, dtype, mask, base in self._runtime:
            values = np.asarray(values)
            if base in dims_by_arg:
                want = mask_count(dims_by_arg[base], mask)
                if values.size != want:
                    raise ValueError(f"argument {base}: mask {mask} over dims "
                                     f"{tuple(dims_by_arg[base])} needs {want} values, "
                                     f"got {values.size}")
            if dtype is np.int32 and values.dtype.kind == "f" and np.any(values != np.rint(values)):
                raise ValueError("zero points must be integers")
            args[exec_arg] = self.scope.values(values, dtype)
        for exec_arg, src1 in self._binary_src.items():
            args[exec_arg] = self.scope.wrap(src1)
        return args


def prefilled_dst(shape, dt: str, dst_prev, sum_dt=None) -> np.ndarray:
    """Destination buffer of ``shape`` / ``dt``, holding ``dst_prev`` (for sum) if given.

    A ``dst_prev`` in the sum post-op's own data type of the same size is copied
    bytewise (oneDNN reinterprets the buffer); otherwise it is value-converted.
    """
    dtype = np_dtype(dt)
    if dst_prev is None:
        return np.zeros(shape, dtype=dtype)
    prev = np.asarray(dst_prev)
    prev = np.broadcast_to(prev, shape) if prev.shape != tuple(shape) else prev
    if prev.dtype != dtype and sum_dt is not None and prev.dtype == np_dtype(sum_dt) \
            and prev.itemsize == dtype.itemsize:
        return np.ascontiguousarray(prev).view(dtype).copy()
    out = np.array(prev, dtype=dtype, order="C")
    if prev.dtype != dtype and not np.array_equal(out, prev):
        raise ValueError(f"dst_prev values do not fit the destination type {dt}")
    return out


def run(scope: Scope, pd, inputs: dict, outputs: dict, extra: dict | None = None,
        prefill=()) -> None:
    """Execute the primitive of ``pd``.

    ``inputs`` / ``outputs`` map execution args to user numpy arrays (plain or
    strided layouts).  Each one whose layout differs from what ``pd`` expects is
    reordered into a oneDNN-allocated memory of the expected layout (inputs before
    execution, outputs after; outputs listed in ``prefill`` also before, for the
    sum post-op).  ``extra`` holds ready-made memories (scales, zero points, ...).
    """
    args = dict(extra or {})
    back = []
    for arg, a in list(inputs.items()) + list(outputs.items()):
        user = scope.wrap(a)
        want = query_md(pd, arg)
        if md_equal(scope.mem_md(user), want):
            args[arg] = user
            continue
        internal = scope.memory(want)
        if arg in inputs or arg in prefill:
            scope.reorder(user, internal)
        if arg in outputs:
            back.append((internal, user))
        args[arg] = internal
    scope.execute(scope.primitive(pd), args)
    for internal, user in back:
        scope.reorder(internal, user)
