/* The tiled implicit-GEMM convolution path: the output pixels of an image are cut once, at
 * plan creation, into micro-tiles whose pixels all read the same set of kernel taps inside the
 * source, a fixed source distance apart (a run along w, or a column along h at a border), so
 *   - a tap in the padding of a whole tile is skipped when it would add nothing (the source
 *     zero point, after the u8 XOR, is 0: a u8 source with zero point 0, the common case),
 *     or else read from the zero-point row with a row stride of 0 (and, for a zero point the
 *     source type cannot hold, corrected by its `padcorr` column sums, once per tile);
 *   - every A operand is dense (row r at a + r * lda): no row-pointer table.
 * With 3x3 padding 1 on a 7x7 output (ResNet-50's last stage) 18 % of the taps are padding,
 * 9 % at 14x14: the raster tiles of the general driver multiply them all.
 *
 * Work items: (image, group, 64-column panel, chunk of consecutive tiles), the chunks cut at
 * creation so that they hold equal work (pixels x taps read). */
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

static int cmp_tile(const void *a, const void *b) {
    const int64_t x = ((const dnnq_conv_tile_t *)a)->m, y = ((const dnnq_conv_tile_t *)b)->m;
    return (x > y) - (x < y);
}

/* Tiles of one rectangle of output pixels (od; oh in [h0, h1); ow in [w0, w1)) sharing a tap
 * set, cut the way that makes the fewest tiles: runs along w, columns along h (a border
 * column), or -- for a rectangle of whole output rows -- raster runs that cross rows (their
 * pixels are not a fixed source distance apart: mstep 0, row pointers built per tile; e.g. a
 * 1x1 stride-2 layer on a 7x7 output: 9 tiles of 5 - 6 pixels rather than 14 of 3 - 4).
 * Each run is split evenly into tiles of at most mr pixels.  Returns the count; writes them
 * when `out` is given. */
/* how rect_tiles cuts a rectangle of output pixels into tiles */
enum { TILES_RASTER, TILES_ALONG_W, TILES_ALONG_H };

static int64_t rect_tiles(const dnnq_conv_t *cv, int64_t od, int64_t h0, int64_t h1, int64_t w0,
                          int64_t w1, const int32_t *k0, const int32_t *k1, int mr,
                          dnnq_conv_tile_t *out) {
    const int64_t H = h1 - h0, W = w1 - w0;
    const int64_t per_row = (W + mr - 1) / mr, per_col = (H + mr - 1) / mr;
    const int64_t raster = (H * W + mr - 1) / mr;
    /* along w, along h or raster; fold_kw: not along h (the epilogue of a border column
     * costs a call per pixel, and its gathered rows about as much as its taps) */
    int kind = H * per_row <= W * per_col || cv->fold_kw ? TILES_ALONG_W : TILES_ALONG_H;
    if (w0 == 0 && w1 == cv->ow && H > 1 && k0[2] >= 0 && /* not a mixed run */
        raster < (kind == TILES_ALONG_W ? H * per_row : W * per_col))
        kind = TILES_RASTER;
    const int64_t runs = kind == TILES_RASTER ? 1 : kind == TILES_ALONG_W ? H : W;
    const int64_t len = kind == TILES_RASTER ? H * W : kind == TILES_ALONG_W ? W : H;
    const int64_t nt = kind == TILES_RASTER ? raster : kind == TILES_ALONG_W ? per_row : per_col;
    if (!out) return runs * nt;
    int64_t n = 0;
    for (int64_t i = 0; i < runs; ++i) {
        for (int64_t t = 0; t < nt; ++t, ++n) {
            const int64_t a = len * t / nt, b = len * (t + 1) / nt;
            const int64_t oh = kind == TILES_RASTER ? h0 + a / W
                               : kind == TILES_ALONG_W ? h0 + i : h0 + a;
            const int64_t ow = kind == TILES_RASTER ? w0 + a % W
                               : kind == TILES_ALONG_W ? w0 + a : w0 + i;
            dnnq_conv_tile_t *q = out + n;
            q->m = (od * cv->oh + oh) * cv->ow + ow;
            q->o[0] = (int32_t)od, q->o[1] = (int32_t)oh, q->o[2] = (int32_t)ow;
            q->src = (((od * cv->sd - cv->pd) * cv->ih + oh * cv->sh - cv->ph) * cv->iw +
                      ow * cv->sw - cv->pw) * cv->IC;
            q->lda = kind == TILES_ALONG_H ? cv->sh * cv->iw * cv->IC : cv->sw * cv->IC;
            q->mr = (int32_t)(b - a);
            q->mstep = kind == TILES_RASTER ? 0 : kind == TILES_ALONG_W ? 1 : (int32_t)cv->ow;
            /* a raster tile inside one output row is a run: dense A, its pairs reused by the
             * next such tile (no row pointers to build: 2 % of a 1x1 stride-2 layer) */
            if (kind == TILES_RASTER && a % W + (b - a) <= W) q->mstep = 1;
            q->mixed = 0;
            for (int j = 0; j < 3; ++j) {
                q->k0[j] = k0[j];
                q->k1[j] = k1[j];
            }
        }
    }
    return n;
}

