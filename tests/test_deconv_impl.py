"""Deconvolution against the real oneDNN 3.2 where it does not run the kernel its ISA suggests
(docs/convolution.md "Numerics"): dnnq's model of oneDNN's choice (dnnq/primitives/
_conv_impl.py) against the implementation name oneDNN reports, and the numerics of each
choice bit for bit -- the GEMM-based deconvolution's reference order (+gemm_order),
jit_deconvolution's u8 NaN store (+jit_deconv_nan), the brgemm strided kernel (exact, where
dnnq used to apply the AVX2 kernel's numerics) -- plus the one oneDNN bug dnnq does not
reproduce (tap-less rows of jit_deconvolution with an s8 source or a source zero point)."""
import numpy as np
import pytest

from dnnq.testing import _primitives as onednn
from _conv_ref import deconv_acc
from _quant_ref import NP
from test_convolution import Case, assert_same, needs_onednn
from _onednn_kernels import MODELLED_HOST, exact_dot_products, requires_modelled_host

pytestmark = needs_onednn


def onednn_kind(impl):
    """dnnq's name (_conv_impl.py) of the kernel behind a oneDNN implementation name."""
    if impl.startswith("jit_uni_int8:"):
        return "avx2" if not exact_dot_products(impl) else "jit"
    for prefix, kind in (("conv:any+", "gemm"), ("jit_deconvolution:", "jit"),
                         ("jit_int8_1x1:", "jit_1x1"), ("ref", "gemm")):
        if impl.startswith(prefix):
            return kind
    if impl.startswith("brg_conv:"):
        return "brgconv_strided" if "brgconv_strided" in impl else "brgconv"
    raise AssertionError(f"unexpected oneDNN implementation {impl}")


def assert_bits(got, want):
    """Bit-identical (f32 compared as bits: -0.0 is not +0.0; any NaN matches a NaN)."""
    assert_same(got, want, bits=True, ref_name="oneDNN")


def _order(kind):
    """The f32 order class of a kernel: the GEMM-based deconvolution's reference loops, or
    the fused epilogue of every other kernel."""
    return "gemm" if kind == "gemm" else "fused"


def assert_near_model(got, c):
    """Against the numpy model (the fused order): f32 within an ulp or two, 8-bit and s32
    within 1 on a small share of the elements (the orders differ by one f32 rounding)."""
    want = c.run_numpy()
    if got.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
    else:
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= 1 and (diff > 0).mean() <= 0.02


def check_against_onednn(c, got, want, impl, p):
    """Bit for bit against oneDNN where its kernel shares dnnq's numerics for this problem
    (exact dot products, the same f32 order); against the numpy model elsewhere.  On the
    modelled host (_onednn_kernels.py) dnnq's model must also name the kernel oneDNN ran.
    Returns whether the comparison was with oneDNN."""
    kind = onednn_kind(impl)
    if MODELLED_HOST:
        assert p._onednn_kernel == kind, (impl, p.impl_info)
    if exact_dot_products(impl) and _order(kind) == _order(p._onednn_kernel):
        assert_bits(got, want)
        return True
    assert_near_model(got, c)
    return False


def run_both(c):
    kw = {k: v for k, v in c.q.items() if v is not None}
    want, impl = onednn.deconvolution(c.src, c.wei, c.bias, c.dst_dt, post_ops=c.post_ops,
                                      dst_prev=c.dst_prev, return_impl=True, **c.geom, **kw)
    got, p = c.run_dnnq()
    return got, want, impl, p


def binary(rng, shape_of):
    return lambda dst_shape: ("binary", "add",
                              rng.standard_normal(shape_of(dst_shape)).astype(np.float32))


