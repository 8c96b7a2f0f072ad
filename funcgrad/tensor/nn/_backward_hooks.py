"""Module full backward hooks: ``register_full_backward_hook`` / ``register_full_backward_pre_hook``.

A module call with such hooks passes its tensor inputs, and then its tensor outputs,
through an identity custom Function. In backward, the outputs' identity node is reached
first: its gradients are the module's ``grad_output`` (pre hooks may replace them). The
inputs' identity node runs once every gradient from inside the module has arrived: its
gradients are the module's ``grad_input``, which the hooks see (and may replace) together
with the ``grad_output`` kept from before. Entries are None for non-tensor arguments. Each call has its own :class:`ModuleBackwardHook`.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ..function import Function
from ..grad_mode import state as _mode
from ..tensor import Tensor


class BackwardHookFunction(Function):
    """Identity on tensors; its backward hands the gradients to a :class:`ModuleBackwardHook`.

    Its name is PyTorch's (``BackwardHookFunctionBackward`` nodes; the in-place error names it).
    """

    @staticmethod
    def forward(ctx: Any, hook: "ModuleBackwardHook", is_output: bool, *tensors: Tensor) -> tuple[Tensor, ...]:
        # as in PyTorch: grad_output has None for outputs that got no gradient, grad_input zeros
        # for tensor inputs that got none (also those that do not require grad)
        ctx.set_materialize_grads(not is_output)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.module_hook, ctx.is_output = hook, is_output
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        hook = ctx.module_hook
        out: tuple[Any, ...] = hook.on_grad_output(grads) if ctx.is_output else hook.on_grad_input(grads)
        return (None, None, *out)


def _check_len(kind: str, res: Any, expected: int) -> tuple[Any, ...]:
    got = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    if len(got) != expected:
        what = "grad_input" if kind == "hook" else "grad_output"
        raise RuntimeError(f"Backward {kind} returned an invalid number of {what}, got {len(got)}, but expected "
                           f"{expected}")
    return got


class ModuleBackwardHook:
    """The backward hooks of one module call (made by ``Module.__call__``)."""

    def __init__(self, module: Any, hooks: list[Callable[..., Any]], pre_hooks: list[Callable[..., Any]]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_inputs = self.n_outputs = 0
        self.input_idx: list[int] | None = None
        self.output_idx: list[int] | None = None

    def _wrap(self, values: tuple[Any, ...], is_output: bool) -> tuple[tuple[Any, ...], list[int] | None]:
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        if not (_mode.enabled and any(values[i].requires_grad for i in idx)):
            return values, None
        new = BackwardHookFunction.apply(self, is_output, *[values[i] for i in idx])
        out = list(values)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(values) is tuple else type(values)(*out)), idx

    def setup_inputs(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        self.n_inputs = len(args)
        args, self.input_idx = self._wrap(args, False)
        return args

    def setup_outputs(self, result: Any) -> Any:
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        values, self.output_idx = self._wrap(values, True)
        return values[0] if single else values

    @staticmethod
    def _pack(idx: list[int], grads: tuple[Any, ...], n: int) -> tuple[Any, ...]:
        full: list[Any] = [None] * n
        for i, g in zip(idx, grads):
            full[i] = g
        return tuple(full)

    def on_grad_output(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        assert self.output_idx is not None  # only the outputs' node calls this
        go = self._pack(self.output_idx, grads, self.n_outputs)
        for pre in self.pre_hooks:
            res = pre(self.module, go)
            if res is not None:
                go = _check_len("pre hook", res, len(go))
        self.grad_outputs = go
        if self.input_idx is None:  # no input requires grad: the hooks run now, with grad_input all None
            if self.hooks:
                warnings.warn(
                    "Full backward hook is firing when gradients are computed with respect to module outputs since "
                    "no inputs require gradients. See the docs of Module.register_full_backward_hook.",
                    UserWarning, stacklevel=2,
                )
                gi = (None,) * self.n_inputs
                for hook in self.hooks:
                    res = hook(self.module, gi, go)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                           "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(go[i] for i in self.output_idx)

    def on_grad_input(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.grad_outputs is None:  # reached without passing through the outputs (e.g. double backward)
            return grads
        assert self.input_idx is not None  # only the inputs' node calls this
        gi = self._pack(self.input_idx, grads, self.n_inputs)
        for hook in self.hooks:
            res = hook(self.module, gi, self.grad_outputs)
            if res is not None:
                gi = _check_len("hook", res, len(gi))
        self.grad_outputs = None
        return tuple(gi[i] for i in self.input_idx)
