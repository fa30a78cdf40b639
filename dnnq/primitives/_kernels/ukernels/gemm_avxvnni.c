/* AVX-VNNI micro-kernel (VEX-encoded vpdpbusd on ymm): 6 rows x 16 columns at a time, four
 * column strips per 64-column panel; 12 ymm accumulators fit the 16 registers.
 * Compiled with -mavx2 -mfma -mavxvnni, called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

/* Compiled a second time with DNNQ_AVX_VNNI_EMULATE (suffix avxvnniemu) for CPUs with
 * AVX512-VNNI and without AVX-VNNI (DNNQ_EMULATE_AVX_VNNI=1, cpu_features.c): the same ymm
 * product through its EVEX encoding (AVX512-VL), which computes the same sums, so the
 * avx2_vnni level's kernels are tested there. */
#ifdef DNNQ_AVX_VNNI_EMULATE
#define DNNQ_ISA avxvnniemu
#define _mm256_dpbusd_avx_epi32 _mm256_dpbusd_epi32
#else
#define DNNQ_ISA avxvnni
#endif
#define DNNQ_MR 6

/* Named locals, not an array, and the K % 4 tail outside the loop: otherwise gcc 12 keeps the
 * accumulators on the stack. */
/* XOR = 0: u8 source; 1: s8 source XOR-ed to u8; 2 (DNNQ_A_SWAP): s8 source as the signed
 * operand against weights packed as u8 = w + 128 (folded back by swap_fold_avxvnni). */
#define DPB(acc, av, bv) \
    (XOR == 2 ? _mm256_dpbusd_avx_epi32(acc, bv, av) : _mm256_dpbusd_avx_epi32(acc, av, bv))
#define ACC_DECL(r) __m256i c##r##0 = _mm256_setzero_si256(), c##r##1 = c##r##0;
#define ACC_ROW(r, aword)                                                                         \
    if (MR > r) {                                                                                 \
        __m256i av = _mm256_set1_epi32((int)(aword));                                             \
        if (XOR == 1) av = _mm256_xor_si256(av, vx);                                              \
        c##r##0 = DPB(c##r##0, av, b0);                                                           \
        c##r##1 = DPB(c##r##1, av, b1);                                                           \
    }
#define ACC_STORE(r)                                                                              \
    if (MR > r) {                                                                                 \
        _mm256_storeu_si256((__m256i *)(c + r * DNNQ_NR), c##r##0);                               \
        _mm256_storeu_si256((__m256i *)(c + r * DNNQ_NR + 8), c##r##1);                           \
    }

#define ACC_LOAD(r)                                                                               \
    if (MR > r) {                                                                                 \
        c##r##0 = _mm256_loadu_si256((const __m256i *)(c + r * DNNQ_NR));                         \
        c##r##1 = _mm256_loadu_si256((const __m256i *)(c + r * DNNQ_NR + 8));                     \
    }
#define LOAD_B2(bk)                                                                               \
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bk));                                 \
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)((bk) + 32));

/* MR rows x 16 columns (bytes boff.. of each 256-byte packed k-row), summed over the pairs
 * with the accumulators in registers.  The K % 4 tails are added afterwards (tail_avxvnni):
 * inside the loop gcc 12 keeps the accumulators on the stack. */
DNNQ_ALWAYS_INLINE void strip_avxvnni(const int MR, const int XOR, int64_t np,
                                      const dnnq_br_pair_t *pairs, int64_t boff, int accumulate,
                                      int32_t *c) {
    const __m256i vx = _mm256_set1_epi32((int)DNNQ_A_XOR_S8);
    ACC_DECL(0) ACC_DECL(1) ACC_DECL(2) ACC_DECL(3) ACC_DECL(4) ACC_DECL(5)
    if (accumulate) { ACC_LOAD(0) ACC_LOAD(1) ACC_LOAD(2) ACC_LOAD(3) ACC_LOAD(4) ACC_LOAD(5) }
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        DNNQ_PAIR_ROWS(q, MR, a0, a1, a2, a3, a4, a5)
        const int8_t *bp = q->b + boff;
        const int64_t K = q->K, K4f = K / 4;
        for (int64_t k4 = 0; k4 < K4f; ++k4) {
            const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
            LOAD_B2(bk)
            ACC_ROW(0, dnnq_load_a4(a0, k4)) ACC_ROW(1, dnnq_load_a4(a1, k4))
            ACC_ROW(2, dnnq_load_a4(a2, k4)) ACC_ROW(3, dnnq_load_a4(a3, k4))
            ACC_ROW(4, dnnq_load_a4(a4, k4)) ACC_ROW(5, dnnq_load_a4(a5, k4))
        }
    }
    ACC_STORE(0) ACC_STORE(1) ACC_STORE(2) ACC_STORE(3) ACC_STORE(4) ACC_STORE(5)
}

