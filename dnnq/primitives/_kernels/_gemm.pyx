"""The blocked int8 GEMM driver: weights packing, and one parallel execution of a GEMM plan.

The Python side (dnnq/primitives/_gemm_primitive.py, _gemm_exec.pyx) validates everything and prepares the small
per-execution vectors (combined scales, compensation); this module only takes raw pointers
from C-contiguous arrays, releases the GIL and runs `prange` over (batch, column panel, row
block) work items.  Consecutive items share a column panel, so each thread keeps its packed
weights panel hot in cache while it walks down the rows.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from cython.parallel cimport prange

from dnnq.primitives._kernels._kernels cimport (
    DNNQ_NR, DNNQ_REF_ORDER, DNNQ_REF_ZP, DNNQ_REF_SPLIT_SCALES, dnnq_gemm_args_t,
    dnnq_postop_t, dnnq_gemm_block_fn,
    dnnq_gemm_ukr_fn,
    dnnq_gemm_block_for_isa, dnnq_gemm_ukr_for_isa, dnnq_gemm_mr_for_isa, dnnq_pack_b,
    dnnq_br_pair_t, dnnq_brgemm_ukr_fn, dnnq_brgemm_ukr_for_isa, dnnq_brgemm_mr_for_isa,
    dnnq_brgemm_ukr_n32_for_isa, dnnq_brgemm_ukr_n16_for_isa, DNNQ_AMX_BR_MR,
    dnnq_brgemm_amx_for, dnnq_amx_release, DNNQ_AMX_B_SLACK,
    dnnq_dst_lines_shared, dnnq_shares_init, dnnq_share_next, DNNQ_ROWS_OUTER_MAX_WEIGHTS,
    DNNQ_F32_MR, dnnq_br_pair_f32_t, dnnq_brgemm_f32_for_isa, dnnq_gemm_block_f32_for_isa,
    dnnq_pack_b_f32, DNNQ_MAX_POST, DNNQ_A_SWAP, DNNQ_A_SIGNED,
)

from dnnq.primitives._kernels._codes cimport (
    DNNQ_A_XOR_S8, DNNQ_ISA_AVX512_CORE_AMX, DNNQ_PO_ELTWISE, DNNQ_PO_BINARY, DNNQ_PO_SUM,
    DNNQ_PO_SELECT, DNNQ_ELT_RELU, DNNQ_ELT_LINEAR, DNNQ_ELT_GELU_TANH, DNNQ_ELT_GELU_ERF,
    DNNQ_ELT_CLIP, DNNQ_ELT_CLIP_V2, DNNQ_ELT_HARDSWISH, DNNQ_ELT_HARDSIGMOID, DNNQ_ELT_ROUND,
    DNNQ_BIN_ADD, DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_DIV, DNNQ_BIN_MIN, DNNQ_BIN_MAX,
)

import numpy as np

NR = DNNQ_NR
#: the largest f32 weights (bytes) for which the f32 GEMM and convolution plans run row blocks
#: outermost (each block's source rows reused by every column panel from the cache)
F32_ROWS_OUTER_MAX_WEIGHTS = 1 << 20
cdef bint _thread_shares_on = True


def set_thread_shares(bint on):
    """Whether plans with small weights on several threads run thread shares
    (GemmPlan.launch) or take their items as they come; returns the previous setting (tests
    and A/B timings; on by default)."""
    global _thread_shares_on
    old = _thread_shares_on
    _thread_shares_on = on
    return old


cdef class _Buffers:
    """The buffers of one kernel call, acquired (PyObject_GetBuffer) until the object dies:
    an exporter cannot free or move its memory while the kernel runs."""
    cdef Py_buffer views[24]
    cdef int n

    def __dealloc__(self):
        cdef int i
        for i in range(self.n):
            PyBuffer_Release(&self.views[i])

    cdef void* ptr(self, object arr, bint writable=False) except NULL:
        """Address of a C-contiguous buffer, held until this object is released."""
        if self.n == 24:
            raise ValueError("too many buffers for one call")
        PyObject_GetBuffer(arr, &self.views[self.n],
                           PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
        self.n += 1
        cdef void* p = self.views[self.n - 1].buf
        if p == NULL:  # zero-size buffers have no address; never dereferenced then
            return <void*>1
        return p


def packed_size(int64_t K, int64_t N):
    """Bytes of the packed layout of a (K, N) s8 matrix."""
    # + the AMX kernels' slack: their last B tile of a panel reads up to 15 k-group rows past
    # it (they meet zero source bytes)
    return ((N + DNNQ_NR - 1) // DNNQ_NR) * ((K + 3) // 4) * 4 * DNNQ_NR + DNNQ_AMX_B_SLACK


def pack_weights_vnni(w):
    """Pack s8 weights (K, N), any strides, into dnnq's VNNI layout.

    Returns (packed int8 1-D, colsum int32 (N,)). See ukernels/dnnq_kernels.h for the layout.
    (For the signed-source kernels the caller XORs the packed bytes with 0x80: u8 = w + 128.)
    """
    if w.dtype != np.int8 or w.ndim != 2:
        raise TypeError("pack_weights_vnni expects a 2-D int8 array")
    cdef int64_t K = w.shape[0], N = w.shape[1]
    cdef const int8_t[:, :] wv = w
    packed = np.zeros(packed_size(K, N), dtype=np.int8)  # the slack stays zero
    colsum = np.empty(N, dtype=np.int32)
    cdef int8_t[::1] pv = packed
    cdef int32_t[::1] cv = colsum
    if K == 0 or N == 0:
        packed[:] = 0
        colsum[:] = 0
        return packed, colsum
    with nogil:
        dnnq_pack_b(&wv[0, 0], wv.strides[0], wv.strides[1], K, N, &pv[0], &cv[0])
    return packed, colsum


def unpack_weights_vnni(packed, int64_t K, int64_t N):
    """The inverse of pack_weights_vnni: the (K, N) int8 matrix held by `packed` (1-D int8 of
    at least the packed body; pickling of packed weights)."""
    cdef int64_t K4 = (K + 3) // 4, P = (N + DNNQ_NR - 1) // DNNQ_NR
    body = np.asarray(packed)[:P * K4 * 4 * DNNQ_NR]
    if body.dtype != np.int8 or body.size != P * K4 * 4 * DNNQ_NR:
        raise ValueError("unpack_weights_vnni: packed buffer too small or not int8")
    w = body.reshape(P, K4, DNNQ_NR, 4).transpose(1, 3, 0, 2).reshape(K4 * 4, P * DNNQ_NR)
    return np.ascontiguousarray(w[:K, :N])


def packed_size_f32(int64_t K, int64_t N):
    """f32 elements of the packed layout of a (K, N) f32 matrix (ukernels/dnnq_f32.h)."""
    return ((N + DNNQ_NR - 1) // DNNQ_NR) * K * DNNQ_NR


def pack_weights_f32(w, out=None):
    """Pack f32 weights (K, N), any strides, into the f32 panel layout (ukernels/dnnq_f32.h):
    a 1-D f32 array of packed_size_f32(K, N) (written into `out` when given)."""
    if w.dtype != np.float32 or w.ndim != 2:
        raise TypeError("pack_weights_f32 expects a 2-D float32 array")
    cdef int64_t K = w.shape[0], N = w.shape[1]
    cdef int64_t isz = w.itemsize
    if out is None:
        out = np.empty(packed_size_f32(K, N), dtype=np.float32)
    cdef float[::1] pv = out
    if pv.shape[0] != packed_size_f32(K, N):
        raise ValueError("pack_weights_f32: out has the wrong size")
    if K == 0 or N == 0:
        return out
    cdef const float[:, :] wv = w
    with nogil:
        dnnq_pack_b_f32(&wv[0, 0], wv.strides[0] // isz, wv.strides[1] // isz, K, N, &pv[0])
    return out


def unpack_weights_f32(packed, int64_t K, int64_t N):
    """The inverse of pack_weights_f32: the (K, N) f32 matrix (pickling of packed weights)."""
    cdef int64_t P = (N + DNNQ_NR - 1) // DNNQ_NR
    body = np.asarray(packed)[:P * K * DNNQ_NR]
    w = body.reshape(P, K, DNNQ_NR).transpose(1, 0, 2).reshape(K, P * DNNQ_NR)
    return np.ascontiguousarray(w[:, :N])


def brgemm_f32_micro_kernel(int isa, const float[::1] base, list pairs, int nc,
                            bint accumulate, float[:, ::1] c):
    """Run the f32 batch-reduce micro-kernel once (tests): c (mr, 64) (+)= sum over the pairs,
    columns < nc.  base: one f32 buffer holding every A row; pairs: (row_offsets, dense,
    packed_panel, K) as brgemm_micro_kernel (offsets in elements), packed_panel K rows of 64
    f32.  Every row read is checked to lie inside base."""
    cdef int mr = c.shape[0]
    cdef int64_t npairs = len(pairs), i, r, off, lda, K
    if c.shape[1] != 64 or mr < 1 or mr > DNNQ_F32_MR or not 1 <= nc <= 64:
        raise ValueError("c must be (mr, 64) with 1 <= mr <= 6 and 1 <= nc <= 64")
    cdef dnnq_br_pair_f32_t* q = <dnnq_br_pair_f32_t*>malloc(
        sizeof(dnnq_br_pair_f32_t) * max(npairs, 1))
    cdef const float** rows = <const float**>malloc(sizeof(void*) * max(npairs, 1) * mr)
    cdef const float[::1] panel
    cdef const int64_t[::1] offs
    if q == NULL or rows == NULL:
        free(q); free(rows)
        raise MemoryError()
    keep = []
    try:
        for i in range(npairs):
            offsets, dense, packed, K = pairs[i]
            panel = packed
            keep.append(packed)
            if panel.shape[0] < K * 64:
                raise ValueError("packed panel too short for K")
            q[i].K = K
            q[i].b = &panel[0] if panel.shape[0] else NULL
            if offsets is None:
                off, lda = dense
                if off < 0 or lda < 0 or off + lda * (mr - 1) + K > base.shape[0]:
                    raise ValueError("dense A rows outside base")
                q[i].a = &base[0] + off
                q[i].lda = lda
                q[i].rows = NULL
            else:
                offs = offsets
                if offs.shape[0] != mr:
                    raise ValueError("one row offset per row")
                for r in range(mr):
                    if offs[r] < 0 or offs[r] + K > base.shape[0]:
                        raise ValueError("indirect A row outside base")
                    rows[i * mr + r] = &base[0] + offs[r]
                q[i].a = NULL
                q[i].lda = 0
                q[i].rows = rows + i * mr
        dnnq_brgemm_f32_for_isa(isa)(mr, nc, npairs, q, accumulate, &c[0, 0])
    finally:
        free(q)
        free(rows)


# dnnq_gemm_args_t.ref_numerics flags (DNNQ_REF_*, ukernels/dnnq_kernels.h)
REF_ORDER, REF_ZP, REF_SPLIT_SCALES = DNNQ_REF_ORDER, DNNQ_REF_ZP, DNNQ_REF_SPLIT_SCALES


def micro_kernel(int isa, a, packed, int64_t K, bint s8_src):
    """Run the raw micro-kernel on one panel: a (mr, K) u8/s8 rows -> (mr, 64) s32 (tests)."""
    cdef int mr = a.shape[0]
    if mr > dnnq_gemm_mr_for_isa(isa):
        raise ValueError("too many rows for the micro-kernel")
    out = np.zeros((mr, DNNQ_NR), dtype=np.int32)
    a = np.ascontiguousarray(a)
    cdef dnnq_gemm_ukr_fn fn = dnnq_gemm_ukr_for_isa(isa)
    cdef _Buffers bufs = _Buffers()
    fn(mr, K, <const uint8_t*>bufs.ptr(a), K, DNNQ_A_XOR_S8 if s8_src else 0,
       <const int8_t*>bufs.ptr(packed), <int32_t*>bufs.ptr(out, True))
    return out


def brgemm_rows(int isa):
    """The largest row count one batch-reduce micro-kernel call takes at this ISA level."""
    return dnnq_brgemm_mr_for_isa(isa)


def brgemm_micro_kernel(int isa, const uint8_t[::1] base, list pairs, bint s8_src,
                        bint accumulate, int32_t[:, ::1] c, int width=64, bint amx=False):
    """Run the batch-reduce micro-kernel once (tests): c (mr, 64) (+)= sum over the pairs.

    width 32 / 16: the narrow-panel kernel (dnnq_brgemm_ukr_n32 / _n16: only the first 32 /
    16 columns of c are defined afterwards); None is returned when the level has none.

    base: one u8 buffer holding every A row.  pairs: (row_offsets, dense, packed_panel, K):
    indirect A when row_offsets is an int64 array of mr byte offsets into base (dense is then
    ignored), dense A when row_offsets is None and dense = (offset, lda); packed_panel is one
    packed 64-column panel (int8, 1-D).  Every row read is checked to lie inside base here
    (the kernel itself trusts its pointers).

    amx: the AMX batch-reduce kernel of the tiled convolution path (dnnq_brgemm_amx_for; up to
    AMX_BR_ROWS rows; only where the CPU runs AMX tiles or their emulation is on): its B tiles
    read whole 64-byte k blocks, so the panel must hold ceil(K / 64) * 16 k groups.
    """
    cdef int mr = c.shape[0]
    cdef int64_t npairs = len(pairs), i, r, off, lda, K
    cdef int mr_cap = DNNQ_AMX_BR_MR if amx else dnnq_brgemm_mr_for_isa(isa)
    if c.shape[1] != 64 or mr < 1 or mr > mr_cap:
        raise ValueError("c must be (mr, 64) with 1 <= mr <= brgemm_rows(isa) (AMX_BR_ROWS)")
    cdef dnnq_brgemm_ukr_fn ukr = dnnq_brgemm_ukr_for_isa(isa)
    if amx:
        from dnnq.primitives._dispatch import cpu_info
        info = cpu_info()
        if not (info["amx_emulated"] or (info["amx_int8"] and info["os_grants_amx"])):
            raise ValueError("amx: the CPU runs no AMX tiles (nor their emulation)")
        if width not in (16, 32, 64):
            raise ValueError("width must be 64, 32 or 16")
        ukr = dnnq_brgemm_amx_for(width)
    elif width == 32:
        ukr = dnnq_brgemm_ukr_n32_for_isa(isa)
    elif width == 16:
        ukr = dnnq_brgemm_ukr_n16_for_isa(isa)
    elif width != 64:
        raise ValueError("width must be 64, 32 or 16")
    if ukr == NULL:
        return None
    cdef dnnq_br_pair_t* q = <dnnq_br_pair_t*>malloc(sizeof(dnnq_br_pair_t) * max(npairs, 1))
    cdef const uint8_t** rows = <const uint8_t**>malloc(sizeof(void*) * max(npairs, 1) * mr)
    cdef const int8_t[::1] panel
    cdef const int64_t[::1] offs
    if q == NULL or rows == NULL:
        free(q); free(rows)
        raise MemoryError()
    keep = []
    try:
        for i in range(npairs):
            offsets, dense, packed, K = pairs[i]
            panel = packed
            keep.append(packed)
            if panel.shape[0] < (((K + 63) // 64) * 16 if amx else (K + 3) // 4) * 256:
                raise ValueError("packed panel too short for K")
            q[i].K = K
            q[i].b = &panel[0] if panel.shape[0] else NULL
            if offsets is None:
                off, lda = dense
                if off < 0 or lda < 0 or off + lda * (mr - 1) + K > base.shape[0]:
                    raise ValueError("dense A rows outside base")
                q[i].a = &base[0] + off
                q[i].lda = lda
                q[i].rows = NULL
            else:
                offs = offsets
                if offs.shape[0] != mr:
                    raise ValueError("one row offset per row")
                for r in range(mr):
                    if offs[r] < 0 or offs[r] + K > base.shape[0]:
                        raise ValueError("indirect A row outside base")
                    rows[i * mr + r] = &base[0] + offs[r]
                q[i].a = NULL
                q[i].lda = 0
                q[i].rows = rows + i * mr
        ukr(mr, npairs, q, DNNQ_A_XOR_S8 if s8_src else 0, accumulate, &c[0, 0])
    finally:
        if amx:
            dnnq_amx_release()
        free(q)
        free(rows)
    return True


#: the most rows of one AMX batch-reduce call, and the bytes a B operand of the AMX kernels
#: must have readable past its last k group (ukernels/dnnq_kernels.h)
AMX_BR_ROWS = DNNQ_AMX_BR_MR
AMX_B_SLACK = DNNQ_AMX_B_SLACK


def micro_kernel_rows(int isa):
    return dnnq_gemm_mr_for_isa(isa)


# The post-op chains each ISA's fused (intrinsics) epilogue takes, decided here once for every
# primitive that fills a dnnq_gemm_args_t (GEMM, convolution): the kernels trust the flags.
# AVX2 / AVX-VNNI: relu and linear.  AVX-512 (epilogue_avx512.h): those, the clips, the hard
# sigmoid / swish, the GELUs, round (a QuantizeLinear -> DequantizeLinear pair inside a fused
# ONNX chain is linear, round, clip, linear), sum, and binary add / sub / mul / div / min / max
# whose input is the same for every row (a per-channel scale and shift: a BatchNormalization
# after a rounding pair) -- the executors clear the flag for one that varies along the rows.
_FAST_ELTWISE = frozenset((DNNQ_ELT_RELU, DNNQ_ELT_LINEAR))
_FAST_ELTWISE_AVX512 = _FAST_ELTWISE | frozenset((
    DNNQ_ELT_GELU_TANH, DNNQ_ELT_GELU_ERF, DNNQ_ELT_CLIP, DNNQ_ELT_CLIP_V2, DNNQ_ELT_HARDSWISH,
    DNNQ_ELT_HARDSIGMOID, DNNQ_ELT_ROUND))

_FUSED_BINARY = frozenset((DNNQ_BIN_ADD, DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_DIV, DNNQ_BIN_MIN,
                           DNNQ_BIN_MAX))


def fused_epilogue_flags(post_ops):
    """(fast_epi, fast_epi_sum) of dnnq_gemm_args_t for `post_ops`, a sequence of (kind, alg,
    alpha, beta): whether every post-op is one the fused epilogues of the AVX2 levels, and of
    the AVX-512 levels, compute."""
    fast = all(k == DNNQ_PO_ELTWISE and alg in _FAST_ELTWISE for k, alg, _, _ in post_ops)
    fast512 = all((k == DNNQ_PO_ELTWISE and alg in _FAST_ELTWISE_AVX512) or k == DNNQ_PO_SUM or
                  (k == DNNQ_PO_BINARY and alg in _FUSED_BINARY)
                  for k, alg, _, _ in post_ops)
    return fast, fast512


cdef class GemmPlan:
    """Everything fixed at primitive creation: shapes, ISA, dst type, post-op kinds.

    `execute` (C level, see _gemm.pxd) is the one executor; `run` is its Python face for
    callers holding arrays (the raw s32 product, tests, convolution's checked 1x1 path).
    """
    def __cinit__(self):
        self.post = NULL

    def __dealloc__(self):
        free(self.post)

    def __init__(self, int isa, int64_t batch, int64_t M, int64_t N, int64_t K, int dst_dt,
                 list post_ops, bint swap_s8=False, bint signed_s8=False,
                 int ref_numerics=0, bint f32=False):
        """post_ops: list of (kind, alg, alpha, beta) with kind a DNNQ_PO_* code (alg of a
        select post-op: the comparison's DNNQ_BIN_* code).  swap_s8 / signed_s8: how an s8
        source is multiplied (dnnq.primitives._impls: the VNNI swap, AMX's signed tiles;
        neither: XOR to u8).  ref_numerics: 0, or DNNQ_REF_* flags (REF_ORDER, REF_ZP,
        REF_SPLIT_SCALES): the epilogue in the order of oneDNN's reference kernels.  f32: an f32
        source and f32 weights packed by pack_weights_f32 (ukernels/dnnq_f32.h; a and b f32, their
        strides in elements)."""
        cdef int i
        memset(&self.g, 0, sizeof(dnnq_gemm_args_t))
        self.isa = isa
        self.swap_s8 = swap_s8
        self.signed_s8 = signed_s8
        if signed_s8 and isa != DNNQ_ISA_AVX512_CORE_AMX:
            raise ValueError("signed_s8 needs the AMX kernels (tdpbssd)")
        if swap_s8 and signed_s8:
            raise ValueError("swap_s8 and signed_s8 exclude each other")
        # s8 sources: the signed-operand kernels (weights packed as w + 128) where the ISA has
        # them, else a XOR to u8 per broadcast
        self.a_xor_s8 = DNNQ_A_SWAP if swap_s8 else DNNQ_A_SIGNED if signed_s8 else DNNQ_A_XOR_S8
        self.f32 = f32
        if f32 and (swap_s8 or signed_s8 or ref_numerics):
            raise ValueError("an f32 plan has no s8 source or reference order")
        if len(post_ops) > DNNQ_MAX_POST:
            raise ValueError(f"at most {DNNQ_MAX_POST} post-ops")
        self.block = dnnq_gemm_block_f32_for_isa(isa) if f32 else dnnq_gemm_block_for_isa(isa)
        self.batch, self.M, self.N, self.K = batch, M, N, K
        self.g.M, self.g.N, self.g.K = M, N, K
        self.g.K4 = (K + 3) // 4
        self.g.n_panels = (N + DNNQ_NR - 1) // DNNQ_NR
        self.g.dst_dt = dst_dt
        self.g.ref_numerics = ref_numerics
        mr = DNNQ_F32_MR if f32 else dnnq_gemm_mr_for_isa(isa)
        # row block: a few micro-tiles, so that small M still gives every thread work; 16
        # when that still leaves 16 items (the epilogue is prepared once per block: 1 - 2 %
        # of the 1x1 convolutions at 8)
        self.mc = mr * 8
        if batch * ((N + DNNQ_NR - 1) // DNNQ_NR) * -(-M // (mr * 16)) >= 16:
            self.mc = mr * 16
        self.n_mblocks = (M + self.mc - 1) // self.mc
        # AMX: row blocks outermost, so that a thread keeps its block of A in L2 while the
        # weight panels stream past (at AMX speed the A traffic of panel-outer order saturates
        # the shared cache); the VNNI kernels gain nothing from it
        self.m_outer = isa == DNNQ_ISA_AVX512_CORE_AMX and not f32
        # f32: row blocks outermost while the weights (4 bytes each) fit in L2: a block's
        # rows of A then serve every panel from the cache instead of streaming all of A once
        # per panel (the 1x1 expand layers of ResNet-50 at batch 8: 64 -> 256 and 128 -> 512
        # channels, 25088 rows)
        if f32 and K * N * 4 <= F32_ROWS_OUTER_MAX_WEIGHTS:
            self.m_outer = True
        self.min_work_per_thread = 1 << 17
        self.g.fast_epi, self.g.fast_epi_sum = fused_epilogue_flags(post_ops)
        if ref_numerics:  # oneDNN's reference-kernel order: the row epilogue only
            self.g.fast_epi = self.g.fast_epi_sum = 0
        self.g.n_post = len(post_ops)
        if self.g.n_post:
            self.post = <dnnq_postop_t*>malloc(sizeof(dnnq_postop_t) * self.g.n_post)
            if self.post == NULL:
                raise MemoryError()
            memset(self.post, 0, sizeof(dnnq_postop_t) * self.g.n_post)
            for i, (kind, alg, alpha, beta) in enumerate(post_ops):
                self.post[i].kind = kind
                self.post[i].alg = alg
                self.post[i].alpha = alpha
                self.post[i].beta = beta
            self.g.post = self.post

    def run(self, a, int64_t a_sb, int64_t a_sm, bint s8_src,
            packed, int64_t b_sb,
            col_comp, int64_t c_sb,
            wzp, int64_t wzp_sn, rowsum, int64_t r_sb,
            bint raw_s32, float src_scale, scale, int64_t scale_sn,
            bias, int64_t bias_sb, int64_t bias_sm, int64_t bias_sn,
            list src1s,
            float dst_scale, dst_zp, int64_t dst_zp_sn,
            dst, int64_t d_sb, int64_t d_sm, int nthreads):
        """One execution through `execute`. Every array is C-contiguous and outlives the call;
        strides in elements.  src_scale / dst_scale are f32 values (1 when absent), scale the
        weights scales.

        src1s: one (array_f32, s_b, s_m, s_n) per binary post-op, one (cond_f32, s_b, s_m, s_n,
        value_f32, s_b, s_m, s_n) per select post-op, None for the others.
        """
        cdef gemm_operands_t op
        cdef gemm_post_input_t post_in[DNNQ_MAX_POST]
        cdef _Buffers bufs = _Buffers()  # every array stays acquired until the kernel returns
        cdef int i
        memset(&op, 0, sizeof(op))
        memset(post_in, 0, sizeof(gemm_post_input_t) * self.g.n_post)
        op.post_in = post_in
        op.a = bufs.ptr(a)
        op.a_sb, op.a_sm, op.s8_src = a_sb, a_sm, s8_src
        op.b = bufs.ptr(packed)
        op.b_sb = b_sb
        op.col_comp = <const int32_t*>bufs.ptr(col_comp)
        op.c_sb = c_sb
        if wzp is not None:
            op.wzp = <const int32_t*>bufs.ptr(wzp)
            op.wzp_sn = wzp_sn
            op.rowsum = <const int32_t*>bufs.ptr(rowsum)
            op.r_sb = r_sb
        op.raw_s32 = raw_s32
        op.src_scale = src_scale
        op.scale = <const float*>bufs.ptr(scale)
        op.scale_sn = scale_sn
        if bias is not None:
            op.bias = <const float*>bufs.ptr(bias)
            op.bias_sb, op.bias_sm, op.bias_sn = bias_sb, bias_sm, bias_sn
        for i in range(self.g.n_post):
            s = src1s[i]
            if s is not None:
                post_in[i].src1 = <const float*>bufs.ptr(s[0])
                post_in[i].s1[0], post_in[i].s1[1], post_in[i].s1[2] = s[1], s[2], s[3]
                if len(s) > 4:
                    post_in[i].src2 = <const float*>bufs.ptr(s[4])
                    post_in[i].s2[0], post_in[i].s2[1], post_in[i].s2[2] = s[5], s[6], s[7]
        op.dst_scale = dst_scale
        if dst_zp is not None:
            op.dst_zp = <const int32_t*>bufs.ptr(dst_zp)
            op.dst_zp_sn = dst_zp_sn
        op.dst = bufs.ptr(dst, True)
        op.d_sb, op.d_sm = d_sb, d_sm
        self.execute(&op, nthreads)

    cdef int execute(self, const gemm_operands_t* op, int nthreads) except -1:
        """The one executor: the C argument struct from the plan and the checked operands of
        one execution, then the kernel launched with the GIL released."""
        cdef dnnq_gemm_args_t g = self.g
        cdef int i
        cdef const gemm_post_input_t* pin
        # the post-op table is copied per call: binary inputs differ between concurrent
        # executions of one primitive from several Python threads
        cdef dnnq_postop_t local_post[DNNQ_MAX_POST]
        for i in range(g.n_post):
            local_post[i] = self.post[i]
            if op.post_in == NULL:
                continue
            pin = &op.post_in[i]
            if pin.src1 != NULL:
                local_post[i].src1 = pin.src1
                local_post[i].s1_b, local_post[i].s1_m, local_post[i].s1_n = \
                    pin.s1[0], pin.s1[1], pin.s1[2]
            if pin.src2 != NULL:
                local_post[i].src2 = pin.src2
                local_post[i].s2_b, local_post[i].s2_m, local_post[i].s2_n = \
                    pin.s2[0], pin.s2[1], pin.s2[2]
            if (local_post[i].kind == DNNQ_PO_BINARY and local_post[i].src1 == NULL) or \
                    (local_post[i].kind == DNNQ_PO_SELECT and local_post[i].src2 == NULL):
                raise ValueError(f"GemmPlan.execute: post-op {i} has no input array")
            if local_post[i].kind == DNNQ_PO_BINARY and (local_post[i].s1_m != 0 or
                                                         local_post[i].s1_n > 1):
                g.fast_epi_sum = 0  # the fused epilogues take inputs the same for every row
        g.post = local_post
        g.a = <const uint8_t*>op.a
        g.a_sb, g.a_sm = op.a_sb, op.a_sm
        g.a_xor = self.a_xor_s8 if op.s8_src and not self.f32 else 0
        g.b = <const int8_t*>op.b
        g.b_sb = op.b_sb
        g.col_comp = op.col_comp
        g.c_sb = op.c_sb
        g.wzp, g.wzp_sn = op.wzp, op.wzp_sn
        g.rowsum, g.r_sb = op.rowsum, op.r_sb
        g.raw_s32 = op.raw_s32
        g.src_scale = op.src_scale
        g.scale, g.scale_sn = op.scale, op.scale_sn
        g.bias = op.bias
        g.bias_sb, g.bias_sm, g.bias_sn = op.bias_sb, op.bias_sm, op.bias_sn
        # the fused epilogues take per-column vectors only: decided here, once per execution
        # (gemm_impl.h's dnnq_fast_epi_ok trusts the flags; a weights zero point's per-row
        # term is taken out of the tile before them, gemm_impl.h dnnq_tile_sub_wzp)
        if op.bias != NULL and (op.bias_sb != 0 or op.bias_sm != 0):
            g.fast_epi = g.fast_epi_sum = 0
        # f32 reciprocal, then a multiply in the epilogue: what oneDNN does (not a division)
        g.inv_dst_scale = <float>1.0 / op.dst_scale
        g.dst_zp, g.dst_zp_sn = op.dst_zp, op.dst_zp_sn
        g.dst = op.dst
        g.d_sb, g.d_sm = op.d_sb, op.d_sm
        with nogil:
            self.launch(&g, nthreads)
        return 0

    cdef void launch(self, const dnnq_gemm_args_t* g, int nthreads) noexcept nogil:
        """The parallel loop over (batch, column panel, row block) items of a filled g."""
        cdef int64_t nmb = self.n_mblocks, npan = g.n_panels, mc = self.mc, M = self.M
        cdef int64_t nitems = self.batch * npan * nmb
        cdef int64_t it
        cdef dnnq_gemm_block_fn fn = self.block
        cdef bint m_outer = self.m_outer
        cdef uint64_t shares[64]
        cdef int t, k
        if nitems <= 0:
            return
        # small problems stay on one thread: a fork/join costs more than they do
        cdef int64_t work = self.batch * M * g.N * g.K
        if work < self.min_work_per_thread * 2 or nitems == 1:
            nthreads = 1
        if nthreads == 1:
            # no parallel region at all: even a one-thread OpenMP team costs microseconds
            for it in range(nitems):
                _run_item(fn, g, it, npan, nmb, mc, M, m_outer)
            return
        # threads on row blocks where destination rows share cache lines between panels
        # (numpy puts large arrays 16 bytes past a line) and the weights are small enough for
        # every thread to read them all (256 KiB): with threads on panels, their 64-byte
        # stores met in the same lines (ResNet-50's 64 -> 256 1x1 at 2 threads: 285 against
        # 158 us); larger weights keep the panel split (every thread reading all of them
        # cost its 1024 -> 2048 1x1 10 %, where the shared lines cost nothing measurable)
        cdef bint shared = dnnq_dst_lines_shared(g.dst, g.d_sm, g.dst_dt, g.raw_s32)
        cdef bint small = g.K * g.N * (4 if self.f32 else 1) <= DNNQ_ROWS_OUTER_MAX_WEIGHTS
        if small and shared:
            m_outer = True
        if small and _thread_shares_on and nthreads <= 64 and nitems < (<int64_t>1 << 31):
            # thread shares, rows outermost (dnnq_shares_init): each thread a band of rows,
            # the same on every call, which the layers before and after it (convolutions run
            # the same way) keep in its core's cache
            dnnq_shares_init(shares, nitems, nthreads)
            for t in prange(nthreads, schedule='static', num_threads=nthreads):
                k = 0
                it = dnnq_share_next(shares, t, nthreads, &k)
                while it >= 0:
                    _run_item(fn, g, it, npan, nmb, mc, M, True)
                    it = dnnq_share_next(shares, t, nthreads, &k)
            return
        # items taken in runs of neighbours (about four runs per thread) where destination
        # rows share lines between panels: one item at a time, the threads took alternate
        # panels and wrote into every line together (PP-OCRv4 rec's 120 -> 6625 head at 2
        # threads: 1.2x its one-thread speed); whole runs keep the dynamic balance
        # (rows outermost with one row block is the same panel order: runs too)
        cdef int64_t chunk = (max(1, nitems // (4 * nthreads))
                              if shared and (not m_outer or nmb == 1) else 1)
        for it in prange(nitems, schedule='dynamic', chunksize=chunk, num_threads=nthreads):
            _run_item(fn, g, it, npan, nmb, mc, M, m_outer)


cdef inline void _run_item(dnnq_gemm_block_fn fn, const dnnq_gemm_args_t* g, int64_t it,
                           int64_t npan, int64_t nmb, int64_t mc, int64_t M,
                           bint m_outer) noexcept nogil:
    """Work item `it`: (batch, column panel, row block), row blocks outermost for AMX.  The
    nmb = ceil(M / mc) blocks share the rows evenly (M = 49: 25 + 24, not 48 + 1: a one-row
    block streams the whole panel of B for one row)."""
    cdef int64_t b = it // (npan * nmb), p, mb, m0
    if m_outer:
        mb = (it // npan) % nmb
        p = it % npan
    else:
        p = (it // nmb) % npan
        mb = it % nmb
    m0 = M * mb // nmb
    fn(g, b, m0, M * (mb + 1) // nmb - m0, p)


def all_finite_positive(const float[::1] x):
    """True when every value is finite and > 0 (NaN fails): the fast check of runtime scales."""
    cdef Py_ssize_t i
    cdef float v
    cdef bint ok = True
    with nogil:
        for i in range(x.shape[0]):
            v = x[i]
            if not (v > 0.0 and v < <float>3.4028234663852886e38 * <float>2.0):
                ok = False
                break
    return ok
