"""Reference f32 formulas of the eltwise and binary algorithms (SPEC section 5), in numpy.

These are the definitions oneDNN 3.x documents (``dev_guide_eltwise``) and its reference
implementation computes, evaluated in f32 (every intermediate is rounded to f32 as the C code
does).  They serve as the model the kernels are tested against.

Exactness (what "exact" means: bit-identical to oneDNN on x86):

* relu, linear, clip, clip_v2, abs, square, sqrt, round, hardsigmoid, hardswish and all binary
  algorithms are exact.  ``linear`` is a *fused* multiply-add ``fma(alpha, x, beta)`` rounded
  once to f32, as oneDNN's JIT injector (``vfmadd213ps``) computes it; ``hardsigmoid`` is the
  unfused ``alpha * x`` then ``+ beta`` (oneDNN uses ``vmulps`` + ``vaddps`` there).
* exp, log, logistic, tanh, elu, gelu_tanh, gelu_erf, swish, mish, soft_relu and pow use numpy's
  f32 (or f64 for erf) library functions: a few f32 ulp from oneDNN's own polynomial
  approximations, not bit-identical.

Formulas (``s`` the source, ``a`` alpha, ``b`` beta)::

    relu        s > 0 ? s : a*s                 linear      fma(a, s, b)
    elu         s > 0 ? s : a*expm1(s)          soft_relu   log1p(exp(a*s)) / a  (a*s >= 88.72.. -> a*s / a)
    square      s*s                             logistic    -s < 88.72.. ? 1/(1+exp(-s)) : 0
    abs         |s|                             exp         exp(s)
    sqrt        sqrt(s)                         gelu_tanh   0.5*s*(1+tanh(c1*s*(1+0.044715*s*s))), c1 = f32(sqrt(2/pi))
    tanh        tanh(s)                         gelu_erf    0.5*s*(1+erf(s*c2)), c2 = f32(sqrt(2)/2)
    swish       s*logistic(a*s)                 log         log(s)
    clip        t = s > a ? s : a;  t > b ? b : t          (requires b >= a)
    clip_v2     t = s > a ? s : a;  t < b ? t : b          (requires b >= a; equals clip forward)
    pow         a * s**b                        round       half to even (nearbyint)
    mish        s*tanh(log1p(exp(s)))           hardsigmoid t = a*s + b; t = t < 1 ? t : 1;
    hardswish   s * hardsigmoid(s)                          t > 0 ? t : 0  (JIT: NaN -> 1)

(oneDNN's reference kernels compute hardsigmoid as t <= 0 ? 0 : t >= 1 ? 1 : t, which keeps a
NaN; dnnq follows whichever kernel oneDNN runs for the primitive.)

Binary: add, sub, mul, div, min (a < b ? a : b), max (a > b ? a : b); ge, gt, le, lt, eq, ne give
1.0 where the comparison holds, else 0.0.
"""

import decimal
import math

import numpy as np

from .errors import invalid
from .post_ops import canonical_binary_alg, canonical_eltwise_alg

__all__ = ["eltwise_reference", "eltwise_table", "binary_reference", "fma_f32", "ELTWISE_EXACT"]

_F = np.float32
_EXP_OVERFLOW_BOUND = _F(88.72283172607421875)
_SQRT_2_OVER_PI = _F(0.79788458347320556640625)
_SQRT_2_OVER_2 = _F(0.707106769084930419921875)
_GELU_FIT = _F(0.044715)

#: algorithms whose reference is bit-identical to oneDNN
ELTWISE_EXACT = frozenset({"relu", "linear", "clip", "clip_v2", "abs", "square", "sqrt", "round",
                           "hardsigmoid", "hardswish"})


