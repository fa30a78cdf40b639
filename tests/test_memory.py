"""Data types and MemoryDesc: validation, value semantics, layouts, execution-array checks."""
import pickle

import numpy as np
import pytest

from dnnq import memory as Mem
from dnnq.errors import InvalidArguments
from dnnq.memory import MemoryDesc

NP = {"u8": np.uint8, "s8": np.int8, "s32": np.int32, "f32": np.float32}


@pytest.mark.parametrize("dt", ["u8", "s8", "s32", "f32"])
def test_as_dt_accepts(dt):
    assert getattr(Mem, dt) == dt
    assert Mem.as_dt(dt) == dt
    assert Mem.as_dt(NP[dt]) == dt
    assert Mem.as_dt(np.dtype(NP[dt])) == dt
    assert Mem.numpy_dtype(dt) == np.dtype(NP[dt])
    assert Mem.dt_size(dt) == np.dtype(NP[dt]).itemsize


@pytest.mark.parametrize("bad", ["uint8", "int8", "U8", "f16", "bf16", "i1", "", np.float64,
                                 np.int64, np.uint16, np.float16, np.dtype(">i4"), np.bool_,
                                 int, float, None, 8, np.dtype("O")])
def test_as_dt_rejects(bad):
    with pytest.raises(InvalidArguments) as e:
        Mem.as_dt(bad)
    assert "u8" in str(e.value)  # the message lists what is accepted


def test_dt_range():
    assert Mem.dt_range("u8") == (0, 255)
    assert Mem.dt_range(np.int8) == (-128, 127)
    assert Mem.dt_range("s32") == (-(2 ** 31), 2 ** 31 - 1)
    with pytest.raises(InvalidArguments):
        Mem.dt_range("f32")


