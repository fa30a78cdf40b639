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
#endif
