"""The flat 3x3 depthwise kernel on plain (nchw) planes (ukernels/depthwise/dw3x3_flat_vbmi.c,
AVX-512 VNNI + VBMI): lanes are 16 consecutive output pixels of the flattened plane across row ends,
each kernel row's taps permuted out of a window that starts at lane 0's.  Swept here, against
oneDNN (numpy's model where oneDNN is not there):

* every window kind and its bounds: one window for all kernel rows (stride 1, iw == ow <= 23;
  stride 2 within 127 bytes), a window per kernel row of 32 / 64 / 96 bytes (stride 1 with
  other paddings; stride 2 with output rows of 16 / 17, 30 / 31 columns), the stacked rows
  (stride 2, 12 - 16 / 24 - 32 columns: four rows a group of one vector each, or two of two),
  and the rows mode (stride-2 rows of 32 - 64
  columns, one output row per group of 1 - 4 vectors, the lanes past the row dead);
* plane sizes below, at and past one vector, one group of four, one block of 32 vectors, so
  the last group is partial, the rest group has 1 - 3 vectors, and a group's 64-byte store
  spills into the next plane (items of whole planes in one block) or goes through the staging
  buffer (the last channel, items of part of a plane, several blocks);
* rows in the padding (uniform and per-row index vectors), large asymmetric padding, tiny
  planes whose loads pass the source array's ends for several channels (the checked loads);
* every fused epilogue kind (s8 / u8 sources and destinations, source and destination zero
  points, relu with alpha, linear chains), 1 - 3 images, channel counts across panels, 1 - 3
  threads (items of part of a plane).
The geometries the kernel leaves to the copies (3-D, stride-2 rows past 64 columns) are
checked to go there."""
import numpy as np
import pytest

import dnnq
from dnnq.primitives import _conv_kernel_choice as conv_mod
from test_convolution_dw3x3_plain import (FUSED, VBMI, flat_takes, needs_avx512, no_checked_path,
                                          run_plain)

needs_vbmi = pytest.mark.skipif(not VBMI, reason="the flat kernel needs AVX512-VBMI")


@pytest.fixture
def flat(monkeypatch):
    """no cached primitive, the checked path failing (the fixture of the plain tests, flat
    kernel on)"""
    monkeypatch.setattr(conv_mod, "DW_PLAIN_MIN_OW", 1 << 30)  # only the flat kernel
    old = no_checked_path(monkeypatch)
    yield
    dnnq.set_primitive_cache_capacity(old)


def run_flat(isp, s, pl, pr, name, C, mb, seed):
    assert flat_takes(isp, s, pl, pr), (isp, s, pl, pr)
    p = run_plain(isp, s, pl, pr, name, C, mb, seed, expect_plain=True)
    assert p._dw_plain == 3


