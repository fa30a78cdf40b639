/* dnnq.gemm_u8s8s32 / gemm_s8s8s32 finishing (portable C; see gemm_api.h for the numerics). */
#include "gemm_api.h"
#include "dnnq_kernels.h"

/* oneDNN's round_to_nearest (gemm_driver.cpp): the +-0.5 is an f64 addition of its own (it can
 * round, e.g. 0.49999999999999994 + 0.5 == 1.0), the clamp comes before the truncation. */
static inline int32_t round_to_nearest(double x) {
    if (x >= 0.) {
        x += 0.5;
        if (x > 2147483647.0) x = 2147483647.0;
    } else {
        x -= 0.5;
        if (x < -2147483648.0) x = -2147483648.0;
    }
    return (int32_t)x;
}

static inline int32_t wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

void dnnq_gemm_api_finish(const dnnq_gemm_api_block_t *blk, int64_t m0, int64_t m1) {
    const int64_t N = blk->N;
    const int negate = blk->rounded && !blk->has_prev && blk->alpha == -1.0;
    for (int64_t m = m0; m < m1; ++m) {
        const int32_t *acc = blk->acc + m * blk->ld_acc;
        const int32_t *prev = blk->has_prev ? blk->prev + m * blk->ld_c : 0;
        int32_t *out = blk->out + m * blk->ld_c;
        const int32_t rt = blk->rowterm ? blk->rowterm[m] : 0;
        const int32_t co_row = !blk->co ? 0 : blk->co_mode == 1 ? blk->co[m] : blk->co[0];
        for (int64_t n = 0; n < N; ++n) {
            int32_t a = wrap_add(acc[n], rt);
            if (blk->colterm) a = wrap_add(a, blk->colterm[n]);
            int32_t v;
            if (!blk->rounded)
                v = prev ? wrap_add(a, prev[n]) : a;
            else if (negate)
                v = (int32_t)(0u - (uint32_t)a);
            else if (prev)
                v = round_to_nearest(blk->alpha * (double)a + blk->beta_eff * (double)prev[n]);
            else
                v = round_to_nearest(blk->alpha * (double)a);
            if (blk->co) v = wrap_add(v, blk->co_mode == 2 ? blk->co[n] : co_row);
            out[n] = blk->accumulate_out ? wrap_add(out[n], v) : v;
        }
    }
}

#define NR 64

void dnnq_gemm_api_pack_panel(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K, int64_t nc,
                              int8_t *packed, int32_t *colsum) {
    const int64_t K4 = (K + 3) / 4;
    int32_t sum[NR];
    for (int n = 0; n < NR; ++n) sum[n] = 0;
    if (s_n == 1) {
        /* row-major op(B): four rows of nc bytes interleaved into one 256-byte group */
        static const int8_t zero_row[NR];
        for (int64_t k4 = 0; k4 < K4; ++k4) {
            const int8_t *r[4];
            for (int i = 0; i < 4; ++i)
                r[i] = 4 * k4 + i < K ? w + (4 * k4 + i) * s_k : zero_row;
            int8_t *o = packed + k4 * 4 * NR;
            if (nc == NR) {
                for (int n = 0; n < NR; ++n) {
                    const int8_t a = r[0][n], b = r[1][n], c = r[2][n], d = r[3][n];
                    o[4 * n] = a; o[4 * n + 1] = b; o[4 * n + 2] = c; o[4 * n + 3] = d;
                    sum[n] += (int32_t)a + b + c + d;
                }
            } else {
                for (int n = 0; n < NR; ++n) {
                    int8_t a = 0, b = 0, c = 0, d = 0;
                    if (n < nc) { a = r[0][n]; b = r[1][n]; c = r[2][n]; d = r[3][n]; }
                    o[4 * n] = a; o[4 * n + 1] = b; o[4 * n + 2] = c; o[4 * n + 3] = d;
                    sum[n] += (int32_t)a + b + c + d;
                }
            }
        }
    } else {
        /* column-wise op(B) (transposed B: s_k == 1 gives contiguous 4-byte k runs) */
        for (int n = 0; n < NR; ++n) {
            const int8_t *col = w + n * s_n;
            int32_t s = 0;
            for (int64_t k4 = 0; k4 < K4; ++k4) {
                int8_t *o = packed + (k4 * NR + n) * 4;
                for (int kk = 0; kk < 4; ++kk) {
                    const int64_t k = 4 * k4 + kk;
                    const int8_t x = n < nc && k < K ? col[k * s_k] : 0;
                    o[kk] = x;
                    s += x;
                }
            }
            sum[n] = s;
        }
    }
    for (int64_t n = 0; n < nc; ++n) colsum[n] = sum[n];
}

dnnq_gemm_api_pack_fn dnnq_gemm_api_pack_for_isa(int isa) {
#ifdef DNNQ_HAVE_X86_KERNELS
    if (isa >= DNNQ_ISA_AVX512_CORE_VNNI) return dnnq_gemm_api_pack_panel_avx512;
#endif
    (void)isa;
    return dnnq_gemm_api_pack_panel;
}

void dnnq_gemm_api_rowsum(const uint8_t *a, int64_t lda, int64_t K, int is_s8, int64_t m0,
                          int64_t m1, int32_t *rowsum) {
    for (int64_t m = m0; m < m1; ++m) {
        const uint8_t *r = a + m * lda;
        uint32_t s = 0;
        if (is_s8)
            for (int64_t k = 0; k < K; ++k) s += (uint32_t)(int32_t)(int8_t)r[k];
        else
            for (int64_t k = 0; k < K; ++k) s += r[k];
        rowsum[m] = (int32_t)s;
    }
}

void dnnq_gemm_api_gather(const uint8_t *src, int64_t s_m, int64_t s_k, int64_t K, int64_t m0,
                          int64_t m1, uint8_t *dst) {
    /* 16-row x 256-k tiles: each source line read once per tile when s_m is small */
    for (int64_t mb = m0; mb < m1; mb += 16) {
        const int64_t me = mb + 16 < m1 ? mb + 16 : m1;
        for (int64_t kb = 0; kb < K; kb += 256) {
            const int64_t ke = kb + 256 < K ? kb + 256 : K;
            for (int64_t m = mb; m < me; ++m) {
                const uint8_t *s = src + m * s_m;
                uint8_t *d = dst + m * K;
                for (int64_t k = kb; k < ke; ++k) d[k] = s[k * s_k];
            }
        }
    }
}
