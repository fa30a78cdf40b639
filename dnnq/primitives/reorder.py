"""Reorder: data-type conversion, (de/re)quantization and layout change in one pass, plus the
:func:`quantize` / :func:`dequantize` helpers built on it.

``Reorder(src_desc, dst_desc, attr=None)``; ``execute({DNNL_ARG_SRC: x, [DNNL_ARG_DST: out],
[DNNL_ARG_SCALE | DNNL_ARG_SRC: ...], ...})`` (oneDNN's DNNL_ARG_FROM / DNNL_ARG_TO are
DNNL_ARG_SRC / DNNL_ARG_DST).

Support table (``ext`` = beyond oneDNN 3.2):

=====================  ==============================================================
src / dst data types   any of f32, s32, s8, u8, in any combination
dims / layouts         equal logical dims; plain or channels-last tag on either side
src scales             any mask (plain bits, or a DNNL_MASK_PER_CHANNEL_* semantic mask)
dst scales             any mask
src zero points        any mask (ext: oneDNN executes only mask 0, and rejects a zero
                       point on an f32 side)
dst zero points        any mask (ext, as above)
post-ops               none
=====================  ==============================================================

Numerics (verified bit for bit against oneDNN 3.2, see ``docs/toolkit.md``)::

    f = f32(src)                      (s32 sources are converted first, then)
    f = f - f32(src_zp)               f32 subtraction
    f = f * src_scale                 one rounding
    f = f * f32(1 / dst_scale)        reciprocal precomputed in f32, then multiplied
    f = f + f32(dst_zp)
    dst = saturate(round_half_even(f))   (f32 dst: f)

except for an f32 -> f32 reorder with the same layout on both sides and *common* (mask 0)
source and destination scales, where oneDNN's ``simple:any`` kernel multiplies by the combined
factor ``f32(src_scale * f32(1 / dst_scale))`` once.  Without scales or zero points and with
equal data types the elements are copied exactly (an s32 copy does not go through f32).
Saturation: NaN becomes +127 (s8), 0 (u8) or 2147483520 (s32); +-inf saturate.
"""
import numpy as np

from dnnq import args as A
from dnnq import masks as _masks
from dnnq.primitives import _dispatch, _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.memory import MemoryDesc, as_dt
from dnnq.primitives import _pointwise as pw
from dnnq.primitives._common import INT8_RANGE
from dnnq.primitives._kernels import _codes, _conv, _toolkit
from dnnq.primitives._scratch import Scratch

_DTS = ("f32", "s32", "s8", "u8")


#: destination rows shorter than this are iterated in the source's order when it has longer
#: ones (a (1, 3, 48, 192) f32 image quantized to u8 channels-last: 0.5 ms in rows of 3)
_SHORT_INNER = 16


