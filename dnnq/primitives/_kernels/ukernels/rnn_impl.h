/* The int8 RNN driver: one layer and direction, the whole time loop, compiled once per ISA by
 * rnn_<isa>.c (which defines DNNQ_RNN_ISA) so that the cell epilogue (rnn_cells.h) is
 * vectorised with that ISA's flags.  The GEMM tiles come from the micro-kernels of the chosen
 * level.
 *
 *   1. layer GEMM: the s32 products x(t) . W_layer of a chunk of time steps at once (rows
 *      t*N + n), written straight into the accumulator scratch `lacc`, laid out
 *      [panel][row mod ring][64];
 *   2. per step: h(t-1) . W_iter per 64-channel block, all gates of the block in one pass (the
 *      packed panels of a block sit side by side), accumulated by the batch-reduce micro-kernel
 *      onto the layer products of those rows (so the pre-activation is complete in registers
 *      and no separate add or tile copy is needed), and the fused cell epilogue on those
 *      accumulators: dequantize, bias, sigmoid / tanh, state update, requantize to u8.
 * GRU needs r*h (requantized) of the whole row before its third gate, so its step has two
 * phases.  Threads share each phase by (channel block, row tile), always the same share, so a
 * thread's weight panels stay in its cache from step to step. */
#include <omp.h>
#include "dnnq_kernels.h"
#include "dnnq_rnn.h"
#include "rnn_math.h"
#ifdef __AVX512F__
#include "rnn_math_avx512.h"
#endif

#define RNN_CAT2(a, b) a##_##b
#define RNN_CAT(a, b) RNN_CAT2(a, b)
#define RNN_FN(name) RNN_CAT(name, DNNQ_RNN_ISA)
#define RNN_MAXG 4

#include "rnn_cells.h"

typedef struct {
    const dnnq_rnn_args_t *a;
    dnnq_gemm_ukr_fn ukr;
    dnnq_brgemm_ukr_fn brk;
    int mr;
    int64_t ring;           /* rows of the layer-product scratch: one chunk of steps */
    int64_t ring_off;       /* added to a row before the modulo: every chunk starts at 0 */
    int64_t wl_panel, wi_panel;  /* bytes per packed panel */
    int64_t nrt;            /* row tiles of a step */
    int64_t lmb;            /* layer GEMM row block */
} rnn_ctx_t;

static inline const uint8_t *rnn_h_prev(const dnnq_rnn_args_t *a, int64_t s, int64_t n,
                                        int64_t *lda) {
    if (s == 0) {
        *lda = a->h0_sn;
        return a->h0 + n * a->h0_sn;
    }
    const int64_t tp = a->reverse ? a->T - s : s - 1;
    *lda = a->out_sn;
    return a->out + tp * a->out_st + n * a->out_sn;
}

static inline int64_t rnn_time(const dnnq_rnn_args_t *a, int64_t s) {
    return a->reverse ? a->T - 1 - s : s;
}

/* ---- work ---------------------------------------------------------------------------------- */

/* The accumulators of row m = t*N + n, panel p = j * G + g (64 s32): [p][m mod ring], so that
 * the rows of one tile (a layer GEMM tile, or a step's row tile) are one run with row stride 64,
 * the micro-kernels' output layout.  A ring of one chunk rather than T * N rows: the products
 * are always written to lines that are still in cache (at N = 32 writing fresh memory every
 * step cost 3-4 % of the whole LSTM, read and written back through DRAM).  Every chunk starts
 * at ring row 0 (ring_off: right2left chunks start at T - k * tc, not a multiple of tc), so the
 * rows of a tile never wrap and its first row's address is enough. */
static inline int32_t *rnn_lacc(const rnn_ctx_t *x, int64_t m, int64_t p) {
    return x->a->lacc + (p * x->ring + (m + x->ring_off) % x->ring) * 64;
}

