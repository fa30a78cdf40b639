"""The C-level execute path of the RNN primitives (LSTM, GRU, LBRGRU, VanillaRNN).

An `RnnExec` is built once, at primitive creation, from the validated description: the cell,
the dims, the direction, which optional tensors exist, the legacy quantization parameters and
the argument ids it reads.  `run(args, nthreads, fork_join)` then only looks the arrays up and
checks them (exact ndarray type, dtype, shape, C-contiguity, writeable outputs that overlap no
input, weights packed by this primitive), refreshes the compensated bias in C, and runs every
layer and direction -- state copies, the f32 mode's quantization, bidirectional sums included
-- with the GIL released, one C call per layer and direction.

It never raises for a bad argument: it returns None, and the primitive's Python path (which
also takes plain weights, strided arrays and the unified quantization form) produces the
error message or the result.  It is not re-entrant: a second thread that finds it busy takes
the Python path, which has its own scratch pool.
"""
cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem, PyDict_Size
from cpython.ref cimport PyObject
from libc.math cimport lrintf
from libc.stdint cimport int8_t, uint8_t, int32_t, int64_t, uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from dnnq._kernels._rnn_decl cimport *

import numpy as np

cnp.import_array()

# direction modes
cdef enum:
    L2R_ = 0
    R2L_ = 1
    CONCAT_ = 2
    BISUM_ = 3
L2R, R2L, CONCAT, BISUM = L2R_, R2L_, CONCAT_, BISUM_


cdef inline uint8_t _quantize(float v, float sc, float sh) noexcept nogil:
    """saturate_u8(rne(v * scale + shift)), multiply then add, NaN -> 0 (the kernel's
    rnn_quantize_u8; the extension is built without FMA contraction)."""
    v = v * sc
    v = v + sh
    if not (v > 0.0):
        v = 0.0
    if v > 255.0:
        v = 255.0
    return <uint8_t>lrintf(v)


cdef inline float _dequantize(uint8_t q, float sc, float sh) noexcept nogil:
    return (<float>q - sh) / sc


cdef inline char* _data(object o, int typenum, int ndim, const int64_t* dims, bint writable):
    """The data of o if o is exactly a C-contiguous ndarray of that dtype and shape (and
    writeable when asked), else NULL."""
    if o is None or not cnp.PyArray_CheckExact(o):
        return NULL
    cdef cnp.ndarray a = <cnp.ndarray>o
    if cnp.PyArray_TYPE(a) != typenum or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        return NULL
    if cnp.PyArray_NDIM(a) != ndim:
        return NULL
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        return NULL
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    cdef int i
    for i in range(ndim):
        if d[i] != dims[i]:
            return NULL
    return <char*>cnp.PyArray_DATA(a)


cdef inline bint _overlap(char* p, object o, object i):
    """Output o (data p) shares bytes with input i (None: no input)."""
    if i is None:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    cdef cnp.ndarray b = <cnp.ndarray>i
    cdef uintptr_t p0 = <uintptr_t>p, p1 = p0 + <uintptr_t>cnp.PyArray_NBYTES(a)
    cdef uintptr_t q0 = <uintptr_t>cnp.PyArray_DATA(b), q1 = q0 + <uintptr_t>cnp.PyArray_NBYTES(b)
    return q0 < p1 and p0 < q1


cdef inline object _get(dict args, int key):
    cdef PyObject* item = PyDict_GetItem(args, key)
    return None if item == NULL else <object>item


