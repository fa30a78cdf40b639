/* Helpers shared by the micro-kernels. */
#ifndef DNNQ_UKR_COMMON_H
#define DNNQ_UKR_COMMON_H
#include <string.h>
#include <stdint.h>

#define DNNQ_ALWAYS_INLINE static inline __attribute__((always_inline))

/* The 4 bytes of A at k = 4*k4 .. 4*k4+3 as one little-endian word, XOR-ed with a_xor
 * (0x80808080 turns s8 into u8 = s8 + 128).  The tail group past K reads nothing beyond the
 * row: missing bytes are 0, and they meet the zero padding of the packed weights anyway. */
DNNQ_ALWAYS_INLINE uint32_t dnnq_load_a4(const uint8_t *a, int64_t k4) {
    uint32_t x;
    memcpy(&x, a + 4 * k4, 4);
    return x;
}

DNNQ_ALWAYS_INLINE uint32_t dnnq_load_a_tail(const uint8_t *a, int64_t K) {
    const int64_t k0 = K & ~(int64_t)3;
    uint32_t x = 0;
    for (int i = 0; k0 + i < K; ++i) x |= (uint32_t)a[k0 + i] << (8 * i);
    return x;
}
/* The row pointers of one batch-reduce pair for an MR-row tile (dense or indirect A; rows
 * past MR are never read and alias row 0). */
#define DNNQ_PAIR_ROWS(q, MR, a0, a1, a2, a3, a4, a5)                                         \
    const uint8_t *a0, *a1, *a2, *a3, *a4, *a5;                                                 \
    if ((q)->rows) {                                                                            \
        const uint8_t *const *rp_ = (q)->rows;                                                  \
        a0 = rp_[0]; a1 = (MR) > 1 ? rp_[1] : a0; a2 = (MR) > 2 ? rp_[2] : a0;                  \
        a3 = (MR) > 3 ? rp_[3] : a0; a4 = (MR) > 4 ? rp_[4] : a0; a5 = (MR) > 5 ? rp_[5] : a0;  \
    } else {                                                                                    \
        const int64_t ld_ = (q)->lda;                                                           \
        a0 = (q)->a; a1 = a0 + ld_; a2 = a1 + ld_; a3 = a2 + ld_; a4 = a3 + ld_; a5 = a4 + ld_; \
    }
#endif
