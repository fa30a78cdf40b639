"""MatMul and InnerProduct: int8 GEMM primitives on the blocked VNNI pipeline.

Support table (masks are over the tensor's own logical dims; "ext" = beyond oneDNN 3.2):

| primitive | src scale | wei scale | dst scale | src zp | wei zp | dst zp |
|---|---|---|---|---|---|---|
| MatMul 2-D (M,K)x(K,N) | 0 | 0, 2 (per-N) | 0 | 0, 2 (per-K) | 0, 2 (per-N, ext) | 0, 2 (per-N) |
| MatMul 3-D (B,M,K)x(B,K,N) | 0 | 0, 4 (per-N) | 0 | 0, 4 (per-K, ext) | 0, 4 (per-N, ext) | 0, 4 (per-N, ext) |
| InnerProduct (N,IC,...)x(OC,IC,...) | 0 | 0, 1 (per-OC) | 0 | 0 (ext) | 0, 1 (ext) | 0, 2 (per-OC, ext) |

Data types: src u8 / s8, weights s8, bias f32 / s32 / s8 / u8, dst f32 / s32 / s8 / u8.
Post-ops: eltwise (every algorithm), binary (src1 broadcastable to dst), sum (one), and dnnq's
checkpoint / select extensions (cond and value broadcastable to dst).
"""
import copy
import time

import numpy as np

from dnnq import args as A
from dnnq import _verbose
from dnnq._cache import CachedPrimitive
from dnnq import masks as _masks
from dnnq.errors import InvalidArguments
from dnnq.primitives._plan import PackedGemmWeights, aligned_empty
from dnnq.primitives._common import arg_name, check_md, check_known_args
from dnnq.primitives._gemm_primitive import (GemmCore, broadcast_strides, _KEY_SS, _KEY_WS,
                                             _KEY_DS, _ONE, _KEY_ZS, _KEY_ZD)
from dnnq._kernels._gemm import all_finite_positive as _all_finite_positive
from dnnq._dispatch import get_num_threads as _get_num_threads

_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_INF = float("inf")
_NO_SRC1 = [[None] * n for n in range(33)]  # src1 lists of a chain without binary post-ops

