"""oneDNN's int8 GEMM functions: C = alpha * (op(A) - ao)(op(B) - bo) + beta * C + co.

Row-major, A and B given as stored (A is (K, M) when transa).  co has 1 value (offsetc "F"),
M values, one per row of C (offsetc "C": a column vector added to every column), or N values,
one per column (offsetc "R": a row vector added to every row) — as dnnl.h defines them.

Bit-identical to oneDNN 3.2's dnnl_gemm_u8s8s32 / dnnl_gemm_s8s8s32 run at avx512_core_vnni on
one thread, at every dnnq ISA level and thread count (the result depends on the problem only;
docs/matmul.md, "gemm_u8s8s32 / gemm_s8s8s32"): alpha and beta are f32; with alpha = 1 and beta in {0, 1}
the result is the wrapping s32 sum acc + beta * C + co; otherwise oneDNN's K blocks
(_gemm_kplan.py) each round f64(alpha) * acc_block + f64(beta_eff) * C half away from zero
with saturation (blocks split across threads are added as s32), and co is added (wrapping)
after the last block.  The s32 accumulation
wraps on overflow as oneDNN's does.  Packing, GEMM and finishing run in C
(dnnq/primitives/_kernels/_gemm_api.pyx) without the GIL.
"""
import numbers

import numpy as np

from dnnq.primitives import _dispatch, _impls
from dnnq.primitives._kernels import _gemm_api
from dnnq.errors import InvalidArguments, Unimplemented, real_to_float
from dnnq.primitives._common import overlaps
from dnnq.primitives._gemm_kplan import k_plan
from dnnq.primitives._plan import DT_CODE, ISA_CODE

_S32 = (np.iinfo(np.int32).min, np.iinfo(np.int32).max)
_F32_MAX = float(np.finfo(np.float32).max)
_CO_MODE = {"F": 0, "C": 1, "R": 2}


def _operand(x, name, dtype, trans):
    if not isinstance(x, np.ndarray):
        raise InvalidArguments(f"{name}: got {type(x).__name__}; expected a numpy array")
    if x.dtype != dtype or x.ndim != 2:
        raise InvalidArguments(f"{name}: got {x.dtype} with {x.ndim} dims; expected a 2-D "
                               f"{np.dtype(dtype).name} array")
    return x.T if trans else x  # a view: the C side reads any strides


def _int_in(value, name, lo, hi):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or \
            not lo <= int(value) <= hi:
        raise InvalidArguments(f"{name}: got {value!r}; expected an int in [{lo}, {hi}]")
    return int(value)


def _real(value, name):
    # a real number only (no strings, no bool); 10**400 is a real beyond f32, not an overflow
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArguments(f"{name}: got {value!r}; expected a finite real number")
    v = real_to_float(value)
    if not np.isfinite(v) or abs(v) > _F32_MAX:
        raise InvalidArguments(f"{name}: got {value!r}; expected a finite real number (it is "
                               f"used as an f32, as oneDNN's float {name})")
    return float(np.float32(v))


def _trans_flag(value, name):
    # a bool (or dnnl_gemm's 'N' / 'T'): "yes", 1 or None are refused, not read as truthy
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.upper() in ("N", "T"):
        return value.upper() == "T"
    raise InvalidArguments(f"{name}: got {value!r}; expected a bool (or 'N' / 'T' as in "
                           "dnnl_gemm_u8s8s32)")


