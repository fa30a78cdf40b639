"""Scale / zero-point masks (SPEC section 4) and validation of the runtime arrays.

A mask says along which dimensions a scale (or zero point) varies: bit *i* set means one value
per index along dimension *i*; ``count = prod(dims[i] for each set bit)``; mask 0
(``DNNL_MASK_COMMON``) is one value for the whole tensor.

Semantic masks name "the channel dimension" without knowing the layout; the primitive resolves
them with :func:`resolve_mask` when it knows its tensors:

==============================  =======  ===================================================
constant                        value    resolves to
==============================  =======  ===================================================
``DNNL_MASK_PER_CHANNEL_NCHW``  1 << 12  bit 1 (C of N, C, ...) of a data tensor
``DNNL_MASK_PER_CHANNEL_TNC``   1 << 13  bit 2 (C of T, N, C) of an RNN data tensor
``DNNL_MASK_PER_CHANNEL_OIHW``  1 << 14  bit 0 (O of weights); bits 0 and 1 (G and O/G) with
                                         groups
==============================  =======  ===================================================

A semantic mask is used alone (never OR-ed with plain bits); a tensor that has no such
semantics raises :class:`~dnnq.errors.InvalidArguments`.

The runtime values are checked by :func:`check_scales` (any real array of exactly ``count``
elements, finite and > 0 after conversion to f32) and :func:`check_zero_points` (integral, fits
s32).  Every error names the argument.
"""

import math
from numbers import Integral

import numpy as np

from .errors import InvalidArguments, invalid
from .memory import contiguous_aligned

__all__ = [
    "DNNL_MASK_COMMON", "DNNL_MASK_PER_DIM_0", "DNNL_MASK_PER_DIM_1", "DNNL_MASK_PER_DIM_2",
    "DNNL_MASK_PER_DIM_3", "DNNL_MASK_PER_DIM_4", "DNNL_MASK_PER_DIM_5",
    "DNNL_MASK_PER_CHANNEL_NCHW", "DNNL_MASK_PER_CHANNEL_TNC", "DNNL_MASK_PER_CHANNEL_OIHW",
    "SEMANTIC_MASKS", "MAX_NDIMS", "MASK_KINDS",
    "check_mask", "scale_count", "mask_dims", "resolve_mask", "broadcast_index_strides",
    "check_scales", "check_zero_points",
]

DNNL_MASK_COMMON = 0
DNNL_MASK_PER_DIM_0 = 1 << 0
DNNL_MASK_PER_DIM_1 = 1 << 1
DNNL_MASK_PER_DIM_2 = 1 << 2
DNNL_MASK_PER_DIM_3 = 1 << 3
DNNL_MASK_PER_DIM_4 = 1 << 4
DNNL_MASK_PER_DIM_5 = 1 << 5
DNNL_MASK_PER_CHANNEL_NCHW = 1 << 12
DNNL_MASK_PER_CHANNEL_TNC = 1 << 13
DNNL_MASK_PER_CHANNEL_OIHW = 1 << 14

MAX_NDIMS = 12
"""Largest tensor rank (as oneDNN's DNNL_MAX_NDIMS); plain mask bits are 0 .. 11."""

SEMANTIC_MASKS = {
    DNNL_MASK_PER_CHANNEL_NCHW: "DNNL_MASK_PER_CHANNEL_NCHW",
    DNNL_MASK_PER_CHANNEL_TNC: "DNNL_MASK_PER_CHANNEL_TNC",
    DNNL_MASK_PER_CHANNEL_OIHW: "DNNL_MASK_PER_CHANNEL_OIHW",
}

#: Tensor kinds understood by :func:`resolve_mask` -> the semantic mask they resolve.
MASK_KINDS = {
    "data_nchw": DNNL_MASK_PER_CHANNEL_NCHW,
    "data_tnc": DNNL_MASK_PER_CHANNEL_TNC,
    "weights_oihw": DNNL_MASK_PER_CHANNEL_OIHW,
    None: None,
}

_S32_MIN, _S32_MAX = -(2 ** 31), 2 ** 31 - 1


