"""Calibration: choose scales and zero points from data (SPEC section 2 convention,
``x = scale * (q - zero_point)``), and the legacy RNN quantization parameters.

* :func:`minmax` -- from the data's minimum and maximum;
* :func:`percentile` -- from percentiles (clips outliers);
* :func:`rnn_data_qparams` / :func:`rnn_weights_qparams` -- for
  ``PrimitiveAttr.set_rnn_data_qparams`` / ``set_rnn_weights_qparams``.

``dt`` is ``"u8"`` or ``"s8"``.  Asymmetric (default): the range ``[lo, hi]`` is widened to
contain 0 (so that 0 is exactly representable, as padding and ReLU need), then
``scale = (hi - lo) / (qmax - qmin)`` and ``zero_point = rne(qmin - lo / scale)`` clamped to
``[qmin, qmax]``.  Symmetric: ``scale = max|x| / 127`` with zero point 0 (s8: q in [-127, 127])
or 128 (u8: q in [1, 255]).  A range of zero width (e.g. all-zero data) gives scale 1.
Scales are returned as f32 and zero points as s32 numpy arrays: 0-d for ``axis=None``, shape
``(x.shape[axis],)`` with ``axis`` (one value per index along it, the layout
``dnnq.quantize(..., axis=axis)`` takes).  The statistics are computed in float64.
"""
from numbers import Integral, Real

import numpy as np

from dnnq.errors import InvalidArguments, real_to_float
from dnnq.memory import as_dt

__all__ = ["minmax", "percentile", "rnn_data_qparams", "rnn_weights_qparams"]

_QRANGE = {"u8": (0, 255), "s8": (-128, 127)}


def _data(name, x):
    if not isinstance(x, np.ndarray):
        raise InvalidArguments(f"{name}: x got {type(x).__name__}; expected a numpy.ndarray")
    if x.dtype.kind not in "iuf":
        raise InvalidArguments(f"{name}: x has dtype {x.dtype}; expected real numbers")
    if x.size == 0 or x.ndim == 0:
        raise InvalidArguments(f"{name}: x has shape {x.shape}; expected at least one element "
                               "and one dimension")
    x64 = x.astype(np.float64, copy=False)
    if not np.all(np.isfinite(x64)):
        raise InvalidArguments(f"{name}: x contains NaN or infinity; expected finite data")
    return x64


def _dt(name, dt):
    d = as_dt(dt, f"{name}: dt")
    if d not in _QRANGE:
        raise InvalidArguments(f"{name}: dt {d}; expected u8 or s8")
    return d


def _axes(name, x, axis):
    """The axes to reduce over, and the kept axis (or None)."""
    if axis is None:
        return None, None
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, Integral) \
            or not -x.ndim <= int(axis) < x.ndim:
        raise InvalidArguments(f"{name}: axis got {axis!r}; expected None or an int in "
                               f"[{-x.ndim}, {x.ndim})")
    a = int(axis) % x.ndim
    return tuple(i for i in range(x.ndim) if i != a), a


def _qparams(lo, hi, amax, d, symmetric):
    qmin, qmax = _QRANGE[d]
    if symmetric:
        scale = np.where(amax > 0, amax / 127.0, 1.0)
        zp = np.full(np.shape(scale), 0 if d == "s8" else 128, np.int64)
    else:
        lo = np.minimum(lo, 0.0)
        hi = np.maximum(hi, 0.0)
        width = hi - lo
        scale = np.where(width > 0, width / (qmax - qmin), 1.0)
        zp = np.clip(np.rint(qmin - lo / scale), qmin, qmax).astype(np.int64)
    s32 = np.asarray(scale, np.float32)
    s32 = np.where(s32 > 0, s32, np.float32(np.finfo(np.float32).tiny))  # never 0 in f32
    return np.asarray(s32, np.float32), np.asarray(zp, np.int32)


def minmax(x, dt, *, axis=None, symmetric=False):
    """Scale and zero point that cover the data's range ``[min(x), max(x)]``.

    Convention: ``x = scale * (q - zero_point)``.  Asymmetric (the default): the range is
    widened to contain 0 (so that 0 is exact, as padding and ReLU need), then ``scale = (hi -
    lo) / (qmax - qmin)`` and ``zero_point = rne(qmin - lo / scale)`` clamped to the type.
    Symmetric: ``scale = max|x| / 127`` with zero point 0 (s8, q in [-127, 127]) or 128 (u8,
    q in [1, 255]).  A range of zero width (all-zero data) gives scale 1.  The statistics are
    computed in float64.

    Parameters
    ----------
    x : array_like
        Representative data (real, finite).
    dt : {"u8", "s8"}
        The quantized type.
    axis : int, optional
        One (scale, zero point) per index along this axis (per channel); None: per tensor.
    symmetric : bool, optional
        Zero point fixed at 0 (s8) or 128 (u8).

    Returns
    -------
    scale : numpy.ndarray of float32
        0-d for ``axis=None``, else shape ``(x.shape[axis],)``; always > 0.
    zero_point : numpy.ndarray of int32
        The same shape.

    Raises
    ------
    InvalidArguments
        For empty or non-finite data, a ``dt`` other than u8 / s8, an axis out of range.

    See Also
    --------
    percentile, dnnq.quantize

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> scale, zp = dnnq.calibrate.minmax(np.array([-1.0, 0.5, 3.0]), "u8")
    >>> float(scale), int(zp)
    (0.01568627543747425, 64)
    >>> w = np.array([[0.5, -2.0], [0.25, 1.0]])              # (OC, IC)
    >>> dnnq.calibrate.minmax(w, "s8", axis=0, symmetric=True)[0]
    array([0.01574803, 0.00787402], dtype=float32)
    """
    name = "minmax"
    x64 = _data(name, x)
    d = _dt(name, dt)
    red, _ = _axes(name, x64, axis)
    lo, hi = x64.min(axis=red), x64.max(axis=red)
    amax = np.maximum(np.abs(lo), np.abs(hi))
    return _qparams(lo, hi, amax, d, bool(symmetric))