# (Case geometry, the post-ops the geometry needs): every rule of _conv_impl.py, taken
# from the implementation names oneDNN 3.2 reports on avx512_core_vnni
FULL = (lambda s: s)
PER_N = (lambda s: (s[0], 1) + (1,) * (len(s) - 2))
PER_SP = (lambda s: (1, 1) + tuple(s[2:]))
PER_C = (lambda s: (1, s[1]) + (1,) * (len(s) - 2))
GEOMETRIES = {
    # GEMM-based (conv:any+gemm_*)
    "full_binary": (dict(mb=2, ICg=8, OCg=16, isp=(5, 6), s=(2, 2)), FULL),
    "per_image_binary_s1": (dict(mb=2, ICg=8, OCg=16, isp=(5, 6)), PER_N),
    "spatial_binary": (dict(ICg=5, OCg=16, isp=(4, 4), k=(4, 4), s=(2, 2)), PER_SP),
    "per_ic_src_zp": (dict(ICg=8, OCg=16, isp=(5, 6), s=(2, 2),
                           q=dict(src_zp=np.arange(-3, 5, dtype=np.int32), src_zp_mask=2)), None),
    "per_oc_dst_zp": (dict(ICg=8, OCg=19, isp=(5, 6),
                           q=dict(dst_zp=np.arange(-9, 10, dtype=np.int32), dst_zp_mask=2)),
                      None),
    "depthwise_s8": (dict(G=16, ICg=1, OCg=1, grouped=True, isp=(5, 6), src_dt="s8"), None),
    "depthwise_s8_s2": (dict(G=19, ICg=1, OCg=1, grouped=True, isp=(5, 6), s=(2, 2),
                             src_dt="s8"), None),
    "depthwise_3d": (dict(G=16, ICg=1, OCg=1, grouped=True, isp=(1, 5, 6), k=(1, 3, 3),
                          s=(1, 1, 1), pl=(0, 1, 1), d=(0, 0, 0)), None),
    "odd_groups_s2": (dict(G=3, ICg=5, OCg=3, isp=(5, 6), s=(2, 2)), None),
    "dilated_s2": (dict(ICg=8, OCg=16, isp=(5, 6), s=(2, 2), d=(1, 1)), None),
    "kernel_in_padding": (dict(ICg=8, OCg=16, isp=(7, 8), pl=(3, 3), pr=(0, 0)), None),
    # brg_conv (stride 1) and brgconv_strided (every dst dim a multiple of the stride)
    "brgconv": (dict(ICg=8, OCg=16, isp=(5, 6)), None),
    "brgconv_strided": (dict(ICg=8, OCg=16, isp=(5, 6), k=(4, 4), s=(2, 2)), PER_C),
    "brgconv_strided_dw_s8": (dict(G=16, ICg=1, OCg=1, grouped=True, isp=(5, 6), k=(4, 4),
                                   s=(2, 2), src_dt="s8"), None),
    # jit_int8_1x1 and jit_deconvolution
    "jit_1x1_grouped": (dict(G=2, ICg=8, OCg=8, isp=(5, 6), k=(1, 1), pl=(0, 0)), None),
    "jit_s2": (dict(ICg=8, OCg=16, isp=(5, 6), s=(2, 2)), None),
    "jit_small_ic_s1": (dict(ICg=4, OCg=16, isp=(5, 6)), None),
    "jit_grouped_s1": (dict(G=4, ICg=8, OCg=8, isp=(5, 6)), None),
    "jit_depthwise_u8": (dict(G=16, ICg=1, OCg=1, grouped=True, isp=(5, 6)), None),
    "jit_1d": (dict(ICg=8, OCg=16, isp=(6,), k=(3,), s=(2,), pl=(1,), d=(0,)), None),
}
CHAINS = {"none": [], "relu_sum": [("eltwise", "relu", 0.0, 0.0), ("sum", 0.3, 0)],
          "sum_zp": [("sum", 1.7, 2)], "linear": [("eltwise", "linear", 0.37, -1.3)]}


