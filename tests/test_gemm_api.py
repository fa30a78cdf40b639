"""dnnq.gemm_u8s8s32 / gemm_s8s8s32 against oneDNN's dnnl_gemm_* and numpy."""
import zlib

import numpy as np
import pytest

import dnnq
import dnnq.testing as onednn_ref


@onednn_ref.requires_vnni
@pytest.mark.parametrize("fn", ["gemm_u8s8s32", "gemm_s8s8s32"])
@pytest.mark.parametrize("transa,transb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("offsetc", ["F", "C", "R"])
def test_gemm_vs_onednn(isa, fn, transa, transb, offsetc):
    rng = np.random.default_rng(zlib.crc32(repr((fn, transa, transb, offsetc)).encode()))
    M, K, N = 13, 37, 21
    adt = np.uint8 if fn == "gemm_u8s8s32" else np.int8
    info = np.iinfo(adt)
    A = rng.integers(info.min, info.max + 1, (K, M) if transa else (M, K), dtype=adt)
    B = rng.integers(-128, 128, (N, K) if transb else (K, N), dtype=np.int8)
    C = rng.integers(-1000, 1000, (M, N), dtype=np.int32)
    co = rng.integers(-50, 50, {"F": 1, "C": M, "R": N}[offsetc]).astype(np.int32)
    for alpha, beta, ao, bo in ((1.0, 0.0, 0, 0), (1.0, 0.0, 3, -2), (0.5, 1.0, 7, 1),
                                (0.37, -2.5, 0, 5)):
        kw = dict(transa=transa, transb=transb, alpha=alpha, beta=beta, ao=ao, bo=bo, co=co,
                  offsetc=offsetc)
        ref = getattr(onednn_ref, fn)(A, B, C.copy(), **kw)
        out = getattr(dnnq, fn)(A, B, C.copy(), **kw)
        # bit for bit with alpha / beta too (the exact sequence: docs/matmul.md)
        np.testing.assert_array_equal(out, ref)


def test_gemm_wraps_like_onednn():
    # K = 70000 of 255 x 127 overflows s32: the accumulator wraps (a measured oneDNN fact)
    A = np.full((1, 70000), 255, np.uint8)
    B = np.full((70000, 1), 127, np.int8)
    assert dnnq.gemm_u8s8s32(A, B)[0, 0] == -2028017296


def test_gemm_bad_input():
    A = np.zeros((2, 3), np.uint8)
    B = np.zeros((3, 4), np.int8)
    with pytest.raises(dnnq.InvalidArguments, match="A"):
        dnnq.gemm_u8s8s32(A.astype(np.int8), B)
    with pytest.raises(dnnq.InvalidArguments, match="B"):
        dnnq.gemm_u8s8s32(A, np.zeros((4, 4), np.int8))
    with pytest.raises(dnnq.InvalidArguments, match="offsetc"):
        dnnq.gemm_u8s8s32(A, B, offsetc="X")
    with pytest.raises(dnnq.InvalidArguments, match="co"):
        dnnq.gemm_u8s8s32(A, B, co=np.zeros(3, np.int32), offsetc="R")
    with pytest.raises(dnnq.InvalidArguments, match="ao"):
        dnnq.gemm_u8s8s32(A, B, ao=300)
    with pytest.raises(dnnq.InvalidArguments, match="C"):
        dnnq.gemm_u8s8s32(A, B, beta=1.0)
