"""Creation-time pieces of Convolution / Deconvolution: the geometry check (SPEC section 6,
oneDNN's output-size formulas), the weights in the (G, taps, ICg, OCg) form, and their packing
for the implicit-GEMM driver and the depthwise kernel (layouts in ukernels/dnnq_conv.h)."""
from numbers import Integral

import numpy as np

from dnnq.errors import InvalidArguments
from dnnq.primitives._kernels._conv import DW_ROWSK_KW
from dnnq.primitives._kernels._gemm import AMX_B_SLACK
from dnnq.primitives._plan import aligned_empty

NR = 64
#: zero bytes after the int8 panels: the AMX kernels (1x1 GEMMs, the tiled path) read up to
#: 15 k-group rows of 4 x NR bytes past a panel's end (ukernels/dnnq_kernels.h), as
#: _gemm.packed_size allows for
AMX_SLACK = AMX_B_SLACK


def spatial_param(prim, name, value, nsp, lo, default=None):
    """A per-spatial-dimension parameter: an int (for all) or `nsp` ints, each >= lo."""
    if value is None:
        if default is None:
            raise InvalidArguments(f"{prim}: {name} is required (one int or {nsp} ints)")
        return (default,) * nsp
    if isinstance(value, Integral) and not isinstance(value, bool):
        vals = (int(value),) * nsp
    else:
        try:
            vals = tuple(value)
        except TypeError:
            raise InvalidArguments(f"{prim}: {name} got {value!r}; expected an int or {nsp} "
                                   "ints") from None
        if len(vals) != nsp or any(isinstance(v, bool) or not isinstance(v, Integral)
                                   for v in vals):
            raise InvalidArguments(f"{prim}: {name} got {value!r}; expected {nsp} ints (one "
                                   "per spatial dimension)")
        vals = tuple(int(v) for v in vals)
    for v in vals:
        if v < lo:
            raise InvalidArguments(f"{prim}: {name} got {vals}; expected values >= {lo}")
    return vals