def make_case(rng, geometry, chain, src_dt=None, dst_dt="s8", bias_dt="f32"):
    kw, bin_shape = GEOMETRIES[geometry]
    kw = dict(kw)
    q = dict(kw.pop("q", {}))
    q.update(src_scales=np.float32([0.05]), wei_scales=np.float32([0.02]),
             dst_scales=np.float32([1.5]))
    nsp = len(kw["isp"])
    kw.setdefault("k", (3,) * nsp)
    kw.setdefault("pl", (1,) * nsp)
    kw.setdefault("s", (1,) * nsp)
    kw.setdefault("d", (0,) * nsp)
    if src_dt is not None:
        kw["src_dt"] = src_dt
    c = Case(rng, deconv=True, dst_dt=dst_dt, bias_dt=bias_dt, q=q, **kw)
    ops = [binary(rng, bin_shape)(c.dst_shape)] if bin_shape is not None else []
    ops += [op for op in CHAINS[chain]]
    if chain == "sum_zp" and dst_dt not in ("s8", "u8"):
        ops = [op if op[0] != "sum" else ("sum", 1.7, 0) for op in ops]
    c.post_ops = ops
    if any(op[0] == "sum" for op in ops):
        c.dst_prev = rng.integers(0, 100, c.dst_shape).astype(NP[dst_dt])
    return c


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
def test_kernel_choice_and_results(geometry, chain):
    """dnnq's model picks the kernel oneDNN reports, and follows its numerics bit for bit
    (full-range data: the AVX2 kernel's s16 pair saturation shows if wrongly applied)."""
    rng = np.random.default_rng(len(geometry) * 7 + len(chain))
    c = make_case(rng, geometry, chain)
    got, want, impl, p = run_both(c)
    assert ("+gemm_order" in p.impl_info) == (p._onednn_kernel == "gemm")
    assert "+avx2_numerics" not in p.impl_info  # exact on every CPU (docs/numerics.md)
    check_against_onednn(c, got, want, impl, p)


GEMM_GEOMETRIES = sorted(g for g in GEOMETRIES if g in (
    "full_binary", "per_image_binary_s1", "spatial_binary", "per_ic_src_zp", "per_oc_dst_zp",
    "depthwise_s8", "depthwise_s8_s2", "depthwise_3d", "odd_groups_s2", "dilated_s2",
    "kernel_in_padding"))
# chains that show the reference order: linear and the sum not fused (1 ulp in f32), NaN
# from sqrt of a negative value stored as C converts it (s8 0, s32 INT_MIN, u8 0), hardswish
# keeping a NaN
GEMM_CHAINS = {"linear": [("eltwise", "linear", 0.37, -1.3)],
               "sum": [("sum", 0.3, 0)],
               "relu": [("eltwise", "relu", 0.0, 0.0)],  # the fused epilogue stays
               "leaky_relu": [("eltwise", "relu", 0.1, 0.0)],
               "nan_hardswish": [("eltwise", "sqrt", 0.0, 0.0),
                                 ("eltwise", "hardswish", 1.0 / 6.0, 0.5)],
               "nan": [("eltwise", "sqrt", 0.0, 0.0)]}


def _gemm_params():
    """Every chain on f32 and s8 destinations (where the orders differ most), NaN and linear
    on the others; u8 sources (gemm_s8u8s32) with f32 / u8 destinations, s8 ones
    (gemm_s8s8s32) with s8 / s32 (depthwise: as the geometry needs)."""
    for geometry in GEMM_GEOMETRIES:
        dst_dts = ["s8", "u8"] if geometry == "per_oc_dst_zp" else ["f32", "s32", "s8", "u8"]
        for dst_dt in dst_dts:
            src_dt = ("s8" if geometry.startswith("depthwise_s8") else
                      "u8" if geometry == "depthwise_3d" else
                      "u8" if dst_dt in ("f32", "u8") else "s8")
            for chain in sorted(GEMM_CHAINS):
                if dst_dt in ("f32", "s8") or chain in ("nan", "linear"):
                    yield geometry, src_dt, dst_dt, chain


