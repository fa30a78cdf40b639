/* The fused micro-kernel's epilogue for a chain of post-ops (EPI_FUSE_CHAIN kinds,
 * epilogue_avx512.h): the whole tile's accumulators go through the epilogue in registers,
 * post-op by post-op (one decision per post-op and tile), so the s32 tile never goes to
 * memory.  Every value takes epi_tile_chain's operations in its order (epi_pre, the epo_*
 * post-ops, epi_tail's dst scale, zero point and clamp), hence the same bits.
 *
 * Expanded inside gemm_avx512vnni.c's tile_avx512, whose names it uses: the accumulators
 * c<r><j> (row r < MR, vector j of 16 columns < NCB; NCB = 4 covers all four), FUSE, the
 * block's epi_consts_t k, and row r's dst at d0 + r * dstep. */
#ifndef DNNQ_EPILOGUE_CHAIN_AVX512_H
#define DNNQ_EPILOGUE_CHAIN_AVX512_H
#include "epilogue_avx512.h"

/* OP(x, r, j) on each vector of the tile, in place (f<r><j>: the f32 values) */
#define ECH_VEC(r, j, OP) f##r##j = OP(f##r##j, r, j);
#define ECH_ROW(r, OP)                                                                            \
    if (MR > r) {                                                                                 \
        ECH_VEC(r, 0, OP)                                                                         \
        if (NCB > 1) { ECH_VEC(r, 1, OP) }                                                        \
        if (NCB > 2) { ECH_VEC(r, 2, OP) ECH_VEC(r, 3, OP) }                                      \
    }
#define ECH_ALL(OP) ECH_ROW(0, OP) ECH_ROW(1, OP) ECH_ROW(2, OP) ECH_ROW(3, OP) ECH_ROW(4, OP) ECH_ROW(5, OP)
#define ECH_DECL(r)                                                                               \
    __m512 f##r##0 = _mm512_castsi512_ps(c##r##0), f##r##1 = _mm512_castsi512_ps(c##r##1),       \
           f##r##2 = _mm512_castsi512_ps(c##r##2), f##r##3 = _mm512_castsi512_ps(c##r##3);

/* the steps (x: the s32 accumulator's bits at first) */
#define ECH_PRE(x, r, j) epi_pre(EPI_F_GENERAL, k, _mm512_castps_si512(x), j)
#define ECH_RELU0(x, r, j) epo_relu0(x)
#define ECH_RELU(x, r, j) epo_relu(x, al)
#define ECH_CLIP(x, r, j) epo_clip(x, al, be)
#define ECH_CLIP_V2(x, r, j) epo_clip_v2(x, al, be)
#define ECH_HARDSWISH(x, r, j) epo_hardswish(x, al, be)
#define ECH_HARDSIGMOID(x, r, j) epo_hardsigmoid(x, al, be)
#define ECH_ROUND(x, r, j) epo_round(x)
#define ECH_LINEAR(x, r, j) epo_linear(x, al, be)
#define ECH_SUM(x, r, j) epo_sum(x, epi_prev(ech_dt, k, d0 + (r) * dstep, j), al, be)

/* row r converted (epi_tail: dst scale, zero point, clamp), packed and stored */
#define ECH_CVT(r, j) _mm512_cvtps_epi32(epi_tail(ech_dt, EPI_F_GENERAL, NULL, k, f##r##j, j))
#define ECH_STORE(r)                                                                              \
    if (MR > r) {                                                                                 \
        const __m512i z_ = _mm512_setzero_si512();                                                \
        epi_pack_store8(ech_dt == DNNQ_DT_S8, k, ECH_CVT(r, 0), NCB > 1 ? ECH_CVT(r, 1) : z_,     \
                        NCB > 2 ? ECH_CVT(r, 2) : z_, NCB > 2 ? ECH_CVT(r, 3) : z_,               \
                        d0 + (r) * dstep);                                                        \
    }

/* the whole chain epilogue of the tile */
#define ECH_EPILOGUE()                                                                            \
    do {                                                                                          \
        const int ech_dt = ((FUSE - 1) & EPI_FUSE_S8) ? DNNQ_DT_S8 : DNNQ_DT_U8;                  \
        ECH_DECL(0) ECH_DECL(1) ECH_DECL(2) ECH_DECL(3) ECH_DECL(4) ECH_DECL(5)                   \
        ECH_ALL(ECH_PRE)                                                                          \
        for (int i_ = 0; i_ < k->n_post; ++i_) {                                                  \
            const dnnq_postop_t *po = &k->post_ops[i_];                                           \
            const __m512 al = _mm512_set1_ps(po->alpha), be = _mm512_set1_ps(po->beta);           \
            if (po->kind == DNNQ_PO_SUM) {                                                        \
                ECH_ALL(ECH_SUM)                                                                  \
                continue;                                                                         \
            }                                                                                     \
            switch (po->alg) {                                                                    \
            case DNNQ_ELT_RELU:                                                                   \
                if (po->alpha == 0.0f) { ECH_ALL(ECH_RELU0) }                                     \
                else { ECH_ALL(ECH_RELU) }                                                        \
                break;                                                                            \
            case DNNQ_ELT_CLIP: ECH_ALL(ECH_CLIP) break;                                          \
            case DNNQ_ELT_CLIP_V2: ECH_ALL(ECH_CLIP_V2) break;                                    \
            case DNNQ_ELT_HARDSWISH: ECH_ALL(ECH_HARDSWISH) break;                                \
            case DNNQ_ELT_HARDSIGMOID: ECH_ALL(ECH_HARDSIGMOID) break;                            \
            case DNNQ_ELT_ROUND: ECH_ALL(ECH_ROUND) break;                                        \
            default: ECH_ALL(ECH_LINEAR) break; /* linear (epi_prepare: no GELU here) */          \
            }                                                                                     \
        }                                                                                         \
        ECH_STORE(0) ECH_STORE(1) ECH_STORE(2) ECH_STORE(3) ECH_STORE(4) ECH_STORE(5)             \
    } while (0)
#endif
