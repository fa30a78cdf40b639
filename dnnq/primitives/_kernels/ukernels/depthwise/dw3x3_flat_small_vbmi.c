/* The flat kernel's small-plane family (dw3x3_flat.h): items of at most four vectors per
 * channel, one function per window kind, check and vector count. */
#include "dw3x3_flat.h"

/* an item of NV <= 4 vectors per channel (planes of at most 64 pixels): their index vectors
 * in registers (copied to locals: through the byte stores the table would be reloaded per
 * channel), and channel i + 1's accumulators computed before channel i's epilogue */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_small(const int WIN, const int CHECK, const int SGN, const int MODE, const int NV,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int i0, int i1) {
    __m512i ix[12];
    int64_t base[4];
#pragma GCC unroll 12
    for (int k = 0; k < 3 * NV; ++k) ix[k] = t->idx[k];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) base[k] = t->base[k];
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, q0 = c->m0;
    const int whole = c->m0 == 0 && c->mend == c->dst_plane;
    __m512i acc[4], nxt[4]; /* (i0 < i1: dwf_run leaves out empty runs) */
    dwf_ch_t h, hn;
    dwf_channel(c, comp, i0, &h);
    dwf_acc(WIN, CHECK, SGN, 0, NV, x, &h, c->src + i0 * c->src_plane + off, base, ld, ix, acc);
    for (int i = i0; i + 1 < i1; ++i) {
        dwf_channel(c, comp, i + 1, &hn);
        dwf_acc(WIN, CHECK, SGN, 0, NV, x, &hn, c->src + (i + 1) * c->src_plane + off, base, ld,
                ix, nxt);
        dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), c->dst + i * c->dst_plane + q0,
                c->mend - q0,
                q0 + 64 <= c->mend || (whole && i * c->dst_plane + 64 <= c->nc * c->dst_plane));
        h = hn;
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) acc[k] = nxt[k];
    }
    const int i = i1 - 1;
    dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), c->dst + i * c->dst_plane + q0,
            c->mend - q0,
            q0 + 64 <= c->mend || (whole && i * c->dst_plane + 64 <= c->nc * c->dst_plane));
}

/* the small-plane kernel: one function per window kind, check and vector count */
#define DWF_CASE(WIN, NV, CHECK, SGN, MODE) \
    dwf_small(WIN, CHECK, SGN, MODE, NV, c, x, comp, t, i0, i1)
#define DWF_MODES(WIN, NV, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(WIN, NV, CHECK, SGN, DW9_HOT) \
                     : DWF_CASE(WIN, NV, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(WIN, NV, CHECK) (sgn ? DWF_MODES(WIN, NV, CHECK, 1) : DWF_MODES(WIN, NV, CHECK, 0))
#define DWF_SMALL_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void NAME( \
        int nv, int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int i0, int i1) { \
        const int sgn = c->src_signed; \
        if (nv == 1) DWF_SIGNS(WIN, 1, CHECK); \
        else if (nv == 2) DWF_SIGNS(WIN, 2, CHECK); \
        else if (nv == 3) DWF_SIGNS(WIN, 3, CHECK); \
        else dwf_small4_##NAME(mode, c, x, comp, t, i0, i1); \
    }
/* (four vectors, the common case, in a function of its own: next to the others, its loop
 * ran 1.1 - 1.2x slower) */
#define DWF_SMALL4_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_small4_##NAME( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int i0, int i1) { \
        const int sgn = c->src_signed; \
        DWF_SIGNS(WIN, 4, CHECK); \
    }
DWF_SMALL4_FN(dwf_small_win1, DWF_WIN1, 0)
DWF_SMALL4_FN(dwf_small_win1_checked, DWF_WIN1, 1)
DWF_SMALL4_FN(dwf_small_wr32, DWF_WR32, 0)
DWF_SMALL4_FN(dwf_small_wr32_checked, DWF_WR32, 1)
DWF_SMALL4_FN(dwf_small_wr64, DWF_WR64, 0)
DWF_SMALL4_FN(dwf_small_wr64_checked, DWF_WR64, 1)
DWF_SMALL4_FN(dwf_small_wr96, DWF_WR96, 0)
DWF_SMALL4_FN(dwf_small_wr96_checked, DWF_WR96, 1)
DWF_SMALL4_FN(dwf_small_wr96z, DWF_WR96Z, 0)
DWF_SMALL4_FN(dwf_small_wr96z_checked, DWF_WR96Z, 1)
DWF_SMALL4_FN(dwf_small_win2, DWF_WIN2, 0)
DWF_SMALL4_FN(dwf_small_win2_checked, DWF_WIN2, 1)
DWF_SMALL_FN(dwf_small_win1, DWF_WIN1, 0)
DWF_SMALL_FN(dwf_small_win1_checked, DWF_WIN1, 1)
DWF_SMALL_FN(dwf_small_wr32, DWF_WR32, 0)
DWF_SMALL_FN(dwf_small_wr32_checked, DWF_WR32, 1)
DWF_SMALL_FN(dwf_small_wr64, DWF_WR64, 0)
DWF_SMALL_FN(dwf_small_wr64_checked, DWF_WR64, 1)
DWF_SMALL_FN(dwf_small_wr96, DWF_WR96, 0)
DWF_SMALL_FN(dwf_small_wr96_checked, DWF_WR96, 1)
DWF_SMALL_FN(dwf_small_wr96z, DWF_WR96Z, 0)
DWF_SMALL_FN(dwf_small_wr96z_checked, DWF_WR96Z, 1)
DWF_SMALL_FN(dwf_small_win2, DWF_WIN2, 0)
DWF_SMALL_FN(dwf_small_win2_checked, DWF_WIN2, 1)
void dnnq_dwf_small_any(int win, int nv, int check, int mode, const dnnq_dw_plain_t *c,
                          const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int i0,
                          int i1) {
    typedef void (*fn_t)(int, int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int, int);
    static const fn_t fns[6][2] = {{dwf_small_win1, dwf_small_win1_checked},  /* win - 1 */
                                   {dwf_small_wr64, dwf_small_wr64_checked},
                                   {dwf_small_wr96, dwf_small_wr96_checked},
                                   {dwf_small_wr32, dwf_small_wr32_checked},
                                   {dwf_small_wr96z, dwf_small_wr96z_checked},
                                   {dwf_small_win2, dwf_small_win2_checked}};
    fns[win - 1][check ? 1 : 0](nv, mode, c, x, comp, t, i0, i1);
}
#undef DWF_SMALL_FN
#undef DWF_SMALL4_FN
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS

