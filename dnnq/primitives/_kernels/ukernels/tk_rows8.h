/* Row kernels on 8-bit quantized rows (see dnnq_toolkit.h): softmax and layer normalization
 * of a dequantized int8 row, written as int8 (or f32) directly.  An ONNX session runs them in
 * place of "dequantize to f32, the f32 op, quantize" when the op reads a quantized activation.
 *
 * Both are defined by integer and single IEEE operations in a fixed order, written once over
 * tk_vec.h's lanes (a tail goes through a padded block of the same lanes), so every vector
 * width gives the same bits. */
#ifndef DNNQ_TK_ROWS8_H
#define DNNQ_TK_ROWS8_H
#include "tk_vec.h"

/* The row's largest element as an int (u8 or s8 bytes). */
static int tk_row8_max(const uint8_t *s, int64_t n, int s8) {
    int64_t i = 0;
    int m = s8 ? -128 : 0;
#if TK_VEC == 512
    if (n >= 16) { /* 64 bytes at a time, the tail padded with the type's lowest value */
        const __m512i low = _mm512_set1_epi8(s8 ? (char)-128 : 0);
        __m512i v = low;
        for (; i + 64 <= n; i += 64) {
            const __m512i b = _mm512_loadu_si512((const void *)(s + i));
            v = s8 ? _mm512_max_epi8(v, b) : _mm512_max_epu8(v, b);
        }
        if (i < n) {
            const __m512i b = _mm512_mask_loadu_epi8(low, (__mmask64)((1ULL << (n - i)) - 1ULL),
                                                     s + i);
            v = s8 ? _mm512_max_epi8(v, b) : _mm512_max_epu8(v, b);
            i = n;
        }
        __m256i h = _mm512_castsi512_si256(v), g = _mm512_extracti64x4_epi64(v, 1);
        h = s8 ? _mm256_max_epi8(h, g) : _mm256_max_epu8(h, g);
        __m128i q = _mm256_castsi256_si128(h), r = _mm256_extracti128_si256(h, 1);
        q = s8 ? _mm_max_epi8(q, r) : _mm_max_epu8(q, r);
        r = _mm_srli_si128(q, 8);
        q = s8 ? _mm_max_epi8(q, r) : _mm_max_epu8(q, r);
        r = _mm_srli_si128(q, 4);
        q = s8 ? _mm_max_epi8(q, r) : _mm_max_epu8(q, r);
        r = _mm_srli_si128(q, 2);
        q = s8 ? _mm_max_epi8(q, r) : _mm_max_epu8(q, r);
        r = _mm_srli_si128(q, 1);
        q = s8 ? _mm_max_epi8(q, r) : _mm_max_epu8(q, r);
        const int b0 = _mm_cvtsi128_si32(q) & 0xff;
        m = s8 ? (int)(int8_t)b0 : b0;
    }
#endif
    if (s8) {
        for (; i < n; ++i) m = (int8_t)s[i] > m ? (int8_t)s[i] : m;
    } else {
        for (; i < n; ++i) m = s[i] > m ? s[i] : m;
    }
    return m;
}

/* Quantized y: rne(min(max(y, -1024), 1024)) + zp clamped to the type's range (a NaN becomes
 * -1024; |zp| <= 255 keeps every intermediate exact). */
TK_INLINE tk_vi tk_row8_quant(int dt, tk_vf y, tk_vi zp) {
    const tk_vi q = tk_vi_rne(tk_vf_min(tk_vf_max(y, tk_vf_set1(-1024.0f)),
                                        tk_vf_set1(1024.0f)));
    const int lo = dt == DNNQ_DT_S8 ? -128 : 0, hi = dt == DNNQ_DT_S8 ? 127 : 255;
#if TK_VEC
    return TK_P(max_epi32)(TK_P(min_epi32)(TK_P(add_epi32)(q, zp), TK_P(set1_epi32)(hi)),
                           TK_P(set1_epi32)(lo));
#else
    const tk_vi t = q + zp;
    return t < lo ? lo : t > hi ? hi : t;
#endif
}