/* All tiles of one image (out == NULL: count them). */
static int64_t image_tiles(const dnnq_conv_t *cv, int mr, dnnq_conv_tile_t *out) {
    int64_t n = 0;
    for (int64_t od = 0; od < cv->od; ++od) {
        int32_t k0[3], k1[3];
        tap_range(od, cv->kd, cv->sd, cv->dd, cv->pd, cv->id, &k0[0], &k1[0]);
        for (int64_t h0 = 0, h1; h0 < cv->oh; h0 = h1) {
            tap_range(h0, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, &k0[1], &k1[1]);
            for (h1 = h0 + 1; h1 < cv->oh; ++h1) {
                int32_t a, b;
                tap_range(h1, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, &a, &b);
                if (a != k0[1] || b != k1[1]) break;
            }
            for (int64_t w0 = 0, w1; w0 < cv->ow; w0 = w1) {
                tap_range(w0, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &k0[2], &k1[2]);
                /* fold_kw: the pixels whose kernel rows are not all inside form one run of
                 * mixed ranges (k0[2] = -1): each pixel's rows are gathered anyway */
                const int mixed = cv->fold_kw && (k0[2] != 0 || k1[2] != cv->kw);
                for (w1 = w0 + 1; w1 < cv->ow; ++w1) {
                    int32_t a, b;
                    tap_range(w1, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &a, &b);
                    if (mixed ? a == 0 && b == cv->kw : a != k0[2] || b != k1[2]) break;
                }
                if (mixed) k0[2] = -1;
                n += rect_tiles(cv, od, h0, h1, w0, w1, k0, k1, mr, out ? out + n : NULL);
            }
        }
    }
    return n;
}

/* Merge each one-pixel tile (a corner of a padded output: its few taps streamed the weights
 * for one row) into a run or column it extends, when that has room: the merged tile reads
 * the union of their taps, the pixel's taps outside from the zero-point row (row pointers).
 * Returns the new count (merged tiles removed). */
