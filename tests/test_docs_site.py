"""The documentation site builds with ``mkdocs build --strict``: a broken link, a
page missing from the build, a bad API-reference directive or a docstring that
renders badly fails here. Skipped unless the ``docs`` extra is installed
(``pip install -e ".[docs]"``)."""

from __future__ import annotations

import pathlib
import sys

import background_checks
import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _build_command(folder):
    return [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
            "--site-dir", str(folder)]


# The build starts with the session and runs beside the other tests (tests/background_checks.py).
BUILD = background_checks.register(
    "mkdocs build", _build_command, cwd=ROOT, env={"NO_MKDOCS_2_WARNING": "1"},
    wanted_by=[(__file__, "*")])


@pytest.fixture(scope="module")
def site(background):
    built = background.result(BUILD)
    proc = built.process
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return built.folder


def test_every_page_is_built(site):
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    for stem in pages:
        html = site / ("index.html" if stem == "index" else f"{stem}/index.html")
        assert html.is_file(), f"docs/{stem}.md was not built"


def test_api_reference_is_generated(site):
    api = (site / "api" / "index.html").read_text()
    for name in ("value_and_grad", "jacrev", "make_graph", "tree_map", "check_grads"):
        assert f'doc-function-name">{name}<' in api, name
    for name in ("custom_vjp", "Graph"):
        assert f'doc-class-name">{name}<' in api, name
    # the generated index of funcgrad.numpy lists functions defined as primitives
    for name in ("fnp.tanh", "fnp.einsum", "fnp.linalg.solve", "funcgrad.scipy.special.erf"):
        assert f"<code>{name}</code>" in api, name
    # reST literal blocks and doctests were turned into code blocks, not prose
    assert "Example::" not in api
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">tree_flatten</span>' in api


def test_graph_picture_is_published(site):
    graphs = (site / "graphs" / "index.html").read_text()
    assert 'src="../images/graph-loss.svg"' in graphs
    assert (site / "images" / "graph-loss.svg").read_text().lstrip().startswith("<?xml")


def test_performance_page_includes_the_benchmark_results(site):
    page = (site / "performance" / "index.html").read_text()
    if (ROOT / "benchmarks" / "RESULTS.md").is_file():
        assert "Not generated yet" not in page and "<table>" in page
    else:
        assert "Not generated yet" in page


def test_api_reference_lists_public_names_once(site):
    """Issue 31: the rendered reference showed funcgrad.transforms.jit's internals (Staged,
    call_staged ...), make_program twice and vjp's four overload signatures."""
    import collections
    import re

    api = (site / "api" / "index.html").read_text()
    ids = re.findall(r'<h[2-6] id="([^"]+)" class="doc doc-heading', api)
    assert len(ids) > 100
    assert [i for i, n in collections.Counter(ids).items() if n > 1] == []
    private = [i for i in ids if any(part.startswith("_") for part in i.split("."))]
    assert private == [], f"private names in the API reference: {private[:10]}"
    assert [i for i in ids if i.rsplit(".", 1)[-1] in ("make_program", "jit")] == [
        "funcgrad.transforms.jit.jit", "funcgrad.make_program"]
    assert not re.search(r'doc-class-name">Staged<|call_staged|packed_version', api)
    assert "doc-overloads" not in api
