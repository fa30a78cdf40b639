"""Forward convolutions oneDNN 3.2 runs on its reference kernel (ref:any) besides the varying
binary inputs: per-channel source or destination zero points, and a 3-D depthwise
convolution (its GEMM-based convolution, x64:gemm_s8u8s32 / gemm_s8s8s32) whose sum post-op
is not first or has a zero point.  dnnq follows the reference order there (+ref_order), and
the GEMM-based convolution's own numerics elsewhere; bit for bit against the real oneDNN."""
import numpy as np
import pytest

from dnnq.testing import _primitives as onednn
from _quant_ref import NP
from test_convolution import Case, needs_onednn
from test_deconv_impl import assert_bits, assert_near_model
from _onednn_kernels import MODELLED_HOST, exact_dot_products

pytestmark = needs_onednn

DW3D = dict(G=19, ICg=1, OCg=1, grouped=True, isp=(3, 4, 5), k=(3, 3, 3), s=(1, 2, 1),
            pl=(1, 1, 1), d=(0, 0, 0))
GEOMETRIES = {
    "per_ic_src_zp": (dict(ICg=8, OCg=16, isp=(5, 6)),
                      dict(src_zp=np.arange(-2, 6, dtype=np.int32), src_zp_mask=2), []),
    "per_oc_dst_zp": (dict(ICg=8, OCg=16, isp=(5, 6)),
                      dict(dst_zp=np.arange(-8, 8, dtype=np.int32), dst_zp_mask=2), []),
    "dw3d_sum_after_relu": (DW3D, {}, [("eltwise", "relu", 0.0, 0.0), ("sum", 0.3, 0)]),
    "dw3d_sum_zp": (DW3D, {}, [("sum", 0.3, 2)]),
    "dw3d_gemm": (DW3D, {}, [("sum", 0.3, 0)]),  # oneDNN's GEMM-based convolution: exact
}
CHAINS = {"linear": [("eltwise", "linear", 0.37, -1.3)],
          "nan": [("eltwise", "sqrt", 0.0, 0.0)],
          "nan_hardswish": [("eltwise", "sqrt", 0.0, 0.0),
                            ("eltwise", "hardswish", 1.0 / 6.0, 0.5)]}


def _params():
    for geometry, (_, q, _) in sorted(GEOMETRIES.items()):
        for dst_dt in (["s8", "u8"] if "dst_zp" in q or geometry == "dw3d_sum_zp"
                       else ["f32", "s32", "s8", "u8"]):
            for src_dt in ("u8", "s8"):
                for chain in sorted(CHAINS):
                    yield geometry, src_dt, dst_dt, chain


@pytest.mark.parametrize("geometry,src_dt,dst_dt,chain", list(_params()))
def test_reference_order_of_forward_convolution(geometry, src_dt, dst_dt, chain):
    g, qx, pre = GEOMETRIES[geometry]
    rng = np.random.default_rng(len(geometry) + 5 * len(chain) + len(dst_dt))
    q = dict(src_scales=np.float32([0.05]), wei_scales=np.float32([0.02]),
             dst_scales=np.float32([1.5]), **qx)
    c = Case(rng, src_dt=src_dt, dst_dt=dst_dt, bias_dt="f32", q=q, **g)
    c.post_ops = list(pre) + CHAINS[chain]
    if pre:
        c.dst_prev = (rng.normal(0, 20, c.dst_shape).astype(np.float32) if dst_dt == "f32"
                      else rng.integers(0, 100, c.dst_shape).astype(NP[dst_dt]))
    kw = {k: v for k, v in c.q.items() if v is not None}
    want, impl = onednn.convolution(c.src, c.wei, c.bias, dst_dt, post_ops=c.post_ops,
                                    dst_prev=c.dst_prev, return_impl=True, **c.geom, **kw)
    got, p = c.run_dnnq()
    ref = impl == "ref:any"
    dnnq_ref = p.impl_info.endswith("+ref_order")
    assert dnnq_ref == (geometry != "dw3d_gemm"), p.impl_info
    if MODELLED_HOST:
        assert ref == dnnq_ref, impl
    if ref == dnnq_ref and exact_dot_products(impl):
        assert_bits(got, want)
    else:  # another CPU's oneDNN ran another order: dnnq keeps the modelled one
        assert_near_model(got, c)
        pytest.skip(f"oneDNN ran {impl} on this CPU; compared with the numpy model")