cdef class RnnExec:
    """See the module docstring.  Built by dnnq.primitives.rnn._RNN."""
    cdef object prim, known, packed_cls, key
    cdef object c_wl, c_wi, c_wp, div, term, pdiv, pcomp, scratch, xq, siq, biasc
    cdef int isa, cell, act, dirmode, f32_mode, dl_f32, busy
    cdef int a_si, a_sic, a_bias, a_peep, a_proj, a_dl, a_di, a_dic, a_wl, a_wi
    cdef int64_t L, D, T, N, C, H, G, P, SIC, nb, dlc, nblk
    cdef float scale, shift
    cdef dnnq_rnn_fn fn
    cdef const int8_t** pw      # packed weights of (l, d): layer, iter, projection
    cdef uint8_t* wsp[4]        # scratch layer outputs: [l % 2][d], (T, N, P) u8 each

    def __cinit__(self):
        self.pw = NULL

    def __dealloc__(self):
        free(self.pw)

    def __init__(self, prim, packed_cls, known, *, int isa, int cell, int act, int dirmode,
                 bint f32_mode, bint dl_f32, int64_t L, int64_t D, int64_t T, int64_t N,
                 int64_t C, int64_t H, int64_t G, int64_t P, int64_t SIC, int64_t nb,
                 float scale, float shift, pdiv, has_si, has_sic, has_bias, has_peep, has_proj,
                 has_di, has_dic):
        self.prim, self.packed_cls, self.known = prim, packed_cls, frozenset(known)
        self.key = prim._key
        self.isa, self.cell, self.act, self.dirmode = isa, cell, act, dirmode
        self.f32_mode, self.dl_f32 = f32_mode, dl_f32
        self.L, self.D, self.T, self.N, self.C, self.H, self.G = L, D, T, N, C, H, G
        self.P, self.SIC, self.nb = P, SIC, nb
        self.dlc = P * (2 if dirmode == CONCAT_ else 1)
        self.nblk = (H + 63) // 64
        self.scale, self.shift = scale, shift
        self.pdiv = np.ascontiguousarray(pdiv, np.float32)
        self.a_si, self.a_sic, self.a_bias = has_si, has_sic, has_bias
        self.a_peep, self.a_proj, self.a_di, self.a_dic = has_peep, has_proj, has_di, has_dic
        self.fn = dnnq_rnn_for_isa(isa)
        self.pw = <const int8_t**>malloc(3 * L * D * sizeof(int8_t*))
        if self.pw == NULL:
            raise MemoryError("RnnExec: packed weights table")
        self.biasc = np.empty(L * D * nb * H, np.float32)
        if f32_mode:
            self.xq = np.empty(T * N * C, np.uint8)
            self.siq = np.empty(L * D * N * SIC, np.uint8)
        self.busy = 0

    cdef bint _refresh(self, wl, wi, wp) except -1:
        """The compensation of these packed weights (the primitive computes and caches it) and
        their panel pointers."""
        cdef int64_t l, d, i
        div, term = self.prim._compensation(wl, wi, np.float32(self.scale),
                                            np.float32(self.shift), self.prim._wscales)
        self.div = np.ascontiguousarray(div, np.float32)
        self.term = np.ascontiguousarray(term, np.float32).reshape(-1)
        if wp is not None:
            self.pcomp = np.ascontiguousarray((wp.comp * np.float32(self.shift)).astype(
                np.float32)).reshape(-1)
        cdef cnp.ndarray arr
        for l in range(self.L):
            for d in range(self.D):
                i = l * self.D + d
                arr = wl.packed[l][d]
                self.pw[3 * i] = <const int8_t*>cnp.PyArray_DATA(arr)
                arr = wi.packed[l][d]
                self.pw[3 * i + 1] = <const int8_t*>cnp.PyArray_DATA(arr)
                self.pw[3 * i + 2] = NULL
                if wp is not None:
                    arr = wp.packed[l][d]
                    self.pw[3 * i + 2] = <const int8_t*>cnp.PyArray_DATA(arr)
        self.c_wl, self.c_wi, self.c_wp = wl, wi, wp
        return 0

    cdef bint _weights_ok(self, w, int arg):
        return type(w) is self.packed_cls and w.owner is self.key and w.which == arg

    def run(self, dict args, int nthreads, int fork_join):
        """The outputs dict, or None when the Python path must run (see the module doc)."""
        # taken before anything that may run Python code (the compensation refresh) and so
        # let another thread in: that one takes the Python path
        if self.busy:
            return None
        self.busy = 1
        try:
            return self._go(args, nthreads, fork_join)
        finally:
            self.busy = 0

    cdef object _go(self, dict args, int nthreads, int fork_join):
        cdef object k
        if PyDict_Size(args) > len(self.known):
            return None
        for k in args:
            if k not in self.known:
                return None
        cdef int64_t L = self.L, D = self.D, T = self.T, N = self.N, C = self.C, H = self.H
        cdef int64_t P = self.P, SIC = self.SIC
        cdef int data_t = cnp.NPY_FLOAT32 if self.f32_mode else cnp.NPY_UINT8
        cdef int64_t dims[4]
        # inputs
        x = _get(args, 1)                           # DNNL_ARG_SRC_LAYER
        dims[0], dims[1], dims[2] = T, N, C
        cdef char* px = _data(x, data_t, 3, dims, False)
        if px == NULL:
            return None
        wl, wi = _get(args, 33), _get(args, 34)
        if not (self._weights_ok(wl, 33) and self._weights_ok(wi, 34)):
            return None
        wp = None
        if self.a_proj:
            wp = _get(args, 36)
            if not self._weights_ok(wp, 36):
                return None
        si = _get(args, 2) if self.a_si else None
        cdef char* psi = NULL
        if si is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, SIC
            psi = _data(si, data_t, 4, dims, False)
            if psi == NULL:
                return None
        sic = _get(args, 3) if self.a_sic else None
        cdef char* psic = NULL
        if sic is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, H
            psic = _data(sic, cnp.NPY_FLOAT32, 4, dims, False)
            if psic == NULL:
                return None
        bias = _get(args, 41) if self.a_bias else None
        cdef char* pb = NULL
        if bias is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, self.nb, H
            pb = _data(bias, cnp.NPY_FLOAT32, 4, dims, False)
            if pb == NULL:
                return None
        peep = None
        cdef char* ppe = NULL
        if self.a_peep:
            peep = _get(args, 35)
            dims[0], dims[1], dims[2], dims[3] = L, D, 3, H
            ppe = _data(peep, cnp.NPY_FLOAT32, 4, dims, False)
            if ppe == NULL:
                return None
        # outputs: given (checked, no overlap with an input) or allocated here
        cdef char* pdl = NULL
        cdef char* pdi = NULL
        cdef char* pdic = NULL
        dims[0], dims[1], dims[2] = T, N, self.dlc
        dl = self._output(args, 17, 3, dims, cnp.NPY_FLOAT32 if self.dl_f32 else cnp.NPY_UINT8,
                          x, si, sic, bias, peep, &pdl)
        if dl is None:
            return None
        di = dic = None
        if self.a_di:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, P
            di = self._output(args, 18, 4, dims, data_t, x, si, sic, bias, peep, &pdi)
            if di is None:
                return None
        if self.a_dic:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, H
            dic = self._output(args, 19, 4, dims, cnp.NPY_FLOAT32, x, si, sic, bias, peep, &pdic)
            if dic is None:
                return None
        if (di is not None and (_overlap(pdi, di, dl) or _overlap(pdl, dl, di))) or \
                (dic is not None and (_overlap(pdic, dic, dl) or
                                      (di is not None and _overlap(pdic, dic, di)))):
            return None
        if wl is not self.c_wl or wi is not self.c_wi or wp is not self.c_wp:
            self._refresh(wl, wi, wp)
        if self.scratch is None:
            self._take_scratch()
        with nogil:
            self._run(<const uint8_t*>px, <const float*>px, psi, <const float*>psic,
                      <const float*>pb, <const float*>ppe, pdl, pdi, <float*>pdic,
                      nthreads, fork_join)
        out = {17: dl}
        if di is not None:
            out[18] = di
        if dic is not None:
            out[19] = dic
        return out

    cdef object _output(self, dict args, int key, int ndim, const int64_t* dims, int typenum,
                        x, si, sic, bias, peep, char** ptr):
        """The output array of `key`: the given one (checked, overlapping no input) or a new
        one, its data in ptr[0]; None when the given one does not qualify (the checked path
        then names the problem)."""
        cdef cnp.npy_intp odims[4]
        cdef int i
        o = _get(args, key)
        if o is None:
            for i in range(ndim):
                odims[i] = dims[i]
            o = cnp.PyArray_EMPTY(ndim, odims, typenum, 0)
            ptr[0] = <char*>cnp.PyArray_DATA(<cnp.ndarray>o)
            return o
        ptr[0] = _data(o, typenum, ndim, dims, True)
        if ptr[0] == NULL or self._overlaps(ptr[0], o, x, si, sic, bias, peep):
            return None
        return o

    cdef bint _overlaps(self, char* p, o, x, si, sic, bias, peep):
        return (_overlap(p, o, x) or _overlap(p, o, si) or _overlap(p, o, sic) or
                _overlap(p, o, bias) or _overlap(p, o, peep))

    cdef int _take_scratch(self) except -1:
        s = self.prim._get_scratch()        # kept for good: this path's own scratch
        self.scratch = s
        cdef int i, d
        cdef cnp.ndarray arr
        for i in range(len(s["ws"])):
            for d in range(self.D):
                arr = s["ws"][i][d]
                self.wsp[2 * i + d] = <uint8_t*>cnp.PyArray_DATA(arr)
        return 0

    cdef void _run(self, const uint8_t* xu, const float* xf, char* psi, const float* sic,
                   const float* bias, const float* peep, char* pdl, char* pdi, float* dic,
                   int nthreads, int fork_join) noexcept nogil:
        cdef int64_t L = self.L, D = self.D, T = self.T, N = self.N, C = self.C, H = self.H
        cdef int64_t P = self.P, SIC = self.SIC, G = self.G, nb = self.nb, dlc = self.dlc
        cdef float sc = self.scale, sh = self.shift
        cdef int64_t i, n, k, l, d, K, t_last, nbias = L * D * nb * H
        cdef float* biasc
        cdef const float* term
        cdef uint8_t* xq = NULL
        cdef uint8_t* siq = NULL
        cdef uint8_t* h0buf
        cdef const float* pcomp = NULL
        cdef const uint8_t* hsrc
        cdef dnnq_rnn_args_t a
        cdef bint last, dl_u8 = not self.dl_f32, bisum = self.dirmode == BISUM_
        cdef bint concat = self.dirmode == CONCAT_
        cdef int dir_id
        cdef uint8_t q0
        cdef const uint8_t* s0
        cdef const uint8_t* s1
        cdef int v
        cdef float two_sh = <float>2.0 * sh
        memset(&a, 0, sizeof(a))
        with gil:
            biasc = <float*>cnp.PyArray_DATA(<cnp.ndarray>self.biasc)
            term = <const float*>cnp.PyArray_DATA(<cnp.ndarray>self.term)
            a.div = <const float*>cnp.PyArray_DATA(<cnp.ndarray>self.div)
            a.lacc = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["lacc"])
            a.rh = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["rh"])
            a.gate_u = <float*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["u"])
            a.c = <float*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["c"])
            a.hproj = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["hproj"])
            h0buf = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>self.scratch["h0"])
            a.pdiv = <const float*>cnp.PyArray_DATA(<cnp.ndarray>self.pdiv)
            if self.pcomp is not None:
                pcomp = <const float*>cnp.PyArray_DATA(<cnp.ndarray>self.pcomp)
            if self.f32_mode:
                xq = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>self.xq)
                siq = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>self.siq)
        # the bias with the shift compensation, for these weights and this bias
        for i in range(nbias):
            biasc[i] = (bias[i] if bias != NULL else <float>0.0) - term[i]
        # the f32 mode quantizes its f32 inputs, as oneDNN quantizes an f32 src_iter
        if self.f32_mode:
            for i in range(T * N * C):
                xq[i] = _quantize(xf[i], sc, sh)
            xu = xq
            if psi != NULL:
                for i in range(L * D * N * SIC):
                    siq[i] = _quantize((<const float*>psi)[i], sc, sh)
                psi = <char*>siq
        q0 = _quantize(0.0, sc, sh)   # the absent h state: the quantized 0.0
        a.cell, a.act = self.cell, self.act
        a.T, a.N, a.H, a.G, a.nblk = T, N, H, G, self.nblk
        a.Ki = SIC
        a.scale, a.shift = sc, sh
        a.P = P
        a.nthreads, a.fork_join, a.gemm_isa = nthreads, fork_join, self.isa
        for l in range(L):
            last = l == L - 1
            for d in range(D):
                dir_id = <int>d if D == 2 else (1 if self.dirmode == R2L_ else 0)
                a.reverse = dir_id == 1
                K = C if l == 0 else P
                a.C = K
                a.x = xu if l == 0 else self.wsp[2 * ((l - 1) % 2) + d]
                a.x_sn, a.x_st = K, N * K
                i = l * D + d
                a.wl, a.wi, a.wp = self.pw[3 * i], self.pw[3 * i + 1], self.pw[3 * i + 2]
                a.bias = biasc + i * nb * H
                a.peep = peep + i * 3 * H if peep != NULL else NULL
                a.pcomp = pcomp + i * P if pcomp != NULL else NULL
                if last and dl_u8 and not bisum:
                    a.out = <uint8_t*>pdl + (d * P if concat else 0)
                    a.out_st, a.out_sn = N * dlc, dlc
                else:
                    a.out = self.wsp[2 * (l % 2) + d]
                    a.out_st, a.out_sn = N * P, P
                a.outf = NULL
                if last and not dl_u8 and not bisum:
                    a.outf = <float*>pdl + (d * P if concat else 0)
                    a.outf_st, a.outf_sn = N * dlc, dlc
                if psi != NULL:
                    a.h0 = <const uint8_t*>psi + i * N * SIC
                else:
                    memset(h0buf, q0, N * SIC)
                    a.h0 = h0buf
                a.h0_sn = SIC
                if self.cell == DNNQ_RNN_LSTM:
                    if sic != NULL:
                        memcpy(a.c, sic + i * N * H, N * H * sizeof(float))
                    else:
                        memset(a.c, 0, N * H * sizeof(float))
                self.fn(&a)
                t_last = 0 if a.reverse else T - 1
                if pdi != NULL:
                    for n in range(N):
                        hsrc = a.out + t_last * a.out_st + n * a.out_sn
                        if self.f32_mode:
                            for k in range(P):
                                (<float*>pdi)[(i * N + n) * P + k] = _dequantize(hsrc[k], sc, sh)
                        else:
                            memcpy(pdi + (i * N + n) * P, hsrc, P)
                if dic != NULL:
                    memcpy(dic + i * N * H, a.c, N * H * sizeof(float))
        if bisum:
            s0, s1 = self.wsp[2 * ((L - 1) % 2)], self.wsp[2 * ((L - 1) % 2) + 1]
            for i in range(T * N * P):
                v = <int>s0[i] + <int>s1[i]
                if v > 255:
                    v = 255
                if dl_u8:
                    (<uint8_t*>pdl)[i] = <uint8_t>v
                else:
                    (<float*>pdl)[i] = (<float>v - two_sh) / sc