_SRC_DTS = ("u8", "s8")
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
        known |= {A.DNNL_ARG_SCALE | a for a in core.scale_axis}
        known |= {A.DNNL_ARG_ATTR_ZERO_POINTS | a for a in core.zp_axis}
        known |= {A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1 for i, _, _ in core.binary}
        post_inputs = [A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(s[0]) | arg for s in core.selects
                       for arg in (A.DNNL_ARG_SRC_1, A.DNNL_ARG_SRC_2)]
        known |= set(post_inputs)
        self._known = frozenset(known)
        self._fast_plan()
        if _verbose.enabled(2):
            self._verbose("create", None)
        self._alias_candidates = [A.DNNL_ARG_SRC, A.DNNL_ARG_BIAS] + [
            A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | A.DNNL_ARG_SRC_1 for i, _, _ in core.binary
        ] + post_inputs

    def prepare_weights(self, w):
        """Pack weights once (VNNI blocked layout + column sums) for repeated execution."""
        w = self.weights_desc.check_array(w, "weights")
        return PackedGemmWeights(self._gemm_weights(w), owner=self._key,
                                 keep_plain=self._keep_plain, u8_shifted=self._core.swap_s8)

    def _weights(self, w):
        if isinstance(w, PackedGemmWeights):
            if w.owner != self._key:
                raise InvalidArguments(f"{self._name}.execute: weights were packed by "
                                       "prepare_weights of a primitive with another description")
            return w
        return self.prepare_weights(w)

    def _fast_plan(self):
        """What the fast path of execute needs, computed once (see _execute_fast)."""
        c = self._core
        # zero points: common source and destination ones, or per-N destination ones
        zp_ok = (A.DNNL_ARG_WEIGHTS not in c.zp_axis and
                 c.zp_axis.get(A.DNNL_ARG_SRC, "common") == "common")
        self._fast = (not c.binary and not c.selects and zp_ok
                      and not self.src_desc.is_channels_last
                      and (self.bias_desc is None or self.bias_desc.dt == "f32"))
        self._src_np = self.src_desc.numpy_dtype
        self._src_dims = tuple(self.src_desc.dims)
        self._dst_np = self.dst_desc.numpy_dtype
        self._dst_dims = tuple(self.dst_desc.dims)
        self._dst_size = int(np.prod(self._dst_dims))  # dst we allocate: 64-byte aligned rows
        self._bias_dims = tuple(self.bias_desc.dims) if self.bias_desc is not None else None
        self._scale_specs = [(key, count, _F32 if key & A.DNNL_ARG_SCALE else _I32)
                             for key, (count, _, _, _) in c._specs.items()]
        self._nthreads = None

    def _execute_fast(self, args):
        """The common case (plain contiguous arrays of the right types, packed weights, f32 or
        no bias, scales only, no binary post-op): every check of the general path, without
        its generality.  Returns None to hand over to the general path (which also produces
        the error messages)."""
        if type(args) is not dict:
            return None
        known = self._known
        for key in args:
            if key not in known:
                return None
        src = args.get(A.DNNL_ARG_SRC)
        if type(src) is not np.ndarray or src.dtype is not self._src_np or \
                src.shape != self._src_dims or not src.flags.c_contiguous:
            return None
        pw = args.get(A.DNNL_ARG_WEIGHTS)
        if type(pw) is not PackedGemmWeights or pw.owner is not self._key:
            return None
        bias = None
        if self._bias_dims is not None:
            bias = args.get(A.DNNL_ARG_BIAS)
            if type(bias) is not np.ndarray or bias.dtype is not _F32 or \
                    bias.shape != self._bias_dims or not bias.flags.c_contiguous:
                return None
        vals = {}
        for key, count, dt in self._scale_specs:
            v = args.get(key)
            if type(v) is not np.ndarray or v.dtype is not dt or v.size != count or \
                    not v.flags.c_contiguous:
                return None
            if dt is _I32:  # a zero point: any s32 value
                vals[key] = v.item(0) if count == 1 else v.reshape(-1)
            elif count == 1:
                x = v.item(0)
                if not 0.0 < x < _INF:
                    return None
                vals[key] = x
            else:
                if v.ndim != 1 or not _all_finite_positive(v):
                    return None
                vals[key] = v
        dst = args.get(A.DNNL_ARG_DST)
        if dst is None:
            if self._core.has_sum:
                return None
            dst = aligned_empty(self._dst_size, self._dst_np).reshape(self._dst_dims)
        elif type(dst) is not np.ndarray or dst.dtype is not self._dst_np or \
                dst.shape != self._dst_dims or not dst.flags.c_contiguous or \
                not dst.flags.writeable or np.may_share_memory(dst, src) or \
                (bias is not None and np.may_share_memory(dst, bias)):
            return None
        c = self._core
        ws = vals.get(_KEY_WS)
        if ws is None:
            scale, scale_sn = _ONE, 0
        elif type(ws) is float:
            scale, scale_sn = np.full(1, ws, np.float32), 0
        else:
            scale, scale_sn = ws, 1
        col_comp = pw.comp_for_shift(c.shift + vals.get(_KEY_ZS, 0))
        dzp = vals.get(_KEY_ZD)
        if dzp is None:
            dzp_sn = 0
        elif type(dzp) is int:
            dzp, dzp_sn = args[_KEY_ZD].reshape(-1), 0
        else:
            dzp_sn = 1
        bs = self._bias_strides
        if _verbose._level:
            t0 = time.perf_counter()
        c.plan.run(src.view(np.uint8), c.M * c.K if self._a_batch > 1 else 0, c.K, c.src_dt == "s8",
                   pw.packed, pw.batch_stride if pw.batch > 1 else 0,
                   col_comp, c.N if col_comp.shape[0] > 1 else 0,
                   None, 0, None, 0, c.raw_s32, vals.get(_KEY_SS, 1.0), scale, scale_sn,
                   bias, bs[0] if bs else 0, bs[1] if bs else 0, bs[2] if bs else 0, _NO_SRC1[c.n_post],
                   vals.get(_KEY_DS, 1.0), dzp, dzp_sn, dst, c.M * c.N, c.N, _get_num_threads())
        if _verbose._level:
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
        return dst

    def execute(self, args):
        """Run once. args: {DNNL_ARG_*: ndarray}; returns dst (written in place if given)."""
        if self._fast:
            dst = self._execute_fast(args)
            if dst is not None:
                return dst
        core = self._core
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
            bias = (np.ascontiguousarray(b, dtype=np.float32), self._bias_strides)
        dst = args.get(A.DNNL_ARG_DST)
        if dst is None:
            if core.has_sum:
                raise InvalidArguments(f"{self._name}.execute: a sum post-op reads the previous "
                                       "destination, but no DNNL_ARG_DST array was given")
            dst = aligned_empty(self._dst_size, self._dst_np).reshape(self._dst_dims)
        else:
            self._check_dst(dst, src, args)
        if _verbose._level:
            t0 = time.perf_counter()
            core.run(args, a, self._a_batch, pw, bias, dst)
            self._verbose("exec", (time.perf_counter() - t0) * 1e3)
            return dst
        core.run(args, a, self._a_batch, pw, bias, dst)
        return dst

    def _verbose(self, event, ms):
        c = self._core
        problem = f"{c.M}x{c.K}:{c.K}x{c.N}" if c.batch == 1 else \
            f"{c.batch}x{c.M}x{c.K}:{c.batch}x{c.K}x{c.N}"
        _verbose.line(event, self._kind, self.impl_info,
                      (("src", self.src_desc), ("wei", self.weights_desc),
                       ("bia", self.bias_desc), ("dst", self.dst_desc)),
                      self.attr, problem, ms)

    def _check_dst(self, dst, src, args):
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
        # the inputs big enough to be a view of dst (scales and zero points are not)
        for key in self._alias_candidates:
            value = args.get(key)
            if type(value) is np.ndarray and np.may_share_memory(dst, value):
                raise InvalidArguments(f"{self._name}.execute: dst overlaps {arg_name(key)}; "
                                       "in-place execution is not supported")


