"""Post-op chains (SPEC section 5): eltwise, binary, sum and depthwise-convolution post-ops.

``ops = PostOps()`` then ``ops.append_eltwise(alg, alpha, beta)``, ``ops.append_binary(alg,
src1_desc)``, ``ops.append_sum(scale, zero_point, dt)``, ``ops.append_dw(...)``; the chain runs
in append order on the f32 value, before the destination scale and zero point (see
``reference/ONEDNN_FACTS.md`` section 1).  ``len(ops)``, ``ops.kind(i)`` (``"eltwise"``,
``"binary"``, ``"sum"``, ``"convolution"``, ``"checkpoint"`` or ``"select"``) and ``ops[i]`` (a
frozen dataclass) read it back.

dnnq extensions (oneDNN 3.2 has no equivalent; a chain using them is not portable to it):

* ``ops.append_checkpoint()`` remembers the chain's current f32 value of every element (a
  second register; the value itself is unchanged);
* ``ops.append_select(alg, cond_desc, value_desc)``, ``alg`` one of :data:`SELECT_ALGS`
  (``le``, ``lt``, ``ge``, ``gt``, ``eq``, ``ne``; a ``select_`` prefix is accepted): per element,
  ``f = value if saved <alg> cond else f``, where ``saved`` is the value stored by the latest
  checkpoint before it, ``cond`` is given at execution as ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) |
  DNNL_ARG_SRC_1`` and ``value`` as ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_2`` (the
  third input, as oneDNN's later ``binary_select`` numbers it), both f32 and broadcast to the
  destination like a binary post-op's input.  The comparisons are IEEE: with a NaN operand
  every one is false except ``ne``.  ``dnnq.append_fake_quantize`` uses them (reversed
  bounds).

Algorithm names are canonicalised without their prefix: ``"eltwise_relu"`` and ``"relu"`` are
the same algorithm, and so are ``"binary_add"`` and ``"add"``.  The order of
:data:`ELTWISE_ALGS` / :data:`BINARY_ALGS` is the numbering of the kernels' ``DNNQ_ELT_*`` /
``DNNQ_BIN_*`` enums (see ``alg_id``).

Validation (every failure raises :class:`~dnnq.errors.InvalidArguments`, naming what was given):

* alpha, beta, sum scale: real (not bool), finite and finite in f32; they are stored rounded to
  f32, the precision oneDNN keeps;
* clip and clip_v2 need ``beta >= alpha`` (as oneDNN's ``is_eltwise_ok``);
* soft_relu needs ``alpha != 0`` (oneDNN 3 defines it as ``log(1 + exp(alpha*x)) / alpha``; use
  ``alpha=1`` for the classic softplus -- the default ``alpha=0.0`` would divide by zero);
* at most one sum and at most one depthwise post-op per chain (what oneDNN's int8
  implementations accept); sum zero point an int in s32, sum dt None or a data type;
* a binary post-op's ``src1_desc`` is a :class:`~dnnq.memory.MemoryDesc` (f32, s8, u8 or s32);
  its position must be < 31 so that ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)`` can address it;
* a select post-op's ``cond_desc`` and ``value_desc`` are f32 MemoryDescs, its position < 31,
  and a checkpoint must precede it in the chain;
* at most 32 post-ops in a chain (oneDNN's limit).

``PostOps`` is mutable (append), so it is not hashable itself: ``key()`` returns a hashable
tuple of its entries for the primitive cache, and ``==`` compares those keys.
"""

import math
from dataclasses import dataclass, fields
from numbers import Integral, Real
from typing import Optional

import numpy as np

from .errors import invalid, real_to_float
from .memory import MemoryDesc, as_dt
from .primitives._kernels import _codes

__all__ = [
    "ELTWISE_ALGS", "BINARY_ALGS", "SELECT_ALGS", "POST_OP_KINDS", "MAX_POST_OPS",
    "canonical_eltwise_alg", "canonical_binary_alg", "canonical_select_alg", "eltwise_alg_id",
    "binary_alg_id", "EltwiseOp", "BinaryOp", "SumOp", "DepthwiseOp", "CheckpointOp",
    "SelectOp", "PostOps",
]