def fma_f32(a, x, b):
    """``a * x + b`` rounded once to f32 (a fused multiply-add), element-wise.

    The product of two f32 values is exact in f64; the f64 sum is made round-to-odd (from its
    exact TwoSum error) so that the final rounding to f32 is correct: no double rounding.

    Parameters
    ----------
    a, x, b : array_like
        Converted to f32 first; broadcast numpy-style.

    Returns
    -------
    numpy.ndarray of float32

    Raises
    ------
    None

    Examples
    --------
    >>> import numpy as np
    >>> from dnnq.eltwise_math import fma_f32
    >>> a = np.float32(1 + 2**-12)
    >>> float(fma_f32(a, a, -a * a)) != 0.0             # the product's low bits survive
    True
    """
    a64 = np.asarray(a, _F).astype(np.float64)
    x64 = np.asarray(x, _F).astype(np.float64)
    b64 = np.asarray(b, _F).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a64 * x64                      # exact (24 + 24 bits < 53)
        s = p + b64
        bb = s - p
        err = (p - (s - bb)) + (b64 - bb)  # TwoSum: p + b == s + err exactly
        bits = s.view(np.int64)
        fix = np.isfinite(s) & (err != 0) & ((bits & 1) == 0)
        if np.any(fix):
            toward = np.where(err > 0, np.inf, -np.inf)
            s = np.where(fix, np.nextafter(s, toward), s)
        return s.astype(_F)


def _where_lt(a, b):
    """x86 ``minps`` semantics: a < b ? a : b (returns b when either is NaN)."""
    return np.where(a < b, a, b)


def _where_gt(a, b):
    return np.where(a > b, a, b)


def _logistic(x, lib):
    with np.errstate(all="ignore"):
        neg = -x
        v = _F(1) / (_F(1) + lib.exp(neg))
    return np.where(neg < _EXP_OVERFLOW_BOUND, v, _F(0)).astype(_F)


def _soft_relu(x, alpha, lib):
    with np.errstate(all="ignore"):
        t = x * alpha
        v = np.where(t < _EXP_OVERFLOW_BOUND, lib.log1p(lib.exp(t)), t).astype(_F)
        return (v / alpha).astype(_F)


def _erf_f32(x):
    flat = np.asarray(x, np.float64).reshape(-1)
    out = np.fromiter((math.erf(v) if not math.isnan(v) else math.nan for v in flat),
                      np.float64, count=flat.size)
    return out.astype(_F).reshape(np.shape(x))


class _NumpyLib:
    """The library functions of the formulas: numpy's f32 ones (fast; their SIMD paths,
    chosen by the CPU, differ in the last ulp)."""
    exp, expm1, log, log1p, tanh, power = (staticmethod(f) for f in (
        np.exp, np.expm1, np.log, np.log1p, np.tanh, np.power))
    erf = staticmethod(_erf_f32)


_DEC = decimal.Context(prec=30, Emax=10 ** 6, Emin=-10 ** 6, traps=[])
_DEC_ERF = decimal.Context(prec=50, Emax=10 ** 6, Emin=-10 ** 6, traps=[])
_TWO_OVER_SQRT_PI = _DEC_ERF.divide(2, _DEC_ERF.sqrt(decimal.Decimal(
    "3.14159265358979323846264338327950288419716939937510582097494")))


def _d(v):
    return _DEC.create_decimal_from_float(v)


def _dec_exp(v):
    return float(_DEC.exp(_d(v)))


def _dec_expm1(v):
    return v if abs(v) < 1e-10 else float(_DEC.subtract(_DEC.exp(_d(v)), 1))


def _dec_log(v):
    return float(_DEC.ln(_d(v)))


def _dec_log1p(v):
    return v if abs(v) < 1e-12 else float(_DEC.ln(_DEC.add(1, _d(v))))


def _dec_tanh(v):
    if v != v or v == 0 or abs(v) < 1e-10:
        return v
    if abs(v) > 20:  # tanh(20) is 1 in f32
        return math.copysign(1.0, v)
    e = _DEC.exp(_DEC.multiply(2, _d(v)))
    return float(_DEC.divide(_DEC.subtract(e, 1), _DEC.add(e, 1)))


