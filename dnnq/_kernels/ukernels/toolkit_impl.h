/* The toolkit kernels (see dnnq_toolkit.h), compiled once per ISA: toolkit_<isa>.c defines
 * DNNQ_TK_ISA (portable, avx2, avx512) and includes this file.  Plain C written so that gcc -O3
 * vectorises the inner loops (contiguous, no aliasing between buffers, no function calls on the
 * exact paths).  -ffp-contract=off (project-wide) keeps every product and sum separately rounded
 * unless fmaf() is written, which is what makes the results identical on every ISA. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_toolkit.h"
#include "eltwise_impl.h"

#define DNNQ_TK_CAT2(a, b) a##_##b
#define DNNQ_TK_CAT(a, b) DNNQ_TK_CAT2(a, b)
#define DNNQ_TK_FN(name) DNNQ_TK_CAT(name, DNNQ_TK_ISA)

#define TK_CH DNNQ_PW_CHUNK
#define TK_RNE_MAGIC 12582912.0f /* 1.5 * 2^23: (x + M) - M rounds |x| < 2^22 half to even */
#define TK_S32_HI 2147483520.0f  /* largest f32 below 2^31 */
#define TK_S32_LO -2147483648.0f

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

/* ---- stores: saturate, round half to even; NaN -> +127 (s8), 0 (u8), 2^31-128 (s32) as
 * oneDNN's reorder; +-inf saturate ---------------------------------------------------------- */
/* written as x86 minps / maxps patterns (a < b ? a : b returns b for NaN): the first clamp
 * turns NaN into the bound oneDNN gives it */
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

/* Contiguous f32 -> integer stores with intrinsics where available: min / max with the bound as
 * the second operand turn NaN into that bound (x86 minps / maxps semantics, the same as the C
 * ternaries below), cvtps2dq rounds half to even, the narrowing packs cannot overflow. */
#if defined(__AVX512F__)
#include <immintrin.h>
static inline int tk_store_s8_vec(int8_t *o, const float *v, int n) {
    const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-128.0f);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_max_ps(_mm512_min_ps(_mm512_loadu_ps(v + i), hi), lo);
        _mm_storeu_si128((__m128i *)(o + i), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(x)));
    }
    return i;
}
static inline int tk_store_u8_vec(uint8_t *o, const float *v, int n) {
    const __m512 hi = _mm512_set1_ps(255.0f), lo = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_min_ps(_mm512_max_ps(_mm512_loadu_ps(v + i), lo), hi);
        _mm_storeu_si128((__m128i *)(o + i), _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(x)));
    }
    return i;
}
static inline int tk_store_s32_vec(int32_t *o, const float *v, int n) {
    const __m512 hi = _mm512_set1_ps(TK_S32_HI), lo = _mm512_set1_ps(TK_S32_LO);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_max_ps(_mm512_min_ps(_mm512_loadu_ps(v + i), hi), lo);
        _mm512_storeu_si512((void *)(o + i), _mm512_cvtps_epi32(x));
    }
    return i;
}
#elif defined(__AVX2__)
#include <immintrin.h>
static inline __m128i tk_cvt16_s16(const float *v, __m256 hi, __m256 lo, int u8) {
    __m256 a, b;
    if (u8) {
        a = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(v), lo), hi);
        b = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(v + 8), lo), hi);
    } else {
        a = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(v), hi), lo);
        b = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(v + 8), hi), lo);
    }
    __m256i ia = _mm256_cvtps_epi32(a), ib = _mm256_cvtps_epi32(b);
    __m128i a16 = _mm_packs_epi32(_mm256_castsi256_si128(ia), _mm256_extracti128_si256(ia, 1));
    __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(ib), _mm256_extracti128_si256(ib, 1));
    return u8 ? _mm_packus_epi16(a16, b16) : _mm_packs_epi16(a16, b16);
}
static inline int tk_store_s8_vec(int8_t *o, const float *v, int n) {
    const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-128.0f);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(o + i), tk_cvt16_s16(v + i, hi, lo, 0));
    return i;
}
static inline int tk_store_u8_vec(uint8_t *o, const float *v, int n) {
    const __m256 hi = _mm256_set1_ps(255.0f), lo = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(o + i), tk_cvt16_s16(v + i, hi, lo, 1));
    return i;
}
static inline int tk_store_s32_vec(int32_t *o, const float *v, int n) {
    const __m256 hi = _mm256_set1_ps(TK_S32_HI), lo = _mm256_set1_ps(TK_S32_LO);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(v + i), hi), lo);
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_cvtps_epi32(x));
    }
    return i;
}
#elif defined(__SSE2__)
#include <emmintrin.h>
static inline __m128i tk_cvt16_sse(const float *v, __m128 hi, __m128 lo, int u8) {
    __m128i q[4];
    for (int k = 0; k < 4; ++k) {
        __m128 x = _mm_loadu_ps(v + 4 * k);
        x = u8 ? _mm_min_ps(_mm_max_ps(x, lo), hi) : _mm_max_ps(_mm_min_ps(x, hi), lo);
        q[k] = _mm_cvtps_epi32(x);
    }
    __m128i a16 = _mm_packs_epi32(q[0], q[1]), b16 = _mm_packs_epi32(q[2], q[3]);
    return u8 ? _mm_packus_epi16(a16, b16) : _mm_packs_epi16(a16, b16);
}
static inline int tk_store_s8_vec(int8_t *o, const float *v, int n) {
    const __m128 hi = _mm_set1_ps(127.0f), lo = _mm_set1_ps(-128.0f);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(o + i), tk_cvt16_sse(v + i, hi, lo, 0));
    return i;
}
static inline int tk_store_u8_vec(uint8_t *o, const float *v, int n) {
    const __m128 hi = _mm_set1_ps(255.0f), lo = _mm_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(o + i), tk_cvt16_sse(v + i, hi, lo, 1));
    return i;
}
static inline int tk_store_s32_vec(int32_t *o, const float *v, int n) {
    const __m128 hi = _mm_set1_ps(TK_S32_HI), lo = _mm_set1_ps(TK_S32_LO);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        __m128 x = _mm_max_ps(_mm_min_ps(_mm_loadu_ps(v + i), hi), lo);
        _mm_storeu_si128((__m128i *)(o + i), _mm_cvtps_epi32(x));
    }
    return i;
}
#else
static inline int tk_store_s8_vec(int8_t *o, const float *v, int n) { (void)o; (void)v; (void)n; return 0; }
static inline int tk_store_u8_vec(uint8_t *o, const float *v, int n) { (void)o; (void)v; (void)n; return 0; }
static inline int tk_store_s32_vec(int32_t *o, const float *v, int n) { (void)o; (void)v; (void)n; return 0; }
#endif

static inline int8_t tk_cvt_s8(float x) {
    return (int8_t)(int32_t)((tk_sat_s8(x) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
}
static inline uint8_t tk_cvt_u8(float x) {
    return (uint8_t)(int32_t)((tk_sat_u8(x) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
}
static inline int32_t tk_cvt_s32(float x) { return (int32_t)nearbyintf(tk_sat_s32(x)); }

static void tk_store(char *base, int dt, int64_t st, const float *restrict v, int n) {
    switch (dt) {
    case DNNQ_DT_F32: {
        float *o = (float *)base;
        if (st == 1) memcpy(o, v, sizeof(float) * (size_t)n);
        else for (int i = 0; i < n; ++i) o[i * st] = v[i];
        break;
    }
    case DNNQ_DT_S8: {
        int8_t *o = (int8_t *)base;
        if (st == 1) {
            for (int i = tk_store_s8_vec(o, v, n); i < n; ++i) o[i] = tk_cvt_s8(v[i]);
        } else {
            for (int i = 0; i < n; ++i) o[i * st] = tk_cvt_s8(v[i]);
        }
        break;
    }
    case DNNQ_DT_U8: {
        uint8_t *o = (uint8_t *)base;
        if (st == 1) {
            for (int i = tk_store_u8_vec(o, v, n); i < n; ++i) o[i] = tk_cvt_u8(v[i]);
        } else {
            for (int i = 0; i < n; ++i) o[i * st] = tk_cvt_u8(v[i]);
        }
        break;
    }
    default: {
        int32_t *o = (int32_t *)base;
        if (st == 1) {
            for (int i = tk_store_s32_vec(o, v, n); i < n; ++i) o[i] = tk_cvt_s32(v[i]);
        } else {
            for (int i = 0; i < n; ++i) o[i * st] = tk_cvt_s32(v[i]);
        }
        break;
    }
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

/* ---- binary: a = alg(a, b) ---------------------------------------------------------------- */
#define TK_BIN_LOOPS(B)                                                                       \
    switch (alg) {                                                                            \
    case DNNQ_BIN_ADD: for (int i = 0; i < n; ++i) a[i] = a[i] + (B); break;                  \
    case DNNQ_BIN_SUB: for (int i = 0; i < n; ++i) a[i] = a[i] - (B); break;                  \
    case DNNQ_BIN_MUL: for (int i = 0; i < n; ++i) a[i] = a[i] * (B); break;                  \
    case DNNQ_BIN_DIV: for (int i = 0; i < n; ++i) a[i] = a[i] / (B); break;                  \
    case DNNQ_BIN_MIN: for (int i = 0; i < n; ++i) a[i] = a[i] < (B) ? a[i] : (B); break;     \
    case DNNQ_BIN_MAX: for (int i = 0; i < n; ++i) a[i] = a[i] > (B) ? a[i] : (B); break;     \
    case DNNQ_BIN_GE: for (int i = 0; i < n; ++i) a[i] = a[i] >= (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_GT: for (int i = 0; i < n; ++i) a[i] = a[i] > (B) ? 1.0f : 0.0f; break;     \
    case DNNQ_BIN_LE: for (int i = 0; i < n; ++i) a[i] = a[i] <= (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_LT: for (int i = 0; i < n; ++i) a[i] = a[i] < (B) ? 1.0f : 0.0f; break;     \
    case DNNQ_BIN_EQ: for (int i = 0; i < n; ++i) a[i] = a[i] == (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_NE: for (int i = 0; i < n; ++i) a[i] = a[i] != (B) ? 1.0f : 0.0f; break;    \
    default: break;                                                                           \
    }

static void tk_bin_vec(int alg, float *restrict a, const float *restrict b, int n) {
    TK_BIN_LOOPS(b[i])
}

static void tk_bin_scalar(int alg, float *restrict a, const float c, int n) {
    TK_BIN_LOOPS(c)
}

/* ---- select (dnnq extension): a = alg(s, c) ? x : a, IEEE comparisons ---------------------- */
static void tk_select(int alg, float *restrict a, const float *restrict s, const float *restrict c,
                      const float *restrict x, int n) {
    switch (alg) {
    case DNNQ_BIN_LE: for (int i = 0; i < n; ++i) a[i] = s[i] <= c[i] ? x[i] : a[i]; break;
    case DNNQ_BIN_LT: for (int i = 0; i < n; ++i) a[i] = s[i] < c[i] ? x[i] : a[i]; break;
    case DNNQ_BIN_GE: for (int i = 0; i < n; ++i) a[i] = s[i] >= c[i] ? x[i] : a[i]; break;
    case DNNQ_BIN_GT: for (int i = 0; i < n; ++i) a[i] = s[i] > c[i] ? x[i] : a[i]; break;
    case DNNQ_BIN_EQ: for (int i = 0; i < n; ++i) a[i] = s[i] == c[i] ? x[i] : a[i]; break;
    case DNNQ_BIN_NE: for (int i = 0; i < n; ++i) a[i] = s[i] != c[i] ? x[i] : a[i]; break;
    default: break;
    }
}

/* ---- eltwise: a = alg(a; al, be) (formulas: eltwise_impl.h / dnnq.eltwise_math) ---------- */
static void tk_eltwise(int alg, float *restrict a, float al, float be, int n) {
    switch (alg) {
    case DNNQ_ELT_RELU: for (int i = 0; i < n; ++i) a[i] = a[i] > 0.0f ? a[i] : a[i] * al; break;
    case DNNQ_ELT_LINEAR: /* oneDNN's JIT: one fused multiply-add */
        for (int i = 0; i < n; ++i) a[i] = fmaf(al, a[i], be);
        break;
    case DNNQ_ELT_LINEAR_UNFUSED: /* oneDNN's reference kernels: two roundings */
        for (int i = 0; i < n; ++i) a[i] = al * a[i] + be;
        break;
    case DNNQ_ELT_ABS: for (int i = 0; i < n; ++i) a[i] = fabsf(a[i]); break;
    case DNNQ_ELT_SQUARE: for (int i = 0; i < n; ++i) a[i] = a[i] * a[i]; break;
    case DNNQ_ELT_SQRT: for (int i = 0; i < n; ++i) a[i] = sqrtf(a[i]); break;
    case DNNQ_ELT_ROUND: for (int i = 0; i < n; ++i) a[i] = nearbyintf(a[i]); break;
    case DNNQ_ELT_CLIP:
        for (int i = 0; i < n; ++i) {
            float t = a[i] > al ? a[i] : al;
            a[i] = t > be ? be : t;
        }
        break;
    case DNNQ_ELT_CLIP_V2:
        for (int i = 0; i < n; ++i) {
            float t = a[i] > al ? a[i] : al;
            a[i] = t < be ? t : be;
        }
        break;
    case DNNQ_ELT_HARDSIGMOID:
        for (int i = 0; i < n; ++i) {
            float t = a[i] * al + be;
            a[i] = t <= 0.0f ? 0.0f : (t >= 1.0f ? 1.0f : t);
        }
        break;
    case DNNQ_ELT_HARDSWISH:
        for (int i = 0; i < n; ++i) {
            float t = a[i] * al + be;
            t = t <= 0.0f ? 0.0f : (t >= 1.0f ? 1.0f : t);
            a[i] = a[i] * t;
        }
        break;
    default:
        for (int i = 0; i < n; ++i) a[i] = dnnq_eltwise(alg, a[i], al, be);
    }
}

/* ---- affine load: out = (((f32(src) - a) * b) * c) + d ----------------------------------------
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

static void tk_affine(float *restrict out, const char *src, int dt, int64_t st, int n, float a,
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
 * number of elements done (the caller finishes the tail). */
#if defined(__AVX512F__)
#define TK_FV 16
typedef __m512 tk_fv;
static inline tk_fv tk_fv_load(const char *p, int dt) {
    switch (dt) {
    case DNNQ_DT_F32: return _mm512_loadu_ps((const float *)p);
    case DNNQ_DT_S32: return _mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)p));
    case DNNQ_DT_S8: return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
    default: return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
    }
}
static inline void tk_fv_store(char *p, int dt, tk_fv x) {
    switch (dt) {
    case DNNQ_DT_S8:
        x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-128.0f));
        _mm_storeu_si128((__m128i *)p, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(x)));
        break;
    case DNNQ_DT_U8:
        x = _mm512_min_ps(_mm512_max_ps(x, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
        _mm_storeu_si128((__m128i *)p, _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(x)));
        break;
    case DNNQ_DT_S32:
        x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(TK_S32_HI)), _mm512_set1_ps(TK_S32_LO));
        _mm512_storeu_si512((void *)p, _mm512_cvtps_epi32(x));
        break;
    default: _mm512_storeu_ps((float *)p, x);
    }
}
#define TK_FV_SET1 _mm512_set1_ps
#define TK_FV_AFFINE(x) _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps((x), va), vb), vc), vd)
#elif defined(__AVX2__)
#define TK_FV 8
typedef __m256 tk_fv;
static inline tk_fv tk_fv_load(const char *p, int dt) {
    switch (dt) {
    case DNNQ_DT_F32: return _mm256_loadu_ps((const float *)p);
    case DNNQ_DT_S32: return _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)p));
    case DNNQ_DT_S8: return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
    default: return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
    }
}
static inline void tk_fv_store(char *p, int dt, tk_fv x) {
    switch (dt) {
    case DNNQ_DT_S8: {
        x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-128.0f));
        __m256i q = _mm256_cvtps_epi32(x);
        __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)p, _mm_packs_epi16(h, h));
        break;
    }
    case DNNQ_DT_U8: {
        x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
        __m256i q = _mm256_cvtps_epi32(x);
        __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(h, h));
        break;
    }
    case DNNQ_DT_S32:
        x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(TK_S32_HI)), _mm256_set1_ps(TK_S32_LO));
        _mm256_storeu_si256((__m256i *)p, _mm256_cvtps_epi32(x));
        break;
    default: _mm256_storeu_ps((float *)p, x);
    }
}
#define TK_FV_SET1 _mm256_set1_ps
#define TK_FV_AFFINE(x) _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps((x), va), vb), vc), vd)
#endif

