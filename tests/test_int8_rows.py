"""Softmax and layer normalization of quantized 8-bit rows (ukernels/tk_rows8.h, an ONNX
session's steps for those ops on int8 activations): bit for bit against a numpy model of their
definition (integer moments, the exponential table, the 16-lane sum order, f32 products), at
every ISA level, with and without VBMI's byte lookups, row lengths below, at and past the
16-lane vector, the 64-byte maximum and the 1024-element kept-row and table threshold, u8 / s8 in, u8 / s8 / f32 out, on one and
two threads; and within a quantization step of float64 math."""
import math

import numpy as np
import pytest

from dnnq.eltwise_math import eltwise_table
from dnnq.primitives import _dispatch
from dnnq.primitives._kernels import _codes, _toolkit

F32 = np.float32
LEVELS = list(_dispatch.available_isa_levels())
LENGTHS = [1, 2, 15, 16, 17, 33, 60, 63, 64, 65, 120, 255, 1023, 1024, 1025, 6625]
NP = {"u8": np.uint8, "s8": np.int8, "f32": F32}


def _values(rng, dt, rows, n):
    lo, hi = (0, 256) if dt == "u8" else (-128, 128)
    return rng.integers(lo, hi, (rows, n)).astype(NP[dt])


def _quantize(y, inv, zp, dt):
    """rne(clamp(y * inv, +-1024)) + zp, saturated (y * inv one f32 product)."""
    if dt == "f32":
        return y
    v = np.clip(y * F32(inv), F32(-1024), F32(1024))
    lo, hi = (0, 255) if dt == "u8" else (-128, 127)
    return np.clip(np.rint(v).astype(np.int64) + zp, lo, hi).astype(NP[dt])


def _softmax_model(x, scale, inv, zp, dt):
    d = np.arange(-255, 1).astype(F32) * F32(scale)
    table = np.array([F32(math.exp(float(v))) for v in d], F32)
    out = []
    for row in x.astype(np.int64):
        e = table[255 + row - row.max()]
        part = np.zeros(16, F32)
        full = len(e) // 16 * 16
        for i in range(0, full, 16):
            part += e[i:i + 16]
        part[:len(e) - full] += e[full:]
        for w in (8, 4, 2):
            part[:w] += part[w:2 * w]
        rcp = F32(1) / (part[0] + part[1])
        if dt == "f32":
            out.append(e * rcp)
        else:
            out.append(_quantize(e * (rcp * F32(inv)), 1.0, zp, dt))
    return np.array(out)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("vbmi", [False, True])
def test_softmax_rows_bit_exact(level, vbmi):
    if vbmi and not (_dispatch.cpu_has("avx512_vbmi") and level.startswith("avx512")):
        pytest.skip("VBMI lookups need an AVX-512 level on a CPU with VBMI")
    rng = np.random.default_rng(len(level) + 7 * vbmi)
    for n in LENGTHS:
        for src_dt, dst_dt, scale, inv, zp in [("u8", "u8", 0.11, 255.0, 0),
                                                ("s8", "s8", 0.02, 200.0, -100),
                                                ("u8", "f32", 0.3, 1.0, 0),
                                                ("s8", "u8", 0.05, 256.0, 3)]:
            x = _values(rng, src_dt, 3, n)
            if n >= 256:  # every byte value and the extremes once
                x[0, :256] = np.arange(256).astype(np.uint8).view(NP[src_dt])
            if src_dt == "s8":  # a row whose largest value is negative (its tail too)
                x[1] = np.minimum(x[1], -1).astype(np.int8)
            table = eltwise_table("exp", np.arange(-255, 1).astype(F32) * F32(scale))
            want = _softmax_model(x, scale, inv, zp, dst_dt)
            for threads in (1, 2):
                guard = np.full((3, n + 32), 77, NP[dst_dt])
                dst = guard[:, :n]
                _toolkit.qsoftmax_run(_codes.ISA[level], vbmi, x.view(np.uint8), dst,
                                      _codes.DT[src_dt], _codes.DT[dst_dt], table, inv, zp,
                                      threads)
                np.testing.assert_array_equal(dst.view(np.uint32) if dst_dt == "f32" else dst,
                                              want.view(np.uint32) if dst_dt == "f32" else
                                              want, err_msg=f"n={n} {src_dt}->{dst_dt}")
                assert (guard[:, n:] == 77).all(), "written past a row"


def test_softmax_rows_close_to_float64():
    rng = np.random.default_rng(3)
    x = _values(rng, "u8", 50, 300)
    table = eltwise_table("exp", np.arange(-255, 1).astype(F32) * F32(0.07))
    dst = np.empty(x.shape, np.uint8)
    _toolkit.qsoftmax_run(_codes.ISA[LEVELS[-1]], False, x, dst, _codes.DT["u8"],
                          _codes.DT["u8"], table, 255.0, 0, 1)
    v = (x.astype(np.float64) - 128) * 0.07
    e = np.exp(v - v.max(1, keepdims=True))
    want = np.rint(e / e.sum(1, keepdims=True) * 255)
    assert np.abs(dst - want).max() <= 1


