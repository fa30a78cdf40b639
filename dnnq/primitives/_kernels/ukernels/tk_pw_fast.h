/* Fast paths of the pointwise engine (vector builds; each returns the number of elements it
 * did, the caller finishes through the staged path with the same arithmetic):
 *   tk_binary_fused  dst = alg((f32(s0) - a0) * b0, (f32(s1) - a1) * b1) in one pass
 *   tk_binary8       the same for 8-bit operands, TK_VB elements per step, packed back
 *   tk_lut_*         8-bit -> 8-bit requantization through a 256-entry table (VBMI) */
#ifndef DNNQ_TK_PW_FAST_H
#define DNNQ_TK_PW_FAST_H
#include "tk_convert.h"

/* Fused binary, for row-constant parameters, contiguous operands (s1 contiguous or broadcast),
 * data types f32 / s8 / u8 and alg add, sub, mul, min, max.  Same operations and rounding as
 * the staged path. */
static int tk_binary_fused_ok(int alg, int dt0, int dt1, int ddt) {
    const int a = alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB || alg == DNNQ_BIN_MUL ||
                  alg == DNNQ_BIN_MIN || alg == DNNQ_BIN_MAX;
    return TK_VEC && a && dt0 != DNNQ_DT_S32 && dt1 != DNNQ_DT_S32 && ddt != DNNQ_DT_S32;
}
#define TK_BF_LOOP(D0, D1, DD, OP)                                                            \
    for (; i + TK_VF <= n; i += TK_VF) {                                                      \
        tk_vf x = tk_vf_mul(tk_vf_sub(tk_vf_load_dt(s0 + i * tk_esize(D0), D0), va0), vb0);   \
        tk_vf y = bc ? yb : tk_vf_mul(tk_vf_sub(tk_vf_load_dt(s1 + i * tk_esize(D1), D1), va1), vb1); \
        tk_vf r = OP(x, y);                                                                   \
        if (dq) r = tk_vf_add(tk_vf_mul(r, vm), vz);                                          \
        tk_vf_store_dt(dst + i * tk_esize(DD), DD, r);                                        \
    }
