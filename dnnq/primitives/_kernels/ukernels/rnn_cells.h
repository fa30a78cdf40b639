/* The fused cell epilogues of the int8 RNN driver (rnn_impl.h), one accumulator tile at a time:
 * rows n0 .. n0 + mr - 1, the nc channels of channel block j.  Included once per ISA by
 * rnn_impl.h, so the scalar C is vectorised with that ISA's flags; the AVX-512 build uses
 * intrinsics (rnn_math_avx512.h).
 *
 * The accumulators already hold the whole s32 pre-activation, layer product + recurrent product
 * (the recurrent GEMM accumulates onto the layer products): acc[g] + r * 64 is row r of gate g.
 * A whole tile per call, not a row: the tanh coefficient table is loaded into registers once,
 * and the rows give the out-of-order core independent chains to overlap (the per-vector chain,
 * with its divisions, is long). */

/* where the rows of one tile go: row r of the u8 h at h + r * h_sn, of the optional f32 copy at
 * hf + r * hf_sn (hf NULL = none), the per-row N x H scratch (c, u, r*h) at offset r * H */
typedef struct {
    uint8_t *h; int64_t h_sn;
    float *hf; int64_t hf_sn;
    const uint8_t *hp; int64_t hp_sn;   /* the previous h (GRU, LBR-GRU) */
    int64_t o;                          /* first channel: j * 64 */
    int mr, nc;
} rnn_tile_t;

/* the f32 dst_layer: the dequantized u8 value, as oneDNN */
static inline void rnn_store_f32(const uint8_t *h, float *hf, int nc, float sc, float sh) {
    for (int k = 0; k < nc; ++k) hf[k] = rnn_dequantize_u8(h[k], sc, sh);
}

/* v = f32(acc) / divisor + bias (oneDNN: vcvtdq2ps, vdivps, vaddps) */
static inline void rnn_gate(float *restrict v, const int32_t *restrict l, const float *restrict d,
                            const float *restrict b, int nc) {
    for (int k = 0; k < nc; ++k) v[k] = (float)l[k] / d[k] + b[k];
}

static inline void rnn_tile_f32(const dnnq_rnn_args_t *a, const rnn_tile_t *tl) {
    if (!tl->hf) return;
    for (int r = 0; r < tl->mr; ++r)
        rnn_store_f32(tl->h + r * tl->h_sn, tl->hf + r * tl->hf_sn, tl->nc, a->scale, a->shift);
}

#ifdef __AVX512F__
/* One gate of a whole tile activated: row r of the s32 accumulators (row stride 64) becomes the
 * f32 act(f32(acc) / d + b) at dst + r * dst_rs (dst may be the accumulators themselves).  A
 * loop per gate, then one for the state update, rather than one loop doing every gate of a
 * vector: that chain (three or four divisions, the exp and tanh polynomials, the update, the
 * requantization) is some 190 instructions, about the scheduler's size, and short independent
 * iterations overlap better (7 % off the LSTM epilogue in a micro-benchmark; same operations,
 * same results). */
static inline __attribute__((always_inline)) void
rv_tile_act(const int32_t *acc, float *dst, int64_t dst_rs, const float *d, const float *b, int mr,
            int nc, const rv_tanh_tab_t *tt) {
    for (int r = 0; r < mr; ++r)
        for (int k = 0; k < nc; k += 16) {
            const __mmask16 m = rv_mask(k, nc);
            const __m512 v = rv_gate(acc + r * 64 + k, d + k, b + k, m);
            _mm512_mask_storeu_ps(dst + r * dst_rs + k, m, tt ? rv_tanh(v, tt) : rv_logistic(v));
        }
}

/* LSTM without peepholes: the gates activated in place (rv_tile_act), then the state update */
static inline void rv_epi_lstm(const dnnq_rnn_args_t *a, int32_t *const *acc, const rnn_tile_t *tl,
                               float *c) {
    const int64_t H = a->H, o = tl->o;
    const int nc = tl->nc, mr = tl->mr;
    rv_tanh_tab_t tt;
    rv_tanh_load(&tt);
    /* one call per gate, so that each loop is compiled for its one function */
    const float *d = a->div + o, *b = a->bias + o;
    rv_tile_act(acc[0], (float *)acc[0], 64, d, b, mr, nc, NULL);
    rv_tile_act(acc[1], (float *)acc[1], 64, d + H, b + H, mr, nc, NULL);
    rv_tile_act(acc[2], (float *)acc[2], 64, d + 2 * H, b + 2 * H, mr, nc, &tt);
    rv_tile_act(acc[3], (float *)acc[3], 64, d + 3 * H, b + 3 * H, mr, nc, NULL);
    const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
    for (int r = 0; r < mr; ++r) {
        const float *gi = (const float *)acc[0] + r * 64, *gf = (const float *)acc[1] + r * 64,
                    *gc = (const float *)acc[2] + r * 64, *go = (const float *)acc[3] + r * 64;
        float *cr = c + r * H;
        uint8_t *h = tl->h + r * tl->h_sn;
        for (int k = 0; k < nc; k += 16) {
            const __mmask16 m = rv_mask(k, nc);
            const __m512 cp = _mm512_maskz_loadu_ps(m, cr + k);
            const __m512 cn = _mm512_fmadd_ps(_mm512_loadu_ps(gi + k), _mm512_loadu_ps(gc + k),
                                              _mm512_mul_ps(cp, _mm512_loadu_ps(gf + k)));
            _mm512_mask_storeu_ps(cr + k, m, cn);
            rv_store_u8(h + k, m, _mm512_mul_ps(rv_tanh(cn, &tt), _mm512_loadu_ps(go + k)), vsc,
                        vsh);
        }
    }
}
#endif

