/* The ISA-independent part of the int8 GEMM: the block driver (micro-kernel tiles over rows)
 * and the fused f32 epilogue.  Included once per ISA by gemm_<isa>.c after that file defined
 *   DNNQ_ISA            the suffix (portable, avx2, avxvnni, avx512vnni, amx)
 *   DNNQ_MR             rows per micro-kernel call
 *   dnnq_br_ukr(...)    the batch-reduce micro-kernel (signature of dnnq_brgemm_ukr_fn); the
 *                       dense micro-kernel is its one-pair case, unless the file defines
 *                       DNNQ_DENSE_UKR and its own dnnq_ukr (AMX: tiles need strided A), and
 *                       DNNQ_BR_EXTERNAL when its batch-reduce kernel lives elsewhere
 * so that the epilogue is compiled (and auto-vectorised) with that ISA's flags. */
#include <string.h>
#include "epilogue_generic.h"

#define DNNQ_CAT2(a, b) a##_##b
#define DNNQ_CAT(a, b) DNNQ_CAT2(a, b)
#define DNNQ_FN(name) DNNQ_CAT(name, DNNQ_ISA)

#ifndef DNNQ_DENSE_UKR
/* the dense micro-kernel: the batch-reduce one with a single (A, B) pair, overwriting c */
DNNQ_ALWAYS_INLINE void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda,
                                 uint32_t a_xor, const int8_t *bp, int32_t *c) {
    const dnnq_br_pair_t q = {a, lda, NULL, bp, K};
    dnnq_br_ukr(mr, 1, &q, a_xor, 0, c);
}
#endif

/* acc (nc columns starting at n0, row m of batch b) -> dst row */
static void dnnq_epilogue_row(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int64_t n0,
                              int nc, const int32_t *acc) {
    int32_t ai[DNNQ_NR];
    float v[DNNQ_NR];
    const int32_t *cc = g->col_comp + b * g->c_sb + n0;
    /* wrapping s32 arithmetic, as the hardware accumulators */
    if (g->wzp) {
        const uint32_t rs = (uint32_t)g->rowsum[b * g->r_sb + m];
        if (g->wzp_sn)
            for (int n = 0; n < nc; ++n)
                ai[n] = (int32_t)((uint32_t)acc[n] + (uint32_t)cc[n] - (uint32_t)g->wzp[n0 + n] * rs);
        else {
            const uint32_t t = (uint32_t)g->wzp[0] * rs;
            for (int n = 0; n < nc; ++n) ai[n] = (int32_t)((uint32_t)acc[n] + (uint32_t)cc[n] - t);
        }
    } else {
        for (int n = 0; n < nc; ++n) ai[n] = (int32_t)((uint32_t)acc[n] + (uint32_t)cc[n]);
    }
    char *drow = (char *)g->dst;
    const int esz = g->dst_dt == DNNQ_DT_S8 || g->dst_dt == DNNQ_DT_U8 ? 1 : 4;
    drow += (b * g->d_sb + m * g->d_sm + n0) * esz;
    if (g->raw_s32) {
        memcpy(drow, ai, sizeof(int32_t) * nc);
        return;
    }
    /* f32(src_scale * wei_scale[n]) first, then times the accumulator (oneDNN's order);
     * its reference kernel multiplies by one scale after the other */
    const float ss = g->src_scale;
    if (g->ref_numerics & DNNQ_REF_SPLIT_SCALES) {
        const int64_t sn = g->scale_sn != 0;
        const float *s = g->scale + n0 * sn;
        for (int n = 0; n < nc; ++n) v[n] = ((float)ai[n] * ss) * s[n * sn];
    } else if (g->scale_sn) {
        const float *s = g->scale + n0;
        for (int n = 0; n < nc; ++n) v[n] = (float)ai[n] * (ss * s[n]);
    } else {
        const float s = ss * g->scale[0];
        for (int n = 0; n < nc; ++n) v[n] = (float)ai[n] * s;
    }
    dnnq_epilogue_finish(g, b, m, n0, nc, v, drow);
}

/* A weights zero point's term, -wzp[n] * rowsum[m] (wrapping s32 as dnnq_epilogue_row: the
 * same sum in another order), taken out of a tile's rows before a fused epilogue adds the
 * column compensation. */
