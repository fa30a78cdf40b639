"""The few-output-channel kernel over kernel rows of adjacent bytes (folded taps, or one tap:
1x1 too; AVX-512 VNNI + VBMI: ukernels/conv_fold_lanes_vbmi.c, PP-OCR's classifier stem and
its 8-channel 1x1 layers): 16 output pixels in the lanes, kernel rows outside the source
skipped with their zero-point products added exactly (u8 / s8 sources, with and without a zero
point, and a zero point the source type cannot hold: its per-tap correction), padding along w
through zero-point bytes around the source row (0 - 3 columns, output pixels wholly in the
padding), widths below / at / past 16 pixels, strides 1 and 2, 1 - 8 output channels, 1 - 8
input channels, 1-D / 2-D / 3-D, the post-ops of the stem (clip + hardswish), relu and none,
u8 / s8 dst, 1 and 2 threads.  Against oneDNN (numpy's model where oneDNN is not there), on
every ISA level (the GEMM paths where the level or the cap has no VBMI)."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from dnnq.primitives import _conv_kernel_choice as conv_mod
from dnnq.primitives import _impls
from test_convolution import Case, assert_same


@pytest.fixture(autouse=True)
def lanes_at_every_size(monkeypatch):
    """the kernel for images of any size (FOLD_LANES_MIN_PIXELS keeps the GEMM paths below 256
    output pixels), no cached primitive"""
    monkeypatch.setattr(conv_mod, "FOLD_LANES_MIN_PIXELS", 1)
    old = dnnq.set_primitive_cache_capacity(0)
    yield
    dnnq.set_primitive_cache_capacity(old)

# (source spatial, kernel, strides, left padding, right padding, input channels)
GEOMETRIES = {
    "cls_stem": ((9, 40), (3, 3), (2, 2), (1, 1), (1, 1), 3),
    "s1_k3": ((5, 33), (3, 3), (1, 1), (1, 1), (1, 1), 3),
    "s1_k5_ic1": ((6, 16), (5, 5), (1, 1), (2, 2), (2, 2), 1),
    "s2_k7_ic2": ((9, 47), (7, 7), (2, 2), (3, 3), (3, 2), 2),   # 15 * 2 * 2 + 16 <= 128
    "large_pad": ((4, 5), (3, 3), (1, 2), (3, 3), (2, 3), 3),    # outputs wholly in padding
    "no_pad_w17": ((3, 19), (3, 3), (1, 1), (0, 0), (0, 0), 4),
    "w1": ((4, 1), (3, 3), (1, 1), (1, 1), (1, 1), 3),
    "1d": ((50,), (5,), (2,), (2,), (1,), 3),
    "3d": ((3, 5, 21), (2, 3, 3), (1, 2, 2), (1, 1, 1), (0, 1, 1), 3),
    # kernel rows of one tap (IC adjacent bytes): 1x1 (the GEMM's otherwise), 3x1
    "1x1_ic8": ((5, 37), (1, 1), (1, 1), (0, 0), (0, 0), 8),
    "1x1_s2_ic4": ((7, 40), (1, 1), (2, 2), (0, 0), (0, 0), 4),
    "3x1_pad": ((6, 18), (3, 1), (1, 1), (1, 2), (1, 1), 5),
}

OCS = (1, 3, 8)

CLIP_HARDSWISH = [("eltwise", "clip", -7.8, 10.3), ("eltwise", "hardswish", 1 / 6, 0.5)]


def config(name, rng, OC):
    """(src_dt, dst_dt, q, post_ops, bias_dt)"""
    ws = rng.uniform(1e-3, 2e-2, OC).astype(np.float32)
    base = {"src_scales": [0.05], "wei_scales": ws, "wei_scale_mask": 1, "dst_scales": [0.25]}
    return {
        "stem": ("u8", "u8", dict(base, src_zp=[128], dst_zp=[9]), CLIP_HARDSWISH, "f32"),
        "u8_relu": ("u8", "u8", base, [("eltwise", "relu", 0.0, 0.0)], "f32"),
        "s8_zp": ("s8", "s8", dict(base, src_zp=[-77], dst_zp=[-5]), CLIP_HARDSWISH, None),
        "u8_plain": ("u8", "u8", {"src_zp": [3]}, [], None),         # saturating
        # zero points no u8 / s8 byte holds: the general driver's per-tap correction
        "u8_zp_wide": ("u8", "u8", dict(base, src_zp=[300]), [], "f32"),
    }[name]


def reference(c):
    if onednn_ref.available() and onednn_ref.has_vnni():
        return c.run_onednn()
    return c.run_numpy()


def run_case(geometry, name, OC, mb, seed):
    isp, k, s, pl, pr, IC = GEOMETRIES[geometry]
    rng = np.random.default_rng(seed)
    src_dt, dst_dt, q, post, bias_dt = config(name, rng, OC)
    tag = {3: "nwc", 4: "nhwc", 5: "ndhwc"}[len(isp) + 2]
    c = Case(rng, mb=mb, G=1, ICg=IC, OCg=OC, isp=isp, k=k, s=s, pl=pl, pr=pr,
             d=(0,) * len(isp), grouped=False, src_dt=src_dt, dst_dt=dst_dt, src_tag=tag,
             dst_tag=tag, q=q, post_ops=post, bias_dt=bias_dt)
    out, p = c.run_dnnq()
    isa = dnnq.get_effective_cpu_isa()
    lanes = isa.startswith("avx512") and _impls.conv_cap(isa)["vbmi"]
    assert (p._impl.name == "fold_lanes") == lanes, p._impl.name
    assert_same(out, reference(c))


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("name", ["stem", "u8_relu", "s8_zp", "u8_plain"])
def test_fold_lanes_geometries(isa, geometry, name):
    for i, OC in enumerate(OCS):
        run_case(geometry, name, OC, 2 if i == 1 else 1, [len(geometry), len(name), OC])


def test_fold_lanes_not_below_min_pixels(isa, monkeypatch):
    monkeypatch.setattr(conv_mod, "FOLD_LANES_MIN_PIXELS", 256)
    isp, k, s, pl, pr, IC = GEOMETRIES["1x1_ic8"]   # 5 x 37 = 185 pixels
    rng = np.random.default_rng(3)
    c = Case(rng, mb=1, G=1, ICg=IC, OCg=8, isp=isp, k=k, s=s, pl=pl, pr=pr, d=(0, 0),
             grouped=False, src_dt="u8", dst_dt="u8", src_tag="nhwc", dst_tag="nhwc")
    out, p = c.run_dnnq()
    assert p._impl.name != "fold_lanes"
    assert_same(out, reference(c))


def test_fold_lanes_zero_point_beyond_the_type(isa):
    isp, k, s, pl, pr, IC = GEOMETRIES["cls_stem"]
    rng = np.random.default_rng(5)
    src_dt, dst_dt, q, post, bias_dt = config("u8_zp_wide", rng, 8)
    c = Case(rng, mb=1, G=1, ICg=IC, OCg=8, isp=isp, k=k, s=s, pl=pl, pr=pr, d=(0, 0),
             grouped=False, src_dt=src_dt, dst_dt=dst_dt, src_tag="nhwc", dst_tag="nhwc", q=q,
             post_ops=post, bias_dt=bias_dt)
    out, _ = c.run_dnnq()
    assert_same(out, reference(c))


@pytest.mark.parametrize("threads", [1, 2])
def test_fold_lanes_threads(isa, threads):
    """work items of whole output rows, several images"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for geometry in ("cls_stem", "3d"):
            run_case(geometry, "stem", 8, 3, [threads, len(geometry)])
    finally:
        dnnq.set_num_threads(old)