/* tk_row8_quant's values stored as bytes */
TK_INLINE void tk_row8_store(char *p, int dt, tk_vf y, tk_vi zp) {
    const tk_vi v = tk_row8_quant(dt, y, zp);
    if (dt == DNNQ_DT_S8)
        tk_vi_store_s8(p, v);
    else
        tk_vi_store_u8(p, v);
}

/* ---- softmax --------------------------------------------------------------------------------
 * d_i = q_i - max_j q_j (an integer in [-255, 0]); e_i = exp_table[255 + d_i] (the caller's
 * table: exp(f32(d) * scale), correctly rounded); sum = the e_i in 16 partial sums (element i
 * into sum i mod 16, in order of i) reduced as ((s_k + s_k+8) + ...) like tk_softmax.h;
 * r = 1 / sum; the output e_i * r as f32, or quantized: e_i * c with c = r * inv_dst_scale
 * (tk_row8_store).  Rows up to TK_QSM_KEEP long keep their e_i from the sum for the output
 * pass; longer ones go through a per-row table of the 256 byte values (VBMI's byte lookups) or
 * look the e_i up again: the same products every way. */
TK_INLINE int tk_qsm_index(const uint8_t *s, int64_t i, int s8) {
    return s8 ? (int8_t)s[i] : s[i];
}

/* The row's sum; each e_i also stored at keep[i] when keep is not NULL (the output pass then
 * reads it back instead of looking it up again). */
static float tk_qsoftmax_sum(const uint8_t *s, int64_t n, int s8, const float *em,
                             float *keep) {
    float part[16] __attribute__((aligned(64))) = {0};
    int64_t i = 0;
#if TK_VEC == 512
    __m512 acc = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        const __m128i b = _mm_loadu_si128((const __m128i *)(s + i));
        const __m512i q = s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        const __m512 e = _mm512_i32gather_ps(q, em, 4);
        if (keep) _mm512_storeu_ps(keep + i, e);
        acc = _mm512_add_ps(acc, e);
    }
    if (i < n) { /* the tail's element k into lane k, as the scalar loop below would */
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        const __m128i b = _mm_maskz_loadu_epi8(k, s + i);
        const __m512i q = s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        const __m512 e = _mm512_mask_i32gather_ps(acc, k, q, em, 4);
        if (keep) _mm512_mask_storeu_ps(keep + i, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
        i = n;
    }
    _mm512_store_ps(part, acc);
#else
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; ++k) {
            const float e = em[tk_qsm_index(s, i + k, s8)];
            if (keep) keep[i + k] = e;
            part[k] += e;
        }
#endif
    for (int k = 0; i + k < n; ++k) {
        const float e = em[tk_qsm_index(s, i + k, s8)];
        if (keep) keep[i + k] = e;
        part[k] += e;
    }
    for (int k = 0; k < 8; ++k) part[k] += part[k + 8];
    for (int k = 0; k < 4; ++k) part[k] += part[k + 4];
    for (int k = 0; k < 2; ++k) part[k] += part[k + 2];
    return part[0] + part[1];
}

/* the quantized e_i * c of the n values e (tk_row8_store), written to d */
static void tk_qsoftmax_store(uint8_t *d, const float *e, int64_t n, int dt, float c, int zp) {
    const tk_vf vc = tk_vf_set1(c);
#if TK_VEC
    const tk_vi vzp = TK_P(set1_epi32)(zp);
#else
    const tk_vi vzp = zp;
#endif
    int64_t i = 0;
    for (; i + TK_VF <= n; i += TK_VF)
        tk_row8_store((char *)d + i, dt, tk_vf_mul(tk_vf_loadu(e + i), vc), vzp);
#if TK_VEC == 512
    if (i < n) { /* the tail in one vector, its bytes stored alone (the same per-lane ops) */
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        const __m512i q = tk_row8_quant(dt, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, e + i), vc),
                                        vzp); /* within the type's range: the packs keep it */
        if (dt == DNNQ_DT_S8)
            _mm512_mask_cvtsepi32_storeu_epi8(d + i, k, q);
        else
            _mm512_mask_cvtusepi32_storeu_epi8(d + i, k, q);
        return;
    }
