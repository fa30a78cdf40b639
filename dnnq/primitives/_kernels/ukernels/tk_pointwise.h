/* The pointwise engine (see dnnq_toolkit.h): the program of stages run on chunks of up to
 * DNNQ_PW_CHUNK elements of a row, the row offsets, and the driver of work items.  The post-op
 * stages use the shared chain (postop_chain.h); the fast paths are tk_pw_fast.h's. */
#ifndef DNNQ_TK_POINTWISE_H
#define DNNQ_TK_POINTWISE_H
#include "tk_convert.h"
#include "tk_pw_fast.h"
#include "postop_chain.h"

/* out = alg[q](out, operand pk[q]) for q < count, skipping pk[q] < 0: per-row scalars or
 * per-element vectors, as bin_opnd computes them (the affine load's parameters, a
 * destination's scale reciprocal and zero point) */
static void tk_param_steps(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n,
                           const int *pk, const int *alg, int count, float *out, float *tmp) {
    const int in = p->ndims - 1;
    for (int q = 0; q < count; ++q) {
        if (pk[q] < 0) continue;
        const dnnq_pw_opnd_t *po = &p->opnds[pk[q]];
        const int64_t ps = po->st[in];
        const char *pa = tk_addr(po, off[pk[q]] + j * ps);
        if (ps == 0) {
            dnnq_po_binary_scalar(alg[q], out, tk_load1(pa, po->dt), n);
        } else {
            tk_load(tmp, pa, po->dt, ps, n);
            dnnq_po_binary(alg[q], out, tmp, n);
        }
    }
}

/* b = b * operand km then + operand ka (each where >= 0): a destination's scale reciprocal
 * and zero point */
static void tk_dst_affine(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n,
                          int km, int ka, float *b, float *tmp) {
    static const int alg[2] = {DNNQ_BIN_MUL, DNNQ_BIN_ADD};
    const int pk[2] = {km, ka};
    tk_param_steps(p, off, j, n, pk, alg, 2, b, tmp);
}

/* load operand k with up to four affine steps (sub p[0], mul p[1], mul p[2], add p[3]) into out */
static void tk_affine_into(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n, int k,
                           const int *pk, float *out, float *tmp) {
    static const int step_alg[4] = {DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_MUL, DNNQ_BIN_ADD};
    const int in = p->ndims - 1;
    float pv[4] = {0.0f, 1.0f, 1.0f, -0.0f};
    int rowconst = 1;
    for (int q = 0; q < 4; ++q) {
        if (pk[q] < 0) continue;
        const dnnq_pw_opnd_t *po = &p->opnds[pk[q]];
        if (po->st[in] != 0) { rowconst = 0; continue; }
        pv[q] = tk_load1(tk_addr(po, off[pk[q]]), po->dt);
    }
    const dnnq_pw_opnd_t *o = &p->opnds[k];
    const int64_t is = o->st[in];
    const char *a = tk_addr(o, off[k] + j * is);
    if (rowconst) {
        tk_affine(out, a, o->dt, is, n, pv[0], pv[1], pv[2], pv[3]);
        return;
    }
    tk_load(out, a, o->dt, is, n);
    tk_param_steps(p, off, j, n, pk, step_alg, 4, out, tmp);
}

/* ---- the pointwise program on one chunk ---------------------------------------------------- */

/* off[k]: element offset of operand k at the start of the row; j: inner index of the chunk */
static void tk_program(const dnnq_pw_plan_t *p, const int64_t *off, int64_t j, int n,
                       float (*buf)[TK_CH], float *tmp) {
    const int in = p->ndims - 1;
    for (int s = 0; s < p->n_stages; ++s) {
        const dnnq_pw_stage_t *sg = &p->stages[s];
        float *b = buf[sg->buf];
        switch (sg->op) {
        case DNNQ_PW_LOAD: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            tk_load(b, tk_addr(o, off[sg->arg] + j * is), o->dt, is, n);
            break;
        }
        case DNNQ_PW_BIN_OPND: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            const char *a = tk_addr(o, off[sg->arg] + j * is);
            if (is == 0) {
                dnnq_po_binary_scalar(sg->alg, b, tk_load1(a, o->dt), n);
            } else if (is == 1 && o->dt == DNNQ_DT_F32) {
                dnnq_po_binary(sg->alg, b, (const float *)a, n);
            } else {
                tk_load(tmp, a, o->dt, is, n);
                dnnq_po_binary(sg->alg, b, tmp, n);
            }
            break;
        }
        case DNNQ_PW_BIN_BUF: dnnq_po_binary(sg->alg, b, buf[sg->arg], n); break;
        case DNNQ_PW_BIN_CONST: dnnq_po_binary_scalar(sg->alg, b, sg->alpha, n); break;
        case DNNQ_PW_SUM: dnnq_po_sum(b, buf[sg->arg], sg->alpha, sg->beta, n); break;
        case DNNQ_PW_ELTWISE: dnnq_po_eltwise(sg->alg, b, sg->alpha, sg->beta, n); break;
        case DNNQ_PW_STORE: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            tk_store((char *)tk_addr(o, off[sg->arg] + j * is), o->dt, is, b, n);
            break;
        }
        case DNNQ_PW_AFFINE: {
            static const int step_alg[4] = {DNNQ_BIN_SUB, DNNQ_BIN_MUL, DNNQ_BIN_MUL, DNNQ_BIN_ADD};
            float pv[4] = {0.0f, 1.0f, 1.0f, -0.0f};
            int rowconst = 1;
            for (int q = 0; q < 4; ++q) {
                const int k = sg->p[q];
                if (k < 0) continue;
                const dnnq_pw_opnd_t *o = &p->opnds[k];
                if (o->st[in] != 0) { rowconst = 0; continue; }
                pv[q] = tk_load1(tk_addr(o, off[k]), o->dt);
            }
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg];
            const int64_t is = o->st[in];
            const char *a = tk_addr(o, off[sg->arg] + j * is);
            const dnnq_pw_opnd_t *d = sg->arg2 >= 0 ? &p->opnds[sg->arg2] : NULL;
            const int64_t ds = d ? d->st[in] : 0;
            char *dp = d ? (char *)tk_addr(d, off[sg->arg2] + j * ds) : NULL;
