/* AVX512-VNNI micro-kernel: 6 rows x 64 columns, 24 zmm accumulators, one vpdpbusd per
 * 16 columns x 4 k.  Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni,
 * called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"
#include "epilogue_avx512.h"

#define DNNQ_ISA avx512vnni
#define DNNQ_MR 6

/* The accumulators are 24 named locals, not an array: gcc keeps an array of vectors on the
 * stack (a store and a load per update), named locals stay in registers.  MR and XOR are
 * compile-time constants at every call site, so the `if (MR > r)` guards vanish. */
/* XOR = 0: u8 A x s8 B.  XOR = 1: s8 A made u8 by a XOR with 0x80 (+128).  XOR = 2
 * (DNNQ_A_SWAP): s8 A as the signed operand and B packed as u8 = w + 128, so no per-broadcast
 * XOR: raw = sum a * (w + 128), folded back by dnnq_swap_fold (- 128 * rowsum). */
#define DPB(acc, av, bv) (XOR == 2 ? _mm512_dpbusd_epi32(acc, bv, av) : _mm512_dpbusd_epi32(acc, av, bv))
/* CCIN: the fused epilogue's compensation is where the accumulators start (the integer sums
 * are the same, and its add leaves the epilogue) */
#define ACC_DECL(r)                                                                               \
    __m512i c##r##0 = CCIN ? k->cc[0] : _mm512_setzero_si512(),                                   \
            c##r##1 = CCIN ? k->cc[1] : c##r##0, c##r##2 = CCIN ? k->cc[2] : c##r##0,             \
            c##r##3 = CCIN ? k->cc[3] : c##r##0;
#define ACC_ROW(r, aword)                                                                         \
    if (MR > r) {                                                                                 \
        __m512i av = _mm512_set1_epi32((int)(aword));                                             \
        if (XOR == 1) av = _mm512_xor_si512(av, vx);                                              \
        c##r##0 = DPB(c##r##0, av, b0);                                                           \
        if (NCB > 1) c##r##1 = DPB(c##r##1, av, b1);                                              \
        if (NCB > 2) c##r##2 = DPB(c##r##2, av, b2);                                              \
        if (NCB > 3) c##r##3 = DPB(c##r##3, av, b3);                                              \
    }
#define ACC_STORE(r)                                                                              \
    if (MR > r && FUSE) {                                                                         \
        epi_fused_row(FUSE, CCIN, NCB, k, c##r##0, c##r##1, c##r##2, c##r##3, d0 + r * dstep);    \
    } else if (MR > r) {                                                                          \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR), c##r##0);                                  \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 16), c##r##1);                             \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 32), c##r##2);                             \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 48), c##r##3);                             \
    }
#define LOAD_B(bk)                                                                                \
    const __m512i b0 = _mm512_loadu_si512((const void *)(bk));                                   \
    const __m512i b1 = _mm512_loadu_si512((const void *)((bk) + 64));                             \
    const __m512i b2 = _mm512_loadu_si512((const void *)((bk) + 128));                            \
    const __m512i b3 = _mm512_loadu_si512((const void *)((bk) + 192));

#define ACC_LOAD(r)                                                                               \
    if (MR > r) {                                                                                 \
        c##r##0 = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR));                            \
        c##r##1 = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR + 16));                       \
        c##r##2 = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR + 32));                       \
        c##r##3 = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR + 48));                       \
    }

/* MR rows x 64 columns (NCB = 4; NCB = 3 / 2 / 1: the first 48 / 32 / 16, for a panel of at
 * most 48 / 32 / 16 columns: 3/4, a half, a quarter of the vpdpbusd), summed over the (A, B) pairs with the accumulators in registers
 * throughout.  The K % 4 tails are added afterwards by tail_avx512: with them inside the pair
 * loop gcc 12 spills the accumulators.  FUSE = 0 stores the s32 tile to c; otherwise (an
 * epi_fused_row variant, every K a multiple of 4) each row goes from the accumulators through
 * the epilogue k straight to its dst row at d0 + r * k->ldd: no s32 tile in memory. */
