"""FakeQuantize (OpenVINO's FakeQuantize-1) as a chain of post-ops, and standalone.

Definition (OpenVINO opset1, element-wise, bounds broadcast numpy-style)::

    if x <= min(input_low, input_high):   out = output_low
    elif x > max(input_low, input_high):  out = output_high
    else:  out = round((x - input_low) / (input_high - input_low) * (levels - 1))
                 / (levels - 1) * (output_high - output_low) + output_low

with ``round`` half to even (``nearbyint``) and every operation in f32.

``append_fake_quantize(post_ops, input_low, input_high, output_low, output_high, levels)``
appends to ``post_ops`` (a :class:`dnnq.PostOps`), with ``lo = min(input_low, input_high)`` and
``hi = max(input_low, input_high)`` per element (equal to input_low / input_high for ordered
bounds)::

    [checkpoint]                     (only in the select form, see below)
    binary max(lo)                   clamp
    binary min(hi)                   (select form: 1.0 where hi is a zero)
    binary sub(input_low)
    binary div(input_high - input_low)   (1 where they are equal)
    eltwise linear(levels - 1, 0)    one rounding: the product (select form: beta -0.0)
    eltwise round                    half to even
    binary div(levels - 1)
    binary mul(output_high - output_low)
    binary add(output_low)
    [select le(lo) -> output_low]    (only in the select form)
    [select gt(hi) -> output_high]

and returns the execution arguments of its inputs, ``{DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) |
DNNL_ARG_SRC_1: array}`` for the binary post-ops and the selects' conditions and
``{... | DNNL_ARG_SRC_2: array}`` for the selects' values (f32 arrays of the bounds' broadcast
shape, e.g. ``(1, C, 1, 1)`` per channel or ``(1,)`` per tensor; the differences are computed
in f32, as the formula).  Merge that dict into ``execute``'s arguments.

The nine-op chain alone is portable to oneDNN (binary and eltwise post-ops only).  Clamped to
``[lo, hi]`` it computes the formula in the same f32 operations, so it equals the definition
for every ``lo < x <= hi``; every ``x <= lo`` gives the chain's value at ``lo`` and every ``x >
hi`` its value at ``hi``.  Those are ``output_low`` and the formula's top level ``f32(f32(
output_high - output_low) + output_low)`` for ordered bounds -- the top level is
``output_high`` unless that sum rounds -- but not for reversed bounds (``input_low >
input_high``: the staircase falls, ``x = input_high`` and the next f32 above it may even be
merged by ``f32(x - input_low)``), nor above ``hi`` when ``input_low == input_high``.  A chain
of one register cannot tell those inputs apart afterwards (docs/toolkit.md section 7), so the
**select form** adds dnnq's extension post-ops: a ``checkpoint`` keeps ``x`` before the chain,
and the two selects replace the result by ``output_low`` where ``x <= lo`` and by
``output_high`` where ``x > hi``.

The select form is appended when any element has ``input_low > input_high``, or when the
nine-op chain's value at ``lo`` or at ``hi`` is not bit for bit ``output_low`` / ``output_high``
for some element (evaluated at append time with the chain's own f32 operations: a rounding top
level, ``input_low == input_high`` with different outputs, a ``-0.0`` output bound); otherwise
the nine-op chain is appended unchanged.  Two details of the select form keep the sign of a
zero the formula's: the linear post-op adds ``-0.0`` instead of ``+0.0`` (``x + -0.0`` is ``x``
for every ``x``, so a ``-0.0`` product -- ``0 / (input_high - input_low)`` with reversed bounds
-- stays ``-0.0``), and the ``min`` clamp uses ``1.0`` where ``hi`` is a zero (``min(-0.0,
+0.0)`` is ``+0.0``, which ``f32(x - input_low)`` tells apart when ``input_low`` is ``+0.0``;
everything above ``hi`` is replaced by the select anyway).  Either way the chain equals the
definition **bit for bit for every non-NaN input** (``+-inf`` and signed zeros included),
ordered and reversed bounds alike.

A NaN input is clamped to ``lo`` by the ``max`` (``a > b ? a : b``) and the selects'
comparisons are false for it, so it gives the chain's value at ``lo``: ``output_low`` for
ordered bounds in the nine-op form, ``f32(f32(+0 * f32(output_high - output_low)) +
output_low)`` -- ``output_low`` up to the sign of a zero -- for ordered bounds in the select
form, and the top level ``f32(f32(output_high - output_low) + output_low)`` for reversed
bounds.  (No post-op can keep the NaN: the selects compare with a given constant.)

``fake_quantize(x, input_low, input_high, output_low, output_high, levels)`` runs the select
form on an f32 array ``x`` (an identity :class:`dnnq.Eltwise` with the chain as post-ops) and
puts NaN inputs back, so its result equals the definition for every input (NaN stays NaN).
"""
from numbers import Integral

