"""Packed RNN weights: the per-(layer, direction) VNNI panels with the gates of a channel
block side by side (ukernels/dnnq_rnn.h), their sums, and the immutable, pickleable holder
the RNN primitives hand out from ``prepare_weights``."""
import numpy as np

from dnnq.primitives._kernels import _gemm
from dnnq.memory import MemoryDesc
from dnnq.primitives._plan import aligned_empty

_F32 = np.float32


class PackedRnnWeights:
    """One weights tensor (layer or iter) packed per layer and direction: panels of 64 channels
    with the gates of a channel block side by side (ukernels/dnnq_rnn.h), and its sums over the
    input channels (the shift compensation).

    Immutable (attributes cannot be set; ``packed`` is a tuple over layers of tuples over
    directions of read-only arrays, ``comp`` read-only); ``owner`` is the key of the primitive
    description, ``which`` the argument, ``origin`` the primitive.  Execution checks the owner,
    the argument and every size.  Pickling stores the plain weights and the primitive, and
    packs again when loaded."""

    __slots__ = ("packed", "comp", "owner", "which", "origin")

    def __init__(self, packed, comp, owner, which, origin=None):
        packed = tuple(tuple(packed_ld for packed_ld in row) for row in packed)
        for row in packed:
            for packed_ld in row:
                packed_ld.flags.writeable = False
        comp.flags.writeable = False
        for name, value in (("packed", packed), ("comp", comp), ("owner", owner),
                            ("which", which), ("origin", origin)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError("PackedRnnWeights is immutable")

    def __delattr__(self, name):
        raise AttributeError("PackedRnnWeights is immutable")

    def unpack(self, desc):
        """The plain (L, D, K, G, H) s8 weights of ``desc`` (the inverse of _pack); (L, D, H,
        P) for projection weights."""
        if desc.ndims == 4:     # ldio: one gate of P channels
            L, D, K, P = desc.dims
            return self.unpack(MemoryDesc((L, D, K, 1, P), "s8")).reshape(L, D, K, P)
        L, D, K, G, H = desc.dims
        nblk = (H + 63) // 64
        w = np.empty((L, D, K, G, H), np.int8)
        for l, row in enumerate(self.packed):
            for d, packed_ld in enumerate(row):
                wperm = _gemm.unpack_weights_vnni(packed_ld, K, nblk * G * 64)
                w[l, d] = wperm.reshape(K, nblk, G, 64).transpose(0, 2, 1, 3).reshape(
                    K, G, nblk * 64)[:, :, :H]
        return w

    def __reduce__(self):
        if self.origin is None:
            raise TypeError("PackedRnnWeights without their primitive cannot be pickled")
        desc = self.origin._weights_desc_of(self.which)
        return (_repack, (self.origin, self.which, self.unpack(desc)))


def _repack(origin, which, w):
    """Unpickling of PackedRnnWeights: pack the plain weights with their primitive."""
    return origin._repack(which, w)


def _pack(w, H):
    """(L, D, K, G, H) s8 -> list over (l, d) of packed panels, and f32 (L, D, G, H) sums."""
    L, D, K, G, _ = w.shape
    nblk = (H + 63) // 64
    out = []
    for l in range(L):
        row = []
        for d in range(D):
            wpad = np.zeros((K, G, nblk * 64), np.int8)
            wpad[:, :, :H] = w[l, d]
            wperm = np.ascontiguousarray(
                wpad.reshape(K, G, nblk, 64).transpose(0, 2, 1, 3).reshape(K, nblk * G * 64))
            packed, _ = _gemm.pack_weights_vnni(wperm)
            buf = aligned_empty(packed.size, np.int8)
            buf[:] = packed
            row.append(buf)
        out.append(row)
    # the s32 sums as f32, as oneDNN's weights reorder keeps them
    comp = w.sum(axis=2, dtype=np.int64).astype(np.int32).astype(_F32)
    return out, comp
