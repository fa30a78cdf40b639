/* The epilogue of a chain of post-ops to an 8-bit dst in registers (EPI_FUSE_CHAIN kinds,
 * epilogue_avx512.h): up to 6 rows x 4 vectors go through it together, post-op by post-op
 * (one decision per post-op and tile).  Every value takes epi_tile_chain's operations in its
 * order (epi_pre, the epo_* post-ops, epi_tail's dst scale, zero point and clamp), hence the
 * same bits.
 *
 * ECH_EPILOGUE expands where these names are defined: the s32 values c<r><j> (row r < MR,
 * vector j of 16 columns < NCB: a panel of at most 16 NCB columns), FUSE (its kind), the block's
 * epi_consts_t k, row r's dst at d0 + r * dstep, ech_cc_in (1: the values hold the
 * compensation already, the micro-kernel's accumulators started from it) and ech_drop (1: leave
 * out the clip bounds k->clip_drop marks).  In gemm_avx512vnni.c's tile_avx512
 * (the micro-kernel's accumulators: the s32 tile never goes to memory), and ech_tile below
 * (a stored tile: the depthwise kernels' and the K % 4 tails').  Included by
 * epilogue_avx512.h. */
#ifndef DNNQ_EPILOGUE_CHAIN_AVX512_H
#define DNNQ_EPILOGUE_CHAIN_AVX512_H

/* VEC(r, j, OP) on each vector of the tile (rows < MR, vectors < NCB) */
#define ECH_ROW_OF(VEC, r, OP)                                                                    \
    if (MR > r) {                                                                                 \
        VEC(r, 0, OP)                                                                             \
        if (NCB > 1) { VEC(r, 1, OP) }                                                            \
        if (NCB > 2) { VEC(r, 2, OP) }                                                            \
        if (NCB > 3) { VEC(r, 3, OP) }                                                            \
    }
#define ECH_ALL_OF(VEC, OP)                                                                       \
    ECH_ROW_OF(VEC, 0, OP) ECH_ROW_OF(VEC, 1, OP) ECH_ROW_OF(VEC, 2, OP)                          \
    ECH_ROW_OF(VEC, 3, OP) ECH_ROW_OF(VEC, 4, OP) ECH_ROW_OF(VEC, 5, OP)
/* OP(x, r, j) on each vector of the tile, in place (f<r><j>: the f32 values) */
#define ECH_VEC(r, j, OP) f##r##j = OP(f##r##j, r, j);
#define ECH_ALL(OP) ECH_ALL_OF(ECH_VEC, OP)
#define ECH_DECL(r)                                                                               \
    __m512 f##r##0 = _mm512_castsi512_ps(c##r##0), f##r##1 = _mm512_castsi512_ps(c##r##1),       \
           f##r##2 = _mm512_castsi512_ps(c##r##2), f##r##3 = _mm512_castsi512_ps(c##r##3);

/* the steps (x: the s32 accumulator's bits at first) */
#define ECH_PRE(x, r, j)                                                                          \
    epi_pre(ech_cc_in ? EPI_F_NOCC : EPI_F_GENERAL, k, _mm512_castps_si512(x), j)
#define ECH_RELU0(x, r, j) epo_relu0(x)
#define ECH_RELU(x, r, j) epo_relu(x, al)
#define ECH_CLIP(x, r, j) epo_clip(x, al, be)
#define ECH_CLIP_V2(x, r, j) epo_clip_v2(x, al, be)
/* a clip (either kind) one of whose bounds never applies (k->clip_drop) */
#define ECH_CLIP_HI(x, r, j) _mm512_min_ps(x, be)
#define ECH_CLIP_LO(x, r, j) _mm512_max_ps(x, al)
/* the step of post-op i: its algorithm, or for a clip with a bound left out (bits 2i, 2i + 1 of
 * drop) one of these.  The micro-kernel's register tiles and the stored tiles of ech_tile take
 * them (ech_drop; PP-OCRv4 rec's 5x5 depthwise layers, whose chains clip after hardswish,
 * 2 - 4 % faster); not ech_tile4, where gcc's scheduling of the longer switch made the
 * 16-channel depthwise layers 8 % slower */
