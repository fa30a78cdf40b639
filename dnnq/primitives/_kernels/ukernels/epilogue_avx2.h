/* The fused epilogue of the common case for the 256-bit ISAs (AVX2, AVX-VNNI): per-N (or
 * common) compensation, scales, bias and dst zero point, relu / linear post-ops, any dst type.
 * The same f32 operations, in the same order, as dnnq_epilogue_row (gemm_impl.h) and the
 * AVX-512 epilogue, hence the same bits.  A 64-column row is 8 vectors of 8; 8-bit results are
 * packed with vpackssdw / vpacksswb (exact: the values are already clamped to the range).
 * Included by gemm_avx2.c and gemm_avxvnni.c (compiled with -mavx2 -mfma). */
#ifndef DNNQ_EPILOGUE_AVX2_H
#define DNNQ_EPILOGUE_AVX2_H
#include <immintrin.h>
#include <string.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

enum { EPI2_NONE = 0, EPI2_RELU0 = 1, EPI2_CHAIN = 2 };
enum { EPI2_RAW = 4 };

typedef struct {
    __m256i cc[8];
    __m256 sc[8], bi[8], zp[8];
    __m256 inv, lo, hi;
    int has_bias, has_zp, has_cc, post, kind, nc;
    char *d0;       /* dst of (batch, row 0, column n0) */
    int64_t ldd;    /* its row stride in bytes */
} epi2_consts_t;

DNNQ_ALWAYS_INLINE __m256 epi2_post(const int POST, __m256 v, const dnnq_gemm_args_t *g) {
    if (POST == EPI2_RELU0) return _mm256_max_ps(v, _mm256_setzero_ps()); /* -0.0, NaN -> +0 */
    if (POST == EPI2_CHAIN) {
        for (int i = 0; i < g->n_post; ++i) {
            const dnnq_postop_t *po = &g->post[i];
            if (po->alg == DNNQ_ELT_RELU) {
                if (po->alpha == 0.0f) v = _mm256_max_ps(v, _mm256_setzero_ps());
                else v = _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(po->alpha)), v,
                                          _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
            } else { /* linear, fused as oneDNN does */
                v = _mm256_fmadd_ps(_mm256_set1_ps(po->alpha), v, _mm256_set1_ps(po->beta));
            }
        }
    }
    return v;
}

/* one vector of 8 columns, up to the rounding: the f32 value to store */
DNNQ_ALWAYS_INLINE __m256 epi2_value(const int DT, const int POST, const dnnq_gemm_args_t *g,
                                     const epi2_consts_t *k, __m256i ai, int j) {
    if (k->has_cc) ai = _mm256_add_epi32(ai, k->cc[j]);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(ai), k->sc[j]);
    if (k->has_bias) v = _mm256_add_ps(v, k->bi[j]);
    v = epi2_post(POST, v, g);
    __m256 d = _mm256_mul_ps(v, k->inv);
    if (k->has_zp) d = _mm256_add_ps(d, k->zp[j]); /* no "+ 0": -0.0 stays for f32 */
    if (DT == DNNQ_DT_F32) return d;
    /* min/max return their second operand for a NaN first one: NaN -> top (s8, s32) or
     * bottom (u8), what oneDNN's matmul stores */
    if (DT == DNNQ_DT_U8) return _mm256_min_ps(_mm256_max_ps(d, k->lo), k->hi);
    return _mm256_max_ps(_mm256_min_ps(d, k->hi), k->lo);
}

DNNQ_ALWAYS_INLINE void epi2_tile(const int DT, const int POST, const dnnq_gemm_args_t *g,
                                  const epi2_consts_t *k, const int32_t *tile, int mr, char *d0,
                                  int64_t ldd, int nc) {
    for (int r = 0; r < mr; ++r) {
        const int32_t *t = tile + r * DNNQ_NR;
        char *o = d0 + r * ldd;
        if (DT == EPI2_RAW) {
            int32_t buf[DNNQ_NR];
            for (int j = 0; j < 8; ++j) {
                __m256i ai = _mm256_loadu_si256((const __m256i *)(t + 8 * j));
                if (k->has_cc) ai = _mm256_add_epi32(ai, k->cc[j]);
                _mm256_storeu_si256((__m256i *)(buf + 8 * j), ai);
            }
            memcpy(o, buf, sizeof(int32_t) * nc);
        } else if (DT == DNNQ_DT_F32 || DT == DNNQ_DT_S32) {
            int32_t buf[DNNQ_NR] __attribute__((aligned(32)));
            for (int j = 0; j < 8 && 8 * j < nc; ++j) {
                const __m256 d = epi2_value(DT, POST, g, k, _mm256_loadu_si256((const __m256i *)(t + 8 * j)), j);
                if (DT == DNNQ_DT_F32) _mm256_store_ps((float *)(buf + 8 * j), d);
                else _mm256_store_si256((__m256i *)(buf + 8 * j), _mm256_cvtps_epi32(d));
            }
            memcpy(o, buf, sizeof(int32_t) * nc);
        } else {
            /* 8-bit: 32 columns at a time, packed s32 -> s16 -> s8/u8 with saturation (exact
             * here: already clamped), the lane interleave undone by one permute */
            uint8_t buf[DNNQ_NR] __attribute__((aligned(32)));
            for (int h = 0; h < 2 && 32 * h < nc; ++h) {
                __m256i q[4];
                for (int u = 0; u < 4; ++u) {
                    const int j = 4 * h + u;
                    q[u] = _mm256_cvtps_epi32(epi2_value(DT, POST, g, k,
                                              _mm256_loadu_si256((const __m256i *)(t + 8 * j)), j));
                }
                const __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
                const __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
                __m256i b = DT == DNNQ_DT_S8 ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
                b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                _mm256_store_si256((__m256i *)(buf + 32 * h), b);
            }
            memcpy(o, buf, (size_t)nc);
        }
    }
}

