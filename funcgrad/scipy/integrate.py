"""Differentiable ``scipy.integrate``: ``trapezoid``, ``cumulative_trapezoid``, ``simpson`` and
``odeint``, an ODE solver whose reverse-mode gradients use the adjoint method.

``odeint(func, y0, t, *args)`` integrates ``dy/dt = func(y, t, *args)`` with the
classical fixed-step Runge-Kutta method (``substeps`` RK4 steps between consecutive
output times) and returns ``y`` at every time in ``t``. It is one primitive:

* reverse mode solves the adjoint ODE backwards in time (using ``fg.vjp`` of
  ``func``), restarting from the stored outputs at each output time, so the memory
  of a gradient does not grow with the number of steps (only with ``len(t)``);
* forward mode integrates the tangent (variational) equation beside the state with
  the same steps, which is exactly the derivative of the discrete solution;
* vmap integrates the batch as one ODE on the stacked state (``func`` vmapped);
* the backward and tangent solves call ``odeint`` again, so derivatives of any order
  work.

``args`` may be any pytree of arrays; parameters must be passed through ``args``
(a value ``func`` closes over gets no derivative). ``t`` is not differentiable.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp
    from funcgrad.scipy.integrate import odeint

    def decay(y, t, k):
        return -k * y

    t = fnp.linspace(0.0, 1.0, 5)
    fg.grad(lambda k: odeint(decay, fnp.array([1.0]), t, k)[-1, 0])(0.5)   # -exp(-0.5)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from .. import tree_util
from ..backend import namespace_of, to_numpy
from ..core import defprimitive
from ..numpy._batching import move_to_front
from ..numpy._util import dtype, ndim, shape
from ._scipy import require_scipy

require_scipy("integrate")

__all__ = ["trapezoid", "cumulative_trapezoid", "simpson", "odeint", "solve_ivp", "OdeResult"]


# --------------------------------------------------------------------------
# quadrature of samples

def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """Trapezoidal rule along ``axis``. Differentiable ``scipy.integrate.trapezoid`` (in y and x).

    Example::

        trapezoid(fnp.array([1.0, 2.0, 3.0]))   # 4.0
    """
    return fnp.trapezoid(y, x=x, dx=dx, axis=axis)


def cumulative_trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1, initial: Any = None) -> Any:
    """Cumulative trapezoidal rule. Differentiable ``scipy.integrate.cumulative_trapezoid`` (in y and x).

    ``initial``: None (the result is one shorter than ``y``) or 0 (prepended), as in SciPy.

    Example::

        cumulative_trapezoid(fnp.array([1.0, 2.0, 3.0]), initial=0)   # [0, 1.5, 4]
    """
    y = fnp.moveaxis(y, axis, -1)
    if x is None:
        d = dx
    else:
        d = fnp.diff(x)
        if ndim(x) > 1:
            d = fnp.moveaxis(d, axis, -1)
    out = fnp.cumsum(d * (y[..., 1:] + y[..., :-1]) / 2, axis=-1)
    if initial is not None:
        if not (isinstance(initial, (int, float)) and initial == 0):
            raise ValueError(f"cumulative_trapezoid: initial must be None or 0 (as in SciPy), got {initial!r}")
        out = fnp.concatenate([fnp.zeros_like(out[..., :1]), out], axis=-1)
    return fnp.moveaxis(out, -1, axis)


def simpson(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """Simpson's rule, with SciPy's treatment of an even number of samples. Differentiable
    ``scipy.integrate.simpson`` in ``y``.

    The rule is linear in ``y``: its weights come from SciPy (from ``x`` or ``dx``, which
    must be concrete: not differentiable here) and are applied with a differentiable
    ``tensordot``.

    Example::

        simpson(fnp.array([0.0, 1.0, 4.0]), dx=1.0)   # 8/3 (exact for x^2)
    """
    from scipy.integrate import simpson as _simpson

    n = shape(y)[axis]
    if x is not None:
        try:
            xs = np.asarray(to_numpy(x), dtype=np.float64)
        except TypeError as e:
            raise TypeError("funcgrad.scipy.integrate.simpson is differentiable in y only; x must be a concrete "
                            "array (not a traced value)") from e
        w = _simpson(np.eye(n), x=xs, axis=-1)
    else:
        w = _simpson(np.eye(n), dx=float(dx), axis=-1)
    xp = namespace_of(y)
    w = xp.asarray(w.astype(np.result_type(dtype(y), np.float32)))
    return fnp.tensordot(fnp.moveaxis(y, axis, -1), w, axes=([-1], [0]))


# --------------------------------------------------------------------------
# odeint

def _rk4(func: Callable[..., Any], y: Any, t0: Any, t1: Any, args: tuple[Any, ...], substeps: int) -> Any:
    h = (t1 - t0) / substeps
    t = t0
    for _ in range(substeps):
        k1 = func(y, t, *args)
        k2 = func(y + h / 2 * k1, t + h / 2, *args)
        k3 = func(y + h / 2 * k2, t + h / 2, *args)
        k4 = func(y + h * k3, t + h, *args)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
    return y


def _solve(func: Callable[..., Any], y0: Any, t: Any, args: tuple[Any, ...], substeps: int,
           stack: Callable[..., Any]) -> Any:
    ys = [y0]
    y = y0
    for i in range(shape(t)[0] - 1):
        y = _rk4(func, y, t[i], t[i + 1], args, substeps)
        ys.append(y)
    return stack(ys)


def _odeint_raw(y0: Any, t: Any, *leaves: Any, func: Callable[..., Any], treedef: Any, substeps: int) -> Any:
    args = tree_util.tree_unflatten(treedef, list(leaves))
    xp = namespace_of(y0, t, *leaves)

    def f(y: Any, tt: Any, *a: Any) -> Any:
        out = func(y, tt, *a)
        return out.astype(y.dtype, copy=False) if hasattr(out, "astype") else xp.asarray(out, dtype=y.dtype)

    return _solve(f, y0, t, tuple(args), substeps, xp.stack)


def _no_t_rule(*_: Any, **__: Any) -> Any:
    raise TypeError("odeint is not differentiable with respect to the times t; pass t as a constant")


def _flat(xs: list[Any]) -> Any:
    return fnp.concatenate([fnp.reshape(x, (-1,)) for x in xs]) if xs else None


def _unflat(z: Any, likes: list[Any]) -> list[Any]:
    out, i = [], 0
    for like in likes:
        n = int(np.prod(shape(like), dtype=np.int64))
        out.append(fnp.reshape(z[i:i + n], shape(like)))
        i += n
    return out


def _odeint_vjp(g: Any, ys: Any, argnums: tuple[Any, ...], y0: Any, t: Any, *leaves: Any,
                func: Callable[..., Any], treedef: Any, substeps: int) -> list[Any]:
    """Adjoint method: integrate (y, a, a_args) backwards over each interval of t."""
    from ..transforms import vjp as _vjp

    if 1 in argnums:
        _no_t_rule()
    likes = [ys[0]] + list(leaves)   # y and each leaf: the adjoint state's parts

    def aug(z: Any, s: Any, *ls: Any) -> Any:
        # time runs backwards: s = -t, so d/ds = -d/dt
        y, a = _unflat(z, likes[:1] + likes[:1])[:2]

        def f_of(yy: Any, *ll: Any) -> Any:
            return func(yy, -s, *tree_util.tree_unflatten(treedef, list(ll)))

        dy, pull = _vjp(f_of, y, *ls)
        bars = pull(a)
        return _flat([-dy] + list(bars))

    n_t = shape(t)[0]
    a = g[n_t - 1]
    arg_bars = [fnp.zeros_like(x) for x in leaves]
    for i in range(n_t - 1, 0, -1):
        z = _flat([ys[i], a] + arg_bars)
        seg = fnp.stack([-t[i], -t[i - 1]])
        z1 = _odeint(z, seg, *leaves, func=aug, treedef=tree_util.tree_structure(tuple(leaves)),
                     substeps=substeps)[1]
        parts = _unflat(z1, [ys[0], ys[0]] + list(leaves))
        a = parts[1] + g[i - 1]
        arg_bars = parts[2:]
    cts = {0: a}
    for k, b in enumerate(arg_bars):
        cts[k + 2] = b
    return [cts.get(k) for k in argnums]


def _odeint_jvp(tangents: list[Any], ys: Any, y0: Any, t: Any, *leaves: Any,
                func: Callable[..., Any], treedef: Any, substeps: int) -> Any:
    """Tangent equation beside the state: d(y, ydot)/dt = (f, J_y f ydot + J_args f args_dot)."""
    from ..transforms import jvp as _jvp

    if tangents[1] is not None:
        _no_t_rule()
    ty0 = tangents[0] if tangents[0] is not None else fnp.zeros_like(y0)
    tleaves = [tv if tv is not None else fnp.zeros_like(x) for tv, x in zip(tangents[2:], leaves)]
    n_l = len(leaves)

    def aug(z: Any, tt: Any, *ls: Any) -> Any:
        y, yd = _unflat(z, [y0, y0])
        prim, tan = list(ls[:n_l]), list(ls[n_l:])

        def f_of(yy: Any, *ll: Any) -> Any:
            return func(yy, tt, *tree_util.tree_unflatten(treedef, list(ll)))

        out, tout = _jvp(f_of, (y, *prim), (yd, *tan))
        return _flat([out, tout])

    all_leaves = list(leaves) + tleaves
    zs = _odeint(_flat([y0, ty0]), t, *all_leaves, func=aug, treedef=tree_util.tree_structure(tuple(all_leaves)),
                 substeps=substeps)
    n = int(np.prod(shape(y0), dtype=np.int64))
    return fnp.reshape(zs[:, n:], shape(ys))


def _odeint_batch(args: list[Any], dims: list[Any], func: Callable[..., Any], treedef: Any,
                  substeps: int) -> tuple[Any, ...]:
    from ..transforms import vmap as _vmap

    y0, t, leaves = args[0], args[1], list(args[2:])
    dy, dt, dl = dims[0], dims[1], list(dims[2:])
    if dt is not None:
        raise NotImplementedError("odeint under vmap: the times t must be shared by the batch (not batched)")
    size = next(shape(a)[d] for a, d in zip(args, dims) if d is not None)
    y0 = move_to_front(y0, dy) if dy is not None else fnp.broadcast_to(y0, (size,) + shape(y0))
    leaves = [move_to_front(x, d) if d is not None else x for x, d in zip(leaves, dl)]
    axes = tuple(0 if d is not None else None for d in dl)

    def bfunc(y: Any, tt: Any, *ls: Any) -> Any:
        def one(yy: Any, *ll: Any) -> Any:
            return func(yy, tt, *tree_util.tree_unflatten(treedef, list(ll)))

        return _vmap(one, in_axes=(0,) + axes)(y, *ls)

    out = _odeint(y0, t, *leaves, func=bfunc, treedef=tree_util.tree_structure(tuple(leaves)), substeps=substeps)
    return out, 1


_odeint = defprimitive(_odeint_raw, name="odeint", vjp_all=_odeint_vjp, jvp_all=_odeint_jvp, batch=_odeint_batch)


def odeint(func: Callable[..., Any], y0: Any, t: Any, *args: Any, substeps: int = 10, adjoint: bool = True) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` from ``t[0]``; ``y`` at every time in ``t``.

    Fixed-step RK4 with ``substeps`` steps between consecutive times (error
    ~ ``h^4``: raise ``substeps`` for accuracy). Gradients use the adjoint method
    (memory independent of the number of steps); ``adjoint=False`` differentiates
    through the unrolled steps instead (same result up to the solver's error, memory
    growing with the steps: for comparison). ``y0`` is an array; ``args`` any pytrees of
    arrays (differentiable); ``t`` a 1-D increasing or decreasing array (not
    differentiable). The order of arguments is ``scipy.integrate.odeint``'s (``func(y, t)``);
    unlike SciPy's LSODA the step size is not adaptive.

    Example::

        odeint(lambda y, t, k: -k * y, fnp.array([1.0]), fnp.array([0.0, 1.0]), 2.0)  # [[1], [exp(-2)]]
    """
    if not callable(func):
        raise TypeError(f"odeint: func must be callable func(y, t, *args), got {type(func).__name__}")
    if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"odeint: substeps must be a positive integer, got {substeps!r}")
    if ndim(t) != 1 or shape(t)[0] < 1:
        raise ValueError(f"odeint: t must be a 1-D array of times, got shape {shape(t)}")
    if dtype(y0).kind not in "fc":
        y0 = fnp.asarray(y0, dtype=np.float64)
    leaves, treedef = tree_util.tree_flatten(tuple(args))
    if not adjoint:
        return _solve(func, y0, t, tuple(args), int(substeps), fnp.stack)
    return _odeint(y0, t, *leaves, func=func, treedef=treedef, substeps=int(substeps))


