/* Portable f32 micro-kernel (the `default` level): plain C, one fmaf per product, rounding
 * once as the FMA instructions of the other levels do (dnnq_f32.h: the accumulation order).
 * Also the f32 weights packing (ISA-independent). */
#include <math.h>
#include "dnnq_f32.h"

#define DNNQ_F32_ISA portable

static void f32_br_ukr(int mr, int nc, int64_t npairs, const dnnq_br_pair_f32_t *pairs,
                       int accumulate, float *c) {
    for (int r = 0; r < mr; ++r) {
        float acc[DNNQ_NR];
        if (accumulate) {
            for (int n = 0; n < nc; ++n) acc[n] = c[r * DNNQ_NR + n];
        } else {
            for (int n = 0; n < nc; ++n) acc[n] = 0.0f;
        }
        for (int64_t i = 0; i < npairs; ++i) {
            const dnnq_br_pair_f32_t *q = &pairs[i];
            const float *ar = q->rows ? q->rows[r] : q->a + r * q->lda;
            for (int64_t k = 0; k < q->K; ++k) {
                const float av = ar[k];
                const float *bk = q->b + k * DNNQ_NR;
                for (int n = 0; n < nc; ++n) acc[n] = fmaf(av, bk[n], acc[n]);
            }
        }
        for (int n = 0; n < nc; ++n) c[r * DNNQ_NR + n] = acc[n];
    }
}

#include "gemm_f32_impl.h"

void dnnq_pack_b_f32(const float *w, int64_t ldw, int64_t wn, int64_t K, int64_t N,
                     float *packed) {
    const int64_t P = (N + DNNQ_NR - 1) / DNNQ_NR;
    for (int64_t p = 0; p < P; ++p) {
        const int64_t n0 = p * DNNQ_NR, nc = N - n0 < DNNQ_NR ? N - n0 : DNNQ_NR;
        for (int64_t k = 0; k < K; ++k) {
            float *row = packed + (p * K + k) * DNNQ_NR;
            const float *src = w + k * ldw + n0 * wn;
            int64_t n = 0;
            for (; n < nc; ++n) row[n] = src[n * wn];
            for (; n < DNNQ_NR; ++n) row[n] = 0.0f;
        }
    }
}
