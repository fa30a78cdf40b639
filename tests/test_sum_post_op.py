"""The sum post-op's rounding: oneDNN fuses `scale * prev` into the accumulation
(`fma(scale, prev - zp, v)`), which an f32 destination with a scale whose products are inexact
(0.3) shows; MatMul and Convolution against oneDNN 3.2 on every ISA level."""
import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS,
                  DNNL_ARG_DST, DNNL_ARG_SCALE)
from dnnq.testing import _primitives as onednn
from test_convolution import Case
from _conv_ref import deconv_acc

DT = {"f32": np.float32, "u8": np.uint8, "s8": np.int8, "s32": np.int32}


def _prev(rng, dt, shape):
    if dt == "f32":
        return rng.normal(0, 50, shape).astype(np.float32)
    return rng.integers(0, 100, shape).astype(DT[dt])


@pytest.mark.parametrize("dst_dt,scale,zp", [("f32", 0.3, 0), ("f32", 1.7, 0), ("u8", 0.3, 0),
                                             ("s8", 0.7, 3), ("s32", 1.3, -2)])
def test_matmul_sum(isa, dst_dt, scale, zp):
    rng = np.random.default_rng(int(scale * 10) + zp)
    M, K, N = 13, 64, 70   # a row tail and a column tail
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    prev = _prev(rng, dst_dt, (M, N))
    want = onednn.matmul(a, w, None, dst_dt, src_scales=[0.1], wei_scales=[0.013],
                         post_ops=[("sum", scale, zp)], dst_prev=prev)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0).set_scales_mask(DNNL_ARG_WEIGHTS, 0)
    ops = PostOps()
    ops.append_sum(scale, zp)
    attr.set_post_ops(ops)
    p = dnnq.MatMul(MD((M, K), "u8"), MD((K, N), "s8"), MD((M, N), dst_dt), attr=attr)
    got = p.execute({DNNL_ARG_SRC: a, DNNL_ARG_WEIGHTS: w, DNNL_ARG_DST: prev.copy(),
                     DNNL_ARG_SCALE | DNNL_ARG_SRC: np.float32([0.1]),
                     DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.float32([0.013])})
    np.testing.assert_array_equal(got, want)


GEOMETRIES = {"brgconv": dict(ICg=16, OCg=70, isp=(7, 7)),
              "1x1": dict(ICg=16, OCg=70, isp=(7, 7), k=(1, 1), pl=(0, 0)),
              "depthwise": dict(G=70, ICg=1, OCg=1, isp=(9, 9), grouped=True),
              "depthwise_s2": dict(G=37, ICg=1, OCg=1, isp=(9, 9), s=(2, 2), grouped=True)}


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("tag", [None, "nhwc"])
@pytest.mark.parametrize("dst_dt,scale,zp", [("f32", 0.3, 0), ("u8", 0.3, 0), ("s8", 0.7, 3)])
def test_convolution_sum(isa, geometry, tag, dst_dt, scale, zp):
    rng = np.random.default_rng(int(scale * 10) + zp + (tag is None))
    c = Case(rng, src_dt="u8", dst_dt=dst_dt, bias_dt="f32",
             q={"src_scales": [0.1], "wei_scales": [0.013]}, post_ops=[("sum", scale, zp)],
             sum_prev=True, src_tag=tag, dst_tag=tag, **GEOMETRIES[geometry])
    got, _ = c.run_dnnq()
    np.testing.assert_array_equal(got, c.run_onednn())


@pytest.mark.parametrize("src_dt", ["u8", "s8"])
@pytest.mark.parametrize("first", ["relu", "linear", "binary"])
@pytest.mark.parametrize("dst_dt", ["u8", "f32", "s32"])
def test_strided_deconvolution_with_a_post_op_before_the_sum(isa, src_dt, first, dst_dt):
    """A sum after another post-op: oneDNN 3.2 runs its AVX2 kernel here on an AVX-512 CPU
    without AVX-VNNI (s16 pair saturation, s8 weights halved) and an exact brgemm kernel on
    one with AVX-VNNI.  dnnq's default numerics are exact on every CPU: equal to the numpy
    model, and to oneDNN where oneDNN's kernel is exact (Case.run_onednn)."""
    rng = np.random.default_rng(len(src_dt) + len(first) + len(dst_dt))
    op = {"relu": ("eltwise", "relu", 0.0, 0.0), "linear": ("eltwise", "linear", 2.0, 0.5),
          "binary": ("binary", "add", rng.standard_normal((1, 11, 1, 1)).astype(np.float32))}
    c = Case(rng, ICg=9, OCg=11, isp=(4, 5), k=(3, 3), s=(2, 2), pl=(1, 1), deconv=True,
             src_dt=src_dt, dst_dt=dst_dt, bias_dt="f32",
             q={"src_scales": [0.25], "wei_scales": rng.uniform(0.001, 0.01, 11).astype(np.float32),
                "wei_scale_mask": 1},
             post_ops=[op[first], ("sum", 0.5, 0)], sum_prev=True)
    got, p = c.run_dnnq()
    assert "avx2_numerics" not in p.impl_info
    np.testing.assert_array_equal(got, c.run_numpy())
    np.testing.assert_array_equal(got, c.run_onednn())


@pytest.mark.parametrize("src_dt,wei_value", [("u8", 127), ("s8", 127), ("s8", -127)])
@pytest.mark.parametrize("stride", [1, 2])
def test_deconvolution_relu_sum_does_not_saturate(isa, src_dt, wei_value, stride):
    """Full-range data (u8 255 or s8 -128 against s8 +-127: every vpmaddubsw pair would
    saturate s16) through a deconvolution with relu then sum, s32 destination: the exact sums,
    at every ISA level (an s16-saturating kernel returns about half of them)."""
    IC, OC = 4, 3
    x = np.full((1, IC, 3, 3), 255 if src_dt == "u8" else -128,
                np.uint8 if src_dt == "u8" else np.int8)
    w = np.full((OC, IC, 3, 3), wei_value, np.int8)
    attr = PrimitiveAttr()
    ops = PostOps()
    ops.append_eltwise("relu", 0.0, 0.0)
    ops.append_sum(1.0, 0)
    attr.set_post_ops(ops)
    oh = (3 - 1) * stride - 2 + 3
    p = dnnq.Deconvolution(MD(x.shape, src_dt), MD(w.shape, "s8"), MD((1, OC, oh, oh), "s32"),
                           strides=(stride, stride), padding_l=(1, 1), padding_r=(1, 1),
                           attr=attr)
    prev = np.arange(OC * oh * oh, dtype=np.int32).reshape(1, OC, oh, oh)
    got = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DNNL_ARG_DST: prev.copy()})
    acc = deconv_acc(x, w, (stride, stride), (1, 1), (1, 1), (0, 0))
    want = np.maximum(acc, 0) + prev
    assert np.abs(acc).max() > 2 * 32767  # pairs would have saturated
    assert "avx2_numerics" not in p.impl_info
    np.testing.assert_array_equal(got, want)
