"""The C-level execute path of the GEMM primitives (MatMul, InnerProduct).

A `GemmExec` is built once, at primitive creation, from the analysed description: the plan,
the argument ids it reads, the dtype and shape of every array, the runtime scales and zero
points with their counts.  `run(args)` then only looks the arrays up, checks them (exact type,
dtype, shape, C-contiguity, writeable dst that overlaps no input, finite positive scales),
computes the compensation vectors in C and hands the operands to the plan's one executor
(GemmPlan.execute: the C argument struct, the kernel launched with the GIL released), holding
a reference to every array until the kernel has finished.

It never raises for a bad argument: it returns None, and the primitive's Python path (which
accepts lists, strided arrays, plain weights, other bias types...) produces the error message
or a canonical argument dict that it runs through `run(args, canonical=True)`.
"""
cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_Size
from cpython.long cimport PyLong_CheckExact
from cpython.ref cimport PyObject
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from dnnq.primitives._kernels._array_extent cimport _extent
from dnnq.primitives._kernels._kernels cimport DNNQ_NR, DNNQ_MAX_POST
from dnnq.primitives._kernels._gemm cimport GemmPlan, gemm_operands_t, gemm_post_input_t

import numpy as np
from dnnq.primitives._kernels import _gemm, _gemm_api
from dnnq.primitives import _dispatch

cnp.import_array()

# kinds of runtime scales / zero points
SS, WS, DS, ZS, ZW, ZD = 0, 1, 2, 3, 4, 5
# axis of a zero point or scale vector
COMMON, PER_N, PER_K = 0, 1, 2

cdef enum:
    MAX_DIMS = 6


def aligned_empty(Py_ssize_t n, dtype, Py_ssize_t align=64):
    """np.empty of n elements whose data starts on an `align`-byte boundary: numpy only
    promises 16, and a packed-weights row split over two cache lines costs every zmm load."""
    dtype = np.dtype(dtype)
    cdef cnp.ndarray raw = np.empty(n * dtype.itemsize + align, dtype=np.uint8)
    # the address from the array struct (raw.ctypes builds a ctypes object: 2 us a call)
    cdef size_t addr = <size_t>cnp.PyArray_DATA(raw)
    cdef Py_ssize_t offset = <Py_ssize_t>((<size_t>align - addr % <size_t>align) % <size_t>align)
    return raw[offset:offset + n * dtype.itemsize].view(dtype)


cdef void _wrapping_times(const int32_t[:, ::1] x, int32_t[:, ::1] out, int64_t k) noexcept:
    """out = k * x as s32, wrapping (uint32 arithmetic: the same bits as the 64-bit product
    taken modulo 2^32). Run-time weights (attention) get their compensation each call."""
    cdef Py_ssize_t i, j
    cdef uint32_t kk = <uint32_t>(<uint64_t>k)
    with nogil:
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = <int32_t>(kk * <uint32_t>x[i, j])


