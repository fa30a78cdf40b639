"""The dispatch table: for each primitive family an ordered list of implementations, best
first, and the one place where ISA decisions are made.

`choose(kind, table, **problem)` walks the list and returns the first implementation whose ISA
level the CPU runs under the cap and which accepts the problem; every implementation passed
over gets a reason, printed at DNNQ_VERBOSE=2:

    dnnq_verbose,dispatch,cpu,matmul,avx512_core_vnni:blocked,skipped avx512_core_amx:blocked (the CPU has no avx512_core_amx)

Each implementation also states how it multiplies an s8 source, the one numeric choice that
depends on the ISA:  "signed" (AMX tdpbssd: s8 x s8, no shift), "swap" (VNNI: the s8 source is
vpdpbusd's signed operand against weights packed as u8 = w + 128, 128 * rowsum folded back),
"xor" (the source XOR-ed to u8 = s8 + 128, -128 * colsum compensated).
"""
from dataclasses import dataclass
from typing import Callable, Optional

from dnnq.primitives import _dispatch, _verbose


@dataclass(frozen=True)
class Impl:
    name: str                   # impl_info
    isa: str                    # the ISA level of its kernels
    s8_src: str                 # "signed", "swap" or "xor" ("none": f32 kernels)
    reject: Optional[Callable] = None   # problem dict -> reason (str) or None


def isa_unavailable(isa):
    """None when kernels of level `isa` may run now, else the reason why not."""
    idx = _dispatch.ISA_LEVELS.index(isa)
    if idx > _dispatch._detected_level or not _dispatch._runnable[idx]:
        return f"the CPU has no {isa}"
    if idx > _dispatch._cap_level:
        return (f"above the ISA cap {_dispatch.ISA_LEVELS[_dispatch._cap_level]} "
                "(DNNQ_MAX_CPU_ISA / dnnq.set_max_cpu_isa)")
    if idx > _dispatch.effective_isa_level():
        return (f"set_int8_numerics({_dispatch.get_int8_numerics()!r}) runs the "
                f"{_dispatch.get_effective_cpu_isa()} level")
    return None


# Optional CPU features no ISA level implies, each with the lowest cap that allows it.  A cap
# at or below a level that does not include the feature turns it off (as DNNL_MAX_CPU_ISA
# does), so that DNNQ_MAX_CPU_ISA=avx512_core_vnni runs the instructions of that level only
# and the fallback paths are testable on any CPU.
OPTIONAL_FEATURES = {
    # byte lookups of the toolkit's 8-bit requantization (Ice Lake, Zen 4 and later; not part
    # of avx512_core_vnni, which Cascade Lake defines)
    "avx512_vbmi": ("avx512_core_vnni", "avx512_core_amx"),
}


def optional_feature(name, isa):
    """True when kernels of level `isa` may use the optional feature `name` now: the CPU has
    it, `isa` is a level it extends, and the ISA cap is above the levels that lack it."""
    base, min_cap = OPTIONAL_FEATURES[name]
    levels = _dispatch.ISA_LEVELS
    return (bool(_dispatch._features.get(name)) and
            levels.index(isa) >= levels.index(base) and
            _dispatch._cap_level >= levels.index(min_cap))


def dispatch_key():
    """Everything dispatch depends on besides the description: the primitive cache's key part
    (two caps with the same effective level may still differ in optional features)."""
    level = _dispatch.effective_isa_level()
    isa = _dispatch.ISA_LEVELS[level]
    return ((level, _dispatch.get_int8_numerics()) +
            tuple(optional_feature(f, isa) for f in OPTIONAL_FEATURES))


def _amx_rows(problem):
    if problem.get("M", 8) < 8:
        return ("fewer than 8 rows: the AVX512-VNNI row kernels stream the weights faster "
                "than AMX tiles")
    return None


#: MatMul, InnerProduct, the raw s32 GEMM (and convolution / RNN cells built on them)
GEMM = (
    Impl("avx512_core_amx:blocked", "avx512_core_amx", "signed", _amx_rows),
    Impl("avx512_core_vnni:blocked", "avx512_core_vnni", "swap"),
    Impl("avx2_vnni:blocked", "avx2_vnni", "swap"),
    Impl("avx2:blocked", "avx2", "xor"),
    Impl("portable:blocked", "default", "xor"),
)


#: f32 layers (f32 source and weights, ukernels/dnnq_f32.h): the FMA kernels.  AMX and AVX-VNNI
#: add nothing for f32, so those levels run the AVX-512 and AVX2 kernels; every level gives
#: the same bits (one accumulation order), so the choice is speed only.
F32 = (
    Impl("avx512_core_vnni:blocked_f32", "avx512_core_vnni", "none"),
    Impl("avx2:blocked_f32", "avx2", "none"),
    Impl("portable:blocked_f32", "default", "none"),
)