/* the layer products of rows [mlo, mhi) (whole time steps), items (panel, row block) */
static void RNN_FN(rnn_layer_gemm)(const rnn_ctx_t *x, int64_t mlo, int64_t mhi, int tid,
                                   int nth) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t nlmb = (mhi - mlo + x->lmb - 1) / x->lmb;
    const int64_t npan = a->nblk * a->G, nitems = npan * nlmb;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    for (int64_t it = i0; it < i1; ++it) {
        const int64_t p = it / nlmb, mb = it % nlmb, M = mhi - mlo;
        /* blocks and the tiles inside them split evenly (50 rows: 25 + 25 as 5 x 5, not
         * 48 + 2): a short tile reuses each weights load for fewer rows */
        const int64_t m0 = mlo + M * mb / nlmb, m1 = mlo + M * (mb + 1) / nlmb;
        const int64_t ntl = (m1 - m0 + x->mr - 1) / x->mr;
        const int8_t *bp = a->wl + p * x->wl_panel;
        for (int64_t tl = 0; tl < ntl; ++tl) {
            const int64_t m = m0 + (m1 - m0) * tl / ntl;
            const int mr = (int)(m0 + (m1 - m0) * (tl + 1) / ntl - m);
            x->ukr(mr, a->C, a->x + m * a->x_sn, a->x_sn, 0, bp, rnn_lacc(x, m, p));
        }
    }
}

/* rows of the layer products needed by steps [s0, s1) */
static inline void rnn_chunk_rows(const dnnq_rnn_args_t *a, int64_t s0, int64_t s1,
                                  int64_t *mlo, int64_t *mhi) {
    const int64_t tlo = a->reverse ? a->T - s1 : s0, thi = a->reverse ? a->T - s0 : s1;
    *mlo = tlo * a->N;
    *mhi = thi * a->N;
}

/* LSTMP, second phase of step s: the projection of the u8 h of the whole row, items (64-channel
 * block of P, row tile) */
static void RNN_FN(rnn_proj_phase)(const rnn_ctx_t *x, int64_t s, int tid, int nth) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t N = a->N, H = a->H, P = a->P, nrt = x->nrt, npb = (P + 63) / 64;
    const int64_t nitems = npb * nrt;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    const int64_t t = rnn_time(a, s);
    const int64_t wp_panel = ((H + 3) / 4) * 4 * 64;
    int32_t tile[DNNQ_MR_MAX * 64] __attribute__((aligned(64)));
    for (int64_t it = i0; it < i1; ++it) {
        const int64_t j = it / nrt, rt = it % nrt;
        const int64_t n0 = N * rt / nrt, n1 = N * (rt + 1) / nrt;
        const int mr = (int)(n1 - n0);
        const int nc = (int)(P - j * 64 < 64 ? P - j * 64 : 64);
        if (mr <= 0) continue;
        x->ukr(mr, H, a->hproj + n0 * H, H, 0, a->wp + j * wp_panel, tile);
        for (int r = 0; r < mr; ++r) {
            const int64_t n = n0 + r;
            uint8_t *h = a->out + t * a->out_st + n * a->out_sn + j * 64;
            float *hf = a->outf ? a->outf + t * a->outf_st + n * a->outf_sn + j * 64 : NULL;
            RNN_FN(rnn_epi_proj)(a, tile + r * 64, j * 64, nc, h, hf);
        }
    }
}

/* the accumulator rows of item it (block j, row tile) at time t, every gate, toward L1/L2:
 * written by the layer GEMM long ago, they are read first thing by the micro-kernel */
static inline void rnn_prefetch_item(const rnn_ctx_t *x, int64_t t, int64_t it, int g0, int ng) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t N = a->N, nrt = x->nrt, j = it / nrt, rt = it % nrt;
    const int64_t n0 = N * rt / nrt, n1 = N * (rt + 1) / nrt;
    for (int g = g0; g < g0 + ng; ++g) {
        const char *lp = (const char *)rnn_lacc(x, t * N + n0, j * a->G + g);
        for (int64_t o = 0; o < (n1 - n0) * 256; o += 64) __builtin_prefetch(lp + o, 1, 3);
    }
}

