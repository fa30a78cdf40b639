"""Differential fuzzing against oneDNN 3.2 (tools/diff_fuzz.py): random MatMul problems with
random attributes (every bias data type and broadcast, scales, zero points, post-op chains of
the bit-exact eltwise algorithms, binary and sum) must give oneDNN's bits, including the
problems where oneDNN runs its reference kernel (ref:any, another order of operations)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import diff_fuzz  # noqa: E402


@pytest.mark.parametrize("seed", [11, 12])
def test_matmul_matches_onednn(seed, capsys):
    rc = diff_fuzz.main(["--family", "matmul", "--cases", "600", "--seed", str(seed)])
    out = capsys.readouterr().out
    assert rc == 0, out[-4000:]
    assert "0 refused" in out or "refused" in out  # the summary line was printed
