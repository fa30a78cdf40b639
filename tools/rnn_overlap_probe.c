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

static inline void layer_part(const int8_t *w, int row0, int k0, int k1, int32_t *acc) {
    __m512i c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, c40, c41, c42, c43;
    c00 = _mm512_load_si512(acc + 0 * 64 + 16 * 0);
    c01 = _mm512_load_si512(acc + 0 * 64 + 16 * 1);
    c02 = _mm512_load_si512(acc + 0 * 64 + 16 * 2);
    c03 = _mm512_load_si512(acc + 0 * 64 + 16 * 3);
    c10 = _mm512_load_si512(acc + 1 * 64 + 16 * 0);
    c11 = _mm512_load_si512(acc + 1 * 64 + 16 * 1);
    c12 = _mm512_load_si512(acc + 1 * 64 + 16 * 2);
    c13 = _mm512_load_si512(acc + 1 * 64 + 16 * 3);
    c20 = _mm512_load_si512(acc + 2 * 64 + 16 * 0);
    c21 = _mm512_load_si512(acc + 2 * 64 + 16 * 1);
    c22 = _mm512_load_si512(acc + 2 * 64 + 16 * 2);
    c23 = _mm512_load_si512(acc + 2 * 64 + 16 * 3);
    c30 = _mm512_load_si512(acc + 3 * 64 + 16 * 0);
    c31 = _mm512_load_si512(acc + 3 * 64 + 16 * 1);
    c32 = _mm512_load_si512(acc + 3 * 64 + 16 * 2);
    c33 = _mm512_load_si512(acc + 3 * 64 + 16 * 3);
    c40 = _mm512_load_si512(acc + 4 * 64 + 16 * 0);
    c41 = _mm512_load_si512(acc + 4 * 64 + 16 * 1);
    c42 = _mm512_load_si512(acc + 4 * 64 + 16 * 2);
    c43 = _mm512_load_si512(acc + 4 * 64 + 16 * 3);
    for (int KK = k0; KK < k1; ++KK) {
        const int8_t *b = w + KK * 256;
        const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64),
                      b2 = _mm512_load_si512(b + 128), b3 = _mm512_load_si512(b + 192);
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 0] + 4 * KK));
          c00 = _mm512_dpbusd_epi32(c00, x, b0);
          c01 = _mm512_dpbusd_epi32(c01, x, b1);
          c02 = _mm512_dpbusd_epi32(c02, x, b2);
          c03 = _mm512_dpbusd_epi32(c03, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 1] + 4 * KK));
          c10 = _mm512_dpbusd_epi32(c10, x, b0);
          c11 = _mm512_dpbusd_epi32(c11, x, b1);
          c12 = _mm512_dpbusd_epi32(c12, x, b2);
          c13 = _mm512_dpbusd_epi32(c13, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 2] + 4 * KK));
          c20 = _mm512_dpbusd_epi32(c20, x, b0);
          c21 = _mm512_dpbusd_epi32(c21, x, b1);
          c22 = _mm512_dpbusd_epi32(c22, x, b2);
          c23 = _mm512_dpbusd_epi32(c23, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 3] + 4 * KK));
          c30 = _mm512_dpbusd_epi32(c30, x, b0);
          c31 = _mm512_dpbusd_epi32(c31, x, b1);
          c32 = _mm512_dpbusd_epi32(c32, x, b2);
          c33 = _mm512_dpbusd_epi32(c33, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 4] + 4 * KK));
          c40 = _mm512_dpbusd_epi32(c40, x, b0);
          c41 = _mm512_dpbusd_epi32(c41, x, b1);
          c42 = _mm512_dpbusd_epi32(c42, x, b2);
          c43 = _mm512_dpbusd_epi32(c43, x, b3);
        }
    }
    _mm512_store_si512(acc + 0 * 64 + 16 * 0, c00);
    _mm512_store_si512(acc + 0 * 64 + 16 * 1, c01);
    _mm512_store_si512(acc + 0 * 64 + 16 * 2, c02);
    _mm512_store_si512(acc + 0 * 64 + 16 * 3, c03);
    _mm512_store_si512(acc + 1 * 64 + 16 * 0, c10);
    _mm512_store_si512(acc + 1 * 64 + 16 * 1, c11);
    _mm512_store_si512(acc + 1 * 64 + 16 * 2, c12);
    _mm512_store_si512(acc + 1 * 64 + 16 * 3, c13);
    _mm512_store_si512(acc + 2 * 64 + 16 * 0, c20);
    _mm512_store_si512(acc + 2 * 64 + 16 * 1, c21);
    _mm512_store_si512(acc + 2 * 64 + 16 * 2, c22);
    _mm512_store_si512(acc + 2 * 64 + 16 * 3, c23);
    _mm512_store_si512(acc + 3 * 64 + 16 * 0, c30);
    _mm512_store_si512(acc + 3 * 64 + 16 * 1, c31);
    _mm512_store_si512(acc + 3 * 64 + 16 * 2, c32);
    _mm512_store_si512(acc + 3 * 64 + 16 * 3, c33);
    _mm512_store_si512(acc + 4 * 64 + 16 * 0, c40);
    _mm512_store_si512(acc + 4 * 64 + 16 * 1, c41);
    _mm512_store_si512(acc + 4 * 64 + 16 * 2, c42);
    _mm512_store_si512(acc + 4 * 64 + 16 * 3, c43);
}

