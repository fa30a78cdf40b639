"""The package's structure (issue 24): the import-time graph of dnnq's own modules has no
cycle, and the GEMM / RNN / toolkit sources name every algorithm, kind, data type and ISA code
through the code table (ukernels/dnnq_codes.h, _codes.pxd, dnnq_kernels.h), never as a
literal."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "dnnq")


# ---- import graph --------------------------------------------------------------------------
def _modules():
    """module name -> source path of every .py / .pyx file of the package."""
    mods = {}
    for dirpath, _, files in os.walk(PKG):
        for f in files:
            if not f.endswith((".py", ".pyx")):
                continue
            path = os.path.join(dirpath, f)
            parts = os.path.relpath(path, ROOT)[:-len(os.path.splitext(f)[1])].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _target(mods, base, name):
    """The module `from base import name` loads: base.name when that is a module, else base."""
    full = f"{base}.{name}" if name else base
    return full if full in mods else (base if base in mods else None)


def _import_time_statements(body):
    """The import statements run when a module is imported: at module level, in class
    bodies and under if / try / with, not inside functions."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _import_time_statements(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []) or []:
            yield from _import_time_statements(handler.body)


def import_graph():
    """module -> the set of dnnq modules it imports at import time."""
    mods = _modules()
    graph = {}
    for mod, path in mods.items():
        with open(path) as f:
            src = f.read()
        edges = set()
        if path.endswith(".py"):
            is_pkg = path.endswith("__init__.py")
            for node in _import_time_statements(ast.parse(src).body):
                if isinstance(node, ast.Import):
                    pairs = [(a.name, None) for a in node.names]
                else:
                    if node.level:
                        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                        base = base[:len(base) - (node.level - 1)]
                        pkg = ".".join(base + ([node.module] if node.module else []))
                    else:
                        pkg = node.module or ""
                    pairs = [(pkg, a.name) for a in node.names]
                edges |= {_target(mods, b, n) for b, n in pairs if b.split(".")[0] == "dnnq"}
        else:  # Cython: the Python-level imports (cimports load nothing at run time)
            for m in re.finditer(r"^from (dnnq[\w.]*) import \(?([^)\n]+)", src, re.M):
                edges |= {_target(mods, m.group(1), a.strip().split(" as ")[0])
                          for a in m.group(2).split(",") if a.strip()}
            for m in re.finditer(r"^import (dnnq[\w.]*)", src, re.M):
                edges.add(_target(mods, m.group(1), None))
        edges.discard(None)
        edges.discard(mod)
        graph[mod] = edges
    return graph


def find_cycle(graph):
    """One cycle of `graph` as a list of nodes (first == last), or None."""
    state, stack = {}, []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_import_graph_is_read():
    graph = import_graph()
    # a few edges every version has: the graph is not empty by accident
    assert "dnnq.primitives._kernels._gemm" in graph["dnnq.primitives._plan"]
    assert "dnnq.primitives._impls" in graph["dnnq.primitives._gemm_primitive"]
    assert "dnnq.primitives._kernels._gemm" in graph["dnnq.primitives._kernels._gemm_exec"]


def test_package_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


# ---- literal codes -------------------------------------------------------------------------
# the sources of the GEMM, RNN, toolkit and convolution families
_CODE_FILES = (
    "primitives/matmul.py", "primitives/gemm.py", "primitives/_gemm_primitive.py",
    "primitives/_gemm_kplan.py", "primitives/rnn.py", "primitives/_rnn_base.py",
    "primitives/_rnn_weights.py", "primitives/_rnn_descs.py", "primitives/pooling.py",
    "primitives/eltwise.py", "primitives/binary.py", "primitives/softmax.py",
    "primitives/reorder.py", "primitives/sum.py", "primitives/concat.py",
    "primitives/_attr_plan.py", "primitives/_pointwise.py", "primitives/_plan.py",
    "primitives/_kernels/_gemm.pyx", "primitives/_kernels/_gemm.pxd",
    "primitives/_kernels/_gemm_exec.pyx", "primitives/_kernels/_gemm_api.pyx",
    "primitives/_kernels/_rnn.pyx", "primitives/_kernels/_rnn_exec.pyx",
    "primitives/_kernels/_rnn_decl.pxd", "primitives/_kernels/_toolkit.pyx",
    "primitives/_kernels/_kernels.pxd",
    # the convolution family
    "primitives/convolution.py", "primitives/_conv_kernel_choice.py",
    "primitives/_conv_geometry.py", "primitives/_conv_impl.py", "primitives/_conv_f32.py",
    "primitives/_conv_fused_dw.py", "primitives/_conv_checked_exec.py",
    "primitives/_post_op_spec.py", "primitives/_kernels/_conv.pyx",
    "primitives/_kernels/_conv.pxd", "primitives/_kernels/_conv_exec.pyx", "primitives/_impls.py",
)
_CODE_NAMES = r"(?:kind|alg|dt|dst_dt|src_dt|isa|cell|act|a_xor)"
_LITERAL = [
    # a code variable compared with, or set to, a number: `alg in (0, 6)`, `dt == 2`
    re.compile(rf"\b{_CODE_NAMES}\s*(?:==|!=|\bin)\s*\(?\s*-?\d"),
    re.compile(rf"\b{_CODE_NAMES}\s*=\s*\(?\s*-?\d+\s*(?:if|$)", re.M),
    # the s8-source XOR mask and the post-op table size (dnnq_kernels.h: DNNQ_A_XOR_S8,
    # DNNQ_MAX_POST)
    re.compile(r"0x80808080"),
    re.compile(r"MAX_POST\s*=\s*\d"),
    # argument ids written as numbers in a dictionary lookup
    re.compile(r"_get\(args,\s*\d"),
]


def _ukernel_files():
    rel = os.path.join("primitives", "_kernels", "ukernels")
    ukr = os.path.join(PKG, rel)
    return [os.path.join(rel, f) for f in sorted(os.listdir(ukr))
            if re.match(r"(gemm_(?!api\.c)|rnn_|epilogue_|tk_|conv_)\w*\.[ch]$", f)] + \
        [os.path.join(rel, "depthwise", f)
         for f in sorted(os.listdir(os.path.join(ukr, "depthwise")))] + \
        [os.path.join(rel, "dnnq_rnn.h"), os.path.join(rel, "dnnq_conv.h")]


def literal_codes(text):
    """(line number, line) of every line of `text` that writes a code as a literal."""
    hits = []
    for no, line in enumerate(text.splitlines(), 1):
        code = re.split(r"#|//|/\*|^\s*\*", line, maxsplit=1)[0]   # comments may name values
        if any(p.search(code) for p in _LITERAL):
            hits.append((no, line.strip()))
    return hits


def test_literal_code_finder_finds_literals():
    assert literal_codes("self.g.fast_epi = all(k == 1 and alg in (0, 6) for x in y)")
    assert literal_codes("    return 1 if dt == 2 or dt == 3 else 4")
    assert literal_codes("g.a_xor = 0x80808080 if s8 else 0")
    assert literal_codes("    MAX_POST = 32")
    assert literal_codes("        x = _get(args, 1)")
    assert not literal_codes("    return 1 if dt == DNNQ_DT_S8 else 4  # dt == 2: s8")


def test_no_literal_codes_in_the_engine_sources():
    found = []
    for rel in list(_CODE_FILES) + _ukernel_files():
        with open(os.path.join(PKG, rel)) as f:
            found += [f"{rel}:{no}: {line}" for no, line in literal_codes(f.read())]
    assert not found, "literal codes (use dnnq_codes.h / _codes.pxd):\n" + "\n".join(found)
