"""The suite's own rules: a missing oneDNN fails the run on x86-64 Linux (never a silent skip),
and a worker thread's failure fails its test."""
import os
import subprocess
import sys
import textwrap

import pytest

import dnnq.testing
from _threads import run_in_threads

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(args, env_extra, cwd):
    env = dict(os.environ, **env_extra)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not dnnq.testing.onednn_expected(), reason="no oneDNN wheel off x86-64 Linux")
@pytest.mark.parametrize("library", ["/nonexistent/libdnnl.so.3", "/etc/hostname"],
                         ids=["missing", "unloadable"])
def test_missing_or_unloadable_onednn_fails_the_run(tmp_path, library):
    # a tiny test needing nothing from oneDNN, run with this suite's conftest
    (tmp_path / "conftest.py").write_text(open(os.path.join(HERE, "conftest.py")).read())
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    r = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
             {"ONEDNN_REF_LIBRARY": library}, cwd=str(tmp_path))
    assert r.returncode != 0, r.stdout + r.stderr
    assert "oneDNN 3.2" in r.stderr + r.stdout and "pip install" in r.stderr + r.stdout
    assert "passed" not in r.stdout


def test_bridge_markers_do_not_skip_on_x86_64_linux_without_onednn(tmp_path):
    code = textwrap.dedent("""
        import dnnq.testing as t
        print(t.available(), t.onednn_expected(), t.requires_onednn.args[0],
              t.requires_vnni.args[0])
        try:
            t.matmul([[1]], [[1]])
        except t.OnednnUnavailable as e:
            print("raised", "pip install" in str(e))
    """)
    r = _run([sys.executable, "-c", code], {"ONEDNN_REF_LIBRARY": "/nonexistent/libdnnl.so.3"},
             cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    available, expected, skip_all, skip_vnni = r.stdout.split()[:4]
    assert available == "False"
    if expected == "True":  # x86-64 Linux: the markers must let the tests run (and fail)
        assert skip_all == "False" and skip_vnni == "False"
    else:
        assert skip_all == "True"
    assert "raised True" in r.stdout


def test_worker_thread_failure_fails_the_caller():
    def work(i):
        assert i != 2, "worker 2 failed"
        return i * 10

    assert run_in_threads(lambda i: i * 10, [(i,) for i in range(3)]) == [0, 10, 20]
    with pytest.raises(AssertionError, match="worker thread 2 raised AssertionError") as e:
        run_in_threads(work, [(i,) for i in range(4)])
    assert "worker 2 failed" in str(e.value.__cause__)


def test_unjoined_thread_exception_is_an_error(tmp_path):
    # pyproject's filterwarnings turns pytest's unhandled-thread-exception warning into an error
    (tmp_path / "test_t.py").write_text(textwrap.dedent("""
        import threading
        def test_t():
            t = threading.Thread(target=lambda: 1 / 0)
            t.start(); t.join()
    """))
    root = os.path.dirname(HERE)
    r = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
              os.path.join(root, "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path)],
             {}, cwd=str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ZeroDivisionError" in r.stdout
