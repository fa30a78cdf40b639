"""The C-level execute path of Convolution / Deconvolution (the counterpart of MatMul's GemmExec).

A `ConvExec` is built once, at primitive creation, for the configurations the common case
covers: packed weights, f32 or no bias, common scales and common zero points, binary post-ops
whose f32 inputs hold one value per output channel or one for all, no select post-op, no
weights zero point.  `run(args)` looks the arrays up and checks them
without Python-level calls -- exact int keys the primitive takes, exact ndarrays of the
described dtype (native byte order, aligned) and logical shape, dense in the descriptor's
layout, a writeable dst whose bytes meet no other array of `args`, packed weights of this
primitive with the expected sizes, finite positive scales, a source zero point the source
type holds -- then fills the driver's argument struct and launches the kernel (ConvPlan, or
GemmPlan for a 1x1 convolution) with the GIL released.  Plain (nchw) data goes through
channels-last copies in buffers pooled per primitive, except for the plain depthwise kernel
(`dw_plain`), which reads and writes the planes.

It never raises for a bad argument: it returns None, and the primitive's checked Python path
runs instead (it accepts more and produces the error messages).
"""
cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_Size
from cpython.long cimport PyLong_CheckExact
from cpython.ref cimport PyObject
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, uint8_t, int16_t, int32_t, uint32_t, int64_t, uintptr_t
from cython.parallel cimport prange

from dnnq.primitives._kernels._array_extent cimport _extent
from dnnq.primitives._kernels._gemm cimport GemmPlan, gemm_operands_t, gemm_post_input_t
from dnnq.primitives._kernels._kernels cimport DNNQ_MAX_POST
from dnnq.primitives._kernels._conv cimport (ConvPlan, ConvRun, DNNQ_CONV_MAX_POST,
                                  dnnq_transpose_for_isa, dnnq_transpose_rows_for_isa)
from libc.string cimport memset

import numpy as np
from dnnq.primitives import _dispatch
from dnnq.primitives._kernels._gemm_exec import aligned_empty

cnp.import_array()

cdef enum:
    MAX_DIMS = 5


cdef struct DenseSpec:
    # an exact ndarray of this dtype and logical shape, dense in a given physical order
    int typenum
    int ndim
    int64_t dims[MAX_DIMS]
    int64_t strides[MAX_DIMS]  # bytes, per logical dim


cdef int _spec_from(DenseSpec* s, dims, order, dtype) except -1:
    """dims: logical; order: the physical order of the logical dims (outermost first)."""
    dt = np.dtype(dtype)
    s.typenum = dt.num
    s.ndim = len(dims)
    if s.ndim > MAX_DIMS:
        raise ValueError("ConvExec: too many dims")
    cdef int64_t acc = dt.itemsize
    for i, d in enumerate(dims):
        s.dims[i] = d
    for i in reversed(order):
        s.strides[i] = acc
        acc *= dims[i]
    return 0


cdef inline bint _dense(object o, const DenseSpec* s) noexcept:
    """o is exactly an ndarray of the spec (native byte order; strides of dims of size 1 are
    free, as numpy's contiguity flags have them)."""
    if not cnp.PyArray_CheckExact(o):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    if cnp.PyArray_TYPE(a) != s.typenum or cnp.PyArray_NDIM(a) != s.ndim or \
            not cnp.PyArray_ISALIGNED(a) or cnp.PyArray_ISBYTESWAPPED(a):
        return False
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* st = cnp.PyArray_STRIDES(a)
    cdef int i
    for i in range(s.ndim):
        if d[i] != s.dims[i] or (d[i] != 1 and st[i] != s.strides[i]):
            return False
    return True


cdef inline bint _vector(object o, int typenum, int64_t size) noexcept:
    """o is exactly a C-contiguous ndarray of `size` elements of this dtype (any shape)."""
    if not cnp.PyArray_CheckExact(o):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    return (cnp.PyArray_TYPE(a) == typenum and cnp.PyArray_SIZE(a) == size and
            cnp.PyArray_IS_C_CONTIGUOUS(a) and cnp.PyArray_ISALIGNED(a) and
            not cnp.PyArray_ISBYTESWAPPED(a))


