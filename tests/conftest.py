"""Shared fixtures: every kernel test runs under each ISA level this CPU can execute
(the `isa` fixture caps dispatch with dnnq.set_max_cpu_isa, as DNNQ_MAX_CPU_ISA does).

The oneDNN bridge (dnnq.testing) is the reference of about half the suite: on x86-64 Linux,
where its wheels exist, a missing or unloadable oneDNN stops the run with an error before any
test runs (never a silent skip); elsewhere the tests that need it skip with the reason."""
import os

import pytest

import dnnq
import dnnq.testing
from dnnq.primitives import _dispatch

# Where oneDNN 3.2's int8 LSTM dies with SIGILL at the AMX level (some Intel hosts:
# dnnq/testing/_rnn_amx_probe.py), oneDNN runs capped at AVX512_CORE_VNNI for the whole session
# -- its int8 results are the same at both levels -- unless a cap is set already.  This must run
# before the first oneDNN primitive (oneDNN fixes its ISA once), hence at import.
ONEDNN_CAPPED = dnnq.testing.cap_below_faulting_amx() if dnnq.testing.available() else None

ISA_LEVELS = list(_dispatch.available_isa_levels())
# DNNQ_MAX_CPU_ISA given in the environment limits the sweep too (.ci/run runs the kernel and
# MatMul tests once more with DNNQ_MAX_CPU_ISA=default to prove the portable path on its own).
_cap = _dispatch.effective_isa_level()
ISA_LEVELS = [isa for isa in ISA_LEVELS if _dispatch.ISA_LEVELS.index(isa) <= _cap]


# Without an environment cap the highest level runs uncapped ("all"), so optional features no
# level implies (VBMI) are exercised there; the levels below run capped, without them.
_UNCAPPED_TOP = _dispatch._cap_level == len(_dispatch.ISA_LEVELS) - 1


def pytest_configure(config):
    if dnnq.testing.onednn_expected() and not dnnq.testing.available():
        raise pytest.UsageError(
            "the tests compare dnnq with the real oneDNN 3.2, which did not load: "
            f"{dnnq.testing.SKIP_REASON}")


def pytest_report_header(config):
    if ONEDNN_CAPPED:
        return [f"oneDNN capped at {ONEDNN_CAPPED}: its int8 LSTM dies with SIGILL at the AMX "
                "level on this host"]
    return []


@pytest.fixture(params=ISA_LEVELS)
def isa(request):
    cap = "all" if _UNCAPPED_TOP and request.param == ISA_LEVELS[-1] else request.param
    previous = dnnq.set_max_cpu_isa(cap)
    try:
        yield request.param
    finally:
        dnnq.set_max_cpu_isa(previous)


@pytest.fixture
def no_primitive_cache():
    """The primitive cache off for the test: each creation walks the implementation list
    (a cached primitive keeps the kernel it chose)."""
    old = dnnq.set_primitive_cache_capacity(0)
    try:
        yield
    finally:
        dnnq.set_primitive_cache_capacity(old)


@pytest.fixture(scope="session")
def rng_seed():
    return int(os.environ.get("DNNQ_TEST_SEED", "20261122"))
