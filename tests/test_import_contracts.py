"""Which way imports go (issue 30): the import-linter contracts of ``pyproject.toml`` hold
(layers core <- backend <- numpy <- transforms <- scipy <- nn/optim <- distributed <- tensor;
no import circles inside a package), and they do fail when a back-import or a circle is added.

import-linter is in the ``test`` extra. Imports inside functions and type-only imports count.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _lint(root: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``root`` with the contracts in ``root/pyproject.toml``."""
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)


def _copy_with(tmp_path: pathlib.Path, module: str, added: str) -> pathlib.Path:
    """A copy of the package (and its contracts) in which ``module`` (a path) ends with ``added``."""
    shutil.copytree(ROOT / "funcgrad", tmp_path / "funcgrad", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + added)
    return tmp_path


def test_the_import_contracts_are_kept() -> None:
    got = _lint(ROOT)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "0 broken" in got.stdout


def test_a_back_import_inside_a_function_breaks_the_layers(tmp_path: pathlib.Path) -> None:
    root = _copy_with(tmp_path, "funcgrad/numpy/_util.py",
                      "\n\ndef _uses_vmap() -> None:\n    from ..transforms import vmap  # noqa: F401\n")
    got = _lint(root)
    assert got.returncode != 0
    assert "funcgrad.numpy is not allowed to import funcgrad.transforms" in got.stdout
    assert "funcgrad.numpy._util -> funcgrad.transforms" in got.stdout


def test_a_circle_inside_a_package_is_refused(tmp_path: pathlib.Path) -> None:
    root = _copy_with(tmp_path, "funcgrad/distributed/errors.py", "\nfrom . import world  # noqa: E402,F401\n")
    got = _lint(root)
    assert got.returncode != 0
    assert "No cycles are allowed in funcgrad.distributed" in got.stdout


def _type_checking_imports(path: pathlib.Path, package: str) -> tuple[set[str], set[str]]:
    """(modules imported under ``if TYPE_CHECKING:``, modules imported anywhere else) by the module at ``path``
    of ``package``, as absolute names (``from .tensor import Tensor`` counts as an import of ``<package>.tensor``)."""
    import ast

    typed: set[str] = set()
    other: set[str] = set()

    def absolute(node: ast.ImportFrom) -> list[str]:
        base = package.split(".")
        if node.level:
            base = base[: len(base) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        return [stem] + [f"{stem}.{a.name}" for a in node.names]

    def walk(node: ast.AST, in_typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            guarded = in_typing or (isinstance(child, ast.If) and ast.unparse(child.test).endswith("TYPE_CHECKING"))
            if isinstance(child, ast.ImportFrom):
                (typed if in_typing else other).update(absolute(child))
            elif isinstance(child, ast.Import):
                (typed if in_typing else other).update(a.name for a in child.names)
            if isinstance(child, ast.If) and guarded and not in_typing:
                for stmt in child.body:
                    walk(ast.Module(body=[stmt], type_ignores=[]), True)
                for stmt in child.orelse:
                    walk(ast.Module(body=[stmt], type_ignores=[]), False)
            else:
                walk(child, in_typing)

    walk(ast.parse(path.read_text()), False)
    return typed, other


def test_every_ignored_import_is_type_only() -> None:
    """The circles contract ignores only imports made for annotations (under ``if TYPE_CHECKING:``):
    the runtime import graph has no circle at all."""
    import re

    text = (ROOT / "pyproject.toml").read_text()
    ignored = [line for block in re.findall(r"ignore_imports = \[(.*?)\n\]", text, re.S)
               for line in re.findall(r'^\s*"([^"]+)"', block, re.M)]
    assert ignored, "expected the type-only imports of the Tensor class to be listed"
    for line in ignored:
        importer, imported = (part.strip() for part in line.split("->"))
        typed, other = _type_checking_imports(ROOT / (importer.replace(".", "/") + ".py"), importer.rsplit(".", 1)[0])
        assert imported in typed, f"{line}: not an import under `if TYPE_CHECKING:`"
        assert imported not in other, f"{line}: {importer} also imports {imported} at run time"


def test_the_type_only_check_sees_a_runtime_import(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n\n"
                      "def f():\n    from .b import B\n")
    typed, other = _type_checking_imports(module, "pkg")
    assert "pkg.a" in typed and "pkg.a.A" in typed
    assert "pkg.b" in other and "pkg.b" not in typed