def _mask_str(mask):
    return f"{mask} ({SEMANTIC_MASKS[mask]})" if mask in SEMANTIC_MASKS else f"{mask}"


def check_mask(mask, name="mask"):
    """Validate a mask as given to an attribute: an int >= 0 that is either a plain mask (bits
    0 .. 11) or exactly one semantic mask.  Returns it as a Python int.  (Whether its bits fit a
    tensor is checked later, by :func:`scale_count` / :func:`resolve_mask`.)"""
    if isinstance(mask, bool) or not isinstance(mask, Integral):
        raise invalid(name, f"{mask!r} of type {type(mask).__name__}", "an int mask >= 0")
    m = int(mask)
    if m < 0:
        raise invalid(name, m, "a mask >= 0")
    if m >= (1 << MAX_NDIMS) and m not in SEMANTIC_MASKS:
        raise invalid(name, m, f"plain bits 0..{MAX_NDIMS - 1}, or one of the semantic masks "
                      f"{', '.join(f'{v} = {k}' for k, v in SEMANTIC_MASKS.items())} alone")
    return m


def _check_dims(dims, name="dims"):
    if isinstance(dims, (str, bytes)):
        raise invalid(name, repr(dims), "a sequence of positive ints")
    try:
        dd = tuple(dims)
    except TypeError:
        raise invalid(name, repr(dims), "a sequence of positive ints") from None
    if not 1 <= len(dd) <= MAX_NDIMS:
        raise invalid(name, repr(dims), f"1 to {MAX_NDIMS} dimensions")
    for d in dd:
        if isinstance(d, bool) or not isinstance(d, Integral) or d < 1:
            raise invalid(name, repr(dims), "a sequence of positive ints")
    return tuple(int(d) for d in dd)


def mask_dims(mask, ndims, name="mask"):
    """The dimensions selected by a plain mask, in increasing order (a list of ints).

    Raises InvalidArguments for a negative mask, a semantic mask, or a bit >= ``ndims``.
    """
    m = check_mask(mask, name)
    if m in SEMANTIC_MASKS:
        raise invalid(name, f"{_mask_str(m)} for a {ndims}-D tensor",
                      "a plain mask (semantic masks are resolved by the primitive first)")
    if m >> ndims:
        raise invalid(name, f"{m} for a {ndims}-D tensor",
                      f"bits below {ndims} only (mask < {1 << ndims})")
    return [i for i in range(ndims) if m >> i & 1]


def scale_count(dims, mask, name="mask"):
    """Number of scale / zero-point values a plain mask asks for on a tensor of ``dims``.

    ``prod(dims[i] for each set bit i)``; 1 for mask 0.  At execution, the array given for
    those scales or zero points must have exactly this many elements.

    Parameters
    ----------
    dims : sequence of int
        The tensor's logical dims.
    mask : int
        A plain mask: bit *i* set = one value per index along dimension *i*.
    name : str, optional
        The argument's name in error messages.

    Returns
    -------
    int
        The number of values.

    Raises
    ------
    InvalidArguments
        For a bit at or beyond ``len(dims)``, a negative mask, a semantic mask
        (``DNNL_MASK_PER_CHANNEL_*``: use :func:`resolve_mask` first) or malformed dims.

    See Also
    --------
    resolve_mask

    Examples
    --------
    >>> import dnnq
    >>> dnnq.scale_count((64, 3, 7, 7), 0)           # one common value
    1
    >>> dnnq.scale_count((64, 3, 7, 7), 1 << 0)      # per output channel
    64
    >>> dnnq.scale_count((2, 32, 3, 7, 7), 0b11)     # grouped weights: per G and OC/G
    64
    """
    dd = _check_dims(dims)
    try:
        sel = mask_dims(mask, len(dd), name)
    except InvalidArguments as e:
        raise InvalidArguments(f"{e} (dims {dd})") from None
    count = 1
    for i in sel:
        count *= dd[i]
    return count


