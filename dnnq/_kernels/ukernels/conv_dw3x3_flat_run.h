/* The flat kernel's driver (included by conv_dw3x3_flat.h after its kernels): the layout of
 * an item (window kind, rows mode, stacked rows), its index vectors per block of vectors
 * (built per item, or once at creation for items of whole planes: dnnq_dw3x3_flat_table_avx512)
 * and the run over blocks and channels (dwf_run). */

/* how an item goes: its window kind (before dwf_run's zero-point choice of WR96Z), and the
 * rows mode / stacked rows */
typedef struct {
    int win, rows, stack, nvr; /* nvr: rows mode, vectors per output row */
    int64_t span, nv, step;    /* nv vectors in blocks of step */
} dwf_layout_t;

static void dwf_layout(const dnnq_dw3x3_plain_t *c, dwf_layout_t *l) {
    const int64_t wspan = dwf_span(c);
    l->win = dwf_win(c, wspan);
    /* the three kernel rows' 96-byte windows within 127 bytes: one 128-byte window (stride
     * 1's 32-byte windows stay: with it MobileNet's 28 columns ran 1.1x slower) */
    if (l->win == DWF_WR96 && 2 * c->iw + wspan <= 127) l->win = DWF_WIN2;
    /* rows mode where runs across row ends need more than 96 bytes (with 96-byte windows,
     * MobileNet's 14 columns ran 1.25x faster than in rows mode, one vector a row; its 28
     * columns as fast) */
    const int whole_rows = c->sh == 2 && 15 * c->sw + 3 <= 64 && c->m0 % c->ow == 0 &&
                           c->mend % c->ow == 0;
    /* stacked rows for 12 - 16 and 24 - 32 columns (three quarters of the lanes or more
     * live) that would take 96-byte windows (MobileNet's 28 -> 14: 15.5 -> 13.5 us, 56 ->
     * 28: 27.1 -> 24.8 us) */
    l->stack = l->win == DWF_WR96 && whole_rows &&
               ((c->ow >= 12 && c->ow <= 16) || (c->ow >= 24 && c->ow <= 32));
    l->rows = l->stack || (l->win == 0 && whole_rows && c->ow <= 64);
    l->span = l->rows || l->win == DWF_WR64 ? 2 * c->iw + 64
              : l->win == DWF_WIN1 ? 64 : l->win == DWF_WIN2 ? 128
              : 2 * c->iw + (l->win == DWF_WR32 ? 32 : 96);
    l->nvr = (int)((c->ow + 15) / 16);
    l->nv = l->rows ? (c->mend - c->m0) / c->ow * l->nvr : (c->mend - c->m0 + 15) / 16;
    l->step = l->rows ? DWF_NB / l->nvr * l->nvr : DWF_NB;
}

/* the first pixel of block v0's vectors */
static int64_t dwf_block_q0(const dnnq_dw3x3_plain_t *c, const dwf_layout_t *l, int64_t v0) {
    return l->rows ? c->m0 + v0 / l->nvr * c->ow : c->m0 + 16 * v0;
}

/* the index vectors of the nb vectors of the block at q0 (win: the item's window kind) */
static DWF_TARGET void dwf_build_block(const dnnq_dw3x3_plain_t *c, const dwf_layout_t *l,
                                       int win, int64_t q0, int nb, dwf_table_t *t) {
    for (int v = 0; v < nb; ++v) {
        if (l->rows) {
            const int64_t rs = q0 + v / l->nvr * c->ow; /* the row's first pixel */
            dwf_build(DWF_WR64, c, rs + 16 * (v % l->nvr), rs + c->ow, t, v);
        } else if (win == DWF_WIN1) dwf_build(DWF_WIN1, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR32) dwf_build(DWF_WR32, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR64) dwf_build(DWF_WR64, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WIN2) dwf_build(DWF_WIN2, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR96) dwf_build(DWF_WR96, c, q0 + 16 * v, c->mend, t, v);
        else dwf_build(DWF_WR96Z, c, q0 + 16 * v, c->mend, t, v);
    }
}

/* stacked rows: the store's byte permute (byte j: row j / ow, column j % ow, lane 16 row +
 * column, in the packs' dword order DWP_TR) */
static __m512i dwf_stack_cix(const dnnq_dw3x3_plain_t *c, int nvr) {
    int8_t ix[64];
    for (int j = 0; j < 64; ++j) {
        const int p = j < 4 / nvr * c->ow ? (int)(j / c->ow * 16 * nvr + j % c->ow) : 0;
        ix[j] = (int8_t)(((p >> 2) % 4 * 4 + (p >> 2) / 4) * 4 + (p & 3));
    }
    return _mm512_loadu_si512((const void *)ix);
}

/* the index vectors of items of whole planes, built at creation: every block's, and the
 * stacked rows' byte permute (per item they took 7 - 11 % of MobileNet's 14 x 14 planes) */
