/* AVX2 micro-kernel without VNNI, exact: u8 and s8 are widened to s16 and multiplied with
 * vpmaddwd (a pair sum of at most 2 * 255 * 128 cannot saturate, unlike vpmaddubsw).
 * Each accumulator holds two partial sums per column; they are added pairwise at the end.
 * Compiled with -mavx2 -mfma, called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

/* Compiled a second time with DNNQ_PAIR_SAT (suffix avx2sat) for set_int8_numerics("avx2"):
 * every pair sum is clamped to s16, which is what oneDNN's vpmaddubsw computes without VNNI. */
#ifdef DNNQ_PAIR_SAT
#define DNNQ_ISA avx2sat
#else
#define DNNQ_ISA avx2
#endif
#define DNNQ_MR 2

/* 16 columns (4 groups of 4) x MR rows, summed over the (A, B) pairs; each pair's bp points
 * at the packed bytes of those columns (byte offset 64 * strip in every 256-byte k-row) */
DNNQ_ALWAYS_INLINE void strip_avx2(const int MR, int64_t np, const dnnq_br_pair_t *pairs,
                                   int64_t boff, uint32_t a_xor, int accumulate, int32_t *c) {
    __m256i acc[DNNQ_MR][4];
    for (int r = 0; r < MR; ++r)
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_si256();
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_t *q = pairs + i;
        const uint8_t *arow[DNNQ_MR];
        for (int r = 0; r < MR; ++r) arow[r] = q->rows ? q->rows[r] : q->a + r * q->lda;
        const int64_t K = q->K, K4 = (K + 3) / 4, K4f = K / 4;
        const int8_t *bp = q->b + boff;
        for (int64_t k4 = 0; k4 < K4; ++k4) {
            const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
            __m256i bw[4];
            for (int j = 0; j < 4; ++j)
                bw[j] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(bk + 16 * j)));
            for (int r = 0; r < MR; ++r) {
                const uint8_t *ar = arow[r];
                uint32_t w = (k4 < K4f ? dnnq_load_a4(ar, k4) : dnnq_load_a_tail(ar, K)) ^ a_xor;
                /* the 4 bytes zero-extended to 4 x u16 (vpmovzxbw), repeated over the register */
                const __m256i av =
                    _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)w)));
                for (int j = 0; j < 4; ++j) {
                    __m256i pair = _mm256_madd_epi16(av, bw[j]);
#ifdef DNNQ_PAIR_SAT
                    pair = _mm256_max_epi32(_mm256_min_epi32(pair, _mm256_set1_epi32(32767)),
                                            _mm256_set1_epi32(-32768));
#endif
                    acc[r][j] = _mm256_add_epi32(acc[r][j], pair);
                }
            }
        }
    }
    for (int r = 0; r < MR; ++r) {
        /* acc[j] = [c0 c0 c1 c1 | c2 c2 c3 c3] of columns 4j..4j+3 */
        __m256i lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
        __m256i hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2], acc[r][3]), 0xD8);
        __m256i *o = (__m256i *)(c + r * DNNQ_NR);
        if (accumulate) {
            lo = _mm256_add_epi32(lo, _mm256_loadu_si256(o));
            hi = _mm256_add_epi32(hi, _mm256_loadu_si256(o + 1));
        }
        _mm256_storeu_si256(o, lo);
        _mm256_storeu_si256(o + 1, hi);
    }
}

static void dnnq_br_ukr(int mr, int64_t np, const dnnq_br_pair_t *pairs, uint32_t a_xor,
                        int accumulate, int32_t *c) {
    for (int s = 0; s < 4; ++s) {
        if (mr == 1) strip_avx2(1, np, pairs, 64 * s, a_xor, accumulate, c + 16 * s);
        else strip_avx2(2, np, pairs, 64 * s, a_xor, accumulate, c + 16 * s);
    }
}

#include "epilogue_avx2.h"
#include "gemm_impl.h"