/* LSTM (gates i, f, c~, o): c = f*c_prev + i*c~ (as oneDNN: c_prev*f, then a fused i*c~ +),
 * h = o * tanh(c).  c: the cell state of row n0, channel o. */
static void RNN_FN(rnn_epi_lstm)(const dnnq_rnn_args_t *a, int32_t *const *acc,
                                 const rnn_tile_t *tl, float *c) {
    const int64_t H = a->H, o = tl->o;
    const int nc = tl->nc;
    const float *b0 = a->bias + o, *b1 = b0 + H, *b2 = b1 + H, *b3 = b2 + H;
    const float *d0 = a->div + o, *d1 = d0 + H, *d2 = d1 + H, *d3 = d2 + H;
    /* peepholes (as oneDNN's jit cell): i, f += c_prev * p (fused), o += c * p (fused) */
    const float *pp = a->peep ? a->peep + o : NULL;
#ifdef __AVX512F__
    if (!pp) {
        rv_epi_lstm(a, acc, tl, c);
        rnn_tile_f32(a, tl);
        return;
    }
    {
        rv_tanh_tab_t tt;
        rv_tanh_load(&tt);
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        for (int r = 0; r < tl->mr; ++r) {
            const int32_t *l0 = acc[0] + r * 64, *l1 = acc[1] + r * 64, *l2 = acc[2] + r * 64,
                          *l3 = acc[3] + r * 64;
            float *cr = c + r * H;
            uint8_t *h = tl->h + r * tl->h_sn;
            for (int k = 0; k < nc; k += 16) {
                const __mmask16 m = rv_mask(k, nc);
                const __m512 cp = _mm512_maskz_loadu_ps(m, cr + k);
                __m512 pi = rv_gate(l0 + k, d0 + k, b0 + k, m);
                __m512 pf = rv_gate(l1 + k, d1 + k, b1 + k, m);
                __m512 po = rv_gate(l3 + k, d3 + k, b3 + k, m);
                pi = _mm512_fmadd_ps(cp, _mm512_maskz_loadu_ps(m, pp + k), pi);
                pf = _mm512_fmadd_ps(cp, _mm512_maskz_loadu_ps(m, pp + H + k), pf);
                const __m512 gi = rv_logistic(pi), gf = rv_logistic(pf);
                const __m512 gc = rv_tanh(rv_gate(l2 + k, d2 + k, b2 + k, m), &tt);
                const __m512 cn = _mm512_fmadd_ps(gi, gc, _mm512_mul_ps(cp, gf));
                po = _mm512_fmadd_ps(cn, _mm512_maskz_loadu_ps(m, pp + 2 * H + k), po);
                const __m512 go = rv_logistic(po);
                _mm512_mask_storeu_ps(cr + k, m, cn);
                rv_store_u8(h + k, m, _mm512_mul_ps(rv_tanh(cn, &tt), go), vsc, vsh);
            }
        }
        rnn_tile_f32(a, tl);
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    for (int r = 0; r < tl->mr; ++r) {
        float gi[64], gf[64], gc[64], go[64];
        float *cr = c + r * H;
        uint8_t *h = tl->h + r * tl->h_sn;
        /* dequantize + bias of each gate, then the non-linearities: short loops over local
         * arrays are what gcc vectorises (one long loop with 14 streams is not) */
        rnn_gate(gi, acc[0] + r * 64, d0, b0, nc);
        rnn_gate(gf, acc[1] + r * 64, d1, b1, nc);
        rnn_gate(gc, acc[2] + r * 64, d2, b2, nc);
        rnn_gate(go, acc[3] + r * 64, d3, b3, nc);
        if (pp) {
            for (int k = 0; k < nc; ++k) {
                const float cp = cr[k];
                const float i = rnn_logistic(fmaf(cp, pp[k], gi[k]));
                const float f = rnn_logistic(fmaf(cp, pp[H + k], gf[k]));
                const float cn = fmaf(i, rnn_tanh(gc[k]), cp * f);
                cr[k] = cn;
                const float og = rnn_logistic(fmaf(cn, pp[2 * H + k], go[k]));
                h[k] = rnn_quantize_u8(rnn_tanh(cn) * og, sc, sh);
            }
            continue;
        }
        for (int k = 0; k < nc; ++k) {
            gi[k] = rnn_logistic(gi[k]);
            gf[k] = rnn_logistic(gf[k]);
            gc[k] = rnn_tanh(gc[k]);
            go[k] = rnn_logistic(go[k]);
        }
        for (int k = 0; k < nc; ++k) {
            const float cn = fmaf(gi[k], gc[k], cr[k] * gf[k]);
            cr[k] = cn;
            h[k] = rnn_quantize_u8(rnn_tanh(cn) * go[k], sc, sh);
        }
    }
    rnn_tile_f32(a, tl);
}

/* vanilla RNN: h = act(W x + U h + b) */
static void RNN_FN(rnn_epi_vanilla)(const dnnq_rnn_args_t *a, int32_t *const *acc,
                                    const rnn_tile_t *tl) {
    const float *b0 = a->bias + tl->o, *d0 = a->div + tl->o;
    const float sc = a->scale, sh = a->shift;
    const int nc = tl->nc;
    for (int r = 0; r < tl->mr; ++r) {
        float v[64];
        uint8_t *h = tl->h + r * tl->h_sn;
        rnn_gate(v, acc[0] + r * 64, d0, b0, nc);
        if (a->act == DNNQ_RNN_ACT_TANH)
            for (int k = 0; k < nc; ++k) v[k] = rnn_tanh(v[k]);
        else if (a->act == DNNQ_RNN_ACT_LOGISTIC)
            for (int k = 0; k < nc; ++k) v[k] = rnn_logistic(v[k]);
        else
            for (int k = 0; k < nc; ++k) v[k] = v[k] > 0.0f ? v[k] : v[k] * 0.0f;
        for (int k = 0; k < nc; ++k) h[k] = rnn_quantize_u8(v[k], sc, sh);
    }
    rnn_tile_f32(a, tl);
}

/* GRU phase 1 (gates u, r): u kept in f32, r * h_prev requantized to u8 for the o gate GEMM.
 * u, rh: row n0, channel o of the N x H scratch. */
static void RNN_FN(rnn_epi_gru1)(const dnnq_rnn_args_t *a, int32_t *const *acc,
                                 const rnn_tile_t *tl, float *u, uint8_t *rh) {
    const int64_t H = a->H, o = tl->o;
    const int nc = tl->nc;
    const float *b0 = a->bias + o, *b1 = b0 + H;
    const float *d0 = a->div + o, *d1 = d0 + H;
#ifdef __AVX512F__
    {   /* u to its scratch, r in place (rv_tile_act), then r * h_prev requantized */
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        rv_tile_act(acc[0], u, H, d0, b0, tl->mr, nc, NULL);
        rv_tile_act(acc[1], (float *)acc[1], 64, d1, b1, tl->mr, nc, NULL);
        for (int r = 0; r < tl->mr; ++r) {
            const float *gr = (const float *)acc[1] + r * 64;
            const uint8_t *hp = tl->hp + r * tl->hp_sn;
            uint8_t *rhr = rh + r * H;
            for (int k = 0; k < nc; k += 16) {
                const __mmask16 m = rv_mask(k, nc);
                rv_store_u8(rhr + k, m, _mm512_mul_ps(_mm512_loadu_ps(gr + k),
                                                      rv_load_u8(hp + k, m, vsc, vsh)), vsc, vsh);
            }
        }
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    for (int r = 0; r < tl->mr; ++r) {
        float gu[64], gr[64];
        const uint8_t *hp = tl->hp + r * tl->hp_sn;
        float *ur = u + r * H;
        uint8_t *rhr = rh + r * H;
        rnn_gate(gu, acc[0] + r * 64, d0, b0, nc);
        rnn_gate(gr, acc[1] + r * 64, d1, b1, nc);
        for (int k = 0; k < nc; ++k) {
            ur[k] = rnn_logistic(gu[k]);
            gr[k] = rnn_logistic(gr[k]);
        }
        for (int k = 0; k < nc; ++k)
            rhr[k] = rnn_quantize_u8(gr[k] * rnn_dequantize_u8(hp[k], sc, sh), sc, sh);
    }
}

/* GRU phase 2: o = tanh(W_o x + U_o (r*h) + b_o), h = u*h_prev + (1-u)*o (u*h_prev, then a
 * fused (1-u)*o +, as oneDNN).  acc2: the accumulators of gate o. */
static void RNN_FN(rnn_epi_gru2)(const dnnq_rnn_args_t *a, int32_t *acc2,
                                 const rnn_tile_t *tl, const float *u) {
    const int64_t H = a->H, o = tl->o;
    const int nc = tl->nc;
    const float *b2 = a->bias + 2 * H + o, *d2 = a->div + 2 * H + o;
#ifdef __AVX512F__
    {   /* o in place (rv_tile_act), then the update */
        rv_tanh_tab_t tt;
        rv_tanh_load(&tt);
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        const __m512 one = _mm512_set1_ps(1.0f);
        rv_tile_act(acc2, (float *)acc2, 64, d2, b2, tl->mr, nc, &tt);
        for (int r = 0; r < tl->mr; ++r) {
            const float *gor = (const float *)acc2 + r * 64;
            const uint8_t *hp = tl->hp + r * tl->hp_sn;
            const float *ur = u + r * H;
            uint8_t *h = tl->h + r * tl->h_sn;
            for (int k = 0; k < nc; k += 16) {
                const __mmask16 m = rv_mask(k, nc);
                const __m512 go = _mm512_loadu_ps(gor + k);
                const __m512 gu = _mm512_maskz_loadu_ps(m, ur + k);
                const __m512 hprev = rv_load_u8(hp + k, m, vsc, vsh);
                const __m512 hn = _mm512_fmadd_ps(_mm512_sub_ps(one, gu), go,
                                                  _mm512_mul_ps(gu, hprev));
                rv_store_u8(h + k, m, hn, vsc, vsh);
            }
        }
        rnn_tile_f32(a, tl);
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    for (int r = 0; r < tl->mr; ++r) {
        const int32_t *l2 = acc2 + r * 64;
        const uint8_t *hp = tl->hp + r * tl->hp_sn;
        const float *ur = u + r * H;
        uint8_t *h = tl->h + r * tl->h_sn;
        for (int k = 0; k < nc; ++k) {
            const float go = rnn_tanh((float)l2[k] / d2[k] + b2[k]);
            const float hprev = rnn_dequantize_u8(hp[k], sc, sh);
            const float hn = fmaf(1.0f - ur[k], go, ur[k] * hprev);
            h[k] = rnn_quantize_u8(hn, sc, sh);
        }
    }
    rnn_tile_f32(a, tl);
}

/* LBR-GRU: u, r as GRU; o = tanh((W_o x + b_o) + r * (U_o h + b_extra)), each product
 * dequantized on its own (bias rows 2 and 3 carry their own shift compensation).  acc[2] holds
 * the layer product of gate o only, uo the recurrent one. */
static void RNN_FN(rnn_epi_lbr)(const dnnq_rnn_args_t *a, int32_t *const *acc, const int32_t *uo,
                                const rnn_tile_t *tl) {
    const int64_t H = a->H, o = tl->o;
    const int nc = tl->nc;
    const float *b0 = a->bias + o, *b1 = b0 + H, *b2 = b1 + H, *b3 = b2 + H;
    const float *d0 = a->div + o, *d1 = d0 + H, *d2 = d1 + H;
    const float sc = a->scale, sh = a->shift;
    for (int r = 0; r < tl->mr; ++r) {
        const int32_t *l0 = acc[0] + r * 64, *l1 = acc[1] + r * 64, *l2 = acc[2] + r * 64;
        const int32_t *t2 = uo + r * 64;
        const uint8_t *hp = tl->hp + r * tl->hp_sn;
        uint8_t *h = tl->h + r * tl->h_sn;
        for (int k = 0; k < nc; ++k) {
            const float gu = rnn_logistic((float)l0[k] / d0[k] + b0[k]);
            const float gr = rnn_logistic((float)l1[k] / d1[k] + b1[k]);
            const float wx = (float)l2[k] / d2[k] + b2[k];
            const float uh = (float)t2[k] / d2[k] + b3[k];
            const float go = rnn_tanh(wx + gr * uh);
            const float hprev = rnn_dequantize_u8(hp[k], sc, sh);
            const float hn = fmaf(1.0f - gu, go, gu * hprev);
            h[k] = rnn_quantize_u8(hn, sc, sh);
        }
    }
    rnn_tile_f32(a, tl);
}

/* LSTMP: the projected h of one row, channels [o, o + nc): oneDNN 3.2's u8 projection
 * post-GEMM (ref_postgemm_lstm_projection.cpp), (f32(acc) - comp * shift) / f32(pscale *
 * scale), requantized */
static void RNN_FN(rnn_epi_proj)(const dnnq_rnn_args_t *a, const int32_t *acc, int64_t o, int nc,
                                 uint8_t *h, float *hf) {
    const float sc = a->scale, sh = a->shift;
    const float *pc = a->pcomp + o, *pd = a->pdiv + o;
    for (int k = 0; k < nc; ++k) h[k] = rnn_quantize_u8(((float)acc[k] - pc[k]) / pd[k], sc, sh);
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}