def _dec_erf(v):
    if v != v or v == 0 or abs(v) < 1e-10:
        return v * 1.1283791670955126 if v == v else v
    if abs(v) > 4:  # 1 - erf(4) = 1.5e-8 is below half an f32 ulp of 1
        return math.copysign(1.0, v)
    x = _DEC_ERF.create_decimal_from_float(v)
    x2 = _DEC_ERF.multiply(x, x)
    term, total, n = x, x, 0  # sum of (-1)^n x^(2n+1) / (n! (2n+1))
    while True:
        n += 1
        term = _DEC_ERF.divide(_DEC_ERF.multiply(-term, x2), n)
        step = _DEC_ERF.divide(term, 2 * n + 1)
        if abs(step) < decimal.Decimal("1e-40"):
            break
        total = _DEC_ERF.add(total, step)
    return float(_DEC_ERF.multiply(total, _TWO_OVER_SQRT_PI))


def _dec_power(a, b):
    return float(_DEC.power(_d(a), _d(b)))


def _elementwise(fn, *xs):
    xs = np.broadcast_arrays(*(np.asarray(x, _F) for x in xs))
    out = np.fromiter((fn(*v) for v in zip(*(x.reshape(-1).tolist() for x in xs))),
                      np.float64, count=xs[0].size)
    return out.astype(_F).reshape(xs[0].shape)


class _DecimalLib:
    """The library functions in decimal arithmetic (libmpdec: the same digits on every CPU),
    rounded to f32: for the few values of a lookup table, whose bytes must not depend on
    the host."""
    exp, expm1, log, log1p, tanh, erf = (
        staticmethod(lambda x, f=f: _elementwise(f, x))
        for f in (_dec_exp, _dec_expm1, _dec_log, _dec_log1p, _dec_tanh, _dec_erf))
    power = staticmethod(lambda a, b: _elementwise(_dec_power, a, b))


def eltwise_reference(alg, x, alpha=0.0, beta=0.0):
    """Apply eltwise algorithm ``alg`` to ``x`` in f32, as oneDNN defines it.

    The reference the kernels are tested against.  relu, linear, clip, clip_v2, abs,
    square, sqrt, round, hardsigmoid and hardswish are bit-identical to oneDNN; the
    transcendental algorithms use numpy's f32 functions, a few ulp from the kernels' (which
    compute logistic, swish, tanh and gelu_tanh as oneDNN's JIT kernels do).

    Parameters
    ----------
    alg : str
        An eltwise algorithm (see :meth:`PostOps.append_eltwise`), with or without the
        ``eltwise_`` prefix.
    x : array_like
        Converted to an f32 array.
    alpha, beta : float, optional
        Converted to f32.

    Returns
    -------
    numpy.ndarray of float32
        A new array of ``x``'s shape.

    Raises
    ------
    InvalidArguments
        For an unknown algorithm.

    See Also
    --------
    binary_reference

    Examples
    --------
    >>> from dnnq.eltwise_math import eltwise_reference
    >>> eltwise_reference("relu", [-2.0, 3.0], alpha=0.5)
    array([-1.,  3.], dtype=float32)
    >>> eltwise_reference("round", [0.5, 1.5, 2.5])       # half to even
    array([0., 2., 2.], dtype=float32)
    """
    return _eltwise(alg, x, alpha, beta, _NumpyLib)


def eltwise_table(alg, x, alpha=0.0, beta=0.0):
    """Apply eltwise algorithm ``alg`` to ``x`` in f32, the same bits on every CPU.

    :func:`eltwise_reference`'s formulas, with their library functions (exp, expm1, log,
    log1p, tanh, erf, pow) computed in decimal arithmetic and rounded to f32: numpy's f32
    functions take CPU-specific SIMD paths that differ in the last ulp, so a value computed
    with them can round to another int8 step on another machine.  dnnq builds its 256-entry
    lookup tables with this; it is slow on large arrays.

    Parameters
    ----------
    alg : str
        An eltwise algorithm (see :meth:`PostOps.append_eltwise`), with or without the
        ``eltwise_`` prefix.
    x : array_like
        Converted to an f32 array.
    alpha, beta : float, optional
        Converted to f32.

    Returns
    -------
    numpy.ndarray of float32
        A new array of ``x``'s shape.

    Raises
    ------
    InvalidArguments
        For an unknown algorithm.

    See Also
    --------
    eltwise_reference

    Examples
    --------
    >>> from dnnq.eltwise_math import eltwise_table
    >>> eltwise_table("logistic", [0.0, 2.0])
    array([0.5     , 0.880797], dtype=float32)
    """
    return _eltwise(alg, x, alpha, beta, _DecimalLib)


