"""Drivers of the toolkit kernels (ukernels/toolkit_impl.h): the pointwise engine (reorder,
eltwise, binary, sum, concat), pooling and softmax.

The Python side (dnnq/primitives/_pointwise.py and the primitives) validates everything and
builds plans at creation; `run` only takes the addresses of C-contiguous arrays, releases the GIL
and splits the work items over OpenMP threads with `prange`.  A plan's C structures are
read-only during `run` (operand addresses live in a per-call copy), so several Python threads
may run one plan at once.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from libc.stdint cimport int64_t, int8_t, uint8_t, uint32_t
import numpy as np
from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcpy
from cython.parallel cimport prange

from dnnq.primitives._kernels._codes cimport DNNQ_DT_F32, DNNQ_DT_S8, DNNQ_DT_U8

cdef extern from "dnnq_toolkit.h" nogil:
    enum:
        DNNQ_PW_MAXD
        DNNQ_PW_CHUNK
        DNNQ_ELT_LINEAR_UNFUSED
        DNNQ_ELT_RELU_MAX0
        DNNQ_ELT_HARDSIGMOID_REF
        DNNQ_ELT_HARDSWISH_REF
        DNNQ_ELT_ABS_REF

    ctypedef struct dnnq_pw_opnd_t:
        const char *ptr
        int dt
        int64_t st[12]

    ctypedef struct dnnq_pw_stage_t:
        int op, buf, arg, arg2, alg
        float alpha, beta
        int p[6]
        int arg3

    ctypedef struct dnnq_pw_plan_t:
        int ndims
        int64_t dims[12]
        int64_t block
        int n_opnds
        const dnnq_pw_opnd_t *opnds
        int n_stages
        const dnnq_pw_stage_t *stages
        int use_vbmi

    ctypedef struct dnnq_pool_args_t:
        int alg, src_dt, channels_last, raw_store
        int avg_rcp
        int fast8
        int stream8
        int64_t N, C, ID, IH, IW, OD, OH, OW
        int64_t KD, KH, KW, SD, SH, SW, DD, DH, DW
        int64_t PD, PH, PW
        int64_t window, max_taps
        float count_inc
        const char *src
        void *dst
        dnnq_pw_plan_t epi

    ctypedef struct dnnq_softmax_args_t:
        int logsoftmax, src_dt, dst_dt, vector_exp
        int ndims
        int64_t dims[12]
        int64_t src_st[12]
        int64_t dst_st[12]
        int64_t axis_len, src_as, dst_as
        float scale, inv_dst_scale
        const char *src
        char *dst

    ctypedef int (*dnnq_pw_run_fn)(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1)
    ctypedef int (*dnnq_pool_run_fn)(const dnnq_pool_args_t *a, int64_t it0, int64_t it1)
    ctypedef int (*dnnq_pool_split_fn)(const dnnq_pool_args_t *a, int64_t item, int part,
                                       int nparts, uint32_t *sums)
    ctypedef int (*dnnq_softmax_run_fn)(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1,
                                        float *work)

    dnnq_pw_run_fn dnnq_pw_run_for_isa(int isa)
    dnnq_pool_run_fn dnnq_pool_run_for_isa(int isa)
    dnnq_pool_split_fn dnnq_pool_split_for_isa(int isa)
    dnnq_softmax_run_fn dnnq_softmax_run_for_isa(int isa)
    ctypedef void (*dnnq_table_run_fn)(uint8_t *dst, const uint8_t *src, const uint8_t *table,
                                       int64_t n, int vbmi)
    dnnq_table_run_fn dnnq_table_run_for_isa(int isa)

    ctypedef struct dnnq_qsoftmax_args_t:
        int64_t rows, len, src_rs, dst_rs
        int src_dt, dst_dt, dst_zp, vbmi
        float inv_dst_scale
        const float *exp_table
        const uint8_t *src
        char *dst

    ctypedef struct dnnq_qlayernorm_args_t:
        int64_t rows, len, src_rs, dst_rs
        int src_dt, dst_dt, src_zp, dst_zp
        float src_scale, inv_dst_scale
        double eps
        const float *gamma
        const float *beta
        const uint8_t *src
        char *dst

    ctypedef void (*dnnq_qsoftmax_run_fn)(const dnnq_qsoftmax_args_t *a, int64_t r0, int64_t r1)
    ctypedef void (*dnnq_qlayernorm_run_fn)(const dnnq_qlayernorm_args_t *a, int64_t r0,
                                            int64_t r1)
    dnnq_qsoftmax_run_fn dnnq_qsoftmax_run_for_isa(int isa)

    enum:
        DNNQ_Q8_ADD
        DNNQ_Q8_MUL
        DNNQ_Q8_MUL_COLS
        DNNQ_Q8_ADD_FMA
        DNNQ_Q8_ADD_FMA_COLS
    ctypedef struct dnnq_q8_binary_args_t:
        int64_t rows, len, src0_rs, src1_rs, dst_rs
        int op, src0_dt, src1_dt, dst_dt, z0, z1, zd
        float a0, a1, c
        const float *cols
        const uint8_t *src0
        const uint8_t *src1
        uint8_t *dst
    ctypedef void (*dnnq_q8_binary_run_fn)(const dnnq_q8_binary_args_t *a, int64_t r0,
                                           int64_t r1)
    dnnq_q8_binary_run_fn dnnq_q8_binary_run_for_isa(int isa)
    ctypedef struct dnnq_scale_residual_args_t:
        int64_t rows, len, x_rs, y_rs, dst_rs
        int y_dt, dst_dt
        float y_zp, y_scale, inv_dst_scale, dst_zp
        const float *x
        const float *s
        const char *y
        char *dst
    ctypedef void (*dnnq_scale_residual_run_fn)(const dnnq_scale_residual_args_t *a,
                                                int64_t r0, int64_t r1)
    dnnq_scale_residual_run_fn dnnq_scale_residual_run_for_isa(int isa)
    ctypedef struct dnnq_qplanes_args_t:
        int64_t n_pix
        int C, dst_dt, zp
        float scale, lo, hi
        const float *src
        uint8_t *dst
    ctypedef void (*dnnq_quantize_planes_run_fn)(const dnnq_qplanes_args_t *a, int64_t p0,
                                                 int64_t p1)
    dnnq_quantize_planes_run_fn dnnq_quantize_planes_run_for_isa(int isa)
    dnnq_qlayernorm_run_fn dnnq_qlayernorm_run_for_isa(int isa)
    const char *dnnq_toolkit_isa_name(int isa)
    int64_t dnnq_pw_items(const dnnq_pw_plan_t *p)


MAXD = DNNQ_PW_MAXD
CHUNK = DNNQ_PW_CHUNK
# eltwise codes of oneDNN's reference kernels where they differ from its JIT injectors
ELT_LINEAR_UNFUSED, ELT_HARDSIGMOID_REF, ELT_HARDSWISH_REF, ELT_ABS_REF = (
    DNNQ_ELT_LINEAR_UNFUSED, DNNQ_ELT_HARDSIGMOID_REF, DNNQ_ELT_HARDSWISH_REF, DNNQ_ELT_ABS_REF)
ELT_RELU_MAX0 = DNNQ_ELT_RELU_MAX0
# stage opcodes (dnnq_toolkit.h)
LOAD, BIN_OPND, BIN_BUF, BIN_CONST, ELTWISE, STORE, COPY, AFFINE, BINARY2 = 1, 2, 3, 4, 5, 6, 7, 8, 9
SAVE, SELECT, SUM = 10, 11, 12
POOL_MAX, POOL_AVG_INC, POOL_AVG_EXC = 0, 1, 2


def kernel_isa_name(int isa):
    """'portable', 'avx2' or 'avx512': the toolkit kernel an ISA level dispatches to."""
    return dnnq_toolkit_isa_name(isa).decode()


cdef const char* _addr(object arr, bint writable) except NULL:
    cdef Py_buffer view
    cdef int flags = PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
    PyObject_GetBuffer(arr, &view, flags)
    cdef const char* p = <const char*>view.buf
    PyBuffer_Release(&view)
    if p == NULL:
        return <const char*>64  # empty buffers are never dereferenced
    return p


cdef int _esize(int dt) noexcept nogil:
    return 1 if dt == DNNQ_DT_S8 or dt == DNNQ_DT_U8 else 4


cdef int _run_pw(dnnq_pw_run_fn fn, const dnnq_pw_plan_t* p, int64_t nitems,
                 int nthreads) noexcept nogil:
    """Split [0, nitems) over the threads; the number of items whose kernel call failed."""
    cdef int64_t t, nt
    cdef int failed = 0
    if nitems <= 0:
        return 0
    nt = nthreads
    if nt > nitems:
        nt = nitems
    if nt <= 1:
        return fn(p, 0, nitems) != 0
    for t in prange(nt, num_threads=nt, schedule='static'):
        failed += fn(p, t * nitems // nt, (t + 1) * nitems // nt) != 0
    return failed


cdef int _raise_nomem(str what) except -1:
    raise MemoryError(f"{what}: a kernel could not allocate its scratch memory; the "
                      "destination is incomplete")


cdef class PwPlan:
    """A pointwise loop nest and its program (see ukernels/dnnq_toolkit.h).

    PwPlan(isa, dims, block, operands, stages)
      dims: iteration dims (innermost last), at most MAXD;
      block: work-item length along the innermost dim (0 = whole rows);
      operands: list of (dt_code, strides, offset) -- element strides per iteration dim and the
                element offset of iteration index 0 inside the array given at run time;
      stages: list of (op, buf, arg, arg2, alg, alpha, beta, (p0, p1, p2, p3), arg3).
    run(arrays, writable, nthreads): arrays[k] is the C-contiguous buffer of operand k;
    writable[k] says whether the kernel writes it.
    """
    cdef dnnq_pw_plan_t plan

    @property
    def use_vbmi(self):
        return bool(self.plan.use_vbmi)
    cdef dnnq_pw_opnd_t* opnds
    cdef dnnq_pw_stage_t* stages
    cdef int64_t* offsets
    cdef dnnq_pw_run_fn fn
    cdef public int64_t n_items, n_elems
    cdef public int n_operands

    def __cinit__(self):
        self.opnds = NULL
        self.stages = NULL
        self.offsets = NULL

    def __dealloc__(self):
        free(self.opnds)
        free(self.stages)
        free(self.offsets)

    def __init__(self, int isa, dims, int64_t block, list operands, list stages,
                 bint use_vbmi=False):
        """use_vbmi: the AVX-512 kernels may use VBMI byte lookups (dnnq.primitives._impls
        decides)."""
        cdef int i, k
        nd = len(dims)
        if not 1 <= nd <= DNNQ_PW_MAXD:
            raise ValueError(f"PwPlan: {nd} dims; at most {DNNQ_PW_MAXD}")
        memset(&self.plan, 0, sizeof(dnnq_pw_plan_t))
        self.fn = dnnq_pw_run_for_isa(isa)
        self.plan.use_vbmi = use_vbmi
        self.plan.ndims = nd
        self.n_elems = 1
        for i in range(nd):
            self.plan.dims[i] = dims[i]
            self.n_elems *= dims[i]
        self.plan.block = block
        n = len(operands)
        self.n_operands = n
        self.opnds = <dnnq_pw_opnd_t*>malloc(sizeof(dnnq_pw_opnd_t) * max(n, 1))
        self.offsets = <int64_t*>malloc(sizeof(int64_t) * max(n, 1))
        self.stages = <dnnq_pw_stage_t*>malloc(sizeof(dnnq_pw_stage_t) * max(len(stages), 1))
        if self.opnds == NULL or self.stages == NULL or self.offsets == NULL:
            raise MemoryError()
        memset(self.opnds, 0, sizeof(dnnq_pw_opnd_t) * max(n, 1))
        for k, (dt, strides, offset) in enumerate(operands):
            if len(strides) != nd:
                raise ValueError("PwPlan: operand strides do not match dims")
            self.opnds[k].dt = dt
            for i in range(nd):
                self.opnds[k].st[i] = strides[i]
            self.offsets[k] = offset
        for k, (op, buf, arg, arg2, alg, alpha, beta, params, arg3) in enumerate(stages):
            for i in range(6):
                self.stages[k].p[i] = params[i] if i < len(params) else -1
            self.stages[k].arg3 = arg3
            self.stages[k].op = op
            self.stages[k].buf = buf
            self.stages[k].arg = arg
            self.stages[k].arg2 = arg2
            self.stages[k].alg = alg
            self.stages[k].alpha = alpha
            self.stages[k].beta = beta
        self.plan.n_opnds = n
        self.plan.opnds = self.opnds
        self.plan.n_stages = len(stages)
        self.plan.stages = self.stages
        self.n_items = dnnq_pw_items(&self.plan)

    cdef dnnq_pw_opnd_t* _bind(self, list arrays, list writable) except NULL:
        """A malloc'ed copy of the operands with their addresses (caller frees)."""
        cdef int k, n = self.n_operands
        if len(arrays) != n:
            raise ValueError(f"PwPlan.run: {len(arrays)} arrays for {n} operands")
        cdef dnnq_pw_opnd_t* ops = <dnnq_pw_opnd_t*>malloc(sizeof(dnnq_pw_opnd_t) * max(n, 1))
        if ops == NULL:
            raise MemoryError()
        memcpy(ops, self.opnds, sizeof(dnnq_pw_opnd_t) * n)
        try:
            for k in range(n):
                ops[k].ptr = _addr(arrays[k], writable[k]) + self.offsets[k] * _esize(ops[k].dt)
        except BaseException:
            free(ops)
            raise
        return ops

    def run(self, list arrays, list writable, int nthreads):
        cdef dnnq_pw_plan_t p = self.plan
        cdef dnnq_pw_opnd_t* ops = self._bind(arrays, writable)
        p.opnds = ops
        cdef int64_t nitems = self.n_items
        cdef int failed
        with nogil:
            failed = _run_pw(self.fn, &p, nitems, nthreads)
        free(ops)
        if failed:
            _raise_nomem("pointwise kernel")

    cdef dnnq_pw_plan_t* _template(self):
        return &self.plan