def test_desc_basic_properties():
    d = MemoryDesc((2, 3, 4, 5), "s8")
    assert d.dims == (2, 3, 4, 5) and d.dt == "s8" and d.tag is None
    assert d.ndims == 4 and d.nelems == 120 and d.numpy_dtype == np.int8
    assert d.physical_order == (0, 1, 2, 3) and not d.is_channels_last
    assert d.strides == tuple(s // 1 for s in np.empty((2, 3, 4, 5), np.int8).strides)
    assert d.dims_str() == "s8:abcd:2x3x4x5"
    # numpy ints and lists accepted, stored as python ints
    d2 = MemoryDesc([np.int64(2), 3, np.uint8(4), 5], np.int8)
    assert d2 == d and hash(d2) == hash(d)
    assert all(type(x) is int for x in d2.dims)


def test_desc_immutable_and_picklable():
    d = MemoryDesc((4, 8), "f32", "nc")
    with pytest.raises(AttributeError):
        d.dims = (1,)
    with pytest.raises(AttributeError):
        d._dt = "u8"
    assert pickle.loads(pickle.dumps(d)) == d


def test_desc_equality_by_value():
    a = MemoryDesc((1, 8, 4, 4), "u8")
    assert a == MemoryDesc((1, 8, 4, 4), "u8", "nchw") == MemoryDesc((1, 8, 4, 4), "u8", "any")
    assert a == MemoryDesc((1, 8, 4, 4), "u8", "abcd")
    assert a != MemoryDesc((1, 8, 4, 4), "u8", "nhwc")
    assert a != MemoryDesc((1, 8, 4, 4), "s8")
    assert a != MemoryDesc((1, 8, 4, 5), "u8")
    assert MemoryDesc((1, 8, 4, 4), "u8", "nhwc") == MemoryDesc((1, 8, 4, 4), "u8", "acdb")
    assert len({a, MemoryDesc((1, 8, 4, 4), "u8", "nchw"), MemoryDesc((1, 8, 4, 4), "u8",
                                                                       "nhwc")}) == 2
    assert a != "u8"


@pytest.mark.parametrize("dims", [(), (0,), (2, 0), (-1, 3), (2.0, 3), (True, 3), (2, None),
                                  "abc", 5, None, (1,) * 13])
def test_desc_bad_dims(dims):
    with pytest.raises(InvalidArguments, match="dims"):
        MemoryDesc(dims, "f32")


@pytest.mark.parametrize("dims,tag", [((2, 3), "nchw"), ((2, 3, 4, 5), "nc"),
                                      ((2, 3, 4), "nhwc"), ((2, 3, 4, 5, 6), "hwio"),
                                      ((2, 3, 4, 5), "blocked"), ((2, 3), "NC"), ((2, 3), 5),
                                      ((2, 3, 4, 5, 6), "goihw ")])
def test_desc_bad_tags(dims, tag):
    with pytest.raises(InvalidArguments, match="tag"):
        MemoryDesc(dims, "f32", tag)


def test_desc_bad_dt():
    with pytest.raises(InvalidArguments, match="dt"):
        MemoryDesc((2, 3), "float32")


@pytest.mark.parametrize("tag,order", [
    ("nwc", (0, 2, 1)), ("nhwc", (0, 2, 3, 1)), ("ndhwc", (0, 2, 3, 4, 1)),
    ("wio", (2, 1, 0)), ("hwio", (2, 3, 1, 0)), ("dhwio", (2, 3, 4, 1, 0)),
])
def test_channels_last_orders(tag, order):
    dims = tuple(range(2, 2 + len(order)))
    d = MemoryDesc(dims, "u8", tag)
    assert d.physical_order == order and d.is_channels_last
    assert d.physical_shape == tuple(dims[i] for i in order)
    # strides agree with a numpy array allocated physically and viewed logically
    arr = d.empty()
    assert arr.shape == dims
    assert d.strides == tuple(s // arr.itemsize for s in arr.strides)
    assert d.dims_str() == f"u8:{tag}:{'x'.join(map(str, dims))}"


@pytest.mark.parametrize("dims,dt,tag", [((1, 64, 56, 56), "u8", "nhwc"), ((3, 5, 7), "f32", None),
                                         ((2, 3, 4, 5), "s32", "nchw"), ((1,), "s8", None),
                                         ((1, 1, 1), "u8", None)])
def test_empty_and_zeros_on_a_cache_line(dims, dt, tag):
    """MemoryDesc.empty / zeros: the logical shape and the layout's strides, the data on a
    64-byte line (numpy alone puts large arrays 16 bytes past one), zeros all zero"""
    d = MemoryDesc(dims, dt, tag)
    for arr in (d.empty(), d.zeros()):
        assert arr.shape == dims and arr.dtype == d.numpy_dtype
        assert arr.ctypes.data % 64 == 0
        assert d.strides == tuple(s // arr.itemsize for s in arr.strides)
        assert arr.flags.writeable
    assert not d.zeros().any()


def test_check_array_plain():
    d = MemoryDesc((2, 3, 4), "s8")
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    out = d.check_array(x, "src")
    assert out is x or np.shares_memory(out, x)
    # strided input: accepted, returned C-contiguous with the same values
    big = np.arange(48, dtype=np.int8).reshape(2, 3, 8)
    y = big[:, :, ::2]
    out = d.check_array(y, "src")
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, y)
    # a transposed array of the right logical shape is fine too (values kept)
    z = np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0)
    np.testing.assert_array_equal(d.check_array(z, "src"), x)


def test_check_array_channels_last():
    d = MemoryDesc((2, 8, 3, 5), "u8", "nhwc")
    rng = np.random.default_rng(0)
    x_nhwc = rng.integers(0, 255, (2, 3, 5, 8), dtype=np.uint8)
    x = x_nhwc.transpose(0, 3, 1, 2)  # logical NCHW view of NHWC memory
    phys = d.check_array(x, "src")
    assert phys.shape == (2, 3, 5, 8) and phys.flags.c_contiguous
    assert np.shares_memory(phys, x_nhwc)  # no copy when already channels-last
    np.testing.assert_array_equal(phys, x_nhwc)
    # a plain NCHW array of the same logical values is converted (a copy)
    x_plain = np.ascontiguousarray(x)
    phys2 = d.check_array(x_plain, "src")
    assert not np.shares_memory(phys2, x_plain)
    np.testing.assert_array_equal(phys2, x_nhwc)
    np.testing.assert_array_equal(d.logical_view(phys2), x)


def test_check_array_hwio():
    d = MemoryDesc((4, 3, 2, 2), "s8", "hwio")
    w_hwio = np.arange(48, dtype=np.int8).reshape(2, 2, 3, 4)
    w = w_hwio.transpose(3, 2, 0, 1)
    phys = d.check_array(w, "weights")
    np.testing.assert_array_equal(phys, w_hwio)
    assert np.shares_memory(phys, w_hwio)


@pytest.mark.parametrize("bad,match", [
    ([[1, 2, 3], [4, 5, 6]], "ndarray"),
    (np.zeros((2, 3), np.int8), "dtype int8"),
    (np.zeros((2, 3), np.float64), "float64"),
    (np.zeros((3, 2), np.uint8), r"shape \(3, 2\)"),
    (np.zeros((2, 3, 1), np.uint8), "shape"),
    (np.zeros((2, 3), np.dtype(">u2")), "dtype"),
    (5, "int"),
])
def test_check_array_rejects(bad, match):
    d = MemoryDesc((2, 3), "u8")
    with pytest.raises(InvalidArguments, match=match) as e:
        d.check_array(bad, "my_src_arg")
    assert "my_src_arg" in str(e.value)


def test_check_output_and_copy_back():
    d = MemoryDesc((1, 4, 2, 3), "f32", "nhwc")
    # laid out channels-last: the buffer is a view, writes land in place
    out = d.zeros()
    buf = d.check_output(out, "dst")
    buf[...] = 7
    d.copy_back(out, buf)
    assert (out == 7).all()
    # plain memory for a channels-last desc: a copy, with current contents, copied back
    out2 = np.arange(24, dtype=np.float32).reshape(1, 4, 2, 3)
    buf2 = d.check_output(out2, "dst")
    np.testing.assert_array_equal(d.logical_view(buf2), out2)
    buf2 += 1
    d.copy_back(out2, buf2)
    np.testing.assert_array_equal(out2, np.arange(24, dtype=np.float32).reshape(1, 4, 2, 3) + 1)
    ro = d.zeros()
    ro.flags.writeable = False
    with pytest.raises(InvalidArguments, match="read-only"):
        d.check_output(ro, "dst")


def test_from_array():
    x = np.zeros((3, 4), np.int32)
    assert MemoryDesc.from_array(x) == MemoryDesc((3, 4), "s32")
    with pytest.raises(InvalidArguments):
        MemoryDesc.from_array(np.zeros((3, 4)))


def _unaligned(a):
    """A copy of ``a`` whose data starts one byte past an aligned address."""
    raw = np.empty(a.nbytes + 1, np.uint8)
    v = raw[1:].view(a.dtype).reshape(a.shape)
    v[...] = a
    assert not v.flags.aligned
    return v


@pytest.mark.parametrize("tag", [None, "nhwc"])
@pytest.mark.parametrize("dt", ["s32", "f32"])
def test_check_array_returns_aligned_data(dt, tag):
    # found by the fuzz test under UBSan: an unaligned f32 / s32 array reached the kernels,
    # which read its elements through typed pointers (misaligned loads)
    md = MemoryDesc((2, 3, 4, 5), dt, tag)
    x = md.zeros()
    x[...] = np.arange(x.size).reshape(x.shape)
    ux = _unaligned(np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if tag else x)
    ux = ux.transpose(0, 3, 1, 2) if tag else ux
    for check in (md.check_array, md.check_output):
        phys = check(ux, "x")
        assert phys.flags.aligned and phys.flags.c_contiguous
        assert np.array_equal(md.logical_view(phys), x)
