"""The repository's own promises: CI runs exactly the README's test command plus the portable
(DNNQ_MAX_CPU_ISA=default) run of the kernel and MatMul tests, and .venv is ignored."""
import os
import re
import shlex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*path):
    with open(os.path.join(ROOT, *path)) as f:
        return f.read()


def _commands(script):
    """The commands of a shell script (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n\s*", " ", script)
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_ci_runs_the_readme_test_command():
    readme = _read("README.md")
    m = re.search(r"^ +(python3 -m venv .*pip install '\.\[test\]'.*&& pytest[^\n]*)$", readme,
                  re.M)
    assert m, "README has no set-up command installing '.[test]' and running pytest"
    steps = [s.strip() for s in m.group(1).split("&&")]
    cmds = _commands(_read(".ci", "run"))
    assert "set -euo pipefail" in cmds  # any failing command (pytest exit 1, 5, ...) fails CI
    # (CI may add pip's -v and send the build log to a file, for its compiler-warning check)
    plain = {re.sub(r" -v(?= )", "", c).split(" > ")[0].strip() for c in cmds}
    for step in steps:
        if step.startswith("pip install"):  # each install of the README, through the venv's pip
            assert f"python -m {step}" in plain, step
    assert steps[-1].startswith("pytest") and steps[-1] in cmds


def test_ci_runs_kernel_and_matmul_tests_on_the_portable_path():
    runs = [c for c in _commands(_read(".ci", "run")) if c.startswith("DNNQ_MAX_CPU_ISA=default")]
    assert len(runs) == 1, "no DNNQ_MAX_CPU_ISA=default run in .ci/run"
    args = shlex.split(runs[0])[1:]
    assert args[:2] == ["pytest", "-q"]
    files = args[2:]
    for name in ("test_gemm_kernel.py", "test_matmul.py"):
        assert f"tests/{name}" in files
    for f in files:  # a renamed file would make the run test nothing
        assert os.path.exists(os.path.join(ROOT, f)), f


def test_gitignore_ignores_the_readme_venv():
    assert ".venv/" in _read(".gitignore").split()


def test_cpu_features_compiles_as_strict_c11():
    # GCC >= 14 rejects calls without a declaration; meson.build makes that an error everywhere
    import shutil
    import subprocess
    assert "-Werror=implicit-function-declaration" in _read("meson.build")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert cc, "no C compiler (the build needs one)"
    src = os.path.join(ROOT, "dnnq", "primitives", "_kernels", "ukernels")
    r = subprocess.run([cc, "-std=c11", "-Werror=implicit-function-declaration", "-Wall",
                        "-Werror", "-Wno-unused-function", "-fsyntax-only", "-I", src,
                        os.path.join(src, "cpu_features.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
