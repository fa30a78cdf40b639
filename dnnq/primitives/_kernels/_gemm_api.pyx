"""dnnq.gemm_u8s8s32 / gemm_s8s8s32 execution: pack B, raw s32 GEMM per K block, finish in C.

dnnq/primitives/gemm.py validates the arguments and asks dnnq/primitives/_gemm_kplan.py for
oneDNN's K blocks; `run` does the rest without the GIL: op(A) made row-contiguous when it is
not, each block's rows of op(B) packed 6 panels at a time (in parallel, gemm_api*.c's
packers) and multiplied by the raw s32 GEMM (GemmPlan.launch), then the block's offsets,
alpha / beta rounding and co (ukernels/gemm_api.c).
"""
from libc.stdint cimport int8_t, uint8_t, int32_t, uint32_t, int64_t
from libc.string cimport memset
from cython.parallel cimport prange
import threading

import numpy as np

from dnnq.primitives._kernels._kernels cimport (
    DNNQ_NR, dnnq_gemm_args_t, dnnq_gemm_block_fn, DNNQ_A_SIGNED,
)
from dnnq.primitives._kernels._codes cimport DNNQ_A_XOR_S8, DNNQ_ISA_AVX512_CORE_AMX
from dnnq.primitives._kernels._gemm cimport GemmPlan

cdef extern from "gemm_api.h" nogil:
    ctypedef struct dnnq_gemm_api_block_t:
        int64_t N
        const int32_t *acc
        int64_t ld_acc
        const int32_t *colterm
        const int32_t *rowterm
        int rounded, has_prev
        double alpha, beta_eff
        const int32_t *prev
        int32_t *out
        int64_t ld_c
        const int32_t *co
        int co_mode
        int accumulate_out

    void dnnq_gemm_api_pack_panel(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K,
                                  int64_t nc, int8_t *packed, int32_t *colsum)
    ctypedef void (*dnnq_gemm_api_pack_fn)(const int8_t *w, int64_t s_k, int64_t s_n,
                                           int64_t K, int64_t nc, int8_t *packed,
                                           int32_t *colsum)
    dnnq_gemm_api_pack_fn dnnq_gemm_api_pack_for_isa(int isa)
    void dnnq_gemm_api_finish(const dnnq_gemm_api_block_t *blk, int64_t m0, int64_t m1)
    void dnnq_gemm_api_rowsum(const uint8_t *a, int64_t lda, int64_t K, int is_s8, int64_t m0,
                              int64_t m1, int32_t *rowsum)
    void dnnq_gemm_api_gather(const uint8_t *src, int64_t s_m, int64_t s_k, int64_t K,
                              int64_t m0, int64_t m1, uint8_t *dst)

# A and B values per thread below which a pass stays on one thread (a fork costs microseconds)
cdef int64_t _PAR_MIN = 1 << 16
# rows per finishing / gathering task
cdef int64_t _ROWS = 16
# 64-column panels of B packed and multiplied at a time (oneDNN's int8 GEMM: 384 columns)
cdef enum:
    _CHUNK_PANELS = 6


cdef inline int _threads(int64_t work, int nthreads) noexcept nogil:
    return 1 if work < _PAR_MIN * 2 else nthreads


