"""The 3x3 depthwise column kernel on plain (nchw) planes (AVX-512:
ukernels/depthwise/dw3x3_plain_avx512.c), chosen at creation for plain src and dst with the
fused epilogue (8-bit dst, relu / linear): output widths below / at / past 16, 32 and 64 columns (one block of 1 - 4 vectors, the last
block moved back to the row's end), odd heights (a single last row), stride 1 and 2 along h and
w, padding borders (none, asymmetric, rows wholly in the padding), source and destination zero
points, s8 / u8 source and destination, relu with alpha and linear chains, mb > 1, channel
counts 1 .. 70 and a few large ones, 3-D with kd = 1, 1 and 2 threads.  The kernel serves rows of
at least DW_PLAIN_MIN_OW columns; the tests lower that bound to reach every width.  At stride 2
along h and w, with AVX512-VBMI, the rows take their own kernel (depthwise/dw3x3_plain_s2_vbmi.c):
every test runs with it and with the column kernel's stride-2 path.  Against
oneDNN (numpy's model where oneDNN is not there); the arrays are given so that the C-level
execute path takes them (f32 scales, s32 zero points), and the checked path, which would copy
to channels-last, is made to fail."""
import numpy as np
import pytest

import dnnq
from conftest import ISA_LEVELS
from dnnq.primitives import _dispatch
from dnnq.primitives._kernels import _conv_exec
from dnnq.primitives import _conv_kernel_choice as conv_mod
from test_convolution import Case, assert_same
from test_convolution_dw3x3 import GEOMETRIES, config, reference

# the levels this CPU runs under DNNQ_MAX_CPU_ISA (conftest): a capped run has no plain kernel
AVX512 = any(level.startswith("avx512_core_vnni") or level.startswith("avx512_core_amx")
             for level in ISA_LEVELS)
needs_avx512 = pytest.mark.skipif(not AVX512, reason="the plain kernel is AVX-512 VNNI")

VBMI = _dispatch.cpu_has("avx512_vbmi")