/* one phase of step s: items (block j, row tile) shared out in contiguous runs */
static void RNN_FN(rnn_step_phase)(const rnn_ctx_t *x, int64_t s, int phase, int tid, int nth) {
    const dnnq_rnn_args_t *a = x->a;
    if (a->wp && phase == 1) {
        RNN_FN(rnn_proj_phase)(x, s, tid, nth);
        return;
    }
    const int64_t N = a->N, H = a->H, G = a->G, nrt = x->nrt, nitems = a->nblk * nrt;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    const int64_t t = rnn_time(a, s);
    const int gru = a->cell == DNNQ_RNN_GRU, lbr = a->cell == DNNQ_RNN_LBR_GRU;
    /* the gates this phase multiplies: GRU phase 0 u, r; phase 1 o (by r*h) */
    const int g0 = gru && phase == 1 ? 2 : 0, ng = gru ? (phase == 0 ? 2 : 1) : (int)G;
    int32_t uo[DNNQ_MR_MAX * 64] __attribute__((aligned(64)));   /* LBR-GRU: U_o h apart */
    /* odd steps walk the work (and the gates) backwards: the recurrent weights are about the
     * size of L2 at batch 1 (1 MiB for H = 512), and a cyclic walk would miss on every line
     * while a back-and-forth walk starts on the lines the previous step used last */
    const int back = (int)(s & 1);
    if (i0 < i1) rnn_prefetch_item(x, t, back ? i1 - 1 : i0, g0, ng);
    for (int64_t ii = i0; ii < i1; ++ii) {
        const int64_t it = back ? i1 - 1 - (ii - i0) : ii;
        if (ii + 1 < i1) rnn_prefetch_item(x, t, back ? it - 1 : it + 1, g0, ng);
        const int64_t j = it / nrt, rt = it % nrt;
        const int64_t n0 = N * rt / nrt, n1 = N * (rt + 1) / nrt;
        const int mr = (int)(n1 - n0);
        if (mr <= 0) continue;
        int32_t *acc[RNN_MAXG];
        for (int g = 0; g < G; ++g) acc[g] = rnn_lacc(x, t * N + n0, j * G + g);
        int64_t lda;
        const uint8_t *hp = rnn_h_prev(a, s, n0, &lda);
        const int8_t *wb = a->wi + j * G * x->wi_panel;
        for (int gg = 0; gg < ng; ++gg) {
            const int g = g0 + (back ? ng - 1 - gg : gg);
            dnnq_br_pair_t q = {hp, lda, NULL, wb + g * x->wi_panel, a->Ki};
            if (gru && phase == 1) { /* o gate: U_o . (r*h) */
                q.a = a->rh + n0 * H;
                q.lda = H;
            }
            if (lbr && g == 2) x->brk(mr, 1, &q, 0, 0, uo);   /* kept apart from W_o x */
            else x->brk(mr, 1, &q, 0, 1, acc[g]);
        }
        rnn_tile_t tl;
        tl.o = j * 64;
        tl.mr = mr;
        tl.nc = (int)(H - j * 64 < 64 ? H - j * 64 : 64);
        tl.h = a->out + t * a->out_st + n0 * a->out_sn + j * 64;
        tl.h_sn = a->out_sn;
        tl.hf = a->outf ? a->outf + t * a->outf_st + n0 * a->outf_sn + j * 64 : NULL;
        tl.hf_sn = a->outf_sn;
        tl.hp = hp + j * 64;
        tl.hp_sn = lda;
        const int64_t sc = n0 * H + j * 64;   /* row n0, channel j * 64 of the N x H scratch */
        switch (a->cell) {
        case DNNQ_RNN_LSTM:
            if (a->wp) {   /* LSTMP: the u8 h goes to the projection phase */
                tl.h = a->hproj + sc;
                tl.h_sn = H;
                tl.hf = NULL;
            }
            RNN_FN(rnn_epi_lstm)(a, acc, &tl, a->c + sc);
            break;
        case DNNQ_RNN_VANILLA:
            RNN_FN(rnn_epi_vanilla)(a, acc, &tl);
            break;
        case DNNQ_RNN_LBR_GRU:
            RNN_FN(rnn_epi_lbr)(a, acc, uo, &tl);
            break;
        default:
            if (phase == 0)
                RNN_FN(rnn_epi_gru1)(a, acc, &tl, a->gate_u + sc, a->rh + sc);
            else
                RNN_FN(rnn_epi_gru2)(a, acc[2], &tl, a->gate_u + sc);
        }
    }
}

