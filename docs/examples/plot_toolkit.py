"""
Quantize, pool and add in int8 (the toolkit)
============================================

The element-wise primitives on quantized activations: quantize float32 data to u8, average-pool
it in int8, add a residual with its own scale, dequantize, and compare each step with float32.
"""
import numpy as np

import dnnq
from dnnq import DNNL_ARG_SRC, DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST, DNNL_ARG_SCALE

rng = np.random.default_rng(0)
N, C, H, W = 2, 64, 28, 28
x = np.abs(rng.standard_normal((N, C, H, W))).astype(np.float32)       # after a ReLU

# quantize per tensor: x = scale * (q - zp); after a ReLU the zero point is 0
scale, zp = dnnq.calibrate.minmax(x, "u8")
x_u8 = dnnq.quantize(x, scale, zp, "u8")
err = np.abs(dnnq.dequantize(x_u8, scale, zp) - x).max()
print(f"quantize: scale {float(scale):.4g}, max |error| {err:.4g} (half a step: {float(scale) / 2:.4g})")

# 2x2 average pooling in int8: the u8 output has the input's scale (rne(sum / 4))
pool = dnnq.Pooling("avg_include_padding", dnnq.MemoryDesc((N, C, H, W), "u8"),
                    dnnq.MemoryDesc((N, C, H // 2, W // 2), "u8"), strides=2, kernel=2)
p_u8 = pool.execute({DNNL_ARG_SRC: x_u8})
ref = x.reshape(N, C, H // 2, 2, W // 2, 2).mean(axis=(3, 5))
err = np.abs(dnnq.dequantize(p_u8, scale, zp) - ref).max()
print(f"pooling ({pool.impl_info}): max |error| against float32 {err:.4g}")

# residual addition of two int8 tensors with different scales, to an f32 destination
r = rng.standard_normal(p_u8.shape).astype(np.float32)
r_scale, _ = dnnq.calibrate.minmax(r, "s8", symmetric=True)
r_s8 = dnnq.quantize(r, r_scale, 0, "s8")
attr = dnnq.PrimitiveAttr()
attr.set_scales_mask(DNNL_ARG_SRC_0, 0).set_scales_mask(DNNL_ARG_SRC_1, 0)
add = dnnq.Binary("add", dnnq.MemoryDesc(p_u8.shape, "u8"), dnnq.MemoryDesc(r.shape, "s8"),
                  dnnq.MemoryDesc(r.shape, "f32"), attr=attr)
y = add.execute({DNNL_ARG_SRC_0: p_u8, DNNL_ARG_SRC_1: r_s8,
                 DNNL_ARG_SCALE | DNNL_ARG_SRC_0: scale.reshape(1),
                 DNNL_ARG_SCALE | DNNL_ARG_SRC_1: r_scale.reshape(1)})
rel = np.linalg.norm(y - (ref + r)) / np.linalg.norm(ref + r)
print(f"pooling + residual, int8 vs float32: relative error {rel:.4f}")
assert rel < 0.02
