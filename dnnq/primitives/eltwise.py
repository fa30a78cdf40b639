"""Eltwise: ``dst = alg(src)`` element-wise, every algorithm of SPEC section 5.

``Eltwise(alg, src_desc, dst_desc, alpha=0.0, beta=0.0, attr=None)``; execute with
``{DNNL_ARG_SRC: x[, DNNL_ARG_DST: out]}`` (plus the scales / zero points / binary post-op
inputs the attribute asks for).

Support table (``ext`` = beyond oneDNN 3.2, whose eltwise takes no scales or zero points and
computes int8 data only with relu and linear, src and dst of the same type):

================  ==================================================================
algorithms        relu, tanh, elu, square, abs, sqrt, linear, soft_relu, logistic, exp,
                  gelu_tanh, gelu_erf, swish, log, clip, clip_v2, pow, round, mish,
                  hardswish, hardsigmoid (``eltwise_`` prefix accepted)
data types        src and dst each f32, s32, s8 or u8, any combination (ext for mixed
                  types and for int8 with algorithms other than relu / linear)
dims / layouts    src and dst with equal dims; plain or channels-last on either side
scales            src, dst: mask 0 (ext)
zero points       src, dst: mask 0 (ext)
post-ops          eltwise, binary, sum; checkpoint, select (ext)
================  ==================================================================

Numerics::

    f = (f32(src) - f32(src_zp)) * src_scale        (each step only when set)
    f = alg(f; alpha, beta)                         f32 (see dnnq.eltwise_math)
    f = post_ops(f)
    d = f * f32(1 / dst_scale) + f32(dst_zp)
    dst = saturate(rne(d))                          (f32 dst: d)

``linear`` is one fused multiply-add, as oneDNN's JIT kernels -- except with post-ops, where
oneDNN runs its reference kernel and dnnq, like it, rounds ``alpha * x`` before adding
``beta`` (in the algorithm and in linear post-ops); relu, linear, clip, clip_v2,
abs, square, sqrt, round, hardsigmoid and hardswish are bit-identical to oneDNN; the
transcendental algorithms use libm (a few f32 ulp from oneDNN's polynomials).
"""
from dnnq import args as A
from dnnq.primitives import _impls
from dnnq.primitives._cache import CachedPrimitive
from dnnq.errors import InvalidArguments
from dnnq.post_ops import PostOps
from dnnq.primitives import _pointwise as pw

_DTS = ("f32", "s32", "s8", "u8")
_POST_OPS = ("eltwise", "binary", "sum", "checkpoint", "select")


def _epilogue(prog, qa, dims, dst_k, dst_dt, binaries_out, buf=0, fused_linear=True):
    """post-ops, destination scale and zero point, store (shared by Eltwise and Binary)."""
    binaries_out.update(pw.add_post_ops(prog, qa, dims, dst_k, dst_dt, buf=buf,
                                        fused_linear=fused_linear))
    if A.DNNL_ARG_DST in qa.scale_mask:
        prog.bin_opnd(buf, "mul", prog.operand("inv_dst_scale", "f32", (0,) * len(dims)))
    if A.DNNL_ARG_DST in qa.zp_mask:
        prog.bin_opnd(buf, "add", prog.operand("dst_zp", "f32", (0,) * len(dims)))
    prog.store(buf, dst_k)


def _dst_params(qa, args, arrays):
    ds = qa.scales(args, A.DNNL_ARG_DST)
    if ds is not None:
        arrays["inv_dst_scale"] = pw.reciprocal(ds)
    z = qa.zero_points_f32(args, A.DNNL_ARG_DST)
    if z is not None:
        arrays["dst_zp"] = z


