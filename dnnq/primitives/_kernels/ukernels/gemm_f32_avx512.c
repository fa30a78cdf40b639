/* AVX-512 f32 micro-kernel: up to 6 rows x 64 columns, 24 zmm accumulators, one vfmadd231ps
 * per row and 16 columns per k (dnnq_f32.h: each lane one output element's FMA chain).
 * Compiled with -mavx512f ... -mfma; called only at the AVX-512 levels. */
#include <immintrin.h>
#include "dnnq_f32.h"
#include "ukr_common.h"
#include "postop_avx512.h"

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
/* ---- the fused epilogue (dnnq_f32.h: dnnq_brgemm_f32_epi_fn) ------------------------------ */
enum {
    F32E_RELU0 = 1, F32E_RELU, F32E_LINEAR, F32E_SUM, F32E_CLIP, F32E_CLIP_V2, F32E_HARDSIGMOID,
    F32E_HARDSWISH, F32E_ROUND
};
#define F32E_MAX_POST 8
typedef struct {
    __m512 bi[4], zp[4];        /* per-column bias and dst zero point (when present) */
    __m512 inv;                 /* 1 / dst scale */
    __mmask16 km[4];            /* the columns of each vector inside the panel */
    int nv, dt, has_bias, has_zp, scaled, n_post;
    int chain;                  /* 0: no post-op, 1: relu(0) alone, 2: the loop below */
    int kind[F32E_MAX_POST];
    float alpha[F32E_MAX_POST], beta[F32E_MAX_POST];
    char *d0;                   /* dst of (batch, row 0, the panel's column 0) */
    int64_t ldd;                /* its row stride in bytes */
} f32_epi_t;
_Static_assert(sizeof(f32_epi_t) <= sizeof(dnnq_f32_epi_state_t), "dnnq_f32_epi_state_t too small");

/* vector j of the dst row at o as it was (the sum post-op's previous value) */
DNNQ_ALWAYS_INLINE __m512 f32e_prev(const int DT, const f32_epi_t *e, int j, const char *o) {
    if (DT == DNNQ_DT_S8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(e->km[j], o + 16 * j)));
    if (DT == DNNQ_DT_U8)
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(e->km[j], o + 16 * j)));
    return _mm512_maskz_loadu_ps(e->km[j], o + 64 * j);
}

/* R (<= 16) rows' vector j (columns 16 j ..; rows o, o + ldd, ...) finished up to the store:
 * dnnq_epilogue_finish's f32 operations in its order (bias, post-ops, v * (1 / dst scale)
 * [+ zero point]), post-op by post-op over the R vectors: one decision per post-op and block
 * (the depthwise row kernel's blocks of 16 pixels with PP-LCNet's hardswish + affine chains:
 * a switch per vector cost as much as the layer's FMAs).  A dst scale of 1 skips its
 * multiply (x * 1 == x for every non-signalling value, and no arithmetic result is
 * signalling). */
#define F32E_EACH(EXPR)                                                                        \
    for (int r = 0; r < R; ++r) {                                                              \
        const __m512 x = v[r];                                                                 \
        v[r] = (EXPR);                                                                         \
    }
