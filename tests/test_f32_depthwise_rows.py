"""The AVX-512 f32 depthwise kernel by kernel rows (kw 3 / 5 / 7, stride 1 / 2 along w: each
source vector loaded once for every pixel it reaches, kernel rows outside the source left
out) gives the bits of the AVX2 level's kernel, which multiplies tap by tap in the same order:
geometries around its pixel blocks (16, 8, 4, 2, 1) and channel vectors, kernel rows cut by
the padding in h and d, the epilogue fused (f32, u8, s8 dst) or not (a binary post-op), 1 and 2
threads; and the sums within the bound of the exact ones."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SRC_1,
                  DNNL_ARG_ATTR_MULTIPLE_POST_OP)
from dnnq.primitives import _dispatch
from _f32_ref import conv_f64, sum_bound
from _threads import dnnq_threads
from test_f32_layers import quant_attr, quant_args

F32 = np.float32
LEVELS = list(_dispatch.available_isa_levels())
pytestmark = pytest.mark.skipif(
    not any(lv.startswith("avx512") for lv in LEVELS) or "avx2" not in LEVELS,
    reason="needs an AVX-512 level (the row kernel) and the AVX2 level to compare with")

# (channels, source spatial, kernel, strides, pads (left = right), steps - 1 (dilation))
GEOMETRIES = [
    (16, (9, 40), (3, 3), (1, 1), (1, 1), (0, 0)),     # 40 pixels: blocks 16 + 16 + 8
    (17, (5, 23), (3, 3), (1, 1), (1, 1), (0, 0)),     # a 1-channel tail; 23 = 16 + 4 + 2 + 1
    (70, (12, 31), (5, 5), (1, 1), (2, 2), (0, 0)),    # two panels, the second of 6 channels
    (48, (3, 20), (5, 5), (1, 1), (2, 2), (0, 0)),     # every output row cut in h
    (33, (6, 37), (3, 3), (2, 2), (1, 1), (0, 0)),     # stride 2
    (32, (7, 29), (5, 5), (2, 2), (2, 2), (0, 0)),
    (24, (8, 35), (7, 7), (1, 1), (3, 3), (0, 0)),     # kw 7
    (16, (8, 30), (7, 7), (2, 2), (3, 3), (0, 0)),
    (20, (11, 26), (3, 3), (1, 1), (4, 1), (1, 0)),    # dilation in h, padding past a kernel
    (16, (5, 7), (3, 3), (1, 1), (0, 0), (0, 0)),      # no padding: 5 pixels a row
    (64, (4, 5, 19), (3, 3, 3), (1, 1, 1), (1, 1, 1), (0, 0, 0)),  # 3-D: kernel planes cut
    (16, (6, 30), (3, 4), (1, 1), (1, 1), (0, 0)),     # kw 4: the tap kernel (no row variant)
]


def _problem(rng, C, sp, k, s, p, d):
    nsp = len(sp)
    x = rng.standard_normal((1, C) + sp).astype(F32)
    w = (rng.standard_normal((C, 1, 1) + k) * 0.3).astype(F32)
    b = rng.standard_normal(C).astype(F32)
    exact, mag = conv_f64(x, w, s, p, p, d)
    tag = {2: "nhwc", 3: "ndhwc"}[nsp]
    return x, w, b, exact, mag, tag


def _run(x, w, b, exact_shape, tag, s, p, d, chain, dt):
    C = x.shape[1]
    po = PostOps()
    extra = {}
    for i, op in enumerate(chain):
        if op[0] == "binary":
            po.append_binary("add", MD(op[1].shape, "f32"))
            extra[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = op[1]
        elif op[0] == "sum":  # the destination's previous values, in its data type
            po.append_sum(op[1])
            prev = op[2] if dt == "f32" else np.clip(np.rint(op[2] * 20), 0 if dt == "u8"
                                                     else -128, 127 if dt == "s8" else 255)
            prev = np.asarray(prev, {"f32": F32, "u8": np.uint8, "s8": np.int8}[dt])
            extra[DNNL_ARG_DST] = np.moveaxis(np.ascontiguousarray(np.moveaxis(prev, 1, -1)),
                                              -1, 1)
        else:
            po.append_eltwise(*op)
    attr = quant_attr() if dt != "f32" else PrimitiveAttr()
    attr.set_post_ops(po)
    conv = dnnq.Convolution(MD(x.shape, "f32", tag), MD(w.shape, "f32"),
                            MD(exact_shape, dt, tag), MD((C,), "f32"), strides=s,
                            padding_l=p, padding_r=p, dilates=d, attr=attr)
    xt = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)
    args = {DNNL_ARG_SRC: xt, DNNL_ARG_WEIGHTS: conv.prepare_weights(w), DNNL_ARG_BIAS: b,
            **extra}
    if dt != "f32":
        args.update(quant_args(0.05, 7))
    return np.asarray(conv.execute(args)).copy()


@pytest.mark.parametrize("geo", range(len(GEOMETRIES)))
def test_rows_kernel_bits(geo):
    C, sp, k, s, p, d = GEOMETRIES[geo]
    rng = np.random.default_rng(4000 + geo)
    x, w, b, exact, mag, tag = _problem(rng, C, sp, k, s, p, d)
    chans = (1, C) + (1,) * len(sp)
    chains = {
        "none": [],
        "hardswish_affine": [("hardswish", 1 / 6, 0.5), ("linear", 0.5, 0.125)],
        "binary": [("binary", rng.standard_normal(chans).astype(F32)), ("relu", 0.0, 0.0)],
        # a sum between eltwise steps: each pixel's previous destination value
        "sum": [("hardswish", 1 / 6, 0.5), ("sum", 0.75, rng.standard_normal(exact.shape)),
                ("linear", 0.5, 0.125)],
    }
    old = dnnq.set_max_cpu_isa("all")
    try:
        for name, chain in chains.items():
            for dt in ("f32", "u8", "s8") if name not in ("binary", "sum") else ("f32", "u8"):
                outs = {}
                for isa in ("all", "avx2"):
                    dnnq.set_max_cpu_isa(isa)
                    for threads in (1, 2):
                        with dnnq_threads(threads):
                            outs[(isa, threads)] = _run(x, w, b, exact.shape, tag, s, p, d,
                                                        chain, dt)
                ref = outs[("avx2", 1)]
                for key, out in outs.items():
                    assert np.array_equal(out.view(np.uint8), ref.view(np.uint8)), \
                        (name, dt, key)
        dnnq.set_max_cpu_isa("all")
        out = _run(x, w, b, exact.shape, tag, s, p, d, [], "f32")
        full = exact + b.reshape(chans)
        assert np.all(np.abs(out - full) <= sum_bound(mag + np.abs(b).reshape(chans),
                                                      int(np.prod(k))))
    finally:
        dnnq.set_max_cpu_isa(old)