#ifdef TK_FV
#define TK_FUSED_LOOP(SDT, DDT)                                                               \
    for (; i + TK_FV <= n; i += TK_FV)                                                        \
        tk_fv_store(dst + i * des, DDT, TK_FV_AFFINE(tk_fv_load(src + i * ses, SDT)))
#define TK_FUSED_DST(SDT)                                                                     \
    switch (ddt) {                                                                            \
    case DNNQ_DT_S8: TK_FUSED_LOOP(SDT, DNNQ_DT_S8); break;                                   \
    case DNNQ_DT_U8: TK_FUSED_LOOP(SDT, DNNQ_DT_U8); break;                                   \
    case DNNQ_DT_S32: TK_FUSED_LOOP(SDT, DNNQ_DT_S32); break;                                 \
    default: TK_FUSED_LOOP(SDT, DNNQ_DT_F32); break;                                          \
    }
static int tk_affine_store_fused(char *dst, int ddt, const char *src, int sdt, int n, float a,
                                 float b, float c, float d) {
    const tk_fv va = TK_FV_SET1(a), vb = TK_FV_SET1(b), vc = TK_FV_SET1(c), vd = TK_FV_SET1(d);
    const int ses = tk_esize(sdt), des = tk_esize(ddt);
    int i = 0;
    switch (sdt) {
    case DNNQ_DT_S8: TK_FUSED_DST(DNNQ_DT_S8); break;
    case DNNQ_DT_U8: TK_FUSED_DST(DNNQ_DT_U8); break;
    case DNNQ_DT_S32: TK_FUSED_DST(DNNQ_DT_S32); break;
    default: TK_FUSED_DST(DNNQ_DT_F32); break;
    }
    return i;
}
#else
static int tk_affine_store_fused(char *dst, int ddt, const char *src, int sdt, int n, float a,
                                 float b, float c, float d) {
    (void)dst; (void)ddt; (void)src; (void)sdt; (void)n; (void)a; (void)b; (void)c; (void)d;
    return 0;
}
#endif

/* Fused binary: dst = alg((f32(s0) - a0) * b0, (f32(s1) - a1) * b1), one pass, for row-constant
 * parameters, contiguous operands (s1 contiguous or broadcast), data types f32 / s8 / u8 and
 * alg add, sub, mul, min, max.  Same operations and rounding as the staged path. */
#ifdef TK_FV
#if defined(__AVX512F__)
#define TK_FV_ADD _mm512_add_ps
#define TK_FV_SUB _mm512_sub_ps
#define TK_FV_MUL _mm512_mul_ps
#define TK_FV_MIN _mm512_min_ps
#define TK_FV_MAX _mm512_max_ps
#else
#define TK_FV_ADD _mm256_add_ps
#define TK_FV_SUB _mm256_sub_ps
#define TK_FV_MUL _mm256_mul_ps
#define TK_FV_MIN _mm256_min_ps
#define TK_FV_MAX _mm256_max_ps
#endif
#define TK_BF_LOOP(D0, D1, DD, OP)                                                            \
    for (; i + TK_FV <= n; i += TK_FV) {                                                      \
        tk_fv x = TK_FV_MUL(TK_FV_SUB(tk_fv_load(s0 + i * tk_esize(D0), D0), va0), vb0);      \
        tk_fv y = bc ? yb : TK_FV_MUL(TK_FV_SUB(tk_fv_load(s1 + i * tk_esize(D1), D1), va1), vb1); \
        tk_fv_store(dst + i * tk_esize(DD), DD, OP(x, y));                                    \
    }
#define TK_BF_ALG(D0, D1, DD)                                                                 \
    switch (alg) {                                                                            \
    case DNNQ_BIN_ADD: TK_BF_LOOP(D0, D1, DD, TK_FV_ADD); break;                              \
    case DNNQ_BIN_SUB: TK_BF_LOOP(D0, D1, DD, TK_FV_SUB); break;                              \
    case DNNQ_BIN_MUL: TK_BF_LOOP(D0, D1, DD, TK_FV_MUL); break;                              \
    case DNNQ_BIN_MIN: TK_BF_LOOP(D0, D1, DD, TK_FV_MIN); break;                              \
    default: TK_BF_LOOP(D0, D1, DD, TK_FV_MAX); break;                                        \
    }
#define TK_BF_DD(D0, D1)                                                                      \
    switch (ddt) {                                                                            \
    case DNNQ_DT_S8: TK_BF_ALG(D0, D1, DNNQ_DT_S8); break;                                    \
    case DNNQ_DT_U8: TK_BF_ALG(D0, D1, DNNQ_DT_U8); break;                                    \
    default: TK_BF_ALG(D0, D1, DNNQ_DT_F32); break;                                           \
    }
#define TK_BF_D1(D0)                                                                          \
    switch (bc ? DNNQ_DT_F32 : dt1) {                                                         \
    case DNNQ_DT_S8: TK_BF_DD(D0, DNNQ_DT_S8); break;                                         \
    case DNNQ_DT_U8: TK_BF_DD(D0, DNNQ_DT_U8); break;                                         \
    default: TK_BF_DD(D0, DNNQ_DT_F32); break;                                                \
    }
static int tk_binary_fused_ok(int alg, int dt0, int dt1, int ddt) {
    const int a = alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB || alg == DNNQ_BIN_MUL ||
                  alg == DNNQ_BIN_MIN || alg == DNNQ_BIN_MAX;
    return a && dt0 != DNNQ_DT_S32 && dt1 != DNNQ_DT_S32 && ddt != DNNQ_DT_S32;
}
static int tk_binary_fused(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1,
                           int bc, int n, int alg, float a0, float b0, float a1, float b1) {
    const tk_fv va0 = TK_FV_SET1(a0), vb0 = TK_FV_SET1(b0), va1 = TK_FV_SET1(a1),
                vb1 = TK_FV_SET1(b1);
    const tk_fv yb = TK_FV_SET1(bc ? (tk_load1(s1, dt1) - a1) * b1 : 0.0f);
    int i = 0;
    switch (dt0) {
    case DNNQ_DT_S8: TK_BF_D1(DNNQ_DT_S8); break;
    case DNNQ_DT_U8: TK_BF_D1(DNNQ_DT_U8); break;
    default: TK_BF_D1(DNNQ_DT_F32); break;
    }
    return i;
}
#else
static int tk_binary_fused_ok(int alg, int dt0, int dt1, int ddt) {
    (void)alg; (void)dt0; (void)dt1; (void)ddt;
    return 0;
}
static int tk_binary_fused(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1,
                           int bc, int n, int alg, float a0, float b0, float a1, float b1) {
    (void)dst; (void)ddt; (void)s0; (void)dt0; (void)s1; (void)dt1; (void)bc; (void)n; (void)alg;
    (void)a0; (void)b0; (void)a1; (void)b1;
    return 0;
}
#endif

/* Fast 8-bit binary: s8 / u8 src0 and src1 (both contiguous), s8 / u8 dst, alg add, sub, mul,
 * min, max, row-constant parameters, 64 (AVX-512) or 32 (AVX2) elements per step.  The same f32
 * operations as the staged path ((f32(x) - zp) * scale per source, then alg); the clamp before
 * the conversion is dropped because the caller checks that every result is finite and below
 * 2^30 in magnitude (tk_binary8_ok), so cvtps2dq rounds half to even exactly and the narrowing
 * packs saturate to the same bounds as the clamp (the bounds are integers).  A zero point that
 * is 0 is skipped (x - 0 is exact).  Returns the number of elements done. */
static int tk_binary8_ok(int alg, int dt0, int dt1, int ddt, float a0, float b0, float a1,
                         float b1) {
    if (!((dt0 == DNNQ_DT_S8 || dt0 == DNNQ_DT_U8) && (dt1 == DNNQ_DT_S8 || dt1 == DNNQ_DT_U8)
          && (ddt == DNNQ_DT_S8 || ddt == DNNQ_DT_U8)))
        return 0;
    if (!(alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB || alg == DNNQ_BIN_MUL ||
          alg == DNNQ_BIN_MIN || alg == DNNQ_BIN_MAX))
        return 0;
    if (!(isfinite(a0) && isfinite(b0) && isfinite(a1) && isfinite(b1))) return 0;
    /* bound of |(x - zp) * s| for each source (an f32 result is within one ulp of it) */
    const double m0 = (fabs((double)a0) + 256.0) * fabs((double)b0);
    const double m1 = (fabs((double)a1) + 256.0) * fabs((double)b1);
    const double m = alg == DNNQ_BIN_MUL ? m0 * m1 : (alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB)
                                                         ? m0 + m1 : (m0 > m1 ? m0 : m1);
    return m < 1073741824.0;
}
#if defined(__AVX512BW__)
#define TK_B8_W 64
static inline __m512 tk_b8_cvt(const char *p, int u8) {
    const __m128i x = _mm_loadu_si128((const __m128i *)p);
    return _mm512_cvtepi32_ps(u8 ? _mm512_cvtepu8_epi32(x) : _mm512_cvtepi8_epi32(x));
}
/* four vectors of 16 s32 (elements 0-15, 16-31, ...) -> 64 saturated bytes in order */
static inline void tk_b8_pack_store(char *o, __m512i q0, __m512i q1, __m512i q2, __m512i q3,
                                    int u8) {
    const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
    const __m512i b = u8 ? _mm512_packus_epi16(w01, w23) : _mm512_packs_epi16(w01, w23);
    /* dword 4l + q of b holds elements 16q + 4l .. + 3 */
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512((void *)o, _mm512_permutexvar_epi32(idx, b));
}
#define TK_B8_V __m512
#define TK_B8_SET1 _mm512_set1_ps
#define TK_B8_SUB _mm512_sub_ps
#define TK_B8_MUL _mm512_mul_ps
#define TK_B8_ADD _mm512_add_ps
#define TK_B8_MIN _mm512_min_ps
#define TK_B8_MAX _mm512_max_ps
#define TK_B8_CVTI _mm512_cvtps_epi32
#define TK_B8_VW 16
#elif defined(__AVX2__)
#define TK_B8_W 32
static inline __m256 tk_b8_cvt(const char *p, int u8) {
    const __m128i x = _mm_loadl_epi64((const __m128i *)p);
    return _mm256_cvtepi32_ps(u8 ? _mm256_cvtepu8_epi32(x) : _mm256_cvtepi8_epi32(x));
}
static inline void tk_b8_pack_store(char *o, __m256i q0, __m256i q1, __m256i q2, __m256i q3,
                                    int u8) {
    const __m256i w01 = _mm256_packs_epi32(q0, q1), w23 = _mm256_packs_epi32(q2, q3);
    const __m256i b = u8 ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
    /* dword 4l + q of b holds elements 8q + 4l .. + 3 */
    const __m256i idx = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256((__m256i *)o, _mm256_permutevar8x32_epi32(b, idx));
}
#define TK_B8_V __m256
#define TK_B8_SET1 _mm256_set1_ps
#define TK_B8_SUB _mm256_sub_ps
#define TK_B8_MUL _mm256_mul_ps
#define TK_B8_ADD _mm256_add_ps
#define TK_B8_MIN _mm256_min_ps
#define TK_B8_MAX _mm256_max_ps
#define TK_B8_CVTI _mm256_cvtps_epi32
#define TK_B8_VW 8
#endif

