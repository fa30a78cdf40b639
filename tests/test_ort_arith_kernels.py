"""dnnq/primitives/_kernels/_ort_arith.pyx against numpy models of ONNX Runtime's arithmetic
written here from its definition (dnnq/onnx/ort_arith.py's docstrings), at 1 and 2 threads,
and against ONNX Runtime itself where it is installed (x86-64)."""
import math
import platform

import numpy as np
import pytest

from dnnq.primitives._kernels import _ort_arith

F32 = np.float32


def _table_model(xs, d):
    """exp((i - 255 + shift) * xs) in double, shift from the f32 logarithm of FLT_MAX / d
    (the f32 of the double logarithm: the C library's logf differs from it at a handful of d
    in 300 000, none used here)."""
    lg = float(F32(math.log(float(F32(np.finfo(F32).max) / F32(d)))))
    shift = max(0.0, lg - 5.0) / float(F32(xs))
    return np.array([math.exp((i - 255 + shift) * float(F32(xs))) for i in range(256)]).astype(F32)


def _qlinear_softmax_model(x, table, scale_floor, zp):
    out = np.empty_like(x)
    for r, row in enumerate(x):
        e = table[row.astype(np.int64) + 255 - int(row.max())]
        total = F32(0)
        for v in e:  # one value after the other
            total = F32(total + v)
        ratio = F32(F32(scale_floor) / total)
        out[r] = np.minimum(np.rint(e * ratio) + zp, 255)
    return out


@pytest.mark.parametrize("d", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000])
def test_qlinear_softmax_table(d):
    for xs in (0.02, 0.1, 0.254253):
        np.testing.assert_array_equal(_ort_arith.qlinear_softmax_table(F32(xs), d),
                                      _table_model(xs, d))
    with pytest.raises(ValueError, match="d 0"):
        _ort_arith.qlinear_softmax_table(F32(0.1), 0)


@pytest.mark.parametrize("d", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 1000])
@pytest.mark.parametrize("threads", [1, 2])
def test_qlinear_softmax_u8_follows_the_definition(d, threads):
    rng = np.random.default_rng(d)
    for xs, ys, zp in ((0.02, 1 / 256, 0), (0.1, 1 / 255, 3), (0.5, 0.003, 17)):
        x = rng.integers(0, 256, (5, d), dtype=np.uint8)
        x[0] = 200  # a constant row
        table = _ort_arith.qlinear_softmax_table(F32(xs), d)
        scale_floor = F32(np.floor(F32(1) / F32(ys)))
        y = np.full_like(x, 77)
        _ort_arith.qlinear_softmax_u8(x, y, table, scale_floor, zp, threads)
        np.testing.assert_array_equal(y, _qlinear_softmax_model(x, table, scale_floor, zp))


def test_qlinear_softmax_u8_checks_its_arguments():
    x = np.zeros((2, 5), np.uint8)
    with pytest.raises(ValueError, match="256 expected"):
        _ort_arith.qlinear_softmax_u8(x, np.zeros_like(x), np.zeros(255, F32), F32(1), 0)
    with pytest.raises(ValueError, match="y"):
        _ort_arith.qlinear_softmax_u8(x, np.zeros((2, 4), np.uint8), np.zeros(256, F32), F32(1),
                                      0)
    with pytest.raises(ValueError, match="zp 256"):
        _ort_arith.qlinear_softmax_u8(x, np.zeros_like(x), np.zeros(256, F32), F32(1), 256)


def _qlinear_softmax_rows_model(x, table, scale_floor, zp):
    """The same definition, vectorized over rows (for many rows)."""
    e = table[x.astype(np.int64) + 255 - x.max(axis=1, keepdims=True)]
    total = np.add.accumulate(e, axis=1, dtype=F32)[:, -1]
    ratio = (F32(scale_floor) / total).astype(F32)
    return np.minimum(np.rint(e * ratio[:, None]) + zp, 255).astype(np.uint8)


