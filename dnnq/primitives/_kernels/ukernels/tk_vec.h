/* The toolkit's one vector-width abstraction.  Every toolkit kernel is written once over these
 * wrappers; the build flags of the translation unit pick the width:
 *
 *   TK_VEC   512 (AVX-512 F+BW), 256 (AVX2) or 0 (scalar lanes: the portable build)
 *   TK_VF    f32 / s32 lanes of one vector: 16, 8 or 1             types tk_vf, tk_vi
 *   TK_VB    bytes of one integer vector (vector builds only): 64 or 32   type tk_vb (= tk_vi)
 *            and its half-width register tk_vh (TK_VB / 2 bytes, widened to 16-bit lanes)
 *
 * f32 lanes: set1 / loadu / storeu / add / sub / mul / min / max (x86 minps / maxps semantics:
 * `a < b ? a : b`, so a NaN in `a` gives `b`), int32 <-> f32 conversions (rne), and the loads /
 * saturating stores of TK_VF elements of any DNNQ_DT_* data type.  Integer lanes (vector builds
 * only): 8 / 16 / 32-bit arithmetic, widening loads, tails of fewer than TK_VB bytes, and packs
 * that return their bytes in element order (the x86 packs interleave 128-bit lanes; the
 * permutes that undo it live here, once).
 *
 * Results are identical at every width: each wrapper is one IEEE operation per lane or an
 * exact integer operation. */
#ifndef DNNQ_TK_VEC_H
#define DNNQ_TK_VEC_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_kernels.h"

#define TK_INLINE static inline __attribute__((always_inline))
#define TK_S32_HI 2147483520.0f  /* largest f32 below 2^31 */
#define TK_S32_LO -2147483648.0f

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#define TK_VEC 512
#define TK_VF 16
#define TK_VB 64
typedef __m512 tk_vf;
typedef __m512i tk_vi;
typedef __m512i tk_vb;
typedef __m256i tk_vh;
#define TK_P(op) _mm512_##op
#define TK_SI(op) _mm512_##op##_si512
#elif defined(__AVX2__)
#include <immintrin.h>
#define TK_VEC 256
#define TK_VF 8
#define TK_VB 32
typedef __m256 tk_vf;
typedef __m256i tk_vi;
typedef __m256i tk_vb;
typedef __m128i tk_vh;
#define TK_P(op) _mm256_##op
#define TK_SI(op) _mm256_##op##_si256
#else
#define TK_VEC 0
#define TK_VF 1
typedef float tk_vf;
typedef int32_t tk_vi;
#endif

/* ---- f32 lanes -------------------------------------------------------------------------- */
#if TK_VEC
TK_INLINE tk_vf tk_vf_set1(float x) { return TK_P(set1_ps)(x); }
TK_INLINE tk_vf tk_vf_loadu(const float *p) { return TK_P(loadu_ps)(p); }
TK_INLINE void tk_vf_storeu(float *p, tk_vf x) { TK_P(storeu_ps)(p, x); }
TK_INLINE tk_vf tk_vf_add(tk_vf a, tk_vf b) { return TK_P(add_ps)(a, b); }
TK_INLINE tk_vf tk_vf_sub(tk_vf a, tk_vf b) { return TK_P(sub_ps)(a, b); }
TK_INLINE tk_vf tk_vf_mul(tk_vf a, tk_vf b) { return TK_P(mul_ps)(a, b); }
TK_INLINE tk_vf tk_vf_min(tk_vf a, tk_vf b) { return TK_P(min_ps)(a, b); }
TK_INLINE tk_vf tk_vf_max(tk_vf a, tk_vf b) { return TK_P(max_ps)(a, b); }
TK_INLINE tk_vf tk_vf_from_vi(tk_vi x) { return TK_P(cvtepi32_ps)(x); }
TK_INLINE tk_vi tk_vi_rne(tk_vf x) { return TK_P(cvtps_epi32)(x); } /* default mode: rne */
TK_INLINE tk_vi tk_vi_loadu(const void *p) { return TK_SI(loadu)((const void *)p); }
TK_INLINE void tk_vi_storeu(void *p, tk_vi x) { TK_SI(storeu)((void *)p, x); }
/* a * b + c rounded once; 2^(n + k) from integer lanes (n + k + 127 in 1 .. 254); x where it is
 * NaN, else y */
