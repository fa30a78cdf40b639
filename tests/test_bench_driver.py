"""The benchmark driver (dnnq-bench / python -P -m dnnq.bench): option order, usage errors and
exit codes, the header and table, --csv / --plot / the progress bar, the kind registry, and the
oneDNN bridge found from the installed package (subprocesses run from a temporary directory,
outside the checkout).  Timings are never asserted: only what is printed and returned."""
import csv
import os
import subprocess
import sys

import pytest

import dnnq
import dnnq.testing
from dnnq.bench import __main__ as drv
from dnnq.bench import registry

KINDS = registry.load_kinds()


def parse(*argv):
    problems, opts = drv.parse_args(list(argv), KINDS)
    return [(k, d, s["mode"], given) for k, d, _, s, given in problems], opts


def bench(tmp_path, *argv, stderr=subprocess.PIPE):
    """Run the driver in a fresh interpreter from a temporary directory (the installed dnnq,
    not the checkout's sources)."""
    return subprocess.run([sys.executable, "-m", "dnnq.bench", "--min-time=0.001", *argv],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=stderr, text=True,
                          timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))


# ---- option order ----------------------------------------------------------------------------
def test_settings_apply_to_the_problems_after_them():
    probs, _ = parse("--matmul", "1x8:8x4", "--mode=C", "2x8:8x4", "--ip", "--dt=s8:s8:f32",
                     "mb2ic8oc4", "--reset", "mb3ic8oc4")
    assert probs == [("matmul", "1x8:8x4", "P", {}),
                     ("matmul", "2x8:8x4", "C", {"mode": "C"}),
                     ("ip", "mb2ic8oc4", "C", {"mode": "C", "dt": "s8:s8:f32"}),
                     ("ip", "mb3ic8oc4", "P", {})]


def test_trailing_settings_apply_to_problems_without_them():
    # the help's example: a setting after the last problem applies to it
    probs, _ = parse("--ip", "mb128ic768oc3072", "--mode=C")
    assert probs == [("ip", "mb128ic768oc3072", "C", {"mode": "C"})]
    # ... and to every earlier problem that did not set it itself
    probs, _ = parse("--matmul", "--mode=P", "1x8:8x4", "--reset", "2x8:8x4",
                     "--attr-post-ops=relu", "--mode", "C")
    assert [(p[1], p[2], p[3]) for p in probs] == [
        ("1x8:8x4", "P", {"mode": "P", "attr-post-ops": "relu"}),
        ("2x8:8x4", "C", {"mode": "C", "attr-post-ops": "relu"})]


def test_default_set_takes_the_settings_given():
    probs, opts = parse("--mode=C", "--threads", "1", "--csv=x.csv")
    assert [p[1] for p in probs] == KINDS["matmul"].sets["bert_base"].descriptors
    assert all(p[2] == "C" for p in probs)
    assert opts["threads"] == "1" and opts["csv"] == "x.csv"


def test_batch_file(tmp_path):
    f = tmp_path / "b.txt"
    f.write_text("# a comment\n--matmul --dt=s8:s8:s32 4x8:8x4  # tail comment\n--ip mb2ic8oc4\n")
    probs, _ = parse("--mode=C", f"--batch={f}")
    assert probs == [("matmul", "4x8:8x4", "C", {"mode": "C", "dt": "s8:s8:s32"}),
                     ("ip", "mb2ic8oc4", "C", {"mode": "C", "dt": "s8:s8:s32"})]