#endif
    if (i < n) { /* the tail through a zero-padded vector (the same per-lane ops) */
        float t[TK_VF] = {0};
        uint8_t b[TK_VF];
        memcpy(t, e + i, sizeof(float) * (size_t)(n - i));
        tk_row8_store((char *)b, dt, tk_vf_mul(tk_vf_loadu(t), vc), vzp);
        memcpy(d + i, b, (size_t)(n - i));
    }
}

/* the quantized e * c of the n elements of s, written to d: rows too long to keep their e_i,
 * looked up again 256 at a time */
static void tk_qsoftmax_direct(uint8_t *d, const uint8_t *s, int64_t n, int s8, int dt,
                               const float *em, float c, int zp) {
    float e[256];
    for (int64_t i = 0; i < n; i += 256) {
        const int64_t w = n - i < 256 ? n - i : 256;
        for (int64_t k = 0; k < w; ++k) e[k] = em[tk_qsm_index(s, i + k, s8)];
        tk_qsoftmax_store(d + i, e, w, dt, c, zp);
    }
}

#define TK_QSM_KEEP 1024 /* rows up to this long keep their e_i for the output pass */

void DNNQ_TK_FN(dnnq_qsoftmax_run)(const dnnq_qsoftmax_args_t *a, int64_t r0, int64_t r1) {
    const int s8 = a->src_dt == DNNQ_DT_S8;
    const int64_t n = a->len;
    float y[256] __attribute__((aligned(64)));
    uint8_t table[256] __attribute__((aligned(64)));
    float ev[TK_QSM_KEEP] __attribute__((aligned(64)));
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t *s = a->src + r * a->src_rs;
        const int m = tk_row8_max(s, n, s8);
        const float *em = a->exp_table + 255 - m; /* em[q] = exp_table[255 + q - m] */
        if (a->dst_dt == DNNQ_DT_F32) { /* e_i into the destination, then times 1 / sum */
            float *d = (float *)a->dst + r * a->dst_rs;
            const float rcp = 1.0f / tk_qsoftmax_sum(s, n, s8, em, d);
            const tk_vf vr = tk_vf_set1(rcp);
            int64_t i = 0;
            for (; i + TK_VF <= n; i += TK_VF)
                tk_vf_storeu(d + i, tk_vf_mul(tk_vf_loadu(d + i), vr));
            for (; i < n; ++i) d[i] *= rcp;
            continue;
        }
        uint8_t *d = (uint8_t *)a->dst + r * a->dst_rs;
        const int kept = n <= TK_QSM_KEEP;
        const float c = (1.0f / tk_qsoftmax_sum(s, n, s8, em, kept ? ev : NULL)) *
                        a->inv_dst_scale;
        if (kept) {
            tk_qsoftmax_store(d, ev, n, a->dst_dt, c, a->dst_zp);
            continue;
        }
#ifdef TK_HAVE_LUT
        if (a->vbmi) {
            /* the byte k's value v (k, or k - 256 above 127 for s8); bytes above the max are
             * absent from the row: their entries are never read */
            for (int k = 0; k < 256; ++k) {
                const int v = s8 && k > 127 ? k - 256 : k;
                y[k] = v <= m ? em[v] : 0.0f;
            }
            tk_qsoftmax_store(table, y, 256, a->dst_dt, c, a->dst_zp);
            tk_lut_apply(d, s, table, n);
            continue;
        }
#endif
        (void)y, (void)table;
        tk_qsoftmax_direct(d, s, n, s8, a->dst_dt, em, c, a->dst_zp);
    }
}

