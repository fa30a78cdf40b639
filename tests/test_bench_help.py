"""dnnq-bench --help against the parser: every option the help lists is taken by the parser,
for exactly the kinds the help says, and every option the parser takes is in the help; the
table is sized to its content.  (Parser-level: nothing runs but the toy kind's callables.)"""
import os
import re
import subprocess
import sys

import pytest

import dnnq
from dnnq.bench import __main__ as drv
from dnnq.bench import cli, registry

KINDS = registry.load_kinds()


@pytest.fixture(scope="module")
def help_text():
    r = subprocess.run([sys.executable, "-m", "dnnq.bench", "--help"], capture_output=True,
                       text=True, timeout=120, cwd="/")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def _section(text, title):
    """The lines of one section of the help (from its title to the next blank line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start + 1:end]


def _entries(section):
    """{name: (values or None, bracket text, following lines)} of the two-space entries."""
    out, name = {}, None
    for line in section:
        m = re.match(r"  --([a-z0-9-]+)(?:=(\S+))?(?:, -h)?(?:\s+\[(.*)\])?$", line)
        if m:
            name = m.group(1)
            out[name] = [m.group(2), m.group(3) or "", []]
        elif name is not None:
            out[name][2].append(line.strip())
    for v in out.values():  # a bracket too long for the head line is the next line
        if not v[1] and v[2] and v[2][0].startswith("["):
            v[1] = v[2][0].strip("[]")
    return out


def _kinds_of(bracket):
    """'--matmul --ip: u8:s8:s8; --conv --deconv: u8:s8:u8' -> {kind: default}."""
    out = {}
    for part in bracket.split("; "):
        names, _, default = part.partition(": ")
        for n in names.split():
            out[n.lstrip("-")] = "" if default == "''" else default
    return out


def _example(kind, text):
    """The first example descriptor the help gives for a kind."""
    sect = _section(text, "Problem kinds")
    i = sect.index(f"  --{kind} PROBLEM ...")
    line = next(s for s in sect[i + 1:] if s.strip().startswith("e.g. "))
    return line.strip()[len("e.g. "):].split()[0].rstrip(",")


def test_help_lists_exactly_the_options_the_parser_takes(help_text):
    listed = set(re.findall(r"^  --([a-z0-9-]+)", help_text, re.M))
    assert listed == cli.accepted_options(KINDS)
    for must in ("conv", "deconv", "rnn", "tag", "alg", "direction", "cfg", "scaling",
                 "attr-scales", "batch", "threads", "csv", "plot", "no-peers"):
        assert must in listed


def test_every_kind_and_set_in_the_help_parses(help_text):
    for kind, k in KINDS.items():
        assert f"  --{kind} PROBLEM ..." in help_text
        problems, _ = cli.parse_args([f"--{kind}", _example(kind, help_text)], KINDS)
        assert [p[0] for p in problems] == [kind]
        for name, s in k.sets.items():
            assert f"set {name}:" in help_text
            problems, _ = cli.parse_args([f"--{kind}", name], KINDS)
            assert len(problems) == len(s.descriptors)
            if s.batched:
                assert f"{name}:mbN" in help_text
                problems, _ = cli.parse_args([f"--{kind}", f"{name}:mb3"], KINDS)
                assert len(problems) == len(s.descriptors)


def test_settings_apply_to_exactly_the_kinds_the_help_names(help_text):
    entries = _entries(_section(help_text, "Settings"))
    assert set(entries) == set(registry.COMMON).union(*(k.settings for k in KINDS.values()))
    for name, (values, bracket, body) in entries.items():
        assert values and body, name  # a value syntax and a line of help
        takes = dict.fromkeys(KINDS, "P") if name == "mode" else _kinds_of(bracket)
        for kind in KINDS:
            argv = [f"--{kind}", f"--{name}={takes.get(kind, 'x')}", _example(kind, help_text)]
            if kind in takes:  # the help's default is a value the parser takes
                problems, _ = cli.parse_args(argv, KINDS)
                assert problems[0][3][name] == takes[kind] or name == "mode"
                assert KINDS[kind].defaults[name] == takes[kind]
            else:
                with pytest.raises(cli.UsageError, match=f"--{name} does not apply to --{kind}"):
                    cli.parse_args(argv, KINDS)


def test_run_options_and_flags_in_the_help_parse(help_text, tmp_path):
    entries = _entries(_section(help_text, "Run options"))
    assert set(entries) == set(cli.RUN_OPTIONS) | set(cli.FLAGS)
    batch = tmp_path / "b.txt"
    batch.write_text("--matmul 4x8:8x4\n")
    value = {"threads": "1", "csv": "x.csv", "plot": "x.png", "batch": str(batch)}
    for name, (values, bracket, _) in entries.items():
        if values is None:  # a flag
            _, opts = cli.parse_args([f"--{name}"], KINDS)
            assert opts[name] is True
            with pytest.raises(cli.UsageError, match="takes no value"):
                cli.parse_args([f"--{name}=1"], KINDS)
            continue
        v = value.get(name) or bracket.removeprefix("default ")
        _, opts = cli.parse_args([f"--{name}={v}", "--threads=1"], KINDS)
        assert name == "batch" or opts[name] == v


def test_help_with_other_arguments_runs_nothing(capsys):
    assert drv.main(["--conv", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: dnnq-bench")
    assert not any(line.startswith(f"dnnq {dnnq.__version__}") for line in out.splitlines())


# ---- the table ----------------------------------------------------------------------------------
@pytest.fixture
def toy_kind(monkeypatch):
    for var in ("ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS"):  # main() sets them for its peers
        monkeypatch.setenv(var, os.environ.get(var, ""))
        if not os.environ[var]:
            monkeypatch.delenv(var)

    def create(problem, settings, env):
        kernel = "toy:" + "very_long_kernel_name_" * 3 if problem == 2 else "toy:ref"
        reason = ("no PyTorch / no such cell: a reason longer than any column" if problem == 2
                  else "n/a")
        return registry.Case(kernel=kernel, ops=1e3 * problem, dnnq=lambda: [problem],
                             peers={"oneDNN": lambda: [problem], "torch": reason},
                             reference=lambda: [problem])

    registry.register("toy_kind", parse=int, create=create, settings={}, syntax="N",
                      example="1")
    yield
    registry._KINDS.pop("toy_kind")


def test_columns_are_sized_to_their_content(toy_kind, capsys):
    assert drv.main(["--toy_kind", "1", "2", "3", "--min-time=0.001", "--no-peers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("problem"))
    table = lines[head:head + 4]
    # the right edge of each numeric column is the same on every line
    for col in ("dnnq us", "GOPS", "oneDNN us"):
        edge = table[0].index(col) + len(col)
        for row in table[1:]:
            assert row[edge - 1].isdigit() and row[edge] == " ", (col, row)
    notes = table[0].index("notes")
    assert "no PyTorch / no such cell: a reason longer than any column" in table[2]
    assert all(len(row) <= notes or row[notes - 2:notes] == "  " for row in table)


def test_correctness_mode_prints_no_timing_headers(toy_kind, capsys):
    assert drv.main(["--toy_kind", "--mode=C", "1", "2", "--no-peers"]) == 0
    out = capsys.readouterr().out
    assert "timing (" not in out and "dnnq us" not in out and "GOPS" not in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("problem"))
    col = lines[head].index("check against oneDNN")
    assert [line[col:col + 6] for line in lines[head + 1:head + 3]] == ["PASSED"] * 2