def _erf_table(x):
    """erf in f32 as :func:`eltwise_table` computes it: the same bits on every CPU."""
    return _DecimalLib.erf(x)


def _power_table(a, b):
    """``a ** b`` in f32 (broadcast) as :func:`eltwise_table` computes it."""
    return _DecimalLib.power(a, b)


def _eltwise(alg, x, alpha, beta, lib):
    name = canonical_eltwise_alg(alg)
    s = np.array(x, dtype=_F, copy=True)
    a, b = _F(alpha), _F(beta)
    with np.errstate(all="ignore"):
        if name == "relu":
            r = np.where(s > 0, s, s * a)
        elif name == "tanh":
            r = lib.tanh(s)
        elif name == "elu":
            r = np.where(s > 0, s, a * lib.expm1(s))
        elif name == "square":
            r = s * s
        elif name == "abs":
            r = np.abs(s)
        elif name == "sqrt":
            r = np.sqrt(s)
        elif name == "linear":
            r = fma_f32(a, s, b)
        elif name == "soft_relu":
            r = _soft_relu(s, a, lib)
        elif name == "logistic":
            r = _logistic(s, lib)
        elif name == "exp":
            r = lib.exp(s)
        elif name == "gelu_tanh":
            g = _SQRT_2_OVER_PI * s * (_F(1) + _GELU_FIT * s * s)
            r = _F(0.5) * s * (_F(1) + lib.tanh(g))
        elif name == "gelu_erf":
            r = _F(0.5) * s * (_F(1) + lib.erf(s * _SQRT_2_OVER_2))
        elif name == "swish":
            r = s * _logistic(a * s, lib)
        elif name == "log":
            r = lib.log(s)
        elif name == "clip":
            t = _where_gt(s, a)
            r = np.where(t > b, b, t)
        elif name == "clip_v2":
            t = _where_gt(s, a)
            r = np.where(t < b, t, b)
        elif name == "pow":
            r = a * lib.power(s, b)
        elif name == "round":
            r = np.rint(s)
        elif name == "mish":
            r = s * lib.tanh(_soft_relu(s, _F(1), lib))
        elif name in ("hardsigmoid", "hardswish"):  # vminps then vmaxps: NaN -> 1
            t = s * a + b
            t = np.where(t < 1, t, _F(1))
            t = np.where(t > 0, t, _F(0))
            r = t if name == "hardsigmoid" else s * t
        else:  # pragma: no cover - canonical_eltwise_alg only returns the names above
            raise invalid("alg", repr(alg), "an eltwise algorithm")
    return np.asarray(r, dtype=_F).reshape(s.shape)


def binary_reference(alg, a, b):
    """Apply binary algorithm ``alg`` in f32, as oneDNN defines it.

    Parameters
    ----------
    alg : str
        add, sub, mul, div, min, max, ge, gt, le, lt, eq, ne (with or without the
        ``binary_`` prefix).
    a, b : array_like
        Converted to f32 arrays and broadcast numpy-style.

    Returns
    -------
    numpy.ndarray of float32
        Comparisons give 1.0 where they hold, else 0.0.

    Raises
    ------
    InvalidArguments
        For an unknown algorithm.

    See Also
    --------
    eltwise_reference

    Examples
    --------
    >>> from dnnq.eltwise_math import binary_reference
    >>> binary_reference("ge", [1.0, 2.0], 1.5)
    array([0., 1.], dtype=float32)
    """
    name = canonical_binary_alg(alg)
    x = np.asarray(a, dtype=_F)
    y = np.asarray(b, dtype=_F)
    with np.errstate(all="ignore"):
        if name == "add":
            r = x + y
        elif name == "sub":
            r = x - y
        elif name == "mul":
            r = x * y
        elif name == "div":
            r = x / y
        elif name == "min":
            r = _where_lt(x, y)
        elif name == "max":
            r = _where_gt(x, y)
        else:
            cmp = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal,
                   "lt": np.less, "eq": np.equal, "ne": np.not_equal}[name]
            r = cmp(x, y).astype(_F)
    return np.asarray(r, dtype=_F)
