"""The threads' split of GEMM and convolution work by destination alignment: where the
destination's rows share cache lines between 64-column panels (its first byte off a 64-byte
line, as numpy puts large arrays, or rows of a length that is not a multiple of 64 bytes) and
the weights are at most DNNQ_ROWS_OUTER_MAX_WEIGHTS, two threads split rows (GemmPlan.launch's
m_outer, the convolution items' rows_outer) instead of panels; with weights that small the
threads run thread shares (dnnq_shares_init: each thread its own band of rows first, then
what is left of the others').  Every split must give oneDNN's bits, with the destination at
offsets 0, 16 and 48 bytes from a cache line, at 1, 2 and 3 threads, with and without shares, on the GEMM driver (1x1), the tiled path (3x3, strided 1x1, the folded stem) and the
general driver (a 5x5 depthwise)."""
import numpy as np
import pytest

import dnnq
from dnnq.bench.conv import build
from dnnq.primitives._kernels import _conv, _gemm
from dnnq.testing import requires_onednn
import dnnq.testing as onednn

# (descriptor, what it covers); every one does >= 2M multiply-adds (64K for depthwise) so that
# two threads run, and has weights of at most 256 KiB
PROBLEMS = [
    ("mb1ic64ih20oc256oh20kh1ph0", "GEMM driver, 4 panels"),
    ("mb2ic64ih14oc128oh14kh1ph0", "GEMM driver, 2 images"),
    ("mb1ic128ih28oc128oh14kh1sh2ph0", "tiled path, strided 1x1"),
    ("mb1ic32ih20oc96oh20kh3ph1", "tiled path, rows of 96 bytes"),
    ("mb1ic3ih40oc64oh20kh7sh2ph3", "tiled path, folded stem"),
    ("g64mb1ic64ih20oc64oh20kh5ph2", "general driver, 5x5 depthwise"),
]


def with_dst_offset(args, offset):
    """args with the destination moved to `offset` bytes past a 64-byte line (same strides)"""
    d = np.asarray(args[dnnq.DNNL_ARG_DST])
    raw = np.zeros(d.nbytes + 128, np.uint8)
    base = (-raw.ctypes.data) % 64 + offset
    view = np.lib.stride_tricks.as_strided(raw[base:base + d.nbytes].view(d.dtype), d.shape,
                                           d.strides)
    assert view.ctypes.data % 64 == offset
    moved = dict(args)
    moved[dnnq.DNNL_ARG_DST] = view
    return moved, view


@requires_onednn
@pytest.mark.parametrize("desc,what", PROBLEMS, ids=[w for _, w in PROBLEMS])
def test_split_by_alignment_matches_onednn(desc, what):
    b = build(desc, {"dt": "u8:s8:u8"}, np.random.default_rng(len(desc)))
    want = onednn.convolution(b["src"], b["wei"], b["bias"], b["ddt"], **b["ref_kw"])
    p, args = b["p"], b["args"]
    before = dnnq.get_num_threads()
    try:
        for shares in (True, False):
            _gemm.set_thread_shares(shares)
            _conv.set_thread_shares(shares)
            for threads in (1, 2, 3):
                dnnq.set_num_threads(threads)
                for offset in (0, 16, 48):
                    a, dst = with_dst_offset(args, offset)
                    p.execute(a)
                    got = np.asarray(dst)
                    bad = np.flatnonzero(got != want)
                    assert bad.size == 0, (shares, threads, offset,
                                           f"{bad.size} of {got.size} differ")
    finally:
        dnnq.set_num_threads(before)
        _gemm.set_thread_shares(True)
        _conv.set_thread_shares(True)