def resolve_mask(mask, dims, kind, *, groups=False, name="mask"):
    """Turn a (possibly semantic) mask into a plain mask for a tensor of ``dims``.

    Primitives call it on the masks of :class:`PrimitiveAttr`; it is public so that a
    caller can count the values a semantic mask asks for.

    Parameters
    ----------
    mask : int
        A plain mask, or one of ``DNNL_MASK_PER_CHANNEL_NCHW`` / ``_TNC`` / ``_OIHW``.
    dims : sequence of int
        The tensor's logical dims.
    kind : {"data_nchw", "data_tnc", "weights_oihw", None}
        What the tensor is: a data tensor (channel = dim 1), an RNN data tensor (channel =
        dim 2), weights (output channel = dim 0, or dims 0 and 1 with ``groups``), or a
        tensor without channel semantics.
    groups : bool, optional
        Weights are grouped, ``(G, O/G, I/G, ...)``.
    name : str, optional
        The argument's name in error messages.

    Returns
    -------
    int
        The plain mask (a plain ``mask`` is returned unchanged, its bits checked).

    Raises
    ------
    InvalidArguments
        For a semantic mask given for a tensor of another kind, a tensor with too few dims
        for it, or bits at or beyond ``len(dims)``.

    See Also
    --------
    scale_count

    Examples
    --------
    >>> import dnnq
    >>> dnnq.resolve_mask(dnnq.DNNL_MASK_PER_CHANNEL_NCHW, (1, 64, 56, 56), "data_nchw")
    2
    >>> dnnq.resolve_mask(dnnq.DNNL_MASK_PER_CHANNEL_OIHW, (2, 32, 3, 3, 3), "weights_oihw",
    ...                   groups=True)
    3
    """
    if kind not in MASK_KINDS:
        raise invalid("kind", repr(kind), f"one of {list(MASK_KINDS)}")
    dd = _check_dims(dims)
    nd = len(dd)
    m = check_mask(mask, name)
    if m not in SEMANTIC_MASKS:
        scale_count(dd, m, name)  # validates the bits
        return m
    if MASK_KINDS[kind] != m:
        raise invalid(name, f"{_mask_str(m)} for a tensor of kind {kind!r} (dims {dd})",
                      "a plain mask" + (f", or {SEMANTIC_MASKS[MASK_KINDS[kind]]}"
                                        if MASK_KINDS[kind] else ""))
    if kind == "data_nchw":
        need, plain = 2, 1 << 1
    elif kind == "data_tnc":
        need, plain = 3, 1 << 2
    elif groups:
        need, plain = 2, (1 << 0) | (1 << 1)
    else:
        need, plain = 1, 1 << 0
    if nd < need:
        raise invalid(name, f"{_mask_str(m)} for a {nd}-D tensor (dims {dd})",
                      f"a tensor of at least {need} dimensions")
    return plain


def broadcast_index_strides(dims, mask):
    """For each dimension, the stride (in elements) into the compact array of ``count`` values.

    The compact array is row-major over the selected dimensions, so the value for the element
    at logical index ``(i0, i1, ...)`` is ``values[sum(i_k * strides[k])]``; dimensions whose
    bit is not set have stride 0.  E.g. dims ``(G, O, I, H, W)`` and mask 3 give
    ``(O, 1, 0, 0, 0)``.
    """
    dd = _check_dims(dims)
    sel = mask_dims(mask, len(dd))
    strides = [0] * len(dd)
    acc = 1
    for i in reversed(sel):
        strides[i] = acc
        acc *= dd[i]
    return tuple(strides)


_F32 = np.dtype(np.float32)


def _all_finite_positive(x):
    """Compiled check when the kernels are built (this module must import without them)."""
    global _all_finite_positive
    try:
        from dnnq.primitives._kernels._gemm import all_finite_positive as fast
    except ImportError:  # pure-Python use of dnnq.masks
        def fast(v):
            return bool(v.min() > 0.0 and v.max() < math.inf)
    _all_finite_positive = fast
    return fast(x)
_I32 = np.dtype(np.int32)


def _as_real_array(values, name, what):
    """np.asarray of ``values``, rejecting anything that is not real numbers."""
    if isinstance(values, (str, bytes)):
        raise invalid(name, f"{type(values).__name__} {values!r}", f"a real number or array of {what}")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError, OverflowError) as e:
        raise invalid(name, f"{type(values).__name__} that is not an array ({e})",
                      f"a real number or array of {what}") from None
    if arr.dtype.kind not in "iuf":
        raise invalid(name, f"an array of dtype {arr.dtype}",
                      f"real numbers (integer or floating dtype) for {what}")
    return arr


