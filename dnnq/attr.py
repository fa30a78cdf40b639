"""Primitive attributes (SPEC section 5): scale / zero-point masks, post-ops, RNN qparams.

``attr = PrimitiveAttr()`` collects what a primitive needs to know at **creation**:

* ``set_scales_mask(arg, mask)`` (alias ``set_scales``): the scales of tensor ``arg`` are given at
  execution as ``DNNL_ARG_SCALE | arg``, with ``scale_count(dims, mask)`` f32 values;
* ``set_zero_points_mask(arg, mask)``: the zero points of ``arg`` are given at execution as
  ``DNNL_ARG_ATTR_ZERO_POINTS | arg`` (s32 values);
* ``set_post_ops(ops)``: a :class:`~dnnq.post_ops.PostOps` chain (copied: later changes to
  ``ops`` do not affect the attribute, as in oneDNN);
* ``set_rnn_data_qparams(scale, shift)``: legacy RNN data quantization ``u8 = scale*f32 + shift``;
* ``set_rnn_weights_qparams(mask, scales)``: legacy RNN weights quantization ``s8 = scale*f32``
  (the scales are given here, at creation, as in oneDNN);
* ``set_rnn_weights_projection_qparams(mask, scales)``: the same for an LSTMP's projection
  weights (mask 0, or 8 = per output channel of the ldio weights).

``arg`` is the *plain* argument the values apply to (not the ``DNNL_ARG_SCALE | arg`` ID):

* scales: ``DNNL_ARG_SRC``, ``DNNL_ARG_SRC_1``, ``DNNL_ARG_SRC_2``, ``DNNL_ARG_DST`` (and _1, _2),
  ``DNNL_ARG_WEIGHTS`` (and _1), ``DNNL_ARG_MULTIPLE_SRC + n`` / ``DNNL_ARG_MULTIPLE_DST + n``,
  ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1`` (a binary post-op's input),
  ``DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS`` / ``| DNNL_ARG_DST`` (the depthwise post-op);
* zero points: the same plain tensors except the post-op ones (and never the bias).

The mask is an int >= 0: plain bits 0..11, or one semantic mask (``DNNL_MASK_PER_CHANNEL_*``)
alone.  It is **not** checked against dims here -- the attribute does not know them; the
primitive checks (and resolves semantic masks) at creation.  Setting the same argument twice
overwrites the earlier mask.  Whether a primitive supports a given argument / mask is decided by
the primitive (``Unimplemented`` at creation).
"""

from numbers import Real

import numpy as np

from . import args as _args
from .errors import InvalidArguments, invalid, real_to_float
from .masks import check_mask, check_scales
from .post_ops import PostOps

__all__ = ["PrimitiveAttr"]


def _target(arg, prefix, what):
    """Validate ``arg`` as the plain tensor of a scale / zero-point setting; return it."""
    parts = _args.decode(arg)  # raises InvalidArguments for malformed IDs
    a = int(arg)
    if parts.scale or parts.zero_point:
        raise invalid(f"{what} argument", f"{a} ({_args.name(a)})",
                      "the plain argument the values apply to (e.g. DNNL_ARG_SRC), "
                      "without DNNL_ARG_SCALE / DNNL_ARG_ATTR_ZERO_POINTS")
    try:
        _args.decode(a | prefix)
    except InvalidArguments:
        raise invalid(f"{what} argument", f"{a} ({_args.name(a)})",
                      f"an argument that can have {what}") from None
    return a


