/* AVX512-VNNI micro-kernel: 6 rows x 64 columns, 24 zmm accumulators, one vpdpbusd per
 * 16 columns x 4 k.  Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni,
 * called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

#define DNNQ_ISA avx512vnni
#define DNNQ_MR 6

/* The accumulators are 24 named locals, not an array: gcc keeps an array of vectors on the
 * stack (a store and a load per update), named locals stay in registers.  MR and XOR are
 * compile-time constants at every call site, so the `if (MR > r)` guards vanish. */
#define ACC_DECL(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0, c##r##3 = c##r##0;
#define ACC_ROW(r, aword)                                                                         \
    if (MR > r) {                                                                                 \
        __m512i av = _mm512_set1_epi32((int)(aword));                                             \
        if (XOR) av = _mm512_xor_si512(av, vx);                                                   \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                                           \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);                                           \
        c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, b2);                                           \
        c##r##3 = _mm512_dpbusd_epi32(c##r##3, av, b3);                                           \
    }
#define ACC_STORE(r)                                                                              \
    if (MR > r) {                                                                                 \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR), c##r##0);                                  \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 16), c##r##1);                             \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 32), c##r##2);                             \
        _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 48), c##r##3);                             \
    }
#define LOAD_B(bk)                                                                                \
    const __m512i b0 = _mm512_loadu_si512((const void *)(bk));                                   \
    const __m512i b1 = _mm512_loadu_si512((const void *)((bk) + 64));                             \
    const __m512i b2 = _mm512_loadu_si512((const void *)((bk) + 128));                            \
    const __m512i b3 = _mm512_loadu_si512((const void *)((bk) + 192));

DNNQ_ALWAYS_INLINE void tile_avx512(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                    int64_t lda, const int8_t *bp, int32_t *c) {
    const __m512i vx = _mm512_set1_epi32((int)0x80808080);
    ACC_DECL(0) ACC_DECL(1) ACC_DECL(2) ACC_DECL(3) ACC_DECL(4) ACC_DECL(5)
    const uint8_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda,
                  *a5 = a + 5 * lda;
    const int64_t K4f = K / 4;
    for (int64_t k4 = 0; k4 < K4f; ++k4) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        LOAD_B(bk)
        ACC_ROW(0, dnnq_load_a4(a0, k4)) ACC_ROW(1, dnnq_load_a4(a1, k4))
        ACC_ROW(2, dnnq_load_a4(a2, k4)) ACC_ROW(3, dnnq_load_a4(a3, k4))
        ACC_ROW(4, dnnq_load_a4(a4, k4)) ACC_ROW(5, dnnq_load_a4(a5, k4))
    }
    ACC_STORE(0) ACC_STORE(1) ACC_STORE(2) ACC_STORE(3) ACC_STORE(4) ACC_STORE(5)
}


/* One row (M = 1, the batch-1 case): with only 4 accumulators the vpdpbusd latency chain would
 * bound the loop, so k is split over two accumulator sets (even / odd k4), summed at the end. */