cdef void _pack_and_launch(GemmPlan plan, dnnq_gemm_args_t *g, const int8_t *b,
                           int64_t s_k, int64_t s_n, int64_t k0, int64_t kb, int64_t M,
                           int64_t N, int8_t *packed, int32_t *colsum, int32_t *comp,
                           bint s8_comp, int nthreads) noexcept nogil:
    """The raw GEMM of K rows [k0, k0 + kb) of op(B) (element strides s_k, s_n), packed one
    64-column panel at a time.  VNNI levels: one parallel loop over panels, each thread packs
    a panel and multiplies it by every row block of A while it is in its cache (no barrier
    between packing and multiplying).  AMX, whose driver wants row blocks outermost
    (GemmPlan.m_outer): chunks of _CHUNK_PANELS panels packed in parallel, then
    GemmPlan.launch on the chunk, as oneDNN's GEMM copies B in blocks of 384 columns.
    comp: the raw GEMM's column compensation, -128 * colsum for an s8 A made u8.  g: the
    block's arguments; b, N, col_comp and dst are set here."""
    cdef int64_t K4 = (kb + 3) // 4, npan = (N + DNNQ_NR - 1) // DNNQ_NR, p, nc, n, c0, cpan
    cdef int32_t *dst = <int32_t*>g.dst
    cdef int nt
    cdef dnnq_gemm_api_pack_fn pack = dnnq_gemm_api_pack_for_isa(plan.isa)
    cdef int64_t mc = plan.mc, m0
    cdef dnnq_gemm_block_fn fn = plan.block
    cdef int64_t held = npan if npan < _CHUNK_PANELS or not plan.m_outer else _CHUNK_PANELS
    # AMX reads up to 15 k groups past a panel's end (against zero A bytes): keep them zero
    memset(packed + held * K4 * 4 * DNNQ_NR, 0, 16 * 4 * DNNQ_NR)
    if not plan.m_outer:
        g.b = packed
        nt = 1 if M * N * kb < 2 * plan.min_work_per_thread or npan == 1 else nthreads
        for p in prange(npan, schedule='static', num_threads=nt):
            nc = N - p * DNNQ_NR
            if nc > DNNQ_NR:
                nc = DNNQ_NR
            pack(b + k0 * s_k + p * DNNQ_NR * s_n, s_k, s_n, kb, nc,
                 packed + p * K4 * 4 * DNNQ_NR, colsum + p * DNNQ_NR)
            for n in range(p * DNNQ_NR, p * DNNQ_NR + nc):
                comp[n] = <int32_t>(0u - 128u * <uint32_t>colsum[n]) if s8_comp else 0
            m0 = 0
            while m0 < M:
                fn(g, 0, m0, mc if M - m0 > mc else M - m0, p)
                m0 = m0 + mc
        return
    c0 = 0
    while c0 < npan:
        cpan = npan - c0 if npan - c0 < _CHUNK_PANELS else _CHUNK_PANELS
        nt = 1 if kb * cpan * DNNQ_NR < 2 * _PAR_MIN or cpan == 1 else nthreads
        for p in prange(cpan, schedule='static', num_threads=nt):
            nc = N - (c0 + p) * DNNQ_NR
            if nc > DNNQ_NR:
                nc = DNNQ_NR
            pack(b + k0 * s_k + (c0 + p) * DNNQ_NR * s_n, s_k, s_n, kb, nc,
                 packed + p * K4 * 4 * DNNQ_NR, colsum + (c0 + p) * DNNQ_NR)
            for n in range((c0 + p) * DNNQ_NR, (c0 + p) * DNNQ_NR + nc):
                comp[n] = <int32_t>(0u - 128u * <uint32_t>colsum[n]) if s8_comp else 0
        g.b = packed
        g.N = N - c0 * DNNQ_NR if N - c0 * DNNQ_NR < cpan * DNNQ_NR else cpan * DNNQ_NR
        g.n_panels = cpan
        g.col_comp = comp + c0 * DNNQ_NR
        g.dst = dst + c0 * DNNQ_NR
        plan.launch(g, nthreads)
        c0 = c0 + cpan


cdef void _finish(dnnq_gemm_api_block_t *blk, int64_t M, int nthreads) noexcept nogil:
    cdef int64_t ntask = (M + _ROWS - 1) // _ROWS, t, m1
    cdef int nt = _threads(M * blk.N, nthreads)
    for t in prange(ntask, schedule='static', num_threads=nt):
        m1 = (t + 1) * _ROWS
        dnnq_gemm_api_finish(blk, t * _ROWS, m1 if m1 < M else M)