@pytest.mark.parametrize("geometry,src_dt,dst_dt,chain", list(_gemm_params()))
def test_gemm_deconvolution_order(geometry, src_dt, dst_dt, chain):
    check_gemm_order(geometry, src_dt, dst_dt, chain)


@pytest.mark.parametrize("chain", sorted(GEMM_CHAINS))
def test_gemm_deconvolution_order_every_level(isa, chain):
    check_gemm_order("full_binary", "s8", "f32" if chain != "nan" else "s8", chain)


def check_gemm_order(geometry, src_dt, dst_dt, chain):
    """oneDNN's GEMM-based deconvolution applies scales, bias, post-ops, dst scale and zero
    point in its reference loops after the GEMM: dnnq follows that order (+gemm_order)."""
    rng = np.random.default_rng(len(geometry) + 3 * len(chain) + len(dst_dt))
    c = make_case(rng, geometry, "none", src_dt=src_dt, dst_dt=dst_dt)
    c.post_ops = list(c.post_ops) + GEMM_CHAINS[chain]
    if chain == "sum":
        c.dst_prev = (rng.normal(0, 20, c.dst_shape).astype(np.float32) if dst_dt == "f32" else
                      rng.integers(0, 100, c.dst_shape).astype(NP[dst_dt]))
    got, want, impl, p = run_both(c)
    assert p.impl_info.endswith("+gemm_order"), p.impl_info
    if not check_against_onednn(c, got, want, impl, p):
        pytest.skip(f"oneDNN ran {impl} on this CPU ({'' if MODELLED_HOST else 'not '}the "
                    "modelled host): compared with the numpy model only")


def test_gemm_deconvolution_s32_goes_through_f32(isa):
    """Without attributes oneDNN's GEMM-based deconvolution still converts the s32 sums to f32
    and back: an s32 dst above 2**24 is rounded to f32 (dnnq's usual path stores the exact
    wrapped sum)."""
    rng = np.random.default_rng(5)
    c = Case(rng, G=2, ICg=600, OCg=3, isp=(3, 3), k=(3, 3), s=(2, 2), pl=(1, 1),
             src_dt="u8", dst_dt="s32", deconv=True)
    c.src[:] = rng.integers(200, 256, c.src.shape)
    c.wei[:] = rng.integers(-128, -100, c.wei.shape)
    got, want, impl, p = run_both(c)
    assert p.impl_info.endswith("+gemm_order")
    if onednn_kind(impl) != "gemm":
        pytest.skip(f"oneDNN ran {impl} on this CPU (the modelled host runs its GEMM-based "
                    "deconvolution here)")
    g = c.geom
    exact = deconv_acc(c.src, c.wei, g["strides"], g["padding_l"], g["padding_r"], g["dilates"])
    assert (np.abs(exact) > 2 ** 24).any() and (want != exact).any()  # rounded in f32
    assert_bits(got, want)


NAN_GEOMETRIES = ["jit_s2", "jit_small_ic_s1", "jit_grouped_s1", "jit_depthwise_u8", "jit_1d",
                  "brgconv", "brgconv_strided", "jit_1x1_grouped", "odd_groups_s2"]


@pytest.mark.parametrize("tail", ["", "linear", "relu"])
@pytest.mark.parametrize("geometry", NAN_GEOMETRIES)
def test_u8_nan_store(isa, geometry, tail):
    """A NaN (sqrt of a negative value) stored into u8: 255 by jit_deconvolution (its vmaxps
    keeps the NaN and vminps then returns 255), 0 by the other kernels."""
    rng = np.random.default_rng(len(geometry) + len(tail))
    c = make_case(rng, geometry, "none", src_dt="u8", dst_dt="u8")
    c.post_ops = list(c.post_ops) + [("eltwise", "sqrt", 0.0, 0.0)] + {
        "": [], "linear": [("eltwise", "linear", 2.0, 1.0)],
        "relu": [("eltwise", "relu", 0.5, 0.0)]}[tail]
    got, want, impl, p = run_both(c)
    kind = onednn_kind(impl)
    if MODELLED_HOST:
        assert p._onednn_kernel == kind
    elif p._onednn_kernel != kind:
        pytest.skip(f"oneDNN ran {impl} on this CPU; dnnq follows {p._onednn_kernel}'s NaN "
                    "store (the kernel of the modelled host)")
    assert ("+jit_deconv_nan" in p.impl_info) == (kind == "jit"), p.impl_info
    if kind == "jit":
        assert (want == 255).sum() > want.size // 10  # the NaNs are there
    assert_bits(got, want)