void RNN_FN(dnnq_rnn_forward)(const dnnq_rnn_args_t *a) {
    rnn_ctx_t x;
    const int gisa = a->gemm_isa == DNNQ_ISA_AVX512_CORE_AMX ? DNNQ_ISA_AVX512_CORE_VNNI
                                                             : a->gemm_isa;
    x.a = a;
    x.ukr = dnnq_gemm_ukr_for_isa(gisa);
    x.brk = dnnq_brgemm_ukr_for_isa(gisa);
    x.mr = dnnq_gemm_mr_for_isa(gisa);
    if (x.mr > dnnq_brgemm_mr_for_isa(gisa)) x.mr = dnnq_brgemm_mr_for_isa(gisa);
    if (x.mr > DNNQ_MR_MAX) x.mr = DNNQ_MR_MAX;
    x.ring = dnnq_rnn_lacc_rows(a->T, a->N, a->nblk, a->G);
    x.wl_panel = ((a->C + 3) / 4) * 4 * 64;
    x.wi_panel = ((a->Ki + 3) / 4) * 4 * 64;
    x.nrt = (a->N + x.mr - 1) / x.mr;
    x.lmb = (int64_t)x.mr * 8;
    const int nph = a->cell == DNNQ_RNN_GRU || a->wp ? 2 : 1;
    const int64_t T = a->T;
    /* the layer GEMM runs in chunks of tc steps, just before them (dnnq_rnn_chunk_steps) */
    const int64_t tc = dnnq_rnn_chunk_steps(T, a->N, a->nblk, a->G);
    x.ring_off = a->reverse ? (tc - T % tc) % tc * a->N : 0;
    int nt = a->nthreads < 1 ? 1 : a->nthreads;
    /* a thread per 2^17 multiply-adds of a step at most: below that a barrier (a few us, far
     * more when the machine is oversubscribed) costs more than the share it saves */
    const int64_t step_macs = a->N * a->H * a->G * a->H;
    if (nt > 1 && step_macs >> 17 < nt) nt = step_macs >> 17 < 1 ? 1 : (int)(step_macs >> 17);
    int64_t mlo, mhi;
    if (nt == 1) {
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &mlo, &mhi);
            RNN_FN(rnn_layer_gemm)(&x, mlo, mhi, 0, 1);
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) RNN_FN(rnn_step_phase)(&x, s, ph, 0, 1);
        }
        return;
    }
    if (a->fork_join) {
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &mlo, &mhi);
#pragma omp parallel num_threads(nt)
            RNN_FN(rnn_layer_gemm)(&x, mlo, mhi, omp_get_thread_num(), omp_get_num_threads());
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) {
#pragma omp parallel num_threads(nt)
                    RNN_FN(rnn_step_phase)(&x, s, ph, omp_get_thread_num(),
                                           omp_get_num_threads());
                }
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t lo, hi;
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &lo, &hi);
            RNN_FN(rnn_layer_gemm)(&x, lo, hi, tid, nth);
#pragma omp barrier
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) {
                    RNN_FN(rnn_step_phase)(&x, s, ph, tid, nth);
#pragma omp barrier
                }
        }
    }
}

void RNN_FN(dnnq_rnn_eltwise)(int alg, float *v, int64_t n) {
    if (alg == DNNQ_RNN_ACT_TANH)
        for (int64_t i = 0; i < n; ++i) v[i] = rnn_tanh(v[i]);
    else
        for (int64_t i = 0; i < n; ++i) v[i] = rnn_logistic(v[i]);
}

/* Streams n bytes (a multiple of 256) reps times with the widest loads of the ISA and
 * returns a checksum: the read bandwidth the batch-1 step is compared against (benchmarks). */
int64_t RNN_FN(dnnq_rnn_read_stream)(const uint8_t *buf, int64_t n, int64_t reps) {
#ifdef __AVX512F__
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t o = 0; o < n; o += 256) {
            s0 = _mm512_add_epi32(s0, _mm512_loadu_si512((const void *)(buf + o)));
            s1 = _mm512_add_epi32(s1, _mm512_loadu_si512((const void *)(buf + o + 64)));
            s2 = _mm512_add_epi32(s2, _mm512_loadu_si512((const void *)(buf + o + 128)));
            s3 = _mm512_add_epi32(s3, _mm512_loadu_si512((const void *)(buf + o + 192)));
        }
    return _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3)));
#else
    int64_t acc = 0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t o = 0; o < n; o += 8) {
            int64_t v;
            memcpy(&v, buf + o, 8);
            acc += v;
        }
    return acc;
#endif
}