def _positive_f32(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise invalid(name, f"{value!r} of type {type(value).__name__}", "a finite real > 0")
    v = real_to_float(value)
    with np.errstate(over="ignore"):
        f = np.float32(v)
    if not (np.isfinite(v) and np.isfinite(f) and f > 0):
        raise invalid(name, repr(value), "a finite real > 0 (also in f32)")
    return float(f)


class PrimitiveAttr:
    """Creation-time attributes of a primitive (see the module docstring).

    Getters: ``scales_mask(arg)`` / ``zero_points_mask(arg)`` (int, or None when not set),
    ``scales_args()`` / ``zero_points_args()`` (dict arg -> mask), ``post_ops`` (a PostOps,
    empty by default; a copy), ``rnn_data_qparams`` (``(scale, shift)`` or None),
    ``rnn_weights_qparams`` and ``rnn_weights_projection_qparams`` (``(mask, np.float32
    array)`` or None).  ``key()`` is a hashable
    description for the primitive cache; ``==`` compares keys.
    """

    __slots__ = ("_scales", "_zero_points", "_post_ops", "_rnn_data", "_rnn_weights",
                 "_rnn_proj")

    def __init__(self):
        self._scales = {}
        self._zero_points = {}
        self._post_ops = PostOps()
        self._rnn_data = None
        self._rnn_weights = None
        self._rnn_proj = None

    # --- scales / zero points ------------------------------------------------------------------
    def set_scales_mask(self, arg, mask):
        """Declare runtime scales for tensor ``arg`` with ``mask`` (overwrites an earlier one)."""
        a = _target(arg, _args.DNNL_ARG_SCALE, "scales")
        self._scales[a] = check_mask(mask, f"scales mask of {_args.name(a)}")
        return self

    set_scales = set_scales_mask

    def set_zero_points_mask(self, arg, mask):
        """Declare runtime zero points for tensor ``arg`` with ``mask`` (overwrites)."""
        a = _target(arg, _args.DNNL_ARG_ATTR_ZERO_POINTS, "zero points")
        self._zero_points[a] = check_mask(mask, f"zero points mask of {_args.name(a)}")
        return self

    set_zero_points = set_zero_points_mask

    def scales_mask(self, arg):
        """The scales mask set for ``arg``, or None."""
        return self._scales.get(_target(arg, _args.DNNL_ARG_SCALE, "scales"))

    def zero_points_mask(self, arg):
        """The zero-points mask set for ``arg``, or None."""
        return self._zero_points.get(_target(arg, _args.DNNL_ARG_ATTR_ZERO_POINTS,
                                             "zero points"))

    def scales_args(self):
        """Dict ``arg -> mask`` of every scales setting."""
        return dict(self._scales)

    def zero_points_args(self):
        """Dict ``arg -> mask`` of every zero-points setting."""
        return dict(self._zero_points)

    # --- post-ops ------------------------------------------------------------------------------
    def set_post_ops(self, ops):
        """Attach a copy of the PostOps chain ``ops``."""
        if not isinstance(ops, PostOps):
            raise invalid("post_ops", f"{ops!r} of type {type(ops).__name__}",
                          "a dnnq.PostOps")
        self._post_ops = ops.copy()
        return self

    @property
    def post_ops(self):
        """The attached chain (a copy; empty PostOps by default)."""
        return self._post_ops.copy()

    # --- RNN legacy qparams ------------------------------------------------------------------
    def set_rnn_data_qparams(self, scale, shift):
        """RNN data quantization ``x_u8 = scale * x_f32 + shift`` (scale > 0, shift finite);
        both are kept as f32 values."""
        s = _positive_f32(scale, "rnn data scale")
        if isinstance(shift, (bool, np.bool_)) or not isinstance(shift, Real):
            raise invalid("rnn data shift", f"{shift!r} of type {type(shift).__name__}",
                          "a finite real")
        v = real_to_float(shift)
        with np.errstate(over="ignore"):
            sh = np.float32(v)
        if not (np.isfinite(v) and np.isfinite(sh)):
            raise invalid("rnn data shift", repr(shift), "a finite real (also in f32)")
        self._rnn_data = (s, float(sh))
        return self

    @property
    def rnn_data_qparams(self):
        """``(scale, shift)`` as Python floats (f32 values), or None."""
        return self._rnn_data

    def set_rnn_weights_qparams(self, mask, scales):
        """RNN weights quantization ``w_s8 = scale * w_f32``.

        ``mask`` as for scales (oneDNN uses 0, or 24 = per gate and output channel of ldigo
        weights); ``scales`` a number or any real array: finite, > 0 in f32, at least one value
        (exactly one for mask 0).  Their count is checked against the weights' dims by the
        primitive.
        """
        self._rnn_weights = _rnn_scales(mask, scales, "rnn weights")
        return self

    @property
    def rnn_weights_qparams(self):
        """``(mask, scales)`` with scales a read-only 1-D np.float32 array, or None."""
        return self._rnn_weights

    def set_rnn_weights_projection_qparams(self, mask, scales):
        """LSTMP projection weights quantization ``w_s8 = scale * w_f32`` (oneDNN's
        ``set_rnn_weights_projection_qparams``): mask 0, or 8 = per output channel of the
        ``ldio`` projection weights; scales as for :meth:`set_rnn_weights_qparams`."""
        self._rnn_proj = _rnn_scales(mask, scales, "rnn projection weights")
        return self

    @property
    def rnn_weights_projection_qparams(self):
        """``(mask, scales)`` of the projection weights, or None."""
        return self._rnn_proj

    # --- identity ------------------------------------------------------------------------------
    def key(self):
        """Hashable description of every setting (for the primitive cache)."""
        w = None
        if self._rnn_weights is not None:
            w = (self._rnn_weights[0], self._rnn_weights[1].tobytes())
        pw = None
        if self._rnn_proj is not None:
            pw = (self._rnn_proj[0], self._rnn_proj[1].tobytes())
        return (tuple(sorted(self._scales.items())), tuple(sorted(self._zero_points.items())),
                self._post_ops.key(), self._rnn_data, w, pw)

    def __eq__(self, other):
        if not isinstance(other, PrimitiveAttr):
            return NotImplemented
        return self.key() == other.key()

    __hash__ = None  # mutable: use key()

    def __reduce__(self):
        """Pickled as the settings, replayed through the setters when loaded (validated)."""
        return (_rebuild_attr, (tuple(sorted(self._scales.items())),
                                tuple(sorted(self._zero_points.items())), self._post_ops,
                                self._rnn_data, self._rnn_weights, self._rnn_proj))

    def __repr__(self):
        parts = []
        if self._scales:
            parts.append("scales={" + ", ".join(f"{_args.name(a)}: {m}"
                                                for a, m in sorted(self._scales.items())) + "}")
        if self._zero_points:
            parts.append("zero_points={" + ", ".join(
                f"{_args.name(a)}: {m}" for a, m in sorted(self._zero_points.items())) + "}")
        if len(self._post_ops):
            parts.append(f"post_ops={self._post_ops!r}")
        if self._rnn_data is not None:
            parts.append(f"rnn_data_qparams={self._rnn_data}")
        if self._rnn_weights is not None:
            parts.append(f"rnn_weights_qparams=(mask={self._rnn_weights[0]}, "
                         f"{self._rnn_weights[1].size} scales)")
        if self._rnn_proj is not None:
            parts.append(f"rnn_weights_projection_qparams=(mask={self._rnn_proj[0]}, "
                         f"{self._rnn_proj[1].size} scales)")
        return f"PrimitiveAttr({', '.join(parts)})"


def _rnn_scales(mask, scales, what):
    """(mask, read-only f32 scales) of a legacy RNN weights quantization."""
    m = check_mask(mask, f"{what} mask")
    if isinstance(scales, (bool, np.bool_, str, bytes)):
        raise invalid(f"{what} scales", repr(scales), "real numbers > 0")
    try:
        arr = np.asarray(scales)
    except (ValueError, TypeError, OverflowError):
        raise invalid(f"{what} scales", type(scales).__name__, "real numbers > 0") from None
    if arr.size < 1:
        raise invalid(f"{what} scales", "no values", "at least one scale")
    if m == 0 and arr.size != 1:
        raise invalid(f"{what} scales", f"{arr.size} values for mask 0",
                      "exactly one scale (mask 0 is one common scale)")
    vals = check_scales(arr, arr.size, f"{what} scales").copy()
    vals.flags.writeable = False
    return (m, vals)


def _rebuild_attr(scales, zero_points, post_ops, rnn_data, rnn_weights, rnn_proj=None):
    """Unpickling of PrimitiveAttr (see ``PrimitiveAttr.__reduce__``)."""
    attr = PrimitiveAttr()
    for arg, mask in scales:
        attr.set_scales_mask(arg, mask)
    for arg, mask in zero_points:
        attr.set_zero_points_mask(arg, mask)
    attr.set_post_ops(post_ops)
    if rnn_data is not None:
        attr.set_rnn_data_qparams(*rnn_data)
    if rnn_weights is not None:
        attr.set_rnn_weights_qparams(*rnn_weights)
    if rnn_proj is not None:
        attr.set_rnn_weights_projection_qparams(*rnn_proj)
    return attr
