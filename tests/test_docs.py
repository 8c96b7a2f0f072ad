"""Every ```python block in docs/ and README.md runs, page by page, in order."""

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