DNNQ_ALWAYS_INLINE void f32e_values(const int DT, const f32_epi_t *e, __m512 *v, const int R,
                                    int j, const char *o, int64_t ldd) {
    if (e->has_bias) F32E_EACH(_mm512_add_ps(x, e->bi[j]))
    if (e->chain == 1) { /* relu(0) alone, the common case: one vmaxps */
        F32E_EACH(_mm512_max_ps(x, _mm512_setzero_ps()))
    } else if (e->chain == 2) { /* postop_avx512.h's steps */
        for (int i = 0; i < e->n_post; ++i) {
            const __m512 al = _mm512_set1_ps(e->alpha[i]), be = _mm512_set1_ps(e->beta[i]);
            switch (e->kind[i]) {
            case F32E_RELU0: F32E_EACH(epo_relu0(x)) break;
            case F32E_RELU: F32E_EACH(epo_relu(x, al)) break;
            case F32E_LINEAR: F32E_EACH(epo_linear(x, al, be)) break;
            case F32E_CLIP: F32E_EACH(epo_clip(x, al, be)) break;
            case F32E_CLIP_V2: F32E_EACH(epo_clip_v2(x, al, be)) break;
            case F32E_HARDSIGMOID: F32E_EACH(epo_hardsigmoid(x, al, be)) break;
            case F32E_HARDSWISH: F32E_EACH(epo_hardswish(x, al, be)) break;
            case F32E_ROUND: F32E_EACH(epo_round(x)) break;
            default: /* sum: each row's previous dst value */
                for (int r = 0; r < R; ++r)
                    v[r] = epo_sum(v[r], f32e_prev(DT, e, j, o + r * ldd), al, be);
            }
        }
    }
    if (e->scaled) F32E_EACH(_mm512_mul_ps(x, e->inv))
    if (e->has_zp) F32E_EACH(_mm512_add_ps(x, e->zp[j]))
}
#undef F32E_EACH

/* vector j of one row: f32e_values' block of one */
DNNQ_ALWAYS_INLINE __m512 f32e_value(const int DT, const f32_epi_t *e, __m512 v, int j,
                                     const char *o) {
    f32e_values(DT, e, &v, 1, j, o, 0);
    return v;
}

/* the store of vector j: f32 as it is; u8 / s8 clamped (vmaxps / vminps return their second
 * operand for a NaN: NaN -> 0 (u8), +127 (s8)), rounded half to even, narrowed */
DNNQ_ALWAYS_INLINE void f32e_store(const int DT, const f32_epi_t *e, __m512 v, char *o, int j) {
    const __mmask16 km = e->km[j];
    if (DT == DNNQ_DT_F32) {
        if (km == 0xFFFF) _mm512_storeu_ps(o + 64 * j, v);
        else _mm512_mask_storeu_ps(o + 64 * j, km, v);
        return;
    }
    if (DT == DNNQ_DT_U8)
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    else
        v = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-128.0f));
    const __m512i q = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i b = DT == DNNQ_DT_U8 ? _mm512_cvtusepi32_epi8(q) : _mm512_cvtsepi32_epi8(q);
    if (km == 0xFFFF) _mm_storeu_si128((__m128i *)(o + 16 * j), b);
    else _mm_mask_storeu_epi8(o + 16 * j, km, b);
}

DNNQ_ALWAYS_INLINE void f32e_row(const int DT, const int NV, const f32_epi_t *e, __m512 v0,
                                 __m512 v1, __m512 v2, __m512 v3, char *o) {
    f32e_store(DT, e, f32e_value(DT, e, v0, 0, o), o, 0);
    if (NV > 1) f32e_store(DT, e, f32e_value(DT, e, v1, 1, o), o, 1);
    if (NV > 2) f32e_store(DT, e, f32e_value(DT, e, v2, 2, o), o, 2);
    if (NV > 3) f32e_store(DT, e, f32e_value(DT, e, v3, 3, o), o, 3);
}

/* R rows' vector j through the epilogue to o, o + ldd, ... (f32e_values, then the stores),
 * the dst type switched at run time */
DNNQ_ALWAYS_INLINE void f32e_block(const f32_epi_t *e, __m512 *v, const int R, int j, char *o,
                                   int64_t ldd) {
#define F32E_BLOCK(DT)                                                                         \
    f32e_values(DT, e, v, R, j, o, ldd);                                                       \
    for (int r = 0; r < R; ++r) f32e_store(DT, e, v[r], o + r * ldd, j);
    if (e->dt == DNNQ_DT_F32) { F32E_BLOCK(DNNQ_DT_F32) }
    else if (e->dt == DNNQ_DT_U8) { F32E_BLOCK(DNNQ_DT_U8) }
    else { F32E_BLOCK(DNNQ_DT_S8) }
#undef F32E_BLOCK
}

/* FUSE: 0 = store the accumulators to c; else the dst type + 1, each row through the
 * epilogue e to d0 + r * dstep */
