"""Softmax / log-softmax along one axis, with an int8 destination through scales.

``Softmax(alg, src_desc, dst_desc, axis, attr=None)`` with alg ``"softmax"`` (oneDNN's
``softmax_accurate``) or ``"logsoftmax"`` (``softmax_log``); execute with
``{DNNL_ARG_SRC: x[, DNNL_ARG_DST: out], DNNL_ARG_SCALE | DNNL_ARG_SRC: s, DNNL_ARG_SCALE |
DNNL_ARG_DST: t}``.

Support table (as oneDNN 3.2):

===============  ============================================================
src data type    f32, s8, u8
dst data type    f32, s8, u8
dims / layouts   equal dims; plain or channels-last tags; ``axis`` in [-ndims, ndims)
scales           src: mask 0; dst: mask 0
zero points      none;  post-ops: none
===============  ============================================================

Numerics -- oneDNN's definition, including where the *source* scale goes: it multiplies the
output, it does not dequantize the input::

    m = max_i f32(src_i)                        along the axis
    softmax:    y_i = exp(f32(src_i) - m) / sum_j exp(f32(src_j) - m)
    logsoftmax: y_i = (f32(src_i) - m) - log(sum_j exp(f32(src_j) - m))
    d_i = (y_i * src_scale) * f32(1 / dst_scale)
    dst = saturate(rne(d))                      (f32 dst: d)

So an int8 source holding ``x / s`` should be scaled (e.g. with a Reorder) before the softmax
if ``softmax(x)`` is wanted.  exp / log are libm's: the f32 results are within a few ulp of
oneDNN's (its JIT uses its own polynomial), and an int8 result may differ by 1 on rare elements
that fall next to a rounding boundary.
"""
from numbers import Integral

from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.primitives import _pointwise as pw
from dnnq.primitives._kernels import _toolkit as _tk

_ALGS = {"softmax": False, "softmax_accurate": False, "logsoftmax": True, "softmax_log": True}


class _BoundSoftmax(pw.BoundRun):
    """Softmax.bind's runner: the kernel call on the checked source (no plan program)."""

    __slots__ = ()

    def _run(self, arrays, phys):
        self.prim._kernel(arrays, phys)
        return self.desc.logical_view(phys)


