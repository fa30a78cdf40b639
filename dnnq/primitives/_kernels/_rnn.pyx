"""The int8 RNN engine's Python face: one layer and direction per call, the time loop in C.

dnnq/primitives/rnn.py validates, packs and prepares every array; `run_layer` only takes raw
pointers of C-contiguous buffers, releases the GIL and calls the C driver (ukernels/rnn_impl.h)
once.  See ukernels/dnnq_rnn.h for the packed layout and the arguments.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from libc.stdint cimport int8_t, uint8_t, int32_t, int64_t
from libc.string cimport memset

import numpy as np

from dnnq.primitives._kernels._rnn_decl cimport *

CELL_LSTM = DNNQ_RNN_LSTM
CELL_GRU = DNNQ_RNN_GRU
CELL_LBR_GRU = DNNQ_RNN_LBR_GRU
CELL_VANILLA = DNNQ_RNN_VANILLA
#: the vanilla RNN's activations (dnnq_rnn.h)
ACTIVATIONS = {"relu": DNNQ_RNN_ACT_RELU, "tanh": DNNQ_RNN_ACT_TANH,
               "logistic": DNNQ_RNN_ACT_LOGISTIC}


cdef void* _ptr(object arr, bint writable=False) except NULL:
    cdef Py_buffer view
    cdef int flags = PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
    PyObject_GetBuffer(arr, &view, flags)
    cdef void* p = view.buf
    PyBuffer_Release(&view)
    if p == NULL:
        return <void*>1
    return p


def run_layer(int isa, int cell, int act, int64_t T, int64_t N, int64_t C, int64_t H, int64_t G,
              int64_t Ki, bint reverse, x, int64_t x_off, int64_t x_sn, wl, wi, bias, div,
              float scale, float shift, h0, int64_t h0_off, int64_t h0_sn, c,
              out, int64_t out_off, int64_t out_st, int64_t out_sn,
              outf, int64_t outf_off, int64_t outf_st, int64_t outf_sn,
              lacc, rh, gate_u, int nthreads, bint fork_join, peep=None, wp=None, pdiv=None,
              pcomp=None, hproj=None, int64_t P=0):
    """One layer and direction.  Arrays are C-contiguous buffers (the `*_off` are element
    offsets into them, strides in elements); `c` / `outf` / `rh` / `gate_u` may be None where
    the cell does not use them.  LSTM only: `peep` (3, H) f32 peephole weights; `wp` packed
    projection weights with `pdiv` / `pcomp` (P,) f32 and the (N, H) u8 scratch `hproj`; P is
    the width of `out` (H without a projection)."""
    cdef dnnq_rnn_args_t a
    memset(&a, 0, sizeof(a))
    a.cell, a.act = cell, act
    a.T, a.N, a.C, a.H, a.G = T, N, C, H, G
    a.nblk = (H + 63) // 64
    a.Ki = Ki
    a.reverse = reverse
    a.x = <const uint8_t*>_ptr(x) + x_off
    a.x_sn = x_sn
    a.x_st = N * x_sn
    a.wl = <const int8_t*>_ptr(wl)
    a.wi = <const int8_t*>_ptr(wi)
    a.bias = <const float*>_ptr(bias)
    a.div = <const float*>_ptr(div)
    a.scale, a.shift = scale, shift
    a.h0 = <const uint8_t*>_ptr(h0) + h0_off
    a.h0_sn = h0_sn
    if c is not None:
        a.c = <float*>_ptr(c, True)
    a.out = <uint8_t*>_ptr(out, True) + out_off
    a.out_st, a.out_sn = out_st, out_sn
    if outf is not None:
        a.outf = <float*>_ptr(outf, True) + outf_off
        a.outf_st, a.outf_sn = outf_st, outf_sn
    a.lacc = <int32_t*>_ptr(lacc, True)
    if rh is not None:
        a.rh = <uint8_t*>_ptr(rh, True)
    if gate_u is not None:
        a.gate_u = <float*>_ptr(gate_u, True)
    if peep is not None:
        a.peep = <const float*>_ptr(peep)
    a.P = P if P > 0 else H
    if wp is not None:
        a.wp = <const int8_t*>_ptr(wp)
        a.pdiv = <const float*>_ptr(pdiv)
        a.pcomp = <const float*>_ptr(pcomp)
        a.hproj = <uint8_t*>_ptr(hproj, True)
    a.nthreads = nthreads
    a.fork_join = fork_join
    a.gemm_isa = isa
    cdef dnnq_rnn_fn fn = dnnq_rnn_for_isa(isa)
    with nogil:
        fn(&a)


def lacc_rows(int64_t T, int64_t N, int64_t nblk, int64_t G):
    """Rows of the s32 layer-product scratch (nblk * G * 64 each) that run_layer needs: a ring
    of one chunk of time steps (ukernels/dnnq_rnn.h)."""
    return dnnq_rnn_lacc_rows(T, N, nblk, G)


def eltwise(int isa, int alg, x):
    """oneDNN's jit sigmoid (alg 2) / tanh (alg 1) on a float32 array, in place (tests)."""
    cdef float[::1] v = x
    if v.shape[0]:
        with nogil:
            dnnq_rnn_eltwise(isa, alg, &v[0], v.shape[0])
    return x


def read_bandwidth(int isa, int64_t nbytes, int64_t reps=200):
    """Bytes per second of reading an `nbytes` buffer (rounded up to 256) `reps` times on one
    thread with the ISA's widest loads: nbytes = 512 KiB gives the L2 read bandwidth the
    batch-1 RNN step is measured against (benchmarks; best of 5)."""
    import time
    n = (nbytes + 255) // 256 * 256
    buf = np.ones(n, np.uint8)
    cdef const uint8_t[::1] v = buf
    cdef int64_t r = reps, total = 0, nn = n
    best = 1e30
    for _ in range(6):
        t0 = time.perf_counter()
        with nogil:
            total += dnnq_rnn_read_stream(isa, &v[0], nn, r)
        best = min(best, time.perf_counter() - t0)
    return n * reps / best