def _layernorm_model(x, scale, zs, eps, gamma, beta, inv, zp, dt):
    out = []
    n = x.shape[1]
    for row in x.astype(np.int64):
        q = row - zs
        s1, s2 = int(q.sum()), int((q * q).sum())
        var = scale * scale * (float(n * s2 - s1 * s1) / (float(n) * float(n)))
        r = 1.0 / math.sqrt(var + eps)
        a, b = F32(scale * r), F32(-(s1 / float(n)) * scale * r)
        y = (q.astype(F32) * a + b) * gamma + beta
        out.append(_quantize(y, inv, zp, dt))
    return np.array(out)


@pytest.mark.parametrize("level", LEVELS)
def test_layernorm_rows_bit_exact(level):
    rng = np.random.default_rng(11 + len(level))
    for n in LENGTHS:
        for src_dt, dst_dt, zs, zp in [("u8", "u8", 128, 120), ("s8", "s8", -3, 0),
                                       ("u8", "f32", 0, 0), ("s8", "u8", 0, 255)]:
            x = _values(rng, src_dt, 4, n)
            x[3] = x[3, :1]  # a constant row: variance 0, eps alone
            scale, eps, inv = F32(0.037), 1e-5, 1 / F32(0.021)
            gamma = rng.standard_normal(n).astype(F32)
            beta = rng.standard_normal(n).astype(F32)
            want = _layernorm_model(x, float(scale), zs, eps, gamma, beta, inv, zp, dst_dt)
            for threads in (1, 2):
                guard = np.full((4, n + 32), 77, NP[dst_dt])
                dst = guard[:, :n]
                _toolkit.qlayernorm_run(_codes.ISA[level], x.view(np.uint8), dst,
                                        _codes.DT[src_dt], _codes.DT[dst_dt], scale, zs,
                                        gamma, beta, eps, inv, zp, threads)
                np.testing.assert_array_equal(dst.view(np.uint32) if dst_dt == "f32" else dst,
                                              want.view(np.uint32) if dst_dt == "f32" else
                                              want, err_msg=f"n={n} {src_dt}->{dst_dt}")
                assert (guard[:, n:] == 77).all(), "written past a row"


def test_row_kernels_refuse_bad_shapes():
    x = np.zeros((2, 8), np.uint8)
    with pytest.raises(ValueError, match="256"):
        _toolkit.qsoftmax_run(0, False, x, x.copy(), 3, 3, np.zeros(255, F32), 1.0, 0)
    with pytest.raises(ValueError, match="expected"):
        _toolkit.qsoftmax_run(0, False, x, np.zeros((2, 7), np.uint8), 3, 3,
                              np.zeros(256, F32), 1.0, 0)
    with pytest.raises(ValueError, match="gamma"):
        _toolkit.qlayernorm_run(0, x, x.copy(), 3, 3, 1.0, 0, np.zeros(7, F32),
                                np.zeros(8, F32), 1e-5, 1.0, 0)