#define F_STORE(r)                                                                             \
    if (MR > r && FUSE) {                                                                      \
        f32e_row(FUSE - 1, NV, e, c##r##0, c##r##1, c##r##2, c##r##3, d0 + r * dstep);        \
    } else if (MR > r) {                                                                       \
        _mm512_storeu_ps(c + r * DNNQ_NR, c##r##0);                                            \
        if (NV > 1) _mm512_storeu_ps(c + r * DNNQ_NR + 16, c##r##1);                           \
        if (NV > 2) _mm512_storeu_ps(c + r * DNNQ_NR + 32, c##r##2);                           \
        if (NV > 3) _mm512_storeu_ps(c + r * DNNQ_NR + 48, c##r##3);                           \
    }

/* MR rows x NV * 16 columns over the pairs, the accumulators in registers throughout */
DNNQ_ALWAYS_INLINE void tile_f32_avx512(const int MR, const int NV, const int FUSE, int64_t np,
                                        const dnnq_br_pair_f32_t *pairs, int accumulate,
                                        float *c, const f32_epi_t *e, char *d0,
                                        int64_t dstep) {
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
    if (FUSE) /* all accumulators in registers here: else gcc spills them inside the loop */
        __asm__("" : "+v"(c00), "+v"(c01), "+v"(c02), "+v"(c03), "+v"(c10), "+v"(c11),
                     "+v"(c12), "+v"(c13), "+v"(c20), "+v"(c21), "+v"(c22), "+v"(c23));
    if (FUSE)
        __asm__("" : "+v"(c30), "+v"(c31), "+v"(c32), "+v"(c33), "+v"(c40), "+v"(c41),
                     "+v"(c42), "+v"(c43), "+v"(c50), "+v"(c51), "+v"(c52), "+v"(c53));
    F_STORE(0) F_STORE(1) F_STORE(2) F_STORE(3) F_STORE(4) F_STORE(5)
}

static void f32_br_ukr(int mr, int nc, int64_t np, const dnnq_br_pair_f32_t *pairs,
                       int accumulate, float *c) {
    const int nv = (nc + 15) / 16;
#define F_MR(NV, M) case M: tile_f32_avx512(M, NV, 0, np, pairs, accumulate, c, NULL, NULL, 0); break;
#define F_NV(NV)                                                                               \
    case NV:                                                                                   \
        switch (mr) { F_MR(NV, 1) F_MR(NV, 2) F_MR(NV, 3) F_MR(NV, 4) F_MR(NV, 5) F_MR(NV, 6) } \
        break;
    switch (nv) { F_NV(1) F_NV(2) F_NV(3) F_NV(4) }
#undef F_NV
#undef F_MR
}

int dnnq_f32_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t b, int64_t p,
                                dnnq_f32_epi_state_t *st) {
    f32_epi_t *e = (f32_epi_t *)st;
    if (g->ref_numerics || g->u8_nan_top || g->wzp || g->n_post > F32E_MAX_POST) return 0;
    if (g->bias && (g->bias_sb || g->bias_sm)) return 0;
    if (g->dst_dt != DNNQ_DT_F32 && g->dst_dt != DNNQ_DT_S8 && g->dst_dt != DNNQ_DT_U8) return 0;
    for (int i = 0; i < g->n_post; ++i) {
        const dnnq_postop_t *po = &g->post[i];
        if (po->kind == DNNQ_PO_SUM) e->kind[i] = F32E_SUM;
        else if (po->kind != DNNQ_PO_ELTWISE) return 0;
        else if (po->alg == DNNQ_ELT_RELU) e->kind[i] = po->alpha == 0.0f ? F32E_RELU0 : F32E_RELU;
        else if (po->alg == DNNQ_ELT_LINEAR) e->kind[i] = F32E_LINEAR;
        else if (po->alg == DNNQ_ELT_CLIP) e->kind[i] = F32E_CLIP;
        else if (po->alg == DNNQ_ELT_CLIP_V2) e->kind[i] = F32E_CLIP_V2;
        else if (po->alg == DNNQ_ELT_HARDSIGMOID) e->kind[i] = F32E_HARDSIGMOID;
        else if (po->alg == DNNQ_ELT_HARDSWISH) e->kind[i] = F32E_HARDSWISH;
        else if (po->alg == DNNQ_ELT_ROUND) e->kind[i] = F32E_ROUND;
        else return 0; /* the transcendental ones: libm in the generic epilogue */
        e->alpha[i] = po->alpha;
        e->beta[i] = po->beta;
    }
    e->n_post = g->n_post;
    e->chain = !g->n_post ? 0 : g->n_post == 1 && e->kind[0] == F32E_RELU0 ? 1 : 2;
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    e->nv = (nc + 15) / 16;
    for (int j = 0; j < 4; ++j) {
        const int left = nc - 16 * j;
        e->km[j] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
    }
    e->has_bias = g->bias != NULL;
    for (int j = 0; j < 4; ++j) {
        e->bi[j] = !e->has_bias ? _mm512_setzero_ps()
                   : g->bias_sn ? _mm512_maskz_loadu_ps(e->km[j], g->bias + n0 + 16 * j)
                                : _mm512_set1_ps(g->bias[0]);
        e->zp[j] = !g->dst_zp ? _mm512_setzero_ps()
                   : g->dst_zp_sn
                       ? _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(e->km[j], g->dst_zp + n0 + 16 * j))
                       : _mm512_set1_ps((float)g->dst_zp[0]);
    }
    e->has_zp = g->dst_zp != NULL;
    e->scaled = g->inv_dst_scale != 1.0f;
    e->inv = _mm512_set1_ps(g->inv_dst_scale);
    e->dt = g->dst_dt;
    const int esz = g->dst_dt == DNNQ_DT_F32 ? 4 : 1;
    e->d0 = (char *)g->dst + (b * g->d_sb + n0) * esz;
    e->ldd = g->d_sm * esz;
    return 1;
}

void dnnq_brgemm_f32_epi_avx512(int mr, int64_t np, const dnnq_br_pair_f32_t *pairs,
                                int accumulate, const float *c, const dnnq_f32_epi_state_t *st,
                                int64_t m, int64_t mstep) {
    const f32_epi_t *e = (const f32_epi_t *)st;
    char *d0 = e->d0 + m * e->ldd;
    const int64_t dstep = mstep * e->ldd;
    float *cc = (float *)c; /* read only (accumulate) */
#define F_MR(NV, F, M) case M: tile_f32_avx512(M, NV, F, np, pairs, accumulate, cc, e, d0, dstep); break;
#define F_NV(NV, F)                                                                            \
    case NV:                                                                                   \
        switch (mr) {                                                                          \
        F_MR(NV, F, 1) F_MR(NV, F, 2) F_MR(NV, F, 3) F_MR(NV, F, 4) F_MR(NV, F, 5)            \
        F_MR(NV, F, 6)                                                                         \
        }                                                                                      \
        break;
#define F_DT(F)                                                                                \
    switch (e->nv) { F_NV(1, F) F_NV(2, F) F_NV(3, F) F_NV(4, F) }
    if (e->dt == DNNQ_DT_F32) { F_DT(DNNQ_DT_F32 + 1) }
    else if (e->dt == DNNQ_DT_U8) { F_DT(DNNQ_DT_U8 + 1) }
    else { F_DT(DNNQ_DT_S8 + 1) }
#undef F_DT
#undef F_NV
#undef F_MR
}

#define DNNQ_F32_FUSED 1

/* ---- depthwise (dnnq_dw_f32_fn) ----------------------------------------------------------- */
#define DW_ACC(r) __m512 d##r = _mm512_setzero_ps();
/* pixel r of tap t: dense (DENSE: xb + r * ps, every tap inside) or its own pointer (NULL:
 * left out); full vectors load plainly (masked loads are slow on Zen 4) */
#define DW_LOAD(p) (FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(km, p))
#define DW_TAP(r)                                                                              \
    if (R > r) {                                                                               \
        if (DENSE) {                                                                           \
            d##r = _mm512_fmadd_ps(DW_LOAD(xb + r * ps), wv, d##r);                           \
        } else {                                                                               \
            const float *x = rows[t * mr + r0 + r];                                            \
            if (x) d##r = _mm512_fmadd_ps(DW_LOAD(x + c0), wv, d##r);                          \
        }                                                                                      \
    }
#define DW_STORE(r)                                                                            \
    if (R > r && FUSE) {                                                                       \
        char *o = e->d0 + (m + r0 + r) * e->ldd;                                               \
        f32e_store(FUSE - 1, e, f32e_value(FUSE - 1, e, d##r, c0 / 16, o), o, c0 / 16);        \
    } else if (R > r) {                                                                        \
        _mm512_storeu_ps(acc + (r0 + r) * DNNQ_NR + c0, d##r);                                 \
    }

/* R (<= 8) pixels r0 .. r0 + R - 1, channels c0 .. c0 + 15 (those of km): per tap one vector
 * FMA per pixel, in tap order (the loop nest's order, vectorised); FUSE: the dst type + 1,
 * each pixel through the epilogue e to dst row m + r0 + r, else to acc */
DNNQ_ALWAYS_INLINE void dw_f32_block(const int R, const int FUSE, const int DENSE, const int FULL,
                                     int mr, int r0, int64_t ntaps, const float *const *rows,
                                     int64_t ps, int c0, __mmask16 km, const float *w,
                                     float *acc, const f32_epi_t *e, int64_t m) {
    DW_ACC(0) DW_ACC(1) DW_ACC(2) DW_ACC(3) DW_ACC(4) DW_ACC(5) DW_ACC(6) DW_ACC(7)
    for (int64_t t = 0; t < ntaps; ++t) {
        const __m512 wv = _mm512_loadu_ps(w + t * DNNQ_NR + c0);
        const float *xb = DENSE ? rows[t] + r0 * ps + c0 : NULL;
        DW_TAP(0) DW_TAP(1) DW_TAP(2) DW_TAP(3) DW_TAP(4) DW_TAP(5) DW_TAP(6) DW_TAP(7)
    }
    DW_STORE(0) DW_STORE(1) DW_STORE(2) DW_STORE(3) DW_STORE(4) DW_STORE(5) DW_STORE(6)
    DW_STORE(7)
}

#define DW_R(F, D, L, ...)                                                                     \
    switch (mr - r0 < 8 ? mr - r0 : 8) {                                                       \
    case 1: dw_f32_block(1, F, D, L, __VA_ARGS__); break;                                      \
    case 2: dw_f32_block(2, F, D, L, __VA_ARGS__); break;                                      \
    case 3: dw_f32_block(3, F, D, L, __VA_ARGS__); break;                                      \
    case 4: dw_f32_block(4, F, D, L, __VA_ARGS__); break;                                      \
    case 5: dw_f32_block(5, F, D, L, __VA_ARGS__); break;                                      \
    case 6: dw_f32_block(6, F, D, L, __VA_ARGS__); break;                                      \
    case 7: dw_f32_block(7, F, D, L, __VA_ARGS__); break;                                      \
    default: dw_f32_block(8, F, D, L, __VA_ARGS__); break;                                     \
    }
#define DW_CASES(F, ...)                                                                       \
    if (ps && km == 0xFFFF) { DW_R(F, 1, 1, __VA_ARGS__) }                                     \
    else if (ps) { DW_R(F, 1, 0, __VA_ARGS__) }                                                \
    else if (km == 0xFFFF) { DW_R(F, 0, 1, __VA_ARGS__) }                                      \
    else { DW_R(F, 0, 0, __VA_ARGS__) }

void dnnq_dw_f32_epi_avx512(int mr, int64_t ntaps, const float *const *rows, int64_t ps,
                            const float *w, const dnnq_f32_epi_state_t *st, int64_t m) {
    const f32_epi_t *e = (const f32_epi_t *)st;
    for (int j = 0; j < e->nv; ++j) {
        const int c0 = 16 * j;
        const __mmask16 km = e->km[j];
        for (int r0 = 0; r0 < mr; r0 += 8) {
            if (e->dt == DNNQ_DT_F32) {
                DW_CASES(DNNQ_DT_F32 + 1, mr, r0, ntaps, rows, ps, c0, km, w, NULL, e, m)
            } else if (e->dt == DNNQ_DT_U8) {
                DW_CASES(DNNQ_DT_U8 + 1, mr, r0, ntaps, rows, ps, c0, km, w, NULL, e, m)
            } else {
                DW_CASES(DNNQ_DT_S8 + 1, mr, r0, ntaps, rows, ps, c0, km, w, NULL, e, m)
            }
        }
    }
}

void dnnq_dw_f32_avx512(int mr, int64_t ntaps, const float *const *rows, int64_t ps, int nc,
                        const float *w, float *acc) {
    for (int c0 = 0; c0 < nc; c0 += 16) {
        const int left = nc - c0;
        const __mmask16 km = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        for (int r0 = 0; r0 < mr; r0 += 8) {
            DW_CASES(0, mr, r0, ntaps, rows, ps, c0, km, w, acc, NULL, 0)
        }
    }
}

/* ---- depthwise by kernel rows (dnnq_dw_f32_rows_fn) ------------------------------------- */
#define DWR_DECL(r) __m512 a##r = _mm512_setzero_ps();
/* source vector i reaches pixel r through tap k when i = r SW + k (constants after unrolling:
 * one of these survives per (i, k)) */
#define DWR_UPD(r)                                                                             \
    if (R > r && i - k == (r) * SW) a##r = _mm512_fmadd_ps(x, wv, a##r);
/* pixel r to the tile acc (with an epilogue: the block's pixels through f32e_block) */
#define DWR_STORE(r)                                                                           \
    if (R > r) _mm512_storeu_ps(acc + (r0 + (r)) * DNNQ_NR + c0, a##r);

/* R (<= 16) pixels r0 .. r0 + R - 1, channels c0 .. c0 + 15 (those of km): per kernel row its
 * KW weight vectors in registers, the (R - 1) SW + KW source vectors loaded once each */
DNNQ_ALWAYS_INLINE void dwr_f32_block(const int R, const int KW, const int SW, const int FULL,
                                      int r0, int64_t nkrows, const float *const *krows,
                                      const float *const *wrows, int64_t ic, int c0,
                                      __mmask16 km, float *acc, const f32_epi_t *e, int64_t m) {
    DWR_DECL(0) DWR_DECL(1) DWR_DECL(2) DWR_DECL(3) DWR_DECL(4) DWR_DECL(5) DWR_DECL(6)
    DWR_DECL(7) DWR_DECL(8) DWR_DECL(9) DWR_DECL(10) DWR_DECL(11) DWR_DECL(12) DWR_DECL(13)
    DWR_DECL(14) DWR_DECL(15)
    for (int64_t kr = 0; kr < nkrows; ++kr) {
        const float *xb = krows[kr] + (int64_t)r0 * SW * ic + c0;
        const float *wr = wrows[kr] + c0;
        const __m512 w0 = _mm512_loadu_ps(wr), w1 = _mm512_loadu_ps(wr + DNNQ_NR),
                     w2 = _mm512_loadu_ps(wr + 2 * DNNQ_NR);
        const __m512 w3 = KW > 3 ? _mm512_loadu_ps(wr + 3 * DNNQ_NR) : w0,
                     w4 = KW > 3 ? _mm512_loadu_ps(wr + 4 * DNNQ_NR) : w0,
                     w5 = KW > 5 ? _mm512_loadu_ps(wr + 5 * DNNQ_NR) : w0,
                     w6 = KW > 5 ? _mm512_loadu_ps(wr + 6 * DNNQ_NR) : w0;
        /* one pointer stepping by a source pixel: offsets i * ic kept apart took every
         * general register (gcc then spilled them and re-loaded x into each FMA) */
        const float *p = xb;
        _Pragma("GCC unroll 40") for (int i = 0; i < (R - 1) * SW + KW; ++i, p += ic) {
            __m512 x = FULL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(km, p);
            /* x in a register: else gcc folds the load into each FMA that reads it */
            __asm__("" : "+v"(x));
            _Pragma("GCC unroll 8") for (int k = 0; k < KW; ++k) {
                const __m512 wv = k == 0 ? w0 : k == 1 ? w1 : k == 2 ? w2 : k == 3 ? w3
                                : k == 4 ? w4 : k == 5 ? w5 : w6;
                DWR_UPD(0) DWR_UPD(1) DWR_UPD(2) DWR_UPD(3) DWR_UPD(4) DWR_UPD(5) DWR_UPD(6)
                DWR_UPD(7) DWR_UPD(8) DWR_UPD(9) DWR_UPD(10) DWR_UPD(11) DWR_UPD(12)
                DWR_UPD(13) DWR_UPD(14) DWR_UPD(15)
            }
        }
    }
    if (e) {
        __m512 v[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
        f32e_block(e, v, R, c0 / 16, e->d0 + (m + r0) * e->ldd, e->ldd);
        return;
    }
    DWR_STORE(0) DWR_STORE(1) DWR_STORE(2) DWR_STORE(3) DWR_STORE(4) DWR_STORE(5) DWR_STORE(6)
    DWR_STORE(7) DWR_STORE(8) DWR_STORE(9) DWR_STORE(10) DWR_STORE(11) DWR_STORE(12)
    DWR_STORE(13) DWR_STORE(14) DWR_STORE(15)
}

#define DWR_R(KW, SW, L)                                                                       \
    switch (R) {                                                                               \
    case 16: dwr_f32_block(16, KW, SW, L, r0, nkrows, krows, wrows, ic, c0, km, acc, e, m); break;       \
    case 8: dwr_f32_block(8, KW, SW, L, r0, nkrows, krows, wrows, ic, c0, km, acc, e, m); break;         \
    case 4: dwr_f32_block(4, KW, SW, L, r0, nkrows, krows, wrows, ic, c0, km, acc, e, m); break;         \
    case 2: dwr_f32_block(2, KW, SW, L, r0, nkrows, krows, wrows, ic, c0, km, acc, e, m); break;         \
    default: dwr_f32_block(1, KW, SW, L, r0, nkrows, krows, wrows, ic, c0, km, acc, e, m); break;        \
    }
#define DWR_SW(KW, L)                                                                          \
    if (sw == 1) { DWR_R(KW, 1, L) }                                                           \
    else { DWR_R(KW, 2, L) }
#define DWR_KW(L)                                                                              \
    if (kw == 3) { DWR_SW(3, L) }                                                              \
    else if (kw == 5) { DWR_SW(5, L) }                                                         \
    else { DWR_SW(7, L) }

void dnnq_dw_f32_rows_avx512(int mr, int64_t nkrows, const float *const *krows,
                             const float *const *wrows, int64_t ic, int kw, int sw, int nc,
                             float *acc, const dnnq_f32_epi_state_t *st, int64_t m) {
    const f32_epi_t *e = (const f32_epi_t *)st;
    if (e) nc = 16 * e->nv; /* the last vector's columns: e->km */
    /* blocks of 16 pixels, the rest by 8, 4, 2, 1; the channel vectors of a block one after
     * the other (its source lines, the panel's width, stay in L1 from vector to vector) */
    for (int r0 = 0; r0 < mr;) {
        const int n = mr - r0;
        const int R = n >= 16 ? 16 : n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
        for (int c0 = 0; c0 < nc; c0 += 16) {
            const int left = nc - c0;
            const __mmask16 km = e ? e->km[c0 / 16]
                                 : left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
            if (km == 0xFFFF) { DWR_KW(1) }
            else { DWR_KW(0) }
        }
        r0 += R;
    }
}
#define DNNQ_F32_DW_KERNEL 1
#include "gemm_f32_impl.h"
