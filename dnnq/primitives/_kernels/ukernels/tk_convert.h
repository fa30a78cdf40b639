/* Conversions of the toolkit: loads of any data type as f32, saturating / rounding stores,
 * raw copies, and the affine load (f32(x) - a) * b * c + d with its fused load-affine-store
 * loop.  Stores: saturate, round half to even; NaN -> +127 (s8), 0 (u8), 2^31 - 128 (s32) as
 * oneDNN's reorder; +-inf saturate. */
#ifndef DNNQ_TK_CONVERT_H
#define DNNQ_TK_CONVERT_H
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_toolkit.h"
#include "tk_vec.h"

#define TK_CH DNNQ_PW_CHUNK
#define TK_RNE_MAGIC 12582912.0f /* 1.5 * 2^23: (x + M) - M rounds |x| < 2^22 half to even */

static inline int tk_esize(int dt) { return dt == DNNQ_DT_S8 || dt == DNNQ_DT_U8 ? 1 : 4; }

static inline const char *tk_addr(const dnnq_pw_opnd_t *o, int64_t elem) {
    return o->ptr + elem * tk_esize(o->dt);
}

/* ---- loads: out[i] = f32(src[i * st]) -------------------------------------------------- */
#define TK_LOAD_T(T)                                                                          \
    do {                                                                                      \
        const T *s = (const T *)base;                                                         \
        if (st == 1)                                                                          \
            for (int i = 0; i < n; ++i) out[i] = (float)s[i];                                 \
        else if (st == 0) {                                                                   \
            const float c = (float)s[0];                                                      \
            for (int i = 0; i < n; ++i) out[i] = c;                                           \
        } else                                                                                \
            for (int i = 0; i < n; ++i) out[i] = (float)s[i * st];                            \
    } while (0)

static void tk_load(float *restrict out, const char *base, int dt, int64_t st, int n) {
    switch (dt) {
    case DNNQ_DT_F32: TK_LOAD_T(float); break;
    case DNNQ_DT_S32: TK_LOAD_T(int32_t); break;
    case DNNQ_DT_S8: TK_LOAD_T(int8_t); break;
    default: TK_LOAD_T(uint8_t); break;
    }
}

static inline float tk_load1(const char *base, int dt) {
    switch (dt) {
    case DNNQ_DT_F32: return *(const float *)base;
    case DNNQ_DT_S32: return (float)*(const int32_t *)base;
    case DNNQ_DT_S8: return (float)*(const int8_t *)base;
    default: return (float)*(const uint8_t *)base;
    }
}

/* ---- scalar stores, written as x86 minps / maxps patterns (a < b ? a : b returns b for
 * NaN): the first clamp turns NaN into the bound oneDNN gives it (the same as the vector
 * stores of tk_vec.h, which also put the bound second) ---------------------------------- */
