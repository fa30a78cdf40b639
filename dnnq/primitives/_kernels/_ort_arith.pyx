# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ONNX Runtime's own int8 arithmetic, for ``dnnq.onnx``'s ``rounding="every"`` sessions
(dnnq/onnx/ort_arith.py describes each definition; this module only runs it fast).

Every function works on C-contiguous rows and splits the rows over OpenMP threads: each row is
computed by one thread in a fixed order, so the result does not depend on the thread count.
"""
from libc.stdint cimport int64_t, uint8_t
from cython.parallel cimport prange

# (x + 1.5 * 2^23) - 1.5 * 2^23 is x rounded half to even for |x| < 2^22, in f32 arithmetic
# (nearbyintf is a library call that saves and restores the floating-point environment)
cdef float MAGIC = 12582912.0


cdef void _qlinear_softmax_row(const uint8_t* x, uint8_t* y, int64_t d, const float* table,
                               float scale_floor, float zp) noexcept nogil:
    cdef int64_t k, j, full = d // 16 * 16
    cdef int m = 0
    cdef float lanes[8]
    cdef float total = 0.0, scale, v
    cdef const float* e
    for k in range(d):
        if x[k] > m:
            m = x[k]
    e = table + (255 - m)
    for j in range(8):
        lanes[j] = 0.0
    # 8 lanes over the blocks of 16 (lane j: values j and 8 + j of each block, in order)
    k = 0
    while k < full:
        for j in range(8):
            lanes[j] += e[x[k + j]]
        k += 8
    for k in range(full, d):  # the values left over, summed on their own from 0
        total += e[x[k]]
    for j in range(8):
        total += lanes[j]
    scale = (<float>1.0 / total) * scale_floor
    for k in range(d):
        v = e[x[k]] * scale + zp
        if v >= 255.0:
            y[k] = 255
        elif v <= 0.0:
            y[k] = 0
        else:  # round half to even in (0, 255): 1.5 * 2^23 added and taken off
            y[k] = <uint8_t>((v + MAGIC) - MAGIC)


def qlinear_softmax_u8(const uint8_t[:, ::1] x, uint8_t[:, ::1] y, const float[::1] table,
                       float scale_floor, float zp, int nthreads=1):
    """u8 QLinearSoftmax of each row of ``x`` into ``y`` (same shape): ``table`` the 256
    exponentials ``exp((i - 255 + shift) * x_scale)``, ``scale_floor`` ``floor(1 / y_scale)``,
    ``zp`` the output's zero point."""
    cdef int64_t r, n = x.shape[0], d = x.shape[1]
    cdef int nt = nthreads
    if y.shape[0] != n or y.shape[1] != d or table.shape[0] != 256:
        raise ValueError(f"qlinear_softmax_u8: x ({n}, {d}), y ({y.shape[0]}, {y.shape[1]}), "
                         f"table of {table.shape[0]} (256 expected)")
    if n == 0 or d == 0:
        return
    if nt > n:
        nt = <int>n
    if nt < 1:
        nt = 1
    with nogil:
        for r in prange(n, num_threads=nt, schedule='static'):
            _qlinear_softmax_row(&x[r, 0], &y[r, 0], d, &table[0], scale_floor, zp)