# (isp, strides, padding_l, padding_r): the window kinds and their bounds
WINDOWS = {
    "win1_w7": ((7, 7), (1, 1), (1, 1), (1, 1)),
    "win1_w23": ((9, 23), (1, 1), (1, 1), (1, 1)),       # 2 iw + 18 = 64
    "wr32_w24": ((9, 24), (1, 1), (1, 1), (1, 1)),       # the first row-window width
    "wr32_w56": ((6, 56), (1, 1), (1, 1), (1, 1)),
    "s1_pad0": ((8, 12), (1, 1), (0, 0), (0, 0)),        # iw = ow + 2: spans 20 - 22
    "s1_pad02": ((9, 5), (1, 1), (0, 2), (0, 2)),        # iw = ow - 2, rows in the padding
    "s1_pad20": ((6, 19), (1, 1), (2, 1), (0, 1)),       # kernel rows wholly in the padding
    "s2_ow16": ((9, 32), (2, 2), (1, 1), (1, 1)),        # one output row per vector
    "s2_ow17": ((9, 34), (2, 2), (1, 1), (1, 1)),
    "s2_ow7": ((20, 14), (2, 2), (1, 1), (1, 1)),        # 14 -> 7, more than 64 pixels
    "s2_7x7": ((14, 14), (2, 2), (1, 1), (1, 1)),        # MobileNet's 14 -> 7: 4 vectors
    "win2_127": ((9, 23), (2, 2), (1, 0), (1, 1)),       # three kernel rows in 127 bytes
    "wr96_129": ((9, 24), (2, 2), (1, 1), (1, 1)),       # ... in 129: 96-byte windows
    "s2_ow14": ((28, 28), (2, 2), (1, 1), (1, 1)),
    "s2_ow28": ((12, 56), (2, 2), (1, 1), (1, 1)),
    "s2_ow30": ((10, 59), (2, 2), (1, 1), (1, 1)),       # odd source width
    "s2_ow31": ((8, 61), (2, 2), (1, 0), (1, 1)),
    # stacked rows: stride-2 rows of 12 - 16 columns that would take 96-byte windows
    "stack_ow12": ((11, 24), (2, 2), (1, 1), (1, 1)),
    "stack_ow12_asym": ((9, 25), (2, 2), (1, 0), (1, 1)),
    "stack_ow13": ((10, 26), (2, 2), (1, 1), (1, 1)),
    "stack_ow14_pad0": ((9, 29), (2, 2), (1, 0), (1, 0)),
    "stack2_ow24": ((9, 48), (2, 2), (1, 1), (1, 1)),     # two vectors a row
    "stack2_ow27": ((8, 55), (2, 2), (1, 0), (1, 1)),
    "stack2_ow30": ((7, 60), (2, 2), (1, 1), (1, 1)),
    "wr96_ow23": ((9, 47), (2, 2), (0, 1), (1, 0)),       # not stacked: too many lanes dead
    # rows mode: stride-2 rows of 32 - 64 columns (runs across a row end span past 96)
    "rows_ow32": ((9, 64), (2, 2), (1, 1), (1, 1)),
    "rows_ow33": ((7, 66), (2, 2), (1, 1), (1, 1)),
    "rows_ow48": ((5, 96), (2, 2), (1, 1), (1, 1)),
    "rows_ow56": ((12, 112), (2, 2), (1, 1), (1, 1)),     # MobileNet's 112 -> 56
    "rows_ow56_odd": ((11, 111), (2, 2), (0, 1), (2, 1)),
    "rows_ow64": ((4, 128), (2, 2), (1, 1), (1, 1)),
    "sh2_sw1": ((9, 10), (2, 1), (1, 1), (1, 1)),
    "sh1_sw2": ((6, 20), (1, 2), (1, 1), (1, 1)),
}


@needs_avx512
@needs_vbmi
@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("name", FUSED)
def test_flat_windows(flat, window, name):
    isp, s, pl, pr = WINDOWS[window]
    if not flat_takes(isp, s, pl, pr):
        pytest.fail(f"{window}: the flat kernel does not take it")
    for i, C in enumerate((1, 37, 64, 70)):
        run_flat(isp, s, pl, pr, name, C, 1 + i % 2, [len(window), len(name), C])


# stride-1 planes of 1 .. 40 x 13 pixels and wider: 1, 4, 5, 8, 31, 32, 33 vectors and more
PLANES = [(1, 1), (3, 3), (2, 8), (1, 16), (1, 17), (4, 16), (5, 13), (8, 8), (9, 9), (3, 23),
          (31, 16), (32, 16), (33, 16), (40, 13), (11, 50), (24, 24), (70, 9)]


@needs_avx512
@needs_vbmi
@pytest.mark.parametrize("plane", PLANES, ids=[f"{h}x{w}" for h, w in PLANES])
def test_flat_plane_sizes(flat, plane):
    for i, name in enumerate(("u8_relu", "s8src_zp", "u8_dst_zp")):
        C = (1, 65, 130)[i]
        run_flat(plane, (1, 1), (1, 1), (1, 1), name, C, 1 + i % 3, [plane[0], plane[1], i])


@needs_avx512
@needs_vbmi
def test_flat_loads_past_the_array(flat):
    """tiny planes with padding: the loads of the first and last few channels reach before
    and after the source array (the checked loads); one plane per channel of a 1 x 1 source"""
    for i, (isp, pl, pr) in enumerate((((1, 1), (1, 1), (1, 1)), ((1, 2), (2, 2), (0, 1)),
                                       ((2, 1), (1, 2), (2, 1)), ((3, 2), (2, 0), (1, 2)))):
        for C, mb in ((1, 1), (3, 2), (66, 1)):
            run_flat(isp, (1, 1), pl, pr, FUSED[i % len(FUSED)], C, mb, [i, C])


