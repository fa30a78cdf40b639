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


cdef void _qlinear_softmax_row(const uint8_t* x, uint8_t* y, int64_t d, const float* table,
                               float scale_floor, int zp) noexcept nogil:
    cdef int64_t k
    cdef int m = 0, q
    cdef float total = 0.0, ratio, v
    cdef const float* e
    for k in range(d):
        if x[k] > m:
            m = x[k]
    e = table + (255 - m)
    for k in range(d):  # one sum, in order
        total += e[x[k]]
    ratio = scale_floor / total
    for k in range(d):
        v = e[x[k]] * ratio  # (>= 0)
        if v >= 255.0:
            y[k] = 255
        else:  # rounded half to even, then the zero point added to the integer
            q = <int>((v + MAGIC) - MAGIC) + zp
            y[k] = 255 if q > 255 else <uint8_t>q


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
    if nt > n:
        nt = <int>n
    if nt < 1:
        nt = 1
    with nogil:
        for r in prange(n, num_threads=nt, schedule='static'):
            _qlinear_softmax_row(&x[r, 0], &y[r, 0], d, &table[0], scale_floor, zp)
