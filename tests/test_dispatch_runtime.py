"""CPU dispatch, the ISA cap, threads, verbose mode, the primitive cache and concurrent
execution from several Python threads."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnnq
from dnnq import MemoryDesc, PrimitiveAttr, PostOps, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS
from dnnq import DNNL_ARG_SCALE, DNNL_ARG_SRC_1, DNNL_ARG_ATTR_MULTIPLE_POST_OP
from _quant_ref import matmul_acc
from _threads import run_in_threads


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    # run outside the source tree, so that `import dnnq` finds the installed package and not
    # the uncompiled dnnq/ folder of the checkout
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                          check=True, cwd=os.path.dirname(os.path.dirname(os.__file__))
                          ).stdout.strip()


def test_effective_isa_and_cap_from_environment():
    levels = dnnq.available_isa_levels()
    assert dnnq.get_effective_cpu_isa() in levels
    assert _run("import dnnq; print(dnnq.get_effective_cpu_isa())",
                DNNQ_MAX_CPU_ISA="default") == "default"
    # oneDNN spellings are accepted, and a cap above the CPU changes nothing
    assert _run("import dnnq; print(dnnq.get_effective_cpu_isa())",
                DNNQ_MAX_CPU_ISA="ALL") == levels[-1]
    if "avx2" in levels:
        assert _run("import dnnq; print(dnnq.get_effective_cpu_isa())",
                    DNNQ_MAX_CPU_ISA="AVX2") == "avx2"


def test_cpu_info_is_consistent():
    info = dnnq.cpu_info()
    assert info["effective_isa"] == dnnq.get_effective_cpu_isa()
    if info["detected_isa"] in ("avx512_core_vnni", "avx512_core_amx"):
        assert info["avx512_vnni"] and info["avx512bw"] and info["os_saves_zmm"]
    if info["detected_isa"] == "avx512_core_amx":
        assert info["amx_tile"] and info["amx_int8"] and info["os_grants_amx"]
    if info["avx512_vnni"] and info["avx512f"] and info["avx512bw"] and info["avx512vl"] \
            and info["avx512dq"]:
        amx = info["amx_tile"] and info["amx_int8"] and info["os_grants_amx"]
        assert info["detected_isa"] == ("avx512_core_amx" if amx else "avx512_core_vnni")


def test_cap_at_each_level_runs_only_what_the_cpu_has():
    """Every cap gives a level this CPU executes: on AMD Zen 4 (AVX512-VNNI without AVX-VNNI)
    a cap of avx2_vnni used to select VEX vpdpbusd kernels and die with SIGILL."""
    info = dnnq.cpu_info()
    runnable = dnnq.available_isa_levels()
    assert ("avx2_vnni" in runnable) == bool(info["avx_vnni"] and info["avx2"])
    x = np.full((3, 8), 200, np.uint8)
    w = np.full((8, 5), -7, np.int8)
    for cap in dnnq.ISA_LEVELS:
        previous = dnnq.set_max_cpu_isa(cap)
        try:
            eff = dnnq.get_effective_cpu_isa()
            assert eff in runnable
            assert dnnq.ISA_LEVELS.index(eff) <= dnnq.ISA_LEVELS.index(cap)
            mm = dnnq.MatMul(MemoryDesc((3, 8), "u8"), MemoryDesc((8, 5), "s8"),
                             MemoryDesc((3, 5), "s32"))
            out = mm.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: mm.prepare_weights(w)})
            np.testing.assert_array_equal(out, np.full((3, 5), 200 * -7 * 8, np.int32))
        finally:
            dnnq.set_max_cpu_isa(previous)


def test_set_max_cpu_isa_validates():
    with pytest.raises(dnnq.InvalidArguments, match="isa"):
        dnnq.set_max_cpu_isa("avx9000")


def test_threads():
    old = dnnq.get_num_threads()
    try:
        dnnq.set_num_threads(1)
        assert dnnq.get_num_threads() == 1
        for bad in (0, -1, 1.5, True, "2"):
            with pytest.raises(dnnq.InvalidArguments):
                dnnq.set_num_threads(bad)
    finally:
        dnnq.set_num_threads(old)


def _matmul(M=33, K=70, N=90, binary=False):
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, 2)
    if binary:
        ops = PostOps()
        ops.append_binary("add", MemoryDesc((M, N), "f32"))
        attr.set_post_ops(ops)
    return dnnq.MatMul(MemoryDesc((M, K), "u8"), MemoryDesc((K, N), "s8"),
                       MemoryDesc((M, N), "s32" if not binary else "f32"), attr=attr)


def test_verbose_lines(capfd):
    old = dnnq.set_verbose(1)
    try:
        p = _matmul()
        rng = np.random.default_rng(0)
        p.execute({DNNL_ARG_SRC: rng.integers(0, 255, (33, 70), dtype=np.uint8),
                   DNNL_ARG_WEIGHTS: rng.integers(-128, 127, (70, 90), dtype=np.int8),
                   DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.ones(90, np.float32)})
    finally:
        dnnq.set_verbose(old)
    out = capfd.readouterr().out.strip().splitlines()
    assert len(out) == 1
    fields = out[0].split(",")
    assert fields[:4] == ["dnnq_verbose", "exec", "cpu", "matmul"]
    assert fields[4] == p.impl_info and "u8:ab:33x70" in fields[5]
    assert "attr-scales:weights:2" in fields[6] and fields[7] == "33x70:70x90"
    assert float(fields[8]) >= 0


def test_primitive_cache_returns_the_same_primitive():
    a, b = _matmul(), _matmul()
    assert a is b
    assert _matmul(N=91) is not a
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        assert _matmul() is not a
    finally:
        dnnq.set_primitive_cache_capacity(old)


def test_concurrent_execution_from_python_threads():
    # one primitive, several Python threads, each with its own binary post-op input
    M, K, N = 40, 64, 96
    p = _matmul(M, K, N, binary=True)
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 127, (K, N), dtype=np.int8)
    pw = p.prepare_weights(w)
    jobs = []
    for t in range(6):
        x = rng.integers(0, 255, (M, K), dtype=np.uint8)
        b = rng.normal(0, 100, (M, N)).astype(np.float32)
        ref = matmul_acc(x, w).astype(np.float32) + b
        jobs.append((x, b, ref))

    def work(x, b, ref):
        for i in range(30):
            out = p.execute({DNNL_ARG_SRC: x, DNNL_ARG_WEIGHTS: pw,
                             DNNL_ARG_SCALE | DNNL_ARG_WEIGHTS: np.ones(N, np.float32),
                             DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1: b})
            np.testing.assert_array_equal(out, ref, err_msg=f"execution {i}")

    run_in_threads(work, jobs)  # re-raises a worker's failure here


def test_thread_count_applies_to_every_python_thread():
    old = dnnq.get_num_threads()
    seen = []
    try:
        dnnq.set_num_threads(1)
        run_in_threads(lambda: seen.append(dnnq.get_num_threads()), [()])
    finally:
        dnnq.set_num_threads(old)
    assert seen == [1]


def test_dispatch_table_reasons_at_verbose_2():
    """DNNQ_VERBOSE=2 prints the implementation chosen at creation and why each better one
    was passed over (ISA cap, missing CPU feature, problem shape)."""
    out = _run("import numpy as np, dnnq\n"
               "from dnnq import MemoryDesc as MD\n"
               "dnnq.MatMul(MD((2, 8), 'u8'), MD((8, 4), 's8'), MD((2, 4), 's32'))\n",
               DNNQ_VERBOSE="2", DNNQ_MAX_CPU_ISA="avx2")
    lines = [l for l in out.splitlines() if l.startswith("dnnq_verbose,dispatch")]
    assert len(lines) == 1, out
    fields = lines[0].split(",")
    assert fields[3] == "matmul" and fields[4] == "avx2:blocked"
    assert "skipped avx512_core_vnni:blocked (" in lines[0]
    # the reason names the cap when the CPU has the level, the CPU otherwise
    if "avx512_core_vnni" in dnnq.available_isa_levels():
        assert "above the ISA cap avx2" in lines[0]
    else:
        assert "the CPU has no avx512_core_vnni" in lines[0]


def test_dispatch_table_amx_row_rule():
    from dnnq.primitives import _impls
    impl = _impls.GEMM[0]
    assert impl.isa == "avx512_core_amx"
    assert "fewer than 8 rows" in impl.reject({"M": 7})
    assert impl.reject({"M": 8}) is None


def test_isa_cap_caps_optional_features():
    """VBMI (the toolkit's byte-lookup requantization) is used only when the CPU has it and the
    cap is above avx512_core_vnni (a Cascade Lake level, which lacks it); the results are the
    same bits either way."""
    from dnnq import Reorder
    has_vbmi = dnnq.cpu_info()["avx512_vbmi"]
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (4, 300)).astype(np.uint8)
    attr = PrimitiveAttr()
    attr.set_scales_mask(DNNL_ARG_SRC, 0)
    attr.set_zero_points_mask(dnnq.DNNL_ARG_DST, 0)
    args = {DNNL_ARG_SRC: x, DNNL_ARG_SCALE | DNNL_ARG_SRC: np.array([0.37], np.float32),
            dnnq.DNNL_ARG_ATTR_ZERO_POINTS | dnnq.DNNL_ARG_DST: np.array([-3], np.int32)}
    outs = {}
    for cap in ("all", "avx512_core_vnni", "avx2"):
        previous = dnnq.set_max_cpu_isa(cap)
        try:
            r = Reorder(MemoryDesc((4, 300), "u8"), MemoryDesc((4, 300), "s8"), attr=attr)
            used = [p.use_vbmi for p in _pw_plans(r)]
            expect = has_vbmi and cap == "all" and \
                "avx512_core_vnni" in dnnq.available_isa_levels()
            assert used and all(u == expect for u in used), (cap, used)
            outs[cap] = r.execute(dict(args))
        finally:
            dnnq.set_max_cpu_isa(previous)
    np.testing.assert_array_equal(outs["all"], outs["avx512_core_vnni"])
    np.testing.assert_array_equal(outs["all"], outs["avx2"])


def _pw_plans(prim):
    """The toolkit plans (PwPlan) a primitive holds, wherever it keeps them."""
    from dnnq.primitives._kernels._toolkit import PwPlan
    found = []
    for v in vars(prim).values():
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            plan = getattr(item, "plan", item)
            if isinstance(plan, PwPlan):
                found.append(plan)
    return found
