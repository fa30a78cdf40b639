"""Read oneDNN's enum and macro values from the installed C headers.

The values (data types, format tags, algorithm kinds, argument ids, status
codes, ...) are never hard-coded: they are parsed from ``dnnl_config.h``,
``dnnl_common_types.h`` and ``dnnl_types.h``.  The parser is a deliberately
small subset of the C preprocessor and of C enum rules:

* ``#ifdef`` / ``#ifndef`` / ``#if`` / ``#elif`` / ``#else`` / ``#endif`` are
  honoured, with ``defined(X)`` resolved from the macros seen so far (so the
  ``DNNL_EXPERIMENTAL_SPARSE`` entries follow ``dnnl_config.h``);
* ``typedef enum { ... } name;`` blocks: an entry without ``= value`` is the
  previous entry plus one (the first is 0); explicit values may be integer
  expressions over literals and earlier names (``dnnl_nchw = dnnl_abcd``);
* object-like ``#define NAME expr`` whose expression evaluates to an integer
  (function-like macros, strings and casts are skipped).

``compile_check(values, include_dir)`` prints the same names from a small C
program built with ``cc`` so the parser can be cross-checked (the bridge's
test suite does this when a compiler is available).
"""

from __future__ import annotations

import ast
import operator
import os
import re
import shutil
import subprocess
import tempfile

HEADERS = ("dnnl_config.h", "dnnl_version.h", "dnnl_common_types.h", "dnnl_types.h")

_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENUM_RE = re.compile(r"typedef\s+enum\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", re.S)
_DEFINE_RE = re.compile(r"^\s*#\s*define\s+(\w+)(\(?)\s*(.*)$")
_INT_RE = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: lambda v: int(not v)}


class _Unknown(Exception):
    """An expression that is not an integer constant expression we can evaluate."""


def _eval_node(node):
    if isinstance(node, ast.Expression):
        return _eval_node(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval_node(node.left), _eval_node(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_eval_node(node.operand))
    if isinstance(node, ast.BoolOp):
        vals = [_eval_node(v) for v in node.values]
        return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        ops = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
               ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
        if type(node.ops[0]) in ops:
            return int(ops[type(node.ops[0])](_eval_node(node.left),
                                              _eval_node(node.comparators[0])))
    raise _Unknown(ast.dump(node))


def eval_c_int(expr: str, names: dict, unknown_is_zero: bool = False) -> int:
    """Evaluate a C integer constant expression; identifiers come from ``names``."""
    expr = _INT_RE.sub(lambda m: str(int(m.group(1), 0)), expr.strip())

    def ident(m):
        word = m.group(0)
        if word in names:
            return f"({names[word]})"
        if unknown_is_zero:
            return "0"
        raise _Unknown(word)

    expr = _IDENT_RE.sub(ident, expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr).replace("/", "//")
    try:
        return _eval_node(ast.parse(expr, mode="eval"))
    except SyntaxError as exc:
        raise _Unknown(expr) from exc


def _active_lines(text: str, macros: dict) -> list[str]:
    """Apply the preprocessor conditionals, record ``#define``s in ``macros``."""
    # Join backslash-continued lines, then drop comments.
    text = _COMMENT_RE.sub(" ", text.replace("\\\n", " "))
    out, stack = [], []  # stack of (this_branch_active, some_branch_taken, parent_active)
    active = True
    for line in text.splitlines():
        s = line.strip()
        directive = re.match(r"#\s*(\w+)\s*(.*)", s)
        if not directive:
            if active:
                out.append(line)
            continue
        kw, rest = directive.groups()
        if kw in ("ifdef", "ifndef", "if"):
            if kw == "if":
                cond = _pp_condition(rest, macros)
            else:
                cond = (rest.split()[0] in macros) == (kw == "ifdef")
            stack.append((active, cond))
            active = active and cond
        elif kw == "elif":
            parent, taken = stack[-1]
            cond = not taken and _pp_condition(rest, macros)
            stack[-1] = (parent, taken or cond)
            active = parent and cond
        elif kw == "else":
            parent, taken = stack[-1]
            active = parent and not taken
            stack[-1] = (parent, True)
        elif kw == "endif":
            active = stack.pop()[0]
        elif kw == "define" and active:
            m = _DEFINE_RE.match(s)
            name, paren, body = m.groups()
            if not paren:  # object-like macro
                macros[name] = body.strip()
        elif kw == "undef" and active:
            macros.pop(rest.split()[0], None)
    return out


def _pp_condition(expr: str, macros: dict) -> bool:
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    try:
        return bool(eval_c_int(expr, _numeric_macros(macros), unknown_is_zero=True))
    except _Unknown:
        return False


def _numeric_macros(macros: dict) -> dict:
    vals = {}
    for name, body in macros.items():
        try:
            vals[name] = eval_c_int(body, vals)
        except _Unknown:
            pass
    return vals


def _parse_enums(lines: list[str], values: dict, enum_types: dict) -> None:
    for body, type_name in _ENUM_RE.findall("\n".join(lines)):
        members, nxt = [], 0
        for entry in body.split(","):
            entry = entry.strip()
            if not entry:
                continue
            name, _, expr = entry.partition("=")
            name = name.strip()
            value = eval_c_int(expr, values) if expr.strip() else nxt
            values[name] = value
            members.append(name)
            nxt = value + 1
        enum_types[type_name] = members


def parse_headers(include_dir: str) -> tuple[dict, dict]:
    """Return ``(values, enum_types)`` from the headers in ``include_dir``.

    ``values`` maps every enumerator and integer-valued object-like macro to its
    value; ``enum_types`` maps each ``typedef enum`` name to its member names.
    """
    macros: dict = {}
    values: dict = {}
    enum_types: dict = {}
    for header in HEADERS:
        path = os.path.join(include_dir, header)
        with open(path, encoding="utf-8") as f:
            lines = _active_lines(f.read(), macros)
        _parse_enums(lines, values, enum_types)
    # Macros may refer to enumerators and to each other (DNNL_ARG_SRC -> DNNL_ARG_SRC_0).
    for name, body in macros.items():
        try:
            values.setdefault(name, eval_c_int(body, values))
        except _Unknown:
            pass
    return values, enum_types


def compile_check(values: dict, include_dir: str, cc: str | None = None) -> dict:
    """Print ``values``' names from a compiled C program; return ``{name: value}``.

    Used to cross-check :func:`parse_headers`.  The build goes to a temporary
    directory.  Raises ``RuntimeError`` when no C compiler is available.
    """
    cc = cc or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler found")
    root = os.path.dirname(os.path.dirname(include_dir.rstrip("/")))  # .../include
    names = sorted(values)
    src = ["#include <stdio.h>", '#include "oneapi/dnnl/dnnl_types.h"',
           '#include "oneapi/dnnl/dnnl_version.h"', "int main(void) {"]
    src += [f'  printf("{n} %lld\\n", (long long)({n}));' for n in names]
    src += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory(prefix="onednn_ref_") as tmp:
        c_file, exe = os.path.join(tmp, "enums.c"), os.path.join(tmp, "enums")
        with open(c_file, "w") as f:
            f.write("\n".join(src))
        subprocess.run([cc, "-w", "-I", root, c_file, "-o", exe], check=True,
                       capture_output=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {n: int(v) for n, v in (line.split() for line in out.splitlines())}
