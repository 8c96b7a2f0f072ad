"""MkDocs hooks (see mkdocs.yml): page content generated at build time.

``<!-- funcgrad-index: numpy -->`` in a page becomes tables of every public
function of ``funcgrad.numpy`` (grouped by family, with the first line of its
docstring), and ``<!-- funcgrad-index: scipy.special -->`` the same for
``funcgrad.scipy.special``. The tables are built by importing funcgrad, so
they always list what the checked-out code provides.

``<!-- funcgrad-include: benchmarks/RESULTS.md -->`` inserts a Markdown file
from outside ``docs/`` (path relative to the repository root): its headings
move one level down, the images and other files it links to are published
with the site, and links to other Markdown files become plain text. A note
takes its place while the file does not exist.
"""

from __future__ import annotations

import importlib
import pathlib
import posixpath
import re
import sys
from typing import Any

_MARKER = re.compile(r"<!-- funcgrad-index: ([\w.]+) -->")
_INCLUDE = re.compile(r"<!-- funcgrad-include: ([\w./-]+) -->")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_ROOT = pathlib.Path(__file__).resolve().parents[2]

_FAMILIES = [
    ("creation", "Creation"),
    ("elementwise", "Elementwise"),
    ("reductions", "Reductions"),
    ("shape_ops", "Shapes"),
    ("linalg", "Products"),
    ("indexing", "Indexing"),
    ("nondiff", "Without a derivative (shapes, comparisons, rounding, ...)"),
    ("aliases", "Array-API names and aliases"),
    ("rearrange", "Rearranging elements"),
    ("more_math", "More math (nan-aware products, ldexp/frexp, unwrap ...)"),
    ("polynomials", "Polynomials"),
    ("windows", "Window functions"),
    ("index_tricks", "Index tricks and in-place helpers"),
    ("functional", "Calling your function (apply_along_axis, piecewise, vectorize)"),
    ("passthrough", "Histograms, set operations, printing, saving (no derivative)"),
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
    fft = fnp.fft
    out += ["#### `fnp.fft`", "", _table("fnp.fft.", list(fft.__all__), fft), ""]
    return "\n".join(out)


def _numpy_status() -> str:
    """Every public name of NumPy (and numpy.fft, numpy.linalg) with its status in funcgrad.numpy,
    from funcgrad.numpy.coverage (the classification the tests check)."""
    coverage = importlib.import_module("funcgrad.numpy.coverage")
    out = []
    for prefix, title in (("", "`numpy`"), ("fft", "`numpy.fft`"), ("linalg", "`numpy.linalg`")):
        rows = coverage.table(prefix)
        counts: dict[str, int] = {}
        for _, status, _ in rows:
            counts[status] = counts.get(status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        out += [f"#### {title}", "", f"{len(rows)} names: {summary}.", "", "| name | status | note |", "|---|---|---|"]
        for name, status, note in rows:
            out.append(f"| `{name}` | {status} | {note.replace('|', '/')} |")
        out.append("")
    return "\n".join(out)


def _scipy_special_index() -> str:
    special = importlib.import_module("funcgrad.scipy.special")
    return _table("funcgrad.scipy.special.", list(special.__all__), special)


_INDEXES = {"numpy": _numpy_index, "scipy.special": _scipy_special_index, "numpy-status": _numpy_status}


def _relative_targets(path: pathlib.Path) -> list[str]:
    """Relative links of an included file that point at existing non-Markdown files."""
    out = []
    for _, _, target in _LINK.findall(path.read_text(encoding="utf-8")):
        if "://" in target or target.startswith(("#", "/", "mailto:")):
            continue
        target = target.split("#")[0]
        if target and not target.endswith(".md") and (path.parent / target).is_file():
            out.append(target)
    return out


def _include(rel: str, page_uri: str) -> str:
    path = _ROOT / rel
    if not path.is_file():
        return (
            f'!!! note "Not generated yet"\n    `{rel}` is not in the repository yet; '
            f"run the benchmarks to produce it.\n"
        )
    folder = posixpath.dirname(rel)
    page_dir = posixpath.dirname(page_uri)

    def link(match: re.Match) -> str:
        bang, text, target = match[1], match[2], match[3]
        if "://" in target or target.startswith(("#", "/", "mailto:")):
            return match[0]
        plain, _, anchor = target.partition("#")
        if plain.endswith(".md") or not (path.parent / plain).is_file():
            return f"{text} (`{posixpath.normpath(posixpath.join(folder, target))}`)"
        new = posixpath.relpath(posixpath.join(folder, plain), page_dir or ".")
        return f"{bang}[{text}]({new}{'#' + anchor if anchor else ''})"

    lines = []
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            if line.startswith("#"):
                line = "#" + line  # one level down: the page keeps its own title
            line = _LINK.sub(link, line)
        lines.append(line)
    return "\n".join(lines) + "\n"


def on_config(config: Any) -> Any:
    root = str(pathlib.Path(config.config_file_path).resolve().parent)
    if root not in sys.path:  # import the checkout being documented
        sys.path.insert(0, root)
    return config


def on_files(files: Any, config: Any) -> Any:
    """Publish the files that included Markdown files link to."""
    from mkdocs.structure.files import File

    docs = pathlib.Path(config.docs_dir)
    for page in docs.rglob("*.md"):
        for rel in _INCLUDE.findall(page.read_text(encoding="utf-8")):
            path = _ROOT / rel
            if not path.is_file():
                continue
            for target in _relative_targets(path):
                uri = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
                if files.get_file_from_path(uri) is None:
                    files.append(File.generated(config, uri, abs_src_path=str(path.parent / target)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def replace(match: re.Match) -> str:
        make = _INDEXES.get(match[1])
        if make is None:
            raise ValueError(f"{page.file.src_uri}: unknown funcgrad-index {match[1]!r}")
        return make()

    markdown = _MARKER.sub(replace, markdown)
    return _INCLUDE.sub(lambda m: _include(m[1], page.file.src_uri), markdown)
