"""The toolkit's byte-table kernel (an ONNX session's element-wise chain between two int8
roundings, tabulated): dst[i] = table[src[i]] at every ISA level, with and without VBMI's byte
lookups, lengths below, at and past the 64-byte vector and the 64 KiB thread block, on one
and two threads, against numpy's indexing; no byte past the destination is written."""
import numpy as np
import pytest

from dnnq.primitives import _dispatch
from dnnq.primitives._kernels import _codes, _toolkit

LEVELS = [lv for lv in _dispatch.available_isa_levels()]
SIZES = [0, 1, 63, 64, 65, 127, 128, 200, 65535, 65536, 2 * 65536 + 77]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("vbmi", [False, True])
def test_table_lookup_equals_indexing(level, vbmi):
    if vbmi and not (_dispatch.cpu_has("avx512_vbmi") and level.startswith("avx512")):
        pytest.skip("VBMI lookups need an AVX-512 level on a CPU with VBMI")
    rng = np.random.default_rng(len(level) + vbmi)
    table = rng.integers(0, 256, 256, dtype=np.uint8)
    for n in SIZES:
        src = rng.integers(0, 256, n, dtype=np.uint8)
        src[:min(n, 256)] = np.arange(min(n, 256))  # every entry, the top bit both ways
        for threads in (1, 2):
            guard = np.full(n + 64, 0xA5, np.uint8)
            dst = guard[:n]
            _toolkit.table_lookup(_codes.ISA[level], vbmi, src[None], table, dst[None],
                                  threads)
            np.testing.assert_array_equal(dst, table[src])
            assert (guard[n:] == 0xA5).all(), "a byte past the destination was written"


@pytest.mark.parametrize("vbmi", [False, True])
@pytest.mark.parametrize("rows,n,gap", [(3, 5, 7), (1675, 129, 129), (700, 100, 0),
                                        (2, 70000, 3)])
def test_table_lookup_strided_rows(vbmi, rows, n, gap):
    """Rows at a stride (a channel slice of a channels-last tensor): only the row bytes are
    read, the destination rows written (their gaps left alone)."""
    if vbmi and not _dispatch.cpu_has("avx512_vbmi"):
        pytest.skip("no VBMI on this CPU")
    level = _dispatch.get_effective_cpu_isa()
    rng = np.random.default_rng(rows)
    table = rng.integers(0, 256, 256, dtype=np.uint8)
    big = rng.integers(0, 256, (rows, n + gap), dtype=np.uint8)
    out = np.full((rows, n + gap), 0x5A, np.uint8)
    for threads in (1, 2):
        _toolkit.table_lookup(_codes.ISA[level], vbmi, big[:, :n], table, out[:, :n], threads)
        np.testing.assert_array_equal(out[:, :n], table[big[:, :n]])
        assert (out[:, n:] == 0x5A).all()


def test_table_lookup_refuses_mismatched_lengths():
    src = np.zeros((1, 10), np.uint8)
    with pytest.raises(ValueError, match="256 entries"):
        _toolkit.table_lookup(_codes.ISA["default"], False, src, np.zeros(255, np.uint8),
                              np.zeros((1, 10), np.uint8))
    with pytest.raises(ValueError, match="src's shape"):
        _toolkit.table_lookup(_codes.ISA["default"], False, src, np.zeros(256, np.uint8),
                              np.zeros((1, 9), np.uint8))
