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

from ._capi import Scope, as_operand, const, dt_name, impl_name, np_dtype, query_md
from ._attr import run

_DIRECTIONS = ("unidirectional_left2right", "unidirectional_right2left",
               "bidirectional_concat", "bidirectional_sum")


def _direction(name: str) -> int:
    full = name if name in _DIRECTIONS else "unidirectional_" + name
    if full not in _DIRECTIONS:
        raise ValueError(f"unknown direction {name!r}; use one of {_DIRECTIONS}")
    return const("dnnl_" + full)


def _rnn_attr(s: Scope, data_scale, data_shift, wei_scales, wei_scale_mask):
    attr = s.create("dnnl_primitive_attr_create", "dnnl_primitive_attr_destroy")
    s.call("dnnl_primitive_attr_set_rnn_data_qparams", attr, float(data_scale), float(data_shift))
    scales = s.keep(np.ascontiguousarray(np.asarray(wei_scales, np.float32).ravel()))
    s.call("dnnl_primitive_attr_set_rnn_weights_qparams", attr, scales.size, int(wei_scale_mask),
           scales.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    return attr


def _run_rnn(cell, src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias, *, data_scale,
             data_shift, wei_scales, wei_scale_mask, dst_layer_dt, direction, return_impl):
    src_layer = as_operand(src_layer, np.uint8)
    wei_layer, wei_iter = as_operand(wei_layer), as_operand(wei_iter)
    L, D, _, G, H = wei_layer.shape
    T, N, _ = src_layer.shape
    want_scales = 1 if wei_scale_mask == 0 else G * H
    if np.asarray(wei_scales).size != want_scales:
        raise ValueError(f"wei_scale_mask={wei_scale_mask} needs {want_scales} scales")
    concat = direction == "bidirectional_concat"
    dst_layer_shape = (T, N, H * (2 if concat else 1))
    state_shape = (L, D, N, H)
    src_iter = np.zeros(state_shape, np.uint8) if src_iter is None else as_operand(src_iter, np.uint8)
    bias = np.zeros((L, D, G, H), np.float32) if bias is None else as_operand(bias, np.float32)
    inputs = {const("DNNL_ARG_SRC_LAYER"): src_layer, const("DNNL_ARG_SRC_ITER"): src_iter,
              const("DNNL_ARG_BIAS"): bias}
    outputs = {const("DNNL_ARG_DST_LAYER"): np.empty(dst_layer_shape, np_dtype(dst_layer_dt)),
               const("DNNL_ARG_DST_ITER"): np.empty(state_shape, np.uint8)}
    if cell == "lstm":
        src_iter_c = np.zeros(state_shape, np.float32) if src_iter_c is None \
            else as_operand(src_iter_c, np.float32)
        inputs[const("DNNL_ARG_SRC_ITER_C")] = src_iter_c
        outputs[const("DNNL_ARG_DST_ITER_C")] = np.empty(state_shape, np.float32)
    with Scope() as s:
        attr = _rnn_attr(s, data_scale, data_shift, wei_scales, wei_scale_mask)
        md = {arg: s.md_of(a) for arg, a in {**inputs, **outputs}.items()}
        wl_md, wi_md = s.md_any(wei_layer.shape, "s8"), s.md_any(wei_iter.shape, "s8")
        common = [s.lib.engine, const("dnnl_forward_inference"), _direction(direction)]
        if cell == "lstm":
            pd = s.pd("dnnl_lstm_forward_primitive_desc_create", *common,
                      md[const("DNNL_ARG_SRC_LAYER")], md[const("DNNL_ARG_SRC_ITER")],
                      md[const("DNNL_ARG_SRC_ITER_C")], wl_md, wi_md, None, None,
                      md[const("DNNL_ARG_BIAS")], md[const("DNNL_ARG_DST_LAYER")],
                      md[const("DNNL_ARG_DST_ITER")], md[const("DNNL_ARG_DST_ITER_C")], 0, attr)
        else:
            pd = s.pd("dnnl_gru_forward_primitive_desc_create", *common,
                      md[const("DNNL_ARG_SRC_LAYER")], md[const("DNNL_ARG_SRC_ITER")], wl_md, wi_md,
                      md[const("DNNL_ARG_BIAS")], md[const("DNNL_ARG_DST_LAYER")],
                      md[const("DNNL_ARG_DST_ITER")], 0, attr)
        extra = {}
        for arg, w in ((const("DNNL_ARG_WEIGHTS_LAYER"), wei_layer),
                       (const("DNNL_ARG_WEIGHTS_ITER"), wei_iter)):
            packed = s.memory(query_md(pd, arg))
            s.reorder(s.wrap(w), packed, attr)
            extra[arg] = packed
        run(s, pd, inputs, outputs, extra)
        result = tuple(outputs.values())
        return (result, impl_name(pd)) if return_impl else result


def lstm(src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias, *, data_scale, data_shift,
         wei_scales, wei_scale_mask=0, dst_layer_dt="u8", direction="unidirectional_left2right",
         return_impl=False):
    """int8 LSTM inference (gates i, f, c~, o); returns ``(dst_layer, dst_iter, dst_iter_c)``.

    ``src_layer`` / ``src_iter`` u8, ``src_iter_c`` f32 (None = zeros), weights ldigo f32
    (quantized by the reorder) or s8, ``bias`` f32 ldgo; ``dst_layer_dt`` u8 or f32.
    """
    return _run_rnn("lstm", src_layer, src_iter, src_iter_c, wei_layer, wei_iter, bias,
                    data_scale=data_scale, data_shift=data_shift, wei_scales=wei_scales,
                    wei_scale_mask=wei_scale_mask, dst_layer_dt=dt_name(dst_layer_dt),
                    direction=direction, return_impl=return_impl)


def gru(src_layer, src_iter, wei_layer, wei_iter, bias, *, data_scale, data_shift, wei_scales,
        wei_scale_mask=0, dst_layer_dt="u8", direction="unidirectional_left2right",
        return_impl=False):
    """int8 vanilla GRU inference (gates u, r, o); returns ``(dst_layer, dst_iter)``."""
    return _run_rnn("gru", src_layer, src_iter, None, wei_layer, wei_iter, bias,
                    data_scale=data_scale, data_shift=data_shift, wei_scales=wei_scales,
                    wei_scale_mask=wei_scale_mask, dst_layer_dt=dt_name(dst_layer_dt),
                    direction=direction, return_impl=return_impl)