cdef int64_t _pool_split_min_bytes = 1 << 17


def pool_split_min_bytes(n=None):
    """The smallest share of a window (bytes) worth a thread when a stream8 pooling splits
    one output's window rows over threads (measured; tests lower it to split small windows);
    sets it to n (>= 1) when given, returns the previous value."""
    global _pool_split_min_bytes
    old = _pool_split_min_bytes
    if n is not None:
        _pool_split_min_bytes = max(1, int(n))
    return old


cdef int _run_pool(dnnq_pool_run_fn fn, dnnq_pool_split_fn split, const dnnq_pool_args_t* a,
                   int64_t nitems, int nthreads) noexcept nogil:
    cdef int64_t t, r, nt = nthreads, parts
    cdef int failed = 0
    cdef uint32_t* sums
    if nitems <= 0:
        return 0
    # fewer outputs than threads: each output's window rows split over up to nt threads, with
    # shares of at least _pool_split_min_bytes (smaller ones gain less than a parallel region
    # costs)
    parts = min(nt, a.max_taps * a.C // _pool_split_min_bytes) if a.stream8 else 0
    if nt > nitems and parts > 1:
        sums = <uint32_t*>malloc(sizeof(uint32_t) * parts * a.C)
        if sums == NULL:
            return 1
        for r in range(nitems):
            for t in prange(parts, num_threads=parts, schedule='static'):
                split(a, r, <int>t, <int>parts, sums)
            failed += split(a, r, <int>parts, <int>parts, sums) != 0
        free(sums)
        return failed
    if nt > nitems:
        nt = nitems
    if nt <= 1:
        return fn(a, 0, nitems) != 0
    for t in prange(nt, num_threads=nt, schedule='static'):
        failed += fn(a, t * nitems // nt, (t + 1) * nitems // nt) != 0
    return failed


cdef class PoolPlan:
    """Pooling: geometry fixed at creation; `epi` (a PwPlan over the destination's physical
    dims, uncollapsed) holds the post-ops and the store.

    PoolPlan(isa, alg, src_dt, channels_last, raw_store, geometry, epi, avg_rcp), geometry a
    dict with
    N, C, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, DD, DH, DW, PD, PH, PW; avg_rcp:
    average as sum * f32(1/count); fast8: channels-last s8 / u8 into the same type and layout
    without post-ops (direct int8 kernels); stream8: a channels-last s8 / u8 average with
    DW == 1 summed as byte streams, an output's window rows split over threads when there are
    fewer outputs than threads.
    run(src, epi_arrays, epi_writable, dst, nthreads): epi_arrays are the epilogue operands
    (operand 0 must be dst).
    """
    cdef dnnq_pool_args_t args
    cdef dnnq_pool_run_fn fn
    cdef dnnq_pool_split_fn split
    cdef PwPlan epi
    cdef public int64_t n_items

    def __init__(self, int isa, int alg, int src_dt, bint channels_last, bint raw_store,
                 dict g, PwPlan epi, bint avg_rcp=False, bint fast8=False,
                 bint stream8=False):
        memset(&self.args, 0, sizeof(dnnq_pool_args_t))
        self.fn = dnnq_pool_run_for_isa(isa)
        self.split = dnnq_pool_split_for_isa(isa)
        a = &self.args
        a.alg, a.src_dt, a.channels_last, a.raw_store = alg, src_dt, channels_last, raw_store
        a.avg_rcp = avg_rcp
        a.fast8 = fast8
        a.stream8 = stream8
        a.N, a.C, a.ID, a.IH, a.IW = g["N"], g["C"], g["ID"], g["IH"], g["IW"]
        a.OD, a.OH, a.OW = g["OD"], g["OH"], g["OW"]
        a.KD, a.KH, a.KW = g["KD"], g["KH"], g["KW"]
        a.SD, a.SH, a.SW = g["SD"], g["SH"], g["SW"]
        a.DD, a.DH, a.DW = g["DD"], g["DH"], g["DW"]
        a.PD, a.PH, a.PW = g["PD"], g["PH"], g["PW"]
        a.window, a.max_taps, a.count_inc = g["window"], g["max_taps"], g["count_inc"]
        self.epi = epi
        if channels_last:
            self.n_items = a.N * a.OD * a.OH * a.OW
        else:
            self.n_items = a.N * a.C * a.OD * a.OH

    def run(self, src, list epi_arrays, list epi_writable, dst, int nthreads):
        cdef dnnq_pool_args_t a = self.args
        cdef dnnq_pw_opnd_t* ops = self.epi._bind(epi_arrays, epi_writable)
        a.epi = self.epi._template()[0]
        a.epi.opnds = ops
        a.src = _addr(src, False)
        a.dst = <void*>_addr(dst, True)
        cdef int64_t nitems = self.n_items
        cdef int failed
        with nogil:
            failed = _run_pool(self.fn, self.split, &a, nitems, nthreads)
        free(ops)
        if failed:
            _raise_nomem("Pooling")


def softmax_run(int isa, bint logsoftmax, int src_dt, int dst_dt, dims, src_st, dst_st,
                int64_t axis_len, int64_t src_as, int64_t dst_as, float scale,
                float inv_dst_scale, src, dst, int nthreads, bint vector_exp=False):
    """Softmax over one axis: rows are the positions of `dims` (strides src_st / dst_st);
    vector_exp: tk_softmax.h's vector exp and sum (dnnq_softmax_args_t)."""
    cdef dnnq_softmax_args_t a
    cdef int i
    cdef int64_t nrows = 1, t, nt
    memset(&a, 0, sizeof(dnnq_softmax_args_t))
    nd = len(dims)
    if nd > DNNQ_PW_MAXD:
        raise ValueError("softmax_run: too many dims")
    a.logsoftmax, a.src_dt, a.dst_dt = logsoftmax, src_dt, dst_dt
    a.vector_exp = vector_exp
    a.ndims = nd
    for i in range(nd):
        a.dims[i], a.src_st[i], a.dst_st[i] = dims[i], src_st[i], dst_st[i]
        nrows *= dims[i]
    a.axis_len, a.src_as, a.dst_as = axis_len, src_as, dst_as
    a.scale, a.inv_dst_scale = scale, inv_dst_scale
    a.src = _addr(src, False)
    a.dst = <char*>_addr(dst, True)
    cdef dnnq_softmax_run_fn fn = dnnq_softmax_run_for_isa(isa)
    nt = nthreads
    if nt > nrows:
        nt = nrows
    if nt < 1:
        nt = 1
    cdef float* work = <float*>malloc(sizeof(float) * axis_len * nt)
    if work == NULL:
        raise MemoryError()
    cdef int failed = 0
    with nogil:
        if nt <= 1:
            failed = fn(&a, 0, nrows, work) != 0
        else:
            for t in prange(nt, num_threads=nt, schedule='static'):
                failed += fn(&a, t * nrows // nt, (t + 1) * nrows // nt, work + t * axis_len) != 0
    free(work)
    if failed:
        _raise_nomem("Softmax")


def table_lookup(int isa, bint vbmi, const uint8_t[:, :] src, const uint8_t[::1] table,
                 uint8_t[:, :] dst, int nthreads=1):
    """dst[r, i] = table[src[r, i]] over rows of bytes (each row dense, rows at any stride;
    `dst` of the same shape; `table` 256 entries); `vbmi`: the caller allows VBMI's byte
    lookups (the ISA cap's optional feature).  Blocks of about 64 KiB split over up to
    `nthreads` threads."""
    cdef int64_t rows = src.shape[0], n = src.shape[1], per, nblocks, t, r, r0, r1
    cdef int nt = nthreads
    if dst.shape[0] != rows or dst.shape[1] != n or table.shape[0] != 256:
        raise ValueError(f"table_lookup: src {rows}x{n} bytes, dst {dst.shape[0]}x"
                         f"{dst.shape[1]}, table {table.shape[0]} entries; expected dst of "
                         "src's shape, 256 entries")
    if rows == 0 or n == 0:
        return
    if (n > 1 and (src.strides[1] != 1 or dst.strides[1] != 1)) or src.strides[0] < 0 or \
            dst.strides[0] < 0:
        raise ValueError("table_lookup: rows must be dense bytes at a nonnegative row stride")
    cdef dnnq_table_run_fn fn = dnnq_table_run_for_isa(isa)
    cdef const uint8_t *tb = &table[0]
    cdef const uint8_t *s = &src[0, 0]
    cdef uint8_t *d = &dst[0, 0]
    cdef int64_t ss = src.strides[0], ds = dst.strides[0]
    cdef int v = vbmi
    if ss == n and ds == n:  # one dense run
        n, rows, ss, ds = n * rows, 1, n * rows, n * rows
    per = max(1, 65536 // n)  # rows per block
    nblocks = (rows + per - 1) // per
    if n > 65536 and rows == 1:  # a long single run: 64 KiB blocks of it
        nblocks = (n + 65535) // 65536
    if nt > nblocks:
        nt = <int>nblocks
    with nogil:
        if nt <= 1:
            for r in range(rows):
                fn(d + r * ds, s + r * ss, tb, n, v)
        elif rows == 1:
            for t in prange(nt, num_threads=nt, schedule='static'):
                r0 = t * nblocks // nt * 65536
                fn(d + r0, s + r0, tb, min((t + 1) * nblocks // nt * 65536, n) - r0, v)
        else:
            for t in prange(nt, num_threads=nt, schedule='static'):
                r0 = t * nblocks // nt * per
                r1 = min((t + 1) * nblocks // nt * per, rows)
                for r in range(r0, r1):
                    fn(d + r * ds, s + r * ss, tb, n, v)


cdef int64_t _row_stride(object a, int64_t rows, int64_t n, str name) except -1:
    """Element stride between the rows of a 2-D array whose rows are dense."""
    if a.ndim != 2 or a.shape[0] != rows or a.shape[1] != n:
        raise ValueError(f"{name}: shape {a.shape}, expected ({rows}, {n})")
    if n > 1 and a.strides[1] != a.itemsize:
        raise ValueError(f"{name}: rows must be dense")
    if rows > 1 and (a.strides[0] < 0 or a.strides[0] % a.itemsize):
        raise ValueError(f"{name}: rows at a nonnegative whole-element stride expected")
    return a.strides[0] // a.itemsize if rows > 1 else n


cdef enum:
    _ROWS_SOFTMAX, _ROWS_LAYERNORM, _ROWS_BINARY, _ROWS_SCALE_RESIDUAL, _ROWS_QPLANES


cdef inline void _rows_call(int kind, void* fn, const void* a, int64_t r0,
                            int64_t r1) noexcept nogil:
    if kind == _ROWS_SOFTMAX:
        (<dnnq_qsoftmax_run_fn>fn)(<const dnnq_qsoftmax_args_t*>a, r0, r1)
    elif kind == _ROWS_LAYERNORM:
        (<dnnq_qlayernorm_run_fn>fn)(<const dnnq_qlayernorm_args_t*>a, r0, r1)
    elif kind == _ROWS_SCALE_RESIDUAL:
        (<dnnq_scale_residual_run_fn>fn)(<const dnnq_scale_residual_args_t*>a, r0, r1)
    elif kind == _ROWS_QPLANES:
        (<dnnq_quantize_planes_run_fn>fn)(<const dnnq_qplanes_args_t*>a, r0, r1)
    else:
        (<dnnq_q8_binary_run_fn>fn)(<const dnnq_q8_binary_args_t*>a, r0, r1)


cdef void _split_rows(int kind, void* fn, const void* a, int64_t rows,
                      int64_t nthreads) noexcept nogil:
    """tk_rows8.h's kernel `kind` over rows 0 .. rows - 1, in equal static shares of up to
    `nthreads` threads (each row computed alike on any thread)."""
    cdef int64_t t, nt = nthreads
    if nt > rows:
        nt = rows
    if nt <= 1:
        _rows_call(kind, fn, a, 0, rows)
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        _rows_call(kind, fn, a, t * rows // nt, (t + 1) * rows // nt)


def qsoftmax_run(int isa, bint vbmi, src, dst, int src_dt, int dst_dt,
                 const float[::1] exp_table, float inv_dst_scale, int dst_zp, int nthreads=1):
    """Softmax of each row of the 8-bit `src` (rows x len, rows dense) into `dst` (u8 / s8 /
    f32, same shape): tk_rows8.h's definition, `exp_table` its 256 exponentials."""
    cdef dnnq_qsoftmax_args_t a
    cdef int64_t nt = nthreads
    memset(&a, 0, sizeof(a))
    if exp_table.shape[0] != 256:
        raise ValueError("qsoftmax_run: exp_table of 256 entries expected")
    a.rows, a.len = src.shape[0], src.shape[1]
    a.src_rs = _row_stride(src, a.rows, a.len, "qsoftmax_run src")
    a.dst_rs = _row_stride(dst, a.rows, a.len, "qsoftmax_run dst")
    a.src_dt, a.dst_dt, a.dst_zp, a.vbmi = src_dt, dst_dt, dst_zp, vbmi
    a.inv_dst_scale = inv_dst_scale
    a.exp_table = &exp_table[0]
    if a.rows == 0 or a.len == 0:
        return
    a.src = <const uint8_t*>_addr(src[0:1], False)
    a.dst = <char*>_addr(dst[0:1], True)
    with nogil:
        _split_rows(_ROWS_SOFTMAX, <void*>dnnq_qsoftmax_run_for_isa(isa), &a, a.rows, nt)


def qlayernorm_run(int isa, src, dst, int src_dt, int dst_dt, float src_scale, int src_zp,
                   const float[::1] gamma, const float[::1] beta, double eps,
                   float inv_dst_scale, int dst_zp, int nthreads=1):
    """Layer normalization of each row of the 8-bit `src` (rows x len, rows dense) into `dst`
    (u8 / s8 / f32, same shape): tk_rows8.h's definition."""
    cdef dnnq_qlayernorm_args_t a
    cdef int64_t nt = nthreads
    memset(&a, 0, sizeof(a))
    a.rows, a.len = src.shape[0], src.shape[1]
    if gamma.shape[0] != a.len or beta.shape[0] != a.len or a.len >= (1 << 20):
        raise ValueError("qlayernorm_run: gamma / beta of the row's length (< 2^20) expected")
    a.src_rs = _row_stride(src, a.rows, a.len, "qlayernorm_run src")
    a.dst_rs = _row_stride(dst, a.rows, a.len, "qlayernorm_run dst")
    a.src_dt, a.dst_dt, a.src_zp, a.dst_zp = src_dt, dst_dt, src_zp, dst_zp
    a.src_scale, a.inv_dst_scale, a.eps = src_scale, inv_dst_scale, eps
    if a.rows == 0 or a.len == 0:
        return
    a.gamma, a.beta = &gamma[0], &beta[0]
    a.src = <const uint8_t*>_addr(src[0:1], False)
    a.dst = <char*>_addr(dst[0:1], True)
    with nogil:
        _split_rows(_ROWS_LAYERNORM, <void*>dnnq_qlayernorm_run_for_isa(isa), &a, a.rows, nt)


Q8_ADD, Q8_MUL, Q8_MUL_COLS, Q8_ADD_FMA, Q8_ADD_FMA_COLS = (
    DNNQ_Q8_ADD, DNNQ_Q8_MUL, DNNQ_Q8_MUL_COLS, DNNQ_Q8_ADD_FMA, DNNQ_Q8_ADD_FMA_COLS)


def q8_gate_cols(gate, int gate_dt, float scale, int zp, bint one_plus, float m,
                 int repeat=1):
    """Per-column multipliers of a channel gate g (8-bit, C values): c = f32(g - zp) * scale,
    + 1 when `one_plus`, then * m; the C values repeated `repeat` times (f32 array)."""
    cdef const uint8_t[::1] g = gate
    cdef int64_t n = g.shape[0], i, k
    out = np.empty(n * repeat, np.float32)
    cdef float[::1] o = out
    cdef float c
    cdef int v
    for i in range(n):
        if gate_dt == DNNQ_DT_S8:
            v = <int8_t>g[i]
        else:
            v = g[i]
        c = <float>(v - zp) * scale
        if one_plus:
            c = c + <float>1.0
        c = c * m
        for k in range(repeat):
            o[k * n + i] = c
    return out


def q8_binary_run(int isa, int op, src0, src1, dst, int src0_dt, int src1_dt, int dst_dt,
                  int z0, int z1, int zd, float a0, float a1, cols=None, int nthreads=1,
                  float c=0.0):
    """tk_rows8.h's binary op of 8-bit (rows x len) arrays with dense rows: ADD / MUL /
    ADD_FMA of same-shape sources, MUL_COLS / ADD_FMA_COLS of src0 and `cols` (len f32
    values; src1 ignored); `c` the f32 added last (inside the FMAs for ADD_FMA)."""
    cdef bint by_cols = op == DNNQ_Q8_MUL_COLS or op == DNNQ_Q8_ADD_FMA_COLS
    cdef dnnq_q8_binary_args_t a
    cdef int64_t nt = nthreads
    cdef const float[::1] cv
    memset(&a, 0, sizeof(a))
    a.rows, a.len = src0.shape[0], src0.shape[1]
    a.src0_rs = _row_stride(src0, a.rows, a.len, "q8_binary_run src0")
    a.dst_rs = _row_stride(dst, a.rows, a.len, "q8_binary_run dst")
    if by_cols:
        if cols is None or cols.shape[0] != a.len:
            raise ValueError("q8_binary_run: cols of the row's length expected")
        cv = cols
        a.cols = &cv[0] if a.len else NULL
    else:
        a.src1_rs = _row_stride(src1, a.rows, a.len, "q8_binary_run src1")
    a.op, a.src0_dt, a.src1_dt, a.dst_dt = op, src0_dt, src1_dt, dst_dt
    a.z0, a.z1, a.zd, a.a0, a.a1, a.c = z0, z1, zd, a0, a1, c
    if a.rows == 0 or a.len == 0:
        return
    a.src0 = <const uint8_t*>_addr(src0[0:1], False)
    if not by_cols:
        a.src1 = <const uint8_t*>_addr(src1[0:1], False)
    a.dst = <uint8_t*>_addr(dst[0:1], True)
    with nogil:
        _split_rows(_ROWS_BINARY, <void*>dnnq_q8_binary_run_for_isa(isa), &a, a.rows, nt)


def scale_residual_run(int isa, x, const float[::1] s, y, dst, int y_dt, int dst_dt,
                       float y_zp, float y_scale, float inv_dst_scale, float dst_zp,
                       int nthreads=1):
    """tk_scale_residual.h's ``Q((x + x * s) + y)`` of (rows x len) arrays with dense rows:
    x f32, s len f32 values (one per column), y None or f32 / u8 / s8 (y_dt), dst u8 / s8."""
    cdef dnnq_scale_residual_args_t a
    cdef int64_t nt = nthreads
    memset(&a, 0, sizeof(a))
    if x.dtype != np.float32:
        raise ValueError("scale_residual_run: f32 x expected")
    a.rows, a.len = x.shape[0], x.shape[1]
    if s.shape[0] != a.len:
        raise ValueError("scale_residual_run: s of the row's length expected")
    a.x_rs = _row_stride(x, a.rows, a.len, "scale_residual_run x")
    a.dst_rs = _row_stride(dst, a.rows, a.len, "scale_residual_run dst")
    if dst.itemsize != 1 or (dst_dt != DNNQ_DT_U8 and dst_dt != DNNQ_DT_S8):
        raise ValueError("scale_residual_run: a u8 / s8 dst expected")
    a.y_dt, a.dst_dt = y_dt, dst_dt
    if y is not None:
        if y.itemsize != (4 if y_dt == DNNQ_DT_F32 else 1):
            raise ValueError("scale_residual_run: y's itemsize does not match y_dt")
        a.y_rs = _row_stride(y, a.rows, a.len, "scale_residual_run y")
    a.y_zp, a.y_scale, a.inv_dst_scale, a.dst_zp = y_zp, y_scale, inv_dst_scale, dst_zp
    if a.rows == 0 or a.len == 0:
        return
    a.x = <const float*>_addr(x[0:1], False)
    a.s = &s[0]
    if y is not None:
        a.y = _addr(y[0:1], False)
    a.dst = <char*>_addr(dst[0:1], True)
    with nogil:
        _split_rows(_ROWS_SCALE_RESIDUAL, <void*>dnnq_scale_residual_run_for_isa(isa), &a,
                    a.rows, nt)


def quantize_planes_run(int isa, src, dst, float scale, int zp, int dst_dt, int nthreads=1):
    """tk_quantize_planes.h: ONNX QuantizeLinear of src (N, C, P) f32, C-contiguous, 2 <= C
    <= 4, into dst (N, P, C) bytes (u8 / s8 by dst_dt), C-contiguous."""
    cdef dnnq_qplanes_args_t a
    cdef int64_t n, N, nt = nthreads
    memset(&a, 0, sizeof(a))
    if src.dtype != np.float32 or src.ndim != 3 or not src.flags.c_contiguous:
        raise ValueError("quantize_planes_run: C-contiguous (N, C, P) f32 src expected")
    N, a.C, a.n_pix = src.shape[0], src.shape[1], src.shape[2]
    if not 2 <= a.C <= 4:
        raise ValueError("quantize_planes_run: 2 to 4 planes expected")
    if dst.itemsize != 1 or dst.shape != (N, a.n_pix, a.C) or not dst.flags.c_contiguous:
        raise ValueError("quantize_planes_run: C-contiguous (N, P, C) bytes dst expected")
    if dst_dt == DNNQ_DT_U8:
        a.lo, a.hi = <float>(0 - zp), <float>(255 - zp)
    elif dst_dt == DNNQ_DT_S8:
        a.lo, a.hi = <float>(-128 - zp), <float>(127 - zp)
    else:
        raise ValueError("quantize_planes_run: a u8 / s8 dst expected")
    a.dst_dt, a.zp, a.scale = dst_dt, zp, scale
    if N == 0 or a.n_pix == 0:
        return
    cdef void* fn = <void*>dnnq_quantize_planes_run_for_isa(isa)
    for n in range(N):
        a.src = <const float*>_addr(src[n], False)
        a.dst = <uint8_t*>_addr(dst[n], True)
        with nogil:
            _split_rows(_ROWS_QPLANES, fn, &a, a.n_pix, nt)


cdef extern from *:
    """
    /* w source pixels of c bytes (contiguous) -> w * rep destination pixels at a stride of
     * ds bytes: copies of a size the compiler knows for the usual channel counts */
    #define DNNQ_PX_LOOP(C)                                                        \
        for (int64_t i = 0; i < w; ++i)                                            \
            for (int64_t k = 0; k < rep; ++k)                                      \
                __builtin_memcpy(d + (i * rep + k) * ds, s + i * (C), (C));
    static void dnnq_repeat_pixel_row(uint8_t *d, int64_t ds, const uint8_t *s, int64_t w,
                                      int64_t c, int64_t rep) {
        switch (c) {
        case 8: DNNQ_PX_LOOP(8) break;
        case 16: DNNQ_PX_LOOP(16) break;
        case 24: DNNQ_PX_LOOP(24) break;
        case 32: DNNQ_PX_LOOP(32) break;
        case 48: DNNQ_PX_LOOP(48) break;
        case 64: DNNQ_PX_LOOP(64) break;
        case 96: DNNQ_PX_LOOP(96) break;
        case 128: DNNQ_PX_LOOP(128) break;
        default: DNNQ_PX_LOOP(c)
        }
    }
    """
    void dnnq_repeat_pixel_row(uint8_t *d, int64_t ds, const uint8_t *s, int64_t w,
                               int64_t c, int64_t rep) nogil


def repeat_pixels_into(src, dst, int64_t rh, int64_t rw, int64_t channel_offset,
                       int nthreads=1):
    """Nearest upsampling by whole factors into a channel slice: `src` (N, H, W, C) and
    `dst` (N, H * rh, W * rw, Ctot), both C-contiguous 8-bit (channels-last memory);
    dst[n, y, x, channel_offset + c] = src[n, y // rh, x // rw, c]."""
    cdef const uint8_t[:, :, :, ::1] s = src
    cdef uint8_t[:, :, :, ::1] d = dst
    cdef int64_t N = s.shape[0], H = s.shape[1], W = s.shape[2], C = s.shape[3]
    cdef int64_t Ho = d.shape[1], Wo = d.shape[2], Ct = d.shape[3]
    cdef int64_t r, n, y
    cdef const uint8_t* sp
    cdef uint8_t* dp
    cdef int nt = nthreads
    if d.shape[0] != N or Ho != H * rh or Wo != W * rw or channel_offset < 0 or \
            channel_offset + C > Ct or rh < 1 or rw < 1:
        raise ValueError(f"repeat_pixels_into: src {src.shape} x ({rh}, {rw}) into dst "
                         f"{dst.shape} at channel {channel_offset}")
    if N == 0 or Ho == 0 or Wo == 0 or C == 0:
        return
    if nt > N * Ho:
        nt = <int>(N * Ho)
    if nt < 1:
        nt = 1
    with nogil:
        for r in prange(N * Ho, num_threads=nt, schedule='static'):
            n = r // Ho
            y = r % Ho
            sp = &s[n, y // rh, 0, 0]
            dp = &d[n, y, 0, channel_offset]
            dnnq_repeat_pixel_row(dp, Ct, sp, W, C, rw)