cdef class PackedGemmWeights:
    """s8 weights (batch, K, N) packed once into the VNNI layout, with their column sums; or
    f32 weights (an f32 layer: `f32` True) packed into the f32 panel layout
    (ukernels/dnnq_f32.h), their `colsum` zeros and `batch_stride` in f32 elements.

    Read-only: `packed` (1-D int8, batch blocks of `batch_stride` bytes, not writeable),
    `colsum` (int32 (batch, N)), `batch`, `K`, `N`, `owner` (the key of the primitive
    description they were packed for), `origin` (that primitive, or None) and `u8_shifted`.
    Execution trusts these, so they cannot be replaced after packing.

    Pickling stores the plain weights (unpacked, checked against the column sums) and the
    primitive; loading packs them again with ``origin.prepare_weights`` -- for the machine
    that loads them, and without trusting any packed bytes from the pickle.
    """
    cdef readonly object packed, colsum, owner, origin
    cdef readonly int64_t batch, K, N, batch_stride
    cdef readonly bint u8_shifted, f32
    cdef dict _comp
    cdef object _last_comp
    cdef int64_t _last_shift

    def __init__(self, w, owner=None, u8_shifted=False, origin=None):
        w = np.asarray(w)
        if w.ndim == 2:
            # (not w[None]: GCC reports -Warray-bounds in the integer-index path Cython
            # inlines for that subscript, never taken for None)
            w = np.expand_dims(w, 0)
        if w.dtype not in (np.int8, np.float32) or w.ndim != 3:
            raise TypeError("PackedGemmWeights: expected int8 or float32 weights (K, N) or "
                            "(batch, K, N)")
        self.batch, self.K, self.N = (int(d) for d in w.shape)
        self.owner = owner
        self.origin = origin
        self._comp = {}
        self._last_comp = None
        self._last_shift = 0
        if w.dtype == np.float32:
            if u8_shifted:
                raise ValueError("PackedGemmWeights: f32 weights cannot be u8-shifted")
            self.f32 = True
            self.batch_stride = _gemm.packed_size_f32(self.K, self.N)
            packed = aligned_empty(self.batch * self.batch_stride, np.float32)
            for b in range(self.batch):
                _gemm.pack_weights_f32(w[b], packed[b * self.batch_stride:
                                                    (b + 1) * self.batch_stride])
            colsum = np.zeros((self.batch, self.N), dtype=np.int32)
            packed.flags.writeable = False
            colsum.flags.writeable = False
            self.packed, self.colsum = packed, colsum
            return
        self.batch_stride = _gemm.packed_size(self.K, self.N)
        packed = aligned_empty(self.batch * self.batch_stride, np.int8)
        colsum = np.empty((self.batch, self.N), dtype=np.int32)
        # the panel packer of the level in force (AVX-512's copies 4-row groups in a few
        # instructions; every level writes the same bytes)
        _gemm_api.pack_vnni_batch(w, packed, colsum, self.batch_stride,
                                  _dispatch.kernel_isa_code(_dispatch.get_effective_cpu_isa()))
        if u8_shifted:  # u8 = w + 128 (padding becomes 128, met by zero source bytes)
            np.bitwise_xor(packed.view(np.uint8), 0x80, out=packed.view(np.uint8))
        packed.flags.writeable = False
        colsum.flags.writeable = False
        self.packed, self.colsum = packed, colsum
        self.u8_shifted = u8_shifted

    cpdef comp_for_shift(self, int64_t shift):
        """-shift * colsum as s32 (wrapping), computed once per shift: the s8-source +128
        compensation plus a common source zero point (shift = 128·[s8] + zp)."""
        if self._last_comp is not None and shift == self._last_shift:
            return self._last_comp
        c = self._comp.get(shift)
        if c is None:
            c = np.empty(self.colsum.shape, np.int32)
            _wrapping_times(self.colsum, c, -shift)
            if len(self._comp) >= 16:  # zero points that change every call: keep it bounded
                self._comp.clear()
            self._comp[shift] = c
        self._last_comp, self._last_shift = c, shift
        return c

    @property
    def nbytes(self):
        return self.packed.nbytes + self.colsum.nbytes

    def unpack(self):
        """The plain int8 weights (batch, K, N) these were packed from (the inverse of the
        packing; see ukernels/dnnq_kernels.h for the layout), checked against `colsum`."""
        body = np.asarray(self.packed).reshape(self.batch, self.batch_stride)
        if self.f32:
            return np.stack([_gemm.unpack_weights_f32(body[b], self.K, self.N)
                             for b in range(self.batch)])
        if self.u8_shifted:
            body = np.bitwise_xor(body.view(np.uint8), 0x80).view(np.int8)
        w = np.stack([_gemm.unpack_weights_vnni(body[b], self.K, self.N)
                      for b in range(self.batch)])
        if not np.array_equal(w.sum(axis=1, dtype=np.int64).astype(np.int32), self.colsum):
            raise RuntimeError("PackedGemmWeights: the packed weights do not match their column "
                               "sums (memory corrupted?)")
        return w

    def __reduce__(self):
        if self.origin is None:
            return (PackedGemmWeights, (self.unpack(), self.owner, self.u8_shifted))
        return (_repack, (self.origin, self.origin._weights_from_gemm(self.unpack())))