#: Eltwise algorithms; the index is the kernels' DNNQ_ELT_* value (ukernels/dnnq_codes.h).
ELTWISE_ALGS = tuple(_codes.ELTWISE)
#: Binary algorithms; the index is the kernels' DNNQ_BIN_* value.
BINARY_ALGS = tuple(_codes.BINARY)
#: Comparisons of the select post-op (dnnq extension); each is the binary algorithm of that
#: name applied to (saved, cond), so its kernel code is its index in BINARY_ALGS.
SELECT_ALGS = ("le", "lt", "ge", "gt", "eq", "ne")
POST_OP_KINDS = ("eltwise", "binary", "sum", "convolution", "checkpoint", "select")
MAX_POST_OPS = 32
_MAX_BINARY_POS = 31
_S32_MIN, _S32_MAX = -(2 ** 31), 2 ** 31 - 1


def _canonical(alg, prefix, algs, what):
    if not isinstance(alg, str):
        raise invalid(what, f"{alg!r} of type {type(alg).__name__}",
                      f"one of {', '.join(algs)} (a '{prefix}' prefix is accepted)")
    name = alg[len(prefix):] if alg.startswith(prefix) else alg
    if name not in algs:
        raise invalid(what, repr(alg), f"one of {', '.join(algs)} (a '{prefix}' prefix is "
                      "accepted)")
    return name


def canonical_eltwise_alg(alg):
    """``"eltwise_relu"`` / ``"relu"`` -> ``"relu"``; unknown names raise InvalidArguments."""
    return _canonical(alg, "eltwise_", ELTWISE_ALGS, "eltwise algorithm")


def canonical_binary_alg(alg):
    """``"binary_add"`` / ``"add"`` -> ``"add"``; unknown names raise InvalidArguments."""
    return _canonical(alg, "binary_", BINARY_ALGS, "binary algorithm")


def canonical_select_alg(alg):
    """``"select_le"`` / ``"le"`` -> ``"le"``; unknown names raise InvalidArguments."""
    return _canonical(alg, "select_", SELECT_ALGS, "select algorithm")


def eltwise_alg_id(alg):
    """The kernels' numeric id (DNNQ_ELT_*) of an eltwise algorithm."""
    return ELTWISE_ALGS.index(canonical_eltwise_alg(alg))


def binary_alg_id(alg):
    """The kernels' numeric id (DNNQ_BIN_*) of a binary algorithm."""
    return BINARY_ALGS.index(canonical_binary_alg(alg))


def _f32_param(value, name):
    """A finite real parameter, returned as the Python float of its f32 rounding."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise invalid(name, f"{value!r} of type {type(value).__name__}", "a finite real number")
    v = real_to_float(value)
    with np.errstate(over="ignore"):
        f = np.float32(v)
    if not np.isfinite(v) or not np.isfinite(f):
        raise invalid(name, repr(value), "a finite real number that fits f32 (|x| < 3.4e38)")
    return float(f)


def _int_param(value, name, lo, hi):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise invalid(name, f"{value!r} of type {type(value).__name__}", "an int")
    v = int(value)
    if not lo <= v <= hi:
        raise invalid(name, v, f"an int in [{lo}, {hi}]")
    return v


def _negative_zeros(op):
    """Names of the float fields of ``op`` that are -0.0."""
    return tuple(f.name for f in fields(op) if isinstance(getattr(op, f.name), float)
                 and getattr(op, f.name) == 0.0 and math.copysign(1.0, getattr(op, f.name)) < 0)


@dataclass(frozen=True)
class EltwiseOp:
    """An eltwise post-op: ``f = alg(f, alpha, beta)``."""

    alg: str
    alpha: float = 0.0
    beta: float = 0.0
    kind = "eltwise"

    @property
    def alg_id(self):
        return ELTWISE_ALGS.index(self.alg)


@dataclass(frozen=True)
class BinaryOp:
    """A binary post-op: ``f = alg(f, src1)``, src1 given at execution as
    ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1`` (i = position in the chain)."""

    alg: str
    src1_desc: MemoryDesc
    kind = "binary"

    @property
    def alg_id(self):
        return BINARY_ALGS.index(self.alg)


@dataclass(frozen=True)
class SumOp:
    """A sum post-op: ``f += scale * (f32(dst_prev) - zero_point)``; ``dt`` (None = the dst's)
    is how the previous destination contents are read."""

    scale: float = 1.0
    zero_point: int = 0
    dt: Optional[str] = None
    kind = "sum"


@dataclass(frozen=True)
class DepthwiseOp:
    """A fused depthwise-convolution post-op (oneDNN ``append_dw``); its weights, bias and
    scales are passed as ``DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS`` etc."""

    weights_dt: str
    bias_dt: Optional[str]
    dst_dt: str
    kernel_size: int
    stride_size: int
    padding_l_size: int
    kind = "convolution"


@dataclass(frozen=True)
class CheckpointOp:
    """dnnq extension: remember the chain's current f32 value of every element (for the select
    post-ops after it); the value itself is unchanged."""

    kind = "checkpoint"


@dataclass(frozen=True)
class SelectOp:
    """dnnq extension: ``f = value if saved <alg> cond else f`` per element, ``saved`` the value
    of the latest checkpoint before it; ``cond`` is given at execution as
    ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1``, ``value`` as ``... | DNNL_ARG_SRC_2``
    (both f32, broadcast to the destination)."""

    alg: str
    cond_desc: MemoryDesc
    value_desc: MemoryDesc
    kind = "select"

    @property
    def alg_id(self):
        """The kernels' comparison code (DNNQ_BIN_* of the same name)."""
        return BINARY_ALGS.index(self.alg)


