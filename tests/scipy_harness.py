"""Shared table-driven checks for the funcgrad.scipy modules (linalg, stats, special, signal).

A case is ``(fn, args, ref)``: ``fn`` the funcgrad function of float arrays ``args``, ``ref``
the SciPy function computing the same thing (or None). Each test module applies:
values vs SciPy (float64, float32 with its dtype kept), check_grads to order 2 in both
modes, vmap against a Python loop with the loop fallback turned into an error, and the
fake device suite (no host transfer).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import funcgrad as fg
from funcgrad.testing import check_grads

from factories import no_fallback


class Case(NamedTuple):
    fn: Callable
    args: tuple
    ref: Callable | None = None
    f32: bool = True          # also checked in float32
    rtol: float = 1e-7
    consts: tuple = ()        # trailing arguments that are not differentiated (moved to the device too)

    def call(self, *args: Any) -> Any:
        consts = tuple(np.asarray(c, dtype=fg.numpy.result_type(args[0])) if np.asarray(c).dtype.kind == "f" else c
                       for c in self.consts) if args else self.consts
        return self.fn(*args, *consts)


def _leaves(x: Any) -> list:
    return fg.tree_util.tree_leaves(x)


def check_values(case: Case) -> None:
    if case.ref is None:
        return
    got, want = _leaves(case.call(*case.args)), _leaves(case.ref(*case.args, *case.consts))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=case.rtol, atol=1e-10)


def check_float32(case: Case) -> None:
    if not case.f32:
        return
    args32 = tuple(np.asarray(a, np.float32) for a in case.args)
    got = _leaves(case.call(*args32))
    want = _leaves(case.call(*case.args))
    for g, w in zip(got, want):
        if np.asarray(w).dtype.kind == "f":
            assert np.asarray(g).dtype == np.float32, f"float32 input gave {np.asarray(g).dtype}"
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-3, atol=2e-4)
    gr = fg.grad(lambda *a: fg.numpy.sum(fg.numpy.real(_leaves(case.call(*a))[0])))(*args32)
    assert np.asarray(gr).dtype == np.float32


def check_derivatives(case: Case, **kw: Any) -> None:
    check_grads(case.call, case.args, order=2, modes=("fwd", "rev"), **kw)


def check_vmap(case: Case, n: int = 2, argnums: tuple | None = None) -> None:
    """vmap over a stack of perturbed copies of the arguments equals a Python loop."""
    rng = np.random.default_rng(1)
    argnums = tuple(range(len(case.args))) if argnums is None else argnums
    stacks = []
    for i, a in enumerate(case.args):
        a = np.asarray(a)
        if i in argnums:
            stacks.append(np.stack([a * (1 + 0.01 * k) + 0.0 * rng.standard_normal(a.shape) for k in range(n)]))
        else:
            stacks.append(a)
    in_axes = tuple(0 if i in argnums else None for i in range(len(case.args)))
    with no_fallback():
        got = fg.vmap(case.call, in_axes=in_axes)(*stacks)
    for k in range(n):
        one = case.call(*(s[k] if i in argnums else s for i, s in enumerate(stacks)))
        for g, w in zip(_leaves(got), _leaves(one)):
            np.testing.assert_allclose(np.asarray(g)[k], np.asarray(w), rtol=1e-6, atol=1e-9)


def check_fake_device(case: Case, **kw: Any) -> None:
    import fake_backend as fb
    from device_suite import check_case

    fb.install()
    check_case(case.fn, case.args, case.consts, put=fb.to_fake, xp=fb.fake, no_sync=fb.no_host_sync,
               uploads=lambda: fb.STATS["h2d"], what=getattr(case.fn, "__name__", "case"), **kw)


def table_tests(cases: dict) -> tuple:
    """The four table-driven tests of a module's ``CASES``, parametrized by case name:
    values vs SciPy, check_grads to order 2 in both modes, float32, vmap vs a loop.

    Example (in a test module)::

        test_values_match_scipy, test_check_grads_order2, test_float32, test_vmap_matches_loop = table_tests(CASES)
    """
    import pytest

    names = sorted(cases)

    @pytest.mark.parametrize("name", names)
    def test_values_match_scipy(name: str) -> None:
        check_values(cases[name])

    @pytest.mark.parametrize("name", names)
    def test_check_grads_order2(name: str) -> None:
        check_derivatives(cases[name])

    @pytest.mark.parametrize("name", names)
    def test_float32(name: str) -> None:
        check_float32(cases[name])

    @pytest.mark.parametrize("name", names)
    def test_vmap_matches_loop(name: str) -> None:
        check_vmap(cases[name])

    return test_values_match_scipy, test_check_grads_order2, test_float32, test_vmap_matches_loop
