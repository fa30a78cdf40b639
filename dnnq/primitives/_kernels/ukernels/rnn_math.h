/* oneDNN 3.2's f32 sigmoid and tanh as its jit RNN cells compute them (the eltwise injector of
 * jit_uni_eltwise_injector.cpp), operation by operation, so the u8 states match bit for bit.
 * Every fused multiply-add below is one in oneDNN too; nothing else may be fused (the build
 * passes -ffp-contract=off).  Written as branch-free scalar code that the per-ISA builds
 * vectorise (the tanh coefficients become gathers). */
#ifndef DNNQ_RNN_MATH_H
#define DNNQ_RNN_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "rnn_tanh_table.h"

static inline float rnn_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t rnn_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

#ifndef __FMA__
/* The portable build has no FMA instruction and glibc's software fmaf is slow (it switches
 * rounding modes).  Exact emulation: the product is exact in f64; the f64 sum is rounded to odd
 * (TwoSum gives its exact error; an inexact even result moves one ulp towards the true value),
 * and round-to-odd in 53 >= 24 + 2 bits followed by the f32 rounding is a correct rounding
 * (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums", 2008). */
static inline float rnn_fmaf(float a, float b, float c) {
    const double p = (double)a * (double)b, q = (double)c;
    const double s = p + q, bb = s - p, e = (p - (s - bb)) + (q - bb);
    uint64_t u;
    memcpy(&u, &s, 8);
    if (e != 0.0 && !(u & 1) && s - s == 0.0) u += ((e > 0.0) == (s > 0.0)) ? 1 : (uint64_t)-1;
    double r;
    memcpy(&r, &u, 8);
    return (float)r;
}
#define fmaf rnn_fmaf
#endif

/* exp(x) = 2 * 2^(n-1) * p(r), n = floor(x * log2(e) + 0.5), r = x - n * ln 2, p of degree 5;
 * 0 below ln(FLT_MIN) */
static inline float rnn_exp(float x) {
    const float lo = rnn_bits2f(0xc2aeac50u), hi = rnn_bits2f(0x42b17218u);
    const int under = x < lo;
    x = x < hi ? x : hi;          /* vminps / vmaxps: x is not NaN here */
    x = x > lo ? x : lo;
    float fx = x * rnn_bits2f(0x3fb8aa3bu);
    fx = fx + 0.5f;
    /* floor(fx) (|fx| < 130 here) and the integer n - 1 through the 1.5 * 2^23 rounding trick:
     * floorf is a libm call and gcc 12 does not vectorise a float -> int conversion after the
     * clamps, so no conversion instruction at all (the results are the same) */
    const float rn = (fx + 12582912.0f) - 12582912.0f;      /* rne(fx) */
    const float n = rn - (rn > fx ? 1.0f : 0.0f);
    const float r = fmaf(-n, rnn_bits2f(0x3f317218u), x);
    const int32_t e = (int32_t)(rnn_f2bits((n - 1.0f) + 12582912.0f) - 0x4b400000u) + 127;
    const float p2 = rnn_bits2f(under ? 0u : (uint32_t)e << 23);
    float p = rnn_bits2f(0x3c07cfceu);
    p = fmaf(p, r, rnn_bits2f(0x3d2b9d0du));
    p = fmaf(p, r, rnn_bits2f(0x3e2aad40u));
    p = fmaf(p, r, rnn_bits2f(0x3efffee3u));
    p = fmaf(p, r, rnn_bits2f(0x3f7ffffbu));
    p = fmaf(p, r, 1.0f);
    p = p * p2;
    return p * 2.0f;
}

/* logistic: y = e / (e + 1) with e = exp(-|x|); 1 - y for x >= +0 */
static inline float rnn_logistic(float x) {
    const uint32_t b = rnn_f2bits(x);
    const float e = rnn_exp(rnn_bits2f(b | 0x80000000u));
    const float y = e / (e + 1.0f);
    const float z = 1.0f - y;
    return (b >> 31) ? y : z;
}

/* tanh: |x| below 0x1.bb67aep-12 -> x; above 0x1.205966p3 -> 1; else the degree-6 polynomial of
 * the half binade of |x| in (|x| - start of that half binade); the sign put back */
static inline float rnn_tanh(float x) {
    const uint32_t b = rnn_f2bits(x), sign = b & 0x80000000u, ab = b & 0x7fffffffu;
    const float s = rnn_bits2f(ab);
    const uint32_t idx = ((ab - 0x39800000u) >> 22) & 31u;   /* vpermt2ps reads 5 index bits */
    const float r = s - rnn_bits2f(ab & 0xffc00000u);
    float p = rnn_bits2f(dnnq_rnn_tanh_pol[6][idx]);
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[5][idx]));
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[4][idx]));
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[3][idx]));
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[2][idx]));
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[1][idx]));
    p = fmaf(p, r, rnn_bits2f(dnnq_rnn_tanh_pol[0][idx]));
    float d = rnn_bits2f(0x41102cb3u) > s ? p : 1.0f;
    d = rnn_bits2f(0x39ddb3d7u) > s ? s : d;
    return rnn_bits2f(rnn_f2bits(d) ^ sign);
}

/* u8 = saturate(rne(v * scale + shift)) (multiply, then add; NaN -> 0) */
static inline uint8_t rnn_quantize_u8(float v, float scale, float shift) {
    v = v * scale;
    v = v + shift;
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (uint8_t)(int32_t)((v + 12582912.0f) - 12582912.0f);
}

static inline float rnn_dequantize_u8(uint8_t q, float scale, float shift) {
    return ((float)q - shift) / scale;
}
#endif