DNNQ_ALWAYS_INLINE void tile_avx512(const int MR, const int XOR, const int FUSE, const int NCB,
                                    int64_t np,
                                    const dnnq_br_pair_t *pairs, int accumulate, int32_t *c,
                                    const epi_consts_t *k, char *d0, int64_t dstep) {
    const __m512i vx = _mm512_set1_epi32((int)DNNQ_A_XOR_S8);
    const int CCIN = FUSE && ((FUSE - 1) & EPI_FUSE_CC) && !accumulate, ech_cc_in = CCIN;
    const int ech_drop = 1;
    (void)ech_cc_in, (void)ech_drop;
    ACC_DECL(0) ACC_DECL(1) ACC_DECL(2) ACC_DECL(3) ACC_DECL(4) ACC_DECL(5)
    if (accumulate) { ACC_LOAD(0) ACC_LOAD(1) ACC_LOAD(2) ACC_LOAD(3) ACC_LOAD(4) ACC_LOAD(5) }
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        DNNQ_PAIR_ROWS(q, MR, a0, a1, a2, a3, a4, a5)
        const int8_t *bp = q->b;
        const int64_t K = q->K, K4f = K / 4;
        for (int64_t k4 = 0; k4 < K4f; ++k4) {
            const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
            LOAD_B(bk)
            ACC_ROW(0, dnnq_load_a4(a0, k4)) ACC_ROW(1, dnnq_load_a4(a1, k4))
            ACC_ROW(2, dnnq_load_a4(a2, k4)) ACC_ROW(3, dnnq_load_a4(a3, k4))
            ACC_ROW(4, dnnq_load_a4(a4, k4)) ACC_ROW(5, dnnq_load_a4(a5, k4))
        }
    }
    if (FUSE) /* all accumulators in registers here: else gcc 12 spills them inside the loop */
        __asm__("" : "+v"(c00), "+v"(c01), "+v"(c02), "+v"(c03), "+v"(c10), "+v"(c11),
                     "+v"(c12), "+v"(c13), "+v"(c20), "+v"(c21), "+v"(c22), "+v"(c23));
    if (FUSE)
        __asm__("" : "+v"(c30), "+v"(c31), "+v"(c32), "+v"(c33), "+v"(c40), "+v"(c41),
                     "+v"(c42), "+v"(c43), "+v"(c50), "+v"(c51), "+v"(c52), "+v"(c53));
    if (FUSE && ((FUSE - 1) & EPI_FUSE_CHAIN)) { /* a post-op chain: the whole tile at once */
        ECH_EPILOGUE();
        return;
    }
    ACC_STORE(0) ACC_STORE(1) ACC_STORE(2) ACC_STORE(3) ACC_STORE(4) ACC_STORE(5)
}

#define DPB4(e0, e1, e2, e3, av, bk)                                                              \
    e0 = DPB(e0, av, _mm512_loadu_si512((const void *)(bk)));                                     \
    e1 = DPB(e1, av, _mm512_loadu_si512((const void *)((bk) + 64)));                              \
    e2 = DPB(e2, av, _mm512_loadu_si512((const void *)((bk) + 128)));                             \
    e3 = DPB(e3, av, _mm512_loadu_si512((const void *)((bk) + 192)));

/* One row (M = 1, the batch-1 case): with only 4 accumulators the vpdpbusd latency chain would
 * bound the loop, so k is split over two accumulator sets (even / odd k4), summed at the end. */
DNNQ_ALWAYS_INLINE void row1_avx512(const int XOR, int64_t np, const dnnq_br_pair_t *pairs,
                                    int accumulate, int32_t *c) {
    const __m512i vx = _mm512_set1_epi32((int)DNNQ_A_XOR_S8);
    __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0;
    __m512i o0 = e0, o1 = e0, o2 = e0, o3 = e0;
    if (accumulate) {
        e0 = _mm512_loadu_si512((const void *)c);
        e1 = _mm512_loadu_si512((const void *)(c + 16));
        e2 = _mm512_loadu_si512((const void *)(c + 32));
        e3 = _mm512_loadu_si512((const void *)(c + 48));
    }
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const uint8_t *a = q->rows ? q->rows[0] : q->a;
        const int8_t *bp = q->b;
        const int64_t K = q->K, K4f = K / 4;
        int64_t k4 = 0;
        for (; k4 + 1 < K4f; k4 += 2) {
            const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a4(a, k4));
            __m512i aw = _mm512_set1_epi32((int)dnnq_load_a4(a, k4 + 1));
            if (XOR == 1) { av = _mm512_xor_si512(av, vx); aw = _mm512_xor_si512(aw, vx); }
            DPB4(e0, e1, e2, e3, av, bk)
            DPB4(o0, o1, o2, o3, aw, bk + 256)
        }
        if (k4 < K4f) {
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a4(a, k4));
            if (XOR == 1) av = _mm512_xor_si512(av, vx);
            DPB4(e0, e1, e2, e3, av, bp + k4 * 4 * DNNQ_NR)
        }
        if (K & 3) {
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a_tail(a, K));
            if (XOR == 1) av = _mm512_xor_si512(av, vx);
            DPB4(o0, o1, o2, o3, av, bp + K4f * 4 * DNNQ_NR)
        }
    }
    _mm512_storeu_si512((void *)c, _mm512_add_epi32(e0, o0));
    _mm512_storeu_si512((void *)(c + 16), _mm512_add_epi32(e1, o1));
    _mm512_storeu_si512((void *)(c + 32), _mm512_add_epi32(e2, o2));
    _mm512_storeu_si512((void *)(c + 48), _mm512_add_epi32(e3, o3));
}