#ifdef TK_B8_W
#define TK_B8_PF 2048
#define TK_B8_SRC(P, U, VA, VB, SUBZ, q)                                                      \
    (SUBZ ? TK_B8_MUL(TK_B8_SUB(tk_b8_cvt((P) + (q) * TK_B8_VW, U), VA), VB)                   \
          : TK_B8_MUL(tk_b8_cvt((P) + (q) * TK_B8_VW, U), VB))
#define TK_B8_LOOP(OP, SUBZ)                                                                  \
    for (; i + TK_B8_W <= n; i += TK_B8_W) {                                                  \
        const char *p0 = s0 + i, *p1 = s1 + i;                                                \
        __builtin_prefetch(p0 + TK_B8_PF, 0, 3);                                              \
        __builtin_prefetch(p1 + TK_B8_PF, 0, 3);                                              \
        TK_B8_V r0 = OP(TK_B8_SRC(p0, u0, va0, vb0, SUBZ, 0), TK_B8_SRC(p1, u1, va1, vb1, SUBZ, 0)); \
        TK_B8_V r1 = OP(TK_B8_SRC(p0, u0, va0, vb0, SUBZ, 1), TK_B8_SRC(p1, u1, va1, vb1, SUBZ, 1)); \
        TK_B8_V r2 = OP(TK_B8_SRC(p0, u0, va0, vb0, SUBZ, 2), TK_B8_SRC(p1, u1, va1, vb1, SUBZ, 2)); \
        TK_B8_V r3 = OP(TK_B8_SRC(p0, u0, va0, vb0, SUBZ, 3), TK_B8_SRC(p1, u1, va1, vb1, SUBZ, 3)); \
        tk_b8_pack_store(dst + i, TK_B8_CVTI(r0), TK_B8_CVTI(r1), TK_B8_CVTI(r2),             \
                         TK_B8_CVTI(r3), ud);                                                 \
    }
#define TK_B8_ALG(SUBZ)                                                                       \
    switch (alg) {                                                                            \
    case DNNQ_BIN_ADD: TK_B8_LOOP(TK_B8_ADD, SUBZ); break;                                    \
    case DNNQ_BIN_SUB: TK_B8_LOOP(TK_B8_SUB, SUBZ); break;                                    \
    case DNNQ_BIN_MUL: TK_B8_LOOP(TK_B8_MUL, SUBZ); break;                                    \
    case DNNQ_BIN_MIN: TK_B8_LOOP(TK_B8_MIN, SUBZ); break;                                    \
    default: TK_B8_LOOP(TK_B8_MAX, SUBZ); break;                                              \
    }
#define TK_B8_DTS(SUBZ)                                                                       \
    if (u0) { if (u1) { if (ud) { TK_B8_BODY(1, 1, 1, SUBZ) } else { TK_B8_BODY(1, 1, 0, SUBZ) } } \
              else { if (ud) { TK_B8_BODY(1, 0, 1, SUBZ) } else { TK_B8_BODY(1, 0, 0, SUBZ) } } } \
    else { if (u1) { if (ud) { TK_B8_BODY(0, 1, 1, SUBZ) } else { TK_B8_BODY(0, 1, 0, SUBZ) } } \
           else { if (ud) { TK_B8_BODY(0, 0, 1, SUBZ) } else { TK_B8_BODY(0, 0, 0, SUBZ) } } }
#define TK_B8_BODY(U0, U1, UD, SUBZ)                                                          \
    { const int u0 = U0, u1 = U1, ud = UD; TK_B8_ALG(SUBZ) }
static int tk_binary8(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1, int n,
                      int alg, float a0, float b0, float a1, float b1) {
    const TK_B8_V va0 = TK_B8_SET1(a0), vb0 = TK_B8_SET1(b0), va1 = TK_B8_SET1(a1),
                  vb1 = TK_B8_SET1(b1);
    const int u0_ = dt0 == DNNQ_DT_U8, u1_ = dt1 == DNNQ_DT_U8, ud_ = ddt == DNNQ_DT_U8;
    int i = 0;
    {
        const int u0 = u0_, u1 = u1_, ud = ud_;
        if (a0 != 0.0f || a1 != 0.0f) { TK_B8_DTS(1) } else { TK_B8_DTS(0) }
    }
    return i;
}
#else
static int tk_binary8(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1, int n,
                      int alg, float a0, float b0, float a1, float b1) {
    (void)dst; (void)ddt; (void)s0; (void)dt0; (void)s1; (void)dt1; (void)n; (void)alg;
    (void)a0; (void)b0; (void)a1; (void)b1;
    return 0;
}
#endif

/* load operand k with up to four affine steps (sub p[0], mul p[1], mul p[2], add p[3]) into out */
static void tk_affine_into(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n, int k,
                           const int *pk, float *out, float *tmp) {
    static const int step_alg[4] = {DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_MUL, DNNQ_BIN_ADD};
    const int in = p->ndims - 1;
    float pv[4] = {0.0f, 1.0f, 1.0f, -0.0f};
    int rowconst = 1;
    for (int q = 0; q < 4; ++q) {
        if (pk[q] < 0) continue;
        const dnnq_pw_opnd_t *po = &p->opnds[pk[q]];
        if (po->st[in] != 0) { rowconst = 0; continue; }
        pv[q] = tk_load1(tk_addr(po, off[pk[q]]), po->dt);
    }
    const dnnq_pw_opnd_t *o = &p->opnds[k];
    const int64_t is = o->st[in];
    const char *a = tk_addr(o, off[k] + j * is);
    if (rowconst) {
        tk_affine(out, a, o->dt, is, n, pv[0], pv[1], pv[2], pv[3]);
        return;
    }
    tk_load(out, a, o->dt, is, n);
    for (int q = 0; q < 4; ++q) {
        if (pk[q] < 0) continue;
        const dnnq_pw_opnd_t *po = &p->opnds[pk[q]];
        const int64_t ps = po->st[in];
        const char *pa = tk_addr(po, off[pk[q]] + j * ps);
        if (ps == 0) {
            tk_bin_scalar(step_alg[q], out, tk_load1(pa, po->dt), n);
        } else {
            tk_load(tmp, pa, po->dt, ps, n);
            tk_bin_vec(step_alg[q], out, tmp, n);
        }
    }
}

/* 8-bit -> 8-bit requantization through a 256-entry table (AVX-512 VBMI's vpermi2b looks up 64
 * bytes at a time).  The table is computed with the very tk_affine / tk_store code of the
 * regular path, for all 256 inputs, so the results are identical; it is cached per thread and
 * rebuilt when the row's parameters change.  Used only on CPUs with VBMI (checked at run time:
 * the avx512_core_vnni level does not imply it). */
#if defined(__AVX512F__) && defined(__GNUC__)
#define TK_HAVE_LUT 1
static int tk_vbmi = -1;
static int tk_lut_ok(void) {
    if (tk_vbmi < 0) {
        __builtin_cpu_init();
        tk_vbmi = __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
    }
    return tk_vbmi;
}
typedef struct {
    int valid, sdt, ddt;
    float pv[4];
    uint8_t lut[256] __attribute__((aligned(64)));
} tk_lut_t;
/* per-thread direct-mapped cache: per-channel requantization cycles through a few parameter
 * sets (one per channel), each table is built once */
#define TK_LUT_WAYS 64
static _Thread_local tk_lut_t tk_lut_cache[TK_LUT_WAYS];

static const uint8_t *tk_lut_get(int sdt, int ddt, const float *pv) {
    uint32_t h = (uint32_t)(sdt * 7 + ddt);
    for (int q = 0; q < 4; ++q) {
        uint32_t u;
        memcpy(&u, &pv[q], 4);
        h = (h ^ u) * 0x9E3779B1u;
    }
    tk_lut_t *c = &tk_lut_cache[h >> 26]; /* top 6 bits: 64 ways */
    if (c->valid && c->sdt == sdt && c->ddt == ddt && !memcmp(c->pv, pv, sizeof(c->pv)))
        return c->lut;
    uint8_t in[256];
    float v[256];
    for (int i = 0; i < 256; ++i) in[i] = (uint8_t)i; /* as s8: the two's complement value */
    tk_affine(v, (const char *)in, sdt, 1, 256, pv[0], pv[1], pv[2], pv[3]);
    tk_store((char *)c->lut, ddt, 1, v, 256);
    c->valid = 1;
    c->sdt = sdt;
    c->ddt = ddt;
    memcpy(c->pv, pv, sizeof(c->pv));
    return c->lut;
}

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void tk_lut_apply(uint8_t *dst, const uint8_t *src, const uint8_t *lut, int n) {
    const __m512i lo = _mm512_load_si512((const void *)lut);
    const __m512i lo2 = _mm512_load_si512((const void *)(lut + 64));
    const __m512i hi = _mm512_load_si512((const void *)(lut + 128));
    const __m512i hi2 = _mm512_load_si512((const void *)(lut + 192));
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i x = _mm512_loadu_si512((const void *)(src + i));
        const __m512i a = _mm512_permutex2var_epi8(lo, x, lo2);  /* entries 0..127 */
        const __m512i b = _mm512_permutex2var_epi8(hi, x, hi2);  /* entries 128..255 */
        _mm512_storeu_si512((void *)(dst + i), _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), a, b));
    }
    for (; i < n; ++i) dst[i] = lut[src[i]];
}
#endif

/* ---- the pointwise program on one chunk ---------------------------------------------------- */

