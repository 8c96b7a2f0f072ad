"""MkDocs hooks (see mkdocs.yml): pages generated from the package at build time.

``<!-- funcgrad-index: numpy -->`` in a page becomes tables of every public
function of ``funcgrad.numpy`` (grouped by family, with the first line of its
docstring), and ``<!-- funcgrad-index: scipy.special -->`` the same for
``funcgrad.scipy.special``. The tables are built by importing funcgrad, so
they always list what the installed code provides.
"""

from __future__ import annotations

import importlib
import pathlib
import re
import sys
from typing import Any

_MARKER = re.compile(r"<!-- funcgrad-index: ([\w.]+) -->")

_FAMILIES = [
    ("creation", "Creation"),
    ("elementwise", "Elementwise"),
    ("reductions", "Reductions"),
    ("shape_ops", "Shapes"),
    ("linalg", "Products"),
    ("indexing", "Indexing"),
    ("nondiff", "Without a derivative (shapes, comparisons, rounding, ...)"),
]


def _summary(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    paragraphs = [p for p in doc.split("\n\n") if p.strip()] or [""]
    line = paragraphs[0]
    name = getattr(obj, "__name__", "")
    if name and line.startswith(name + "(") and len(paragraphs) > 1:
        line = paragraphs[1]  # NumPy's own docstrings open with the signature
    line = " ".join(line.split()).replace(" (runs on the arrays' own backend)", "")
    line = line.replace("``", "`").replace("|", "\\|")
    # brackets outside code spans would read as Markdown links
    parts = line.split("`")
    for k in range(0, len(parts), 2):
        parts[k] = parts[k].replace("[", "\\[").replace("]", "\\]")
    return "`".join(parts)


def _table(prefix: str, names: list[str], ns: Any) -> str:
    rows = ["| function | description |", "|---|---|"]
    for name in sorted(set(names)):
        obj = getattr(ns, name, None)
        if callable(obj) and not isinstance(obj, type):
            rows.append(f"| `{prefix}{name}` | {_summary(obj)} |")
    return "\n".join(rows)


def _numpy_index() -> str:
    import numpy as np

    fnp = importlib.import_module("funcgrad.numpy")
    out = []
    for module, title in _FAMILIES:
        mod = importlib.import_module(f"funcgrad.numpy.{module}")
        names = [n for n in getattr(mod, "__all__", []) if hasattr(fnp, n)]
        out += [f"#### {title}", "", _table("fnp.", names, fnp), ""]
    linalg = fnp.linalg
    names = [n for n in dir(np.linalg) if not n.startswith("_") and callable(getattr(linalg, n, None))]
    out += ["#### `fnp.linalg`", "", _table("fnp.linalg.", names, linalg), ""]
    return "\n".join(out)


def _scipy_special_index() -> str:
    special = importlib.import_module("funcgrad.scipy.special")
    return _table("funcgrad.scipy.special.", list(special.__all__), special)


_INDEXES = {"numpy": _numpy_index, "scipy.special": _scipy_special_index}


def on_config(config: Any) -> Any:
    root = str(pathlib.Path(config.config_file_path).resolve().parent)
    if root not in sys.path:  # import the checkout being documented
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(match: re.Match) -> str:
        make = _INDEXES.get(match[1])
        if make is None:
            raise ValueError(f"{page.file.src_uri}: unknown funcgrad-index {match[1]!r}")
        return make()

    return _MARKER.sub(replace, markdown)
