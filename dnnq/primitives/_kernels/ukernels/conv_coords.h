/* Coordinates shared by the convolution drivers (conv_driver.c, conv_deconv.c, conv_tiles.c,
 * conv_f32.c). */
#ifndef DNNQ_CONV_COORDS_H
#define DNNQ_CONV_COORDS_H
#include <stdint.h>
#include "dnnq_conv.h"

/* the source coordinate a tap reads along one dimension, or -1 when it reads nothing */
static inline int64_t src_coord(int64_t o, int64_t k, int64_t s, int64_t d, int64_t p, int64_t I,
                                int deconv) {
    int64_t x;
    if (!deconv) {
        x = o * s - p + k * d;
    } else {
        x = o + p - k * d;
        if (x < 0 || x % s) return -1;
        x /= s;
    }
    return x >= 0 && x < I ? x : -1;
}

/* output pixel m -> (od, oh, ow) */
static inline void out_pixel(const dnnq_conv_t *cv, int64_t m, int64_t *od, int64_t *oh,
                             int64_t *ow) {
    *ow = m % cv->ow;
    m /= cv->ow;
    *oh = m % cv->oh;
    *od = m / cv->oh;
}

/* the taps [lo, hi) of one dimension that read inside the source for output coordinate o */
static inline void tap_range(int64_t o, int64_t K, int64_t s, int64_t d, int64_t p,
                             int64_t I, int32_t *lo, int32_t *hi) {
    const int64_t b = o * s - p; /* the source coordinate of tap 0 */
    int64_t l = b >= 0 ? 0 : (-b + d - 1) / d;
    int64_t h = b > I - 1 ? 0 : (I - 1 - b) / d + 1;
    if (h > K) h = K;
    if (l > h) l = h;
    *lo = (int32_t)l;
    *hi = (int32_t)h;
}

/* each pixel's source offset (of its tap (0, 0, 0) position) */
static inline void tile_offsets(const dnnq_conv_t *cv, const dnnq_conv_tile_t *q,
                                int64_t *off) {
    const int mr = q->mr;
    if (q->mstep == 0) { /* consecutive pixels crossing output rows: a step of sw * IC
                          * along a row (q->lda), the full formula after a row's end */
        int64_t od = q->o[0], oh = q->o[1], ow = q->o[2], o = q->src;
        for (int r = 0; r < mr; ++r) {
            off[r] = o;
            if (++ow < cv->ow) {
                o += q->lda;
                continue;
            }
            ow = 0;
            if (++oh == cv->oh) {
                oh = 0;
                ++od;
            }
            o = (((od * cv->sd - cv->pd) * cv->ih + oh * cv->sh - cv->ph) * cv->iw - cv->pw) *
                cv->IC;
        }
    } else {
        for (int r = 0; r < mr; ++r) off[r] = q->src + r * q->lda;
    }
}

/* The interior ranges: output coordinates whose every tap reads inside the source, along one
 * dimension ([lo, hi), empty for a deconvolution, whose taps skip source rows). */
static inline void interior(int64_t O, int64_t K, int64_t s, int64_t d, int64_t p, int64_t I,
                            int deconv, int64_t *lo, int64_t *hi) {
    if (deconv) {
        *lo = *hi = 0;
        return;
    }
    /* o * s - p >= 0  and  o * s - p + (K - 1) * d <= I - 1 */
    int64_t a = (p + s - 1) / s;
    int64_t last = I - 1 - (K - 1) * d + p;
    int64_t b = last < 0 ? 0 : last / s + 1;
    *lo = a < O ? a : O;
    *hi = b < O ? (b > *lo ? b : *lo) : O;
}

#endif
