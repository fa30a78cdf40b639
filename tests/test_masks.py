"""Masks: counts, semantic masks, index strides, runtime scale / zero-point validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dnnq import masks as M
from dnnq.errors import InvalidArguments


def test_constants():
    assert M.DNNL_MASK_COMMON == 0
    assert [getattr(M, f"DNNL_MASK_PER_DIM_{i}") for i in range(6)] == [1 << i for i in range(6)]
    assert M.DNNL_MASK_PER_CHANNEL_NCHW == 1 << 12
    assert M.DNNL_MASK_PER_CHANNEL_TNC == 1 << 13
    assert M.DNNL_MASK_PER_CHANNEL_OIHW == 1 << 14


def test_scale_count_spec_examples():
    OC, IC, KH, KW, G = 32, 16, 3, 3, 4
    assert M.scale_count((OC, IC, KH, KW), 1) == OC
    assert M.scale_count((G, OC, IC, KH, KW), 3) == G * OC
    assert M.scale_count((OC, IC, KH, KW), 0) == 1
    assert M.scale_count((2, 3, 5, 7), 15) == 2 * 3 * 5 * 7
    assert M.scale_count([2, 3], np.int64(2)) == 3


@pytest.mark.parametrize("dims,mask", [((4, 5), 4), ((4,), 2), ((2, 3, 4, 5), 16),
                                       ((2, 3), 1 << 11)])
def test_scale_count_bit_beyond_ndims(dims, mask):
    with pytest.raises(InvalidArguments) as e:
        M.scale_count(dims, mask)
    assert str(mask) in str(e.value) and str(tuple(dims)) in str(e.value)


@pytest.mark.parametrize("mask", [-1, 1.0, "1", None, True, 1 << 12, 1 << 13, 1 << 14,
                                  (1 << 12) | 2, 1 << 15])
def test_scale_count_bad_masks(mask):
    with pytest.raises(InvalidArguments):
        M.scale_count((2, 3, 4, 5), mask)


@pytest.mark.parametrize("dims", [(), (0, 3), (-1,), (2.0, 3), (True, 2), "ab", 5])
def test_scale_count_bad_dims(dims):
    with pytest.raises(InvalidArguments):
        M.scale_count(dims, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=6), st.data())
def test_scale_count_property(dims, data):
    mask = data.draw(st.integers(0, (1 << len(dims)) - 1))
    expected = math.prod(d for i, d in enumerate(dims) if mask >> i & 1)
    assert M.scale_count(dims, mask) == expected
    assert M.mask_dims(mask, len(dims)) == [i for i in range(len(dims)) if mask & (1 << i)]
    # the strides index the compact array exactly once per selected index combination
    strides = M.broadcast_index_strides(dims, mask)
    sel = [i for i in range(len(dims)) if mask >> i & 1]
    assert all(strides[i] == 0 for i in range(len(dims)) if i not in sel)
    offsets = {sum(ix * strides[i] for ix, i in zip(idx, sel))
               for idx in np.ndindex(*[dims[i] for i in sel])}
    assert offsets == set(range(expected))


def test_broadcast_index_strides_matches_numpy_broadcast():
    dims = (2, 3, 4, 5)
    mask = 0b1010
    count = M.scale_count(dims, mask)
    vals = np.arange(count, dtype=np.float32)
    strides = M.broadcast_index_strides(dims, mask)
    # reference: reshape the compact array to the broadcast shape
    bshape = [d if mask >> i & 1 else 1 for i, d in enumerate(dims)]
    full = np.broadcast_to(vals.reshape(bshape), dims)
    for idx in np.ndindex(*dims):
        assert vals[sum(i * s for i, s in zip(idx, strides))] == full[idx]
    assert M.broadcast_index_strides((4, 8, 3, 3, 3), 3) == (8, 1, 0, 0, 0)


def test_resolve_mask():
    assert M.resolve_mask(M.DNNL_MASK_PER_CHANNEL_NCHW, (2, 8, 4, 4), "data_nchw") == 2
    assert M.resolve_mask(M.DNNL_MASK_PER_CHANNEL_TNC, (5, 2, 8), "data_tnc") == 4
    assert M.resolve_mask(M.DNNL_MASK_PER_CHANNEL_OIHW, (8, 4, 3, 3), "weights_oihw") == 1
    assert M.resolve_mask(M.DNNL_MASK_PER_CHANNEL_OIHW, (2, 8, 4, 3, 3), "weights_oihw",
                          groups=True) == 3
    # plain masks pass through, checked against dims
    assert M.resolve_mask(2, (2, 8, 4, 4), "data_nchw") == 2
    assert M.resolve_mask(5, (2, 8, 4), None) == 5
    with pytest.raises(InvalidArguments):
        M.resolve_mask(16, (2, 8, 4, 4), "data_nchw")


@pytest.mark.parametrize("mask,kind", [
    (1 << 12, "data_tnc"), (1 << 12, "weights_oihw"), (1 << 12, None),
    (1 << 13, "data_nchw"), (1 << 14, "data_nchw"), (1 << 14, None),
])
def test_resolve_mask_wrong_semantics(mask, kind):
    with pytest.raises(InvalidArguments) as e:
        M.resolve_mask(mask, (2, 8, 4, 4), kind, name="src scales")
    assert "src scales" in str(e.value)


def test_resolve_mask_bad_kind_and_rank():
    with pytest.raises(InvalidArguments):
        M.resolve_mask(0, (2, 3), "nchw")
    with pytest.raises(InvalidArguments):
        M.resolve_mask(M.DNNL_MASK_PER_CHANNEL_NCHW, (8,), "data_nchw")


def test_check_mask():
    assert M.check_mask(np.uint8(3)) == 3
    for m in M.SEMANTIC_MASKS:
        assert M.check_mask(m) == m
    for bad in (-2, 1 << 16, (1 << 12) | 1, 2.0, False):
        with pytest.raises(InvalidArguments):
            M.check_mask(bad)


# ---------------------------------------------------------------- check_scales
@pytest.mark.parametrize("values", [
    [1, 2, 3, 4],
    np.array([0.5, 2.0, 3.0, 4.0]),
    np.array([[1, 2], [3, 4]], dtype=np.uint8),
    np.array([1, 2, 3, 4], dtype=np.float16),
    np.array([1, 2, 3, 4], dtype=np.int64)[::-1],
    np.array([1, 2, 3, 4], dtype=np.longdouble),
    (1.5, 2.5, 3.5, 4.5),
])
def test_check_scales_accepts_real_arrays(values):
    out = M.check_scales(values, 4, "src scales")
    assert out.dtype == np.float32 and out.shape == (4,) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.asarray(values, dtype=np.float64).reshape(-1)
                                  .astype(np.float32))


def test_check_scales_scalar():
    for v in (2, 0.25, np.float64(3.0), np.int8(7), np.array(1.5)):
        out = M.check_scales(v, 1, "dst scales")
        assert out.shape == (1,) and out[0] == np.float32(v)


@pytest.mark.parametrize("values,count", [
    ([1.0, 2.0], 3), ([1.0, 2.0, 3.0], 2), (np.ones((2, 2)), 3), (2.0, 2), ([], 1),
    (["a", "b"], 2), ("1.0", 1), (None, 1), ([1.0, "x"], 2), ([[1.0], [2.0, 3.0]], 3),
    (np.array([1 + 1j]), 1), (np.array([True]), 1), (object(), 1),
    ([1.0, float("nan")], 2), ([float("inf")], 1), ([-float("inf")], 1),
    ([0.0, 1.0], 2), ([-1.0], 1), ([-0.0], 1), (np.array([1, 0], np.uint8), 2),
    ([1e39], 1), ([1e-50], 1), (np.array([-5], np.int32), 1),
])
def test_check_scales_rejects(values, count):
    with pytest.raises(InvalidArguments) as e:
        M.check_scales(values, count, "wei_scales_arg")
    assert "wei_scales_arg" in str(e.value)


def test_check_scales_tiny_subnormal_f32_accepted():
    # 1e-40 is a positive f32 subnormal: nonzero, so a valid (if odd) scale
    out = M.check_scales([1e-40], 1, "x")
    assert out[0] > 0


# ---------------------------------------------------------------- check_zero_points
@pytest.mark.parametrize("values", [
    [1, -2, 3], np.array([1, -2, 3], np.int8), np.array([1.0, -2.0, 3.0]),
    np.array([1, 2, 3], np.uint64), np.array([[1], [-2], [3]], np.int64),
    [2 ** 31 - 1, -(2 ** 31), 0],
])
def test_check_zero_points_accepts(values):
    out = M.check_zero_points(values, 3, "src zp")
    assert out.dtype == np.int32 and out.shape == (3,)
    np.testing.assert_array_equal(out, np.asarray(values).reshape(-1).astype(np.int64))


@pytest.mark.parametrize("values,count", [
    (2 ** 31, 1), ([2 ** 31], 1), ([-(2 ** 31) - 1], 1), (np.array([2 ** 40]), 1),
    (np.array([2 ** 63], np.uint64), 1), ([2.0 ** 31], 1), ([0.5], 1), ([float("nan")], 1),
    ([float("inf")], 1), ([1, 2], 3), (["1"], 1), ("1", 1), (np.array([True]), 1),
    (np.array([1j]), 1), (None, 1), (2 ** 80, 1),
])
def test_check_zero_points_rejects(values, count):
    with pytest.raises(InvalidArguments) as e:
        M.check_zero_points(values, count, "dst_zero_points")
    assert "dst_zero_points" in str(e.value)


def test_check_zero_points_scalar():
    out = M.check_zero_points(-7, 1, "zp")
    assert out.tolist() == [-7]


def test_runtime_values_come_back_aligned():
    # found by the fuzz test under UBSan: unaligned scale / zero-point arrays were passed on
    for values, check in ((np.array([0.5, 2.0, 4.0], np.float32), M.check_scales),
                          (np.array([1, -2, 3], np.int32), M.check_zero_points)):
        raw = np.empty(values.nbytes + 1, np.uint8)
        u = raw[1:].view(values.dtype)
        u[...] = values
        assert not u.flags.aligned
        out = check(u, 3, "x")
        assert out.flags.aligned and np.array_equal(out, values)
