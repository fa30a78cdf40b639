"""Lookup tables are built with eltwise_table (dnnq/eltwise_math.py): its library functions
in decimal arithmetic give the same bits whatever SIMD path numpy's own f32 functions take on
the host (they differ in the last ulp between CPUs with and without AVX2 / AVX-512). The f32
element-wise ops an ONNX session runs outside int8 chains (Sigmoid, Tanh, Exp, Log, Softmax,
...) go through dnnq's toolkit for the same reason."""
import json
import subprocess
import sys

import numpy as np
import pytest

from dnnq.eltwise_math import _erf_table, _power_table, eltwise_reference, eltwise_table

ALGS = [("logistic", 0, 0), ("tanh", 0, 0), ("exp", 0, 0), ("log", 0, 0), ("soft_relu", 1, 0),
        ("elu", 0.7, 0), ("mish", 0, 0), ("gelu_tanh", 0, 0), ("gelu_erf", 0, 0),
        ("swish", 1.5, 0), ("pow", 1, 0.37)]

_PROBE = r"""
import json, hashlib, numpy as np
from dnnq.eltwise_math import eltwise_table, _erf_table, _power_table
x = np.linspace(-9, 9, 4099).astype(np.float32)
h = lambda a: hashlib.md5(np.ascontiguousarray(a).tobytes()).hexdigest()
out = {"numpy exp": h(np.exp(x)), "numpy tanh": h(np.tanh(x))}
for alg, a, b in %s:
    out[alg] = h(eltwise_table(alg, np.abs(x) if alg in ("log", "pow") else x, a, b))
out["erf"] = h(_erf_table(x))
out["power"] = h(_power_table(np.abs(x), x))
print(json.dumps(out))
""" % repr(ALGS)

# numpy 2.x names of its x86 dispatch levels (AVX2 / FMA3 = X86_V3, AVX-512 = X86_V4)
_NO_SIMD = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"


_OPS_PROBE = r"""
import json, hashlib, numpy as np
from dnnq.onnx import ops_numpy
x = np.linspace(-12, 12, 200004).astype(np.float32).reshape(1, 4, -1)
h = lambda a: hashlib.md5(np.ascontiguousarray(a).tobytes()).hexdigest()
out = {"numpy exp": h(np.exp(x)), "numpy tanh": h(np.tanh(x))}
for op, attrs, opset in %s:
    v = np.abs(x) + np.float32(1e-3) if op == "Log" else x
    out[op + str(opset)] = h(ops_numpy.run_op(op, [v], attrs, opset)[0])
print(json.dumps(out))
""" % repr([("Sigmoid", {}, 13), ("Tanh", {}, 13), ("Exp", {}, 13), ("Log", {}, 13),
            ("Elu", {"alpha": 0.5}, 13), ("Softplus", {}, 13), ("Mish", {}, 13),
            ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 21), ("Softmax", {}, 13),
            ("Softmax", {"axis": 1}, 11)])


def _probe(env_extra, code=None):
    import os
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-P", "-c", code or _PROBE], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_session_f32_ops_do_not_depend_on_numpy_simd_paths():
    host = _probe({}, _OPS_PROBE)
    portable = _probe({"DNNQ_MAX_CPU_ISA": "default"}, _OPS_PROBE)
    plain = _probe({"NPY_DISABLE_CPU_FEATURES": _NO_SIMD}, _OPS_PROBE)
    for k in host:
        if not k.startswith("numpy"):
            assert host[k] == portable[k], k
    if host["numpy exp"] == plain["numpy exp"] and host["numpy tanh"] == plain["numpy tanh"]:
        pytest.skip("numpy's f32 exp / tanh take the same path here with and without its "
                    f"{_NO_SIMD} dispatch")
    for k in host:
        if not k.startswith("numpy"):
            assert host[k] == plain[k], k


def test_tables_do_not_depend_on_numpy_simd_paths():
    host = _probe({})
    plain = _probe({"NPY_DISABLE_CPU_FEATURES": _NO_SIMD})
    if host["numpy exp"] == plain["numpy exp"] and host["numpy tanh"] == plain["numpy tanh"]:
        pytest.skip("numpy's f32 exp / tanh take the same path here with and without its "
                    f"{_NO_SIMD} dispatch (a CPU without AVX2, or other level names)")
    for k in host:
        if not k.startswith("numpy"):
            assert host[k] == plain[k], k


@pytest.mark.parametrize("alg,alpha,beta", ALGS)
def test_table_functions_follow_the_reference_formulas(alg, alpha, beta):
    """Within a few ulp of eltwise_reference (numpy's functions) where the formula does not
    cancel; special values alike."""
    x = np.concatenate([np.linspace(-4, 4, 257), [0, np.inf, -np.inf, np.nan, 30, -30]])
    x = (np.abs(x) if alg in ("log", "pow") else x).astype(np.float32)
    got, ref = eltwise_table(alg, x, alpha, beta), eltwise_reference(alg, x, alpha, beta)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
    np.testing.assert_allclose(got[fin], ref[fin], rtol=4e-7, atol=1e-6)


def test_erf_and_power():
    x = np.float32([0.0, 0.5, -3.0, 5.0, 1e-20])
    np.testing.assert_allclose(_erf_table(x), [0.0, 0.52049988, -0.99997791, 1.0, 1.1283792e-20],
                               rtol=1e-7)
    np.testing.assert_array_equal(_power_table(np.float32([2, 0, 4]), np.float32([3, -1, 0.5])),
                                  np.float32([8, np.inf, 2]))
