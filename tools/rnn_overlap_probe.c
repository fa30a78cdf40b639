/* A probe, not part of dnnq (docs/rnn.md, "Batch 1 at 2 threads: the overlap probe"):
 * can the layer GEMM of a batch-1 LSTM (T = 50, C = H = 512) hide under the L2-bound
 * recurrent GEMV at 2 threads?  Each thread holds half of the packed recurrent weights
 * (16 panels of 32 KiB) and half of the layer weights.  Modes: 0 the steps' GEMV only;
 * 3 every layer tile first, then the steps (dnnq's scheme); 1 each step's GEMV then a fifth
 * of the next 5-row group's layer tiles; 2 the same layer work interleaved into the GEMV's
 * k loop (one layer k-step per two GEMV k-steps).  Optional second argument: a prefetcht0
 * distance in bytes for the GEMV's weights.
 *   gcc -O2 -march=native -fopenmp tools/rnn_overlap_probe.c -o /tmp/probe
 *   for m in 0 3 1 2; do OMP_NUM_THREADS=2 /tmp/probe $m; done */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define K 512
#define K4 (K / 4)
#define NP 16            // panels per thread
#define PANEL (K4 * 256) // bytes
#define T 50
#define R 5              // layer tile rows

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int8_t *wi, *wl;
    int32_t *acc;   // NP * 64
    int32_t *lacc;  // T * NP * 64
} thr_t;

static uint8_t X[T][K] __attribute__((aligned(64)));
static uint8_t Hh[K] __attribute__((aligned(64)));

static int PF = 0;
static inline void gemv_panel(const int8_t *w, int32_t *out) {
    __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0, o0 = e0, o1 = e0, o2 = e0, o3 = e0;
    for (int k = 0; k < K4; k += 2) {
        const int8_t *b = w + k * 256;
        if (PF) for (int l = 0; l < 512; l += 64) _mm_prefetch((const char *)(b + PF + l), _MM_HINT_T0);
        __m512i a = _mm512_set1_epi32(*(const int32_t *)(Hh + 4 * k));
        __m512i c = _mm512_set1_epi32(*(const int32_t *)(Hh + 4 * k + 4));
        e0 = _mm512_dpbusd_epi32(e0, a, _mm512_load_si512(b));
        e1 = _mm512_dpbusd_epi32(e1, a, _mm512_load_si512(b + 64));
        e2 = _mm512_dpbusd_epi32(e2, a, _mm512_load_si512(b + 128));
        e3 = _mm512_dpbusd_epi32(e3, a, _mm512_load_si512(b + 192));
        o0 = _mm512_dpbusd_epi32(o0, c, _mm512_load_si512(b + 256));
        o1 = _mm512_dpbusd_epi32(o1, c, _mm512_load_si512(b + 320));
        o2 = _mm512_dpbusd_epi32(o2, c, _mm512_load_si512(b + 384));
        o3 = _mm512_dpbusd_epi32(o3, c, _mm512_load_si512(b + 448));
    }
    _mm512_store_si512(out, _mm512_add_epi32(e0, o0));
    _mm512_store_si512(out + 16, _mm512_add_epi32(e1, o1));
    _mm512_store_si512(out + 32, _mm512_add_epi32(e2, o2));
    _mm512_store_si512(out + 48, _mm512_add_epi32(e3, o3));
}

/* the 5 x 4 layer accumulators as named locals (gcc spills an array of vectors) */
#define ROW_(r, op) op(r##0, r, 0) op(r##1, r, 1) op(r##2, r, 2) op(r##3, r, 3)
#define ALL_(op) ROW_(c0, op) ROW_(c1, op) ROW_(c2, op) ROW_(c3, op) ROW_(c4, op)
#define DECL_(c, r, j) __m512i c;
#define LOAD_(c, r, j) c = _mm512_load_si512(ACC + (#r[1] - '0') * 64 + 16 * j);
#define STORE_(c, r, j) _mm512_store_si512(ACC + (#r[1] - '0') * 64 + 16 * j, c);
#define DOT_(c, r, j) c = _mm512_dpbusd_epi32(c, x##r, b##j);
/* one k4 step of the layer tile: panel bytes at lb, source rows row0 .. row0 + 4 */
#define LAYER_KSTEP(lb, KK)                                                                       \
    do {                                                                                          \
        const __m512i b0 = _mm512_load_si512(lb), b1 = _mm512_load_si512((lb) + 64),              \
                      b2 = _mm512_load_si512((lb) + 128), b3 = _mm512_load_si512((lb) + 192);    \
        const __m512i xc0 = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 0] + 4 * (KK)));      \
        const __m512i xc1 = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 1] + 4 * (KK)));      \
        const __m512i xc2 = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 2] + 4 * (KK)));      \
        const __m512i xc3 = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 3] + 4 * (KK)));      \
        const __m512i xc4 = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 4] + 4 * (KK)));      \
        ALL_(DOT_)                                                                                \
    } while (0)

/* R rows x 64 columns, k4 steps [k0, k1) of one layer panel, accumulated in acc[R][64] */
static inline void layer_part(const int8_t *w, int row0, int k0, int k1, int32_t *acc) {
#define ACC acc
    ALL_(DECL_) ALL_(LOAD_)
    for (int KK = k0; KK < k1; ++KK) LAYER_KSTEP(w + KK * 256, KK);
    ALL_(STORE_)
#undef ACC
}

