"""int8 LSTM and GRU inference (oneDNN's legacy RNN quantization).

Data: ``u8 = data_scale * x + data_shift`` (``dnnl_primitive_attr_set_rnn_data_qparams``),
shared by src_layer, src_iter, dst_iter and a u8 dst_layer; src_iter_c / dst_iter_c
and the bias are f32.  Weights: ``s8 = wei_scale * w`` (``set_rnn_weights_qparams``,
mask 0 = common or 24 = per gate and output channel over ldigo, ``G*H`` values).
The primitive's weights use ``format_tag_any``; the user weights (``ldigo``) are
reordered in with a reorder carrying the same attributes: f32 weights are quantized
by that reorder, s8 weights are only packed (both get the s8 compensation computed).
Layouts: src_layer / dst_layer ``(T, N, C)``; src_iter, src_iter_c, dst_iter,
dst_iter_c ``(L, D, N, H)``; weights ``(L, D, C, G, H)``; bias ``(L, D, G, H)``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ._capi import (OnednnError, Scope, as_operand, const, dt_name, impl_name, md_equal,
                    np_dtype, query_md)
from ._attr import run
from . import _rnn_amx_probe

_DIRECTIONS = ("unidirectional_left2right", "unidirectional_right2left",
               "bidirectional_concat", "bidirectional_sum")


def _direction(name: str) -> int:
    full = name if name in _DIRECTIONS else "unidirectional_" + name
    if full not in _DIRECTIONS:
        raise ValueError(f"unknown direction {name!r}; use one of {_DIRECTIONS}")
    return const("dnnl_" + full)


def _rnn_attr(s: Scope, data_scale, data_shift, wei_scales, wei_scale_mask,
              wei_proj_scales=None, wei_proj_mask=0):
    attr = s.create("dnnl_primitive_attr_create", "dnnl_primitive_attr_destroy")
    s.call("dnnl_primitive_attr_set_rnn_data_qparams", attr, float(data_scale), float(data_shift))
    scales = s.keep(np.ascontiguousarray(np.asarray(wei_scales, np.float32).ravel()))
    s.call("dnnl_primitive_attr_set_rnn_weights_qparams", attr, scales.size, int(wei_scale_mask),
           scales.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    if wei_proj_scales is not None:
        ps = s.keep(np.ascontiguousarray(np.asarray(wei_proj_scales, np.float32).ravel()))
        s.call("dnnl_primitive_attr_set_rnn_weights_projection_qparams", attr, ps.size,
               int(wei_proj_mask), ps.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    return attr


def _prepare(s, cell, src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias, *, data_scale,
             data_shift, wei_scales, wei_scale_mask, dst_layer_dt, direction,
             absent_states=False, wei_peephole=None, wei_projection=None, wei_proj_scales=None,
             wei_proj_mask=0):
    """Create the primitive descriptor in scope ``s`` and reorder the weights in; returns
    (pd, inputs, outputs, extra memories).  LSTM only: ``wei_peephole`` f32 (L, D, 3, H)
    (ldgo, gates i, f, o) and ``wei_projection`` s8 (L, D, H, P) (ldio) with its scales
    ``wei_proj_scales`` (mask 0: one value, 8: P values); the projected h (P channels) is
    dst_layer, dst_iter and the src_iter of the next step."""
    src_layer = as_operand(src_layer, np.uint8)
    wei_layer, wei_iter = as_operand(wei_layer), as_operand(wei_iter)
    L, D, _, G, H = wei_layer.shape
    T, N, _ = src_layer.shape
    want_scales = 1 if wei_scale_mask == 0 else G * H
    if np.asarray(wei_scales).size != want_scales:
        raise ValueError(f"wei_scale_mask={wei_scale_mask} needs {want_scales} scales")
    concat = direction == "bidirectional_concat"
    if wei_projection is not None:
        wei_projection = as_operand(wei_projection)
        if wei_proj_scales is None:
            raise ValueError("wei_projection needs wei_proj_scales")
    P = H if wei_projection is None else wei_projection.shape[3]
    dst_layer_shape = (T, N, P * (2 if concat else 1))
    state_shape = (L, D, N, P)
    c_state_shape = (L, D, N, H)
    # absent_states: a missing src_iter / src_iter_c is not passed at all (oneDNN then starts
    # from the quantized 0.0, saturate(rne(shift)), and c = 0); otherwise it is u8 / f32 zeros
    no_iter = absent_states and src_iter is None
    no_iter_c = absent_states and src_iter_c is None
    src_iter = np.zeros(state_shape, np.uint8) if src_iter is None else as_operand(src_iter, np.uint8)
    bias = np.zeros((L, D, G, H), np.float32) if bias is None else as_operand(bias, np.float32)
    inputs = {const("DNNL_ARG_SRC_LAYER"): src_layer, const("DNNL_ARG_SRC_ITER"): src_iter,
              const("DNNL_ARG_BIAS"): bias}
    outputs = {const("DNNL_ARG_DST_LAYER"): np.empty(dst_layer_shape, np_dtype(dst_layer_dt)),
               const("DNNL_ARG_DST_ITER"): np.empty(state_shape, np.uint8)}
    if cell == "lstm":
        src_iter_c = np.zeros(c_state_shape, np.float32) if src_iter_c is None \
            else as_operand(src_iter_c, np.float32)
        inputs[const("DNNL_ARG_SRC_ITER_C")] = src_iter_c
        outputs[const("DNNL_ARG_DST_ITER_C")] = np.empty(c_state_shape, np.float32)
        if wei_peephole is not None:
            inputs[const("DNNL_ARG_WEIGHTS_PEEPHOLE")] = as_operand(wei_peephole, np.float32)
    attr = _rnn_attr(s, data_scale, data_shift, wei_scales, wei_scale_mask, wei_proj_scales,
                     wei_proj_mask)
    if no_iter:
        del inputs[const("DNNL_ARG_SRC_ITER")]
    if cell == "lstm" and no_iter_c:
        del inputs[const("DNNL_ARG_SRC_ITER_C")]
    md = {arg: s.md_of(a) for arg, a in {**inputs, **outputs}.items()}
    md.setdefault(const("DNNL_ARG_SRC_ITER"), None)
    md.setdefault(const("DNNL_ARG_SRC_ITER_C"), None)
    wl_md, wi_md = s.md_any(wei_layer.shape, "s8"), s.md_any(wei_iter.shape, "s8")
    common = [s.lib.engine, const("dnnl_forward_inference"), _direction(direction)]
    wpr_md = None if wei_projection is None else s.md_any(wei_projection.shape, "s8")
    if cell == "lstm":
        pd = s.pd("dnnl_lstm_forward_primitive_desc_create", *common,
                  md[const("DNNL_ARG_SRC_LAYER")], md[const("DNNL_ARG_SRC_ITER")],
                  md[const("DNNL_ARG_SRC_ITER_C")], wl_md, wi_md,
                  md.get(const("DNNL_ARG_WEIGHTS_PEEPHOLE")), wpr_md,
                  md[const("DNNL_ARG_BIAS")], md[const("DNNL_ARG_DST_LAYER")],
                  md[const("DNNL_ARG_DST_ITER")], md[const("DNNL_ARG_DST_ITER_C")], 0, attr)
    else:
        pd = s.pd("dnnl_gru_forward_primitive_desc_create", *common,
                  md[const("DNNL_ARG_SRC_LAYER")], md[const("DNNL_ARG_SRC_ITER")], wl_md, wi_md,
                  md[const("DNNL_ARG_BIAS")], md[const("DNNL_ARG_DST_LAYER")],
                  md[const("DNNL_ARG_DST_ITER")], 0, attr)
    extra = {}
    weights = [(const("DNNL_ARG_WEIGHTS_LAYER"), wei_layer),
               (const("DNNL_ARG_WEIGHTS_ITER"), wei_iter)]
    if wei_projection is not None:
        weights.append((const("DNNL_ARG_WEIGHTS_PROJECTION"), wei_projection))
    for arg, w in weights:
        packed = s.memory(query_md(pd, arg))
        s.reorder(s.wrap(w), packed, attr)
        extra[arg] = packed
    return pd, inputs, outputs, extra


def _refuse_faulting_amx(pd):
    """oneDNN 3.2's AMX LSTM dies with SIGILL on some hosts (``_rnn_amx_probe``): refuse its AMX
    kernels there, as oneDNN refuses a problem, rather than lose the process."""
    impl = impl_name(pd)
    if "amx" in impl and _rnn_amx_probe.faults():
        raise OnednnError(
            "unimplemented", "dnnl_primitive_create",
            message=f"oneDNN 3.2 chose {impl}, whose int8 LSTM dies with SIGILL on this host; "
                    f"cap oneDNN below AMX: ONEDNN_MAX_CPU_ISA={_rnn_amx_probe.SAFE_CAP}")


def _run_rnn(cell, *arrays, return_impl, **kw):
    with Scope() as s:
        pd, inputs, outputs, extra = _prepare(s, cell, *arrays, **kw)
        _refuse_faulting_amx(pd)
        run(s, pd, inputs, outputs, extra)
        result = tuple(outputs.values())
        return (result, impl_name(pd)) if return_impl else result


class RnnHandle:
    """A oneDNN int8 LSTM / GRU primitive with every memory bound once (as a C++ caller runs
    it, for timing); ``execute()`` runs it and returns the outputs.  ``cell`` is "lstm" or
    "gru"; the other arguments are those of :func:`lstm` / :func:`gru` (src_iter_c None for
    GRU)."""

    def __init__(self, cell, src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias, **kw):
        kw.setdefault("dst_layer_dt", "u8")
        kw["dst_layer_dt"] = dt_name(kw["dst_layer_dt"])
        kw.setdefault("direction", "unidirectional_left2right")
        kw.setdefault("wei_scale_mask", 0)
        self.scope = s = Scope()
        pd, inputs, outputs, extra = _prepare(s, cell, src_layer, src_iter, src_iter_c,
                                              wei_layer, wei_iter, bias, **kw)
        _refuse_faulting_amx(pd)
        self.impl = impl_name(pd)
        args = dict(extra)
        for arg, a in list(inputs.items()) + list(outputs.items()):
            user = s.wrap(a)
            if not md_equal(s.mem_md(user), query_md(pd, arg)):
                raise ValueError(f"RnnHandle: argument {arg} needs a layout change")
            args[arg] = user
        self.outputs = tuple(outputs.values())
        self.prim = s.primitive(pd)
        self.args = args

    def execute(self):
        self.scope.execute(self.prim, self.args)
        return self.outputs

    def close(self):
        self.scope.__exit__(None, None, None)


def lstm(src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias, *, data_scale, data_shift,
         wei_scales, wei_scale_mask=0, dst_layer_dt="u8", direction="unidirectional_left2right",
         return_impl=False, absent_states=False, wei_peephole=None, wei_projection=None,
         wei_proj_scales=None, wei_proj_mask=0):
    """int8 LSTM inference (gates i, f, c~, o); returns ``(dst_layer, dst_iter, dst_iter_c)``.

    ``src_layer`` / ``src_iter`` u8, ``src_iter_c`` f32 (None = zeros), weights ldigo f32
    (quantized by the reorder) or s8, ``bias`` f32 ldgo; ``dst_layer_dt`` u8 or f32.
    Optional: ``wei_peephole`` f32 ldgo (L, D, 3, H) (oneDNN 3.2 refuses it with int8 data),
    ``wei_projection`` s8 ldio (L, D, H, P) with ``wei_proj_scales`` (``wei_proj_mask`` 0 or
    8 = per output channel; set by ``set_rnn_weights_projection_qparams``): LSTMP, whose
    dst_layer / src_iter / dst_iter have P channels.
    """
    return _run_rnn("lstm", src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias,
                    data_scale=data_scale, data_shift=data_shift, wei_scales=wei_scales,
                    wei_scale_mask=wei_scale_mask, dst_layer_dt=dt_name(dst_layer_dt),
                    direction=direction, return_impl=return_impl,
                    absent_states=absent_states, wei_peephole=wei_peephole,
                    wei_projection=wei_projection, wei_proj_scales=wei_proj_scales,
                    wei_proj_mask=wei_proj_mask)


def gru(src_layer, src_iter, wei_layer, wei_iter, bias, *, data_scale, data_shift, wei_scales,
        wei_scale_mask=0, dst_layer_dt="u8", direction="unidirectional_left2right",
        return_impl=False, absent_states=False):
    """int8 vanilla GRU inference (gates u, r, o); returns ``(dst_layer, dst_iter)``."""
    return _run_rnn("gru", src_layer, src_iter, None, wei_layer, wei_iter, bias,
                    data_scale=data_scale, data_shift=data_shift, wei_scales=wei_scales,
                    wei_scale_mask=wei_scale_mask, dst_layer_dt=dt_name(dst_layer_dt),
                    direction=direction, return_impl=return_impl,
                    absent_states=absent_states)


def int8_support(cell, *, peephole=False, projection=False):
    """Whether oneDNN creates an int8 (u8 data, s8 weights) forward-inference primitive for
    ``cell`` ("lstm", "gru", "lbr_gru", "vanilla_rnn"), optionally an LSTM with peepholes
    (f32, the only type the API takes) or a projection (s8): the implementation name, or None
    for ``dnnl_unimplemented``."""
    T, N, C, H = 3, 2, 16, 16
    G = {"lstm": 4, "gru": 3, "lbr_gru": 3, "vanilla_rnn": 1}[cell]
    with Scope() as s:
        attr = _rnn_attr(s, 64.0, 128.0, np.array([100.0], np.float32), 0)
        if projection:
            one = s.keep(np.array([100.0], np.float32))
            s.call("dnnl_primitive_attr_set_rnn_weights_projection_qparams", attr, 1, 0,
                   one.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        st, stc = s.md((1, 1, N, H), "u8"), s.md((1, 1, N, H), "f32")
        src, dst = s.md((T, N, C), "u8"), s.md((T, N, H), "u8")
        wl, wi = s.md_any((1, 1, C, G, H), "s8"), s.md_any((1, 1, H, G, H), "s8")
        bias = s.md((1, 1, G + (cell == "lbr_gru"), H), "f32")
        common = [s.lib.engine, const("dnnl_forward_inference"),
                  _direction("unidirectional_left2right")]
        try:
            if cell == "lstm":
                wp = s.md((1, 1, 3, H), "f32") if peephole else None
                wpr = s.md_any((1, 1, H, H), "s8") if projection else None
                pd = s.pd("dnnl_lstm_forward_primitive_desc_create", *common, src, st, stc, wl,
                          wi, wp, wpr, bias, dst, st, stc, 0, attr)
            elif cell == "vanilla_rnn":
                pd = s.pd("dnnl_vanilla_rnn_forward_primitive_desc_create", *common[:2],
                          const("dnnl_eltwise_tanh"), common[2], src, st, wl, wi, bias, dst, st, 0,
                          ctypes.c_float(0.0), ctypes.c_float(0.0), attr)
            else:
                pd = s.pd(f"dnnl_{cell}_forward_primitive_desc_create", *common, src, st, wl, wi,
                          bias, dst, st, 0, attr)
        except OnednnError as e:
            if "unimplemented" in str(e):
                return None
            raise
        return impl_name(pd)
