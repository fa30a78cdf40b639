/* dnnq.gemm_u8s8s32 / gemm_s8s8s32 finishing (portable C; see gemm_api.h for the numerics). */
#include "gemm_api.h"
#include "dnnq_kernels.h"
#include "isa_pick.h"

/* oneDNN's round_to_nearest (gemm_driver.cpp) up to the final truncation: x + 0.5 (x >= 0) or
 * x - 0.5 (an f64 addition of its own: 0.49999999999999994 + 0.5 == 1.0), clamped to the s32
 * range.  Written without branches (x + copysign(0.5, x) is the same sum; -0.0 gives 0 either
 * way) so that the row loops vectorize: the branchy form ran at 30 ns an element. */
static inline double round_prep(double x) {
    double y = x + __builtin_copysign(0.5, x);
    y = y > 2147483647.0 ? 2147483647.0 : y;
    y = y < -2147483648.0 ? -2147483648.0 : y;
    return y;
}

static inline int32_t wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

#define CHUNK 256

void dnnq_gemm_api_finish(const dnnq_gemm_api_block_t *blk, int64_t m0, int64_t m1) {
    const int64_t N = blk->N;
    const int negate = blk->rounded && !blk->has_prev && blk->alpha == -1.0;
    const double alpha = blk->alpha, beta = blk->beta_eff;
    int32_t a[CHUNK], v[CHUNK];
    for (int64_t m = m0; m < m1; ++m) {
        const int32_t rt = blk->rowterm ? blk->rowterm[m] : 0;
        const int32_t co_row = !blk->co ? 0 : blk->co_mode == 1 ? blk->co[m] : blk->co[0];
        for (int64_t n0 = 0; n0 < N; n0 += CHUNK) {
            const int nc = (int)(N - n0 < CHUNK ? N - n0 : CHUNK);
            const int32_t *acc = blk->acc + m * blk->ld_acc + n0;
            const int32_t *prev = blk->has_prev ? blk->prev + m * blk->ld_c + n0 : 0;
            int32_t *out = blk->out + m * blk->ld_c + n0;
            /* the block's s32 accumulator, offsets included (wrapping) */
            if (blk->colterm) {
                const int32_t *ct = blk->colterm + n0;
                for (int n = 0; n < nc; ++n) a[n] = wrap_add(wrap_add(acc[n], rt), ct[n]);
            } else {
                for (int n = 0; n < nc; ++n) a[n] = wrap_add(acc[n], rt);
            }
            if (!blk->rounded) {
                if (prev)
                    for (int n = 0; n < nc; ++n) v[n] = wrap_add(a[n], prev[n]);
                else
                    for (int n = 0; n < nc; ++n) v[n] = a[n];
            } else if (negate) {
                for (int n = 0; n < nc; ++n) v[n] = (int32_t)(0u - (uint32_t)a[n]);
            } else if (prev) {
                for (int n = 0; n < nc; ++n)
                    v[n] = (int32_t)round_prep(alpha * (double)a[n] + beta * (double)prev[n]);
            } else {
                for (int n = 0; n < nc; ++n) v[n] = (int32_t)round_prep(alpha * (double)a[n]);
            }
            /* co after the rounding, as an s32 (wrapping) */
            if (blk->co && blk->co_mode == 2) {
                const int32_t *co = blk->co + n0;
                for (int n = 0; n < nc; ++n) v[n] = wrap_add(v[n], co[n]);
            } else if (blk->co) {
                for (int n = 0; n < nc; ++n) v[n] = wrap_add(v[n], co_row);
            }
            if (blk->accumulate_out)
                for (int n = 0; n < nc; ++n) out[n] = wrap_add(out[n], v[n]);
            else
                for (int n = 0; n < nc; ++n) out[n] = v[n];
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

/* the AVX-512 packer at the AVX-512 levels (isa_pick.h), the portable one elsewhere */
DNNQ_DEFINE_PICK(dnnq_gemm_api_pack_fn, dnnq_gemm_api_pack_for_isa, dnnq_gemm_api_pack_panel,
                 DNNQ_AVX512_SETS, dnnq_gemm_api_pack_panel)

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
