"""Which oneDNN 3.2 results a test may compare bit for bit with dnnq's default numerics.

dnnq's default ("exact") numerics are a function of the problem alone (docs/numerics.md,
"Across machines").  oneDNN's are not: the kernel it runs depends on the host's CPU features,
and some of its kernels compute u8 x s8 products through `vpmaddubsw`, whose s16 pair sums
saturate (its AVX2 and AVX-512 kernels without VNNI, which it also takes on an AVX-512 VNNI CPU
without AVX-VNNI for a few problems it has no VNNI kernel for).  A test compares with oneDNN
where its kernel computes exact dot products, and with the numpy model elsewhere; a test that
asserts which kernel oneDNN picks states the host it models (`MODELLED_HOST`) and skips
visibly on others.
"""
import re

import pytest

import dnnq
from dnnq.testing import _capi

# ISA names in oneDNN's implementation names whose int8 dot products are exact (VNNI or AMX;
# every level above avx512_core_vnni includes VNNI)
_EXACT_ISA = re.compile(r"vnni|amx|bf16|fp16|avx10")
_ISA_TOKEN = re.compile(r"(?:^|[:+_])((?:avx512_core|avx2|avx|sse41|avx10)[a-z0-9_]*)")


def kernel_isa(impl):
    """The ISA named in a oneDNN implementation name ("jit_uni_int8:avx2" -> "avx2",
    "brg_conv:avx2_vnni+brgconv_strided" -> "avx2_vnni"), or None (reference and GEMM-based
    kernels name none)."""
    m = _ISA_TOKEN.search(impl)
    return m.group(1) if m else None


def exact_dot_products(impl):
    """True when oneDNN's kernel `impl` (its implementation name) accumulates u8 x s8 products
    exactly in s32 on this process's oneDNN: reference kernels always; a kernel naming its ISA
    when that ISA has VNNI / AMX; GEMM-based kernels when oneDNN's effective ISA has VNNI."""
    if impl.startswith("ref") or ":ref" in impl or "ref:any" in impl:
        return True
    isa = kernel_isa(impl)
    if isa is not None:
        return bool(_EXACT_ISA.search(isa))
    return _capi.has_vnni()


def _modelled_host():
    """The CPU whose oneDNN kernel choices dnnq's order rules model (_conv_impl.py): oneDNN at
    avx512_core_vnni / avx512_core_bf16 on a CPU without AVX-VNNI and AMX (AMD Zen 4, Intel
    Cascade Lake and Ice Lake server)."""
    try:
        isa = _capi.cpu_isa()
    except Exception:  # noqa: BLE001 - no oneDNN: nothing to compare with anyway
        return False, "oneDNN is not available"
    feats = dnnq.cpu_info()
    # (the CPU's own features: DNNQ_EMULATE_* gives dnnq, not oneDNN, the emulated ones)
    extra = [f for f, emu in (("avx_vnni", "avx_vnni_emulated"), ("amx_int8", "amx_emulated"))
             if feats.get(f) and not feats.get(emu)]
    ok = isa in ("avx512_core_vnni", "avx512_core_bf16") and not extra
    why = f"oneDNN runs at {isa}" + (f", the CPU has {', '.join(extra)}" if extra else "")
    return ok, why


MODELLED_HOST, HOST_DESCRIPTION = _modelled_host()

#: a test asserting which kernel oneDNN 3.2 picks: valid on the modelled host only
requires_modelled_host = pytest.mark.skipif(
    not MODELLED_HOST,
    reason="asserts oneDNN 3.2's kernel choice on an AVX512-VNNI CPU without AVX-VNNI or "
           f"AMX (the host dnnq's order rules model); here {HOST_DESCRIPTION}")
