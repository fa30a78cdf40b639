# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ONNX Runtime's own int8 arithmetic, for ``dnnq.onnx``'s ``rounding="every"`` sessions
(dnnq/onnx/ort_arith.py describes each definition; this module only runs it fast).

Every function works on C-contiguous rows and splits the rows over OpenMP threads: each row is
computed by one thread in a fixed order, so the result does not depend on the thread count.
"""
from libc.math cimport exp, logf
from libc.stdint cimport int64_t, uint8_t
from cython.parallel cimport prange

import numpy as np

# (x + 1.5 * 2^23) - 1.5 * 2^23 is x rounded half to even for |x| < 2^22, in f32 arithmetic
# (nearbyintf is a library call that saves and restores the floating-point environment)
cdef float MAGIC = 12582912.0
cdef float FLT_MAX_F = 3.4028234663852886e38


cdef enum:
    GROUP = 8  # rows summed side by side: independent chains of additions, each in order


cdef void _qlinear_softmax_rows(const uint8_t* x, uint8_t* y, int64_t d, int64_t nrows,
                                const float* table, float scale_floor, int zp) noexcept nogil:
    """Up to GROUP rows (consecutive, d apart): each row's sum is its own f32 chain of
    additions in order; the chains are interleaved so that they run side by side."""
    cdef int64_t k, j
    cdef int m, q
    cdef float total[GROUP]
    cdef const float* e[GROUP]
    cdef float ratio, v
    for j in range(nrows):
        m = 0
        for k in range(d):
            if x[j * d + k] > m:
                m = x[j * d + k]
        e[j] = table + (255 - m)
        total[j] = 0.0
    if nrows == GROUP:
        for k in range(d):
            for j in range(GROUP):
                total[j] += e[j][x[j * d + k]]
    else:
        for j in range(nrows):
            for k in range(d):
                total[j] += e[j][x[j * d + k]]
    for j in range(nrows):
        ratio = scale_floor / total[j]
        for k in range(d):
            v = e[j][x[j * d + k]] * ratio  # (>= 0)
            if v >= 255.0:
                y[j * d + k] = 255
            else:  # rounded half to even, then the zero point added to the integer
                q = <int>((v + MAGIC) - MAGIC) + zp
                y[j * d + k] = 255 if q > 255 else <uint8_t>q


def qlinear_softmax_table(float x_scale, int64_t d):
    """ONNX Runtime's 256 exponentials for rows of ``d`` values, each computed in double and
    rounded to f32: ``exp((i - 255 + shift) * x_scale)`` with ``shift = max(0, logf(FLT_MAX /
    d) - 5) / x_scale`` (FLT_MAX / d and its logarithm in f32: the C library's logf, as in
    ONNX Runtime's build)."""
    if d < 1 or not x_scale > 0:
        raise ValueError(f"qlinear_softmax_table: d {d} (>= 1 expected), x_scale {x_scale} "
                         "(> 0 expected)")
    out = np.empty(256, np.float32)
    cdef float[::1] o = out
    cdef double shift = <double>logf(FLT_MAX_F / <float>d) - 5.0
    cdef int i
    if shift < 0.0:
        shift = 0.0
    shift = shift / <double>x_scale
    for i in range(256):
        o[i] = <float>exp((<double>i - 255.0 + shift) * <double>x_scale)
    return out


def qlinear_softmax_u8(const uint8_t[:, ::1] x, uint8_t[:, ::1] y, const float[::1] table,
                       float scale_floor, int zp, int nthreads=1):
    """u8 QLinearSoftmax of each row of ``x`` into ``y`` (same shape): ``table`` from
    qlinear_softmax_table, ``scale_floor`` ``floor(1 / y_scale)``, ``zp`` the output's zero
    point (0 - 255)."""
    cdef int64_t r, n = x.shape[0], d = x.shape[1]
    cdef int nt = nthreads
    if y.shape[0] != n or y.shape[1] != d or table.shape[0] != 256:
        raise ValueError(f"qlinear_softmax_u8: x ({n}, {d}), y ({y.shape[0]}, {y.shape[1]}), "
                         f"table of {table.shape[0]} (256 expected)")
    if not 0 <= zp <= 255:
        raise ValueError(f"qlinear_softmax_u8: zp {zp} (0 - 255 expected)")
    if n == 0 or d == 0:
        return
    cdef int64_t groups = (n + GROUP - 1) // GROUP
    if nt > groups:
        nt = <int>groups
    if nt < 1:
        nt = 1
    with nogil:
        for r in prange(groups, num_threads=nt, schedule='static'):
            _qlinear_softmax_rows(&x[r * GROUP, 0], &y[r * GROUP, 0], d,
                                  min(GROUP, n - r * GROUP), &table[0], scale_floor, zp)


def qlinear_average_pool_2d(const uint8_t[:, :, :, :] x, uint8_t[:, :, :, ::1] y,
                            const float[:, ::1] count, int kh, int kw, int sh, int sw, int dh,
                            int dw, int ph, int pw, float x_scale, int x_zp, float y_scale,
                            int y_zp, bint s8, int nthreads=1):
    """ONNX Runtime's QLinearAveragePool of 2-D maps: ``x`` (N, C, H, W) 8-bit (the bytes of
    u8, or of s8 with ``s8``) in any memory order, ``y`` (N, C, OH, OW) of the same type; each
    value dequantized in f32, ``x_scale * f32(q - x_zp)``, the window's values inside the input
    added in f32 in row-major window order (from 0: the padding adds nothing), divided by
    ``count[oh, ow]``, then ``round_half_even(v / y_scale + f32(y_zp))`` saturated. One plane
    per thread at a time."""
    cdef int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef int64_t oh = y.shape[2], ow = y.shape[3], p, i, j, a, b, r, t
    cdef int nt = nthreads, lo = -128 if s8 else 0, hi = 127 if s8 else 255, q
    cdef float acc, v, zf = <float>y_zp
    if y.shape[0] != n or y.shape[1] != c or count.shape[0] != oh or count.shape[1] != ow:
        raise ValueError(f"qlinear_average_pool_2d: x ({n}, {c}, {h}, {w}), y ({y.shape[0]}, "
                         f"{y.shape[1]}, {oh}, {ow}), count ({count.shape[0]}, "
                         f"{count.shape[1]})")
    if n * c == 0 or oh * ow == 0:
        return
    if nt < 1:
        nt = 1
    if nt > n * c:
        nt = <int>(n * c)
    cdef Py_ssize_t rs = x.strides[2], cs = x.strides[3]
    cdef const uint8_t* plane
    cdef uint8_t* dst
    with nogil:
        for p in prange(n * c, num_threads=nt, schedule='static'):
            plane = &x[p // c, p % c, 0, 0]
            dst = &y[p // c, p % c, 0, 0]
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for a in range(kh):
                        r = i * sh - ph + a * dh
                        if r < 0 or r >= h:
                            continue
                        for b in range(kw):
                            t = j * sw - pw + b * dw
                            if t < 0 or t >= w:
                                continue
                            if s8:
                                q = <int>(<const signed char*>plane)[r * rs + t * cs]
                            else:
                                q = plane[r * rs + t * cs]
                            acc = acc + x_scale * <float>(q - x_zp)
                    v = acc / count[i, j]
                    v = v / y_scale + zf
                    if v >= <float>hi:
                        q = hi
                    elif v <= <float>lo:
                        q = lo
                    else:
                        q = <int>((v + MAGIC) - MAGIC)
                    dst[i * ow + j] = <uint8_t>(q & 255)


def channel_lookup(const uint8_t[:, :, :, :] x, uint8_t[:, :, :, :] y,
                   const uint8_t[:, ::1] table, int nthreads=1):
    """``y[n, c, h, w] = table[c, x[n, c, h, w]]`` for 8-bit maps (a per-channel op between two
    roundings, as a table per channel): ``x`` and ``y`` of one shape, any memory order each;
    channels-last maps (channels innermost in both) a pixel at a time, others a plane at a
    time."""
    cdef int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3]
    cdef int64_t p, k, i, j
    cdef int nt = nthreads
    cdef const uint8_t* src
    cdef uint8_t* dst
    if y.shape[0] != n or y.shape[1] != c or y.shape[2] != h or y.shape[3] != w or \
            table.shape[0] != c or table.shape[1] != 256:
        raise ValueError(f"channel_lookup: x ({n}, {c}, {h}, {w}), y ({y.shape[0]}, "
                         f"{y.shape[1]}, {y.shape[2]}, {y.shape[3]}), table ({table.shape[0]}, "
                         f"{table.shape[1]}) ({c}, 256 expected)")
    if n * c * h * w == 0:
        return
    cdef Py_ssize_t xs0 = x.strides[0], xs1 = x.strides[1], xs2 = x.strides[2]
    cdef Py_ssize_t xs3 = x.strides[3], ys0 = y.strides[0], ys1 = y.strides[1]
    cdef Py_ssize_t ys2 = y.strides[2], ys3 = y.strides[3]
    cdef const uint8_t* x0 = &x[0, 0, 0, 0]
    cdef uint8_t* y0 = &y[0, 0, 0, 0]
    cdef const uint8_t* t0 = &table[0, 0]
    if nt < 1:
        nt = 1
    if xs1 == 1 and ys1 == 1:  # channels-last: a pixel's channels are adjacent
        with nogil:
            for p in prange(n * h, num_threads=nt, schedule='static'):
                for j in range(w):
                    src = x0 + (p // h) * xs0 + (p % h) * xs2 + j * xs3
                    dst = y0 + (p // h) * ys0 + (p % h) * ys2 + j * ys3
                    for k in range(c):
                        dst[k] = t0[k * 256 + src[k]]
    else:
        with nogil:
            for p in prange(n * c, num_threads=nt, schedule='static'):
                for i in range(h):
                    src = x0 + (p // c) * xs0 + (p % c) * xs1 + i * xs2
                    dst = y0 + (p // c) * ys0 + (p % c) * ys1 + i * ys2
                    for j in range(w):
                        dst[j * ys3] = t0[(p % c) * 256 + src[j * xs3]]
