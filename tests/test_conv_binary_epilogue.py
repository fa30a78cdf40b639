"""Binary post-ops whose input is the same for every pixel (one value per output channel, or
one for all) inside the fused AVX-512 epilogues: the micro-kernel's register chain, the stored
tiles of 16 channels by groups of four pixels, the general chain over a stored tile; and on the
C-level execute path (ConvExec).  dnnq.onnx's rounding="every" gives these chains: a
QuantizeLinear / DequantizeLinear pair (linear, round, clip, linear) and then a
BatchNormalization as a per-channel multiply and add.  Compared with oneDNN 3.2, bit for bit."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SRC_1,
                  DNNL_ARG_ATTR_MULTIPLE_POST_OP)
import dnnq.testing as onednn_ref
from test_convolution import Case, assert_same

needs_onednn = onednn_ref.requires_vnni


def pair_then_affine(rng, oc, algs=("mul", "add"), per_channel=(True, True)):
    """A rounding pair (scale 1 / 11, zero point 128 of a u8 tensor) then binary post-ops of
    inputs per channel (dims (1, oc, 1, 1)) or per tensor (1, 1, 1, 1)."""
    ops = [("eltwise", "linear", 11.0, 0.0), ("eltwise", "round", 0.0, 0.0),
           ("eltwise", "clip", -128.0, 127.0), ("eltwise", "linear", 1 / 11, 0.0)]
    for alg, pc in zip(algs, per_channel):
        shape = (1, oc, 1, 1) if pc else (1, 1, 1, 1)
        lo = 0.25 if alg == "div" else -2.0
        x = rng.uniform(lo, 2.0, shape).astype(np.float32)
        ops.append(("binary", alg, x))
    return ops


# (G, ICg, OCg, kernel, spatial, deconvolution): tiles of 1 - 13 rows, panels of 1 - 70
# columns, K a multiple of 4 (accumulators in registers) or not (a stored tile), 1x1 / 3x3 /
# the stem's 3x3 stride 2 of 3 channels, 16 depthwise channels (stored tiles of four pixels
# per vector), 40 depthwise channels, a deconvolution
SHAPES = [(1, 16, 17, (1, 1), (1, 13), False), (1, 12, 70, (1, 1), (2, 7), False),
          (1, 8, 33, (3, 3), (3, 5), False), (1, 7, 1, (3, 3), (4, 4), False),
          (1, 5, 48, (1, 1), (5, 3), False), (1, 3, 16, (3, 3), (24, 20), False),
          (16, 1, 1, (3, 3), (3, 31), False), (16, 1, 1, (3, 3), (2, 6), False),
          (40, 1, 1, (3, 3), (4, 9), False), (1, 24, 20, (2, 2), (3, 5), True),
          (1, 8, 66, (3, 3), (3, 4), True)]


@needs_onednn
@pytest.mark.parametrize("src_dt", ["u8", "s8"])
def test_pair_then_per_channel_affine(isa, src_dt):
    rng = np.random.default_rng(61)
    for G, ICg, OCg, k, isp, deconv in SHAPES:
        s = (2, 2) if (ICg == 3 or k == (2, 2)) else (1, 1)
        pl = (0, 0) if deconv and k == (2, 2) else (k[0] // 2, k[1] // 2)
        ops = pair_then_affine(rng, G * OCg)
        c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, s=s, pl=pl, deconv=deconv,
                 src_dt=src_dt, dst_dt="u8", bias_dt="f32",
                 q={"wei_scales": np.float32([0.002]), "dst_scales": np.float32([0.05]),
                    "dst_zp": np.int32([128])},
                 post_ops=ops, src_tag="nhwc", dst_tag="nhwc")
        name = f"{G}x{ICg}x{OCg} {k} {isp} {'deconv' if deconv else 'conv'}"
        ref = c.run_onednn()
        for prepared in (True, False):  # the C-level path, the checked one
            out, p = c.run_dnnq(prepared=prepared)
            assert_same(out, ref, ref_name=f"oneDNN ({name})")
        assert p._exec is not None


@needs_onednn
@pytest.mark.parametrize("algs,per_channel", [
    (("sub", "div"), (True, False)), (("min", "max"), (False, True)),
    (("mul", "add", "max"), (True, True, False))])
@pytest.mark.parametrize("dst_dt", ["s8", "f32"])
def test_binary_algorithms_in_the_chain(isa, algs, per_channel, dst_dt):
    """Every algorithm the fused epilogues apply, per channel and per tensor, into s8 (a clamp
    after the chain) and f32 (the general chain over a stored tile)."""
    rng = np.random.default_rng(67)
    for G, ICg, OCg, k, isp, deconv in SHAPES[:4] + SHAPES[6:7]:
        ops = pair_then_affine(rng, G * OCg, algs, per_channel)
        c = Case(rng, G=G, ICg=ICg, OCg=OCg, isp=isp, k=k, pl=(k[0] // 2, k[1] // 2),
                 dst_dt=dst_dt, bias_dt="f32", q={"wei_scales": [0.002]},
                 post_ops=ops, src_tag="nhwc", dst_tag="nhwc")
        assert_same(c.run_dnnq()[0], c.run_onednn(), ref_name=f"oneDNN ({G}x{ICg}x{OCg})")


def _affine_conv(oc=20):
    rng = np.random.default_rng(71)
    c = Case(rng, ICg=8, OCg=oc, isp=(5, 6), k=(3, 3), pl=(1, 1), dst_dt="u8", bias_dt="f32",
             q={"wei_scales": [0.002], "dst_scales": [0.05], "dst_zp": [128]},
             post_ops=pair_then_affine(rng, oc), src_tag="nhwc", dst_tag="nhwc")
    out, p = c.run_dnnq()
    return c, out, p


def _args(c, p):
    args = {DNNL_ARG_SRC: np.ascontiguousarray(np.moveaxis(c.src, 1, -1)).transpose(0, 3, 1, 2),
            DNNL_ARG_WEIGHTS: p.prepare_weights(c.wei), dnnq.DNNL_ARG_BIAS: c.bias}
    for key, v in (("wei_scales", dnnq.DNNL_ARG_WEIGHTS), ("dst_scales", DNNL_ARG_DST)):
        args[dnnq.DNNL_ARG_SCALE | v] = np.float32(c.q[key])
    args[dnnq.DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = np.int32(c.q["dst_zp"])
    for i, op in enumerate(c.post_ops):
        if op[0] == "binary":
            args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = op[2]
    return args


def test_per_channel_binaries_take_the_c_level_path():
    """Per-channel and per-tensor f32 inputs of the binary post-ops: the C-level path runs
    them (and gives the checked path's bytes); an input of another shape, dtype or layout
    falls back to the checked path, which names what is wrong."""
    c, ref, p = _affine_conv()
    assert p._exec is not None
    args = _args(c, p)
    out = p._exec.run(args)
    assert out is not None
    assert_same(out, ref)
    key = DNNL_ARG_ATTR_MULTIPLE_POST_OP(4) | DNNL_ARG_SRC_1
    good = args[key]
    for bad in (good.reshape(-1), good.astype(np.float64), np.asfortranarray(
            np.broadcast_to(good, (1, 20, 2, 1)))[:, :, :1]):
        args[key] = bad
        if bad.dtype == np.float32 and bad.shape == good.shape:
            continue  # (a size-1 dim's stride is free)
        assert p._exec.run(args) is None
    args[key] = good.reshape(-1)
    with pytest.raises(dnnq.InvalidArguments, match="post_op|SRC_1|dims"):
        p.execute(args)
    del args[key]
    with pytest.raises(dnnq.InvalidArguments, match="missing"):
        p.execute(args)


@needs_onednn
def test_per_pixel_binary_keeps_the_checked_path():
    """An input varying along the pixels: no C-level path, and the fused epilogues are left
    for the row epilogue (an input read per row)."""
    rng = np.random.default_rng(73)
    for shape in ((1, 20, 5, 6), (1, 1, 5, 1)):
        ops = pair_then_affine(rng, 20)
        ops[4] = ("binary", "mul", rng.uniform(-2, 2, shape).astype(np.float32))
        c = Case(rng, ICg=8, OCg=20, isp=(5, 6), k=(3, 3), pl=(1, 1), dst_dt="u8",
                 bias_dt="f32", q={"wei_scales": [0.002], "dst_zp": [128]}, post_ops=ops,
                 src_tag="nhwc", dst_tag="nhwc")
        out, p = c.run_dnnq()
        assert p._exec is None
        assert_same(out, c.run_onednn())