static void dnnq_tile_sub_wzp(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,
                              int64_t n0, int nc, int32_t *tile) {
    for (int r = 0; r < mr; ++r) {
        const uint32_t rs = (uint32_t)g->rowsum[b * g->r_sb + m + r];
        int32_t *row = tile + r * DNNQ_NR;
        if (g->wzp_sn) {
            for (int n = 0; n < nc; ++n)
                row[n] = (int32_t)((uint32_t)row[n] - (uint32_t)g->wzp[n0 + n] * rs);
        } else {
            const uint32_t t = (uint32_t)g->wzp[0] * rs;
            for (int n = 0; n < nc; ++n) row[n] = (int32_t)((uint32_t)row[n] - t);
        }
    }
}

/* The fused intrinsic epilogue applies: the flags say so (the executors clear both where it
 * does not: a weights zero point, oneDNN's reference-kernel numerics, a bias varying along the
 * rows; _gemm.pyx GemmPlan.execute, _conv.pyx ConvPlan.execute), and this ISA's epilogue
 * takes sum / GELU / clip / hard-swish chains (DNNQ_FAST_SUM) or only relu / linear */
#ifndef DNNQ_FAST_SUM
#define DNNQ_FAST_SUM 0 /* the ISA's fused epilogue has no sum post-op */
#endif
static inline int dnnq_fast_epi_ok(const dnnq_gemm_args_t *g) {
    return g->fast_epi || (DNNQ_FAST_SUM && g->fast_epi_sum);
}

void DNNQ_FN(dnnq_gemm_epilogue)(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int mr,
                                 int64_t p, const int32_t *tile) {
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
#ifdef DNNQ_FAST_EPILOGUE
    if (dnnq_fast_epi_ok(g) && (!g->wzp || mr <= DNNQ_MR)) {
        dnnq_epi_consts_t epi;
        int32_t own[DNNQ_MR * DNNQ_NR] __attribute__((aligned(64)));
        if (g->wzp) {  /* the caller's tile is read-only: the term taken out of a copy */
            memcpy(own, tile, sizeof(int32_t) * (size_t)mr * DNNQ_NR);
            dnnq_tile_sub_wzp(g, b, m, mr, n0, nc, own);
            tile = own;
        }
        DNNQ_EPI_PREPARE(g, b, n0, nc, &epi);
        DNNQ_FAST_EPILOGUE(g, &epi, m, mr, tile);
        return;
    }
#endif
    for (int r = 0; r < mr; ++r) dnnq_epilogue_row(g, b, m + r, n0, nc, tile + r * DNNQ_NR);
}

#ifndef DNNQ_BR_EXTERNAL
void DNNQ_FN(dnnq_brgemm_ukr)(int mr, int64_t npairs, const dnnq_br_pair_t *pairs,
                              uint32_t a_xor, int accumulate, int32_t *c) {
    dnnq_br_ukr(mr, npairs, pairs, a_xor, accumulate, c);
}

int DNNQ_FN(dnnq_brgemm_mr)(void) { return DNNQ_MR; }
#endif