/* The K % 4 tails of the pairs, added into the stored tile. */
static void tail_avx512(int mr, int x, int64_t np, const dnnq_br_pair_t *pairs, int32_t *c) {
    const __m512i vx = _mm512_set1_epi32((int)DNNQ_A_XOR_S8);
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const int64_t K = q->K;
        if (!(K & 3)) continue;
        const int8_t *bk = q->b + (K / 4) * 4 * DNNQ_NR;
        for (int r = 0; r < mr; ++r) {
            const uint8_t *ar = q->rows ? q->rows[r] : q->a + r * q->lda;
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a_tail(ar, K));
            if (x == 1) av = _mm512_xor_si512(av, vx);
            for (int j = 0; j < 4; ++j) {
                __m512i acc = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR + 16 * j));
                const __m512i bv = _mm512_loadu_si512((const void *)(bk + 64 * j));
                acc = x == 2 ? _mm512_dpbusd_epi32(acc, bv, av) : _mm512_dpbusd_epi32(acc, av, bv);
                _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 16 * j), acc);
            }
        }
    }
}

static void dnnq_br_ukr(int mr, int64_t np, const dnnq_br_pair_t *pairs, uint32_t a_xor,
                        int accumulate, int32_t *c) {
    const int x = a_xor == DNNQ_A_SWAP ? 2 : a_xor ? 1 : 0;
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (x == 2) tile_avx512(m, 2, 0, 4, np, pairs, accumulate, c, NULL, NULL, 0);                   \
        else if (x == 1) tile_avx512(m, 1, 0, 4, np, pairs, accumulate, c, NULL, NULL, 0);              \
        else tile_avx512(m, 0, 0, 4, np, pairs, accumulate, c, NULL, NULL, 0);                          \
        break;
    switch (mr) {
    case 1:
        if (x == 2) row1_avx512(2, np, pairs, accumulate, c);
        else if (x == 1) row1_avx512(1, np, pairs, accumulate, c);
        else row1_avx512(0, np, pairs, accumulate, c);
        break;
    DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6)
    }
#undef DNNQ_CASE
    if (mr > 1) tail_avx512(mr, x, np, pairs, c);
}

/* dnnq_brgemm_ukr_fn for a panel of at most 32 columns: the half-width tile (half the
 * vpdpbusd); columns 32 - 63 of c are left holding anything (the caller reads the first 32
 * only).  One row, and DNNQ_A_SWAP, take the full kernel. */
void dnnq_brgemm_ukr_n32_avx512vnni(int mr, int64_t np, const dnnq_br_pair_t *pairs,
                                    uint32_t a_xor, int accumulate, int32_t *c) {
    if (mr <= 1 || a_xor == DNNQ_A_SWAP) {
        dnnq_br_ukr(mr, np, pairs, a_xor, accumulate, c);
        return;
    }
    const int x = a_xor ? 1 : 0;
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (x) tile_avx512(m, 1, 0, 2, np, pairs, accumulate, c, NULL, NULL, 0);                  \
        else tile_avx512(m, 0, 0, 2, np, pairs, accumulate, c, NULL, NULL, 0);                    \
        break;
    switch (mr) { DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6) }
#undef DNNQ_CASE
    tail_avx512(mr, x, np, pairs, c);
}

