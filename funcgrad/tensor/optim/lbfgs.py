"""``ft.optim.LBFGS``: PyTorch's L-BFGS (closure-driven, optional strong-Wolfe line search).

The algorithm follows ``torch.optim.LBFGS`` step for step (two-loop recursion
over a ``history_size`` memory, the first step scaled by ``1 / |g|_1``, the
same stopping tests and the same cubic-interpolation line search), so that
trajectories match PyTorch's. The functional counterpart is
``funcgrad.optim.lbfgs`` / ``minimize_lbfgs``.

Example::

    opt = ft.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
"""

from __future__ import annotations

import collections
import copy
import math
from typing import Any, Callable, Iterable, cast

from ...backend import namespace_of
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _check

__all__ = ["LBFGS"]


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple[Any, ...] | None = None) -> float:
    """Minimizer of the cubic through two points with their derivatives, clamped to ``bounds``."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return cast("float", min(max(pos, lo), hi))
    return cast("float", (lo + hi) / 2.0)


def _strong_wolfe(obj: Callable[..., Any], x: Any, t: float, d: Any, f: float, g: Any, gtd: float, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[Any, ...]:
    xp = namespace_of(d)
    d_norm = float(xp.max(xp.abs(d)))
    g = g.copy()
    f_new, g_new = obj(x, t, d)
    gtd_new = float(xp.dot(g_new, d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        too_high = f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev)  # no sufficient decrease
        if not too_high and abs(gtd_new) <= -c2 * gtd:
            bracket, bf, bg, bgtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if too_high or gtd_new >= 0:  # a minimum lies between t_prev and t
            bracket, bf, bg, bgtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj(x, t, d)
        gtd_new = float(xp.dot(g_new, d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bf, bg, bgtd = [0.0, t], [f, f_new], [g, g_new], [gtd, gtd_new]

    # zoom: shrink the bracket until a point satisfies the strong Wolfe conditions
    insuf_progress = False
    low, high = (0, 1) if bf[0] <= bf[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bf[0], bgtd[0], bracket[1], bf[1], bgtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj(x, t, d)
        gtd_new = float(xp.dot(g_new, d))
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bf[low]:
            bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new.copy(), gtd_new
            low, high = (0, 1) if bf[0] <= bf[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bf[high], bg[high], bgtd[high] = bracket[low], bf[low], bg[low], bgtd[low]
            bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new.copy(), gtd_new
    return bf[low], bg[low], bracket[low], ls_iter + 1  # evaluations: the first, then one per iteration


def _array(v: Any) -> Any:
    """A state entry's array (entries are Tensors, as PyTorch's; a state loaded from elsewhere may hold arrays)."""
    return v._value if isinstance(v, Tensor) else v


def _arrays(vs: Any) -> Any:
    return None if vs is None else [_array(v) for v in vs]


def _scalar_like(g: Any, value: float) -> Tensor:
    """A 0-d tensor of ``g``'s dtype on its device (PyTorch keeps ``ro``, ``al`` and ``H_diag`` so)."""
    return Tensor._make(namespace_of(g).asarray(value, dtype=g.dtype))


