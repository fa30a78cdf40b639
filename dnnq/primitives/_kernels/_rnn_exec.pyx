"""The one execute path of the RNN primitives (LSTM, GRU, LBRGRU, VanillaRNN).

An `RnnExec` is built once, at primitive creation, from the validated description: the cell,
the dims, the direction, which optional tensors exist and the argument ids it reads.  Its
`_launch` is the only layer / direction loop: state copies, the f32 mode's quantization, the
output routing and the bidirectional sum, one C call (ukernels/rnn_impl.h) per layer and
direction, with the GIL released.  Two entries feed it:

* `run(args, nthreads, fork_join)`, the fast path (legacy quantization, fixed at creation):
  only looks the arrays up and checks them (exact ndarray type, dtype, shape, C-contiguity,
  writeable outputs that overlap no input, weights packed by this primitive) and refreshes the
  compensated bias when the weights change.  It never raises for a bad argument: it returns
  None, and the primitive's Python path produces the error message or the result.  It is not
  re-entrant: a second thread that finds it busy takes the Python path.
* `run_checked(...)`, for the primitive's Python path: arrays it validated and made
  C-contiguous, the quantization of this execution and a scratch of its own.
"""
cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem, PyDict_Size
from cpython.ref cimport PyObject
from libc.math cimport lrintf
from libc.stdint cimport int8_t, uint8_t, int32_t, int64_t, uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from dnnq.primitives._kernels._rnn_decl cimport *

import numpy as np

cnp.import_array()

# direction modes
cdef enum:
    L2R_ = 0
    R2L_ = 1
    CONCAT_ = 2
    BISUM_ = 3
L2R, R2L, CONCAT, BISUM = L2R_, R2L_, CONCAT_, BISUM_


cdef struct rnn_call_t:
    # inputs (u8 or, in the f32 mode, f32 data; NULL where absent)
    const char *x
    const char *si
    const float *sic
    const float *bias
    const float *peep
    # outputs (NULL where absent)
    char *dl
    char *di
    float *dic
    # the quantization of this execution
    float scale, shift
    const float *div
    const float *term
    const float *pdiv
    const float *pcomp
    const int8_t **pw           # (l, d) -> layer, iter, projection weights
    # scratch
    float *biasc
    uint8_t *xq
    uint8_t *siq
    uint8_t *wsp[4]             # layer outputs [l % 2][d], (T, N, P) u8 each
    int32_t *lacc
    uint8_t *rh
    float *gate_u
    float *c
    uint8_t *hproj
    uint8_t *h0buf
    int nthreads, fork_join


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


cdef inline char* _buf(object o) except? NULL:
    """The data of a C-contiguous ndarray the Python path checked, NULL for None."""
    if o is None:
        return NULL
    cdef cnp.ndarray a = <cnp.ndarray>o
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError("RnnExec.run_checked: arrays must be C-contiguous")
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


cdef inline object _get(dict args, object key):
    cdef PyObject* item = PyDict_GetItem(args, key)
    return None if item == NULL else <object>item