def _check_size(arr, count, name, what):
    if isinstance(count, bool) or not isinstance(count, Integral) or count < 1:
        raise invalid("count", repr(count), "a positive int")
    if arr.size != count:
        raise invalid(name, f"{arr.size} {what} (shape {arr.shape})",
                      f"exactly {count} (shape ({count},) or any shape of that size)")


def check_scales(values, count, name):
    """Validate runtime scales: return a C-contiguous ``np.float32`` array of shape ``(count,)``.

    ``values`` may be a Python number, a (nested) list or a numpy array of any integer or
    floating dtype and any shape, with exactly ``count`` elements.  Every value must be finite
    and > 0, also after conversion to f32 (1e39 becomes inf, 1e-50 becomes 0: both rejected).
    Bools, complex numbers, strings and objects are rejected.  Errors name ``name``.
    The result may share memory with ``values`` when it is already a contiguous f32 array.
    """
    if type(values) is np.ndarray and values.dtype == _F32 and values.size == count:
        # fast path of execute(): an f32 array of the right size; NaN fails both comparisons
        flat = values.reshape(-1)
        if count == 1:
            if 0.0 < flat.item(0) < math.inf:
                return contiguous_aligned(flat)
        elif flat.flags.c_contiguous and flat.flags.aligned and _all_finite_positive(flat):
            return flat
    arr = _as_real_array(values, name, "scales")
    _check_size(arr, count, name, "scales")
    with np.errstate(all="ignore"):
        f32 = arr.astype(np.float32, copy=False)
    bad = ~(np.isfinite(f32) & (f32 > 0))
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr)
    if bad.any():
        flat_arr = arr.reshape(-1)
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        v = flat_arr[i].item()
        v32 = f32.reshape(-1)[i].item()
        why = "" if v32 == v or not math.isfinite(v) else f" (it is {v32!r} in f32)"
        raise invalid(name, f"scale {v!r} at index {i}{why}",
                      "finite scales > 0 that stay finite and > 0 in f32")
    return contiguous_aligned(f32.reshape(count))


def check_zero_points(values, count, name):
    """Validate runtime zero points: return a C-contiguous ``np.int32`` array of shape
    ``(count,)``.

    ``values`` may be a Python int, a list or an array of any integer dtype, or a floating
    array whose values are all integral; every value must fit s32 ([-2**31, 2**31 - 1]).
    Non-integral or non-finite floats, bools, complex numbers and strings are rejected, and so
    is a wrong number of values.  Errors name ``name``.
    """
    if type(values) is np.ndarray and values.dtype == _I32 and values.size == count:
        return contiguous_aligned(values.reshape(-1))  # fast path: already s32
    if isinstance(values, Integral) and not isinstance(values, bool) \
            and not _S32_MIN <= int(values) <= _S32_MAX:
        raise invalid(name, f"zero point {int(values)}", f"values in s32 [{_S32_MIN}, {_S32_MAX}]")
    arr = _as_real_array(values, name, "zero points")
    _check_size(arr, count, name, "zero points")
    flat = arr.reshape(-1)
    if arr.dtype.kind == "f":
        with np.errstate(all="ignore"):
            nonint = ~np.isfinite(flat) | (np.floor(flat) != flat)
        if nonint.any():
            i = int(np.flatnonzero(nonint)[0])
            raise invalid(name, f"zero point {flat[i].item()!r} at index {i}",
                          "integral values")
        lo, hi = float(flat.min()), float(flat.max())
    else:
        lo, hi = int(flat.min()), int(flat.max())
    if lo < _S32_MIN or hi > _S32_MAX:
        v = lo if lo < _S32_MIN else hi
        raise invalid(name, f"zero point {v!r}", f"values in s32 [{_S32_MIN}, {_S32_MAX}]")
    return contiguous_aligned(flat.astype(np.int32, copy=False))
