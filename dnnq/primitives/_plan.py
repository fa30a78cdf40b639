"""Python side of the blocked GEMM pipeline shared by MatMul, InnerProduct, GEMM, convolution
and RNN cells: weight packing into `PackedGemmWeights`, and the raw s32 product used by tests
and by the primitives' compensation paths.

Numbering shared with ukernels/dnnq_kernels.h (data types, post-op kinds, algorithms).
"""
import numpy as np

from dnnq.primitives._kernels import _gemm, _codes, _toolkit as _tk
from dnnq.primitives import _dispatch, _impls

DT_CODE = _codes.DT
ISA_CODE = _codes.ISA

PO_ELTWISE, PO_BINARY, PO_SUM, PO_CHECKPOINT, PO_SELECT = (
    _codes.POST_OP[k] for k in ("eltwise", "binary", "sum", "checkpoint", "select"))
ELTWISE_CODE = _codes.ELTWISE
# the eltwise codes of oneDNN's reference kernels where they differ from its JIT injectors
# (ukernels/dnnq_toolkit.h): linear not fused, hardsigmoid / hardswish keeping NaN, abs
# flipping a NaN's sign
LINEAR_UNFUSED = _tk.ELT_LINEAR_UNFUSED
REF_ELTWISE_CODE = {ELTWISE_CODE["linear"]: LINEAR_UNFUSED,
                    ELTWISE_CODE["hardsigmoid"]: _tk.ELT_HARDSIGMOID_REF,
                    ELTWISE_CODE["hardswish"]: _tk.ELT_HARDSWISH_REF,
                    ELTWISE_CODE["abs"]: _tk.ELT_ABS_REF}
BINARY_CODE = _codes.BINARY


# packed weights and aligned allocation live with the C-level execute path that trusts them
from dnnq.primitives._kernels._gemm_exec import PackedGemmWeights, aligned_empty  # noqa: E402,F401


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
    if isa is None:
        isa_name = _impls.choose("gemm", _impls.GEMM, M=M).isa
    else:  # a forced level: the table's own rules from that level down (AMX below 8 rows)
        levels = [impl.isa for impl in _impls.GEMM]
        isa_name = next(impl.isa for impl in _impls.GEMM[levels.index(isa):]
                        if impl.reject is None or impl.reject({"M": M}) is None)
    pw = PackedGemmWeights(b)
    s8 = a.dtype == np.int8
    col_comp = (-128 * pw.colsum[0].astype(np.int64)).astype(np.int32) if s8 else \
        np.zeros(N, np.int32)
    out = np.empty((M, N), dtype=np.int32)
    plan = _gemm.GemmPlan(_dispatch.kernel_isa_code(isa_name), 1, M, N, K, DT_CODE["s32"], [],
                          signed_s8=isa_name == "avx512_core_amx")
    if s8 and plan.signed_s8:  # AMX multiplies s8 by s8: nothing to compensate
        col_comp = np.zeros(N, np.int32)
    one = np.ones(1, np.float32)
    plan.run(a.view(np.uint8), 0, K, s8, pw.packed, 0, col_comp, 0,
             None, 0, None, 0, True, 1.0, one, 0, None, 0, 0, 0, [], 1.0, None, 0,
             out, 0, N, num_threads or _dispatch.get_num_threads())
    return out
