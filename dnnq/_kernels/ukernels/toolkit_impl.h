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
static inline float tk_sat_s8(float x) {
    x = x != x ? 127.0f : x;
    x = x < -128.0f ? -128.0f : x;
    return x > 127.0f ? 127.0f : x;
}
static inline float tk_sat_u8(float x) {
    x = x != x ? 0.0f : x;
    x = x < 0.0f ? 0.0f : x;
    return x > 255.0f ? 255.0f : x;
}
static inline float tk_sat_s32(float x) {
    x = x != x ? TK_S32_HI : x;
    x = x < TK_S32_LO ? TK_S32_LO : x;
    return x > TK_S32_HI ? TK_S32_HI : x;
}

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
        if (st == 1)
            for (int i = 0; i < n; ++i)
                o[i] = (int8_t)(int32_t)((tk_sat_s8(v[i]) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
        else
            for (int i = 0; i < n; ++i)
                o[i * st] = (int8_t)(int32_t)((tk_sat_s8(v[i]) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
        break;
    }
    case DNNQ_DT_U8: {
        uint8_t *o = (uint8_t *)base;
        if (st == 1)
            for (int i = 0; i < n; ++i)
                o[i] = (uint8_t)(int32_t)((tk_sat_u8(v[i]) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
        else
            for (int i = 0; i < n; ++i)
                o[i * st] = (uint8_t)(int32_t)((tk_sat_u8(v[i]) + TK_RNE_MAGIC) - TK_RNE_MAGIC);
        break;
    }
    default: {
        int32_t *o = (int32_t *)base;
        if (st == 1)
            for (int i = 0; i < n; ++i) o[i] = (int32_t)nearbyintf(tk_sat_s32(v[i]));
        else
            for (int i = 0; i < n; ++i) o[i * st] = (int32_t)nearbyintf(tk_sat_s32(v[i]));
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

/* ---- eltwise: a = alg(a; al, be) (formulas: eltwise_impl.h / dnnq.eltwise_math) ---------- */
static void tk_eltwise(int alg, float *restrict a, float al, float be, int n) {
    switch (alg) {
    case DNNQ_ELT_RELU: for (int i = 0; i < n; ++i) a[i] = a[i] > 0.0f ? a[i] : a[i] * al; break;
    case DNNQ_ELT_LINEAR: /* oneDNN's JIT: one fused multiply-add */
        for (int i = 0; i < n; ++i) a[i] = fmaf(al, a[i], be);
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

/* ---- the pointwise program on one chunk ---------------------------------------------------- */
static inline const char *tk_addr(const dnnq_pw_opnd_t *o, int64_t elem) {
    return o->ptr + elem * tk_esize(o->dt);
}

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
    for (int k = 0; k < p->n_opnds; ++k) off[k] = 0;
    for (int d = p->ndims - 2; d >= 0; --d) {
        const int64_t idx = row % p->dims[d];
        row /= p->dims[d];
        if (idx)
            for (int k = 0; k < p->n_opnds; ++k) off[k] += idx * p->opnds[k].st[d];
    }
}

#define TK_OFF_STACK 64

void DNNQ_TK_FN(dnnq_pw_run)(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    int64_t *off = p->n_opnds <= TK_OFF_STACK ? off_stack
                                               : (int64_t *)malloc(sizeof(int64_t) * p->n_opnds);
    if (!off) return;
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
}

/* ---- pooling -------------------------------------------------------------------------------- */
/* Valid tap range [lo, hi) of kernel index k for output o: i = o*S - P + k*Dl in [0, I). */
static inline void tk_tap_range(int64_t o, int64_t S, int64_t P, int64_t Dl, int64_t K, int64_t I,
                                int64_t *lo, int64_t *hi) {
    const int64_t i0 = o * S - P;
    int64_t l = 0, h = K;
    if (i0 < 0) l = (-i0 + Dl - 1) / Dl;
    if (i0 + (K - 1) * Dl >= I) {
        const int64_t last = I - 1 - i0; /* largest k with i0 + k*Dl <= I-1 */
        h = last < 0 ? 0 : last / Dl + 1;
    }
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* channels-last: taps are rows of C elements; acc over the taps for channels [c0, c0+nc) */
#define TK_POOL_CL(T, ACC_T, SUFFIX)                                                          \
    static void tk_pool_cl_max_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, T *restrict acc, T lowest) {      \
        for (int c = 0; c < nc; ++c) acc[c] = lowest;                                         \
        for (int t = 0; t < ntap; ++t) {                                                      \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = 0; c < nc; ++c) acc[c] = s[c] > acc[c] ? s[c] : acc[c];              \
        }                                                                                     \
    }                                                                                         \
    static void tk_pool_cl_sum_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, ACC_T *restrict acc) {            \
        for (int c = 0; c < nc; ++c) acc[c] = 0;                                              \
        for (int t = 0; t < ntap; ++t) {                                                      \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = 0; c < nc; ++c) acc[c] = (ACC_T)(acc[c] + (ACC_T)s[c]);              \
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

#define TK_LOWEST_F32 (-3.402823466e+38f)

void DNNQ_TK_FN(dnnq_pool_run)(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    tk_acc_t acc __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    const dnnq_pw_plan_t *epi = &a->epi;
    int64_t *off = epi->n_opnds <= TK_OFF_STACK ? off_stack
                                                 : (int64_t *)malloc(sizeof(int64_t) * epi->n_opnds);
    if (!off) return;
    const int is_max = a->alg == DNNQ_POOL_MAX;
    const int dt = a->src_dt;
    const int64_t C = a->C;
    if (a->channels_last) {
        const int64_t ntap_max = a->KD * a->KH * a->KW;
        int64_t *tap = (int64_t *)malloc(sizeof(int64_t) * (size_t)(ntap_max > 0 ? ntap_max : 1));
        if (!tap) { if (off != off_stack) free(off); return; }
        for (int64_t r = it0; r < it1; ++r) {
            int64_t q = r;
            const int64_t ow = q % a->OW; q /= a->OW;
            const int64_t oh = q % a->OH; q /= a->OH;
            const int64_t od = q % a->OD; q /= a->OD;
            const int64_t n = q;
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
            const float cnt = a->alg == DNNQ_POOL_AVG_INC ? (float)ntap_max : (float)ntap;
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
                if (!is_max)
                    for (int i = 0; i < nc; ++i) v[i] = v[i] / cnt;
                tk_epilogue(epi, r, c0, nc, buf, tmp, off);
            }
        }
        free(tap);
    } else {
        const int64_t OW = a->OW;
        const int64_t plane = a->ID * a->IH * a->IW;
        const int es = tk_esize(dt);
        int32_t cntw[TK_CH];
        for (int64_t r = it0; r < it1; ++r) {
            int64_t q = r;
            const int64_t oh = q % a->OH; q /= a->OH;
            const int64_t od = q % a->OD; q /= a->OD;
            const int64_t nc_ = q; /* n * C + c */
            const char *pl = a->src + nc_ * plane * es;
            int64_t dlo, dhi, hlo, hhi;
            tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
            tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
            const int64_t ndh = (dhi - dlo) * (hhi - hlo);
            for (int64_t o0 = 0; o0 < OW; o0 += TK_CH) {
                const int no = (int)(OW - o0 < TK_CH ? OW - o0 : TK_CH);
                for (int i = 0; i < no; ++i) cntw[i] = 0;
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
                for (int64_t kw = 0; kw < a->KW; ++kw) {
                    /* outputs o in [o0, o0+no) with 0 <= o*SW - PW + kw*DW < IW */
                    const int64_t base = kw * a->DW - a->PW;
                    int64_t olo = base >= 0 ? 0 : (-base + a->SW - 1) / a->SW;
                    const int64_t lastnum = a->IW - 1 - base;
                    int64_t ohi = lastnum < 0 ? 0 : lastnum / a->SW + 1;
                    if (olo < o0) olo = o0;
                    if (ohi > o0 + no) ohi = o0 + no;
                    if (olo >= ohi) continue;
                    for (int64_t o = olo; o < ohi; ++o) cntw[o - o0] += 1;
                    for (int64_t kd = dlo; kd < dhi; ++kd) {
                        const int64_t id = od * a->SD - a->PD + kd * a->DD;
                        for (int64_t kh = hlo; kh < hhi; ++kh) {
                            const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                            const char *srow = pl + (id * a->IH + ih) * a->IW * es;
                            switch (dt + 4 * is_max) {
                            case DNNQ_DT_U8: tk_pool_row_sum_u8((const uint8_t *)srow, o0, olo, ohi, a->SW, base, acc.i); break;
                            case DNNQ_DT_S8: tk_pool_row_sum_s8((const int8_t *)srow, o0, olo, ohi, a->SW, base, acc.i); break;
                            case DNNQ_DT_S32: tk_pool_row_sum_s32((const int32_t *)srow, o0, olo, ohi, a->SW, base, acc.u); break;
                            case DNNQ_DT_F32: tk_pool_row_sum_f32((const float *)srow, o0, olo, ohi, a->SW, base, acc.f); break;
                            case DNNQ_DT_U8 + 4: tk_pool_row_max_u8((const uint8_t *)srow, o0, olo, ohi, a->SW, base, acc.b); break;
                            case DNNQ_DT_S8 + 4: tk_pool_row_max_s8((const int8_t *)srow, o0, olo, ohi, a->SW, base, acc.c); break;
                            case DNNQ_DT_S32 + 4: tk_pool_row_max_s32((const int32_t *)srow, o0, olo, ohi, a->SW, base, acc.i); break;
                            default: tk_pool_row_max_f32((const float *)srow, o0, olo, ohi, a->SW, base, acc.f); break;
                            }
                        }
                    }
                }
                if (is_max && a->raw_store) {
                    tk_raw_store(dt, a->dst, r * OW + o0, &acc, no);
                    continue;
                }
                float *v = buf[0];
                tk_acc_to_f32(dt, is_max, &acc, v, no);
                if (a->alg == DNNQ_POOL_AVG_INC) {
                    const float cnt = (float)(a->KD * a->KH * a->KW);
                    for (int i = 0; i < no; ++i) v[i] = v[i] / cnt;
                } else if (a->alg == DNNQ_POOL_AVG_EXC) {
                    for (int i = 0; i < no; ++i) v[i] = v[i] / (float)(ndh * cntw[i]);
                }
                tk_epilogue(epi, r, o0, no, buf, tmp, off);
            }
        }
    }
    if (off != off_stack) free(off);
}

/* ---- softmax -------------------------------------------------------------------------------- */
void DNNQ_TK_FN(dnnq_softmax_run)(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1,
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
}
