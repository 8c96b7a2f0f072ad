"""No module patches another at import time (issue 30): a test that reads every module of the
package and fails on a module-level ``setattr(...)`` or attribute assignment (``X.name = ...``)
whose object the module did not itself define (a name imported from elsewhere, or a loop
variable running over such names). Inside functions and class bodies anything goes: that is
code that runs when called, not when imported.

So every public name is the function its own module defines, and the import graph tells the
truth. Layers extend lower ones by registering (``defprimitive``, ``register_pytree_node``,
``carry_thread_state``), never by writing into them.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "funcgrad"


def _own_names(tree: ast.Module) -> set[str]:
    """Names a module binds itself at module level: functions, classes, plain assignments."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        own.add(name.id)
    return own


def _module_level(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run at import: the body, into if/for/while/with/try, not into defs."""
    out: list[ast.stmt] = []
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            out += _module_level(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []) or []:
            out += _module_level(handler.body)
    return out


def _root(expr: ast.expr) -> str | None:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def patches(source: str) -> list[str]:
    """``line: what`` for each module-level write into an object this module did not define."""
    tree = ast.parse(source)
    own = _own_names(tree)
    loop_vars = {n.id for s in _module_level(tree.body) if isinstance(s, ast.For)
                 for n in ast.walk(s.target) if isinstance(n, ast.Name)}
    found = []
    for stmt in _module_level(tree.body):
        if isinstance(stmt, (ast.For, ast.If, ast.While, ast.With, ast.Try)):
            continue  # (their bodies are listed on their own)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and node.args:
                root = _root(node.args[0])
                if root is None or root not in own or root in loop_vars:
                    found.append(f"{node.lineno}: setattr({ast.unparse(node.args[0])}, ...)")
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    root = _root(t)
                    if root is None or root not in own or root in loop_vars:
                        found.append(f"{stmt.lineno}: {ast.unparse(t)} = ...")
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE.parent)) for p in MODULES])
def test_no_module_patches_another_at_import(path: pathlib.Path) -> None:
    assert patches(path.read_text()) == []


def test_the_check_sees_a_patch() -> None:
    src = ("import a\nfrom b import C\nimport c as m1, d as m2\n"
           "a.f = 1\nsetattr(C, 'g', 2)\nfor m in (m1, m2):\n    setattr(m, 'T', 3)\n"
           "class D:\n    pass\nD.h = 4\ndef f():\n    a.x = 5\n")
    assert patches(src) == ["4: a.f = ...", "5: setattr(C, ...)", "7: setattr(m, ...)"]
