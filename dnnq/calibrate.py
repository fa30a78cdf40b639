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
    """``(scale, zero_point)`` covering ``[min(x), max(x)]`` (widened to contain 0), per tensor
    or per index along ``axis``.  See the module docstring."""
    name = "minmax"
    x64 = _data(name, x)
    d = _dt(name, dt)
    red, _ = _axes(name, x64, axis)
    lo, hi = x64.min(axis=red), x64.max(axis=red)
    amax = np.maximum(np.abs(lo), np.abs(hi))
    return _qparams(lo, hi, amax, d, bool(symmetric))


def percentile(x, dt, *, pct=99.99, axis=None, symmetric=False):
    """As :func:`minmax`, with the range ``[percentile(x, 100 - pct), percentile(x, pct)]``
    (symmetric: ``percentile(|x|, pct)``); ``pct`` in (50, 100]."""
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
    """``(scale, shift)`` for ``PrimitiveAttr.set_rnn_data_qparams`` (``u8 = scale * x +
    shift``): shift 128 and ``scale = 127 / max|x|``, so the data maps into [1, 255] around
    128 (the convention of oneDNN's int8 GRU example, shift 128 and scale 127 over the
    absolute maximum; oneDNN's LSTM example uses shift 64 and scale 63 for data known to lie
    in [-1, 1]).  All-zero data gives scale 1.  Returned as Python floats (f32 values)."""
    x64 = _data("rnn_data_qparams", x)
    amax = float(np.abs(x64).max())
    scale = float(np.float32(127.0 / amax)) if amax > 0 else 1.0
    if not np.isfinite(np.float32(scale)):
        raise InvalidArguments(f"rnn_data_qparams: max|x| = {amax!r} gives scale {scale!r}, "
                               "which is not finite in f32")
    return scale, 128.0


def rnn_weights_qparams(w):
    """``(mask, scales)`` for ``PrimitiveAttr.set_rnn_weights_qparams`` (``s8 = scale * w``)
    of ldigo weights ``(L, D, I, G, O)``: one scale per gate and output channel, mask 24
    (bits 3 and 4, as oneDNN's examples), ``scale[g, o] = 127 / max |w[:, :, :, g, o]|``
    (1 for an all-zero column); ``scales`` is a float32 array of G*O values, gate-major."""
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