/* off[k]: element offset of operand k at the start of the row; j: inner index of the chunk */
static void tk_program(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n,
                       float (*buf)[TK_CH], float *tmp) {
    const int in = p->ndims - 1;
    for (int s = 0; s < p->n_stages; ++s) {
        const dnnq_pw_stage_t *sg = &p->stages[s];
        float *b = buf[sg->buf];
        switch (sg->op) {
        case DNNQ_PW_LOAD: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            tk_load(b, tk_addr(o, off[sg->arg] + j * is), o->dt, is, n);
            break;
        }
        case DNNQ_PW_BIN_OPND: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            const char *a = tk_addr(o, off[sg->arg] + j * is);
            if (is == 0) {
                tk_bin_scalar(sg->alg, b, tk_load1(a, o->dt), n);
            } else if (is == 1 && o->dt == DNNQ_DT_F32) {
                tk_bin_vec(sg->alg, b, (const float *)a, n);
            } else {
                tk_load(tmp, a, o->dt, is, n);
                tk_bin_vec(sg->alg, b, tmp, n);
            }
            break;
        }
        case DNNQ_PW_BIN_BUF: tk_bin_vec(sg->alg, b, buf[sg->arg], n); break;
        case DNNQ_PW_BIN_CONST: tk_bin_scalar(sg->alg, b, sg->alpha, n); break;
        case DNNQ_PW_ELTWISE: tk_eltwise(sg->alg, b, sg->alpha, sg->beta, n); break;
        case DNNQ_PW_STORE: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            tk_store((char *)tk_addr(o, off[sg->arg] + j * is), o->dt, is, b, n);
            break;
        }
        case DNNQ_PW_AFFINE: {
            static const int step_alg[4] = {DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_MUL, DNNQ_BIN_ADD};
            float pv[4] = {0.0f, 1.0f, 1.0f, -0.0f};
            int rowconst = 1;
            for (int q = 0; q < 4; ++q) {
                const int k = sg->p[q];
                if (k < 0) continue;
                const dnnq_pw_opnd_t *o = &p->opnds[k];
                if (o->st[in] != 0) { rowconst = 0; continue; }
                pv[q] = tk_load1(tk_addr(o, off[k]), o->dt);
            }
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            const char *a = tk_addr(o, off[sg->arg] + j * is);
            const dnnq_pw_opnd_t *d = sg->arg2 >= 0 ? &p->opnds[sg->arg2] : NULL;
            const int64_t ds = d ? d->st[in] : 0;
            char *dp = d ? (char *)tk_addr(d, off[sg->arg2] + j * ds) : NULL;
#ifdef TK_HAVE_LUT
            if (rowconst && d && ds == 1 && is == 1 && n >= 128
                && (o->dt == DNNQ_DT_S8 || o->dt == DNNQ_DT_U8)
                && (d->dt == DNNQ_DT_S8 || d->dt == DNNQ_DT_U8) && tk_lut_ok()) {
                tk_lut_apply((uint8_t *)dp, (const uint8_t *)a, tk_lut_get(o->dt, d->dt, pv), n);
                break;
            }
#endif
            if (rowconst && d && ds == 1 && is == 1) {
                /* one fused pass; the tail (< one vector) through the buffer */
                const int done = tk_affine_store_fused(dp, d->dt, a, o->dt, n, pv[0], pv[1],
                                                       pv[2], pv[3]);
                if (done == n) break;
                const int es = tk_esize(o->dt), des = tk_esize(d->dt);
                tk_affine(b, a + done * es, o->dt, 1, n - done, pv[0], pv[1], pv[2], pv[3]);
                tk_store(dp + done * des, d->dt, 1, b, n - done);
                break;
            }
            float *out = (rowconst && d && d->dt == DNNQ_DT_F32 && ds == 1) ? (float *)dp : b;
            if (rowconst) {
                tk_affine(out, a, o->dt, is, n, pv[0], pv[1], pv[2], pv[3]);
            } else {
                tk_load(b, a, o->dt, is, n);
                for (int q = 0; q < 4; ++q) {
                    const int k = sg->p[q];
                    if (k < 0) continue;
                    const dnnq_pw_opnd_t *po = &p->opnds[k];
                    const int64_t ps = po->st[in];
                    const char *pa = tk_addr(po, off[k] + j * ps);
                    if (ps == 0) {
                        tk_bin_scalar(step_alg[q], b, tk_load1(pa, po->dt), n);
                    } else {
                        tk_load(tmp, pa, po->dt, ps, n);
                        tk_bin_vec(step_alg[q], b, tmp, n);
                    }
                }
            }
            if (d && out != (float *)dp) tk_store(dp, d->dt, ds, b, n);
            break;
        }
        case DNNQ_PW_BINARY2: {
            /* buf[b] = alg((src0 - p0) * p1, (src1 - p2) * p3), stored into operand arg3 too */
            const dnnq_pw_opnd_t *o0 = &p->opnds[sg->arg], *o1 = &p->opnds[sg->arg2];
            const dnnq_pw_opnd_t *d = sg->arg3 >= 0 ? &p->opnds[sg->arg3] : NULL;
            const int64_t s0s = o0->st[in], s1s = o1->st[in], dds = d ? d->st[in] : 0;
            int rowconst = 1;
            float pv[4] = {0.0f, 1.0f, 0.0f, 1.0f};
            for (int q = 0; q < 4; ++q) {
                const int k = sg->p[q];
                if (k < 0) continue;
                const dnnq_pw_opnd_t *po = &p->opnds[k];
                if (po->st[in] != 0) { rowconst = 0; break; }
                pv[q] = tk_load1(tk_addr(po, off[k]), po->dt);
            }
            if (d && rowconst && s0s == 1 && dds == 1 && (s1s == 1 || s1s == 0)
                && tk_binary_fused_ok(sg->alg, o0->dt, o1->dt, d->dt)) {
                char *dp = (char *)tk_addr(d, off[sg->arg3] + j);
                const char *a0 = tk_addr(o0, off[sg->arg] + j);
                const char *a1 = tk_addr(o1, off[sg->arg2] + j * s1s);
                int done = 0;
                if (s1s == 1 && tk_binary8_ok(sg->alg, o0->dt, o1->dt, d->dt, pv[0], pv[1],
                                              pv[2], pv[3]))
                    done = tk_binary8(dp, d->dt, a0, o0->dt, a1, o1->dt, n, sg->alg, pv[0],
                                      pv[1], pv[2], pv[3]);
                done += tk_binary_fused(dp + done * tk_esize(d->dt), d->dt,
                                        a0 + done * tk_esize(o0->dt), o0->dt,
                                        a1 + done * s1s * tk_esize(o1->dt), o1->dt, s1s == 0,
                                        n - done, sg->alg, pv[0], pv[1], pv[2], pv[3]);
                if (done == n) break;
                const int k0[4] = {sg->p[0], sg->p[1], -1, -1}, k1[4] = {sg->p[2], sg->p[3], -1, -1};
                tk_affine_into(p, off, j + done, n - done, sg->arg, k0, b, tmp);
                tk_affine_into(p, off, j + done, n - done, sg->arg2, k1, buf[sg->buf + 1], tmp);
                tk_bin_vec(sg->alg, b, buf[sg->buf + 1], n - done);
                tk_store(dp + done * tk_esize(d->dt), d->dt, 1, b, n - done);
                break;
            }
            const int k0[4] = {sg->p[0], sg->p[1], -1, -1}, k1[4] = {sg->p[2], sg->p[3], -1, -1};
            tk_affine_into(p, off, j, n, sg->arg, k0, b, tmp);
            tk_affine_into(p, off, j, n, sg->arg2, k1, buf[sg->buf + 1], tmp);
            tk_bin_vec(sg->alg, b, buf[sg->buf + 1], n);
            if (d) tk_store((char *)tk_addr(d, off[sg->arg3] + j * dds), d->dt, dds, b, n);
            break;
        }
        case DNNQ_PW_SAVE: memcpy(buf[sg->arg], b, sizeof(float) * (size_t)n); break;
        case DNNQ_PW_SELECT: {
            const dnnq_pw_opnd_t *oc = &p->opnds[sg->arg], *ov = &p->opnds[sg->arg2];
            const int64_t cs = oc->st[in], vs = ov->st[in];
            float *x = buf[sg->p[1]];
            tk_load(tmp, tk_addr(oc, off[sg->arg] + j * cs), oc->dt, cs, n);
            tk_load(x, tk_addr(ov, off[sg->arg2] + j * vs), ov->dt, vs, n);
            tk_select(sg->alg, b, buf[sg->p[0]], tmp, x, n);
            break;
        }
        case DNNQ_PW_COPY: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg], *d = &p->opnds[sg->arg2];
            const int64_t is = o->st[in], ds = d->st[in];
            tk_copy((char *)tk_addr(d, off[sg->arg2] + j * ds), ds,
                    tk_addr(o, off[sg->arg] + j * is), is, o->dt, n);
            break;
        }
        default: break;
        }
    }
}

/* element offsets of every operand at the start of row `row` */
static void tk_row_offsets(const dnnq_pw_plan_t *p, int64_t row, int64_t *off) {
    if (p->ndims == 2) { /* one row dim (the common collapsed case): no division */
        for (int k = 0; k < p->n_opnds; ++k) off[k] = row * p->opnds[k].st[0];
        return;
    }
    for (int k = 0; k < p->n_opnds; ++k) off[k] = 0;
    for (int d = p->ndims - 2; d >= 0; --d) {
        const int64_t idx = row % p->dims[d];
        row /= p->dims[d];
        if (idx)
            for (int k = 0; k < p->n_opnds; ++k) off[k] += idx * p->opnds[k].st[d];
    }
}

#define TK_OFF_STACK 64

int DNNQ_TK_FN(dnnq_pw_run)(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    int64_t *off = p->n_opnds <= TK_OFF_STACK ? off_stack
                                               : (int64_t *)malloc(sizeof(int64_t) * p->n_opnds);
    if (!off) return DNNQ_TK_ENOMEM;
    const int64_t inner = p->dims[p->ndims - 1];
    const int64_t blk = p->block > 0 ? p->block : inner;
    const int64_t nblk = (inner + blk - 1) / blk;
    int64_t cur_row = -1;
    for (int64_t it = it0; it < it1; ++it) {
        const int64_t row = it / nblk, b = it % nblk;
        if (row != cur_row) {
            tk_row_offsets(p, row, off);
            cur_row = row;
        }
        const int64_t j0 = b * blk, j1 = j0 + blk < inner ? j0 + blk : inner;
        for (int64_t j = j0; j < j1; j += TK_CH) {
            const int n = (int)(j1 - j < TK_CH ? j1 - j : TK_CH);
            tk_program(p, off, j, n, buf, tmp);
        }
    }
    if (off != off_stack) free(off);
    return 0;
}

/* ---- pooling -------------------------------------------------------------------------------- */
/* Valid tap range [lo, hi) of kernel index k for output o: i = o*S - P + k*Dl in [0, I). */
static inline void tk_tap_range(int64_t o, int64_t S, int64_t P, int64_t Dl, int64_t K, int64_t I,
                                int64_t *lo, int64_t *hi) {
    const int64_t i0 = o * S - P;
    int64_t l = 0, h = K;
    if (i0 >= 0 && i0 + (K - 1) * Dl < I) { /* the whole window inside: no division */
        *lo = 0;
        *hi = K;
        return;
    }
    if (i0 < 0) l = (-i0 + Dl - 1) / Dl;
    if (i0 + (K - 1) * Dl >= I) {
        const int64_t last = I - 1 - i0; /* largest k with i0 + k*Dl <= I-1 */
        h = last < 0 ? 0 : last / Dl + 1;
    }
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* channels-last: taps are rows of C elements; acc over the taps for channels [c0, c0+nc).
 * Vector blocks keep the accumulator in a register across the taps (intrinsics per ISA); the
 * remaining channels go element by element.  Each returns the number of channels done. */
#if defined(__AVX512BW__)
/* one 64-byte vector holds 64 / sizeof(T) channels */
#define TK_CL_MAX8(NAME, T, MAXOP, INIT)                                                      \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, T *acc) {                                                  \
        const int W = (int)(64 / sizeof(T));                                                  \
        int b = 0;                                                                            \
        for (; b + W <= nc; b += W) {                                                         \
            __m512i m = INIT;                                                                 \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = MAXOP(m, _mm512_loadu_si512((const void *)((const T *)src + tap[t] + c0 + b))); \
            _mm512_storeu_si512((void *)(acc + b), m);                                        \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CL_MAX8(tk_clv_max_s8, int8_t, _mm512_max_epi8, _mm512_set1_epi8(-128))
TK_CL_MAX8(tk_clv_max_u8, uint8_t, _mm512_max_epu8, _mm512_setzero_si512())
TK_CL_MAX8(tk_clv_max_s32, int32_t, _mm512_max_epi32, _mm512_set1_epi32(INT32_MIN))
static inline int tk_clv_max_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + 16 <= nc; b += 16) {
        __m512 m = _mm512_set1_ps(-3.402823466e+38f);
        for (int t = 0; t < ntap; ++t) /* max(s, acc): a NaN tap keeps acc, as s > a ? s : a */
            m = _mm512_max_ps(_mm512_loadu_ps((const float *)src + tap[t] + c0 + b), m);
        _mm512_storeu_ps(acc + b, m);
    }
    return b;
}
#define TK_CL_SUM8(NAME, T, CVT)                                                              \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, int32_t *acc) {                                            \
        int b = 0;                                                                            \
        for (; b + 16 <= nc; b += 16) {                                                       \
            __m512i m = _mm512_setzero_si512();                                               \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = _mm512_add_epi32(m, CVT(_mm_loadu_si128(                                  \
                        (const __m128i *)((const T *)src + tap[t] + c0 + b))));               \
            _mm512_storeu_si512((void *)(acc + b), m);                                        \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CL_SUM8(tk_clv_sum_s8, int8_t, _mm512_cvtepi8_epi32)
TK_CL_SUM8(tk_clv_sum_u8, uint8_t, _mm512_cvtepu8_epi32)
static inline int tk_clv_sum_s32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, uint32_t *acc) {
    int b = 0;
    for (; b + 16 <= nc; b += 16) {
        __m512i m = _mm512_setzero_si512();
        for (int t = 0; t < ntap; ++t)
            m = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)((const int32_t *)src + tap[t] + c0 + b)));
        _mm512_storeu_si512((void *)(acc + b), m);
    }
    return b;
}
static inline int tk_clv_sum_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + 16 <= nc; b += 16) {
        __m512 m = _mm512_setzero_ps();
        for (int t = 0; t < ntap; ++t)
            m = _mm512_add_ps(m, _mm512_loadu_ps((const float *)src + tap[t] + c0 + b));
        _mm512_storeu_ps(acc + b, m);
    }
    return b;
}
#elif defined(__AVX2__)
#define TK_CL_MAX8(NAME, T, MAXOP, INIT, W)                                                   \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, T *acc) {                                                  \
        int b = 0;                                                                            \
        for (; b + W <= nc; b += W) {                                                         \
            __m256i m = INIT;                                                                 \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = MAXOP(m, _mm256_loadu_si256((const __m256i *)((const T *)src + tap[t] + c0 + b))); \
            _mm256_storeu_si256((__m256i *)(acc + b), m);                                     \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CL_MAX8(tk_clv_max_s8, int8_t, _mm256_max_epi8, _mm256_set1_epi8(-128), 32)
TK_CL_MAX8(tk_clv_max_u8, uint8_t, _mm256_max_epu8, _mm256_setzero_si256(), 32)
TK_CL_MAX8(tk_clv_max_s32, int32_t, _mm256_max_epi32, _mm256_set1_epi32(INT32_MIN), 8)
static inline int tk_clv_max_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + 8 <= nc; b += 8) {
        __m256 m = _mm256_set1_ps(-3.402823466e+38f);
        for (int t = 0; t < ntap; ++t)
            m = _mm256_max_ps(_mm256_loadu_ps((const float *)src + tap[t] + c0 + b), m);
        _mm256_storeu_ps(acc + b, m);
    }
    return b;
}
#define TK_CL_SUM8(NAME, T, CVT)                                                              \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, int32_t *acc) {                                            \
        int b = 0;                                                                            \
        for (; b + 8 <= nc; b += 8) {                                                         \
            __m256i m = _mm256_setzero_si256();                                               \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = _mm256_add_epi32(m, CVT(_mm_loadl_epi64(                                  \
                        (const __m128i *)((const T *)src + tap[t] + c0 + b))));               \
            _mm256_storeu_si256((__m256i *)(acc + b), m);                                     \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CL_SUM8(tk_clv_sum_s8, int8_t, _mm256_cvtepi8_epi32)
TK_CL_SUM8(tk_clv_sum_u8, uint8_t, _mm256_cvtepu8_epi32)
static inline int tk_clv_sum_s32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, uint32_t *acc) {
    int b = 0;
    for (; b + 8 <= nc; b += 8) {
        __m256i m = _mm256_setzero_si256();
        for (int t = 0; t < ntap; ++t)
            m = _mm256_add_epi32(m, _mm256_loadu_si256((const __m256i *)((const int32_t *)src + tap[t] + c0 + b)));
        _mm256_storeu_si256((__m256i *)(acc + b), m);
    }
    return b;
}
static inline int tk_clv_sum_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + 8 <= nc; b += 8) {
        __m256 m = _mm256_setzero_ps();
        for (int t = 0; t < ntap; ++t)
            m = _mm256_add_ps(m, _mm256_loadu_ps((const float *)src + tap[t] + c0 + b));
        _mm256_storeu_ps(acc + b, m);
    }
    return b;
}
#else
#define TK_CLV_NONE(NAME, T)                                                                  \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, T *acc) {                                                  \
        (void)src; (void)tap; (void)ntap; (void)c0; (void)nc; (void)acc;                      \
        return 0;                                                                             \
    }