@pytest.mark.parametrize("argv, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["-x"], "unknown option '-x'"),
    (["--conv", "mb1oc4ih5kh3"], "ic and oc are required"),
    (["--conv", "mb1ic3oc4kh3"], "at least one of id, ih, iw"),
    (["--matmul", "1x2:3x4"], "matching K"),
    (["--ip", "mb2oc4"], "mbXicXocX"),
    (["--mode=X", "1x8:8x4"], "--mode=X"),
    (["--reset=1"], "takes no value"),
    (["--matmul", "1x8:8x4", "--dt"], "needs a value"),
    (["--threads=0"], "positive integer"),
    (["--batch=/nonexistent/file"], "cannot read"),
    (["--clock=gpu"], "expected wall or cpu"),
    (["--clock=cpu", "--threads=2"], "expected --threads=1"),
    (["--clock=cpu"], "expected --threads=1"),
    # a kind with no problem after it
    (["--rnn"], "--rnn is followed by no problem; expected a descriptor lXtXmbX"),
    (["--conv"], "--conv is followed by no problem.*built-in set \\(resnet50, mobilenet"),
    (["--conv", "--mode=C"], "--conv is followed by no problem"),
    (["--matmul", "1x8:8x4", "--ip"], "--ip is followed by no problem"),
    (["--rnn", "--conv", "resnet50"], "--rnn is followed by no problem"),
    # values a setting does not take
    (["--rnn", "--alg=LSTM", "l1t2mb2sic16"], "--alg=LSTM: got 'LSTM'; expected VANILLA_LSTM"),
    (["--rnn", "--direction=both", "l1t2sic8"], "expected left2right, right2left, concat or sum"),
    (["--rnn", "--cfg=s8s8s8s8", "l1t2sic8"], "--cfg=s8s8s8s8"),
    (["--rnn", "--scaling=per_gate", "l1t2sic8"], "expected common or per_oc"),
    (["--conv", "--tag=nchw16c", "ic8ih5oc8"], "expected nhwc or nchw"),
    (["--matmul", "--dt=u9:s8:u8", "1x8:8x4"], "--dt=u9:s8:u8"),
    (["--matmul", "--dt=u8:s8", "1x8:8x4"], "expected SRC:WEI:DST"),
    (["--conv", "--attr-scales=src:bogus", "ic8ih5oc8"], "ARG:MASK"),
    (["--conv", "--attr-scales=wei:per_oc:0.5", "ic8ih5oc8"], "takes no value"),
    (["--conv", "--attr-zero-points=src:common:1.5", "ic8ih5oc8"], "an integer"),
    (["--conv", "--attr-post-ops=relu+sum+sum", "ic8ih5oc8"], "at most one sum"),
    (["--deconv", "--attr-post-ops=dw_k3s1p1", "ic8ih5oc8"], "an eltwise"),
    (["--ip", "--attr-post-ops=add:f64", "mb2ic8oc4"], "add:DT"),
    (["--peer-isa=AVX3"], "--peer-isa=AVX3"),
    (["--alg=VANILLA_GRU", "--rnn", "l1t2sic8"], "before any problem kind.*applies to --rnn"),
    (["1x8:8x4"], "before any problem kind"),
    # unknown sets, sets of another kind, bad batch suffixes
    (["--conv", "resnet"], "nor is 'resnet' a built-in set of --conv \\(resnet50"),
    (["--matmul", "resnet50"], "resnet50 is a built-in set of --conv, not of --matmul"),
    (["--rnn", "gnmt"], "nor is 'gnmt' a built-in set of --rnn \\(it has none\\)"),
    (["--conv", "resnet50:mb0"], "expected resnet50 or resnet50:mbN"),
    (["--conv", "resnet50:x"], "expected resnet50 or resnet50:mbN"),
    (["--matmul", "bert_base:mb8"], "has no batch"),
    (["--rnn", "l1t2sic8junk"], "expected lXtXmbXsicX"),
    (["--ip", "mb2ic8oc4oops"], "expected mbXicXocX"),
])
def test_usage_errors(argv, message):
    with pytest.raises(drv.UsageError, match=message.replace("[", r"\[")):
        drv.parse_args(argv, KINDS)


def test_sets_expand_per_kind():
    problems, _ = drv.parse_args(["--matmul", "bert_base", "--conv", "mobilenet_dw:mb4"], KINDS)
    assert [p[1] for p in problems[:8]] == KINDS["matmul"].sets["bert_base"].descriptors
    from dnnq.bench.conv import MOBILENET_DW
    assert [p[1] for p in problems[8:]] == [d.replace("mb1", "mb4") for d in MOBILENET_DW]


def test_conv_descriptors_and_builtin_sets():
    """benchdnn's defaults (mb2, W from H, output / right padding deduced) and the sets."""
    from dnnq.bench.conv import parse_conv, RESNET50
    g = parse_conv("ic16ih10oc32kh3ph1")
    assert (g["mb"], g["iw"], g["ow"], g["kw"], g["pw"], g["prw"]) == (2, 10, 10, 3, 1, 1)
    g = parse_conv("mb1ic8ih9oc8oh5kh3sh2")  # padding deduced from the output size
    assert (g["ph"], g["prh"]) == (1, 1)
    g = parse_conv("mb1ic8ih4oc8kh3sh2ph1", deconv=True)
    assert g["oh"] == 7
    problems, _ = drv.parse_args(["--conv", "resnet50:mb8"], KINDS)
    assert len(problems) == len(RESNET50) and all("mb8" in p[1] for p in problems)


