"""Every ```python block in docs/ and README.md runs, page by page, in order (README.md's
as pasted into a fresh interpreter: it defines everything it uses)."""

from __future__ import annotations

import pathlib
import re
import sys
import types
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_doc_page_code_runs(page):
    blocks = BLOCK.findall(page.read_text())
    module = types.ModuleType(f"_docs_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses defined on the page look their module up
    namespace = module.__dict__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
            except Exception as err:  # pragma: no cover - the message is the point
                raise AssertionError(f"{page.name}, code block {i} failed: {err!r}\n{code}") from err
    sys.modules.pop(module.__name__, None)


def test_readme_code_runs_as_pasted():
    """Issue 31: the README's first block used w, x and f without defining them."""
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert blocks, "README.md has no python block"
    for i, code in enumerate(blocks):
        namespace: dict = {"__name__": "__main__"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(code, f"README.md[block {i}]", "exec"), namespace)
            except Exception as err:  # pragma: no cover - the message is the point
                raise AssertionError(f"README.md, code block {i} failed: {err!r}\n{code}") from err


def test_home_page_links_every_page_of_the_menu_in_order():
    """Issue 31: docs/index.md left out Fourier transforms, Control flow, Staged execution and
    Many processes, and still called GPU support "in progress"."""
    nav = re.findall(r"^\s+- [^:]+: ([\w-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    nav = [p for p in nav if p not in ("index.md", "getting-started.md")]
    home = (ROOT / "docs" / "index.md").read_text()
    linked = re.findall(r"\]\(([\w-]+\.md)\)", home.split("Guides", 1)[1])
    assert linked == nav
    assert "in progress" not in home


def test_tensor_page_opens_with_what_is_supported_and_the_migration_guide():
    """Issue 31: the Tensor page opened with its internals ("How it works")."""
    heads = re.findall(r"^## (.+)$", (ROOT / "docs" / "tensor.md").read_text(), flags=re.M)
    assert heads[:2] == ["What is supported", "Migrating from PyTorch"]
    assert heads.index("How it works") > heads.index("Threads")
