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
In the "native" run (only where numba is installed: the ``native`` extra) the transforms
are wrapped as in "jit" with ``backend="native"``: each jitted call traces, then blocks
until its native code is compiled (``lower(...).compile()``), fails if the program fell
back to the replay although some equation lowers (a compile error, say), runs the native
code and fails if that code handed the call to the replay; its result is what the test
checks. Every other ``fg.jit`` in the test compiles natively too. The compiler is slow, so
this run is made for a representative subset, the tests marked ``@pytest.mark.native``
(``FUNCGRAD_TEST_NATIVE=all`` runs it for every test: tests/conftest.py).
A test that is about eager-only behaviour is marked ``@pytest.mark.eager_only``
(``@pytest.mark.eager_only("of_jit")``: skipped in that run only).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import pytest

import funcgrad as fg
from funcgrad.core.trace import current_traces

_WRAPPED = ("grad", "value_and_grad", "jacrev", "jacfwd", "jacobian", "hessian", "vmap")
MODES = ("eager", "jit", "of_jit")  # and "native", where numba is installed (tests/conftest.py)

#: Why the native tier may leave a program to the replay without anything lowerable being lost.
NOTHING_TO_LOWER = ("replay only: no equation lowers", "replay only: no equations",
                    "replay only: a program of float scalars runs as Python-float code")


def _compiled(f: Callable[..., Any]) -> Callable[..., Any]:
    """Call ``f`` twice and return the second result: a jitted function's first call per
    signature traces (its values come from the trace), later calls run the compiled
    program, which is what these runs must check."""

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        f(*args, **kwargs)
        return f(*args, **kwargs)

    return call


def _native(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` (a jitted function) called once to trace, compiled to native code (blocking),
    then called again: the native code's result, checked to come from the native code.
    Called inside an enclosing transform's trace, ``f`` is recorded into that program (which
    the enclosing jitted call checks): its one call is what the test sees."""

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = f(*args, **kwargs)
        if current_traces():  # called while an enclosing transform traces: part of its program
            return out
        lowered = f.lower(*args, **kwargs)
        compiled = lowered.compile()
        assert compiled.backend == "native" or compiled.why in NOTHING_TO_LOWER, \
            f"the native tier left a program with lowerable equations to the replay: {compiled.why}"
        tier = lowered._entry.staged.tier
        before = tier.fallbacks
        out = f(*args, **kwargs)
        assert tier.fallbacks == before, "the native code handed the call to the replay (numba raised TypeError)"
        return out

    return call


def _jit_transform(orig: Callable[..., Any], backend: str | None = None) -> Callable[..., Any]:
    run = _native if backend == "native" else _compiled

    @functools.wraps(orig)
    def transform(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return run(fg.jit(orig(fun, *args, **kwargs), backend=backend))

    return transform


def _jit_applied(orig: Callable[..., Any], backend: str | None = None) -> Callable[..., Any]:
    run = _native if backend == "native" else _compiled

    @functools.wraps(orig)
    def applied(fun: Callable[..., Any], primals: Any, tangents: Any, **kwargs: Any) -> Any:
        return run(fg.jit(lambda p, t: orig(fun, p, t, **kwargs), backend=backend))(primals, tangents)

    return applied


def _of_jitted(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def transform(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        out = orig(fg.jit(fun), *args, **kwargs)
        return _compiled(out) if callable(out) else out

    return transform


@pytest.fixture(autouse=True)
def jit_mode(request: Any, monkeypatch: Any) -> str:
    """The run (parametrized by tests/conftest.py: :data:`MODES`, and "native" where it applies)."""
    mode = getattr(request, "param", "eager")
    marker = request.node.get_closest_marker("eager_only")
    if mode != "eager" and marker is not None and (not marker.args or mode in marker.args):
        pytest.skip("about eager behaviour only")
    if mode in ("jit", "native"):
        backend = "native" if mode == "native" else None
        if backend == "native":
            monkeypatch.setattr(fg.config, "jit_backend", "native")
            monkeypatch.setattr(fg.config, "jit_native_wait", True)
        for name in _WRAPPED:
            monkeypatch.setattr(fg, name, _jit_transform(getattr(fg, name), backend))
        monkeypatch.setattr(fg, "jvp", _jit_applied(fg.jvp, backend))
        monkeypatch.setattr(fg, "hvp", _jit_applied(fg.hvp, backend))
    elif mode == "of_jit":  # the transform applied to a jitted function
        for name in _WRAPPED + ("jvp", "hvp", "vjp", "linearize"):
            monkeypatch.setattr(fg, name, _of_jitted(getattr(fg, name)))
    return str(mode)