TK_CLV_NONE(tk_clv_max_s8, int8_t)
TK_CLV_NONE(tk_clv_max_u8, uint8_t)
TK_CLV_NONE(tk_clv_max_s32, int32_t)
TK_CLV_NONE(tk_clv_max_f32, float)
TK_CLV_NONE(tk_clv_sum_s8, int32_t)
TK_CLV_NONE(tk_clv_sum_u8, int32_t)
TK_CLV_NONE(tk_clv_sum_s32, uint32_t)
TK_CLV_NONE(tk_clv_sum_f32, float)
#endif

#define TK_POOL_CL(T, ACC_T, SUFFIX)                                                          \
    static void tk_pool_cl_max_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, T *restrict acc, T lowest) {      \
        const int nb = tk_clv_max_##SUFFIX(src, tap, ntap, c0, nc, acc);                      \
        for (int c = nb; c < nc; ++c) acc[c] = lowest;                                        \
        for (int t = 0; t < ntap && nb < nc; ++t) {                                           \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = nb; c < nc; ++c) acc[c] = s[c] > acc[c] ? s[c] : acc[c];             \
        }                                                                                     \
    }                                                                                         \
    static void tk_pool_cl_sum_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, ACC_T *restrict acc) {            \
        const int nb = tk_clv_sum_##SUFFIX(src, tap, ntap, c0, nc, acc);                      \
        for (int c = nb; c < nc; ++c) acc[c] = 0;                                             \
        for (int t = 0; t < ntap && nb < nc; ++t) {                                           \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = nb; c < nc; ++c) acc[c] = (ACC_T)(acc[c] + (ACC_T)s[c]);             \
        }                                                                                     \
    }
TK_POOL_CL(uint8_t, int32_t, u8)
TK_POOL_CL(int8_t, int32_t, s8)
TK_POOL_CL(int32_t, uint32_t, s32) /* s32 sums wrap (unsigned) */
TK_POOL_CL(float, float, f32)

/* plain: one (n, c, d, h) row: taps are rows of the input plane, strided by SW along ow */
#define TK_POOL_ROW(T, ACC_T, SUFFIX)                                                         \
    static void tk_pool_row_max_##SUFFIX(const T *restrict srow, int64_t o0, int64_t olo,     \
                                         int64_t ohi, int64_t SW, int64_t off,                \
                                         T *restrict acc) {                                   \
        for (int64_t o = olo; o < ohi; ++o) {                                                 \
            const T v = srow[o * SW + off];                                                   \
            acc[o - o0] = v > acc[o - o0] ? v : acc[o - o0];                                  \
        }                                                                                     \
    }                                                                                         \
    static void tk_pool_row_sum_##SUFFIX(const T *restrict srow, int64_t o0, int64_t olo,     \
                                         int64_t ohi, int64_t SW, int64_t off,                \
                                         ACC_T *restrict acc) {                               \
        for (int64_t o = olo; o < ohi; ++o)                                                   \
            acc[o - o0] = (ACC_T)(acc[o - o0] + (ACC_T)srow[o * SW + off]);                   \
    }
TK_POOL_ROW(uint8_t, int32_t, u8)
TK_POOL_ROW(int8_t, int32_t, s8)
TK_POOL_ROW(int32_t, uint32_t, s32)
TK_POOL_ROW(float, float, f32)

static void tk_epilogue(const dnnq_pw_plan_t *p, int64_t row, int64_t j, int n,
                        float (*buf)[TK_CH], float *tmp, int64_t *off) {
    tk_row_offsets(p, row, off);
    tk_program(p, off, j, n, buf, tmp);
}

typedef union {
    int32_t i[TK_CH];
    uint32_t u[TK_CH];
    float f[TK_CH];
    uint8_t b[TK_CH];
    int8_t c[TK_CH];
} tk_acc_t;

static void tk_acc_to_f32(int src_dt, int max, const tk_acc_t *acc, float *restrict out, int n) {
    if (max) {
        switch (src_dt) {
        case DNNQ_DT_U8: for (int i = 0; i < n; ++i) out[i] = (float)acc->b[i]; break;
        case DNNQ_DT_S8: for (int i = 0; i < n; ++i) out[i] = (float)acc->c[i]; break;
        case DNNQ_DT_S32: for (int i = 0; i < n; ++i) out[i] = (float)acc->i[i]; break;
        default: memcpy(out, acc->f, sizeof(float) * (size_t)n);
        }
    } else if (src_dt == DNNQ_DT_F32) {
        memcpy(out, acc->f, sizeof(float) * (size_t)n);
    } else {
        for (int i = 0; i < n; ++i) out[i] = (float)acc->i[i];
    }
}

static void tk_raw_store(int dt, void *dst, int64_t elem, const tk_acc_t *acc, int n) {
    const int es = tk_esize(dt);
    memcpy((char *)dst + elem * es, acc->b, (size_t)n * es);
}

/* ---- channels-last 8-bit pooling into the same data type and layout, no post-ops (fast8) ---
 * tp[0 .. ntap) point at the C channels of each tap.  Max stays in int8 (vpmaxsb / vpmaxub:
 * exact by construction; an empty window gives the lowest value, as the generic path).  The
 * average sums in u16 lanes (s8 is offset by +128 with an xor, the offset 128 * ntap removed in
 * s32; needs ntap <= 256), then f32(sum) * rcp and one rne conversion: the generic path's
 * `(float)sum * f32(1/count)` followed by its store (no clamp needed: an average of 8-bit
 * values is in range, so cvtps2dq and the packs give the same bytes). */
#define TK_P8_MAXTAP 256
static void tk_p8_max(const uint8_t *const *tp, int ntap, int64_t C, uint8_t *restrict d, int u8) {
    int64_t c = 0;
#if defined(__AVX512BW__)
    if (u8) {
        for (; c + 64 <= C; c += 64) {
            __m512i m = _mm512_setzero_si512();
            for (int k = 0; k < ntap; ++k) m = _mm512_max_epu8(m, _mm512_loadu_si512((const void *)(tp[k] + c)));
            _mm512_storeu_si512((void *)(d + c), m);
        }
    } else {
        for (; c + 64 <= C; c += 64) {
            __m512i m = _mm512_set1_epi8(-128);
            for (int k = 0; k < ntap; ++k) m = _mm512_max_epi8(m, _mm512_loadu_si512((const void *)(tp[k] + c)));
            _mm512_storeu_si512((void *)(d + c), m);
        }
    }
    if (c < C) {
        const __mmask64 mk = _cvtu64_mask64(~0ULL >> (64 - (C - c)));
        __m512i m = u8 ? _mm512_setzero_si512() : _mm512_set1_epi8(-128);
        for (int k = 0; k < ntap; ++k) {
            const __m512i x = _mm512_maskz_loadu_epi8(mk, (const void *)(tp[k] + c));
            m = u8 ? _mm512_max_epu8(m, x) : _mm512_max_epi8(m, x);
        }
        _mm512_mask_storeu_epi8((void *)(d + c), mk, m);
        c = C;
    }
#elif defined(__AVX2__)
    if (u8) {
        for (; c + 32 <= C; c += 32) {
            __m256i m = _mm256_setzero_si256();
            for (int k = 0; k < ntap; ++k) m = _mm256_max_epu8(m, _mm256_loadu_si256((const __m256i *)(tp[k] + c)));
            _mm256_storeu_si256((__m256i *)(d + c), m);
        }
    } else {
        for (; c + 32 <= C; c += 32) {
            __m256i m = _mm256_set1_epi8(-128);
            for (int k = 0; k < ntap; ++k) m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(tp[k] + c)));
            _mm256_storeu_si256((__m256i *)(d + c), m);
        }
    }
#endif
    for (; c < C; ++c) {
        if (u8) {
            uint8_t m = 0;
            for (int k = 0; k < ntap; ++k) m = tp[k][c] > m ? tp[k][c] : m;
            d[c] = m;
        } else {
            int8_t m = -128;
            for (int k = 0; k < ntap; ++k) {
                const int8_t v = (int8_t)tp[k][c];
                m = v > m ? v : m;
            }
            d[c] = (uint8_t)m;
        }
    }
}

/* horizontal pass of the max: the max of nw columns of t (base, column stride cs) over C
 * channels (nw == 0: the lowest value) */
static inline void tk_p8_hmax(const uint8_t *base, int64_t cs, int nw, int64_t C,
                              uint8_t *restrict d, int u8) {
    int64_t c = 0;
#if defined(__AVX512BW__)
    if (nw > 0 && u8) {
        for (; c + 64 <= C; c += 64) {
            __m512i m = _mm512_loadu_si512((const void *)(base + c));
            for (int k = 1; k < nw; ++k) m = _mm512_max_epu8(m, _mm512_loadu_si512((const void *)(base + k * cs + c)));
            _mm512_storeu_si512((void *)(d + c), m);
        }
    } else if (nw > 0) {
        for (; c + 64 <= C; c += 64) {
            __m512i m = _mm512_loadu_si512((const void *)(base + c));
            for (int k = 1; k < nw; ++k) m = _mm512_max_epi8(m, _mm512_loadu_si512((const void *)(base + k * cs + c)));
            _mm512_storeu_si512((void *)(d + c), m);
        }
    }
#elif defined(__AVX2__)
    if (nw > 0 && u8) {
        for (; c + 32 <= C; c += 32) {
            __m256i m = _mm256_loadu_si256((const __m256i *)(base + c));
            for (int k = 1; k < nw; ++k) m = _mm256_max_epu8(m, _mm256_loadu_si256((const __m256i *)(base + k * cs + c)));
            _mm256_storeu_si256((__m256i *)(d + c), m);
        }
    } else if (nw > 0) {
        for (; c + 32 <= C; c += 32) {
            __m256i m = _mm256_loadu_si256((const __m256i *)(base + c));
            for (int k = 1; k < nw; ++k) m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(base + k * cs + c)));
            _mm256_storeu_si256((__m256i *)(d + c), m);
        }
    }
#endif
    if (c < C) { /* the rest (and nw == 0) through the pointer kernel */
        const uint8_t *hp[TK_P8_MAXTAP];
        for (int k = 0; k < nw; ++k) hp[k] = base + k * cs + c;
        tk_p8_max(hp, nw, C - c, d + c, u8);
    }
}

/* vertical pass of the average: tmp[i] = sum_k (tp[k][i] ^ flip) as u16, natural order */
static void tk_p8_vsum(const uint8_t *const *tp, int ntap, int64_t L, uint16_t *restrict t,
                       int u8) {
    int64_t i = 0;
    const uint8_t fl = u8 ? 0 : 0x80;
#if defined(__AVX512BW__)
    const __m256i flip = _mm256_set1_epi8((char)fl);
    if (u8) {
        for (; i + 32 <= L; i += 32) {
            __m512i acc = _mm512_setzero_si512();
            for (int k = 0; k < ntap; ++k)
                acc = _mm512_add_epi16(acc, _mm512_cvtepu8_epi16(
                          _mm256_loadu_si256((const __m256i *)(tp[k] + i))));
            _mm512_storeu_si512((void *)(t + i), acc);
        }
    }
    for (; i + 32 <= L; i += 32) {
        __m512i acc = _mm512_setzero_si512();
        for (int k = 0; k < ntap; ++k)
            acc = _mm512_add_epi16(acc, _mm512_cvtepu8_epi16(_mm256_xor_si256(
                      _mm256_loadu_si256((const __m256i *)(tp[k] + i)), flip)));
        _mm512_storeu_si512((void *)(t + i), acc);
    }
#elif defined(__AVX2__)
    const __m128i flip = _mm_set1_epi8((char)fl);
    for (; i + 16 <= L; i += 16) {
        __m256i acc = _mm256_setzero_si256();
        for (int k = 0; k < ntap; ++k)
            acc = _mm256_add_epi16(acc, _mm256_cvtepu8_epi16(_mm_xor_si128(
                      _mm_loadu_si128((const __m128i *)(tp[k] + i)), flip)));
        _mm256_storeu_si256((__m256i *)(t + i), acc);
    }
#endif
    for (; i < L; ++i) {
        uint16_t acc = 0;
        for (int k = 0; k < ntap; ++k) acc = (uint16_t)(acc + (uint8_t)(tp[k][i] ^ fl));
        t[i] = acc;
    }
}

