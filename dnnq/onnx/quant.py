"""Quantization parameters of ONNX tensors and the numpy forms of Q / DQ used at creation.

ONNX's convention is dnnq's: ``x = scale * (q - zero_point)``; ``QuantizeLinear`` is
``saturate(round_half_even(x / scale) + zero_point)``.
"""
import numpy as np

from dnnq.errors import InvalidArguments, Unimplemented

F32 = np.float32
INT_DT = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "s8", np.dtype(np.int32): "s32"}
RANGE = {"u8": (0, 255), "s8": (-128, 127), "s32": (-2 ** 31, 2 ** 31 - 1)}


class QParams:
    """Quantization of one tensor: ``scale`` (f32 array, 1 value or one per index along
    ``axis``), ``zp`` (int32 array of the same size), ``dt`` ("u8" / "s8" / "s32")."""

    __slots__ = ("scale", "zp", "dt", "axis")

    def __init__(self, scale, zp, dt, axis=None):
        self.scale = np.ascontiguousarray(np.asarray(scale, F32).reshape(-1))
        self.zp = np.ascontiguousarray(np.asarray(zp, np.int32).reshape(-1))
        if self.zp.size == 1 and self.scale.size > 1:
            self.zp = np.repeat(self.zp, self.scale.size)
        self.dt = dt
        self.axis = axis if self.scale.size > 1 else None

    @property
    def per_tensor(self):
        return self.scale.size == 1

    def same_as(self, other):
        return (other is not None and self.dt == other.dt and self.axis == other.axis
                and np.array_equal(self.scale, other.scale)
                and np.array_equal(self.zp, other.zp))

    def __repr__(self):
        s = f"{self.scale[0]:.6g}" if self.per_tensor else f"{self.scale.size} scales"
        z = int(self.zp[0]) if self.per_tensor else "..."
        return f"{self.dt}(scale={s}, zp={z})"


def _bcast(v, ndim, axis):
    v = np.asarray(v)
    if v.size == 1 or ndim == 0:
        return v.reshape(()) if v.size == 1 else v
    if v.ndim == 1:
        shp = [1] * ndim
        shp[axis % ndim] = v.size
        return v.reshape(shp)
    return v  # blocked quantization: already shaped like the data (numpy broadcast)


def quantize_np(x, scale, zp, axis=1):
    """QuantizeLinear in numpy (constants at creation): division, half-to-even, saturation."""
    dt = np.dtype(np.uint8) if zp is None else np.asarray(zp).dtype
    if dt not in INT_DT and dt != np.dtype(np.int32):
        raise Unimplemented(f"QuantizeLinear: zero point type {dt}; dnnq.onnx quantizes to "
                            "uint8, int8 and int32")
    lo, hi = RANGE[INT_DT[dt]]
    x = np.asarray(x, F32)
    s = _bcast(np.asarray(scale, F32), x.ndim, axis)
    z = 0 if zp is None else _bcast(np.asarray(zp).astype(np.float64), x.ndim, axis)
    with np.errstate(all="ignore"):
        q = np.rint(x / s).astype(np.float64) + z
    return np.clip(np.nan_to_num(q), lo, hi).astype(dt)


def dequantize_np(q, scale, zp, axis=1):
    """DequantizeLinear in numpy: (q - zp) * scale. 8-bit values in f32 arithmetic (their
    differences are exact there), wider ones through int64."""
    q = np.asarray(q)
    s = _bcast(np.asarray(scale, F32), q.ndim, axis)
    if q.dtype.itemsize == 1 and (zp is None or np.asarray(zp).dtype.itemsize == 1):
        z = F32(0) if zp is None else _bcast(np.asarray(zp).astype(F32), q.ndim, axis)
        r = q.astype(F32)
        if zp is not None and np.any(z):
            r -= z
        r *= s
        return r
    z = 0 if zp is None else _bcast(np.asarray(zp).astype(np.int64), q.ndim, axis)
    return ((q.astype(np.int64) - z).astype(F32) * s).astype(F32)


def qparams_of(node_name, op, scale, zp, axis, data_ndim=None):
    """QParams from a Q / DQ node's constant scale / zero point (zp None: uint8 0)."""
    scale = np.asarray(scale)
    if scale.dtype != np.float32:
        raise Unimplemented(f"node {node_name!r}: {op} with a {scale.dtype} scale; dnnq.onnx "
                            "takes float32 scales")
    if np.any(~np.isfinite(scale)) or np.any(scale <= 0):
        raise InvalidArguments(f"node {node_name!r}: {op} scale {scale.reshape(-1)[:4]}; "
                               "expected finite values > 0")
    if zp is None:
        dt = "u8"
        zp = np.zeros(scale.size, np.int32)
    else:
        zp = np.asarray(zp)
        if zp.dtype not in INT_DT:
            raise Unimplemented(f"node {node_name!r}: {op} with a {zp.dtype} zero point; "
                                "dnnq.onnx takes uint8, int8 and int32")
        dt = INT_DT[zp.dtype]
        if scale.size == 1 and zp.size > 1:  # one scale, zero points per channel
            scale = np.repeat(scale.reshape(-1), zp.size)
        if zp.size != scale.size and zp.size != 1:
            raise InvalidArguments(f"node {node_name!r}: {op} has {scale.size} scales and "
                                   f"{zp.size} zero points; expected equal counts")
    if scale.ndim > 1:
        raise Unimplemented(f"node {node_name!r}: {op} with blocked quantization (scale shape "
                            f"{scale.shape}); dnnq.onnx takes per-tensor and per-axis")
    if scale.size > 1 and data_ndim is not None:
        axis = axis % data_ndim
    return QParams(scale, zp, dt, axis if scale.size > 1 else None)
