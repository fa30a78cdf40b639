"""Binary: ``dst = alg(src0, src1)`` element-wise with src1 broadcast.

``Binary(alg, src0_desc, src1_desc, dst_desc, attr=None)``; execute with
``{DNNL_ARG_SRC_0: a, DNNL_ARG_SRC_1: b[, DNNL_ARG_DST: out], DNNL_ARG_SCALE | DNNL_ARG_SRC_0:
s0, ...}``.

Support table (``ext`` = beyond oneDNN 3.2):

===============  ====================================================================
algorithms       add, sub, mul, div, min, max, ge, gt, le, lt, eq, ne (``binary_`` prefix)
data types       src0, src1, dst each f32, s32, s8 or u8
dims             dst dims == src0 dims; src1 broadcasts to them numpy-style (each dim 1 or
                 equal, fewer dims right-aligned), e.g. (1, C, 1, 1) or (1, 1, 1, 1)
layouts          plain or channels-last tags on every tensor
scales           src_0, src_1: mask 0 (as oneDNN); dst: mask 0 (ext)
zero points      src_0, src_1, dst: mask 0 (ext)
post-ops         eltwise, binary, sum; checkpoint, select (ext)
===============  ====================================================================

Numerics (bit-identical to oneDNN)::

    a = (f32(src0) - f32(zp0)) * scale0          each source scaled first, in f32
    b = (f32(src1) - f32(zp1)) * scale1
    f = alg(a, b)                                comparisons give 1.0 / 0.0
    f = post_ops(f)
    d = f * f32(1 / dst_scale) + f32(dst_zp)
    dst = saturate(rne(d))                       (f32 dst: d)

A ``linear`` post-op is one fused multiply-add where oneDNN uses its JIT kernel (s8 / u8 dst
from f32 / s8 / u8 sources, or all-f32) and two roundings where it uses its reference kernel
(an s32 tensor, or an f32 dst with an integer source); dnnq follows the same rule.
"""
from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.post_ops import canonical_binary_alg
from dnnq.primitives import _pointwise as pw
from dnnq.primitives.eltwise import _epilogue, _dst_params

_DTS = ("f32", "s32", "s8", "u8")
_POST_OPS = ("eltwise", "binary", "sum", "checkpoint", "select")


