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

from dnnq import _dispatch, _verbose


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