def test_qlinear_softmax_u8_sums_and_scales_in_the_definitions_order():
    """Millions of values, some of them within an ulp of a rounding boundary of the output
    grid: another order of the sum (8 lanes), or (entry * floor) / sum, changes some of them
    (the test counts them, so it can fail)."""
    rng = np.random.default_rng(1)
    differ = {"lanes": 0, "division": 0}
    for d, lo, ys in ((100, 200, 1 / 3000), (64, 200, 1 / 3333)):
        x = rng.integers(lo, 256, (20000, d), dtype=np.uint8)
        table = _ort_arith.qlinear_softmax_table(F32(0.01), d)
        scale_floor = F32(np.floor(F32(1) / F32(ys)))
        y = np.empty_like(x)
        _ort_arith.qlinear_softmax_u8(x, y, table, scale_floor, 0, 2)
        want = _qlinear_softmax_rows_model(x, table, scale_floor, 0)
        np.testing.assert_array_equal(y, want)
        e = table[x.astype(np.int64) + 255 - x.max(axis=1, keepdims=True)]
        total = np.add.accumulate(e, axis=1, dtype=F32)[:, -1]
        division = np.minimum(np.rint((e * scale_floor).astype(F32) / total[:, None]), 255)
        differ["division"] += int((division != want).sum())
        if d % 16 == 0:  # (whole blocks of 16 values: the lanes' sums are the total's parts)
            lanes = np.add.accumulate(e.reshape(len(e), -1, 8), axis=1, dtype=F32)[:, -1]
            lane_total = np.zeros(len(e), F32)
            for j in range(8):
                lane_total = (lane_total + lanes[:, j]).astype(F32)
            other = np.minimum(np.rint(e * (scale_floor / lane_total).astype(F32)[:, None]),
                               255)
            differ["lanes"] += int((other != want).sum())
    assert differ["lanes"] > 0 and differ["division"] > 0, differ


