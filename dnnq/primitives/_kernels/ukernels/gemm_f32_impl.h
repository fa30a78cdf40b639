/* The ISA-independent part of the f32 GEMM (dnnq_f32.h): the block driver over a row block of
 * one column panel, the epilogue, the depthwise kernel.  Included once per ISA by
 * gemm_f32_<isa>.c after it defined
 *   DNNQ_F32_ISA           the suffix (portable, avx2, avx512)
 *   f32_br_ukr(...)        its batch-reduce micro-kernel (signature of dnnq_brgemm_f32_fn)
 * so that the epilogue and the depthwise loops are compiled (and auto-vectorised: fmaf
 * becomes one FMA instruction where the flags allow it) with that ISA's flags. */
#include <math.h>
#include <string.h>
#include "dnnq_f32.h"
#include "epilogue_generic.h"

#define DNNQ_F32_CAT2(a, b) a##_##b
#define DNNQ_F32_CAT(a, b) DNNQ_F32_CAT2(a, b)
#define DNNQ_F32_FN(name) DNNQ_F32_CAT(name, DNNQ_F32_ISA)

/* k rows of a panel per pass over a row block when K is long: 64 KiB of the panel, which
 * stays in L2 while the block's tiles (their accumulators in a buffer) go by; the chains
 * continue through the buffer, so the order stays the documented one */
#define DNNQ_F32_KC 256
/* rows of one block pass (the accumulator buffer: 24 KiB) */
#define DNNQ_F32_BLOCK_ROWS 96

void DNNQ_F32_FN(dnnq_brgemm_f32)(int mr, int nc, int64_t npairs,
                                   const dnnq_br_pair_f32_t *pairs, int accumulate, float *c) {
    f32_br_ukr(mr, nc, npairs, pairs, accumulate, c);
}

/* acc row (nc columns from n0, row m of batch b) -> dst */
static inline void f32_epilogue_row(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int64_t n0,
                                    int nc, const float *acc) {
    float v[DNNQ_NR];
    memcpy(v, acc, sizeof(float) * (size_t)nc);
    const int esz = g->dst_dt == DNNQ_DT_S8 || g->dst_dt == DNNQ_DT_U8 ? 1 : 4;
    char *drow = (char *)g->dst + (b * g->d_sb + m * g->d_sm + n0) * esz;
    dnnq_epilogue_finish(g, b, m, n0, nc, v, drow);
}

void DNNQ_F32_FN(dnnq_gemm_epilogue_f32)(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,
                                          int64_t p, const float *tile) {
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    for (int r = 0; r < mr; ++r) f32_epilogue_row(g, b, m + r, n0, nc, tile + r * DNNQ_NR);
}

/* Rows [m0, m0 + mc) of batch b, column panel p.  A: f32 rows a_sm apart; B: the packed panel.
 * A short K: each tile runs its whole K and goes through the epilogue while in L1.  A long K:
 * passes of DNNQ_F32_KC rows of the panel over all the block's tiles, their chains carried in
 * the accumulator buffer. */
void DNNQ_F32_FN(dnnq_gemm_block_f32)(const dnnq_gemm_args_t *g, int64_t b, int64_t m0,
                                       int64_t mc, int64_t p) {
    float buf[DNNQ_F32_BLOCK_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t n0 = p * DNNQ_NR, K = g->K, lda = g->a_sm;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    const float *A = (const float *)(const void *)g->a + b * g->a_sb;
    const float *B = (const float *)(const void *)g->b + b * g->b_sb + p * K * DNNQ_NR;
    const int MR = DNNQ_F32_MR;
#ifdef DNNQ_F32_FUSED
    /* the common epilogue applied from the registers (the same bits as the generic one) */
    dnnq_f32_epi_state_t st;
    const int fused = DNNQ_F32_FN(dnnq_f32_epi_prepare)(g, b, p, &st);
#define F32_TILE_DONE(mr, q, acc, c, m)                                                        \
    if (fused) {                                                                               \
        DNNQ_F32_FN(dnnq_brgemm_f32_epi)(mr, 1, q, acc, c, &st, m, 1);                         \
        continue;                                                                              \
    }
#else
#define F32_TILE_DONE(mr, q, acc, c, m)
#endif
    for (int64_t mb = m0; mb < m0 + mc; mb += DNNQ_F32_BLOCK_ROWS) {
        const int64_t rows = m0 + mc - mb < DNNQ_F32_BLOCK_ROWS ? m0 + mc - mb
                                                                : DNNQ_F32_BLOCK_ROWS;
        /* rows split evenly over the tiles (a short tile reuses each B vector less) */
        const int64_t ntiles = (rows + MR - 1) / MR;
        if (K <= DNNQ_F32_KC + DNNQ_F32_KC / 2) {
            for (int64_t t = 0; t < ntiles; ++t) {
                const int64_t m = mb + (rows * t) / ntiles;
                const int mr = (int)(mb + (rows * (t + 1)) / ntiles - m);
                const dnnq_br_pair_f32_t q = {A + m * lda, lda, NULL, B, K};
                F32_TILE_DONE(mr, &q, 0, NULL, m)
                f32_br_ukr(mr, nc, 1, &q, 0, buf);
                DNNQ_F32_FN(dnnq_gemm_epilogue_f32)(g, b, m, mr, p, buf);
            }
            continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += DNNQ_F32_KC) {
            const int64_t kc = K - k0 < DNNQ_F32_KC ? K - k0 : DNNQ_F32_KC;
            for (int64_t t = 0; t < ntiles; ++t) {
                const int64_t m = mb + (rows * t) / ntiles;
                const int mr = (int)(mb + (rows * (t + 1)) / ntiles - m);
                const dnnq_br_pair_f32_t q = {A + m * lda + k0, lda, NULL, B + k0 * DNNQ_NR, kc};
                if (k0 + kc == K) { /* the last pass */
                    F32_TILE_DONE(mr, &q, k0 > 0, buf + (m - mb) * DNNQ_NR, m)
                }
                f32_br_ukr(mr, nc, 1, &q, k0 > 0, buf + (m - mb) * DNNQ_NR);
            }
        }
#ifdef DNNQ_F32_FUSED
        if (fused) continue;
#endif
        DNNQ_F32_FN(dnnq_gemm_epilogue_f32)(g, b, mb, (int)rows, p, buf);
    }
}

#ifndef DNNQ_F32_DW_KERNEL /* (the ISA file's own, else this loop nest) */
void DNNQ_F32_FN(dnnq_dw_f32)(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                               int nc, const float *w, float *acc) {
    for (int r = 0; r < mr; ++r) {
        float a[DNNQ_NR];
        for (int c = 0; c < DNNQ_NR; ++c) a[c] = 0.0f;
        for (int64_t t = 0; t < ntaps; ++t) {
            const float *x = ps ? rows[t] + r * ps : rows[t * mr + r];
            if (!x) continue;
            const float *wt = w + t * DNNQ_NR;
            if (nc == DNNQ_NR) {
                for (int c = 0; c < DNNQ_NR; ++c) a[c] = fmaf(x[c], wt[c], a[c]);
            } else {
                for (int c = 0; c < nc; ++c) a[c] = fmaf(x[c], wt[c], a[c]);
            }
        }
        memcpy(acc + r * DNNQ_NR, a, sizeof(a));
    }
}
#endif
#undef F32_TILE_DONE