cdef class RnnExec:
    """See the module docstring.  Built by dnnq.primitives._rnn_base._RNN."""
    cdef object prim, known, packed_cls, key
    cdef object k_x, k_si, k_sic, k_wl, k_wi, k_wp, k_bias, k_peep, k_dl, k_di, k_dic
    cdef object c_wl, c_wi, c_wp, div, term, pdiv, pcomp, scratch, xq, siq, biasc
    cdef int isa, cell, act, dirmode, f32_mode, dl_f32, busy, fast
    cdef int a_si, a_sic, a_bias, a_peep, a_proj, a_di, a_dic
    cdef int64_t L, D, T, N, C, H, G, P, SIC, nb, dlc, nblk
    cdef float scale, shift
    cdef dnnq_rnn_fn fn
    cdef const int8_t** pw      # the fast path's packed weights of (l, d): layer, iter, proj.
    cdef uint8_t* wsp[4]        # the fast path's scratch layer outputs: [l % 2][d]

    def __cinit__(self):
        self.pw = NULL

    def __dealloc__(self):
        free(self.pw)

    def __init__(self, prim, packed_cls, known, keys, *, int isa, int cell, int act,
                 int dirmode, bint f32_mode, bint dl_f32, int64_t L, int64_t D, int64_t T,
                 int64_t N, int64_t C, int64_t H, int64_t G, int64_t P, int64_t SIC,
                 int64_t nb, bint fast, float scale, float shift, pdiv, has_si, has_sic,
                 has_bias, has_peep, has_proj, has_di, has_dic):
        """keys: the argument ids (src_layer, src_iter, src_iter_c, weights_layer,
        weights_iter, weights_projection, bias, weights_peephole, dst_layer, dst_iter,
        dst_iter_c); fast: the fast path may run (legacy quantization: scale, shift and
        pdiv are those of every execution)."""
        self.prim, self.packed_cls, self.known = prim, packed_cls, frozenset(known)
        (self.k_x, self.k_si, self.k_sic, self.k_wl, self.k_wi, self.k_wp, self.k_bias,
         self.k_peep, self.k_dl, self.k_di, self.k_dic) = keys
        self.key = prim._key
        self.isa, self.cell, self.act, self.dirmode = isa, cell, act, dirmode
        self.f32_mode, self.dl_f32 = f32_mode, dl_f32
        self.L, self.D, self.T, self.N, self.C, self.H, self.G = L, D, T, N, C, H, G
        self.P, self.SIC, self.nb = P, SIC, nb
        self.dlc = P * (2 if dirmode == CONCAT_ else 1)
        self.nblk = (H + 63) // 64
        self.fast = fast
        self.scale, self.shift = scale, shift
        self.a_si, self.a_sic, self.a_bias = has_si, has_sic, has_bias
        self.a_peep, self.a_proj, self.a_di, self.a_dic = has_peep, has_proj, has_di, has_dic
        self.fn = dnnq_rnn_for_isa(isa)
        self.busy = 0
        if not fast:
            return
        self.pdiv = np.ascontiguousarray(pdiv, np.float32)
        self.pw = <const int8_t**>malloc(3 * L * D * sizeof(int8_t*))
        if self.pw == NULL:
            raise MemoryError("RnnExec: packed weights table")
        self.biasc = np.empty(L * D * nb * H, np.float32)
        if f32_mode:
            self.xq = np.empty(T * N * C, np.uint8)
            self.siq = np.empty(L * D * N * SIC, np.uint8)

    cdef int _fill_weights(self, const int8_t** pw, wl, wi, wp) except -1:
        """pw[3 * (l * D + d) + 0 / 1 / 2]: the packed layer / iter / projection panels."""
        cdef int64_t l, d, i
        cdef cnp.ndarray arr
        for l in range(self.L):
            for d in range(self.D):
                i = l * self.D + d
                arr = wl.packed[l][d]
                pw[3 * i] = <const int8_t*>cnp.PyArray_DATA(arr)
                arr = wi.packed[l][d]
                pw[3 * i + 1] = <const int8_t*>cnp.PyArray_DATA(arr)
                pw[3 * i + 2] = NULL
                if wp is not None:
                    arr = wp.packed[l][d]
                    pw[3 * i + 2] = <const int8_t*>cnp.PyArray_DATA(arr)
        return 0

    cdef int _refresh(self, wl, wi, wp) except -1:
        """The compensation of these packed weights (the primitive computes and caches it) and
        their panel pointers (the fast path)."""
        div, term = self.prim._compensation(wl, wi, np.float32(self.scale),
                                            np.float32(self.shift), self.prim._wscales)
        self.div = np.ascontiguousarray(div, np.float32)
        self.term = np.ascontiguousarray(term, np.float32).reshape(-1)
        if wp is not None:
            self.pcomp = np.ascontiguousarray((wp.comp * np.float32(self.shift)).astype(
                np.float32)).reshape(-1)
        self._fill_weights(self.pw, wl, wi, wp)
        self.c_wl, self.c_wi, self.c_wp = wl, wi, wp
        return 0

    cdef bint _weights_ok(self, w, object arg):
        return type(w) is self.packed_cls and w.owner is self.key and w.which == arg

    def run(self, dict args, int nthreads, int fork_join):
        """The outputs dict, or None when the Python path must run (see the module doc)."""
        if not self.fast:
            return None
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
        cdef rnn_call_t call
        memset(&call, 0, sizeof(call))
        # inputs
        x = _get(args, self.k_x)
        dims[0], dims[1], dims[2] = T, N, C
        call.x = _data(x, data_t, 3, dims, False)
        if call.x == NULL:
            return None
        wl, wi = _get(args, self.k_wl), _get(args, self.k_wi)
        if not (self._weights_ok(wl, self.k_wl) and self._weights_ok(wi, self.k_wi)):
            return None
        wp = None
        if self.a_proj:
            wp = _get(args, self.k_wp)
            if not self._weights_ok(wp, self.k_wp):
                return None
        si = _get(args, self.k_si) if self.a_si else None
        if si is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, SIC
            call.si = _data(si, data_t, 4, dims, False)
            if call.si == NULL:
                return None
        sic = _get(args, self.k_sic) if self.a_sic else None
        if sic is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, H
            call.sic = <const float*>_data(sic, cnp.NPY_FLOAT32, 4, dims, False)
            if call.sic == NULL:
                return None
        bias = _get(args, self.k_bias) if self.a_bias else None
        if bias is not None:
            dims[0], dims[1], dims[2], dims[3] = L, D, self.nb, H
            call.bias = <const float*>_data(bias, cnp.NPY_FLOAT32, 4, dims, False)
            if call.bias == NULL:
                return None
        peep = None
        if self.a_peep:
            peep = _get(args, self.k_peep)
            dims[0], dims[1], dims[2], dims[3] = L, D, 3, H
            call.peep = <const float*>_data(peep, cnp.NPY_FLOAT32, 4, dims, False)
            if call.peep == NULL:
                return None
        # outputs: given (checked, no overlap with an input) or allocated here
        cdef char* pdic = NULL
        dims[0], dims[1], dims[2] = T, N, self.dlc
        dl = self._output(args, self.k_dl, 3, dims,
                          cnp.NPY_FLOAT32 if self.dl_f32 else cnp.NPY_UINT8,
                          x, si, sic, bias, peep, &call.dl)
        if dl is None:
            return None
        di = dic = None
        if self.a_di:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, P
            di = self._output(args, self.k_di, 4, dims, data_t, x, si, sic, bias, peep,
                              &call.di)
            if di is None:
                return None
        if self.a_dic:
            dims[0], dims[1], dims[2], dims[3] = L, D, N, H
            dic = self._output(args, self.k_dic, 4, dims, cnp.NPY_FLOAT32, x, si, sic, bias,
                               peep, &pdic)
            if dic is None:
                return None
            call.dic = <float*>pdic
        if (di is not None and (_overlap(call.di, di, dl) or _overlap(call.dl, dl, di))) or \
                (dic is not None and (_overlap(pdic, dic, dl) or
                                      (di is not None and _overlap(pdic, dic, di)))):
            return None
        if wl is not self.c_wl or wi is not self.c_wi or wp is not self.c_wp:
            self._refresh(wl, wi, wp)
        if self.scratch is None:
            self.scratch = self.prim._get_scratch()    # kept for good: this path's own
        call.scale, call.shift = self.scale, self.shift
        call.div = <const float*>_buf(self.div)
        call.term = <const float*>_buf(self.term)
        call.pdiv = <const float*>_buf(self.pdiv)
        call.pcomp = <const float*>_buf(self.pcomp)
        call.pw = self.pw
        call.biasc = <float*>_buf(self.biasc)
        call.xq = <uint8_t*>_buf(self.xq)
        call.siq = <uint8_t*>_buf(self.siq)
        self._scratch_ptrs(&call, self.scratch)
        call.nthreads, call.fork_join = nthreads, fork_join
        with nogil:
            self._launch(&call)
        out = {self.k_dl: dl}
        if di is not None:
            out[self.k_di] = di
        if dic is not None:
            out[self.k_dic] = dic
        return out

    def run_checked(self, x, si, sic, bias, peep, wl, wi, wp, dl, di, dic, float scale,
                    float shift, div, term, pdiv, pcomp, dict scratch, int nthreads,
                    int fork_join):
        """One execution from the primitive's Python path: every array validated, of the
        described dtype and shape and C-contiguous (None where absent), outputs overlapping no
        input; div (G, H) / term (L, D, nb, H) the compensation, pdiv (P,) / pcomp (L, D, P)
        the projection's (None without one); scratch from the primitive's pool."""
        cdef rnn_call_t call
        memset(&call, 0, sizeof(call))
        cdef const int8_t** pw = <const int8_t**>malloc(3 * self.L * self.D * sizeof(int8_t*))
        if pw == NULL:
            raise MemoryError("RnnExec: packed weights table")
        try:
            self._fill_weights(pw, wl, wi, wp)
            biasc = np.empty(self.L * self.D * self.nb * self.H, np.float32)
            xq = siq = None
            if self.f32_mode:
                xq = np.empty(self.T * self.N * self.C, np.uint8)
                siq = np.empty(self.L * self.D * self.N * self.SIC, np.uint8)
            div = np.ascontiguousarray(div, np.float32)
            term = np.ascontiguousarray(term, np.float32)
            call.x = _buf(x)
            call.si = _buf(si)
            call.sic = <const float*>_buf(sic)
            call.bias = <const float*>_buf(bias)
            call.peep = <const float*>_buf(peep)
            call.dl = _buf(dl)
            call.di = _buf(di)
            call.dic = <float*>_buf(dic)
            call.scale, call.shift = scale, shift
            call.div = <const float*>_buf(div)
            call.term = <const float*>_buf(term)
            call.pdiv = <const float*>_buf(pdiv)
            call.pcomp = <const float*>_buf(pcomp)
            call.pw = pw
            call.biasc = <float*>_buf(biasc)
            call.xq = <uint8_t*>_buf(xq)
            call.siq = <uint8_t*>_buf(siq)
            self._scratch_ptrs(&call, scratch)
            call.nthreads, call.fork_join = nthreads, fork_join
            with nogil:
                self._launch(&call)
        finally:
            free(pw)

    cdef object _output(self, dict args, object key, int ndim, const int64_t* dims,
                        int typenum, x, si, sic, bias, peep, char** ptr):
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

    cdef int _scratch_ptrs(self, rnn_call_t* call, dict s) except -1:
        """The scratch buffers of one execution (_RNN._get_scratch)."""
        cdef int i, d
        for i in range(len(s["ws"])):
            for d in range(self.D):
                call.wsp[2 * i + d] = <uint8_t*>_buf(s["ws"][i][d])
        call.lacc = <int32_t*>_buf(s["lacc"])
        call.rh = <uint8_t*>_buf(s["rh"])
        call.gate_u = <float*>_buf(s["u"])
        call.c = <float*>_buf(s["c"])
        call.hproj = <uint8_t*>_buf(s["hproj"])
        call.h0buf = <uint8_t*>_buf(s["h0"])
        return 0

    cdef void _launch(self, rnn_call_t* k) noexcept nogil:
        """Every layer and direction of one execution (see the module docstring)."""
        cdef int64_t L = self.L, D = self.D, T = self.T, N = self.N, C = self.C, H = self.H
        cdef int64_t P = self.P, SIC = self.SIC, G = self.G, nb = self.nb, dlc = self.dlc
        cdef float sc = k.scale, sh = k.shift
        cdef int64_t i, n, kk, l, d, K, t_last, nbias = L * D * nb * H
        cdef const uint8_t* xu = <const uint8_t*>k.x
        cdef const char* psi = k.si
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
        # the bias with the shift compensation, for these weights and this bias
        for i in range(nbias):
            k.biasc[i] = (k.bias[i] if k.bias != NULL else <float>0.0) - k.term[i]
        # the f32 mode quantizes its f32 inputs, as oneDNN quantizes an f32 src_iter
        if self.f32_mode:
            for i in range(T * N * C):
                k.xq[i] = _quantize((<const float*>k.x)[i], sc, sh)
            xu = k.xq
            if psi != NULL:
                for i in range(L * D * N * SIC):
                    k.siq[i] = _quantize((<const float*>psi)[i], sc, sh)
                psi = <const char*>k.siq
        q0 = _quantize(0.0, sc, sh)   # the absent h state: the quantized 0.0
        a.cell, a.act = self.cell, self.act
        a.T, a.N, a.H, a.G, a.nblk = T, N, H, G, self.nblk
        a.Ki = SIC
        a.scale, a.shift = sc, sh
        a.P = P
        a.div, a.pdiv = k.div, k.pdiv
        a.lacc, a.rh, a.gate_u, a.c, a.hproj = k.lacc, k.rh, k.gate_u, k.c, k.hproj
        a.nthreads, a.fork_join, a.gemm_isa = k.nthreads, k.fork_join, self.isa
        for l in range(L):
            last = l == L - 1
            for d in range(D):
                dir_id = <int>d if D == 2 else (1 if self.dirmode == R2L_ else 0)
                a.reverse = dir_id == 1
                K = C if l == 0 else P
                a.C = K
                a.x = xu if l == 0 else k.wsp[2 * ((l - 1) % 2) + d]
                a.x_sn, a.x_st = K, N * K
                i = l * D + d
                a.wl, a.wi, a.wp = k.pw[3 * i], k.pw[3 * i + 1], k.pw[3 * i + 2]
                a.bias = k.biasc + i * nb * H
                a.peep = k.peep + i * 3 * H if k.peep != NULL else NULL
                a.pcomp = k.pcomp + i * P if k.pcomp != NULL else NULL
                # where h goes: straight into a u8 dst_layer on the last layer, else scratch
                if last and dl_u8 and not bisum:
                    a.out = <uint8_t*>k.dl + (d * P if concat else 0)
                    a.out_st, a.out_sn = N * dlc, dlc
                else:
                    a.out = k.wsp[2 * (l % 2) + d]
                    a.out_st, a.out_sn = N * P, P
                a.outf = NULL
                if last and not dl_u8 and not bisum:
                    a.outf = <float*>k.dl + (d * P if concat else 0)
                    a.outf_st, a.outf_sn = N * dlc, dlc
                if psi != NULL:
                    a.h0 = <const uint8_t*>psi + i * N * SIC
                else:
                    memset(k.h0buf, q0, N * SIC)
                    a.h0 = k.h0buf
                a.h0_sn = SIC
                if self.cell == DNNQ_RNN_LSTM:
                    if k.sic != NULL:
                        memcpy(a.c, k.sic + i * N * H, N * H * sizeof(float))
                    else:
                        memset(a.c, 0, N * H * sizeof(float))
                self.fn(&a)
                t_last = 0 if a.reverse else T - 1
                if k.di != NULL:
                    for n in range(N):
                        hsrc = a.out + t_last * a.out_st + n * a.out_sn
                        if self.f32_mode:
                            for kk in range(P):
                                (<float*>k.di)[(i * N + n) * P + kk] = _dequantize(hsrc[kk],
                                                                                   sc, sh)
                        else:
                            memcpy(k.di + (i * N + n) * P, hsrc, P)
                if k.dic != NULL:
                    memcpy(k.dic + i * N * H, a.c, N * H * sizeof(float))
        if bisum:
            s0, s1 = k.wsp[2 * ((L - 1) % 2)], k.wsp[2 * ((L - 1) % 2) + 1]
            for i in range(T * N * P):
                v = <int>s0[i] + <int>s1[i]
                if v > 255:
                    v = 255
                if dl_u8:
                    (<uint8_t*>k.dl)[i] = <uint8_t>v
                else:
                    (<float*>k.dl)[i] = (<float>v - two_sh) / sc
