"""PyTorch-style optimizers (``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``,
``NAdam``, ``RAdam``) on the functional optimizers' maths.

Each parameter's update is computed by the corresponding ``funcgrad.optim``
gradient transformation (built with learning rate 1 and scaled by the
group's current ``lr`` at each step, so schedules that edit
``param_groups`` work) and written into the parameter in place, under
``no_grad``, as PyTorch does. Parameters whose ``.grad`` is None are skipped.

Example::

    opt = ft.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
"""

from __future__ import annotations

import collections
import itertools
from typing import Any, Callable, Iterable

import numpy as np

import funcgrad.optim as _fopt
from ... import tree_util
from ...backend import device_of, namespace_of, put_array, to_numpy

from ..grad_mode import enable_grad, no_grad
from ..nn.module import _zero_grads
from ..tensor import Tensor
from .foreach import flat_step, flattening_pays, tree_step

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]

_ADAM_FIELDS = {"count": "step", "mu": "exp_avg", "nu": "exp_avg_sq", "nu_max": "max_exp_avg_sq"}


def _check(name: str, value: Any, ok: bool) -> None:
    if not ok:
        raise ValueError(f"Invalid {name}: {value}")


def _check_common(lr: Any, eps: Any = 0.0, weight_decay: Any = 0.0, betas: Any = None) -> None:
    """PyTorch's hyperparameter validation (the same messages)."""
    _check("learning rate", lr, float(lr) >= 0.0)
    _check("epsilon value", eps, float(eps) >= 0.0)
    _check("weight_decay value", weight_decay, float(weight_decay) >= 0.0)
    if betas is not None:
        _check("beta parameter at index 0", betas[0], 0.0 <= betas[0] < 1.0)
        _check("beta parameter at index 1", betas[1], 0.0 <= betas[1] < 1.0)


_FIELD_NAMES: dict[Any, list[str]] = {}  # a functional state's structure -> its leaves' field names