class PostOps:
    """An ordered chain of post-ops, run on the f32 result before the destination scale.

    The chain runs in append order on each element's f32 value, after the source / weights
    scales and the bias and before the destination scale and zero point (the user guide's
    post-ops page has the formulas).  Attach it with :meth:`PrimitiveAttr.set_post_ops`.
    The inputs of binary (and select) post-ops are given at execution as
    ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1``, ``i`` the post-op's position.

    ``len(ops)``, ``ops[i]`` (a frozen record of the entry) and :meth:`kind` read the chain
    back; two chains compare equal when their entries are equal.  Algorithm names are
    accepted with or without their ``eltwise_`` / ``binary_`` prefix.

    Raises
    ------
    InvalidArguments
        From the ``append_*`` methods: an unknown algorithm, a parameter that is not finite
        in f32, clip bounds with ``beta < alpha``, soft_relu with ``alpha == 0``, a second sum
        or depthwise post-op, a binary or select post-op at position 31 or later, more than
        32 post-ops.

    See Also
    --------
    PrimitiveAttr.set_post_ops, append_fake_quantize

    Notes
    -----
    dnnq extensions (oneDNN 3.2 has no equivalent): :meth:`append_checkpoint` and
    :meth:`append_select`, which :func:`append_fake_quantize` uses for reversed bounds.

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> ops = dnnq.PostOps()
    >>> _ = ops.append_eltwise("relu").append_binary("add", dnnq.MemoryDesc((1, 3), "f32"))
    >>> len(ops), ops.kind(1)
    (2, 'binary')
    >>> attr = dnnq.PrimitiveAttr().set_post_ops(ops)
    >>> mm = dnnq.MatMul(dnnq.MemoryDesc((2, 4), "u8"), dnnq.MemoryDesc((4, 3), "s8"),
    ...                  dnnq.MemoryDesc((2, 3), "f32"), attr=attr)
    >>> mm.execute({dnnq.DNNL_ARG_SRC: np.ones((2, 4), np.uint8),
    ...             dnnq.DNNL_ARG_WEIGHTS: -np.ones((4, 3), np.int8),
    ...             dnnq.DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | dnnq.DNNL_ARG_SRC_1:
    ...                 np.array([[0.5, 1.5, 2.5]], np.float32)})   # relu(-4) + [0.5 1.5 2.5]
    array([[0.5, 1.5, 2.5],
           [0.5, 1.5, 2.5]], dtype=float32)
    """

    __slots__ = ("_ops",)

    def __init__(self):
        self._ops = []

    # --- building ------------------------------------------------------------------------------
    def _append(self, op):
        if len(self._ops) >= MAX_POST_OPS:
            raise invalid("post-ops", f"a chain of {len(self._ops)} post-ops and one more",
                          f"at most {MAX_POST_OPS} post-ops")
        self._ops.append(op)
        return self

    def append_eltwise(self, alg, alpha=0.0, beta=0.0):
        """Append an element-wise function ``f = alg(f; alpha, beta)``.

        Parameters
        ----------
        alg : str
            relu, tanh, elu, square, abs, sqrt, linear, soft_relu, logistic, exp, gelu_tanh,
            gelu_erf, swish, log, clip, clip_v2, pow, round, mish, hardswish, hardsigmoid
            (an ``eltwise_`` prefix is accepted).  The formulas are oneDNN's, as
            :func:`dnnq.eltwise_math.eltwise_reference` computes them.
        alpha, beta : float, optional
            The algorithm's parameters (e.g. ``linear``: ``alpha * x + beta``; ``clip``:
            bounds ``[alpha, beta]``; ``relu``: the negative slope ``alpha``).  Finite in f32;
            kept as f32.

        Returns
        -------
        PostOps
            ``self``, so that calls chain.

        Raises
        ------
        InvalidArguments
            For an unknown algorithm, parameters that are not finite in f32, clip /
            clip_v2 with ``beta < alpha``, soft_relu with ``alpha == 0``, a full chain.

        Examples
        --------
        >>> import dnnq
        >>> len(dnnq.PostOps().append_eltwise("clip", 0.0, 6.0))
        1
        """
        name = canonical_eltwise_alg(alg)
        a = _f32_param(alpha, f"{name} alpha")
        b = _f32_param(beta, f"{name} beta")
        if name in ("clip", "clip_v2") and b < a:
            raise invalid(f"{name} alpha/beta", f"alpha={a!r}, beta={b!r}",
                          "beta >= alpha (alpha is the lower bound, beta the upper)")
        if name == "soft_relu" and a == 0.0:
            raise invalid("soft_relu alpha", a, "a nonzero alpha (oneDNN 3: log(1 + exp(alpha*x))"
                          " / alpha; alpha=1 is the classic softplus)")
        return self._append(EltwiseOp(name, a, b))

    def append_binary(self, alg, src1_desc):
        """Append a binary operation ``f = alg(f, src1)`` with a second input given at execution.

        The input comes as ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1``, ``i`` this
        post-op's position in the chain; it broadcasts to the destination (each dim 1 or the
        destination's: per tensor, per channel, full).

        Parameters
        ----------
        alg : str
            add, sub, mul, div, min, max, ge, gt, le, lt, eq, ne (a ``binary_`` prefix is
            accepted).
        src1_desc : MemoryDesc
            The second input: f32, s8, u8 or s32.

        Returns
        -------
        PostOps
            ``self``.

        Raises
        ------
        InvalidArguments
            For an unknown algorithm, a ``src1_desc`` that is not a :class:`MemoryDesc`,
            a position of 31 or more.

        Examples
        --------
        >>> import dnnq
        >>> ops = dnnq.PostOps().append_binary("mul", dnnq.MemoryDesc((1, 64, 1, 1), "f32"))
        >>> ops.binary_positions()
        [0]
        """
        name = canonical_binary_alg(alg)
        if not isinstance(src1_desc, MemoryDesc):
            raise invalid("binary src1_desc", f"{src1_desc!r} of type "
                          f"{type(src1_desc).__name__}", "a dnnq.MemoryDesc")
        if len(self._ops) >= _MAX_BINARY_POS:
            raise invalid("binary post-op position", len(self._ops),
                          f"a position < {_MAX_BINARY_POS} (DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) "
                          "addresses idx < 31)")
        return self._append(BinaryOp(name, src1_desc))

    def append_sum(self, scale=1.0, zero_point=0, dt=None):
        """Append a sum with the destination's previous contents: ``f += scale * (dst_prev - zero_point)``.

        Pass the array to accumulate into as ``DNNL_ARG_DST`` (a residual connection, for
        example); it is read, then overwritten.  Computed as one fused multiply-add, as
        oneDNN's kernels do.

        Parameters
        ----------
        scale : float, optional
            Finite in f32.
        zero_point : int, optional
            In the s32 range.
        dt : str, optional
            The data type to read ``dst_prev`` as (None: the destination's).

        Returns
        -------
        PostOps
            ``self``.

        Raises
        ------
        InvalidArguments
            For a second sum in the chain, a scale that is not finite in f32, a zero point
            outside s32, an unknown data type.

        Examples
        --------
        >>> import dnnq
        >>> dnnq.PostOps().append_sum(0.5).kind(0)
        'sum'
        """
        for i, op in enumerate(self._ops):
            if op.kind == "sum":
                raise invalid("sum post-op", f"a second sum (post-op {i} is already a sum)",
                              "at most one sum post-op per chain")
        s = _f32_param(scale, "sum scale")
        zp = _int_param(zero_point, "sum zero_point", _S32_MIN, _S32_MAX)
        d = None if dt is None else as_dt(dt, "sum dt")
        return self._append(SumOp(s, zp, d))

    def append_dw(self, weights_dt, bias_dt, dst_dt, kernel_size, stride_size, padding_l_size):
        """Append a depthwise convolution fused after a 1x1 convolution (one per chain).

        As oneDNN 3.2's fused convolution: only after a 2-D 1x1 :class:`Convolution` (stride
        1, no padding, no groups).  Its weights ``(C, 1, 1, K, K)``, bias and scales come at
        execution under ``DNNL_ARG_ATTR_POST_OP_DW``-prefixed ids (the user guide's
        convolution page lists them).

        Parameters
        ----------
        weights_dt : str
            ``"s8"``.
        bias_dt : str or None
            The bias data type, None for no bias.
        dst_dt : str
            The data type of the depthwise output (what ``execute`` returns).
        kernel_size, stride_size : int
            >= 1.
        padding_l_size : int
            ``0 <= padding_l_size < kernel_size``.

        Returns
        -------
        PostOps
            ``self``.

        Raises
        ------
        InvalidArguments
            For a second depthwise post-op, an unknown data type, sizes out of range.

        Examples
        --------
        >>> import dnnq
        >>> dnnq.PostOps().append_dw("s8", "f32", "u8", 3, 1, 1).kind(0)
        'convolution'
        """
        for i, op in enumerate(self._ops):
            if op.kind == "convolution":
                raise invalid("depthwise post-op", f"a second one (post-op {i} is already one)",
                              "at most one depthwise post-op per chain")
        w = as_dt(weights_dt, "dw weights_dt")
        b = None if bias_dt is None else as_dt(bias_dt, "dw bias_dt")
        d = as_dt(dst_dt, "dw dst_dt")
        k = _int_param(kernel_size, "dw kernel_size", 1, 2 ** 31 - 1)
        s = _int_param(stride_size, "dw stride_size", 1, 2 ** 31 - 1)
        p = _int_param(padding_l_size, "dw padding_l_size", 0, k - 1)
        return self._append(DepthwiseOp(w, b, d, k, s, p))

    def append_checkpoint(self):
        """Remember the current f32 value of every element, for the select post-ops that follow.

        A dnnq extension (the value itself is unchanged); see :meth:`append_select`.

        Returns
        -------
        PostOps
            ``self``.

        Raises
        ------
        InvalidArguments
            When the chain is full (32 post-ops).
        """
        return self._append(CheckpointOp())

    def append_select(self, alg, cond_desc, value_desc):
        """Replace elements by a value where a comparison with the checkpoint holds.

        A dnnq extension: per element, ``f = value if saved <alg> cond else f``, ``saved``
        being the value stored by the latest :meth:`append_checkpoint` before it.  ``cond``
        comes at execution as ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1`` and
        ``value`` as ``... | DNNL_ARG_SRC_2``, both f32, broadcast like a binary post-op's
        input.  The comparisons are IEEE: with a NaN every one is false except ``ne``.

        Parameters
        ----------
        alg : {"le", "lt", "ge", "gt", "eq", "ne"}
            The comparison (a ``select_`` prefix is accepted).
        cond_desc, value_desc : MemoryDesc
            f32 descriptors of the two inputs.

        Returns
        -------
        PostOps
            ``self``.

        Raises
        ------
        InvalidArguments
            Without a checkpoint before it, for descriptors that are not f32, at a
            position of 31 or more.

        Examples
        --------
        >>> import dnnq
        >>> one = dnnq.MemoryDesc((1, 1), "f32")
        >>> ops = dnnq.PostOps().append_checkpoint().append_select("lt", one, one)
        >>> ops.select_positions()
        [1]
        """
        name = canonical_select_alg(alg)
        for what, d in (("select cond_desc", cond_desc), ("select value_desc", value_desc)):
            if not isinstance(d, MemoryDesc):
                raise invalid(what, f"{d!r} of type {type(d).__name__}",
                              "a dnnq.MemoryDesc of data type f32")
            if d.dt != "f32":
                raise invalid(what, f"a MemoryDesc of data type {d.dt}",
                              "a dnnq.MemoryDesc of data type f32")
        if not any(op.kind == "checkpoint" for op in self._ops):
            raise invalid("select post-op", f"no checkpoint before it (post-op {len(self._ops)})",
                          "an append_checkpoint() earlier in the chain (the select compares "
                          "the value it saved)")
        if len(self._ops) >= _MAX_BINARY_POS:
            raise invalid("select post-op position", len(self._ops),
                          f"a position < {_MAX_BINARY_POS} (DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) "
                          "addresses idx < 31)")
        return self._append(SelectOp(name, cond_desc, value_desc))

    # --- reading -------------------------------------------------------------------------------
    def __len__(self):
        return len(self._ops)

    def __iter__(self):
        return iter(tuple(self._ops))

    def __getitem__(self, i):
        """The i-th post-op (frozen dataclass); negative indices count from the end.
        Out of range raises IndexError."""
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, Integral):
            raise TypeError(f"post-op index must be an int, got {type(i).__name__}")
        n = len(self._ops)
        j = int(i)
        if not -n <= j < n:
            raise IndexError(f"post-op index {j} out of range for a chain of {n}")
        return self._ops[j]

    def kind(self, i):
        """The kind of post-op ``i``.

        Parameters
        ----------
        i : int
            The position, 0 <= i < len(self).

        Returns
        -------
        str
            ``"eltwise"``, ``"binary"``, ``"sum"``, ``"convolution"`` (append_dw),
            ``"checkpoint"`` or ``"select"``.

        Raises
        ------
        InvalidArguments
            For an index out of range (negative included).
        """
        n = len(self._ops)
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, Integral) or not 0 <= i < n:
            raise invalid("post-op index", repr(i), f"an int in [0, {n})")
        return self._ops[int(i)].kind

    def binary_positions(self):
        """Positions of the binary post-ops (their ``DNNL_ARG_ATTR_MULTIPLE_POST_OP`` index).

        Returns
        -------
        list of int
        """
        return [i for i, op in enumerate(self._ops) if op.kind == "binary"]

    def select_positions(self):
        """Positions of the select post-ops (their ``DNNL_ARG_ATTR_MULTIPLE_POST_OP`` index).

        Returns
        -------
        list of int
        """
        return [i for i, op in enumerate(self._ops) if op.kind == "select"]

    def copy(self):
        """An independent copy of the chain.

        Returns
        -------
        PostOps
        """
        new = PostOps()
        new._ops = list(self._ops)
        return new

    def key(self):
        """A hashable tuple describing the chain (for the primitive cache).  A zero parameter
        carries its sign (``-0.0 == 0.0`` in Python, but e.g. linear's ``beta = -0.0`` keeps a
        ``-0.0`` product where ``+0.0`` does not)."""
        return tuple((op, _negative_zeros(op)) for op in self._ops)

    def __eq__(self, other):
        if not isinstance(other, PostOps):
            return NotImplemented
        return self.key() == other.key()

    __hash__ = None  # mutable: use key()

    def __repr__(self):
        return f"PostOps({list(self._ops)!r})"

    def __reduce__(self):
        """Pickled as the append calls that build the chain: loading validates every entry
        again (a pickle is never trusted to hold a well-formed chain)."""
        calls = tuple((op.kind, tuple(getattr(op, f.name) for f in fields(op)))
                      for op in self._ops)
        return (_rebuild_post_ops, (calls,))


#: post-op kind -> the PostOps method that appends it (its parameters are the op's fields)
_APPEND = {"eltwise": "append_eltwise", "binary": "append_binary", "sum": "append_sum",
           "convolution": "append_dw", "checkpoint": "append_checkpoint",
           "select": "append_select"}


def _rebuild_post_ops(calls):
    """Unpickling of PostOps: replay the appends (each validates its parameters)."""
    ops = PostOps()
    for kind, params in calls:
        if kind not in _APPEND:
            raise invalid("pickled post-op kind", repr(kind), ", ".join(_APPEND))
        getattr(ops, _APPEND[kind])(*params)
    return ops
