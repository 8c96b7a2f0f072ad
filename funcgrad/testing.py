"""Numerical checking of derivatives.

``check_grads`` compares forward mode (``jvp``) and reverse mode (``vjp``)
against central finite differences along random directions, and, for
``order > 1``, does the same for the derivative functions themselves (every
pairing of modes), so rules that are differentiated again are checked too.
``save_everything`` makes recording keep every value, whatever the primitives'
``reads`` declarations say: derivatives computed inside and outside it must agree.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .backend import dtype_of
from . import tree_util
from .backend import namespace_of, to_numpy
from .core.reverse import save_everything
from .transforms import jvp, vjp

__all__ = ["check_grads", "check_jvp", "check_vjp", "save_everything"]

# (eps, atol, rtol) for central differences in each dtype
_DEFAULTS = {
    np.dtype(np.float64): (1e-6, 1e-5, 1e-5),
    np.dtype(np.complex128): (1e-6, 1e-5, 1e-5),
    np.dtype(np.float32): (1e-3, 3e-2, 3e-2),
    np.dtype(np.complex64): (1e-3, 3e-2, 3e-2),
    np.dtype(np.float16): (1e-1, 3e-1, 3e-1),
}


def _tolerances(
    leaves: list[Any], eps: float | None, atol: float | None, rtol: float | None
) -> tuple[float, float, float]:
    # The least precise input dtype sets the defaults.
    worst = max((_DEFAULTS.get(dtype_of(x), _DEFAULTS[np.dtype(np.float64)]) for x in leaves), default=_DEFAULTS[np.dtype(np.float64)])
    return (eps if eps is not None else worst[0], atol if atol is not None else worst[1],
            rtol if rtol is not None else worst[2])


def _random_like(rng: np.random.Generator, x: Any) -> Any:
    shape = tuple(getattr(x, "shape", ()))
    dt = dtype_of(x)
    v = rng.standard_normal(shape)
    if dt.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    v = np.asarray(v, dtype=dt)
    ns = namespace_of(x)
    return v if ns is np else ns.asarray(v)


def _axpy(a: float, xs: Any, ys: Any) -> Any:
    return tree_util.tree_map(lambda x, y: x + a * y, xs, ys)


def _real_pairing(xs: Any, ys: Any) -> float:
    """sum(x * y) over all leaves, real part: the pairing under which vjp is jvp's transpose."""
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
        x, y = to_numpy(x), to_numpy(y)
        total += float(np.real(np.sum(np.asarray(x, dtype=np.complex128) * np.asarray(y, dtype=np.complex128))))
    return total


def _numerical_jvp(f: Callable[..., Any], args: tuple[Any, ...], tangents: tuple[Any, ...], eps: float) -> Any:
    plus = f(*_axpy(eps, args, tangents))
    minus = f(*_axpy(-eps, args, tangents))
    return tree_util.tree_map(
        lambda p, m: (to_numpy(p).astype(np.complex128 if dtype_of(p).kind == "c" else np.float64)
                      - to_numpy(m).astype(np.complex128 if dtype_of(m).kind == "c" else np.float64)) / (2 * eps),
        plus, minus,
    )


def _assert_close(actual: Any, expected: Any, atol: float, rtol: float, what: str) -> None:
    for i, (a, e) in enumerate(zip(tree_util.tree_leaves(actual), tree_util.tree_leaves(expected))):
        a, e = np.asarray(to_numpy(a)), np.asarray(to_numpy(e))
        scale = max(1.0, float(np.max(np.abs(e))) if e.size else 1.0)
        if not np.allclose(a, e, atol=atol * scale, rtol=rtol):
            err = float(np.max(np.abs(a - e))) if a.size else 0.0
            raise AssertionError(
                f"{what}: leaf {i} differs from the numerical derivative (max abs error {err:.3g}, "
                f"atol={atol * scale:.3g}, rtol={rtol:.3g})\nautodiff:\n{a}\nnumerical:\n{e}"
            )


