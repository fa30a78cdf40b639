"""Data types and memory descriptors (SPEC sections 1 and 6).

Data types
----------
dnnq computes with four data types, named as in oneDNN: ``"u8"``, ``"s8"``, ``"s32"``, ``"f32"``
(the constants :data:`u8`, :data:`s8`, :data:`s32`, :data:`f32` are those strings).  Wherever a
data type is expected, :func:`as_dt` also accepts the numpy dtypes ``uint8``, ``int8``,
``int32``, ``float32`` (as ``np.dtype`` objects or scalar types such as ``np.int8``).  Anything
else -- including numpy's own string codes such as ``"uint8"`` or ``"i1"`` -- raises
:class:`~dnnq.errors.InvalidArguments`.

Memory descriptors
------------------
``MemoryDesc(dims, dt, tag=None)`` describes one tensor: its **logical** dims in oneDNN's order
(``N, C, [D,] H, W`` for data, ``[G,] O, I, [D,] H, W`` for weights, ...), its data type and its
physical layout:

* plain row-major: ``tag=None``, ``"any"`` (accepted for oneDNN compatibility; dnnq picks its
  internal layouts itself, so it means plain here) or a plain name -- ``a ab abc abcd abcde
  abcdef x nc ncw nchw ncdhw oi oiw oihw oidhw goiw goihw goidhw tnc ldnc ldigo ldgo``;
* channels-last: ``nwc nhwc ndhwc`` (data; also spelled ``acb acdb acdeb``) and ``wio hwio
  dhwio`` (weights; also ``cba cdba cdeba``).  The array then has the *logical* shape with
  channels-last strides, e.g. ``x_nhwc.transpose(0, 3, 1, 2)``, as numpy / PyTorch
  channels_last do.

A named tag must have as many letters as the descriptor has dims.  Descriptors are immutable,
hashable and compare equal when dims, data type and physical layout are the same (so
``tag=None`` equals ``tag="nchw"`` for 4-D dims).
"""

from numbers import Integral

import functools
import math

import numpy as np

from .primitives._kernels._gemm_exec import aligned_empty
from .errors import invalid

__all__ = [
    "u8", "s8", "s32", "f32", "DATA_TYPES", "as_dt", "numpy_dtype", "dt_range", "dt_size",
    "MemoryDesc", "PLAIN_TAGS", "CHANNELS_LAST_TAGS", "MAX_NDIMS", "MAX_BYTES",
]

u8 = "u8"
s8 = "s8"
s32 = "s32"
f32 = "f32"

_NP = {u8: np.dtype(np.uint8), s8: np.dtype(np.int8), s32: np.dtype(np.int32),
       f32: np.dtype(np.float32)}
DATA_TYPES = tuple(_NP)
_BY_NP = {v: k for k, v in _NP.items()}
MAX_NDIMS = 12
#: the largest tensor a descriptor may describe, in bytes (numpy's and the kernels' int64 /
#: ssize_t index arithmetic)
MAX_BYTES = 2 ** 63 - 1

#: plain tag -> number of dims ("any" fits any rank)
PLAIN_TAGS = {
    "a": 1, "ab": 2, "abc": 3, "abcd": 4, "abcde": 5, "abcdef": 6, "x": 1,
    "nc": 2, "ncw": 3, "nchw": 4, "ncdhw": 5,
    "oi": 2, "oiw": 3, "oihw": 4, "oidhw": 5, "goiw": 4, "goihw": 5, "goidhw": 6,
    "tnc": 3, "ldnc": 4, "ldigo": 5, "ldgo": 4,
}
#: channels-last tag -> physical order (the logical dims in memory order, outermost first)
CHANNELS_LAST_TAGS = {
    "nwc": (0, 2, 1), "nhwc": (0, 2, 3, 1), "ndhwc": (0, 2, 3, 4, 1),
    "acb": (0, 2, 1), "acdb": (0, 2, 3, 1), "acdeb": (0, 2, 3, 4, 1),
    "wio": (2, 1, 0), "hwio": (2, 3, 1, 0), "dhwio": (2, 3, 4, 1, 0),
    "cba": (2, 1, 0), "cdba": (2, 3, 1, 0), "cdeba": (2, 3, 4, 1, 0),
}
_ACCEPTED_DT = ('"u8", "s8", "s32", "f32", dnnq.u8 ... or numpy uint8 / int8 / int32 / '
                'float32')


