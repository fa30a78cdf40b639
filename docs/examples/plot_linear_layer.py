"""
A quantized linear layer (MatMul)
=================================

A float32 linear layer ``y = relu(x @ w + b)`` run in int8 through :class:`dnnq.MatMul`:
calibrate, quantize the weights per output column, pack once, execute to a u8 output,
dequantize and compare with float32.
"""
import numpy as np

import dnnq
from dnnq import (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS)

rng = np.random.default_rng(0)
M, K, N = 128, 768, 3072                       # a BERT-base feed-forward layer
w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
b = (0.1 * rng.standard_normal(N)).astype(np.float32)


def layer_f32(x):
    return np.maximum(x @ w + b, 0)


def activations(m):
    return rng.standard_normal((m, K)).astype(np.float32)


# calibration: per-tensor u8 activations, per-column s8 weights, u8 output after the ReLU
calib = activations(512)
x_scale, x_zp = dnnq.calibrate.minmax(calib, "u8")
w_scale, _ = dnnq.calibrate.minmax(w, "s8", axis=1, symmetric=True)
y_scale, y_zp = dnnq.calibrate.minmax(layer_f32(calib), "u8")

attr = dnnq.PrimitiveAttr()
attr.set_scales_mask(DNNL_ARG_SRC, 0).set_zero_points_mask(DNNL_ARG_SRC, 0)
attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1 << 1)            # one scale per column N of (K, N)
attr.set_scales_mask(DNNL_ARG_DST, 0).set_zero_points_mask(DNNL_ARG_DST, 0)
attr.set_post_ops(dnnq.PostOps().append_eltwise("relu"))
mm = dnnq.MatMul(dnnq.MemoryDesc((M, K), "u8"), dnnq.MemoryDesc((K, N), "s8"),
                 dnnq.MemoryDesc((M, N), "u8"), dnnq.MemoryDesc((1, N), "f32"), attr=attr)
w_packed = mm.prepare_weights(dnnq.quantize(w, w_scale, 0, "s8", axis=1))   # once

x = activations(M)
y_u8 = mm.execute({DNNL_ARG_SRC: dnnq.quantize(x, x_scale, x_zp, "u8"),
                   DNNL_ARG_WEIGHTS: w_packed, DNNL_ARG_BIAS: b.reshape(1, N),
                   DNNL_ARG_SCALE | DNNL_ARG_SRC: x_scale.reshape(1),
                   DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: x_zp.reshape(1),
                   DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: w_scale,
                   DNNL_ARG_SCALE | DNNL_ARG_DST: y_scale.reshape(1),
                   DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: y_zp.reshape(1)})

y, ref = dnnq.dequantize(y_u8, y_scale, y_zp), layer_f32(x)
rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
print(f"kernel {mm.impl_info}; int8 vs float32: relative error {rel:.4f}, "
      f"max |error| {np.abs(y - ref).max():.4f} (output step {float(y_scale):.4f})")
assert rel < 0.05