def test_setting_of_another_kind_is_an_error():
    registry.register("toy_kind", parse=int, create=None, settings={"alg": "a"})
    try:
        kinds = registry.kinds()
        with pytest.raises(drv.UsageError, match="does not apply to --matmul.*--toy_kind"):
            drv.parse_args(["--matmul", "--alg=b", "1x8:8x4"], kinds)
        problems, _ = drv.parse_args(["--toy_kind", "--alg=b", "3", "--matmul", "1x8:8x4"], kinds)
        assert [(p[0], p[4]) for p in problems] == [("toy_kind", {"alg": "b"}), ("matmul", {})]
    finally:
        registry._KINDS.pop("toy_kind")


def test_descriptors_are_never_cut_short():
    assert drv.repro("matmul", "12x128x64:12x64x128_n\"attention scores\"",
                     {"dt": "s8:s8:f32"}) == \
        "--matmul --dt=s8:s8:f32 12x128x64:12x64x128_n\"attention scores\""


# ---- the registry: a kind plugged in from outside ---------------------------------------------
def test_a_registered_kind_runs_through_the_driver(capsys, monkeypatch):
    # main() sets ONEDNN_MAX_CPU_ISA / OMP_NUM_THREADS for the peers it loads: keep them from
    # leaking into later tests' subprocesses
    for var in ("ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, ""))
        if not os.environ[var]:
            monkeypatch.delenv(var)
    calls = []

    def create(problem, settings, env):
        calls.append((problem, settings["mode"], settings["scale"]))
        out = [problem] * 4
        return registry.Case(kernel="toy:ref", ops=8 * problem, dnnq=lambda: list(out),
                             peers={"oneDNN": "refused", "torch": "n/a: toy"},
                             reference=lambda: [problem, problem, problem, 0])

    registry.register("toy_kind", parse=int, create=create, settings={"scale": "1"},
                      summary="toy problems")
    try:
        assert drv.main(["--toy_kind", "--scale=2", "5", "--mode=C", "--no-peers"]) == 1
        out = capsys.readouterr().out
        assert calls == [(5, "C", "2")]
        assert "--toy_kind default problem configuration: toy problems" in out
        assert "FAILED: 3 of 4 elements" in out and "--toy_kind --scale=2 --mode=C 5" in out
        assert drv.main(["--toy_kind", "7", "--min-time=0.001", "--no-peers"]) == 1  # differ
        out = capsys.readouterr().out
        assert "refused" in out and "n/a: toy" in out and "RESULTS DIFFER (1 of 4)" in out
    finally:
        registry._KINDS.pop("toy_kind")


# ---- the driver as a user runs it (subprocess, outside the checkout) --------------------------
@pytest.mark.skipif(not dnnq.testing.onednn_expected(), reason="no oneDNN wheel off x86-64 Linux")
def test_help_example_checks_correctness_against_the_installed_bridge(tmp_path):
    # the help's `--ip mb128ic768oc3072 --mode=C`, smaller
    r = bench(tmp_path, "--ip", "mb16ic96oc48", "--mode=C")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "peers: oneDNN 3.2" in r.stdout
    assert "PASSED: 768 of 768 elements bit-identical to oneDNN" in r.stdout
    assert "--ip default problem configuration: u8 src, s8 weights, s8 dst" in r.stdout
    assert "--dt=u8:s8:s8" in r.stdout and "per output channel" in r.stdout


def test_bridge_is_the_installed_package():
    r = subprocess.run([sys.executable, "-c", "import dnnq.testing as t; print(t.__file__)"],
                       cwd="/", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(os.path.join("dnnq", "testing", "__init__.py"))


@pytest.mark.parametrize("argv", [["--bogus"], ["--matmul", "1x2:3x4"], ["--conv", "x"],
                                  ["--rnn"], ["--conv"], ["--rnn", "--alg=LSTM", "l1t2mb2sic16"],
                                  ["--conv", "resnet"], ["--rnn", "--direction=up", "l1t2sic8"]])
def test_usage_errors_exit_2_before_running(tmp_path, argv):
    r = bench(tmp_path, *argv)
    assert r.returncode == 2
    assert r.stderr.startswith("dnnq-bench: error:") and r.stdout == ""


def test_cpu_clock(tmp_path):
    """--clock=cpu times with the calling thread's CPU time (one thread) and says so."""
    r = bench(tmp_path, "--clock=cpu", "--threads=1", "--no-peers", "--matmul", "4x40:40x24")
    assert r.returncode == 0, r.stderr
    assert "timing (cpu clock)" in r.stdout and "4x40:40x24" in r.stdout
    from dnnq.bench import timing
    try:
        timing.set_clock("cpu")
        import time
        t = timing.best_time(lambda: time.sleep(0.002), min_time=0.01, repeats=2)
        assert t < 0.001  # sleeping costs no CPU time
    finally:
        timing.set_clock("wall")


def test_timing_run_csv_and_peer_reasons(tmp_path):
    out_csv = tmp_path / "r.csv"
    r = bench(tmp_path, "--matmul", "--attr-zero-points=src:common:2", "4x40:40x24", "--reset",
              "2x3x40:2x40x24", f"--csv={out_csv}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\r" not in r.stderr  # no progress bar when stderr is not a terminal
    rows = list(csv.DictReader(open(out_csv)))
    assert [row["problem"] for row in rows] == [
        "--matmul --attr-zero-points=src:common:2 4x40:40x24", "--matmul 2x3x40:2x40x24"]
    for row in rows:
        assert float(row["dnnq_us"]) > 0 and row["status"] in ("same", "")
        # torch has no column value: it says why (not installed / n/a for this configuration)
        assert row["torch_us"] or row["torch_note"]
    assert rows[0]["torch_note"] in ("not installed", "n/a: post-ops/zp")
    if dnnq.testing.available():
        assert all(float(row["oneDNN_us"]) > 0 and row["status"] == "same" for row in rows)
    r = bench(tmp_path, "--no-peers", "--matmul", "4x40:40x24")
    line = [s for s in r.stdout.splitlines() if s.startswith("--matmul 4x40")][0]
    assert line.count("--no-peers") == 2 and r.returncode == 0


def test_plot_or_a_clear_message(tmp_path):
    png = tmp_path / "g.png"
    r = bench(tmp_path, "--matmul", "4x40:40x24", "8x40:40x24", f"--plot={png}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.returncode == 2 and "--plot needs matplotlib" in r.stderr and not png.exists()
    else:
        assert r.returncode == 0, r.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_bar_on_a_terminal(tmp_path):
    import pty
    master, slave = pty.openpty()
    try:
        r = bench(tmp_path, "--no-peers", "--matmul", "4x40:40x24", "8x40:40x24", stderr=slave)
        os.close(slave)
        slave = None
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)
    assert r.returncode == 0
    assert b"\r[" in err and b"1/2 --matmul 8x40:40x24" in err


@pytest.mark.skipif(not dnnq.testing.onednn_expected(), reason="no oneDNN wheel off x86-64 Linux")
def test_peer_isa_without_vnni_is_not_a_reference(tmp_path):
    # oneDNN capped at AVX2 saturates u8*s8 pairs in s16: timed, but never compared with
    r = bench(tmp_path, "--peer-isa=AVX2", "--matmul", "4x40:40x24", "--mode=C")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "effective avx2" in r.stdout
    assert "UNCHECKED: oneDNN without VNNI is not exact" in r.stdout


def test_conv_s8_source_runs_without_a_torch_peer(tmp_path):
    """PyTorch's quantized Conv2d takes quint8 activations only: with an s8 source its column
    says so instead of the run failing (it raised inside PyTorch where it is installed)"""
    out_csv = tmp_path / "s8.csv"
    r = bench(tmp_path, "--conv", "--dt=s8:s8:u8", "mb1ic8ih6oc8oh6kh3ph1", f"--csv={out_csv}")
    assert r.returncode == 0, r.stdout + r.stderr
    row = list(csv.DictReader(open(out_csv)))[0]
    assert float(row["dnnq_us"]) > 0 and not row["torch_us"]
    assert row["torch_note"] in ("not installed", "n/a: PyTorch's quantized Conv2d takes u8 -> u8 only")


@pytest.mark.skipif(not dnnq.testing.onednn_expected(), reason="no oneDNN wheel off x86-64 Linux")
def test_conv_attributes_as_benchdnn(tmp_path):
    """--attr-scales, --attr-zero-points and --attr-post-ops on convolutions and
    deconvolutions, in benchdnn's syntax: dnnq and oneDNN get the same attributes, and
    --mode=C finds every element bit-identical (sizes below, at and past a vector of 16
    channels; plain and channels-last; grouped; sum, binary and eltwise post-ops)"""
    r = bench(tmp_path, "--mode=C", "--conv",
              "--attr-scales=src:common:0.25+wei:per_oc+dst:common:2",
              "--attr-zero-points=src:common:135+dst:common:1",
              "--attr-post-ops=sum:1.5:2+relu", "mb1ic20ih6oc17oh6kh3ph1",
              "--reset", "--mode=C", "--attr-scales=wei:common:0.5+dst:common:0.25",
              "--attr-post-ops=add:f32:per_oc+linear:2:-1+mul:f32:per_tensor",
              "--dt=u8:s8:f32", "--tag=nchw", "mb2ic16ih5oc16kh3ph1",
              "--reset", "--mode=C", "--attr-zero-points=src:per_dim_1", "--dt=s8:s8:s8",
              "--bia-dt=undef", "--attr-post-ops=clip:-20:60", "g4mb1ic32ih7oc32kh3sh2ph1",
              "--reset", "--mode=C", "g33mb1ic33ih9oc33kh3ph1",
              "--deconv", "--attr-scales=src:common:0.5+wei:per_oc+dst:common:4",
              "--attr-zero-points=src:common:3+dst:common:-2", "--attr-post-ops=sum:0.5+relu",
              "mb1ic8ih5oc20oh10kh2sh2ph0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASSED") == 5 and "FAILED" not in r.stdout, r.stdout
    assert "timing (" not in r.stdout and "dnnq us" not in r.stdout  # --mode=C: no timing


def test_conv_attributes_dnnq_refuses_are_reported(tmp_path):
    """A configuration dnnq's convolution does not implement (per-channel dst scales) runs
    nothing for that problem, says why in its row and exits 1; the others still run."""
    r = bench(tmp_path, "--mode=C", "--conv", "--attr-scales=dst:per_oc", "mb1ic8ih6oc8kh3ph1",
              "--reset", "--mode=C", "mb1ic8ih6oc8kh3ph1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Unimplemented" in r.stdout and "scales mask 2 of dst" in r.stdout


def test_threads_bound_unless_the_environment_says(tmp_path, monkeypatch):
    """Run as a program, the driver starts again with OMP_PROC_BIND=true and OMP_PLACES=cores
    (printed in its title line); an OMP_PROC_BIND of the caller's is kept."""
    monkeypatch.delenv("OMP_PROC_BIND", raising=False)
    monkeypatch.delenv("OMP_PLACES", raising=False)
    out = bench(tmp_path, "--no-peers", "--matmul", "2x8:8x4")
    assert out.returncode == 0, out.stderr
    assert "OMP_PROC_BIND=true" in out.stdout
    monkeypatch.setenv("OMP_PROC_BIND", "false")
    out = bench(tmp_path, "--no-peers", "--matmul", "2x8:8x4")
    assert out.returncode == 0, out.stderr
    assert "OMP_PROC_BIND=false" in out.stdout


def test_main_in_process_never_starts_again(monkeypatch, capsys):
    """Only the program (cli: `python -m dnnq.bench`, `dnnq-bench`) re-executes itself bound;
    main() called from other code, with or without argv, never replaces its process."""
    def refuse(*a, **k):
        raise AssertionError("main() tried to re-execute the process")
    monkeypatch.setattr(os, "execve", refuse)
    monkeypatch.delenv("OMP_PROC_BIND", raising=False)
    monkeypatch.setattr(sys, "argv", ["dnnq-bench", "--no-peers", "--matmul", "2x8:8x4"])
    assert drv.main() == 0
    assert drv.main(["--no-peers", "--matmul", "2x8:8x4"]) == 0
    assert "OMP_PROC_BIND=(unset)" in capsys.readouterr().out


@pytest.mark.skipif(not dnnq.testing.onednn_expected(), reason="no oneDNN wheel off x86-64 Linux")
def test_f32_layers_checked_and_timed_against_onednn_f32(tmp_path):
    """--dt=f32:f32:f32 / f32:f32:u8 (f32 layers): oneDNN's f32 primitive is the timed peer;
    --mode=C compares with it (its quantizing reorder for an int8 dst) within an f32 layer's
    bound (K = 1000 > 512: oneDNN's MatMul sums K blocks of its own)."""
    r = bench(tmp_path, "--mode=C", "--conv", "--dt=f32:f32:u8", "mb1ic8ih6oc20oh6kh3ph1",
              "--dt=f32:f32:f32", "mb1ic16ih5oc8oh3kh3sh2ph1", "--deconv", "--dt=f32:f32:f32",
              "mb1ic8ih5oc8oh10kh2sh2ph0", "--matmul", "--dt=f32:f32:f32", "8x1000:1000x40",
              "--dt=f32:f32:s8", "8x40:40x24", "--ip", "--dt=f32:f32:f32", "mb4ic40oc24")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASSED") == 6, r.stdout
    assert "_f32" in r.stdout
    out_csv = tmp_path / "f32.csv"
    r = bench(tmp_path, "--min-time=0.01", "--conv", "--dt=f32:f32:f32", "mb1ic8ih6oc20oh6kh3ph1",
              "--matmul", "--dt=f32:f32:u8", "8x40:40x24", f"--csv={out_csv}")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(open(out_csv)))
    assert all(float(row["oneDNN_us"]) > 0 and row["status"] == "same" for row in rows), rows
