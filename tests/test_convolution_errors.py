"""Bad input to Convolution / Deconvolution: InvalidArguments or Unimplemented naming the
argument, what was given and what is accepted; never a crash."""
import contextlib

import numpy as np
import pytest

import dnnq
from dnnq import (MemoryDesc as MD, PrimitiveAttr, PostOps, InvalidArguments, Unimplemented,
                  DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCALE,
                  DNNL_ARG_ATTR_ZERO_POINTS, DNNL_ARG_ATTR_MULTIPLE_POST_OP, DNNL_ARG_SRC_1)

GEO = dict(strides=(1, 1), padding_l=(1, 1), padding_r=(1, 1))


def conv(src=(1, 8, 5, 5), wei=(16, 8, 3, 3), dst=(1, 16, 5, 5), src_dt="u8", wei_dt="s8",
         dst_dt="s32", bias=None, cls=dnnq.Convolution, attr=None, src_tag=None, **geo):
    g = dict(GEO)
    g.update(geo)
    return cls(MD(src, src_dt, src_tag), MD(wei, wei_dt), MD(dst, dst_dt), bias, attr=attr, **g)


@contextlib.contextmanager
def raises(exc, *words):
    """pytest.raises, and the message names every one of `words`."""
    with pytest.raises(exc) as info:
        yield info
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


def test_geometry_errors():
    with raises(InvalidArguments, "dst spatial dims", "(5, 5)", "expected (3, 3)"):
        conv(dst=(1, 16, 5, 5), padding_l=(0, 0), padding_r=(0, 0))
    with raises(InvalidArguments, "larger than the padded src"):
        conv(src=(1, 8, 2, 2), wei=(16, 8, 5, 5), dst=(1, 16, 1, 1), padding_l=0, padding_r=0)
    with raises(InvalidArguments, "strides", "(0, 1)", ">= 1"):
        conv(strides=(0, 1))
    with raises(InvalidArguments, "padding_l", ">= 0"):
        conv(padding_l=(-1, 1))
    with raises(InvalidArguments, "padding_r", ">= 0"):
        conv(padding_r=(1, -2))
    with raises(InvalidArguments, "dilates", ">= 0"):
        conv(dilates=(-1, 0))
    with raises(InvalidArguments, "strides", "expected 2 ints"):
        conv(strides=(1, 1, 1))
    with raises(InvalidArguments, "src channels 8", "groups"):
        conv(wei=(3, 5, 3, 3, 3), dst=(1, 15, 5, 5))  # 3 groups of 3 do not make 8 channels
    with raises(InvalidArguments, "dst channels 16"):
        conv(wei=(2, 4, 4, 3, 3), dst=(1, 16, 5, 5))
    with raises(InvalidArguments, "dst batch"):
        conv(dst=(2, 16, 5, 5))
    with raises(InvalidArguments, "bias dims"):
        conv(bias=MD((15,), "f32"))
    with raises(InvalidArguments, "weights dims"):
        conv(wei=(16, 8, 3))
    with raises(InvalidArguments, "expected >= 1"):
        conv(cls=dnnq.Deconvolution, src=(1, 8, 2, 2), wei=(16, 8, 1, 1), dst=(1, 16, 1, 1),
             strides=1, padding_l=1, padding_r=1)
    with pytest.raises(TypeError):
        dnnq.Convolution(MD((1, 8, 5, 5), "u8"), MD((16, 8, 3, 3), "s8"),
                         MD((1, 16, 5, 5), "s32"))  # strides / paddings are required keywords


def test_data_type_errors():
    with raises(Unimplemented, "src data type f32 with weights data type s8", "u8 or s8",
                "f32 layer"):
        conv(src_dt="f32")
    with raises(Unimplemented, "weights data type u8", "s8"):
        conv(wei_dt="u8")
    with raises(InvalidArguments, "bias dims (16, 1)", "1-D"):
        conv(bias=MD((16, 1), "f32"))
    with raises(Unimplemented, "weights tag dhwio", "grouped"):
        dnnq.Convolution(MD((1, 8, 5, 5), "u8"), MD((2, 8, 4, 3, 3), "s8", "dhwio"),
                         MD((1, 16, 5, 5), "s32"), **GEO)