def _gemm(a_dtype, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc):
    transa, transb = _trans_flag(transa, "transa"), _trans_flag(transb, "transb")
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
    if a_dtype == np.int8 and _dispatch.get_int8_numerics() == "avx2" and (
            alpha != 1.0 or ao != 0 or bo != 0 or not float(beta).is_integer()):
        # without VNNI oneDNN runs simple_gemm_s8s8s32 (its compensation rounded separately)
        # or, with offsets, ref_gemm_s8x8s32 in f64: not reproduced
        raise Unimplemented(
            f"gemm_s8s8s32: alpha={alpha!r}, beta={beta!r}, ao={ao}, bo={bo} under "
            "set_int8_numerics('avx2'); supported there: alpha 1, an integer beta, ao = bo = 0 "
            "(or set_int8_numerics('exact'))")
    if not isinstance(offsetc, str) or offsetc not in ("F", "C", "R", "f", "c", "r"):
        raise InvalidArguments(f"offsetc: got {offsetc!r}; expected 'F', 'C' or 'R'")
    offsetc = offsetc.upper()
    count = {"F": 1, "C": M, "R": N}[offsetc]
    if co is None:
        co_v = np.zeros(max(count, 1), np.int32)
    else:
        co_a = np.asarray(co)
        if co_a.dtype.kind not in "iu" or co_a.size != count:
            raise InvalidArguments(f"co: got {co_a.dtype} with {co_a.size} values; expected "
                                   f"{count} integer values for offsetc {offsetc!r}")
        co_v = co_a.reshape(-1)
        if co_v.size and (co_v.min() < _S32[0] or co_v.max() > _S32[1]):
            raise InvalidArguments("co: values outside the s32 range")
        co_v = np.ascontiguousarray(co_v, dtype=np.int32)
        if co_v.size == 0:
            co_v = np.zeros(1, np.int32)
    if C is not None:
        if not isinstance(C, np.ndarray) or C.dtype != np.int32 or C.shape != (M, N):
            raise InvalidArguments(f"C: expected an int32 array of shape ({M}, {N})")
        if not (C.flags.c_contiguous and C.flags.writeable):
            raise InvalidArguments("C: must be a writable C-contiguous array (written in place)")
        for name, x in (("A", A), ("B", B), ("co", co)):
            if isinstance(x, np.ndarray) and overlaps(C, x):
                raise InvalidArguments(f"C: shares memory with {name}; expected separate "
                                       f"arrays (C is written while {name} is read)")
    elif beta != 0.0:
        raise InvalidArguments("C: beta is not 0, so the previous C must be given")
    out = C if C is not None else np.zeros((M, N), np.int32)
    if M == 0 or N == 0 or K == 0:
        return out  # oneDNN returns at once: C is left as it is
    # Where the result rounds (oneDNN's K blocks) is a function of the problem alone: oneDNN's
    # AVX512-VNNI blocking on one thread, at every dnnq level and thread count (its other
    # levels and its thread splits round elsewhere: docs/numerics.md "Across machines").
    # set_int8_numerics("avx2") follows oneDNN run at AVX2 with this thread count instead.
    kernel = _impls.choose("gemm_u8s8s32", _impls.GEMM, M=M).isa  # AMX: AVX-512 below 8 rows
    nthreads = _dispatch.get_num_threads()
    s8 = a_dtype == np.int8
    if _dispatch.get_int8_numerics() == "avx2":
        plan = k_plan("avx2", M, N, K, alpha, beta, nthreads, ao, bo, s8)
    else:
        plan = k_plan("avx512_core_vnni", M, N, K, alpha, beta, 1, ao, bo, s8)
    _gemm_api.run(a.view(np.uint8) if s8 else a, b, out, s8, C is not None and beta != 0.0,
                  alpha, beta, ao, bo, co_v, _CO_MODE[offsetc], plan,
                  _dispatch.kernel_isa_code(kernel), DT_CODE["s32"], nthreads)
    return out


