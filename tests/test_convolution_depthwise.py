"""The depthwise kernels' borders and blocks: kernel rows of three taps along w (the AVX-512 row
kernel: interior runs in place, borders through small zero-point-padded copies, kernel rows in
the padding skipped or read as zero-point pixels), runs longer than a tile, rows that are all
border, 1-D / 3-D, dilation along h, channel tails; against the numpy model (and oneDNN once
per geometry), on every ISA level."""
import numpy as np
import pytest

import dnnq.testing as onednn_ref
from test_convolution import Case, assert_same

# (source spatial, kernel, left padding, right padding, dilation): w kernel 3 unless noted
GEOMETRIES = {
    "wide_rows": ((5, 70), (3, 3), (1, 1), (1, 1), (0, 0)),        # runs > 32-pixel tiles
    "large_pads": ((4, 9), (3, 3), (3, 5), (2, 6), (0, 0)),        # kernel rows in padding
    "all_border": ((6, 2), (3, 3), (1, 2), (1, 2), (0, 0)),        # iw < 3: no interior
    "dilated_h": ((9, 12), (3, 3), (2, 1), (2, 1), (1, 0)),
    "tall_kernel": ((8, 11), (5, 3), (2, 0), (2, 2), (0, 0)),
    "one_row": ((3, 13), (1, 3), (0, 1), (0, 0), (0, 0)),
    "w_dilated": ((5, 12), (3, 3), (1, 2), (1, 2), (0, 1)),        # not the row kernel
    "w_kernel_2": ((5, 12), (3, 2), (1, 1), (1, 0), (0, 0)),       # not the row kernel
    "1d": ((17,), (3,), (2,), (1,), (0,)),
    "3d": ((3, 4, 10), (2, 3, 3), (1, 1, 1), (0, 1, 2), (0, 0, 0)),
}


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("src_dt,zp", [("u8", 0), ("u8", 37), ("s8", -9)])
@pytest.mark.parametrize("sw", [1, 2])
def test_depthwise_row_kernel_borders(isa, geometry, src_dt, zp, sw):
    isp, k, pl, pr, d = GEOMETRIES[geometry]
    nsp = len(isp)
    s = (2,) * (nsp - 1) + (sw,) if geometry != "wide_rows" else (1,) * (nsp - 1) + (sw,)
    rng = np.random.default_rng([len(geometry), zp & 0xff, sw, src_dt == "s8"])
    tag = {3: "nwc", 4: "nhwc", 5: "ndhwc"}[nsp + 2]
    checked_onednn = False
    for C in (20, 64, 72):
        c = Case(rng, mb=2 if C == 20 else 1, G=C, ICg=1, OCg=1, isp=isp, k=k, s=s, pl=pl,
                 pr=pr, d=d, grouped=True, src_dt=src_dt, dst_dt="s32", src_tag=tag,
                 dst_tag=tag, q={"src_zp": [zp]} if zp else {})
        out, p = c.run_dnnq()
        assert p.impl_info.endswith(":dw")
        assert_same(out, c.run_numpy())
        if not checked_onednn and onednn_ref.available() and onednn_ref.has_vnni():
            assert_same(out, c.run_onednn())
            checked_onednn = True