#define TK_BF_ALG(D0, D1, DD)                                                                 \
    switch (alg) {                                                                            \
    case DNNQ_BIN_ADD: TK_BF_LOOP(D0, D1, DD, tk_vf_add); break;                              \
    case DNNQ_BIN_SUB: TK_BF_LOOP(D0, D1, DD, tk_vf_sub); break;                              \
    case DNNQ_BIN_MUL: TK_BF_LOOP(D0, D1, DD, tk_vf_mul); break;                              \
    case DNNQ_BIN_MIN: TK_BF_LOOP(D0, D1, DD, tk_vf_min); break;                              \
    default: TK_BF_LOOP(D0, D1, DD, tk_vf_max); break;                                        \
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
/* pv: the sources' (zero point, scale) pairs, then the destination's multiplier and addend,
 * applied when dq (pv[4] = 1, pv[5] = -0.0 leave a value as it is) */
static int tk_binary_fused(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1,
                           int bc, int n, int alg, const float *pv, const int dq) {
    int i = 0;
    if (!TK_VEC) return 0;
    const float a0 = pv[0], b0 = pv[1], a1 = pv[2], b1 = pv[3];
    const tk_vf va0 = tk_vf_set1(a0), vb0 = tk_vf_set1(b0), va1 = tk_vf_set1(a1),
                vb1 = tk_vf_set1(b1), vm = tk_vf_set1(pv[4]), vz = tk_vf_set1(pv[5]);
    const tk_vf yb = tk_vf_set1(bc ? (tk_load1(s1, dt1) - a1) * b1 : 0.0f);
    switch (dt0) {
    case DNNQ_DT_S8: TK_BF_D1(DNNQ_DT_S8); break;
    case DNNQ_DT_U8: TK_BF_D1(DNNQ_DT_U8); break;
    default: TK_BF_D1(DNNQ_DT_F32); break;
    }
    return i;
}

/* Fast 8-bit binary: s8 / u8 src0 and src1 (both contiguous), s8 / u8 dst, alg add, sub, mul,
 * min, max, row-constant parameters, TK_VB elements per step.  The same f32 operations as the
 * staged path ((f32(x) - zp) * scale per source, then alg); the clamp before the conversion is
 * dropped because the caller checks that every result is finite and below 2^30 in magnitude
 * (tk_binary8_ok), so cvtps2dq rounds half to even exactly and the narrowing packs saturate to
 * the same bounds as the clamp (the bounds are integers).  A zero point that is 0 is skipped
 * (x - 0 is exact).  pv as tk_binary_fused's; with dq the result is multiplied by pv[4] and
 * pv[5] added before the conversion (the bound covers that value). */
static int tk_binary8_ok(int alg, int dt0, int dt1, int ddt, const float *pv) {
    const float a0 = pv[0], b0 = pv[1], a1 = pv[2], b1 = pv[3];
    if (!TK_VEC) return 0;
    if (!((dt0 == DNNQ_DT_S8 || dt0 == DNNQ_DT_U8) && (dt1 == DNNQ_DT_S8 || dt1 == DNNQ_DT_U8)
          && (ddt == DNNQ_DT_S8 || ddt == DNNQ_DT_U8)))
        return 0;
    if (!(alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB || alg == DNNQ_BIN_MUL ||
          alg == DNNQ_BIN_MIN || alg == DNNQ_BIN_MAX))
        return 0;
    if (!(isfinite(a0) && isfinite(b0) && isfinite(a1) && isfinite(b1) && isfinite(pv[4]) &&
          isfinite(pv[5])))
        return 0;
    /* bound of |(x - zp) * s| for each source (an f32 result is within one ulp of it) */
    const double m0 = (fabs((double)a0) + 256.0) * fabs((double)b0);
    const double m1 = (fabs((double)a1) + 256.0) * fabs((double)b1);
    const double m = alg == DNNQ_BIN_MUL ? m0 * m1 : (alg == DNNQ_BIN_ADD || alg == DNNQ_BIN_SUB)
                                                         ? m0 + m1 : (m0 > m1 ? m0 : m1);
    /* (the f32 value is within a few ulps of m: a factor of 2 covers them) */
    return 2.0 * (m * fabs((double)pv[4]) + fabs((double)pv[5])) < 1073741824.0;
}

#if TK_VEC
#define TK_B8_PF 2048
TK_INLINE tk_vf tk_b8_src(const char *p, const int u, tk_vf va, tk_vf vb, const int subz) {
    const tk_vf x = tk_vf_from_vi(u ? tk_vi_from_u8(p) : tk_vi_from_s8(p));
    return tk_vf_mul(subz ? tk_vf_sub(x, va) : x, vb);
}
TK_INLINE tk_vf tk_b8_dst(tk_vf r, tk_vf vm, tk_vf vz, const int dq) {
    return dq ? tk_vf_add(tk_vf_mul(r, vm), vz) : r;
}
#define TK_B8_STEP(OP)                                                                        \
    {                                                                                         \
        const char *p0 = s0 + i, *p1 = s1 + i;                                                \
        __builtin_prefetch(p0 + TK_B8_PF, 0, 3);                                              \
        __builtin_prefetch(p1 + TK_B8_PF, 0, 3);                                              \
        tk_vi q[4];                                                                           \
        for (int k = 0; k < 4; ++k)                                                           \
            q[k] = tk_vi_rne(tk_b8_dst(OP(tk_b8_src(p0 + k * TK_VF, u0, va0, vb0, subz),      \
                                          tk_b8_src(p1 + k * TK_VF, u1, va1, vb1, subz)),     \
                                       vm, vz, dq));                                          \
        tk_vb_pack32x4_store(dst + i, q[0], q[1], q[2], q[3], ud);                            \
    }
/* the tail as one more step ending at n (it recomputes a few elements with the same values:
 * only when dst overlaps neither source, as an in-place run would read its own results) */
#define TK_B8_LOOP(OP)                                                                        \
    for (; i + TK_VB <= n; i += TK_VB) TK_B8_STEP(OP)                                         \
    if (i < n && n >= TK_VB && !alias) {                                                      \
        i = n - TK_VB;                                                                        \
        TK_B8_STEP(OP)                                                                        \
        i = n;                                                                                \
    }
/* one specialisation per (u0, u1, ud, subz): the loop has no data-type branch */
TK_INLINE int tk_binary8_body(char *dst, const char *s0, const char *s1, int n, int alg,
                              tk_vf va0, tk_vf vb0, tk_vf va1, tk_vf vb1, tk_vf vm, tk_vf vz,
                              const int dq, const int alias, const int u0, const int u1,
                              const int ud, const int subz) {
    int i = 0;
    switch (alg) {
    case DNNQ_BIN_ADD: TK_B8_LOOP(tk_vf_add); break;
    case DNNQ_BIN_SUB: TK_B8_LOOP(tk_vf_sub); break;
    case DNNQ_BIN_MUL: TK_B8_LOOP(tk_vf_mul); break;
    case DNNQ_BIN_MIN: TK_B8_LOOP(tk_vf_min); break;
    default: TK_B8_LOOP(tk_vf_max); break;
    }
    return i;
}
#define TK_B8_CALL(U0, U1, UD, SZ) \
    tk_binary8_body(dst, s0, s1, n, alg, va0, vb0, va1, vb1, vm, vz, dq, alias, U0, U1, UD, SZ)
#define TK_B8_DTS(SZ)                                                                         \
    (u0 ? (u1 ? (ud ? TK_B8_CALL(1, 1, 1, SZ) : TK_B8_CALL(1, 1, 0, SZ))                      \
             : (ud ? TK_B8_CALL(1, 0, 1, SZ) : TK_B8_CALL(1, 0, 0, SZ)))                      \
        : (u1 ? (ud ? TK_B8_CALL(0, 1, 1, SZ) : TK_B8_CALL(0, 1, 0, SZ))                      \
              : (ud ? TK_B8_CALL(0, 0, 1, SZ) : TK_B8_CALL(0, 0, 0, SZ))))
static int tk_binary8(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1, int n,
                      int alg, const float *pv, const int dq) {
    const float a0 = pv[0], a1 = pv[2];
    const tk_vf va0 = tk_vf_set1(a0), vb0 = tk_vf_set1(pv[1]), va1 = tk_vf_set1(a1),
                vb1 = tk_vf_set1(pv[3]), vm = tk_vf_set1(pv[4]), vz = tk_vf_set1(pv[5]);
    const uintptr_t d0 = (uintptr_t)dst, a = (uintptr_t)s0, b = (uintptr_t)s1;
    const int alias = (d0 < a + (uintptr_t)n && a < d0 + (uintptr_t)n) ||
                      (d0 < b + (uintptr_t)n && b < d0 + (uintptr_t)n);
    const int u0 = dt0 == DNNQ_DT_U8, u1 = dt1 == DNNQ_DT_U8, ud = ddt == DNNQ_DT_U8;
    return (a0 != 0.0f || a1 != 0.0f) ? TK_B8_DTS(1) : TK_B8_DTS(0);
}
#else
static int tk_binary8(char *dst, int ddt, const char *s0, int dt0, const char *s1, int dt1, int n,
                      int alg, const float *pv, const int dq) {
    (void)dst; (void)ddt; (void)s0; (void)dt0; (void)s1; (void)dt1; (void)n; (void)alg;
    (void)pv; (void)dq;
    return 0;
}
#endif

/* 8-bit -> 8-bit requantization through a 256-entry table (AVX-512 VBMI's vpermi2b looks up 64
 * bytes at a time).  The table is computed with the very tk_affine / tk_store code of the
 * regular path, for all 256 inputs, so the results are identical; it is cached per thread and
 * rebuilt when the row's parameters change.  Used only on CPUs with VBMI (checked at run time:
 * the avx512_core_vnni level does not imply it). */
#if TK_VEC == 512 && defined(__GNUC__)
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

/* dst[i] = lut[src[i]], i < n, 64 bytes per vpermi2b pair; the tail under a mask (no byte
 * outside [0, n) read or written).  Also the ONNX sessions' table steps (tk_table.h). */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void tk_lut_apply(uint8_t *dst, const uint8_t *src, const uint8_t *lut, int64_t n) {
    const __m512i t0 = _mm512_loadu_si512((const void *)lut);
    const __m512i t1 = _mm512_loadu_si512((const void *)(lut + 64));
    const __m512i t2 = _mm512_loadu_si512((const void *)(lut + 128));
    const __m512i t3 = _mm512_loadu_si512((const void *)(lut + 192));
    for (int64_t i = 0; i < n; i += 64) {
        const __mmask64 m = n - i >= 64 ? ~0ULL : (1ULL << (n - i)) - 1;
        const __m512i x = _mm512_maskz_loadu_epi8(m, (const void *)(src + i));
        const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);  /* entries 0..127 */
        const __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);  /* entries 128..255 */
        _mm512_mask_storeu_epi8((void *)(dst + i), m,
                                _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
    }
}
#endif
#endif