class Binary(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Element-wise ``dst = alg(src0 * scale0, src1 * scale1)``, src1 broadcast.

    Parameters
    ----------
    alg : str
        add, sub, mul, div, min, max, ge, gt, le, lt, eq, ne (a ``binary_`` prefix is
        accepted).
    src0_desc, src1_desc, dst_desc : MemoryDesc
        Each f32, s32, s8 or u8; dst dims equal src0's; src1 broadcasts to them
        numpy-style (e.g. ``(1, C, 1, 1)``).
    attr : PrimitiveAttr, optional
        Scales of ``DNNL_ARG_SRC_0`` / ``DNNL_ARG_SRC_1`` / ``DNNL_ARG_DST`` (mask 0), zero
        points (mask 0), post-ops.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:binary"``.

    Raises
    ------
    InvalidArguments
        An unknown algorithm, dims that do not broadcast.
    Unimplemented
        A mask or post-op outside the support table.

    See Also
    --------
    dnnq.eltwise_math.binary_reference, Sum

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    Add two int8 tensors with their own scales, per-channel broadcast of the second:

    >>> import numpy as np, dnnq
    >>> from dnnq import DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_SCALE
    >>> attr = dnnq.PrimitiveAttr()
    >>> _ = attr.set_scales_mask(DNNL_ARG_SRC_0, 0).set_scales_mask(DNNL_ARG_SRC_1, 0)
    >>> add = dnnq.Binary("add", dnnq.MemoryDesc((1, 2, 2, 2), "s8"),
    ...                   dnnq.MemoryDesc((1, 2, 1, 1), "s8"),
    ...                   dnnq.MemoryDesc((1, 2, 2, 2), "f32"), attr=attr)
    >>> y = add.execute({DNNL_ARG_SRC_0: np.full((1, 2, 2, 2), 10, np.int8),
    ...                  DNNL_ARG_SRC_1: np.array([1, 2], np.int8).reshape(1, 2, 1, 1),
    ...                  DNNL_ARG_SCALE | DNNL_ARG_SRC_0: np.array([0.5], np.float32),
    ...                  DNNL_ARG_SCALE | DNNL_ARG_SRC_1: np.array([0.25], np.float32)})
    >>> y[0, :, 0, 0]
    array([5.25, 5.5 ], dtype=float32)
    """

    _kind = "binary"

    def __init__(self, alg, src0_desc, src1_desc, dst_desc, attr=None):
        p = "Binary"
        self.alg = canonical_binary_alg(alg)
        pw.check_md(p, src0_desc, "src0_desc", _DTS)
        pw.check_md(p, src1_desc, "src1_desc", _DTS)
        pw.check_md(p, dst_desc, "dst_desc", _DTS)
        if src0_desc.dims != dst_desc.dims:
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} differ from src0_desc dims "
                                   f"{src0_desc.dims}; expected dst dims == src0 dims (only src1 "
                                   "broadcasts)")
        dims = dst_desc.dims
        s1_st = pw.tensor_strides(src1_desc, dims, f"{p}: src1_desc")
        common0 = (dims, (0,))
        support = {A.DNNL_ARG_SRC_0: common0, A.DNNL_ARG_SRC_1: (src1_desc.dims, (0,)),
                   A.DNNL_ARG_DST: common0}
        qa = pw.QuantAttr(p, attr, support, support, _POST_OPS)
        self.src0_desc, self.src1_desc, self.dst_desc = src0_desc, src1_desc, dst_desc
        self.attr, self._qa = qa.attr, qa
        self._isa = _impls.choose("binary", _impls.TOOLKIT).isa
        prog = pw.Program(dims, dst_desc.physical_order)
        k0 = prog.operand("src0", src0_desc.dt, src0_desc.strides)
        k1 = prog.operand("src1", src1_desc.dt, s1_st)
        dst_k = prog.operand("dst", dst_desc.dt, dst_desc.strides, writable=True)
        zero = (0,) * len(dims)
        prm = {}
        for arg, tag in ((A.DNNL_ARG_SRC_0, "0"), (A.DNNL_ARG_SRC_1, "1")):
            prm["zp" + tag] = prog.operand("zp" + tag, "f32", zero) if arg in qa.zp_mask else None
            prm["s" + tag] = (prog.operand("scale" + tag, "f32", zero)
                              if arg in qa.scale_mask else None)
        # oneDNN's jit:uni binary (fused linear post-ops) takes f32 / s8 / u8 sources with an
        # s8 / u8 dst, or all-f32; everything else runs its reference kernel (two roundings)
        dts = (src0_desc.dt, src1_desc.dt, dst_desc.dt)
        ref_impl = "s32" in dts or (dst_desc.dt == "f32" and dts[:2] != ("f32", "f32"))
        self._binaries = {}
        # one stage computes both sources and the operation and, without post-ops, stores
        # (after the destination's scale and zero point: an int8 add / multiply in one pass)
        plain = not qa.post_ops
        dst_mul = dst_add = None
        if plain:
            zero = (0,) * len(dims)
            if A.DNNL_ARG_DST in qa.scale_mask:
                dst_mul = prog.operand("inv_dst_scale", "f32", zero)
            if A.DNNL_ARG_DST in qa.zp_mask:
                dst_add = prog.operand("dst_zp", "f32", zero)
        prog.binary2(0, self.alg, k0, k1, prm["zp0"], prm["s0"], prm["zp1"], prm["s1"],
                     store_k=dst_k if plain else None, dst_mul=dst_mul, dst_add=dst_add)
        if not plain:
            _epilogue(prog, qa, dims, dst_k, dst_desc.dt, self._binaries,
                      fused_linear=not ref_impl)
        self._plan = prog.build(self._isa)
        self._known = frozenset({A.DNNL_ARG_SRC_0, A.DNNL_ARG_SRC_1, A.DNNL_ARG_DST}
                                | qa.known_args())
        self._has_sum = any(o.kind == "sum" for o in qa.post_ops)
        self.impl_info = f"{pw.kernel_name(self._isa)}:binary"
        self._created()

    def _descs(self):
        return (("src", self.src0_desc), ("src1", self.src1_desc), ("dst", self.dst_desc))

    def _problem(self):
        return f"alg:binary_{self.alg} " + "x".join(map(str, self.src0_desc.dims)) + ":" + \
            "x".join(map(str, self.src1_desc.dims))

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL; several Python threads may execute one primitive at once.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC_0``, ``DNNL_ARG_SRC_1``, the scales / zero points the attribute
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
            scales that are not finite and > 0, a destination that overlaps an input (in place: ``DNNL_ARG_DST`` may be exactly the ``DNNL_ARG_SRC_0`` array).
        MemoryError
            When the scratch memory cannot be allocated.
        """
        return self._timed(self._execute, args)

    _dynamic = {A.DNNL_ARG_SRC_0: ("src0", "src0_desc"), A.DNNL_ARG_SRC_1: ("src1", "src1_desc")}

    def _execute(self, args):
        return pw.run_into_dst("Binary", self._plan, self.dst_desc, args, self._arrays(args),
                               self._has_sum, in_place=A.DNNL_ARG_SRC_0)

    def _arrays(self, args):
        """The plan's arrays but dst, every argument validated."""
        p, qa = "Binary", self._qa
        pw.check_known_args(p, args, self._known)
        arrays = {
            "src0": self.src0_desc.check_array(
                pw.require(p, args, A.DNNL_ARG_SRC_0, "src0"), "src0"),
            "src1": self.src1_desc.check_array(
                pw.require(p, args, A.DNNL_ARG_SRC_1, "src1"), "src1"),
        }
        for arg, tag in ((A.DNNL_ARG_SRC_0, "0"), (A.DNNL_ARG_SRC_1, "1")):
            s = qa.scales(args, arg)
            if s is not None:
                arrays["scale" + tag] = s
            z = qa.zero_points_f32(args, arg)
            if z is not None:
                arrays["zp" + tag] = z
        _dst_params(qa, args, arrays)
        pw.fetch_post_op_inputs(p, qa, args, arrays)
        return arrays