def _check_dtypes(derivs: Any, likes: Any, what: str) -> None:
    for i, (d, x) in enumerate(zip(tree_util.tree_leaves(derivs), tree_util.tree_leaves(likes))):
        if dtype_of(d) != dtype_of(x):
            raise AssertionError(f"{what}: leaf {i} has dtype {dtype_of(d)}, expected {dtype_of(x)}")
        if tuple(getattr(d, "shape", ())) != tuple(getattr(x, "shape", ())):
            raise AssertionError(
                f"{what}: leaf {i} has shape {getattr(d, 'shape', ())}, expected {getattr(x, 'shape', ())}"
            )


def check_jvp(f: Callable[..., Any], args: tuple[Any, ...], *, eps: float, atol: float, rtol: float, rng: np.random.Generator) -> None:
    """Forward mode against central differences along a random direction."""
    tangents = tree_util.tree_map(lambda x: _random_like(rng, x), args)
    out, t_out = jvp(f, args, tangents)
    _check_dtypes(t_out, out, "jvp tangent")
    _assert_close(t_out, _numerical_jvp(f, args, tangents, eps), atol, rtol, f"jvp of {_name(f)}")


def check_vjp(f: Callable[..., Any], args: tuple[Any, ...], *, eps: float, atol: float, rtol: float, rng: np.random.Generator) -> None:
    """Reverse mode: <vjp(u), v> must equal <u, J v> with J v from central differences."""
    out, f_vjp = vjp(f, *args)
    u = tree_util.tree_map(lambda y: _random_like(rng, y), out)
    v = tree_util.tree_map(lambda x: _random_like(rng, x), args)
    cts = f_vjp(u)
    _check_dtypes(cts, args, "vjp cotangent")
    lhs = _real_pairing(cts, v)
    rhs = _real_pairing(u, _numerical_jvp(f, args, v, eps))
    scale = max(1.0, abs(rhs))
    if not abs(lhs - rhs) <= atol * scale + rtol * abs(rhs):
        raise AssertionError(
            f"vjp of {_name(f)}: <vjp(u), v> = {lhs!r} but <u, J v> (numerical) = {rhs!r}"
        )


def _name(f: Callable[..., Any]) -> str:
    return getattr(f, "__name__", repr(f))


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
    seed: int = 0,
) -> None:
    """Check ``f``'s derivatives numerically, in each mode, up to ``order``.

    ``args`` is a tuple of arguments (pytrees of float or complex arrays).
    Tolerances default to values that suit the least precise input dtype.
    Raises AssertionError naming the mode and the mismatch.

    Example::

        fg.testing.check_grads(fnp.tanh, (fnp.linspace(-1, 1, 5),), order=2)
    """
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise TypeError(f"check_grads: args must be a tuple of arguments, got {type(args).__name__}")
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r}; expected 'fwd' and/or 'rev'")
    rng = np.random.default_rng(seed)
    e, a, r = _tolerances(tree_util.tree_leaves(args), eps, atol, rtol)
    _check_grads(f, tuple(args), order, tuple(modes), e, a, r, rng)


def _check_grads(
    f: Callable[..., Any], args: tuple[Any, ...], order: int, modes: tuple[str, ...], eps: float, atol: float,
    rtol: float, rng: np.random.Generator,
) -> None:
    if order < 1:
        return
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, atol=atol, rtol=rtol, rng=rng)
        if order > 1:
            v = tree_util.tree_map(lambda x: _random_like(rng, x), args)

            def jvp_of_f(*xs_and_v: Any) -> Any:
                xs, vs = xs_and_v[: len(args)], xs_and_v[len(args):]
                return jvp(f, xs, vs)[1]

            jvp_of_f.__name__ = f"jvp({_name(f)})"
            _check_grads(jvp_of_f, args + tuple(v), order - 1, modes, eps, atol, rtol, rng)
    if "rev" in modes:
        check_vjp(f, args, eps=eps, atol=atol, rtol=rtol, rng=rng)
        if order > 1:
            out = f(*args)
            u = tree_util.tree_map(lambda y: _random_like(rng, y), out)

            def vjp_of_f(*xs_and_u: Any) -> Any:
                xs, ct = xs_and_u[: len(args)], xs_and_u[len(args)]
                return vjp(f, *xs)[1](ct)

            vjp_of_f.__name__ = f"vjp({_name(f)})"
            _check_grads(vjp_of_f, args + (u,), order - 1, modes, eps, atol, rtol, rng)
