/* AVX-VNNI micro-kernel (VEX-encoded vpdpbusd on ymm): 6 rows x 16 columns at a time, four
 * column strips per 64-column panel; 12 ymm accumulators fit the 16 registers.
 * Compiled with -mavx2 -mfma -mavxvnni, called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

#define DNNQ_ISA avxvnni
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

DNNQ_ALWAYS_INLINE void strip_avxvnni(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                      int64_t lda, const int8_t *bp, int32_t *c) {
    const __m256i vx = _mm256_set1_epi32((int)0x80808080);
    ACC_DECL(0) ACC_DECL(1) ACC_DECL(2) ACC_DECL(3) ACC_DECL(4) ACC_DECL(5)
    const uint8_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda,
                  *a5 = a + 5 * lda;
    const int64_t K4f = K / 4;
    for (int64_t k4 = 0; k4 < K4f; ++k4) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)bk);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 32));
        ACC_ROW(0, dnnq_load_a4(a0, k4)) ACC_ROW(1, dnnq_load_a4(a1, k4))
        ACC_ROW(2, dnnq_load_a4(a2, k4)) ACC_ROW(3, dnnq_load_a4(a3, k4))
        ACC_ROW(4, dnnq_load_a4(a4, k4)) ACC_ROW(5, dnnq_load_a4(a5, k4))
    }
    ACC_STORE(0) ACC_STORE(1) ACC_STORE(2) ACC_STORE(3) ACC_STORE(4) ACC_STORE(5)
}

/* One row (M = 1, batch-1 inference): all 64 columns at once, 8 independent ymm accumulators,
 * so that the vpdpbusd latency does not bound the loop as it would with a strip's two. */
DNNQ_ALWAYS_INLINE void row1_avxvnni(const int XOR, int64_t K, const uint8_t *a, const int8_t *bp,
                                     int32_t *c) {
    const __m256i vx = _mm256_set1_epi32((int)0x80808080);
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
            c7 = c0;
    const int64_t K4f = K / 4;
    for (int64_t k4 = 0; k4 < K4f; ++k4) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        __m256i av = _mm256_set1_epi32((int)dnnq_load_a4(a, k4));
        if (XOR == 1) av = _mm256_xor_si256(av, vx);
        c0 = DPB(c0, av, _mm256_loadu_si256((const __m256i *)bk));
        c1 = DPB(c1, av, _mm256_loadu_si256((const __m256i *)(bk + 32)));
        c2 = DPB(c2, av, _mm256_loadu_si256((const __m256i *)(bk + 64)));
        c3 = DPB(c3, av, _mm256_loadu_si256((const __m256i *)(bk + 96)));
        c4 = DPB(c4, av, _mm256_loadu_si256((const __m256i *)(bk + 128)));
        c5 = DPB(c5, av, _mm256_loadu_si256((const __m256i *)(bk + 160)));
        c6 = DPB(c6, av, _mm256_loadu_si256((const __m256i *)(bk + 192)));
        c7 = DPB(c7, av, _mm256_loadu_si256((const __m256i *)(bk + 224)));
    }
    /* packed bytes 32j.. of a k-group row are columns 8j .. 8j + 7 */
    _mm256_storeu_si256((__m256i *)c, c0);
    _mm256_storeu_si256((__m256i *)(c + 8), c1);
    _mm256_storeu_si256((__m256i *)(c + 16), c2);
    _mm256_storeu_si256((__m256i *)(c + 24), c3);
    _mm256_storeu_si256((__m256i *)(c + 32), c4);
    _mm256_storeu_si256((__m256i *)(c + 40), c5);
    _mm256_storeu_si256((__m256i *)(c + 48), c6);
    _mm256_storeu_si256((__m256i *)(c + 56), c7);
}

/* The K % 4 tail of one 16-column strip, added into the stored tile. */
static void tail_avxvnni(int mr, uint32_t a_xor, int64_t K, const uint8_t *a, int64_t lda,
                         const int8_t *bp, int32_t *c) {
    const int8_t *bk = bp + (K / 4) * 4 * DNNQ_NR;
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)bk);
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 32));
    for (int r = 0; r < mr; ++r) {
        __m256i *o = (__m256i *)(c + r * DNNQ_NR);
        if (a_xor == DNNQ_A_SWAP) {
            const __m256i av = _mm256_set1_epi32((int)dnnq_load_a_tail(a + r * lda, K));
            _mm256_storeu_si256(o, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o), b0, av));
            _mm256_storeu_si256(o + 1, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o + 1), b1, av));
            continue;
        }
        const __m256i av = _mm256_set1_epi32((int)(dnnq_load_a_tail(a + r * lda, K) ^ a_xor));
        _mm256_storeu_si256(o, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o), av, b0));
        _mm256_storeu_si256(o + 1, _mm256_dpbusd_avx_epi32(_mm256_loadu_si256(o + 1), av, b1));
    }
}

DNNQ_ALWAYS_INLINE void tile_avxvnni(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                     int64_t lda, const int8_t *bp, int32_t *c) {
    /* strip s covers columns 16s..16s+15: bytes 64s.. of each 256-byte packed k-row */
    for (int s = 0; s < 4; ++s) strip_avxvnni(MR, XOR, K, a, lda, bp + 64 * s, c + 16 * s);
}

static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (a_xor == DNNQ_A_SWAP) tile_avxvnni(m, 2, K, a, lda, bp, c);                           \
        else if (a_xor) tile_avxvnni(m, 1, K, a, lda, bp, c);                                     \
        else tile_avxvnni(m, 0, K, a, lda, bp, c);                                                \
        break;
    switch (mr) {
    case 1:
        if (a_xor == DNNQ_A_SWAP) row1_avxvnni(2, K, a, bp, c);
        else if (a_xor) row1_avxvnni(1, K, a, bp, c);
        else row1_avxvnni(0, K, a, bp, c);
        break;
    DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6)
    }
#undef DNNQ_CASE
    if (K & 3)
        for (int s = 0; s < 4; ++s) tail_avxvnni(mr, a_xor, K, a, lda, bp + 64 * s, c + 16 * s);
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