#if TK_VEC == 512
TK_INLINE tk_vf tk_vf_fma(tk_vf a, tk_vf b, tk_vf c) { return _mm512_fmadd_ps(a, b, c); }
TK_INLINE tk_vf tk_vf_exp2i(tk_vi n, int k) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(k + 127)), 23));
}
TK_INLINE tk_vf tk_vf_nan_or(tk_vf x, tk_vf y) {
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}
#else
TK_INLINE tk_vf tk_vf_fma(tk_vf a, tk_vf b, tk_vf c) { return _mm256_fmadd_ps(a, b, c); }
TK_INLINE tk_vf tk_vf_exp2i(tk_vi n, int k) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(k + 127)), 23));
}
TK_INLINE tk_vf tk_vf_nan_or(tk_vf x, tk_vf y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
#endif
#if TK_VEC == 512
/* TK_VF bytes widened to s32 lanes */
TK_INLINE tk_vi tk_vi_from_s8(const void *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)); }
TK_INLINE tk_vi tk_vi_from_u8(const void *p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)); }
/* s32 lanes -> TK_VF saturated bytes */
TK_INLINE void tk_vi_store_s8(void *p, tk_vi q) { _mm_storeu_si128((__m128i *)p, _mm512_cvtsepi32_epi8(q)); }
TK_INLINE void tk_vi_store_u8(void *p, tk_vi q) { _mm_storeu_si128((__m128i *)p, _mm512_cvtusepi32_epi8(q)); }
#else
TK_INLINE tk_vi tk_vi_from_s8(const void *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
TK_INLINE tk_vi tk_vi_from_u8(const void *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
TK_INLINE __m128i tk_vi_pack16(tk_vi q) {
    return _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
}
/* (unsigned saturation of s32 = signed saturation to s16, then to u8: the same bytes) */
TK_INLINE void tk_vi_store_s8(void *p, tk_vi q) { __m128i h = tk_vi_pack16(q); _mm_storel_epi64((__m128i *)p, _mm_packs_epi16(h, h)); }
TK_INLINE void tk_vi_store_u8(void *p, tk_vi q) { __m128i h = tk_vi_pack16(q); _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(h, h)); }
#endif
#else /* scalar lanes */
TK_INLINE tk_vf tk_vf_set1(float x) { return x; }
TK_INLINE tk_vf tk_vf_loadu(const float *p) { return *p; }
TK_INLINE void tk_vf_storeu(float *p, tk_vf x) { *p = x; }
TK_INLINE tk_vf tk_vf_add(tk_vf a, tk_vf b) { return a + b; }
TK_INLINE tk_vf tk_vf_sub(tk_vf a, tk_vf b) { return a - b; }
TK_INLINE tk_vf tk_vf_mul(tk_vf a, tk_vf b) { return a * b; }
TK_INLINE tk_vf tk_vf_min(tk_vf a, tk_vf b) { return a < b ? a : b; }
TK_INLINE tk_vf tk_vf_max(tk_vf a, tk_vf b) { return a > b ? a : b; }
TK_INLINE tk_vf tk_vf_from_vi(tk_vi x) { return (float)x; }
TK_INLINE tk_vi tk_vi_rne(tk_vf x) { return (int32_t)nearbyintf(x); } /* x clamped first */
TK_INLINE tk_vi tk_vi_loadu(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }
TK_INLINE void tk_vi_storeu(void *p, tk_vi x) { memcpy(p, &x, 4); }
TK_INLINE tk_vf tk_vf_fma(tk_vf a, tk_vf b, tk_vf c) { return fmaf(a, b, c); }
TK_INLINE tk_vf tk_vf_exp2i(tk_vi n, int k) {
    const uint32_t bits = (uint32_t)(n + k + 127) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
TK_INLINE tk_vf tk_vf_nan_or(tk_vf x, tk_vf y) { return x != x ? x : y; }
TK_INLINE tk_vi tk_vi_from_s8(const void *p) { return *(const int8_t *)p; }
TK_INLINE tk_vi tk_vi_from_u8(const void *p) { return *(const uint8_t *)p; }
TK_INLINE void tk_vi_store_s8(void *p, tk_vi q) { *(int8_t *)p = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q); }
TK_INLINE void tk_vi_store_u8(void *p, tk_vi q) { *(uint8_t *)p = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q); }
#endif

/* TK_VF elements of data type dt as f32 */
TK_INLINE tk_vf tk_vf_load_dt(const char *p, int dt) {
    switch (dt) {
    case DNNQ_DT_F32: return tk_vf_loadu((const float *)p);
    case DNNQ_DT_S32: return tk_vf_from_vi(tk_vi_loadu(p));
    case DNNQ_DT_S8: return tk_vf_from_vi(tk_vi_from_s8(p));
    default: return tk_vf_from_vi(tk_vi_from_u8(p));
    }
}

/* TK_VF elements stored as dt: clamped (the bound as the second min / max operand turns NaN
 * into it: +127 for s8, 0 for u8, 2^31 - 128 for s32, as oneDNN), rounded half to even */