def as_dt(x, name="data type"):
    """The canonical data-type name of ``x``: ``"u8"``, ``"s8"``, ``"s32"`` or ``"f32"``.

    Parameters
    ----------
    x : str or numpy dtype or numpy scalar type
        One of the four names, or a numpy dtype / scalar type of uint8, int8, int32 or
        float32 (native byte order).  numpy's own string codes (``"uint8"``, ``"i1"``) are
        not accepted.
    name : str, optional
        The argument's name in error messages.

    Returns
    -------
    str
        ``"u8"``, ``"s8"``, ``"s32"`` or ``"f32"``.

    Raises
    ------
    InvalidArguments
        For anything else (naming ``name``).

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.as_dt(np.int8), dnnq.as_dt(np.dtype("float32")), dnnq.as_dt("u8")
    ('s8', 'f32', 'u8')
    """
    if isinstance(x, str):
        if x in _NP:
            return x
        raise invalid(name, repr(x), _ACCEPTED_DT)
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
        dt = _BY_NP.get(np.dtype(x))
        if dt is not None:
            return dt
        raise invalid(name, f"numpy dtype {np.dtype(x).str!r} ({np.dtype(x)})", _ACCEPTED_DT)
    raise invalid(name, f"{x!r} of type {type(x).__name__}", _ACCEPTED_DT)


def numpy_dtype(dt):
    """The numpy dtype of a data type (e.g. ``np.dtype('uint8')`` for ``"u8"``)."""
    return _NP[as_dt(dt)]


def dt_size(dt):
    """Size in bytes of one element."""
    return numpy_dtype(dt).itemsize


def dt_range(dt):
    """``(min, max)`` of an integer data type as Python ints, e.g. ``(-128, 127)`` for s8.

    f32 has no saturation range: it raises InvalidArguments.
    """
    d = as_dt(dt)
    if d == f32:
        raise invalid("data type", "f32", "an integer data type (u8, s8, s32)")
    info = np.iinfo(_NP[d])
    return int(info.min), int(info.max)


@functools.lru_cache(maxsize=64)
def _inverse_order(order):
    """The axis permutation that undoes ``order`` (logical_view's transpose)."""
    inverse = [0] * len(order)
    for k, i in enumerate(order):
        inverse[i] = k
    return tuple(inverse)


def _line_aligned(shape, dtype, zero):
    """A C-contiguous array whose data starts on a 64-byte cache line (aligned_empty: numpy
    puts large arrays 16 bytes past one; every 64-byte vector access then spans two lines, and
    two threads writing neighbouring column panels of a row share a line, docs/matmul.md)."""
    dtype = np.dtype(dtype)
    out = aligned_empty(math.prod(shape), dtype).reshape(shape)
    if zero:
        out.fill(0)
    return out


def contiguous_aligned(arr):
    """``arr`` as a C-contiguous array whose data is aligned for its dtype (a copy when it is
    not: numpy arrays may be unaligned, e.g. views of a byte buffer at an odd offset, and the
    C kernels read f32 / s32 elements through typed pointers)."""
    a = np.ascontiguousarray(arr)
    return a if a.flags.aligned else a.copy()


def _check_dims(dims):
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise invalid("dims", repr(dims), "a sequence of ints >= 1")
    dd = tuple(dims)
    if not 1 <= len(dd) <= MAX_NDIMS:
        raise invalid("dims", repr(dims), f"1 to {MAX_NDIMS} dimensions")
    for d in dd:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, Integral) or int(d) < 1:
            raise invalid("dims", f"{dd!r} (element {d!r})", "a sequence of ints >= 1")
    return tuple(int(d) for d in dd)


