"""oneDNN's int8 GEMM functions: C = alpha * (op(A) - ao)(op(B) - bo) + beta * C + co.

Row-major, A and B given as stored (A is (K, M) when transa).  co has 1 value (offsetc "F"),
M values, one per row of C (offsetc "C": a column vector added to every column), or N values,
one per column (offsetc "R": a row vector added to every row) — as dnnl.h defines them.
The s32 accumulation wraps on overflow as oneDNN's does; with alpha = 1 and beta = 0 the
result is acc + co, saturated to s32; otherwise alpha*acc + beta*C + co is computed in f64 and
rounded half away from zero (as oneDNN's GEMM, unlike the primitives), then saturated.
"""
import numpy as np

from dnnq.errors import InvalidArguments
from dnnq.primitives._plan import s32_gemm
from dnnq.primitives._gemm_primitive import wrap_s32

_S32 = (np.iinfo(np.int32).min, np.iinfo(np.int32).max)


def _operand(x, name, dtype, trans):
    if not isinstance(x, np.ndarray):
        raise InvalidArguments(f"{name}: got {type(x).__name__}; expected a numpy array")
    if x.dtype != dtype or x.ndim != 2:
        raise InvalidArguments(f"{name}: got {x.dtype} with {x.ndim} dims; expected a 2-D "
                               f"{np.dtype(dtype).name} array")
    return np.ascontiguousarray(x.T if trans else x)


def _int_in(value, name, lo, hi):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or \
            not lo <= int(value) <= hi:
        raise InvalidArguments(f"{name}: got {value!r}; expected an int in [{lo}, {hi}]")
    return int(value)


def _real(value, name):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidArguments(f"{name}: got {value!r}; expected a finite real number") from None
    if not np.isfinite(v):
        raise InvalidArguments(f"{name}: got {value!r}; expected a finite real number")
    return v


def _gemm(a_dtype, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc):
    a = _operand(A, "A", a_dtype, transa)
    b = _operand(B, "B", np.int8, transb)
    M, K = a.shape
    if b.shape[0] != K:
        raise InvalidArguments(f"B: op(B) has {b.shape[0]} rows; expected K = {K} from op(A) "
                               f"of shape {a.shape}")
    N = b.shape[1]
    alpha, beta = _real(alpha, "alpha"), _real(beta, "beta")
    ai = np.iinfo(a_dtype)
    ao = _int_in(ao, "ao", ai.min, ai.max)
    bo = _int_in(bo, "bo", -128, 127)
    if offsetc not in ("F", "C", "R", "f", "c", "r"):
        raise InvalidArguments(f"offsetc: got {offsetc!r}; expected 'F', 'C' or 'R'")
    offsetc = offsetc.upper()
    count = {"F": 1, "C": M, "R": N}[offsetc]
    if co is None:
        co_v = np.zeros(count, np.int64)
    else:
        co_a = np.asarray(co)
        if co_a.dtype.kind not in "iu" or co_a.size != count:
            raise InvalidArguments(f"co: got {co_a.dtype} with {co_a.size} values; expected "
                                   f"{count} integer values for offsetc {offsetc!r}")
        co_v = co_a.reshape(-1).astype(np.int64)
        if co_v.min() < _S32[0] or co_v.max() > _S32[1]:
            raise InvalidArguments("co: values outside the s32 range")
    co_b = co_v.reshape(M, 1) if offsetc == "C" else co_v.reshape(1, -1)
    if C is not None:
        if not isinstance(C, np.ndarray) or C.dtype != np.int32 or C.shape != (M, N):
            raise InvalidArguments(f"C: expected an int32 array of shape ({M}, {N})")
        if not (C.flags.c_contiguous and C.flags.writeable):
            raise InvalidArguments("C: must be a writable C-contiguous array (written in place)")
    elif beta != 0.0:
        raise InvalidArguments("C: beta is not 0, so the previous C must be given")
    acc = s32_gemm(a, b).astype(np.int64)
    if ao or bo:
        colsum = b.sum(axis=0, dtype=np.int64)
        rowsum = a.sum(axis=1, dtype=np.int64)
        acc = acc - ao * colsum[None, :] - bo * rowsum[:, None] + K * ao * bo
    acc = wrap_s32(acc).astype(np.int64)
    if alpha == 1.0 and beta == 0.0:
        res = np.clip(acc + co_b, *_S32)
    else:
        r = alpha * acc.astype(np.float64) + co_b
        if beta != 0.0:
            r = r + beta * C.astype(np.float64)
        r = np.where(r >= 0, np.floor(r + 0.5), np.ceil(r - 0.5))  # half away from zero
        res = np.clip(r, *_S32)
    out = C if C is not None else np.empty((M, N), np.int32)
    out[...] = res
    return out


def gemm_u8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0, ao=0, bo=0,
                 co=None, offsetc="F"):
    """C = alpha * (op(A) - ao)(op(B) - bo) + beta * C + co with A u8, B s8 (oneDNN's
    dnnl_gemm_u8s8s32, row-major).  Returns C (int32, written in place when given).

    Support table (no execute keys: a function, all arguments given here):

    ===========  ==========================================================
    A            u8, 2-D, (M, K), or (K, M) with ``transa=True``
    B            s8, 2-D, (K, N), or (N, K) with ``transb=True``
    C            s32 (M, N), read when ``beta != 0``; None: a new array
    alpha, beta  finite floats
    ao, bo       the zero points of A (0..255) and B (-128..127)
    co, offsetc  s32 offsets added after rounding: ``offsetc="F"`` one value,
                 ``"C"`` one per row (M), ``"R"`` one per column (N)
    ===========  ==========================================================
    """
    return _gemm(np.uint8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)


def gemm_s8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0, ao=0, bo=0,
                 co=None, offsetc="F"):
    """As gemm_u8s8s32 with A s8 (exact: no vpmaddubsw saturation on any ISA)."""
    return _gemm(np.int8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)
