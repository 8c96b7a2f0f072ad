"""A Griffe extension (used by mkdocstrings, see mkdocs.yml) for funcgrad's docstrings.

funcgrad's docstrings use a few reStructuredText idioms that read well in
``help()``; the API reference renders Markdown. This rewrites them:

- a literal block after ``::`` (``Example::`` + an indented block) becomes a
  fenced ``python`` block, and the ``::`` a single colon;
- doctest lines (``>>>`` and ``...`` with their output) become a fenced
  ``pycon`` block;
- the roles ``:func:`name```, ``:class:`...``` (and ``meth``, ``mod``,
  ``attr``, ``data``, ``exc``, ``obj``) become code spans.

It is only a build tool for the documentation site; funcgrad does not import it.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):`~?([^`]+)`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_to_markdown(text: str) -> str:
    """Rewrite the reST idioms of one docstring as Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            out.append(line)
            i += 1
            continue
        if in_fence:
            out.append(line)
            i += 1
            continue
        if stripped.startswith(">>>"):
            base = " " * _indent(line)
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(base):] if lines[i].startswith(base) else lines[i].strip())
                i += 1
            out += [base + "```pycon", *(base + b for b in block), base + "```"]
            continue
        if stripped.endswith("::") and not stripped.endswith(":::"):
            # a literal block follows: blank line(s), then lines indented deeper than this one
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _indent(lines[j]) > _indent(line):
                base = _indent(line)
                k = j
                body = []
                while k < len(lines) and (not lines[k].strip() or _indent(lines[k]) > base):
                    body.append(lines[k])
                    k += 1
                while body and not body[-1].strip():
                    body.pop()
                head = line.rstrip()[:-2].rstrip()
                if head.strip():
                    out.append(_ROLE.sub(r"`\1`", head) + ":")
                    out.append("")
                pad = " " * base
                code = textwrap.dedent("\n".join(body)).splitlines()
                out += [pad + "```python", *(pad + c if c else "" for c in code), pad + "```", ""]
                i = k
                continue
        out.append(_ROLE.sub(r"`\1`", line))
        i += 1
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Rewrite each docstring once, when Griffe creates its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        doc = obj.docstring
        if doc is not None and doc.value:
            doc.value = rst_to_markdown(doc.value)