import numpy as np

from dnnq import args as A
from dnnq.errors import InvalidArguments
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
    with np.errstate(over="ignore"):  # an infinite difference is the formula's too
        span = (ih - il).astype(F32)
        mul = (oh - ol).astype(F32)
    span = np.where(span == 0, F32(1), span).astype(F32)
    return {"max": lo, "min": hi, "sub": il, "div": span,
            "div_levels": np.full(il.shape, F32(lv - 1), F32), "mul": mul, "add": ol}


def _chain_value(v, c, lv):
    """The nine-op chain on an f32 array ``v`` of the bounds' shape (no NaN), in the kernels'
    f32 operations: the clamps as ``a > b ? a : b`` / ``a < b ? a : b``, linear as one rounding
    of the product plus +0."""
    v = np.where(v > c["max"], v, c["max"]).astype(F32)
    v = np.where(v < c["min"], v, c["min"]).astype(F32)
    with np.errstate(all="ignore"):
        v = ((v - c["sub"]).astype(F32) / c["div"]).astype(F32)
        v = ((F32(lv - 1) * v).astype(F32) + F32(0)).astype(F32)
        v = np.rint(v).astype(F32)
        v = (v / c["div_levels"]).astype(F32)
        v = (v * c["mul"]).astype(F32)
        v = (v + c["add"]).astype(F32)
    return v


def _same_bits(a, b):
    return np.array_equal(np.asarray(a, F32).view(np.uint32), np.asarray(b, F32).view(np.uint32))


def _needs_select(il, ih, ol, oh, consts, lv):
    """Whether the nine-op chain alone differs from the definition somewhere (see the module
    docstring): reversed bounds, or its value at lo / hi is not output_low / output_high."""
    if np.any(il > ih):
        return True
    return not (_same_bits(_chain_value(consts["max"], consts, lv), ol)
                and _same_bits(_chain_value(consts["min"], consts, lv), oh))


def _append(ops, consts, lv, ol, oh, select, name):
    """Append the chain (the select form when ``select``); returns {arg id: array}."""
    base = len(ops)
    hi = consts["min"]
    if select:
        # min(x, +0.0) turns x = -0.0 into +0.0, which f32(x - input_low) can tell apart when
        # input_low is +0.0 (reversed bounds); the selects replace every x > hi, so any
        # constant above a zero hi gives the same results elsewhere
        hi = np.where(hi == 0, F32(1), hi).astype(F32)
    seq = [("binary", "max", consts["max"]), ("binary", "min", hi),
           ("binary", "sub", consts["sub"]), ("binary", "div", consts["div"]),
           ("eltwise", "linear", float(lv - 1)), ("eltwise", "round", None),
           ("binary", "div", consts["div_levels"]), ("binary", "mul", consts["mul"]),
           ("binary", "add", consts["add"])]
    if select:
        seq = [("checkpoint", None, None)] + seq + [("select", "le", (consts["max"], ol)),
                                                    ("select", "gt", (consts["min"], oh))]
    last = base + len(seq) - 1  # the last post-op has an input: its position must be < 31
    if base + len(seq) > 32 or last >= 31:
        raise InvalidArguments(
            f"{name}: the chain needs {len(seq)} post-ops and post_ops already has {base}; at "
            "most 32 in all, with inputs at positions < 31 (DNNL_ARG_ATTR_MULTIPLE_POST_OP)")
    inputs = {}
    for kind, alg, val in seq:
        idx = len(ops)
        po = A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)
        if kind == "binary":
            ops.append_binary(alg, MemoryDesc(val.shape, "f32"))
            inputs[po | A.DNNL_ARG_SRC_1] = val
        elif kind == "checkpoint":
            ops.append_checkpoint()
        elif kind == "select":
            cond, value = val
            ops.append_select(alg, MemoryDesc(cond.shape, "f32"), MemoryDesc(value.shape, "f32"))
            inputs[po | A.DNNL_ARG_SRC_1] = cond
            inputs[po | A.DNNL_ARG_SRC_2] = value
        elif alg == "linear":
            # the select form adds -0.0 (x + -0.0 is x for every x): the product keeps the sign
            # of a zero, as the formula's; the nine-op form keeps +0.0 (its inputs never give
            # a -0.0 product there, see the module docstring)
            ops.append_eltwise("linear", val, -0.0 if select else 0.0)
        else:
            ops.append_eltwise(alg)
    return inputs


