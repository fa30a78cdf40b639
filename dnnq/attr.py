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
    """What a primitive needs to know at creation besides its descriptors.

    An attribute declares which arguments have scales and zero points (their masks: the
    values themselves come at execution), the post-op chain, and the RNN primitives' legacy
    quantization parameters.  It is copied into the primitive: changing it afterwards does
    not change a primitive created with it.

    The ``arg`` of the setters is the *plain* argument the values apply to, not the
    ``DNNL_ARG_SCALE | arg`` id: ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_DST``
    (and their ``_1`` / ``_2`` forms), ``DNNL_ARG_MULTIPLE_SRC + n``,
    ``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1`` (a binary post-op's input, scales
    only), ``DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS`` / ``| DNNL_ARG_DST`` (the depthwise
    post-op, scales only).  The mask is not checked against dims here (the attribute does not
    know them): the primitive checks it, and resolves semantic masks, at creation.

    Attributes
    ----------
    post_ops : PostOps
        A copy of the attached chain (empty by default).
    rnn_data_qparams : tuple of float or None
        ``(scale, shift)`` of :meth:`set_rnn_data_qparams`.
    rnn_weights_qparams, rnn_weights_projection_qparams : tuple or None
        ``(mask, scales)`` with ``scales`` a read-only float32 array.

    Raises
    ------
    InvalidArguments
        From the setters: an id that is not a plain argument (or cannot have scales / zero
        points), a malformed mask, non-positive or non-finite scales.

    See Also
    --------
    PostOps, scale_count

    Notes
    -----
    Two attributes compare equal when every setting is equal (they are not hashable: they
    are mutable).  They pickle as their settings.

    Examples
    --------
    >>> import dnnq
    >>> attr = dnnq.PrimitiveAttr()
    >>> attr.set_scales_mask(dnnq.DNNL_ARG_SRC, 0)            # one source scale
    PrimitiveAttr(scales={src: 0})
    >>> _ = attr.set_scales_mask(dnnq.DNNL_ARG_WEIGHTS, 1 << 1)   # per column of (K, N)
    >>> _ = attr.set_zero_points_mask(dnnq.DNNL_ARG_SRC, 0)
    >>> attr.set_post_ops(dnnq.PostOps().append_eltwise("relu"))
    PrimitiveAttr(scales={src: 0, weights: 2}, zero_points={src: 0},
                  post_ops=PostOps([EltwiseOp(alg='relu', alpha=0.0, beta=0.0)]))
    >>> attr.scales_mask(dnnq.DNNL_ARG_WEIGHTS), attr.zero_points_mask(dnnq.DNNL_ARG_DST)
    (2, None)
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
        """Declare that tensor ``arg`` has scales, given at execution.

        At execution the scales come as ``DNNL_ARG_SCALE | arg``: f32 values, finite and > 0,
        ``scale_count(dims, mask)`` of them.  Setting the same argument again replaces the
        mask.  ``set_scales`` is the same method.

        Parameters
        ----------
        arg : int
            The plain argument (``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_DST``, ...).
        mask : int
            Plain bits 0..11 (bit *i*: one value per index along dimension *i*), or one
            ``DNNL_MASK_PER_CHANNEL_*`` semantic mask.

        Returns
        -------
        PrimitiveAttr
            ``self``, so that calls chain.

        Raises
        ------
        InvalidArguments
            For an argument that cannot have scales (the bias, a prefixed id) or a
            malformed mask.

        Examples
        --------
        >>> import dnnq
        >>> dnnq.PrimitiveAttr().set_scales_mask(dnnq.DNNL_ARG_WEIGHTS, 1 << 1)
        PrimitiveAttr(scales={weights: 2})
        """
        a = _target(arg, _args.DNNL_ARG_SCALE, "scales")
        self._scales[a] = check_mask(mask, f"scales mask of {_args.name(a)}")
        return self

    set_scales = set_scales_mask

    def set_zero_points_mask(self, arg, mask):
        """Declare that tensor ``arg`` has zero points, given at execution.

        At execution the zero points come as ``DNNL_ARG_ATTR_ZERO_POINTS | arg``: s32 values
        (any integral array that fits), ``scale_count(dims, mask)`` of them.
        ``set_zero_points`` is the same method.

        Parameters
        ----------
        arg : int
            The plain argument (``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_DST``, ...).
        mask : int
            As for :meth:`set_scales_mask`.

        Returns
        -------
        PrimitiveAttr
            ``self``.

        Raises
        ------
        InvalidArguments
            For an argument that cannot have zero points (the bias, post-op inputs) or a
            malformed mask.

        Examples
        --------
        >>> import dnnq
        >>> dnnq.PrimitiveAttr().set_zero_points_mask(dnnq.DNNL_ARG_DST, 0)
        PrimitiveAttr(zero_points={dst: 0})
        """
        a = _target(arg, _args.DNNL_ARG_ATTR_ZERO_POINTS, "zero points")
        self._zero_points[a] = check_mask(mask, f"zero points mask of {_args.name(a)}")
        return self

    set_zero_points = set_zero_points_mask

    def scales_mask(self, arg):
        """The scales mask set for ``arg``, or None.

        Parameters
        ----------
        arg : int
            The plain argument.

        Returns
        -------
        int or None
        """
        return self._scales.get(_target(arg, _args.DNNL_ARG_SCALE, "scales"))

    def zero_points_mask(self, arg):
        """The zero-points mask set for ``arg``, or None.

        Parameters
        ----------
        arg : int
            The plain argument.

        Returns
        -------
        int or None
        """
        return self._zero_points.get(_target(arg, _args.DNNL_ARG_ATTR_ZERO_POINTS,
                                             "zero points"))

    def scales_args(self):
        """Every scales setting.

        Returns
        -------
        dict
            ``{arg: mask}``.
        """
        return dict(self._scales)

    def zero_points_args(self):
        """Every zero-points setting.

        Returns
        -------
        dict
            ``{arg: mask}``.
        """
        return dict(self._zero_points)

    # --- post-ops ------------------------------------------------------------------------------
    def set_post_ops(self, ops):
        """Attach a copy of the post-op chain ``ops``.

        Later changes to ``ops`` do not change the attribute, as in oneDNN.

        Parameters
        ----------
        ops : PostOps

        Returns
        -------
        PrimitiveAttr
            ``self``.

        Raises
        ------
        InvalidArguments
            When ``ops`` is not a :class:`PostOps`.
        """
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
        """Set the legacy (oneDNN) RNN data quantization ``x_u8 = scale * x_f32 + shift``.

        It applies to every u8 tensor of an RNN primitive (src and dst, layer and iter).  The
        unified form is ``set_scales_mask`` / ``set_zero_points_mask`` on
        ``DNNL_ARG_SRC_LAYER`` with ``scale = 1 / s`` and ``shift = zp``.

        Parameters
        ----------
        scale : float
            > 0, finite (kept as an f32 value).
        shift : float
            Finite (kept as an f32 value).

        Returns
        -------
        PrimitiveAttr
            ``self``.

        Raises
        ------
        InvalidArguments
            For a scale that is not > 0 and finite, or a shift that is not finite.

        Examples
        --------
        >>> import dnnq
        >>> dnnq.PrimitiveAttr().set_rnn_data_qparams(63.0, 64.0).rnn_data_qparams
        (63.0, 64.0)
        """
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
        """``(scale, shift)`` of :meth:`set_rnn_data_qparams` (f32 values), or None."""
        return self._rnn_data

    def set_rnn_weights_qparams(self, mask, scales):
        """Set the legacy (oneDNN) RNN weights quantization ``w_s8 = scale * w_f32``.

        The scales are given here, at creation, as in oneDNN; they apply to the layer and
        iteration weights of every layer and direction.

        Parameters
        ----------
        mask : int
            0 (one scale) or 24 (bits 3 and 4: one per gate and output channel of the
            ``ldigo`` weights, ``G * H`` values gate-major).
        scales : float or array_like
            Finite and > 0 in f32; exactly one value for mask 0.  The primitive checks their
            count against the weights' dims.

        Returns
        -------
        PrimitiveAttr
            ``self``.

        Raises
        ------
        InvalidArguments
            For a malformed mask or scales that are not finite and > 0.

        Examples
        --------
        >>> import dnnq
        >>> mask, scales = dnnq.PrimitiveAttr().set_rnn_weights_qparams(0, 127.0).rnn_weights_qparams
        >>> mask, scales
        (0, array([127.], dtype=float32))
        """
        self._rnn_weights = _rnn_scales(mask, scales, "rnn weights")
        return self

    @property
    def rnn_weights_qparams(self):
        """``(mask, scales)`` with scales a read-only 1-D np.float32 array, or None."""
        return self._rnn_weights

    def set_rnn_weights_projection_qparams(self, mask, scales):
        """Set the LSTMP projection weights quantization ``w_s8 = scale * w_f32``.

        As oneDNN's ``set_rnn_weights_projection_qparams``.

        Parameters
        ----------
        mask : int
            0 (one scale) or 8 (one per output channel of the ``ldio`` projection weights).
        scales : float or array_like
            As for :meth:`set_rnn_weights_qparams`.

        Returns
        -------
        PrimitiveAttr
            ``self``.

        Raises
        ------
        InvalidArguments
            For a malformed mask or scales that are not finite and > 0.
        """
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