def _repack(origin, w):
    """Unpickling of PackedGemmWeights: pack the plain weights with their primitive."""
    return origin.prepare_weights(w)


cdef struct ArrSpec:
    int typenum
    int ndim
    int64_t dims[MAX_DIMS]
    int64_t nbytes


cdef struct RtSpec:
    int kind       # SS .. ZD
    int axis       # COMMON / PER_N / PER_K
    int64_t count


cdef bint _spec_from(ArrSpec* s, dims, dtype) except False:
    s.typenum = np.dtype(dtype).num
    s.ndim = len(dims)
    if s.ndim > MAX_DIMS:
        raise ValueError("too many dims")
    s.nbytes = np.dtype(dtype).itemsize
    for i, d in enumerate(dims):
        s.dims[i] = d
        s.nbytes *= d
    return True


cdef inline bint _matches(object o, const ArrSpec* s, bint canonical):
    """o is exactly an ndarray of the spec's dtype and shape, C-contiguous and aligned
    (canonical: any shape of the same byte size; the Python path reshaped it).  Anything else
    takes the Python path, which copies unaligned arrays."""
    if not cnp.PyArray_CheckExact(o):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    # a byte-swapped array has the native type number: its values would be read scrambled
    if cnp.PyArray_TYPE(a) != s.typenum or not cnp.PyArray_IS_C_CONTIGUOUS(a) or \
            not cnp.PyArray_ISALIGNED(a) or cnp.PyArray_ISBYTESWAPPED(a):
        return False
    if canonical:
        return cnp.PyArray_NBYTES(a) == s.nbytes
    if cnp.PyArray_NDIM(a) != s.ndim:
        return False
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    cdef int i
    for i in range(s.ndim):
        if d[i] != s.dims[i]:
            return False
    return True


cdef inline bint _overlaps(uintptr_t p0, uintptr_t p1, object o):
    """[p0, p1) overlaps the data of ndarray o."""
    cdef cnp.ndarray a = <cnp.ndarray>o
    cdef uintptr_t q0 = <uintptr_t>cnp.PyArray_DATA(a)
    cdef uintptr_t q1 = q0 + <uintptr_t>cnp.PyArray_NBYTES(a)
    return q0 < p1 and p0 < q1 and q1 > q0


def extents_meet(dst, dict args, skip):
    """True when the byte extent of an ndarray value of `args` (other than the one under key
    `skip`) meets dst's: the cheap first test of the aliasing checks (np.may_share_memory's
    answer without its per-call cost).  False means no array in `args` shares memory with
    dst."""
    cdef uintptr_t d0, d1, q0, q1
    if not cnp.PyArray_Check(dst):
        return False
    _extent(<cnp.ndarray>dst, &d0, &d1)
    if d0 == d1:
        return False
    for key, v in args.items():
        if key == skip or not cnp.PyArray_Check(v):
            continue
        _extent(<cnp.ndarray>v, &q0, &q1)
        if q0 < d1 and d0 < q1 and q0 < q1:
            return True
    return False