def test_mask_errors():
    for arg, mask, words in ((DNNL_ARG_SRC, 2, ("scales mask 2 of src", "0")),
                             (DNNL_ARG_WEIGHTS, 2, ("scales mask 2 of weights", "0, 1")),
                             (DNNL_ARG_DST, 2, ("scales mask 2 of dst", "0"))):
        a = PrimitiveAttr()
        a.set_scales_mask(arg, mask)
        with raises(Unimplemented, *words):
            conv(attr=a)
    a = PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_WEIGHTS, 1)  # grouped weights: per-OC is mask 3 (as oneDNN)
    with raises(Unimplemented, "scales mask 1 of weights", "0, 3"):
        conv(wei=(2, 8, 4, 3, 3), attr=a)
    a = PrimitiveAttr()
    a.set_zero_points_mask(DNNL_ARG_SRC, 1)
    with raises(Unimplemented, "zero points mask 1 of src", "0, 2"):
        conv(attr=a)
    a = PrimitiveAttr()
    a.set_zero_points_mask(DNNL_ARG_SRC, 1 << 6)
    with raises(InvalidArguments, "mask"):
        conv(attr=a)
    a = PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_SRC_1, 0)
    with raises(Unimplemented, "scales of src_1"):
        conv(attr=a)


def test_post_op_errors():
    ops = PostOps()
    ops.append_binary("add", MD((1, 3, 1, 1), "f32"))
    a = PrimitiveAttr()
    a.set_post_ops(ops)
    with raises(InvalidArguments, "post_op[0].src_1", "(1, 3, 1, 1)", "(1, 16, 5, 5)"):
        conv(attr=a)
    ops = PostOps()
    ops.append_sum(1.0, 0, "u8")
    a = PrimitiveAttr()
    a.set_post_ops(ops)
    with raises(Unimplemented, "sum with data type u8"):
        conv(attr=a)


def test_execution_errors():
    a = PrimitiveAttr()
    a.set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    a.set_zero_points_mask(DNNL_ARG_SRC, 0)
    p = conv(attr=a, bias=MD((16,), "f32"))
    x = np.zeros((1, 8, 5, 5), np.uint8)
    w = np.zeros((16, 8, 3, 3), np.int8)
    ok = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w, DNNL_ARG_BIAS: np.zeros(16, np.float32),
          DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.ones(16, np.float32),
          DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC: np.array([3], np.int32)}
    assert p.execute(dict(ok)).shape == (1, 16, 5, 5)

    def bad(exc, words, **change):
        args = dict(ok)
        for k, v in change.items():
            key = {"src": DNNL_ARG_SRC, "wei": DNNL_ARG_WEIGHTS, "bias": DNNL_ARG_BIAS,
                   "ws": DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS,
                   "zp": DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, "dst": DNNL_ARG_DST}[k]
            if v is None:
                del args[key]
            else:
                args[key] = v
        with raises(exc, *words):
            p.execute(args)

    bad(InvalidArguments, ("src", "int8"), src=x.astype(np.int8))
    bad(InvalidArguments, ("src", "shape"), src=np.zeros((1, 8, 5, 6), np.uint8))
    bad(InvalidArguments, ("weights", "shape"), wei=np.zeros((16, 8, 3, 2), np.int8))
    bad(InvalidArguments, ("missing src",), src=None)
    bad(InvalidArguments, ("missing bias",), bias=None)
    bad(InvalidArguments, ("missing", "scale"), ws=None)
    bad(InvalidArguments, ("exactly 16",), ws=np.ones(3, np.float32))
    bad(InvalidArguments, ("scale", "> 0"), ws=np.zeros(16, np.float32))
    bad(InvalidArguments, ("scale",), ws=np.full(16, np.nan, np.float32))
    bad(InvalidArguments, ("zero point",), zp=np.array([2.5]))
    bad(InvalidArguments, ("dst", "shape"), dst=np.zeros((1, 16, 5, 4), np.int32))
    bad(InvalidArguments, ("dst", "dtype"), dst=np.zeros((1, 16, 5, 5), np.float32))
    bad(InvalidArguments, ("dst", "read-only"),
        dst=np.broadcast_to(np.zeros(1, np.int32), (1, 16, 5, 5)))
    with raises(InvalidArguments, "not used by this primitive"):
        p.execute({**ok, DNNL_ARG_SCALE | DNNL_ARG_DST: np.ones(1, np.float32)})
    with raises(InvalidArguments, "expected a dict"):
        p.execute([x, w])
    other = conv(attr=a, bias=MD((16,), "f32"), dst_dt="f32")
    with raises(InvalidArguments, "another description"):
        p.execute({**ok, DNNL_ARG_WEIGHTS: other.prepare_weights(w)})
    # binary post-op input missing / wrong
    ops = PostOps()
    ops.append_binary("add", MD((1, 16, 1, 1), "f32"))
    a2 = PrimitiveAttr()
    a2.set_post_ops(ops)
    p2 = conv(attr=a2)
    with raises(InvalidArguments, "missing", "post_op[0].src_1"):
        p2.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w})
    with raises(InvalidArguments, "post_op[0].src_1"):
        p2.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w,
                    DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1:
                    np.zeros((1, 16, 1, 1), np.float64)})
    # sum needs the previous destination
    ops = PostOps()
    ops.append_sum(1.0)
    a3 = PrimitiveAttr()
    a3.set_post_ops(ops)
    with raises(InvalidArguments, "sum post-op", "DNNL_ARG_DST"):
        conv(attr=a3).execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: w})
    # dst overlapping src
    p4 = conv(src=(1, 4, 5, 5), wei=(4, 4, 3, 3), dst=(1, 4, 5, 5), src_dt="u8", dst_dt="u8")
    buf = np.zeros((1, 4, 5, 5), np.uint8)
    with raises(InvalidArguments, "overlaps"):
        p4.execute({DNNL_ARG_SRC: buf, DNNL_ARG_WEIGHTS: np.zeros((4, 4, 3, 3), np.int8),
                    DNNL_ARG_DST: buf})