#ifdef TK_HAVE_LUT
            if (rowconst && d && ds == 1 && is == 1 && n >= 128
                && (o->dt == DNNQ_DT_S8 || o->dt == DNNQ_DT_U8)
                && (d->dt == DNNQ_DT_S8 || d->dt == DNNQ_DT_U8) && p->use_vbmi && tk_lut_ok()) {
                tk_lut_apply((uint8_t *)dp, (const uint8_t *)a, tk_lut_get(o->dt, d->dt, pv), n);
                break;
            }
#endif
            if (rowconst && d && ds == 1 && is == 1) {
                /* one fused pass; the tail (< one vector) through the buffer */
                const int done = tk_affine_store_fused(dp, d->dt, a, o->dt, n, pv[0], pv[1],
                                                       pv[2], pv[3]);
                if (done == n) break;
                const int es = tk_esize(o->dt), des = tk_esize(d->dt);
                tk_affine(b, a + done * es, o->dt, 1, n - done, pv[0], pv[1], pv[2], pv[3]);
                tk_store(dp + done * des, d->dt, 1, b, n - done);
                break;
            }
            float *out = (rowconst && d && d->dt == DNNQ_DT_F32 && ds == 1) ? (float *)dp : b;
            if (rowconst) {
                tk_affine(out, a, o->dt, is, n, pv[0], pv[1], pv[2], pv[3]);
            } else {
                tk_load(b, a, o->dt, is, n);
                for (int q = 0; q < 4; ++q) {
                    const int k = sg->p[q];
                    if (k < 0) continue;
                    const dnnq_pw_opnd_t *po = &p->opnds[k];
                    const int64_t ps = po->st[in];
                    const char *pa = tk_addr(po, off[k] + j * ps);
                    if (ps == 0) {
                        dnnq_po_binary_scalar(step_alg[q], b, tk_load1(pa, po->dt), n);
                    } else {
                        tk_load(tmp, pa, po->dt, ps, n);
                        dnnq_po_binary(step_alg[q], b, tmp, n);
                    }
                }
            }
            if (d && out != (float *)dp) tk_store(dp, d->dt, ds, b, n);
            break;
        }
        case DNNQ_PW_BINARY2: {
            /* buf[b] = alg((src0 - p0) * p1, (src1 - p2) * p3), stored into operand arg3 too
             * (after * p4 + p5 where given: the destination's multiplier and addend; absent,
             * 1 and -0.0 leave every value as it is) */
            const dnnq_pw_opnd_t *o0 = &p->opnds[sg->arg], *o1 = &p->opnds[sg->arg2];
            const dnnq_pw_opnd_t *d = sg->arg3 >= 0 ? &p->opnds[sg->arg3] : NULL;
            const int64_t s0s = o0->st[in], s1s = o1->st[in], dds = d ? d->st[in] : 0;
            const int dq = sg->p[4] >= 0 || sg->p[5] >= 0;
            int rowconst = 1;
            float pv[6] = {0.0f, 1.0f, 0.0f, 1.0f, 1.0f, -0.0f};
            for (int q = 0; q < 6; ++q) {
                const int k = sg->p[q];
                if (k < 0) continue;
                const dnnq_pw_opnd_t *po = &p->opnds[k];
                if (po->st[in] != 0) { rowconst = 0; break; }
                pv[q] = tk_load1(tk_addr(po, off[k]), po->dt);
            }
            if (d && rowconst && s0s == 1 && dds == 1 && (s1s == 1 || s1s == 0)
                && tk_binary_fused_ok(sg->alg, o0->dt, o1->dt, d->dt)) {
                char *dp = (char *)tk_addr(d, off[sg->arg3] + j);
                const char *a0 = tk_addr(o0, off[sg->arg] + j);
                const char *a1 = tk_addr(o1, off[sg->arg2] + j * s1s);
                int done = 0;
                if (s1s == 1 && tk_binary8_ok(sg->alg, o0->dt, o1->dt, d->dt, pv))
                    done = tk_binary8(dp, d->dt, a0, o0->dt, a1, o1->dt, n, sg->alg, pv, dq);
                done += tk_binary_fused(dp + done * tk_esize(d->dt), d->dt,
                                        a0 + done * tk_esize(o0->dt), o0->dt,
                                        a1 + done * s1s * tk_esize(o1->dt), o1->dt, s1s == 0,
                                        n - done, sg->alg, pv, dq);
                if (done == n) break;
                const int k0[4] = {sg->p[0], sg->p[1], -1, -1}, k1[4] = {sg->p[2], sg->p[3], -1, -1};
                tk_affine_into(p, off, j + done, n - done, sg->arg, k0, b, tmp);
                tk_affine_into(p, off, j + done, n - done, sg->arg2, k1, buf[sg->buf + 1], tmp);
                dnnq_po_binary(sg->alg, b, buf[sg->buf + 1], n - done);
                if (dq) tk_dst_affine(p, off, j + done, n - done, sg->p[4], sg->p[5], b, tmp);
                tk_store(dp + done * tk_esize(d->dt), d->dt, 1, b, n - done);
                break;
            }
            const int k0[4] = {sg->p[0], sg->p[1], -1, -1}, k1[4] = {sg->p[2], sg->p[3], -1, -1};
            tk_affine_into(p, off, j, n, sg->arg, k0, b, tmp);
            tk_affine_into(p, off, j, n, sg->arg2, k1, buf[sg->buf + 1], tmp);
            dnnq_po_binary(sg->alg, b, buf[sg->buf + 1], n);
            if (dq) tk_dst_affine(p, off, j, n, sg->p[4], sg->p[5], b, tmp);
            if (d) tk_store((char *)tk_addr(d, off[sg->arg3] + j * dds), d->dt, dds, b, n);
            break;
        }
        case DNNQ_PW_SAVE: dnnq_po_checkpoint(buf[sg->arg], b, n); break;
        case DNNQ_PW_SELECT: {
            const dnnq_pw_opnd_t *oc = &p->opnds[sg->arg], *ov = &p->opnds[sg->arg2];
            const int64_t cs = oc->st[in], vs = ov->st[in];
            float *x = buf[sg->p[1]];
            tk_load(tmp, tk_addr(oc, off[sg->arg] + j * cs), oc->dt, cs, n);
            tk_load(x, tk_addr(ov, off[sg->arg2] + j * vs), ov->dt, vs, n);
            dnnq_po_select(sg->alg, b, buf[sg->p[0]], tmp, x, n);
            break;
        }
        case DNNQ_PW_COPY: {
            const dnnq_pw_opnd_t *o = &p->opnds[sg->arg], *d = &p->opnds[sg->arg2];
            const int64_t is = o->st[in], ds = d->st[in];
            tk_copy((char *)tk_addr(d, off[sg->arg2] + j * ds), ds,
                    tk_addr(o, off[sg->arg] + j * is), is, o->dt, n);
            break;
        }
        default: break;
        }
    }
}

