/* The deconvolution's column-phase driver (a kernel of conv_kernels.c's table):
 * see run_item_deconv_phases below and docs/convolution.md, "Deconvolution in the general
 * driver".  ISA-independent: the micro-kernels through the pointers in dnnq_conv_t. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

/* A deconvolution's output pixels by column phase.  A tap that reaches no source pixel is left
 * out: with a u8 source and zero point 0 the zero-point row it would read is zero bytes and
 * adds exactly nothing; otherwise its product with that row is added
 * back through the piece's compensation (zc, below).  Along an output row, the pixels ow with the same phase
 * (ow + pw) % sw are reached by the same kernel columns kw (kw dw = ow + pw mod sw), and for
 * each such tap their source columns x = (ow + pw - kw dw) / sw are consecutive: a run of them
 * is a dense batch-reduce GEMM, one pair per reaching tap (the output row's kernel rows times
 * the phase's kernel columns), its rows written sw pixels apart (the fused micro-kernel's row
 * step, or the tile epilogue with the dst, bias and binary-input row strides multiplied by
 * sw).  Near the row's ends a tap's source column leaves the source: the run is cut where the
 * set of taps inside changes, each piece with its own pairs.  No pointer tables, grouping or
 * row copies (the driver this replaced spent more on those than the micro-kernel on its work).
 * A weights zero point's source sums are staged per run (strided_epilogue_args).  With
 * kernel = stride (U-Net's k2 s2) every pixel has exactly one tap. */

/* The taps a piece leaves out would each have read the zero-point row.  When that row does
 * not read as zero bytes (an s8 source, XOR-ed to u8; a non-zero zero point) they add its
 * product with their weights, zc_t[n], which the compensation col_comp cancels (col_comp
 * takes every tap's): a piece then finishes with col_comp + sum of zc_t over the taps it
 * leaves out, exactly the general driver's sum (wrapping s32).  zc: [g][panel][tap][64],
 * computed per execution by the micro-kernel itself on the zero-point row (the zero point
 * is a runtime argument), at most DNNQ_ZC_TAPS taps. */

int dnnq_conv_prepare_run(dnnq_conv_t *cv) {
    cv->deconv_zc = NULL;
    cv->ks_packed = NULL;
    cv->ks_comp = NULL;
    if (cv->kernel == DNNQ_CONV_K_DECONV_KS) return dnnq_conv_prepare_deconv_ks(cv);
    if (cv->kernel == DNNQ_CONV_K_F32_DECONV_KS) return dnnq_conv_prepare_f32_deconv_ks(cv);
    if (cv->kernel != DNNQ_CONV_K_DECONV_PHASES || !cv->zp_rows || !cv->packed) return 0;
    int need = cv->a_xor != DNNQ_A_U8;
    for (int64_t i = 0; i < cv->G * cv->kpair && !need; ++i) need = cv->zp_rows[i] != 0;
    if (!need) return 0;
    if (cv->npairs > DNNQ_ZC_TAPS) return -2; /* the kernel choice excludes it (_impls.CONV) */
    const int64_t bstep = cv->K4 * 4 * DNNQ_NR, n = cv->G * cv->n_panels * cv->npairs;
    int32_t *zc = (int32_t *)malloc(sizeof(int32_t) * DNNQ_NR * (size_t)n);
    if (!zc) return -1;
    for (int64_t i = 0; i < n; ++i) { /* i = (g * n_panels + p) * npairs + t */
        const int64_t g = i / (cv->n_panels * cv->npairs);
        dnnq_br_pair_t q;
        q.a = cv->zp_rows + g * cv->kpair;
        q.lda = 0;
        q.rows = NULL;
        q.b = cv->packed + i * bstep;
        q.K = cv->kpair;
        cv->brgemm(1, 1, &q, cv->a_xor, 0, zc + i * DNNQ_NR);
    }
    cv->deconv_zc = zc;
    return 0;
}

void dnnq_conv_finish_run(dnnq_conv_t *cv) {
    dnnq_conv_finish_deconv_ks(cv);
    free((void *)cv->deconv_zc);
    cv->deconv_zc = NULL;
}

/* the epilogue arguments of `rows` pixels m, m + step, ...: the per-pixel pointers moved to
 * pixel m, their row strides multiplied by step (row r of the tile -> pixel m + r step); the
 * source sums of a weights zero point, which have no row stride, staged into rs[rows] */
