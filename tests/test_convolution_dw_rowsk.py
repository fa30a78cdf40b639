"""The depthwise row kernel for kernel rows of 4 - 16 taps (AVX-512: ukernels/depthwise/
dw_rowsk_avx512.c, MobileNetV3's 5x5 layers): kernel rows outside the source skipped with their
zero-point sums added exactly (u8 / s8 sources, with and without a zero point, and a zero
point the source type cannot hold, which takes the general driver), source rows 1 - 8 with
padding 0 - 2, widths below / at / past a group of four pixels and a 64-pixel tile, strides 1
and 2, channel counts below / at / past 32 and 64 (ymm and zmm, masked and full, two panels),
the post-ops of PP-OCR's classifier (clip + hardswish), relu and none, chains that saturate the
8-bit dst, 1 and 2 threads.
Against oneDNN (numpy's model where oneDNN is not there), on every ISA level."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from test_convolution import Case, assert_same

# (source spatial, kernel, strides, left padding, right padding)
GEOMETRIES = {
    # PP-OCR cls's 5x5 layers: 2 - 6 rows, padding 2, stride 2 along h only
    "cls_h3_s21": ((3, 12), (5, 5), (2, 1), (2, 2), (2, 2)),
    "cls_h2_s11": ((2, 9), (5, 5), (1, 1), (2, 2), (2, 2)),
    "cls_h6_s21": ((6, 7), (5, 5), (2, 1), (2, 2), (2, 2)),
    "h1_w1": ((1, 1), (5, 5), (1, 1), (2, 2), (2, 2)),       # every tap but one in the padding
    "h4_w3_s2": ((4, 3), (5, 5), (2, 2), (2, 2), (2, 2)),
    "h5_nopad": ((5, 13), (5, 5), (1, 1), (0, 0), (0, 0)),
    "h8_pad1": ((8, 17), (5, 5), (1, 2), (1, 1), (1, 2)),     # asymmetric, stride 2 along w
    "h7_wide": ((7, 70), (5, 5), (1, 1), (2, 2), (2, 2)),     # runs past a 64-pixel tile
    "h3_wide_s2": ((3, 133), (5, 5), (2, 2), (2, 2), (1, 2)),
    "w4_kernel": ((5, 8), (3, 4), (1, 1), (1, 2), (1, 1)),
    "w7_kernel": ((6, 20), (5, 7), (1, 2), (2, 3), (2, 3)),
    "w16_kernel": ((2, 40), (1, 16), (1, 1), (0, 8), (0, 7)),
    "1d": ((19,), (5,), (1,), (2,), (2,)),
    "3d": ((3, 4, 10), (2, 3, 5), (1, 1, 2), (1, 1, 2), (0, 1, 2)),
}

CHANNELS = (8, 20, 32, 40, 64, 104)

CLIP_HARDSWISH = [("eltwise", "clip", -7.0, 9.5), ("eltwise", "hardswish", 1 / 6, 0.5)]


def config(name, rng, C):
    """(src_dt, dst_dt, q, post_ops, bias_dt)"""
    ws = rng.uniform(1e-3, 2e-2, C).astype(np.float32)
    base = {"src_scales": [0.05], "wei_scales": ws, "wei_scale_mask": 3, "dst_scales": [0.5]}
    return {
        "cls": ("u8", "u8", dict(base, src_zp=[13], dst_zp=[11]), CLIP_HARDSWISH, "f32"),
        "u8_zp0_hardswish": ("u8", "u8", base, CLIP_HARDSWISH, "f32"),
        "u8_zp_relu": ("u8", "u8", dict(base, src_zp=[200]), [("eltwise", "relu", 0.0, 0.0)],
                       "f32"),
        "s8": ("s8", "s32", {}, [], None),
        "s8_zp": ("s8", "u8", dict(base, src_zp=[-100], dst_zp=[7]), CLIP_HARDSWISH, "f32"),
        # chains that leave the 8-bit range (the clamp before the packs is needed)
        "u8_linear_clamped": ("u8", "u8", {"src_zp": [9]}, [("eltwise", "linear", 1e5, 1.0)],
                              None),
        "s8_dst_relu_linear": ("s8", "s8", {"dst_zp": [-3]}, [("eltwise", "relu", 0.25, 0.0),
                                                              ("eltwise", "linear", 3.0, -2.0)],
                               "f32"),
        # zero points no u8 / s8 byte holds: the general driver's per-tap correction
        "u8_zp_wide": ("u8", "s32", {"src_zp": [-3]}, [], None),
        "s8_zp_wide": ("s8", "s32", {"src_zp": [300]}, [], None),
    }[name]


def reference(c):
    if onednn_ref.available() and onednn_ref.has_vnni():
        return c.run_onednn()
    return c.run_numpy()


def run_case(geometry, name, C, mb, seed):
    isp, k, s, pl, pr = GEOMETRIES[geometry]
    rng = np.random.default_rng(seed)
    src_dt, dst_dt, q, post, bias_dt = config(name, rng, C)
    tag = {3: "nwc", 4: "nhwc", 5: "ndhwc"}[len(isp) + 2]
    c = Case(rng, mb=mb, G=C, ICg=1, OCg=1, isp=isp, k=k, s=s, pl=pl, pr=pr, d=(0,) * len(isp),
             grouped=True, src_dt=src_dt, dst_dt=dst_dt, src_tag=tag, dst_tag=tag, q=q,
             post_ops=post, bias_dt=bias_dt)
    out, p = c.run_dnnq()
    assert p.impl_info.endswith(":dw")
    avx512 = dnnq.get_effective_cpu_isa() in ("avx512_core_vnni", "avx512_core_amx")
    assert (p._impl.name == "dw_rowsk") == avx512, p._impl.name
    assert_same(out, reference(c))


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("name", ["cls", "u8_zp0_hardswish", "u8_zp_relu", "s8", "s8_zp"])
def test_dw_rowsk_geometries(isa, geometry, name):
    for i, C in enumerate(CHANNELS):
        run_case(geometry, name, C, 2 if i % 3 == 1 else 1, [len(geometry), len(name), C])


@pytest.mark.parametrize("name", ["u8_zp_wide", "s8_zp_wide"])
def test_dw_rowsk_zero_point_beyond_the_type(isa, name):
    for geometry in ("cls_h3_s21", "h8_pad1", "3d"):
        for C in (20, 72):
            run_case(geometry, name, C, 1, [len(geometry), len(name), C])


@pytest.mark.parametrize("name", ["u8_linear_clamped", "s8_dst_relu_linear"])
def test_dw_rowsk_saturated_chains(isa, name):
    for geometry in ("cls_h3_s21", "h7_wide", "w7_kernel"):
        for C in (20, 72):
            run_case(geometry, name, C, 1, [len(geometry), len(name), C])


@pytest.mark.parametrize("threads", [1, 2])
def test_dw_rowsk_threads(isa, threads):
    """work items of 64 pixels across output rows, several images and panels"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for geometry in ("cls_h3_s21", "h7_wide", "h3_wide_s2"):
            for C in (88, 200):
                run_case(geometry, "cls", C, 3, [threads, C, len(geometry)])
    finally:
        dnnq.set_num_threads(old)