/* element offsets of every operand at the start of row `row` */
static void tk_row_offsets(const dnnq_pw_plan_t *p, int64_t row, int64_t *off) {
    if (p->ndims == 2) { /* one row dim (the common collapsed case): no division */
        for (int k = 0; k < p->n_opnds; ++k) off[k] = row * p->opnds[k].st[0];
        return;
    }
    for (int k = 0; k < p->n_opnds; ++k) off[k] = 0;
    for (int d = p->ndims - 2; d >= 0; --d) {
        const int64_t idx = row % p->dims[d];
        row /= p->dims[d];
        if (idx)
            for (int k = 0; k < p->n_opnds; ++k) off[k] += idx * p->opnds[k].st[d];
    }
}

#define TK_OFF_STACK 64

int DNNQ_TK_FN(dnnq_pw_run)(const dnnq_pw_plan_t *p, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    int64_t *off = p->n_opnds <= TK_OFF_STACK ? off_stack
                                               : (int64_t *)malloc(sizeof(int64_t) * p->n_opnds);
    if (!off) return DNNQ_TK_ENOMEM;
    const int64_t inner = p->dims[p->ndims - 1];
    const int64_t blk = p->block > 0 ? p->block : inner;
    const int64_t nblk = (inner + blk - 1) / blk;
    int64_t cur_row = -1;
    for (int64_t it = it0; it < it1; ++it) {
        const int64_t row = it / nblk, b = it % nblk;
        if (row != cur_row) {
            tk_row_offsets(p, row, off);
            cur_row = row;
        }
        const int64_t j0 = b * blk, j1 = j0 + blk < inner ? j0 + blk : inner;
        for (int64_t j = j0; j < j1; j += TK_CH) {
            const int n = (int)(j1 - j < TK_CH ? j1 - j : TK_CH);
            tk_program(p, off, j, n, buf, tmp);
        }
    }
    if (off != off_stack) free(off);
    return 0;
}

#endif