class MemoryDesc:
    """A tensor's logical dims, data type and layout.  Immutable, hashable.

    Descriptors tell a primitive, at creation, what the arrays given to ``execute`` will be.
    Two descriptors are equal when their dims, data type and physical layout are equal (so
    ``tag=None`` equals ``tag="nchw"`` for 4-D dims).

    Parameters
    ----------
    dims : sequence of int
        The **logical** dims in oneDNN's order, whatever the layout: ``N, C, [D,] [H,] W``
        for data, ``[G,] O, I, [D,] [H,] W`` for weights, ``M, K`` / ``K, N`` for matmul,
        ``T, N, C`` and ``L, D, I, G, O`` for RNN tensors.  Each > 0, at most 12 dims.
    dt : str or numpy dtype
        ``"u8"``, ``"s8"``, ``"s32"``, ``"f32"`` or the numpy dtype (see :func:`as_dt`).
    tag : str, optional
        The physical layout.  ``None`` (or ``"any"``, or a plain name such as ``"nchw"``,
        ``"oihw"``, ``"tnc"``, ``"ldigo"``) is plain row-major.  A channels-last tag
        (``"nwc"``, ``"nhwc"``, ``"ndhwc"`` for data, ``"wio"``, ``"hwio"``, ``"dhwio"`` for
        weights) means the array has the logical shape with channels-last strides, e.g.
        ``x_nhwc.transpose(0, 3, 1, 2)``, as numpy / PyTorch channels_last do.

    Attributes
    ----------
    dims : tuple of int
        The logical dims.
    dt : str
        The data type name.
    tag : str or None
        The tag as given.
    ndims, nelems : int
        Number of dims and of elements.
    numpy_dtype : numpy.dtype
        The dtype the execution array must have.
    physical_order : tuple of int
        The logical dims in memory order, outermost first: ``(0, 2, 3, 1)`` for nhwc.
    physical_shape : tuple of int
        The dims in memory order.
    is_channels_last : bool
        Whether the tag is a channels-last one.
    strides : tuple of int
        Element strides of the logical dims in this (dense) layout.

    Raises
    ------
    InvalidArguments
        For dims that are not positive ints (or describe more than 2**63 - 1 bytes), an
        unknown data type, or a tag that is unknown or has another number of dims.

    See Also
    --------
    as_dt

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> src = dnnq.MemoryDesc((1, 64, 56, 56), "u8", tag="nhwc")
    >>> src.physical_shape, src.strides
    ((1, 56, 56, 64), (200704, 1, 3584, 64))
    >>> x_nhwc = np.zeros((1, 56, 56, 64), np.uint8)       # memory in N, H, W, C order
    >>> x = x_nhwc.transpose(0, 3, 1, 2)                   # the logical N, C, H, W view
    >>> x.shape == src.dims and x.strides == tuple(s * 1 for s in src.strides)
    True
    >>> dnnq.MemoryDesc((2, 3), np.float32) == dnnq.MemoryDesc((2, 3), "f32", tag="ab")
    True
    """

    __slots__ = ("_dims", "_dt", "_tag", "_order", "_phys", "_cl")

    def __init__(self, dims, dt, tag=None):
        dd = _check_dims(dims)
        d = as_dt(dt, "dt")
        nd = len(dd)
        if tag is None or tag == "any":
            order = tuple(range(nd))
        elif not isinstance(tag, str):
            raise invalid("tag", f"{tag!r} of type {type(tag).__name__}",
                          "None, 'any' or a tag name such as 'nchw' / 'nhwc'")
        elif tag in PLAIN_TAGS:
            if PLAIN_TAGS[tag] != nd:
                raise invalid("tag", f"{tag!r} ({PLAIN_TAGS[tag]}-D) for {nd}-D dims {dd}",
                              f"a tag of {nd} dimensions")
            order = tuple(range(nd))
        elif tag in CHANNELS_LAST_TAGS:
            order = CHANNELS_LAST_TAGS[tag]
            if len(order) != nd:
                raise invalid("tag", f"{tag!r} ({len(order)}-D) for {nd}-D dims {dd}",
                              f"a tag of {nd} dimensions")
        else:
            raise invalid("tag", repr(tag), "None, 'any', a plain tag "
                          f"({', '.join(PLAIN_TAGS)}) or a channels-last tag "
                          f"({', '.join(CHANNELS_LAST_TAGS)})")
        nbytes = _NP[d].itemsize
        for n in dd:
            nbytes *= n
        if nbytes > MAX_BYTES:
            raise invalid("dims", f"{dd!r} ({nbytes} bytes of {d})",
                          f"a tensor of at most 2^63 - 1 bytes ({MAX_BYTES}), the most an "
                          "array can address")
        object.__setattr__(self, "_dims", dd)
        object.__setattr__(self, "_dt", d)
        object.__setattr__(self, "_tag", tag)
        object.__setattr__(self, "_order", order)
        # asked on every execution: computed once
        object.__setattr__(self, "_phys", tuple(dd[i] for i in order))
        object.__setattr__(self, "_cl", order != tuple(range(len(dd))))

    @classmethod
    def from_array(cls, arr, tag=None):
        """The descriptor of an array's shape and dtype.

        Parameters
        ----------
        arr : numpy.ndarray
            Its shape gives the dims, its dtype the data type.
        tag : str, optional
            The layout (plain when None).

        Returns
        -------
        MemoryDesc

        Raises
        ------
        InvalidArguments
            For a non-array or an unsupported dtype.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> dnnq.MemoryDesc.from_array(np.zeros((4, 8), np.int8))
        MemoryDesc((4, 8), 's8')
        """
        if not isinstance(arr, np.ndarray):
            raise invalid("arr", f"{type(arr).__name__}", "a numpy.ndarray")
        return cls(arr.shape, arr.dtype, tag)

    def __setattr__(self, key, value):
        raise AttributeError("MemoryDesc is immutable")

    def __delattr__(self, key):
        raise AttributeError("MemoryDesc is immutable")

    # --- value semantics ---------------------------------------------------------------------
    def _key(self):
        return (self._dims, self._dt, self._order)

    def __eq__(self, other):
        if not isinstance(other, MemoryDesc):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        t = "" if self._tag is None else f", tag={self._tag!r}"
        return f"MemoryDesc({self._dims!r}, {self._dt!r}{t})"

    def __reduce__(self):
        return (MemoryDesc, (self._dims, self._dt, self._tag))

    # --- properties ----------------------------------------------------------------------------
    dims = property(lambda self: self._dims, doc="Logical dims (tuple of ints).")
    dt = property(lambda self: self._dt, doc="Data type ('u8', 's8', 's32' or 'f32').")
    tag = property(lambda self: self._tag, doc="The tag as given (None = plain).")
    ndims = property(lambda self: len(self._dims), doc="Number of dims.")
    physical_order = property(lambda self: self._order,
                              doc="Logical dims in memory order, outermost first.")

    @property
    def nelems(self):
        """Number of elements (Python int)."""
        n = 1
        for d in self._dims:
            n *= d
        return n

    @property
    def numpy_dtype(self):
        """The numpy dtype of the execution arrays (``uint8`` for ``"u8"``, ...)."""
        return _NP[self._dt]

    @property
    def is_channels_last(self):
        """True for the channels-last tags (nwc, nhwc, ndhwc, wio, hwio, dhwio)."""
        return self._cl

    @property
    def physical_shape(self):
        """The shape of the memory in physical order: ``dims[physical_order[k]]``."""
        return self._phys

    @property
    def strides(self):
        """Element strides of the logical dims in this layout (dense)."""
        out = [0] * len(self._dims)
        acc = 1
        for i in reversed(self._order):
            out[i] = acc
            acc *= self._dims[i]
        return tuple(out)

    def dims_str(self):
        """Verbose-line form ``dt:tag:dims``, e.g. ``"u8:nhwc:1x64x56x56"`` (plain descriptors
        without a named tag show oneDNN's letter form, e.g. ``"f32:abcd:1x3x4x4"``)."""
        tag = self._tag if self._tag not in (None, "any") else "abcdefghijkl"[:len(self._dims)]
        return f"{self._dt}:{tag}:{'x'.join(str(d) for d in self._dims)}"

    # --- execution arrays ----------------------------------------------------------------------
    def _check(self, arr, name):
        if not isinstance(arr, np.ndarray):
            raise invalid(name, f"{type(arr).__name__}",
                          f"a numpy.ndarray of dtype {self.numpy_dtype} and shape {self._dims}")
        if arr.dtype != self.numpy_dtype:
            raise invalid(name, f"dtype {arr.dtype}",
                          f"dtype {self.numpy_dtype} ({self._dt}); dnnq does not cast silently")
        if arr.shape != self._dims:
            raise invalid(name, f"shape {arr.shape}", f"shape {self._dims} (the logical dims)")

    def check_array(self, arr, name):
        """Validate an execution array and return it in this descriptor's physical layout.

        ``arr`` must be a ``numpy.ndarray`` (lists and other objects are rejected) whose dtype
        is exactly this descriptor's (no silent casting) and whose shape is ``dims`` (the
        logical shape, whatever the tag).  Any strides are accepted.

        Returns a C-contiguous array *in physical order*:

        * plain tags: ``np.ascontiguousarray(arr)`` (aligned: a copy if it is not) -- shape
          ``dims``;
        * channels-last tags: ``np.ascontiguousarray(arr.transpose(physical_order))`` -- shape
          ``physical_shape`` (e.g. ``(N, H, W, C)`` for nhwc).  No copy is made when ``arr``
          is already laid out channels-last (e.g. ``x_nhwc.transpose(0, 3, 1, 2)``).

        Errors (InvalidArguments) name ``name``, what was given and what was expected.
        """
        self._check(arr, name)
        if self.is_channels_last:
            arr = arr.transpose(self._order)
        return contiguous_aligned(arr)

    def check_output(self, arr, name):
        """Validate a caller-provided destination array; return the buffer to write into.

        As :meth:`check_array`, and ``arr`` must be writeable.  The returned physical-order
        array is a view of ``arr`` when its memory already has this layout; otherwise it is a
        contiguous copy (holding ``arr``'s current contents, as a sum post-op needs them), and
        the caller must call :meth:`copy_back` after writing into it.
        """
        self._check(arr, name)
        if not arr.flags.writeable:
            raise invalid(name, "a read-only array", "a writeable array (it is written in place)")
        return self.check_array(arr, name)

    def copy_back(self, arr, phys):
        """Copy ``phys`` (from :meth:`check_output`) into ``arr`` unless they share memory."""
        if not np.may_share_memory(arr, phys):
            np.copyto(arr, self.logical_view(phys))
        return arr

    def logical_view(self, phys):
        """View a physical-order array (shape ``physical_shape``) with the logical dims."""
        if not isinstance(phys, np.ndarray):
            raise invalid("physical array", f"{type(phys).__name__}",
                          f"a numpy array of shape {self.physical_shape}")
        if phys.shape != self.physical_shape:
            raise invalid("physical array", f"shape {phys.shape}",
                          f"shape {self.physical_shape}")
        if not self.is_channels_last:
            return phys
        return phys.transpose(_inverse_order(self._order))

    def empty(self):
        """A new uninitialised array of this descriptor: logical shape, this layout.

        Returns
        -------
        numpy.ndarray
            Its data starts on a 64-byte boundary (a cache line), which the kernels store
            to fastest.
        """
        return self.logical_view(_line_aligned(self.physical_shape, self.numpy_dtype, False))

    def zeros(self):
        """A new zero-filled array of this descriptor: logical shape, this layout.

        Returns
        -------
        numpy.ndarray
            Its data starts on a 64-byte boundary.

        Examples
        --------
        >>> import dnnq
        >>> y = dnnq.MemoryDesc((1, 8, 2, 2), "u8", tag="nhwc").zeros()
        >>> y.shape, y.strides
        ((1, 8, 2, 2), (32, 1, 16, 8))
        """
        return self.logical_view(_line_aligned(self.physical_shape, self.numpy_dtype, True))