static int64_t merge_single_pixels(const dnnq_conv_t *cv, int mr, dnnq_conv_tile_t *tiles,
                                   int64_t nt) {
    if (cv->fold_kw) return nt;
    int64_t singles = 0;
    for (int64_t i = 0; i < nt; ++i) singles += tiles[i].mr == 1;
    if ((double)singles * (double)nt > 1e7) return nt; /* the search is quadratic */
    for (int64_t i = 0; i < nt && singles; ++i) {
        dnnq_conv_tile_t *a = tiles + i;
        if (a->mr != 1) continue;
        for (int64_t j = 0; j < nt; ++j) {
            dnnq_conv_tile_t *b = tiles + j;
            if (j == i || b->mr < 2 || b->mr >= mr || b->mixed || b->o[0] != a->o[0]) continue;
            int d; /* the direction of b: 2 along w (a run), 1 along h (a column) */
            if (b->mstep == 1) d = 2;
            else if (b->mstep == cv->ow && cv->ow > 1) d = 1;
            else continue;
            if (b->o[3 - d] != a->o[3 - d]) continue;
            const int pre = a->o[d] == b->o[d] - 1, post = a->o[d] == b->o[d] + b->mr;
            if (!pre && !post) continue;
            if (pre) {
                b->m = a->m;
                b->src = a->src;
                b->o[d] = a->o[d];
            }
            b->mr += 1;
            for (int k = 0; k < 3; ++k) {
                b->k0[k] = a->k0[k] < b->k0[k] ? a->k0[k] : b->k0[k];
                b->k1[k] = a->k1[k] > b->k1[k] ? a->k1[k] : b->k1[k];
            }
            b->mixed = 1;
            a->mr = 0; /* removed below */
            break;
        }
    }
    int64_t n = 0;
    for (int64_t i = 0; i < nt; ++i)
        if (tiles[i].mr) tiles[n++] = tiles[i];
    return n;
}

int dnnq_conv_build_tiles(dnnq_conv_t *cv) {
    cv->tiles = NULL;
    cv->chunks = NULL;
    cv->n_chunks = 0;
    cv->brgemm_epi = dnnq_brgemm_epi_for_isa(cv->isa);
    cv->brgemm_n32 = dnnq_brgemm_ukr_n32_for_isa(cv->isa);
    cv->brgemm_n16 = dnnq_brgemm_ukr_n16_for_isa(cv->isa);
    if (cv->amx) { /* AMX tiles: no fused-epilogue kernel at this level */
        cv->brgemm = dnnq_brgemm_amx_for(DNNQ_NR);
        cv->brgemm_n32 = dnnq_brgemm_amx_for(32);
        cv->brgemm_n16 = dnnq_brgemm_amx_for(16);
        cv->brgemm_epi = NULL;
        if (!cv->brgemm) return -1;
    }
    cv->epi_prepare = dnnq_epi_prepare_for_isa(cv->isa);
    cv->epi_tile_prepare = dnnq_epi_tile_prepare_for_isa(cv->isa);
    cv->epi_tile = dnnq_epi_tile_for_isa(cv->isa);
    if (!cv->epi_tile_prepare || !cv->epi_tile) cv->epi_tile_prepare = NULL, cv->epi_tile = NULL;
    if (dnnq_conv_build_coords(cv) != 0) return -1;
    /* only for the kernels that run them (the implementation list chose the tiles within
     * the planner's sizes: dnnq.primitives._impls.CONV; dnnq_conv_check_kernel sees the tiles) */
    if (cv->kernel != DNNQ_CONV_K_TILES && cv->kernel != DNNQ_CONV_K_F32_TILES) return 0;
    if (cv->deconv || cv->depthwise) return 0;
    if (cv->od * cv->oh > DNNQ_CONV_TILES_MAX_ROWS || cv->ow > DNNQ_CONV_TILES_MAX_OW) return 0;
    const int mr = dnnq_conv_call_rows(cv);
    int64_t nt = image_tiles(cv, mr, NULL);
    dnnq_conv_tile_t *tiles = (dnnq_conv_tile_t *)malloc(sizeof(dnnq_conv_tile_t) * (size_t)nt);
    if (!tiles) return -1;
    image_tiles(cv, mr, tiles);
    nt = merge_single_pixels(cv, mr, tiles, nt);
    qsort(tiles, (size_t)nt, sizeof(dnnq_conv_tile_t), cmp_tile);
    /* chunks of equal work: pixels x (taps read + a per-tile setup of about two taps) */
    double total = 0;
    for (int64_t t = 0; t < nt; ++t) {
        const dnnq_conv_tile_t *q = tiles + t;
        total += (double)q->mr * ((q->k1[0] - q->k0[0]) * (q->k1[1] - q->k0[1]) *
                                  (q->k1[2] - q->k0[2]) + 2);
    }
    const int64_t osp = cv->od * cv->oh * cv->ow;
    int64_t nc = (osp + cv->mc - 1) / cv->mc;
    if (nc > nt) nc = nt;
    if (nc < 1) nc = 1;
    int64_t *chunks = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nc + 1));
    if (!chunks) {
        free(tiles);
        return -1;
    }
    chunks[0] = 0;
    double acc = 0;
    int64_t c = 1;
    for (int64_t t = 0; t < nt && c < nc; ++t) {
        const dnnq_conv_tile_t *q = tiles + t;
        acc += (double)q->mr * ((q->k1[0] - q->k0[0]) * (q->k1[1] - q->k0[1]) *
                                (q->k1[2] - q->k0[2]) + 2);
        if (acc >= total * (double)c / (double)nc && t + 1 < nt) chunks[c++] = t + 1;
    }
    nc = c;
    chunks[nc] = nt;
    cv->tiles = tiles;
    cv->chunks = chunks;
    cv->n_chunks = nc;
    return 0;
}