#: the RNN cells (LSTM, GRU, LBRGRU, VanillaRNN): the fused-cell driver of the vector width
#: (ukernels/rnn_impl.h); its layer and recurrent products run the GEMM micro-kernels of
#: exactly the level chosen, so every level is an entry
RNN = tuple(Impl(f"{'portable' if isa == 'default' else isa}:rnn_fused_cell", isa, "none")
            for isa in reversed(_dispatch.ISA_LEVELS))


#: the toolkit (eltwise, binary, softmax, reorder, sum, concat, pooling; ukernels/tk_*.h): one
#: build per vector width.  AMX and AVX-VNNI add nothing to it, so those levels run the
#: AVX-512 and AVX2 builds; every build gives the same bits.
TOOLKIT = (
    Impl("avx512", "avx512_core_vnni", "none"),
    Impl("avx2", "avx2", "none"),
    Impl("portable", "default", "none"),
)


def choose(kind, table, **problem):
    """The first implementation of `table` usable for `problem` (see the module docstring)."""
    skipped = []
    for impl in table:
        why = isa_unavailable(impl.isa) or (impl.reject(problem) if impl.reject else None)
        if why is None:
            if _verbose.enabled(2):
                _verbose.dispatch_line(kind, impl.name, skipped)
            return impl
        skipped.append((impl.name, why))
    raise RuntimeError(f"{kind}: no implementation accepted the problem: {skipped}")


# ---- convolution and deconvolution ----------------------------------------------------------
# The work-item kernels of ukernels/dnnq_conv.h, best first.  Creation builds the problem dict
# (dnnq/primitives/convolution.py `_conv_problem`) and walks the list once; the kernel chosen is
# stored in the plan (dnnq_conv_t.run_item), and the driver runs it for every work item
# without a second decision.  The choice depends on the problem and the cap only (`cap`:
# {"isa": the level the kernels run at, "vbmi": AVX512-VBMI allowed}); the C side checks once,
# at creation, that the plan fits it (dnnq_conv_check_kernel).  `impl_info` keeps the family
# name (`<isa>:dw`, `<isa>:brgconv`, ...); the entry's name is printed at DNNQ_VERBOSE=2 with
# the entries passed over and why.

@dataclass(frozen=True)
class ConvImpl:
    name: str                   # the kernel variant (verbose dispatch line)
    isa: str                    # the lowest ISA level its kernels need
    kernel: str                 # a _kernels._codes.CONV_KERNEL name, or "gemm" (GemmPlan)
    applies: Callable           # (problem, cap) -> None, or the reason it does not apply
    plain: int = 0              # the kernel's variant (dnnq_conv_t.plain): the depthwise
                                # plain-data one, the stem's VBMI row builder


def _why(*checks):
    """The first reason of (condition, reason) pairs whose condition fails, else None."""
    for ok, reason in checks:
        if not ok:
            return reason
    return None


def _dw3x3_geometry(p):
    return _why((p["dw_vnni4"], "not an AVX-512 depthwise plan with s8 weights taps by four "
                 "(a weights zero point takes s16 weights)"),
                (p["rows3"], "kernel rows are not three dense taps at stride 1 or 2 along w"),
                (p["k3x3"], "not a 3x3 kernel (kd = 1) at stride 1 or 2, no dilation"))


def _dw_plain(p, cap):
    return _dw3x3_geometry(p) or _why(
        (p["plain_io"], "src or dst is channels-last (the copies are not needed)"),
        (p["dw_fused"], "the epilogue is not the fused one (8-bit dst, relu / linear)"),
        (p["plain_ok"], "needs the C-level execute path, exact numerics and oneDNN's "
                        "fused-kernel order"))


def _dw_plain_flat(p, cap):
    return _dw_plain(p, cap) or _why((cap["vbmi"], "no AVX512-VBMI under the cap"),
                                     (p["dw_flat"], "the flat kernel's windows do not fit"))


def _dw_plain_cols(vbmi):
    def applies(p, cap):
        return _dw_plain(p, cap) or _why(
            (p["dst"][2] >= p["dw_plain_min_ow"], "output rows narrower than "
             f"{p['dw_plain_min_ow']} columns (the copies are faster)"),
            (not vbmi or (cap["vbmi"] and p["dw_plain_vbmi"]), "no AVX512-VBMI under the cap"))
    return applies


