"""Differentiable ``scipy.integrate``: ``trapezoid``, ``cumulative_trapezoid``, ``simpson`` and
``odeint``, an ODE solver whose reverse-mode gradients use the adjoint method.

``odeint(func, y0, t, *args)`` integrates ``dy/dt = func(y, t, *args)`` and returns ``y``
at every time in ``t``, with the classical fixed-step Runge-Kutta method (``substeps`` RK4
steps between consecutive output times; the default) or adaptive Dormand-Prince 5(4)
(``method="dopri5"``, local error kept below ``atol + rtol |y|``). ``y0`` may be any pytree of
arrays. It is one primitive:

* reverse mode solves the adjoint ODE backwards in time with the same solver (using
  ``fg.vjp`` of ``func``), restarting from the stored outputs at each output time, so the
  memory of a gradient does not grow with the number of steps (only with ``len(t)``);
* forward mode integrates the tangent (variational) equation beside the state with
  the same solver;
* the times are differentiable: d y(t_i)/d t_i = func(y(t_i), t_i) and
  d y(t_i)/d t_0 = -J(t_i, t_0) func(y0, t0) (J the state-transition matrix);
* vmap integrates the batch as one ODE on the stacked state (``func`` vmapped; the
  times must be shared by the batch);
* the backward and tangent solves call ``odeint`` again, so derivatives of any order
  work.

``args`` may be any pytree of arrays; parameters must be passed through ``args``
(a value ``func`` closes over gets no derivative).

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
from ..numpy._batching import batch_size, move_to_front
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
#
# A solver is a tuple (method, substeps, rtol, atol): "rk4" takes `substeps` classical RK4 steps per
# interval of t; "dopri5" is Dormand-Prince 5(4) with adaptive steps controlled by rtol/atol.

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


# Dormand-Prince 5(4) tableau: nodes, stage rows, and the 5th minus 4th order weights (the error).
_DP_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_DP_A = ((), (1 / 5,), (3 / 40, 9 / 40), (44 / 45, -56 / 15, 32 / 9),
         (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
         (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
         (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_DP_E = (35 / 384 - 5179 / 57600, 0.0, 500 / 1113 - 7571 / 16695, 125 / 192 - 393 / 640,
         -2187 / 6784 + 92097 / 339200, 11 / 84 - 187 / 2100, -1 / 40)
_DP_MAX_STEPS = 100000


def _host_float(x: Any) -> float:
    """A step-size decision: read the (possibly traced) value explicitly, as a constant."""
    return float(np.max(np.abs(np.asarray(to_numpy(x)))))


def _dopri5(func: Callable[..., Any], y: Any, t0: Any, t1: Any, args: tuple[Any, ...], rtol: float, atol: float) -> Any:
    """Adaptive Dormand-Prince steps from t0 to t1 (either direction). The step sizes are
    chosen from read-back error norms and are constants: differentiating through this function
    differentiates the discrete solution on the accepted steps."""
    span = _host_float(t1 - t0)
    if span == 0.0:
        return y
    done, h = 0.0, span / 10   # distance travelled, trial step (both >= 0)
    for _ in range(_DP_MAX_STEPS):
        if done >= span * (1 - 1e-12):
            return y
        h = min(h, span - done)
        # steps as fractions of (t1 - t0), so the unrolled solution is differentiable in t0 and t1
        hs = (t1 - t0) * (h / span)
        t = t0 + (t1 - t0) * (done / span)
        ks: list[Any] = []
        for c, row in zip(_DP_C, _DP_A):
            yi = y
            for a_ij, k in zip(row, ks):
                if a_ij != 0.0:
                    yi = yi + (hs * a_ij) * k
            ks.append(func(yi, t + c * hs, *args))
        y_new = y
        for b, k in zip(_DP_A[6], ks):
            if b != 0.0:
                y_new = y_new + (hs * b) * k
        err = ks[0] * (hs * _DP_E[0])
        for e, k in zip(_DP_E[1:], ks[1:]):
            if e != 0.0:
                err = err + (hs * e) * k
        scale = atol + rtol * fnp.maximum(fnp.abs(y), fnp.abs(y_new))
        ratio = np.asarray(to_numpy(err / scale))
        norm = float(np.sqrt(np.mean(np.abs(ratio) ** 2))) if ratio.size else 0.0
        if not np.isfinite(norm):
            raise FloatingPointError("odeint(method='dopri5'): the error estimate is not finite (the solution "
                                     "blows up or func returned nan/inf)")
        if norm <= 1.0:
            y, done = y_new, done + h
        h = h * min(5.0, max(0.2, 0.9 * (norm if norm > 0 else 1e-10) ** -0.2))
        if h < 1e-14 * max(span, 1.0):
            raise FloatingPointError("odeint(method='dopri5'): the step size underflowed; the problem is "
                                     "too stiff for an explicit method or rtol/atol are too small")
    raise RuntimeError(f"odeint(method='dopri5'): more than {_DP_MAX_STEPS} steps in one interval of t")


def _step(func: Callable[..., Any], y: Any, t0: Any, t1: Any, args: tuple[Any, ...], solver: tuple[Any, ...]) -> Any:
    method, substeps, rtol, atol = solver
    if method == "rk4":
        return _rk4(func, y, t0, t1, args, substeps)
    return _dopri5(func, y, t0, t1, args, rtol, atol)


def _solve(func: Callable[..., Any], y0: Any, t: Any, args: tuple[Any, ...], solver: tuple[Any, ...], stack: Callable[..., Any]) -> Any:
    ys = [y0]
    y = y0
    for i in range(shape(t)[0] - 1):
        y = _step(func, y, t[i], t[i + 1], args, solver)
        ys.append(y)
    return stack(ys)


def _odeint_raw(y0: Any, t: Any, *leaves: Any, func: Callable[..., Any], treedef: Any, solver: tuple[Any, ...]) -> Any:
    args = tree_util.tree_unflatten(treedef, list(leaves))
    xp = namespace_of(y0, t, *leaves)

    def f(y: Any, tt: Any, *a: Any) -> Any:
        out = func(y, tt, *a)
        return out.astype(y.dtype, copy=False) if hasattr(out, "astype") else xp.asarray(out, dtype=y.dtype)

    return _solve(f, y0, t, tuple(args), solver, xp.stack)


def _flat(xs: list[Any]) -> Any:
    return fnp.concatenate([fnp.reshape(x, (-1,)) for x in xs]) if xs else None


def _unflat(z: Any, likes: list[Any]) -> list[Any]:
    out, i = [], 0
    for like in likes:
        n = int(np.prod(shape(like), dtype=np.int64))
        out.append(fnp.reshape(z[i:i + n], shape(like)))
        i += n
    return out


def _rhs(func: Callable[..., Any], treedef: Any, leaves: tuple[Any, ...], y: Any, tt: Any) -> Any:
    return func(y, tt, *tree_util.tree_unflatten(treedef, list(leaves)))


def _odeint_vjp(g: Any, ys: Any, argnums: tuple[Any, ...], y0: Any, t: Any, *leaves: Any,
                func: Callable[..., Any], treedef: Any, solver: tuple[Any, ...]) -> list[Any]:
    """Adjoint method: integrate (y, a, a_args) backwards over each interval of t with the same
    solver. d/dt_i = g_i . f(y_i, t_i) (i >= 1); d/dt_0 = -a(t_0) . f(y_0, t_0), a(t_0) the adjoint
    reaching t_0 from the later outputs."""
    from ..transforms import vjp as _vjp

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
    a0 = fnp.zeros_like(a)
    arg_bars = [fnp.zeros_like(x) for x in leaves]
    for i in range(n_t - 1, 0, -1):
        z = _flat([ys[i], a] + arg_bars)
        seg = fnp.stack([-t[i], -t[i - 1]])
        z1 = _odeint(z, seg, *leaves, func=aug, treedef=tree_util.tree_structure(tuple(leaves)),
                     solver=solver)[1]
        parts = _unflat(z1, [ys[0], ys[0]] + list(leaves))
        a0 = parts[1]
        a = parts[1] + g[i - 1]
        arg_bars = parts[2:]
    cts = {0: a}
    if 1 in argnums:
        f_at = [_rhs(func, treedef, leaves, ys[i], t[i]) for i in range(n_t)]
        bars = [-fnp.sum(a0 * f_at[0])] + [fnp.sum(g[i] * f_at[i]) for i in range(1, n_t)]
        cts[1] = fnp.astype(fnp.stack(bars), dtype(t)) if dtype(t) != dtype(bars[0]) else fnp.stack(bars)
    for k, b in enumerate(arg_bars):
        cts[k + 2] = b
    return [cts.get(k) for k in argnums]


def _odeint_jvp(tangents: list[Any], ys: Any, y0: Any, t: Any, *leaves: Any,
                func: Callable[..., Any], treedef: Any, solver: tuple[Any, ...]) -> Any:
    """Tangent equation beside the state: d(y, ydot)/dt = (f, J_y f ydot + J_args f args_dot).
    A tangent of the times adds f(y_i, t_i) dt_i to output i and starts ydot at -f(y0, t0) dt_0."""
    from ..transforms import jvp as _jvp

    ty0 = tangents[0] if tangents[0] is not None else fnp.zeros_like(y0)
    dt = tangents[1]
    if dt is not None:
        ty0 = ty0 - _rhs(func, treedef, leaves, y0, t[0]) * dt[0]
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
                 solver=solver)
    n = int(np.prod(shape(y0), dtype=np.int64))
    out = fnp.reshape(zs[:, n:], shape(ys))
    if dt is not None:
        out = out + fnp.stack([_rhs(func, treedef, leaves, ys[i], t[i]) * dt[i] for i in range(shape(t)[0])])
    return out


def _odeint_batch(args: list[Any], dims: list[Any], func: Callable[..., Any], treedef: Any, solver: tuple[Any, ...]) -> tuple[Any, ...]:
    from ..transforms import vmap as _vmap

    y0, t, leaves = args[0], args[1], list(args[2:])
    dy, dt, dl = dims[0], dims[1], list(dims[2:])
    if dt is not None:
        raise NotImplementedError("odeint under vmap: the times t must be shared by the batch (not batched)")
    size = batch_size(args, dims)
    y0 = move_to_front(y0, dy) if dy is not None else fnp.broadcast_to(y0, (size,) + shape(y0))
    leaves = [move_to_front(x, d) if d is not None else x for x, d in zip(leaves, dl)]
    axes = tuple(0 if d is not None else None for d in dl)

    def bfunc(y: Any, tt: Any, *ls: Any) -> Any:
        def one(yy: Any, *ll: Any) -> Any:
            return func(yy, tt, *tree_util.tree_unflatten(treedef, list(ll)))

        return _vmap(one, in_axes=(0,) + axes)(y, *ls)

    out = _odeint(y0, t, *leaves, func=bfunc, treedef=tree_util.tree_structure(tuple(leaves)), solver=solver)
    return out, 1


_odeint = defprimitive(_odeint_raw, name="odeint", vjp_all=_odeint_vjp, jvp_all=_odeint_jvp, batch=_odeint_batch)


def _ravel_state(y0: Any) -> tuple[Any, Callable[..., Any], Callable[..., Any]]:
    """A pytree state as one flat vector: (flat y0, unravel one state, unravel a stack of states)."""
    leaves, tdef = tree_util.tree_flatten(y0)
    if not leaves:
        raise ValueError("odeint: y0 has no arrays")
    leaves = [fnp.asarray(v) if dtype(v).kind in "fc" else fnp.asarray(v, dtype=np.float64) for v in leaves]
    if tdef == tree_util.tree_structure(leaves[0]):
        return leaves[0], lambda y: y, lambda ys: ys
    shapes = [shape(v) for v in leaves]
    sizes = [int(np.prod(sh, dtype=np.int64)) for sh in shapes]
    common = np.result_type(*[dtype(v) for v in leaves])
    flat = fnp.concatenate([fnp.reshape(fnp.astype(v, common), (-1,)) for v in leaves])
    offs = np.concatenate([[0], np.cumsum(sizes)]).tolist()

    def one(z: Any) -> Any:
        return tree_util.tree_unflatten(tdef, [fnp.reshape(z[offs[i]:offs[i + 1]], sh) for i, sh in enumerate(shapes)])

    def stacked(zs: Any) -> Any:
        n = shape(zs)[0]
        return tree_util.tree_unflatten(
            tdef, [fnp.reshape(zs[:, offs[i]:offs[i + 1]], (n,) + sh) for i, sh in enumerate(shapes)])

    return flat, one, stacked


_METHODS = {"rk4": "rk4", "dopri5": "dopri5", "rk45": "dopri5"}


def odeint(func: Callable[..., Any], y0: Any, t: Any, *args: Any, substeps: int = 10, adjoint: bool = True,
           method: str = "rk4", rtol: float = 1e-7, atol: float = 1e-9) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` from ``t[0]``; ``y`` at every time in ``t``.

    ``method="rk4"`` (default): fixed-step RK4 with ``substeps`` steps between
    consecutive times (error ~ ``h^4``: raise ``substeps`` for accuracy).
    ``method="dopri5"`` (alias ``"rk45"``): adaptive Dormand-Prince 5(4) whose local error
    per step is kept below ``atol + rtol |y|`` (RMS norm); the step sizes are read back to
    the host (one sync per step) and are constants for differentiation.

    Gradients use the adjoint method: the augmented system is integrated backwards with the
    same solver (for dopri5 with its own adaptive steps), so memory does not grow with the number
    of steps; ``adjoint=False`` differentiates through the unrolled steps instead (same result
    up to the solver's tolerance, memory growing with the steps: for comparison). Forward mode
    integrates the tangent equation beside the state.

    ``y0`` is an array or any pytree of arrays (the result is the same pytree with a leading
    time axis on each leaf; ``func`` receives and returns that pytree). ``args`` are any pytrees
    of arrays (differentiable). ``t`` is a 1-D increasing or decreasing array, differentiable:
    d y(t_i) / d t_i = func(y(t_i), t_i) and d y(t_i) / d t_0 = -J(t_i, t_0) func(y0, t0).
    The order of arguments is ``scipy.integrate.odeint``'s (``func(y, t)``).

    Example::

        odeint(lambda y, t, k: -k * y, fnp.array([1.0]), fnp.array([0.0, 1.0]), 2.0)  # [[1], [exp(-2)]]
        odeint(lambda y, t: -y, fnp.array([1.0]), fnp.array([0.0, 1.0]), method="dopri5", rtol=1e-9)
    """
    if not callable(func):
        raise TypeError(f"odeint: func must be callable func(y, t, *args), got {type(func).__name__}")
    if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"odeint: substeps must be a positive integer, got {substeps!r}")
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise ValueError(f"odeint: method must be 'rk4' or 'dopri5' (alias 'rk45'), got {method!r}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not tol >= 0:
            raise ValueError(f"odeint: {name} must be a non-negative number, got {tol!r}")
    if not rtol > 0 and not atol > 0:
        raise ValueError("odeint: rtol and atol cannot both be 0")
    if ndim(t) != 1 or shape(t)[0] < 1:
        raise ValueError(f"odeint: t must be a 1-D array of times, got shape {shape(t)}")
    solver = (_METHODS[method.lower()], int(substeps), float(rtol), float(atol))
    flat0, one, stacked = _ravel_state(y0)
    if one(flat0) is not flat0:
        user = func

        def func(z: Any, tt: Any, *a: Any) -> Any:
            out = user(one(z), tt, *a)
            return fnp.concatenate([fnp.reshape(fnp.astype(v, dtype(z)), (-1,)) for v in tree_util.tree_leaves(out)])
    leaves, treedef = tree_util.tree_flatten(tuple(args))
    if not adjoint:
        return stacked(_solve(func, flat0, t, tuple(args), solver, fnp.stack))
    return stacked(_odeint(flat0, t, *leaves, func=func, treedef=treedef, solver=solver))


class OdeResult:
    """What :func:`solve_ivp` returns: ``t`` (the output times) and ``y`` (shape ``(n, len(t))``,
    as in SciPy), differentiable like :func:`odeint`'s result."""

    def __init__(self, t: Any, y: Any) -> None:
        self.t = t
        self.y = y
        self.success = True
        self.status = 0
        self.message = "finished"

    def __repr__(self) -> str:
        return f"OdeResult(t={self.t!r}, y={self.y!r})"


def solve_ivp(fun: Callable[..., Any], t_span: Any, y0: Any, method: str = "RK4", t_eval: Any = None, args: tuple[Any, ...] = (),
              substeps: int = 10, adjoint: bool = True, rtol: float = 1e-7, atol: float = 1e-9) -> OdeResult:
    """``scipy.integrate.solve_ivp``-style front end of :func:`odeint`: ``fun(t, y, *args)``.

    Integrates over ``t_span = (t0, t1)`` and reports ``y`` at ``t_eval`` (default: the two
    ends), shape ``(n, len(t_eval))``. ``method="RK4"``: fixed-step RK4 (``substeps`` steps
    between output times); ``method="RK45"``: adaptive Dormand-Prince with ``rtol``/``atol``
    (SciPy's other methods and events are not provided). Gradients with respect to ``y0``,
    ``args`` and ``t_eval`` use the adjoint method.

    Example::

        sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), fnp.array([1.0]), args=(2.0,),
                        t_eval=fnp.linspace(0.0, 1.0, 3))
        sol.y   # shape (1, 3)
    """
    if method not in ("RK4", "RK45"):
        raise NotImplementedError(f"solve_ivp: only fixed-step RK4 (method='RK4') and adaptive Dormand-Prince "
                                  f"(method='RK45') are provided, got {method!r}")
    if len(t_span) != 2:
        raise ValueError(f"solve_ivp: t_span must be (t0, t1), got {t_span!r}")
    if not isinstance(args, tuple):
        args = (args,)
    t = fnp.asarray(t_eval) if t_eval is not None else fnp.asarray([float(t_span[0]), float(t_span[1])])
    if dtype(t).kind != "f":
        t = fnp.asarray(t, dtype=np.float64)
    ys = odeint(lambda y, tt, *a: fun(tt, y, *a), y0, t, *args, substeps=substeps, adjoint=adjoint,
                method="dopri5" if method == "RK45" else "rk4", rtol=rtol, atol=atol)
    return OdeResult(t, fnp.moveaxis(fnp.reshape(ys, (shape(ys)[0], -1)), 0, 1))
