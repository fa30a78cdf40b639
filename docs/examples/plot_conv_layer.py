"""
A quantized convolution layer
=============================

A float32 3x3 convolution with a bias and a ReLU, run in int8: calibrate the activations,
quantize the weights per output channel, pack them once, execute, dequantize, and compare with
the float32 layer.  The data is channels-last (``nhwc``), the layout the fast kernels read
without a copy.
"""
import numpy as np

import dnnq
from dnnq import (DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS)

rng = np.random.default_rng(0)
N, IC, OC, H, W, K = 2, 32, 64, 28, 28, 3

# %%
# The float32 layer
# -----------------
# Weights ``(OC, IC, KH, KW)`` as a framework stores them, a bias, and a reference
# implementation in numpy (``y = relu(conv(x, w) + b)``, stride 1, padding 1).

w = (rng.standard_normal((OC, IC, K, K)) / np.sqrt(IC * K * K)).astype(np.float32)
b = (0.1 * rng.standard_normal(OC)).astype(np.float32)


def conv_f32(x):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (K, K), axis=(2, 3))  # N C H W K K
    return np.maximum(np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
                      + b[None, :, None, None], 0)


def images(n):
    """Stand-in activations: non-negative with a long tail, as after a ReLU."""
    return np.abs(rng.standard_normal((n, IC, H, W))).astype(np.float32) ** 1.5


# %%
# Calibration
# -----------
# Scales and zero points from a few representative batches: the source asymmetric u8 per
# tensor, the weights symmetric s8 per output channel, the destination u8 from the float32
# layer's outputs on the same batches.

calib = images(8)
x_scale, x_zp = dnnq.calibrate.minmax(calib, "u8")
w_scale, _ = dnnq.calibrate.minmax(w, "s8", axis=0, symmetric=True)
y_scale, y_zp = dnnq.calibrate.minmax(conv_f32(calib), "u8")
print(f"source scale {float(x_scale):.4g} zero point {int(x_zp)}; "
      f"destination scale {float(y_scale):.4g} zero point {int(y_zp)}")

# %%
# The int8 primitive
# ------------------
# The attribute declares which arguments have scales and zero points (the values come at
# execution) and the ReLU post-op.  Descriptors take the logical dims ``(N, C, H, W)``;
# ``tag="nhwc"`` says the memory is channels-last.

attr = dnnq.PrimitiveAttr()
attr.set_scales_mask(DNNL_ARG_SRC, 0).set_zero_points_mask(DNNL_ARG_SRC, 0)
attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1 << 0)           # one scale per output channel
attr.set_scales_mask(DNNL_ARG_DST, 0).set_zero_points_mask(DNNL_ARG_DST, 0)
attr.set_post_ops(dnnq.PostOps().append_eltwise("relu"))

conv = dnnq.Convolution(
    dnnq.MemoryDesc((N, IC, H, W), "u8", tag="nhwc"),
    dnnq.MemoryDesc((OC, IC, K, K), "s8"),
    dnnq.MemoryDesc((N, OC, H, W), "u8", tag="nhwc"),
    dnnq.MemoryDesc((OC,), "f32"),
    strides=1, padding_l=1, padding_r=1, attr=attr)
print("kernel:", conv.impl_info)

w_packed = conv.prepare_weights(dnnq.quantize(w, w_scale, 0, "s8", axis=0))   # once

# %%
# Execute and compare
# -------------------
# Quantize a new batch (its channels-last memory seen through the logical ``N, C, H, W``
# view), run, dequantize the u8 output and compare with the float32 layer.

x = images(N)
x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
x_u8 = dnnq.quantize(x_nhwc, x_scale, x_zp, "u8").transpose(0, 3, 1, 2)
y_u8 = conv.execute({
    DNNL_ARG_SRC: x_u8, DNNL_ARG_WEIGHTS: w_packed, DNNL_ARG_BIAS: b,
    DNNL_ARG_SCALE | DNNL_ARG_SRC: x_scale.reshape(1),
    DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: x_zp.reshape(1),
    DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: w_scale,
    DNNL_ARG_SCALE | DNNL_ARG_DST: y_scale.reshape(1),
    DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: y_zp.reshape(1)})

y = dnnq.dequantize(y_u8, y_scale, y_zp)
ref = conv_f32(x)
rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
cos = float(np.sum(y * ref) / (np.linalg.norm(y) * np.linalg.norm(ref)))
print(f"int8 vs float32: relative error {rel:.4f}, cosine {cos:.5f}, "
      f"max |error| {np.abs(y - ref).max():.4f} (output step {float(y_scale):.4f})")
assert rel < 0.05
