"""Runs on one thread while another program keeps a core busy (dnnq/onnx/busy_cores.py): the
guard's rule on synthetic run times, and a session following it (a fake clock), with the
results of a one-thread session whatever plan runs."""
import types

import numpy as np
import pytest

from dnnq.onnx.busy_cores import BusyCoreGuard, FIRST_WAIT, LONGEST_WAIT, SLOWER

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime.quantization")

import dnnq.onnx as donnx  # noqa: E402
from dnnq.onnx import session as session_mod  # noqa: E402
from test_onnx_patterns import _two_conv_model  # noqa: E402


def _drive(guard, cost, runs):
    """``runs`` runs through ``guard``, run i of plan p taking cost(i, p is guard.chosen)
    seconds; the plans taken, as "c" / "1"."""
    taken = []
    for i in range(runs):
        plan = guard.next_plan()
        guard.record(plan, cost(i, plan is guard.chosen))
        taken.append("c" if plan is guard.chosen else "1")
    return "".join(taken)


def test_quiet_machine_keeps_the_choice():
    g = BusyCoreGuard([2, 2], [1, 1], one_s=1.0)
    # the chosen plan faster than one thread, with a spike now and then
    assert _drive(g, lambda i, c: 2.0 if i % 10 == 5 else 0.8, 300) == "c" * 300
    assert g.switches == 0
    # slower than one thread, but not by SLOWER: kept (the choice measured it so)
    g = BusyCoreGuard([2, 2], [1, 1], one_s=1.0)
    assert _drive(g, lambda i, c: 0.95 * SLOWER, 100) == "c" * 100


def test_busy_core_sends_runs_to_one_thread_and_backs_off():
    g = BusyCoreGuard([2, 2], [1, 1], one_s=1.0)
    taken = _drive(g, lambda i, c: 4.0 if c else 1.0, 1200)
    assert taken.startswith("c1"), taken[:20]  # the first slow run is enough at 4x
    # tries of the chosen plan after 8, 16, 32, ... up to 256 runs on one thread
    gaps = [len(run) for run in taken.split("c") if run]
    want = [min(FIRST_WAIT << i, LONGEST_WAIT) for i in range(len(gaps))]
    assert gaps[:-1] == want[:-1] and gaps[-1] <= want[-1], gaps
    assert g.switches == 1


def test_back_to_the_choice_when_the_core_is_free_again():
    g = BusyCoreGuard([2, 2], [1, 1], one_s=1.0)
    # busy for the first 100 runs, then the chosen plan at 0.6 of one thread
    taken = _drive(g, lambda i, c: (4.0 if i < 100 else 0.6) if c else 1.0, 400)
    last_one = taken.rindex("1")
    assert 100 <= last_one < 100 + 2 * 64, taken
    assert taken[last_one + 1:] == "c" * (len(taken) - last_one - 1)
    # a later busy spell switches again, starting from the first wait
    g2_taken = _drive(g, lambda i, c: 4.0 if c else 1.0, 12)
    assert g2_taken.startswith("c" * 1 + "1" * FIRST_WAIT), g2_taken
    assert g.switches == 2


def test_one_thread_reference_follows_the_machine():
    """The one-thread time the probes are measured against is that of the recent runs: on a
    machine that became slower for everything, the chosen plan (still faster than one thread
    there) is taken back."""
    g = BusyCoreGuard([2, 2], [1, 1], one_s=1.0)
    # first a busy core (chosen 4x), then everything 3x slower, the chosen plan at 0.7 of it
    taken = _drive(g, lambda i, c: (4.0 if i < 20 else 2.1) if c else 3.0, 200)
    assert taken.endswith("c" * 100), taken


def test_session_follows_the_guard(tmp_path, monkeypatch):
    """A two-thread session whose parallel runs turn slow (a fake clock: another program on
    a core) runs on one thread, tries two threads again later and returns to them when they
    are fast again; every run gives the one-thread session's results, and the warm runs of
    both plans are replayed."""
    qdq, x = _two_conv_model(tmp_path)
    xs = [x, (x * 0.5 + 0.3).astype(np.float32), (x - 0.2).astype(np.float32)]
    refs = [donnx.InferenceSession(qdq, threads=1).run(None, {"x": v})[0] for v in xs]
    # the thread choice (whatever the machine's load while the test runs): every step on
    # two threads, a sound choice, one thread measured at 1 ms a run
    def choose(self, env, n):
        for st in self._steps:  # (the choice's run gives that run's outputs)
            st.run(env)
        return [n] * len(self._steps), False, 1e-3
    monkeypatch.setattr(donnx.InferenceSession, "_choose_threads", choose)
    sess = donnx.InferenceSession(qdq, threads=2)
    key = next(iter(sess._thread_plans))
    choice = sess._thread_plans[key]
    guard = sess._guards[key]
    assert guard is not None and guard.chosen is choice and guard.one_s == 1e-3
    now = [0.0]
    busy = [True]
    real = donnx.InferenceSession._run_warm

    def run_warm(self, env, k, per_step, nthreads):
        real(self, env, k, per_step, nthreads)
        parallel = per_step is not None and any(t > 1 for t in per_step)
        now[0] += (4e-3 if busy[0] else 0.5e-3) if parallel else 1e-3
    monkeypatch.setattr(donnx.InferenceSession, "_run_warm", run_warm)
    monkeypatch.setattr(session_mod, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    used = []
    for i in range(100):
        busy[0] = i < 30
        np.testing.assert_array_equal(sess.run(None, {"x": xs[i % 3]})[0], refs[i % 3])
        used.append("c" if sess._last_threads is choice else "1")
    used = "".join(used)
    assert used[:2] == "c1" and "1" * FIRST_WAIT in used[:30], used
    # (the tries after 8, 16 and 32 runs on one thread: the third one finds two threads fast)
    assert used[-40:] == "c" * 40, used
    assert guard.switches == 1
    from dnnq.onnx.replay import Replay
    plans = {id(r.per_step) for r in sess._replays.values() if isinstance(r, Replay)}
    assert plans == {id(choice), id(guard.one)}, plans