enum { ECH_ALG_CLIP_HI = DNNQ_ELT_HARDSIGMOID + 1, ECH_ALG_CLIP_LO, ECH_ALG_NONE };
static inline int ech_alg(const dnnq_postop_t *po, uint64_t drop, int i) {
    const int d = (int)(drop >> (2 * i)) & 3;
    return !d ? po->alg : d == 1 ? ECH_ALG_CLIP_HI : d == 2 ? ECH_ALG_CLIP_LO : ECH_ALG_NONE;
}
#define ECH_HARDSWISH(x, r, j) epo_hardswish(x, al, be)
#define ECH_HARDSIGMOID(x, r, j) epo_hardsigmoid(x, al, be)
#define ECH_ROUND(x, r, j) epo_round(x)
#define ECH_LINEAR(x, r, j) epo_linear(x, al, be)
/* a binary post-op: OP with the input's vector j (ech_y, epi_bin_vectors) */
#define ECH_BIN_VEC(r, j, OP) f##r##j = OP(f##r##j, ech_y[j]);
#define ECH_BIN(ALG, OP)                                                                          \
    case ALG:                                                                                     \
        ECH_ALL_OF(ECH_BIN_VEC, OP)                                                               \
        break;
#define ECH_SUM(x, r, j) epo_sum(x, epi_prev(ech_dt, k, d0 + (r) * dstep, j), al, be)

/* epi_tail's steps: dst scale and zero point (a zero one too: exact for an integer dst),
 * the clamp where needed */
DNNQ_ALWAYS_INLINE __m512 ech_tail(const int DT, const int FUSE, const epi_consts_t *k, __m512 v,
                                   int j) {
    v = _mm512_add_ps(_mm512_mul_ps(v, k->inv), k->zp[j]);
    if ((FUSE - 1) & EPI_FUSE_NOCLAMP) return v;
    return epi_tail(DT, EPI_F_SIMPLE, NULL, k, v, j);
}
/* row r converted, packed and stored */
#define ECH_CVT(r, j) _mm512_cvtps_epi32(ech_tail(ech_dt, FUSE, k, f##r##j, j))
#define ECH_STORE(r)                                                                              \
    if (MR > r) {                                                                                 \
        const __m512i z_ = _mm512_setzero_si512();                                                \
        epi_pack_store8(ech_dt == DNNQ_DT_S8, k, ECH_CVT(r, 0), NCB > 1 ? ECH_CVT(r, 1) : z_,     \
                        NCB > 2 ? ECH_CVT(r, 2) : z_, NCB > 3 ? ECH_CVT(r, 3) : z_,               \
                        d0 + (r) * dstep);                                                        \
    }

