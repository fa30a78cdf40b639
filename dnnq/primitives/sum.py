"""Sum: ``dst = sum_i scale_i * src_i`` over any number of inputs.

``Sum(dst_desc, src_descs, attr=None)``; the inputs are passed as ``DNNL_ARG_MULTIPLE_SRC + n``
and their scales (``attr.set_scales_mask(DNNL_ARG_MULTIPLE_SRC + n, 0)``) as
``DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + n)``; an input without a scale has scale 1.
(oneDNN takes the sum scales as constants at creation; dnnq passes them at execution like every
other scale.)

Support table:

===============  ==============================================================
inputs           1 to 512, each f32, s32, s8 or u8, all with the dims of dst
layouts          plain or channels-last tags on any tensor
dst              f32, s32, s8 or u8
scales           one per input, mask 0
zero points      none
post-ops         none
===============  ==============================================================

Numerics (bit-identical to oneDNN): ``acc = scale_0 * f32(src_0)``, then
``acc = acc + scale_i * f32(src_i)`` for i = 1, 2, ... in input order, every product and sum
rounded to f32; ``dst = saturate(rne(acc))`` (f32 dst: acc).
"""
from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.primitives import _pointwise as pw

_DTS = ("f32", "s32", "s8", "u8")


def _src_list(p, src_descs):
    if isinstance(src_descs, (str, bytes)) or not hasattr(src_descs, "__iter__"):
        raise InvalidArguments(f"{p}: src_descs got {src_descs!r}; expected a list of "
                               "dnnq.MemoryDesc")
    descs = list(src_descs)
    if not 1 <= len(descs) <= A.MAX_MULTIPLE:
        raise InvalidArguments(f"{p}: src_descs has {len(descs)} entries; expected 1 to "
                               f"{A.MAX_MULTIPLE}")
    for i, d in enumerate(descs):
        pw.check_md(p, d, f"src_descs[{i}]", _DTS)
    return descs


class Sum(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Weighted sum of any number of tensors: ``dst = sum_i scale_i * src_i``.

    Parameters
    ----------
    dst_desc : MemoryDesc
        f32, s32, s8 or u8.
    src_descs : sequence of MemoryDesc
        1 to 512 inputs, each f32, s32, s8 or u8, with the dims of dst.
    attr : PrimitiveAttr, optional
        A scale per input: ``set_scales_mask(DNNL_ARG_MULTIPLE_SRC + n, 0)``; an input
        without one has scale 1.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:sum"``.

    Raises
    ------
    InvalidArguments
        No inputs or more than 512, inputs whose dims differ from dst's.
    Unimplemented
        Zero points or post-ops.

    See Also
    --------
    Binary, Concat

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> from dnnq import DNNL_ARG_MULTIPLE_SRC, DNNL_ARG_SCALE
    >>> d = dnnq.MemoryDesc((3,), "u8")
    >>> attr = dnnq.PrimitiveAttr().set_scales_mask(DNNL_ARG_MULTIPLE_SRC + 1, 0)
    >>> s = dnnq.Sum(dnnq.MemoryDesc((3,), "f32"), [d, d], attr=attr)
    >>> s.execute({DNNL_ARG_MULTIPLE_SRC + 0: np.array([1, 2, 3], np.uint8),
    ...            DNNL_ARG_MULTIPLE_SRC + 1: np.array([10, 20, 30], np.uint8),
    ...            DNNL_ARG_SCALE | (DNNL_ARG_MULTIPLE_SRC + 1): np.array([0.5], np.float32)})
    array([ 6., 12., 18.], dtype=float32)
    """

    _kind = "sum"

    def __init__(self, dst_desc, src_descs, attr=None):
        p = "Sum"
        pw.check_md(p, dst_desc, "dst_desc", _DTS)
        descs = _src_list(p, src_descs)
        dims = dst_desc.dims
        for i, d in enumerate(descs):
            if d.dims != dims:
                raise InvalidArguments(f"{p}: src_descs[{i}] dims {d.dims} differ from dst dims "
                                       f"{dims}; expected every input with the dims of dst")
        support = {A.DNNL_ARG_MULTIPLE_SRC + i: (dims, (0,)) for i in range(len(descs))}
        qa = pw.QuantAttr(p, attr, support, {})
        self.dst_desc, self.src_descs, self.attr, self._qa = dst_desc, tuple(descs), qa.attr, qa
        self._isa = _impls.choose("sum", _impls.TOOLKIT).isa
        prog = pw.Program(dims, dst_desc.physical_order)
        zero = (0,) * len(dims)
        for i, d in enumerate(descs):
            k = prog.operand(("src", i), d.dt, d.strides)
            arg = A.DNNL_ARG_MULTIPLE_SRC + i
            mul = prog.operand(("scale", i), "f32", zero) if arg in qa.scale_mask else None
            prog.affine(0 if i == 0 else 1, k, None, mul)
            if i:
                prog.bin_buf(0, "add", 1)
        prog.store(0, prog.operand("dst", dst_desc.dt, dst_desc.strides, writable=True))
        self._plan = prog.build(self._isa)
        self._known = frozenset({A.DNNL_ARG_MULTIPLE_SRC + i for i in range(len(descs))}
                                | {A.DNNL_ARG_DST} | qa.known_args())
        self.impl_info = f"{pw.kernel_name(self._isa)}:sum"
        self._created()

    def _descs(self):
        return tuple((f"src{i}", d) for i, d in enumerate(self.src_descs)) + \
            (("dst", self.dst_desc),)

    def _problem(self):
        return f"n:{len(self.src_descs)} " + "x".join(map(str, self.dst_desc.dims))

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
            scales that are not finite and > 0, a destination that overlaps an input (in place: ``DNNL_ARG_DST`` may be exactly input 0).
        MemoryError
            When the scratch memory cannot be allocated.
        """
        return self._timed(self._execute, args)

    def _execute(self, args):
        p, qa = "Sum", self._qa
        pw.check_known_args(p, args, self._known)
        arrays = {}
        for i, d in enumerate(self.src_descs):
            arg = A.DNNL_ARG_MULTIPLE_SRC + i
            arrays[("src", i)] = d.check_array(pw.require(p, args, arg, f"input {i}"),
                                               pw.arg_name(arg))
            s = qa.scales(args, arg)
            if s is not None:
                arrays[("scale", i)] = s
        return pw.run_into_dst(p, self._plan, self.dst_desc, args, arrays,
                               in_place=A.DNNL_ARG_MULTIPLE_SRC)