def _fold_lanes(p, cap):
    return _why((p["fold_lanes"], "not a convolution of at most 8 output channels over kernel "
                                  "rows of adjacent bytes (folded taps or one) whose 16 "
                                  "pixels' windows span 128 bytes (no weights zero point)"),
                (p["lanes_fused"], "the epilogue is not the fused one (8-bit dst, relu / "
                                   "linear / clip / hardswish / hardsigmoid)"),
                (cap["vbmi"], "no AVX512-VBMI under the cap"))


def _stem(p, cap):
    return _why((p["stem"], "not a convolution of at most 64 output channels over folded kernel "
                            f"rows whose whole window (KD KH KW IC) is at most "
                            f"{p['stem_max_k']} bytes (few input channels, no groups)"))


def _stem_vbmi(p, cap):
    return _stem(p, cap) or _why(
        (cap["vbmi"], "no AVX512-VBMI under the cap"),
        (p["stem_vbmi"], "a window over 32 bytes or 3 kernel rows (its rows are not built "
                         "by byte permutes)"))


def _tiles_fit(p):
    return _why((not p["deconv"] and not p["depthwise"], "a deconvolution or depthwise"),
                (p["tiles_size_ok"], "a geometry beyond the tile planner's sizes"))


def _phases(p, cap):
    return _why(
        (p["deconv"] and not p["depthwise"], "not a grouped or dense deconvolution"),
        (p["skip_zero_taps"], "turned off (dnnq.primitives._kernels._conv.set_skip_zero_taps)"),
        (p["kernel"][2] <= 64 and p["npairs"] <= 4096, "kernels over 64 columns or 4096 taps"),
        (min(p["pads"]) >= 0, "a negative padding"),
        (p["npairs"] <= 128 or not p["zp_row_nonzero"],
         "an s8 source or a source zero point with over 128 taps (the left-out taps' "
         "products are kept for up to 128)"))


def _kernel_is_stride(p, cap):
    return _why(
        (p["deconv"] and not p["depthwise"] and p["geo"].G == 1,
         "not an ungrouped deconvolution"),
        (p["kernel_is_stride"], "the kernel is not the stride along every dim (no padding, no "
                                "dilation)"),
        (p["ks_cols"] <= 64, "kernel columns x output channels over 64"),
        (p["ks_inputs_ok"], "a weights zero point, or a binary / select input that varies "
                            "along the batch or spatial dims"),
        (p["exact_sums"], "set_int8_numerics('avx2') (s16 pairs)"))


def _gemm_1x1(p, cap):
    return _why((p["is_gemm"], "not a 1x1, stride 1, unpadded, ungrouped convolution"))


def _gemm_1x1_amx(p, cap):
    # (the tiled path and deconv_ks have AMX entries too, tiles_amx and deconv_ks_amx;
    # depthwise, the column-phase deconvolution and the general driver run the AVX512-VNNI
    # kernels at the AMX level)
    return _gemm_1x1(p, cap) or _why(
        (p["exact_sums"], "set_int8_numerics('avx2') (s16 pairs)"),
        (_amx_rows({"M": p["gemm_pixels"]}) is None,
         "fewer than 8 pixels: the AVX512-VNNI row kernels stream the weights faster"))


#: the fewest bytes of K per tap (IC, or KW * IC for folded kernel rows) the AMX tiled path
#: takes: a tap's products fill at least a quarter of a 64-byte tile row, the rest padding
#: (a tile does about 8x the multiply-adds of AVX512-VNNI a cycle; fewer bytes: the VNNI
#: kernels, whose 4-byte k steps waste nothing)
AMX_MIN_KPAIR = 16


def _tiles_amx(p, cap):
    # the tiled path's micro-tiles of up to 32 pixels on AMX tiles (ukernels/gemm_amx.c's
    # batch-reduce kernel: dense rows straight into the tiles, rows by pointer and K tails
    # through a zero-padded copy)
    return _tiles_fit(p) or _why(
        (p["exact_sums"], "set_int8_numerics('avx2') (s16 pairs)"),
        (p["kpair"] >= AMX_MIN_KPAIR,
         f"fewer than {AMX_MIN_KPAIR} bytes of K per tap (IC, or KW * IC folded): a 64-byte "
         "tile row would be mostly padding"),
        (_amx_rows({"M": p["gemm_pixels"]}) is None,
         "fewer than 8 pixels: the AVX512-VNNI row kernels stream the weights faster"))


