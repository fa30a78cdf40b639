"""dnnq/primitives/_kernels/_ort_arith.pyx against numpy models of ONNX Runtime's arithmetic
written here from its definition (dnnq/onnx/ort_arith.py's docstrings), at 1 and 2 threads:
row lengths below, at and past the 8-lane blocks of 16, every zero point."""
import numpy as np
import pytest

from dnnq.primitives._kernels import _ort_arith

F32 = np.float32


def _qlinear_softmax_model(x, table, scale_floor, zp):
    out = np.empty_like(x)
    for r, row in enumerate(x):
        e = table[row.astype(np.int64) + 255 - int(row.max())]
        full = len(row) // 16 * 16
        lanes = [F32(0)] * 8
        for k in range(full):
            lanes[k % 8] = F32(lanes[k % 8] + e[k])
        total = F32(0)
        for k in range(full, len(row)):
            total = F32(total + e[k])
        for j in range(8):
            total = F32(total + lanes[j])
        scale = F32(F32(1) / total) * scale_floor
        out[r] = np.clip(np.rint(e * scale + F32(zp)), 0, 255)
    return out


@pytest.mark.parametrize("d", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 1000])
@pytest.mark.parametrize("threads", [1, 2])
def test_qlinear_softmax_u8_follows_the_definition(d, threads):
    rng = np.random.default_rng(d)
    for xs, ys, zp in ((0.02, 1 / 256, 0), (0.1, 1 / 255, 3), (0.5, 0.003, 17)):
        x = rng.integers(0, 256, (5, d), dtype=np.uint8)
        x[0] = 200  # a constant row
        shift = max(0.0, float(np.log(np.float64(np.finfo(F32).max / F32(d)))) - 5.0) / xs
        table = np.exp((np.arange(256.0) - 255 + shift) * xs).astype(F32)
        scale_floor = F32(np.floor(F32(1) / F32(ys)))
        y = np.full_like(x, 77)
        _ort_arith.qlinear_softmax_u8(x, y, table, scale_floor, F32(zp), threads)
        np.testing.assert_array_equal(y, _qlinear_softmax_model(x, table, scale_floor, zp))


def test_qlinear_softmax_u8_checks_its_arguments():
    x = np.zeros((2, 5), np.uint8)
    with pytest.raises(ValueError, match="256 expected"):
        _ort_arith.qlinear_softmax_u8(x, np.zeros_like(x), np.zeros(255, F32), F32(1), F32(0))
    with pytest.raises(ValueError, match="y"):
        _ort_arith.qlinear_softmax_u8(x, np.zeros((2, 4), np.uint8), np.zeros(256, F32), F32(1),
                                      F32(0))



def _qlinear_softmax_rows_model(x, table, scale_floor, zp):
    """The same definition, vectorized over rows (for many rows)."""
    n, d = x.shape
    e = table[x.astype(np.int64) + 255 - x.max(axis=1, keepdims=True)]
    full = d // 16 * 16
    lanes = np.add.accumulate(e[:, :full].reshape(n, -1, 8), axis=1)[:, -1]
    total = np.add.accumulate(e[:, full:], axis=1)[:, -1] if d > full else np.zeros(n, F32)
    for j in range(8):
        total = total + lanes[:, j]
    scale = (F32(1) / total) * scale_floor
    return np.clip(np.rint(e * scale[:, None] + F32(zp)), 0, 255).astype(np.uint8)


def test_qlinear_softmax_u8_sums_and_scales_in_the_definitions_order():
    """Millions of values, a few of them within an ulp of a rounding boundary of the output
    grid: another order of the lane sums, or one division for (1 / sum) * floor(1 / y_scale),
    changes some of them (1 - 6 here; checked by changing the kernel)."""
    rng = np.random.default_rng(1)
    for d, lo, ys in ((100, 200, 1 / 3000), (64, 200, 1 / 3333)):
        x = rng.integers(lo, 256, (20000, d), dtype=np.uint8)
        shift = max(0.0, float(np.log(np.float64(np.finfo(F32).max / F32(d)))) - 5.0) / 0.01
        table = np.exp((np.arange(256.0) - 255 + shift) * 0.01).astype(F32)
        scale_floor = F32(np.floor(F32(1) / F32(ys)))
        y = np.empty_like(x)
        _ort_arith.qlinear_softmax_u8(x, y, table, scale_floor, F32(0), 2)
        np.testing.assert_array_equal(y, _qlinear_softmax_rows_model(x, table, scale_floor, 0))
