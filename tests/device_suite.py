"""The device suite's machinery: run a function and its transforms on a device backend and
compare with NumPy, with no device-to-host transfer allowed.

``check_case(fn, args, consts, put=..., ...)`` runs, on host inputs and on device inputs:
forward, ``vjp``, ``jvp``, a Hessian-vector product (``jvp`` of ``grad``: second order,
forward over reverse), the VJP of the VJP (reverse over reverse) and ``vmap`` over a
batch of two examples, and checks that

* every array the device run returns lives on the device (``namespace_of`` is the
  device namespace), and equals the host result;
* nothing was copied from the device to the host (the backend's ``no_sync`` context
  raises on such a copy; see tests/fake_backend.py);
* optionally, nothing was uploaded from the host either.

Used by tests/test_device_suite.py (fake backend) and tests/test_cupy.py (real CuPy).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np

import funcgrad as fg
from funcgrad import tree_util
from funcgrad.backend import namespace_of, to_numpy

MODES = ("fwd", "vjp", "jvp", "hvp", "vjp2", "vmap")


def _is_float(x: Any) -> bool:
    d = getattr(x, "dtype", None)
    return d is not None and np.dtype(d).kind in "fc"


def _rng_like(rng: np.random.Generator, x: Any) -> np.ndarray:
    shape = tuple(getattr(x, "shape", ()))
    dt = np.dtype(x.dtype)
    v = rng.standard_normal(shape)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v, dtype=dt)


def _leaves(x: Any) -> list:
    return tree_util.tree_leaves(x)


def _float_outputs(out: Any) -> tuple:
    return tuple(o for o in _leaves(out) if _is_float(o))


class Plan:
    """Host inputs of one case and the random directions used by every mode."""

    def __init__(self, fn: Callable, args: Sequence[Any], consts: Sequence[Any] = (), seed: int = 0,
                 modes: Sequence[str] = MODES, batch_args: Sequence[Any] | None = None):
        self.fn = fn
        self.args = tuple(np.asarray(a) for a in args)
        self.consts = tuple(consts)
        self.modes = tuple(modes)
        rng = np.random.default_rng(seed)
        out = fn(*self.args, *[c.value if isinstance(c, Host) else c for c in self.consts])
        self.floats = [_is_float(a) for a in self.args]
        fouts = _float_outputs(out)
        self.cts = tuple(_rng_like(rng, o) for o in fouts)
        self.tans = tuple(_rng_like(rng, a) for a in self.args if _is_float(a))
        self.weights = tuple(_rng_like(rng, o) for o in fouts)
        if batch_args is None:  # a second example: the same values permuted (stays in the domain)
            batch_args = [np.flip(a) if np.ndim(a) else a for a in self.args]
        self.batched = tuple(np.stack([a, np.asarray(b, dtype=a.dtype)]) for a, b in zip(self.args, batch_args))
        if not fouts or not any(self.floats):
            self.modes = tuple(m for m in self.modes if m in ("fwd", "vmap", "traced"))


def _split(args: tuple, floats: list) -> tuple[list, Callable]:
    """The differentiable args, and a function rebuilding the full argument list from them."""
    diff = [a for a, f in zip(args, floats) if f]

    def rebuild(d: Sequence[Any]) -> list:
        it = iter(d)
        return [next(it) if f else a for a, f in zip(args, floats)]

    return diff, rebuild


def run(plan: Plan, put: Callable[[Any], Any]) -> dict:
    """Every mode of ``plan`` on inputs placed with ``put``; results as (possibly device) pytrees."""
    return run_placed(plan, plan.fn, *_place(plan, put))


def run_placed(plan, fn, args, consts, diff, rebuild, cts, tans, weights, batched) -> dict:
    import funcgrad.numpy as fnp

    res: dict[str, Any] = {}

    def f(*d):
        return _float_outputs(fn(*rebuild(d), *consts))

    if "fwd" in plan.modes:
        res["fwd"] = fn(*args, *consts)
    if "traced" in plan.modes:  # no derivative (nondiff functions): forward under a trace
        x0 = args[0]

        def g(x):
            return fn(x, *args[1:], *consts)

        res["traced"] = fg.vjp(g, x0)[0] if _is_float(x0) else fg.vmap(g)(fnp.stack([x0]))
    if "vjp" in plan.modes:
        out, f_vjp = fg.vjp(f, *diff)
        res["vjp_out"] = out
        res["vjp"] = f_vjp(cts)
    if "jvp" in plan.modes:
        res["jvp"] = fg.jvp(f, tuple(diff), tans)[1]
    if "hvp" in plan.modes:
        def h(*d):
            total = 0.0
            for o, w in zip(f(*d), weights):
                total = total + fnp.sum(fnp.real(o * w))
            return total

        res["hvp"] = fg.jvp(fg.grad(h, argnums=tuple(range(len(diff)))), tuple(diff), tans)[1]
    if "vjp2" in plan.modes:  # reverse over reverse: the VJP of the VJP
        def vjp_of_f(*d):
            return fg.vjp(f, *d)[1](cts)

        res["vjp2"] = fg.vjp(vjp_of_f, *diff)[1](tans)
    if "vmap" in plan.modes:
        res["vmap"] = fg.vmap(lambda *a: fn(*a, *consts))(*batched)
    return res


def compare(host: dict, dev: dict, xp: Any, rtol: float, atol: float, what: str) -> None:
    for mode, want in host.items():
        got = dev[mode]
        w_leaves, w_def = tree_util.tree_flatten(want)
        g_leaves, g_def = tree_util.tree_flatten(got)
        assert len(w_leaves) == len(g_leaves), f"{what} [{mode}]: {g_def} vs {w_def}"
        for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
            if isinstance(w, (bool, int, float, complex)) and not hasattr(g, "shape"):
                assert g == w, f"{what} [{mode}] leaf {i}: {g!r} != {w!r}"
                continue
            if hasattr(w, "shape") and not isinstance(w, np.generic) or hasattr(g, "shape"):
                ns = namespace_of(g)
                assert ns is xp, (
                    f"{what} [{mode}] leaf {i}: a {type(g).__module__}.{type(g).__name__} came back, "
                    f"not an array of the device namespace {getattr(xp, '__name__', xp)}"
                )
            g_np = np.asarray(to_numpy(g))
            w_np = np.asarray(w)
            assert g_np.shape == w_np.shape, f"{what} [{mode}] leaf {i}: shape {g_np.shape} != {w_np.shape}"
            assert g_np.dtype == w_np.dtype, f"{what} [{mode}] leaf {i}: dtype {g_np.dtype} != {w_np.dtype}"
            np.testing.assert_allclose(g_np, w_np, rtol=rtol, atol=atol, err_msg=f"{what} [{mode}] leaf {i}")


def check_case(fn: Callable, args: Sequence[Any], consts: Sequence[Any] = (), *, put: Callable, xp: Any,
               no_sync: Callable[[], Any] = contextlib.nullcontext, uploads: Callable[[], int] | None = None,
               max_uploads: int | None = 0, modes: Sequence[str] = MODES, what: str = "",
               rtol: float | None = None, atol: float | None = None, batch_args: Sequence[Any] | None = None,
               seed: int = 0) -> dict:
    """Run ``fn``'s transforms on host and device inputs and compare (see the module docstring)."""
    plan = Plan(fn, args, consts, seed=seed, modes=modes, batch_args=batch_args)
    host = run(plan, lambda a: a)
    placed = _place(plan, put)
    # The plain forward pass on raw device arrays is the backend's own business (CuPy
    # uploads host index lists itself); uploads are counted in the transformed modes.
    modes = plan.modes
    with no_sync():
        plan.modes = tuple(m for m in modes if m == "fwd")
        dev = run_placed(plan, plan.fn, *placed)
        plan.modes = tuple(m for m in modes if m != "fwd")
        before = uploads() if uploads is not None else 0
        dev.update(run_placed(plan, plan.fn, *placed))
        n_up = (uploads() - before) if uploads is not None else 0
        if n_up and max_uploads is not None:  # constants are uploaded once and cached: count a second run
            before = uploads()
            run_placed(plan, plan.fn, *placed)
            n_up = uploads() - before
    plan.modes = modes
    low = any(np.dtype(a.dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) for a in plan.args if _is_float(a))
    compare(host, dev, xp, rtol if rtol is not None else (2e-4 if low else 1e-9),
            atol if atol is not None else (2e-4 if low else 1e-9), what)
    if max_uploads is not None and uploads is not None:
        assert n_up <= max_uploads, f"{what}: {n_up} host-to-device uploads during the transforms (second run)"
    return dev


class Host:
    """A constant argument that stays on the host (static data, e.g. an index list)."""

    def __init__(self, value: Any):
        self.value = value


def _host_or_put(c: Any, put: Callable) -> Any:
    return c.value if isinstance(c, Host) else put(c)


def _place(plan: Plan, put: Callable) -> tuple:
    args = tuple(put(a) for a in plan.args)
    consts = tuple(_host_or_put(c, put) for c in plan.consts)
    diff, rebuild = _split(args, plan.floats)
    return (args, consts, diff, rebuild, tuple(put(c) for c in plan.cts), tuple(put(t) for t in plan.tans),
            tuple(put(w) for w in plan.weights), tuple(put(b) for b in plan.batched))