void dnnq_conv_free_tiles(dnnq_conv_t *cv) {
    free(cv->tiles);
    free(cv->chunks);
    free((void *)cv->coords);
    free((void *)cv->flat_table);
    cv->coords = NULL;
    cv->flat_table = NULL;
    cv->tiles = NULL;
    cv->chunks = NULL;
    cv->n_chunks = 0;
}

/* does a tap in the padding add nothing (zero-point bytes 0 after the XOR, no correction)? */
static int padding_adds_nothing(const dnnq_conv_t *cv, const uint8_t *zrow) {
    if (cv->padcorr) return 0;
    const uint64_t x8 = (uint64_t)(cv->a_xor & 0xFF) * 0x0101010101010101ull;
    int64_t i = 0;
    for (; i + 8 <= cv->kpair; i += 8) {
        uint64_t v;
        memcpy(&v, zrow + i, 8);
        if (v != x8) return 0;
    }
    for (; i < cv->kpair; ++i)
        if (zrow[i] != (uint8_t)x8) return 0;
    return 1;
}

/* fold_kw: kernel row (kd, kh) of a pixel at a border along w (at s), its KW * IC bytes
 * with the zero-point bytes for the taps outside [kw0, kw1), zeros up to kb */
static void gather_row(const dnnq_conv_t *cv, const uint8_t *s, const uint8_t *zrow, int kw0,
                       int kw1, int64_t kb, uint8_t *out) {
    const int64_t IC = cv->IC, w0 = kw0 * IC, w1 = kw1 * IC, rowb = cv->kw * IC;
    memcpy(out, zrow, (size_t)w0);
    memcpy(out + w0, s + w0, (size_t)(w1 - w0));
    memcpy(out + w1, zrow + w1, (size_t)(rowb - w1));
    memset(out + rowb, 0, (size_t)(kb - rowb));
}

