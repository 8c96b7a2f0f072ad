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


def test_a_type_only_import_of_the_tensor_class_is_a_circle(tmp_path: pathlib.Path) -> None:
    """The method mixins are generic in the Tensor class (tensor_type.py): naming ``Tensor`` in one of them,
    even under ``if TYPE_CHECKING:``, is a circle the contracts refuse."""
    root = _copy_with(tmp_path, "funcgrad/tensor/_tensor_shape.py",
                      "\nfrom typing import TYPE_CHECKING  # noqa: E402\n\nif TYPE_CHECKING:\n"
                      "    from .tensor import Tensor  # noqa: F401\n")
    got = _lint(root)
    assert got.returncode != 0
    assert "No cycles are allowed in funcgrad.tensor" in got.stdout
    assert ".tensor -> ._tensor_shape" in got.stdout


def test_no_import_is_let_through() -> None:
    """The contracts list no exceptions: every import counts, type-only ones included."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "ignore_imports" not in text.split("[tool.importlinter]", 1)[1]