def _ort_softmax_session(d, xs, xz, ys, yz):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    h, T = onnx.helper, onnx.TensorProto
    inits = [h.make_tensor("xs", T.FLOAT, [], [xs]), h.make_tensor("xz", T.UINT8, [], [xz]),
             h.make_tensor("ys", T.FLOAT, [], [ys]), h.make_tensor("yz", T.UINT8, [], [yz])]
    nodes = [h.make_node("DequantizeLinear", ["X", "xs", "xz"], ["x"]),
             h.make_node("Softmax", ["x"], ["s"], axis=-1),
             h.make_node("QuantizeLinear", ["s", "ys", "yz"], ["Y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("X", T.UINT8, [1, d])],
                     [h.make_tensor_value_info("Y", T.UINT8, [1, d])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 7
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="compares with ONNX Runtime's x86-64 build")
def test_qlinear_softmax_is_onnxruntimes():
    """ONNX Runtime's QLinearSoftmax on rows where the candidate definitions differ (8-lane
    sums, (entry * floor) / sum, (1 / sum) * floor plus the zero point in f32): the kernel
    gives its bytes on every one of them, small rows (overflowing entry * floor too) and a
    row of PP-OCRv4's 6625 classes with one dominant value."""
    rng = np.random.default_rng(21)
    checked = 0
    for _ in range(200000):
        d = int(rng.integers(2, 40))
        xs, ys = float(F32(rng.uniform(0.01, 0.5))), float(F32(rng.uniform(0.001, 0.02)))
        zp = int(rng.integers(0, 40))
        x = rng.integers(0, 256, (1, d)).astype(np.uint8)
        table = _ort_arith.qlinear_softmax_table(F32(xs), d)
        sf = F32(np.floor(F32(1) / F32(ys)))
        ours = np.empty_like(x)
        _ort_arith.qlinear_softmax_u8(x, ours, table, sf, zp)
        e = table[x[0].astype(np.int64) + 255 - int(x.max())]
        total = np.add.accumulate(e, dtype=F32)[-1]
        with np.errstate(over="ignore", invalid="ignore"):
            alt = np.minimum(np.nan_to_num(np.rint((e * sf).astype(F32) / total), posinf=255)
                             + zp, 255)
        if (alt == ours[0]).all():
            continue
        got = _ort_softmax_session(d, xs, 128, ys, zp).run(None, {"X": x})[0]
        np.testing.assert_array_equal(ours, got)
        checked += 1
        if checked == 12:
            break
    assert checked == 12
    d = 6625  # a dominant class: 8 lane sums round the sum above the output's half step
    x = np.clip(rng.normal(150, 25, (1, d)), 0, 250).astype(np.uint8)
    x[0, 3333] = 255
    xs, ys = 0.254253, 0.00392157
    table = _ort_arith.qlinear_softmax_table(F32(xs), d)
    ours = np.empty_like(x)
    _ort_arith.qlinear_softmax_u8(x, ours, table, F32(np.floor(F32(1) / F32(ys))), 0)
    np.testing.assert_array_equal(ours, _ort_softmax_session(d, xs, 171, ys, 0).run(
        None, {"X": x})[0])


def _average_pool_model(x, k, s, d, p, out, count, xs, xz, ys, yz, s8):
    n, c, h, w = x.shape
    y = np.empty((n, c) + out, np.int64)
    deq = F32(xs) * (x.astype(np.int64) - xz).astype(F32)
    for i in range(out[0]):
        for j in range(out[1]):
            acc = np.zeros((n, c), F32)
            for a in range(k[0]):
                for b in range(k[1]):
                    r, t = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= r < h and 0 <= t < w:
                        acc = (acc + deq[:, :, r, t]).astype(F32)
            v = ((acc / F32(count[i, j])).astype(F32) / F32(ys)).astype(F32) + F32(yz)
            y[:, :, i, j] = np.rint(v.astype(F32))
    lo, hi = (-128, 127) if s8 else (0, 255)
    return np.clip(y, lo, hi).astype(np.int8 if s8 else np.uint8)


@pytest.mark.parametrize("s8", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_qlinear_average_pool_2d_follows_the_definition(s8, threads):
    """Windows in row-major order from 0 (the padding adds nothing), dilation, counts given,
    a channels-last source (strides), s8 and u8."""
    rng = np.random.default_rng(3)
    dt = np.int8 if s8 else np.uint8
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max + 1, (2, 9, 11, 5), dtype=dt).transpose(0, 3, 1, 2)
    k, s, d, p = (3, 2), (2, 1), (1, 2), (1, 1)
    out = (5, 9)
    count = rng.integers(1, 7, out).astype(F32)
    xs, xz, ys, yz = 0.037, (-3 if s8 else 120), 0.021, (5 if s8 else 130)
    y = np.empty((2, 5) + out, dt)
    _ort_arith.qlinear_average_pool_2d(x.view(np.uint8), y.view(np.uint8), count, *k, *s, *d,
                                       *p, F32(xs), xz, F32(ys), yz, s8, threads)
    np.testing.assert_array_equal(
        y, _average_pool_model(x, k, s, d, p, out, count, xs, xz, ys, yz, s8))


@pytest.mark.parametrize("layout", ["nchw", "channels-last", "mixed"])
@pytest.mark.parametrize("threads", [1, 2])
def test_channel_lookup(layout, threads):
    """y[n, c, h, w] = table[c, x[n, c, h, w]] in either memory order of source and
    destination (the channels-last fast path and the plane path)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (2, 7, 5, 9), dtype=np.uint8)
    if layout != "nchw":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    y = np.empty((2, 5, 9, 7), np.uint8).transpose(0, 3, 1, 2) if layout == "channels-last" \
        else np.empty((2, 7, 5, 9), np.uint8)
    table = rng.integers(0, 256, (7, 256), dtype=np.uint8)
    _ort_arith.channel_lookup(x, y, table, threads)
    np.testing.assert_array_equal(y, table[np.arange(7)[None, :, None, None], x])
    with pytest.raises(ValueError, match="7, 256 expected"):
        _ort_arith.channel_lookup(x, y, table[:6], threads)
