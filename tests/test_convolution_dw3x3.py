"""The 3x3 depthwise column kernel (AVX-512: ukernels/depthwise/dw3x3_avx512.c) and its driver:
stride 1 / 2 along h and w, output rows paired (stride 1 along h) or single (odd heights,
item ends), borders and kernel rows wholly in the padding, widths 1 and 2 and past a 32-column
chunk, channel counts below / at / past 16, 32 and 64 (ymm and zmm, masked and full, two
panels), every epilogue mode: the fused u8 hot case, the fused general case (s8 dst, dst zero
point, source zero point, relu with alpha, linear, chains) and the s32 accumulators handed to
the driver's epilogue (s32 / f32 dst, clip / hardswish / hardsigmoid, sum post-op); 1 and 2
threads (work items of whole rows).  Against oneDNN (numpy's model where oneDNN is not there), on every ISA level."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from test_convolution import Case, assert_same

# (source spatial, strides, left padding, right padding)
GEOMETRIES = {
    "s1_odd_rows": ((9, 13), (1, 1), (1, 1), (1, 1)),    # pairs and a single last row
    "s1_no_pad": ((6, 10), (1, 1), (0, 0), (0, 0)),
    "s1_asym_pad": ((7, 5), (1, 1), (2, 0), (1, 2)),     # a kernel row wholly in the padding
    "s1_large_pad": ((4, 6), (1, 1), (3, 3), (3, 2)),    # output rows wholly in the padding
    "s1_wide": ((3, 70), (1, 1), (1, 1), (1, 1)),        # rows past 32 columns
    "s2": ((11, 12), (2, 2), (1, 1), (1, 1)),
    "s2_odd": ((10, 9), (2, 2), (0, 1), (1, 0)),
    "s2_wide": ((5, 75), (2, 2), (1, 1), (1, 1)),
    "sh1_sw2": ((8, 9), (1, 2), (1, 1), (1, 1)),
    "sh2_sw1": ((9, 8), (2, 1), (1, 1), (1, 1)),
    "w1": ((5, 1), (1, 1), (1, 1), (1, 1)),
    "w2_s2": ((4, 2), (2, 2), (1, 1), (1, 1)),
    "3d_kd1": ((3, 5, 7), (2, 1, 1), (1, 1, 1), (0, 1, 1)),  # planes wholly in the padding
    # MobileNet's small late layers: few rows, many panels (items balanced over threads)
    "s1_14": ((14, 14), (1, 1), (1, 1), (1, 1)),
    "s1_7": ((7, 7), (1, 1), (1, 1), (1, 1)),
    "s2_14": ((14, 14), (2, 2), (1, 1), (1, 1)),
}

CHANNELS = (16, 32, 40, 64, 100)


def config(name, rng, C):
    """(src_dt, dst_dt, q, post_ops, bias_dt, sum_prev) of an epilogue configuration"""
    ws = rng.uniform(1e-3, 2e-2, C).astype(np.float32)
    base = {"src_scales": [0.05], "wei_scales": ws, "wei_scale_mask": 3, "dst_scales": [0.5]}
    relu = [("eltwise", "relu", 0.0, 0.0)]
    return {
        # the fused hot case: u8 dst, per-channel scales, bias, relu, dst scale
        "u8_relu": ("u8", "u8", base, relu, "f32", False),
        "u8_plain": ("u8", "u8", {"wei_scales": ws, "wei_scale_mask": 3}, [], "f32", False),
        "u8_common_no_bias": ("u8", "u8", dict(base, wei_scales=[0.01], wei_scale_mask=0),
                              relu, None, False),
        # the fused general case
        "s8src_zp": ("s8", "u8", dict(base, src_zp=[-9]), relu, "f32", False),
        "u8src_zp": ("u8", "u8", dict(base, src_zp=[37]), relu, "f32", False),
        "u8_dst_zp": ("u8", "u8", dict(base, dst_zp=[7]), relu, "f32", False),
        "s8_dst": ("u8", "s8", dict(base, dst_zp=[-5]), [], "f32", False),
        "s8_chain": ("s8", "s8", base, [("eltwise", "relu", 0.1, 0.0),
                                        ("eltwise", "linear", 1.5, -3.0)], "f32", False),
        "u8_clamped": ("u8", "u8", {}, [("eltwise", "linear", 2.0, 1.0)], None, False),
        # MobileNetV3's post-ops (the tile epilogue's chains)
        "u8_hardswish": ("u8", "u8", dict(base, src_zp=[13], dst_zp=[11]),
                         [("eltwise", "clip", -7.0, 9.5), ("eltwise", "hardswish", 1 / 6, 0.5)],
                         "f32", False),
        "s8_hardsigmoid": ("s8", "s8", dict(base, dst_scales=[0.004]),
                           [("eltwise", "clip_v2", -3.0, 2.5),
                            ("eltwise", "hardsigmoid", 0.2, 0.5)], "f32", False),
        # s32 accumulators through the driver's epilogue
        "s32": ("u8", "s32", {}, [], None, False),
        "f32_sum": ("s8", "f32", dict(base, src_zp=[3]), [("sum", 0.5, 0)], "f32", True),
        "u8_sum": ("u8", "u8", base, [("sum", 1.0, 0)] + relu, "f32", True),
    }[name]


CONFIGS = ("u8_relu", "u8_plain", "u8_common_no_bias", "s8src_zp", "u8src_zp", "u8_dst_zp",
           "s8_dst", "s8_chain", "u8_clamped", "u8_hardswish", "s8_hardsigmoid", "s32",
           "f32_sum", "u8_sum")


def reference(c):
    if onednn_ref.available() and onednn_ref.has_vnni():
        return c.run_onednn()
    return c.run_numpy()


def run_case(geometry, name, C, mb, seed):
    isp, s, pl, pr = GEOMETRIES[geometry]
    rng = np.random.default_rng(seed)
    src_dt, dst_dt, q, post, bias_dt, sum_prev = config(name, rng, C)
    tag = {4: "nhwc", 5: "ndhwc"}[len(isp) + 2]
    k = (1, 3, 3) if len(isp) == 3 else (3, 3)
    c = Case(rng, mb=mb, G=C, ICg=1, OCg=1, isp=isp, k=k, s=s, pl=pl, pr=pr, d=(0,) * len(isp),
             grouped=True, src_dt=src_dt, dst_dt=dst_dt, src_tag=tag, dst_tag=tag, q=q,
             post_ops=post, bias_dt=bias_dt, sum_prev=sum_prev)
    out, p = c.run_dnnq()
    assert p.impl_info.endswith(":dw")
    assert_same(out, reference(c))


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("name", CONFIGS)
def test_dw3x3_geometries(isa, geometry, name):
    for i, C in enumerate(CHANNELS):
        run_case(geometry, name, C, 2 if i % 2 else 1, [len(geometry), len(name), C])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("geometry", ["s1_odd_rows", "s2", "s1_wide", "3d_kd1"])
def test_dw3x3_threads(isa, geometry, threads):
    """work items of whole rows, pairs at item ends, several images and panels"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for C in (64, 136):
            run_case(geometry, "u8_relu", C, 3, [threads, C, len(geometry)])
            run_case(geometry, "s32", C, 3, [threads, C, len(geometry), 1])
    finally:
        dnnq.set_num_threads(old)


@pytest.mark.parametrize("mb", [1, 3])
@pytest.mark.parametrize("geometry", ["s1_14", "s1_7", "s2_14"])
def test_dw3x3_two_threads_many_channels(isa, geometry, mb):
    """small images with many channel panels on 2 threads: items of whole images' rows
    split over panels, balanced over the threads (_conv_kernel_choice.dw_balanced_rows)"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(2)
    try:
        for C in (256, 520):
            run_case(geometry, "u8_relu", C, mb, [mb, C, len(geometry), 2])
            run_case(geometry, "s32", C, mb, [mb, C, len(geometry), 3])
    finally:
        dnnq.set_num_threads(old)
