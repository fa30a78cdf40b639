"""MatMul and InnerProduct: int8 GEMM primitives on the blocked VNNI pipeline.

Support table (masks are over the tensor's own logical dims; "ext" = beyond oneDNN 3.2):

| primitive | src scale | wei scale | dst scale | src zp | wei zp | dst zp |
|---|---|---|---|---|---|---|
| MatMul 2-D (M,K)x(K,N) | 0 | 0, 2 (per-N) | 0 | 0, 2 (per-K) | 0, 2 (per-N, ext) | 0, 2 (per-N) |
| MatMul 3-D (B,M,K)x(B,K,N) | 0 | 0, 4 (per-N) | 0 | 0, 4 (per-K, ext) | 0, 4 (per-N, ext) | 0, 4 (per-N, ext) |
| InnerProduct (N,IC,...)x(OC,IC,...) | 0 | 0, 1 (per-OC) | 0 | 0 (ext) | 0, 1 (ext) | 0, 2 (per-OC, ext) |

Data types: src u8 / s8, weights s8, bias f32 / s32 / s8 / u8, dst f32 / s32 / s8 / u8; an
f32 layer: src f32, weights f32, bias f32, dst f32 / s8 / u8 (dst scale and zero point only;
docs/f32_layers.md).
Post-ops: eltwise (every algorithm), binary (src1 broadcastable to dst), sum (one), and dnnq's
checkpoint / select extensions (cond and value broadcastable to dst).
"""
import copy
import time

import numpy as np

from dnnq import args as A
from dnnq.primitives import _verbose
from dnnq.primitives._cache import CachedPrimitive
from dnnq import masks as _masks
from dnnq.errors import InvalidArguments
from dnnq.primitives._kernels._gemm_exec import PackedGemmWeights, aligned_empty
from dnnq.primitives._common import arg_name, check_md, check_known_args, check_overlaps
from dnnq.primitives._gemm_primitive import GemmCore, broadcast_strides
from dnnq.primitives._f32 import layer_dtypes, refuse_input_quantization


_SRC_DTS = ("u8", "s8", "f32")   # f32: an f32 layer (f32 weights too; primitives/_f32.py)
_WEI_DTS = ("s8", "f32")
_DST_DTS = ("f32", "s32", "s8", "u8")
_BIAS_DTS = ("f32", "s32", "s8", "u8")


def _plain_resolver(prim, dims_of):
    def resolve(arg, mask):
        if mask >= (1 << 12):
            raise InvalidArguments(f"{prim}: mask {mask} of {arg_name(arg)} is a semantic "
                                   f"(per-channel) mask, but {prim} tensors have no channel "
                                   "semantics; give a plain mask (bit i = dimension i)")
        _masks.scale_count(dims_of[arg], mask)  # raises for bits >= ndims
        return mask
    return resolve