class MatMul(_GemmPrimitive):
    """int8 matrix multiplication: dst = src (M, K) x weights (K, N), optionally batched
    (B, M, K) x (B, K, N) with the batch broadcast from 1 on either side.

    ``MatMul(src_desc, weights_desc, dst_desc, bias_desc=None, attr=None)``: all checks,
    kernel choice and planning happen here; ``prepare_weights(w)`` packs an s8 weights array
    once; ``execute(args)`` runs (any number of times, from any number of Python threads).

    Data keys of ``execute``: ``DNNL_ARG_SRC`` (u8 / s8), ``DNNL_ARG_WEIGHTS`` (s8, packed by
    ``prepare_weights`` or plain, then packed on each call), ``DNNL_ARG_BIAS`` (when
    ``bias_desc`` was given), ``DNNL_ARG_DST``.  Scales: ``DNNL_ARG_SCALE | DNNL_ARG_SRC``,
    ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; zero points: ``DNNL_ARG_ATTR_ZERO_POINTS |
    DNNL_ARG_SRC``, ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; post-op inputs below.

    Support table (mask bit i = dim i of that tensor; n = ndims; ext = beyond oneDNN 3.2):

    ===============  ===========================================================
    src              u8, s8; 2-D (M, K) or 3-D (B, M, K), plain
    weights          s8; (K, N) or (B, K, N), plain
    bias             f32, s32, s8, u8; broadcastable to dst (e.g. (1, N))
    dst              f32, s32, s8, u8; (M, N) or (B, M, N)
    src scale        mask 0
    weights scale    mask 0, or 1 << (n-1) (per-N)
    dst scale        mask 0
    src zero point   mask 0, or 1 << (n-1) (per-K; 3-D: ext)
    weights zp       mask 0, or 1 << (n-1) (per-N) (ext)
    dst zero point   mask 0, or 1 << (n-1) (per-N; 3-D: ext)
    post-ops         eltwise (every algorithm), binary (src1 broadcastable to dst),
                     one sum; checkpoint / select (ext)
    ===============  ===========================================================

    Other masks and data types raise Unimplemented / InvalidArguments.  Numerics and the
    bounded exceptions: docs/matmul.md.
    """

    _name = "MatMul"
    _kind = "matmul"

    def __init__(self, src_desc, weights_desc, dst_desc, bias_desc=None, attr=None):
        p = self._name
        check_md(p, src_desc, "src", _SRC_DTS, (2, 3), plain_only=True)
        check_md(p, weights_desc, "weights", ("s8",), (2, 3), plain_only=True)
        check_md(p, dst_desc, "dst", _DST_DTS, (2, 3), plain_only=True)
        check_md(p, bias_desc, "bias", _BIAS_DTS, optional=True, plain_only=True)
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
                        view_strides=view_strides)
        self._view_strides = view_strides
        self._keep_plain = core.zp_axis.get(A.DNNL_ARG_SRC) == "k"
        # the ISA is part of it: the packed layout depends on the kernel (u8-shifted weights
        # for the AVX-512 signed-source kernel)
        self._key = ("MatMul", src_desc, weights_desc, dst_desc, bias_desc,
                     attr.key() if attr is not None else None, core.isa)
        self._finish_init(core, bias_desc)

    def _bias_view(self, bias_desc):
        return self._view_strides(bias_desc.dims, "bias")

    def _gemm_weights(self, w):
        return w if w.ndim == 3 else w[None]

    def _gemm_src(self, src):
        return src