DNNQ_ALWAYS_INLINE void row1_avx512(const int XOR, int64_t K, const uint8_t *a, const int8_t *bp,
                                    int32_t *c) {
    const __m512i vx = _mm512_set1_epi32((int)0x80808080);
    __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0;
    __m512i o0 = e0, o1 = e0, o2 = e0, o3 = e0;
    const int64_t K4f = K / 4;
    int64_t k4 = 0;
    for (; k4 + 1 < K4f; k4 += 2) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        __m512i av = _mm512_set1_epi32((int)dnnq_load_a4(a, k4));
        __m512i aw = _mm512_set1_epi32((int)dnnq_load_a4(a, k4 + 1));
        if (XOR) { av = _mm512_xor_si512(av, vx); aw = _mm512_xor_si512(aw, vx); }
        e0 = _mm512_dpbusd_epi32(e0, av, _mm512_loadu_si512((const void *)bk));
        e1 = _mm512_dpbusd_epi32(e1, av, _mm512_loadu_si512((const void *)(bk + 64)));
        e2 = _mm512_dpbusd_epi32(e2, av, _mm512_loadu_si512((const void *)(bk + 128)));
        e3 = _mm512_dpbusd_epi32(e3, av, _mm512_loadu_si512((const void *)(bk + 192)));
        o0 = _mm512_dpbusd_epi32(o0, aw, _mm512_loadu_si512((const void *)(bk + 256)));
        o1 = _mm512_dpbusd_epi32(o1, aw, _mm512_loadu_si512((const void *)(bk + 320)));
        o2 = _mm512_dpbusd_epi32(o2, aw, _mm512_loadu_si512((const void *)(bk + 384)));
        o3 = _mm512_dpbusd_epi32(o3, aw, _mm512_loadu_si512((const void *)(bk + 448)));
    }
    if (k4 < K4f) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        __m512i av = _mm512_set1_epi32((int)dnnq_load_a4(a, k4));
        if (XOR) av = _mm512_xor_si512(av, vx);
        e0 = _mm512_dpbusd_epi32(e0, av, _mm512_loadu_si512((const void *)bk));
        e1 = _mm512_dpbusd_epi32(e1, av, _mm512_loadu_si512((const void *)(bk + 64)));
        e2 = _mm512_dpbusd_epi32(e2, av, _mm512_loadu_si512((const void *)(bk + 128)));
        e3 = _mm512_dpbusd_epi32(e3, av, _mm512_loadu_si512((const void *)(bk + 192)));
    }
    _mm512_storeu_si512((void *)c, _mm512_add_epi32(e0, o0));
    _mm512_storeu_si512((void *)(c + 16), _mm512_add_epi32(e1, o1));
    _mm512_storeu_si512((void *)(c + 32), _mm512_add_epi32(e2, o2));
    _mm512_storeu_si512((void *)(c + 48), _mm512_add_epi32(e3, o3));
}

/* The K % 4 tail, added into the stored tile (kept out of the main loop: with it inside,
 * gcc 12 spills the accumulators on every iteration). */
DNNQ_ALWAYS_INLINE void tail_avx512(int mr, const int XOR, int64_t K, const uint8_t *a,
                                    int64_t lda, const int8_t *bp, int32_t *c) {
    const __m512i vx = _mm512_set1_epi32((int)0x80808080);
    const int8_t *bk = bp + (K / 4) * 4 * DNNQ_NR;
    for (int r = 0; r < mr; ++r) {
        __m512i av = _mm512_set1_epi32((int)dnnq_load_a_tail(a + r * lda, K));
        if (XOR) av = _mm512_xor_si512(av, vx);
        for (int j = 0; j < 4; ++j) {
            __m512i acc = _mm512_loadu_si512((const void *)(c + r * DNNQ_NR + 16 * j));
            acc = _mm512_dpbusd_epi32(acc, av, _mm512_loadu_si512((const void *)(bk + 64 * j)));
            _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 16 * j), acc);
        }
    }
}

static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (a_xor) tile_avx512(m, 1, K, a, lda, bp, c);                                           \
        else tile_avx512(m, 0, K, a, lda, bp, c);                                                 \
        break;
    switch (mr) {
    case 1:
        if (a_xor) row1_avx512(1, K, a, bp, c);
        else row1_avx512(0, K, a, bp, c);
        break;
    DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6)
    }
#undef DNNQ_CASE
    if (K & 3) {
        if (a_xor) tail_avx512(mr, 1, K, a, lda, bp, c);
        else tail_avx512(mr, 0, K, a, lda, bp, c);
    }
}

/* The fused epilogue of the common case, in AVX-512 on the stored tile: per-N (or common)
 * compensation, scales, bias and dst zero point, relu / linear post-ops, any dst type.
 * Operation for operation the same f32 arithmetic as dnnq_epilogue_row (gemm_impl.h), hence
 * the same bits; it only avoids that generic code's passes over stack arrays. */