class _GemmPrimitive(metaclass=CachedPrimitive):
    """Shared execute path of MatMul and InnerProduct."""

    _name = "gemm"
    _kind = "gemm"

    def _finish_init(self, core, bias_desc):
        self._core = core
        self.impl_info = core.impl_info
        self._bias_strides = None
        if bias_desc is not None:
            self._bias_strides = self._bias_view(bias_desc)
        known = {A.DNNL_ARG_SRC, A.DNNL_ARG_WEIGHTS, A.DNNL_ARG_DST}
        if bias_desc is not None:
            known.add(A.DNNL_ARG_BIAS)
        known |= set(core.runtime_keys())
        post_inputs = core.post_input_specs()
        known |= {key for key, *_ in post_inputs}
        self._known = frozenset(known)
        self._dst_np = self.dst_desc.numpy_dtype
        self._dst_dims = tuple(self.dst_desc.dims)
        self._dst_size = int(np.prod(self._dst_dims))
        strict = (not self.src_desc.is_channels_last and
                  (bias_desc is None or bias_desc.dt == "f32") and
                  all(spec[-1] for spec in post_inputs))
        self._exec = core.executor(
            self._key, self.src_desc.dims, self.src_desc.numpy_dtype, self._a_batch,
            self.bias_desc.dims if bias_desc is not None else None, self._bias_strides,
            self._dst_dims, self._dst_np, len(known), strict)
        if _verbose.enabled(2):
            self._verbose("create", None)

    def prepare_weights(self, w):
        """Pack the weights once, for repeated execution.

        Packing puts the weights in the kernel's blocked layout with their column sums (the
        compensation of source zero points and s8 sources).  ``execute`` accepts the
        result in place of the plain array; plain weights given to ``execute`` are packed on
        every call.

        Parameters
        ----------
        w : numpy.ndarray
            s8 weights (f32 for an f32 layer) of ``weights_desc``'s shape.

        Returns
        -------
        PackedGemmWeights
            Read-only; accepted only by a primitive of the same description.  It pickles (as
            its plain values, packed again when loaded).

        Raises
        ------
        InvalidArguments
            For an array of another dtype or shape.

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> mm = dnnq.MatMul(dnnq.MemoryDesc((1, 64), "u8"), dnnq.MemoryDesc((64, 8), "s8"),
        ...                  dnnq.MemoryDesc((1, 8), "s32"))
        >>> w = mm.prepare_weights(np.ones((64, 8), np.int8))
        >>> mm.execute({dnnq.DNNL_ARG_SRC: np.full((1, 64), 2, np.uint8),
        ...             dnnq.DNNL_ARG_WEIGHTS: w})
        array([[128, 128, 128, 128, 128, 128, 128, 128]], dtype=int32)
        """
        w = self.weights_desc.check_array(w, "weights")
        return PackedGemmWeights(self._gemm_weights(w), owner=self._key,
                                 u8_shifted=self._core.swap_s8, origin=self)

    def _weights(self, w):
        if isinstance(w, PackedGemmWeights):
            if w.owner != self._key:
                raise InvalidArguments(f"{self._name}.execute: weights were packed by "
                                       "prepare_weights of a primitive with another description")
            return w
        return self.prepare_weights(w)

    def execute(self, args):
        """Run the primitive once.

        Releases the GIL: several Python threads may execute one primitive at once.  Arrays
        of exactly the described dtype and shape, C-contiguous, with packed weights and
        numpy scales run straight through the C-level path (about a microsecond of
        overhead); anything else (lists of scales, strided arrays, plain weights, a bias of
        another type) is validated and converted first, at the cost of those copies.

        Parameters
        ----------
        args : dict
            ``{DNNL_ARG_*: numpy.ndarray}``: ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS`` (plain, or
            from :meth:`prepare_weights`), ``DNNL_ARG_BIAS`` (when there is a
            ``bias_desc``), the scales / zero points the attribute declared
            (``DNNL_ARG_SCALE | arg``, ``DNNL_ARG_ATTR_ZERO_POINTS | arg``), the post-op
            inputs (``DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1``), and optionally
            ``DNNL_ARG_DST``.

        Returns
        -------
        numpy.ndarray
            The destination: the ``DNNL_ARG_DST`` array, written in place, when given (it
            must be C-contiguous, writeable, and share no memory with an input); else a new
            array.

        Raises
        ------
        InvalidArguments
            A missing, unknown or mistyped key, an array of the wrong dtype or shape,
            scales that are not finite and > 0, zero points beyond s32, packed weights of
            another primitive, a destination that overlaps an input.
        Unimplemented
            Rarely: values the primitive cannot compute (never for data in range).

        Examples
        --------
        >>> import numpy as np, dnnq
        >>> mm = dnnq.MatMul(dnnq.MemoryDesc((2, 3), "u8"), dnnq.MemoryDesc((3, 2), "s8"),
        ...                  dnnq.MemoryDesc((2, 2), "s32"))
        >>> dst = np.empty((2, 2), np.int32)
        >>> y = mm.execute({dnnq.DNNL_ARG_SRC: np.arange(6, dtype=np.uint8).reshape(2, 3),
        ...                 dnnq.DNNL_ARG_WEIGHTS: np.ones((3, 2), np.int8),
        ...                 dnnq.DNNL_ARG_DST: dst})
        >>> y is dst, y.tolist()
        (True, [[3, 3], [12, 12]])
        """
        if _verbose._level:
            t0 = time.perf_counter()
            dst = self._execute(args)
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
            return dst
        return self._execute(args)

    def _execute(self, args):
        if type(args) is dict:
            dst = self._exec.run(args)
            if dst is not None:
                return dst
        return self._execute_checked(args)

    def _execute_checked(self, args):
        """Every check with its error message, then the conversions, then the C path."""
        core = self._core
        if not isinstance(args, dict):
            raise InvalidArguments(f"{self._name}.execute: args got {type(args).__name__}; "
                                   "expected a dict {DNNL_ARG_*: array}")
        check_known_args(self._name, args, self._known)
        for need, what in ((A.DNNL_ARG_SRC, "src"), (A.DNNL_ARG_WEIGHTS, "weights")):
            if need not in args:
                raise InvalidArguments(f"{self._name}.execute: missing {what} "
                                       f"(DNNL_ARG_{what.upper()})")
        src = self.src_desc.check_array(args[A.DNNL_ARG_SRC], "src")
        a = self._gemm_src(src)
        pw = self._weights(args[A.DNNL_ARG_WEIGHTS])
        bias = None
        if self.bias_desc is not None:
            if A.DNNL_ARG_BIAS not in args:
                raise InvalidArguments(f"{self._name}.execute: missing bias (DNNL_ARG_BIAS); the "
                                       f"primitive was created with bias dims {self.bias_desc.dims}")
            b = self.bias_desc.check_array(args[A.DNNL_ARG_BIAS], "bias")
            bias = np.ascontiguousarray(b, dtype=np.float32)
        dst = args.get(A.DNNL_ARG_DST)
        if dst is None:
            if core.has_sum:
                raise InvalidArguments(f"{self._name}.execute: a sum post-op reads the previous "
                                       "destination, but no DNNL_ARG_DST array was given")
            dst = aligned_empty(self._dst_size, self._dst_np).reshape(self._dst_dims)
        else:
            self._check_dst(dst, args)
        # the C path takes aligned arrays only: misaligned inputs (a byte-offset view of a
        # buffer) are copied, a misaligned dst is computed in an aligned copy and written back
        user_dst = dst if not dst.flags.aligned else None
        if user_dst is not None:
            dst = aligned_empty(self._dst_size, self._dst_np).reshape(self._dst_dims)
            if core.has_sum:
                dst[...] = user_dst
        canon = core.canonical_args(args, a, pw, bias, dst)
        for key, value in canon.items():
            if key != A.DNNL_ARG_DST and isinstance(value, np.ndarray) and \
                    not value.flags.aligned:
                canon[key] = value.copy()
        out = self._exec.run(canon, True)
        if out is None:  # every check above passed: the C path cannot refuse these
            raise RuntimeError(f"{self._name}.execute: internal error, canonical arguments "
                               "refused by the C path")
        if user_dst is not None:
            user_dst[...] = out
            return user_dst
        return out

    def _verbose(self, event, ms):
        c = self._core
        problem = f"{c.M}x{c.K}:{c.K}x{c.N}" if c.batch == 1 else \
            f"{c.batch}x{c.M}x{c.K}:{c.batch}x{c.K}x{c.N}"
        _verbose.line(event, self._kind, self.impl_info,
                      (("src", self.src_desc), ("wei", self.weights_desc),
                       ("bia", self.bias_desc), ("dst", self.dst_desc)),
                      self.attr, problem, ms)

    def _check_dst(self, dst, args):
        d = self.dst_desc
        if not isinstance(dst, np.ndarray):
            raise InvalidArguments(f"{self._name}.execute: dst got {type(dst).__name__}; "
                                   "expected a numpy array")
        if dst.dtype != d.numpy_dtype or dst.shape != tuple(d.dims):
            raise InvalidArguments(f"{self._name}.execute: dst got {dst.dtype}{list(dst.shape)}; "
                                   f"expected {d.numpy_dtype}{list(d.dims)}")
        if not (dst.flags.c_contiguous and dst.flags.writeable):
            raise InvalidArguments(f"{self._name}.execute: dst must be a writable C-contiguous "
                                   "array (it is written in place)")
        # every input (weights, bias, scales, zero points, post-op inputs) must lie outside dst:
        # oneDNN's matmul / inner product do not execute in place
        check_overlaps(self._name, args)