TK_INLINE void tk_vf_store_dt(char *p, int dt, tk_vf x) {
    switch (dt) {
    case DNNQ_DT_S8:
        tk_vi_store_s8(p, tk_vi_rne(tk_vf_max(tk_vf_min(x, tk_vf_set1(127.0f)), tk_vf_set1(-128.0f))));
        break;
    case DNNQ_DT_U8:
        tk_vi_store_u8(p, tk_vi_rne(tk_vf_min(tk_vf_max(x, tk_vf_set1(0.0f)), tk_vf_set1(255.0f))));
        break;
    case DNNQ_DT_S32:
        tk_vi_storeu(p, tk_vi_rne(tk_vf_max(tk_vf_min(x, tk_vf_set1(TK_S32_HI)), tk_vf_set1(TK_S32_LO))));
        break;
    default: tk_vf_storeu((float *)p, x);
    }
}

/* ---- integer lanes (vector builds) ------------------------------------------------------ */
#if TK_VEC
TK_INLINE tk_vb tk_vb_loadu(const void *p) { return TK_SI(loadu)((const void *)p); }
TK_INLINE void tk_vb_storeu(void *p, tk_vb x) { TK_SI(storeu)((void *)p, x); }
TK_INLINE tk_vb tk_vb_zero(void) { return TK_SI(setzero)(); }
TK_INLINE tk_vb tk_vb_set1_8(int8_t x) { return TK_P(set1_epi8)((char)x); }
TK_INLINE tk_vb tk_vb_set1_16(int16_t x) { return TK_P(set1_epi16)(x); }
TK_INLINE tk_vb tk_vb_set1_32(int32_t x) { return TK_P(set1_epi32)(x); }
TK_INLINE tk_vb tk_vb_max_s8(tk_vb a, tk_vb b) { return TK_P(max_epi8)(a, b); }
TK_INLINE tk_vb tk_vb_max_u8(tk_vb a, tk_vb b) { return TK_P(max_epu8)(a, b); }
TK_INLINE tk_vb tk_vb_max_s32(tk_vb a, tk_vb b) { return TK_P(max_epi32)(a, b); }
TK_INLINE tk_vb tk_vb_sub_8(tk_vb a, tk_vb b) { return TK_P(sub_epi8)(a, b); }
TK_INLINE tk_vb tk_vb_add_16(tk_vb a, tk_vb b) { return TK_P(add_epi16)(a, b); }
TK_INLINE tk_vb tk_vb_sub_16(tk_vb a, tk_vb b) { return TK_P(sub_epi16)(a, b); }
TK_INLINE tk_vb tk_vb_add_32(tk_vb a, tk_vb b) { return TK_P(add_epi32)(a, b); }
TK_INLINE tk_vb tk_vb_sub_32(tk_vb a, tk_vb b) { return TK_P(sub_epi32)(a, b); }
TK_INLINE tk_vb tk_vb_and(tk_vb a, tk_vb b) { return TK_SI(and)(a, b); }
TK_INLINE tk_vb tk_vb_or(tk_vb a, tk_vb b) { return TK_SI(or)(a, b); }
TK_INLINE tk_vb tk_vb_xor(tk_vb a, tk_vb b) { return TK_SI(xor)(a, b); }
TK_INLINE tk_vb tk_vb_srli_16(tk_vb a, int k) { return TK_P(srli_epi16)(a, k); }
TK_INLINE tk_vb tk_vb_slli_16(tk_vb a, int k) { return TK_P(slli_epi16)(a, k); }
TK_INLINE tk_vb tk_vb_srli_32(tk_vb a, int k) { return TK_P(srli_epi32)(a, k); }
TK_INLINE tk_vb tk_vb_slli_32(tk_vb a, int k) { return TK_P(slli_epi32)(a, k); }
/* the 16-bit lanes' low / high halves of each 128-bit lane as 32-bit lanes (zero-extended) */
TK_INLINE tk_vb tk_vb_unpacklo_16(tk_vb a) { return TK_P(unpacklo_epi16)(a, tk_vb_zero()); }
TK_INLINE tk_vb tk_vb_unpackhi_16(tk_vb a) { return TK_P(unpackhi_epi16)(a, tk_vb_zero()); }
/* per 128-bit lane: two s32 vectors -> s16 (saturating); inverse of the unpacks above */
TK_INLINE tk_vb tk_vb_packs_32(tk_vb a, tk_vb b) { return TK_P(packs_epi32)(a, b); }
/* half-width loads widened: TK_VB / 2 bytes -> 16-bit lanes; TK_VB / 2 u16 -> 32-bit lanes
 * (zero-extended; s8 / s16: sign-extended); a vector's low (hi = 0) or high half */