// fused: GEMV panel p with layer k4-steps interleaved: every 5th GEMV k4 pair-step... we do one
// layer k4 step per 2 GEMV k4 steps (pair) * (5/2) -> one layer step per GEMV pair step, on
// alternate pair steps (K4/2 = 64 pair steps per panel -> 26 layer steps per panel ~ 410/16).
static inline void fused_panel(const int8_t *w, int32_t *out, const int8_t *lw, int row0, int *lk,
                               int32_t *lacc, int nl) {
    __m512i e0 = _mm512_setzero_si512(), e1 = e0, e2 = e0, e3 = e0;
    __m512i c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, c40, c41, c42, c43;
    c00 = _mm512_load_si512(lacc + 0 * 64 + 16 * 0);
    c01 = _mm512_load_si512(lacc + 0 * 64 + 16 * 1);
    c02 = _mm512_load_si512(lacc + 0 * 64 + 16 * 2);
    c03 = _mm512_load_si512(lacc + 0 * 64 + 16 * 3);
    c10 = _mm512_load_si512(lacc + 1 * 64 + 16 * 0);
    c11 = _mm512_load_si512(lacc + 1 * 64 + 16 * 1);
    c12 = _mm512_load_si512(lacc + 1 * 64 + 16 * 2);
    c13 = _mm512_load_si512(lacc + 1 * 64 + 16 * 3);
    c20 = _mm512_load_si512(lacc + 2 * 64 + 16 * 0);
    c21 = _mm512_load_si512(lacc + 2 * 64 + 16 * 1);
    c22 = _mm512_load_si512(lacc + 2 * 64 + 16 * 2);
    c23 = _mm512_load_si512(lacc + 2 * 64 + 16 * 3);
    c30 = _mm512_load_si512(lacc + 3 * 64 + 16 * 0);
    c31 = _mm512_load_si512(lacc + 3 * 64 + 16 * 1);
    c32 = _mm512_load_si512(lacc + 3 * 64 + 16 * 2);
    c33 = _mm512_load_si512(lacc + 3 * 64 + 16 * 3);
    c40 = _mm512_load_si512(lacc + 4 * 64 + 16 * 0);
    c41 = _mm512_load_si512(lacc + 4 * 64 + 16 * 1);
    c42 = _mm512_load_si512(lacc + 4 * 64 + 16 * 2);
    c43 = _mm512_load_si512(lacc + 4 * 64 + 16 * 3);
    int KK = *lk, done = 0;
    for (int g = 0; g < K4; g += 2) {
        const int8_t *b = w + g * 256;
        __m512i a = _mm512_set1_epi32(*(const int32_t *)(Hh + 4 * g));
        __m512i a2 = _mm512_set1_epi32(*(const int32_t *)(Hh + 4 * g + 4));
        e0 = _mm512_dpbusd_epi32(e0, a, _mm512_load_si512(b));
        e1 = _mm512_dpbusd_epi32(e1, a, _mm512_load_si512(b + 64));
        e2 = _mm512_dpbusd_epi32(e2, a, _mm512_load_si512(b + 128));
        e3 = _mm512_dpbusd_epi32(e3, a, _mm512_load_si512(b + 192));
        e0 = _mm512_dpbusd_epi32(e0, a2, _mm512_load_si512(b + 256));
        e1 = _mm512_dpbusd_epi32(e1, a2, _mm512_load_si512(b + 320));
        e2 = _mm512_dpbusd_epi32(e2, a2, _mm512_load_si512(b + 384));
        e3 = _mm512_dpbusd_epi32(e3, a2, _mm512_load_si512(b + 448));
        if (done < nl && KK < K4) {
            const int8_t *lb = lw + KK * 256;
            const __m512i b0 = _mm512_load_si512(lb), b1 = _mm512_load_si512(lb + 64),
                          b2 = _mm512_load_si512(lb + 128), b3 = _mm512_load_si512(lb + 192);
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 0] + 4 * KK));
          c00 = _mm512_dpbusd_epi32(c00, x, b0);
          c01 = _mm512_dpbusd_epi32(c01, x, b1);
          c02 = _mm512_dpbusd_epi32(c02, x, b2);
          c03 = _mm512_dpbusd_epi32(c03, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 1] + 4 * KK));
          c10 = _mm512_dpbusd_epi32(c10, x, b0);
          c11 = _mm512_dpbusd_epi32(c11, x, b1);
          c12 = _mm512_dpbusd_epi32(c12, x, b2);
          c13 = _mm512_dpbusd_epi32(c13, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 2] + 4 * KK));
          c20 = _mm512_dpbusd_epi32(c20, x, b0);
          c21 = _mm512_dpbusd_epi32(c21, x, b1);
          c22 = _mm512_dpbusd_epi32(c22, x, b2);
          c23 = _mm512_dpbusd_epi32(c23, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 3] + 4 * KK));
          c30 = _mm512_dpbusd_epi32(c30, x, b0);
          c31 = _mm512_dpbusd_epi32(c31, x, b1);
          c32 = _mm512_dpbusd_epi32(c32, x, b2);
          c33 = _mm512_dpbusd_epi32(c33, x, b3);
        }
        { __m512i x = _mm512_set1_epi32(*(const int32_t *)(X[row0 + 4] + 4 * KK));
          c40 = _mm512_dpbusd_epi32(c40, x, b0);
          c41 = _mm512_dpbusd_epi32(c41, x, b1);
          c42 = _mm512_dpbusd_epi32(c42, x, b2);
          c43 = _mm512_dpbusd_epi32(c43, x, b3);
        }
            ++KK;
            ++done;
        }
    }
    _mm512_store_si512(out, e0);
    _mm512_store_si512(out + 16, e1);
    _mm512_store_si512(out + 32, e2);
    _mm512_store_si512(out + 48, e3);
    _mm512_store_si512(lacc + 0 * 64 + 16 * 0, c00);
    _mm512_store_si512(lacc + 0 * 64 + 16 * 1, c01);
    _mm512_store_si512(lacc + 0 * 64 + 16 * 2, c02);
    _mm512_store_si512(lacc + 0 * 64 + 16 * 3, c03);
    _mm512_store_si512(lacc + 1 * 64 + 16 * 0, c10);
    _mm512_store_si512(lacc + 1 * 64 + 16 * 1, c11);
    _mm512_store_si512(lacc + 1 * 64 + 16 * 2, c12);
    _mm512_store_si512(lacc + 1 * 64 + 16 * 3, c13);
    _mm512_store_si512(lacc + 2 * 64 + 16 * 0, c20);
    _mm512_store_si512(lacc + 2 * 64 + 16 * 1, c21);
    _mm512_store_si512(lacc + 2 * 64 + 16 * 2, c22);
    _mm512_store_si512(lacc + 2 * 64 + 16 * 3, c23);
    _mm512_store_si512(lacc + 3 * 64 + 16 * 0, c30);
    _mm512_store_si512(lacc + 3 * 64 + 16 * 1, c31);
    _mm512_store_si512(lacc + 3 * 64 + 16 * 2, c32);
    _mm512_store_si512(lacc + 3 * 64 + 16 * 3, c33);
    _mm512_store_si512(lacc + 4 * 64 + 16 * 0, c40);
    _mm512_store_si512(lacc + 4 * 64 + 16 * 1, c41);
    _mm512_store_si512(lacc + 4 * 64 + 16 * 2, c42);
    _mm512_store_si512(lacc + 4 * 64 + 16 * 3, c43);
    *lk = KK;
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
