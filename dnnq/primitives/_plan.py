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


def aligned_empty(n, dtype, align=64):
    """np.empty of n elements whose data starts on an `align`-byte boundary: numpy only
    promises 16, and a packed-weights row split over two cache lines costs every zmm load."""
    dtype = np.dtype(dtype)
    raw = np.empty(n * dtype.itemsize + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + n * dtype.itemsize].view(dtype)


class PackedGemmWeights:
    """s8 weights (batch, K, N) packed once into the VNNI layout, with their column sums.

    `packed` is 1-D int8 (batch blocks of `batch_stride` bytes); `colsum` is int32 (batch, N).
    """

    __slots__ = ("packed", "colsum", "batch", "K", "N", "batch_stride", "owner", "plain",
                 "_comp", "u8_shifted")

    def __init__(self, w, owner=None, keep_plain=False, u8_shifted=False):
        w = np.asarray(w)
        if w.ndim == 2:
            w = w[None]
        self.batch, self.K, self.N = (int(d) for d in w.shape)
        self.batch_stride = _gemm.packed_size(self.K, self.N)
        self.packed = aligned_empty(self.batch * self.batch_stride, np.int8)
        self.colsum = np.empty((self.batch, self.N), dtype=np.int32)
        for b in range(self.batch):
            p, c = _gemm.pack_weights_vnni(w[b])
            self.packed[b * self.batch_stride:(b + 1) * self.batch_stride] = p
            self.colsum[b] = c
        if u8_shifted:  # u8 = w + 128 (padding becomes 128, met by zero source bytes)
            np.bitwise_xor(self.packed.view(np.uint8), 0x80, out=self.packed.view(np.uint8))
        self.u8_shifted = u8_shifted
        self.owner = owner  # the key of the primitive description these were packed for
        # the plain weights, kept only for a per-K source zero point (zp @ W at execution)
        self.plain = np.ascontiguousarray(w, dtype=np.int8) if keep_plain else None
        self._comp = {}

    def comp_for_shift(self, shift):
        """-shift * colsum as s32 (wrapping), computed once per shift: the s8-source +128
        compensation plus a common source zero point (shift = 128·[s8] + zp)."""
        c = self._comp.get(shift)
        if c is None:
            c = (-shift * self.colsum.astype(np.int64)).astype(np.uint64).astype(
                np.uint32).view(np.int32)
            if len(self._comp) >= 16:  # zero points that change every call: keep it bounded
                self._comp.clear()
            self._comp[shift] = c
        return c

    @property
    def nbytes(self):
        return self.packed.nbytes + self.colsum.nbytes


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