class ConvGeometry:
    """N, G, ICg, OCg and the per-dimension (D, H, W) geometry of a (de)convolution, 1-D and
    2-D problems padded to 3-D with size-1 dimensions (kernel 1, stride 1, no padding)."""

    def __init__(self, prim, deconv, src_dims, wei_dims, dst_dims, strides, padding_l,
                 padding_r, dilates, fold=True, fold_wide=False):
        nd = len(src_dims)
        nsp = nd - 2
        grouped = len(wei_dims) == nd + 1
        if grouped:
            G, OCg, ICg = wei_dims[:3]
        else:
            G, (OCg, ICg) = 1, wei_dims[:2]
        ks = tuple(wei_dims[-nsp:])
        N, IC = src_dims[:2]
        if IC != G * ICg:
            raise InvalidArguments(f"{prim}: src channels {IC} (dims {tuple(src_dims)}) must be "
                                   f"groups x input channels per group = {G} x {ICg} = {G * ICg} "
                                   f"from weights dims {tuple(wei_dims)}")
        if dst_dims[0] != N:
            raise InvalidArguments(f"{prim}: dst batch {dst_dims[0]} must equal src batch {N}")
        if dst_dims[1] != G * OCg:
            raise InvalidArguments(f"{prim}: dst channels {dst_dims[1]} (dims {tuple(dst_dims)}) "
                                   f"must be groups x output channels per group = {G} x {OCg} "
                                   f"= {G * OCg} from weights dims {tuple(wei_dims)}")
        st = spatial_param(prim, "strides", strides, nsp, 1)
        pl = spatial_param(prim, "padding_l", padding_l, nsp, 0)
        pr = spatial_param(prim, "padding_r", padding_r, nsp, 0)
        dl = spatial_param(prim, "dilates", dilates, nsp, 0, default=0)
        isp, osp = tuple(src_dims[2:]), tuple(dst_dims[2:])
        want = []
        for i in range(nsp):
            ext = (ks[i] - 1) * (dl[i] + 1) + 1
            if deconv:
                o = (isp[i] - 1) * st[i] - pl[i] - pr[i] + ext
                if o < 1:
                    raise InvalidArguments(
                        f"{prim}: spatial dim {i}: (src {isp[i]} - 1) * stride {st[i]} - padding "
                        f"{pl[i]} + {pr[i]} + dilated kernel {ext} = {o}; expected >= 1")
            else:
                if ext > isp[i] + pl[i] + pr[i]:
                    raise InvalidArguments(
                        f"{prim}: spatial dim {i}: dilated kernel extent {ext} (kernel {ks[i]}, "
                        f"dilation {dl[i]}) is larger than the padded src {isp[i]} + "
                        f"{pl[i]} + {pr[i]} = {isp[i] + pl[i] + pr[i]}")
                o = (isp[i] + pl[i] + pr[i] - ext) // st[i] + 1
            want.append(o)
        if tuple(want) != osp:
            kind = ("(I - 1) * S - PL - PR + (K - 1) * (D + 1) + 1" if deconv else
                    "(I + PL + PR - (K - 1) * (D + 1) - 1) // S + 1")
            raise InvalidArguments(f"{prim}: dst spatial dims {osp} do not match the geometry: "
                                   f"expected {tuple(want)} = {kind} from src {isp}, kernel "
                                   f"{ks}, strides {st}, padding {pl} / {pr}, dilates {dl}")

        def pad3(t, fill):
            return (fill,) * (3 - nsp) + tuple(t)

        self.deconv = deconv
        self.nsp, self.grouped = nsp, grouped
        self.N, self.G, self.ICg, self.OCg = N, G, ICg, OCg
        self.IC, self.OC = G * ICg, G * OCg
        self.src = pad3(isp, 1)
        self.dst = pad3(osp, 1)
        self.kernel = pad3(ks, 1)
        self.strides = pad3(st, 1)
        self.dilates = pad3(dl, 0)
        self.steps = tuple(d + 1 for d in self.dilates)
        self.pads = pad3(pl, 0)
        self.pads_r = pad3(pr, 0)
        self.user = dict(strides=st, padding_l=pl, padding_r=pr, dilates=dl)
        self.ntaps = int(np.prod(self.kernel))
        self.out_pixels = int(np.prod(self.dst))
        self.depthwise = grouped and ICg == 1 and OCg == 1
        # 1x1, stride 1, no padding, no groups: a plain GEMM over the channels-last pixels
        self.is_gemm = (G == 1 and not self.depthwise and self.kernel == (1, 1, 1) and
                        self.strides == (1, 1, 1) and not any(self.pads) and
                        not any(self.pads_r))
        kd, kh, kw = self.kernel
        # the first-layer shape (few channels): the KW taps of one kernel row are adjacent in a
        # channels-last row, so they form one reduction of KW * IC (border rows gathered)
        # (not under set_int8_numerics("avx2"): its s16 pairs must stay within one tap).
        # Long kernels over one to eight channels (a 1-D STFT of 256 taps) fold too: taps of
        # K = IC cost a pair each (5x the time of one K = 256 reduction)
        # fold_wide (the caller's level runs AMX tiles): any IC that is not a multiple of 64
        # folds too -- a tap's last 64-byte block of K goes through a zero-padded copy per
        # micro-tile, a kernel row's KW taps folded make one such block instead of KW (PP-OCRv4
        # det's 3x3 convolutions over 96 channels: 2.7 -> 1.9 ms); the s32 sums are the
        # same either way
        self.fold_kw = (fold and not deconv and not self.depthwise and G == 1 and kw > 1 and
                        self.steps[2] == 1 and kd * kh <= 64 and
                        (kw * self.IC <= 64 or (self.IC <= 8 and kw * self.IC <= 1024) or
                         (fold_wide and self.IC % 64 != 0 and kw * self.IC <= 4096)))
        if self.depthwise:
            self.kpair, self.npairs = 1, self.ntaps
        elif self.fold_kw:
            self.kpair, self.npairs = kw * self.IC, kd * kh
        else:
            self.kpair, self.npairs = ICg, self.ntaps

    def tap_index(self, dim):
        """(K, O) int array: the source index each (tap, output) reads along spatial dim
        `dim` (0..2 of D, H, W), or -1."""
        K, O, S = self.kernel[dim], self.dst[dim], self.strides[dim]
        st, p, I = self.steps[dim], self.pads[dim], self.src[dim]
        o = np.arange(O)[None, :]
        k = np.arange(K)[:, None]
        if self.deconv:
            x = o + p - k * st
            ok = (x >= 0) & (x % S == 0)
            x = np.where(ok, x // S, -1)
        else:
            x = o * S - p + k * st
        return np.where((x >= 0) & (x < I), x, -1)

    def key(self):
        return (self.deconv, self.N, self.G, self.ICg, self.OCg, self.src, self.dst, self.kernel,
                self.strides, self.steps, self.pads)


def canonical_weights(geo, w):
    """Logical weights ([G,] OCg, ICg, *k) -> int8 (G, taps, ICg, OCg), taps in (kd, kh, kw)
    order."""
    w = np.asarray(w)
    if not geo.grouped:
        w = w[None]
    G, OCg, ICg = w.shape[:3]
    w = w.reshape(G, OCg, ICg, geo.ntaps)
    return np.ascontiguousarray(w.transpose(0, 3, 2, 1))


def halve_weights(w):
    """rne(w / 2) as int8: oneDNN's weights reorder with scale_adjust 0.5 (no VNNI)."""
    return np.rint(w.astype(np.float32) * np.float32(0.5)).astype(np.int8)


def pack_gemm(geo, wc):
    """(G, taps, ICg, OCg) -> the driver's packed panels [g][p][pair][K4 * 4 * 64] (int8)."""
    G, OCg = geo.G, geo.OCg
    kpair, npairs = geo.kpair, geo.npairs
    wp = wc.reshape(G, npairs, kpair, OCg)  # fold: t = pair * KW + kw, k = kw * IC + ic
    K4 = (kpair + 3) // 4
    P = (OCg + NR - 1) // NR
    full = np.zeros((G, npairs, K4 * 4, P * NR), np.int8)
    full[:, :, :kpair, :OCg] = wp
    blocks = full.reshape(G, npairs, K4, 4, P, NR).transpose(0, 4, 1, 2, 5, 3)
    out = aligned_empty(blocks.size + AMX_SLACK, np.int8)
    out[:blocks.size] = blocks.reshape(-1)
    out[blocks.size:] = 0
    return out


def pack_gemm_f32(geo, wc):
    """f32 (G, taps, ICg, OCg) -> the f32 driver's panels [g][p][pair][kpair][64] (f32, zeros
    past OCg; ukernels/dnnq_f32.h)."""
    G, OCg = geo.G, geo.OCg
    kpair, npairs = geo.kpair, geo.npairs
    P = (OCg + NR - 1) // NR
    full = np.zeros((G, npairs, kpair, P * NR), np.float32)
    full[..., :OCg] = wc.reshape(G, npairs, kpair, OCg)  # fold: k = kw * IC + ic
    blocks = full.reshape(G, npairs, kpair, P, NR).transpose(0, 3, 1, 2, 4)
    out = aligned_empty(blocks.size, np.float32)
    out[:] = blocks.reshape(-1)
    return out


def pack_depthwise_f32(wct):
    """f32 depthwise weights (C, taps) -> [panel][tap][64] f32 (zeros past C)."""
    C, T = wct.shape
    P = (C + NR - 1) // NR
    wd = np.zeros((P * NR, T), np.float32)
    wd[:C] = wct
    out = aligned_empty(P * T * NR, np.float32)
    out[:] = wd.reshape(P, NR, T).transpose(0, 2, 1).reshape(-1)
    return out


def pack_depthwise(geo, wct, layout):
    """Depthwise weights (C, taps) -> one of the kernels' layouts (channels past C are 0):

    * ``"natural"`` (portable / AVX2): s16 [panel][tap][64];
    * ``"pairs"`` (AVX-512, s16 weights: s8 minus a weights zero point): per panel, per tap
      pair, per half of 32 channels, the vpunpck{l,h}wd interleave of the pair's weights
      ("lo" then "hi" vector; see ukernels/depthwise/dw_tile_avx512.c);
    * ``"vnni4"`` (AVX-512, s8 weights): per panel, per group of four taps, 4 vectors k of 64
      bytes with byte 16 L + 4 j + i = w[4 g + i][16 L + 4 k + j], then 64 s32 of
      -128 * sum_taps w in the same (k, L, j) order (the s8 source's compensation); with
      KW = 3, then per kernel row the row kernel's four shifted variants A, B, C, D (4 bytes
      per channel, same byte order; ukernels/depthwise/dw_rows3_avx512.c); with a 3x3 kernel,
      then per kw the column kernel's variants A = (w[0][kw], w[1][kw], w[2][kw], 0) and
      B = (0, w[0][kw], w[1][kw], w[2][kw]) over the kernel rows
      (ukernels/depthwise/dw3x3_avx512.c); with KW = 4 .. 16 (`DW_ROWSK_KW`), then per
      kernel row its KW + 3 variants d = -3 .. KW - 1, bytes (w[d], .., w[d + 3]) with the
      taps outside the row zero (same byte order; ukernels/depthwise/dw_rowsk_avx512.c).

    The result is an s16 array (the vnni4 bytes viewed as s16)."""
    C, T = wct.shape
    P = (C + NR - 1) // NR
    if layout == "vnni4":
        G4 = (T + 3) // 4
        wd = np.zeros((P, 4, 4, 4, G4 * 4), np.int8)  # (P, L, k, j, tap) channel 16L+4k+j
        wd.reshape(P * NR, G4 * 4)[:C, :T] = wct
        # byte order within a panel: (g, k, L, j, i)
        w = wd.reshape(P, 4, 4, 4, G4, 4).transpose(0, 4, 2, 1, 3, 5).reshape(P, G4 * 256)
        comp = np.zeros((P, 4, 4, 4), np.int32)  # (P, L, k, j)
        comp.reshape(P * NR)[:C] = -128 * wct.astype(np.int64).sum(axis=1)
        comp = comp.transpose(0, 2, 1, 3).reshape(P, NR)
        parts = [w, comp.view(np.int8).reshape(P, 4 * NR)]
        if geo.kernel[2] == 3:  # kernel rows of three taps: the row kernel's variants
            rows = wct.reshape(C, T // 3, 3)
            var = np.zeros((P * NR, T // 3, 4, 4), np.int8)  # (channel, row, variant, byte)
            for v, taps in enumerate(((0, 1, 2, None), (None, 0, 1, 2), (None, None, 0, 1),
                                      (2, None, None, None))):
                for i, t in enumerate(taps):
                    if t is not None:
                        var[:C, :, v, i] = rows[:, :, t]
            # (P, L, k, j, row, v, i) -> (P, row, v, k, L, j, i)
            var = var.reshape(P, 4, 4, 4, T // 3, 4, 4).transpose(0, 4, 5, 2, 1, 3, 6)
            parts.append(var.reshape(P, -1))
        if tuple(geo.kernel) == (1, 3, 3):  # the 3x3 column kernel's variants A, B per kw
            cols = wct.reshape(C, 3, 3)  # (channel, kh, kw)
            var = np.zeros((P * NR, 3, 2, 4), np.int8)  # (channel, kw, variant, byte)
            var[:C, :, 0, 0:3] = cols.transpose(0, 2, 1)
            var[:C, :, 1, 1:4] = cols.transpose(0, 2, 1)
            # (P, L, k, j, kw, v, i) -> (P, kw, v, k, L, j, i)
            var = var.reshape(P, 4, 4, 4, 3, 2, 4).transpose(0, 4, 5, 2, 1, 3, 6)
            parts.append(var.reshape(P, -1))
        if _rowsk(geo):  # kernel rows of 4 .. 16 taps: the rowsk variants
            KW = geo.kernel[2]
            rows = wct.reshape(C, T // KW, KW)
            var = np.zeros((P * NR, T // KW, KW + 3, 4), np.int8)  # (channel, row, d, byte)
            for d in range(-3, KW):
                for i in range(4):
                    if 0 <= d + i < KW:
                        var[:C, :, d + 3, i] = rows[:, :, d + i]
            # (P, L, k, j, row, d, i) -> (P, row, d, k, L, j, i)
            var = var.reshape(P, 4, 4, 4, T // KW, KW + 3, 4).transpose(0, 4, 5, 2, 1, 3, 6)
            parts.append(var.reshape(P, -1))
        blocks = np.concatenate(parts, axis=1)
        out = aligned_empty(blocks.size // 2, np.int16)
        out.view(np.int8)[:] = blocks.reshape(-1)
        return out
    wd = np.zeros((P * NR, T + (T % 2 if layout == "pairs" else 0)), np.int16)
    wd[:C, :T] = wct
    if layout == "natural":
        out = aligned_empty(P * T * NR, np.int16)
        out[:] = wd.reshape(P, NR, T).transpose(0, 2, 1).reshape(-1)
        return out
    Q = wd.shape[1] // 2
    # (P, halves 2, lanes 4, j 8, pair Q, tap-in-pair 2)
    w = wd.reshape(P, 2, 4, 8, Q, 2)
    lo = w[:, :, :, :4]   # (P, 2, 4, 4, Q, 2): lane-local channels 0..3
    hi = w[:, :, :, 4:]
    # vector element order within a lane: (j, tap-in-pair); lanes concatenated
    lo = lo.transpose(0, 4, 1, 2, 3, 5).reshape(P, Q, 2, 32)
    hi = hi.transpose(0, 4, 1, 2, 3, 5).reshape(P, Q, 2, 32)
    blocks = np.stack([lo, hi], axis=3)  # (P, Q, halves, lo/hi, 32)
    out = aligned_empty(blocks.size, np.int16)
    out[:] = blocks.reshape(-1)
    return out


def _rowsk(geo):
    """The vnni4 weights carry the rowsk block (kernel rows of KW = 4 .. 16 taps)."""
    return DW_ROWSK_KW[0] <= geo.kernel[2] <= DW_ROWSK_KW[1]


def depthwise_panel_stride(geo, layout):
    """s16 elements per 64-channel panel of the packed depthwise weights (f32 elements for
    the f32 layout)."""
    if layout == "f32":
        return geo.ntaps * NR
    if layout == "vnni4":
        rows3 = (geo.ntaps // 3) * 512 if geo.kernel[2] == 3 else 0
        cols3 = 768 if tuple(geo.kernel) == (1, 3, 3) else 0
        rowsk = (geo.ntaps // geo.kernel[2]) * (geo.kernel[2] + 3) * 128 if _rowsk(geo) else 0
        return ((geo.ntaps + 3) // 4) * 128 + 2 * NR + rows3 + cols3 + rowsk
    return ((geo.ntaps + 1) // 2) * 2 * NR if layout == "pairs" else geo.ntaps * NR


def window_sums(geo, x, zs):
    """rowsum (N, G, pixels) s32: per output pixel and group, the sum of (src - zp_src) over
    the taps that read a source pixel (weights zero point compensation)."""
    N = geo.N
    xs = x.reshape((N,) + geo.src + (geo.G, geo.ICg)).astype(np.int64)
    xs = xs - zs.reshape(geo.G, geo.ICg) if zs.size > 1 else xs - int(zs[0])
    gs = xs.sum(axis=-1)  # (N, D, H, W, G)
    gs = np.pad(gs, ((0, 0), (0, 1), (0, 1), (0, 1), (0, 0)))  # index -1 reads a zero
    idx = [geo.tap_index(d) for d in range(3)]
    acc = np.zeros((N,) + geo.dst + (geo.G,), np.int64)
    for kd in range(geo.kernel[0]):
        for kh in range(geo.kernel[1]):
            for kw in range(geo.kernel[2]):
                acc += gs[:, idx[0][kd][:, None, None], idx[1][kh][None, :, None],
                          idx[2][kw][None, None, :], :]
    return np.ascontiguousarray(_wrap_s32(np.moveaxis(acc.reshape(N, -1, geo.G), 2, 1)))


def _wrap_s32(x):
    return np.asarray(x, dtype=np.int64).astype(np.uint64).astype(np.uint32).view(np.int32)


class PackedConvWeights:
    """Weights packed once by ``prepare_weights``: the kernel's layout, the column sums used by
    the compensation (``colsum`` (OC,), per tap ``tapsum`` (G, taps, OCg)), and the plain
    (G, taps, ICg, OCg) weights for the per-execution compensation of per-channel source zero
    points and weights zero points.

    f32 weights (an f32 layer, ``dw_layout`` "f32"): ``packed`` / ``dw`` in the f32 layouts
    (pack_gemm_f32, pack_depthwise_f32), ``plain`` f32, the column sums zeros.

    Immutable (attributes cannot be set, arrays are read-only); ``owner`` is the key of the
    primitive description they were packed for, ``origin`` that primitive.  Execution checks
    both the owner and the sizes (``check_sizes``).  Pickling stores the plain weights and the
    primitive, and packs again when loaded."""

    __slots__ = ("packed", "dw", "colsum", "tapsum", "plain", "logical", "owner", "origin",
                 "_comp")

    def __init__(self, geo, w, owner, dw_layout="natural", origin=None, halve=False):
        logical = canonical_weights(geo, w)
        if dw_layout == "f32":
            self._init_f32(geo, logical, owner, origin)
            return
        # set_int8_numerics("avx2") with an s8 source: oneDNN without VNNI halves the weights
        # when it reorders them (round half to even) and doubles the scale; `plain` is what
        # the kernels multiply, `logical` the caller's weights (for pickling)
        wc = halve_weights(logical) if halve else logical
        w64 = wc.astype(np.int64)
        tapsum = w64.sum(axis=2)                    # (G, taps, OCg)
        colsum = tapsum.sum(axis=1).reshape(-1)  # (OC,) int64
        if geo.depthwise:
            packed = None
            dw = pack_depthwise(geo, wc.reshape(geo.G, geo.ntaps), dw_layout)
        else:
            packed, dw = pack_gemm(geo, wc), None
        for name, value in (("plain", wc), ("logical", logical), ("tapsum", tapsum),
                            ("colsum", colsum), ("packed", packed), ("dw", dw)):
            if value is not None:
                value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "_comp", {})

    def _init_f32(self, geo, wc, owner, origin):
        wc = wc.astype(np.float32, copy=False)
        tapsum = np.zeros((geo.G, geo.ntaps, geo.OCg), np.int64)
        colsum = np.zeros(geo.OC, np.int64)
        if geo.depthwise:
            packed, dw = None, pack_depthwise_f32(wc.reshape(geo.G, geo.ntaps))
        else:
            packed, dw = pack_gemm_f32(geo, wc), None
        for name, value in (("plain", wc), ("logical", wc), ("tapsum", tapsum),
                            ("colsum", colsum), ("packed", packed), ("dw", dw)):
            if value is not None:
                value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "owner", owner)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "_comp", {})

    def __setattr__(self, name, value):
        raise AttributeError("PackedConvWeights is immutable")

    def __delattr__(self, name):
        raise AttributeError("PackedConvWeights is immutable")

    def __reduce__(self):
        if self.origin is None:
            raise TypeError("PackedConvWeights without their primitive cannot be pickled")
        return (_repack, (self.origin, self.origin._weights_from_plain(self.logical)))

    def for_owner(self, owner):
        """The same packed weights, accepted by another primitive of the same weights geometry
        (the bands of a fused depthwise chain)."""
        other = object.__new__(PackedConvWeights)
        for name in self.__slots__:
            object.__setattr__(other, name, getattr(self, name))
        object.__setattr__(other, "owner", owner)
        return other

    def comp_for_shift(self, shift):
        """-shift * colsum as wrapping s32, cached per shift (s8 +128 and a common zp)."""
        c = self._comp.get(shift)
        if c is None:
            c = (-shift * self.colsum).astype(np.uint64).astype(np.uint32).view(np.int32)
            if len(self._comp) >= 16:
                self._comp.clear()
            self._comp[shift] = c
        return c

    def check_sizes(self, sizes, prim):
        """Raise InvalidArguments unless the arrays have the sizes ``sizes`` (from
        ``packed_sizes`` of the executing primitive's geometry)."""
        packed, dw = self.packed, self.dw
        got = (None if packed is None else packed.size, None if dw is None else dw.size,
               self.plain.size, self.colsum.size)
        if got != sizes:
            raise InvalidArguments(f"{prim}.execute: packed weights have sizes {got} (packed, "
                                   f"depthwise, plain, colsum); this primitive expects {sizes}")

    @property
    def nbytes(self):
        return ((self.packed.nbytes if self.packed is not None else 0) +
                (self.dw.nbytes if self.dw is not None else 0) + self.colsum.nbytes)


def packed_sizes(geo, dw_layout):
    """Element counts (packed, depthwise, plain, colsum) of PackedConvWeights for ``geo``."""
    plain = geo.G * geo.ntaps * geo.ICg * geo.OCg
    if dw_layout == "f32":  # an f32 layer: no K padding to multiples of 4
        P = ((geo.G if geo.depthwise else geo.OCg) + NR - 1) // NR
        if geo.depthwise:
            return (None, P * geo.ntaps * NR, plain, geo.OC)
        return (geo.G * geo.npairs * geo.kpair * P * NR, None, plain, geo.OC)
    if geo.depthwise:
        P = (geo.G + NR - 1) // NR
        return (None, P * depthwise_panel_stride(geo, dw_layout), plain, geo.OC)
    K4 = (geo.kpair + 3) // 4
    P = (geo.OCg + NR - 1) // NR
    return (geo.G * geo.npairs * K4 * 4 * P * NR + AMX_SLACK, None, plain, geo.OC)


def _repack(origin, w):
    """Unpickling of PackedConvWeights: pack the plain weights with their primitive."""
    return origin.prepare_weights(w)