/* Once per block (batch b, the 64 columns from n0): the per-column vectors and the variant. */
static void epi2_prepare(const dnnq_gemm_args_t *g, int64_t b, int64_t n0, int nc,
                         epi2_consts_t *k) {
    const float ss = g->src_scale;
    const int dt = g->dst_dt;
    int32_t ccb[DNNQ_NR] = {0}, zpb[DNNQ_NR] = {0};
    float scb[DNNQ_NR] = {0}, bib[DNNQ_NR] = {0};
    const int32_t *cc = g->col_comp + b * g->c_sb + n0;
    k->has_cc = 0;
    for (int n = 0; n < nc; ++n) {
        ccb[n] = cc[n];
        k->has_cc |= cc[n] != 0;
        scb[n] = g->scale_sn ? ss * g->scale[n0 + n] : ss * g->scale[0];
        if (g->bias) bib[n] = g->bias_sn ? g->bias[n0 + n] : g->bias[0];
        if (g->dst_zp) zpb[n] = g->dst_zp_sn ? g->dst_zp[n0 + n] : g->dst_zp[0];
    }
    for (int j = 0; j < 8; ++j) {
        k->cc[j] = _mm256_loadu_si256((const __m256i *)(ccb + 8 * j));
        k->sc[j] = _mm256_loadu_ps(scb + 8 * j);
        k->bi[j] = _mm256_loadu_ps(bib + 8 * j);
        k->zp[j] = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(zpb + 8 * j)));
    }
    k->has_bias = g->bias != NULL;
    k->has_zp = g->dst_zp != NULL;
    k->inv = _mm256_set1_ps(g->inv_dst_scale);
    k->lo = _mm256_set1_ps(dt == DNNQ_DT_S8 ? -128.0f : dt == DNNQ_DT_U8 ? 0.0f : -2147483648.0f);
    k->hi = _mm256_set1_ps(dt == DNNQ_DT_S8 ? 127.0f : dt == DNNQ_DT_U8 ? 255.0f : 2147483520.0f);
    const int esz = dt == DNNQ_DT_S8 || dt == DNNQ_DT_U8 ? 1 : 4;
    k->d0 = (char *)g->dst + (b * g->d_sb + n0) * esz;
    k->ldd = g->d_sm * esz;
    k->nc = nc;
    k->post = g->n_post == 0 ? EPI2_NONE
              : (g->n_post == 1 && g->post[0].alg == DNNQ_ELT_RELU && g->post[0].alpha == 0.0f)
                  ? EPI2_RELU0 : EPI2_CHAIN;
    k->kind = g->raw_s32 ? EPI2_RAW : dt;
}

static void fast_epilogue_avx2(const dnnq_gemm_args_t *g, const epi2_consts_t *k, int64_t m,
                               int mr, const int32_t *tile) {
    char *d0 = k->d0 + m * k->ldd;
    const int64_t ldd = k->ldd;
    const int nc = k->nc;
#define EPI2_CASE(D)                                                                              \
    case D:                                                                                       \
        if (k->post == EPI2_NONE) epi2_tile(D, EPI2_NONE, g, k, tile, mr, d0, ldd, nc);           \
        else if (k->post == EPI2_RELU0) epi2_tile(D, EPI2_RELU0, g, k, tile, mr, d0, ldd, nc);    \
        else epi2_tile(D, EPI2_CHAIN, g, k, tile, mr, d0, ldd, nc);                               \
        break;
    switch (k->kind) {
    EPI2_CASE(DNNQ_DT_F32) EPI2_CASE(DNNQ_DT_S32) EPI2_CASE(DNNQ_DT_S8) EPI2_CASE(DNNQ_DT_U8)
    case EPI2_RAW: epi2_tile(EPI2_RAW, EPI2_NONE, g, k, tile, mr, d0, ldd, nc); break;
    }
#undef EPI2_CASE
}
#define DNNQ_FAST_EPILOGUE fast_epilogue_avx2
#define DNNQ_EPI_PREPARE epi2_prepare
typedef epi2_consts_t dnnq_epi_consts_t;
#endif
