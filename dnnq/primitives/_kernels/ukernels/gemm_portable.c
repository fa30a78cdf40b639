/* Portable micro-kernel: plain C, exact, runs on any CPU (the `default` ISA level).
 * Compiled a second time with DNNQ_PAIR_SAT (suffix portablesat) for set_int8_numerics("avx2"):
 * each pair of neighbouring products saturates to s16 before it is added, as oneDNN's
 * vpmaddubsw does on CPUs without VNNI (dnnq_codes.h, dnnq_numerics_t). */
#include "dnnq_kernels.h"
#include "ukr_common.h"

#ifdef DNNQ_PAIR_SAT
#define DNNQ_ISA portablesat
/* vpmaddubsw: a0*b0 + a1*b1 saturated to [-32768, 32767] */
#define DNNQ_PAIR(x) ((x) < -32768 ? -32768 : (x) > 32767 ? 32767 : (x))
#else
#define DNNQ_ISA portable
#define DNNQ_PAIR(x) (x)
#endif
#define DNNQ_MR 4

/* The batch-reduce micro-kernel: c[r] (+)= sum over pairs of A_i[r] . B_i (see dnnq_kernels.h) */
static void dnnq_br_ukr(int mr, int64_t npairs, const dnnq_br_pair_t *pairs, uint32_t a_xor,
                        int accumulate, int32_t *c) {
    for (int r = 0; r < mr; ++r) {
        int32_t acc[DNNQ_NR];
        if (accumulate) memcpy(acc, c + r * DNNQ_NR, sizeof(acc));
        else memset(acc, 0, sizeof(acc));
        for (int64_t i = 0; i < npairs; ++i) {
            const dnnq_br_pair_t *q = &pairs[i];
            const uint8_t *ar = q->rows ? q->rows[r] : q->a + r * q->lda;
            const int64_t K = q->K, K4f = K / 4, K4 = (K + 3) / 4;
            for (int64_t k4 = 0; k4 < K4; ++k4) {
                uint32_t w = (k4 < K4f ? dnnq_load_a4(ar, k4) : dnnq_load_a_tail(ar, K)) ^ a_xor;
                const int32_t a0 = w & 0xff, a1 = (w >> 8) & 0xff, a2 = (w >> 16) & 0xff,
                              a3 = w >> 24;
                const int8_t *bk = q->b + k4 * 4 * DNNQ_NR;
                /* unsigned wrap: the hardware accumulators wrap, C's signed overflow is UB */
                for (int n = 0; n < DNNQ_NR; ++n)
                    acc[n] = (int32_t)((uint32_t)acc[n] +
                                       (uint32_t)(DNNQ_PAIR(a0 * bk[4 * n] + a1 * bk[4 * n + 1]) +
                                                  DNNQ_PAIR(a2 * bk[4 * n + 2] + a3 * bk[4 * n + 3])));
            }
        }
        memcpy(c + r * DNNQ_NR, acc, sizeof(acc));
    }
}

#include "gemm_impl.h"

#ifndef DNNQ_PAIR_SAT /* the ISA-independent pieces, once */
void dnnq_pack_b(const int8_t *w, int64_t ldw, int64_t wn_stride, int64_t K, int64_t N,
                 int8_t *packed, int32_t *colsum) {
    const int64_t K4 = (K + 3) / 4, P = (N + DNNQ_NR - 1) / DNNQ_NR;
    memset(packed, 0, (size_t)(P * K4 * 4 * DNNQ_NR));
    for (int64_t n = 0; n < N; ++n) colsum[n] = 0;
    for (int64_t k = 0; k < K; ++k) {
        const int8_t *row = w + k * ldw;
        const int64_t k4 = k / 4, kk = k % 4;
        for (int64_t n = 0; n < N; ++n) {
            const int8_t x = row[n * wn_stride];
            const int64_t p = n / DNNQ_NR, nn = n % DNNQ_NR;
            packed[((p * K4 + k4) * DNNQ_NR + nn) * 4 + kk] = x;
            colsum[n] += x;
        }
    }
}
#endif