/* dnnq_brgemm_ukr_fn for a panel of at most 16 columns: the quarter-width tile (a quarter of
 * the vpdpbusd: PP-OCR's 8 - 16 channel layers ran at 2 - 3x oneDNN's time); columns 16 - 63
 * of c are left holding anything.  One row, and DNNQ_A_SWAP, take the full kernel. */
void dnnq_brgemm_ukr_n16_avx512vnni(int mr, int64_t np, const dnnq_br_pair_t *pairs,
                                    uint32_t a_xor, int accumulate, int32_t *c) {
    if (mr <= 1 || a_xor == DNNQ_A_SWAP) {
        dnnq_br_ukr(mr, np, pairs, a_xor, accumulate, c);
        return;
    }
    const int x = a_xor ? 1 : 0;
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (x) tile_avx512(m, 1, 0, 1, np, pairs, accumulate, c, NULL, NULL, 0);                  \
        else tile_avx512(m, 0, 0, 1, np, pairs, accumulate, c, NULL, NULL, 0);                    \
        break;
    switch (mr) { DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6) }
#undef DNNQ_CASE
    tail_avx512(mr, x, np, pairs, c);
}

/* the dense block's micro-kernel for a narrow panel (gemm_impl.h): the quarter / half-width
 * tiles for panels of at most 16 / 32 columns */
#define DNNQ_UKR_NARROW(nc, mr, K, a, lda, a_xor, bp, tile)                                      \
    do {                                                                                          \
        const dnnq_br_pair_t q_ = {(a), (lda), NULL, (bp), (K)};                                  \
        if ((nc) <= 16) dnnq_brgemm_ukr_n16_avx512vnni((mr), 1, &q_, (a_xor), 0, (tile));         \
        else dnnq_brgemm_ukr_n32_avx512vnni((mr), 1, &q_, (a_xor), 0, (tile));                    \
    } while (0)

/* The micro-kernel with its epilogue fused (epi_fuse_kind(k) = fuse > 0), mr 1 - 6, every
 * pair's K a multiple of 4; rows m + r * mstep of the block k describes.  fuse | DNNQ_EPI_XOR:
 * an s8 A XOR-ed to u8 (its compensation is in the block's: the kinds with EPI_FUSE_CC only). */
static void fused_tile_avx512(int mr, int fuse, int64_t np, const dnnq_br_pair_t *pairs,
                              const epi_consts_t *k, int64_t m, int64_t mstep) {
    char *d0 = k->d0 + m * k->ldd;
    const int64_t dstep = mstep * k->ldd;
    const int x = (fuse & DNNQ_EPI_XOR) ? 1 : 0;
    fuse &= ~DNNQ_EPI_XOR;
    /* a panel of at most 32 columns (k->nv <= 2): the half-width tile, half the vpdpbusd
     * (MobileNet's first layer, 32 output channels, ran at 2.2x oneDNN's time); 48: 3/4 */
#define DNNQ_FMR(X, F, M)                                                                         \
    case M:                                                                                       \
        if (k->nv <= 1) tile_avx512(M, X, F, 1, np, pairs, 0, NULL, k, d0, dstep);                \
        else if (k->nv <= 2) tile_avx512(M, X, F, 2, np, pairs, 0, NULL, k, d0, dstep);           \
        else if (k->nv <= 3) tile_avx512(M, X, F, 3, np, pairs, 0, NULL, k, d0, dstep);           \
        else tile_avx512(M, X, F, 4, np, pairs, 0, NULL, k, d0, dstep);                           \
        break;
#define DNNQ_FCASE(X, F)                                                                          \
    case F:                                                                                       \
        switch (mr) {                                                                             \
        DNNQ_FMR(X, F, 1) DNNQ_FMR(X, F, 2) DNNQ_FMR(X, F, 3) DNNQ_FMR(X, F, 4) DNNQ_FMR(X, F, 5) \
        DNNQ_FMR(X, F, 6)                                                                         \
        }                                                                                         \
        break;
    if (x) {
        switch (fuse) { /* (the compensation kinds: 9 - 16, the chains 25 - 28, f32 41, 43) */
        DNNQ_FCASE(1, 9) DNNQ_FCASE(1, 10) DNNQ_FCASE(1, 11) DNNQ_FCASE(1, 12)
        DNNQ_FCASE(1, 13) DNNQ_FCASE(1, 14) DNNQ_FCASE(1, 15) DNNQ_FCASE(1, 16)
        DNNQ_FCASE(1, 25) DNNQ_FCASE(1, 26) DNNQ_FCASE(1, 27) DNNQ_FCASE(1, 28)
        DNNQ_FCASE(1, 41) DNNQ_FCASE(1, 43) /* f32 dsts */
        }
        return;
    }
    switch (fuse) {
    DNNQ_FCASE(0, 1) DNNQ_FCASE(0, 2) DNNQ_FCASE(0, 3) DNNQ_FCASE(0, 4)
    DNNQ_FCASE(0, 5) DNNQ_FCASE(0, 6) DNNQ_FCASE(0, 7) DNNQ_FCASE(0, 8)
    DNNQ_FCASE(0, 9) DNNQ_FCASE(0, 10) DNNQ_FCASE(0, 11) DNNQ_FCASE(0, 12)
    DNNQ_FCASE(0, 13) DNNQ_FCASE(0, 14) DNNQ_FCASE(0, 15) DNNQ_FCASE(0, 16)
    DNNQ_FCASE(0, 25) DNNQ_FCASE(0, 26) DNNQ_FCASE(0, 27) DNNQ_FCASE(0, 28) /* the chains */
    DNNQ_FCASE(0, 41) DNNQ_FCASE(0, 43) /* f32 dsts */
    }
#undef DNNQ_FCASE
#undef DNNQ_FMR
}
#define DNNQ_FUSED_KIND epi_fuse_kind
#define DNNQ_FUSED_TILE fused_tile_avx512

