"""rounding="every": int8 layers requantize as ONNX Runtime's QLinearConv / QLinearMatMul do.

ONNX Runtime runs ``DequantizeLinear -> Conv / MatMul -> QuantizeLinear`` as one int8 kernel
whose output is ``saturate(round(f32(sum + bias_int32) * (x_scale * w_scale / y_scale)) +
y_zero_point)``; oneDNN's order (the sum times the source and weights scales, plus the f32
bias, times 1 / y_scale, plus the zero point, rounded) gives the same value except where an
f32 rounding moves it across a half step -- a few values per layer, which then spread.  With
rounding="every" dnnq computes ONNX Runtime's form (fusion._requantize_as_qlinear), so its
int8 tensors are ONNX Runtime's, bit for bit, through a stack of layers.
"""
import platform

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import _onnx_builder  # noqa: E402
import dnnq  # noqa: E402
import dnnq.onnx as donnx  # noqa: E402
from _onnx_builder import Builder, weights as _w  # noqa: E402
from _onnx_models import ort_session, quantize_qdq  # noqa: E402


# The comparison is with ONNX Runtime's own kernels, which depend on the host: its u8 x s8
# products are exact int32 sums with VNNI or AMX (vpdpbusd, tdpbusd); without them MLAS's
# AVX2 kernel adds pairs of products in s16 with saturation, and its sums are not the
# model's. dnnq's results do not depend on the host (test_cross_machine.py).
_CPU = dnnq.cpu_info()
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or
    not (_CPU.get("avx512_vnni") or _CPU.get("avx_vnni") or _CPU.get("amx_int8")),
    reason="ONNX Runtime's int8 sums are exact on x86-64 with VNNI or AMX only")


def _files(tmp_path, model, x_shape, rng):
    f32, qdq = str(tmp_path / "f32.onnx"), str(tmp_path / "qdq.onnx")
    onnx.save(model, f32)
    xs = [rng.standard_normal(x_shape).astype(np.float32) for _ in range(2)]
    quantize_qdq(f32, qdq, [{"x": x} for x in xs])
    return qdq



def _conv_stack():
    """Convolutions of every kind dnnq runs (3x3 with and without bias, strided, depthwise,
    1x1, grouped), a BatchNormalization between rounding pairs, a residual Add, ReLU."""
    b = Builder()
    y = b.conv("x", 3, 24, stride=2)
    y = b.op("Relu", [y])
    y = b.conv(y, 24, 24, group=24)                       # depthwise, bias
    y = b.conv(y, 24, 40, k=1, bias=False)
    y = b.op("BatchNormalization", [y, b.const(_w(40) + 1), b.const(_w(40)),
                                    b.const(_w(40)), b.const(np.abs(_w(40)) + 0.5)])
    r = y
    y = b.conv(y, 40, 40, group=4)                        # grouped
    y = b.op("Add", [y, r])
    y = b.conv(y, 40, 64, bias=False)
    y = b.op("Relu", [y])
    y = b.conv(y, 64, 16, k=1)
    return b.model((1, 3, 64, 96), y, opset=13)


def _matmuls():
    """MatMul with constant weights, Gemm with a bias, MatMul of two activations."""
    b = Builder()
    y = b.op("Reshape", ["x", b.const(np.array([384, 96], np.int64))])
    y = b.op("MatMul", [y, b.const(_w(96, 128))])
    y = b.op("Gemm", [y, b.const(_w(128, 128)), b.const(_w(128, scale=0.1))])
    a = b.op("Transpose", [y], perm=[1, 0])
    y = b.op("MatMul", [y, a])
    y = b.op("MatMul", [y, b.const(_w(384, 64))])
    return b.model((1, 4, 96, 96), y, opset=13)