/* the post-ops' steps (a switch's cases on the algorithm) */
#define ECH_CASES()                                                                               \
    case DNNQ_ELT_RELU:                                                                           \
        if (po->alpha == 0.0f) { ECH_ALL(ECH_RELU0) }                                             \
        else { ECH_ALL(ECH_RELU) }                                                                \
        break;                                                                                    \
    case DNNQ_ELT_CLIP: ECH_ALL(ECH_CLIP) break;                                                  \
    case DNNQ_ELT_CLIP_V2: ECH_ALL(ECH_CLIP_V2) break;                                            \
    case DNNQ_ELT_HARDSWISH: ECH_ALL(ECH_HARDSWISH) break;                                        \
    case DNNQ_ELT_HARDSIGMOID: ECH_ALL(ECH_HARDSIGMOID) break;                                    \
    case DNNQ_ELT_ROUND: ECH_ALL(ECH_ROUND) break;                                                \
    default: ECH_ALL(ECH_LINEAR) break; /* linear (epi_prepare: no GELU here) */

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
            if (po->kind == DNNQ_PO_BINARY) {                                                     \
                __m512 ech_y[4];                                                                  \
                epi_bin_vectors(k, po, ech_y);                                                    \
                switch (po->alg) { EPO_BINARY_ALGS(ECH_BIN) }                                     \
                continue;                                                                         \
            }                                                                                     \
            if (ech_drop) {                                                                       \
                switch (ech_alg(po, k->clip_drop, i_)) {                                          \
                case ECH_ALG_CLIP_HI: ECH_ALL(ECH_CLIP_HI) break;                                 \
                case ECH_ALG_CLIP_LO: ECH_ALL(ECH_CLIP_LO) break;                                 \
                case ECH_ALG_NONE: break;                                                         \
                ECH_CASES()                                                                       \
                }                                                                                 \
            } else {                                                                              \
                switch (po->alg) { ECH_CASES() }                                                  \
            }                                                                                     \
        }                                                                                         \
        ECH_STORE(0) ECH_STORE(1) ECH_STORE(2) ECH_STORE(3) ECH_STORE(4) ECH_STORE(5)             \
    } while (0)

/* MR rows of a stored s32 tile (row stride DNNQ_NR) through the chain epilogue */
#define ECH_LOAD(r)                                                                               \
    const __m512i c##r##0 = MR > r ? _mm512_load_si512((const void *)(tile + r * DNNQ_NR))       \
                                   : _mm512_setzero_si512();                                      \
    const __m512i c##r##1 = MR > r && NCB > 1                                                     \
                                ? _mm512_load_si512((const void *)(tile + r * DNNQ_NR + 16))      \
                                : _mm512_setzero_si512();                                         \
    const __m512i c##r##2 = MR > r && NCB > 2                                                     \
                                ? _mm512_load_si512((const void *)(tile + r * DNNQ_NR + 32))      \
                                : _mm512_setzero_si512();                                         \
    const __m512i c##r##3 = MR > r && NCB > 3                                                     \
                                ? _mm512_load_si512((const void *)(tile + r * DNNQ_NR + 48))      \
                                : _mm512_setzero_si512();
DNNQ_ALWAYS_INLINE void ech_tile(const int FUSE, const int MR, const int NCB, const epi_consts_t *k,
                                 const int32_t *tile, char *d0, int64_t dstep) {
    const int ech_cc_in = 0, ech_drop = 1;
    ECH_LOAD(0) ECH_LOAD(1) ECH_LOAD(2) ECH_LOAD(3) ECH_LOAD(4) ECH_LOAD(5)
    ECH_EPILOGUE();
}
#undef ECH_LOAD

/* MR groups of four rows of a 16-column tile whose dst rows are 16 bytes apart, each group
 * one 64-byte dst vector: the rows of a 64-column tile (k4: k's constants of the 16 columns
 * repeated) */
#define ECH_LOAD4(r)                                                                              \
    const __m512i c##r##0 = MR > r ? _mm512_load_si512((const void *)(tile + (4 * r) * DNNQ_NR))  \
                                   : _mm512_setzero_si512();                                      \
    const __m512i c##r##1 = MR > r                                                                \
                                ? _mm512_load_si512((const void *)(tile + (4 * r + 1) * DNNQ_NR)) \
                                : _mm512_setzero_si512();                                         \
    const __m512i c##r##2 = MR > r                                                                \
                                ? _mm512_load_si512((const void *)(tile + (4 * r + 2) * DNNQ_NR)) \
                                : _mm512_setzero_si512();                                         \
    const __m512i c##r##3 = MR > r                                                                \
                                ? _mm512_load_si512((const void *)(tile + (4 * r + 3) * DNNQ_NR)) \
                                : _mm512_setzero_si512();
