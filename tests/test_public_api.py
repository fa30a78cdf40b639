"""What `help(dnnq)` and `from dnnq import *` show: a complete `__all__`, real signatures,
docstrings with execute keys and support tables; and the message `import dnnq` gives from
the root of a checkout (uncompiled sources shadowing the installed package)."""
import inspect
import re
import os
import subprocess
import sys
import types

import pytest

import dnnq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRIMITIVES = ["MatMul", "InnerProduct", "Reorder", "Eltwise", "Binary", "Sum", "Concat",
              "Pooling", "Softmax"]


def test_all_is_complete_and_exact():
    # in a fresh interpreter: what `import dnnq` defines, not what other tests imported since
    code = ("import dnnq, json; print(json.dumps([sorted(n for n in vars(dnnq) "
            "if not n.startswith('_')), dnnq.__all__]))")
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    public, all_ = json.loads(r.stdout)
    assert set(public) - set(all_) == set(), "public names missing from dnnq.__all__"
    assert set(all_) - set(public) - {"__version__"} == set(), "__all__ names not defined"
    assert len(all_) == len(set(all_)), "duplicates in __all__"
    namespace = {}
    exec("from dnnq import *", namespace)
    assert {n for n in namespace if n != "__builtins__"} == set(dnnq.__all__)


def test_all_lists_every_argument_id():
    ids = [n for n in dnnq.__all__ if n.startswith("DNNL_ARG_")]
    assert "DNNL_ARG_SCALE" in ids and "DNNL_ARG_ATTR_MULTIPLE_POST_OP" in ids
    assert set(ids) == {n for n in vars(dnnq.args) if n.startswith("DNNL_ARG_")}


@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive_signature_and_docstring(name):
    cls = getattr(dnnq, name)
    params = inspect.signature(cls).parameters
    assert "args" not in params and "kwargs" not in params and "self" not in params
    assert list(params) == list(inspect.signature(cls.__init__).parameters)[1:]
    doc = inspect.getdoc(cls)
    assert "Support table" in doc, f"{name}: no support table in its docstring"
    for key in ("DNNL_ARG_SCALE |", "DNNL_ARG_ATTR_ZERO_POINTS |",
                "DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1", "DNNL_ARG_DST"):
        assert key in doc, f"{name}: execute key {key!r} not documented"
    assert "(*args, **kwargs)" not in _help_text(cls)


def test_matmul_docstring_names_its_scale_and_zero_point_keys():
    doc = " ".join(inspect.getdoc(dnnq.MatMul).split())
    for key in ("DNNL_ARG_SCALE | DNNL_ARG_SRC", "DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC",
                "weights scale mask 0, or 1 << (n-1) (per-N)", "DNNL_ARG_BIAS"):
        assert key in doc


@pytest.mark.parametrize("name", ["gemm_u8s8s32", "gemm_s8s8s32", "quantize", "dequantize",
                                  "fake_quantize", "append_fake_quantize"])
def test_functions_have_real_signatures(name):
    params = inspect.signature(getattr(dnnq, name)).parameters
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values())
    assert inspect.getdoc(getattr(dnnq, name))


def _help_text(obj):
    import pydoc
    return pydoc.render_doc(obj, renderer=pydoc.plaintext)


def test_help_of_the_package_lists_the_api():
    text = _help_text(dnnq)
    for name in ("MatMul", "PrimitiveAttr", "gemm_u8s8s32", "set_max_cpu_isa"):
        assert name in text


@pytest.mark.parametrize("how", [["-c", "import dnnq"], ["-m", "dnnq.bench", "--help"]])
def test_import_from_the_checkout_root_explains_itself(how):
    # -S: no site-packages (no installed / editable dnnq to find first), so the checkout's
    # uncompiled dnnq/ is what `import dnnq` finds, as from a plain install's repository root
    r = subprocess.run([sys.executable, "-S", *how], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: 'import dnnq' found the uncompiled sources")
    assert "python -P" in last and "another directory" in last


def test_compiled_kernels_message_outside_a_checkout(tmp_path):
    # a dnnq/ without kernels and without a checkout around it: the generic message
    pkg = tmp_path / "dnnq"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(open(dnnq.__file__.replace(".pyc", ".py")).read())
    (pkg / "primitives" / "_kernels").mkdir(parents=True)
    (pkg / "primitives" / "__init__.py").write_text("")
    (pkg / "primitives" / "_kernels" / "__init__.py").write_text("")
    r = subprocess.run([sys.executable, "-S", "-c", "import dnnq"], cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert "dnnq's compiled kernels (dnnq.primitives._kernels._cpu) do not import" in r.stderr
    assert isinstance(dnnq.primitives, types.ModuleType)


#: the subpackages imported on demand (each loads a heavy dependency or is a tool): public and
#: documented (docs/testing.md, onnx.md, distributed.md, bench.md, demo.md), not in __all__
ON_DEMAND_MODULES = {"testing", "onnx", "distributed", "bench", "demo"}


def _help_sections(text):
    """pydoc's plain-text page as {section title: its lines} (titles start in column 0)."""
    sections, title = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            title = line
            sections[title] = []
        elif title is not None:
            sections[title].append(line)
    return sections


def test_help_of_the_package_shows_only_the_public_api():
    # in a fresh interpreter from "/": the installed package as a user sees it.  pydoc lists
    # every module file of dnnq/ (pkgutil.iter_modules over dnnq.__path__) whatever __all__
    # says, so a private module file directly in dnnq/ shows up in help(dnnq).
    code = "import dnnq, pydoc; print(pydoc.render_doc(dnnq, renderer=pydoc.plaintext))"
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    sections = _help_sections(r.stdout)
    contents = [line.split()[0] for line in sections["PACKAGE CONTENTS"] if line.strip()]
    assert [m for m in contents if m.startswith("_")] == []
    public_modules = {n for n in dnnq.__all__ if isinstance(getattr(dnnq, n), types.ModuleType)}
    assert set(contents) == public_modules | ON_DEMAND_MODULES
    # the entries of the other sections (not the class tree's base classes, nor the lines of
    # a class's or function's documentation, which are indented further)
    entry = {"CLASSES": r"    (?:(\w+) = )?class (\w+)\(",
             "FUNCTIONS": r"    (\w+)(?: = \w+)?\(", "DATA": r"    (\w+) = "}
    shown = set()
    for title, pattern in entry.items():
        names = {m.group(1) or m.group(m.lastindex) for line in sections[title]
                 if (m := re.match(pattern, line))} - {"__all__"}  # pydoc shows __all__ itself
        assert names and names <= set(dnnq.__all__), (title, sorted(names - set(dnnq.__all__)))
        shown |= names
    # and every name of __all__ is on the page (__version__ has its own section)
    assert set(dnnq.__all__) - shown - set(contents) == {"__version__"}
    assert sections["VERSION"] == ["    " + dnnq.__version__, ""]