/* horizontal pass: the average of ntap_w columns of t (base, column stride cs) over C channels;
 * `off` = 128 * taps for s8 (the xor offset), rcp = f32(1 / count) */
static void tk_p8_havg(const uint16_t *base, int64_t cs, int ntap_w, int64_t C,
                       uint8_t *restrict d, int u8, int32_t off, float rcp) {
    int64_t c = 0;
#if defined(__AVX512BW__)
    {
        const __m512i vo = _mm512_set1_epi32(off);
        const __m512 vr = _mm512_set1_ps(rcp);
        const __m512i z = _mm512_setzero_si512();
        const __m512i qidx = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
        for (; c + 64 <= C; c += 64) { /* 64 channels: u16 sums, unpacked and packed back */
            __m512i a0 = z, a1 = z;
            for (int k = 0; k < ntap_w; ++k) {
                a0 = _mm512_add_epi16(a0, _mm512_loadu_si512((const void *)(base + k * cs + c)));
                a1 = _mm512_add_epi16(a1, _mm512_loadu_si512((const void *)(base + k * cs + c + 32)));
            }
#define TK_P8_F(x) _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(u8 ? (x) : _mm512_sub_epi32((x), vo)), vr))
            const __m512i w0 = _mm512_packs_epi32(TK_P8_F(_mm512_unpacklo_epi16(a0, z)),
                                                  TK_P8_F(_mm512_unpackhi_epi16(a0, z)));
            const __m512i w1 = _mm512_packs_epi32(TK_P8_F(_mm512_unpacklo_epi16(a1, z)),
                                                  TK_P8_F(_mm512_unpackhi_epi16(a1, z)));
#undef TK_P8_F
            /* qword 2l: channels 8l.., qword 2l + 1: channels 32 + 8l.. */
            const __m512i b = u8 ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1);
            _mm512_storeu_si512((void *)(d + c), _mm512_permutexvar_epi64(qidx, b));
        }
        for (; c < C; c += 16) {
            const int rem = (int)(C - c < 16 ? C - c : 16);
            const __mmask16 mk = (__mmask16)(0xFFFFu >> (16 - rem));
            __m512i acc = _mm512_setzero_si512();
            for (int k = 0; k < ntap_w; ++k)
                acc = _mm512_add_epi32(acc, _mm512_cvtepu16_epi32(
                          _mm256_maskz_loadu_epi16(mk, (const void *)(base + k * cs + c))));
            const __m512i q = _mm512_cvtps_epi32(
                _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, vo)), vr));
            if (u8) _mm512_mask_cvtusepi32_storeu_epi8((void *)(d + c), mk, q);
            else _mm512_mask_cvtsepi32_storeu_epi8((void *)(d + c), mk, q);
        }
    }
#elif defined(__AVX2__)
    {
        const __m256i vo = _mm256_set1_epi32(off);
        const __m256 vr = _mm256_set1_ps(rcp);
        const __m256i z = _mm256_setzero_si256();
        for (; c + 32 <= C; c += 32) { /* 32 channels: u16 sums, unpacked and packed back */
            __m256i a0 = z, a1 = z;
            for (int k = 0; k < ntap_w; ++k) {
                a0 = _mm256_add_epi16(a0, _mm256_loadu_si256((const __m256i *)(base + k * cs + c)));
                a1 = _mm256_add_epi16(a1, _mm256_loadu_si256((const __m256i *)(base + k * cs + c + 16)));
            }
#define TK_P8_F(x) _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(u8 ? (x) : _mm256_sub_epi32((x), vo)), vr))
            const __m256i w0 = _mm256_packs_epi32(TK_P8_F(_mm256_unpacklo_epi16(a0, z)),
                                                  TK_P8_F(_mm256_unpackhi_epi16(a0, z)));
            const __m256i w1 = _mm256_packs_epi32(TK_P8_F(_mm256_unpacklo_epi16(a1, z)),
                                                  TK_P8_F(_mm256_unpackhi_epi16(a1, z)));
#undef TK_P8_F
            const __m256i b = u8 ? _mm256_packus_epi16(w0, w1) : _mm256_packs_epi16(w0, w1);
            _mm256_storeu_si256((__m256i *)(d + c), _mm256_permute4x64_epi64(b, 0xD8));
        }
        for (; c + 8 <= C; c += 8) {
            __m256i acc = _mm256_setzero_si256();
            for (int k = 0; k < ntap_w; ++k)
                acc = _mm256_add_epi32(acc, _mm256_cvtepu16_epi32(
                          _mm_loadu_si128((const __m128i *)(base + k * cs + c))));
            const __m256i q = _mm256_cvtps_epi32(
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc, vo)), vr));
            const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(d + c), u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w));
        }
    }
#endif
    for (; c < C; ++c) {
        int32_t sum = 0;
        for (int k = 0; k < ntap_w; ++k) sum += base[k * cs + c];
        const float v = (float)(sum - off) * rcp;
        d[c] = u8 ? tk_cvt_u8(v) : (uint8_t)tk_cvt_s8(v);
    }
}

/* ---- fused average for small windows (x86 vector builds) ----
 * Per output, the taps p + off[t] (t < ntap, C channels each) are summed directly in registers,
 * with no row buffer.  s8 bytes are first flipped (x ^ 0x80 = x + 128 as u8), so every byte is
 * a u8 value v and the sum s' = s + 128 * ntap.  A vector is read as 16-bit lanes x: the odd
 * channels' bytes are x >> 8, and the plain 16-bit sum of the x is lo + 256 * hi (mod 2^16),
 * lo / hi the sums of the even / odd channels, so lo = tot - (hi << 8) mod 2^16 -- exact, as
 * lo <= 255 * ntap < 2^16 (ntap <= TK_P8_FUSE_MAX).  Then per count:
 *  - count = 2^k (k >= 1; ntap < count with include-padding): f32(1 / count) and
 *    f32(s) * 2^-k are exact, so oneDNN's rne(f32(s) * f32(1/count)) is the integer
 *    round-half-even of s / 2^k, computed on s' >= 0 as (t + ((t >> k) & 1)) >> k with
 *    t = s' + 2^(k-1) - 1.  Proof, s' = q 2^k + r, 0 <= r < 2^k, h = 2^(k-1):
 *      r <  h: t = q 2^k + (r + h - 1) with r + h - 1 < 2^k - 1, t >> k = q, and
 *              (q 2^k + r + h - 1 + (q & 1)) >> k = q (r + h - 1 + 1 <= 2h - 1 < 2^k);
 *      r == h: t >> k = q, (q 2^k + 2h - 1 + (q & 1)) >> k = q + (q & 1): the even neighbour;
 *      r >  h: t = (q + 1) 2^k + (r - h - 1) with 0 <= r - h - 1 <= h - 2, t >> k = q + 1,
 *              and (q + 1) + ((r - h - 1 + ((q + 1) & 1)) >> k) = q + 1.
 *    s8: s = s' - 128 ntap, so s / 2^k = s' / 2^k - m with m = 128 ntap / 2^k, an even integer
 *    (2^k <= TK_P8_FUSE_MAX < 128), and rounding half to even commutes with subtracting an
 *    even integer: the s8 result is the rounded s' / 2^k minus m (mod 256).
 *    The bias 2^(k-1) - 1 is the accumulators' start value; count 1: the sum itself;
 *  - otherwise: the separable path's f32 steps (s32 lanes, f32(s' - 128 ntap) * rcp, cvtps2dq
 *    under the default rne mode), the results (in range: an average of 8-bit values) put back
 *    in channel order with shifts and masks. */
#define TK_P8_FUSE_MAX 16
#define TK_P8_FUSE_MINC 32 /* fewer channels: the separable path (measured) */

#if defined(__AVX512BW__)
static inline __attribute__((always_inline)) __m512i
tk_p8f_v512(const uint8_t *p, const int64_t *off, int ntap, int64_t c, __mmask64 mk,
            const int full, const int u8, const int sh, const __m512 vr, const __m512i vo,
            const __m512i vm) {
    const int b = sh > 0 ? (1 << (sh - 1)) - 1 : 0;
    const __m512i flip = _mm512_set1_epi8((char)(u8 ? 0 : 0x80));
    __m512i tot = _mm512_set1_epi16((short)(b * 257)), hi = _mm512_set1_epi16((short)b);
    for (int t = 0; t < ntap; ++t) {
        __m512i x = full ? _mm512_loadu_si512((const void *)(p + off[t] + c))
                         : _mm512_maskz_loadu_epi8(mk, (const void *)(p + off[t] + c));
        if (!u8) x = _mm512_xor_si512(x, flip);
        tot = _mm512_add_epi16(tot, x);
        hi = _mm512_add_epi16(hi, _mm512_srli_epi16(x, 8));
    }
    __m512i lo = _mm512_sub_epi16(tot, _mm512_slli_epi16(hi, 8));
    if (sh >= 0) {
        if (sh > 0) {
            const __m512i one = _mm512_set1_epi16(1);
            lo = _mm512_add_epi16(lo, _mm512_and_si512(_mm512_srli_epi16(lo, sh), one));
            hi = _mm512_add_epi16(hi, _mm512_and_si512(_mm512_srli_epi16(hi, sh), one));
            lo = _mm512_srli_epi16(lo, sh);
            hi = _mm512_srli_epi16(hi, sh);
        }
        /* lo, hi in [0, 255] */
        const __m512i r = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 8));
        return u8 ? r : _mm512_sub_epi8(r, vm);
    }
    const __m512i m16 = _mm512_set1_epi32(0xFFFF);
#define TK_P8F_F(x) _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(u8 ? (x) : _mm512_sub_epi32((x), vo)), vr))
    /* (a & m) | b */
#define TK_P8F_TL(a, m, b) _mm512_ternarylogic_epi32((a), (m), (b), 0xEA)
    lo = TK_P8F_TL(TK_P8F_F(_mm512_and_si512(lo, m16)), m16,
                   _mm512_slli_epi32(TK_P8F_F(_mm512_srli_epi32(lo, 16)), 16));
    hi = TK_P8F_TL(TK_P8F_F(_mm512_and_si512(hi, m16)), m16,
                   _mm512_slli_epi32(TK_P8F_F(_mm512_srli_epi32(hi, 16)), 16));
    return TK_P8F_TL(lo, _mm512_set1_epi16(0xFF), _mm512_slli_epi16(hi, 8));
#undef TK_P8F_F
#undef TK_P8F_TL
}

static inline __attribute__((always_inline)) void
tk_p8f_run(const uint8_t *p, const int64_t *off, int ntap, int64_t C, uint8_t *restrict d,
           const int u8, const int sh, float rcp) {
    const __m512 vr = _mm512_set1_ps(rcp);
    const __m512i vo = _mm512_set1_epi32(128 * ntap);
    const __m512i vm = _mm512_set1_epi8((char)(sh > 0 ? (128 * ntap) >> sh : 128 * ntap));
    int64_t c = 0;
    for (; c + 64 <= C; c += 64)
        _mm512_storeu_si512((void *)(d + c),
                            tk_p8f_v512(p, off, ntap, c, 0, 1, u8, sh, vr, vo, vm));
    if (c < C) {
        const __mmask64 mk = _cvtu64_mask64(~0ULL >> (64 - (C - c)));
        _mm512_mask_storeu_epi8((void *)(d + c), mk,
                                tk_p8f_v512(p, off, ntap, c, mk, 0, u8, sh, vr, vo, vm));
    }
}
#define TK_P8F_VEC 1
#elif defined(__AVX2__)
/* W = 256 (32 channels) or 128 (16 channels): the same steps as the AVX-512 kernel */
#define TK_P8F_DEF(NAME, V, VF, P, W, LOAD)                                                    \
static inline __attribute__((always_inline)) V                                                 \
NAME(const uint8_t *p, const int64_t *off, int ntap, int64_t c, const int u8, const int sh,     \
     float rcp) {                                                                              \
    const int b = sh > 0 ? (1 << (sh - 1)) - 1 : 0;                                            \
    const V flip = P##_set1_epi8((char)(u8 ? 0 : 0x80));                                       \
    V tot = P##_set1_epi16((short)(b * 257)), hi = P##_set1_epi16((short)b);                   \
    for (int t = 0; t < ntap; ++t) {                                                           \
        V x = LOAD((const V *)(p + off[t] + c));                                               \
        if (!u8) x = P##_xor_si##W(x, flip);                                                   \
        tot = P##_add_epi16(tot, x);                                                           \
        hi = P##_add_epi16(hi, P##_srli_epi16(x, 8));                                          \
    }                                                                                          \
    V lo = P##_sub_epi16(tot, P##_slli_epi16(hi, 8));                                          \
    if (sh >= 0) {                                                                             \
        if (sh > 0) {                                                                          \
            const V one = P##_set1_epi16(1);                                                   \
            lo = P##_add_epi16(lo, P##_and_si##W(P##_srli_epi16(lo, sh), one));                \
            hi = P##_add_epi16(hi, P##_and_si##W(P##_srli_epi16(hi, sh), one));                \
            lo = P##_srli_epi16(lo, sh);                                                       \
            hi = P##_srli_epi16(hi, sh);                                                       \
        }                                                                                      \
        const V r = P##_or_si##W(lo, P##_slli_epi16(hi, 8));                                   \
        return u8 ? r : P##_sub_epi8(r, P##_set1_epi8((char)(sh > 0 ? (128 * ntap) >> sh       \
                                                                    : 128 * ntap)));           \
    }                                                                                          \
    const V m16 = P##_set1_epi32(0xFFFF), vo = P##_set1_epi32(128 * ntap);                     \
    const VF vr = P##_set1_ps(rcp);                                                            \
    V e[4];                                                                                    \
    e[0] = P##_and_si##W(lo, m16);                                                             \
    e[1] = P##_srli_epi32(lo, 16);                                                             \
    e[2] = P##_and_si##W(hi, m16);                                                             \
    e[3] = P##_srli_epi32(hi, 16);                                                             \
    for (int i = 0; i < 4; ++i)                                                                \
        e[i] = P##_cvtps_epi32(P##_mul_ps(P##_cvtepi32_ps(u8 ? e[i] : P##_sub_epi32(e[i], vo)), vr)); \
    lo = P##_or_si##W(P##_and_si##W(e[0], m16), P##_slli_epi32(e[1], 16));                     \
    hi = P##_or_si##W(P##_and_si##W(e[2], m16), P##_slli_epi32(e[3], 16));                     \
    return P##_or_si##W(P##_and_si##W(lo, P##_set1_epi16(0xFF)), P##_slli_epi16(hi, 8));       \
}
TK_P8F_DEF(tk_p8f_v256, __m256i, __m256, _mm256, 256, _mm256_loadu_si256)
TK_P8F_DEF(tk_p8f_v128, __m128i, __m128, _mm, 128, _mm_loadu_si128)
#undef TK_P8F_DEF

