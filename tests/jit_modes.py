"""Run a test module's transform tests twice: as written, and with each transform wrapped in fg.jit.

A test module opts in with::

    from jit_modes import jit_mode  # noqa: F401  (autouse fixture: eager and jit runs)

In the "jit" run, ``fg.grad(f)`` and the other function transforms become
``fg.jit(fg.grad(f))`` (same for value_and_grad, jacrev/jacfwd/jacobian, hessian,
vmap), and ``fg.jvp`` / ``fg.hvp`` run inside a jitted wrapper, so each test checks
the staged program against the same expectations. Transforms nested inside a
jitted function meet traced arguments and are recorded into the outer program.
A test that is about eager-only behaviour is marked ``@pytest.mark.eager_only``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import pytest

import funcgrad as fg

_WRAPPED = ("grad", "value_and_grad", "jacrev", "jacfwd", "jacobian", "hessian", "vmap")


def _jit_transform(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def transform(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fg.jit(orig(fun, *args, **kwargs))

    return transform


def _jit_applied(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def applied(fun: Callable[..., Any], primals: Any, tangents: Any, **kwargs: Any) -> Any:
        return fg.jit(lambda p, t: orig(fun, p, t, **kwargs))(primals, tangents)

    return applied


@pytest.fixture(params=["eager", "jit"], autouse=True)
def jit_mode(request: Any, monkeypatch: Any) -> str:
    if request.param == "jit":
        if request.node.get_closest_marker("eager_only") is not None:
            pytest.skip("about eager behaviour only")
        for name in _WRAPPED:
            monkeypatch.setattr(fg, name, _jit_transform(getattr(fg, name)))
        monkeypatch.setattr(fg, "jvp", _jit_applied(fg.jvp))
        monkeypatch.setattr(fg, "hvp", _jit_applied(fg.hvp))
    return str(request.param)