def _tapless_rows(n_out, k, s, pad, n_in):
    """Output rows along one dim that no kernel tap reaches."""
    rows = []
    for o in range(n_out):
        if not any((o + pad - kk) % s == 0 and 0 <= (o + pad - kk) // s < n_in for kk in range(k)):
            rows.append(o)
    return rows


@pytest.mark.parametrize("src_dt,zp", [("s8", None), ("u8", 3), ("s8", -2)])
@pytest.mark.parametrize("kh,sh", [(1, 3), (2, 4), (1, 4)])
def test_jit_deconvolution_tapless_rows_bug(src_dt, zp, kh, sh):
    """Not reproduced: oneDNN 3.2's jit_deconvolution with an s8 source or a source zero point,
    a kernel height shorter than the stride: the output rows no tap reaches get the s8 / zero
    point compensation of kernel rows past the end of the weights (the second and later such
    rows after a tap row; the first is right).  dnnq stores the exact value there (the numpy
    model); every other element matches oneDNN bit for bit."""
    rng = np.random.default_rng(kh * 10 + sh + len(src_dt))
    q = {} if zp is None else dict(src_zp=np.int32([zp]), src_zp_mask=0)
    c = Case(rng, ICg=8, OCg=16, isp=(4, 5), k=(kh, 3), s=(sh, 2), pl=(0, 1), src_dt=src_dt,
             dst_dt="s32", deconv=True, q=q)
    got, want, impl, p = run_both(c)
    np.testing.assert_array_equal(got, c.run_numpy())
    if onednn_kind(impl) != "jit":
        pytest.skip(f"oneDNN ran {impl} on this CPU, not jit_deconvolution (whose bug this "
                    "pins)")
    assert p._onednn_kernel == "jit"
    bad_rows = sorted(set(np.argwhere(got != want)[:, 2].tolist()))
    tapless = _tapless_rows(c.dst_shape[2], kh, sh, 0, 4)
    assert bad_rows, "oneDNN's tap-less rows are right: the bug is gone"
    assert set(bad_rows) <= set(tapless), (bad_rows, tapless)


@requires_modelled_host
def test_unmodelled_tiny_problem_bound():
    """Not modelled: oneDNN's brgemm blocking search declines some tiny problems (here a 1-D
    source of 2 pixels) and its GEMM-based deconvolution runs them; dnnq keeps the fused
    order there, so `linear` differs by the rounding of `alpha * x` (one ulp of that
    product, and of the result; docs/convolution.md)."""
    rng = np.random.default_rng(3)
    c = Case(rng, ICg=17, OCg=16, isp=(2,), k=(2,), s=(3,), pl=(0,), pr=(2,), d=(0,),
             src_dt="u8", dst_dt="f32", deconv=True, bias_dt="f32",
             q=dict(src_scales=np.float32([0.05]), wei_scales=np.float32([0.02])),
             post_ops=[("eltwise", "linear", 0.37, -1.3)])
    got, want, impl, p = run_both(c)
    assert onednn_kind(impl) == "gemm" and p._onednn_kernel == "brgconv_strided"
    bound = np.spacing(np.abs(want + np.float32(1.3))) + np.spacing(np.abs(want))
    assert (np.abs(got - want) <= bound).all() and (got != want).any()
