"""Python side of the blocked GEMM pipeline shared by MatMul, InnerProduct, GEMM, convolution
and RNN cells: weight packing into `PackedGemmWeights`, and the raw s32 product used by tests
and by the primitives' compensation paths.

Numbering shared with ukernels/dnnq_kernels.h (data types, post-op kinds, algorithms).
"""
import numpy as np

from dnnq._kernels import _gemm
from dnnq import _dispatch

DT_CODE = {"f32": 0, "s32": 1, "s8": 2, "u8": 3}
ISA_CODE = {name: i for i, name in enumerate(_dispatch.ISA_LEVELS)}
ISA_IMPL_NAME = {
    "default": "portable", "avx2": "avx2", "avx2_vnni": "avx2_vnni",
    "avx512_core_vnni": "avx512_core_vnni", "avx512_core_amx": "avx512_core_amx",
}

PO_ELTWISE, PO_BINARY, PO_SUM, PO_CHECKPOINT, PO_SELECT = 1, 2, 3, 4, 5
ELTWISE_CODE = {name: i for i, name in enumerate((
    "relu", "tanh", "elu", "square", "abs", "sqrt", "linear", "soft_relu", "logistic", "exp",
    "gelu_tanh", "gelu_erf", "swish", "log", "clip", "clip_v2", "pow", "round", "mish",
    "hardswish", "hardsigmoid"))}
BINARY_CODE = {name: i for i, name in enumerate((
    "add", "sub", "mul", "div", "min", "max", "ge", "gt", "le", "lt", "eq", "ne"))}


# packed weights and aligned allocation live with the C-level execute path that trusts them
from dnnq._kernels._gemm_exec import PackedGemmWeights, aligned_empty  # noqa: E402,F401


def kernel_isa(isa, M):
    """The GEMM kernel for an effective ISA level and M rows (per batch): below 8 rows the
    AVX-512 VNNI row kernels stream the weights faster than AMX tiles, which only pay off
    from there (measured: 1x768x3072 67 us vs 90 us, 8 rows 108 vs 92)."""
    if isa == "avx512_core_amx" and M < 8:
        return "avx512_core_vnni"
    return isa


def s32_gemm(a, b, isa=None, num_threads=None):
    """acc[m, n] = sum_k a[m, k] * b[k, n] with s32 accumulation (wrapping), a u8 or s8, b s8.

    The raw product of the blocked pipeline (no scales, no compensation beyond the s8 shift);
    `isa` forces a dispatch level (default: the effective one).
    """
    a = np.ascontiguousarray(a)
    if a.dtype not in (np.uint8, np.int8) or a.ndim != 2:
        raise TypeError("a must be a 2-D uint8 or int8 array")
    b = np.asarray(b)
    if b.dtype != np.int8 or b.ndim != 2 or b.shape[0] != a.shape[0 + 1]:
        raise TypeError("b must be a 2-D int8 array of shape (K, N)")
    M, K = a.shape
    N = b.shape[1]
    isa_name = kernel_isa(isa if isa is not None else _dispatch.get_effective_cpu_isa(), M)
    pw = PackedGemmWeights(b)
    s8 = a.dtype == np.int8
    col_comp = (-128 * pw.colsum[0].astype(np.int64)).astype(np.int32) if s8 else \
        np.zeros(N, np.int32)
    out = np.empty((M, N), dtype=np.int32)
    plan = _gemm.GemmPlan(ISA_CODE[isa_name], 1, M, N, K, DT_CODE["s32"], [])
    if s8 and plan.signed_s8:  # AMX multiplies s8 by s8: nothing to compensate
        col_comp = np.zeros(N, np.int32)
    one = np.ones(1, np.float32)
    plan.run(a.view(np.uint8), 0, K, s8, pw.packed, 0, col_comp, 0,
             None, 0, None, 0, True, 1.0, one, 0, None, 0, 0, 0, [], 1.0, None, 0,
             out, 0, N, num_threads or _dispatch.get_num_threads())
    return out
