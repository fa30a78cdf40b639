"""Differential fuzzing against oneDNN 3.2 (tools/diff_fuzz.py): random MatMul and
InnerProduct problems with random attributes (every bias data type and broadcast, scales,
zero points, post-op chains of the bit-exact eltwise algorithms, binary and sum) must give
oneDNN's bits, including the problems where oneDNN runs its reference kernel (ref:any, another
order of operations), on the CPU's best level and on the portable one."""
import os
import sys

import pytest

import dnnq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import diff_fuzz  # noqa: E402


@pytest.mark.parametrize("family,cases", [("matmul", 600), ("ip", 300)])
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
