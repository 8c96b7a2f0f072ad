"""``ft.nn``: PyTorch-style (mutable, stateful) modules over Tensors.

``Module`` registers ``Parameter`` attributes and sub-modules automatically,
as ``torch.nn.Module`` does. Activations and losses reuse the maths of
``funcgrad.nn`` (the functional layer): the Tensors are handed to it as
recorded NumPy-semantics boxes, so its functions record on the tensor graph
and the formulas live in one place. Initialisation follows PyTorch's
defaults (``funcgrad.nn.init.torch_default``) drawn from ``ft``'s generator,
so ``ft.manual_seed`` makes models reproducible.

Example::

    model = ft.nn.Sequential(ft.nn.Linear(64, 32), ft.nn.ReLU(), ft.nn.Linear(32, 10))
    loss = ft.nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
"""

from __future__ import annotations

import collections
import math
import warnings
from typing import Any, Callable, Iterable, Iterator, SupportsIndex, cast

import numpy as np

from funcgrad.backend import namespace_of
from funcgrad.nn import init as _init

from .. import dtypes as _dt
from ..creation import _np_dtype as _np_dtype  # one copy, re-exported for the layers
from ..creation import default_generator
from ..graph import as_numpy_box, as_tensor_box
from ..grad_mode import no_grad
from ..tensor import Tensor, _as_tensor, _finish_inplace, _rename, _seq_mark
from ..tensor import device as _device
from ..toplevel import _on_default_device

__all__ = [
    "Parameter", "Module", "Linear", "Sequential", "ModuleList", "ModuleDict", "Identity", "Flatten", "ReLU",
    "GELU", "Embedding",
    "functional", "init", "utils",
]


def _to_args(args: tuple[Any, ...], kwargs: dict[Any, Any]) -> tuple[Any, Any]:
    """(device, dtype) from Module.to's arguments."""
    dev = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dev, dtype = a.device, (a.dtype if a.is_floating_point() else dtype)
        elif isinstance(a, (str, _device, int)) and not isinstance(a, bool):
            dev = a
        else:
            dtype = a
    return dev, dtype


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default.

    ``Parameter(t)`` shares memory with ``t`` (as in PyTorch).
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = Tensor._make(np.empty(0, dtype=_dt.get_default_dtype().np))
        data = _as_tensor(data)
        if requires_grad and data._value.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return Parameter._make(data._value, requires_grad=requires_grad, inference=data._inference)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[Any, Any]) -> "Parameter":
        new = Parameter(Tensor._make(np.array(self._value, copy=True)), self._requires_grad)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (Parameter, (Tensor._make(np.array(self._value)), self._requires_grad))


from ..tensor import _PARAM  # noqa: E402

_PARAM[0] = Parameter

# --------------------------------------------------------------------------
# functional ops: funcgrad.nn's maths on recorded boxes


def _maybe_inplace(x: Tensor, fn: Callable[[Tensor], Any], inplace: bool) -> Tensor:
    """``fn(x)``; with ``inplace=True`` (PyTorch's activations and dropouts) written into ``x``,
    which is returned: an in-place change like any other (values ``fn`` saved are kept, a leaf
    that requires grad refuses)."""
    if not inplace:
        return cast("Tensor", fn(x))
    mark = _seq_mark()
    out = fn(x)
    return x if out is x else _finish_inplace(x, _as_tensor(out), mark)


def _boxes(*values: Any) -> list[Any]:
    """The Tensors among ``values`` as recorded NumPy-semantics boxes, for ``funcgrad.nn``'s maths."""
    return [as_numpy_box(t) if isinstance(t, Tensor) else t for t in values]


def _fg(fn: Callable[..., Any], *tensors: Any, **kwargs: Any) -> Tensor:
    return cast("Tensor", as_tensor_box(fn(*_boxes(*tensors), **kwargs)))


def _fg_named(name: str, fn: Callable[..., Any], *tensors: Any, **kwargs: Any) -> Tensor:
    """``_fg(fn, ...)`` whose result's ``grad_fn`` carries PyTorch's node ``name`` (``MseLossBackward0``)."""
    mark = _seq_mark()
    return _rename(_fg(fn, *tensors, **kwargs), name, mark)


def _like(t: Tensor, host: Any) -> Tensor:
    """A constant made on the host (indices, masks, weights) as a Tensor on ``t``'s device."""
    xp = namespace_of(t._value)
    return Tensor._make(np.asarray(host) if xp is np else xp.asarray(host))