@pytest.mark.parametrize("model, x_shape", [(_conv_stack, (1, 3, 64, 96)),
                                            (_matmuls, (1, 4, 96, 96))],
                         ids=["convolutions", "matmuls"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_quantize_is_onnxruntimes_bytes(tmp_path, monkeypatch, model, x_shape, seed):
    """The model's output (DequantizeLinear of its last int8 tensor) equals ONNX Runtime's
    bit for bit, on inputs beyond the calibration's range too. The int8 kernels' order of
    operations and QuantizeLinear's division decide single roundings: oneDNN's order (the
    previous form) or a multiplication by 1 / scale fail it."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(_onnx_builder, "RNG", rng)  # the weights of this seed
    qdq = _files(tmp_path, model(), x_shape, rng)
    peer = ort_session(qdq)
    for threads in (1, None):
        every = donnx.InferenceSession(qdq, rounding="every", threads=threads)
        for run in range(4):  # the first run, the threads' choice, warm runs
            x = (1.3 * np.random.default_rng(run % 3).standard_normal(x_shape)).astype(
                np.float32)
            np.testing.assert_array_equal(every.run(None, {"x": x})[0],
                                          peer.run(None, {"x": x})[0])
    rows = every.plan()
    assert sum(r["primitive"] in ("Convolution", "MatMul") for r in rows) >= 4


@pytest.mark.parametrize("pool", [
    dict(kernel_shape=[2, 2], strides=[2, 2]),                      # windows stop short
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),   # padding excluded
    dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 0], count_include_pad=1),
    dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
], ids=["floor", "pads", "include-pad", "ceil"])
def test_every_average_pool_is_onnxruntimes_bytes(tmp_path, monkeypatch, pool):
    """AveragePool between a DequantizeLinear and a QuantizeLinear as ONNX Runtime's
    QLinearAveragePool (ort_arith.AveragePoolStep), on an odd-sized map whose last column
    and row no window of the first geometry reaches."""
    rng = np.random.default_rng(5)
    monkeypatch.setattr(_onnx_builder, "RNG", rng)
    b = Builder()
    y = b.conv("x", 3, 16)
    y = b.op("AveragePool", [y], **pool)
    y = b.conv(y, 16, 8, k=1)
    qdq = _files(tmp_path, b.model((1, 3, 15, 15), y, opset=13), (1, 3, 15, 15), rng)
    every = donnx.InferenceSession(qdq, rounding="every")
    assert any(r["primitive"] == "AveragePool (QLinearAveragePool)" for r in every.plan())
    x = (1.3 * rng.standard_normal((1, 3, 15, 15))).astype(np.float32)
    np.testing.assert_array_equal(every.run(None, {"x": x})[0],
                                  ort_session(qdq).run(None, {"x": x})[0])


def test_every_batch_normalization_between_roundings_is_a_table_per_channel(tmp_path,
                                                                           monkeypatch):
    """A BatchNormalization between a DequantizeLinear and a QuantizeLinear (PP-OCRv4 det's
    head: ONNX Runtime runs it in f32 there) as one 256-entry table per channel, computed by
    the op itself: ONNX Runtime's bytes, also where the source is channels-last."""
    rng = np.random.default_rng(8)
    monkeypatch.setattr(_onnx_builder, "RNG", rng)
    b = Builder()
    y = b.op("Relu", [b.conv("x", 3, 12)])
    y = b.op("Add", [y, b.const(rng.standard_normal((12, 1, 1)).astype(np.float32))])
    c = 12
    y = b.op("BatchNormalization", [y, b.const((1 + 0.3 * rng.standard_normal(c)).astype(
        np.float32)), b.const(rng.standard_normal(c).astype(np.float32)),
        b.const(rng.standard_normal(c).astype(np.float32)),
        b.const((0.5 + rng.random(c)).astype(np.float32))])
    y = b.conv(y, 12, 8, k=1)
    qdq = _files(tmp_path, b.model((1, 3, 15, 15), y, opset=13), (1, 3, 15, 15), rng)
    every = donnx.InferenceSession(qdq)
    rows = [r for r in every.plan() if r["primitive"] == "lookup table (per channel)"]
    assert len(rows) == 1 and rows[0]["impl_info"].startswith("graph:BatchNormalization")
    for seed in range(3):
        x = (1.3 * np.random.default_rng(seed).standard_normal((1, 3, 15, 15))).astype(
            np.float32)
        np.testing.assert_array_equal(every.run(None, {"x": x})[0],
                                      ort_session(qdq).run(None, {"x": x})[0])