def gemm_u8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0, ao=0, bo=0,
                 co=None, offsetc="F"):
    """oneDNN's int8 GEMM: ``C = alpha * (op(A) - ao)(op(B) - bo) + beta * C + co``, A u8, B s8.

    As ``dnnl_gemm_u8s8s32``, row-major, bit-identical to oneDNN 3.2 run at
    ``avx512_core_vnni`` on one thread, at every dnnq ISA level and thread count (the result
    depends on the problem only), for every alpha, beta and offset: oneDNN finishes the s32
    accumulator per K block in f64 (``alpha * acc + beta * C``, rounded half away from zero
    and saturated), then adds ``co`` wrapping.  With ``alpha = 1`` and ``beta`` in {0, 1} the
    result is the exact s32 sum.

    Parameters
    ----------
    A : numpy.ndarray of uint8
        ``(M, K)``, or ``(K, M)`` with ``transa``; any strides.
    B : numpy.ndarray of int8
        ``(K, N)``, or ``(N, K)`` with ``transb``.
    C : numpy.ndarray of int32, optional
        ``(M, N)``; read when ``beta != 0``, written in place.  None: a new array.
    transa, transb : bool, optional
        ``op(A) = A.T`` / ``op(B) = B.T``.
    alpha, beta : float, optional
        Finite in f32.
    ao, bo : int, optional
        The zero points of A (0..255) and B (-128..127).
    co : array_like of int32, optional
        Offsets added last: one value (``offsetc="F"``), M values (``"C"``, one per row) or
        N values (``"R"``, one per column).
    offsetc : {"F", "C", "R"}, optional
        How many values ``co`` has.

    Returns
    -------
    numpy.ndarray of int32
        C.

    Raises
    ------
    InvalidArguments
        Arrays of the wrong dtype or shape, alpha / beta not finite in f32, offsets out of
        range, a C that shares memory with A, B or co.

    See Also
    --------
    gemm_s8s8s32, MatMul

    Notes
    -----
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

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> A = np.array([[1, 2], [3, 4]], np.uint8)
    >>> B = np.array([[1, -1], [1, 1]], np.int8)
    >>> dnnq.gemm_u8s8s32(A, B)
    array([[3, 1],
           [7, 1]], dtype=int32)
    >>> dnnq.gemm_u8s8s32(A, B, alpha=0.5, co=np.array([100], np.int32))   # 1.5 -> 2
    array([[102, 101],
           [104, 101]], dtype=int32)
    """
    return _gemm(np.uint8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)


def gemm_s8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0, ao=0, bo=0,
                 co=None, offsetc="F"):
    """oneDNN's int8 GEMM with a signed A: ``C = alpha * (op(A) - ao)(op(B) - bo) + beta * C + co``.

    As :func:`gemm_u8s8s32` (``dnnl_gemm_s8s8s32``) with A s8 (ao in -128..127); exact on
    every ISA level (no ``vpmaddubsw`` saturation).

    Parameters
    ----------
    A : numpy.ndarray of int8
        ``(M, K)``, or ``(K, M)`` with ``transa``.
    B : numpy.ndarray of int8
        ``(K, N)``, or ``(N, K)`` with ``transb``.
    C : numpy.ndarray of int32, optional
        ``(M, N)``, read when ``beta != 0``, written in place.
    transa, transb : bool, optional
        Transpose flags.
    alpha, beta : float, optional
        Finite in f32.
    ao, bo : int, optional
        Zero points of A and B (-128..127).
    co : array_like of int32, optional
        Offsets, as for :func:`gemm_u8s8s32`.
    offsetc : {"F", "C", "R"}, optional
        How many values ``co`` has.

    Returns
    -------
    numpy.ndarray of int32
        C.

    Raises
    ------
    InvalidArguments
        As :func:`gemm_u8s8s32`.
    Unimplemented
        Under ``set_int8_numerics("avx2")``: alpha != 1, fractional beta or offsets (oneDNN's
        non-VNNI algorithm for them is not reproduced).

    See Also
    --------
    gemm_u8s8s32

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.gemm_s8s8s32(np.array([[-128, 127]], np.int8), np.array([[1], [1]], np.int8),
    ...                   bo=-1)                                  # (-128 + 127) * 2
    array([[-2]], dtype=int32)
    """
    return _gemm(np.int8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)
