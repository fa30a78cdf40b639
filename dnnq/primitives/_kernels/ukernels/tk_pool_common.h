/* Shared by the pooling kernels: the valid tap range of a window, the accumulators and the
 * epilogue of one output row. */
#ifndef DNNQ_TK_POOL_COMMON_H
#define DNNQ_TK_POOL_COMMON_H
#include "tk_convert.h"
#include "tk_pointwise.h"

#define TK_LOWEST_F32 (-3.402823466e+38f)

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


/* The output position (n, od, oh, ow) of channels-last item `it`, and the next one's without
 * dividing (the channels-last drivers walk their items in order). */
typedef struct { int64_t n, od, oh, ow; } tk_out_pos_t;

static inline tk_out_pos_t tk_out_pos(const dnnq_pool_args_t *a, int64_t it) {
    tk_out_pos_t p;
    p.ow = it % a->OW;
    p.oh = it / a->OW % a->OH;
    p.od = it / (a->OW * a->OH) % a->OD;
    p.n = it / (a->OW * a->OH * a->OD);
    return p;
}

static inline void tk_out_next(const dnnq_pool_args_t *a, tk_out_pos_t *p) {
    if (++p->ow < a->OW) return;
    p->ow = 0;
    if (++p->oh < a->OH) return;
    p->oh = 0;
    if (++p->od < a->OD) return;
    p->od = 0;
    ++p->n;
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

/* the post-ops and the store of values [j, j + n) of output row `row` (in buf[0]) */
static void tk_epilogue(const dnnq_pw_plan_t *p, int64_t row, int64_t j, int n,
                        float (*buf)[TK_CH], float *tmp, int64_t *off) {
    tk_row_offsets(p, row, off);
    tk_program(p, off, j, n, buf, tmp);
}

#endif
