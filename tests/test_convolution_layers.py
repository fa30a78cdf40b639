"""Every ResNet-50 and MobileNet layer geometry (dnnq/bench/conv.py's lists) at batch 1 in the
issue's target configuration (u8 x s8 -> u8, per-OC weight scales, f32 bias, relu,
channels-last), bit-identical to oneDNN 3.2; and the execution's extra memory below 10 % of
the output for each of them (no im2col)."""
import tracemalloc

import numpy as np
import pytest

import dnnq
from dnnq.bench.conv import RESNET50, MOBILENET, build, parse_conv
import dnnq.testing as onednn_ref

LAYERS = [("resnet50", d) for d in RESNET50] + [("mobilenet", d) for d in MOBILENET]


@onednn_ref.requires_vnni
@pytest.mark.parametrize("net,desc", LAYERS, ids=[f"{n}:{parse_conv(d)['name']}" for n, d in LAYERS])
def test_layer_vs_onednn(net, desc):
    rng = np.random.default_rng(len(desc))
    b = build(desc, {"dt": "u8:s8:u8"}, rng)
    out = b["p"].execute(b["args"])
    ref = onednn_ref.convolution(b["src"], b["wei"], b["bias"], "u8", **b["ref_kw"])
    assert np.array_equal(out, ref), f"{(out != ref).sum()} of {out.size} differ"


@pytest.mark.parametrize("net,desc", LAYERS, ids=[f"{n}:{parse_conv(d)['name']}" for n, d in LAYERS])
def test_layer_extra_memory(net, desc):
    rng = np.random.default_rng(1)
    b = build(desc, {"dt": "u8:s8:u8"}, rng)
    p, args = b["p"], b["args"]
    p.execute(args)  # first call: the cached compensation vector
    tracemalloc.start()
    try:
        p.execute(args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out_bytes = args[dnnq.DNNL_ARG_DST].nbytes
    # buffers: < 10 % of the output (no im2col; the C side adds only a row-pointer table and
    # a border-row buffer of a few KB per thread, not traced here); plus a constant 4 KB for the Python objects of the
    # call itself (array views, argument tuples), independent of the problem size
    assert peak < 0.1 * out_bytes + 4096, f"peak {peak} bytes for an output of {out_bytes}"