class MatMul(_GemmPrimitive):
    """int8 matrix multiplication (and f32 layers): ``dst = src (M, K) x weights (K, N)``.

    Optionally batched, ``(B, M, K) x (B, K, N)``, with the batch broadcast from 1 on either
    side.  All checks, the kernel choice and the planning happen at creation;
    :meth:`prepare_weights` packs the weights once; :meth:`execute` runs, any number of
    times, from any number of Python threads.  Results are bit-identical to oneDNN 3.2's
    MatMul (the user guide's MatMul page has the numerics).

    Parameters
    ----------
    src_desc : MemoryDesc
        u8 or s8 (f32 for an f32 layer, with f32 weights), ``(M, K)`` or ``(B, M, K)``,
        plain.
    weights_desc : MemoryDesc
        s8 (f32 for an f32 layer), ``(K, N)`` or ``(B, K, N)``, plain.
    dst_desc : MemoryDesc
        f32, s32, s8 or u8, ``(M, N)`` or ``(B, M, N)``.
    bias_desc : MemoryDesc, optional
        f32, s32, s8 or u8, broadcastable to dst (e.g. ``(1, N)``).  Added in f32 after the
        scales, unscaled.
    attr : PrimitiveAttr, optional
        Scales and zero points (masks below), post-ops.

    Attributes
    ----------
    impl_info : str
        The kernel chosen, e.g. ``"avx512_core_vnni:blocked"``; a ``+ref_order`` suffix when
        dnnq follows oneDNN's reference kernel's order.
    src_desc, weights_desc, dst_desc, bias_desc : MemoryDesc
        The descriptors.
    attr : PrimitiveAttr or None
        A copy of the attribute.

    Raises
    ------
    InvalidArguments
        Descriptors whose dims do not match (K, M, N, batch), masks with bits beyond the
        tensor's dims, a semantic mask.
    Unimplemented
        A data type, layout, mask or post-op outside the support table.

    See Also
    --------
    InnerProduct, gemm_u8s8s32

    Notes
    -----
    Execute keys: ``DNNL_ARG_SRC`` (u8 / s8), ``DNNL_ARG_WEIGHTS`` (s8, packed by
    :meth:`prepare_weights` or plain, then packed on each call), ``DNNL_ARG_BIAS`` (when
    ``bias_desc`` was given), ``DNNL_ARG_DST``.  Scales: ``DNNL_ARG_SCALE | DNNL_ARG_SRC``,
    ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; zero points: ``DNNL_ARG_ATTR_ZERO_POINTS |
    DNNL_ARG_SRC``, ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``.

    Support table (mask bit i = dim i of that tensor; n = ndims; ext = beyond oneDNN 3.2):

    ===============  ===========================================================
    src              u8, s8; 2-D (M, K) or 3-D (B, M, K), plain
    weights          s8; (K, N) or (B, K, N), plain
    bias             f32, s32, s8, u8; broadcastable to dst (e.g. (1, N))
    dst              f32, s32, s8, u8; (M, N) or (B, M, N)
    f32 layer        src f32 + weights f32 (+ bias f32) -> dst f32, s8, u8; no src /
                     weights scales or zero points (InvalidArguments); one FMA order,
                     the same bits at every ISA level (docs/f32_layers.md)
    src scale        mask 0
    weights scale    mask 0, or 1 << (n-1) (per-N)
    dst scale        mask 0
    src zero point   mask 0, or 1 << (n-1) (per-K; 3-D: ext)
    weights zp       mask 0, or 1 << (n-1) (per-N) (ext)
    dst zero point   mask 0, or 1 << (n-1) (per-N; 3-D: ext)
    post-ops         eltwise (every algorithm), binary (src1 broadcastable to dst),
                     one sum; checkpoint / select (ext)
    ===============  ===========================================================

    Examples
    --------
    A u8 x s8 -> u8 layer with per-column weight scales and a ReLU:

    >>> import numpy as np, dnnq
    >>> from dnnq import DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCALE
    >>> attr = dnnq.PrimitiveAttr()
    >>> for arg, mask in ((DNNL_ARG_SRC, 0), (DNNL_ARG_WEIGHTS, 1 << 1), (DNNL_ARG_DST, 0)):
    ...     _ = attr.set_scales_mask(arg, mask)
    >>> _ = attr.set_post_ops(dnnq.PostOps().append_eltwise("relu"))
    >>> mm = dnnq.MatMul(dnnq.MemoryDesc((2, 4), "u8"), dnnq.MemoryDesc((4, 3), "s8"),
    ...                  dnnq.MemoryDesc((2, 3), "u8"), attr=attr)
    >>> w = mm.prepare_weights(np.array([[1, -1, 2]] * 4, np.int8))
    >>> mm.execute({DNNL_ARG_SRC: np.full((2, 4), 10, np.uint8), DNNL_ARG_WEIGHTS: w,
    ...             DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([0.5], np.float32),
    ...             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.array([1, 1, 0.25], np.float32),
    ...             DNNL_ARG_SCALE | DNNL_ARG_DST: np.array([0.25], np.float32)})
    array([[80,  0, 40],
           [80,  0, 40]], dtype=uint8)
    """

    _name = "MatMul"
    _kind = "matmul"

    def __init__(self, src_desc, weights_desc, dst_desc, bias_desc=None, attr=None):
        p = self._name
        check_md(p, src_desc, "src", _SRC_DTS, (2, 3), plain_only=True)
        check_md(p, weights_desc, "weights", _WEI_DTS, (2, 3), plain_only=True)
        check_md(p, dst_desc, "dst", _DST_DTS, (2, 3), plain_only=True)
        check_md(p, bias_desc, "bias", _BIAS_DTS, optional=True, plain_only=True)
        if layer_dtypes(p, src_desc.dt, weights_desc.dt, dst_desc.dt,
                        bias_desc.dt if bias_desc is not None else None):
            refuse_input_quantization(p, attr)
        nd = src_desc.ndims
        if weights_desc.ndims != nd or dst_desc.ndims != nd:
            raise InvalidArguments(f"{p}: src {src_desc.dims}, weights {weights_desc.dims} and "
                                   f"dst {dst_desc.dims} must have the same number of dims")
        *sb, M, K = src_desc.dims
        *wb, K2, N = weights_desc.dims
        *db, M2, N2 = dst_desc.dims
        if K2 != K:
            raise InvalidArguments(f"{p}: weights dims {weights_desc.dims} have K={K2}; src dims "
                                   f"{src_desc.dims} have K={K}")
        if (M2, N2) != (M, N):
            raise InvalidArguments(f"{p}: dst dims {dst_desc.dims}; expected (..., {M}, {N}) from "
                                   f"src {src_desc.dims} and weights {weights_desc.dims}")
        B = 1
        if nd == 3:
            B = db[0]
            for name, bdim in (("src", sb[0]), ("weights", wb[0])):
                if bdim not in (1, B):
                    raise InvalidArguments(f"{p}: {name} batch {bdim} must be 1 or the dst batch {B}")
            if max(sb[0], wb[0]) != B:
                raise InvalidArguments(f"{p}: dst batch {B} must be the larger of the src and "
                                       f"weights batches ({sb[0]}, {wb[0]})")
        self.src_desc, self.weights_desc, self.dst_desc = src_desc, weights_desc, dst_desc
        self.bias_desc = bias_desc
        self.attr = copy.deepcopy(attr)  # the caller may change theirs later
        self._a_batch = sb[0] if nd == 3 else 1
        per_last = 1 << (nd - 1)
        dims_of = {A.DNNL_ARG_SRC: src_desc.dims, A.DNNL_ARG_WEIGHTS: weights_desc.dims,
                   A.DNNL_ARG_DST: dst_desc.dims}
        scale_support = {A.DNNL_ARG_SRC: (0,), A.DNNL_ARG_WEIGHTS: (0, per_last),
                         A.DNNL_ARG_DST: (0,)}
        zp_support = {A.DNNL_ARG_SRC: (0, per_last), A.DNNL_ARG_WEIGHTS: (0, per_last),
                      A.DNNL_ARG_DST: (0, per_last)}
        meaning = {}
        for kind, table in (("scale", scale_support), ("zp", zp_support)):
            for arg, allowed in table.items():
                meaning[(kind, arg, 0)] = "common"
                if per_last in allowed:
                    meaning[(kind, arg, per_last)] = "k" if arg == A.DNNL_ARG_SRC else "n"
        dst_dims = tuple(dst_desc.dims)

        def view_strides(dims, name):
            s = broadcast_strides(dims, dst_dims, name)
            return (s[0], s[1], s[2]) if nd == 3 else (0, s[0], s[1])

        core = GemmCore(p, attr, batch=B, M=M, N=N, K=K, src_dt=src_desc.dt,
                        dst_dt=dst_desc.dt, has_bias=bias_desc is not None,
                        scale_support=scale_support, zp_support=zp_support,
                        mask_meaning=meaning, resolve=_plain_resolver(p, dims_of),
                        view_strides=view_strides,
                        bias_dims=None if bias_desc is None else tuple(bias_desc.dims),
                        onednn_ref_rules=True)
        self._view_strides = view_strides
        # the ISA is part of it: the packed layout depends on the kernel (u8-shifted weights
        # for the AVX-512 signed-source kernel)
        self._key = ("MatMul", src_desc, weights_desc, dst_desc, bias_desc,
                     attr.key() if attr is not None else None, core.isa)
        self._finish_init(core, bias_desc)

    def _bias_view(self, bias_desc):
        return self._view_strides(bias_desc.dims, "bias")

    def _gemm_weights(self, w):
        return w if w.ndim == 3 else w[None]

    def _weights_from_gemm(self, g):
        """The inverse of _gemm_weights (pickling of packed weights)."""
        return g if self.weights_desc.ndims == 3 else g[0]

    def _gemm_src(self, src):
        return src


