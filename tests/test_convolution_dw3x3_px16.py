"""The 3x3 depthwise column kernel's 16-channel path (ukernels/depthwise/dw3x3_px16_avx512.c:
four pixels per vector, the whole epilogue fused, post-op chains included): output widths
below, at and past its groups of four columns, borders and rows in the padding, paired and
single output rows, every epilogue mode (the PP-OCR detector's clip / hardswish / linear
chain, an s8 source with zero points, relu's hot case, an s8 dst), plain data; and channel
counts around 16 (the other kernels).  Against oneDNN (numpy's model where oneDNN is not
there), on every ISA level."""
import numpy as np
import pytest

import dnnq
from test_convolution import Case, assert_same
from test_convolution_dw3x3 import reference

# PP-OCRv4's detector: clip, hardswish, clip, linear, clip, linear (clip bounds that never
# apply are left out by the kernel)
PPOCR_CHAIN = [("eltwise", "clip", -4.96, 4.77), ("eltwise", "hardswish", 0.1666, 0.5),
               ("eltwise", "clip", -0.38, 4.75), ("eltwise", "linear", 0.62, 0.0),
               ("eltwise", "clip", -0.238, 2.95), ("eltwise", "linear", 1.0, 0.0886)]


def config(name, rng, C):
    ws = rng.uniform(1e-3, 2e-2, C).astype(np.float32)
    base = {"src_scales": [0.25], "wei_scales": ws, "wei_scale_mask": 3, "dst_scales": [2.0]}
    return {
        "ppocr": ("u8", "u8", base, PPOCR_CHAIN),
        # compensation (source zero point), s8 source, dst zero point, the clamp
        "s8src_zp_chain": ("s8", "u8", dict(base, src_zp=[-7], dst_zp=[9], dst_scales=[0.05]),
                           [("eltwise", "clip", -3.0, 6.0),
                            ("eltwise", "hardswish", 1 / 6, 0.5)]),
        "s8_hardsigmoid": ("u8", "s8", dict(base, src_zp=[21], dst_scales=[0.004]),
                           [("eltwise", "clip_v2", -3.0, 2.5),
                            ("eltwise", "hardsigmoid", 0.2, 0.5)]),
        "u8_relu": ("u8", "u8", dict(base, dst_scales=[0.5]), [("eltwise", "relu", 0.0, 0.0)]),
        "s8_dst": ("u8", "s8", dict(base, dst_zp=[-5], dst_scales=[0.3]), []),
    }[name]


def run_case(name, C, isp, s=(1, 1), pl=(1, 1), pr=(1, 1), mb=1, seed=0, tag="nhwc"):
    rng = np.random.default_rng(seed)
    src_dt, dst_dt, q, post = config(name, rng, C)
    c = Case(rng, mb=mb, G=C, ICg=1, OCg=1, isp=isp, k=(3, 3), s=s, pl=pl, pr=pr, d=(0, 0),
             grouped=True, src_dt=src_dt, dst_dt=dst_dt, src_tag=tag, dst_tag=tag, q=q,
             post_ops=post, bias_dt="f32")
    out, p = c.run_dnnq()
    assert p.impl_info.endswith(":dw")
    assert_same(out, reference(c))


NAMES = ("ppocr", "s8src_zp_chain", "s8_hardsigmoid", "u8_relu", "s8_dst")
# the output width is iw (pads 1, 1): groups of four columns, a last partial group of 1 - 3
WIDTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 32, 33, 34, 35, 67)


@pytest.mark.parametrize("name", NAMES)
def test_px16_widths(isa, name):
    for i, iw in enumerate(WIDTHS):
        run_case(name, 16, (5, iw), mb=1 + i % 2, seed=[iw, len(name)])


@pytest.mark.parametrize("pads", [((0, 0), (0, 0)), ((2, 0), (1, 2)), ((0, 3), (3, 1)),
                                  ((3, 3), (3, 2))])
def test_px16_padding(isa, pads):
    """border groups on both sides, kernel rows and output rows wholly in the padding"""
    pl, pr = pads
    for name in ("ppocr", "s8src_zp_chain"):
        for iw in (3, 6, 11):
            run_case(name, 16, (6, iw), pl=pl, pr=pr, seed=[iw, pl[1], pr[1]])


@pytest.mark.parametrize("s", [(2, 1), (1, 2), (2, 2)])
def test_px16_strides(isa, s):
    """stride 2 along h: single output rows; along w: the 64-channel panel kernel"""
    for name in ("ppocr", "s8src_zp_chain"):
        for iw in (7, 12):
            run_case(name, 16, (9, iw), s=s, seed=[iw, s[0], s[1]])


@pytest.mark.parametrize("C", [8, 15, 17, 32, 48])
def test_px16_other_channels(isa, C):
    """channel counts around 16 keep the panel kernels and the driver's epilogue"""
    for name in ("ppocr", "s8src_zp_chain"):
        run_case(name, C, (5, 9), seed=[C, len(name)])


def test_px16_plain_data(isa):
    """nchw: the chain takes the channels-last copies and the 16-channel path"""
    for name in ("ppocr", "s8_hardsigmoid"):
        run_case(name, 16, (7, 50), tag="nchw", seed=[len(name)])


@pytest.mark.parametrize("threads", [1, 2])
def test_px16_threads(isa, threads):
    """work items of rows (pairs split at item ends), several images"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for name in ("ppocr", "u8_relu"):
            run_case(name, 16, (23, 37), mb=3, seed=[threads, len(name)])
    finally:
        dnnq.set_num_threads(old)