@needs_avx512
@needs_vbmi
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_flat_threads(flat, threads):
    """items of part of a plane (row blocks) for the threads: their last group staged,
    their first rows' loads from the rows above"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for i, (isp, s) in enumerate((((14, 14), (1, 1)), ((7, 7), (1, 1)), ((28, 28), (2, 2)),
                                      ((56, 20), (1, 1)), ((30, 30), (2, 2)),
                                      ((20, 112), (2, 2)), ((38, 80), (2, 2)))):
            for C, mb in ((64, 1), (200, 2)):
                run_flat(isp, s, (1, 1), (1, 1), FUSED[(i + C) % len(FUSED)], C, mb,
                         [threads, i, C])
    finally:
        dnnq.set_num_threads(old)


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2])
def test_flat_random_geometries(flat, threads):
    """random 2-D problems the flat kernel takes (heights and widths 1 - 40, strides 1 / 2,
    paddings 0 - 2), every fused epilogue kind; against oneDNN"""
    if not VBMI:
        pytest.skip("the flat kernel needs AVX512-VBMI")
    rng = np.random.default_rng([threads, 91])
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        done = 0
        while done < 30:
            s = tuple(int(v) for v in rng.integers(1, 3, 2))
            pl = tuple(int(v) for v in rng.integers(0, 3, 2))
            pr = tuple(int(v) for v in rng.integers(0, 3, 2))
            isp = tuple(max(int(v), 3 - a - b) for v, a, b in zip(rng.integers(1, 41, 2), pl, pr))
            if not flat_takes(isp, s, pl, pr):
                continue
            C = int(rng.integers(1, 150))
            run_flat(isp, s, pl, pr, FUSED[int(rng.integers(len(FUSED)))], C,
                     int(rng.integers(1, 4)), [threads, done])
            done += 1
    finally:
        dnnq.set_num_threads(old)


@needs_avx512
def test_flat_not_taken(flat):
    """what the flat kernel leaves: 3-D planes, stride-2 rows of more than 64 columns (spans
    past 96 bytes across row ends, and too wide for the rows mode), and every geometry
    without VBMI"""
    cases = (((3, 5, 7), (1, 1, 1), (1, 1, 1), (1, 1, 1)),
             ((4, 130), (2, 2), (1, 1), (1, 1)),
             ((3, 129), (2, 2), (1, 1), (1, 1)))
    for i, (isp, s, pl, pr) in enumerate(cases):
        if len(isp) == 2:
            assert not flat_takes(isp, s, pl, pr)
        p = run_plain(isp, s, pl, pr, "u8_relu", 40, 1, [i], expect_plain=False)
        assert p._dw_plain != 3
    if not VBMI:
        p = run_plain((7, 7), (1, 1), (1, 1), (1, 1), "u8_relu", 40, 1, [9], expect_plain=False)
        assert p._dw_plain == 0


def test_flat_span_closed_form():
    """dw_flat_span (and the kernel's dwf_span, the same closed form) against every run of 16
    consecutive pixels of the plane (runs of a plane under 16 pixels: the one from pixel 0)"""
    from dnnq.primitives._conv_kernel_choice import dw_flat_span
    for oh in (1, 2, 3, 7, 17):
        for ow in (1, 2, 5, 7, 14, 15, 16, 17, 23, 31, 32, 33, 64, 65):
            for sh, sw in ((1, 1), (2, 2), (1, 2), (2, 1), (3, 1)):
                for iw in {max(1, sw * (ow - 1) + d) for d in (-2, 0, 1, 2, 3, 9)}:
                    q = np.arange(max(1, oh * ow - 15))
                    src = lambda m: m // ow * sh * iw + m % ow * sw  # noqa: E731
                    want = int((src(q + 15) - src(q)).max()) + 3
                    assert dw_flat_span(oh, ow, iw, sh, sw) == want, (oh, ow, iw, sh, sw)