def append_fake_quantize(post_ops, input_low, input_high, output_low, output_high, levels):
    """Append OpenVINO's FakeQuantize to a post-op chain.

    FakeQuantize clamps to ``[input_low, input_high]``, rounds to ``levels`` steps and maps
    the steps onto ``[output_low, output_high]``.  It becomes nine binary / eltwise post-ops
    (max, min, sub, mul, round, mul, add), or twelve with dnnq's checkpoint / select
    extensions where the nine alone would not be exact; either way the result equals the
    definition for every input, reversed bounds included.

    Parameters
    ----------
    post_ops : PostOps
        The chain to append to (modified in place).
    input_low, input_high, output_low, output_high : float or array_like
        Finite; numbers or arrays broadcastable to the destination (e.g. ``(1, C, 1, 1)``
        per channel of NCHW data, ``(N,)`` per column of a matmul), in any order
        (``input_low > input_high`` is a falling staircase).
    levels : int
        In [2, 65536].

    Returns
    -------
    dict
        The post-ops' inputs, ``{DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1: array,
        ...}``: merge it into every ``execute`` argument dict of the primitive.

    Raises
    ------
    InvalidArguments
        ``post_ops`` not a :class:`PostOps`, non-finite bounds, bounds that do not
        broadcast together, levels out of range, a chain that would exceed 32 post-ops.

    See Also
    --------
    fake_quantize

    Examples
    --------
    A MatMul whose f32 output goes through FakeQuantize to 256 levels on [0, 2.55]:

    >>> import numpy as np, dnnq
    >>> ops = dnnq.PostOps()
    >>> fq_args = dnnq.append_fake_quantize(ops, 0.0, 2.55, 0.0, 2.55, 256)
    >>> attr = dnnq.PrimitiveAttr().set_post_ops(ops)
    >>> mm = dnnq.MatMul(dnnq.MemoryDesc((1, 2), "u8"), dnnq.MemoryDesc((2, 3), "s8"),
    ...                  dnnq.MemoryDesc((1, 3), "f32"), attr=attr)
    >>> y = mm.execute({dnnq.DNNL_ARG_SRC: np.array([[1, 2]], np.uint8),
    ...                 dnnq.DNNL_ARG_WEIGHTS: np.array([[1, 0, -1], [1, 2, 3]], np.int8),
    ...                 **fq_args})
    >>> y.round(4)                           # [3, 4, 5] clamped to 2.55
    array([[2.55, 2.55, 2.55]], dtype=float32)
    """
    name = "append_fake_quantize"
    if not isinstance(post_ops, PostOps):
        raise InvalidArguments(f"{name}: post_ops got {type(post_ops).__name__}; expected a "
                               "dnnq.PostOps")
    lv = _levels(levels, name)
    il, ih, ol, oh = _bounds(name, input_low, input_high, output_low, output_high)
    consts = _chain_constants(il, ih, ol, oh, lv)
    select = _needs_select(il, ih, ol, oh, consts, lv)
    return _append(post_ops, consts, lv, ol, oh, select, name)


def fake_quantize(x, input_low, input_high, output_low, output_high, levels):
    """OpenVINO's FakeQuantize of an f32 array, as one call.

    ``y = round((clamp(x, input_low, input_high) - input_low) / (input_high - input_low) *
    (levels - 1)) / (levels - 1) * (output_high - output_low) + output_low``, computed by a
    post-op chain (:func:`append_fake_quantize`) equal to that definition for every input,
    reversed bounds included; NaN stays NaN.

    Parameters
    ----------
    x : numpy.ndarray of float32
        Any shape (at least 1-D).
    input_low, input_high, output_low, output_high : float or array_like
        Finite; numbers or arrays broadcastable to ``x``.
    levels : int
        In [2, 65536].

    Returns
    -------
    numpy.ndarray of float32
        ``x``'s shape.

    Raises
    ------
    InvalidArguments
        ``x`` not a float32 array of at least one dimension, non-finite or non-broadcasting
        bounds, levels out of range.

    See Also
    --------
    append_fake_quantize

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.fake_quantize(np.array([-1.0, 0.1, 0.26, 0.5, 2.0], np.float32),
    ...                    0.0, 1.0, 0.0, 1.0, levels=5)
    array([0.  , 0.  , 0.25, 0.5 , 1.  ], dtype=float32)
    """
    from dnnq.attr import PrimitiveAttr
    from dnnq.primitives.eltwise import Eltwise
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
    ops = PostOps()
    args = _append(ops, _chain_constants(il, ih, ol, oh, lv), lv, ol, oh, True, name)
    attr = PrimitiveAttr()
    attr.set_post_ops(ops)
    # relu with alpha 1 is the identity (x > 0 ? x : x * 1), -0.0, +-inf and NaN included
    d = MemoryDesc(x.shape, "f32")
    prim = Eltwise("relu", d, d, 1.0, 0.0, attr)
    args[A.DNNL_ARG_SRC] = x
    out = prim.execute(args)
    np.copyto(out, x, where=np.isnan(x))  # the clamp turned NaN into a number
    return out
