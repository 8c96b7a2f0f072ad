"""``ft.nn.Module``: the base class of PyTorch-style modules (parameters, buffers, sub-modules,
hooks, state dicts, ``to``/``train``/``eval``)."""

from __future__ import annotations

import collections
import functools
import operator
import warnings
from typing import Any, Callable, Iterable, Iterator, cast

from .. import dtypes as _dt
from ..grad_mode import no_grad
from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from ..tensor import device as _device
from .parameter import Parameter

__all__ = ["Module", "RemovableHandle", "stored_attr"]

_ABSENT = object()


def stored_attr(module: "Module", name: str) -> Any:
    """``getattr(module, name)`` for the parameter and buffer reads a ``forward`` makes at every call.

    On CPython 3.11, ``module.weight`` first fails the ordinary lookup, which builds and drops an
    ``AttributeError`` (its message formatted), and only then calls :meth:`Module.__getattr__`: several
    times the cost of a dictionary read, more with the caches cold between a training step's kernels. A
    parameter or buffer is read from its store here; any other name (a plain attribute, a property, a
    parametrized weight, a submodule) goes through ``getattr`` as before, so what is read is the same.

    Example: ``stored_attr(linear, "weight") is linear.weight``.
    """
    d = module.__dict__
    try:
        found = d["_parameters"].get(name, _ABSENT)
        if found is _ABSENT:
            found = d["_buffers"].get(name, _ABSENT)
    except KeyError:  # (a module whose stores are not made yet)
        found = _ABSENT
    return getattr(module, name) if found is _ABSENT else found


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


_not_none = functools.partial(operator.is_not, None)  # (a registered None is left out of the walks, in C)

_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])  # type: ignore[name-match]  # torch's repr


class Module:
    """Base class of PyTorch-style modules: assign Parameters and sub-modules as attributes.

    Example::

        class Net(ft.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = ft.nn.Linear(4, 2)
            def forward(self, input):
                return self.fc(input).relu()
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
        d = self.__dict__  # (PyTorch's order, unrolled: a forward reads its layers and parameters here)
        try:
            s = d["_parameters"]
            if name in s:
                return s[name]
            s = d["_buffers"]
            if name in s:
                return s[name]
            s = d["_modules"]
            if name in s:
                return s[name]
        except KeyError:  # (a module whose stores are not all made yet: each one that is, in the same order)
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
        if not (d.get("_forward_hooks") or d.get("_forward_pre_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):  # (PyTorch's fast path: no hooks, the forward alone)
            return self.forward(*args, **kwargs)
        pre: Any = d.get("_forward_pre_hooks")
        post: Any = d.get("_forward_hooks")
        bw: Any = d.get("_backward_hooks")
        bw_pre: Any = d.get("_backward_pre_hooks")
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

    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` (``""`` is ``self``), as PyTorch finds it.

        Example: ``net.get_submodule("encoder.layers.0")``.
        """
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(type(mod).__name__ + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def _owner_of(self, target: str) -> "tuple[Module, str]":
        """The submodule holding the attribute at the dotted path ``target``, and its name."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(type(mod).__name__ + " has no attribute `" + name + "`")
        return mod, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``. Example: ``net.get_parameter("fc.weight")``."""
        mod, name = self._owner_of(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Any:
        """The buffer at the dotted path ``target``. Example: ``bn.get_buffer("running_mean")``."""
        mod, name = self._owner_of(target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

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
        if type(self).named_parameters is not Module.named_parameters:  # (a subclass's names decide)
            return (p for _, p in self.named_parameters(recurse=recurse))
        return self._unnamed_parameters(recurse)

    def _unnamed_parameters(self, recurse: bool) -> Iterator[Parameter]:
        """``named_parameters``' tensors, in its order, without building the dotted names (a training loop
        may walk the parameters at every step): gathered in one list, the duplicates and Nones left out
        only when the list's ids show any."""
        out: list[Any] = []
        for m in self._module_list() if recurse else (self,):
            out.extend(filter(_not_none, m.__dict__["_parameters"].values()))
        if len(set(map(id, out))) != len(out):
            seen: set[int] = set()
            out = [p for p in out if id(p) not in seen and not seen.add(id(p))]  # type: ignore[func-returns-value]
        return iter(out)

    def _module_list(self) -> list["Module"]:
        """Every module of the tree once, depth first from this one: ``named_modules``' order, without names
        (a module met again is left out with what it holds, as there: the walk checks for one only when the
        list's ids show it)."""
        if type(self).named_modules is not Module.named_modules:
            return [m for _, m in self.named_modules()]
        out: list[Any] = []
        stack: list[Any] = [self]
        limit = 256
        while stack:
            m = stack.pop()
            out.append(m)
            children = m.__dict__["_modules"]
            if children:  # (most modules have none)
                stack.extend(filter(_not_none, reversed(children.values())))
                if len(out) > limit:  # (a module that holds itself would never end this walk)
                    if len(set(map(id, out))) != len(out):
                        break
                    limit *= 2
        else:
            if len(set(map(id, out))) == len(out):
                return out
        out = []
        seen: set[int] = set()
        stack = [self]
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            out.append(m)
            children = m.__dict__["_modules"]
            if children:
                stack.extend([c for c in reversed(children.values()) if c is not None])
        return out

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
                errors.append(f"size mismatch for {k}: copying a param with shape {v.shape.torch_repr()} from "
                              f"checkpoint, the shape in current model is {t.shape.torch_repr()}.")
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

    def forward(self, input: Tensor) -> Tensor:
        return cast("Tensor", type(self)._fn(input, *[getattr(self, a) for a in self._args]))


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
