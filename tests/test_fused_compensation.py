"""The fused micro-kernel's compensation kinds (AVX-512: the 8-bit epilogue applied from the
accumulator registers, adding the block's compensation): s8 sources (XOR-ed to u8 as they
are read, -128 * colsum in the compensation) and u8 sources with a zero point, through the
convolution's tiled path (3x3, the folded first layers), the 1x1 GEMM path and the
deconvolution's column-phase driver; u8 / s8 dsts, relu or none, a dst zero point or none,
panels of at most 32 columns (the half-width tile) and wider; every tile height through the
output widths.  Against oneDNN (numpy's model where oneDNN's tap-less rows bug applies)."""
import itertools

import numpy as np
import pytest

from test_convolution import Case, assert_same
from test_convolution_dw3x3 import reference

GEOMETRIES = [
    # (isp, k, s, pl, deconv, ICg, grouped G)
    ((9, 13), (3, 3), (1, 1), (1, 1), False, 24, 1),      # tiled 3x3
    ((20, 21), (3, 3), (2, 2), (1, 1), False, 3, 1),     # folded first layer (IC = 3)
    ((7, 11), (1, 1), (1, 1), (0, 0), False, 40, 1),     # 1x1: the GEMM driver
    ((6, 9), (3, 3), (1, 1), (1, 1), False, 8, 2),       # grouped
    ((5, 7), (4, 4), (2, 2), (1, 1), True, 16, 1),       # deconvolution, column phases
    ((6, 5), (2, 2), (2, 2), (0, 0), True, 12, 1),       # kernel = stride
]


@pytest.mark.parametrize("geometry", range(len(GEOMETRIES)))
@pytest.mark.parametrize("src", ["s8", "u8_zp"])
def test_fused_compensation_vs_onednn(isa, geometry, src):
    isp, k, s, pl, deconv, ICg, G = GEOMETRIES[geometry]
    rng = np.random.default_rng([geometry, len(src), len(isa)])
    for OCg, dst_dt, relu, dst_zp in itertools.product((20, 32, 70), ("u8", "s8"),
                                                        (True, False), (None, 5)):
        q = {"src_scales": [0.05], "wei_scales": [0.004],
             "dst_scales": [0.8]}
        if src == "u8_zp":
            q["src_zp"] = [9]
        if dst_zp is not None:
            q["dst_zp"] = [dst_zp]
        c = Case(rng, mb=2, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl, d=(0, 0),
                 src_dt="s8" if src == "s8" else "u8", dst_dt=dst_dt, deconv=deconv,
                 grouped=G > 1, bias_dt="f32", src_tag="nhwc", dst_tag="nhwc", q=q,
                 post_ops=[("eltwise", "relu", 0.0, 0.0)] if relu else [])
        out, _ = c.run_dnnq()
        assert_same(out, reference(c))