/* ---- layer normalization of f32 rows ---------------------------------------------------------
 * In double, in one order at every level: S = sum x_i over 8 lanes (element i into lane i mod
 * 8, in order of i; then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))), mean = S / n;
 * V the same sum of (x_i - mean)^2, r = 1 / sqrt(V / n + eps); per element
 * t = f32((x_i - mean) r), then y = t gamma_i + beta_i in f32 (each product and sum rounded
 * once), stored as f32 or quantized (tk_row8_store).  The bits depend on the row's values
 * alone, not on the layout it came in nor the ISA level. */
static double tk_ln_lanes8(const double *l) {
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* sum of f(x_i) over 8 lanes (tk_ln_lanes8's order): f(x) = x - c, squared when sq */
static double tk_ln_sum8(const float *x, int64_t n, double c, int sq) {
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    if (sq) {
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) {
                const double e = (double)x[i + k] - c;
                l[k] += e * e;
            }
    } else {
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) l[k] += (double)x[i + k] - c;
    }
    for (int k = 0; i + k < n; ++k) {
        const double e = (double)x[i + k] - c;
        l[k] += sq ? e * e : e;
    }
    return tk_ln_lanes8(l);
}

/* y[k] = f32(f32((x[k] - mean) r) g[k] + b[k]) for the TK_VF values at x (tk_vf: each product
 * and sum rounded once) */
TK_INLINE tk_vf tk_ln_vec(const float *x, const float *g, const float *b, double mean,
                          double r) {
    float t[TK_VF] __attribute__((aligned(64)));
    for (int k = 0; k < TK_VF; ++k) t[k] = (float)(((double)x[k] - mean) * r);
    return tk_vf_add(tk_vf_mul(tk_vf_loadu(t), tk_vf_loadu(g)), tk_vf_loadu(b));
}

static void tk_layernorm_f32_row(const float *x, char *d, int64_t n, const float *gamma,
                                 const float *beta, double eps, int ddt, float inv_dst_scale,
                                 int dst_zp) {
    /* the sum of x_i in double is exact to 2^-29 relative per term: the lane order fixes
     * the bits; the variance from (x_i - mean)^2 in a second pass */
    const double mean = tk_ln_sum8(x, n, 0.0, 0) / (double)n;
    const double r = 1.0 / sqrt(tk_ln_sum8(x, n, mean, 1) / (double)n + eps);
    const int des = ddt == DNNQ_DT_F32 ? 4 : 1;
#if TK_VEC
    const tk_vi zp = TK_P(set1_epi32)(dst_zp);
#else
    const tk_vi zp = dst_zp;
#endif
    const tk_vf inv = tk_vf_set1(inv_dst_scale);
    int64_t i = 0;
    for (; i + TK_VF <= n; i += TK_VF) {
        const tk_vf y = tk_ln_vec(x + i, gamma + i, beta + i, mean, r);
        if (ddt == DNNQ_DT_F32)
            tk_vf_storeu((float *)(void *)d + i, y);
        else
            tk_row8_store(d + i, ddt, tk_vf_mul(y, inv), zp);
    }
    if (i < n) { /* the tail through zero-padded blocks (the same per-lane operations) */
        const int rem = (int)(n - i);
        float tx[TK_VF] = {0}, tg[TK_VF] = {0}, tb[TK_VF] = {0};
        char tout[4 * TK_VF];
        memcpy(tx, x + i, sizeof(float) * (size_t)rem);
        memcpy(tg, gamma + i, sizeof(float) * (size_t)rem);
        memcpy(tb, beta + i, sizeof(float) * (size_t)rem);
        const tk_vf y = tk_ln_vec(tx, tg, tb, mean, r);
        if (ddt == DNNQ_DT_F32)
            tk_vf_storeu((float *)(void *)tout, y);
        else
            tk_row8_store(tout, ddt, tk_vf_mul(y, inv), zp);
        memcpy(d + i * des, tout, (size_t)rem * des);
    }
}