cdef inline bint _scalar(object o, int typenum) noexcept:
    """o is exactly an ndarray of one element of this dtype (any shape, native order)."""
    if not cnp.PyArray_CheckExact(o):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    return (cnp.PyArray_TYPE(a) == typenum and cnp.PyArray_SIZE(a) == 1 and
            cnp.PyArray_ISALIGNED(a) and not cnp.PyArray_ISBYTESWAPPED(a))


cdef inline bint _has_size(object o, int64_t size) noexcept:
    """A packed-weights array: None when size < 0, else a C-contiguous ndarray of `size`
    elements (their dtypes are the packing's own)."""
    if size < 0:
        return o is None
    if not cnp.PyArray_Check(o):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    return cnp.PyArray_SIZE(a) == size and cnp.PyArray_IS_C_CONTIGUOUS(a)


cdef inline bint _finite_positive(const float* x, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if not (x[i] > 0.0 and x[i] < INFINITY):
            return False
    return True


cdef inline void* _data(object a) noexcept:
    return cnp.PyArray_DATA(<cnp.ndarray>a)


cdef class ConvExec:
    """The execute path of one convolution primitive, fixed at creation (module docstring)."""
    cdef object conv_plan, gemm_plan
    cdef object owner, wtype, zrow_for, comp_cache, zrow_cache
    cdef object k_src, k_wei, k_bias, k_dst, k_ss, k_ws, k_ds, k_zs, k_zd
    cdef DenseSpec src, dst
    cdef int64_t n_known, ws_count, shift, zs_lo, zs_hi
    cdef int64_t sizes[4]  # packed, dw, plain, colsum elements (-1: None)
    cdef int64_t OC, IC, P_src, P_dst, N, a_sb, a_sm, d_sb, d_sm
    cdef bint has_bias, has_ss, has_ds, has_zs, has_zd, has_sum, s8_src, raw_s32
    cdef bint src_cl, dst_cl, depthwise
    cdef int dw_plain  # plain src and dst read / written in place by the depthwise kernel
                       # (0: no; 1: its column kernel; 2: with the VBMI stride-2 kernel)
    cdef bint dw_column  # the depthwise 3x3 column kernel (its items may run panel-outer)
    cdef float scale_adjust  # 2 under set_int8_numerics("avx2") with halved s8-source weights
    cdef int isa_code, src_esz, dst_esz
    cdef object dst_dtype, dst_phys, dst_inverse
    cdef list src_pool, dst_pool
    # binary post-ops (per-channel or common f32 inputs): their post-op indices, arg keys,
    # arrays' specs and channel strides (1 per channel, 0 one value)
    cdef int n_bin
    cdef int bin_index[DNNQ_CONV_MAX_POST]
    cdef int64_t bin_sn[DNNQ_CONV_MAX_POST]
    cdef DenseSpec bin_spec[DNNQ_CONV_MAX_POST]
    cdef list bin_keys

    def __init__(self, plan, owner, wtype, packed_sizes, zrow_for, dict layout, dict attrs,
                 dict keys):
        """plan: the primitive's ConvPlan or GemmPlan (1x1); owner: the key PackedConvWeights
        carry; wtype: the PackedConvWeights class; packed_sizes: (packed, dw, plain, colsum)
        element counts (None: absent); zrow_for(zs): the zero-point rows of a common source
        zero point in the source type's range (None for the GEMM plan).
        layout: src_dims, src_order, src_dtype, dst_dims, dst_order, dst_dtype, N, IC, OC,
        P_src, P_dst (pixels per image), isa_code (the transposes' level).
        attrs: has_bias, has_ss, has_ds, ws_count, has_zs, has_zd, zs_range, has_sum, shift,
        raw_s32, depthwise, scale_adjust, dw_plain (plain src and dst: the depthwise
        column kernel reads and writes the planes, no copies), binaries ([(post-op index,
        arg key, dims, physical order)] of the binary post-ops' f32 inputs, one value per
        channel or one for all).  keys: the argument ids (src, wei, bias, dst, ss, ws, ds,
        zs, zd) and n_known (how many ids the primitive takes)."""
        if isinstance(plan, ConvPlan):
            self.conv_plan = plan
        elif isinstance(plan, GemmPlan):
            self.gemm_plan = plan
        else:
            raise TypeError("ConvExec: plan must be a ConvPlan or a GemmPlan")
        self.owner, self.wtype, self.zrow_for = owner, wtype, zrow_for
        for i, n in enumerate(packed_sizes):
            self.sizes[i] = -1 if n is None else n
        _spec_from(&self.src, layout["src_dims"], layout["src_order"], layout["src_dtype"])
        _spec_from(&self.dst, layout["dst_dims"], layout["dst_order"], layout["dst_dtype"])
        self.src_cl = tuple(layout["src_order"]) != tuple(range(len(layout["src_dims"])))
        self.dst_cl = tuple(layout["dst_order"]) != tuple(range(len(layout["dst_dims"])))
        self.src_esz = np.dtype(layout["src_dtype"]).itemsize
        self.dst_dtype = np.dtype(layout["dst_dtype"])
        self.dst_esz = self.dst_dtype.itemsize
        dims, order = layout["dst_dims"], layout["dst_order"]
        self.dst_phys = tuple(dims[i] for i in order)
        inverse = [0] * len(order)
        for k, i in enumerate(order):
            inverse[i] = k
        self.dst_inverse = tuple(inverse)
        self.N, self.IC, self.OC = layout["N"], layout["IC"], layout["OC"]
        self.P_src, self.P_dst = layout["P_src"], layout["P_dst"]
        self.isa_code = layout["isa_code"]
        self.a_sb, self.a_sm = self.P_dst * self.IC, self.IC   # the 1x1 (GEMM) strides
        self.d_sb, self.d_sm = self.P_dst * self.OC, self.OC
        self.has_bias, self.has_ss, self.has_ds = attrs["has_bias"], attrs["has_ss"], \
            attrs["has_ds"]
        self.ws_count = attrs["ws_count"]
        self.has_zs, self.has_zd, self.has_sum = attrs["has_zs"], attrs["has_zd"], \
            attrs["has_sum"]
        self.zs_lo, self.zs_hi = attrs["zs_range"]
        self.shift = attrs["shift"]
        self.raw_s32 = attrs["raw_s32"]
        self.depthwise = attrs["depthwise"]
        self.dw_plain = int(attrs.get("dw_plain", 0))
        self.dw_column = attrs.get("dw_column", False)
        if self.dw_plain and (self.src_cl or self.dst_cl or not self.depthwise):
            raise ValueError("ConvExec: dw_plain needs plain src and dst of a depthwise plan")
        if self.dw_plain == 3:  # the flat kernel: its index vectors built once
            (<ConvPlan>self.conv_plan).build_flat_table()
        self.scale_adjust = attrs.get("scale_adjust", 1.0)
        self.s8_src = np.dtype(layout["src_dtype"]) == np.int8
        self.k_src, self.k_wei, self.k_bias, self.k_dst = (keys["src"], keys["wei"],
                                                           keys["bias"], keys["dst"])
        self.k_ss, self.k_ws, self.k_ds = keys["ss"], keys["ws"], keys["ds"]
        self.k_zs, self.k_zd = keys["zs"], keys["zd"]
        self.n_known = keys["n_known"]
        self.comp_cache = (None, 0, None)
        self.zrow_cache = (0, zrow_for(0) if zrow_for is not None else None)
        self.src_pool, self.dst_pool = [], []
        binaries = attrs.get("binaries", [])
        if len(binaries) > DNNQ_CONV_MAX_POST:
            raise ValueError("ConvExec: too many binary post-ops")
        self.n_bin = len(binaries)
        self.bin_keys = []
        for b, (index, key, dims, order) in enumerate(binaries):
            if any(d != 1 for k, d in enumerate(dims) if k != 1) or dims[1] not in (1, self.OC):
                raise ValueError("ConvExec: a binary input varies along more than channels")
            self.bin_index[b] = index
            self.bin_sn[b] = 1 if dims[1] > 1 else 0
            _spec_from(&self.bin_spec[b], dims, order, np.float32)
            self.bin_keys.append(key)

    cdef object _take(self, list pool, int64_t nbytes):
        """A pooled scratch buffer of nbytes (the channels-last copy of a plain array): a fresh
        one costs its page faults on every call."""
        if pool:
            return pool.pop()
        return aligned_empty(nbytes, np.uint8)

    def run(self, object args):
        """Execute with `args` if every argument is exactly as expected; else return None."""
        cdef PyObject* item
        cdef PyObject* key
        cdef PyObject* value
        cdef Py_ssize_t pos = 0, nargs
        cdef int64_t found = 0, zs = 0, shift
        cdef float ss = 1.0, ds = 1.0
        cdef const float* ws_ptr = &_ONE_F[0]
        cdef int64_t ws_sn = 0
        cdef const int32_t* dzp_ptr = NULL
        cdef const float* bias_ptr = NULL
        cdef cnp.ndarray arr
        cdef uintptr_t d0, d1, q0, q1
        cdef const uint8_t* a_ptr
        cdef void* d_ptr
        cdef int nthreads, b
        cdef const float* bin_ptr[DNNQ_CONV_MAX_POST]
        if type(args) is not dict:
            return None
        nargs = PyDict_Size(args)
        if nargs > self.n_known:
            return None
        # keys True or 1.0 compare equal to DNNL_ARG_SRC: only exact ints take this path
        while PyDict_Next(args, &pos, &key, &value):
            if not PyLong_CheckExact(<object>key):
                return None
        # ---- source, weights, bias -----------------------------------------------------------
        item = PyDict_GetItem(args, self.k_src)
        if item == NULL or not _dense(<object>item, &self.src):
            return None
        src = <object>item
        found += 1
        item = PyDict_GetItem(args, self.k_wei)
        if item == NULL or type(<object>item) is not self.wtype:
            return None
        pw = <object>item
        owner = pw.owner
        if owner is not self.owner and owner != self.owner:
            return None
        packed, dw = pw.packed, pw.dw
        if not (_has_size(packed, self.sizes[0]) and _has_size(dw, self.sizes[1]) and
                _has_size(pw.plain, self.sizes[2]) and _has_size(pw.colsum, self.sizes[3])):
            return None  # the checked path names the sizes
        found += 1
        if self.has_bias:
            item = PyDict_GetItem(args, self.k_bias)
            if item == NULL or not _vector(<object>item, cnp.NPY_FLOAT32, self.OC) or \
                    cnp.PyArray_NDIM(<cnp.ndarray>item) != 1:
                return None
            bias_ptr = <const float*>_data(<object>item)
            found += 1
        # ---- scales and zero points ----------------------------------------------------------
        if self.has_ss:
            item = PyDict_GetItem(args, self.k_ss)
            if item == NULL or not _scalar(<object>item, cnp.NPY_FLOAT32):
                return None
            ss = (<const float*>_data(<object>item))[0]
            if not _finite_positive(&ss, 1):
                return None
            found += 1
        if self.has_ds:
            item = PyDict_GetItem(args, self.k_ds)
            if item == NULL or not _scalar(<object>item, cnp.NPY_FLOAT32):
                return None
            ds = (<const float*>_data(<object>item))[0]
            if not _finite_positive(&ds, 1):
                return None
            found += 1
        if self.ws_count:
            item = PyDict_GetItem(args, self.k_ws)
            if item == NULL or not _vector(<object>item, cnp.NPY_FLOAT32, self.ws_count) or \
                    cnp.PyArray_NDIM(<cnp.ndarray>item) != 1:
                return None
            ws_ptr = <const float*>_data(<object>item)
            if not _finite_positive(ws_ptr, self.ws_count):
                return None
            ws_sn = self.ws_count > 1
            found += 1
        if self.has_zs:
            item = PyDict_GetItem(args, self.k_zs)
            if item == NULL or not _scalar(<object>item, cnp.NPY_INT32):
                return None
            zs = (<const int32_t*>_data(<object>item))[0]
            if not self.zs_lo <= zs <= self.zs_hi:
                return None  # the padding rows cannot hold it: the checked path corrects
            found += 1
        if self.has_zd:
            item = PyDict_GetItem(args, self.k_zd)
            if item == NULL or not _vector(<object>item, cnp.NPY_INT32, 1):
                return None
            dzp_ptr = <const int32_t*>_data(<object>item)
            found += 1
        for b in range(self.n_bin):
            item = PyDict_GetItem(args, self.bin_keys[b])
            if item == NULL or not _dense(<object>item, &self.bin_spec[b]):
                return None
            bin_ptr[b] = <const float*>_data(<object>item)
            found += 1
        # ---- destination ---------------------------------------------------------------------
        item = PyDict_GetItem(args, self.k_dst)
        user = None
        if item != NULL:
            if not _dense(<object>item, &self.dst) or \
                    not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>item):
                return None
            user = <object>item
            found += 1
        elif self.has_sum:
            return None  # the sum reads dst: the checked path names it missing
        if found != nargs:
            return None  # an argument this primitive does not take
        if user is not None:
            # no input may overlap dst (not in place, as oneDNN's convolution); the checked
            # path names the pair
            _extent(<cnp.ndarray>user, &d0, &d1)
            pos = 0
            while PyDict_Next(args, &pos, &key, &value):
                if not cnp.PyArray_Check(<object>value) or <object>key == self.k_dst:
                    continue
                _extent(<cnp.ndarray>value, &q0, &q1)
                if q0 < d1 and d0 < q1 and q0 < q1:
                    return None
            if not self.dst_cl and self.has_sum:
                return None  # the previous dst would need a transposed copy first
        # ---- the cached compensation and zero-point rows ---------------------------------------
        shift = self.shift + zs
        cache = self.comp_cache  # (weights, shift, comp): one tuple, swapped whole
        if (<tuple>cache)[0] is pw and (<tuple>cache)[1] == shift:
            comp = (<tuple>cache)[2]
        else:
            comp = pw.comp_for_shift(shift)
            if not _vector(comp, cnp.NPY_INT32, self.OC):
                return None
            self.comp_cache = (pw, shift, comp)
        zrow = None
        if self.conv_plan is not None:
            cache = self.zrow_cache
            if (<tuple>cache)[0] == zs:
                zrow = (<tuple>cache)[1]
            else:
                zrow = self.zrow_for(zs)
                self.zrow_cache = (zs, zrow)
        # ---- layouts: channels-last copies of plain arrays -----------------------------------
        nthreads = _dispatch._num_threads
        fused = self._fused_bands(nthreads)
        band = 0 if fused else self._channel_band(nthreads)
        src_copy = dst_copy = None
        try:
            if self.src_cl or self.dw_plain:
                a_ptr = <const uint8_t*>_data(src)
            else:
                src_copy = self._take(self.src_pool, self.N * self.P_src * self.IC *
                                      self.src_esz)
                a_ptr = <const uint8_t*>_data(src_copy)
                if fused:
                    pass  # each unit copies its own channels (_launch_bands)
                elif band:
                    self._transpose_bands(_data(src), <void*>a_ptr, self.IC, self.P_src,
                                          self.src_esz, band, True)
                else:
                    self._transpose(_data(src), <void*>a_ptr, self.IC, self.P_src,
                                    self.src_esz, nthreads)
            if user is None:
                out = aligned_empty(self.N * self.P_dst * self.OC, self.dst_dtype).reshape(
                    self.dst_phys)
            else:
                out = user
            if self.dst_cl or self.dw_plain:
                d_ptr = _data(out)
            else:
                dst_copy = self._take(self.dst_pool, self.N * self.P_dst * self.OC *
                                      self.dst_esz)
                d_ptr = _data(dst_copy)
            self._launch(a_ptr, packed, dw, comp, zrow, ss, ws_ptr, ws_sn, bias_ptr, ds,
                         dzp_ptr, d_ptr, bin_ptr, band != 0 or fused,
                         <const uint8_t*>_data(src) if fused else NULL,
                         _data(out) if fused else NULL)
            if dst_copy is not None and not fused:
                if band:
                    self._transpose_bands(d_ptr, _data(out), self.P_dst, self.OC,
                                          self.dst_esz, band, False)
                else:
                    self._transpose(d_ptr, _data(out), self.P_dst, self.OC, self.dst_esz,
                                    nthreads)
        finally:
            if src_copy is not None and len(self.src_pool) < 2:
                self.src_pool.append(src_copy)
            if dst_copy is not None and len(self.dst_pool) < 2:
                self.dst_pool.append(dst_copy)
        if user is not None:
            return user
        return out.transpose(self.dst_inverse) if self.dst_cl else out

    cdef void _transpose(self, const void* s, void* d, int64_t rows, int64_t cols,
                         int esz, int nthreads) noexcept:
        """Per image: (rows, cols) -> (cols, rows) elements of esz bytes; with several threads
        (the kernel runs on all of them: copies on one thread alone would cost them as much
        again) each image's columns are cut into bands of 64 split over the threads."""
        cdef int64_t n, t, img = rows * cols * esz
        cdef int64_t parts, band, tasks, c0, c1
        if nthreads < 2 or cols == 0 or img * self.N < (1 << 16):  # small: one thread
            with nogil:
                for n in range(self.N):
                    dnnq_transpose_for_isa(self.isa_code, <const char*>s + n * img,
                                           <char*>d + n * img, rows, cols, 0, cols, esz, rows)
            return
        # C division (cdivision): ceilings as (a + b - 1) // b of positive numbers
        parts = max(1, min((cols + 63) // 64, (2 * nthreads + self.N - 1) // self.N))
        band = ((cols + parts - 1) // parts + 63) // 64 * 64
        parts = (cols + band - 1) // band
        tasks = self.N * parts
        with nogil:
            for t in prange(tasks, schedule='static', num_threads=nthreads):
                n = t // parts
                c0 = (t % parts) * band
                c1 = min(c0 + band, cols)
                dnnq_transpose_for_isa(self.isa_code, <const char*>s + n * img,
                                       <char*>d + n * img, rows, cols, c0, c1, esz, rows)

    cdef bint _fused_bands(self, int nthreads) noexcept:
        """Plain src and dst of the column kernel (rows the plain kernel does not take): each
        (image, panel) unit copies its channels to channels-last, runs its items and copies
        them back on one thread, all units in one parallel region (ConvPlan._launch_bands):
        no fork / join between the three steps, and each finds the previous one's bytes in
        its own cache.  Not when the units would leave threads idle (fewer than four per
        thread and not a multiple of the threads): the usual split then."""
        cdef int64_t units
        if (not _fused_bands_on or not self.dw_column or self.dw_plain or self.src_cl or
                self.dst_cl or not self.depthwise):
            return False
        units = self.N * ((self.OC + 63) // 64)
        return nthreads < 2 or units % nthreads == 0 or units >= 4 * nthreads

    cdef int64_t _channel_band(self, int nthreads) noexcept:
        """Channels per thread when one image's channels-last copies are cut by channel bands
        and the column kernel's items run panel-outer (each thread's copies then hold what its
        own items read and write: cut otherwise, half the data crossed between the cores' L2
        on every call and two threads ran no faster than one); 0: the usual split."""
        if (nthreads < 2 or not self.dw_column or self.dw_plain or self.N != 1 or
                self.OC % 64 or (self.OC // 64) % nthreads or (self.src_cl and self.dst_cl)):
            return 0
        return self.OC // nthreads

    cdef void _transpose_bands(self, const void* s, void* d, int64_t rows, int64_t cols,
                               int esz, int64_t band, bint to_channels_last) noexcept:
        """One image's copy cut into channel bands of `band`, one per thread: to channels-last
        by src rows (channels), back by src columns (channels)."""
        cdef int64_t t, tasks = (rows if to_channels_last else cols) // band
        with nogil:
            for t in prange(tasks, schedule='static', num_threads=tasks):
                if to_channels_last:
                    dnnq_transpose_rows_for_isa(self.isa_code, s, d, rows, cols, t * band,
                                                (t + 1) * band, esz)
                else:
                    dnnq_transpose_for_isa(self.isa_code, s, d, rows, cols, t * band,
                                           (t + 1) * band, esz, rows)

    cdef int _launch(self, const uint8_t* a_ptr, packed, dw, comp, zrow, float ss,
                     const float* ws_ptr, int64_t ws_sn, const float* bias_ptr, float ds,
                     const int32_t* dzp_ptr, void* d_ptr, const float** bin_ptr,
                     bint panel_outer=False, const uint8_t* src_plain=NULL,
                     void* dst_plain=NULL) except -1:
        cdef gemm_operands_t op
        cdef gemm_post_input_t post_in[DNNQ_MAX_POST]
        cdef GemmPlan gplan
        cdef int i, b, nthreads = _dispatch._num_threads
        if self.conv_plan is None:  # 1x1: the GEMM plan's one executor over (image, pixels, OC)
            gplan = <GemmPlan>self.gemm_plan
            memset(&op, 0, sizeof(op))
            op.a = a_ptr
            op.a_sb, op.a_sm = self.a_sb, self.a_sm
            # (the convolution's GemmPlan XORs an s8 source to u8: no swap, no signed kernel)
            op.s8_src = self.s8_src
            op.b = _data(packed)
            op.col_comp = <const int32_t*>_data(comp)
            op.raw_s32 = self.raw_s32
            op.src_scale = ss * self.scale_adjust
            op.scale, op.scale_sn = ws_ptr, ws_sn
            if bias_ptr != NULL:
                op.bias = bias_ptr
                op.bias_sb, op.bias_sm, op.bias_sn = 0, 0, 1
            op.dst_scale = ds
            if dzp_ptr != NULL:
                op.dst_zp, op.dst_zp_sn = dzp_ptr, 0
            op.dst = d_ptr
            op.d_sb, op.d_sm = self.d_sb, self.d_sm
            if self.n_bin:  # the same values for every pixel of every image
                memset(post_in, 0, sizeof(post_in))
                for b in range(self.n_bin):
                    i = self.bin_index[b]
                    post_in[i].src1 = bin_ptr[b]
                    post_in[i].s1[0], post_in[i].s1[1], post_in[i].s1[2] = 0, 0, self.bin_sn[b]
                op.post_in = post_in
            gplan.execute(&op, nthreads)
            return 0
        cdef ConvRun r
        memset(&r, 0, sizeof(ConvRun))
        r.src = a_ptr
        r.zp_rows = <const uint8_t*>_data(zrow)
        if self.depthwise:
            r.dw_weights = <const int16_t*>_data(dw)
        else:
            r.packed = <const int8_t*>_data(packed)
        r.col_comp = <const int32_t*>_data(comp)
        r.src_scale = ss * self.scale_adjust
        r.scale, r.scale_sn = ws_ptr, ws_sn
        r.bias = bias_ptr
        r.dst_scale = ds
        r.dst_zp = dzp_ptr
        r.dst = d_ptr
        for b in range(self.n_bin):
            i = self.bin_index[b]
            r.src1[i] = bin_ptr[b]
            r.s1[i][0], r.s1[i][1], r.s1[i][2] = 0, 0, self.bin_sn[b]
        r.plain_data = self.dw_plain != 0
        r.panel_outer = panel_outer
        if src_plain != NULL:  # the fused band path (_fused_bands)
            r.band_src, r.band_dst = src_plain, dst_plain
            r.band_p_src, r.band_p_dst, r.band_esz = self.P_src, self.P_dst, self.dst_esz
        return (<ConvPlan>self.conv_plan).execute(&r, nthreads)


cdef bint _fused_bands_on = True


def set_fused_bands(bint on):
    """Turn the fused band path (ConvExec._fused_bands) on or off; returns the previous
    setting (tests and A/B timings; on by default)."""
    global _fused_bands_on
    old = _fused_bands_on
    _fused_bands_on = on
    return old


cdef float _ONE_F[1]
_ONE_F[0] = 1.0
