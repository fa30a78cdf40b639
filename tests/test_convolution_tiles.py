"""The tiled implicit-GEMM path (ukernels/conv_tiles.c) against the real oneDNN 3.2 (bit-exact)
and the numpy model, on every ISA level.

The path cuts each image's output pixels into micro-tiles of up to 6 pixels that read the same
kernel taps inside the source: runs along w, columns along h at the borders, raster runs
crossing rows for rectangles of whole rows; padded taps are skipped when they add nothing (u8
source with zero point 0, s8 with -128), read from the zero-point row otherwise, and corrected
per tap for zero points the source type cannot hold.  The few-channel kernels (`fold_kw`) read
whole kernel rows and gather the rows of the pixels at a border along w.  These cases sweep
the shapes that select each kind of tile."""
import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref
from test_convolution import Case, assert_same

needs_onednn = onednn_ref.requires_vnni

# (output widths around the 6-pixel tiles, heights that give border rows / tall columns)
SHAPES = [  # isp, k, s, pl, pr, d
    ((7, 7), (3, 3), (1, 1), (1, 1), (1, 1), (0, 0)),     # ResNet's last stage: 5-pixel runs
    ((6, 13), (3, 3), (1, 1), (1, 1), (1, 1), (0, 0)),    # 13 wide: runs of 11 -> 6 + 5
    ((20, 3), (3, 3), (1, 1), (1, 1), (1, 1), (0, 0)),    # tall and narrow: border columns
    ((9, 8), (3, 3), (2, 2), (1, 1), (0, 0), (0, 0)),     # stride 2, asymmetric padding
    ((8, 9), (3, 3), (1, 1), (2, 0), (0, 2), (1, 1)),     # dilation, one-sided padding
    ((7, 13), (1, 1), (2, 2), (0, 0), (0, 0), (0, 0)),    # 1x1 stride 2: raster runs (4 x 7)
    ((5, 8), (3, 3), (1, 1), (0, 0), (0, 0), (0, 0)),     # no padding: whole rows, raster
    ((4, 5), (5, 5), (1, 1), (3, 3), (3, 3), (0, 0)),     # taps outside on every side
    ((3, 2), (3, 3), (1, 1), (2, 2), (2, 2), (0, 0)),     # pixels reading no source at all
]


