/* AVX-512 f32 micro-kernel: up to 6 rows x 64 columns, 24 zmm accumulators, one vfmadd231ps
 * per row and 16 columns per k (dnnq_f32.h: each lane one output element's FMA chain).
 * Compiled with -mavx512f ... -mfma; called only at the AVX-512 levels. */
#include <immintrin.h>
#include "dnnq_f32.h"
#include "ukr_common.h"

#define DNNQ_F32_ISA avx512

/* Named locals, not an array (gcc keeps an array of vectors on the stack); MR and NV are
 * compile-time constants at every call site, so the guards vanish. */
#define F_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0, c##r##2 = c##r##0, \
                         c##r##3 = c##r##0;
#define F_LOAD(r)                                                                              \
    if (MR > r) {                                                                              \
        c##r##0 = _mm512_loadu_ps(c + r * DNNQ_NR);                                            \
        if (NV > 1) c##r##1 = _mm512_loadu_ps(c + r * DNNQ_NR + 16);                           \
        if (NV > 2) c##r##2 = _mm512_loadu_ps(c + r * DNNQ_NR + 32);                           \
        if (NV > 3) c##r##3 = _mm512_loadu_ps(c + r * DNNQ_NR + 48);                           \
    }
#define F_ROW(r, x)                                                                            \
    if (MR > r) {                                                                              \
        const __m512 av = _mm512_set1_ps(x);                                                   \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                            \
        if (NV > 1) c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                \
        if (NV > 2) c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);                                \
        if (NV > 3) c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);                                \
    }
#define F_STORE(r)                                                                             \
    if (MR > r) {                                                                              \
        _mm512_storeu_ps(c + r * DNNQ_NR, c##r##0);                                            \
        if (NV > 1) _mm512_storeu_ps(c + r * DNNQ_NR + 16, c##r##1);                           \
        if (NV > 2) _mm512_storeu_ps(c + r * DNNQ_NR + 32, c##r##2);                           \
        if (NV > 3) _mm512_storeu_ps(c + r * DNNQ_NR + 48, c##r##3);                           \
    }

/* MR rows x NV * 16 columns over the pairs, the accumulators in registers throughout */
DNNQ_ALWAYS_INLINE void tile_f32_avx512(const int MR, const int NV, int64_t np,
                                        const dnnq_br_pair_f32_t *pairs, int accumulate,
                                        float *c) {
    F_DECL(0) F_DECL(1) F_DECL(2) F_DECL(3) F_DECL(4) F_DECL(5)
    if (accumulate) { F_LOAD(0) F_LOAD(1) F_LOAD(2) F_LOAD(3) F_LOAD(4) F_LOAD(5) }
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
        const float *bk = q->b;
        const int64_t K = q->K;
        for (int64_t k = 0; k < K; ++k, bk += DNNQ_NR) {
            const __m512 b0 = _mm512_loadu_ps(bk);
            const __m512 b1 = NV > 1 ? _mm512_loadu_ps(bk + 16) : b0;
            const __m512 b2 = NV > 2 ? _mm512_loadu_ps(bk + 32) : b0;
            const __m512 b3 = NV > 3 ? _mm512_loadu_ps(bk + 48) : b0;
            F_ROW(0, a0[k]) F_ROW(1, a1[k]) F_ROW(2, a2[k])
            F_ROW(3, a3[k]) F_ROW(4, a4[k]) F_ROW(5, a5[k])
        }
    }
    F_STORE(0) F_STORE(1) F_STORE(2) F_STORE(3) F_STORE(4) F_STORE(5)
}

static void f32_br_ukr(int mr, int nc, int64_t np, const dnnq_br_pair_f32_t *pairs,
                       int accumulate, float *c) {
    const int nv = (nc + 15) / 16;
#define F_MR(NV, M) case M: tile_f32_avx512(M, NV, np, pairs, accumulate, c); break;
#define F_NV(NV)                                                                               \
    case NV:                                                                                   \
        switch (mr) { F_MR(NV, 1) F_MR(NV, 2) F_MR(NV, 3) F_MR(NV, 4) F_MR(NV, 5) F_MR(NV, 6) } \
        break;
    switch (nv) { F_NV(1) F_NV(2) F_NV(3) F_NV(4) }
#undef F_NV
#undef F_MR
}

#include "gemm_f32_impl.h"
