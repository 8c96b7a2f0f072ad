"""``ft.compile``: PyTorch's ``torch.compile`` entry point, staged with ``fg.jit``.

``ft.compile(model)(x)`` runs the module's forward as one staged program: the
parameters and buffers, and the call's tensors, go in as the program's arguments,
and the Tensor layer records one node for the whole call, whose backward is the
program's staged backward (so ``loss.backward()`` in a training step runs staged
code too, and parameters get their ``.grad`` as in eager mode). Buffers the forward
writes (BatchNorm's running statistics) are written back after each call.

One program is staged per input signature (shapes, dtypes, the non-tensor
arguments, the modules' ``training`` flags and the grad mode); a new signature
traces again. What cannot be staged runs eagerly after one warning
(``fullgraph=True``: raises instead):

- Python control flow on a tensor's value (``if x.sum() > 0``), ``.item()``,
  ``.tolist()``, ``.numpy()``: the value is not known while staging;
- in-place changes to an input tensor (``x.add_(1)``): the program cannot write
  into the caller's tensor;
- hooks on the module or its submodules (forward, forward-pre, backward hooks):
  they run Python on each call's values.

For a function (not a module), the modules it reaches through its closure, its
default arguments, the globals it names and a bound method's ``self`` are its
state (their parameters and buffers are the program's arguments at every call).
Other tensors it reads are staged as constants, as they are when traced; one that
requires grad outside any module is refused (pass it as an argument).

Example::

    model = ft.nn.Sequential(ft.nn.Linear(4, 8), ft.nn.ReLU(), ft.nn.Linear(8, 1))
    fast = ft.compile(model)
    loss = fast(ft.randn(16, 4)).pow(2).mean()
    loss.backward()                      # model's parameters get their .grad
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import funcgrad as fg
from funcgrad import tree_util
from funcgrad.backend import namespace_of
from funcgrad.core import Box

from . import _func_support as _support
from .func import _swapped
from .grad_mode import no_grad
from .grad_mode import state as _grad_mode
from .boxes import as_numpy_box, as_tensor_box
from .nn.module import Module
from .tensor import Tensor

__all__ = ["compile", "CompiledFunction", "CompiledModule", "CompileError"]

# torch.compile's modes (torch._inductor.list_mode_options)
_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")


class CompileError(RuntimeError):
    """A function given to ``ft.compile(..., fullgraph=True)`` cannot be staged as one program."""


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _reached(fn: Callable[..., Any]) -> tuple[list[Module], list[Tensor]]:
    """The modules and tensors a function reaches directly (closure, defaults, named globals, ``self``)."""
    found: list[Any] = []
    self_obj = getattr(fn, "__self__", None)
    if self_obj is not None:
        found.append(self_obj)
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is not None:
        found += [c.cell_contents for c in (getattr(func, "__closure__", None) or ()) if _filled(c)]
        found += list(getattr(func, "__defaults__", None) or ())
        found += list((getattr(func, "__kwdefaults__", None) or {}).values())
        globs = getattr(func, "__globals__", {})
        found += [globs[n] for n in code.co_names if n in globs]
    elif not inspect.isfunction(fn) and not inspect.isbuiltin(fn):  # a callable object: its attributes
        found += list(getattr(fn, "__dict__", {}).values())
    modules = [m for m in found if isinstance(m, Module)]
    tensors = [t for t in found if isinstance(t, Tensor)]
    return modules, tensors


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _lookup(module: Module, name: str) -> tuple[Any, str]:
    """The store (``_parameters`` or ``_buffers`` dict) holding the dotted ``name``, and its last part."""
    *path, leaf = name.split(".")
    m = module
    for part in path:
        m = m._modules[part]
    return (m._parameters if leaf in m._parameters else m._buffers), leaf


class _State:
    """The tensors a compiled callable reads besides its arguments: the modules' parameters and buffers
    (by dotted name, looked up at each call) and loose tensors it closes over."""

    def __init__(self, modules: list[Module], tensors: list[Tensor]):
        self.modules = modules
        self.entries: list[tuple[Module, str, bool]] = []  # (module, dotted name, is a buffer)
        seen: set[int] = set()
        for m in modules:
            for name, p in m.named_parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    self.entries.append((m, name, False))
            for name, b in m.named_buffers():
                if id(b) not in seen:
                    seen.add(id(b))
                    self.entries.append((m, name, True))
        self.loose = [t for t in tensors if id(t) not in seen]

    def tensors(self) -> list[Tensor]:
        out = []
        for m, name, _ in self.entries:
            store, leaf = _lookup(m, name)
            out.append(store[leaf])
        return out

    def refusals(self) -> list[str]:
        """What keeps the callable from being staged: hooks, loose tensors that require grad."""
        found = []
        for root in self.modules:
            for path, m in root.named_modules():
                for store in _HOOKS:
                    if getattr(m, store, None):
                        found.append(f"{type(m).__name__} {path or '(root)'} has {store.strip('_')}")
        for t in self.tensors():
            if getattr(t, "_hooks", None) or getattr(t, "_post_hooks", None):
                found.append(f"a parameter of shape {tuple(t.shape)} has a hook (register_hook)")
        for t in self.loose:
            if t.requires_grad:
                found.append(f"the function reads a tensor of shape {tuple(t.shape)} that requires grad outside "
                             f"any module; pass it as an argument, or compile the module that holds it")
        return found

    def signature(self) -> tuple[Any, ...]:
        return tuple(m.training for root in self.modules for m in root.modules())


class CompiledFunction:
    """A callable staged by :func:`compile`: one ``fg.jit`` program per input signature."""

    def __init__(self, fn: Callable[..., Any], state: _State, *, fullgraph: bool, dynamic: Any, backend: Any,
                 mode: Any, options: Any):
        self._fn = fn
        self._state = state
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        self.options = options
        self._programs: dict[Any, Any] = {}
        self._eager = backend == "eager"
        self._warned = False
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    # ------------------------------------------------------------------ the staged program
    def _program(self, treedef: Any, statics: tuple[Any, ...], slots: list[int], out_info: dict[str, Any]
                 ) -> Callable[..., Any]:
        fn, state = self._fn, self._state
        n_state = len(state.entries)

        def staged(*flat: Any) -> tuple[Any, ...]:
            frame = _support.enter(True)
            ok = False
            try:
                values = [Tensor._make(v) for v in flat]
                inputs = values[n_state:]
                versions = [t._vc[0] for t in inputs]
                state_versions = [t._vc[0] for t in values[:n_state]]
                per_module: dict[int, tuple[Module, dict[str, Any]]] = {}
                for (m, name, _), v in zip(state.entries, values):
                    per_module.setdefault(id(m), (m, {}))[1][name] = v
                leaves: list[Any] = list(statics)
                for slot, t in zip(slots, inputs):
                    leaves[slot] = t
                args, kwargs = tree_util.tree_unflatten(treedef, leaves)
                with _swapped_all(list(per_module.values())):
                    out = fn(*args, **kwargs)
                    buffers = []  # read back: the forward may have written them (running statistics)
                    written = []
                    for (m, name, is_buffer), held, version in zip(state.entries, values, state_versions):
                        if is_buffer:
                            store, leaf = _lookup(m, name)
                            buffers.append(store[leaf]._value)
                            written.append(store[leaf] is not held or held._vc[0] != version)
                    out_info["written"] = written
                for i, (t, before) in enumerate(zip(inputs, versions)):
                    if t._vc[0] != before:
                        raise CompileError(f"ft.compile: the function changed its tensor argument {i} (shape "
                                           f"{tuple(t.shape)}) in place; a staged program cannot write into the "
                                           f"caller's tensors")
                out_leaves, out_info["def"] = tree_util.tree_flatten(out, is_leaf=_is_tensor)
                out_info["is_tensor"] = [isinstance(o, Tensor) for o in out_leaves]
                raw = [o._value if isinstance(o, Tensor) else o for o in out_leaves]
                ok = True
            finally:
                _support.leave(frame, ok)
            return (*raw, *buffers)

        program: Callable[..., Any] = fg.jit(staged)
        return program

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._eager:
            return self._fn(*args, **kwargs)
        refusals = self._state.refusals()
        if refusals:
            return self._refuse("; ".join(refusals), args, kwargs, None)
        leaves, treedef = tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
        slots = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
        statics = tuple(None if isinstance(v, Tensor) else v for v in leaves)
        state = self._state.tensors()
        inputs = [leaves[i] for i in slots]
        key = (treedef, _hashable(statics), tuple(slots), self._state.signature(), _grad_mode.enabled,
               tuple((tuple(t.shape), t.dtype, t.requires_grad) for t in (*state, *inputs)))
        found = self._programs.get(key)
        if found is None:
            out_info: dict[str, Any] = {}
            try:
                program = self._program(treedef, statics, slots, out_info)
                flat = program(*_arguments(state, inputs, self._state.entries, None))
            except Exception as err:  # noqa: BLE001  (a staging failure: decide below)
                return self._refuse(_reason(err), args, kwargs, err)
            self._programs[key] = (program, out_info)
        else:
            program, out_info = found
            flat = program(*_arguments(state, inputs, self._state.entries, out_info["written"]))
        buffers = [t for t, (_, _, is_buffer) in zip(state, self._state.entries) if is_buffer]
        n_out = len(flat) - len(buffers)
        with no_grad():
            for target, value, written in zip(buffers, flat[n_out:], out_info["written"]):
                if written:
                    target.copy_(as_tensor_box(value))
        leaves_out = [as_tensor_box(o) if is_t else o for o, is_t in zip(flat[:n_out], out_info["is_tensor"])]
        return tree_util.tree_unflatten(out_info["def"], leaves_out)

    def _refuse(self, reason: str, args: tuple[Any, ...], kwargs: dict[str, Any], err: BaseException | None) -> Any:
        """``fullgraph``: raise; otherwise warn once and run this call (and later ones) eagerly."""
        if self.fullgraph:
            raise CompileError(f"ft.compile(fullgraph=True): {self.__name__} cannot be staged as one program: "
                               f"{reason}") from err
        out = self._fn(*args, **kwargs)  # a real error (not a staging one) is raised from here, as in eager mode
        if not self._warned:
            self._warned = True
            warnings.warn(f"ft.compile: {self.__name__} cannot be staged ({reason}); it runs eagerly from now on "
                          f"(fullgraph=True makes this an error)", UserWarning, stacklevel=3)
        self._eager = True
        return out


def _arguments(state: list[Tensor], inputs: list[Tensor], entries: list[tuple[Module, str, bool]],
               written: list[bool] | None) -> list[Any]:
    """The program's arguments: a recorded box for a tensor that requires grad (its gradient comes from the
    staged backward), the raw array for one that does not (a plain input: no gradient is staged for it, and
    the node keeps no reference to its version). A buffer the forward writes goes in as a copy (all buffers
    on the first call, before it is known which): the copy back into it must not change a value the staged
    backward reads."""
    out: list[Any] = []
    buffers = iter(written) if written is not None else None
    for i, t in enumerate((*state, *inputs)):
        copy = i < len(entries) and entries[i][2] and (buffers is None or next(buffers))
        if t.requires_grad:
            out.append(as_numpy_box(t))
        elif copy and not isinstance(t._value, Box):
            out.append(namespace_of(t._value).array(t._value, copy=True))
        else:
            out.append(t._value)
    return out


def _reason(err: BaseException) -> str:
    text = str(err).split("\n")[0]
    if isinstance(err, CompileError):
        return text.removeprefix("ft.compile: ")
    return f"{type(err).__name__}: {text} (Python control flow or a read of a tensor's value, such as .item(), " \
           f"needs the value, which is not known while staging)"


def _hashable(statics: tuple[Any, ...]) -> Any:
    try:
        hash(statics)
        return statics
    except TypeError:
        return tuple(repr(s) for s in statics)


class _swapped_all:
    """Every module's parameters and buffers replaced by the staged values, restored after."""

    def __init__(self, per_module: list[tuple[Module, dict[str, Any]]]):
        self.managers = [_swapped(m, values) for m, values in per_module]

    def __enter__(self) -> None:
        for cm in self.managers:
            cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        for cm in reversed(self.managers):
            cm.__exit__(*exc)


