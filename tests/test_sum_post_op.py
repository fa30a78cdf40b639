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