#define DPB8(av, bk)                                                                              \
    c0 = DPB(c0, av, _mm256_loadu_si256((const __m256i *)(bk)));                                  \
    c1 = DPB(c1, av, _mm256_loadu_si256((const __m256i *)((bk) + 32)));                           \
    c2 = DPB(c2, av, _mm256_loadu_si256((const __m256i *)((bk) + 64)));                           \
    c3 = DPB(c3, av, _mm256_loadu_si256((const __m256i *)((bk) + 96)));                           \
    c4 = DPB(c4, av, _mm256_loadu_si256((const __m256i *)((bk) + 128)));                          \
    c5 = DPB(c5, av, _mm256_loadu_si256((const __m256i *)((bk) + 160)));                          \
    c6 = DPB(c6, av, _mm256_loadu_si256((const __m256i *)((bk) + 192)));                          \
    c7 = DPB(c7, av, _mm256_loadu_si256((const __m256i *)((bk) + 224)));

/* One row (M = 1, batch-1 inference): all 64 columns at once, 8 independent ymm accumulators,
 * so that the vpdpbusd latency does not bound the loop as it would with a strip's two.
 * Packed bytes 32j.. of a k-group row are columns 8j .. 8j + 7. */
DNNQ_ALWAYS_INLINE void row1_avxvnni(const int XOR, int64_t np, const dnnq_br_pair_t *pairs,
                                     int accumulate, int32_t *c) {
    const __m256i vx = _mm256_set1_epi32((int)DNNQ_A_XOR_S8);
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
            c7 = c0;
    if (accumulate) {
        c0 = _mm256_loadu_si256((const __m256i *)c);
        c1 = _mm256_loadu_si256((const __m256i *)(c + 8));
        c2 = _mm256_loadu_si256((const __m256i *)(c + 16));
        c3 = _mm256_loadu_si256((const __m256i *)(c + 24));
        c4 = _mm256_loadu_si256((const __m256i *)(c + 32));
        c5 = _mm256_loadu_si256((const __m256i *)(c + 40));
        c6 = _mm256_loadu_si256((const __m256i *)(c + 48));
        c7 = _mm256_loadu_si256((const __m256i *)(c + 56));
    }
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const uint8_t *a = q->rows ? q->rows[0] : q->a;
        const int64_t K = q->K, K4f = K / 4;
        for (int64_t k4 = 0; k4 < K4f; ++k4) {
            __m256i av = _mm256_set1_epi32((int)dnnq_load_a4(a, k4));
            if (XOR == 1) av = _mm256_xor_si256(av, vx);
            DPB8(av, q->b + k4 * 4 * DNNQ_NR)
        }
        if (K & 3) {
            __m256i av = _mm256_set1_epi32((int)dnnq_load_a_tail(a, K));
            if (XOR == 1) av = _mm256_xor_si256(av, vx);
            DPB8(av, q->b + K4f * 4 * DNNQ_NR)
        }
    }
    _mm256_storeu_si256((__m256i *)c, c0);
    _mm256_storeu_si256((__m256i *)(c + 8), c1);
    _mm256_storeu_si256((__m256i *)(c + 16), c2);
    _mm256_storeu_si256((__m256i *)(c + 24), c3);
    _mm256_storeu_si256((__m256i *)(c + 32), c4);
    _mm256_storeu_si256((__m256i *)(c + 40), c5);
    _mm256_storeu_si256((__m256i *)(c + 48), c6);
    _mm256_storeu_si256((__m256i *)(c + 56), c7);
}

