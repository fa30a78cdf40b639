"""The stem kernel (ukernels/conv_stem_avx512.c: few input channels, the whole kernel window of
a pixel as one reduction, AVX-512 VNNI; its rows built by byte permutes with AVX512-VBMI):
against oneDNN (numpy's model where oneDNN is not there) on every ISA level (the tiled path
below the AVX-512 levels: the same bits).  Swept: 1, 3, 4 input channels; 8 - 64 output
channels (the 16-channel loop and the micro-kernel's panels); widths below, at and past the
16-pixel loop, the VBMI groups and the 256-pixel row blocks; strides 1 and 2; paddings 0, 1
and 3 (7x7); u8 and s8 sources with and without a zero point (padding read as zero-point
bytes), a zero point the source type cannot hold (per-tap correction), a post-op chain, a
sum, a binary post-op; 1, 2 and 3 threads."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from dnnq.primitives import _impls
from test_convolution import Case, assert_same


pytestmark = pytest.mark.usefixtures("no_primitive_cache")


def reference(c):
    if onednn_ref.available() and onednn_ref.has_vnni():
        return c.run_onednn()
    return c.run_numpy()


CLIP_HARDSWISH = [("eltwise", "clip", -4.96, 4.77), ("eltwise", "hardswish", 1 / 6, 0.5)]


def quant(rng, OC, kind):
    """(src_dt, dst_dt, q, post_ops, bias_dt, sum_prev)"""
    ws = rng.uniform(1e-3, 2e-2, OC).astype(np.float32)
    base = {"src_scales": [0.0078], "wei_scales": ws, "wei_scale_mask": 1, "dst_scales": [0.06]}
    return {
        # PP-OCRv4's detector stem: src / dst zero point 128, no post-op
        "det": ("u8", "u8", dict(base, src_zp=[128], dst_zp=[128]), [], None, False),
        "u8_chain": ("u8", "u8", dict(base, src_zp=[128], dst_zp=[9]), CLIP_HARDSWISH, "f32",
                     False),
        "u8_plain": ("u8", "u8", base, [("eltwise", "relu", 0.0, 0.0)], "f32", False),
        "s8_zp": ("s8", "s8", dict(base, src_zp=[-77], dst_zp=[-5]), [], None, False),
        "s8_chain": ("s8", "u8", base, CLIP_HARDSWISH, "f32", False),
        "u8_sum": ("u8", "u8", dict(base, src_zp=[3]), [("sum", 0.5, 0)], None, True),
        "s32": ("u8", "s32", {"src_zp": [7]}, [], None, False),
        # zero points no u8 byte holds: the per-tap correction of the padded taps
        "u8_zp_wide": ("u8", "u8", dict(base, src_zp=[300]), [], "f32", False),
    }[kind]


def run(rng, IC, OC, isp, k, s, p, kind, mb=1, expect=True):
    src_dt, dst_dt, q, post, bias_dt, sum_prev = quant(rng, OC, kind)
    c = Case(rng, mb=mb, G=1, ICg=IC, OCg=OC, isp=isp, k=k, s=s, pl=p, pr=p,
             d=(0,) * len(isp), grouped=False, src_dt=src_dt, dst_dt=dst_dt,
             src_tag="nhwc", dst_tag="nhwc", q=q, post_ops=post, bias_dt=bias_dt,
             sum_prev=sum_prev)
    out, prim = c.run_dnnq()
    isa = dnnq.get_effective_cpu_isa()
    if expect and isa.startswith("avx512"):
        want = "stem_vbmi" if _impls.conv_cap(isa)["vbmi"] and IC * k[1] * k[0] <= 32 else "stem"
        assert prim._impl.name == want, (prim._impl.name, want)
    assert_same(out, reference(c))
    return prim


# (input channels, output channels, source (h, w), kernel, strides, padding, quantization)
CASES = [
    (3, 16, (23, 61), (3, 3), (2, 2), (1, 1), "det"),        # the detector stem, small
    (3, 16, (9, 535), (3, 3), (2, 2), (1, 1), "det"),        # rows past a 256-pixel block
    (3, 16, (11, 33), (3, 3), (2, 2), (1, 1), "u8_chain"),
    (3, 16, (7, 34), (3, 3), (1, 1), (0, 0), "s8_zp"),       # stride 1, no padding
    (3, 16, (5, 5), (3, 3), (2, 2), (1, 1), "u8_sum"),       # narrower than a group
    (3, 8, (13, 41), (3, 3), (2, 2), (1, 1), "u8_plain"),    # 8 channels (below 256 pixels)
    (3, 24, (9, 67), (3, 3), (2, 2), (1, 1), "s8_chain"),    # two vectors: the micro-kernel
    (3, 32, (6, 35), (3, 3), (1, 1), (1, 1), "u8_chain"),
    (3, 32, (7, 37), (3, 3), (2, 2), (1, 1), "s8_zp"),       # 8 pixels of 32 channels
    (3, 20, (8, 45), (3, 3), (2, 2), (0, 0), "u8_plain"),    # a part vector
    (1, 12, (5, 70), (3, 3), (2, 2), (1, 1), "det"),
    (3, 64, (13, 29), (7, 7), (2, 2), (3, 3), "u8_chain"),   # ResNet's 7x7 stem
    (3, 64, (10, 17), (7, 7), (2, 2), (3, 3), "s8_zp"),
    (1, 24, (8, 48), (3, 3), (2, 2), (1, 1), "det"),         # ddddocr's stem
    (1, 16, (9, 36), (3, 3), (1, 1), (1, 1), "s8_chain"),
    (4, 16, (8, 39), (3, 3), (2, 2), (1, 1), "det"),         # 36 bytes: no VBMI rows
    (4, 32, (7, 33), (3, 3), (1, 1), (0, 0), "u8_sum"),
    (3, 16, (6, 31), (3, 3), (2, 2), (1, 1), "s32"),         # no fused epilogue
    (3, 16, (9, 40), (3, 3), (2, 2), (1, 1), "u8_zp_wide"),
    (4, 8, (6, 17), (3, 3), (2, 2), (1, 1), "u8_zp_wide"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_stem_cases(isa, case):
    IC, OC, isp, k, s, p, kind = CASES[case]
    rng = np.random.default_rng([case, IC, OC])
    run(rng, IC, OC, isp, k, s, p, kind, mb=2 if case % 3 == 1 else 1)


def test_stem_widths(isa):
    """output widths 1 - 40 (the 16-pixel loop's tail, the VBMI groups of 10) and heights
    1 - 3, the detector's attributes"""
    rng = np.random.default_rng(11)
    for ow in (1, 2, 9, 10, 15, 16, 17, 20, 21, 31, 32, 33, 40):
        for ih in (1, 2, 5):
            run(rng, 3, 16, (ih, 2 * ow), (3, 3), (2, 2), (1, 1), "det")


def test_stem_binary_post_op(isa):
    rng = np.random.default_rng(5)
    _, _, q, _, _, _ = quant(rng, 16, "det")
    per_oc = rng.normal(0, 1, (1, 16, 1, 1)).astype(np.float32)
    c = Case(rng, mb=1, G=1, ICg=3, OCg=16, isp=(9, 40), k=(3, 3), s=(2, 2), pl=(1, 1),
             pr=(1, 1), d=(0, 0), grouped=False, src_dt="u8", dst_dt="u8", src_tag="nhwc",
             dst_tag="nhwc", q=q, post_ops=[("binary", "add", per_oc)])
    out, _ = c.run_dnnq()
    assert_same(out, reference(c))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_stem_threads(isa, threads):
    """items of whole output rows split over the threads, several images"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        rng = np.random.default_rng(threads)
        run(rng, 3, 16, (17, 66), (3, 3), (2, 2), (1, 1), "det", mb=3)
        run(rng, 1, 24, (12, 30), (3, 3), (2, 2), (1, 1), "u8_chain", mb=2)
    finally:
        dnnq.set_num_threads(old)


def test_stem_weights_zero_point(isa):
    """a weights zero point (dnnq's extension: oneDNN has none, numpy's model is the
    reference): the plain micro-kernel and the epilogue's per-pixel window sums"""
    rng = np.random.default_rng(9)
    ws = rng.uniform(1e-3, 2e-2, 16).astype(np.float32)
    q = {"src_scales": [0.0078], "wei_scales": ws, "wei_scale_mask": 1, "dst_scales": [0.06],
         "src_zp": [128], "dst_zp": [128], "wei_zp": [3]}
    c = Case(rng, mb=1, G=1, ICg=3, OCg=16, isp=(9, 40), k=(3, 3), s=(2, 2), pl=(1, 1),
             pr=(1, 1), d=(0, 0), grouped=False, src_dt="u8", dst_dt="u8", src_tag="nhwc",
             dst_tag="nhwc", q=q)
    out, _ = c.run_dnnq()
    assert_same(out, c.run_numpy())