_NOMEM_SCRIPT = r"""
import resource, sys
import numpy as np
import dnnq
from dnnq import MemoryDesc as MD
dnnq.set_max_cpu_isa(sys.argv[1])
KH = 1 << 20  # 1M taps: the per-item row-pointer scratch needs npairs * rows * 8 bytes
p = dnnq.Convolution(MD((1, 1, KH, 1), "u8"), MD((1, 1, KH, 1), "s8"), MD((1, 1, 1, 1), "s32"),
                     strides=[1, 1], padding_l=[0, 0], padding_r=[0, 0])
x = np.ones((1, 1, KH, 1), np.uint8)
w = p.prepare_weights(np.ones((1, 1, KH, 1), np.int8))
d = np.full((1, 1, 1, 1), -7, np.int32)
p.execute({1: x, 33: w, 17: d})
assert d.item() == KH, d
with open("/proc/self/status") as f:
    vm = [int(l.split()[1]) for l in f if l.startswith("VmSize")][0] * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (16 << 20), resource.RLIM_INFINITY))
d[...] = -7
try:
    p.execute({1: x, 33: w, 17: d})
except MemoryError as e:
    print("MemoryError", e)
else:
    print("no error", d.item())
"""


def test_failed_scratch_allocation_raises_memory_error(isa):
    """The convolution driver's per-item scratch (row pointers, pairs) cannot be allocated
    (address space limited in a subprocess): MemoryError, not a return with dst unwritten."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-P", "-c", _NOMEM_SCRIPT, isa], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MemoryError"), (r.stdout, r.stderr)


def _unaligned_copy(a):
    """A copy of ``a`` (same shape and strides order) starting one byte past alignment."""
    raw = np.empty(a.nbytes + 1, np.uint8)
    u = raw[1:].view(a.dtype).reshape(a.shape)
    u[...] = a
    assert not u.flags.aligned
    return u


def test_unaligned_arrays_give_the_aligned_results():
    """f32 / s32 arrays at an odd address (dst, bias, scales, zero points) take the general
    path, which copies them to aligned memory: the kernels read elements through typed
    pointers.  Found by the fuzz test under UBSan (tools/sanitize.sh reports the misaligned
    loads and stores if an unaligned array reaches C again)."""
    N, IC, OC, H, W = 1, 8, 16, 5, 5
    attr = dnnq.PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1)
    attr.set_zero_points_mask(DNNL_ARG_DST, 0)
    dst_md = MD((N, OC, H, W), "s32", "nhwc")
    p = dnnq.Convolution(MD((N, IC, H, W), "u8", "nhwc"), MD((OC, IC, 3, 3), "s8"), dst_md,
                         MD((OC,), "f32"), strides=1, padding_l=1, padding_r=1, attr=attr)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (N, H, W, IC), dtype=np.uint8).transpose(0, 3, 1, 2)
    pw = p.prepare_weights(rng.integers(-128, 128, (OC, IC, 3, 3), dtype=np.int8))
    args = {DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw,
            DNNL_ARG_BIAS: rng.standard_normal(OC).astype(np.float32),
            DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: rng.uniform(0.5, 2, OC).astype(np.float32),
            DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST: np.array([7], np.int32)}
    want = p.execute(args)
    dst = _unaligned_copy(np.zeros((N, H, W, OC), np.int32)).transpose(0, 3, 1, 2)
    uargs = {k: (_unaligned_copy(v) if isinstance(v, np.ndarray) and v.dtype.itemsize > 1
                 else v) for k, v in args.items()}
    out = p.execute({**uargs, DNNL_ARG_DST: dst})
    assert out is dst
    np.testing.assert_array_equal(dst, want)
