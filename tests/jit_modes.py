"""Run a test module's transform tests twice: as written, and with each transform wrapped in fg.jit.

A test module opts in with::

    from jit_modes import jit_mode  # noqa: F401  (autouse fixture: eager and jit runs)

In the "jit" run, ``fg.grad(f)`` and the other function transforms become
``fg.jit(fg.grad(f))`` (same for value_and_grad, jacrev/jacfwd/jacobian, hessian,
vmap), and ``fg.jvp`` / ``fg.hvp`` run inside a jitted wrapper, so each test checks
the staged program against the same expectations. Transforms nested inside a
jitted function meet traced arguments and are recorded into the outer program.
In the "of_jit" run the transforms are applied to ``fg.jit(f)`` instead
(``fg.grad(fg.jit(f))``): the jitted call is one primitive with staged rules.
A test that is about eager-only behaviour is marked ``@pytest.mark.eager_only``
(``@pytest.mark.eager_only("of_jit")``: skipped in that run only).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import pytest

import funcgrad as fg

_WRAPPED = ("grad", "value_and_grad", "jacrev", "jacfwd", "jacobian", "hessian", "vmap")


def _compiled(f: Callable[..., Any]) -> Callable[..., Any]:
    """Call ``f`` twice and return the second result: a jitted function's first call per
    signature traces (its values come from the trace), later calls run the compiled
    program, which is what these runs must check."""

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        f(*args, **kwargs)
        return f(*args, **kwargs)

    return call


def _jit_transform(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def transform(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return _compiled(fg.jit(orig(fun, *args, **kwargs)))

    return transform


def _jit_applied(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def applied(fun: Callable[..., Any], primals: Any, tangents: Any, **kwargs: Any) -> Any:
        return _compiled(fg.jit(lambda p, t: orig(fun, p, t, **kwargs)))(primals, tangents)

    return applied


def _of_jitted(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def transform(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        out = orig(fg.jit(fun), *args, **kwargs)
        return _compiled(out) if callable(out) else out

    return transform


@pytest.fixture(params=["eager", "jit", "of_jit"], autouse=True)
def jit_mode(request: Any, monkeypatch: Any) -> str:
    marker = request.node.get_closest_marker("eager_only")
    if request.param != "eager" and marker is not None and (not marker.args or request.param in marker.args):
        pytest.skip("about eager behaviour only")
    if request.param == "jit":
        for name in _WRAPPED:
            monkeypatch.setattr(fg, name, _jit_transform(getattr(fg, name)))
        monkeypatch.setattr(fg, "jvp", _jit_applied(fg.jvp))
        monkeypatch.setattr(fg, "hvp", _jit_applied(fg.hvp))
    elif request.param == "of_jit":  # the transform applied to a jitted function
        for name in _WRAPPED + ("jvp", "hvp", "vjp", "linearize"):
            monkeypatch.setattr(fg, name, _of_jitted(getattr(fg, name)))
    return str(request.param)
