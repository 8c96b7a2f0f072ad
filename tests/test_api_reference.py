"""The API reference (docs/api.md, rendered by mkdocstrings) documents public names only,
each once (issue 31: ``::: funcgrad.jit`` rendered the module funcgrad.transforms.jit with
its internals, make_program twice, and vjp's typing overloads).

The rendered page is checked by tests/test_docs_site.py (it needs the ``docs`` extra and a
30 s ``mkdocs build``); this test checks what that build reads, without mkdocs: every
``::: path`` directive names a public object, once, and resolves to the object the user
imports (a path that is also a module is rendered as the module by mkdocstrings)."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
API = (ROOT / "docs" / "api.md").read_text()
DIRECTIVES = re.findall(r"^::: ([\w.]+)", API, flags=re.M)


def _resolve(path):
    """The object ``path`` names, and whether mkdocstrings would take it for a module."""
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            obj = importlib.import_module(name)
        except ImportError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj, k == len(parts)
    raise AssertionError(f"api.md: ::: {path} names nothing importable")


def test_directives_name_public_objects_once():
    assert len(DIRECTIVES) > 50
    assert sorted(p for p in set(DIRECTIVES) if DIRECTIVES.count(p) > 1) == []
    private = [p for p in DIRECTIVES if any(part.startswith("_") for part in p.split("."))]
    assert private == [], f"api.md renders private modules or names: {private}"


def test_a_function_is_not_shadowed_by_a_module_of_its_name():
    """``funcgrad.jit`` is the function, but ``::: funcgrad.jit`` renders the module
    funcgrad/transforms/jit.py seen through it; the directive must name the function's home."""
    shadowed = []
    for path in DIRECTIVES:
        obj, is_module = _resolve(path)
        home = getattr(obj, "__module__", None) or ""
        name = getattr(obj, "__name__", "")
        if not is_module and home.rpartition(".")[2] == name and path != f"{home}.{name}":
            shadowed.append(path)
    assert shadowed == [], f"these directives render a module, not the function (name its home): {shadowed}"


def test_member_lists_are_public():
    members = re.findall(r"^\s+- (\w+)\s*$", API, flags=re.M)
    assert members and [m for m in members if m.startswith("_")] == []


def test_one_signature_per_function():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^\s+show_overloads: false", config, flags=re.M), "typing overloads would be rendered"
    assert 'filters: ["!^_"]' in config


def test_special_functions_render_under_their_public_module():
    """funcgrad.scipy.special names its re-exports one by one (mkdocstrings reads ``__all__``
    statically), so every function of _special_more is rendered as funcgrad.scipy.special.*."""
    import funcgrad.scipy._special_more as more
    import funcgrad.scipy.special as special

    assert set(more.__all__) <= set(special.__all__)
    source = (ROOT / "funcgrad" / "scipy" / "special.py").read_text()
    assert "import *" not in source and "__all__ += _" not in source