/* For DNNQ_A_SWAP tiles: raw = sum_k a * (w + 128) -> sum_k a * w, by subtracting
 * 128 * sum_k a[r, k] (row sums by vpdpbusd with a vector of ones: s8 a as the signed side). */
static void swap_fold_avx512(const uint8_t *a, int64_t lda, int mr, int64_t K, int32_t *tile) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (int r = 0; r < mr; ++r) {
        const uint8_t *ar = a + r * lda;
        __m512i acc = _mm512_setzero_si512();
        int64_t k = 0;
        for (; k + 64 <= K; k += 64)
            acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512((const void *)(ar + k)));
        if (k < K) {
            const __mmask64 km = ((__mmask64)-1) >> (64 - (K - k));
            acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(km, ar + k));
        }
        const __m512i t = _mm512_set1_epi32((int32_t)((uint32_t)_mm512_reduce_add_epi32(acc) << 7));
        int32_t *row = tile + r * DNNQ_NR;
        for (int j = 0; j < 4; ++j)
            _mm512_storeu_si512(row + 16 * j, _mm512_sub_epi32(_mm512_loadu_si512(row + 16 * j), t));
    }
}
#define DNNQ_SWAP_FOLD swap_fold_avx512

#include "gemm_impl.h"

_Static_assert(sizeof(epi_consts_t) <= sizeof(dnnq_epi_state_t), "dnnq_epi_state_t too small");

int dnnq_epi_tile_prepare_avx512vnni(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                     dnnq_epi_state_t *st) {
    /* (gemm_impl.h's dnnq_gemm_epilogue: the fast epilogue unless wzp, which needs a copy) */
    if (!dnnq_fast_epi_ok(g) || g->wzp) return 0;
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    epi_prepare_avx512(g, b, n0, nc, (epi_consts_t *)st);
    return 1;
}

int dnnq_epi_prepare_avx512vnni(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                dnnq_epi_state_t *st) {
    /* (the fused tile has no wzp term either) */
    if (!dnnq_epi_tile_prepare_avx512vnni(g, b, p, st)) return 0;
    return epi_fuse_kind((const epi_consts_t *)st);
}

void dnnq_epi_tile_avx512vnni(const dnnq_gemm_args_t *g, const dnnq_epi_state_t *st, int64_t m,
                              int mr, const int32_t *tile) {
    fast_epilogue_avx512(g, (const epi_consts_t *)st, m, mr, tile);
}

void dnnq_brgemm_epi_avx512vnni(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                                const dnnq_epi_state_t *st, int kind, int64_t m, int64_t mstep) {
    fused_tile_avx512(mr, kind, npairs, pairs, (const epi_consts_t *)st, m, mstep);
}
