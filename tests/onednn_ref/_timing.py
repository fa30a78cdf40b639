"""Create-once / execute-many handles on oneDNN primitives, for benchmarks that time oneDNN
and dnnq in the same process (creation and weight reorders excluded, as in benchdnn)."""
from __future__ import annotations

import numpy as np

from ._attr import broadcast_to_ndims, prefilled_dst
from ._capi import Scope, as_operand, const, dt_name, impl_name, md_equal, query_md
from ._primitives import _bias, _quant_attr


class MatmulHandle:
    """A oneDNN matmul primitive with its memories bound; `execute()` runs it once."""

    def __init__(self, src, wei, bias=None, dst_dt="s8", *, post_ops=(), **q):
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
        self.dst = prefilled_dst(dst_shape, dt, None, attr.sum_dt)
        pd = s.pd("dnnl_matmul_primitive_desc_create", s.lib.engine, s.md_of(src),
                  s.md_any(wei.shape, wei.dtype), None if bias is None else s.md_of(bias),
                  s.md(dst_shape, dt), attr.handle)
        self.impl = impl_name(pd)
        args = dict(attr.exec_args({const("DNNL_ARG_SRC"): src.shape,
                                    const("DNNL_ARG_WEIGHTS"): wei.shape,
                                    const("DNNL_ARG_DST"): dst_shape}))
        arrays = {const("DNNL_ARG_SRC"): src, const("DNNL_ARG_WEIGHTS"): wei,
                  const("DNNL_ARG_DST"): self.dst}
        if bias is not None:
            arrays[const("DNNL_ARG_BIAS")] = bias
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
        self.scope.execute(self.prim, self.args)
        return self.dst

    def close(self):
        self.scope.__exit__(None, None, None)