class OdeResult:
    """What :func:`solve_ivp` returns: ``t`` (the output times) and ``y`` (shape ``(n, len(t))``,
    as in SciPy), differentiable like :func:`odeint`'s result."""

    def __init__(self, t: Any, y: Any) -> None:
        self.t = t
        self.y = y
        self.success = True
        self.status = 0
        self.message = "fixed-step RK4 finished"

    def __repr__(self) -> str:
        return f"OdeResult(t={self.t!r}, y={self.y!r})"


def solve_ivp(fun: Callable[..., Any], t_span: Any, y0: Any, method: str = "RK4", t_eval: Any = None, args: tuple[Any, ...] = (),
              substeps: int = 10, adjoint: bool = True) -> OdeResult:
    """``scipy.integrate.solve_ivp``-style front end of :func:`odeint`: ``fun(t, y, *args)``.

    Integrates over ``t_span = (t0, t1)`` and reports ``y`` at ``t_eval`` (default: the two
    ends), shape ``(n, len(t_eval))``. The method is always fixed-step RK4 (``substeps``
    steps between output times; SciPy's adaptive methods and events are not provided);
    gradients with respect to ``y0`` and ``args`` use the adjoint method.

    Example::

        sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), fnp.array([1.0]), args=(2.0,),
                        t_eval=fnp.linspace(0.0, 1.0, 3))
        sol.y   # shape (1, 3)
    """
    if method not in ("RK4", "RK45"):
        raise NotImplementedError(f"solve_ivp: only fixed-step RK4 is provided (method='RK4'), got {method!r}")
    if len(t_span) != 2:
        raise ValueError(f"solve_ivp: t_span must be (t0, t1), got {t_span!r}")
    if not isinstance(args, tuple):
        args = (args,)
    t = fnp.asarray(t_eval) if t_eval is not None else fnp.asarray([float(t_span[0]), float(t_span[1])])
    if dtype(t).kind != "f":
        t = fnp.asarray(t, dtype=np.float64)
    ys = odeint(lambda y, tt, *a: fun(tt, y, *a), y0, t, *args, substeps=substeps, adjoint=adjoint)
    return OdeResult(t, fnp.moveaxis(fnp.reshape(ys, (shape(ys)[0], -1)), 0, 1))