static void strided_epilogue_args(const dnnq_gemm_args_t *ge, const dnnq_postop_t *post,
                                  int64_t m, int64_t step, int rows, int32_t *rs,
                                  dnnq_gemm_args_t *gs, dnnq_postop_t *ps) {
    *gs = *ge;
    if (ge->wzp) {
        for (int r = 0; r < rows; ++r) rs[r] = ge->rowsum[m + r * step];
        gs->rowsum = rs;
        gs->r_sb = 0;
    }
    const int esz = ge->dst_dt == DNNQ_DT_S8 || ge->dst_dt == DNNQ_DT_U8 ? 1 : 4;
    gs->dst = (char *)ge->dst + m * ge->d_sm * esz;
    gs->d_sm = ge->d_sm * step;
    if (ge->bias) {
        gs->bias = ge->bias + m * ge->bias_sm;
        gs->bias_sm = ge->bias_sm * step;
    }
    for (int i = 0; i < ge->n_post; ++i) {
        ps[i] = post[i];
        if (ps[i].src1) {
            ps[i].src1 += m * post[i].s1_m;
            ps[i].s1_m *= step;
        }
        if (ps[i].src2) {
            ps[i].src2 += m * post[i].s2_m;
            ps[i].s2_m *= step;
        }
    }
    gs->post = ps;
}

typedef struct {
    const dnnq_conv_t *cv;
    dnnq_brgemm_ukr_fn brg; /* cv->brgemm, or its half-width variant for a narrow panel */
    const dnnq_postop_t *post;
    int mr_max;
    int64_t p;
    const uint8_t *src_end;
    int32_t *tile;
} phase_ctx_t;

/* how a piece is finished: the epilogue arguments (with the piece's compensation when the
 * left-out taps add something), the fused micro-kernel's state and kind (0: not fused) */
typedef struct {
    uint64_t key[2];             /* the piece's taps (bit t: tap t), for the cache below */
    dnnq_gemm_args_t ge;
    dnnq_epi_state_t st;
    int fuse;
    int32_t comp[DNNQ_NR] __attribute__((aligned(64)));
} phase_epi_t;

/* pixels m, m + s, ... (cnt of them): the sum of the np pairs (a: each pair's source at the
 * first pixel; consecutive pixels one source pixel apart), finished into the dst */
static void phase_run(const phase_ctx_t *x, const phase_epi_t *e, int64_t m, int64_t cnt,
                      int64_t s, dnnq_br_pair_t *pairs, int64_t np) {
    const dnnq_conv_t *cv = x->cv;
    const dnnq_gemm_args_t *ge = &e->ge;
    dnnq_gemm_args_t gs;
    dnnq_postop_t ps[DNNQ_CONV_MAX_POST];
    int32_t rs[DNNQ_CONV_TILE_ROWS];
    int64_t step_done = 0; /* rows the pairs' a already moved past */
    for (int64_t r0 = 0; r0 < cnt;) {
        /* rows r0 .. r0 + rows - 1 into one tile, one epilogue call (unless fused) */
        const int64_t rows = cnt - r0 < DNNQ_CONV_TILE_ROWS ? cnt - r0 : DNNQ_CONV_TILE_ROWS;
        for (int64_t r = 0; r < rows;) {
            const int mr = (int)(rows - r < x->mr_max ? rows - r : x->mr_max);
            int k4 = 1;
            for (int64_t t = 0; t < np; ++t) {
                dnnq_br_pair_t *pr = pairs + t;
                pr->a += (r0 + r - step_done) * cv->IC;
                /* K rounded up to a multiple of 4 where that stays inside the source: the
                 * extra bytes meet the zero padding of the packed weights */
                pr->K = cv->kpair;
                if ((pr->K & 3) && pr->a + (mr - 1) * cv->IC + cv->K4 * 4 <= x->src_end)
                    pr->K = cv->K4 * 4;
                k4 &= !(pr->K & 3);
            }
            step_done = r0 + r;
            const int64_t mp = m + (r0 + r) * s;
            if (!np) { /* no tap reaches these pixels: a zero sum */
                memset(x->tile + r * DNNQ_NR, 0, sizeof(int32_t) * DNNQ_NR * (size_t)mr);
                if (e->fuse) {
                    strided_epilogue_args(ge, x->post, mp, s, mr, rs, &gs, ps);
                    cv->epilogue(&gs, 0, 0, mr, x->p, x->tile + r * DNNQ_NR);
                }
            } else if (e->fuse && k4) {
                cv->brgemm_epi(mr, np, pairs, &e->st, e->fuse, mp, s);
            } else if (e->fuse) { /* K % 4 tails: the plain kernel, these rows finished here */
                x->brg(mr, np, pairs, cv->a_xor, 0, x->tile + r * DNNQ_NR);
                strided_epilogue_args(ge, x->post, mp, s, mr, rs, &gs, ps);
                cv->epilogue(&gs, 0, 0, mr, x->p, x->tile + r * DNNQ_NR);
            } else {
                x->brg(mr, np, pairs, cv->a_xor, 0, x->tile + r * DNNQ_NR);
            }
            r += mr;
        }
        if (!e->fuse) {
            strided_epilogue_args(ge, x->post, m + r0 * s, s, (int)rows, rs, &gs, ps);
            cv->epilogue(&gs, 0, 0, (int)rows, x->p, x->tile);
        }
        r0 += rows;
    }
}

