"""FakeQuantize (OpenVINO's FakeQuantize-1) as a chain of post-ops, and standalone.

Definition (OpenVINO opset1, element-wise, bounds broadcast numpy-style)::

    if x <= min(input_low, input_high):   out = output_low
    elif x > max(input_low, input_high):  out = output_high
    else:  out = round((x - input_low) / (input_high - input_low) * (levels - 1))
                 / (levels - 1) * (output_high - output_low) + output_low

with ``round`` half to even (``nearbyint``) and every operation in f32.

``append_fake_quantize(post_ops, input_low, input_high, output_low, output_high, levels)``
appends to ``post_ops`` (a :class:`dnnq.PostOps`)::

    binary max(input_low)            clamp: x <= input_low gives the formula's output_low
    binary min(input_high)
    binary sub(input_low)
    binary div(input_high - input_low)
    eltwise linear(levels - 1, 0)    one rounding: the product
    eltwise round                    half to even
    binary div(levels - 1)
    binary mul(output_high - output_low)
    binary add(output_low)

and returns ``{DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1: array}`` for the binary
post-ops (f32 arrays of the bounds' broadcast shape, e.g. ``(1, C, 1, 1)`` per channel or
``(1,)`` per tensor; the differences ``input_high - input_low`` and ``output_high - output_low``
are computed in f32, as the formula).  Merge that dict into ``execute``'s arguments.

Exactness of the chain against the formula above (evaluated in f32): every input with
``x <= input_high`` gives the formula's value bit for bit; an input ``x > input_high`` gives
``f32(f32(output_high - output_low) + output_low)`` -- the formula's top level -- which equals
``output_high`` unless that sum rounds (it is exact whenever ``output_low == 0``, ``output_low
== -output_high``, or more generally when ``output_low`` and ``output_high`` are within a
factor 2 of each other or of their difference; otherwise it is within one rounding of
``output_high``).  A NaN input gives ``output_low`` (the clamp's ``a > b ? a : b`` replaces
it).  ``input_low == input_high`` is handled (the division uses 1 there).

``input_low > input_high`` (OpenVINO then maps ``x <= input_high`` to ``output_low`` and
``x > input_low`` to ``output_high``, with the formula in between, a falling staircase) needs a
choice between the formula and a constant that depends on where ``x`` was *before* the chain
transformed it; a chain of post-ops carries one value (a comparison post-op replaces it with
1.0 / 0.0, so a mask cannot be combined with it later), ``x = input_high`` and the next f32
above it must give ``output_low`` and the top level although ``f32(x - input_low)`` may merge
them, and the operations exact on the staircase's inputs (clamps, sign, powers of two) cannot
separate neighbours -- see docs/toolkit.md section 7 -- so :func:`append_fake_quantize` raises
``Unimplemented`` for such bounds.
:func:`fake_quantize` (standalone) handles them exactly.

``fake_quantize(x, input_low, input_high, output_low, output_high, levels)`` runs the chain on
an f32 array ``x`` (a :class:`dnnq.Binary` ``max`` with the rest as post-ops) and then applies
the two end regions of the definition exactly, so its result equals the definition for every
input (NaN stays NaN), for ordered and reversed bounds alike.
"""
from numbers import Integral

import numpy as np

from dnnq import args as A
from dnnq.errors import InvalidArguments, Unimplemented
from dnnq.memory import MemoryDesc
from dnnq.post_ops import PostOps

F32 = np.float32
_MAX_LEVELS = 65536


def _levels(levels, name):
    if isinstance(levels, (bool, np.bool_)) or not isinstance(levels, Integral):
        raise InvalidArguments(f"{name}: levels got {levels!r} of type {type(levels).__name__}; "
                               f"expected an int in [2, {_MAX_LEVELS}]")
    lv = int(levels)
    if not 2 <= lv <= _MAX_LEVELS:
        raise InvalidArguments(f"{name}: levels got {lv}; expected an int in [2, {_MAX_LEVELS}]")
    return lv


def _bounds(name, il, ih, ol, oh, x_shape=None):
    """The four bounds as f32 arrays broadcast to one common shape (validated)."""
    out = []
    for what, v in (("input_low", il), ("input_high", ih), ("output_low", ol),
                    ("output_high", oh)):
        if isinstance(v, (str, bytes, bool, np.bool_)):
            raise InvalidArguments(f"{name}: {what} got {v!r}; expected a real number or array")
        try:
            a = np.asarray(v)
        except (TypeError, ValueError):
            raise InvalidArguments(f"{name}: {what} got {type(v).__name__}; expected a real "
                                   "number or array") from None
        if a.dtype.kind not in "iuf":
            raise InvalidArguments(f"{name}: {what} has dtype {a.dtype}; expected real numbers")
        with np.errstate(over="ignore", invalid="ignore"):
            a32 = a.astype(F32)
        if not np.all(np.isfinite(a32)):
            raise InvalidArguments(f"{name}: {what} has a value that is not finite in f32; "
                                   "expected finite bounds")
        out.append(a32)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in out))
    except ValueError:
        raise InvalidArguments(
            f"{name}: the bounds' shapes {[a.shape for a in out]} do not broadcast together; "
            "expected shapes such as () / (1,) (per tensor) or (1, C, 1, 1) (per channel)") \
            from None
    if x_shape is not None:
        try:
            full = np.broadcast_shapes(shape, x_shape)
        except ValueError:
            full = None
        if full != tuple(x_shape):
            raise InvalidArguments(f"{name}: bounds of shape {shape} do not broadcast to x of "
                                   f"shape {tuple(x_shape)}")
    if shape == ():
        shape = (1,)
    return [np.ascontiguousarray(np.broadcast_to(a, shape), dtype=F32) for a in out]


