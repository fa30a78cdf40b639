"""The micro-kernel sources include each other without a circle (issue 24): each header is
self-contained and a translation unit's fragments do not depend on each other both ways."""
import pathlib
import re

import pytest

UKERNELS = (pathlib.Path(__file__).resolve().parents[1] / "dnnq" / "primitives" / "_kernels"
            / "ukernels")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_graph(root=UKERNELS):
    """{file: [files it includes]} over the C sources under root, a quoted include resolved
    against the including file's folder, then the root (meson's include directory)."""
    graph = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".c", ".h"):
            continue
        deps = []
        for name in _INCLUDE.findall(path.read_text(errors="replace")):
            for base in (path.parent, root):
                target = (base / name).resolve()
                if target.is_file():
                    deps.append(target)
                    break
        graph[path.resolve()] = deps
    return graph


def find_cycle(graph):
    """A list of files that include each other in a circle, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_ukernel_includes_have_no_cycle():
    graph = include_graph()
    assert len(graph) > 20  # the sources were found
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(p.name for p in cycle)


def test_cycle_finder_finds_one(tmp_path):
    # the check can fail: two headers that include each other
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text('#include "a.h"\n')
    (tmp_path / "c.c").write_text('#include "a.h"\n')
    cycle = find_cycle(include_graph(tmp_path))
    assert cycle is not None and {p.name for p in cycle} == {"a.h", "b.h"}
    (tmp_path / "b.h").write_text("/* no include */\n")
    assert find_cycle(include_graph(tmp_path)) is None