int dnnq_conv_run_item_deconv_phases(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t blk = item % nblk;
    int64_t rest = item / nblk;
    const int64_t p = rest % cv->n_panels;
    rest /= cv->n_panels;
    const int64_t g = rest % cv->G;
    const int64_t n = rest / cv->G;
    const int64_t m0 = blk * cv->mc;
    const int64_t mend = osp - m0 < cv->mc ? osp : m0 + cv->mc;

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);
    int32_t tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    phase_ctx_t x;
    x.cv = cv;
    x.post = post;
    x.brg = dnnq_conv_brgemm_for(cv, ge.N - p * DNNQ_NR);
    x.mr_max = cv->mr < DNNQ_MR_MAX ? cv->mr : DNNQ_MR_MAX;
    x.p = p;
    x.src_end = cv->src + cv->N * cv->id * cv->ih * cv->iw * cv->IC;
    x.tile = tile;

    const int64_t bstep = cv->K4 * 4 * DNNQ_NR;
    const int8_t *bpanel = cv->packed + (g * cv->n_panels + p) * cv->npairs * bstep;
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * cv->IC + g * cv->ICg;
    const int64_t s = cv->sw;
    /* the pieces' epilogues: one for all when the left-out taps add nothing, else a small
     * cache by tap set (a few sets per item: rows in the middle or at an edge, phases) */
    const int32_t *zc = cv->deconv_zc ? cv->deconv_zc + (g * cv->n_panels + p) * cv->npairs * DNNQ_NR
                                      : NULL;
    enum { NCACHE = 8 };
    phase_epi_t *cache = (phase_epi_t *)aligned_alloc(64, sizeof(phase_epi_t) * (zc ? NCACHE : 1));
    if (!cache) return -1;
    int ncached = 0, next = 0;
    if (!zc) {
        cache[0].ge = ge;
        cache[0].fuse = dnnq_conv_fuse_kind(cv, &cache[0].ge, p, &cache[0].st);
    }
    /* the row's kernel rows (tap index of kw = 0, source row), the phase's pairs */
    enum { SMALL = 64 }; /* on the stack up to this many taps (a malloc per item cost 10 %) */
    const size_t bytes = (sizeof(int64_t) * 2 + sizeof(dnnq_br_pair_t)) * (size_t)cv->npairs;
    int64_t small[SMALL * (2 + (sizeof(dnnq_br_pair_t) + 7) / 8)];
    int64_t *rt = cv->npairs <= SMALL ? small : (int64_t *)malloc(bytes);
    if (!rt) return -1;
    int64_t *rsrc = rt + cv->npairs;
    dnnq_br_pair_t *pairs = (dnnq_br_pair_t *)(rsrc + cv->npairs);
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow_a;
        out_pixel(cv, m, &od, &oh, &ow_a);
        const int64_t ow_b = ow_a + (mend - m) < cv->ow ? ow_a + (mend - m) : cv->ow;
        int64_t nr = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 1);
            if (xd < 0) continue;
            for (int64_t kh = 0; kh < cv->kh; ++kh) {
                const int64_t xh = src_coord(oh, kh, cv->sh, cv->dh, cv->ph, cv->ih, 1);
                if (xh < 0) continue;
                rt[nr] = (kd * cv->kh + kh) * cv->kw;
                rsrc[nr] = (xd * cv->ih + xh) * cv->iw;
                ++nr;
            }
        }
        const int64_t row0 = m - ow_a; /* pixel of column 0 of this output row */
        for (int64_t j = 0; j < s; ++j) {
            /* the row's pixels of column phase j: ow = ow1, ow1 + s, ... < ow_b */
            const int64_t ow1 = ow_a + ((j - (ow_a + cv->pw) % s) % s + s) % s;
            if (ow1 >= ow_b) continue;
            const int64_t cnt = (ow_b - ow1 + s - 1) / s;
            /* the phase's kernel columns, and per tap the run's pixels i in [lo, hi) whose
             * source column x0 + i is inside the source */
            int64_t kws[64], x0s[64], lo[64], hi[64], cuts[130];
            int nk = 0, ncut = 0;
            cuts[ncut++] = 0;
            cuts[ncut++] = cnt;
            for (int64_t kw = 0; kw < cv->kw; ++kw) {
                const int64_t t = ow1 + cv->pw - kw * cv->dw;
                if (((t % s) + s) % s) continue;
                const int64_t x0 = t >= 0 ? t / s : -((-t + s - 1) / s); /* exact: s | t */
                int64_t l = -x0, h = cv->iw - x0;
                l = l < 0 ? 0 : l > cnt ? cnt : l;
                h = h < l ? l : h > cnt ? cnt : h;
                if (l >= h) continue; /* no pixel of the run reaches the source with it */
                kws[nk] = kw;
                x0s[nk] = x0;
                lo[nk] = l;
                hi[nk] = h;
                cuts[ncut++] = l;
                cuts[ncut++] = h;
                ++nk;
            }
            /* the pieces between consecutive cuts, each with the taps inside over all of it */
            for (int a = 1; a < ncut; ++a) /* insertion sort: at most 130 */
                for (int b = a; b > 0 && cuts[b - 1] > cuts[b]; --b) {
                    const int64_t tmp = cuts[b];
                    cuts[b] = cuts[b - 1];
                    cuts[b - 1] = tmp;
                }
            for (int a = 0; a + 1 < ncut; ++a) {
                const int64_t i0 = cuts[a], i1 = cuts[a + 1];
                if (i0 >= i1) continue;
                int64_t np = 0;
                uint64_t key[2] = {0, 0};
                for (int64_t r = 0; r < nr; ++r)
                    for (int k = 0; k < nk; ++k) {
                        if (lo[k] > i0 || hi[k] < i1) continue;
                        const int64_t t = rt[r] + kws[k];
                        pairs[np].a = img + (rsrc[r] + x0s[k] + i0) * cv->IC;
                        pairs[np].lda = cv->IC;
                        pairs[np].rows = NULL;
                        pairs[np].b = bpanel + t * bstep;
                        pairs[np].K = cv->kpair;
                        ++np;
                        if (zc) key[t >> 6] |= (uint64_t)1 << (t & 63);
                    }
                const phase_epi_t *e = cache;
                if (zc) {
                    int hit = -1;
                    for (int c = 0; c < ncached && hit < 0; ++c)
                        if (cache[c].key[0] == key[0] && cache[c].key[1] == key[1]) hit = c;
                    if (hit < 0) { /* col_comp + the zc of every tap left out */
                        hit = ncached < NCACHE ? ncached++ : next++ % NCACHE;
                        phase_epi_t *f = cache + hit;
                        f->key[0] = key[0];
                        f->key[1] = key[1];
                        /* (col_comp holds the group's columns only: nc of this panel) */
                        const int32_t *cc = ge.col_comp ? ge.col_comp + p * DNNQ_NR : NULL;
                        const int64_t nc = ge.N - p * DNNQ_NR < DNNQ_NR ? ge.N - p * DNNQ_NR
                                                                      : DNNQ_NR;
                        for (int j = 0; j < DNNQ_NR; ++j) f->comp[j] = cc && j < nc ? cc[j] : 0;
                        for (int64_t t = 0; t < cv->npairs; ++t) {
                            if (key[t >> 6] >> (t & 63) & 1) continue;
                            const int32_t *z = zc + t * DNNQ_NR;
                            for (int j = 0; j < DNNQ_NR; ++j)
                                f->comp[j] = (int32_t)((uint32_t)f->comp[j] + (uint32_t)z[j]);
                        }
                        f->ge = ge;
                        /* indexed by the column n = p * 64 + j, as col_comp is */
                        f->ge.col_comp = (const int32_t *)((uintptr_t)f->comp -
                                                           (uintptr_t)(p * DNNQ_NR * 4));
                        f->ge.c_sb = 0;
                        f->fuse = dnnq_conv_fuse_kind(cv, &f->ge, p, &f->st);
                    }
                    e = cache + hit;
                }
                phase_run(&x, e, row0 + ow1 + i0 * s, i1 - i0, s, pairs, np);
            }
        }
        m += ow_b - ow_a;
    }
    if (rt != small) free(rt);
    free(cache);
    return 0;
}