def _fma32(a, b, c):
    """f32 fma, elementwise: the f64 product of two f32 values is exact, and the sum with
    an f32 of these tests' magnitudes too (integers below 2^8 times f32 constants)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.float64(c)).astype(F32)


def _q8_model(op, x0, x1, z0, z1, zd, a0, a1, cols, dt, c=0.0):
    v0 = (x0.astype(np.int64) - z0).astype(F32)
    if op == "cols":
        y = (v0 * cols) * F32(a0) + F32(c)
    else:
        v1 = (x1.astype(np.int64) - z1).astype(F32)
        if op == "add":
            y = (v0 * F32(a0) + v1 * F32(a1)) + F32(c)
        elif op == "add_fma":
            y = _fma32(v0, F32(a0), _fma32(v1, F32(a1), F32(c)))
        else:
            y = (v0 * v1) * F32(a0) + F32(c)
    return _quantize(y, 1.0, zd, dt)


@pytest.mark.parametrize("level", LEVELS)
def test_int8_binary_rows_bit_exact(level):
    """tk_rows8.h's binary ops: y = x0 a0 + x1 a1 + c, (x0 x1) a0 + c, (x0 cols) a0 + c
    (x = q - z), each product and sum rounded once, and fma(x0, a0, fma(x1, a1, c)) (one
    rounding per FMA: ONNX Runtime's QLinearAdd), then rounded half to even and saturated.
    The constants are such that an FMA's single rounding differs from a product and a sum
    somewhere in the values."""
    rng = np.random.default_rng(5 + len(level))
    ops = {"add": _toolkit.Q8_ADD, "mul": _toolkit.Q8_MUL, "cols": _toolkit.Q8_MUL_COLS,
           "add_fma": _toolkit.Q8_ADD_FMA}
    for n in [1, 7, 16, 24, 33, 96, 1000]:
        for op in ops:
            for d0, d1, dd, z0, z1, zd in [("u8", "u8", "u8", 128, 3, 7), ("s8", "u8", "s8", -5, 0, 0),
                                           ("u8", "s8", "u8", 0, 9, 250)]:
                x0, x1 = _values(rng, d0, 5, n), _values(rng, d1, 5, n)
                a0, a1 = float(F32(0.0123)), float(F32(-0.77))
                c = float(F32(0.3)) if op != "cols" else float(F32(-1.25))
                if op == "add_fma":
                    a0, a1 = float(F32(0.61803)), float(F32(0.3819661))
                cols = (rng.standard_normal(n) * 0.5).astype(F32)
                want = _q8_model(op, x0, x1, z0, z1, zd, a0, a1, cols, dd, c)
                for threads in (1, 2):
                    guard = np.full((5, n + 32), 77, NP[dd])
                    dst = guard[:, :n]
                    _toolkit.q8_binary_run(_codes.ISA[level], ops[op], x0.view(np.uint8),
                                           x1.view(np.uint8), dst.view(np.uint8),
                                           _codes.DT[d0], _codes.DT[d1], _codes.DT[dd], z0, z1,
                                           zd, a0, a1, cols if op == "cols" else None, threads,
                                           c)
                    np.testing.assert_array_equal(dst, want, err_msg=f"n={n} {op} {d0}{d1}{dd}")
                    assert (guard[:, n:] == 77).all(), "written past a row"


@pytest.mark.parametrize("level", LEVELS)
def test_int8_add_fma_rounds_once_per_fma(level):
    """ADD_FMA on every pair of u8 values: the kernel's result equals two FMAs rounded once
    each, and differs from the product-and-sum form somewhere (else the test could not tell
    them apart)."""
    a0, a1, c = float(F32(0.544281)), float(F32(0.298859)), float(F32(-41.53))
    x0 = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256, 1)
    x1 = np.ascontiguousarray(x0.T)
    want = _q8_model("add_fma", x0, x1, 0, 0, 0, a0, a1, None, "u8", c)
    unfused = _q8_model("add", x0, x1, 0, 0, 0, a0, a1, None, "u8", c)
    assert (want != unfused).any()
    for threads in (1, 2):
        dst = np.zeros_like(x0)
        _toolkit.q8_binary_run(_codes.ISA[level], _toolkit.Q8_ADD_FMA, x0, x1, dst,
                               _codes.DT["u8"], _codes.DT["u8"], _codes.DT["u8"], 0, 0, 0, a0,
                               a1, None, threads, c)
        np.testing.assert_array_equal(dst, want)


def test_int8_gate_columns():
    """c = (f32(g - zp) * scale [+ 1]) * m for each channel, repeated."""
    g = np.array([0, 5, 200, 255], np.uint8)
    got = _toolkit.q8_gate_cols(g, _codes.DT["u8"], 0.02, 3, True, 0.5, 2)
    want = (((g.astype(np.int64) - 3).astype(F32) * F32(0.02)) + F32(1)) * F32(0.5)
    np.testing.assert_array_equal(got, np.tile(want, 2))
    s = np.array([-128, -1, 0, 127], np.int8)
    got = _toolkit.q8_gate_cols(s.view(np.uint8), _codes.DT["s8"], 0.1, -2, False, 2.0)
    np.testing.assert_array_equal(got, ((s.astype(np.int64) + 2).astype(F32) * F32(0.1)) * F32(2))


def test_repeat_pixels_into_channel_slice():
    """Nearest upsampling by whole factors into a channel slice of a channels-last tensor
    (a Concat that resizes its inputs into itself): numpy's repeat, the other channels
    untouched, on one and two threads."""
    rng = np.random.default_rng(9)
    for (n, h, w, c), (rh, rw), ct, at in [((1, 3, 5, 24), (8, 8), 96, 24), ((2, 4, 3, 7), (2, 3), 16, 9),
                                         ((1, 1, 1, 1), (1, 1), 1, 0), ((1, 5, 4, 16), (1, 2), 16, 0)]:
        src = rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)
        for threads in (1, 2):
            dst = np.full((n, h * rh, w * rw, ct), 0xA5, np.uint8)
            _toolkit.repeat_pixels_into(src, dst, rh, rw, at, threads)
            want = np.repeat(np.repeat(src, rh, axis=1), rw, axis=2)
            np.testing.assert_array_equal(dst[..., at:at + c], want)
            assert (dst[..., :at] == 0xA5).all() and (dst[..., at + c:] == 0xA5).all()
    with pytest.raises(ValueError, match="repeat_pixels_into"):
        _toolkit.repeat_pixels_into(np.zeros((1, 2, 2, 4), np.uint8),
                                    np.zeros((1, 4, 4, 4), np.uint8), 2, 2, 1)
