"""Concat: join tensors along one dimension, with an optional scale per input.

``Concat(dst_desc, concat_dimension, src_descs, attr=None)``; the inputs are passed as
``DNNL_ARG_MULTIPLE_SRC + n`` and their scales (``attr.set_scales_mask(DNNL_ARG_MULTIPLE_SRC + n,
0)``) as ``DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + n)``.

Support table (``ext`` = beyond oneDNN 3.2, which wants every input of one data type):

================  ============================================================
inputs            1 to 512, each f32, s32, s8 or u8 (mixed types: ext)
dims              equal to dst's except along ``concat_dimension``, where the inputs' sizes
                  add up to dst's (negative dimensions count from the end)
layouts           plain or channels-last tags on any tensor
dst               f32, s32, s8 or u8
scales            one per input, mask 0
zero points       none;  post-ops: none
================  ============================================================

Numerics: an input with the dst's data type and no scale is copied exactly; otherwise
``dst = saturate(rne(f32(src) * scale))`` (f32 dst: the product), as oneDNN.  No input may
share memory with the destination (InvalidArguments naming both; see docs/aliasing.md).
"""
from numbers import Integral

from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.primitives import _pointwise as pw
from dnnq.primitives.sum import _src_list

_DTS = ("f32", "s32", "s8", "u8")


class Concat(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Concatenate tensors along one dimension, with an optional scale per input.

    Parameters
    ----------
    dst_desc : MemoryDesc
        f32, s32, s8 or u8.
    concat_dimension : int
        The dimension to join along (negative counts from the end).
    src_descs : sequence of MemoryDesc
        1 to 512 inputs, each f32, s32, s8 or u8, with dst's dims except along
        ``concat_dimension``, where their sizes add up to dst's.
    attr : PrimitiveAttr, optional
        A scale per input: ``set_scales_mask(DNNL_ARG_MULTIPLE_SRC + n, 0)``.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:concat"``.

    Raises
    ------
    InvalidArguments
        A dimension out of range, inputs whose dims do not fit dst's.
    Unimplemented
        Zero points or post-ops.

    See Also
    --------
    Sum

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> c = dnnq.Concat(dnnq.MemoryDesc((1, 3), "s8"), 1,
    ...                 [dnnq.MemoryDesc((1, 1), "s8"), dnnq.MemoryDesc((1, 2), "s8")])
    >>> c.execute({dnnq.DNNL_ARG_MULTIPLE_SRC + 0: np.array([[1]], np.int8),
    ...            dnnq.DNNL_ARG_MULTIPLE_SRC + 1: np.array([[2, 3]], np.int8)})
    array([[1, 2, 3]], dtype=int8)
    """

    _kind = "concat"

    def __init__(self, dst_desc, concat_dimension, src_descs, attr=None):
        p = "Concat"
        pw.check_md(p, dst_desc, "dst_desc", _DTS)
        descs = _src_list(p, src_descs)
        nd = dst_desc.ndims
        ax = concat_dimension
        if isinstance(ax, bool) or not isinstance(ax, Integral) or not -nd <= int(ax) < nd:
            raise InvalidArguments(f"{p}: concat_dimension got {ax!r}; expected an int in "
                                   f"[{-nd}, {nd}) for {nd}-D dst dims {dst_desc.dims}")
        ax = int(ax) % nd
        total = 0
        for i, d in enumerate(descs):
            if d.ndims != nd or any(a != b for j, (a, b) in enumerate(zip(d.dims, dst_desc.dims))
                                    if j != ax):
                raise InvalidArguments(
                    f"{p}: src_descs[{i}] dims {d.dims} do not match dst dims {dst_desc.dims} "
                    f"outside concat dimension {ax}; expected {nd} dims equal to dst's except "
                    f"dimension {ax}")
            total += d.dims[ax]
        if total != dst_desc.dims[ax]:
            raise InvalidArguments(f"{p}: the inputs add up to {total} along dimension {ax}; dst "
                                   f"dims {dst_desc.dims} have {dst_desc.dims[ax]}")
        support = {A.DNNL_ARG_MULTIPLE_SRC + i: (d.dims, (0,)) for i, d in enumerate(descs)}
        qa = pw.QuantAttr(p, attr, support, {})
        self.dst_desc, self.src_descs, self.attr, self._qa = dst_desc, tuple(descs), qa.attr, qa
        self.concat_dimension = ax
        self._isa = _impls.choose("concat", _impls.TOOLKIT).isa
        self._plans = []
        dst_st = dst_desc.strides
        offset = 0
        for i, d in enumerate(descs):
            prog = pw.Program(d.dims, dst_desc.physical_order)
            k = prog.operand("src", d.dt, d.strides)
            dk = prog.operand("dst", dst_desc.dt, dst_st, offset=offset * dst_st[ax],
                              writable=True)
            arg = A.DNNL_ARG_MULTIPLE_SRC + i
            if arg not in qa.scale_mask and d.dt == dst_desc.dt:
                prog.copy(k, dk)
            else:
                mul = prog.operand("scale", "f32", (0,) * nd) if arg in qa.scale_mask else None
                prog.affine(0, k, None, mul, store_k=dk)
            self._plans.append(prog.build(self._isa))
            offset += d.dims[ax]
        self._known = frozenset({A.DNNL_ARG_MULTIPLE_SRC + i for i in range(len(descs))}
                                | {A.DNNL_ARG_DST} | qa.known_args())
        self.impl_info = f"{pw.kernel_name(self._isa)}:concat"
        self._created()

    def _descs(self):
        return tuple((f"src{i}", d) for i, d in enumerate(self.src_descs)) + \
            (("dst", self.dst_desc),)

    def _problem(self):
        return f"axis:{self.concat_dimension} " + "x".join(map(str, self.dst_desc.dims))

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL; several Python threads may execute one primitive at once.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_MULTIPLE_SRC + n`` for each input n, the scales / zero points the attribute
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

    def _execute(self, args):
        p, qa = "Concat", self._qa
        pw.check_known_args(p, args, self._known)
        inputs = []
        for i, d in enumerate(self.src_descs):
            arg = A.DNNL_ARG_MULTIPLE_SRC + i
            arrays = {"src": d.check_array(pw.require(p, args, arg, f"input {i}"),
                                           pw.arg_name(arg))}
            s = qa.scales(args, arg)
            if s is not None:
                arrays["scale"] = s
            inputs.append(arrays)
        user, phys = pw.output(p, self.dst_desc, args)
        if user is not None:  # no input may overlap dst (oneDNN's concat is not in place)
            pw.check_overlaps(p, args)
        for arrays, plan in zip(inputs, self._plans):
            arrays["dst"] = phys
            plan.run(arrays)
        return pw.finish(self.dst_desc, user, phys)