def run(a, b, int32_t[:, ::1] out, bint s8_src, bint has_c, float alpha, float beta,
        int32_t ao, int32_t bo, const int32_t[::1] co, int co_mode, list plan,
        int kernel_isa, int dst_s32, int nthreads):
    """C = oneDNN's alpha * (op(A) - ao)(op(B) - bo) + beta * C + co into `out` (M, N).

    a: op(A) as an (M, K) uint8 view (s8 bytes when s8_src; any strides); b: op(B) as a
    (K, N) int8 view (any strides); out holds C on entry when has_c.  plan: the K slices of
    _gemm_kplan.k_plan.  kernel_isa: the level whose GEMM kernel runs (AMX multiplies an s8 A
    as signed); dst_s32: the s32 destination code of GemmPlan.
    """
    cdef const uint8_t[:, :] av = a
    cdef const int8_t[:, :] bv = b
    cdef int64_t M = av.shape[0], K = av.shape[1], N = bv.shape[1]
    if bv.shape[0] != K or out.shape[0] != M or out.shape[1] != N:
        raise ValueError("gemm run: inconsistent shapes")
    if M == 0 or N == 0 or K == 0:
        return
    cdef int64_t max_kb = 0, i, j, k0, k1, kb, npan = (N + DNNQ_NR - 1) // DNNQ_NR
    cdef int nslices = len(plan), s, nblocks, rounded
    for blocks in plan:
        for k0, k1, rounded in blocks:
            max_kb = max(max_kb, k1 - k0)
    cdef bint signed_s8 = s8_src and kernel_isa == DNNQ_ISA_AVX512_CORE_AMX
    # one GemmPlan per block length (at most three different ones)
    plans = {}
    for blocks in plan:
        for k0, k1, rounded in blocks:
            if k1 - k0 not in plans:
                plans[k1 - k0] = GemmPlan(kernel_isa, 1, M, N, k1 - k0, dst_s32, [],
                                          signed_s8=signed_s8)
    # the GEMM writes straight into out when out is its own C afterwards: one integer block
    # that does not read C (the common alpha = 1, beta = 0 call)
    cdef bint direct = (nslices == 1 and len(plan[0]) == 1 and not plan[0][0][2]
                        and beta == 0.0)
    cdef int64_t s_am = av.strides[0], s_ak = av.strides[1]
    cdef int64_t s_bk = bv.strides[0], s_bn = bv.strides[1]
    cdef const uint8_t *a0 = &av[0, 0]
    cdef const int8_t *b0 = &bv[0, 0]
    cdef int64_t lda = s_am
    # all panels for the per-panel loop, one chunk for AMX's (see _pack_and_launch)
    cdef int64_t packed_bytes = ((min(npan, _CHUNK_PANELS) if kernel_isa == DNNQ_ISA_AVX512_CORE_AMX
                                  else npan) * ((max_kb + 3) // 4) * 4 * DNNQ_NR
                                 + 16 * 4 * DNNQ_NR)
    cdef bint need_gather = s_ak != 1
    # scratch, 64-byte aligned pieces of one workspace (each 64-byte row of a packed panel is
    # then one cache line for the kernel's loads)
    cdef int64_t sizes[7]
    sizes[0] = packed_bytes
    sizes[1] = 4 * npan * DNNQ_NR                      # colsum
    sizes[2] = 4 * N                                   # colterm
    sizes[3] = 4 * M if bo != 0 else 0                 # rowterm
    sizes[4] = 4 * M * N if not direct else 0          # acc
    sizes[5] = 4 * M * N if nslices > 1 else 0         # part: the running K slice
    sizes[6] = M * K if need_gather else 0             # a_rows: op(A) made row-contiguous
    cdef int64_t offs[7]
    cdef int64_t total = 0
    for i in range(7):
        offs[i] = total
        total += (sizes[i] + 63) // 64 * 64
    ws, lock = _workspace(total)
    cdef uint8_t[::1] wv = ws
    cdef uint8_t *base = &wv[0]
    base += (64 - <size_t>base % 64) % 64
    cdef int8_t *packed = <int8_t*>(base + offs[0])
    cdef int32_t *colsum = <int32_t*>(base + offs[1])
    cdef int32_t *colterm = <int32_t*>(base + offs[2])
    cdef int32_t *rowterm = <int32_t*>(base + offs[3]) if sizes[3] else NULL
    cdef int32_t *acc = <int32_t*>(base + offs[4]) if sizes[4] else NULL
    cdef int32_t *part = <int32_t*>(base + offs[5]) if sizes[5] else NULL
    cdef uint8_t *a_rows = base + offs[6]
    try:
        if need_gather:
            with nogil:
                _gather(a0, s_am, s_ak, M, K, a_rows, nthreads)
            a0 = a_rows
            lda = K
        for s in range(nslices):
            blocks = plan[s]
            nblocks = len(blocks)
            for j in range(nblocks):
                k0, k1, rounded = blocks[j]
                _block(<GemmPlan>plans[k1 - k0], a0, lda, b0, s_bk, s_bn, k0, k1, M, N,
                       s8_src, signed_s8, packed, colsum, colterm, rowterm,
                       out, acc, part, direct, s, j, j == nblocks - 1, rounded, has_c,
                       alpha, beta, ao, bo, &co[0], co_mode, nthreads)
    finally:
        if lock is not None:
            lock.release()


# One workspace kept between calls (fresh pages cost a page fault each, as much as the
# packing itself on a 128x768x3072 problem); a call that finds it busy (another Python
# thread inside gemm) or needs more than _KEEP bytes uses a workspace of its own.
_KEEP = 64 << 20
_ws_lock = threading.Lock()
_ws = np.empty(0, np.uint8)


def _workspace(int64_t nbytes):
    """(uint8 array of at least nbytes + 64, the lock to release or None)."""
    global _ws
    if nbytes + 64 <= _KEEP and _ws_lock.acquire(blocking=False):
        if _ws.shape[0] < nbytes + 64:
            _ws = np.empty(nbytes + 64, np.uint8)
        return _ws, _ws_lock
    return np.empty(nbytes + 64, np.uint8), None


cdef void _gather(const uint8_t *a, int64_t s_m, int64_t s_k, int64_t M, int64_t K,
                  uint8_t *dst, int nthreads) noexcept nogil:
    cdef int64_t ntask = (M + _ROWS - 1) // _ROWS, t, m1
    cdef int nt = _threads(M * K, nthreads)
    for t in prange(ntask, schedule='static', num_threads=nt):
        m1 = (t + 1) * _ROWS
        dnnq_gemm_api_gather(a, s_m, s_k, K, t * _ROWS, m1 if m1 < M else M, dst)


cdef void _block(GemmPlan plan, const uint8_t *a, int64_t lda, const int8_t *b, int64_t s_bk,
                 int64_t s_bn, int64_t k0, int64_t k1, int64_t M, int64_t N, bint s8_src,
                 bint signed_s8, int8_t *packed, int32_t *colsum, int32_t *colterm,
                 int32_t *rowterm, int32_t[:, ::1] out, int32_t *acc, int32_t *part,
                 bint direct, int s, int64_t j, bint last, bint rounded, bint has_c,
                 float alpha, float beta, int32_t ao, int32_t bo, const int32_t *co,
                 int co_mode, int nthreads) except *:
    """One K block [k0, k1) of K slice s: pack, raw GEMM, finish."""
    cdef int64_t kb = k1 - k0, n, m0, t, ntask
    cdef dnnq_gemm_args_t g = plan.g
    cdef dnnq_gemm_api_block_t blk
    cdef int32_t *dst = &out[0, 0] if direct else acc
    cdef uint32_t kab = <uint32_t>kb * <uint32_t>ao * <uint32_t>bo
    cdef bint first = j == 0
    cdef float one = 1.0
    with nogil:
        g.a = a + k0
        g.a_sb = 0
        g.a_sm = lda
        # s8 A on the VNNI levels: XORed to u8 (+128) in the kernel, -128 * colsum undoes it
        g.a_xor = (DNNQ_A_SIGNED if signed_s8 else DNNQ_A_XOR_S8) if s8_src else 0
        g.b = packed
        g.b_sb = 0
        g.col_comp = colterm
        g.c_sb = 0
        g.raw_s32 = 1
        g.src_scale = 1.0
        g.scale = &one
        g.scale_sn = 0
        g.dst = dst
        g.d_sb = 0
        g.d_sm = N
        _pack_and_launch(plan, &g, b, s_bk, s_bn, k0, kb, M, N, packed, colsum, colterm,
                           s8_src and not signed_s8, nthreads)
        # then the block's offset terms
        for n in range(N):
            colterm[n] = <int32_t>(kab - <uint32_t>ao * <uint32_t>colsum[n])
        if bo != 0:
            ntask = (M + _ROWS - 1) // _ROWS
            for t in prange(ntask, schedule='static', num_threads=_threads(M * kb, nthreads)):
                m0 = t * _ROWS
                dnnq_gemm_api_rowsum(a + k0, lda, kb, s8_src, m0,
                                     m0 + _ROWS if m0 + _ROWS < M else M, rowterm)
            for t in range(M):
                rowterm[t] = <int32_t>(0u - <uint32_t>bo * <uint32_t>rowterm[t])
        blk.N = N
        blk.acc = dst
        blk.ld_acc = N
        blk.colterm = colterm if (ao != 0 or bo != 0) else NULL
        blk.rowterm = rowterm if bo != 0 else NULL
        blk.rounded = rounded
        blk.alpha = alpha
        blk.beta_eff = (beta if s == 0 else 0.0) if first else 1.0
        blk.has_prev = blk.beta_eff != 0.0 and (s > 0 or has_c or not first)
        blk.ld_c = N
        # slice 0 runs in out; later slices in part, added to out after their last block
        blk.out = &out[0, 0] if s == 0 else part
        blk.prev = blk.out
        blk.accumulate_out = 0
        blk.co = co if (last and s == 0) else NULL
        blk.co_mode = co_mode
        if last and s > 0:
            blk.accumulate_out = 1
            blk.out = &out[0, 0]
        if direct and blk.colterm == NULL and blk.rowterm == NULL and \
                (blk.co == NULL or (co_mode == 0 and co[0] == 0)):
            return  # the GEMM already wrote the final C
        _finish(&blk, M, nthreads)


def pack_vnni_batch(w, packed, colsum, int64_t batch_stride, int isa=0):
    """s8 weights (batch, K, N), any strides, packed into `packed` (1-D int8 of batch blocks
    of `batch_stride` bytes, dnnq_kernels.h's layout; each block's slack after the packed
    body zeroed) with their column sums `colsum` (int32 (batch, N)), one 64-column panel at
    a time by the panel packer (4-byte k runs of a transposed B, 4-row groups of a row-major
    one):
    run-time weights are packed on every call (attention's K^T and V: 8 x 15 x 60 bytes in
    ~10 us element by element). `isa`: the level whose packer runs (DNNQ_ISA_*; every
    level writes the same bytes)."""
    if w.dtype != np.int8 or w.ndim != 3:
        raise TypeError("pack_vnni_batch expects a 3-D int8 array")
    cdef int64_t B = w.shape[0], K = w.shape[1], N = w.shape[2], b, p, nc
    cdef int64_t K4 = (K + 3) // 4, npan = (N + DNNQ_NR - 1) // DNNQ_NR
    cdef int64_t body = npan * K4 * 4 * DNNQ_NR
    if packed.size < B * batch_stride or batch_stride < body or \
            colsum.shape[0] != B or colsum.shape[1] != N:
        raise ValueError("pack_vnni_batch: packed / colsum too small")
    if B == 0:
        return
    if K == 0 or N == 0:
        packed[...] = 0
        colsum[...] = 0
        return
    cdef const int8_t[:, :, :] wv = w
    cdef int8_t[::1] pv = packed
    cdef int32_t[:, ::1] cv = colsum
    cdef dnnq_gemm_api_pack_fn pack = dnnq_gemm_api_pack_for_isa(isa)
    with nogil:
        for b in range(B):
            for p in range(npan):
                nc = N - p * DNNQ_NR
                if nc > DNNQ_NR:
                    nc = DNNQ_NR
                pack(&wv[b, 0, p * DNNQ_NR], wv.strides[1], wv.strides[2],
                                         K, nc, &pv[b * batch_stride + p * K4 * 4 * DNNQ_NR],
                                         &cv[b, p * DNNQ_NR])
            if batch_stride > body:
                memset(&pv[b * batch_stride + body], 0, batch_stride - body)