int dnnq_conv_run_item_tiles(const dnnq_conv_t *cv, int64_t item) {
    const int64_t inner = cv->rows_outer ? cv->n_panels : cv->n_chunks;
    const int64_t c = cv->rows_outer ? (item / inner) % cv->n_chunks : item % inner;
    const int64_t p = cv->rows_outer ? item % inner : (item / inner) % cv->n_panels;
    int64_t rest = item / (cv->n_chunks * cv->n_panels);
    const int64_t g = rest % cv->G;
    const int64_t n = rest / cv->G;
    const int nc = (int)(cv->OCg - p * DNNQ_NR < DNNQ_NR ? cv->OCg - p * DNNQ_NR : DNNQ_NR);
    /* a panel of at most 32 columns: the half-width micro-kernel where there is one */
    const dnnq_brgemm_ukr_fn brg = dnnq_conv_brgemm_for(cv, nc);
    const int64_t ntaps = cv->kd * cv->kh * cv->kw;
    const int fold = cv->fold_kw;                /* pairs are kernel rows of KW taps */
    const int64_t ntw = fold ? 1 : cv->kw, nth = cv->kh;
    const int64_t kb = cv->K4 * 4;               /* bytes of a pair's packed K */

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);
    /* the pairs, the row pointers of raster tiles (mr per pair) and, for fold_kw, the gathered
     * kernel rows of a border pixel (kb bytes per pair) */
    const int64_t np_max = cv->npairs;
    const int64_t rcap = dnnq_conv_call_rows(cv); /* the most pixels of a tile */
    dnnq_br_pair_t *pairs = (dnnq_br_pair_t *)malloc(
        (sizeof(dnnq_br_pair_t) + sizeof(uint8_t *) * (size_t)rcap) * (size_t)np_max +
        (fold ? (size_t)(np_max * rcap * kb) : 0));
    if (!pairs) return -1;
    const uint8_t **rows = (const uint8_t **)(pairs + np_max);
    uint8_t *grows = (uint8_t *)(rows + np_max * rcap);
    int64_t off[DNNQ_CONV_MR_MAX]; /* each pixel's source offset (raster and gathered tiles) */

    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * cv->IC + g * cv->ICg;
    const uint8_t *src_end = cv->src + cv->N * cv->id * cv->ih * cv->iw * cv->IC;
    const uint8_t *zrow = cv->zp_rows + g * cv->kpair;
    int skip = -1; /* padding_adds_nothing, found at the first padded tap */
    const int64_t bstep = kb * DNNQ_NR;
    const int8_t *bpanel = cv->packed + (g * cv->n_panels + p) * np_max * bstep;
    const int32_t *pc = cv->padcorr ? cv->padcorr + g * ntaps * cv->OCg + p * DNNQ_NR : NULL;

    /* the micro-kernel with the epilogue fused, where it applies (the hot 8-bit epilogue, no
     * padcorr): no s32 tile, the epilogue prepared once per item */
    dnnq_epi_state_t fst;
    const int fuse = pc ? 0 : dnnq_conv_fuse_kind(cv, &ge, p, &fst);
    /* else the separate epilogue's constants prepared once per item too, where it can be */
    const int prepared = !fuse && cv->epi_tile && cv->epi_tile_prepare(&ge, 0, p, &fst);