static inline __attribute__((always_inline)) void
tk_p8f_run(const uint8_t *p, const int64_t *off, int ntap, int64_t C, uint8_t *restrict d,
           const int u8, const int sh, float rcp) {
    int64_t c = 0;
    for (; c + 32 <= C; c += 32)
        _mm256_storeu_si256((__m256i *)(d + c), tk_p8f_v256(p, off, ntap, c, u8, sh, rcp));
    /* the tail: 16 channels, then the last 16 again (channels are independent: the overlap is
     * recomputed to the same bytes; C >= TK_P8_FUSE_MINC >= 16) */
    if (c + 16 < C) {
        _mm_storeu_si128((__m128i *)(d + c), tk_p8f_v128(p, off, ntap, c, u8, sh, rcp));
        c += 16;
    }
    if (c < C)
        _mm_storeu_si128((__m128i *)(d + C - 16), tk_p8f_v128(p, off, ntap, C - 16, u8, sh, rcp));
}
#define TK_P8F_VEC 1
#endif

#ifdef TK_P8F_VEC
/* nout outputs (output o: taps base + o * step + off[t], t < ntap, into d + o * C), the average
 * over cnt; with pf (nrow row pointers): prefetches pf[j] + o * step .. + step */
static inline __attribute__((always_inline)) void
tk_p8f_outs(const uint8_t *base, const int64_t *off, int ntap, int64_t step, int64_t nout,
            int64_t C, uint8_t *restrict d, const int u8, const int sh, float rcp,
            const uint8_t *const *pf, int nrow) {
    for (int64_t o = 0; o < nout; ++o, base += step, d += C) {
        if (pf)
            for (int j = 0; j < nrow; ++j)
                for (int64_t q = 0; q < step; q += 64) __builtin_prefetch(pf[j] + o * step + q, 0, 3);
        tk_p8f_run(base, off, ntap, C, d, u8, sh, rcp);
    }
}

static void tk_p8_favg(const uint8_t *base, const int64_t *off, int ntap, int64_t step,
                       int64_t nout, int64_t C, uint8_t *restrict d, int u8, int cnt,
                       const uint8_t *const *pf, int nrow) {
    const float rcp = 1.0f / (float)cnt;
    const int sh = (cnt & (cnt - 1)) ? -1 : __builtin_ctz((unsigned)cnt);
#define TK_P8F_CASE(U)                                                                         \
    switch (sh) {                                                                              \
    case 0: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 0, rcp, pf, nrow); break;       \
    case 1: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 1, rcp, pf, nrow); break;       \
    case 2: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 2, rcp, pf, nrow); break;       \
    case 3: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 3, rcp, pf, nrow); break;       \
    case 4: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 4, rcp, pf, nrow); break;       \
    default: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, -1, rcp, pf, nrow);            \
    }
    if (u8) { TK_P8F_CASE(1) } else { TK_P8F_CASE(0) }
#undef TK_P8F_CASE
}

/* The average for windows of at most TK_P8_FUSE_MAX taps: per output row (n, od, oh), the
 * outputs whose window lies inside the row (same taps, base advancing by SW * C) in one call,
 * the border ones one by one with their own taps; an empty window as the separable path.
 * Integer sums are exact in any order, so this equals the tap-by-tap kernel. */
static void tk_pool8_favg(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    const uint8_t *src = (const uint8_t *)a->src;
    uint8_t *dst = (uint8_t *)a->dst;
    const int64_t C = a->C, KW = a->KW, ntap_max = a->window; /* <= TK_P8_FUSE_MAX here */
    const int u8 = a->src_dt == DNNQ_DT_U8, inc = a->alg == DNNQ_POOL_AVG_INC;
    const int64_t step = a->SW * C, rowlen = a->IW * C;
    /* outputs [w_lo, w_hi) have every column of the window inside [0, IW) */
    const int64_t last = a->IW - 1 - (KW - 1) * a->DW + a->PW; /* ow * SW <= last */
    int64_t w_hi = last < 0 ? 0 : last / a->SW + 1, w_lo = (a->PW + a->SW - 1) / a->SW;
    if (w_hi > a->OW) w_hi = a->OW;
    if (w_lo > w_hi) w_hi = w_lo;
    const uint8_t *rp[TK_P8_FUSE_MAX], *pf[TK_P8_FUSE_MAX];
    int64_t off[TK_P8_FUSE_MAX], boff[TK_P8_FUSE_MAX];
    int64_t ow = it0 % a->OW, row = it0 / a->OW;
    int64_t oh = row % a->OH, od = row / a->OH % a->OD, n = row / (a->OH * a->OD);
    int64_t r = it0;
    while (r < it1) {
        const int64_t ow_b = (it1 - r < a->OW - ow) ? ow + (it1 - r) : a->OW;
        int64_t dlo, dhi, hlo, hhi;
        tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
        tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
        int nrow = 0;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                rp[nrow] = src + ((n * a->ID + id) * a->IH + ih) * rowlen; /* column 0 */
                /* the rows of the output row two ahead (see tk_pool8_fast) */
                pf[nrow] = rp[nrow] + 2 * a->SH * rowlen + (ow * a->SW - a->PW) * C;
                ++nrow;
            }
        }
        uint8_t *d = dst + r * C;
        if (nrow == 0) { /* every window empty: as the separable path (no tap) */
            for (int64_t o = ow; o < ow_b; ++o, d += C)
                tk_p8_havg((const uint16_t *)src, 0, 0, C, d, u8, 0,
                           1.0f / (inc ? (float)ntap_max : 0.0f));
        } else {
            for (int j = 0, t = 0; j < nrow; ++j)
                for (int64_t k = 0; k < KW; ++k, ++t) off[t] = (rp[j] - rp[0]) + k * a->DW * C;
            int64_t o = ow;
            while (o < ow_b) {
                const int64_t i0 = o * a->SW - a->PW; /* column of tap kw = 0 */
                if (o >= w_lo && o < w_hi) {
                    const int64_t e = ow_b < w_hi ? ow_b : w_hi;
                    tk_p8_favg(rp[0] + i0 * C, off, nrow * (int)KW, step, e - o, C, d, u8,
                               inc ? (int)ntap_max : nrow * (int)KW, pf, nrow);
                    for (int j = 0; j < nrow; ++j) pf[j] += (e - o) * step;
                    d += (e - o) * C;
                    o = e;
                    continue;
                }
                int64_t wlo, whi;
                tk_tap_range(o, a->SW, a->PW, a->DW, KW, a->IW, &wlo, &whi);
                const int nw = (int)(whi - wlo);
                if (nw == 0) {
                    tk_p8_havg((const uint16_t *)src, 0, 0, C, d, u8, 0,
                               1.0f / (inc ? (float)ntap_max : 0.0f));
                } else {
                    for (int j = 0, t = 0; j < nrow; ++j)
                        for (int k = 0; k < nw; ++k, ++t)
                            boff[t] = (rp[j] - rp[0]) + (wlo + k) * a->DW * C;
                    tk_p8_favg(rp[0] + i0 * C, boff, nrow * nw, step, 1, C, d, u8,
                               inc ? (int)ntap_max : nrow * nw, pf, nrow);
                }
                for (int j = 0; j < nrow; ++j) pf[j] += step;
                d += C;
                ++o;
            }
        }
        r += ow_b - ow;
        ow = 0; /* the next output row */
        if (++oh == a->OH) {
            oh = 0;
            if (++od == a->OD) { od = 0; ++n; }
        }
    }
}
#endif

static int tk_pool8_fast_ok(const dnnq_pool_args_t *a) {
    return a->fast8 && a->channels_last && (a->src_dt == DNNQ_DT_S8 || a->src_dt == DNNQ_DT_U8)
           && (a->alg == DNNQ_POOL_MAX || a->avg_rcp) && a->window <= TK_P8_MAXTAP;
}

/* Separable: for each segment of one output row (n, od, oh), a vertical pass combines the input
 * rows of the window (flat, contiguous over the columns needed) into a row buffer, then each
 * output takes its KW columns from it.  Max and integer sums are exact in any order, so this
 * equals the generic tap-by-tap kernel. */
static int tk_pool8_fast(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    const uint8_t *src = (const uint8_t *)a->src;
    uint8_t *dst = (uint8_t *)a->dst;
    const int64_t C = a->C;
    const int u8 = a->src_dt == DNNQ_DT_U8, is_max = a->alg == DNNQ_POOL_MAX;
    const uint8_t *tp[TK_P8_MAXTAP];
    void *tmp = malloc((size_t)(a->IW * C) * (is_max ? 1 : 2) + 64);
    if (!tmp) return DNNQ_TK_ENOMEM;
    int64_t r = it0;
    while (r < it1) {
        const int64_t ow_a = r % a->OW, row = r / a->OW;
        const int64_t oh = row % a->OH, od = row / a->OH % a->OD, n = row / (a->OH * a->OD);
        const int64_t ow_b = (it1 - r < a->OW - ow_a) ? ow_a + (it1 - r) : a->OW;
        int64_t dlo, dhi, hlo, hhi;
        tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
        tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
        /* input columns [c_lo, c_hi) used by outputs [ow_a, ow_b) */
        int64_t c_lo = ow_a * a->SW - a->PW, c_hi = (ow_b - 1) * a->SW - a->PW + (a->KW - 1) * a->DW + 1;
        if (c_lo < 0) c_lo = 0;
        if (c_hi > a->IW) c_hi = a->IW;
        if (c_hi < c_lo) c_hi = c_lo;
        int nrow = 0;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                tp[nrow++] = src + (((n * a->ID + id) * a->IH + ih) * a->IW + c_lo) * C;
            }
        }
        const int64_t L = (c_hi - c_lo) * C;
        if (is_max) tk_p8_max(tp, nrow, L, (uint8_t *)tmp, u8);
        else tk_p8_vsum(tp, nrow, L, (uint16_t *)tmp, u8);
        /* prefetch the input rows of the output row two ahead (2 * SH rows further) while
         * the horizontal pass computes: the vertical pass then finds them in cache (without
         * it a thread alternates between waiting for memory and computing; measured: one row
         * ahead gains less, prefetcht2 loses) */
        /* (the Python side sends strides <= the source dims here: no overflow) */
        const int64_t nxt = 2 * a->SH * a->IW * C, pstep = a->SW * C;
        for (int64_t ow = ow_a; ow < ow_b; ++ow, ++r) {
            const int64_t po = nxt + (ow - ow_a) * pstep;
            for (int j = 0; j < nrow; ++j)
                for (int64_t q = 0; q < pstep; q += 64) __builtin_prefetch(tp[j] + po + q, 0, 3);
            int64_t wlo, whi;
            tk_tap_range(ow, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
            const int64_t col0 = ow * a->SW - a->PW + wlo * a->DW - c_lo; /* first column used */
            const int nw = (int)(whi - wlo);
            if (is_max) {
                tk_p8_hmax((const uint8_t *)tmp + col0 * C, a->DW * C, nrow ? nw : 0, C,
                           dst + r * C, u8);
            } else {
                const int ntap = nrow * nw;
                const float cnt = a->alg == DNNQ_POOL_AVG_INC ? a->count_inc : (float)ntap;
                tk_p8_havg((const uint16_t *)tmp + col0 * C, a->DW * C, nrow ? nw : 0, C,
                           dst + r * C, u8, u8 ? 0 : 128 * ntap, 1.0f / cnt);
            }
        }
    }
    free(tmp);
    return 0;
}

#define TK_LOWEST_F32 (-3.402823466e+38f)

/* plain layout, one (n, c, od, oh) row, outputs [o0, o0 + no): taps in (d, h, w) order for
 * every output (the f32 sums round as oneDNN's).  KW <= TK_CH: tap-major (each kw over the
 * outputs it reaches, ranges precomputed); a larger kernel: output-major over each output's
 * valid columns (work and memory follow the taps inside the source, never KW). */