/* GEMV panel w -> out, with up to nl layer k4 steps of panel lw (from *lk) interleaved: one
 * after each pair of GEMV k4 steps */
static inline void fused_panel(const int8_t *w, int32_t *out, const int8_t *lw, int row0, int *lk,
                               int32_t *lacc, int nl) {
#define ACC lacc
    __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0;
    ALL_(DECL_) ALL_(LOAD_)
    int KK = *lk, done = 0;
    for (int g = 0; g < K4; g += 2) {
        const int8_t *b = w + g * 256;
        for (int h = 0; h < 2; ++h) {
            const __m512i a = _mm512_set1_epi32(*(const int32_t *)(Hh + 4 * (g + h)));
            e0 = _mm512_dpbusd_epi32(e0, a, _mm512_load_si512(b + 256 * h));
            e1 = _mm512_dpbusd_epi32(e1, a, _mm512_load_si512(b + 256 * h + 64));
            e2 = _mm512_dpbusd_epi32(e2, a, _mm512_load_si512(b + 256 * h + 128));
            e3 = _mm512_dpbusd_epi32(e3, a, _mm512_load_si512(b + 256 * h + 192));
        }
        if (done < nl && KK < K4) {
            LAYER_KSTEP(lw + KK * 256, KK);
            ++KK;
            ++done;
        }
    }
    _mm512_store_si512(out, e0);
    _mm512_store_si512(out + 16, e1);
    _mm512_store_si512(out + 32, e2);
    _mm512_store_si512(out + 48, e3);
    ALL_(STORE_)
    *lk = KK;
#undef ACC
}

int main(int argc, char **argv) {
    const int mode = atoi(argv[1]); if (argc > 2) PF = atoi(argv[2]);  // 0 gemv only, 1 gemv + layer after, 2 fused, 3 layer upfront
    const int reps = 200;
    thr_t th[2];
    for (int t = 0; t < 2; ++t) {
        th[t].wi = aligned_alloc(64, NP * PANEL);
        th[t].wl = aligned_alloc(64, NP * PANEL);
        th[t].acc = aligned_alloc(64, NP * 64 * 4);
        th[t].lacc = aligned_alloc(64, (size_t)T * NP * 64 * 4);
        for (size_t i = 0; i < NP * PANEL; ++i) th[t].wi[i] = (int8_t)(i * 7), th[t].wl[i] = (int8_t)(i * 13);
        memset(th[t].lacc, 0, (size_t)T * NP * 64 * 4);
    }
    for (int i = 0; i < T * K; ++i) X[i / K][i % K] = (uint8_t)i;
    for (int i = 0; i < K; ++i) Hh[i] = (uint8_t)(i * 3);
    double best = 1e9;
    for (int rep = 0; rep < reps; ++rep) {
        double t0 = now();
#pragma omp parallel num_threads(2)
        {
            thr_t *me = th + omp_get_thread_num();
            if (mode == 3) { // all layer tiles up front (today's scheme), then the steps
                for (int g = 0; g < T / R; ++g)
                    for (int p = 0; p < NP; ++p)
                        layer_part(me->wl + p * PANEL, g * R, 0, K4, me->lacc + ((size_t)g * NP + p) * R * 64);
#pragma omp barrier
            }
            int lp = 0, lk = 0;  // layer position: panel and k4 within the next group's tile
            for (int s = 0; s < T; ++s) {
                const int grp = s / R + 1; // the group whose tiles this step advances
                const int row0 = (grp % (T / R)) * R;
                // layer work of this step: (NP * K4) / R k4-steps of the group's tiles
                int todo = NP * K4 / R;
                if (mode == 0 || mode == 3) {
                    for (int p = 0; p < NP; ++p) gemv_panel(me->wi + p * PANEL, me->acc + p * 64);
                } else if (mode == 1) {
                    for (int p = 0; p < NP; ++p) gemv_panel(me->wi + p * PANEL, me->acc + p * 64);
                    while (todo > 0) {
                        int n = K4 - lk < todo ? K4 - lk : todo;
                        layer_part(me->wl + lp * PANEL, row0, lk, lk + n, me->lacc + (size_t)lp * R * 64);
                        todo -= n;
                        lk += n;
                        if (lk == K4) { lk = 0; lp = (lp + 1) % NP; }
                    }
                } else {
                    for (int p = 0; p < NP; ++p) {
                        int per = todo / (NP - p);
                        while (per > 0) {
                            int n0 = lk;
                            int want = per < K4 - lk ? per : K4 - lk;
                            fused_panel(me->wi + p * PANEL, me->acc + p * 64, me->wl + lp * PANEL, row0, &lk,
                                        me->lacc + (size_t)lp * R * 64, want);
                            int n = lk - n0;
                            todo -= n;
                            per -= n;
                            if (lk == K4) { lk = 0; lp = (lp + 1) % NP; }
                            if (n < want || per <= 0) break;
                        }
                    }
                }
#pragma omp barrier
            }
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("mode %d: %.1f us per execute (%d steps), %.2f us per step\n", mode, best * 1e6, T, best * 1e6 / T);
    return 0;
}
