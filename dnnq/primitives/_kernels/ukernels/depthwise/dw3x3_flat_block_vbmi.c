/* The flat kernel's block family (dw3x3_flat.h): blocks of up to DWF_NB vectors per channel,
 * one function per window kind and check. */
#include "dw3x3_flat.h"

/* the block's nv vectors (pixels q0 ..) of every channel: groups of four, then the rest as
 * one group; a group's 64-byte store runs past its pixels only at the item's end, where it
 * lands in the next channels' planes when they are the item's and come later (an item of
 * whole planes in one block), else in a staging buffer */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_block(const int WIN, const int CHECK, const int SGN, const int MODE,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int64_t q0, int nv, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw;
    const int64_t end = q0 + 16 * nv; /* > mend only for the item's last block */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->mend - c->m0 <= 16 * DWF_NB;
    const int rest = nv % 4, ng = nv / 4;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + (int64_t)(nv + 3) / 4 * 64 <=
                                          c->nc * c->dst_plane;
        if (ng) {
            /* group g + 1's accumulators before group g's epilogue and store */
            __m512i acc[4], nxt[4];
            dwf_group(WIN, CHECK, SGN, 4, x, &h, plane, t, 0, ld, acc);
            for (int g = 0; g + 1 < ng; ++g) {
                const int64_t q = q0 + 64 * g;
                dwf_group(WIN, CHECK, SGN, 4, x, &h, plane, t, g + 1, ld, nxt);
                dwf_put(dwf_finish(4, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                        q + 64 <= c->mend || spill_ok);
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) acc[k] = nxt[k];
            }
            const int64_t q = q0 + 64 * (ng - 1);
            dwf_put(dwf_finish(4, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                    q + 64 <= c->mend || spill_ok);
        }
        if (rest) {
            const int64_t q = q0 + 64 * ng;
            __m512i acc[4], v;
            if (rest == 1) dwf_group(WIN, CHECK, SGN, 1, x, &h, plane, t, ng, ld, acc);
            else if (rest == 2) dwf_group(WIN, CHECK, SGN, 2, x, &h, plane, t, ng, ld, acc);
            else dwf_group(WIN, CHECK, SGN, 3, x, &h, plane, t, ng, ld, acc);
            if (rest == 1) v = dwf_finish(1, MODE, c->epi, x, &h, acc);
            else if (rest == 2) v = dwf_finish(2, MODE, c->epi, x, &h, acc);
            else v = dwf_finish(3, MODE, c->epi, x, &h, acc);
            dwf_put(v, dplane + q, (end < c->mend ? end : c->mend) - q,
                    spill_ok || q + 64 <= c->mend);
        }
    }
}

#define DWF_CASE(WIN, CHECK, SGN, MODE) \
    dwf_block(WIN, CHECK, SGN, MODE, c, x, comp, t, q0, nv, i0, i1)
#define DWF_MODES(WIN, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(WIN, CHECK, SGN, DW9_HOT) : DWF_CASE(WIN, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(WIN, CHECK) (sgn ? DWF_MODES(WIN, CHECK, 1) : DWF_MODES(WIN, CHECK, 0))
/* one function per window kind and check (one holding every variant ran the hot loops 2x
 * slower) */
#define DWF_BLOCK_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void NAME( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nv, int i0, int i1) { \
        const int sgn = c->src_signed; \
        DWF_SIGNS(WIN, CHECK); \
    }
DWF_BLOCK_FN(dwf_block_win1, DWF_WIN1, 0)
DWF_BLOCK_FN(dwf_block_win1_checked, DWF_WIN1, 1)
DWF_BLOCK_FN(dwf_block_wr32, DWF_WR32, 0)
DWF_BLOCK_FN(dwf_block_wr32_checked, DWF_WR32, 1)
DWF_BLOCK_FN(dwf_block_wr64, DWF_WR64, 0)
DWF_BLOCK_FN(dwf_block_wr64_checked, DWF_WR64, 1)
DWF_BLOCK_FN(dwf_block_wr96, DWF_WR96, 0)
DWF_BLOCK_FN(dwf_block_wr96_checked, DWF_WR96, 1)
DWF_BLOCK_FN(dwf_block_wr96z, DWF_WR96Z, 0)
DWF_BLOCK_FN(dwf_block_wr96z_checked, DWF_WR96Z, 1)
DWF_BLOCK_FN(dwf_block_win2, DWF_WIN2, 0)
DWF_BLOCK_FN(dwf_block_win2_checked, DWF_WIN2, 1)
void dnnq_dwf_block_any(int win, int check, int mode, const dnnq_dw_plain_t *c,
                          const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int64_t q0,
                          int nv, int i0, int i1) {
    typedef void (*fn_t)(int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int64_t, int, int, int);
    static const fn_t fns[6][2] = {{dwf_block_win1, dwf_block_win1_checked},  /* win - 1 */
                                   {dwf_block_wr64, dwf_block_wr64_checked},
                                   {dwf_block_wr96, dwf_block_wr96_checked},
                                   {dwf_block_wr32, dwf_block_wr32_checked},
                                   {dwf_block_wr96z, dwf_block_wr96z_checked},
                                   {dwf_block_win2, dwf_block_win2_checked}};
    fns[win - 1][check ? 1 : 0](mode, c, x, comp, t, q0, nv, i0, i1);
}
#undef DWF_BLOCK_FN
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS
