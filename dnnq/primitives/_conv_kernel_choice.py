"""Which kernel a convolution plan runs, per family: the depthwise 3x3 kernels on plain (nchw)
data (the flat kernel, the column kernel with or without its VBMI stride-2 rows, or the
channels-last copies), their work items, and the deconvolution's balanced pixel blocks.
Mixed into the Convolution / Deconvolution primitives (convolution.py); the module constants
are the switches the tests and benchmarks set."""
import math

from dnnq.primitives import _impls
from dnnq import args as A
from dnnq.primitives._kernels import _conv
from dnnq.primitives import _post_op_spec


#: Output rows narrower than this take the channels-last copies instead of the plain depthwise
#: kernel: its lanes are 16 output columns of one channel, and on narrow rows its per-row work
#: (one interleave and epilogue per row, lanes past the row wasted) costs more than the copies.
#: Time / channels-last time, plain kernel against copies (1 thread, CPU time): stride 1, 112
#: columns 1.10 / 1.48, 56: 1.38 / 1.55, 48: 1.53 / 1.52, 40: 1.88 / 1.54, 28: 2.3 / 1.5, 7:
#: 7.2 / 1.5; stride 2, 56: 1.85 / 2.58, 48: 2.09 / 2.34, 40: 2.64 / 2.40, 28: 2.47 / 1.94
#: (docs/convolution.md).
DW_PLAIN_MIN_OW = 48

#: With AVX512-VBMI the plain kernel's planes at stride 2 along h and w take a kernel that
#: picks each kernel row's three taps per output with one byte permute (ukernels/
#: depthwise/dw3x3_plain_s2_vbmi.c).  False: the column kernel's even / odd picks (as without
#: VBMI).
DW_PLAIN_VBMI = True

#: With AVX512-VBMI, plain 2-D planes the flat kernel takes (`_dw_flat`: lanes = 16
#: consecutive pixels across row ends, ukernels/depthwise/dw3x3_flat_vbmi.c) whose output rows
#: are narrower than this take it instead of the column kernel or the channels-last copies.
#: 0: never (the tests' switch).
DW_FLAT_MAX_OW = 1 << 30


#: Fewer output pixels per image than this keep the GEMM paths instead of the fold_lanes kernel
#: (its set-up per work item -- index vectors, zero-point sums, row buffers -- costs about
#: 0.6 us: a 1x1 8 -> 8 of 64 pixels took 1.9 us against 1.1; even at 256).
FOLD_LANES_MIN_PIXELS = 256