#if TK_VEC == 512
TK_INLINE tk_vh tk_vh_loadu(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
TK_INLINE tk_vh tk_vh_xor(tk_vh a, tk_vh b) { return _mm256_xor_si256(a, b); }
TK_INLINE tk_vh tk_vh_set1_8(int8_t x) { return _mm256_set1_epi8((char)x); }
TK_INLINE tk_vb tk_vb_from_u8h(tk_vh x) { return _mm512_cvtepu8_epi16(x); }
TK_INLINE tk_vb tk_vb_from_s8h(tk_vh x) { return _mm512_cvtepi8_epi16(x); }
TK_INLINE tk_vb tk_vb_from_u16h(tk_vh x) { return _mm512_cvtepu16_epi32(x); }
TK_INLINE tk_vb tk_vb_from_s16h(tk_vh x) { return _mm512_cvtepi16_epi32(x); }
TK_INLINE tk_vh tk_vb_half(tk_vb x, const int hi) {
    return hi ? _mm512_extracti64x4_epi64(x, 1) : _mm512_castsi512_si256(x);
}
#else
TK_INLINE tk_vh tk_vh_loadu(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
TK_INLINE tk_vh tk_vh_xor(tk_vh a, tk_vh b) { return _mm_xor_si128(a, b); }
TK_INLINE tk_vh tk_vh_set1_8(int8_t x) { return _mm_set1_epi8((char)x); }
TK_INLINE tk_vb tk_vb_from_u8h(tk_vh x) { return _mm256_cvtepu8_epi16(x); }
TK_INLINE tk_vb tk_vb_from_s8h(tk_vh x) { return _mm256_cvtepi8_epi16(x); }
TK_INLINE tk_vb tk_vb_from_u16h(tk_vh x) { return _mm256_cvtepu16_epi32(x); }
TK_INLINE tk_vb tk_vb_from_s16h(tk_vh x) { return _mm256_cvtepi16_epi32(x); }
TK_INLINE tk_vh tk_vb_half(tk_vb x, const int hi) {
    return hi ? _mm256_extracti128_si256(x, 1) : _mm256_castsi256_si128(x);
}
#endif

/* Two vectors of s16 lanes (elements 0.., TK_VB / 2..) -> TK_VB saturated bytes (u8 or s8)
 * in element order. */
TK_INLINE tk_vb tk_vb_pack16_ordered(tk_vb w0, tk_vb w1, const int u8) {
    const tk_vb b = u8 ? TK_P(packus_epi16)(w0, w1) : TK_P(packs_epi16)(w0, w1);
#if TK_VEC == 512 /* qword 2l: elements 8l.., qword 2l + 1: elements 32 + 8l.. */
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), b);
#else
    return _mm256_permute4x64_epi64(b, 0xD8);
#endif
}

/* Four vectors of s32 lanes (elements 0.., TK_VF.., 2 TK_VF.., 3 TK_VF..) -> TK_VB saturated
 * bytes in element order, stored. */
TK_INLINE void tk_vb_pack32x4_store(void *o, tk_vi q0, tk_vi q1, tk_vi q2, tk_vi q3,
                                    const int u8) {
    const tk_vb w01 = TK_P(packs_epi32)(q0, q1), w23 = TK_P(packs_epi32)(q2, q3);
    const tk_vb b = u8 ? TK_P(packus_epi16)(w01, w23) : TK_P(packs_epi16)(w01, w23);
#if TK_VEC == 512 /* dword 4l + q of b holds elements 16q + 4l .. + 3 */
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512(o, _mm512_permutexvar_epi32(idx, b));
#else /* dword 4l + q of b holds elements 8q + 4l .. + 3 */
    const __m256i idx = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256((__m256i *)o, _mm256_permutevar8x32_epi32(b, idx));
#endif
}

/* Tails: the first n < TK_VB bytes (the rest read as 0 / not written).  AVX-512 masks the
 * access; AVX2 goes through a stack copy. */
#if TK_VEC == 512
TK_INLINE tk_vb tk_vb_load_n(const void *p, int64_t n) {
    return _mm512_maskz_loadu_epi8(_cvtu64_mask64(~0ULL >> (64 - n)), p);
}
TK_INLINE void tk_vb_store_n(void *p, tk_vb x, int64_t n) {
    _mm512_mask_storeu_epi8(p, _cvtu64_mask64(~0ULL >> (64 - n)), x);
}
#else /* (unaligned stack copies: an aligned one would make every caller realign its frame) */
TK_INLINE tk_vb tk_vb_load_n(const void *p, int64_t n) {
    uint8_t t[TK_VB] = {0};
    memcpy(t, p, (size_t)n);
    return _mm256_loadu_si256((const __m256i *)t);
}
TK_INLINE void tk_vb_store_n(void *p, tk_vb x, int64_t n) {
    uint8_t t[TK_VB];
    _mm256_storeu_si256((__m256i *)t, x);
    memcpy(p, t, (size_t)n);
}
#endif
#endif /* TK_VEC */
#endif