class CompiledModule(Module):
    """A module whose forward runs staged (``torch.compile(module)``'s ``OptimizedModule``).

    It shares the original's parameters and buffers (``_orig_mod``); attributes it does not have are the
    original's.
    """

    def __init__(self, module: Module, compiled: CompiledFunction):
        super().__init__()
        self._orig_mod = module
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)


def compile(model: Callable[..., Any] | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: str | Callable[..., Any] = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """Stage a Tensor-layer function or module with ``fg.jit`` (PyTorch's ``torch.compile``).

    - ``fullgraph``: raise :class:`CompileError` when the function cannot be staged (data-dependent
      Python control flow, ``.item()``, in-place changes to inputs, hooks) instead of warning once and
      running eagerly.
    - ``dynamic``: accepted; funcgrad stages one program per input shape signature (a new shape traces
      again), which is ``dynamic=False``'s behaviour.
    - ``backend``: accepted; ``"eager"`` runs the function as it is (no staging), any other name or
      callable stages with ``fg.jit`` (NumPy replay, native code when ``fg.jit``'s native tier is on).
    - ``mode``, ``options``: accepted and checked as PyTorch does (one of them, a known mode), no effect.
    - ``disable=True``: returns ``model`` unchanged.

    Used as a decorator with options: ``@ft.compile(fullgraph=True)``.

    Example::

        model = ft.nn.Linear(3, 2)
        fast = ft.compile(model)
        fast(ft.randn(4, 3)).sum().backward()   # model.weight.grad is set
    """
    if mode is not None and options is not None:
        raise RuntimeError("ft.compile: give either mode or options, not both")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"ft.compile: unrecognized mode={mode!r}, expected one of {', '.join(_MODES)}")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"ft.compile: backend must be a name or a callable, got {type(backend).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"ft.compile: dynamic must be None, True or False, got {dynamic!r}")
    def build(fn: Callable[..., Any], state: _State) -> CompiledFunction:
        return CompiledFunction(fn, state, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                options=options)

    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return model
    if isinstance(model, Module):
        return CompiledModule(model, build(model, _State([model], [])))
    if not callable(model):
        raise RuntimeError(f"ft.compile: model must be a callable (a function or an ft.nn.Module), got "
                           f"{type(model).__name__}")
    modules, tensors = _reached(model)
    return build(model, _State(modules, tensors))