class Softmax(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Softmax or log-softmax along one axis, with an int8 destination through scales.

    Parameters
    ----------
    alg : {"softmax", "logsoftmax"}
        oneDNN's ``softmax_accurate`` / ``softmax_log``.
    src_desc, dst_desc : MemoryDesc
        f32, s8 or u8 each; equal dims; plain or channels-last.
    axis : int
        In [-ndims, ndims).
    attr : PrimitiveAttr, optional
        Scales of src and dst (mask 0).  As in oneDNN, the source scale multiplies the
        output: it does not dequantize the input.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:softmax"``.

    Raises
    ------
    InvalidArguments
        An unknown algorithm, an axis out of range, descriptors of different dims.
    Unimplemented
        An s32 tensor, zero points, post-ops.

    See Also
    --------
    Eltwise

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    Probabilities stored as u8 with a destination scale of 1/256:

    >>> import numpy as np, dnnq
    >>> attr = dnnq.PrimitiveAttr().set_scales_mask(dnnq.DNNL_ARG_DST, 0)
    >>> sm = dnnq.Softmax("softmax", dnnq.MemoryDesc((1, 4), "f32"),
    ...                   dnnq.MemoryDesc((1, 4), "u8"), axis=1, attr=attr)
    >>> sm.execute({dnnq.DNNL_ARG_SRC: np.array([[0, 0, 1, 2]], np.float32),
    ...             dnnq.DNNL_ARG_SCALE | dnnq.DNNL_ARG_DST: np.array([1 / 256], np.float32)})
    array([[ 21,  21,  57, 156]], dtype=uint8)
    """

    _kind = "softmax"

    def __init__(self, alg, src_desc, dst_desc, axis, attr=None):
        p = "Softmax"
        if not isinstance(alg, str) or alg not in _ALGS:
            raise InvalidArguments(f"{p}: alg got {alg!r}; expected 'softmax' or 'logsoftmax' "
                                   "(oneDNN's 'softmax_accurate' / 'softmax_log' accepted)")
        self.alg = "logsoftmax" if _ALGS[alg] else "softmax"
        pw.check_md(p, src_desc, "src_desc", ("f32", "s8", "u8"))
        pw.check_md(p, dst_desc, "dst_desc", ("f32", "s8", "u8"))
        if src_desc.dims != dst_desc.dims:
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} differ from src_desc dims "
                                   f"{src_desc.dims}; expected the same dims")
        nd = src_desc.ndims
        if isinstance(axis, bool) or not isinstance(axis, Integral) or not -nd <= int(axis) < nd:
            raise InvalidArguments(f"{p}: axis got {axis!r}; expected an int in [{-nd}, {nd}) "
                                   f"for dims {src_desc.dims}")
        self.axis = int(axis) % nd
        dims = src_desc.dims
        support = {A.DNNL_ARG_SRC: (dims, (0,)), A.DNNL_ARG_DST: (dims, (0,))}
        qa = pw.QuantAttr(p, attr, support, {})
        self.src_desc, self.dst_desc, self.attr, self._qa = src_desc, dst_desc, qa.attr, qa
        self._isa = _impls.choose("softmax", _impls.TOOLKIT).isa
        order = [i for i in src_desc.physical_order if i != self.axis] or []
        ss, ds = src_desc.strides, dst_desc.strides
        self._rows = ([dims[i] for i in order] or [1], [ss[i] for i in order] or [0],
                      [ds[i] for i in order] or [0])
        self._axis_st = (dims[self.axis], ss[self.axis], ds[self.axis])
        # the axis innermost in the source's memory: oneDNN runs its JIT kernel, with its own
        # exp, and dnnq its vector exp and sum (tk_softmax.h: the same bits at every level);
        # along another axis oneDNN's reference kernel (libm's expf, a sequential sum), and
        # dnnq the same operations
        self._vector_exp = src_desc.physical_order[-1] == self.axis and dims[self.axis] > 1
        self._known = frozenset({A.DNNL_ARG_SRC, A.DNNL_ARG_DST} | qa.known_args())
        self.impl_info = f"{pw.kernel_name(self._isa)}:softmax"
        self._created()

    def _descs(self):
        return (("src", self.src_desc), ("dst", self.dst_desc))

    def _problem(self):
        return f"alg:{self.alg} axis:{self.axis} " + "x".join(map(str, self.src_desc.dims))

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
            scales that are not finite and > 0, a destination that overlaps an input (in place: ``DNNL_ARG_DST`` may be exactly the ``DNNL_ARG_SRC`` array).
        MemoryError
            When the scratch memory cannot be allocated.
        """
        return self._timed(self._execute, args)

    #: bind(): the source is the runner's argument (ToolkitPrimitive.bind), the kernel one
    #: call (no plan program)
    _dynamic = {A.DNNL_ARG_SRC: ("src", "src_desc")}
    _plan = None
    _bound_run = _BoundSoftmax

    def _arrays(self, args):
        """The kernel's operands but dst, every argument validated: the source and the
        source / destination scale factors (as Python floats)."""
        p, qa = "Softmax", self._qa
        pw.check_known_args(p, args, self._known)
        src = self.src_desc.check_array(pw.require(p, args, A.DNNL_ARG_SRC, "src"), "src")
        ss = qa.scales(args, A.DNNL_ARG_SRC)
        ds = qa.scales(args, A.DNNL_ARG_DST)
        return {"src": src, "scale": float(ss[0]) if ss is not None else 1.0,
                "inv": float(pw.reciprocal(ds)[0]) if ds is not None else 1.0}

    def _execute(self, args):
        arrays = self._arrays(args)
        user, phys = pw.output("Softmax", self.dst_desc, args)
        # in place (src the very memory of dst) is allowed, as in oneDNN; the kernel reads a
        # copy of the source rows then
        if user is not None and pw.check_overlaps("Softmax", args,
                                                  in_place={A.DNNL_ARG_DST: A.DNNL_ARG_SRC}):
            arrays["src"] = arrays["src"].copy()
        self._kernel(arrays, phys)
        return pw.finish(self.dst_desc, user, phys)

    def _kernel(self, arrays, phys):
        src = arrays["src"]
        dims, sst, dst_st = self._rows
        L, sa, da = self._axis_st
        _tk.softmax_run(pw.ISA_CODE[self._isa], self.alg == "logsoftmax",
                        pw.DT_CODE[self.src_desc.dt], pw.DT_CODE[self.dst_desc.dt], dims, sst,
                        dst_st, L, sa, da, arrays["scale"], arrays["inv"], src, phys,
                        pw.threads_for(src.size), self._vector_exp)