class InnerProduct(_GemmPrimitive):
    """int8 inner product (fully connected): dst (N, OC) = src (N, IC[, *spatial]) x
    weights (OC, IC[, *spatial])^T, with per-OC weight scales (mask 1).

    ``InnerProduct(src_desc, weights_desc, dst_desc, bias_desc=None, attr=None)``;
    ``prepare_weights(w)`` packs once; ``execute(args)`` as :class:`MatMul`.

    Data keys of ``execute``: ``DNNL_ARG_SRC``, ``DNNL_ARG_WEIGHTS``, ``DNNL_ARG_BIAS`` (when
    ``bias_desc`` was given), ``DNNL_ARG_DST``.  Scales: ``DNNL_ARG_SCALE | DNNL_ARG_SRC``,
    ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; zero points: ``DNNL_ARG_ATTR_ZERO_POINTS |
    DNNL_ARG_SRC``, ``| DNNL_ARG_WEIGHTS``, ``| DNNL_ARG_DST``; post-op inputs below.

    Support table (ext = beyond oneDNN 3.2, which has no zero points on inner product):

    ===============  ===========================================================
    src              u8, s8; (N, IC), (N, IC, W), (N, IC, H, W), (N, IC, D, H, W)
    weights          s8; (OC, IC[, *spatial]) matching src
    bias             f32, s32, s8, u8; (OC,) or (1, OC)
    dst              f32, s32, s8, u8; (N, OC)
    src scale        mask 0
    weights scale    mask 0, or 1 (per-OC)
    dst scale        mask 0
    src zero point   mask 0 (ext)
    weights zp       mask 0, or 1 (per-OC) (ext)
    dst zero point   mask 0, or 2 (per-OC) (ext)
    post-ops         eltwise, binary, one sum; checkpoint / select (ext)
    ===============  ===========================================================
    """

    _name = "InnerProduct"
    _kind = "inner_product"

    def __init__(self, src_desc, weights_desc, dst_desc, bias_desc=None, attr=None):
        p = self._name
        check_md(p, src_desc, "src", _SRC_DTS, (2, 3, 4, 5), plain_only=True)
        check_md(p, weights_desc, "weights", ("s8",), (2, 3, 4, 5), plain_only=True)
        check_md(p, dst_desc, "dst", _DST_DTS, (2,), plain_only=True)
        check_md(p, bias_desc, "bias", _BIAS_DTS, optional=True, plain_only=True)
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
        self._keep_plain = False
        self._key = ("InnerProduct", src_desc, weights_desc, dst_desc, bias_desc,
                     attr.key() if attr is not None else None, core.isa)
        self._finish_init(core, bias_desc)

    def _bias_view(self, bias_desc):
        return self._view_strides(bias_desc.dims, "bias")

    def _gemm_weights(self, w):
        return w.reshape(w.shape[0], -1).T[None]  # (1, K, OC), strided: packing reads it so

    def _gemm_src(self, src):
        return src.reshape(src.shape[0], -1)