class Optimizer:
    """Base class: ``param_groups`` (dicts with ``params`` and hyperparameters), ``state``, ``zero_grad``, ``step``."""

    def __init__(self, params: Iterable[Any], defaults: dict[Any, Any]) -> None:
        self.defaults = dict(defaults)
        # per-parameter state, PyTorch's slots (a defaultdict, so custom optimizers can write
        # ``state = self.state[p]; if not state: state["step"] = 0``)
        self.state: collections.defaultdict[Any, dict[str, Any]] = collections.defaultdict(dict)
        self._functional: dict[Any, Any] = {}  # parameter -> (functional state, the slot tensors it matches)
        self._flat: dict[int, Any] = {}  # id(group) -> the group's flat state, with foreach=True (see foreach.py)
        self.param_groups: list[dict[Any, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(f"params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {params.type()}")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {type(params).__name__}") from None
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict[Any, Any]) -> None:
        group = dict(param_group)
        ps = group["params"]
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if set_to_none:  # (the common case, _zero_grads' loop without its tests)
            for group in self.param_groups:
                for p in group["params"]:
                    p._grad = None
            return
        _zero_grads([p for g in self.param_groups for p in g["params"]], set_to_none)

    def _transform(self, group: dict[Any, Any]) -> Any:
        raise NotImplementedError

    # the functional state's fields -> PyTorch's slot names (subclasses extend it)
    _FIELDS: dict[str, str] = {"count": "step"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        """PyTorch's per-parameter state slots for ``group``, in PyTorch's order."""
        raise NotImplementedError

    def _derived_slots(self, group: dict[Any, Any], step: int) -> dict[str, float]:
        """Slots PyTorch keeps that follow from the step count (NAdam's ``mu_product``)."""
        return {}

    def _field_names(self, fstate: Any) -> list[str]:
        """The last key of each leaf's path in the functional state (``mu``, ``count``, ...); computed once
        per state structure (the optimizers' states keep theirs from step to step)."""
        treedef = tree_util.tree_structure(fstate)
        found = _FIELD_NAMES.get(treedef)
        if found is None:
            pairs, _ = tree_util.tree_flatten_with_path(fstate)
            found = _FIELD_NAMES[treedef] = [tree_util.keystr(path).rsplit(".", 1)[-1] for path, _ in pairs]
        return found

    def _field_slots(self, fstate: Any) -> list[str | None]:
        """For each leaf of the functional state, the slot it is stored in (None: not stored)."""
        return [self._FIELDS.get(name) for name in self._field_names(fstate)]

    def _functional_state(self, p: Tensor, group: dict[Any, Any], tx: Any) -> Any:
        """The functional state of ``p``, rebuilt from ``self.state[p]`` when a slot was replaced (a loaded
        state, a user's edit); in-place edits of the slot tensors reach it directly (they share memory)."""
        st = self.state[p]
        cached = self._functional.get(p)
        if cached is not None and list(cached[1]) == self._slot_names(group) \
                and all(st.get(k) is v for k, v in cached[1].items()):
            return cached[0]  # (the slots it was built with, none replaced)
        template = tx.init(p._value)
        leaves, treedef = tree_util.tree_flatten(template)
        new = []
        for field, slot, t in zip(self._field_names(template), self._field_slots(template), leaves):
            if slot is None and field == "count" and st:  # a count PyTorch does not keep: past the first step
                steps = st["step"]._value if isinstance(st.get("step"), Tensor) else st.get("step", 1)
                new.append(np.array(int(to_numpy(steps)), dtype=t.dtype) if isinstance(t, np.ndarray) else t + 1)
                continue
            if slot is None or slot not in st:
                if slot is not None and st:
                    raise KeyError(f"{type(self).__name__}: the state of a parameter has no {slot!r} entry "
                                   f"(it has {sorted(st)}); PyTorch's {type(self).__name__} keeps {slot!r} there")
                new.append(t)
                continue
            v = st[slot]
            arr = v._value if isinstance(v, Tensor) else np.asarray(v)
            if isinstance(t, np.ndarray) and slot == "step":  # host state (the step count)
                new.append(np.array(to_numpy(arr), dtype=t.dtype).reshape(t.shape))
            else:  # state on the parameter's device, in its dtype, as PyTorch's load_state_dict casts it
                arr = put_array(arr, device_of(t))
                new.append(namespace_of(t).reshape(arr.astype(t.dtype, copy=False), t.shape))
        return tree_util.tree_unflatten(treedef, new)

    def _store(self, p: Tensor, group: dict[Any, Any], fstate: Any) -> None:
        """Write ``fstate`` into ``self.state[p]`` under PyTorch's slot names (tensors sharing its memory)."""
        st = self.state[p]
        leaves = tree_util.tree_leaves(fstate)
        by_slot = {slot: leaf for slot, leaf in zip(self._field_slots(fstate), leaves) if slot is not None}
        step = int(to_numpy(by_slot["step"])) if "step" in by_slot else int(to_numpy(st["step"]._value)) + 1 \
            if "step" in st else 1
        derived = self._derived_slots(group, step)
        for name in self._slot_names(group):
            if name == "step":
                value: Any = np.array(step, dtype=np.float32)  # PyTorch: a float32 0-d tensor on the host
            elif name in derived:
                value = np.array(derived[name], dtype=np.float32)
            else:
                value = by_slot[name]
            old = st.get(name)
            if isinstance(old, Tensor) and old._value.shape == value.shape and (name == "step" or name in derived):
                old._value[...] = value  # in place: the tensor the user holds stays current
            else:
                st[name] = Tensor._make(value)
        self._functional[p] = (fstate, {k: st[k] for k in self._slot_names(group)})

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            tx = self._transform(group)
            lr = float(group["lr"])
            maximize = group.get("maximize", False)
            foreach = group.get("foreach")
            if (foreach or foreach is None and flattening_pays(group)) and flat_step(self, group, tx, lr, maximize):
                continue
            if tree_step(self, group, tx, lr, maximize):  # one update over the list of the parameters
                continue
            self._flat.pop(id(group), None)
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = p._grad._value
                if maximize:
                    g = -g
                fstate = self._functional_state(p, group, tx)
                updates, fstate = tx.update(g, fstate, p._value)
                p._value += (lr * updates).astype(p._value.dtype, copy=False)  # in place: views see it
                p._version_counter[0] += 1
                self._store(p, group, fstate)
        return loss

    def state_dict(self) -> dict[Any, Any]:
        """``{"state": {index: {slot: value}}, "param_groups": [...]}``, laid out as PyTorch's (slot names,
        their order, ``step`` as a float32 0-d tensor, the groups' keys), ready for ``ft.save``."""
        state: dict[int, Any] = {}
        for i, p in enumerate(p for g in self.param_groups for p in g["params"]):
            st = self.state.get(p)
            if not st:
                continue
            state[i] = {k: Tensor._make(namespace_of(v._value).array(v._value, copy=True)) if isinstance(v, Tensor)
                        else v for k, v in st.items()}
        return {"state": state, "param_groups": self._indexed_groups()}

    def _indexed_groups(self) -> list[dict[Any, Any]]:
        """The param groups with their parameters as indices (numbered across groups), as in a state_dict."""
        index = itertools.count()
        return [{**{k: v for k, v in g.items() if k != "params"}, "params": [next(index) for _ in g["params"]]}
                for g in self.param_groups]

    def load_state_dict(self, state_dict: dict[Any, Any]) -> None:
        """Load a state saved by :meth:`state_dict` here or by PyTorch's optimizer of the same kind:
        tensors are moved to each parameter's device and (floating ones) cast to its dtype; ``step`` stays
        a host tensor."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params: list[Any] = []
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            mine.update((k, v) for k, v in theirs.items() if k != "params")
            params.extend((p, idx) for p, idx in zip(mine["params"], theirs["params"]))
        self.state = collections.defaultdict(dict)
        self._functional = {}
        self._flat = {}
        for p, idx in params:
            saved = state_dict["state"].get(idx, state_dict["state"].get(str(idx)))
            if saved is None:
                continue
            st = self.state[p]
            for k, v in saved.items():
                if isinstance(v, Tensor) and k != "step" and v._value.dtype.kind in "fc":
                    arr = put_array(v._value, device_of(p._value))
                    st[k] = Tensor._make(namespace_of(arr).array(arr, dtype=p._value.dtype, copy=True))
                elif isinstance(v, Tensor):
                    st[k] = Tensor._make(np.array(to_numpy(v._value), copy=True))
                else:
                    st[k] = v

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {g[k]}" for k in sorted(k for k in g if k != "params")]
        lines.append(")")
        return "\n".join(lines)


def _lr1(*parts: Any) -> Any:
    """The chain ``parts`` then ``-1`` (the step direction for a learning rate of 1)."""
    return _fopt.chain(*parts, _fopt.scale_by_learning_rate(1.0))


def _coupled(wd: float, *parts: Any) -> Any:
    """L2 weight decay added to the gradient first (PyTorch's ``weight_decay`` in all but AdamW)."""
    return _lr1(_fopt.add_decayed_weights(wd), *parts) if wd else _lr1(*parts)


def _decayed(group: dict[Any, Any], core: Any) -> Any:
    """``core`` with the group's weight decay: decoupled (scaled by the lr, applied to the parameter) when
    ``decoupled_weight_decay`` is set (AdamW, NAdamW, RAdamW), otherwise L2 added to the gradient."""
    if group.get("decoupled_weight_decay"):
        return _lr1(core, _fopt.add_decayed_weights(group["weight_decay"]))
    return _coupled(group["weight_decay"], core)


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov momentum and (coupled L2) weight decay,
    as ``torch.optim.SGD``. Example: ``ft.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False, foreach: Any = None,
                 differentiable: bool = False, fused: Any = None) -> None:
        _check_common(lr, weight_decay=weight_decay)
        _check("momentum value", momentum, momentum >= 0.0)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    _FIELDS = {"trace": "momentum_buffer", "momentum_buffer": "momentum_buffer"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["momentum_buffer"] if group["momentum"] else []

    def _transform(self, group: dict[Any, Any]) -> Any:
        if group["dampening"]:
            return _coupled(group["weight_decay"], _fopt.momentum(group["momentum"], group["dampening"],
                                                                  group["nesterov"]))
        return _fopt.sgd(1.0, momentum=group["momentum"], nesterov=group["nesterov"],
                         weight_decay=group["weight_decay"])

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss.

        Written directly on the arrays, as PyTorch's SGD (the arithmetic of ``funcgrad.optim.sgd``,
        element for element): the momentum buffer ``state[p]["momentum_buffer"]`` is updated in place
        (``b = momentum b + (1 - dampening) g``, starting at a copy of the first gradient), then
        ``p -= lr d`` in place with ``d = g + momentum b`` (Nesterov) or ``b``; ``weight_decay`` adds
        ``wd p`` to the gradient first, ``maximize`` negates it. No new arrays per parameter but the
        gradient's copy on the first step and the temporaries of ``lr d`` (and of nesterov/weight decay).
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        state = self.state
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = group["momentum"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            wd, maximize = group["weight_decay"], group.get("maximize", False)
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                v = p._value
                g = -grad._value if maximize else grad._value
                if wd:
                    g = g + wd * v
                if momentum:
                    st = state[p]
                    slot = st.get("momentum_buffer")
                    if slot is None:
                        buf = namespace_of(g).array(g, copy=True)
                        st["momentum_buffer"] = Tensor._make(buf)
                    else:
                        buf = slot._value
                        buf *= momentum
                        if dampening:
                            buf += (1 - dampening) * g
                        else:
                            buf += g
                        slot._version_counter[0] += 1
                    g = g + momentum * buf if nesterov else buf
                step = lr * g
                v -= step if step.dtype == v.dtype else step.astype(v.dtype)  # in place: views see it
                p._version_counter[0] += 1
        return loss


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam`` (``weight_decay`` is L2 added to the gradient; ``amsgrad`` supported).

    Example: ``ft.optim.Adam(model.parameters(), lr=1e-3)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[Any, ...] = (0.9, 0.999),
                 eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach: Any = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused: Any = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_common(lr, eps, weight_decay, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    _FIELDS = _ADAM_FIELDS

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])

    def _transform(self, group: dict[Any, Any]) -> Any:
        b1, b2 = group["betas"]
        scale = _fopt.scale_by_amsgrad if group["amsgrad"] else _fopt.scale_by_adam
        return _decayed(group, scale(b1, b2, group["eps"]))


class AdamW(Adam):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW`` (default ``weight_decay=1e-2``).

    Example: ``ft.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[Any, ...] = (0.9, 0.999),
                 eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False, foreach: Any = None,
                 capturable: bool = False, differentiable: bool = False, fused: Any = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop, as ``torch.optim.RMSprop`` (``alpha``, ``centered``, ``momentum``, L2 ``weight_decay``).

    Example: ``ft.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.99)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, eps, weight_decay)
        _check("momentum value", momentum, momentum >= 0.0)
        _check("alpha value", alpha, alpha >= 0.0)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    _FIELDS = {"nu": "square_avg", "mu": "grad_avg", "trace": "momentum_buffer"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return (["step", "square_avg"] + (["momentum_buffer"] if group["momentum"] else [])
                + (["grad_avg"] if group["centered"] else []))

    def _transform(self, group: dict[Any, Any]) -> Any:
        parts = [_fopt.scale_by_rms(group["alpha"], group["eps"], 0.0, group["centered"])]
        if group["momentum"]:
            parts.append(_fopt.trace(group["momentum"]))
        return _coupled(group["weight_decay"], *parts)


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad`` (``lr_decay``, ``initial_accumulator_value``, L2 ``weight_decay``).

    Example: ``ft.optim.Adagrad(model.parameters(), lr=0.1)``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: Any = None) -> None:
        _check_common(lr, eps, weight_decay)
        _check("lr_decay value", lr_decay, lr_decay >= 0.0)
        _check("initial_accumulator_value value", initial_accumulator_value, initial_accumulator_value >= 0.0)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))

    _FIELDS = {"sum_of_squares": "sum", "count": "step"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "sum"]

    def _transform(self, group: dict[Any, Any]) -> Any:
        decay = group["lr_decay"]
        parts = [_fopt.scale_by_rss(group["initial_accumulator_value"], group["eps"])]
        if decay:
            parts.append(_fopt.scale_by_schedule(lambda count: 1.0 / (1.0 + count * decay)))
        return _coupled(group["weight_decay"], *parts)


