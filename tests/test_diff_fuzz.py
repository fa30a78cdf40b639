"""Differential fuzzing against oneDNN 3.2 (tools/diff_fuzz.py): random MatMul, InnerProduct
and LSTM / GRU problems with random attributes (every bias data type and broadcast, scales,
zero points, post-op chains of the bit-exact eltwise algorithms, binary and sum) must give
oneDNN's bits, including the problems where oneDNN runs its reference kernel (ref:any, another
order of operations), on the CPU's best level and on the portable one."""
import os
import sys

import pytest

import dnnq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import diff_fuzz  # noqa: E402


@pytest.mark.parametrize("family,cases", [("matmul", 600), ("ip", 300), ("rnn", 200)])
@pytest.mark.parametrize("level", ["best", "default"])
def test_matches_onednn(family, cases, level, capsys):
    argv = ["--family", family, "--cases", str(cases), "--seed", str(11 + len(level))]
    previous = dnnq.set_max_cpu_isa("default") if level == "default" else None
    try:
        rc = diff_fuzz.main(argv)
    finally:
        if previous is not None:
            dnnq.set_max_cpu_isa(previous)
    out = capsys.readouterr().out
    assert rc == 0, out[-4000:]
    assert f"{family}: {cases} cases" in out


def test_a_shape_or_type_mismatch_is_a_difference():
    import numpy as np
    assert not diff_fuzz.same(np.zeros(2, np.uint8), np.zeros(3, np.uint8)).any()
    assert not diff_fuzz.same(np.zeros(3, np.int8), np.zeros(3, np.uint8)).any()
    assert "dnnq gives" in diff_fuzz.differences(np.zeros(2, np.uint8), np.zeros(3, np.uint8),
                                                 np.zeros(3, bool))