class InnerProduct(_GemmPrimitive):
    """int8 inner product (fully connected layer): ``dst (N, OC) = src (N, IC[, *spatial]) x weights (OC, IC[, *spatial])^T``.

    The weights are in oneDNN's ``(OC, IC)`` order (as PyTorch's ``Linear``); per-output-
    channel weight scales are mask 1.  Otherwise as :class:`MatMul`: created once, weights
    packed once by :meth:`prepare_weights`, executed many times.

    Parameters
    ----------
    src_desc : MemoryDesc
        u8 or s8 (f32 for an f32 layer, with f32 weights), ``(N, IC)`` or ``(N, IC, [D,]
        [H,] W)``, plain.
    weights_desc : MemoryDesc
        s8 (f32 for an f32 layer), ``(OC, IC[, *spatial])`` matching the source.
    dst_desc : MemoryDesc
        f32, s32, s8 or u8, ``(N, OC)``.
    bias_desc : MemoryDesc, optional
        f32, s32, s8 or u8, ``(OC,)`` or ``(1, OC)``.
    attr : PrimitiveAttr, optional
        Scales and zero points (masks below), post-ops.

    Attributes
    ----------
    impl_info : str
        The kernel chosen, e.g. ``"avx512_core_vnni:blocked"``.
    src_desc, weights_desc, dst_desc, bias_desc : MemoryDesc
        The descriptors.
    attr : PrimitiveAttr or None
        A copy of the attribute.

    Raises
    ------
    InvalidArguments
        Descriptors whose dims do not match, masks with bits beyond the tensor's dims.
    Unimplemented
        A data type, layout, mask or post-op outside the support table.

    See Also
    --------
    MatMul

    Notes
    -----
    Execute keys: ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_BIAS`` (when
    ``bias_desc`` was given), ``DNNL_ARG_DST``.  Scales: ``DNNL_ARG_SCALE | DNNL_ARG_SRC``,
    ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; zero points: ``DNNL_ARG_ATTR_ZERO_POINTS |
    DNNL_ARG_SRC``, ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``.

    Support table (ext = beyond oneDNN 3.2, which has no zero points on inner product):

    ===============  ===========================================================
    src              u8, s8; (N, IC), (N, IC, W), (N, IC, H, W), (N, IC, D, H, W)
    weights          s8; (OC, IC, [D,] [H,] W) matching src
    bias             f32, s32, s8, u8; (OC,) or (1, OC)
    dst              f32, s32, s8, u8; (N, OC)
    f32 layer        src f32 + weights f32 (+ bias f32) -> dst f32, s8, u8; no src /
                     weights scales or zero points (docs/f32_layers.md)
    src scale        mask 0
    weights scale    mask 0, or 1 (per-OC)
    dst scale        mask 0
    src zero point   mask 0 (ext)
    weights zp       mask 0, or 1 (per-OC) (ext)
    dst zero point   mask 0, or 2 (per-OC) (ext)
    post-ops         eltwise, binary, one sum; checkpoint / select (ext)
    ===============  ===========================================================

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> ip = dnnq.InnerProduct(dnnq.MemoryDesc((2, 3), "s8"), dnnq.MemoryDesc((4, 3), "s8"),
    ...                        dnnq.MemoryDesc((2, 4), "s32"))
    >>> ip.execute({dnnq.DNNL_ARG_SRC: np.array([[1, 2, 3], [-1, -2, -3]], np.int8),
    ...             dnnq.DNNL_ARG_WEIGHTS: np.eye(4, 3, dtype=np.int8)})
    array([[ 1,  2,  3,  0],
           [-1, -2, -3,  0]], dtype=int32)
    """

    _name = "InnerProduct"
    _kind = "inner_product"

    def __init__(self, src_desc, weights_desc, dst_desc, bias_desc=None, attr=None):
        p = self._name
        check_md(p, src_desc, "src", _SRC_DTS, (2, 3, 4, 5), plain_only=True)
        check_md(p, weights_desc, "weights", _WEI_DTS, (2, 3, 4, 5), plain_only=True)
        check_md(p, dst_desc, "dst", _DST_DTS, (2,), plain_only=True)
        check_md(p, bias_desc, "bias", _BIAS_DTS, optional=True, plain_only=True)
        if layer_dtypes(p, src_desc.dt, weights_desc.dt, dst_desc.dt,
                        bias_desc.dt if bias_desc is not None else None):
            refuse_input_quantization(p, attr)
        if weights_desc.ndims != src_desc.ndims:
            raise InvalidArguments(f"{p}: weights dims {weights_desc.dims} and src dims "
                                   f"{src_desc.dims} must have the same number of dims")
        Nb, *rest = src_desc.dims
        OC, *wrest = weights_desc.dims
        if rest != wrest:
            raise InvalidArguments(f"{p}: weights dims {weights_desc.dims} must be (OC, "
                                   f"{', '.join(map(str, rest))}) to match src {src_desc.dims}")
        if tuple(dst_desc.dims) != (Nb, OC):
            raise InvalidArguments(f"{p}: dst dims {dst_desc.dims}; expected ({Nb}, {OC})")
        K = int(np.prod(rest))
        self.src_desc, self.weights_desc, self.dst_desc = src_desc, weights_desc, dst_desc
        self.bias_desc = bias_desc
        self.attr = copy.deepcopy(attr)  # the caller may change theirs later
        self._a_batch = 1
        dims_of = {A.DNNL_ARG_SRC: src_desc.dims, A.DNNL_ARG_WEIGHTS: weights_desc.dims,
                   A.DNNL_ARG_DST: dst_desc.dims}
        scale_support = {A.DNNL_ARG_SRC: (0,), A.DNNL_ARG_WEIGHTS: (0, 1), A.DNNL_ARG_DST: (0,)}
        zp_support = {A.DNNL_ARG_SRC: (0,), A.DNNL_ARG_WEIGHTS: (0, 1), A.DNNL_ARG_DST: (0, 2)}
        meaning = {("scale", A.DNNL_ARG_SRC, 0): "common", ("scale", A.DNNL_ARG_WEIGHTS, 0): "common",
                   ("scale", A.DNNL_ARG_WEIGHTS, 1): "n", ("scale", A.DNNL_ARG_DST, 0): "common",
                   ("zp", A.DNNL_ARG_SRC, 0): "common", ("zp", A.DNNL_ARG_WEIGHTS, 0): "common",
                   ("zp", A.DNNL_ARG_WEIGHTS, 1): "n", ("zp", A.DNNL_ARG_DST, 0): "common",
                   ("zp", A.DNNL_ARG_DST, 2): "n"}

        def resolve(arg, mask):
            if mask >= (1 << 12):
                kind = "weights_oihw" if arg == A.DNNL_ARG_WEIGHTS else "data_nchw"
                return _masks.resolve_mask(mask, dims_of[arg], kind)
            _masks.scale_count(dims_of[arg], mask)
            return mask

        dst_dims = (Nb, OC)

        def view_strides(dims, name):
            s = broadcast_strides(dims, dst_dims, name)
            return (0, s[0], s[1])

        core = GemmCore(p, attr, batch=1, M=Nb, N=OC, K=K, src_dt=src_desc.dt,
                        dst_dt=dst_desc.dt, has_bias=bias_desc is not None,
                        scale_support=scale_support, zp_support=zp_support,
                        mask_meaning=meaning, resolve=resolve, view_strides=view_strides)
        self._view_strides = view_strides
        self._key = ("InnerProduct", src_desc, weights_desc, dst_desc, bias_desc,
                     attr.key() if attr is not None else None, core.isa)
        self._finish_init(core, bias_desc)

    def _bias_view(self, bias_desc):
        return self._view_strides(bias_desc.dims, "bias")

    def _gemm_weights(self, w):
        return w.reshape(w.shape[0], -1).T[None]  # (1, K, OC), strided: packing reads it so

    def _weights_from_gemm(self, g):
        """The inverse of _gemm_weights (pickling of packed weights)."""
        return np.ascontiguousarray(g[0].T).reshape(self.weights_desc.dims)

    def _gemm_src(self, src):
        return src.reshape(src.shape[0], -1)