def percentile(x, dt, *, pct=99.99, axis=None, symmetric=False):
    """Scale and zero point from percentiles of the data (outliers clipped).

    As :func:`minmax`, with the range ``[percentile(x, 100 - pct), percentile(x, pct)]``
    (symmetric: ``percentile(|x|, pct)``).

    Parameters
    ----------
    x : array_like
        Representative data (real, finite).
    dt : {"u8", "s8"}
        The quantized type.
    pct : float, optional
        In (50, 100].
    axis : int, optional
        Per index along this axis; None: per tensor.
    symmetric : bool, optional
        Zero point fixed at 0 (s8) or 128 (u8).

    Returns
    -------
    scale : numpy.ndarray of float32
    zero_point : numpy.ndarray of int32

    Raises
    ------
    InvalidArguments
        For empty or non-finite data, a ``dt`` other than u8 / s8, ``pct`` outside (50, 100],
        an axis out of range.

    See Also
    --------
    minmax

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> x = np.concatenate([np.linspace(0.0, 1.0, 10000), [50.0]])   # one outlier
    >>> float(dnnq.calibrate.percentile(x, "u8", pct=99.9)[0]) < 0.01
    True
    """
    name = "percentile"
    x64 = _data(name, x)
    d = _dt(name, dt)
    if isinstance(pct, (bool, np.bool_)) or not isinstance(pct, Real) \
            or not 50.0 < real_to_float(pct) <= 100.0:
        raise InvalidArguments(f"{name}: pct got {pct!r}; expected a number in (50, 100]")
    red, _ = _axes(name, x64, axis)
    p = float(pct)
    if symmetric:
        amax = np.percentile(np.abs(x64), p, axis=red)
        return _qparams(None, None, amax, d, True)
    lo = np.percentile(x64, 100.0 - p, axis=red)
    hi = np.percentile(x64, p, axis=red)
    return _qparams(lo, hi, None, d, False)


def rnn_data_qparams(x):
    """RNN data quantization parameters for :meth:`PrimitiveAttr.set_rnn_data_qparams`.

    ``u8 = scale * x + shift`` with shift 128 and ``scale = 127 / max|x|``, so the data maps
    into [1, 255] around 128 (the convention of oneDNN's int8 GRU example; its LSTM example
    uses shift 64 and scale 63 for data known to lie in [-1, 1]).  All-zero data gives scale 1.

    Parameters
    ----------
    x : array_like
        Representative data: inputs and hidden states (real, finite).

    Returns
    -------
    scale, shift : float
        f32 values as Python floats.

    Raises
    ------
    InvalidArguments
        For empty or non-finite data, or data so small that the scale is not finite in f32.

    See Also
    --------
    rnn_weights_qparams

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.calibrate.rnn_data_qparams(np.array([-0.5, 0.25, 1.0]))
    (127.0, 128.0)
    """
    x64 = _data("rnn_data_qparams", x)
    amax = float(np.abs(x64).max())
    scale = float(np.float32(127.0 / amax)) if amax > 0 else 1.0
    if not np.isfinite(np.float32(scale)):
        raise InvalidArguments(f"rnn_data_qparams: max|x| = {amax!r} gives scale {scale!r}, "
                               "which is not finite in f32")
    return scale, 128.0


def rnn_weights_qparams(w):
    """RNN weights quantization parameters for :meth:`PrimitiveAttr.set_rnn_weights_qparams`.

    ``s8 = scale * w``, one scale per gate and output channel (mask 24 = bits 3 and 4, as
    oneDNN's examples): ``scale[g, o] = 127 / max |w[:, :, :, g, o]|`` (1 for an all-zero
    column).

    Parameters
    ----------
    w : array_like
        ``ldigo`` weights ``(L, D, I, G, O)``; pass the layer and iteration weights
        concatenated along I so that one set of scales covers both (the primitive needs
        them equal).

    Returns
    -------
    mask : int
        24.
    scales : numpy.ndarray of float32
        ``G * O`` values, gate-major.

    Raises
    ------
    InvalidArguments
        For weights that are not 5-D, empty or non-finite, or so small that a scale is not
        finite in f32.

    See Also
    --------
    rnn_data_qparams

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> w = np.ones((1, 1, 3, 4, 2)) * 0.5                  # L, D, I, G=4 (LSTM), O=2
    >>> mask, scales = dnnq.calibrate.rnn_weights_qparams(w)
    >>> mask, scales.shape, float(scales[0])
    (24, (8,), 254.0)
    """
    name = "rnn_weights_qparams"
    w64 = _data(name, w)
    if w64.ndim != 5:
        raise InvalidArguments(f"{name}: w has shape {w.shape}; expected ldigo weights "
                               "(L, D, I, G, O)")
    amax = np.abs(w64).max(axis=(0, 1, 2))
    with np.errstate(divide="ignore"):
        scales = np.where(amax > 0, 127.0 / np.where(amax > 0, amax, 1.0), 1.0)
    s32 = scales.astype(np.float32).reshape(-1)
    if not np.all(np.isfinite(s32)):
        raise InvalidArguments(f"{name}: some |w| maximum is so small that 127 / max is not "
                               "finite in f32")
    return (1 << 3) | (1 << 4), s32