#define TILE_EPILOGUE(m_, mr_, t_)                                                             \
    (prepared ? cv->epi_tile(&ge, &fst, (m_), (mr_), (t_))                                     \
              : cv->epilogue(&ge, 0, (m_), (mr_), p, (t_)))
    int32_t tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    int32_t col[DNNQ_CONV_MR_MAX * DNNQ_NR] __attribute__((aligned(64)));
    int64_t tm = 0; /* first pixel of the pending tile (consecutive pixels) */
    int trows = 0;
    const dnnq_conv_tile_t *prev = NULL; /* the tile whose pairs are in `pairs` */
    int64_t np = 0;
    for (int64_t t = cv->chunks[c]; t < cv->chunks[c + 1]; ++t) {
        const dnnq_conv_tile_t *q = cv->tiles + t;
        const int mr = q->mr;
        int32_t *acc = NULL;
        if (q->mstep == 0 || q->mixed || (fold && !(q->k0[2] == 0 && q->k1[2] == cv->kw)))
            tile_offsets(cv, q, off);
        if (fuse) {
            /* decided below, once the pairs are known */
        } else if (q->mstep <= 1) {
            if (trows && (q->m != tm + trows || trows + mr > DNNQ_CONV_TILE_ROWS)) {
                TILE_EPILOGUE(tm, trows, tile);
                trows = 0;
            }
            if (!trows) tm = q->m;
            acc = tile + trows * DNNQ_NR;
        } else {
            acc = col;
        }
        /* fold_kw: are all KW taps of a kernel row inside the source?  (else each pixel's
         * range of taps inside, along w) */
        const int full_w = !fold || (q->k0[2] == 0 && q->k1[2] == cv->kw);
        /* each pixel's taps inside the source (d, h, w), where they may differ */
        int32_t pk0[DNNQ_CONV_MR_MAX][3], pk1[DNNQ_CONV_MR_MAX][3];
        for (int r = 0; r < mr && (!full_w || pc || q->mixed); ++r) {
            for (int k = 0; k < 3; ++k) pk0[r][k] = q->k0[k], pk1[r][k] = q->k1[k];
            if (q->k0[2] < 0) /* fold: a run of mixed ranges (mstep 1) */
                tap_range(q->o[2] + r, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &pk0[r][2],
                          &pk1[r][2]);
            if (q->mixed) { /* a run (along w) or a column (along h) */
                const int64_t oh = q->o[1] + (q->mstep == 1 ? 0 : r);
                const int64_t ow = q->o[2] + (q->mstep == 1 ? r : 0);
                tap_range(q->o[0], cv->kd, cv->sd, cv->dd, cv->pd, cv->id, &pk0[r][0], &pk1[r][0]);
                tap_range(oh, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, &pk0[r][1], &pk1[r][1]);
                tap_range(ow, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &pk0[r][2], &pk1[r][2]);
            }
        }
        /* the next run tile of a rectangle: the previous pairs moved by the source distance */
        const int reuse = prev && prev->mstep == 1 && q->mstep == 1 && full_w &&
                          !prev->mixed && !q->mixed &&
                          !memcmp(prev->k0, q->k0, sizeof q->k0) &&
                          !memcmp(prev->k1, q->k1, sizeof q->k1);
        if (reuse) {
            const int64_t d = q->src - prev->src;
            for (int64_t i = 0; i < np; ++i) {
                dnnq_br_pair_t *pr = pairs + i;
                if (!pr->lda) continue; /* the zero-point row */
                pr->a += d;
                pr->K = (cv->kpair & 3) && pr->a + (mr - 1) * pr->lda + kb <= src_end ? kb
                                                                                     : cv->kpair;
            }
        }
        prev = q;
        if (!reuse) np = 0;
        for (int64_t kd = 0; kd < cv->kd && !reuse; ++kd) {
            const int in_d = kd >= q->k0[0] && kd < q->k1[0];
            for (int64_t kh = 0; kh < nth; ++kh) {
                const int in_h = in_d && kh >= q->k0[1] && kh < q->k1[1];
                for (int64_t kw = 0; kw < ntw; ++kw) {
                    const int64_t ti = (kd * nth + kh) * ntw + kw; /* the pair */
                    const int in = in_h && (fold ? q->k0[2] < 0 || q->k1[2] > q->k0[2]
                                                 : kw >= q->k0[2] && kw < q->k1[2]);
                    if (!in && skip < 0) skip = padding_adds_nothing(cv, zrow);
                    if (!in && skip) continue;
                    dnnq_br_pair_t *pr = pairs + np++;
                    pr->rows = NULL;
                    pr->b = bpanel + ti * bstep;
                    pr->K = cv->kpair;
                    if (!in) { /* every pixel of the tile reads the zero-point row */
                        pr->a = zrow;
                        pr->lda = 0;
                        continue;
                    }
                    const int64_t delta =
                        ((kd * cv->dd * cv->ih + kh * cv->dh) * cv->iw + kw * cv->dw) * cv->IC;
                    if (!full_w) { /* pixels at a border along w: kernel rows gathered */
                        uint8_t *gr = grows + (np - 1) * rcap * kb;
                        for (int r = 0; r < mr; ++r)
                            gather_row(cv, img + off[r] + delta, zrow, pk0[r][2], pk1[r][2],
                                       kb, gr + r * kb);
                        pr->a = gr;
                        pr->lda = kb;
                        pr->K = kb;
                        continue;
                    }
                    if (q->mixed) { /* a row pointer per pixel, the zero-point row outside */
                        const uint8_t **rp = rows + (np - 1) * rcap;
                        for (int r = 0; r < mr; ++r)
                            rp[r] = kd >= pk0[r][0] && kd < pk1[r][0] && kh >= pk0[r][1] &&
                                            kh < pk1[r][1] && kw >= pk0[r][2] && kw < pk1[r][2]
                                        ? img + off[r] + delta : zrow;
                        pr->a = NULL;
                        pr->lda = 0;
                        pr->rows = rp;
                        continue;
                    }
                    if (q->mstep == 0) { /* raster: a row pointer per pixel, K as it is */
                        const uint8_t **rp = rows + (np - 1) * rcap;
                        for (int r = 0; r < mr; ++r) {
                            /* one scalar load per pixel: gcc vectorises this loop into 16-byte
                             * loads of the 8-byte stores just made (a store-forwarding stall:
                             * a third of the driver's time on a 1x1 stride-2 layer) */
                            int64_t o = off[r];
                            __asm__("" : "+r"(o));
                            rp[r] = img + o + delta;
                        }
                        pr->a = NULL;
                        pr->lda = 0;
                        pr->rows = rp;
                        continue;
                    }
                    pr->a = img + q->src + delta;
                    pr->lda = q->lda;
                    /* K rounded up to a multiple of 4 where that stays inside the source: the
                     * extra bytes meet the zero padding of the packed weights, and the
                     * micro-kernel needs no K % 4 tail pass */
                    if ((cv->kpair & 3) && pr->a + (mr - 1) * q->lda + kb <= src_end) pr->K = kb;
                }
            }
        }
        if (fuse) {
            int k4 = np > 0;
            for (int64_t i = 0; i < np && k4; ++i) k4 = !(pairs[i].K & 3);
            if (k4) {
                cv->brgemm_epi(mr, np, pairs, &fst, fuse, q->m, q->mstep ? q->mstep : 1);
                continue;
            }
            acc = col; /* K % 4 tails or no pair: the plain kernel, its own epilogue below */
        }
        if (np) brg(mr, np, pairs, cv->a_xor, 0, acc);
        else memset(acc, 0, sizeof(int32_t) * DNNQ_NR * (size_t)mr);
        if (pc) { /* zero points the source type cannot hold (padded taps never skipped then):
                   * per tap read from the zero-point bytes */
            for (int64_t ti = 0; ti < ntaps; ++ti) {
                const int64_t kw = ti % cv->kw, kh = (ti / cv->kw) % nth, kd = ti / cv->kw / nth;
                const int32_t *cc = pc + ti * cv->OCg;
                for (int r = 0; r < mr; ++r) {
                    if (kd >= pk0[r][0] && kd < pk1[r][0] && kh >= pk0[r][1] && kh < pk1[r][1] &&
                        kw >= pk0[r][2] && kw < pk1[r][2])
                        continue;
                    for (int j = 0; j < nc; ++j)
                        acc[r * DNNQ_NR + j] =
                            (int32_t)((uint32_t)acc[r * DNNQ_NR + j] + (uint32_t)cc[j]);
                }
            }
        }
        if (q->mstep <= 1 && !fuse) {
            trows += mr;
        } else if (q->mstep <= 1) { /* fuse's fallback: the run's rows in one call */
            TILE_EPILOGUE(q->m, mr, col);
        } else { /* a column at a border: one epilogue call per pixel */
            for (int r = 0; r < mr; ++r)
                TILE_EPILOGUE(q->m + r * q->mstep, 1, col + r * DNNQ_NR);
        }
    }
    if (trows) TILE_EPILOGUE(tm, trows, tile);
    if (cv->amx) dnnq_amx_release(); /* the tile state ends with the item, on its thread */
    free(pairs);
    return 0;
#undef TILE_EPILOGUE
}
