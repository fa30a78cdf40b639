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
    """oneDNN 3.2's strided deconvolution kernel refuses a sum after another post-op and runs
    its AVX2 kernel instead (s16 pair saturation, s8 weights halved) even on an AVX-512 CPU;
    dnnq reproduces that kernel's numerics there (docs/convolution.md)."""
    rng = np.random.default_rng(len(src_dt) + len(first) + len(dst_dt))
    op = {"relu": ("eltwise", "relu", 0.0, 0.0), "linear": ("eltwise", "linear", 2.0, 0.5),
          "binary": ("binary", "add", rng.standard_normal((1, 11, 1, 1)).astype(np.float32))}
    c = Case(rng, ICg=9, OCg=11, isp=(4, 5), k=(3, 3), s=(2, 2), pl=(1, 1), deconv=True,
             src_dt=src_dt, dst_dt=dst_dt, bias_dt="f32",
             q={"src_scales": [0.25], "wei_scales": rng.uniform(0.001, 0.01, 11).astype(np.float32),
                "wei_scale_mask": 1},
             post_ops=[op[first], ("sum", 0.5, 0)], sum_prev=True)
    got, p = c.run_dnnq()
    assert "avx2_numerics" in p.impl_info
    np.testing.assert_array_equal(got, c.run_onednn())