cdef inline bint _finite_positive(const float* x, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if not (x[i] > 0.0 and x[i] < <float>3.4028234663852886e38 * <float>2.0):
            return False
    return True


cdef void _zp_times_weights(const int8_t* packed, int64_t batch, int64_t batch_stride,
                            int64_t K, int64_t N, bint u8_shifted, const int32_t* zp,
                            uint32_t* out) noexcept nogil:
    """out[b, n] += sum_k zp[k] * W[b, k, n] (wrapping s32), read from the packed layout: the
    per-K source zero point's compensation, with no copy of the weights."""
    cdef int64_t K4 = (K + 3) // 4, b, n, k, p, nn
    cdef const int8_t* base
    cdef uint32_t acc
    cdef int8_t x
    for b in range(batch):
        base = packed + b * batch_stride
        for n in range(N):
            p = n // DNNQ_NR
            nn = n % DNNQ_NR
            acc = 0
            for k in range(K):
                x = base[((p * K4 + k // 4) * DNNQ_NR + nn) * 4 + k % 4]
                if u8_shifted:
                    x = <int8_t>(<uint8_t>x ^ 0x80)
                acc += <uint32_t>zp[k] * <uint32_t><int32_t>x
            out[b * N + n] += acc


cdef extern from "gemm_api.h" nogil:
    # rows' sums of source bytes as wrapping s32 (plain loops built at -O3: vectorised)
    void dnnq_gemm_api_rowsum(const uint8_t *a, int64_t lda, int64_t K, int is_s8, int64_t m0,
                              int64_t m1, int32_t *rowsum)


cdef class GemmExec:
    """The execute path of one GEMM primitive, fixed at creation (see the module docstring)."""
    cdef GemmPlan plan
    cdef object owner
    cdef object k_src, k_wei, k_bias, k_dst
    cdef ArrSpec src, bias, dst
    cdef bint has_bias, has_sum, s8_src, strict, f32
    cdef int64_t a_batch, shift, n_known
    cdef int64_t bias_sb, bias_sm, bias_sn
    cdef list rt_keys
    cdef RtSpec rt[6]
    cdef int n_rt
    # post-op inputs: (post-op index, which input 1 / 2, key, spec, strides)
    cdef list po_keys
    cdef ArrSpec po_spec[2 * DNNQ_MAX_POST]
    cdef int po_index[2 * DNNQ_MAX_POST]
    cdef int po_which[2 * DNNQ_MAX_POST]
    cdef int64_t po_strides[2 * DNNQ_MAX_POST][3]
    cdef int n_po

    def __init__(self, GemmPlan plan, owner, src_dims, src_dtype, int64_t a_batch, int64_t shift,
                 bias_dims, bias_dtype, bias_strides, dst_dims, dst_dtype, bint has_sum,
                 list runtime, list post_inputs, int64_t n_known, keys, bint strict=True,
                 bint f32=False):
        """runtime: (key, kind, axis, count) per scale / zero point; post_inputs: (key, post-op
        index, which (1 = src1 / cond, 2 = select value), dims, (s_b, s_m, s_n)); keys: the
        (src, weights, bias, dst) argument ids; strict: the user's arrays may be used as they
        are (False when a descriptor's dtype or layout needs the Python path's conversion);
        f32: an f32 layer (f32 src and packed weights, no compensation)."""
        self.plan = plan
        self.f32 = f32
        self.owner = owner
        self.strict = strict
        self.k_src, self.k_wei, self.k_bias, self.k_dst = keys
        _spec_from(&self.src, src_dims, src_dtype)
        self.s8_src = np.dtype(src_dtype) == np.int8
        self.a_batch = a_batch
        self.shift = shift
        self.has_bias = bias_dims is not None
        if self.has_bias:
            _spec_from(&self.bias, bias_dims, bias_dtype)
            self.bias_sb, self.bias_sm, self.bias_sn = bias_strides
        _spec_from(&self.dst, dst_dims, dst_dtype)
        self.has_sum = has_sum
        self.n_known = n_known
        if len(runtime) > 6 or len(post_inputs) > 2 * DNNQ_MAX_POST:
            raise ValueError("too many runtime arguments")
        self.rt_keys = []
        self.n_rt = len(runtime)
        for i, (key, kind, axis, count) in enumerate(runtime):
            self.rt_keys.append(key)
            self.rt[i].kind, self.rt[i].axis, self.rt[i].count = kind, axis, count
        self.po_keys = []
        self.n_po = len(post_inputs)
        for i, (key, index, which, dims, strides) in enumerate(post_inputs):
            self.po_keys.append(key)
            _spec_from(&self.po_spec[i], dims, np.float32)
            self.po_index[i], self.po_which[i] = index, which
            self.po_strides[i][0], self.po_strides[i][1], self.po_strides[i][2] = strides

    def run(self, dict args, bint canonical=False):
        """Execute with `args` if every array is exactly as expected; else return None."""
        cdef PyObject* item
        cdef PyObject* key
        cdef PyObject* value
        cdef Py_ssize_t pos = 0
        cdef int64_t found = 0
        cdef GemmPlan plan = self.plan
        cdef gemm_operands_t op
        cdef gemm_post_input_t post_in[DNNQ_MAX_POST]
        cdef int i, j, nthreads, kind
        cdef int64_t wbi
        cdef int64_t M = plan.M, N = plan.N, K = plan.K, batch = plan.batch, zsum = 0, n
        cdef const float* fp
        cdef const int32_t* ip
        cdef float src_scale = 1.0, dst_scale = 1.0
        cdef int64_t src_zp = 0
        cdef const int32_t* zs_vec = NULL
        cdef const int32_t* zw_vec = NULL
        cdef int64_t zw_n = 0
        cdef bint zw_any = False
        cdef uintptr_t d0, d1
        cdef cnp.ndarray arr
        cdef PackedGemmWeights pw
        cdef uint32_t* comp_buf = NULL
        cdef int32_t* rowsum_buf = NULL
        cdef int64_t wb
        cdef cnp.npy_intp ddims[MAX_DIMS]
        # ---- look up and check every array (references held in these locals) -------------
        if not canonical and (not self.strict or PyDict_Size(args) > self.n_known):
            return None
        if not canonical:
            # keys True or 1.0 compare equal to DNNL_ARG_SRC: only exact ints take this path
            # (the checked path names anything else)
            while PyDict_Next(args, &pos, &key, &value):
                if not PyLong_CheckExact(<object>key):
                    return None
        item = PyDict_GetItem(args, self.k_src)
        if item == NULL or not _matches(<object>item, &self.src, canonical):
            return None
        src = <object>item
        found += 1
        item = PyDict_GetItem(args, self.k_wei)
        if item == NULL or type(<object>item) is not PackedGemmWeights:
            return None
        pw = <PackedGemmWeights>item
        if pw.owner is not self.owner and pw.owner != self.owner:
            return None
        if pw.f32 != self.f32:
            return None
        found += 1
        bias = None
        if self.has_bias:
            item = PyDict_GetItem(args, self.k_bias)
            if item == NULL or not _matches(<object>item, &self.bias, canonical):
                return None
            bias = <object>item
            found += 1
        rt_vals = [None] * self.n_rt
        for i in range(self.n_rt):
            item = PyDict_GetItem(args, self.rt_keys[i])
            if item == NULL or not cnp.PyArray_CheckExact(<object>item):
                return None
            arr = <cnp.ndarray>item
            if cnp.PyArray_SIZE(arr) != self.rt[i].count or \
                    not cnp.PyArray_IS_C_CONTIGUOUS(arr) or not cnp.PyArray_ISALIGNED(arr) or \
                    cnp.PyArray_ISBYTESWAPPED(arr):
                return None
            if self.rt[i].kind <= DS:
                if cnp.PyArray_TYPE(arr) != cnp.NPY_FLOAT32 or not _finite_positive(
                        <const float*>cnp.PyArray_DATA(arr), self.rt[i].count):
                    return None
            elif cnp.PyArray_TYPE(arr) != cnp.NPY_INT32:
                return None
            rt_vals[i] = arr
            found += 1
        po_vals = [None] * self.n_po
        for i in range(self.n_po):
            item = PyDict_GetItem(args, self.po_keys[i])
            if item == NULL or not _matches(<object>item, &self.po_spec[i], canonical):
                return None
            po_vals[i] = <object>item
            found += 1
        item = PyDict_GetItem(args, self.k_dst)
        if item == NULL:
            if self.has_sum:
                return None
            for i in range(self.dst.ndim):
                ddims[i] = self.dst.dims[i]
            dst = cnp.PyArray_EMPTY(self.dst.ndim, ddims, self.dst.typenum, 0)
        else:
            if not _matches(<object>item, &self.dst, canonical) or \
                    not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>item):
                return None
            dst = <object>item
            found += 1
            # in-place execution is not supported: dst may overlap no input
            d0 = <uintptr_t>cnp.PyArray_DATA(<cnp.ndarray>dst)
            d1 = d0 + <uintptr_t>cnp.PyArray_NBYTES(<cnp.ndarray>dst)
            if _overlaps(d0, d1, src) or (bias is not None and _overlaps(d0, d1, bias)):
                return None
            for v in rt_vals:
                if _overlaps(d0, d1, v):
                    return None
            for v in po_vals:
                if _overlaps(d0, d1, v):
                    return None
        if not canonical and found != PyDict_Size(args):
            return None  # an argument this primitive does not take
        # ---- the operands of the executor -------------------------------------------------
        memset(&op, 0, sizeof(op))
        op.a = cnp.PyArray_DATA(<cnp.ndarray>src)
        op.a_sb = M * K if self.a_batch > 1 else 0
        op.a_sm = K
        op.s8_src = self.s8_src
        op.b = cnp.PyArray_DATA(<cnp.ndarray>pw.packed)
        op.b_sb = pw.batch_stride if pw.batch > 1 else 0
        op.scale = <const float*>&_ONE_F[0]
        op.scale_sn = 0
        for i in range(self.n_rt):
            arr = <cnp.ndarray>rt_vals[i]
            kind = self.rt[i].kind
            if kind == SS:
                src_scale = (<const float*>cnp.PyArray_DATA(arr))[0]
            elif kind == WS:
                op.scale = <const float*>cnp.PyArray_DATA(arr)
                op.scale_sn = 1 if self.rt[i].count > 1 else 0
            elif kind == DS:
                dst_scale = (<const float*>cnp.PyArray_DATA(arr))[0]
            elif kind == ZS:
                if self.rt[i].axis == PER_K:
                    zs_vec = <const int32_t*>cnp.PyArray_DATA(arr)
                else:
                    src_zp = (<const int32_t*>cnp.PyArray_DATA(arr))[0]
            elif kind == ZW:
                zw_vec = <const int32_t*>cnp.PyArray_DATA(arr)
                zw_n = self.rt[i].count
                ip = zw_vec
                for n in range(zw_n):
                    if ip[n] != 0:
                        zw_any = True
                        break
            else:
                op.dst_zp = <const int32_t*>cnp.PyArray_DATA(arr)
                op.dst_zp_sn = 1 if self.rt[i].count > 1 else 0
        op.src_scale = src_scale
        op.dst_scale = dst_scale
        if self.has_bias:
            op.bias = <const float*>cnp.PyArray_DATA(<cnp.ndarray>bias)
            op.bias_sb, op.bias_sm, op.bias_sn = self.bias_sb, self.bias_sm, self.bias_sn
        if self.n_po:
            memset(post_in, 0, sizeof(gemm_post_input_t) * plan.g.n_post)
            op.post_in = post_in
        for i in range(self.n_po):
            fp = <const float*>cnp.PyArray_DATA(<cnp.ndarray>po_vals[i])
            j = self.po_index[i]
            if self.po_which[i] == 1:
                post_in[j].src1 = fp
                post_in[j].s1[0], post_in[j].s1[1], post_in[j].s1[2] = \
                    self.po_strides[i][0], self.po_strides[i][1], self.po_strides[i][2]
            else:
                post_in[j].src2 = fp
                post_in[j].s2[0], post_in[j].s2[1], post_in[j].s2[2] = \
                    self.po_strides[i][0], self.po_strides[i][1], self.po_strides[i][2]
        op.dst = cnp.PyArray_DATA(<cnp.ndarray>dst)
        op.d_sb = M * N
        op.d_sm = N
        wb = pw.batch
        nthreads = _dispatch._num_threads
        if self.f32:  # no compensation: the f32 epilogue reads none
            plan.execute(&op, nthreads)
            return dst
        # ---- compensation: acc = raw + col_comp[n] - zp_wei[n] * rowsum[m] -------------------
        if zs_vec == NULL and zw_vec == NULL:
            col = pw.comp_for_shift(self.shift + src_zp)  # cached per shift in the weights
            op.col_comp = <const int32_t*>cnp.PyArray_DATA(<cnp.ndarray>col)
            op.c_sb = N if wb > 1 else 0
            plan.execute(&op, nthreads)
            return dst
        col = pw.comp_for_shift(self.shift)
        try:
            comp_buf = <uint32_t*>malloc(sizeof(uint32_t) * wb * N)
            if comp_buf == NULL:
                raise MemoryError()
            memcpy(comp_buf, cnp.PyArray_DATA(<cnp.ndarray>col), sizeof(uint32_t) * wb * N)
            if zs_vec != NULL:  # per-K: comp -= zp_src @ W
                _neg_zp_times_weights(pw, zs_vec, comp_buf)
                for n in range(K):
                    zsum += zs_vec[n]
            else:  # common: comp -= zp * colsum (not in the cached shift: zp_wei needs zsum)
                ip = <const int32_t*>cnp.PyArray_DATA(<cnp.ndarray>pw.colsum)
                for n in range(wb * N):
                    comp_buf[n] -= <uint32_t>src_zp * <uint32_t>ip[n]
                zsum = src_zp * K
            if zw_vec != NULL and zsum != 0:  # + zp_wei[n] * sum_k zp_src[k]
                for wbi in range(wb):
                    for n in range(N):
                        comp_buf[wbi * N + n] += <uint32_t>zw_vec[n if zw_n > 1 else 0] * \
                            <uint32_t>zsum
            op.col_comp = <const int32_t*>comp_buf
            op.c_sb = N if wb > 1 else 0
            if zw_any:
                rowsum_buf = <int32_t*>malloc(sizeof(int32_t) * self.a_batch * M + 1)
                if rowsum_buf == NULL:
                    raise MemoryError()
                with nogil:
                    dnnq_gemm_api_rowsum(<const uint8_t*>op.a, K, K, self.s8_src, 0,
                                         self.a_batch * M, rowsum_buf)
                op.wzp = zw_vec
                op.wzp_sn = 1 if zw_n > 1 else 0
                op.rowsum = rowsum_buf
                op.r_sb = M if self.a_batch > 1 else 0
            plan.execute(&op, nthreads)
        finally:
            free(comp_buf)
            free(rowsum_buf)
        return dst


cdef int _neg_zp_times_weights(PackedGemmWeights pw, const int32_t* zp,
                               uint32_t* comp) except -1:
    """comp[b, n] -= sum_k zp[k] W[b, k, n]"""
    cdef int64_t n, total = pw.batch * pw.N
    cdef uint32_t* tmp = <uint32_t*>malloc(sizeof(uint32_t) * total + 4)
    if tmp == NULL:
        raise MemoryError()
    for n in range(total):
        tmp[n] = 0
    cdef const int8_t* packed = <const int8_t*>cnp.PyArray_DATA(<cnp.ndarray>pw.packed)
    with nogil:
        _zp_times_weights(packed, pw.batch, pw.batch_stride, pw.K, pw.N, pw.u8_shifted, zp, tmp)
    for n in range(total):
        comp[n] -= tmp[n]
    free(tmp)
    return 0


cdef float _ONE_F[1]
_ONE_F[0] = 1.0
