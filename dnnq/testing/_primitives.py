"""oneDNN primitives driven with numpy arrays: one function per primitive.

Conventions shared by every function:

* arrays are given and returned in their logical oneDNN dimension order
  (``N, C, [D,] H, W`` data; ``[G,] O, I, [D,] H, W`` weights; ``M, K`` / ``K, N``);
  inputs may have any positive strides (e.g. a channels-last view);
* ``dst_dt`` is ``"f32"``, ``"s32"``, ``"s8"``, ``"u8"`` or a numpy dtype;
* a scale / zero point is given as values plus a mask (absent = not set); scales
  are passed as f32 and zero points as s32 execution memories;
* ``post_ops`` is a sequence of ``("eltwise", alg, alpha, beta)``,
  ``("binary", alg, src1)`` and ``("sum", scale, zero_point[, dt])``; a sum
  reads ``dst_prev`` (the raw prior destination contents);
* ``return_impl=True`` returns ``(result, implementation_name)``;
* a oneDNN failure raises :class:`OnednnError` (``.status`` e.g. ``"unimplemented"``).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ._attr import Attr, alg_kind, broadcast_to_ndims, prefilled_dst, run
from ._capi import (ExecArg, OnednnError, Scope, as_operand, const, dims_of, dt_name, impl_name, lib,
                    md_equal, np_dtype, query_md)

A = const  # short alias for argument ids inside this module


def _result(out, impl, return_impl):
    return (out, impl) if return_impl else out


def _spatial(value, n, default):
    """Normalize a per-spatial-dimension parameter (None / int / sequence) to a list."""
    if value is None:
        return [default] * n
    if np.isscalar(value):
        return [int(value)] * n
    value = [int(v) for v in value]
    if len(value) != n:
        raise ValueError(f"expected {n} spatial values, got {value}")
    return value


def _quant_attr(scope, post_ops, dst_ndims, **q):
    """Attr from ``src_scales=..., src_scale_mask=...`` style keywords."""
    attr = Attr(scope)
    for name, arg in (("src", "DNNL_ARG_SRC"), ("wei", "DNNL_ARG_WEIGHTS"), ("dst", "DNNL_ARG_DST")):
        attr.scales(A(arg), q.get(f"{name}_scales"), q.get(f"{name}_scale_mask", 0))
        attr.zero_points(A(arg), q.get(f"{name}_zp"), q.get(f"{name}_zp_mask", 0))
    attr.post_ops(post_ops, dst_ndims)
    return attr


def _bias(bias, ndims=1):
    return None if bias is None else broadcast_to_ndims(as_operand(bias), ndims)


# ----------------------------------------------------------------------------- matmul

def matmul(src, wei, bias=None, dst_dt="f32", *, return_impl=False, **kw):
    """``dst = src @ wei`` (2-D, or batched 3-D+ with broadcast of unit batch dims).

    ``bias`` of shape ``(N,)``, ``(1, N)``, ``(M, N)``, ``(1, 1, N)`` ... (unit dims
    prepended to the dst rank).  Weights are created with ``format_tag_any`` and the
    user weights reordered in, unless ``weights_any=False`` (plain weights).  Keywords:
    ``{src,wei,dst}_scales`` / ``_scale_mask``, ``{src,wei,dst}_zp`` / ``_zp_mask``,
    ``post_ops``, ``dst_prev`` (the destination's prior content, for a sum post-op).
    """
    h = MatmulHandle(src, wei, bias, dt_name(dst_dt), **kw)
    try:
        return _result(h.execute(), h.impl, return_impl)
    finally:
        h.close()


class MatmulHandle:
    """A oneDNN matmul primitive with its memories bound; `execute()` runs it once.

    The arguments are those of `matmul` (which is a handle executed once).  With a sum
    post-op, `dst_prev` fills the destination once, at creation."""

    def __init__(self, src, wei, bias=None, dst_dt="s8", *, post_ops=(), dst_prev=None,
                 weights_any=True, **q):
        self.scope = s = Scope()
        s.__enter__()
        src, wei = as_operand(src), as_operand(wei)
        nd = max(src.ndim, wei.ndim)
        src, wei = broadcast_to_ndims(src, nd), broadcast_to_ndims(wei, nd)
        batch = np.broadcast_shapes(src.shape[:-2], wei.shape[:-2])
        dst_shape = tuple(batch) + (src.shape[-2], wei.shape[-1])
        dt = dt_name(dst_dt)
        bias = _bias(bias, nd)
        attr = _quant_attr(s, post_ops, nd, **q)
        self.dst = prefilled_dst(dst_shape, dt, dst_prev, attr.sum_dt)
        wei_md = s.md_any(wei.shape, wei.dtype) if weights_any else s.md_of(wei)
        pd = s.pd("dnnl_matmul_primitive_desc_create", s.lib.engine, s.md_of(src), wei_md,
                  None if bias is None else s.md_of(bias), s.md(dst_shape, dt), attr.handle)
        self.impl = impl_name(pd)
        args = dict(attr.exec_args({const("DNNL_ARG_SRC"): src.shape,
                                    const("DNNL_ARG_WEIGHTS"): wei.shape,
                                    const("DNNL_ARG_DST"): dst_shape}))
        arrays = {const("DNNL_ARG_SRC"): src, const("DNNL_ARG_WEIGHTS"): wei,
                  const("DNNL_ARG_DST"): self.dst}
        if bias is not None:
            arrays[const("DNNL_ARG_BIAS")] = bias
        self._bind(pd, arrays, args)

    def _bind(self, pd, arrays, args):
        """Wrap the user arrays as memories (the weights reordered once, here, into the
        layout the primitive chose) and create the primitive."""
        s = self.scope
        for arg, a in arrays.items():
            user = s.wrap(a)
            want = query_md(pd, arg)
            if md_equal(s.mem_md(user), want):
                args[arg] = user
            else:  # only the weights: reordered once, here
                internal = s.memory(want)
                s.reorder(user, internal)
                args[arg] = internal
        self.prim = s.primitive(pd)
        self.args = args

    def execute(self):
        """Run once and return the destination (builds the argument array on each call:
        convenient, not what a benchmark should time; see :meth:`runner`)."""
        self.scope.execute(self.prim, self.args)
        return self.dst

    def runner(self):
        """A no-argument callable that runs the primitive as a C++ caller does.

        The ``dnnl_exec_arg_t`` array, the stream and the two C functions
        (``dnnl_primitive_execute``, ``dnnl_stream_wait``) are resolved here, once; each
        call is then those two C calls and a status check.  What remains of Python is the
        ctypes call overhead of two foreign calls (``ctypes_call_overhead`` measures it)."""
        lib_ = self.scope.lib
        arr = (ExecArg * len(self.args))(*[ExecArg(k, m) for k, m in self.args.items()])
        n, prim, stream = len(self.args), self.prim, lib_.stream
        execute, wait = lib_.dll.dnnl_primitive_execute, lib_.dll.dnnl_stream_wait
        self._keep_runner = arr  # the array must outlive every call of the runner

        def run_once():
            if execute(prim, stream, n, arr) or wait(stream):
                self.scope.execute(self.prim, self.args)  # raises OnednnError with the status
        return run_once

    def close(self):
        self.scope.__exit__(None, None, None)


class InnerProductHandle(MatmulHandle):
    """A oneDNN inner product with its memories bound (plain src / dst, weights in the
    layout oneDNN chose, reordered once); ``execute()`` and ``runner()`` as
    :class:`MatmulHandle`.  Arguments as :func:`inner_product` (bias of shape ``(OC,)``)."""

    def __init__(self, src, wei, bias=None, dst_dt="s8", *, post_ops=(), dst_prev=None, **q):
        self.scope = s = Scope()
        s.__enter__()
        src, wei = as_operand(src), as_operand(wei)
        dst_shape, dt = (src.shape[0], wei.shape[0]), dt_name(dst_dt)
        bias = _bias(bias)
        attr = _quant_attr(s, post_ops, 2, **q)
        self.dst = prefilled_dst(dst_shape, dt, dst_prev, attr.sum_dt)
        pd = s.pd("dnnl_inner_product_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), s.md_of(src), s.md_any(wei.shape, wei.dtype),
                  None if bias is None else s.md_of(bias), s.md(dst_shape, dt), attr.handle)
        self.impl = impl_name(pd)
        args = dict(attr.exec_args({A("DNNL_ARG_SRC"): src.shape,
                                    A("DNNL_ARG_WEIGHTS"): wei.shape,
                                    A("DNNL_ARG_DST"): dst_shape}))
        arrays = {A("DNNL_ARG_SRC"): src, A("DNNL_ARG_WEIGHTS"): wei, A("DNNL_ARG_DST"): self.dst}
        if bias is not None:
            arrays[A("DNNL_ARG_BIAS")] = bias
        self._bind(pd, arrays, args)


# ----------------------------------------------------------------------------- reorder

def _md_layout(md):
    """(strides, inner_nblks) of a blocked memory descriptor."""
    nblks, strides = ctypes.c_int(), ctypes.POINTER(ctypes.c_int64)()
    lib().call("dnnl_memory_desc_query", md, const("dnnl_query_inner_nblks_s32"), ctypes.byref(nblks))
    lib().call("dnnl_memory_desc_query", md, const("dnnl_query_strides"), ctypes.byref(strides))
    return strides, nblks.value


def reorder(x, dst_dt, *, src_scales=None, src_scale_mask=0, dst_scales=None, dst_scale_mask=0,
            src_zp=None, src_zp_mask=0, dst_zp=None, dst_zp_mask=0, dst_tag=None,
            return_impl=False):
    """Reorder / (de)quantize ``x`` into ``dst_dt``.

    Quantize: ``q = sat(rne(x / dst_scale + dst_zp))``; dequantize: ``(q - src_zp) * src_scale``.
    The source layout is taken from ``x``'s strides.  ``dst_tag`` (a format-tag
    name such as ``"nhwc"`` or ``"acdb"``) selects the destination layout: a plain
    permutation is returned as an array of the logical shape with those strides,
    a blocked layout (``"nChw16c"``) as the raw 1-D buffer.
    """
    x = as_operand(x)
    dt = dt_name(dst_dt)
    with Scope() as s:
        attr = Attr(s)
        attr.scales(A("DNNL_ARG_SRC"), src_scales, src_scale_mask)
        attr.scales(A("DNNL_ARG_DST"), dst_scales, dst_scale_mask)
        attr.zero_points(A("DNNL_ARG_SRC"), src_zp, src_zp_mask)
        attr.zero_points(A("DNNL_ARG_DST"), dst_zp, dst_zp_mask)
        if dst_tag is None:
            out = np.empty(x.shape, np_dtype(dt))
            dst_md = s.md_of(out)
        else:
            dst_md = s.md(x.shape, dt, tag=dst_tag)
            size = lib().dll.dnnl_memory_desc_get_size(dst_md)
            out = np.zeros(size // np_dtype(dt).itemsize, np_dtype(dt))
        src_mem, dst_mem = s.wrap(x), s.memory(dst_md, out)
        dims = {A("DNNL_ARG_SRC"): x.shape, A("DNNL_ARG_DST"): x.shape}
        impl = s.reorder(src_mem, dst_mem, attr.handle, attr.exec_args(dims))
        if dst_tag is not None:
            strides, nblks = _md_layout(dst_md)
            if nblks == 0:
                byte_strides = [strides[i] * out.itemsize for i in range(x.ndim)]
                out = np.lib.stride_tricks.as_strided(out, x.shape, byte_strides)
        return _result(out, impl, return_impl)


# ----------------------------------------------------------------------------- gemm

def _gemm(fn, a_dtype, A_, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc):
    A_ = np.ascontiguousarray(A_, dtype=a_dtype)
    B = np.ascontiguousarray(B, dtype=np.int8)
    M, K = A_.shape[::-1] if transa else A_.shape
    KB, N = B.shape[::-1] if transb else B.shape
    if KB != K:
        raise ValueError(f"inner dimensions differ: A gives K={K}, B gives K={KB}")
    C = np.zeros((M, N), np.int32) if C is None else np.array(C, dtype=np.int32, order="C")
    if C.shape != (M, N):
        raise ValueError(f"C must have shape {(M, N)}")
    offsetc = offsetc.upper()
    n_co = {"F": 1, "C": M, "R": N}[offsetc]  # as dnnl.h documents: "C" -> co[i] per row i
    co = np.zeros(n_co, np.int32) if co is None else np.ascontiguousarray(co, dtype=np.int32).ravel()
    if co.size != n_co:
        raise ValueError(f"offsetc={offsetc!r} needs {n_co} co values, got {co.size}")
    lib().call(fn, b"T" if transa else b"N", b"T" if transb else b"N", offsetc.encode(),
               M, N, K, float(alpha), A_.ctypes.data, A_.shape[1], int(ao),
               B.ctypes.data, B.shape[1], int(bo), float(beta), C.ctypes.data, N, co.ctypes.data)
    return C


def gemm_u8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0,
                 ao=0, bo=0, co=None, offsetc="F"):
    """``dnnl_gemm_u8s8s32`` (row-major): ``C = alpha (op(A)-ao)(op(B)-bo) + beta C + co``.

    ``A`` (u8) and ``B`` (s8) are given as stored: ``A`` is ``(K, M)`` when ``transa``.
    ``co`` has 1 (``offsetc="F"``), M (``"C"``: ``co[i]`` added to row i, i.e. a column
    vector) or N (``"R"``: ``co[j]`` added to column j, a row vector) values, as dnnl.h
    documents (``len >= m`` for "C").  Returns s32 ``C``.
    """
    return _gemm("dnnl_gemm_u8s8s32", np.uint8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)


def gemm_s8s8s32(A, B, C=None, *, transa=False, transb=False, alpha=1.0, beta=0.0,
                 ao=0, bo=0, co=None, offsetc="F"):
    """``dnnl_gemm_s8s8s32``; as :func:`gemm_u8s8s32` with an s8 ``A``."""
    return _gemm("dnnl_gemm_s8s8s32", np.int8, A, B, C, transa, transb, alpha, beta, ao, bo, co, offsetc)


# ----------------------------------------------------------------------------- inner product

def inner_product(src, wei, bias=None, dst_dt="f32", *, src_scales=None, src_scale_mask=0,
                  wei_scales=None, wei_scale_mask=0, dst_scales=None, dst_scale_mask=0,
                  src_zp=None, src_zp_mask=0, dst_zp=None, dst_zp_mask=0, post_ops=(),
                  dst_prev=None, any_format=True, return_impl=False):
    """Inner product: ``src (N, IC[, spatial])``, ``wei (OC, IC[, spatial])``, ``bias (OC,)``
    → ``dst (N, OC)``.  src / weights / dst use ``format_tag_any`` unless ``any_format=False``.
    (oneDNN 3.2 rejects zero points here; they are accepted to probe that.)"""
    src, wei = as_operand(src), as_operand(wei)
    dst_shape, dt = (src.shape[0], wei.shape[0]), dt_name(dst_dt)
    bias = _bias(bias)
    with Scope() as s:
        attr = _quant_attr(s, post_ops, 2, src_scales=src_scales, src_scale_mask=src_scale_mask,
                           wei_scales=wei_scales, wei_scale_mask=wei_scale_mask,
                           dst_scales=dst_scales, dst_scale_mask=dst_scale_mask, src_zp=src_zp,
                           src_zp_mask=src_zp_mask, dst_zp=dst_zp, dst_zp_mask=dst_zp_mask)
        md = s.md_any if any_format else (lambda shape, d: s.md(shape, d))
        dst = prefilled_dst(dst_shape, dt, dst_prev, attr.sum_dt)
        pd = s.pd("dnnl_inner_product_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), md(src.shape, src.dtype), md(wei.shape, wei.dtype),
                  None if bias is None else s.md_of(bias), md(dst_shape, dt), attr.handle)
        inputs = {A("DNNL_ARG_SRC"): src, A("DNNL_ARG_WEIGHTS"): wei}
        if bias is not None:
            inputs[A("DNNL_ARG_BIAS")] = bias
        dims = {A("DNNL_ARG_SRC"): src.shape, A("DNNL_ARG_WEIGHTS"): wei.shape,
                A("DNNL_ARG_DST"): dst_shape}
        run(s, pd, inputs, {A("DNNL_ARG_DST"): dst}, attr.exec_args(dims), prefill=[A("DNNL_ARG_DST")])
        return _result(dst, impl_name(pd), return_impl)


# ----------------------------------------------------------------------------- (de)convolution

def _conv_geometry(deconv, src, wei, strides, padding_l, padding_r, dilates):
    """(dst shape, (strides, padding_l, padding_r, dilates)) of a (de)convolution, oneDNN's
    conventions: dilation 0 = dense, padding_r defaults to padding_l."""
    nsp = src.ndim - 2
    grouped = wei.ndim == src.ndim + 1
    oc = wei.shape[0] * wei.shape[1] if grouped else wei.shape[0]
    ks = wei.shape[-nsp:]
    st, pl = _spatial(strides, nsp, 1), _spatial(padding_l, nsp, 0)
    pr = list(pl) if padding_r is None else _spatial(padding_r, nsp, 0)
    dl = _spatial(dilates, nsp, 0)
    out_sp = []
    for i in range(nsp):
        ext = (ks[i] - 1) * (dl[i] + 1) + 1
        out_sp.append((src.shape[2 + i] - 1) * st[i] - pl[i] - pr[i] + ext if deconv
                      else (src.shape[2 + i] - ext + pl[i] + pr[i]) // st[i] + 1)
    return (src.shape[0], oc, *out_sp), (st, pl, pr, dl)


def _conv_like(kind, src, wei, bias, dst_dt, strides, padding_l, padding_r, dilates,
               post_ops, dst_prev, any_format, return_impl, q):
    src, wei = as_operand(src), as_operand(wei)
    if src.ndim - 2 not in (1, 2, 3) or wei.ndim not in (src.ndim, src.ndim + 1):
        raise ValueError(f"src {src.shape} / weights {wei.shape}: expected N,C,[D,]H,W data "
                         "and [G,]O,I,[D,]H,W weights")
    dst_shape, (st, pl, pr, dl) = _conv_geometry(kind == "deconvolution", src, wei, strides,
                                                 padding_l, padding_r, dilates)
    dt = dt_name(dst_dt)
    bias = _bias(bias)
    with Scope() as s:
        attr = _quant_attr(s, post_ops, len(dst_shape), **q)
        md = s.md_any if any_format else (lambda shape, d: s.md(shape, d))
        dst = prefilled_dst(dst_shape, dt, dst_prev, attr.sum_dt)
        pd = s.pd(f"dnnl_{kind}_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), A(f"dnnl_{kind}_direct"),
                  md(src.shape, src.dtype), md(wei.shape, wei.dtype),
                  None if bias is None else s.md_of(bias), md(dst_shape, dt),
                  dims_of(st), dims_of(dl), dims_of(pl), dims_of(pr), attr.handle)
        inputs = {A("DNNL_ARG_SRC"): src, A("DNNL_ARG_WEIGHTS"): wei}
        if bias is not None:
            inputs[A("DNNL_ARG_BIAS")] = bias
        dims = {A("DNNL_ARG_SRC"): src.shape, A("DNNL_ARG_WEIGHTS"): wei.shape,
                A("DNNL_ARG_DST"): dst_shape}
        run(s, pd, inputs, {A("DNNL_ARG_DST"): dst}, attr.exec_args(dims), prefill=[A("DNNL_ARG_DST")])
        return _result(dst, impl_name(pd), return_impl)


def convolution_dw(src, wei, bias, dst_dt, dw_wei, dw_bias, dw_dst_dt, *, dw_stride,
                   dw_padding, strides=None, padding_l=None, padding_r=None, post_ops=(),
                   dw_wei_scales=None, dw_wei_scale_mask=0, dw_dst_scales=None,
                   return_impl=False, **q):
    """A convolution (``dst_dt`` = its own, intermediate, data type) with oneDNN's fused
    depthwise post-op appended after ``post_ops``: ``dw_wei`` ``(C, 1, 1, K, K)`` s8,
    ``dw_bias`` ``(C,)`` or None, output ``dw_dst_dt``.  The dw weights / bias / scales are
    passed as ``DNNL_ARG_ATTR_POST_OP_DW | ...``; returns the final destination."""
    src, wei = as_operand(src), as_operand(wei)
    dw_wei = as_operand(dw_wei)
    k = dw_wei.shape[-1]
    ops = list(post_ops) + [("dw", dw_wei.dtype, None if dw_bias is None else
                             as_operand(dw_bias).dtype, dw_dst_dt, k, dw_stride, dw_padding)]
    nsp = src.ndim - 2
    st, pl = _spatial(strides, nsp, 1), _spatial(padding_l, nsp, 0)
    pr = list(pl) if padding_r is None else _spatial(padding_r, nsp, 0)
    ks = wei.shape[-nsp:]
    out_sp = [(src.shape[2 + i] - ks[i] + pl[i] + pr[i]) // st[i] + 1 for i in range(nsp)]
    mid_shape = (src.shape[0], wei.shape[0], *out_sp)
    DW = A("DNNL_ARG_ATTR_POST_OP_DW")
    with Scope() as s:
        attr = _quant_attr(s, ops, len(mid_shape), **q)
        if dw_wei_scales is not None:
            attr.scales(DW | A("DNNL_ARG_WEIGHTS"), dw_wei_scales, dw_wei_scale_mask)
        if dw_dst_scales is not None:
            attr.scales(DW | A("DNNL_ARG_DST"), dw_dst_scales, 0)
        pd = s.pd("dnnl_convolution_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), A("dnnl_convolution_direct"),
                  s.md_any(src.shape, src.dtype), s.md_any(wei.shape, wei.dtype),
                  None if bias is None else s.md_of(_bias(bias)),
                  s.md_any(mid_shape, dt_name(dst_dt)),
                  dims_of(st), dims_of([0] * nsp), dims_of(pl), dims_of(pr), attr.handle)
        oh = (out_sp[0] + 2 * dw_padding - k) // dw_stride + 1
        ow = (out_sp[-1] + 2 * dw_padding - k) // dw_stride + 1
        dst = np.zeros((src.shape[0], wei.shape[0], oh, ow)[:2 + nsp], np_dtype(dt_name(dw_dst_dt)))
        inputs = {A("DNNL_ARG_SRC"): src, A("DNNL_ARG_WEIGHTS"): wei,
                  DW | A("DNNL_ARG_WEIGHTS"): dw_wei}
        if bias is not None:
            inputs[A("DNNL_ARG_BIAS")] = _bias(bias)
        if dw_bias is not None:
            inputs[DW | A("DNNL_ARG_BIAS")] = _bias(dw_bias)
        dims = {A("DNNL_ARG_SRC"): src.shape, A("DNNL_ARG_WEIGHTS"): wei.shape,
                A("DNNL_ARG_DST"): mid_shape, DW | A("DNNL_ARG_WEIGHTS"): dw_wei.shape}
        run(s, pd, inputs, {A("DNNL_ARG_DST"): dst}, attr.exec_args(dims))
        return _result(dst, impl_name(pd), return_impl)


class ConvHandle:
    """A oneDNN (de)convolution with its memories bound once (the layouts oneDNN picks for
    ``format_tag_any``; src and weights reordered in at creation), for timing as a C++ caller
    runs it: ``execute()`` runs it once, ``result()`` returns the destination as a logical
    numpy array.  Keywords as :func:`convolution` (no sum post-op); ``data_tag`` fixes the
    src / dst layout (a format-tag name such as ``"nhwc"``) instead of ``format_tag_any``."""

    def __init__(self, src, wei, bias=None, dst_dt="u8", *, deconv=False, strides=None,
                 padding_l=None, padding_r=None, dilates=None, post_ops=(), data_tag=None,
                 **q):
        kind = "deconvolution" if deconv else "convolution"
        self.scope = s = Scope()
        s.__enter__()
        src, wei = as_operand(src), as_operand(wei)
        self.dst_shape, (st, pl, pr, dl) = _conv_geometry(deconv, src, wei, strides, padding_l,
                                                          padding_r, dilates)
        dt = dt_name(dst_dt)
        bias = _bias(bias)
        attr = _quant_attr(s, post_ops, len(self.dst_shape), **q)
        # data_tag (e.g. "nhwc"): src and dst in that layout, as a caller holding such data
        # runs oneDNN; None: the layouts oneDNN picks (format_tag_any)
        data_md = (lambda shape, d: s.md(shape, d, tag=data_tag)) if data_tag else s.md_any
        pd = s.pd(f"dnnl_{kind}_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), A(f"dnnl_{kind}_direct"),
                  data_md(src.shape, src.dtype), s.md_any(wei.shape, wei.dtype),
                  None if bias is None else s.md_of(bias), data_md(self.dst_shape, dt),
                  dims_of(st), dims_of(dl), dims_of(pl), dims_of(pr), attr.handle)
        self.impl = impl_name(pd)
        args = dict(attr.exec_args({A("DNNL_ARG_SRC"): src.shape, A("DNNL_ARG_WEIGHTS"): wei.shape,
                                    A("DNNL_ARG_DST"): self.dst_shape}))
        inputs = {A("DNNL_ARG_SRC"): src, A("DNNL_ARG_WEIGHTS"): wei}
        if bias is not None:
            inputs[A("DNNL_ARG_BIAS")] = bias
        for arg, a in inputs.items():
            user = s.wrap(a)
            want = query_md(pd, arg)
            if md_equal(s.mem_md(user), want):
                args[arg] = user
            else:
                internal = s.memory(want)
                s.reorder(user, internal)
                args[arg] = internal
        self.dst_mem = s.memory(query_md(pd, A("DNNL_ARG_DST")))
        args[A("DNNL_ARG_DST")] = self.dst_mem
        self.dst = np.zeros(self.dst_shape, np_dtype(dt))
        self.prim = s.primitive(pd)
        self.args = args

    def execute(self):
        self.scope.execute(self.prim, self.args)

    def runner(self):
        """A no-argument callable running the primitive as a C++ caller does (the execution
        argument array built once, here): see MatmulHandle.runner."""
        lib_ = self.scope.lib
        arr = (ExecArg * len(self.args))(*[ExecArg(k, m) for k, m in self.args.items()])
        n, prim, stream = len(self.args), self.prim, lib_.stream
        execute, wait = lib_.dll.dnnl_primitive_execute, lib_.dll.dnnl_stream_wait
        self._keep_runner = arr

        def run_once():
            if execute(prim, stream, n, arr) or wait(stream):
                self.scope.execute(self.prim, self.args)  # raises OnednnError with the status
        return run_once

    def result(self):
        self.execute()
        self.scope.reorder(self.dst_mem, self.scope.wrap(self.dst))
        return self.dst

    def close(self):
        self.scope.__exit__(None, None, None)


def convolution(src, wei, bias=None, dst_dt="f32", *, strides=None, padding_l=None,
                padding_r=None, dilates=None, src_scales=None, src_scale_mask=0,
                wei_scales=None, wei_scale_mask=0, dst_scales=None, dst_scale_mask=0,
                src_zp=None, src_zp_mask=0, wei_zp=None, wei_zp_mask=0, dst_zp=None,
                dst_zp_mask=0, post_ops=(), dst_prev=None, any_format=True, return_impl=False):
    """Forward convolution (1-D/2-D/3-D; groups via ``(G, OC/G, IC/G, k...)`` weights).

    ``strides`` / ``padding_l`` / ``padding_r`` / ``dilates`` are per spatial dim (an int
    applies to all; ``padding_r`` defaults to ``padding_l``; oneDNN dilation: 0 = dense).
    src / weights / dst are created with ``format_tag_any`` unless ``any_format=False``.
    """
    q = dict(src_scales=src_scales, src_scale_mask=src_scale_mask, wei_scales=wei_scales,
             wei_scale_mask=wei_scale_mask, dst_scales=dst_scales, dst_scale_mask=dst_scale_mask,
             src_zp=src_zp, src_zp_mask=src_zp_mask, wei_zp=wei_zp, wei_zp_mask=wei_zp_mask,
             dst_zp=dst_zp, dst_zp_mask=dst_zp_mask)
    return _conv_like("convolution", src, wei, bias, dst_dt, strides, padding_l, padding_r,
                      dilates, post_ops, dst_prev, any_format, return_impl, q)


def deconvolution(src, wei, bias=None, dst_dt="f32", *, strides=None, padding_l=None,
                  padding_r=None, dilates=None, src_scales=None, src_scale_mask=0,
                  wei_scales=None, wei_scale_mask=0, dst_scales=None, dst_scale_mask=0,
                  src_zp=None, src_zp_mask=0, wei_zp=None, wei_zp_mask=0, dst_zp=None,
                  dst_zp_mask=0, post_ops=(), dst_prev=None, any_format=True, return_impl=False):
    """Forward deconvolution, same arguments as :func:`convolution`; weights ``(OC, IC, k...)``,
    output ``(I-1)*S - PL - PR + (K-1)*(D+1) + 1`` per spatial dim."""
    q = dict(src_scales=src_scales, src_scale_mask=src_scale_mask, wei_scales=wei_scales,
             wei_scale_mask=wei_scale_mask, dst_scales=dst_scales, dst_scale_mask=dst_scale_mask,
             src_zp=src_zp, src_zp_mask=src_zp_mask, wei_zp=wei_zp, wei_zp_mask=wei_zp_mask,
             dst_zp=dst_zp, dst_zp_mask=dst_zp_mask)
    return _conv_like("deconvolution", src, wei, bias, dst_dt, strides, padding_l, padding_r,
                      dilates, post_ops, dst_prev, any_format, return_impl, q)


# ----------------------------------------------------------------------------- simple primitives

_CHANNELS_LAST = {3: "nwc", 4: "nhwc", 5: "ndhwc"}


def pooling(x, alg, dst_dt=None, *, kernel, strides=None, dilation=None, padding_l=None,
            padding_r=None, post_ops=(), channels_last=False, return_impl=False):
    """Pooling forward (``"max"``, ``"avg_include_padding"``, ``"avg_exclude_padding"``).

    Plain NC... layout by default (oneDNN picks ``ref:any`` for int8); ``channels_last``
    runs the primitive on nwc / nhwc / ndhwc copies (the jit int8 kernels)."""
    x = as_operand(x)
    nsp = x.ndim - 2
    k, st = _spatial(kernel, nsp, 1), _spatial(strides, nsp, 1)
    pl, dl = _spatial(padding_l, nsp, 0), _spatial(dilation, nsp, 0)
    pr = list(pl) if padding_r is None else _spatial(padding_r, nsp, 0)
    out_sp = [(x.shape[2 + i] + pl[i] + pr[i] - ((k[i] - 1) * (dl[i] + 1) + 1)) // st[i] + 1
              for i in range(nsp)]
    dst_shape, dt = (*x.shape[:2], *out_sp), dt_name(dst_dt or x.dtype)
    with Scope() as s:
        attr = Attr(s).post_ops(post_ops, x.ndim)
        tag = _CHANNELS_LAST[x.ndim] if channels_last else None
        src_md = s.md(x.shape, x.dtype, tag=tag) if tag else s.md_of(x)
        pd = s.pd("dnnl_pooling_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), alg_kind("pooling", alg), src_md,
                  s.md(dst_shape, dt, tag=tag), dims_of(st), dims_of(k), dims_of(dl),
                  dims_of(pl), dims_of(pr), attr.handle)
        dst = np.empty(dst_shape, np_dtype(dt))
        run(s, pd, {A("DNNL_ARG_SRC"): x}, {A("DNNL_ARG_DST"): dst}, attr.exec_args({}))
        return _result(dst, impl_name(pd), return_impl)


def eltwise(x, alg, alpha=0.0, beta=0.0, dst_dt=None, *, return_impl=False):
    """Eltwise forward (alg names as in the post-ops: relu, linear, round, clip_v2, ...)."""
    x = as_operand(x)
    dt = dt_name(dst_dt or x.dtype)
    with Scope() as s:
        pd = s.pd("dnnl_eltwise_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), alg_kind("eltwise", alg), s.md_of(x),
                  s.md(x.shape, dt), float(alpha), float(beta), None)
        dst = np.empty(x.shape, np_dtype(dt))
        run(s, pd, {A("DNNL_ARG_SRC"): x}, {A("DNNL_ARG_DST"): dst})
        return _result(dst, impl_name(pd), return_impl)


def binary(a, b, alg, dst_dt=None, *, src0_scale=None, src1_scale=None, post_ops=(),
           return_impl=False):
    """Binary ``op(a * src0_scale, b * src1_scale)``; ``b`` broadcasts (unit dims prepended)."""
    a, b = as_operand(a), as_operand(b)
    b = broadcast_to_ndims(b, a.ndim)
    dt = dt_name(dst_dt or a.dtype)
    with Scope() as s:
        attr = Attr(s)
        attr.scales(A("DNNL_ARG_SRC_0"), src0_scale, 0)
        attr.scales(A("DNNL_ARG_SRC_1"), src1_scale, 0)
        attr.post_ops(post_ops, a.ndim)
        pd = s.pd("dnnl_binary_primitive_desc_create", s.lib.engine, alg_kind("binary", alg),
                  s.md_of(a), s.md_of(b), s.md(a.shape, dt), attr.handle)
        dst = np.empty(a.shape, np_dtype(dt))
        dims = {A("DNNL_ARG_SRC_0"): a.shape, A("DNNL_ARG_SRC_1"): b.shape}
        run(s, pd, {A("DNNL_ARG_SRC_0"): a, A("DNNL_ARG_SRC_1"): b}, {A("DNNL_ARG_DST"): dst},
            attr.exec_args(dims))
        return _result(dst, impl_name(pd), return_impl)


def _multi_src(srcs):
    srcs = [as_operand(x) for x in srcs]
    if not srcs:
        raise ValueError("at least one source is needed")
    return srcs, (ctypes.c_void_p * len(srcs))()


def sum(srcs, scales=None, dst_dt=None, *, return_impl=False):  # noqa: A001 (oneDNN's name)
    """Sum primitive: ``dst = Σ scales[i] * srcs[i]`` (scales default to 1)."""
    srcs, mds = _multi_src(srcs)
    scales = np.ones(len(srcs), np.float32) if scales is None else \
        np.ascontiguousarray(scales, dtype=np.float32).ravel()
    dt = dt_name(dst_dt or srcs[0].dtype)
    with Scope() as s:
        for i, x in enumerate(srcs):
            mds[i] = s.md_of(x).value
        pd = s.pd("dnnl_sum_primitive_desc_create", s.lib.engine, s.md(srcs[0].shape, dt),
                  len(srcs), scales.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), mds, None)
        dst = np.empty(srcs[0].shape, np_dtype(dt))
        base = A("DNNL_ARG_MULTIPLE_SRC")
        run(s, pd, {base + i: x for i, x in enumerate(srcs)}, {A("DNNL_ARG_DST"): dst})
        return _result(dst, impl_name(pd), return_impl)


def concat(srcs, axis, dst_dt=None, *, scales=None, return_impl=False):
    """Concatenate along ``axis``; ``scales`` (one common scale per input) are runtime
    scales on ``DNNL_ARG_MULTIPLE_SRC + i``."""
    srcs, mds = _multi_src(srcs)
    nd = srcs[0].ndim
    axis = axis % nd
    shape = list(srcs[0].shape)
    shape[axis] = int(np.sum([x.shape[axis] for x in srcs]))
    dt = dt_name(dst_dt or srcs[0].dtype)
    base = A("DNNL_ARG_MULTIPLE_SRC")
    with Scope() as s:
        attr = Attr(s)
        if scales is not None:
            for i, sc in enumerate(np.asarray(scales, np.float32).ravel()):
                attr.scales(base + i, [sc], 0)
        for i, x in enumerate(srcs):
            mds[i] = s.md_of(x).value
        pd = s.pd("dnnl_concat_primitive_desc_create", s.lib.engine, s.md(shape, dt),
                  len(srcs), axis, mds, attr.handle)
        dst = np.empty(shape, np_dtype(dt))
        run(s, pd, {base + i: x for i, x in enumerate(srcs)}, {A("DNNL_ARG_DST"): dst},
            attr.exec_args({}))
        return _result(dst, impl_name(pd), return_impl)


def softmax(x, alg="softmax", axis=-1, dst_dt=None, *, src_scale=None, dst_scale=None,
            return_impl=False):
    """Softmax forward (``"softmax"`` = dnnl_softmax_accurate, ``"logsoftmax"`` = dnnl_softmax_log),
    common runtime scales on src / dst (an int8 dst is ``sat(rne(y / dst_scale))``)."""
    x = as_operand(x)
    dt = dt_name(dst_dt or x.dtype)
    algs = {"softmax": "dnnl_softmax_accurate", "accurate": "dnnl_softmax_accurate",
            "logsoftmax": "dnnl_softmax_log", "log": "dnnl_softmax_log"}
    with Scope() as s:
        attr = Attr(s)
        attr.scales(A("DNNL_ARG_SRC"), src_scale, 0)
        attr.scales(A("DNNL_ARG_DST"), dst_scale, 0)
        pd = s.pd("dnnl_softmax_forward_primitive_desc_create", s.lib.engine,
                  A("dnnl_forward_inference"), A(algs[alg]), s.md_of(x), s.md(x.shape, dt),
                  axis % x.ndim, attr.handle)
        dst = np.empty(x.shape, np_dtype(dt))
        run(s, pd, {A("DNNL_ARG_SRC"): x}, {A("DNNL_ARG_DST"): dst}, attr.exec_args({}))
        return _result(dst, impl_name(pd), return_impl)


__all__ = ["OnednnError", "matmul", "reorder", "gemm_u8s8s32", "gemm_s8s8s32", "inner_product",
           "convolution", "deconvolution", "pooling", "eltwise", "binary", "sum", "concat",
           "softmax"]