@needs_onednn
@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("src_dt,zp", [("u8", 0), ("u8", 37), ("s8", -128), ("s8", 0)])
def test_tile_shapes_vs_onednn(isa, shape, src_dt, zp):
    """Zero points that let padded taps be skipped (u8 0, s8 -128) and that do not."""
    isp, k, s, pl, pr, d = SHAPES[shape]
    rng = np.random.default_rng(100 * shape + zp % 97)
    for ic, oc in ((5, 7), (16, 64), (33, 65)):
        c = Case(rng, ICg=ic, OCg=oc, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d, src_dt=src_dt,
                 dst_dt="s32", src_tag="nhwc", dst_tag="nhwc", q={"src_zp": [zp]})
        out, p = c.run_dnnq()
        assert p.impl_info.split(":")[1] in ("brgconv", "brgconv_1x1", "brgconv_fold")
        assert_same(out, c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("dst_dt,dst_zp", [("u8", None), ("s8", 3)])
def test_tile_shapes_fused_epilogue_vs_onednn(isa, shape, dst_dt, dst_zp):
    """u8 source, 8-bit dst, per-OC scales, bias, relu: at AVX-512 the micro-kernel with the
    epilogue fused (the tiles' rows written straight from its registers), the corner pixels
    merged into a neighbouring run or column included."""
    isp, k, s, pl, pr, d = SHAPES[shape]
    rng = np.random.default_rng(300 + shape)
    for ic, oc in ((16, 64), (32, 40), (8, 130)):
        q = {"src_scales": [0.05], "wei_scales": rng.uniform(0.001, 0.01, oc).astype(np.float32),
             "wei_scale_mask": 1, "dst_scales": [0.5]}
        if dst_zp is not None:
            q["dst_zp"] = [dst_zp]
        c = Case(rng, mb=2, ICg=ic, OCg=oc, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d, src_dt="u8",
                 dst_dt=dst_dt, bias_dt="f32", src_tag="nhwc", dst_tag="nhwc", q=q,
                 post_ops=[("eltwise", "relu", 0.0, 0.0)])
        assert_same(c.run_dnnq()[0], c.run_onednn())


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("src_dt,zp", [("u8", 300), ("s8", -1000)])
def test_tile_shapes_zero_point_outside_the_type(isa, shape, src_dt, zp):
    """Zero points the source type cannot hold: per padded tap corrections (numpy model);
    6 channels take the folded kernel rows, 24 the taps (and the merged corner tiles)."""
    isp, k, s, pl, pr, d = SHAPES[shape]
    rng = np.random.default_rng(7 + shape)
    for ic in (6, 24):
        c = Case(rng, ICg=ic, OCg=70, isp=isp, k=k, s=s, pl=pl, pr=pr, d=d, src_dt=src_dt,
                 dst_dt="s32", src_tag="nhwc", dst_tag="nhwc", q={"src_zp": [zp]})
        assert_same(c.run_dnnq()[0], c.run_numpy())


@needs_onednn
@pytest.mark.parametrize("ic", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("geom", [((17, 23), (7, 7), (2, 2), (3, 3), (2, 3)),
                                  ((9, 11), (3, 3), (2, 2), (1, 1), (1, 1)),
                                  ((6, 9), (5, 5), (1, 1), (4, 4), (1, 4))])
def test_few_channels_fold_vs_onednn(isa, ic, geom):
    """fold_kw: kernel rows of KW * IC bytes (K % 4 tails), border pixels gathered, with a
    zero point (read from the padding) and without (padded rows skipped)."""
    isp, k, s, pl, pr = geom
    rng = np.random.default_rng(ic)
    for src_dt, zp in (("u8", 0), ("u8", 200), ("s8", -3)):
        c = Case(rng, ICg=ic, OCg=64 if ic % 2 else 65, isp=isp, k=k, s=s, pl=pl, pr=pr,
                 src_dt=src_dt, dst_dt="s32", src_tag="nhwc", dst_tag="nhwc",
                 q={"src_zp": [zp]})
        out, p = c.run_dnnq()
        if k[1] * ic <= 64:
            assert p.impl_info.endswith(":brgconv_fold")
        assert_same(out, c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("ic,isp,k,s,pl,pr", [
    (1, (832,), (256,), (128,), (0,), (0,)),     # silero's STFT: one reduction of 256
    (1, (300,), (255,), (16,), (3,), (5,)),      # K % 4 tail, border rows gathered
    (2, (97,), (61,), (3,), (30,), (30,)),
    (8, (5, 140), (3, 128), (1, 7), (1, 0), (1, 2)),   # K = 1024 per kernel row
    (5, (40,), (13,), (1,), (0,), (0,))])        # 65 bytes: past the first-layer limit
def test_long_kernels_few_channels_fold_vs_onednn(isa, ic, isp, k, s, pl, pr):
    """Long kernel rows over 1 - 8 channels fold into one reduction of KW * IC bytes (up
    to 1024), with and without a source zero point, several images (the rows of one tile
    stay within an image)."""
    rng = np.random.default_rng(ic + k[-1])
    for src_dt, zp in (("u8", 0), ("u8", 131), ("s8", -3)):
        c = Case(rng, mb=3, ICg=ic, OCg=70, isp=isp, k=k, s=s, pl=pl, pr=pr, d=(0,) * len(k),
                 src_dt=src_dt, dst_dt="s32", src_tag="nwc" if len(isp) == 1 else "nhwc",
                 dst_tag="nwc" if len(isp) == 1 else "nhwc", q={"src_zp": [zp]})
        out, p = c.run_dnnq()
        assert p.impl_info.endswith(":brgconv_fold")
        assert_same(out, c.run_onednn())


@needs_onednn
@pytest.mark.parametrize("threads", [1, 2])
def test_batches_groups_and_threads(isa, threads):
    """Several images, groups and 3-D / 1-D problems split into chunks over threads."""
    rng = np.random.default_rng(threads)
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        cases = [
            Case(rng, mb=3, G=2, ICg=12, OCg=70, isp=(11, 10), k=(3, 3), pl=(1, 1),
                 src_tag="nhwc", dst_tag="nhwc", q={"src_zp": [0]}),
            Case(rng, mb=2, ICg=9, OCg=20, isp=(5, 6, 7), k=(3, 3, 3), s=(1, 2, 1),
                 pl=(1, 1, 1), d=(0, 0, 0), src_tag="ndhwc", dst_tag="ndhwc", src_dt="s8",
                 q={"src_zp": [-128]}),
            Case(rng, mb=2, ICg=7, OCg=66, isp=(29,), k=(5,), s=(2,), pl=(2,), d=(1,),
                 src_tag="nwc", dst_tag="nwc", q={"src_zp": [4]}),
            Case(rng, mb=2, ICg=40, OCg=130, isp=(14, 14), k=(3, 3), pl=(1, 1),
                 src_tag=None, dst_tag=None, dst_dt="u8", bias_dt="f32",
                 q={"src_scales": [0.05], "wei_scales": rng.uniform(0.001, 0.01, 130)
                    .astype(np.float32), "wei_scale_mask": 1, "dst_scales": [2.0]},
                 post_ops=[("eltwise", "relu", 0.0, 0.0)]),
        ]
        for c in cases:
            assert_same(c.run_dnnq()[0], c.run_onednn())
    finally:
        dnnq.set_num_threads(old)
