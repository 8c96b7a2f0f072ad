"""Differentiable ``scipy.optimize``: ``minimize`` and ``root`` whose solutions are
differentiable with respect to the parameters ``args``, by the implicit function theorem.

The solve itself runs SciPy's optimizer (gradients and Jacobians of ``fun`` by funcgrad);
its derivative does not unroll the iterations. At a minimum ``x*`` of ``f(x, θ)`` the
gradient ``∇_x f(x*, θ)`` vanishes, so ``dx*/dθ = -H⁻¹ ∂_θ∇_x f`` with ``H`` the Hessian
in ``x``; for a root of ``F(x, θ) = 0``, ``dx*/dθ = -J_x⁻¹ J_θ``. Both rules (VJP and
JVP) are written with ``fg.grad``/``fg.jacfwd``/``fg.vjp``/``fg.jvp`` and a dense solve,
so second derivatives work too. The derivative with respect to ``x0`` is zero (the
solution does not depend on the starting point).

Under ``vmap`` the batch is solved as one problem: the sum of the per-example objectives
(for ``root``, the stacked system), whose solution is the stack of the per-example ones.

Needs SciPy (``pip install funcgrad[scipy]``) and host (NumPy) arrays: ``cupyx.scipy``
has no ``optimize.minimize`` or ``optimize.root``.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy.optimize import minimize

    def f(x, a):
        return fnp.sum((x - a) ** 2) + fnp.sum(x ** 4)

    fg.jacobian(lambda a: minimize(f, fnp.zeros(2), args=(a,)).x)(fnp.array([1.0, 2.0]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from .. import tree_util
from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import batch_size, move_to_front
from ..numpy._util import dtype, shape
from ._scipy import require_scipy

require_scipy("optimize")

__all__ = ["minimize", "root", "OptimizeResult"]

_MIN_METHODS = ("BFGS", "L-BFGS-B", "CG")
_ROOT_METHODS = ("hybr", "lm")


@dataclass
class OptimizeResult:
    """What :func:`minimize` / :func:`root` return (like ``scipy.optimize.OptimizeResult``).

    ``x`` is differentiable with respect to ``args``; ``fun`` (the objective, or the
    residual for root) is computed from it, so it is differentiable too. ``success``,
    ``status`` and ``nit`` are arrays (they stay batched under vmap).
    """

    x: Any
    fun: Any
    success: Any
    status: Any
    nit: Any
    message: str = ""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


def _host_only(x: Any, what: str) -> None:
    xp = namespace_of(x)
    if xp is not np:
        raise NotImplementedError(
            f"funcgrad.scipy.optimize.{what} runs SciPy's optimizer on the host; cupyx.scipy has no "
            f"optimize.{what} counterpart for arrays of namespace {getattr(xp, '__name__', xp)!r}: move the "
            f"arrays to the host first (fg.device_put(x, 'cpu'))")


def _out_dtype(x0: Any, leaves: tuple[Any, ...]) -> np.dtype:
    """float32 when every floating input is float32 (an integer or float64 x0 does not widen it)."""
    floats = [a.dtype for a in leaves if getattr(a, "dtype", None) is not None and a.dtype.kind == "f"]
    return np.result_type(*floats) if floats else np.result_type(x0.dtype, np.float32)


def _call(fun: Callable[..., Any], treedef: Any, x: Any, leaves: Any) -> Any:
    return fun(x, *tree_util.tree_unflatten(treedef, list(leaves)))


# --------------------------------------------------------------------------
# minimize

def _argmin_raw(x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any, method: str, tol: Any,
                options: Any) -> tuple[Any, ...]:
    import scipy.optimize as so

    from ..transforms import value_and_grad

    for a in (x0,) + leaves:
        _host_only(a, "minimize")
    shp = x0.shape
    vg = value_and_grad(lambda x: _call(fun, treedef, fnp.reshape(x, shp), leaves))

    def f(z: np.ndarray) -> tuple[Any, ...]:
        v, g = vg(z)
        return float(v), np.asarray(g, dtype=np.float64)

    res = so.minimize(f, np.asarray(x0, dtype=np.float64).ravel(), jac=True, method=method, tol=tol,
                      options=options)
    return (np.reshape(res.x, shp).astype(_out_dtype(x0, leaves)), np.asarray(res.status, dtype=np.int64),
            np.asarray(getattr(res, "nit", -1), dtype=np.int64))


def _grad_x(fun: Callable[..., Any], treedef: Any) -> Callable[..., Any]:
    from ..transforms import grad

    def gx(x: Any, *leaves: Any) -> Any:
        return grad(lambda xx: _call(fun, treedef, xx, leaves))(x)

    return gx


def _hessian_flat(fun: Callable[..., Any], treedef: Any, x: Any, leaves: Any) -> Any:
    from ..transforms import jacfwd

    n = int(np.prod(shape(x), dtype=np.int64))
    gx = _grad_x(fun, treedef)
    H = jacfwd(lambda z: fnp.reshape(gx(fnp.reshape(z, shape(x)), *leaves), (n,)))(fnp.reshape(x, (n,)))
    return H, n


def _argmin_vjp(g: Any, ans: Any, argnums: tuple[Any, ...], x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any,
                **_: Any) -> list[Any]:
    from ..transforms import vjp

    xs = ans[0]
    H, n = _hessian_flat(fun, treedef, xs, leaves)
    v = fnp.linalg.solve(H, fnp.reshape(g[0], (n,)))
    gx = _grad_x(fun, treedef)
    _, pull = vjp(lambda *ls: gx(xs, *ls), *leaves)
    bars = pull(-fnp.reshape(v, shape(xs)))
    return [fnp.zeros_like(x0) if k == 0 else bars[k - 1] for k in argnums]


def _argmin_jvp(tangents: list[Any], ans: Any, x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any,
                **_: Any) -> tuple[Any, ...]:
    from ..transforms import jvp

    xs, status, nit = ans
    tl = [t if t is not None else fnp.zeros_like(x) for t, x in zip(tangents[1:], leaves)]
    H, n = _hessian_flat(fun, treedef, xs, leaves)
    gx = _grad_x(fun, treedef)
    _, mixed = jvp(lambda *ls: gx(xs, *ls), tuple(leaves), tuple(tl))
    tx = -fnp.linalg.solve(H, fnp.reshape(mixed, (n,)))
    return fnp.reshape(tx, shape(xs)), fnp.zeros_like(status), fnp.zeros_like(nit)


def _batched_fun(fun: Callable[..., Any], treedef: Any, dl: list[Any], reduce: bool) -> Callable[..., Any]:
    from ..transforms import vmap

    axes = tuple(0 if d is not None else None for d in dl)

    def bfun(X: Any, *leaves: Any) -> Any:
        out = vmap(lambda x, *ls: _call(fun, treedef, x, ls), in_axes=(0,) + axes)(X, *leaves)
        return fnp.sum(out) if reduce else out

    return bfun


def _argmin_batch(args: list[Any], dims: list[Any], fun: Callable[..., Any], treedef: Any,
                  **kw: Any) -> tuple[Any, ...]:
    x0, leaves = args[0], list(args[1:])
    size = batch_size(args, dims)
    x0 = move_to_front(x0, dims[0]) if dims[0] is not None else fnp.broadcast_to(x0, (size,) + shape(x0))
    leaves = [move_to_front(x, d) if d is not None else x for x, d in zip(leaves, dims[1:])]
    # the sum of independent objectives: its minimizer is the stack of theirs
    bfun = _batched_fun(fun, treedef, list(dims[1:]), reduce=True)
    bdef = tree_util.tree_structure(tuple(leaves))
    xs, status, nit = _argmin(x0, *leaves, fun=bfun, treedef=bdef, **kw)
    return (xs, fnp.broadcast_to(status, (size,)), fnp.broadcast_to(nit, (size,))), (0, 0, 0)


_argmin = defprimitive(_argmin_raw, name="minimize", multiple_results=True, vjp_all=_argmin_vjp,
                       jvp_all=_argmin_jvp, batch=_argmin_batch)


def minimize(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (), method: str = "BFGS", tol: float | None = None,
             options: dict[Any, Any] | None = None, **unsupported: Any) -> OptimizeResult:
    """Minimize ``fun(x, *args)`` over ``x`` from ``x0``; the solution is differentiable in ``args``.

    Mirrors ``scipy.optimize.minimize`` for the unconstrained gradient methods
    ``'BFGS'`` (default), ``'L-BFGS-B'`` and ``'CG'``; the gradient of ``fun`` is
    computed by funcgrad. ``x`` keeps the shape of ``x0``; ``args`` is a tuple of
    pytrees of arrays. Derivatives of ``result.x`` with respect to ``args`` use the
    implicit function theorem at the returned point (``H dx = -∂_θ∇_x f dθ``, with the
    dense Hessian ``H`` of ``fun`` in ``x``), so they are as accurate as the solve and
    assume a strict local minimum (``H`` invertible). Bounds and constraints are not
    supported (the implicit derivative would be wrong at an active bound).

    Example::

        res = minimize(lambda x, a: fnp.sum((x - a) ** 2), fnp.zeros(2), args=(fnp.ones(2),))
        res.x   # [1, 1]
    """
    if unsupported:
        raise NotImplementedError(
            f"funcgrad.scipy.optimize.minimize: {sorted(unsupported)} not supported (bounds, constraints and "
            f"callbacks have no implicit derivative here); use method='BFGS', 'L-BFGS-B' or 'CG' unconstrained")
    if method not in _MIN_METHODS:
        raise ValueError(f"minimize: method must be one of {_MIN_METHODS}, got {method!r}")
    if not isinstance(args, tuple):
        args = (args,)
    if dtype(x0).kind != "f":
        x0 = fnp.asarray(x0, dtype=np.float64)
    leaves, treedef = tree_util.tree_flatten(args)
    x, status, nit = _argmin(x0, *leaves, fun=fun, treedef=treedef, method=method, tol=tol, options=options)
    return OptimizeResult(x=x, fun=fun(x, *args), success=status == 0, status=status, nit=nit)


# --------------------------------------------------------------------------
# root

def _root_raw(x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any, method: str, tol: Any,
              options: Any) -> tuple[Any, ...]:
    import scipy.optimize as so

    from ..transforms import jacfwd

    for a in (x0,) + leaves:
        _host_only(a, "root")
    shp, n = x0.shape, x0.size

    def F(z: Any) -> Any:
        return fnp.reshape(_call(fun, treedef, fnp.reshape(z, shp), leaves), (n,))

    J = jacfwd(F)
    res = so.root(lambda z: np.asarray(F(z), dtype=np.float64), np.asarray(x0, dtype=np.float64).ravel(),
                  jac=lambda z: np.asarray(J(z), dtype=np.float64), method=method, tol=tol, options=options)
    return (np.reshape(res.x, shp).astype(_out_dtype(x0, leaves)), np.asarray(0 if res.success else 1, dtype=np.int64),
            np.asarray(getattr(res, "nfev", -1), dtype=np.int64))


def _jac_x(fun: Callable[..., Any], treedef: Any, x: Any, leaves: Any) -> tuple[Any, ...]:
    from ..transforms import jacfwd

    n = int(np.prod(shape(x), dtype=np.int64))
    J = jacfwd(lambda z: fnp.reshape(_call(fun, treedef, fnp.reshape(z, shape(x)), leaves), (n,)))(
        fnp.reshape(x, (n,)))
    return J, n


def _root_vjp(g: Any, ans: Any, argnums: tuple[Any, ...], x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any,
              **_: Any) -> list[Any]:
    from ..transforms import vjp

    xs = ans[0]
    J, n = _jac_x(fun, treedef, xs, leaves)
    w = fnp.linalg.solve(fnp.swapaxes(J, -1, -2), fnp.reshape(g[0], (n,)))
    _, pull = vjp(lambda *ls: _call(fun, treedef, xs, ls), *leaves)
    bars = pull(-fnp.reshape(w, shape(xs)))
    return [fnp.zeros_like(x0) if k == 0 else bars[k - 1] for k in argnums]


def _root_jvp(tangents: list[Any], ans: Any, x0: Any, *leaves: Any, fun: Callable[..., Any], treedef: Any,
              **_: Any) -> tuple[Any, ...]:
    from ..transforms import jvp

    xs, status, nit = ans
    tl = [t if t is not None else fnp.zeros_like(x) for t, x in zip(tangents[1:], leaves)]
    J, n = _jac_x(fun, treedef, xs, leaves)
    _, dF = jvp(lambda *ls: _call(fun, treedef, xs, ls), tuple(leaves), tuple(tl))
    tx = -fnp.linalg.solve(J, fnp.reshape(dF, (n,)))
    return fnp.reshape(tx, shape(xs)), fnp.zeros_like(status), fnp.zeros_like(nit)


def _root_batch(args: list[Any], dims: list[Any], fun: Callable[..., Any], treedef: Any, **kw: Any) -> tuple[Any, ...]:
    x0, leaves = args[0], list(args[1:])
    size = batch_size(args, dims)
    x0 = move_to_front(x0, dims[0]) if dims[0] is not None else fnp.broadcast_to(x0, (size,) + shape(x0))
    leaves = [move_to_front(x, d) if d is not None else x for x, d in zip(leaves, dims[1:])]
    bfun = _batched_fun(fun, treedef, list(dims[1:]), reduce=False)   # the stacked (block-diagonal) system
    xs, status, nit = _root(x0, *leaves, fun=bfun, treedef=tree_util.tree_structure(tuple(leaves)), **kw)
    return (xs, fnp.broadcast_to(status, (size,)), fnp.broadcast_to(nit, (size,))), (0, 0, 0)


_root = defprimitive(_root_raw, name="root", multiple_results=True, vjp_all=_root_vjp, jvp_all=_root_jvp,
                     batch=_root_batch)


def root(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (), method: str = "hybr", tol: float | None = None,
         options: dict[Any, Any] | None = None, **unsupported: Any) -> OptimizeResult:
    """Solve ``fun(x, *args) = 0`` for ``x`` from ``x0``; the root is differentiable in ``args``.

    Mirrors ``scipy.optimize.root`` (methods ``'hybr'`` and ``'lm'``, the Jacobian by
    funcgrad's forward mode). ``fun`` returns an array with as many elements as ``x``.
    Derivatives use the implicit function theorem: ``J_x dx = -J_θ dθ`` at the root.
    ``result.fun`` is the residual at ``result.x``; ``result.nit`` counts evaluations.

    Example::

        root(lambda x, a: x ** 3 - a, fnp.ones(1), args=(fnp.array([8.0]),)).x   # [2]
    """
    if unsupported:
        raise NotImplementedError(f"funcgrad.scipy.optimize.root: {sorted(unsupported)} not supported")
    if method not in _ROOT_METHODS:
        raise ValueError(f"root: method must be one of {_ROOT_METHODS}, got {method!r}")
    if not isinstance(args, tuple):
        args = (args,)
    if dtype(x0).kind != "f":
        x0 = fnp.asarray(x0, dtype=np.float64)
    leaves, treedef = tree_util.tree_flatten(args)
    x, status, nit = _root(x0, *leaves, fun=fun, treedef=treedef, method=method, tol=tol, options=options)
    return OptimizeResult(x=x, fun=fun(x, *args), success=status == 0, status=status, nit=nit)