def _deconv_ks_amx(p, cap):
    # the deconv_ks GEMMs (M = a source row's pixels) on AMX tiles of up to 32 rows
    return _kernel_is_stride(p, cap) or _why(
        (p["ks_cols"] > 2, "kernel columns x output channels of 2 or fewer (the AVX-512 "
                           "kernel with pixels in the lanes)"),
        (p["kpair"] >= AMX_MIN_KPAIR,
         f"fewer than {AMX_MIN_KPAIR} input channels: a 64-byte tile row would be mostly "
         "padding"),
        (p["geo"].src[2] >= 8, "source rows of fewer than 8 pixels (the rows of a GEMM)"))


#: int8 convolutions and deconvolutions
CONV = (
    ConvImpl("fold_lanes", "avx512_core_vnni", "fold_lanes", _fold_lanes),
    ConvImpl("stem_vbmi", "avx512_core_vnni", "stem", _stem_vbmi, plain=1),
    ConvImpl("stem", "avx512_core_vnni", "stem", _stem),
    ConvImpl("brgconv_1x1_amx", "avx512_core_amx", "gemm", _gemm_1x1_amx),
    ConvImpl("brgconv_1x1", "default", "gemm", _gemm_1x1),
    ConvImpl("dw3x3_plain_flat", "avx512_core_vnni", "dw3x3_plain", _dw_plain_flat, plain=3),
    ConvImpl("dw3x3_plain_vbmi", "avx512_core_vnni", "dw3x3_plain", _dw_plain_cols(True),
             plain=2),
    ConvImpl("dw3x3_plain", "avx512_core_vnni", "dw3x3_plain", _dw_plain_cols(False), plain=1),
    ConvImpl("dw3x3", "avx512_core_vnni", "dw3x3", lambda p, cap: _dw3x3_geometry(p)),
    ConvImpl("dw_rows3", "avx512_core_vnni", "dw_rows3",
             lambda p, cap: _why((p["dw_vnni4"], "not an AVX-512 depthwise plan with s8 "
                                                 "weights taps by four"),
                                 (p["rows3"], "kernel rows are not three dense taps at "
                                              "stride 1 or 2 along w"))),
    ConvImpl("dw_rowsk", "avx512_core_vnni", "dw_rowsk",
             lambda p, cap: _why((p["dw_vnni4"], "not an AVX-512 depthwise plan with s8 "
                                                 "weights taps by four"),
                                 (p["rowsk"], "kernel rows are not 4 - 16 dense taps at "
                                              "stride 1 or 2 along w"))),
    ConvImpl("dw", "default", "general",
             lambda p, cap: _why((p["depthwise"], "not depthwise"))),
    ConvImpl("tiles_amx", "avx512_core_amx", "tiles", _tiles_amx),
    ConvImpl("tiles", "default", "tiles", lambda p, cap: _tiles_fit(p)),
    ConvImpl("deconv_ks_amx", "avx512_core_amx", "deconv_ks", _deconv_ks_amx),
    ConvImpl("deconv_ks", "default", "deconv_ks", _kernel_is_stride),
    ConvImpl("deconv_phases", "default", "deconv_phases", _phases),
    ConvImpl("general", "default", "general", lambda p, cap: None),
)

#: f32 layers (the level comes from F32)
CONV_F32 = (
    ConvImpl("brgconv_1x1_f32", "default", "gemm", _gemm_1x1),
    ConvImpl("dw_f32", "default", "f32_dw",
             lambda p, cap: _why((p["depthwise"], "not depthwise"))),
    ConvImpl("tiles_f32", "default", "f32_tiles", lambda p, cap: _tiles_fit(p)),
    ConvImpl("deconv_ks_f32", "default", "f32_deconv_ks", _kernel_is_stride),
    ConvImpl("deconv_f32", "default", "f32_deconv",
             lambda p, cap: _why((p["deconv"], "not a deconvolution"),
                                 (p["kernel"][2] <= 64, "kernels over 64 columns"))),
    ConvImpl("general_f32", "default", "f32_general", lambda p, cap: None),
)


def conv_cap(isa):
    """What the convolution list may use besides the level `isa` the kernels run at."""
    return {"isa": isa, "vbmi": optional_feature("avx512_vbmi", isa)}


def choose_conv(kind, table, problem, cap):
    """The first entry of a convolution list that applies (see the block comment above)."""
    skipped = []
    for impl in table:
        why = isa_unavailable(impl.isa) or impl.applies(problem, cap)
        if why is None:
            if _verbose.enabled(2):
                _verbose.dispatch_line(kind, f"{cap['isa']}:{impl.name}", skipped)
            return impl
        skipped.append((f"{cap['isa']}:{impl.name}", why))
    raise RuntimeError(f"{kind}: no implementation accepted the problem: {skipped}")
