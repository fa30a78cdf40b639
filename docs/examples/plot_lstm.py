"""
An LSTM from float32 weights
============================

A float32 LSTM layer, with its weights in PyTorch's layout (``weight_ih (4H, C)``,
``weight_hh (4H, H)``, gates i, f, g, o), run in int8 through :class:`dnnq.LSTM`: convert the
weights to oneDNN's ``ldigo`` layout, choose the quantization parameters, pack once, execute,
and compare the hidden states with the float32 LSTM.
"""
import numpy as np

import dnnq
from dnnq import (DNNL_ARG_SRC_LAYER, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                  DNNL_ARG_BIAS, DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C)

rng = np.random.default_rng(0)
T, N, C, H = 20, 4, 64, 96

# %%
# The float32 LSTM
# ----------------
# PyTorch's equations, in numpy: ``gates = W_ih x + b_ih + W_hh h + b_hh``;
# ``i, f, o = sigmoid``; ``g = tanh``; ``c = f c + i g``; ``h = o tanh(c)``.

k = 1 / np.sqrt(H)
w_ih = rng.uniform(-k, k, (4 * H, C)).astype(np.float32)
w_hh = rng.uniform(-k, k, (4 * H, H)).astype(np.float32)
b_ih = rng.uniform(-k, k, 4 * H).astype(np.float32)
b_hh = rng.uniform(-k, k, 4 * H).astype(np.float32)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_f32(x):
    h = np.zeros((x.shape[1], H), np.float32)
    c = np.zeros_like(h)
    out = []
    for t in range(x.shape[0]):
        g = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, gg, o = np.split(g, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out), h, c


# %%
# oneDNN's layout
# ---------------
# dnnq takes oneDNN's layouts: weights ``ldigo`` ``(layers, directions, input, gates,
# hidden)`` and bias ``ldgo``.  The gate order (i, f, c~, o) is PyTorch's (i, f, g, o), and
# oneDNN has one bias per gate (PyTorch's two add up).

wl = w_ih.reshape(4, H, C).transpose(2, 0, 1)[None, None]   # (1, 1, C, 4, H)
wi = w_hh.reshape(4, H, H).transpose(2, 0, 1)[None, None]   # (1, 1, H, 4, H)
bias = (b_ih + b_hh).reshape(1, 1, 4, H)

# %%
# Quantization parameters
# -----------------------
# oneDNN's RNN model has one data quantization ``u8 = scale * x + shift`` for the input and
# the hidden state (fed back every step), and one weights scale per gate and channel
# (``s8 = wscale * w``) shared by the input and recurrent weights.  The data range covers the
# inputs and the hidden state's [-1, 1].

x_calib = rng.standard_normal((T, 16, C)).astype(np.float32).clip(-3, 3) / 3
scale, shift = dnnq.calibrate.rnn_data_qparams(np.concatenate([x_calib.ravel(), [-1, 1]]))
mask, wscales = dnnq.calibrate.rnn_weights_qparams(np.concatenate([wl, wi], axis=2))
print(f"data: u8 = {scale:.4g} x + {shift:g}; weights: {wscales.size} scales "
      f"(mask {mask}), from {wscales.min():.4g} to {wscales.max():.4g}")

attr = dnnq.PrimitiveAttr()
attr.set_rnn_data_qparams(scale, shift)
attr.set_rnn_weights_qparams(mask, wscales)
ws = wscales.reshape(4, H)
wl_s8 = np.clip(np.rint(wl * ws), -127, 127).astype(np.int8)
wi_s8 = np.clip(np.rint(wi * ws), -127, 127).astype(np.int8)

# %%
# The primitive
# -------------
# f32 mode: the source and the outputs are f32, dnnq quantizes the input with the data
# parameters and returns the dequantized hidden states (the cell state is f32 throughout).

md = dnnq.MemoryDesc
lstm = dnnq.LSTM("unidirectional_left2right",
                 md((T, N, C), "f32"), None, None,                     # x, no initial states
                 md((1, 1, C, 4, H), "s8"), md((1, 1, H, 4, H), "s8"), md((1, 1, 4, H), "f32"),
                 md((T, N, H), "f32"), md((1, 1, N, H), "f32"), md((1, 1, N, H), "f32"),
                 attr=attr)
print("kernel:", lstm.impl_info)
packed = lstm.prepare_weights({DNNL_ARG_WEIGHTS_LAYER: wl_s8, DNNL_ARG_WEIGHTS_ITER: wi_s8})

# %%
# Execute and compare
# -------------------

x = rng.standard_normal((T, N, C)).astype(np.float32).clip(-3, 3) / 3
out = lstm.execute({DNNL_ARG_SRC_LAYER: x, DNNL_ARG_BIAS: bias, **packed})
ref_seq, ref_h, ref_c = lstm_f32(x)
for key, ref, what in ((DNNL_ARG_DST_LAYER, ref_seq, "hidden states, every step"),
                       (DNNL_ARG_DST_ITER, ref_h, "last hidden state"),
                       (DNNL_ARG_DST_ITER_C, ref_c, "last cell state")):
    got = out[key].reshape(ref.shape)
    err = np.abs(got - ref).max()
    rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    print(f"{what:<26s} int8 vs float32: max |error| {err:.4f}, relative {rel:.4f}")
assert np.abs(out[DNNL_ARG_DST_LAYER] - ref_seq).max() < 0.05