/* ---- layer normalization --------------------------------------------------------------------
 * x_i = q_i - zp (exact integers).  Per row, exactly: S1 = sum x_i, S2 = sum x_i^2 (64-bit),
 * then in double (correctly rounded operations): mean = S1 / n, var = scale^2 (n S2 - S1^2) /
 * n^2, r = 1 / sqrt(var + eps), a = f32(scale r), b = f32(-mean scale r).  Per element in
 * f32: t = f32(x_i) a + b, y = t gamma_i + beta_i (each product and sum rounded once), then
 * * inv_dst_scale quantized (tk_row8_store), or y as f32. */
void DNNQ_TK_FN(dnnq_qlayernorm_run)(const dnnq_qlayernorm_args_t *a, int64_t r0,
                                     int64_t r1) {
    /* the fields read into locals once (byte stores may alias the argument struct) */
    const int s8 = a->src_dt == DNNQ_DT_S8, ddt = a->dst_dt;
    const int64_t n = a->len, rs_src = a->src_rs, rs_dst = a->dst_rs;
    const int zs = a->src_zp;
    const int des = ddt == DNNQ_DT_F32 ? 4 : 1;
    const uint8_t *const src = a->src;
    char *const dst = a->dst;
    const float *const gamma = a->gamma, *const beta = a->beta;
    const double sc = a->src_scale, eps = a->eps;
#if TK_VEC
    const tk_vi zp = TK_P(set1_epi32)(a->dst_zp), vzs = TK_P(set1_epi32)(zs);
#else
    const tk_vi zp = a->dst_zp, vzs = zs;
#endif
    const tk_vf inv = tk_vf_set1(a->inv_dst_scale);
    uint8_t tin[TK_VF];
    char tout[4 * TK_VF];
    float tg[TK_VF], tb[TK_VF];
    if (a->src_dt == DNNQ_DT_F32) { /* f32 rows (row strides in f32 elements) */
        for (int64_t r = r0; r < r1; ++r)
            tk_layernorm_f32_row((const float *)(const void *)src + r * rs_src,
                                 dst + r * rs_dst * des, n, gamma, beta, a->eps, ddt,
                                 a->inv_dst_scale, a->dst_zp);
        return;
    }
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t *s = src + r * rs_src;
        char *d = dst + r * rs_dst * des;
        /* exact integer sums (any order gives them: the loops vectorise) */
        int64_t s1 = 0, s2 = 0;
        if (s8) {
            const int8_t *q = (const int8_t *)s;
            for (int64_t i = 0; i < n; ++i) {
                const int32_t x = (int32_t)q[i] - zs;
                s1 += x;
                s2 += (int64_t)(x * x);
            }
        } else {
            for (int64_t i = 0; i < n; ++i) {
                const int32_t x = (int32_t)s[i] - zs;
                s1 += x;
                s2 += (int64_t)(x * x);
            }
        }
        const double dn = (double)n;
        const double var = sc * sc * ((double)(n * s2 - s1 * s1) / (dn * dn));
        const double rs = 1.0 / sqrt(var + eps);
        const tk_vf va = tk_vf_set1((float)(sc * rs)),
                    vb = tk_vf_set1((float)(-((double)s1 / dn) * sc * rs));
        for (int64_t i = 0; i < n; i += TK_VF) {
            const int full = i + TK_VF <= n;
            const int rem = full ? TK_VF : (int)(n - i);
            const uint8_t *ps = s + i;
            const float *pg = gamma + i, *pb = beta + i;
            char *pd = d + i * des;
            if (!full) {
                memset(tin, 0, sizeof tin);
                memcpy(tin, ps, (size_t)rem);
                memset(tg, 0, sizeof tg);
                memcpy(tg, pg, sizeof(float) * (size_t)rem);
                memset(tb, 0, sizeof tb);
                memcpy(tb, pb, sizeof(float) * (size_t)rem);
                ps = tin, pg = tg, pb = tb, pd = tout;
            }
            const tk_vi q = s8 ? tk_vi_from_s8(ps) : tk_vi_from_u8(ps);
#if TK_VEC
            const tk_vf x = tk_vf_from_vi(TK_P(sub_epi32)(q, vzs));
#else
            const tk_vf x = tk_vf_from_vi(q - vzs);
#endif
            const tk_vf t = tk_vf_add(tk_vf_mul(x, va), vb);
            const tk_vf y = tk_vf_add(tk_vf_mul(t, tk_vf_loadu(pg)), tk_vf_loadu(pb));
            if (ddt == DNNQ_DT_F32)
                tk_vf_storeu((float *)pd, y);
            else
                tk_row8_store(pd, ddt, tk_vf_mul(y, inv), zp);
            if (!full) memcpy(d + i * des, tout, (size_t)rem * des);
        }
    }
}
/* ---- binary ops of 8-bit tensors -------------------------------------------------------------
 * x0 = f32(q0 - z0), x1 = f32(q1 - z1) (exact); ADD: y = x0 a0 + x1 a1 + c; MUL: y =
 * (x0 x1) a0 + c (the product of two 8-bit integers is exact); MUL_COLS: y = (x0 cols[i]) a0
 * + c (a per-column multiplier: a channel's gate in a channels-last row); ADD_FMA: y =
 * fma(x0, a0, fma(x1, a1, c)) (ONNX Runtime's QLinearAdd: zero points in c), ADD_FMA_COLS:
 * y = fma(x0, a0, cols[i]) (the same with a constant operand: cols[i] its inner FMA); each product
 * and sum rounded once (c = 0 and a0 = 1 where unused add nothing to the bits); then
 * tk_row8_store with zd. */