class Adadelta(Optimizer):
    """Adadelta, as ``torch.optim.Adadelta`` (default ``lr=1``). Example: ``ft.optim.Adadelta(ps, rho=0.9)``."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: Any = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, eps, weight_decay)
        _check("rho value", rho, 0.0 <= rho <= 1.0)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable))

    _FIELDS = {"square_avg": "square_avg", "acc_delta": "acc_delta"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "square_avg", "acc_delta"]

    def _transform(self, group: dict[Any, Any]) -> Any:
        return _coupled(group["weight_decay"], _fopt.scale_by_adadelta(group["rho"], group["eps"]))


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``. Example: ``ft.optim.Adamax(ps, lr=2e-3)``."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[Any, ...] = (0.9, 0.999),
                 eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach: Any = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_common(lr, eps, weight_decay, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    _FIELDS = {"count": "step", "mu": "exp_avg", "exp_inf": "exp_inf"}

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "exp_avg", "exp_inf"]

    def _transform(self, group: dict[Any, Any]) -> Any:
        b1, b2 = group["betas"]
        return _coupled(group["weight_decay"], _fopt.scale_by_adamax(b1, b2, group["eps"]))


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum), as ``torch.optim.NAdam``. Example: ``ft.optim.NAdam(ps, lr=2e-3)``."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[Any, ...] = (0.9, 0.999),
                 eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: Any = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, eps, weight_decay, betas)
        _check("momentum_decay value", momentum_decay, momentum_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    _FIELDS = _ADAM_FIELDS

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "mu_product", "exp_avg", "exp_avg_sq"]

    def _derived_slots(self, group: dict[Any, Any], step: int) -> dict[str, float]:
        b1, psi = group["betas"][0], group["momentum_decay"]
        mu_product = 1.0
        for t in range(1, step + 1):
            mu_product *= b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
        return {"mu_product": mu_product}

    def _transform(self, group: dict[Any, Any]) -> Any:
        b1, b2 = group["betas"]
        return _decayed(group, _fopt.scale_by_nadam(b1, b2, group["eps"], group["momentum_decay"]))


class RAdam(Optimizer):
    """RAdam (rectified Adam), as ``torch.optim.RAdam``. Example: ``ft.optim.RAdam(ps, lr=1e-3)``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[Any, ...] = (0.9, 0.999),
                 eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_common(lr, eps, weight_decay, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    _FIELDS = _ADAM_FIELDS

    def _slot_names(self, group: dict[Any, Any]) -> list[str]:
        return ["step", "exp_avg", "exp_avg_sq"]

    def _transform(self, group: dict[Any, Any]) -> Any:
        b1, b2 = group["betas"]
        return _decayed(group, _fopt.scale_by_radam(b1, b2, group["eps"]))
