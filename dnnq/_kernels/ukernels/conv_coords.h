/* Coordinates shared by the convolution drivers (conv_driver.c, conv_deconv.c). */
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

#endif
