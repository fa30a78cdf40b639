"""dnnq.calibrate: scale / zero-point choice (x = scale * (q - zp)), checked against the
documented formulas and against what they must guarantee when used with quantize /
dequantize (round-trip error within half a step, zero exactly representable)."""
import numpy as np
import pytest

import dnnq
from dnnq import calibrate as C

F = np.float32


def test_minmax_asymmetric_formula_and_round_trip(rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((4, 6, 5)) * 2 + 1).astype(F)
    for dt, (qmin, qmax) in (("u8", (0, 255)), ("s8", (-128, 127))):
        s, z = C.minmax(x, dt)
        lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
        want = np.float32((hi - lo) / (qmax - qmin))
        assert s.dtype == F and s.shape == () and s == want
        assert z.dtype == np.int32 and z == np.clip(np.rint(qmin - lo / float(want)), qmin, qmax)
        q = dnnq.quantize(x, s, z, dt)
        back = dnnq.dequantize(q, s, z)
        assert np.abs(back - x).max() <= float(s) * 0.5 * (1 + 1e-5)
        zero = dnnq.quantize(np.zeros((1,), F), s, z, dt)
        assert dnnq.dequantize(zero, s, z)[0] == 0.0
        assert int(q.min()) >= qmin and int(q.max()) <= qmax


def test_minmax_symmetric_and_per_channel(rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = (rng.standard_normal((3, 5, 7)) * np.array([1, 10, 0.1, 3, 50]).reshape(1, 5, 1)
         ).astype(F)
    s, z = C.minmax(x, "s8", axis=1, symmetric=True)
    amax = np.abs(x.astype(np.float64)).max(axis=(0, 2))
    assert s.shape == (5,) and np.array_equal(s, (amax / 127).astype(F))
    assert np.array_equal(z, np.zeros(5, np.int32))
    q = dnnq.quantize(x, s, z, "s8", axis=1)
    assert q.min() >= -127 and q.max() <= 127
    back = dnnq.dequantize(q, s, z, axis=1)
    assert np.all(np.abs(back - x) <= s.reshape(1, 5, 1) * 0.5 * (1 + 1e-5))
    s, z = C.minmax(x, "u8", axis=-2, symmetric=True)
    assert np.array_equal(z, np.full(5, 128, np.int32))
    s, z = C.minmax(x, "u8", axis=1)
    assert s.shape == (5,) and z.shape == (5,)
    lo = np.minimum(x.min(axis=(0, 2)).astype(np.float64), 0)
    hi = np.maximum(x.max(axis=(0, 2)).astype(np.float64), 0)
    assert np.array_equal(s, ((hi - lo) / 255).astype(F))


def test_minmax_degenerate_ranges():
    s, z = C.minmax(np.zeros((3, 4), F), "u8")
    assert s == 1.0 and z == 0
    s, z = C.minmax(np.full((3,), 5.0, F), "s8")      # range widened to contain 0
    assert s == np.float32(5.0 / 255) and z == -128
    s, z = C.minmax(np.zeros((2, 3), F), "s8", axis=0, symmetric=True)
    assert np.array_equal(s, np.ones(2, F))


def test_percentile_clips_outliers(rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = rng.standard_normal(100000).astype(F)
    x[:5] = [1e4, -1e4, 5e3, 7e3, -3e3]
    s_mm, _ = C.minmax(x, "s8", symmetric=True)
    s_p, z_p = C.percentile(x, "s8", pct=99.9, symmetric=True)
    assert s_p < s_mm / 100 and z_p == 0
    want = np.float32(np.percentile(np.abs(x.astype(np.float64)), 99.9) / 127)
    assert s_p == want
    s, z = C.percentile(x, "u8", pct=99.0)
    lo = min(np.percentile(x.astype(np.float64), 1.0), 0.0)
    hi = max(np.percentile(x.astype(np.float64), 99.0), 0.0)
    assert s == np.float32((hi - lo) / 255)
    assert z == np.clip(np.rint(0 - lo / float(s)), 0, 255)
    s100, _ = C.percentile(x, "u8", pct=100)
    assert s100 == C.minmax(x, "u8")[0]
    sc, zc = C.percentile(x.reshape(1000, 100), "s8", axis=1)
    assert sc.shape == (100,) and zc.shape == (100,)


def test_rnn_qparams(rng_seed):
    rng = np.random.default_rng(rng_seed)
    x = np.tanh(rng.standard_normal((5, 2, 8))).astype(F)
    scale, shift = C.rnn_data_qparams(x)
    assert shift == 128.0 and scale == float(np.float32(127 / float(np.abs(x).max())))
    q = np.rint(x.astype(np.float64) * scale + shift)
    assert q.min() >= 1 and q.max() <= 255
    attr = dnnq.PrimitiveAttr()
    attr.set_rnn_data_qparams(scale, shift)
    w = rng.standard_normal((2, 1, 6, 4, 3)).astype(F)
    mask, scales = C.rnn_weights_qparams(w)
    assert mask == 24 and scales.dtype == F and scales.shape == (12,)
    amax = np.abs(w.astype(np.float64)).max(axis=(0, 1, 2)).reshape(-1)
    assert np.array_equal(scales, (127 / amax).astype(F))
    ws8 = np.rint(w * scales.reshape(4, 3))
    assert np.abs(ws8).max() <= 127
    attr.set_rnn_weights_qparams(mask, scales)
    w[..., 0, 0] = 0
    assert C.rnn_weights_qparams(w)[1][0] == 1.0
    assert C.rnn_data_qparams(np.zeros(3, F)) == (1.0, 128.0)


def test_calibrate_errors():
    x = np.ones((2, 3), F)
    with pytest.raises(dnnq.InvalidArguments, match="dt"):
        C.minmax(x, "s32")
    with pytest.raises(dnnq.InvalidArguments, match="axis"):
        C.minmax(x, "u8", axis=2)
    with pytest.raises(dnnq.InvalidArguments, match="NaN"):
        C.minmax(np.array([1.0, np.nan], F), "u8")
    with pytest.raises(dnnq.InvalidArguments, match="ndarray"):
        C.minmax([1.0, 2.0], "u8")
    with pytest.raises(dnnq.InvalidArguments, match="element"):
        C.minmax(np.zeros((0,), F), "u8")
    with pytest.raises(dnnq.InvalidArguments, match="pct"):
        C.percentile(x, "u8", pct=50)
    with pytest.raises(dnnq.InvalidArguments, match="ldigo"):
        C.rnn_weights_qparams(x)
    with pytest.raises(dnnq.InvalidArguments, match="real numbers"):
        C.rnn_data_qparams(np.array(["a"]))