class Eltwise(pw.ToolkitPrimitive, metaclass=CachedPrimitive):
    """Element-wise ``dst = alg(src; alpha, beta)``, with scales, zero points and post-ops.

    Parameters
    ----------
    alg : str
        relu, tanh, elu, square, abs, sqrt, linear, soft_relu, logistic, exp, gelu_tanh,
        gelu_erf, swish, log, clip, clip_v2, pow, round, mish, hardswish, hardsigmoid (an
        ``eltwise_`` prefix is accepted).
    src_desc, dst_desc : MemoryDesc
        Each f32, s32, s8 or u8; equal dims; plain or channels-last.
    alpha, beta : float, optional
        The algorithm's parameters (as :meth:`PostOps.append_eltwise`).
    attr : PrimitiveAttr, optional
        Scales and zero points of src and dst (mask 0), post-ops.

    Attributes
    ----------
    impl_info : str
        The kernel, e.g. ``"avx512:eltwise"``.

    Raises
    ------
    InvalidArguments
        An unknown algorithm, parameters that are not finite, descriptors of different dims.
    Unimplemented
        A mask or post-op outside the support table.

    See Also
    --------
    dnnq.eltwise_math.eltwise_reference

    Notes
    -----
    Support table and numerics (see the module docstring):

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> d = dnnq.MemoryDesc((4,), "f32")
    >>> dnnq.Eltwise("clip", d, d, alpha=0.0, beta=6.0).execute(
    ...     {dnnq.DNNL_ARG_SRC: np.array([-1, 2, 7, 5.5], np.float32)})
    array([0. , 2. , 6. , 5.5], dtype=float32)
    """

    _kind = "eltwise"

    def __init__(self, alg, src_desc, dst_desc, alpha=0.0, beta=0.0, attr=None):
        p = "Eltwise"
        op = PostOps().append_eltwise(alg, alpha, beta)[0]  # validates alg, alpha, beta
        self.alg, self.alpha, self.beta = op.alg, op.alpha, op.beta
        pw.check_md(p, src_desc, "src_desc", _DTS)
        pw.check_md(p, dst_desc, "dst_desc", _DTS)
        if src_desc.dims != dst_desc.dims:
            raise InvalidArguments(f"{p}: dst_desc dims {dst_desc.dims} differ from src_desc dims "
                                   f"{src_desc.dims}; expected the same dims")
        dims = src_desc.dims
        common = {A.DNNL_ARG_SRC: (dims, (0,)), A.DNNL_ARG_DST: (dims, (0,))}
        qa = pw.QuantAttr(p, attr, common, common, _POST_OPS)
        self.src_desc, self.dst_desc, self.attr, self._qa = src_desc, dst_desc, qa.attr, qa
        self._isa = _impls.choose("eltwise", _impls.TOOLKIT).isa
        prog = pw.Program(dims, dst_desc.physical_order)
        src_k = prog.operand("src", src_desc.dt, src_desc.strides)
        dst_k = prog.operand("dst", dst_desc.dt, dst_desc.strides, writable=True)
        zero = (0,) * len(dims)
        sub = prog.operand("src_zp", "f32", zero) if A.DNNL_ARG_SRC in qa.zp_mask else None
        mul = prog.operand("src_scale", "f32", zero) if A.DNNL_ARG_SRC in qa.scale_mask else None
        prog.affine(0, src_k, sub, mul)
        # oneDNN runs an eltwise with post-ops on its reference kernel, whose linear rounds
        # twice (alpha * x, then + beta); its JIT kernels (no post-ops) fuse them
        fused = not qa.post_ops
        prog.eltwise(0, self.alg, self.alpha, self.beta, fused)
        self._binaries = {}
        _epilogue(prog, qa, dims, dst_k, dst_desc.dt, self._binaries, fused_linear=fused)
        self._plan = prog.build(self._isa)
        self._known = frozenset({A.DNNL_ARG_SRC, A.DNNL_ARG_DST} | qa.known_args())
        self._has_sum = any(o.kind == "sum" for o in qa.post_ops)
        self.impl_info = f"{pw.kernel_name(self._isa)}:eltwise"
        self._created()

    def _descs(self):
        return (("src", self.src_desc), ("dst", self.dst_desc))

    def _problem(self):
        return f"alg:eltwise_{self.alg} alpha:{self.alpha:g} beta:{self.beta:g} " + \
            "x".join(map(str, self.src_desc.dims))

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

    _dynamic = {A.DNNL_ARG_SRC: ("src", "src_desc")}

    def _execute(self, args):
        return pw.run_into_dst("Eltwise", self._plan, self.dst_desc, args, self._arrays(args),
                               self._has_sum, in_place=A.DNNL_ARG_SRC)

    def _arrays(self, args):
        """The plan's arrays but dst, every argument validated."""
        p, qa = "Eltwise", self._qa
        pw.check_known_args(p, args, self._known)
        arrays = {"src": self.src_desc.check_array(pw.require(p, args, A.DNNL_ARG_SRC, "src"),
                                                   "src")}
        ss = qa.scales(args, A.DNNL_ARG_SRC)
        if ss is not None:
            arrays["src_scale"] = ss
        z = qa.zero_points_f32(args, A.DNNL_ARG_SRC)
        if z is not None:
            arrays["src_zp"] = z
        _dst_params(qa, args, arrays)
        pw.fetch_post_op_inputs(p, qa, args, arrays)
        return arrays
