/* AVX2 f32 micro-kernel: the 64-column panel in strips of 16 columns, up to 6 rows x 2 ymm
 * accumulators per strip (12), one vfmadd231ps per row and 8 columns per k (dnnq_f32.h:
 * each lane one output element's FMA chain; the strips only change which elements advance
 * together).  Compiled with -mavx2 -mfma; called only at the avx2 / avx2_vnni levels. */
#include <immintrin.h>
#include "dnnq_f32.h"
#include "ukr_common.h"

#define DNNQ_F32_ISA avx2

#define S_DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = c##r##0;
#define S_LOAD(r)                                                                              \
    if (MR > r) {                                                                              \
        c##r##0 = _mm256_loadu_ps(c + r * DNNQ_NR);                                            \
        if (NV > 1) c##r##1 = _mm256_loadu_ps(c + r * DNNQ_NR + 8);                            \
    }
#define S_ROW(r, x)                                                                            \
    if (MR > r) {                                                                              \
        const __m256 av = _mm256_broadcast_ss(x);                                              \
        c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                                            \
        if (NV > 1) c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1);                                \
    }
#define S_STORE(r)                                                                             \
    if (MR > r) {                                                                              \
        _mm256_storeu_ps(c + r * DNNQ_NR, c##r##0);                                            \
        if (NV > 1) _mm256_storeu_ps(c + r * DNNQ_NR + 8, c##r##1);                            \
    }

/* MR rows x NV * 8 columns starting at column `col` of the panel (c and the B rows offset by
 * it), over every pair */
DNNQ_ALWAYS_INLINE void strip_f32_avx2(const int MR, const int NV, int64_t np,
                                       const dnnq_br_pair_f32_t *pairs, int64_t col,
                                       int accumulate, float *c) {
    S_DECL(0) S_DECL(1) S_DECL(2) S_DECL(3) S_DECL(4) S_DECL(5)
    c += col;
    if (accumulate) { S_LOAD(0) S_LOAD(1) S_LOAD(2) S_LOAD(3) S_LOAD(4) S_LOAD(5) }
    for (int64_t i = 0; i < np; ++i) {
        const dnnq_br_pair_f32_t *q = pairs + i;
        const float *a0, *a1, *a2, *a3, *a4, *a5;
        if (q->rows) {
            const float *const *rp = q->rows;
            a0 = rp[0]; a1 = MR > 1 ? rp[1] : a0; a2 = MR > 2 ? rp[2] : a0;
            a3 = MR > 3 ? rp[3] : a0; a4 = MR > 4 ? rp[4] : a0; a5 = MR > 5 ? rp[5] : a0;
        } else {
            const int64_t ld = q->lda;
            a0 = q->a; a1 = a0 + ld; a2 = a1 + ld; a3 = a2 + ld; a4 = a3 + ld; a5 = a4 + ld;
        }
        const float *bk = q->b + col;
        const int64_t K = q->K;
        for (int64_t k = 0; k < K; ++k, bk += DNNQ_NR) {
            const __m256 b0 = _mm256_loadu_ps(bk);
            const __m256 b1 = NV > 1 ? _mm256_loadu_ps(bk + 8) : b0;
            S_ROW(0, a0 + k) S_ROW(1, a1 + k) S_ROW(2, a2 + k)
            S_ROW(3, a3 + k) S_ROW(4, a4 + k) S_ROW(5, a5 + k)
        }
    }
    S_STORE(0) S_STORE(1) S_STORE(2) S_STORE(3) S_STORE(4) S_STORE(5)
}

static void f32_br_ukr(int mr, int nc, int64_t np, const dnnq_br_pair_f32_t *pairs,
                       int accumulate, float *c) {
    for (int col = 0; col < nc; col += 16) {
        const int nv = nc - col > 8 ? 2 : 1;
#define S_MR(NV, M) case M: strip_f32_avx2(M, NV, np, pairs, col, accumulate, c); break;
        if (nv == 2) {
            switch (mr) { S_MR(2, 1) S_MR(2, 2) S_MR(2, 3) S_MR(2, 4) S_MR(2, 5) S_MR(2, 6) }
        } else {
            switch (mr) { S_MR(1, 1) S_MR(1, 2) S_MR(1, 3) S_MR(1, 4) S_MR(1, 5) S_MR(1, 6) }
        }
#undef S_MR
    }
}

#include "gemm_f32_impl.h"
