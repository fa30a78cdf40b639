"""The convolution driver's Python face: a ConvPlan holds the geometry, the kernel pointers and
the epilogue description fixed at primitive creation; `run` fills the per-execution pointers
and runs the work items (image, group, panel, pixel block) in parallel, GIL released.

All the checking happens in dnnq/primitives/convolution.py or, for the common case, in
_conv_exec.pyx (which fills a copy of `cv` and calls `_launch`); `run` takes raw pointers of
C-contiguous arrays that the caller keeps alive.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE
from libc.stdint cimport int8_t, uint8_t, int16_t, int32_t, uint32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from cython.parallel cimport prange

from dnnq.primitives._kernels._kernels cimport (
    DNNQ_NR, dnnq_gemm_args_t, dnnq_postop_t, dnnq_br_pair_t, dnnq_brgemm_ukr_fn,
    dnnq_gemm_epilogue_fn, dnnq_brgemm_ukr_for_isa, dnnq_brgemm_mr_for_isa,
    dnnq_gemm_epilogue_for_isa, dnnq_dst_lines_shared, dnnq_shares_init,
    DNNQ_ROWS_OUTER_MAX_WEIGHTS,
    DNNQ_F32_MR, dnnq_brgemm_f32_for_isa, dnnq_gemm_epilogue_f32_for_isa, dnnq_dw_f32_for_isa,
    dnnq_f32_epi_prepare_for_isa, dnnq_brgemm_f32_epi_for_isa, dnnq_dw_f32_epi_for_isa,
    dnnq_dw_f32_rows_for_isa,
)
from dnnq.primitives._kernels._codes cimport (
    DNNQ_A_XOR_S8, DNNQ_PO_BINARY, DNNQ_PO_SELECT, DNNQ_CONV_K_GENERAL, DNNQ_CONV_K_DW3X3,
    DNNQ_CONV_K_DW3X3_PLAIN, DNNQ_CONV_K_DW_ROWS3, DNNQ_CONV_K_DW_ROWSK,
    DNNQ_CONV_K_DECONV_PHASES, DNNQ_CONV_K_DECONV_KS, DNNQ_CONV_K_TILES,
)
# dnnq_conv.h's declarations and ConvPlan's fields are in _conv.pxd (the C-level execute path,
# _conv_exec.pyx, fills a dnnq_conv_t and launches it)

NR = DNNQ_NR
MAX_POST = DNNQ_CONV_MAX_POST
#: the depthwise weights' layouts (ConvPlan's dw_kind): the level's s16 one, s8 taps by four
DW_S16, DW_VNNI4 = DNNQ_DW_S16, DNNQ_DW_VNNI4
#: the tile planner's largest output (rows = od * oh, and ow): dnnq.primitives._impls.CONV
#: reads them
TILES_MAX_ROWS = DNNQ_CONV_TILES_MAX_ROWS
TILES_MAX_OW = DNNQ_CONV_TILES_MAX_OW
#: the kernel row widths of the depthwise row kernel dw_rowsk (its packed weights block)
DW_ROWSK_KW = (DNNQ_DW_ROWSK_MIN_KW, DNNQ_DW_ROWSK_MAX_KW)
#: the most output channels of the fold_lanes kernel (16 output pixels in the lanes)
FOLD_LANES_MAX_OC = DNNQ_FOLD_LANES_MAX_OC
#: the most bytes of the stem kernel's folded window (KD KH KW IC)
STEM_MAX_K = DNNQ_CONV_STEM_MAX_K


cdef const void* _ptr(object arr, bint writable=False) except NULL:
    """Address of a C-contiguous buffer (the caller keeps `arr` alive); anything else raises
    (an F-ordered array would be read in the wrong order)."""
    cdef Py_buffer view
    cdef int flags = PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
    PyObject_GetBuffer(arr, &view, flags)
    cdef void* p = view.buf
    PyBuffer_Release(&view)
    if p == NULL:  # zero-size buffers have no address; never dereferenced then
        return <void*>1
    return p


def brgemm_rows(int isa):
    """Rows one batch-reduce micro-kernel call takes at this ISA level."""
    cdef int mr = dnnq_brgemm_mr_for_isa(isa)
    return min(mr, DNNQ_MR_MAX)


#: rows of one f32 micro-kernel call, the same at every level (ukernels/dnnq_f32.h)
F32_ROWS = DNNQ_F32_MR
# the largest f32 weights (bytes) for which f32 plans run pixels outermost (_gemm.pyx's
# F32_ROWS_OUTER_MAX_WEIGHTS)
cdef int64_t _F32_ROWS_OUTER_MAX_WEIGHTS = 1 << 20


cdef class ConvPlan:
    """Geometry, kernels and epilogue kinds of one convolution, fixed at creation."""

    def __cinit__(self):
        self.post = NULL

    def __dealloc__(self):
        free(self.post)
        dnnq_conv_free_tiles(&self.cv)

    def __init__(self, int isa, dict geom, int dst_dt, list post_ops, bint fast_epi,
                 int ref_numerics=0, bint u8_nan_top=False, bint f32=False, *,
                 int kernel, bint s8_src=False, bint raw_s32=False, int dw_kind=0,
                 bint dw_fused=False, int plain=0, bint fast_epi_sum=False,
                 object item_pixels=None, bint amx=False):
        """geom: N, G, ICg, OCg, src (id, ih, iw), dst (od, oh, ow), kernel (kd, kh, kw),
        strides, steps (dilation + 1), pads (left), deconv, depthwise, fold_kw, mc, mr.
        post_ops: (kind, alg, alpha, beta) per post-op (kinds of dnnq_kernels.h).
        ref_numerics: DNNQ_REF_* flags (oneDNN's reference-kernel order), or 0.
        u8_nan_top: a NaN stores 255 in a u8 dst (oneDNN's jit_deconvolution), else 0.
        fast_epi, fast_epi_sum: the fused epilogues that take post_ops
        (_gemm.fused_epilogue_flags).
        f32: f32 source and weights (ukernels/dnnq_f32.h, conv_f32.c): `run` then takes f32
        src, packed weights, dw_weights and zp_rows (zeros).
        kernel: the work-item kernel chosen by dnnq.primitives._impls.CONV / CONV_F32 (a
        _codes.CONV_KERNEL code); s8_src: the source type is s8; raw_s32: the dst receives
        the s32 accumulators as they are; dw_kind: the depthwise
        weights' layout (DNNQ_DW_S16 or DNNQ_DW_VNNI4); dw_fused: the depthwise 3x3 kernels'
        fused epilogue applies (_post_op_spec.dw_fused_epilogue); plain: the plain-data
        variant of the dw3x3_plain kernel (1 - 3); item_pixels: a depthwise plan's
        output pixels per work item for a thread count (geom's mc is the creation's), asked
        again for each thread count an execution runs on; amx: the tiled path (or the
        deconv_ks kernel) runs the AMX batch-reduce kernel on micro-tiles of up to
        mr <= _gemm.AMX_BR_ROWS pixels (the caller chose the AMX level)."""
        cdef int i
        cdef double work
        cdef dnnq_conv_t* cv = &self.cv
        memset(cv, 0, sizeof(dnnq_conv_t))
        cv.N, cv.G, cv.ICg, cv.OCg = geom["N"], geom["G"], geom["ICg"], geom["OCg"]
        cv.IC, cv.OC = cv.G * cv.ICg, cv.G * cv.OCg
        cv.id, cv.ih, cv.iw = geom["src"]
        cv.od, cv.oh, cv.ow = geom["dst"]
        cv.kd, cv.kh, cv.kw = geom["kernel"]
        cv.sd, cv.sh, cv.sw = geom["strides"]
        cv.dd, cv.dh, cv.dw = geom["steps"]
        cv.pd, cv.ph, cv.pw = geom["pads"]
        cv.deconv, cv.depthwise, cv.fold_kw = geom["deconv"], geom["depthwise"], geom["fold_kw"]
        cv.kpair, cv.npairs = geom["kpair"], geom["npairs"]
        cv.K4 = (cv.kpair + 3) // 4
        cols = cv.OC if cv.depthwise else cv.OCg
        cv.n_panels = (cols + DNNQ_NR - 1) // DNNQ_NR
        cv.mc, cv.mr = geom["mc"], geom["mr"]
        if item_pixels is not None and not cv.depthwise:
            raise ValueError("ConvPlan: item_pixels is for depthwise plans")
        self.item_pixels = item_pixels
        memset(self.mc_by_threads, 0, sizeof(self.mc_by_threads))
        # s16 elements per panel of each depthwise layout (DNNQ_DW_S16, DNNQ_DW_VNNI4)
        self.dw_strides[0], self.dw_strides[1] = geom["dw_strides"]
        if cv.mr < 1 or cv.mr > (DNNQ_CONV_TILE_ROWS if cv.depthwise else
                                 DNNQ_AMX_BR_MR if amx else DNNQ_MR_MAX):
            raise ValueError("ConvPlan: mr out of range")
        if amx and (f32 or kernel not in (DNNQ_CONV_K_TILES, DNNQ_CONV_K_DECONV_KS)):
            raise ValueError("ConvPlan: AMX tiles are for the int8 tiled path and deconv_ks")
        cv.amx = amx
        if dw_kind not in (DNNQ_DW_S16, DNNQ_DW_VNNI4):
            raise ValueError("ConvPlan: dw_kind must be DNNQ_DW_S16 or DNNQ_DW_VNNI4")
        cv.isa = isa
        self.s8_src = s8_src
        self.raw_s32 = raw_s32
        cv.src_signed = s8_src
        cv.a_xor = DNNQ_A_XOR_S8 if s8_src else 0
        cv.dw_kind = dw_kind
        cv.dw_stride = self.dw_strides[dw_kind]
        cv.dw_fused = dw_fused
        cv.plain = plain
        if cv.depthwise and not f32:
            cv.dw_tile = dnnq_dw_tile_for_isa(isa, dw_kind)
        cv.brgemm = dnnq_brgemm_ukr_for_isa(isa)
        cv.epilogue = dnnq_gemm_epilogue_for_isa(isa)
        cv.f32 = f32
        if f32:
            if cv.mr != DNNQ_F32_MR or fast_epi or ref_numerics or u8_nan_top:
                raise ValueError("ConvPlan: an f32 plan takes mr = F32_ROWS and no int8 options")
            cv.brgemm_f32 = dnnq_brgemm_f32_for_isa(isa)
            cv.epilogue_f32 = dnnq_gemm_epilogue_f32_for_isa(isa)
            cv.dw_f32 = dnnq_dw_f32_for_isa(isa)
            cv.f32_epi_prepare = dnnq_f32_epi_prepare_for_isa(isa)
            cv.brgemm_f32_epi = dnnq_brgemm_f32_epi_for_isa(isa)
            cv.dw_f32_epi = dnnq_dw_f32_epi_for_isa(isa)
            cv.dw_f32_rows = dnnq_dw_f32_rows_for_isa(isa)
        cv.dst_img = cv.od * cv.oh * cv.ow * cv.OC
        cv.rowsum_img = cv.od * cv.oh * cv.ow
        cv.epi.N = cols
        cv.epi.K = cv.kpair * cv.npairs
        cv.epi.K4 = cv.K4
        cv.epi.n_panels = cv.n_panels
        cv.epi.M = cv.od * cv.oh * cv.ow
        cv.epi.dst_dt = dst_dt
        cv.epi.d_sm = cv.OC
        cv.epi.fast_epi = fast_epi and not ref_numerics
        cv.epi.fast_epi_sum = fast_epi_sum and not ref_numerics
        cv.epi.ref_numerics = ref_numerics
        cv.epi.u8_nan_top = u8_nan_top
        # a deconvolution leaves out the taps that read only a zero zero-point row
        cv.skip_zero_taps = _skip_zero_taps_on
        # the tiled path (ukernels/conv_tiles.c) of the convolutions it covers
        cv.kernel = kernel
        if dnnq_conv_build_tiles(cv) != 0:
            raise MemoryError("Convolution: allocating the plan's tile list or coordinate "
                              "table failed")
        if dnnq_conv_check_kernel(cv, kernel) != 0:
            raise ValueError(f"ConvPlan: kernel {kernel} does not take this plan")
        cv.run_item = dnnq_conv_item_fn_for(cv)
        self.kernel = kernel
        self.n_items = dnnq_conv_n_items(cv)
        # (in doubles, capped: the dims of a fuzzed geometry overflow an int64 product; the
        # figure only picks the thread count)
        work = (<double>cv.N * <double>cv.epi.M * <double>cv.OC * <double>cv.ICg *
                <double>cv.kd * <double>cv.kh * <double>cv.kw)
        self.work = <int64_t>work if work < 4e18 else <int64_t>4000000000000000000
        if len(post_ops) > DNNQ_CONV_MAX_POST:
            raise ValueError(f"at most {DNNQ_CONV_MAX_POST} post-ops")
        cv.epi.n_post = len(post_ops)
        if cv.epi.n_post:
            self.post = <dnnq_postop_t*>malloc(sizeof(dnnq_postop_t) * cv.epi.n_post)
            if self.post == NULL:
                raise MemoryError()
            memset(self.post, 0, sizeof(dnnq_postop_t) * cv.epi.n_post)
            for i, (kind, alg, alpha, beta) in enumerate(post_ops):
                self.post[i].kind = kind
                self.post[i].alg = alg
                self.post[i].alpha = alpha
                self.post[i].beta = beta

    def build_flat_table(self):
        """Build the flat depthwise kernel's index vectors once (its caller chose that kernel,
        so the CPU has AVX512-VBMI); whether the plan's geometry has them."""
        return bool(dnnq_conv_build_flat_table(&self.cv))

    def phase_deconv(self):
        """Whether this deconvolution runs by column phases (dense GEMMs of the taps that
        reach each phase; conv_deconv.c)."""
        return self.kernel == DNNQ_CONV_K_DECONV_PHASES

    def run(self, src, zp_rows, padcorr, packed, dw_weights, col_comp, wzp, int64_t wzp_sn,
            rowsum, bint raw_s32, float src_scale, scale, int64_t scale_sn, bias, list src1s,
            float dst_scale, dst_zp, int64_t dst_zp_sn, dst, int nthreads):
        """One execution of the checked path (its arrays canonical: C-contiguous, src and dst
        channels-last (N, D, H, W, C), the plan's weight layouts, an f32 bias of OC values or
        None); the arrays become pointers for `execute`.  col_comp (OC,) s32; rowsum (N, G,
        pixels) s32 with wzp; src1s: per post-op None, (f32, s_img, s_pix, s_chan) for binary
        or (cond, 3 strides, value, 3 strides) for select."""
        cdef ConvRun r
        cdef int i
        memset(&r, 0, sizeof(ConvRun))
        if raw_s32 != self.cv.epi.raw_s32 and raw_s32:
            pass
        self.raw_s32 = raw_s32
        r.src = <const uint8_t*>_ptr(src)
        r.zp_rows = <const uint8_t*>_ptr(zp_rows)
        r.padcorr = <const int32_t*>_ptr(padcorr) if padcorr is not None else NULL
        r.packed = <const int8_t*>_ptr(packed) if packed is not None else NULL
        r.dw_weights = <const int16_t*>_ptr(dw_weights) if dw_weights is not None else NULL
        r.col_comp = <const int32_t*>_ptr(col_comp)
        if wzp is not None:
            r.wzp = <const int32_t*>_ptr(wzp)
            r.wzp_sn = wzp_sn
            r.rowsum = <const int32_t*>_ptr(rowsum)
        r.src_scale = src_scale
        r.scale = <const float*>_ptr(scale)
        r.scale_sn = scale_sn
        r.bias = <const float*>_ptr(bias) if bias is not None else NULL
        for i in range(self.cv.epi.n_post):
            x = src1s[i]
            if x is not None:
                r.src1[i] = <const float*>_ptr(x[0])
                r.s1[i][0], r.s1[i][1], r.s1[i][2] = x[1], x[2], x[3]
                if len(x) > 4:
                    r.src2[i] = <const float*>_ptr(x[4])
                    r.s2[i][0], r.s2[i][1], r.s2[i][2] = x[5], x[6], x[7]
        r.dst_scale = dst_scale
        if dst_zp is not None:
            r.dst_zp = <const int32_t*>_ptr(dst_zp)
            r.dst_zp_sn = dst_zp_sn
        r.dst = <void*>_ptr(dst, True)
        self.execute(&r, nthreads)

    cdef int execute(self, const ConvRun* r, int nthreads) except -1:
        """The one executor of both execute paths (ConvExec, the C-level one, and `run`, the
        checked one): a copy of the plan's dnnq_conv_t gets the execution's pointers, then
        the work items run.  The plan's kernel runs, but for two properties of the data
        itself, decided here once per execution: a dw3x3_plain plan given channels-last data
        (the checked path's canonical form) runs its channels-last kernel, dw3x3; a zero
        point the source type cannot hold (`padcorr`) takes the general driver, the one
        driver that adds the correction per padded tap (exact s32 either way)."""
        cdef dnnq_conv_t cv = self.cv
        cdef dnnq_postop_t local_post[DNNQ_CONV_MAX_POST]
        cdef int i, kernel = self.kernel
        for i in range(cv.epi.n_post):
            local_post[i] = self.post[i]
            local_post[i].src1 = r.src1[i]
            local_post[i].src2 = r.src2[i]
            if r.src1[i] != NULL:
                cv.post_b[i], local_post[i].s1_m, local_post[i].s1_n = \
                    r.s1[i][0], r.s1[i][1], r.s1[i][2]
            if r.src2[i] != NULL:
                cv.post2_b[i], local_post[i].s2_m, local_post[i].s2_n = \
                    r.s2[i][0], r.s2[i][1], r.s2[i][2]
            if (local_post[i].kind == DNNQ_PO_BINARY and local_post[i].src1 == NULL) or \
                    (local_post[i].kind == DNNQ_PO_SELECT and local_post[i].src2 == NULL):
                raise ValueError(f"ConvPlan: post-op {i} has no input array")
            if local_post[i].kind == DNNQ_PO_BINARY and (local_post[i].s1_m != 0 or
                                                         local_post[i].s1_n > 1):
                cv.epi.fast_epi_sum = 0  # the fused epilogues take inputs the same for every row
        cv.epi.post = local_post
        if kernel == DNNQ_CONV_K_DW3X3_PLAIN and not r.plain_data:
            kernel = DNNQ_CONV_K_DW3X3
            cv.plain = 0
        if r.padcorr != NULL and kernel in (DNNQ_CONV_K_DECONV_PHASES, DNNQ_CONV_K_DECONV_KS,
                                            DNNQ_CONV_K_DW_ROWS3,
                                            DNNQ_CONV_K_DW_ROWSK, DNNQ_CONV_K_DW3X3):
            kernel = DNNQ_CONV_K_GENERAL
        if kernel != self.kernel:
            cv.kernel = kernel
            cv.run_item = dnnq_conv_item_fn_for(&cv)
        cv.src = r.src
        cv.zp_rows = r.zp_rows
        cv.padcorr = r.padcorr
        cv.packed = r.packed
        cv.dw_weights = r.dw_weights
        if cv.depthwise and cv.dw_weights == NULL:
            raise ValueError("ConvPlan: a depthwise plan needs its dw_weights")
        if not cv.depthwise and cv.packed == NULL:
            raise ValueError("ConvPlan: the plan needs its packed weights")
        cv.panel_outer = r.panel_outer
        cv.epi.col_comp = r.col_comp
        cv.epi.wzp = r.wzp
        cv.epi.wzp_sn = r.wzp_sn
        if r.wzp != NULL:  # the fused epilogues have no weights zero point (C trusts the flags)
            cv.epi.fast_epi = cv.epi.fast_epi_sum = 0
        cv.epi.rowsum = r.rowsum
        cv.epi.raw_s32 = self.raw_s32
        cv.epi.src_scale = r.src_scale
        cv.epi.scale, cv.epi.scale_sn = r.scale, r.scale_sn
        cv.epi.bias = r.bias
        cv.epi.bias_sn = 1 if r.bias != NULL else 0
        # f32 reciprocal, then a multiply in the epilogue: what oneDNN does
        cv.epi.inv_dst_scale = <float>1.0 / r.dst_scale
        cv.epi.dst_zp, cv.epi.dst_zp_sn = r.dst_zp, r.dst_zp_sn
        cv.epi.dst = r.dst
        # small problems stay on one thread: a fork / join costs more than they do (about
        # 2M multiply-adds take ~50 us on one VNNI core; a depthwise multiply-add costs far
        # more than a GEMM one, so it splits from 64K on)
        if self.work < ((1 << 16) if cv.depthwise else (1 << 21)):
            nthreads = 1
        if self.item_pixels is not None:
            cv.mc = self._item_mc(nthreads)
        if r.band_src != NULL:  # the fused band path (ConvExec._fused_bands)
            return self._launch_bands(&cv, nthreads, cv.isa, r.band_src, r.band_p_src,
                                      r.band_dst, r.band_p_dst, r.band_esz)
        return self._launch(&cv, nthreads)

    cdef int64_t _item_mc(self, int nthreads) except -1:
        """Output pixels per work item of a depthwise plan on nthreads threads (item_pixels,
        asked once per thread count): the items fit the threads an execution runs on, not
        those at creation (the primitive cache hands one primitive to every thread count)."""
        cdef int64_t mc
        if 1 <= nthreads <= 64 and self.mc_by_threads[nthreads - 1]:
            return self.mc_by_threads[nthreads - 1]
        mc = self.item_pixels(nthreads)
        if mc < 1:
            raise ValueError(f"ConvPlan: item_pixels({nthreads}) gave {mc}")
        if 1 <= nthreads <= 64:
            self.mc_by_threads[nthreads - 1] = mc
        return mc

    cdef int _launch(self, const dnnq_conv_t* cv, int nthreads) except -1:
        """Run every work item of a filled cv (GIL held on entry; released around the loop).
        An int8 plan on several threads (depthwise, or weights of at most 256 KiB: every
        thread reads them all) runs thread shares (dnnq_conv_run_share): each thread a
        contiguous run of the items, panels innermost -- a band of output rows of every
        channel, the same on every call, so that what a thread writes and reads stays in its
        own cache and no destination line is written by two threads (items taken as they come
        sent the lines from core to core: two threads as slow as one on depthwise layers whose
        output the next layer reads; PP-OCRv4 rec, every step on two threads: 4.96 -> 4.85
        ms); a thread whose core is taken leaves the end of its share to the others.  Other
        plans take their items as they come (dynamic)."""
        cdef int64_t nitems = dnnq_conv_n_items(cv), it
        cdef int failed = 0, t
        cdef uint64_t shares_stack[64]
        cdef uint64_t* shares = shares_stack
        cdef dnnq_conv_t run_cv
        if nitems <= 0:
            return 0
        run_cv = cv[0]
        if dnnq_conv_prepare_run(&run_cv) != 0:
            raise MemoryError("Convolution: a scratch allocation failed")
        cv = &run_cv
        if nitems == 1:
            nthreads = 1
        cdef bint by_shares = (nthreads > 1 and not cv.f32 and not cv.deconv and
                               (cv.depthwise or
                                cv.epi.K * cv.OC <= DNNQ_ROWS_OUTER_MAX_WEIGHTS) and
                               _thread_shares_on and nitems < (<int64_t>1 << 31))
        if by_shares:
            run_cv.rows_outer = 1
        else:
            # threads on pixels where destination rows share cache lines between panels and
            # the weights are at most 256 KiB (as in GemmPlan.launch; ResNet-50's 256 -> 128
            # 1x1 stride 2 at 2 threads: 85 against 71 us); the deconvolution phase items
            # keep their own order
            run_cv.rows_outer = (nthreads > 1 and
                                 cv.epi.K * cv.OC <= DNNQ_ROWS_OUTER_MAX_WEIGHTS and
                                 dnnq_dst_lines_shared(cv.epi.dst, cv.epi.d_sm,
                                                       cv.epi.dst_dt, cv.epi.raw_s32))
        if cv.f32:  # pixels outermost while the f32 weights fit in L2 (_gemm.pyx: the same)
            run_cv.rows_outer = cv.epi.K * cv.OC * 4 <= _F32_ROWS_OUTER_MAX_WEIGHTS
        if by_shares and nthreads > 64:
            shares = <uint64_t*>malloc(sizeof(uint64_t) * nthreads)
            if shares == NULL:
                dnnq_conv_finish_run(&run_cv)
                raise MemoryError("Convolution: allocating the threads' shares failed")
        if nthreads == 1:
            with nogil:
                for it in range(nitems):
                    if dnnq_conv_run_item(cv, it) != 0:
                        failed = 1
                        break
        elif by_shares:
            dnnq_shares_init(shares, nitems, nthreads)
            with nogil:
                for t in prange(nthreads, schedule='static', num_threads=nthreads):
                    failed += dnnq_conv_run_share(cv, t, nthreads, shares) != 0
        else:
            with nogil:
                for it in prange(nitems, schedule='dynamic', num_threads=nthreads):
                    failed += dnnq_conv_run_item(cv, it) != 0  # a reduction over items
        if shares != shares_stack:
            free(shares)
        dnnq_conv_finish_run(&run_cv)
        if failed:
            raise MemoryError("Convolution: a scratch allocation failed; dst is incomplete")
        return 0

    cdef int _launch_bands(self, const dnnq_conv_t* cv, int nthreads, int isa,
                           const uint8_t* src_plain, int64_t p_src, void* dst_plain,
                           int64_t p_dst, int esz) except -1:
        """The fused band path (dnnq_conv_run_band_unit): every (image, panel) unit copies its
        channels to channels-last, runs its items and copies them back, in one parallel
        region (GIL held on entry; released around the loop).  cv: panel-outer items of a
        depthwise plan, src / dst the channels-last buffers."""
        cdef int64_t units = cv.N * cv.n_panels, u
        cdef int failed = 0
        if nthreads > units:
            nthreads = <int>units
        if nthreads <= 1:
            with nogil:
                for u in range(units):
                    if dnnq_conv_run_band_unit(cv, u, isa, src_plain, p_src, dst_plain, p_dst,
                                               esz) != 0:
                        failed = 1
                        break
        else:
            with nogil:
                for u in prange(units, schedule='dynamic', num_threads=nthreads):
                    failed += dnnq_conv_run_band_unit(cv, u, isa, src_plain, p_src, dst_plain,
                                                      p_dst, esz) != 0
        if failed:
            raise MemoryError("Convolution: a scratch allocation failed; dst is incomplete")
        return 0


cdef bint _skip_zero_taps_on = True
cdef bint _thread_shares_on = True

def set_thread_shares(bint on):
    """Whether int8 plans on several threads run thread shares (ConvPlan._launch) or take
    their items as they come; returns the previous setting (tests and A/B timings; on by
    default)."""
    global _thread_shares_on
    old = _thread_shares_on
    _thread_shares_on = on
    return old



def get_skip_zero_taps():
    """Whether deconvolution plans created now may take the column-phase driver."""
    return _skip_zero_taps_on


def set_skip_zero_taps(bint on):
    """Whether deconvolution plans created from now on take the column-phase driver, which
    leaves out the taps that read only the zero-point row (conv_deconv.c); off: every tap, the
    general driver.  Returns the previous setting (tests and A/B timings; on by default)."""
    global _skip_zero_taps_on
    old = _skip_zero_taps_on
    _skip_zero_taps_on = on
    return old


def transpose_channels(src, dst, bint to_channels_last, int isa=0, int nthreads=1):
    """Copy between plain (N, C, P) and channels-last (N, P, C) layouts of 1- or 4-byte
    elements: both arrays C-contiguous, `src` of one layout, `dst` of the other (P = the
    spatial dims flattened; shapes are taken from `dst`, whose last dims say which); `isa`
    (a DNNQ_ISA_* code) picks the AVX-512 byte transpose at that level.  With `nthreads` >
    1, a copy to channels-last of a large image splits its pixels into bands of 64 over the
    threads (each band a range of the transpose's columns: the same bytes)."""

    cdef int64_t esz = src.itemsize
    cdef int64_t N = dst.shape[0]
    cdef int64_t total = dst.size
    cdef int64_t C = dst.shape[dst.ndim - 1] if to_channels_last else dst.shape[1]
    cdef int64_t P = total // (N * C) if N * C else 0
    cdef const char* s = <const char*>_ptr(src)
    cdef char* d = <char*>_ptr(dst, True)
    cdef int64_t n, t, nb, c0, c1, bands
    cdef int nt = nthreads
    if src.size != total or src.itemsize != dst.itemsize or esz not in (1, 4):
        raise ValueError("transpose_channels: mismatched arrays")
    bands = (P + 63) // 64
    if nt > 1 and to_channels_last and total * esz >= (1 << 18) and bands > 1:
        if nt > bands:
            nt = <int>bands
        with nogil:
            for t in prange(N * nt, schedule='static', num_threads=nt):
                n = t // nt
                nb = t % nt
                c0 = (nb * bands // nt) * 64
                c1 = ((nb + 1) * bands // nt) * 64
                if c1 > P:
                    c1 = P
                dnnq_transpose_for_isa(isa, s + n * C * P * esz, d + n * C * P * esz, C, P,
                                       c0, c1, <int>esz, C)
        return
    with nogil:
        for n in range(N):
            if to_channels_last:  # (C, P) -> (P, C)
                dnnq_transpose_for_isa(isa, s + n * C * P * esz, d + n * C * P * esz, C, P,
                                       0, P, <int>esz, C)
            else:                 # (P, C) -> (C, P)
                dnnq_transpose_for_isa(isa, s + n * C * P * esz, d + n * C * P * esz, P, C,
                                       0, C, <int>esz, P)


def transpose_columns(src, dst, int64_t cbegin, int64_t cend, int isa=0):
    """dst (cols, rows) rows cbegin .. cend - 1 = the columns cbegin .. cend - 1 of src (rows,
    cols): the column range a thread's share of a copy takes (tests); 2-D C-contiguous arrays
    of 1- or 4-byte elements, 0 <= cbegin <= cend <= cols."""
    _transpose_range(src, dst, cbegin, cend, isa, False)


def transpose_rows(src, dst, int64_t rbegin, int64_t rend, int isa=0):
    """dst (cols, rows) columns rbegin .. rend - 1 = the rows rbegin .. rend - 1 of src (rows,
    cols): a thread's band of channels in the copy to channels-last (tests); 2-D C-contiguous
    arrays of 1- or 4-byte elements, 0 <= rbegin <= rend <= rows."""
    _transpose_range(src, dst, rbegin, rend, isa, True)


cdef _transpose_range(src, dst, int64_t begin, int64_t end, int isa, bint by_rows):
    cdef int64_t rows = src.shape[0], cols = src.shape[1], esz = src.itemsize
    if (src.ndim != 2 or dst.ndim != 2 or dst.shape[0] != cols or dst.shape[1] != rows
            or dst.itemsize != esz or esz not in (1, 4)
            or not 0 <= begin <= end <= (rows if by_rows else cols)):
        raise ValueError("transpose_rows / transpose_columns: mismatched arrays or range")
    cdef const char* s = <const char*>_ptr(src)
    cdef char* d = <char*>_ptr(dst, True)
    with nogil:
        if by_rows:
            dnnq_transpose_rows_for_isa(isa, s, d, rows, cols, begin, end, <int>esz)
        else:
            dnnq_transpose_for_isa(isa, s, d, rows, cols, begin, end, <int>esz, rows)