def dw_flat_span(oh, ow, iw, sh, sw):
    """The widest span of source bytes one kernel row of a 3x3 depthwise kernel reads for 16
    consecutive output pixels of a 2-D plane, padding taps counted (depthwise/dw3x3_flat_vbmi.c's
    dwf_span, the same closed form: the flat kernel takes spans of at most 96).  The run
    starting at column x of a row crosses k = (x + 15) // ow row ends: its span is
    k (sh iw - sw ow) + 15 sw + 3, the widest at the first or the last start."""
    n = max(1, min(ow, oh * ow - 15))
    d = sh * iw - sw * ow
    return max(15 // ow * d, (n - 1 + 15) // ow * d) + 15 * sw + 3


def _per_channel(desc):
    """A post-op input of one value or one per channel (dims 1 but the channel dim)."""
    return all(d == 1 for i, d in enumerate(desc.dims) if i != 1)


def deconv_ks_rows(geo, threads):
    """Source rows per work item of the deconv_ks kernel: about 8 items per thread (an
    item's set-up -- the repeated constants, the fused epilogue's states -- is a few us),
    as many rows in each."""
    rows = geo.src[0] * geo.src[1]
    blocks = max(1, min(rows, -(-8 * threads // geo.N)))
    return -(-rows // blocks)


def _balanced_block(npix, mc, mr, units, threads):
    """Pixels per work item (a multiple of mr, near mc) for which the items, `units` times
    ceil(npix / mc) of them, split into equal contiguous runs over the threads (the items are
    shared out statically): 17 items of a 3136-pixel deconvolution gave one thread 9 and the
    other 8 (10 % of its time waiting); 16 of 198 pixels split evenly."""
    nb = -(-npix // mc)
    for want in range(nb, nb + threads + 1):
        m = -(-(-(-npix // want)) // mr) * mr
        if (units * -(-npix // m)) % threads == 0:
            return m
    return mc


class KernelChoice:
    """The depthwise kernel choice and work-item sizes of _ConvolutionBase (its _geo,
    _dw_layout, _numerics, _ref_flags, _post_specs ... set before _make_plan calls these)."""

    def _conv_problem(self):
        """The problem the convolution implementation lists (dnnq.primitives._impls.CONV, CONV_F32)
        choose a kernel for: the geometry and what creation fixed (types, layouts, the
        attribute's epilogue), nothing of the execution."""
        geo = self._geo
        zm = self._zp_mask
        ref_flags = getattr(self, "_ref_flags", 0)
        dw_fused, lanes_fused = (
            not self._f32 and
            _post_op_spec.dw_fused_epilogue(self.dst_desc.dt, self._post_specs,
                                            self._raw_s32, ref_flags, chains)
            for chains in (False, True))
        sh, sw = geo.strides[1:]
        rows3 = (geo.depthwise and not geo.deconv and geo.kernel[2] == 3 and
                 geo.steps[2] == 1 and sw in (1, 2))
        return dict(
            geo=geo, is_gemm=geo.is_gemm, deconv=geo.deconv, depthwise=geo.depthwise,
            kernel=tuple(geo.kernel), pads=tuple(geo.pads), npairs=geo.npairs,
            kpair=geo.kpair,
            dst=tuple(geo.dst),
            # the AVX-512 depthwise kernels' s8 weights taps by four (a weights zero point
            # folds into s16 weights instead)
            dw_vnni4=geo.depthwise and self._dw_layout == "vnni4" and A.DNNL_ARG_WEIGHTS not in zm,
            rows3=rows3,
            # few output channels over kernel rows of adjacent bytes (folded KW taps, or one
            # tap: 1x1 too), 16 pixels' windows within 128 bytes
            fold_lanes=((geo.fold_kw or (geo.kernel[2] == 1 and not geo.deconv and
                                         not geo.depthwise)) and
                        geo.G == 1 and geo.OC <= _conv.FOLD_LANES_MAX_OC and
                        geo.npairs <= 64 and geo.kpair <= 64 and
                        15 * sw * geo.IC + 4 * -(-geo.kpair // 4) <= 128 and
                        geo.out_pixels >= FOLD_LANES_MIN_PIXELS and
                        A.DNNL_ARG_WEIGHTS not in zm),
            # the whole window folded into one reduction (conv_stem_avx512.c)
            stem=(geo.fold_kw and geo.G == 1 and geo.OC <= _conv.NR and geo.kpair <= 64 and
                  geo.npairs * geo.kpair <= _conv.STEM_MAX_K),
            stem_max_k=_conv.STEM_MAX_K,
            stem_vbmi=(geo.npairs <= 3 and geo.npairs * geo.kpair <= 32 and
                       geo.strides[2] * geo.IC + geo.kpair <= 64),
            rowsk=(geo.depthwise and not geo.deconv and
                   _conv.DW_ROWSK_KW[0] <= geo.kernel[2] <= _conv.DW_ROWSK_KW[1] and
                   geo.steps[2] == 1 and sw in (1, 2)),
            k3x3=(rows3 and geo.kernel[:2] == (1, 3) and geo.steps[1] == 1 and sh in (1, 2)),
            plain_io=(not self.src_desc.is_channels_last and
                      not self.dst_desc.is_channels_last),
            dw_fused=dw_fused,
            lanes_fused=lanes_fused,
            # the plain kernels run on the C-level execute path in oneDNN's exact order (a
            # column-kernel geometry is a forward convolution: no oneDNN AVX2 fallback)
            plain_ok=(self._fast_path_possible() and self._numerics == "exact" and
                      not ref_flags and not self._has_sum),
            dw_flat=geo.depthwise and self._dw_flat(geo),
            dw_plain_min_ow=DW_PLAIN_MIN_OW, dw_plain_vbmi=DW_PLAIN_VBMI,
            tiles_size_ok=(geo.dst[0] * geo.dst[1] <= _conv.TILES_MAX_ROWS and
                           geo.dst[2] <= _conv.TILES_MAX_OW),
            skip_zero_taps=_conv.get_skip_zero_taps(),
            # the zero-point row a deconvolution's left-out taps read may be non-zero bytes
            zp_row_nonzero=(self.src_desc.dt == "s8" or A.DNNL_ARG_SRC in zm),
            # the deconv_ks kernel: every output pixel reached by one tap, one GEMM of
            # kw * OC columns per (source row, kernel row) (ukernels/conv_deconv_ks.c)
            kernel_is_stride=(geo.deconv and geo.kernel == geo.strides and
                              geo.steps == (1, 1, 1) and not any(geo.pads) and
                              not any(geo.pads_r)),
            ks_cols=geo.kernel[2] * geo.OC,
            ks_inputs_ok=(A.DNNL_ARG_WEIGHTS not in zm and
                          all(_per_channel(d) for d in self._post_input_descs())),
            # exact integer sums (not set_int8_numerics("avx2")'s s16 pairs): the deconv_ks
            # and AMX kernels have no pair-saturating variant
            exact_sums=not getattr(self, "_pair_sat", False),
            # the AMX GEMM under a 1x1 convolution: rows (pixels) of a whole image in tiles
            gemm_pixels=geo.out_pixels)

    def _post_input_descs(self):
        """The descriptors of the binary and select post-ops' inputs."""
        return ([d for _, d in self._binary] +
                [d for _, c, v in self._selects for d in (c, v)])

    def _choose_kernel(self):
        """Walk the implementation list once (dnnq.primitives._impls); the entry chosen."""
        table = _impls.CONV_F32 if self._f32 else _impls.CONV
        return _impls.choose_conv(self._kind, table, self._conv_problem(),
                                  _impls.conv_cap(self._isa))

    def _dw_flat(self, geo):
        """The flat kernel (ukernels/depthwise/dw3x3_flat_vbmi.c, needs AVX512-VBMI) takes this
        plain 2-D geometry: 16 consecutive output pixels of a kernel row read at most 96 source
        bytes (stride 1 with iw == ow: 18; stride 2 up to 30 output columns), or stride 2
        along h with output rows of at most 64 columns (rows mode)."""
        (idp, _, iw), (odp, oh, ow) = geo.src, geo.dst
        sh, sw = geo.strides[1:]
        if not (ow < DW_FLAT_MAX_OW and idp == 1 and odp == 1 and oh * ow < 1 << 24):
            return False
        if (sh, sw) == (1, 1) and iw == ow:
            return True
        # (rows mode, stride 2 along h: each output row of at most 64 columns on its own,
        # 64-byte windows)
        return (dw_flat_span(oh, ow, iw, sh, sw) <= 96 or
                (sh == 2 and ow <= 64 and 15 * sw + 3 <= 64))

    def _dw3x3_px16(self, impl):
        """The column kernel runs exactly 16 channels at stride 1 along w four pixels per
        vector (ukernels/depthwise/dw3x3_px16_avx512.c) with the whole epilogue fused, chains
        of clip / hardswish / hardsigmoid too (the 64-channel panels' kernels hand those to
        the driver's epilogue)."""
        geo = self._geo
        return impl.kernel == "dw3x3" and geo.G == 16 and geo.strides[2] == 1


#: Output pixels per work item of the depthwise kernels without a sizing of their own (dw_rows3,
#: the general driver): two micro-tiles, one where that leaves threads without work.
DW_ITEM_TILES = 2
DW_TILE_ROWS = 32


def depthwise_item_pixels(geo, kernel, threads, dst_esz):
    """Output pixels per work item (the plan's mc) of an int8 depthwise plan running `kernel`
    (a dnnq.primitives._impls.CONV name) on `threads` threads: ConvPlan asks it again for each
    thread count it runs on (the primitive is made once, whatever the thread count then).

    On several threads each thread runs one contiguous share of the items, panels innermost
    (ConvPlan._launch): a band of output rows of every channel, the same band on every call,
    so its source and destination stay in its own cache and no destination line is written by
    two threads.  The items are sized so that the shares are even."""
    panels = -(-geo.OC // 64)
    ow = geo.dst[2]
    if kernel == "dw3x3_plain":
        return dw_plain_rows(geo, panels, threads) * ow
    if kernel == "dw3x3":
        return dw_rows_per_item(geo, panels, threads) * ow
    if kernel == "dw_rowsk":
        if threads == 1:
            return image_rows_per_item(geo, panels, 1) * ow
        return shared_image_block(geo, panels, threads, dst_esz)
    mc = DW_TILE_ROWS * DW_ITEM_TILES
    npix = geo.out_pixels
    while mc > DW_TILE_ROWS and geo.N * panels * -(-npix // mc) < 4 * threads:
        mc -= DW_TILE_ROWS
    return mc


def share_bounds(n, threads):
    """The threads' shares of n items: thread t runs items [b[t], b[t + 1]) first
    (dnnq_shares_init of ukernels/dnnq_kernels.h, the same split)."""
    return [t * n // threads for t in range(threads + 1)]


def shared_image_block(geo, panels, threads, dst_esz):
    """Pixels per item of dw_rowsk on several threads: each image cut into equal blocks of
    pixels (a row may be cut: its kernel takes any run of pixels) so that the images' blocks
    split evenly over the threads, with at least four items per thread (an item's set-up --
    the epilogue constants, the skipped kernel rows' zero-point sums -- is worth a few dozen
    pixels); block boundaries on whole destination cache lines (64 bytes) where the pixel
    size allows.  480 channels of 3 x 120 on two threads: rows 2 + 1 left one thread 1.3x the
    other's work; blocks of 180 pixels split it evenly."""
    npix = geo.out_pixels
    per_image = threads // math.gcd(geo.N, threads)  # blocks per image: N * B % threads == 0
    items_per_thread = panels * geo.N * per_image // threads
    blocks = per_image * max(1, -(-4 // items_per_thread))
    blocks = max(1, min(blocks, npix))
    line = 64 // math.gcd(64, geo.OC * dst_esz)  # pixels per whole number of lines
    mc = -(-(-(-npix // blocks)) // line) * line
    return max(1, min(mc, npix))


def dw_plain_rows(geo, panels, threads):
    """Output rows per work item of the plain kernel: whole planes, each channel's rows
    read and written in sequence (items of a few rows, as channels-last takes them, left
    every row to come back from L2 a panel later: 3x slower), cut into as few row blocks
    as give every thread one item, of an even count of rows at stride 1 along h (row
    pairs), and, where a few rows fewer allow it, an item count the threads divide.  An
    item costs about 2 us of set-up per 64 channels (per channel: its constants, the
    first rows from L2, the staging buffer's copy): dw2 (64 channels, 56 rows) at 2
    threads took 65 us in 8 items of 7 rows, 36 us in 2 of 28."""
    rows = geo.dst[0] * geo.dst[1]
    blocks = 1 if threads == 1 else max(1, -(-threads // (geo.N * panels)))
    step = 2 if geo.strides[1] == 1 else 1
    r0 = -(-rows // blocks)
    r0 = r0 + 1 if step == 2 and r0 % 2 and r0 < rows else r0
    for r in range(r0, max(step, r0 // 2) - 1, -step):
        if (geo.N * panels * -(-rows // r)) % threads == 0:
            return r
    return r0


def dw_rows_per_item(geo, panels, threads):
    """Output rows per work item of the column kernel: whole rows (it pairs two rows of
    an item at stride 1 along h), at least 64 pixels, fewer when that leaves threads
    without work, spread evenly over the blocks of an image."""
    oh, ow = geo.dst[1], geo.dst[2]
    pair = geo.strides[1] == 1
    rows = min(oh, max(2 if pair else 1, -(-64 // ow)))
    blocks = geo.N * geo.dst[0] * panels
    while rows > 1 and blocks * -(-oh // rows) < 4 * threads:
        rows -= 1
    nb = -(-oh // rows)
    rows = -(-oh // nb)
    if pair and rows % 2 and rows < oh:
        rows += 1
    if threads > 1 and blocks * -(-oh // rows) < 16 * threads:
        rows = dw_balanced_rows(geo, rows, panels, threads)
    return rows


def image_rows_per_item(geo, panels, threads):
    """Output rows per work item of the depthwise row kernel dw_rowsk on one thread and of
    the fold_lanes kernel: whole images (an item's set-up -- the epilogue constants, the
    skipped kernel rows' zero-point sums -- cost PP-OCR's 5x5 layers 7 % in items of 64
    pixels), cut into as few blocks of rows as give every thread four items."""
    rows = geo.dst[0] * geo.dst[1]
    units = geo.N * panels
    blocks = 1 if threads == 1 else min(rows, -(-4 * threads // units))
    return -(-rows // blocks)


def dw_balanced_rows(geo, rows, panels, threads):
    """Rows per item that even out the threads' shares (each thread runs a contiguous run of
    items, panels innermost: share_bounds): a short last block of rows otherwise leaves one
    thread with far less (e.g. 14 rows as 6 + 6 + 2)."""
    oh, ow = geo.dst[1], geo.dst[2]
    pair = geo.strides[1] == 1
    images = geo.N * geo.dst[0]

    def cost(r):
        # an output row costs ow pixels, a row left unpaired a quarter more, an item
        # about 16 pixels of set-up
        blocks = [min(r, oh - b) for b in range(0, oh, r)]
        items = [(b + 0.25 * (b % 2) if pair else b) * ow + 16
                 for b in blocks for _ in range(panels)] * images
        bounds = share_bounds(len(items), threads)
        return max(sum(items[bounds[t]:bounds[t + 1]]) for t in range(threads))

    best, best_cost = rows, cost(rows)
    for r in range(1, oh + 1):
        if (r * ow < 16 and r < rows) or images * panels * -(-oh // r) < 4 * threads:
            continue  # tiny items, or fewer than 4 per thread (dw6 ran 2x slower)
        c = cost(r)
        if c < best_cost * 0.97:
            best, best_cost = r, c
    return best