DNNQ_ALWAYS_INLINE void ech_tile4(const int FUSE, const int MR, const epi_consts_t *k,
                                  const int32_t *tile, char *d0) {
    const int NCB = 4;
    const int64_t dstep = 64;
    const int ech_cc_in = 0, ech_drop = 0;
    ECH_LOAD4(0) ECH_LOAD4(1) ECH_LOAD4(2) ECH_LOAD4(3) ECH_LOAD4(4) ECH_LOAD4(5)
    ECH_EPILOGUE();
}
#undef ECH_LOAD4

/* the rows of a 16-column tile with dst rows 16 bytes apart (16 channels, channels-last: a
 * depthwise convolution's), by groups of four rows (ech_tile4), 24 rows at a time; returns the
 * rows done (a multiple of 4) */
static int ech_tile_rows16(const epi_consts_t *k, const int32_t *tile, int mr, char *d0) {
    epi_consts_t k4 = *k;
    for (int j = 1; j < 4; ++j) {
        k4.cc[j] = k->cc[0], k4.sc[j] = k->sc[0], k4.bi[j] = k->bi[0], k4.zp[j] = k->zp[0];
        k4.km[j] = k->km[0];
    }
    k4.nc = 64, k4.nv = 4, k4.full = 1, k4.km8 = ~(__mmask64)0, k4.ldd = 64, k4.bin_rep16 = 1;
    const int done = mr & ~3;
    for (int r0 = 0; r0 < done; r0 += 24, tile += 24 * DNNQ_NR, d0 += 24 * 16) {
        const int groups = (done - r0) / 4 < 6 ? (done - r0) / 4 : 6;
#define ECH_G(F, M) case M: ech_tile4(F, M, &k4, tile, d0); break;
#define ECH_KIND(F)                                                                               \
    case F:                                                                                       \
        switch (groups) { ECH_G(F, 1) ECH_G(F, 2) ECH_G(F, 3) ECH_G(F, 4) ECH_G(F, 5) ECH_G(F, 6) } \
        break;
        switch (epi_fuse_kind(k)) { ECH_KIND(25) ECH_KIND(26) ECH_KIND(27) ECH_KIND(28) }
#undef ECH_KIND
#undef ECH_G
    }
    return done;
}

/* mr rows of a stored tile to an 8-bit dst (k->chain_regs: epi_fuse_kind(k) 25 - 28), 6 at a
 * time */
static void ech_tile_rows(const epi_consts_t *k, const int32_t *tile, int mr,
                          char *d0) {
    if (k->nc == 16 && k->ldd == 16) {
        const int done = ech_tile_rows16(k, tile, mr, d0);
        tile += done * DNNQ_NR, d0 += done * 16, mr -= done;
    }
#define ECH_MR(F, M)                                                                              \
    case M:                                                                                       \
        if (k->nv <= 1) ech_tile(F, M, 1, k, tile, d0, k->ldd);                                   \
        else if (k->nv <= 2) ech_tile(F, M, 2, k, tile, d0, k->ldd);                              \
        else if (k->nv <= 3) ech_tile(F, M, 3, k, tile, d0, k->ldd);                              \
        else ech_tile(F, M, 4, k, tile, d0, k->ldd);                                              \
        break;
    for (int r0 = 0; r0 < mr; r0 += 6, tile += 6 * DNNQ_NR, d0 += 6 * k->ldd) {
        const int rows = mr - r0 < 6 ? mr - r0 : 6;
#define ECH_KIND(F)                                                                               \
    case F:                                                                                       \
        switch (rows) { ECH_MR(F, 1) ECH_MR(F, 2) ECH_MR(F, 3) ECH_MR(F, 4) ECH_MR(F, 5) ECH_MR(F, 6) } \
        break;
        switch (epi_fuse_kind(k)) { ECH_KIND(25) ECH_KIND(26) ECH_KIND(27) ECH_KIND(28) }
#undef ECH_KIND
    }
#undef ECH_MR
}
#endif