def flat_takes(isp, s, pl, pr):
    """the flat kernel's rule (_conv_kernel_choice.py _dw_flat), restated: 2-D, 16 consecutive
    output pixels' taps of one kernel row within 96 source bytes (18 at stride 1 with iw ==
    ow), or, at stride 2 along h, output rows of at most 64 columns taken one at a time (rows
    mode)"""
    (ih, iw), (sh, sw) = isp, s
    oh = (ih + pl[0] + pr[0] - 3) // sh + 1
    ow = (iw + pl[1] + pr[1] - 3) // sw + 1
    if (sh, sw) == (1, 1) and iw == ow:
        return True
    offs = [((q // ow) * sh * iw + (q % ow) * sw) for q in range(oh * ow + 16)]
    starts = range(max(1, min(ow, oh * ow - 15)))
    span = max(offs[a + 15] - offs[a] + 3 for a in starts)
    return span <= 96 or (sh == 2 and ow <= 64 and 15 * sw + 3 <= 64)


FUSED = ("u8_relu", "u8_plain", "u8_common_no_bias", "s8src_zp", "u8src_zp", "u8_dst_zp",
         "s8_dst", "s8_chain", "u8_clamped")


@pytest.fixture(params=["flat", "vbmi", "columns"])
def plain_everywhere(monkeypatch, request):
    """the plain kernel at every width, no cached primitive, the checked path failing: the
    flat kernel where it takes the geometry (depthwise/dw3x3_flat_vbmi.c, CPUs with VBMI), else, and
    with it off, at stride 2 the VBMI rows kernel (where the CPU has VBMI) and the column
    kernel"""
    monkeypatch.setattr(conv_mod, "DW_PLAIN_MIN_OW", 1)
    monkeypatch.setattr(conv_mod, "DW_PLAIN_VBMI", request.param != "columns")
    if request.param != "flat":
        monkeypatch.setattr(conv_mod, "DW_FLAT_MAX_OW", 0)
    old = no_checked_path(monkeypatch)
    yield
    dnnq.set_primitive_cache_capacity(old)


def no_checked_path(monkeypatch):
    """the checked path (which would copy to channels-last) made to fail, and no cached
    primitive; returns the cache's previous capacity"""
    def checked(self, args, scratch):
        raise AssertionError("the checked path ran (the plain kernel was not used)")

    monkeypatch.setattr(dnnq.Convolution, "_execute_general", checked)
    return dnnq.set_primitive_cache_capacity(0)


def exec_types(q):
    """the C-level execute path's argument types: f32 scales, s32 zero points"""
    return {k: v if "mask" in k else np.asarray(v, np.int32 if "zp" in k else np.float32)
            for k, v in q.items()}


def run_plain(isp, s, pl, pr, name, C, mb, seed, expect_plain=True):
    rng = np.random.default_rng(seed)
    src_dt, dst_dt, q, post, bias_dt, sum_prev = config(name, rng, C)
    k = (1, 3, 3) if len(isp) == 3 else (3, 3)
    c = Case(rng, mb=mb, G=C, ICg=1, OCg=1, isp=isp, k=k, s=s, pl=pl, pr=pr,
             d=(0,) * len(isp), grouped=True, src_dt=src_dt, dst_dt=dst_dt, q=exec_types(q),
             post_ops=post, bias_dt=bias_dt, sum_prev=sum_prev)
    out, p = c.run_dnnq()
    assert p.impl_info.endswith(":dw")
    assert bool(p._dw_plain) == expect_plain
    assert_same(out, reference(c))
    return p


@pytest.fixture
def no_flat(monkeypatch):
    """the flat kernel off: the narrow geometries take the channels-last copies (as on CPUs
    without VBMI)"""
    monkeypatch.setattr(conv_mod, "DW_FLAT_MAX_OW", 0)


# output widths around the vector widths: one block of 1, 2, 3, 4 vectors, blocks of 64 and
# a last block moved back; source widths for stride 1 (padding 1) and stride 2
WIDTHS = (1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 66, 100, 128, 130)


@needs_avx512
@pytest.mark.parametrize("sw", [1, 2])
@pytest.mark.parametrize("ow", WIDTHS)
def test_plain_widths(plain_everywhere, ow, sw):
    iw = ow if sw == 1 else 2 * ow - (ow % 2)  # odd and even source widths at stride 2
    for i, (ih, sh) in enumerate(((5, 1), (7, 2), (4, 1))):
        name = FUSED[(ow + i + sw) % len(FUSED)]
        C = 1 + (ow * 7 + i * 13) % 70
        run_plain((ih, iw), (sh, sw), (1, 1), (1, 1), name, C, 1 + i % 2, [ow, sw, i])


@needs_avx512
@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("name", FUSED)
def test_plain_geometries(plain_everywhere, geometry, name):
    isp, s, pl, pr = GEOMETRIES[geometry]
    channels = ((1, 16, 70), (5, 33, 64))[(len(geometry) + len(name)) % 2]
    for i, C in enumerate(channels):
        run_plain(isp, s, pl, pr, name, C, 2 if i % 2 else 1, [len(geometry), len(name), C])


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("geometry", ["s1_odd_rows", "s2", "s1_wide", "s2_wide", "3d_kd1",
                                      "s1_14", "s2_14"])
def test_plain_threads_many_channels(plain_everywhere, geometry, threads):
    """items of whole planes cut into row blocks for the threads, several images and panels"""
    isp, s, pl, pr = GEOMETRIES[geometry]
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for C, mb in ((136, 3), (520, 1)):
            run_plain(isp, s, pl, pr, "u8_relu", C, mb, [threads, C, len(geometry)])
            run_plain(isp, s, pl, pr, "s8src_zp", C, mb, [threads, C, len(geometry), 1])
    finally:
        dnnq.set_num_threads(old)


@needs_avx512
def test_plain_chosen_by_width(no_flat):
    """the default bound without the flat kernel: wide rows take the plain kernel, narrow
    ones the channels-last copies (same results)"""
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        wide = conv_mod.DW_PLAIN_MIN_OW
        run_plain((6, wide), (1, 1), (1, 1), (1, 1), "u8_relu", 40, 1, [1], expect_plain=True)
        run_plain((6, 2 * wide), (2, 2), (1, 1), (1, 1), "u8_relu", 40, 1, [2],
                  expect_plain=True)
        run_plain((6, wide - 1), (1, 1), (1, 1), (1, 1), "u8_relu", 40, 1, [3],
                  expect_plain=False)
    finally:
        dnnq.set_primitive_cache_capacity(old)


@pytest.mark.parametrize("name", ["s32", "f32_sum", "u8_sum", "u8_relu"])
def test_plain_other_epilogues_copy(isa, monkeypatch, name):
    """dsts and post-ops the fused epilogue does not take, and every ISA level below AVX-512,
    keep the channels-last copies; plain data gives oneDNN's results either way"""
    monkeypatch.setattr(conv_mod, "DW_PLAIN_MIN_OW", 1)
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        avx512 = isa.startswith("avx512_core_vnni") or isa.startswith("avx512_core_amx")
        for C, (isp, s) in ((24, ((7, 9), (1, 1))), (70, ((8, 11), (2, 2)))):
            run_plain(isp, s, (1, 1), (1, 1), name, C, 2, [C, len(name)],
                      expect_plain=avx512 and name == "u8_relu")
    finally:
        dnnq.set_primitive_cache_capacity(old)


@pytest.mark.parametrize("threads", [1, 2])
def test_plain_copies_threads(no_flat, threads):
    """the channels-last copies of plain data split over the threads (batches of 64 KB and
    more): by image, and one image's columns in bands of 64 (the last band partial, with a
    tail of 3 columns); a depthwise layer narrower than the plain kernel's bound and a
    grouped convolution, both through the C-level execute path"""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        run_plain((20, 36), (1, 1), (1, 1), (1, 1), "u8_relu", 64, 3, [threads, 1],
                  expect_plain=False)
        run_plain((23, 37), (1, 1), (1, 1), (1, 1), "s8src_zp", 96, 1, [threads, 3],
                  expect_plain=False)
        run_plain((23, 37), (2, 2), (1, 1), (1, 1), "s8_dst", 96, 1, [threads, 4],
                  expect_plain=False)
        rng = np.random.default_rng([threads, 2])
        src_dt, dst_dt, q, post, bias_dt, _ = config("s8_dst", rng, 32)
        c = Case(rng, mb=3, G=2, ICg=16, OCg=16, isp=(24, 30), k=(3, 3), s=(1, 1), pl=(1, 1),
                 pr=(1, 1), d=(0, 0), grouped=True, src_dt=src_dt, dst_dt=dst_dt,
                 q=exec_types(q), post_ops=post, bias_dt=bias_dt)
        out, p = c.run_dnnq()
        assert p._exec is not None and p._exec.run  # the C-level path exists
        assert_same(out, reference(c))
    finally:
        dnnq.set_num_threads(old)


@pytest.fixture(params=[True, False], ids=["fused", "unfused"])
def fused_bands(request):
    """the fused band path (ConvExec._fused_bands) on, and off (the separate copies)"""
    old = _conv_exec.set_fused_bands(request.param)
    yield request.param
    _conv_exec.set_fused_bands(old)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_plain_fused_bands(no_flat, fused_bands, threads):
    """Plain src and dst through the column kernel's channels-last copies, each (image,
    panel) unit copying its own channels in, running its items and copying them out in one
    parallel region (and the separate copies, for the same cases): images 1 - 3, channel
    counts below / at / past 64 (a partial last panel, bands not 64-aligned in the
    channels-last rows), unit counts the threads do not divide, both strides, 8-bit and
    s32 / f32 dsts (4-byte copies back, the driver's epilogue), s8 sources; against
    oneDNN."""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for i, (C, mb, isp, s, name) in enumerate((
                (64, 1, (7, 7), (1, 1), "u8_relu"), (72, 1, (9, 8), (2, 2), "s8src_zp"),
                (130, 2, (14, 14), (1, 1), "s8_dst"), (192, 1, (15, 13), (2, 2), "u8_clamped"),
                (33, 3, (10, 12), (1, 1), "s32"), (256, 1, (12, 12), (2, 1), "f32_sum"),
                (512, 1, (7, 7), (1, 1), "u8_dst_zp"), (200, 2, (6, 20), (1, 2), "u8_sum"))):
            run_plain(isp, s, (1, 1), (1, 1), name, C, mb, [threads, i], expect_plain=False)
    finally:
        dnnq.set_num_threads(old)


@pytest.mark.parametrize("threads", [2, 3])
def test_plain_copies_channel_bands(no_flat, fused_bands, threads):
    """One image, several threads, a depthwise 3x3 layer whose panels divide among the
    threads: the channels-last copies are cut into channel bands (one per thread) and the
    column kernel's items run panels outermost (ConvExec._channel_band), so every thread's
    items read and write what its own copies hold. Channels 64 x threads and more, plane
    sizes below / at / past 64 pixels, both strides, every fused epilogue kind; compared
    with oneDNN. A band of the wrong channels, or items still panel-inner, gives wrong or
    missing outputs here."""
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for i, (C, isp, s) in enumerate((
                (64 * threads, (7, 7), (1, 1)), (64 * threads, (8, 9), (2, 2)),
                (128 * threads, (14, 14), (1, 1)), (128 * threads, (15, 13), (2, 2)),
                (64 * threads, (28, 28), (1, 1)), (64 * threads, (3, 30), (2, 1)))):
            name = FUSED[i % len(FUSED)]
            run_plain(isp, s, (1, 1), (1, 1), name, C, 1, [threads, i], expect_plain=False)
    finally:
        dnnq.set_num_threads(old)



@pytest.mark.parametrize("threads", [1, 2, 3])
def test_plain_random_geometries(fused_bands, threads):
    """Random 3x3 depthwise problems on plain data under the default choice of kernel (plain
    kernel, its VBMI stride-2 rows, or the channels-last copies, fused per unit or not):
    heights and widths 1 - 70, strides 1 / 2 along each dim, paddings 0 - 2 on each side,
    1 - 200 channels, 1 - 3 images, every fused epilogue kind; against oneDNN."""
    rng = np.random.default_rng([threads, 77])
    old = dnnq.get_num_threads()
    dnnq.set_num_threads(threads)
    try:
        for i in range(24):
            s = tuple(int(v) for v in rng.integers(1, 3, 2))
            pl = tuple(int(v) for v in rng.integers(0, 3, 2))
            pr = tuple(int(v) for v in rng.integers(0, 3, 2))
            isp = tuple(max(int(v), 3 - a - b) for v, a, b in zip(rng.integers(1, 71, 2), pl, pr))
            C = int(rng.integers(1, 201))
            mb = int(rng.integers(1, 4))
            name = FUSED[int(rng.integers(len(FUSED)))]
            ow = (isp[1] + pl[1] + pr[1] - 3) // s[1] + 1
            oh = (isp[0] + pl[0] + pr[0] - 3) // s[0] + 1
            rng_case = [threads, i]
            flat = AVX512 and VBMI and flat_takes(isp, s, pl, pr)
            p = run_plain(isp, s, pl, pr, name, C, mb, rng_case,
                          expect_plain=AVX512 and ow >= conv_mod.DW_PLAIN_MIN_OW or flat)
            assert (p._dw_plain == 3) == flat
    finally:
        dnnq.set_num_threads(old)