#define TK_POOL_ROW_DISPATCH(FN_SUM, FN_MAX, ...)                                             \
    switch (dt + 4 * is_max) {                                                                \
    case DNNQ_DT_U8: FN_SUM##_u8((const uint8_t *)srow, __VA_ARGS__, acc->i); break;          \
    case DNNQ_DT_S8: FN_SUM##_s8((const int8_t *)srow, __VA_ARGS__, acc->i); break;           \
    case DNNQ_DT_S32: FN_SUM##_s32((const int32_t *)srow, __VA_ARGS__, acc->u); break;        \
    case DNNQ_DT_F32: FN_SUM##_f32((const float *)srow, __VA_ARGS__, acc->f); break;          \
    case DNNQ_DT_U8 + 4: FN_MAX##_u8((const uint8_t *)srow, __VA_ARGS__, acc->b); break;      \
    case DNNQ_DT_S8 + 4: FN_MAX##_s8((const int8_t *)srow, __VA_ARGS__, acc->c); break;       \
    case DNNQ_DT_S32 + 4: FN_MAX##_s32((const int32_t *)srow, __VA_ARGS__, acc->i); break;    \
    default: FN_MAX##_f32((const float *)srow, __VA_ARGS__, acc->f); break;                   \
    }

static void tk_pool_plain_chunk(const dnnq_pool_args_t *a, const char *pl, int64_t od,
                                int64_t oh, int64_t o0, int no, tk_acc_t *acc,
                                int32_t *restrict cntw) {
    const int is_max = a->alg == DNNQ_POOL_MAX, dt = a->src_dt, es = tk_esize(dt);
    int64_t dlo, dhi, hlo, hhi;
    tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
    tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
    if (a->KW <= TK_CH) {
        int64_t kwr[2 * TK_CH];
        for (int i = 0; i < no; ++i) cntw[i] = 0;
        /* valid outputs [olo, ohi) of each kw inside the chunk (0 <= o*SW - PW + kw*DW < IW) */
        for (int64_t kw = 0; kw < a->KW; ++kw) {
            const int64_t base = kw * a->DW - a->PW;
            int64_t olo = base >= 0 ? 0 : (-base + a->SW - 1) / a->SW;
            const int64_t lastnum = a->IW - 1 - base;
            int64_t ohi = lastnum < 0 ? 0 : lastnum / a->SW + 1;
            if (olo < o0) olo = o0;
            if (ohi > o0 + no) ohi = o0 + no;
            if (ohi < olo) ohi = olo;
            kwr[2 * kw] = olo;
            kwr[2 * kw + 1] = ohi;
            for (int64_t o = olo; o < ohi; ++o) cntw[o - o0] += 1;
        }
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                const char *srow = pl + (id * a->IH + ih) * a->IW * es;
                for (int64_t kw = 0; kw < a->KW; ++kw) {
                    const int64_t olo = kwr[2 * kw], ohi = kwr[2 * kw + 1];
                    if (olo >= ohi) continue;
                    const int64_t base = kw * a->DW - a->PW;
                    TK_POOL_ROW_DISPATCH(tk_pool_row_sum, tk_pool_row_max, o0, olo, ohi, a->SW,
                                         base)
                }
            }
        }
        return;
    }
    for (int i = 0; i < no; ++i) {
        int64_t wlo, whi;
        const int64_t o = o0 + i;
        tk_tap_range(o, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
        cntw[i] = (int32_t)(whi - wlo);
        /* column o*SW - PW + kw*DW = (o*SW - PW + wlo*DW) + t*DW: one output, "SW" = DW */
        const int64_t first = o * a->SW - a->PW + wlo * a->DW;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                const char *srow = pl + ((id * a->IH + ih) * a->IW + first) * es;
                switch (dt + 4 * is_max) { /* the taps of output o in order */
#define TK_OM(T, OP)                                                                          \
    for (int64_t t = 0; t < whi - wlo; ++t) {                                                 \
        const T v = ((const T *)srow)[t * a->DW];                                             \
        OP;                                                                                   \
    }                                                                                         \
    break;
                case DNNQ_DT_U8: TK_OM(uint8_t, acc->i[i] += v)
                case DNNQ_DT_S8: TK_OM(int8_t, acc->i[i] += v)
                case DNNQ_DT_S32: TK_OM(int32_t, acc->u[i] += (uint32_t)v)
                case DNNQ_DT_F32: TK_OM(float, acc->f[i] = acc->f[i] + v)
                case DNNQ_DT_U8 + 4: TK_OM(uint8_t, acc->b[i] = v > acc->b[i] ? v : acc->b[i])
                case DNNQ_DT_S8 + 4: TK_OM(int8_t, acc->c[i] = v > acc->c[i] ? v : acc->c[i])
                case DNNQ_DT_S32 + 4: TK_OM(int32_t, acc->i[i] = v > acc->i[i] ? v : acc->i[i])
                default: TK_OM(float, acc->f[i] = v > acc->f[i] ? v : acc->f[i])
#undef TK_OM
                }
            }
        }
    }
}

int DNNQ_TK_FN(dnnq_pool_run)(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    tk_acc_t acc __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    const dnnq_pw_plan_t *epi = &a->epi;
    int64_t *off = epi->n_opnds <= TK_OFF_STACK ? off_stack
                                                 : (int64_t *)malloc(sizeof(int64_t) * epi->n_opnds);
    if (!off) return DNNQ_TK_ENOMEM;
    const int is_max = a->alg == DNNQ_POOL_MAX;
    const int dt = a->src_dt;
    const int64_t C = a->C;
    int status = 0;
    if (tk_pool8_fast_ok(a)) {
#ifdef TK_P8F_VEC
        if (!is_max && a->window <= TK_P8_FUSE_MAX && C >= TK_P8_FUSE_MINC)
            tk_pool8_favg(a, it0, it1);
        else
#endif
        status = tk_pool8_fast(a, it0, it1);
    } else if (a->channels_last) {
        /* the taps of one window inside the source: at most max_taps (< 2^31) */
        int64_t *tap = (int64_t *)malloc(sizeof(int64_t) * (size_t)(a->max_taps > 0 ? a->max_taps : 1));
        if (!tap) { if (off != off_stack) free(off); return DNNQ_TK_ENOMEM; }
        int64_t ow = it0 % a->OW, oh = it0 / a->OW % a->OH;
        int64_t od = it0 / (a->OW * a->OH) % a->OD, n = it0 / (a->OW * a->OH * a->OD);
        for (int64_t r = it0; r < it1; ++r) {
            if (r != it0 && ++ow == a->OW) { /* advance (n, od, oh, ow) without dividing */
                ow = 0;
                if (++oh == a->OH) {
                    oh = 0;
                    if (++od == a->OD) { od = 0; ++n; }
                }
            }
            int64_t dlo, dhi, hlo, hhi, wlo, whi;
            tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
            tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
            tk_tap_range(ow, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
            int ntap = 0;
            for (int64_t kd = dlo; kd < dhi; ++kd) {
                const int64_t id = od * a->SD - a->PD + kd * a->DD;
                for (int64_t kh = hlo; kh < hhi; ++kh) {
                    const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                    for (int64_t kw = wlo; kw < whi; ++kw) {
                        const int64_t iw = ow * a->SW - a->PW + kw * a->DW;
                        tap[ntap++] = (((n * a->ID + id) * a->IH + ih) * a->IW + iw) * C;
                    }
                }
            }
            const float cnt = a->alg == DNNQ_POOL_AVG_INC ? a->count_inc : (float)ntap;
            for (int64_t c0 = 0; c0 < C; c0 += TK_CH) {
                const int nc = (int)(C - c0 < TK_CH ? C - c0 : TK_CH);
                if (is_max) {
                    switch (dt) {
                    case DNNQ_DT_U8: tk_pool_cl_max_u8(a->src, tap, ntap, c0, nc, acc.b, 0); break;
                    case DNNQ_DT_S8: tk_pool_cl_max_s8(a->src, tap, ntap, c0, nc, acc.c, -128); break;
                    case DNNQ_DT_S32:
                        tk_pool_cl_max_s32(a->src, tap, ntap, c0, nc, acc.i, INT32_MIN);
                        break;
                    default: tk_pool_cl_max_f32(a->src, tap, ntap, c0, nc, acc.f, TK_LOWEST_F32);
                    }
                    if (a->raw_store) {
                        tk_raw_store(dt, a->dst, r * C + c0, &acc, nc);
                        continue;
                    }
                } else {
                    switch (dt) {
                    case DNNQ_DT_U8: tk_pool_cl_sum_u8(a->src, tap, ntap, c0, nc, acc.i); break;
                    case DNNQ_DT_S8: tk_pool_cl_sum_s8(a->src, tap, ntap, c0, nc, acc.i); break;
                    case DNNQ_DT_S32: tk_pool_cl_sum_s32(a->src, tap, ntap, c0, nc, acc.u); break;
                    default: tk_pool_cl_sum_f32(a->src, tap, ntap, c0, nc, acc.f);
                    }
                }
                float *v = buf[0];
                tk_acc_to_f32(dt, is_max, &acc, v, nc);
                if (!is_max && a->avg_rcp) {
                    const float rcp = 1.0f / cnt;
                    for (int i = 0; i < nc; ++i) v[i] = v[i] * rcp;
                } else if (!is_max) {
                    for (int i = 0; i < nc; ++i) v[i] = v[i] / cnt;
                }
                tk_epilogue(epi, r, c0, nc, buf, tmp, off);
            }
        }
        free(tap);
    } else {
        const int64_t OW = a->OW;
        const int64_t plane = a->ID * a->IH * a->IW;
        const int es = tk_esize(dt);
        int32_t cntw[TK_CH];
        int64_t oh = it0 % a->OH, od = it0 / a->OH % a->OD, nc_ = it0 / (a->OH * a->OD);
        for (int64_t r = it0; r < it1; ++r) {
            if (r != it0 && ++oh == a->OH) { /* advance (n * C + c, od, oh) */
                oh = 0;
                if (++od == a->OD) { od = 0; ++nc_; }
            }
            const char *pl = a->src + nc_ * plane * es;
            int64_t dlo, dhi, hlo, hhi;
            tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
            tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
            const int64_t ndh = (dhi - dlo) * (hhi - hlo);
            for (int64_t o0 = 0; o0 < OW; o0 += TK_CH) {
                const int no = (int)(OW - o0 < TK_CH ? OW - o0 : TK_CH);
                if (is_max) {
                    switch (dt) {
                    case DNNQ_DT_U8: memset(acc.b, 0, (size_t)no); break;
                    case DNNQ_DT_S8: for (int i = 0; i < no; ++i) acc.c[i] = -128; break;
                    case DNNQ_DT_S32: for (int i = 0; i < no; ++i) acc.i[i] = INT32_MIN; break;
                    default: for (int i = 0; i < no; ++i) acc.f[i] = TK_LOWEST_F32;
                    }
                } else {
                    memset(acc.i, 0, sizeof(int32_t) * (size_t)no);
                }
                tk_pool_plain_chunk(a, pl, od, oh, o0, no, &acc, cntw);
                if (is_max && a->raw_store) {
                    tk_raw_store(dt, a->dst, r * OW + o0, &acc, no);
                    continue;
                }
                float *v = buf[0];
                tk_acc_to_f32(dt, is_max, &acc, v, no);
                if (a->alg == DNNQ_POOL_AVG_INC) {
                    const float cnt = a->count_inc;
                    if (a->avg_rcp) {
                        const float rcp = 1.0f / cnt;
                        for (int i = 0; i < no; ++i) v[i] = v[i] * rcp;
                    } else {
                        for (int i = 0; i < no; ++i) v[i] = v[i] / cnt;
                    }
                } else if (a->alg == DNNQ_POOL_AVG_EXC) {
                    if (a->avg_rcp)
                        for (int i = 0; i < no; ++i) v[i] = v[i] * (1.0f / (float)(ndh * cntw[i]));
                    else
                        for (int i = 0; i < no; ++i) v[i] = v[i] / (float)(ndh * cntw[i]);
                }
                tk_epilogue(epi, r, o0, no, buf, tmp, off);
            }
        }
    }
    if (off != off_stack) free(off);
    return status;
}

/* ---- softmax -------------------------------------------------------------------------------- */
int DNNQ_TK_FN(dnnq_softmax_run)(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1,
                                 float *w) {
    const int64_t L = a->axis_len;
    const int ses = tk_esize(a->src_dt), des = tk_esize(a->dst_dt);
    for (int64_t r = it0; r < it1; ++r) {
        int64_t q = r, so = 0, dof = 0;
        for (int d = a->ndims - 1; d >= 0; --d) {
            const int64_t idx = q % a->dims[d];
            q /= a->dims[d];
            so += idx * a->src_st[d];
            dof += idx * a->dst_st[d];
        }
        const char *s = a->src + so * ses;
        for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
            const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
            tk_load(w + i0, s + i0 * a->src_as * ses, a->src_dt, a->src_as, n);
        }
        float m = w[0];
        for (int64_t i = 1; i < L; ++i) m = w[i] > m ? w[i] : m;
        float sum = 0.0f;
        if (a->logsoftmax) {
            for (int64_t i = 0; i < L; ++i) {
                w[i] = w[i] - m;
                sum += expf(w[i]);
            }
            const float ls = logf(sum);
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] - ls;
        } else {
            for (int64_t i = 0; i < L; ++i) {
                w[i] = expf(w[i] - m);
                sum += w[i];
            }
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] / sum;
        }
        const float sc = a->scale, inv = a->inv_dst_scale;
        if (sc != 1.0f) for (int64_t i = 0; i < L; ++i) w[i] = w[i] * sc;
        if (inv != 1.0f) for (int64_t i = 0; i < L; ++i) w[i] = w[i] * inv;
        char *d = a->dst + dof * des;
        for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
            const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
            tk_store(d + i0 * a->dst_as * des, a->dst_dt, a->dst_as, w + i0, n);
        }
    }
    return 0;
}
