"""Fuzz test of the whole public API (issue 13 item 8).

For every public primitive and function, hypothesis draws cases (``_fuzz_strategies``,
``_fuzz_functions``, built on ``_fuzz_draw``): mostly valid problems, with wild descriptors,
attributes, post-op chains and execution arguments mixed in.  Each case runs in a persistent worker process (``_fuzz_runner.CrashGuard``) so that a crash
or a hang is a test failure printing the reproducing case instead of killing pytest.  The oracle
(``_fuzz_runner.run_case``): no crash; only InvalidArguments / Unimplemented / MemoryError with
a non-empty message; outputs fully written (two runs with differently poisoned destinations give
the same bits; layout-only changes of valid inputs give the contiguous run's bits); a numpy
reference where it is cheap.

Deterministic by default (hypothesis derandomized, no example database):
``DNNQ_FUZZ_EXAMPLES`` (default 30 per family) sets the examples per family and
``DNNQ_FUZZ_SEED`` switches to random draws from that seed.  The longer soak that keeps going
after a failure and counts the outcomes is ``python -P tools/fuzz_soak.py --examples N --seed S``
(docs/testing.md).
"""
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings

import _fuzz_runner
from _fuzz_strategies import FAMILIES

EXAMPLES = int(os.environ.get("DNNQ_FUZZ_EXAMPLES", "30"))
SEED = os.environ.get("DNNQ_FUZZ_SEED")


@pytest.fixture(scope="module")
def guard():
    g = _fuzz_runner.CrashGuard()
    yield g
    g.close()


def fuzz_settings():
    return settings(max_examples=EXAMPLES, derandomize=SEED is None, database=None,
                    deadline=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fuzz(family, guard):
    @fuzz_settings()
    @given(FAMILIES[family])
    def check(case):
        guard.check(case)

    if SEED is not None:
        check = seed(int(SEED))(check)
    check()


def test_crash_guard_reports_a_crash_and_recovers(guard):
    """The guard turns a dying worker into a failure naming the case, then runs on."""
    crash = {"family": "api", "calls": [], "seed": 0, "isa": None, "crash_for_test": True}
    status, detail = guard.run(dict(crash, family="_crash"))
    assert status == "crash" and "exit status" in detail
    assert guard.run({"family": "api", "calls": [("as_dt", "u8")], "seed": 0,
                      "isa": None}) == ("ok", "")


def test_oracle_catches_an_unwritten_output(guard):
    """A call that leaves part of its destination untouched fails the poison check."""
    status, detail = guard.run({"family": "_half_written", "seed": 0, "isa": None,
                                "tensors": [(17, ("md", (4, 4), "s8", None), "rand")],
                                "outputs": [17]})
    assert status == "violation" and "poisoned" in detail, detail


def test_oracle_refuses_other_exception_types(guard):
    status, detail = guard.run({"family": "_type_error", "seed": 0, "isa": None})
    assert status == "violation" and "leaked TypeError" in detail, detail