class LBFGS(Optimizer):
    """Limited-memory BFGS on all parameters as one vector; ``step(closure)`` runs up to ``max_iter``
    iterations (the closure re-evaluates the loss and its gradients). One parameter group only."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        _check("learning rate", lr, lr >= 0.0)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _xp(self) -> Any:
        return namespace_of(self._params[0]._value)

    def _flat_grad(self) -> Any:
        xp = self._xp()
        parts = [xp.zeros(p.numel(), dtype=p._value.dtype) if p._grad is None else xp.reshape(p._grad._value, (-1,))
                 for p in self._params]
        return xp.concatenate(parts)

    def _add_grad(self, t: float, d: Any) -> None:
        off = 0
        for p in self._params:
            n = p.numel()
            p._value += (t * d[off:off + n]).reshape(p._value.shape).astype(p._value.dtype, copy=False)
            p._version_counter[0] += 1
            off += n

    def _clone(self) -> list[Any]:
        return [p._value.copy() for p in self._params]

    def _set(self, values: list[Any]) -> None:
        for p, v in zip(self._params, values):
            p._value[...] = v
            p._version_counter[0] += 1

    def _evaluate(self, closure: Callable[..., Any], x: list[Any], t: float, d: Any) -> tuple[Any, ...]:
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        self._set(x)
        return loss, g

    def step(self, closure: Callable[[], Any]) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; returns the closure's first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, ls_fn = group["history_size"], group["line_search_fn"]
        xp = self._xp()
        state: Any = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if float(xp.max(xp.abs(g))) <= tol_grad:
            return orig_loss
        # the state holds PyTorch's entries as Tensors (d, old_dirs, old_stps, ro, H_diag, prev_flat_grad, al);
        # the iteration works on their arrays
        d, t = _array(state.get("d")), state.get("t")
        old_dirs, old_stps = _arrays(state.get("old_dirs")), _arrays(state.get("old_stps"))
        ro = [float(_array(r)) for r in state.get("ro") or []]
        H_diag, prev_g, prev_loss = _array(state.get("H_diag")), _array(state.get("prev_flat_grad")), \
            state.get("prev_loss")
        n_iter = 0
        with no_grad():
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d = -g
                    old_dirs, old_stps, ro, H_diag = [], [], [], 1
                else:
                    y = g - prev_g
                    s = d * t
                    ys = float(xp.dot(y, s))
                    if ys > 1e-10:
                        if len(old_dirs) == history:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        H_diag = xp.asarray(ys / float(xp.dot(y, y)), dtype=g.dtype)
                    if "al" not in state:
                        state["al"] = [None] * history
                    al = [0.0] * len(old_dirs)
                    q = -g
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = float(xp.dot(old_stps[i], q)) * ro[i]
                        q = q - al[i] * old_dirs[i]
                        state["al"][i] = _scalar_like(g, al[i])
                    r = q * H_diag
                    for i in range(len(old_dirs)):
                        be_i = float(xp.dot(old_dirs[i], r)) * ro[i]
                        r = r + (al[i] - be_i) * old_stps[i]
                    d = r
                prev_g = g.copy()
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / float(xp.sum(xp.abs(g)))) * lr
                else:
                    t = lr
                gtd = float(xp.dot(g, d))
                if gtd > -tol_change:
                    break
                ls_evals = 0
                if ls_fn is not None:
                    x0 = self._clone()
                    loss, g, t, ls_evals = _strong_wolfe(lambda x, tt, dd: self._evaluate(closure, x, tt, dd),
                                                         x0, t, d, loss, g, gtd)
                    self._add_grad(t, d)
                    opt_cond = float(xp.max(xp.abs(g))) <= tol_grad
                else:
                    self._add_grad(t, d)
                    opt_cond = False
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        g = self._flat_grad()
                        opt_cond = float(xp.max(xp.abs(g))) <= tol_grad
                        ls_evals = 1
                evals += ls_evals
                state["func_evals"] += ls_evals
                if n_iter == max_iter or evals >= max_eval or opt_cond:
                    break
                if float(xp.max(xp.abs(d * t))) <= tol_change:
                    break
                if abs(loss - prev_loss) < tol_change:
                    break
        state.update(d=Tensor._make(d), t=t, old_dirs=[Tensor._make(v) for v in old_dirs],
                     old_stps=[Tensor._make(v) for v in old_stps], ro=[_scalar_like(g, r) for r in ro],
                     H_diag=H_diag if isinstance(H_diag, (int, float)) else _scalar_like(g, float(H_diag)),
                     prev_flat_grad=Tensor._make(prev_g), prev_loss=prev_loss)
        return orig_loss

    def state_dict(self) -> dict[Any, Any]:
        """``{"state": {0: {...}}, "param_groups": [...]}``: the history (direction, steps, curvature pairs)."""
        st = self.state.get(self._params[0])
        return {"state": {0: copy.deepcopy(st)} if st else {}, "param_groups": self._indexed_groups()}

    def load_state_dict(self, state_dict: dict[Any, Any]) -> None:
        self.param_groups[0].update((k, v) for k, v in state_dict["param_groups"][0].items() if k != "params")
        saved = state_dict["state"].get(0, state_dict["state"].get("0"))
        self.state = collections.defaultdict(dict)
        if saved is not None:
            self.state[self._params[0]] = copy.deepcopy(saved)
