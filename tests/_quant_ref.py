"""Independent numpy models of dnnq's quantized formulas (SPEC section 2), written from the
contract, not from dnnq's code: int64 accumulation, the f32 epilogue in oneDNN's order."""
import numpy as np

from dnnq.eltwise_math import eltwise_reference, binary_reference, fma_f32

F32 = np.float32
RANGES = {"s8": (-128, 127), "u8": (0, 255), "s32": (-2**31, 2**31 - 1)}
NP = {"s8": np.int8, "u8": np.uint8, "s32": np.int32, "f32": np.float32}


def gen(rng, dt, shape, scale=3.0, s32_range=300):
    """Random test data: normal f32 (times `scale`), s32 in [-s32_range, s32_range), and the
    full s8 / u8 range."""
    if dt == "f32":
        return (rng.standard_normal(shape) * scale).astype(F32)
    if dt == "s32":
        return rng.integers(-s32_range, s32_range, size=shape).astype(np.int32)
    lo, hi = (-128, 128) if dt == "s8" else (0, 256)
    return rng.integers(lo, hi, size=shape).astype(NP[dt])


def saturate_rne(d, dt):
    """f32 -> dt as oneDNN stores it: NaN -> +127 (s8), 0 (u8), 2147483520 (s32); round half
    to even; saturate (s32 at the largest f32 below 2**31)."""
    if dt == "f32":
        return d.astype(np.float32)
    lo, hi = RANGES[dt]
    d = np.where(np.isnan(d), {"s8": 127.0, "u8": 0.0, "s32": 2147483520.0}[dt], d)
    if dt == "s32":
        return np.clip(np.rint(d.astype(np.float64)), lo, 2147483520.0).astype(np.int32)
    return np.clip(np.rint(d), lo, hi).astype(NP[dt])


def epilogue(acc, dst_dt, *, scale=None, bias=None, post_ops=(), dst_prev=None,
             dst_scale=None, dst_zp=None):
    """acc: int64 array (..., N). scale: f32 (N,) or scalar already combined src*wei."""
    v = acc.astype(np.int32).astype(F32)  # the s32 accumulator, converted to f32
    if scale is not None:
        v = (v * np.asarray(scale, F32)).astype(F32)
    if bias is not None:
        v = (v + np.asarray(bias, F32)).astype(F32)
    for op in post_ops:
        if op[0] == "eltwise":
            v = np.asarray(eltwise_reference(op[1], v, op[2], op[3]), F32)
        elif op[0] == "binary":
            v = np.asarray(binary_reference(op[1], v, np.asarray(op[2], F32)), F32)
        elif op[0] == "sum":
            zp = op[2] if len(op) > 2 else 0
            # one rounding: oneDNN's kernels fuse the sum (vfmadd231ps)
            v = np.asarray(fma_f32(F32(op[1]), (dst_prev.astype(F32) - F32(zp)).astype(F32), v),
                           F32)
    d = v
    if dst_scale is not None:
        d = (d * (F32(1.0) / F32(dst_scale))).astype(F32)
    if dst_zp is not None:
        d = (d + np.asarray(dst_zp, F32)).astype(F32)
    return saturate_rne(d, dst_dt)


def matmul_acc(src, wei, src_zp=None, wei_zp=None):
    """sum_k (src - zp_src[k]) * (wei - zp_wei[n]) in int64, batched with broadcast."""
    s = src.astype(np.int64)
    w = wei.astype(np.int64)
    if src_zp is not None:
        s = s - np.asarray(src_zp, np.int64)
    if wei_zp is not None:
        w = w - np.asarray(wei_zp, np.int64)
    return s @ w