/* The K % 4 tails of the pairs, added into the stored tile (all 64 columns). */
static void tail_avxvnni(int mr, uint32_t a_xor, int64_t np, const dnnq_br_pair_t *pairs,
                         int32_t *c) {
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const int64_t K = q->K;
        if (!(K & 3)) continue;
        const int8_t *bk = q->b + (K / 4) * 4 * DNNQ_NR;
        for (int r = 0; r < mr; ++r) {
            const uint8_t *ar = q->rows ? q->rows[r] : q->a + r * q->lda;
            const uint32_t w = dnnq_load_a_tail(ar, K);
            for (int s = 0; s < 4; ++s) {
                const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bk + 64 * s));
                const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 64 * s + 32));
                __m256i *o = (__m256i *)(c + r * DNNQ_NR + 16 * s);
                if (a_xor == DNNQ_A_SWAP) {
                    const __m256i av = _mm256_set1_epi32((int)w);
                    _mm256_storeu_si256(o, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o), b0, av));
                    _mm256_storeu_si256(o + 1,
                                        _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o + 1), b1, av));
                } else {
                    const __m256i av = _mm256_set1_epi32((int)(w ^ a_xor));
                    _mm256_storeu_si256(o, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o), av, b0));
                    _mm256_storeu_si256(o + 1,
                                        _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o + 1), av, b1));
                }
            }
        }
    }
}

static void dnnq_br_ukr(int mr, int64_t np, const dnnq_br_pair_t *pairs, uint32_t a_xor,
                        int accumulate, int32_t *c) {
    const int x = a_xor == DNNQ_A_SWAP ? 2 : a_xor ? 1 : 0;
    /* strip s covers columns 16s..16s+15: bytes 64s.. of each 256-byte packed k-row */
#define DNNQ_STRIPS(m, X)                                                                         \
    for (int s = 0; s < 4; ++s) strip_avxvnni(m, X, np, pairs, 64 * s, accumulate, c + 16 * s);
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (x == 2) { DNNQ_STRIPS(m, 2) }                                                         \
        else if (x == 1) { DNNQ_STRIPS(m, 1) }                                                    \
        else { DNNQ_STRIPS(m, 0) }                                                                \
        break;
    switch (mr) {
    case 1:
        if (x == 2) row1_avxvnni(2, np, pairs, accumulate, c);
        else if (x == 1) row1_avxvnni(1, np, pairs, accumulate, c);
        else row1_avxvnni(0, np, pairs, accumulate, c);
        break;
    DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6)
    }
#undef DNNQ_CASE
#undef DNNQ_STRIPS
    if (mr > 1) tail_avxvnni(mr, a_xor, np, pairs, c);
}

/* For DNNQ_A_SWAP tiles: raw = sum_k a * (w + 128) -> sum_k a * w (row sums by vpdpbusd
 * with a vector of ones, the s8 source as the signed side). */
static void swap_fold_avxvnni(const uint8_t *a, int64_t lda, int mr, int64_t K, int32_t *tile) {
    const __m256i ones = _mm256_set1_epi8(1);
    for (int r = 0; r < mr; ++r) {
        const uint8_t *ar = a + r * lda;
        __m256i acc = _mm256_setzero_si256();
        int64_t k = 0;
        for (; k + 32 <= K; k += 32)
            acc = _mm256_dpbusd_avx_epi32(acc, ones, _mm256_loadu_si256((const __m256i *)(ar + k)));
        int32_t buf[8];
        _mm256_storeu_si256((__m256i *)buf, acc);
        uint32_t rs = 0;
        for (int i = 0; i < 8; ++i) rs += (uint32_t)buf[i];
        for (; k < K; ++k) rs += (uint32_t)(int32_t)(int8_t)ar[k];
        const __m256i t = _mm256_set1_epi32((int32_t)(rs << 7));
        int32_t *row = tile + r * DNNQ_NR;
        for (int j = 0; j < 8; ++j)
            _mm256_storeu_si256((__m256i *)(row + 8 * j),
                                _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(row + 8 * j)), t));
    }
}
#define DNNQ_SWAP_FOLD swap_fold_avxvnni

#include "epilogue_avx2.h"
#include "gemm_impl.h"
