"""Depthwise convolutions on several threads run thread shares (ConvPlan._launch: each thread a
contiguous run of the items, panels innermost, the rest taken from the others' ends) with items
sized for the thread count of each execution (_conv_kernel_choice.depthwise_item_pixels): the
bits must be oneDNN's at 1, 2 and 3 threads whatever the thread count at creation, on every
depthwise kernel (the 3x3 column kernel and its 16-channel path, the row kernels dw_rowsk and
dw_rows3, the general driver, the plain-data kernels and the channels-last copies), with row
counts and widths the threads do not divide, partial panels, several images, and a destination
off a cache line.  The destination is refilled before each run, so an item left out fails."""
import numpy as np
import pytest

import dnnq
from dnnq.bench.conv import build
from dnnq.primitives import _conv_kernel_choice as choice
from dnnq.testing import requires_vnni
import dnnq.testing as onednn
from test_thread_split import with_dst_offset

# PP-OCR's chain of post-ops (the tile epilogue after the column kernel), and relu (the fused
# epilogue the plain kernels need)
CHAIN = {"dt": "u8:s8:u8", "attr-scales": "src:common:0.25+wei:per_oc+dst:common:2",
         "attr-post-ops": "clip:-4.96:4.77+hardswish:0.1666:0.5+clip:-0.38:4.75+"
                          "linear:0.62:0+clip:-0.238:2.95+linear:1:0.0886"}
RELU = {"dt": "u8:s8:u8"}

# (descriptor, channels-last, attributes, the kernel on AVX-512 VNNI); each does at least 64K
# multiply-adds, so that it splits over the threads
PROBLEMS = [
    ("g64mb1ic64ih13iw37oc64oh13ow37kh3ph1", True, CHAIN, "dw3x3"),         # 13 rows, odd width
    ("g128mb1ic128ih11iw29oc128oh6ow15kh3sh2ph1", True, CHAIN, "dw3x3"),    # stride 2
    ("g136mb1ic136ih7iw33oc136oh7ow17kh3sh1sw2ph1", True, CHAIN, "dw3x3"),  # partial panel
    ("g16mb1ic16ih25iw61oc16oh25ow61kh3ph1", True, CHAIN, "dw3x3"),         # 16-channel path
    ("g48mb2ic48ih9iw31oc48oh9ow31kh3ph1", True, CHAIN, "dw3x3"),           # two images
    ("g240mb1ic240ih5iw23oc240oh5ow23kh5ph2", True, CHAIN, "dw_rowsk"),     # rows cut
    ("g96mb1ic96ih7iw19oc96oh4ow10kh5sh2ph2", True, CHAIN, "dw_rowsk"),
    ("g480mb1ic480ih3iw17oc480oh3ow17kh5ph2", True, CHAIN, "dw_rowsk"),     # 3 rows, 8 panels
    ("g72mb3ic72ih6iw11oc72oh6ow11kh5ph2", True, CHAIN, "dw_rowsk"),        # three images
    ("g64mb1ic64ih9iw27oc64oh9ow27kh5kw3ph2pw1", True, CHAIN, "dw_rows3"),
    ("g64mb1ic64ih15iw21oc64oh15ow21kh3dh1ph2", True, CHAIN, "general"),    # dilated
    ("g128mb1ic128ih21iw50oc128oh21ow50kh3ph1", False, RELU, "dw3x3_plain"),
    ("g64mb1ic64ih23iw51oc64oh12ow26kh3sh2ph1", False, RELU, "dw3x3_plain"),
    ("g128mb1ic128ih20iw30oc128oh20ow30kh3ph1", False, CHAIN, "dw3x3"),     # nchw copies
]


def _with_threads(n, fn):
    before = dnnq.get_num_threads()
    dnnq.set_num_threads(n)
    try:
        return fn()
    finally:
        dnnq.set_num_threads(before)


# oneDNN's bytes are dnnq's defaults where it runs its VNNI kernels (its AVX2 depthwise kernel
# on another host is not the reference)
@requires_vnni
@pytest.mark.parametrize("desc,cl,knobs,kernel", PROBLEMS, ids=[p[0] for p in PROBLEMS])
@pytest.mark.parametrize("created_at", [1, 3])
def test_depthwise_shares_match_onednn(desc, cl, knobs, kernel, created_at):
    old_cap = dnnq.set_primitive_cache_capacity(0)  # a primitive made at `created_at` threads
    try:
        b = _with_threads(created_at, lambda: build(desc, knobs, np.random.default_rng(7),
                                                    tag=cl))
    finally:
        dnnq.set_primitive_cache_capacity(old_cap)
    p, args = b["p"], b["args"]
    if (dnnq.get_effective_cpu_isa() in ("avx512_core_vnni", "avx512_core_amx") and
            dnnq.cpu_info()["avx512_vbmi"]):  # (the plain kernels' choice depends on VBMI)
        assert p._impl.kernel == kernel
    want = onednn.convolution(b["src"], b["wei"], b["bias"], b["ddt"], **b["ref_kw"])
    for threads in (1, 2, 3):
        for offset in ((0, 16) if threads == 2 else (0,)):
            a, dst = with_dst_offset(args, offset)
            dst[...] = 0xA5  # an item left out keeps this
            _with_threads(threads, lambda: p.execute(a))
            got = np.asarray(dst)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (threads, offset, f"{bad.size} of {got.size} differ")


class _Geo:
    """the fields of a ConvGeometry that the item sizing reads"""

    def __init__(self, N, C, od, oh, ow, sh=1):
        self.N, self.OC, self.dst, self.strides = N, C, (od, oh, ow), (1, sh, 1)
        self.out_pixels = od * oh * ow


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("N,C,od,oh,ow", [(1, 240, 1, 12, 120), (1, 480, 1, 3, 120),
                                          (1, 192, 1, 46, 60), (2, 96, 1, 7, 19),
                                          (3, 40, 2, 5, 13), (1, 8, 1, 1, 7)])
def test_row_kernel_blocks_split_evenly(N, C, od, oh, ow, threads):
    """dw_rowsk's pixel blocks on several threads: block starts on whole 64-byte lines of a
    u8 destination where the pixel size allows, and the threads' shares of the (image, block,
    panel) items within a line of pixels per block of the even split where the images have a
    few lines of pixels per thread (480 channels of 3 rows: not 2 rows against 1)."""
    geo = _Geo(N, C, od, oh, ow)
    panels = -(-C // 64)
    mc = choice.shared_image_block(geo, panels, threads, 1)
    npix = geo.out_pixels
    assert 1 <= mc <= npix
    line = 64 // int(np.gcd(64, C))
    assert mc % line == 0 or mc == npix
    blocks = -(-npix // mc)
    sizes = [min(mc, npix - b * mc) for b in range(blocks)] * N  # (image, block) pixels
    items = [s for s in sizes for _ in range(panels)]
    bounds = choice.share_bounds(len(items), threads)
    loads = [sum(items[a:b]) for a, b in zip(bounds, bounds[1:])]
    if npix >= 4 * threads * line:
        assert max(loads) <= N * npix * panels / threads + line * panels * blocks * N, loads
        assert len(items) >= 4 * threads or blocks * line * 2 > npix