def _chain_constants(il, ih, ol, oh, lv):
    lo, hi = np.minimum(il, ih), np.maximum(il, ih)
    span = (ih - il).astype(F32)
    span = np.where(span == 0, F32(1), span).astype(F32)
    return {"max": lo, "min": hi, "sub": il, "div": span,
            "div_levels": np.full(il.shape, F32(lv - 1), F32),
            "mul": (oh - ol).astype(F32), "add": ol}


def _append(ops, consts, lv):
    """Append the chain; returns {post-op index: array}."""
    base = len(ops)
    seq = [("binary", "max", consts["max"]), ("binary", "min", consts["min"]),
           ("binary", "sub", consts["sub"]), ("binary", "div", consts["div"]),
           ("eltwise", "linear", float(lv - 1)), ("eltwise", "round", None),
           ("binary", "div", consts["div_levels"]), ("binary", "mul", consts["mul"]),
           ("binary", "add", consts["add"])]
    if base + len(seq) > 32:
        raise InvalidArguments(f"append_fake_quantize: the chain needs {len(seq)} post-ops and "
                               f"post_ops already has {base}; at most 32 in all")
    inputs = {}
    for kind, alg, val in seq:
        idx = len(ops)
        if kind == "binary":
            ops.append_binary(alg, MemoryDesc(val.shape, "f32"))
            inputs[idx] = val
        elif alg == "linear":
            ops.append_eltwise("linear", val, 0.0)
        else:
            ops.append_eltwise(alg)
    return inputs


def append_fake_quantize(post_ops, input_low, input_high, output_low, output_high, levels):
    """Append OpenVINO's FakeQuantize as post-ops to ``post_ops``; return the execution
    arguments (binary post-op inputs) to merge into ``execute``'s dict.

    Bounds: numbers or arrays broadcastable to the destination (e.g. ``(C, 1, 1)`` or
    ``(1, C, 1, 1)`` per channel of NCHW data, ``(N,)`` per column of a matmul), with
    ``input_low <= input_high`` (see the module docstring for reversed bounds); ``levels`` in
    [2, 65536].  See the module docstring for the chain and its exactness.
    """
    name = "append_fake_quantize"
    if not isinstance(post_ops, PostOps):
        raise InvalidArguments(f"{name}: post_ops got {type(post_ops).__name__}; expected a "
                               "dnnq.PostOps")
    lv = _levels(levels, name)
    il, ih, ol, oh = _bounds(name, input_low, input_high, output_low, output_high)
    if np.any(il > ih):
        i = int(np.flatnonzero((il > ih).reshape(-1))[0])
        raise Unimplemented(
            f"{name}: input_low > input_high (e.g. {il.reshape(-1)[i]!r} > "
            f"{ih.reshape(-1)[i]!r} at flat index {i}) is not supported in a post-op chain; "
            "supported: input_low <= input_high (use dnnq.fake_quantize for reversed bounds)")
    inputs = _append(post_ops, _chain_constants(il, ih, ol, oh, lv), lv)
    return {A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1: v for i, v in inputs.items()}


def fake_quantize(x, input_low, input_high, output_low, output_high, levels):
    """OpenVINO FakeQuantize of an f32 array ``x`` (any shape; bounds broadcastable to it),
    exact for every input and for reversed bounds (see the module docstring)."""
    from dnnq.attr import PrimitiveAttr
    from dnnq.primitives.binary import Binary
    name = "fake_quantize"
    if not isinstance(x, np.ndarray):
        raise InvalidArguments(f"{name}: x got {type(x).__name__}; expected a numpy.ndarray of "
                               "float32")
    if x.dtype != np.float32:
        raise InvalidArguments(f"{name}: x has dtype {x.dtype}; expected float32")
    if x.ndim == 0:
        raise InvalidArguments(f"{name}: x is 0-d; expected at least one dimension")
    lv = _levels(levels, name)
    il, ih, ol, oh = _bounds(name, input_low, input_high, output_low, output_high, x.shape)
    consts = _chain_constants(il, ih, ol, oh, lv)
    ops = PostOps()
    inputs = _append(ops, consts, lv)
    # the first clamp is the Binary primitive itself (max with input_low / min of the bounds)
    first = min(inputs)
    lo = inputs.pop(first)
    ops2 = PostOps()
    for i in range(1, len(ops)):
        op = ops[i]
        if op.kind == "binary":
            ops2.append_binary(op.alg, op.src1_desc)
        else:
            ops2.append_eltwise(op.alg, op.alpha, op.beta)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops2)
    prim = Binary("max", MemoryDesc(x.shape, "f32"), MemoryDesc(lo.shape, "f32"),
                  MemoryDesc(x.shape, "f32"), attr)
    args = {A.DNNL_ARG_SRC_0: x, A.DNNL_ARG_SRC_1: lo}
    for i, v in inputs.items():
        args[A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i - 1) | A.DNNL_ARG_SRC_1] = v
    out = prim.execute(args)
    # the two end regions of the definition, exactly
    with np.errstate(invalid="ignore"):
        np.copyto(out, np.broadcast_to(ol, out.shape), where=x <= consts["max"])
        np.copyto(out, np.broadcast_to(oh, out.shape), where=x > consts["min"])
        np.copyto(out, x, where=np.isnan(x))
    return out