/* one vector of the op: the sources' TK_VF elements at p0 / p1 (per-column multipliers at
 * pc), stored at pd */
TK_INLINE void tk_q8_binary_vec(int op, int s80, int s81, int ddt, const uint8_t *p0,
                                const uint8_t *p1, const float *pc, uint8_t *pd, tk_vf a0,
                                tk_vf a1, tk_vf c, tk_vi z0, tk_vi z1, tk_vi zd) {
#if TK_VEC
#define TK_Q8_SUB(x, z) TK_P(sub_epi32)(x, z)
#else
#define TK_Q8_SUB(x, z) ((x) - (z))
#endif
    const tk_vf x0 = tk_vf_from_vi(TK_Q8_SUB(s80 ? tk_vi_from_s8(p0) : tk_vi_from_u8(p0), z0));
    tk_vf y;
    if (op == DNNQ_Q8_MUL_COLS) {
        y = tk_vf_add(tk_vf_mul(tk_vf_mul(x0, tk_vf_loadu(pc)), a0), c);
    } else if (op == DNNQ_Q8_ADD_FMA_COLS) {
        y = tk_vf_fma(x0, a0, tk_vf_loadu(pc));
    } else {
        const tk_vf x1 = tk_vf_from_vi(TK_Q8_SUB(s81 ? tk_vi_from_s8(p1) : tk_vi_from_u8(p1),
                                                 z1));
        if (op == DNNQ_Q8_ADD)
            y = tk_vf_add(tk_vf_add(tk_vf_mul(x0, a0), tk_vf_mul(x1, a1)), c);
        else if (op == DNNQ_Q8_ADD_FMA)
            y = tk_vf_fma(x0, a0, tk_vf_fma(x1, a1, c));
        else
            y = tk_vf_add(tk_vf_mul(tk_vf_mul(x0, x1), a0), c);
    }
    tk_row8_store((char *)pd, ddt, y, zd);
#undef TK_Q8_SUB
}