void DNNQ_FN(dnnq_gemm_block)(const dnnq_gemm_args_t *g, int64_t b, int64_t m0, int64_t mc,
                              int64_t p) {
    int32_t tile[DNNQ_MR * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t n0 = p * DNNQ_NR;
    const int nc = (int)(g->N - n0 < DNNQ_NR ? g->N - n0 : DNNQ_NR);
    const int8_t *bp = g->b + b * g->b_sb + p * g->K4 * 4 * DNNQ_NR;
    const uint8_t *abase = g->a + b * g->a_sb;
#ifdef DNNQ_FAST_EPILOGUE
    /* the common epilogue (per-N vectors, relu / linear, any dst type) in intrinsics */
    const int fast = dnnq_fast_epi_ok(g);
    dnnq_epi_consts_t epi;
    if (fast) DNNQ_EPI_PREPARE(g, b, n0, nc, &epi);
    else memset(&epi, 0, sizeof epi); /* unread then; set so the compiler can tell */
#else
    const int fast = 0;
#endif
    /* rows split evenly over the tiles (32 rows: 5,5,6,5,5,6 rather than 6,6,6,6,6,2): a
     * short tile reuses each loaded B vector for fewer rows */
    const int64_t ntiles = (mc + DNNQ_MR - 1) / DNNQ_MR;
#if defined(DNNQ_FAST_EPILOGUE) && defined(DNNQ_UKR_PIPELINED)
    /* kernels that can run the previous tile's fused epilogue during the current tile (AMX:
     * the AVX-512 epilogue then overlaps the tile instructions): two tile buffers in turn */
    if (fast && g->a_xor != DNNQ_A_SWAP && !g->wzp) {
        int32_t tiles2[2][DNNQ_MR * DNNQ_NR] __attribute__((aligned(64)));
        int64_t pm = 0;
        int pmr = 0;
        for (int64_t t = 0; t < ntiles; ++t) {
            const int64_t m = m0 + (mc * t) / ntiles;
            const int mr = (int)(m0 + (mc * (t + 1)) / ntiles - m);
            DNNQ_UKR_PIPELINED(mr, g->K, abase + m * g->a_sm, g->a_sm, g->a_xor, bp, tiles2[t & 1],
                               g, &epi, pm, pmr, tiles2[(t + 1) & 1]);
            pm = m;
            pmr = mr;
        }
        if (pmr) DNNQ_FAST_EPILOGUE(g, &epi, pm, pmr, tiles2[(ntiles - 1) & 1]);
#ifdef DNNQ_BLOCK_END
        DNNQ_BLOCK_END();
#endif
        return;
    }
#endif
#ifdef DNNQ_FUSED_TILE
    /* the micro-kernel that applies the hot 8-bit epilogue from its registers */
    const int fuse = fast && g->a_xor == DNNQ_A_U8 && !(g->K & 3) && !g->wzp ?
        DNNQ_FUSED_KIND(&epi) : 0;
#endif
    /* this panel's dst bytes in row 0 (the prefetch of the next tile's rows below) */
    const int64_t desz = !g->raw_s32 && (g->dst_dt == DNNQ_DT_S8 || g->dst_dt == DNNQ_DT_U8) ? 1 : 4;
    const char *const dpanel = (const char *)g->dst + (b * g->d_sb + n0) * desz;
    const int64_t drow = g->d_sm * desz, dlast = nc * desz - 1;
    for (int64_t t = 0; t < ntiles; ++t) {
        const int64_t m = m0 + (mc * t) / ntiles;
        const int mr = (int)(m0 + (mc * (t + 1)) / ntiles - m);
        /* the next tile's dst lines asked for now, a tile's K loop ahead: in a model the
         * destination was last written a whole inference ago and its lines come from DRAM;
         * the stores' read-for-ownership then stalled the first panel (PP-OCRv4 rec's 240 ->
         * 240 1x1 with its dst flushed from the caches: 440 -> 425 us, 1 us more in cache) */
        if (t + 1 < ntiles)
            for (int64_t r = m0 + (mc * (t + 1)) / ntiles; r < m0 + (mc * (t + 2)) / ntiles; ++r) {
                __builtin_prefetch(dpanel + r * drow, 1, 3);
                __builtin_prefetch(dpanel + r * drow + dlast, 1, 3);
            }
#ifdef DNNQ_FUSED_TILE
        if (fuse && mr > 1) {
            const dnnq_br_pair_t q = {abase + m * g->a_sm, g->a_sm, NULL, bp, g->K};
            DNNQ_FUSED_TILE(mr, fuse, 1, &q, &epi, m, 1);
            continue;
        }
#endif
#ifdef DNNQ_UKR_NARROW
        if (nc <= 32 && mr > 1 && g->a_xor != DNNQ_A_SWAP)
            DNNQ_UKR_NARROW(nc, mr, g->K, abase + m * g->a_sm, g->a_sm, g->a_xor, bp, tile);
        else
#endif
        dnnq_ukr(mr, g->K, abase + m * g->a_sm, g->a_sm, g->a_xor, bp, tile);
#ifdef DNNQ_SWAP_FOLD
        if (g->a_xor == DNNQ_A_SWAP) DNNQ_SWAP_FOLD(abase + m * g->a_sm, g->a_sm, mr, g->K, tile);
#endif
#ifdef DNNQ_FAST_EPILOGUE
        if (fast) {
            if (g->wzp) dnnq_tile_sub_wzp(g, b, m, mr, n0, nc, tile);
            DNNQ_FAST_EPILOGUE(g, &epi, m, mr, tile);
            continue;
        }
#endif
        for (int r = 0; r < mr; ++r) dnnq_epilogue_row(g, b, m + r, n0, nc, tile + r * DNNQ_NR);
    }
    (void)fast;
#ifdef DNNQ_BLOCK_END
    DNNQ_BLOCK_END(); /* state the micro-kernel keeps between the tiles of a block (AMX) */
#endif
}

void DNNQ_FN(dnnq_gemm_ukr)(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                            const int8_t *bp, int32_t *c) {
    dnnq_ukr(mr, K, a, lda, a_xor, bp, c);
#ifdef DNNQ_BLOCK_END
    DNNQ_BLOCK_END();
#endif
}

int DNNQ_FN(dnnq_gemm_mr)(void) { return DNNQ_MR; }
