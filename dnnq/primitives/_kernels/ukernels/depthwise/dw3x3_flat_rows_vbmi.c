/* The flat kernel's row families (dw3x3_flat.h): the rows mode and the stacked rows, for
 * stride-2 planes whose runs across a row end would need wider windows. */
#include "dw3x3_flat.h"

/* the rows mode's accumulators of one row (vectors from base / idx); REUSE: kernel row 0's
 * taps are t2, the previous row's kernel row 2 taps (stride 2 along h: the same source row,
 * the same columns); t2 is set to this row's */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_rows_acc(const int CHECK, const int SGN, const int NV, const int REUSE, const dwf_env_t *x,
             const dwf_ch_t *h, const uint8_t *plane, const int64_t *base, int64_t ld,
             const __m512i *idx, __m512i t2[4], __m512i acc[4]) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) acc[k] = SGN ? h->init : _mm512_setzero_si512();
#pragma GCC unroll 3
    for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            __m512i tt;
            if (REUSE && kh == 0) {
                tt = t2[k];
            } else {
                tt = _mm512_permutex2var_epi8(dwf_load(CHECK, 64, x, plane + base[k] + kh * ld),
                                              idx[3 * k + kh], h->zraw);
                if (SGN) tt = _mm512_xor_si512(tt, x->flip);
            }
            if (kh == 2) t2[k] = tt;
            acc[k] = _mm512_dpbusd_epi32(acc[k], tt, h->wr[kh]);
        }
    }
}

/* rows mode (stride 2 along h, 2-D rows of at most 64 output columns whose 16-pixel runs
 * across a row end span more than 96 bytes): a group is one output row, NV = ceil(ow / 16)
 * vectors from its first pixel (16 pixels within a row at stride 2 read 33 bytes: one
 * 64-byte window per kernel row), the lanes past the row dead, and a row's kernel row 0
 * reuses the previous row's kernel row 2 taps (two windows and permutes per row, not three).
 * The group's 64-byte store runs into the next row, whose own store comes later and
 * rewrites it.  Rows q0 / ow .. + nr - 1 of the item (vectors NV r .. of the table) of
 * channels i0 .. i1 - 1. */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_rows(const int CHECK, const int SGN, const int MODE, const int NV,
         const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
         const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, OW = c->ow;
    /* (an item of one block: a spill into the next plane lands before that plane's own
     * stores) */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->oh <= DWF_NB / NV;
    const int64_t qlast = q0 + (int64_t)(nr - 1) * OW;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + qlast + 64 <= c->nc * c->dst_plane;
        __m512i acc[4], nxt[4], t2[4];
        /* row r + 1's accumulators before row r's epilogue and store (nr >= 1) */
        dwf_rows_acc(CHECK, SGN, NV, 0, x, &h, plane, t->base, ld, t->idx, t2, acc);
        for (int r = 0; r + 1 < nr; ++r) {
            const int64_t q = q0 + r * OW;
            dwf_rows_acc(CHECK, SGN, NV, 1, x, &h, plane, t->base + NV * (r + 1), ld,
                         t->idx + 3 * NV * (r + 1), t2, nxt);
            dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                    q + 64 <= c->mend || spill_ok);
#pragma GCC unroll 4
            for (int k = 0; k < NV; ++k) acc[k] = nxt[k];
        }
        dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), dplane + qlast, c->mend - qlast,
                qlast + 64 <= c->mend || spill_ok);
    }
}