static inline float tk_sat_s8(float x) {
    x = x < 127.0f ? x : 127.0f;
    return x > -128.0f ? x : -128.0f;
}
static inline float tk_sat_u8(float x) {
    x = x > 0.0f ? x : 0.0f;
    return x < 255.0f ? x : 255.0f;
}
static inline float tk_sat_s32(float x) {
    x = x < TK_S32_HI ? x : TK_S32_HI;
    return x > TK_S32_LO ? x : TK_S32_LO;
}
static inline int8_t tk_cvt_s8(float x) {
    return (int8_t)(int32_t)((tk_sat_s8(x) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
}
static inline uint8_t tk_cvt_u8(float x) {
    return (uint8_t)(int32_t)((tk_sat_u8(x) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
}
static inline int32_t tk_cvt_s32(float x) { return (int32_t)nearbyintf(tk_sat_s32(x)); }

/* Contiguous stores: whole vectors (the stores of tk_vec.h), then the scalar tail (the same
 * values).  The portable x86-64 build has SSE2 but scalar lanes, and gcc does not vectorise
 * the scalar conversions: there 16 (8-bit) or 4 (s32) values at a time go through SSE2, with
 * the same clamps (the bound second) and cvtps2dq's rne. */
#if !TK_VEC && defined(__SSE2__)
#include <emmintrin.h>
TK_INLINE __m128i tk_sse2_cvt16(const float *v, __m128 hi, __m128 lo, int u8) {
    __m128i q[4];
    for (int k = 0; k < 4; ++k) {
        __m128 x = _mm_loadu_ps(v + 4 * k);
        x = u8 ? _mm_min_ps(_mm_max_ps(x, lo), hi) : _mm_max_ps(_mm_min_ps(x, hi), lo);
        q[k] = _mm_cvtps_epi32(x);
    }
    const __m128i a16 = _mm_packs_epi32(q[0], q[1]), b16 = _mm_packs_epi32(q[2], q[3]);
    return u8 ? _mm_packus_epi16(a16, b16) : _mm_packs_epi16(a16, b16);
}
TK_INLINE int tk_store_vec(char *o, int dt, const float *v, int n) {
    int i = 0;
    if (dt == DNNQ_DT_S32) {
        const __m128 hi = _mm_set1_ps(TK_S32_HI), lo = _mm_set1_ps(TK_S32_LO);
        for (; i + 4 <= n; i += 4)
            _mm_storeu_si128((__m128i *)(o + 4 * i),
                             _mm_cvtps_epi32(_mm_max_ps(_mm_min_ps(_mm_loadu_ps(v + i), hi), lo)));
        return i;
    }
    const int u8 = dt == DNNQ_DT_U8;
    const __m128 hi = _mm_set1_ps(u8 ? 255.0f : 127.0f), lo = _mm_set1_ps(u8 ? 0.0f : -128.0f);
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(o + i), tk_sse2_cvt16(v + i, hi, lo, u8));
    return i;
}
#else
TK_INLINE int tk_store_vec(char *o, int dt, const float *v, int n) {
    int i = 0;
    if (TK_VEC)
        for (; i + TK_VF <= n; i += TK_VF) tk_vf_store_dt(o + i * tk_esize(dt), dt, tk_vf_loadu(v + i));
    return i;
}
#endif
#define TK_STORE_CONTIG(T, DT, CVT)                                                           \
    do {                                                                                      \
        T *o = (T *)base;                                                                     \
        for (int i = tk_store_vec(base, DT, v, n); i < n; ++i) o[i] = CVT(v[i]);              \
    } while (0)

static void tk_store(char *base, int dt, int64_t st, const float *restrict v, int n) {
    switch (dt) {
    case DNNQ_DT_F32: {
        float *o = (float *)base;
        if (st == 1) memcpy(o, v, sizeof(float) * (size_t)n);
        else for (int i = 0; i < n; ++i) o[i * st] = v[i];
        break;
    }
    case DNNQ_DT_S8:
        if (st == 1) TK_STORE_CONTIG(int8_t, DNNQ_DT_S8, tk_cvt_s8);
        else for (int i = 0; i < n; ++i) ((int8_t *)base)[i * st] = tk_cvt_s8(v[i]);
        break;
    case DNNQ_DT_U8:
        if (st == 1) TK_STORE_CONTIG(uint8_t, DNNQ_DT_U8, tk_cvt_u8);
        else for (int i = 0; i < n; ++i) ((uint8_t *)base)[i * st] = tk_cvt_u8(v[i]);
        break;
    default:
        if (st == 1) TK_STORE_CONTIG(int32_t, DNNQ_DT_S32, tk_cvt_s32);
        else for (int i = 0; i < n; ++i) ((int32_t *)base)[i * st] = tk_cvt_s32(v[i]);
        break;
    }
}

/* raw copy between operands of the same data type */
static void tk_copy(char *dst, int64_t dst_st, const char *src, int64_t src_st, int dt, int n) {
    if (tk_esize(dt) == 1) {
        const uint8_t *s = (const uint8_t *)src;
        uint8_t *d = (uint8_t *)dst;
        if (dst_st == 1 && src_st == 1) memcpy(d, s, (size_t)n);
        else for (int i = 0; i < n; ++i) d[i * dst_st] = s[i * src_st];
    } else {
        const uint32_t *s = (const uint32_t *)src;
        uint32_t *d = (uint32_t *)dst;
        if (dst_st == 1 && src_st == 1) memcpy(d, s, sizeof(uint32_t) * (size_t)n);
        else for (int i = 0; i < n; ++i) d[i * dst_st] = s[i * src_st];
    }
}

/* ---- affine load: out = (((f32(src) - a) * b) * c) + d ----------------------------------
 * Absent steps use exact identities: x - (+0) and x + (-0) return x for every x (signed zeros
 * included), x * 1 is exact. */
#define TK_AFFINE_T(T)                                                                        \
    do {                                                                                      \
        const T *s = (const T *)src;                                                          \
        if (st == 1)                                                                          \
            for (int i = 0; i < n; ++i) out[i] = ((((float)s[i] - a) * b) * c) + d;           \
        else                                                                                  \
            for (int i = 0; i < n; ++i) out[i] = ((((float)s[i * st] - a) * b) * c) + d;      \
    } while (0)

/* (the portable build keeps it out of line: inlined into the stage program, gcc spilled the
 * loaded vector to the stack every iteration there) */
#if TK_VEC
#define TK_AFFINE_ATTR
#else
#define TK_AFFINE_ATTR __attribute__((noinline))
#endif
TK_AFFINE_ATTR static void tk_affine(float *restrict out, const char *src, int dt, int64_t st, int n, float a,
                      float b, float c, float d) {
    switch (dt) {
    case DNNQ_DT_F32: TK_AFFINE_T(float); break;
    case DNNQ_DT_S32: TK_AFFINE_T(int32_t); break;
    case DNNQ_DT_S8: TK_AFFINE_T(int8_t); break;
    default: TK_AFFINE_T(uint8_t); break;
    }
}

/* Fused affine + store for row-constant parameters and contiguous operands: one pass, no
 * buffer.  Same operations, order and rounding as tk_affine followed by tk_store.  Returns the
 * number of elements done (whole vectors; the caller finishes the tail).  Vector builds only:
 * with scalar lanes the buffered path is the faster one. */
#define TK_FUSED_LOOP(SDT, DDT)                                                               \
    for (; i + TK_VF <= n; i += TK_VF) {                                                      \
        const tk_vf x = tk_vf_load_dt(src + i * ses, SDT);                                    \
        tk_vf_store_dt(dst + i * des, DDT,                                                    \
                       tk_vf_add(tk_vf_mul(tk_vf_mul(tk_vf_sub(x, va), vb), vc), vd));        \
    }
#define TK_FUSED_DST(SDT)                                                                     \
    switch (ddt) {                                                                            \
    case DNNQ_DT_S8: TK_FUSED_LOOP(SDT, DNNQ_DT_S8); break;                                   \
    case DNNQ_DT_U8: TK_FUSED_LOOP(SDT, DNNQ_DT_U8); break;                                   \
    case DNNQ_DT_S32: TK_FUSED_LOOP(SDT, DNNQ_DT_S32); break;                                 \
    default: TK_FUSED_LOOP(SDT, DNNQ_DT_F32); break;                                          \
    }
static int tk_affine_store_fused(char *dst, int ddt, const char *src, int sdt, int n, float a,
                                 float b, float c, float d) {
    int i = 0;
    if (!TK_VEC) return 0;
    const tk_vf va = tk_vf_set1(a), vb = tk_vf_set1(b), vc = tk_vf_set1(c), vd = tk_vf_set1(d);
    const int ses = tk_esize(sdt), des = tk_esize(ddt);
    switch (sdt) {
    case DNNQ_DT_S8: TK_FUSED_DST(DNNQ_DT_S8); break;
    case DNNQ_DT_U8: TK_FUSED_DST(DNNQ_DT_U8); break;
    case DNNQ_DT_S32: TK_FUSED_DST(DNNQ_DT_S32); break;
    default: TK_FUSED_DST(DNNQ_DT_F32); break;
    }
    return i;
}
#endif