enum { DWF_CACHE_BLOCKS = 16 }; /* at most (~100 KB) */
typedef struct {
    __m512i cix;
    int64_t nblocks;
    dwf_table_t t[]; /* per block */
} dwf_cache_t;

void *dnnq_dw3x3_flat_table_avx512(const dnnq_dw3x3_plain_t *c) {
    if (c->m0 != 0 || c->mend != c->dst_plane) return NULL;
    dwf_layout_t l;
    dwf_layout(c, &l);
    if (!l.win && !l.rows) return NULL;
    const int64_t nblocks = (l.nv + l.step - 1) / l.step;
    if (nblocks > DWF_CACHE_BLOCKS) return NULL; /* (large planes: built per item) */
    dwf_cache_t *k = (dwf_cache_t *)aligned_alloc(
        64, sizeof(dwf_cache_t) + sizeof(dwf_table_t) * (size_t)nblocks);
    if (!k) return NULL; /* (built per item) */
    k->nblocks = nblocks;
    k->cix = l.stack ? dwf_stack_cix(c, l.nvr) : _mm512_setzero_si512();
    /* (WR96 and WR96Z tables are the same: their zero points sit at byte 96) */
    for (int64_t b = 0; b < nblocks; ++b) {
        const int64_t v0 = b * l.step;
        dwf_build_block(c, &l, l.win, dwf_block_q0(c, &l, v0),
                        (int)(l.nv - v0 < l.step ? l.nv - v0 : l.step), &k->t[b]);
    }
    return k;
}

/* the item (pixels m0 .. mend - 1 of the panel's nc channels) in blocks of DWF_NB vectors;
 * -1: the geometry has no window kind (the caller checked it has) */
static DWF_TARGET int dwf_run(int mode, const dnnq_dw3x3_plain_t *c, const int8_t *comp) {
    dwf_table_t t __attribute__((aligned(64)));
    dwf_env_t env;
    env.lo = c->src_lo;
    env.hi = c->src_hi;
    env.flip = _mm512_set1_epi8(c->src_signed ? (char)0x80 : 0);
    env.tr = DWP_TR;
    env.inv = _mm512_set1_ps(c->epi->inv_dst_scale);
    const dwf_env_t *const x = &env;
    dwf_layout_t l;
    dwf_layout(c, &l);
    const int rows = l.rows, stack = l.stack, nvr = l.nvr;
    int win = l.win;
    if (win == DWF_WR96) { /* every zero point 0: no zero points to insert */
        int z = 1;
        for (int i = 0; i < c->nc; ++i) z &= c->zpix[i] == 0;
        if (z) win = DWF_WR96Z;
    }
    if (!win && !rows) return -1;
    const int64_t off = -c->ph * c->iw - c->pw, span = l.span, nv = l.nv, step = l.step;
    const dwf_cache_t *cache =
        c->flat_table && c->m0 == 0 && c->mend == c->dst_plane ? c->flat_table : NULL;
    if (stack) env.cix = cache ? cache->cix : dwf_stack_cix(c, nvr);
    for (int64_t v0 = 0; v0 < nv; v0 += step) {
        const int nb = (int)(nv - v0 < step ? nv - v0 : step);
        const int64_t q0 = dwf_block_q0(c, &l, v0);
        const dwf_table_t *tp = cache ? &cache->t[v0 / step] : &t;
        if (!cache) dwf_build_block(c, &l, win, q0, nb, &t);
        /* channels whose loads may pass the source array's ends (the first and last few of
         * the array: planes smaller than the padding reach several) take the checked loads,
         * every other one the plain ones (checked everywhere, the blocks were 5x slower) */
        int a = 0, b = c->nc;
        while (a < c->nc && c->src + a * c->src_plane + off + tp->base[0] < x->lo) ++a;
        while (b > a && c->src + (b - 1) * c->src_plane + off + tp->base[nb - 1] + span > x->hi)
            --b;
        const int run[3][3] = {{0, a, 1}, {a, b, 0}, {b, c->nc, 1}};
        for (int r = 0; r < 3; ++r) {
            if (run[r][0] >= run[r][1]) continue;
            if (stack)
                (nvr == 1 ? (run[r][2] ? dwf_stack_1_1 : dwf_stack_1_0)
                          : (run[r][2] ? dwf_stack_2_1 : dwf_stack_2_0))(
                    mode, c, x, comp, tp, q0, nb / nvr, run[r][0], run[r][1]);
            else if (rows)
                dwf_rows_any(nvr, run[r][2], mode, c, x, comp, tp, q0, nb / nvr, run[r][0],
                             run[r][1]);
            else if (nv <= 4)
                dwf_small_any(win, nb, run[r][2], mode, c, x, comp, tp, run[r][0], run[r][1]);
            else
                dwf_block_any(win, run[r][2], mode, c, x, comp, tp, q0, nb, run[r][0], run[r][1]);
        }
    }
    return 0;
}