def _check_dropout_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(x: Tensor, p: float, training: bool, mask_shape: tuple[Any, ...]) -> Tensor:
    """Zero with probability ``p`` through a mask of ``mask_shape`` (broadcast against ``x``: whole
    channels when it has ones), scaling the rest by ``1/(1-p)``; ``x`` itself outside training."""
    _check_dropout_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = default_generator._rng.random(mask_shape) >= p
    return x * _like(x, (keep / (1.0 - p)).astype(x._value.dtype))


# --------------------------------------------------------------------------
# modules


def _zero_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    """``Module.zero_grad`` / ``Optimizer.zero_grad``: drop each ``.grad``, or zero it in place (detached)."""
    for p in params:
        if p._grad is None:
            continue
        if set_to_none:
            p._grad = None
        else:
            p._grad = p._grad.detach()
            p._grad.zero_()

_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])  # type: ignore[name-match]  # torch's repr


class Module:
    """Base class of PyTorch-style modules: assign Parameters and sub-modules as attributes.

    Example::

        class Net(ft.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = ft.nn.Linear(4, 2)
            def forward(self, x):
                return self.fc(x).relu()
    """

    training: bool

    def __init__(self) -> None:
        for store in ("_parameters", "_buffers", "_modules", "_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                      "_backward_pre_hooks"):
            object.__setattr__(self, store, collections.OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "training", True)

    def _check_init(self) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameters or modules before Module.__init__() call")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if isinstance(value, (Parameter, Module)):  # registered, and no longer anything else
            self._check_init()
            store = "_parameters" if isinstance(value, Parameter) else "_modules"
            for other in {"_parameters", "_buffers", "_modules"} - {store}:  # (its own keeps the order)
                d[other].pop(name, None)
            d.pop(name, None)
            d[store][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (ft.nn.Parameter or "
                                f"None expected)")
            d["_parameters"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (ft.nn.Parameter or "
                            f"None required)")
        self._check_init()
        self.__dict__["_parameters"][name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (e.g. running statistics); in ``state_dict`` unless
        ``persistent=False``. Example: ``self.register_buffer("steps", ft.zeros(()))``."""
        self._check_init()
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f'buffer name must be a non-empty string without ".", got {name!r}')
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None "
                            f"required)")
        if name in self.__dict__ or name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self.__dict__["_buffers"][name] = tensor
        nps = self.__dict__["_non_persistent_buffers_set"]
        (nps.discard if persistent else nps.add)(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        self._check_init()
        self.__dict__["_modules"][name] = module

    register_module = add_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        pre: Any = d.get("_forward_pre_hooks")
        post: Any = d.get("_forward_hooks")
        bw: Any = d.get("_backward_hooks")
        bw_pre: Any = d.get("_backward_pre_hooks")
        if not pre and not post and not bw and not bw_pre:
            return self.forward(*args, **kwargs)
        for hook, with_kwargs in list(pre.values()):
            if with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw_hook = None
        if bw or bw_pre:
            from ._backward_hooks import ModuleBackwardHook

            bw_hook = ModuleBackwardHook(self, list(bw.values()), list(bw_pre.values()))
            args = bw_hook.setup_inputs(args)
        out = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(post.values()):
            res = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if res is not None:
                out = res
        if bw_hook is not None:
            if not isinstance(out, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                              f"but received {type(out)}", UserWarning, stacklevel=2)
            out = bw_hook.setup_outputs(out)
        return out

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> "RemovableHandle":
        """``hook(module, grad_input, grad_output)`` once the gradients w.r.t. the module's inputs are computed.

        ``grad_input`` has one entry per positional argument (None for non-tensors and for
        inputs that do not require grad), ``grad_output`` one per output; a non-None result
        (a tuple as long as ``grad_input``) replaces ``grad_input``. Outputs of such a module
        refuse in-place changes (clone them first), as in PyTorch.

        Example::

            lin = ft.nn.Linear(3, 2)
            h = lin.register_full_backward_hook(lambda m, gin, gout: print(gout[0].shape))
            lin(ft.randn(4, 3, requires_grad=True)).sum().backward()   # prints ft.Size([4, 2])
            h.remove()
        """
        return RemovableHandle(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> "RemovableHandle":
        """``hook(module, grad_output)`` when the gradients w.r.t. the module's outputs are computed;
        a non-None result (a tuple as long as ``grad_output``) replaces them.

        Example::

            lin = ft.nn.Linear(3, 2)
            h = lin.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 0.5,))   # halve the gradient
        """
        return RemovableHandle(self._backward_pre_hooks, hook, prepend)

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> "RemovableHandle":
        """``hook(module, args)`` before ``forward``; a non-None result replaces the arguments.

        Example: ``h = model.register_forward_pre_hook(lambda m, a: print(a[0].shape)); h.remove()``.
        """
        return RemovableHandle(self._forward_pre_hooks, (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> "RemovableHandle":
        """``hook(module, args, output)`` after ``forward``; a non-None result replaces the output.

        Example: ``h = layer.register_forward_hook(lambda m, a, out: out * 2)``.
        """
        return RemovableHandle(self._forward_hooks, (hook, with_kwargs), prepend)

    # --- traversal
    def named_modules(self, memo: set[Any] | None = None, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self) -> Iterator["Module"]:
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator["Module"]:
        return (m for _, m in self.named_children())

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool,
                       persistent_only: bool = False) -> Iterator[tuple[str, Any]]:
        """``(dotted name, tensor)`` of the entries of ``store`` (``_parameters`` or ``_buffers``) of this module
        (and its sub-modules with ``recurse``), Nones left out."""
        seen: set[Any] = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            skip = m.__dict__.get("_non_persistent_buffers_set", ()) if persistent_only else ()
            for name, t in m.__dict__[store].items():
                if t is None or name in skip or (remove_duplicate and id(t) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(t))
                yield mprefix + ("." if mprefix else "") + name, t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, False)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        return (b for _, b in self.named_buffers(recurse=recurse))

    # --- modes and grads
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Freeze (False) or unfreeze every parameter, e.g. to fine-tune only part of a model."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        _zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_tensors(self, fn: Callable[[Tensor], Tensor], grads_too: bool = False) -> "Module":
        with no_grad():
            for m in self.modules():
                for name, p in list(m._parameters.items()):
                    new = p if p is None else fn(p)
                    if new is p:
                        continue
                    q = m._parameters[name] = Parameter(new, p._requires_grad)
                    if grads_too and p._grad is not None:
                        q._grad = fn(p._grad)
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: in place, as in PyTorch.

        A device move applies to every parameter and buffer; a dtype cast only to
        floating-point ones. Gradients move with their parameters.
        """
        dev, dtype = _to_args(args, kwargs)
        if dev is not None:
            self._apply_tensors(lambda t: t.to(dev), grads_too=True)
        if dtype is not None:
            self._apply_tensors(lambda t: t.to(dtype) if t.is_floating_point() else t)
        return self

    def cuda(self, device: Any = None) -> "Module":
        """Move every parameter and buffer to a CUDA GPU (default GPU 0), in place."""
        return self._apply_tensors(lambda t: t.cuda(device), grads_too=True)

    def double(self) -> "Module":
        return self.to(_dt.float64)

    def float(self) -> "Module":
        return self.to(_dt.float32)

    def cpu(self) -> "Module":
        """Move every parameter and buffer to host memory, in place."""
        return self._apply_tensors(lambda t: t.cpu(), grads_too=True)

    # --- state
    def state_dict(self, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> "collections.OrderedDict[str, Any]":
        """Parameters and buffers by dotted name (detached tensors sharing memory, as in PyTorch)."""
        out = collections.OrderedDict() if destination is None else destination
        # PyTorch's order: each module's own parameters, then its persistent buffers, then its children
        for mprefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            for store in ("_parameters", "_buffers"):
                for name, t in m._named_members(store, mprefix, False, False, persistent_only=store == "_buffers"):
                    out[name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """Copy values in (shapes must match); with ``strict``, missing or unexpected keys raise."""
        own: dict[str, Tensor] = dict(self.named_parameters())
        own.update(self._named_members("_buffers", "", True, False, persistent_only=True))
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = _as_tensor(state_dict[k])
            if tuple(v.shape) != tuple(t.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape {v.shape} from checkpoint, the "
                              f"shape in current model is {t.shape}.")
                continue
            with no_grad():
                t.copy_(v)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # --- printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self) -> list[Any]:
        return sorted(set(list(super().__dir__()) + list(self._parameters) + list(self._modules) + list(self._buffers)))


class _Functional(Module):
    """A module whose ``forward`` is its functional form ``_fn`` applied to the input and then to the
    attributes named in ``_args`` (``LayerNorm``: ``F.layer_norm(x, normalized_shape, weight, bias, eps)``)."""

    _fn: Any = None
    _args: tuple[str, ...] = ()

    def forward(self, x: Tensor) -> Tensor:
        return cast("Tensor", type(self)._fn(x, *[getattr(self, a) for a in self._args]))


def _uniform_param(shape: tuple[Any, ...], bound: float, dtype: Any = None) -> Parameter:
    """A Parameter drawn uniformly from ``[-bound, bound]`` with ft's generator (PyTorch's layer default)."""
    d = _np_dtype(dtype)
    vals = _init.uniform(default_generator._rng, shape, d, -bound, bound)
    return _new_param(np.asarray(vals, dtype=d))


def _const_param(shape: tuple[Any, ...], value: float, dtype: Any = None) -> Parameter:
    return _new_param(np.full(shape, value, dtype=_np_dtype(dtype)))


def _new_param(values: Any, requires_grad: bool = True) -> Parameter:
    """A Parameter holding ``values``, on ft's default device (``ft.set_default_device``)."""
    return Parameter(_on_default_device(Tensor._make(values)), requires_grad)


class Linear(Module):
    """``y = x @ weight.T + bias`` with PyTorch's default initialisation (uniform in ``±1/sqrt(in_features)``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        d = _np_dtype(dtype)
        w = _init.torch_default(default_generator._rng, (out_features, in_features), d)
        self.weight = _new_param(np.asarray(w, dtype=d))
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.register_parameter("bias", _uniform_param((out_features,), bound, dtype) if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        return functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Sequential(Module):
    """Modules applied in order; indexable and iterable."""

    def __init__(self, *mods: Any) -> None:
        super().__init__()
        named = len(mods) == 1 and isinstance(mods[0], collections.OrderedDict)
        for name, m in mods[0].items() if named else ((str(i), m) for i, m in enumerate(mods)):
            self.add_module(name, m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: Any) -> Any:
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, m: Module) -> "Sequential":
        self.add_module(str(len(self)), m)
        return self


_SHAPES = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _per_rank(base: type, name: str, fn: str | None, doc: str, ranks: tuple[int, ...] = (1, 2, 3)) -> tuple[type, ...]:
    """The subclasses of ``base`` per rank ``_n`` (``Conv1d``, ``Conv2d``, ``Conv3d``) whose functional form ``_fn``
    is ``F.<fn>`` (``conv1d`` ...); ``name``, ``fn`` and ``doc`` are formatted with ``n`` and the input ``shape``."""

    def attrs(n: int) -> dict[str, Any]:
        out = {"_n": n, "__module__": base.__module__, "__doc__": doc.format(n=n, shape=_SHAPES[n])}
        if fn is not None:
            out["_fn"] = staticmethod(getattr(functional, fn.format(n=n)))
        return out

    return tuple(type(name.format(n=n), (base,), attrs(n)) for n in ranks)


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)


class ReLU(Module):
    """``relu`` as a module; with ``inplace=True`` it overwrites its input (``x.relu_()``), as PyTorch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return x.relu_() if self.inplace else x.relu()

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return functional.gelu(x, self.approximate)


class RemovableHandle:
    """What ``register_*_hook`` returns: ``handle.remove()`` unregisters the hook (also a context manager)."""

    _next_id = 0

    def __init__(self, store: "collections.OrderedDict[int, Any]", entry: Any, prepend: bool = False) -> None:
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._store = store
        store[self.id] = entry
        if prepend:
            store.move_to_end(self.id, last=False)

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


from . import functional, init, utils  # noqa: E402,F401  (modules: import funcgrad.tensor.nn.functional as F)
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList  # noqa: E402
from .activation import *  # noqa: E402,F401,F403
from .conv import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .norm import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .sparse import Embedding  # noqa: E402
from .rnn import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .misc import *  # noqa: E402,F401,F403
from . import activation, conv, dropout, loss, misc, norm, pooling, rnn, transformer  # noqa: E402

__all__ += ["ParameterList", "ParameterDict", "RemovableHandle"]
for _layers in (activation, conv, pooling, norm, dropout, rnn, transformer, loss, misc):
    __all__ += _layers.__all__
from . import parallel  # noqa: E402,F401  (ft.nn.parallel.DistributedDataParallel)
