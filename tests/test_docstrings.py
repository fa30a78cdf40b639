"""The public API's docstrings: every class and function of ``dnnq.__all__`` has a numpydoc
docstring (Parameters, Returns, Raises, Examples) that names no private module, and every
``>>>`` example of the public modules runs and prints what it says (doctest)."""
import doctest
import inspect
import re
import types

import numpy as np
import pytest

import dnnq

# the modules whose docstrings (module, classes, functions, methods) are the documented API
PUBLIC_MODULES = ["dnnq", "dnnq.errors", "dnnq.primitives._dispatch", "dnnq.primitives._verbose",
                  "dnnq.primitives._cache", "dnnq.args", "dnnq.masks", "dnnq.memory",
                  "dnnq.attr", "dnnq.post_ops", "dnnq.calibrate", "dnnq.eltwise_math",
                  "dnnq.primitives.matmul", "dnnq.primitives.convolution", "dnnq.primitives.rnn",
                  "dnnq.primitives.gemm", "dnnq.primitives.reorder", "dnnq.primitives.eltwise",
                  "dnnq.primitives.binary", "dnnq.primitives.sum", "dnnq.primitives.concat",
                  "dnnq.primitives.pooling", "dnnq.primitives.softmax",
                  "dnnq.primitives.fake_quantize"]


def _public_objects():
    """(name, object) of every class and function of dnnq.__all__ and dnnq.calibrate /
    dnnq.eltwise_math (constants and submodules have no docstring of their own)."""
    out = []
    for name in dnnq.__all__:
        obj = getattr(dnnq, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append((name, obj))
    for mod in (dnnq.calibrate, dnnq.eltwise_math):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                out.append((f"{mod.__name__.split('.')[-1]}.{name}", obj))
    return out


def _sections(doc):
    """The numpydoc section titles of a docstring (a title line underlined with dashes)."""
    lines = doc.splitlines()
    return {lines[i].strip() for i in range(len(lines) - 1)
            if lines[i].strip() and set(lines[i + 1].strip()) == {"-"}
            and len(lines[i + 1].strip()) == len(lines[i].strip())}


def _has_parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False
    return any(p not in ("self", "cls") for p in params)


PUBLIC = _public_objects()


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_public_docstring_is_numpydoc(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name}: no docstring"
    found = _sections(doc)
    need = {"Raises", "Examples"}
    if inspect.isfunction(obj):
        need.add("Returns")
    if _has_parameters(obj) and not issubclass_safe(obj, BaseException):
        need.add("Parameters")
    assert need <= found, f"{name}: missing numpydoc sections {sorted(need - found)}"
    assert doc.splitlines()[0].strip().endswith("."), f"{name}: summary line is no sentence"


def issubclass_safe(obj, cls):
    return inspect.isclass(obj) and issubclass(obj, cls)


# a private module named in a docstring: dnnq._x, dnnq.primitives._x, _kernels/..., _x.py
_PRIVATE = re.compile(r"dnnq\.(?:\w+\.)*_[a-z]\w*|\b_kernels\b|\b_[a-z]\w*\.(?:py|pyx|pxd)\b")


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_public_docstring_names_no_private_module(name, obj):
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        docs += [inspect.getdoc(m) or "" for k, m in vars(obj).items()
                 if not k.startswith("_") and callable(m)]
    for doc in docs:
        assert not _PRIVATE.search(doc), f"{name}: {_PRIVATE.search(doc).group(0)!r}"


def test_help_of_an_rnn_lists_its_data_keys_layouts_and_directions():
    import pydoc
    text = pydoc.render_doc(dnnq.LSTM, renderer=pydoc.plaintext)
    for word in ("DNNL_ARG_SRC_LAYER", "DNNL_ARG_SRC_ITER_C", "DNNL_ARG_WEIGHTS_LAYER",
                 "DNNL_ARG_WEIGHTS_ITER", "DNNL_ARG_BIAS", "DNNL_ARG_DST_ITER_C",
                 "DNNL_ARG_WEIGHTS_PEEPHOLE", "DNNL_ARG_WEIGHTS_PROJECTION",
                 "tnc", "ldnc", "ldigo", "ldgo", "unidirectional_left2right",
                 "unidirectional_right2left", "bidirectional_concat", "bidirectional_sum"):
        assert word in text, word
    assert "listed above" not in text


def test_help_of_the_package_lists_public_names_only():
    import pydoc
    text = pydoc.render_doc(dnnq, renderer=pydoc.plaintext)
    # the sections pydoc fills from __all__
    body = text.split("CLASSES", 1)[1]
    private = re.search(r"(?<!\w)_(cache|dispatch|impls|verbose|kernels|compiled_kernels_missing)\b",
                        body)
    assert private is None, body[max(0, private.start() - 300):private.end() + 100]
    for name in ("MatMul", "LSTM", "PrimitiveAttr", "set_num_threads", "DNNL_ARG_SRC"):
        assert name in body


# --- the examples --------------------------------------------------------------------------

def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    seen = set()
    for modname in PUBLIC_MODULES:
        mod = __import__(modname, fromlist=["_"])
        for t in finder.find(mod, modname, globs={"np": np, "dnnq": dnnq}):
            if t.examples and t.name not in seen:
                seen.add(t.name)
                tests.append(t)
    return tests


DOCTESTS = _doctests()


def test_every_public_class_and_function_has_a_running_example():
    names = {t.name.split(".")[-1] for t in DOCTESTS}
    missing = [n for n, obj in PUBLIC if obj.__name__ not in names]
    assert not missing, f"no >>> example: {missing}"


@pytest.fixture
def restored_settings():
    """Examples change the process-wide settings and put them back; make sure of it."""
    saved = (dnnq.get_num_threads(), dnnq.get_verbose(), dnnq.get_int8_numerics(),
             dnnq.get_primitive_cache_capacity())
    cap = dnnq.cpu_info()["max_cpu_isa"]
    yield
    dnnq.set_num_threads(saved[0])
    dnnq.set_verbose(saved[1])
    dnnq.set_primitive_cache_capacity(saved[3])
    dnnq.set_max_cpu_isa(cap)
    assert dnnq.get_int8_numerics() == saved[2]


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_example_runs(test, restored_settings):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    runner.run(test, out=out.append, clear_globs=True)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(out)


def test_the_examples_are_found():
    # a renamed module would silently run nothing
    assert len(DOCTESTS) > 60
    assert isinstance(dnnq.primitives, types.ModuleType)