static void fast_epilogue_avx512(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,
                                 int64_t n0, int nc, const int32_t *tile) {
    __m512 sc[4], bi[4], zp[4];
    __m512i cc[4];
    __mmask16 km[4];
    const float ss = g->src_scale;
    const int has_bias = g->bias != NULL, has_zp = g->dst_zp != NULL;
    for (int j = 0; j < 4; ++j) {
        const int left = nc - 16 * j;
        km[j] = left >= 16 ? (__mmask16)0xFFFF : (left <= 0 ? 0 : (__mmask16)((1u << left) - 1));
        cc[j] = _mm512_maskz_loadu_epi32(km[j], g->col_comp + b * g->c_sb + n0 + 16 * j);
        sc[j] = g->scale_sn ? _mm512_mul_ps(_mm512_set1_ps(ss),
                                            _mm512_maskz_loadu_ps(km[j], g->scale + n0 + 16 * j))
                            : _mm512_set1_ps(ss * g->scale[0]);
        if (has_bias)
            bi[j] = g->bias_sn ? _mm512_maskz_loadu_ps(km[j], g->bias + n0 + 16 * j)
                               : _mm512_set1_ps(g->bias[0]);
        if (has_zp)
            zp[j] = g->dst_zp_sn
                        ? _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(km[j], g->dst_zp + n0 + 16 * j))
                        : _mm512_set1_ps((float)g->dst_zp[0]);
    }
    const __m512 inv = _mm512_set1_ps(g->inv_dst_scale), zero = _mm512_setzero_ps();
    const int dt = g->dst_dt;
    const int esz = dt == DNNQ_DT_S8 || dt == DNNQ_DT_U8 ? 1 : 4;
    const __m512 lo = _mm512_set1_ps(dt == DNNQ_DT_S8 ? -128.0f : dt == DNNQ_DT_U8 ? 0.0f : -2147483648.0f);
    const __m512 hi = _mm512_set1_ps(dt == DNNQ_DT_S8 ? 127.0f : dt == DNNQ_DT_U8 ? 255.0f : 2147483520.0f);
    const __m512 nanv = _mm512_set1_ps(dt == DNNQ_DT_S8 ? 127.0f : 0.0f);
    for (int r = 0; r < mr; ++r) {
        char *drow = (char *)g->dst + ((b * g->d_sb + (m + r) * g->d_sm + n0) * esz);
        for (int j = 0; j < 4 && km[j]; ++j) {
            const __m512i ai = _mm512_add_epi32(_mm512_loadu_si512(tile + r * DNNQ_NR + 16 * j), cc[j]);
            if (g->raw_s32) {
                _mm512_mask_storeu_epi32(drow + 64 * j, km[j], ai);
                continue;
            }
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(ai), sc[j]);
            if (has_bias) v = _mm512_add_ps(v, bi[j]);
            for (int i = 0; i < g->n_post; ++i) {
                const dnnq_postop_t *po = &g->post[i];
                if (po->alg == DNNQ_ELT_RELU) {
                    if (po->alpha == 0.0f) v = _mm512_max_ps(v, zero); /* -0.0 and NaN give +0 */
                    else v = _mm512_mask_mov_ps(_mm512_mul_ps(v, _mm512_set1_ps(po->alpha)),
                                                _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
                } else { /* linear, fused as oneDNN does */
                    v = _mm512_fmadd_ps(_mm512_set1_ps(po->alpha), v, _mm512_set1_ps(po->beta));
                }
            }
            __m512 d = _mm512_mul_ps(v, inv);
            if (has_zp) d = _mm512_add_ps(d, zp[j]);
            if (dt == DNNQ_DT_F32) {
                _mm512_mask_storeu_ps(drow + 64 * j, km[j], d);
                continue;
            }
            d = _mm512_mask_mov_ps(d, _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q), nanv);
            d = _mm512_min_ps(_mm512_max_ps(d, lo), hi);
            const __m512i q = _mm512_cvtps_epi32(d); /* MXCSR default: round half to even */
            if (dt == DNNQ_DT_S8)
                _mm_mask_storeu_epi8(drow + 16 * j, km[j], _mm512_cvtsepi32_epi8(q));
            else if (dt == DNNQ_DT_U8)
                _mm_mask_storeu_epi8(drow + 16 * j, km[j], _mm512_cvtusepi32_epi8(q));
            else
                _mm512_mask_storeu_epi32(drow + 64 * j, km[j], q);
        }
    }
}
#define DNNQ_FAST_EPILOGUE fast_epilogue_avx512

#include "gemm_impl.h"