/* stacked rows (stride 2 along h, rows of 12 - 16 or 24 - 32 output columns that would take
 * 96-byte windows): a group is four vectors, four output rows of NVR = 1 vector or two of
 * NVR = 2, each vector from its row's first pixel + 16 j (the lanes past the row dead),
 * each row's kernel row 0 the previous row's kernel row 2 taps (two windows and permutes
 * per vector); the store's byte permute (x->cix) undoes the packs' order and squeezes the
 * dead lanes out, 4 / NVR ow bytes, and the 64-byte store runs into the next group's rows,
 * whose own store comes later.  Rows q0 / ow .. + nr - 1 of the item (vector NVR r + j of
 * the table) of channels i0 .. i1 - 1. */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_stack(const int CHECK, const int SGN, const int MODE, const int NVR,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, OW = c->ow;
    const int RPG = 4 / NVR; /* rows a group */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->oh * NVR <= DWF_NB;
    const int ng = (nr + RPG - 1) / RPG;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + q0 + (int64_t)(ng - 1) * RPG * OW + 64 <=
                                          c->nc * c->dst_plane;
        /* kernel row 2's taps of the last row, read by the next row: set by row 0 before
         * any row reads them, through the row arithmetic below, which the compiler does not
         * follow; zeroed once per channel so that no path reads an unset register */
        __m512i t2[4];
#pragma GCC unroll 2
        for (int k = 0; k < NVR; ++k) t2[k] = _mm512_setzero_si512();
        for (int g = 0; g < ng; ++g) {
            __m512i acc[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k += NVR) {
                const int r = RPG * g + k / NVR;
                if (r >= nr) { /* past the item's rows: garbage the store leaves out */
#pragma GCC unroll 2
                    for (int jv = 0; jv < NVR; ++jv) acc[k + jv] = _mm512_setzero_si512();
                } else if (r == 0) {
                    dwf_rows_acc(CHECK, SGN, NVR, 0, x, &h, plane, t->base, ld, t->idx, t2,
                                 acc + k);
                } else {
                    dwf_rows_acc(CHECK, SGN, NVR, 1, x, &h, plane, t->base + NVR * r, ld,
                                 t->idx + 3 * NVR * r, t2, acc + k);
                }
            }
            const int64_t qg = q0 + (int64_t)g * RPG * OW;
            dwf_put(_mm512_permutexvar_epi8(x->cix, dwf_pack(4, MODE, c->epi, x, &h, acc)),
                    dplane + qg, c->mend - qg, qg + 64 <= c->mend || spill_ok);
        }
    }
}

#define DWF_MODES(NVR, CHECK, SGN) \
    (mode == DW9_HOT ? dwf_stack(CHECK, SGN, DW9_HOT, NVR, c, x, comp, t, q0, nr, i0, i1) \
                     : dwf_stack(CHECK, SGN, DW9_GENERIC, NVR, c, x, comp, t, q0, nr, i0, i1))
#define DWF_STACK_FN(NVR, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_stack_##NVR##_##CHECK( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) { \
        if (c->src_signed) DWF_MODES(NVR, CHECK, 1); \
        else DWF_MODES(NVR, CHECK, 0); \
    }
DWF_STACK_FN(1, 0)
DWF_STACK_FN(1, 1)
DWF_STACK_FN(2, 0)
DWF_STACK_FN(2, 1)
#undef DWF_STACK_FN
#undef DWF_MODES

#define DWF_MODES(NV, CHECK, SGN) \
    (mode == DW9_HOT ? dwf_rows(CHECK, SGN, DW9_HOT, NV, c, x, comp, t, q0, nr, i0, i1) \
                     : dwf_rows(CHECK, SGN, DW9_GENERIC, NV, c, x, comp, t, q0, nr, i0, i1))
#define DWF_ROWS_FN(NV, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_rows_##NV##_##CHECK( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) { \
        if (c->src_signed) DWF_MODES(NV, CHECK, 1); \
        else DWF_MODES(NV, CHECK, 0); \
    }
DWF_ROWS_FN(1, 0)
DWF_ROWS_FN(1, 1)
DWF_ROWS_FN(2, 0)
DWF_ROWS_FN(2, 1)
DWF_ROWS_FN(3, 0)
DWF_ROWS_FN(3, 1)
DWF_ROWS_FN(4, 0)
DWF_ROWS_FN(4, 1)
void dnnq_dwf_rows_any(int nv, int check, int mode, const dnnq_dw_plain_t *c,
                         const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t,
                         int64_t q0, int nr, int i0, int i1) {
    typedef void (*fn_t)(int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int64_t, int, int, int);
    static const fn_t fns[4][2] = {{dwf_rows_1_0, dwf_rows_1_1}, {dwf_rows_2_0, dwf_rows_2_1},
                                   {dwf_rows_3_0, dwf_rows_3_1}, {dwf_rows_4_0, dwf_rows_4_1}};
    fns[nv - 1][check ? 1 : 0](mode, c, x, comp, t, q0, nr, i0, i1);
}
#undef DWF_ROWS_FN
#undef DWF_MODES


void dnnq_dwf_stack_any(int nvr, int check, int mode, const dnnq_dw_plain_t *c,
                        const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t,
                        int64_t q0, int nr, int i0, int i1) {
    (nvr == 1 ? (check ? dwf_stack_1_1 : dwf_stack_1_0)
              : (check ? dwf_stack_2_1 : dwf_stack_2_0))(mode, c, x, comp, t, q0, nr, i0, i1);
}