class Reorder(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Convert, (de/re)quantize and relayout ``src`` into ``dst`` in one pass.

    f32 -> s8 / u8 is quantization, s8 / u8 -> f32 dequantization, 8-bit -> 8-bit
    requantization; plain <-> channels-last layouts change on the way.  Bit-identical to
    oneDNN 3.2's reorders.  :func:`quantize` and :func:`dequantize` are one-call forms.

    Parameters
    ----------
    src_desc, dst_desc : MemoryDesc
        Any of f32, s32, s8, u8 each; equal logical dims; plain or channels-last.
    attr : PrimitiveAttr, optional
        Scales and zero points of ``DNNL_ARG_SRC`` and ``DNNL_ARG_DST``, any mask (oneDNN
        executes only common zero points).  No post-ops.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:reorder"``.

    Raises
    ------
    InvalidArguments
        Descriptors of different dims, malformed masks.
    Unimplemented
        Post-ops.

    See Also
    --------
    quantize, dequantize

    Notes
    -----
    Execute keys: ``DNNL_ARG_SRC``, ``DNNL_ARG_DST`` (oneDNN's ``DNNL_ARG_FROM`` /
    ``DNNL_ARG_TO``).  Support table and numerics (see the module docstring):

    Examples
    --------
    Requantize s8 (scale 0.5) to u8 (scale 0.25, zero point 128):

    >>> import numpy as np, dnnq
    >>> from dnnq import DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_SCALE, DNNL_ARG_ATTR_ZERO_POINTS
    >>> attr = dnnq.PrimitiveAttr()
    >>> _ = attr.set_scales_mask(DNNL_ARG_SRC, 0).set_scales_mask(DNNL_ARG_DST, 0)
    >>> _ = attr.set_zero_points_mask(DNNL_ARG_DST, 0)
    >>> r = dnnq.Reorder(dnnq.MemoryDesc((4,), "s8"), dnnq.MemoryDesc((4,), "u8"), attr=attr)
    >>> r.execute({DNNL_ARG_SRC: np.array([-100, -1, 0, 60], np.int8),
    ...            DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([0.5], np.float32),
    ...            DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([0.25], np.float32),
    ...            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.array([128], np.int32)})
    array([  0, 126, 128, 248], dtype=uint8)
    """

    _kind = "reorder"

    def __init__(self, src_desc, dst_desc, attr=None):
        p = "Reorder"
        pw.check_md(p, src_desc, "src_desc", _DTS)
        pw.check_md(p, dst_desc, "dst_desc", _DTS)
        if src_desc.dims != dst_desc.dims:
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} differ from src_desc dims "
                                   f"{src_desc.dims}; expected the same logical dims")
        dims = src_desc.dims
        support = {A.DNNL_ARG_SRC: (dims, None), A.DNNL_ARG_DST: (dims, None)}
        qa = pw.QuantAttr(p, attr, support, support)
        self.src_desc, self.dst_desc, self.attr, self._qa = src_desc, dst_desc, qa.attr, qa
        self._isa = _impls.choose("reorder", _impls.TOOLKIT).isa
        # iterated in the destination's physical order, but for a destination whose
        # innermost dim is short (a 3-channel image going channels-last) in the source's when
        # that gives longer rows: the engine's cost is per row
        order = dst_desc.physical_order
        inner_d, inner_s = dims[order[-1]], dims[src_desc.physical_order[-1]]
        if inner_d < _SHORT_INNER and inner_s > inner_d:
            order = src_desc.physical_order
        # 2 - 4 planes going channels-last as bytes (an image quantized for the first
        # convolution): converted in plain order, then interleaved (_PlanesInterleaved)
        planes = (dst_desc.dt in ("u8", "s8") and dst_desc.is_channels_last and
                  not src_desc.is_channels_last and 2 <= inner_d <= 4)
        out_strides = MemoryDesc(dims, dst_desc.dt).strides if planes else dst_desc.strides
        prog = pw.Program(dims, order)
        src_k = prog.operand("src", src_desc.dt, src_desc.strides)
        dst_k = prog.operand("dst", dst_desc.dt, out_strides, writable=True)
        sm, zm = qa.scale_mask, qa.zp_mask
        # oneDNN's simple:any (f32 -> f32, same layout, both scales common) folds the scales
        self._combined = (src_desc.dt == dst_desc.dt == "f32"
                          and src_desc.physical_order == dst_desc.physical_order
                          and sm.get(A.DNNL_ARG_SRC) == 0 and sm.get(A.DNNL_ARG_DST) == 0)
        self._value_steps(prog, src_k, dst_k, dims, qa)
        self._plan = prog.build(self._isa)
        if planes:
            self._plan = _PlanesInterleaved(self._plan, dims, dst_desc.numpy_dtype,
                                            _codes.ISA[self._isa])
        self._known = frozenset({A.DNNL_ARG_SRC, A.DNNL_ARG_DST} | qa.known_args())
        self.impl_info = f"{pw.kernel_name(self._isa)}:reorder"
        self._created()

    def _value_steps(self, prog, src_k, dst_k, dims, qa):
        """The program's stages from the source operand to the destination's: a copy, or the
        affine map of the scales and zero points."""
        sm, zm = qa.scale_mask, qa.zp_mask
        if not sm and not zm and self.src_desc.dt == self.dst_desc.dt:
            prog.copy(src_k, dst_k)
        else:
            sub = mul1 = mul2 = add = None
            if A.DNNL_ARG_SRC in zm:
                sub = prog.operand("src_zp", "f32", qa.strides(A.DNNL_ARG_SRC, "zp", dims))
            if self._combined:
                mul1 = prog.operand("scale", "f32", (0,) * len(dims))
            else:
                if A.DNNL_ARG_SRC in sm:
                    mul1 = prog.operand("src_scale", "f32",
                                        qa.strides(A.DNNL_ARG_SRC, "scale", dims))
                if A.DNNL_ARG_DST in sm:
                    mul2 = prog.operand("inv_dst_scale", "f32",
                                        qa.strides(A.DNNL_ARG_DST, "scale", dims))
            if A.DNNL_ARG_DST in zm:
                add = prog.operand("dst_zp", "f32", qa.strides(A.DNNL_ARG_DST, "zp", dims))
            prog.affine(0, src_k, sub, mul1, mul2, add, store_k=dst_k)

    def _descs(self):
        return (("src", self.src_desc), ("dst", self.dst_desc))

    def _problem(self):
        return "x".join(map(str, self.src_desc.dims))

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL; several Python threads may execute one primitive at once.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC``, the scales / zero points the attribute
            declared, the post-op inputs, and optionally ``DNNL_ARG_DST``.

        Returns
        -------
        numpy.ndarray
            The destination: the ``DNNL_ARG_DST`` array, written in place, when given; else
            a new array.

        Raises
        ------
        InvalidArguments
            A missing, unknown or mistyped key, an array of the wrong dtype or shape,
            scales that are not finite and > 0, a destination that overlaps an input.
        MemoryError
            When the scratch memory cannot be allocated.
        """
        return self._timed(self._execute, args)

    _dynamic = {A.DNNL_ARG_SRC: ("src", "src_desc")}

    def _execute(self, args):
        return pw.run_into_dst("Reorder", self._plan, self.dst_desc, args, self._arrays(args))

    def _arrays(self, args):
        """The plan's arrays but dst, every argument validated."""
        p, qa = "Reorder", self._qa
        pw.check_known_args(p, args, self._known)
        src = self.src_desc.check_array(pw.require(p, args, A.DNNL_ARG_SRC, "src"), "src")
        arrays = {"src": src}
        ss = qa.scales(args, A.DNNL_ARG_SRC)
        ds = qa.scales(args, A.DNNL_ARG_DST)
        if self._combined:
            arrays["scale"] = np.multiply(ss, pw.reciprocal(ds), dtype=np.float32)
        else:
            if ss is not None:
                arrays["src_scale"] = ss
            if ds is not None:
                arrays["inv_dst_scale"] = pw.reciprocal(ds)
        z = qa.zero_points_f32(args, A.DNNL_ARG_SRC)
        if z is not None:
            arrays["src_zp"] = z
        z = qa.zero_points_f32(args, A.DNNL_ARG_DST)
        if z is not None:
            arrays["dst_zp"] = z
        return arrays


class QuantizeLinear(Reorder):
    """f32 to u8 / s8 by ONNX's QuantizeLinear formula, ``saturate(round(x / scale) +
    zero_point)``: a division, and the rounding before the zero point is added -- what the
    ONNX operator specifies and ONNX Runtime computes (its kernels clamp ``x / scale`` to the
    type's range less the zero point, round half to even, add the zero point; a NaN gives
    the type's lowest value).  Reorder follows oneDNN instead, ``x * (1 / scale) +
    zero_point`` rounded once: a value within an ulp of a half step -- a normalised image's
    pixels, ``k / 127.5 - 1`` over a scale of ``2 / 255`` -- can round the other way (5 % of a
    rendered text line's bytes).  dnnq.onnx quantizes a model's inputs with it.

    Parameters
    ----------
    src_desc, dst_desc : MemoryDesc
        f32 source; u8 or s8 destination of the same dims (any layouts).
    scale : float
        The per-tensor scale, finite and > 0.
    zero_point : int
        The per-tensor zero point, in the destination type's range.

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> from dnnq.primitives.reorder import QuantizeLinear
    >>> q = QuantizeLinear(dnnq.MemoryDesc((4,), "f32"), dnnq.MemoryDesc((4,), "u8"),
    ...                    0.5, 128)
    >>> q.execute({dnnq.DNNL_ARG_SRC: np.float32([-0.25, 0.25, 0.75, 1e9])})
    array([128, 128, 130, 255], dtype=uint8)
    """

    def __init__(self, src_desc, dst_desc, scale, zero_point):
        p = "QuantizeLinear"
        ddt = getattr(dst_desc, "dt", None)
        if getattr(src_desc, "dt", None) != "f32" or ddt not in INT8_RANGE:
            raise InvalidArguments(f"{p}: src_desc / dst_desc types "
                                   f"{getattr(src_desc, 'dt', src_desc)} / "
                                   f"{getattr(dst_desc, 'dt', dst_desc)}; expected f32 and u8 "
                                   "or s8")
        lo, hi = INT8_RANGE[dst_desc.dt]
        scale = float(scale)
        with np.errstate(over="ignore"):
            s32 = np.float32(scale)  # (what the kernel divides by)
        if not (np.isfinite(s32) and s32 > 0):
            raise InvalidArguments(f"{p}: scale {scale}; expected a finite f32 > 0")
        if int(zero_point) != zero_point or not lo <= int(zero_point) <= hi:
            raise InvalidArguments(f"{p}: zero_point {zero_point}; expected an integer in "
                                   f"[{lo}, {hi}] ({dst_desc.dt})")
        self._quantize_linear = (float(s32), int(zero_point), lo, hi)
        super().__init__(src_desc, dst_desc)
        self.impl_info += "_quantize_linear"
        if isinstance(self._plan, _PlanesInterleaved) and \
                tuple(src_desc.physical_order) == tuple(range(len(src_desc.dims))):
            # 2 - 4 plain planes going channels-last
            self._plan = _QuantizePlanes(self._plan, src_desc.dims, _codes.ISA[self._isa],
                                         float(s32), int(zero_point),
                                         _codes.DT[dst_desc.dt])

    def _value_steps(self, prog, src_k, dst_k, dims, qa):
        """The formula's stages: divide, clamp, round, add the zero point, store."""
        s, z, lo, hi = self._quantize_linear
        prog.load(0, src_k)
        prog.bin_const(0, "div", s)
        # max(x, lo - z) first: a NaN goes to lo - z, as ONNX Runtime's maxps
        prog.eltwise(0, "clip", lo - z, hi - z)
        prog.eltwise(0, "round")
        prog.bin_const(0, "add", z)
        prog.store(0, dst_k)


class _QuantizePlanes:
    """QuantizeLinear of 2 - 4 f32 planes into channels-last bytes in one pass
    (``ukernels/tk_quantize_planes.h``): the stages of QuantizeLinear's program per value,
    each pixel's bytes written together -- no plain scratch array, no interleaving pass (a
    1x3x736x960 image, one thread: 1.4 -> 0.6 ms).  Arrays it cannot take in place (not
    C-contiguous) go to the two-pass plan."""

    __slots__ = ("apart", "planes", "pixels", "isa", "scale", "zp", "dt")

    def __init__(self, apart, dims, isa, scale, zp, dt):
        N, C = dims[0], dims[1]
        self.apart, self.isa = apart, isa
        self.planes, self.pixels = (N, C, int(np.prod(dims[2:]))), (N, int(np.prod(dims[2:])), C)
        self.scale, self.zp, self.dt = scale, zp, dt

    def run(self, arrays):
        src, dst = arrays["src"], arrays["dst"]
        if not (src.flags.c_contiguous and dst.flags.c_contiguous):
            self.apart.run(arrays)
            return
        _toolkit.quantize_planes_run(self.isa, src.reshape(self.planes),
                                     dst.reshape(self.pixels), self.scale, self.zp, self.dt,
                                     pw.threads_for(src.size))


class _PlanesInterleaved:
    """A plan writing plain (N, C, spatial) bytes into a scratch array, then the C planes
    interleaved into the channels-last destination: the engine runs rows of the image's
    width instead of rows of C (a 1x3x736x960 f32 image to u8 channels-last: 1.7 -> 0.7
    ms)."""

    __slots__ = ("plan", "dims", "np_dt", "isa", "scratch")

    def __init__(self, plan, dims, np_dt, isa):
        self.plan, self.dims, self.np_dt, self.isa = plan, dims, np_dt, isa
        self.scratch = {}  # the plain arrays of finished runs (a fresh one faults its pages)

    def run(self, arrays):
        dst = arrays["dst"]  # physical (N, spatial..., C)
        scratch = Scratch(self.scratch)
        try:
            plain = scratch.take(self.dims, self.np_dt)
            a = dict(arrays)
            a["dst"] = plain
            self.plan.run(a)
            # the interleave on the threads too (bands of pixels of a large image: the same
            # bytes)
            _conv.transpose_channels(plain, dst, True, self.isa, _dispatch.get_num_threads())
        finally:
            scratch.release()


# ------------------------------------------------------------------------------------------
# quantize / dequantize


def _axis_mask(name, x_ndim, axis):
    if axis is None:
        return 0
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise InvalidArguments(f"{name}: axis got {axis!r}; expected None (per-tensor) or an int "
                               f"in [{-x_ndim}, {x_ndim})")
    a = int(axis)
    if not -x_ndim <= a < x_ndim:
        raise InvalidArguments(f"{name}: axis got {a} for a {x_ndim}-D array; expected None or an "
                               f"int in [{-x_ndim}, {x_ndim})")
    return 1 << (a % x_ndim)


def _as_input(name, x, dts):
    if not isinstance(x, np.ndarray):
        raise InvalidArguments(f"{name}: x got {type(x).__name__}; expected a numpy.ndarray")
    try:
        dt = as_dt(x.dtype, f"{name}: x dtype")
    except InvalidArguments:
        dt = None
    if dt not in dts:
        raise InvalidArguments(f"{name}: x dtype {x.dtype}; expected one of "
                               f"{', '.join(np.dtype(pw_np(d)).name for d in dts)}")
    if x.ndim == 0 or x.size == 0:
        raise InvalidArguments(f"{name}: x shape {x.shape}; expected at least one dimension "
                               "and one element")
    return dt


def pw_np(dt):
    return {"f32": np.float32, "s32": np.int32, "s8": np.int8, "u8": np.uint8}[dt]


def _params(name, x, scale, zero_point, axis):
    """(scale mask, scales, zero-point mask, zero points or None).  A single value (a number or
    a size-1 array) applies to the whole tensor even with ``axis``."""
    mask = _axis_mask(name, x.ndim, axis)
    sm = 0 if np.size(scale) == 1 else mask
    s = _masks.check_scales(scale, _masks.scale_count(x.shape, sm), f"{name}: scale")
    z, zm = None, 0
    if zero_point is not None:
        zm = 0 if np.size(zero_point) == 1 else mask
        z = _masks.check_zero_points(zero_point, _masks.scale_count(x.shape, zm),
                                     f"{name}: zero_point")
        if not z.any():
            z = None
    return sm, s, zm, z


def _run_reorder(x, dst_dt, side, sm, s, zm, z):
    from dnnq.attr import PrimitiveAttr
    attr = PrimitiveAttr()
    attr.set_scales_mask(side, sm)
    args = {A.DNNL_ARG_SRC: x, A.DNNL_ARG_SCALE | side: s}
    if z is not None:
        attr.set_zero_points_mask(side, zm)
        args[A.DNNL_ARG_ATTR_ZERO_POINTS | side] = z
    return Reorder(MemoryDesc(x.shape, x.dtype), MemoryDesc(x.shape, dst_dt), attr).execute(args)


def quantize(x, scale, zero_point, dt, axis=None):
    """Quantize an f32 array: ``q = saturate(rne(x * f32(1 / scale) + zero_point))``.

    The convention is ``x = scale * (q - zero_point)``.  Runs a :class:`Reorder` with
    destination scales and zero points, so it is bit-identical to oneDNN's quantizing
    reorder (NaN becomes 0 for u8 and 127 for s8, +-inf saturate, halves round to even).

    Parameters
    ----------
    x : numpy.ndarray of float32
        Any shape.
    scale : float or array_like
        One value (``axis=None``), or one per index along ``axis``; finite, > 0.
    zero_point : int or array_like or None
        As ``scale``; None means 0.
    dt : {"u8", "s8", "s32"}
        The quantized type.
    axis : int, optional
        The axis of per-channel parameters (a single value still applies to the whole
        tensor).

    Returns
    -------
    numpy.ndarray
        ``dt`` values of ``x``'s shape.

    Raises
    ------
    InvalidArguments
        ``x`` not a float32 array, scales that are not finite and > 0, zero points that are
        not integers in s32, counts that do not match ``x.shape[axis]``, another ``dt``.

    See Also
    --------
    dequantize, Reorder, dnnq.calibrate.minmax

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.quantize(np.array([-1.0, 0.0, 0.3, 2.0], np.float32), 0.01, 128, "u8")
    array([ 28, 128, 158, 255], dtype=uint8)
    >>> w = np.array([[0.5, -1.0], [0.02, 0.04]], np.float32)           # per row
    >>> dnnq.quantize(w, np.array([1 / 127, 0.04 / 127], np.float32), 0, "s8", axis=0)
    array([[  64, -127],
           [  64,  127]], dtype=int8)
    """
    name = "quantize"
    _as_input(name, x, ("f32",))
    d = as_dt(dt, f"{name}: dt")
    if d not in ("s8", "u8", "s32"):
        raise InvalidArguments(f"{name}: dt {d}; expected s8, u8 or s32")
    sm, s, zm, z = _params(name, x, scale, zero_point, axis)
    return _run_reorder(x, d, A.DNNL_ARG_DST, sm, s, zm, z)


def dequantize(q, scale, zero_point=None, axis=None):
    """Dequantize an integer array: ``x = (f32(q) - f32(zero_point)) * scale``.

    Zero points are subtracted in f32 after converting both to f32, as oneDNN does (exact for
    ``|q|, |zero_point| < 2**24``).  Runs a :class:`Reorder` with source scales and zero
    points.

    Parameters
    ----------
    q : numpy.ndarray
        s8, u8 or s32 values, any shape.
    scale : float or array_like
        One value (``axis=None``), or one per index along ``axis``; finite, > 0.
    zero_point : int or array_like, optional
        As ``scale``; None means 0.
    axis : int, optional
        The axis of per-channel parameters.

    Returns
    -------
    numpy.ndarray of float32
        ``q``'s shape.

    Raises
    ------
    InvalidArguments
        ``q`` not an s8 / u8 / s32 array, scales that are not finite and > 0, zero points
        that are not integers in s32, counts that do not match ``q.shape[axis]``.

    See Also
    --------
    quantize

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> dnnq.dequantize(np.array([28, 128, 158, 255], np.uint8), 0.5, 128)
    array([-50. ,   0. ,  15. ,  63.5], dtype=float32)
    """
    name = "dequantize"
    _as_input(name, q, ("s8", "u8", "s32"))
    sm, s, zm, z = _params(name, q, scale, zero_point, axis)
    return _run_reorder(q, "f32", A.DNNL_ARG_SRC, sm, s, zm, z)