void DNNQ_TK_FN(dnnq_q8_binary_run)(const dnnq_q8_binary_args_t *a, int64_t r0, int64_t r1) {
    /* every field read once into locals: the byte stores may alias the argument struct,
     * which made the compiler reload them, and keep the op tests, in the inner loop */
    const int64_t n = a->len, nfull = n - n % TK_VF;
    const int op = a->op, ddt = a->dst_dt;
    const int s80 = a->src0_dt == DNNQ_DT_S8, s81 = a->src1_dt == DNNQ_DT_S8;
    const uint8_t *const src0 = a->src0, *const src1 = a->src1;
    uint8_t *const dst = a->dst;
    const int64_t rs0 = a->src0_rs, rs1 = a->src1_rs, rsd = a->dst_rs;
    const float *const cols = a->cols;
    const tk_vf a0 = tk_vf_set1(a->a0), a1 = tk_vf_set1(a->a1), c = tk_vf_set1(a->c);
#if TK_VEC
    const tk_vi zd = TK_P(set1_epi32)(a->zd), z0 = TK_P(set1_epi32)(a->z0),
                z1 = TK_P(set1_epi32)(a->z1);
#else
    const tk_vi zd = a->zd, z0 = a->z0, z1 = a->z1;
#endif
    uint8_t t0[TK_VF], t1[TK_VF], td[TK_VF];
    float tc[TK_VF];
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t *s0 = src0 + r * rs0;
        const uint8_t *s1 = cols ? NULL : src1 + r * rs1;
        uint8_t *d = dst + r * rsd;
        /* the whole vectors, one loop per op (the same operations as the tail's) */
        if (op == DNNQ_Q8_MUL_COLS) {
            for (int64_t i = 0; i < nfull; i += TK_VF)
                tk_q8_binary_vec(DNNQ_Q8_MUL_COLS, s80, s81, ddt, s0 + i, NULL, cols + i,
                                 d + i, a0, a1, c, z0, z1, zd);
        } else if (op == DNNQ_Q8_ADD_FMA_COLS) {
            for (int64_t i = 0; i < nfull; i += TK_VF)
                tk_q8_binary_vec(DNNQ_Q8_ADD_FMA_COLS, s80, s81, ddt, s0 + i, NULL, cols + i,
                                 d + i, a0, a1, c, z0, z1, zd);
        } else if (op == DNNQ_Q8_ADD) {
            for (int64_t i = 0; i < nfull; i += TK_VF)
                tk_q8_binary_vec(DNNQ_Q8_ADD, s80, s81, ddt, s0 + i, s1 + i, NULL, d + i, a0,
                                 a1, c, z0, z1, zd);
        } else if (op == DNNQ_Q8_ADD_FMA) {
            for (int64_t i = 0; i < nfull; i += TK_VF)
                tk_q8_binary_vec(DNNQ_Q8_ADD_FMA, s80, s81, ddt, s0 + i, s1 + i, NULL, d + i,
                                 a0, a1, c, z0, z1, zd);
        } else {
            for (int64_t i = 0; i < nfull; i += TK_VF)
                tk_q8_binary_vec(op, s80, s81, ddt, s0 + i, s1 + i, NULL, d + i, a0, a1, c, z0,
                                 z1, zd);
        }
        if (nfull < n) { /* the tail through zero-padded copies */
            const int rem = (int)(n - nfull);
            memset(t0, 0, sizeof t0);
            memcpy(t0, s0 + nfull, (size_t)rem);
            if (s1) {
                memset(t1, 0, sizeof t1);
                memcpy(t1, s1 + nfull, (size_t)rem);
            }
            if (cols) {
                memset(tc, 0, sizeof tc);
                memcpy(tc, cols + nfull, sizeof(float) * (size_t)rem);
            }
            tk_q8_binary_vec(op, s80, s81, ddt, t0, s1 ? t1 : NULL, cols ? tc : NULL, td, a0,
                             a1, c, z0, z1, zd);
            memcpy(d + nfull, td, (size_t)rem);
        }
    }
}
#endif
