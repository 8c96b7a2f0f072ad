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
from typing import Any, Callable, Iterator

import numpy as np

import funcgrad.nn as _fnn
from funcgrad.backend import namespace_of
from funcgrad.nn import init as _init

from .. import dtypes as _dt
from ..creation import default_generator
from ..graph import as_numpy_box, as_tensor_box
from ..grad_mode import no_grad
from ..tensor import Tensor, _as_tensor, _rename, _seq_mark
from ..tensor import device as _device

__all__ = [
    "Parameter", "Module", "Linear", "Sequential", "ModuleList", "ModuleDict", "Identity", "Flatten", "ReLU",
    "Sigmoid", "Tanh", "GELU", "SiLU", "LeakyReLU", "Softplus", "Softmax", "LogSoftmax", "Dropout", "Embedding",
    "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "HuberLoss", "functional", "init", "utils",
]


def _to_args(args: tuple, kwargs: dict) -> tuple[Any, Any]:
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

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":  # type: ignore[misc]
        if data is None:
            data = Tensor._make(np.empty(0, dtype=_dt.get_default_dtype().np))
        data = _as_tensor(data)
        if requires_grad and data._value.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        p = Parameter._make(data._value, requires_grad=requires_grad, inference=data._inference)
        return p

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> "Parameter":
        new = Parameter(Tensor._make(np.array(self._value, copy=True)), self._requires_grad)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: int) -> Any:
        return (Parameter, (Tensor._make(np.array(self._value)), self._requires_grad))


from ..tensor import _PARAM  # noqa: E402

_PARAM[0] = Parameter

# --------------------------------------------------------------------------
# functional ops: funcgrad.nn's maths on recorded boxes


def _fg(fn: Callable, *tensors: Any, **kwargs: Any) -> Tensor:
    boxes = [as_numpy_box(t) if isinstance(t, Tensor) else t for t in tensors]
    return as_tensor_box(fn(*boxes, **kwargs))


class _Functional:  # the ops behind ft.nn.functional
    """``ft.nn.functional`` (usually imported as ``F``)."""

    @staticmethod
    def relu(x: Tensor, inplace: bool = False) -> Tensor:
        return x.relu_() if inplace else x.relu()

    @staticmethod
    def sigmoid(x: Tensor) -> Tensor:
        return x.sigmoid()

    @staticmethod
    def tanh(x: Tensor) -> Tensor:
        return x.tanh()

    @staticmethod
    def gelu(x: Tensor, approximate: str = "none") -> Tensor:
        mark = _seq_mark()
        return _rename(_fg(_fnn.gelu, x, approximate=(approximate == "tanh")), "GeluBackward0", mark)

    @staticmethod
    def silu(x: Tensor, inplace: bool = False) -> Tensor:
        return _fg(_fnn.silu, x)

    @staticmethod
    def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        if beta != 1.0:
            return _fg(_fnn.softplus, x * beta) / beta
        return _fg(_fnn.softplus, x)

    @staticmethod
    def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
        from ..ops import where

        return where(x > 0, x, x * negative_slope)

    @staticmethod
    def softmax(x: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
        return x.softmax(-1 if dim is None else dim, dtype)

    @staticmethod
    def log_softmax(x: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
        return x.log_softmax(-1 if dim is None else dim, dtype)

    @staticmethod
    def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        out = x.matmul(weight.t())
        return out + bias if bias is not None else out

    @staticmethod
    def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        if not training or p == 0.0:
            return x
        if p == 1.0:
            return x * 0.0
        keep = default_generator._rng.random(tuple(x.shape)) >= p
        return x * Tensor._make((keep / (1.0 - p)).astype(x._value.dtype))

    @staticmethod
    def one_hot(t: Tensor, num_classes: int = -1) -> Tensor:
        v = t._value
        n = int(v.max()) + 1 if num_classes == -1 else num_classes
        return Tensor._make(np.eye(n, dtype=np.int64)[v])

    @staticmethod
    def _check_reduction(reduction: str) -> None:
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{reduction} is not a valid value for reduction")

    @staticmethod
    def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
        _Functional._check_reduction(reduction)
        mark = _seq_mark()
        return _rename(_fg(_fnn.mse_loss, input, _as_tensor(target), reduction=reduction), "MseLossBackward0", mark)

    @staticmethod
    def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
        _Functional._check_reduction(reduction)
        mark = _seq_mark()
        return _rename(_fg(_fnn.l1_loss, input, _as_tensor(target), reduction=reduction), "L1LossBackward0", mark)

    @staticmethod
    def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:  # noqa: A002
        _Functional._check_reduction(reduction)
        return _fg(_fnn.huber_loss, input, _as_tensor(target), delta=delta, reduction=reduction)

    @staticmethod
    def cross_entropy(input: Tensor, target: Tensor, weight: Any = None, reduction: str = "mean",  # noqa: A002
                      label_smoothing: float = 0.0, ignore_index: int = -100) -> Tensor:
        """Class scores ``(N, C, ...)`` against int64 class indices ``(N, ...)`` or probabilities."""
        _Functional._check_reduction(reduction)
        if weight is not None:
            raise NotImplementedError("cross_entropy(weight=...) is not supported by funcgrad.tensor")
        target = _as_tensor(target)
        axis = 1 if input.dim() > 1 else 0
        if target.dtype.is_floating_point:
            tgt: Any = target
        else:
            if target.dtype is not _dt.int64 and target.dtype is not _dt.int32:
                raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}")
            tv = target._value
            if namespace_of(tv) is not np or (tv == ignore_index).any():
                # Entries equal to ignore_index are left out (PyTorch's rule: the mean is over the
                # others). On a device this path is always taken: checking for them first would
                # read the labels back to the host.
                return _cross_entropy_ignoring(input, tv, axis, label_smoothing, reduction, ignore_index)
            tgt = tv
        mark = _seq_mark()
        out = _fg(_fnn.cross_entropy, input, tgt, axis=axis, label_smoothing=label_smoothing, reduction=reduction)
        return _rename(out, "NllLossBackward0", mark)

    @staticmethod
    def nll_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
        _Functional._check_reduction(reduction)
        mark = _seq_mark()
        out = _fg(_fnn.nll_loss, input, _as_tensor(target)._value, axis=1 if input.dim() > 1 else 0,
                  reduction=reduction)
        return _rename(out, "NllLossBackward0", mark)

    @staticmethod
    def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
                                         pos_weight: Tensor | None = None) -> Tensor:
        _Functional._check_reduction(reduction)
        mark = _seq_mark()
        out = _fg(_fnn.binary_cross_entropy_with_logits, input, _as_tensor(target), pos_weight=pos_weight,
                  reduction=reduction)
        return _rename(out, "BinaryCrossEntropyWithLogitsBackward0", mark)


F = _Functional


def _cross_entropy_ignoring(input: Tensor, labels: Any, axis: int, label_smoothing: float, reduction: str,  # noqa: A002
                            ignore_index: int) -> Tensor:
    """cross_entropy with the entries ``labels == ignore_index`` left out, without a host sync."""
    xp = namespace_of(labels)
    keep = labels != ignore_index
    safe = xp.where(keep, labels, 0)
    mark = _seq_mark()
    per = _fg(_fnn.cross_entropy, input, safe, axis=axis, label_smoothing=label_smoothing, reduction="none")
    w = Tensor._make(keep.astype(per._value.dtype))
    per = per * w
    if reduction == "none":
        out = per
    elif reduction == "sum":
        out = per.sum()
    else:
        out = per.sum() / w.sum()
    return _rename(out, "NllLossBackward0", mark)


class _Init:  # the maths behind ft.nn.init
    """``ft.nn.init``: in-place initialisers drawing from ft's generator (``funcgrad.nn.init`` maths)."""

    @staticmethod
    def _fill(t: Tensor, values: np.ndarray) -> Tensor:
        with no_grad():
            t.copy_(Tensor._make(np.asarray(values, dtype=t._value.dtype)))
        return t

    @staticmethod
    def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
        return _Init._fill(t, _init.uniform(default_generator._rng, tuple(t.shape), t._value.dtype, a, b))

    @staticmethod
    def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
        return _Init._fill(t, _init.normal(default_generator._rng, tuple(t.shape), t._value.dtype, std, mean))

    @staticmethod
    def zeros_(t: Tensor) -> Tensor:
        return _Init._fill(t, np.zeros(tuple(t.shape)))

    @staticmethod
    def ones_(t: Tensor) -> Tensor:
        return _Init._fill(t, np.ones(tuple(t.shape)))

    @staticmethod
    def constant_(t: Tensor, val: float) -> Tensor:
        return _Init._fill(t, np.full(tuple(t.shape), val))

    @staticmethod
    def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
        return _Init._fill(t, _init.glorot_uniform(default_generator._rng, tuple(t.shape), t._value.dtype, gain))

    @staticmethod
    def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
        return _Init._fill(t, _init.glorot_normal(default_generator._rng, tuple(t.shape), t._value.dtype, gain))

    @staticmethod
    def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
        return _Init._fill(t, _init.kaiming_uniform(default_generator._rng, tuple(t.shape), t._value.dtype, a=a,
                                                   mode=mode, nonlinearity=nonlinearity))

    @staticmethod
    def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
        return _Init._fill(t, _init.kaiming_normal(default_generator._rng, tuple(t.shape), t._value.dtype, a=a,
                                                  mode=mode, nonlinearity=nonlinearity))


# --------------------------------------------------------------------------
# modules

_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


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
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def _check_init(self) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameters or modules before Module.__init__() call")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if isinstance(value, Parameter):
            self._check_init()
            d["_buffers"].pop(name, None)
            d["_modules"].pop(name, None)
            d.pop(name, None)
            d["_parameters"][name] = value
        elif isinstance(value, Module):
            self._check_init()
            d["_parameters"].pop(name, None)
            d["_buffers"].pop(name, None)
            d.pop(name, None)
            d["_modules"][name] = value
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
        self._check_init()
        self.__dict__["_buffers"][name] = tensor

    def add_module(self, name: str, module: "Module | None") -> None:
        self._check_init()
        self.__dict__["_modules"][name] = module

    register_module = add_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # --- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
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
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        seen: set = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, p in m._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield mprefix + ("." if mprefix else "") + name, p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, b in m._buffers.items():
                if b is not None:
                    yield mprefix + ("." if mprefix else "") + name, b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

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
        for p in self.parameters():
            if p._grad is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                p._grad = p._grad.detach()
                p._grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_tensors(self, fn: Callable[[Tensor], Tensor], grads_too: bool = False) -> "Module":
        for m in self.modules():
            for name, p in list(m._parameters.items()):
                if p is not None:
                    with no_grad():
                        new = fn(p)
                    if new is p:
                        continue
                    q = Parameter(new, p._requires_grad)
                    if grads_too and p._grad is not None:
                        with no_grad():
                            q._grad = fn(p._grad)
                    m._parameters[name] = q
            for name, b in list(m._buffers.items()):
                if b is not None:
                    with no_grad():
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
    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> "collections.OrderedDict":
        """Parameters and buffers by dotted name (detached tensors sharing memory, as in PyTorch)."""
        out = collections.OrderedDict() if destination is None else destination
        for name, p in self.named_parameters(prefix=prefix.rstrip(".")):
            out[name] = p if keep_vars else p.detach()
        for name, b in self.named_buffers(prefix=prefix.rstrip(".")):
            out[name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """Copy values in (shapes must match); with ``strict``, missing or unexpected keys raise."""
        own = dict(self.named_parameters())
        own.update(dict(self.named_buffers()))
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
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
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

    def __dir__(self) -> list:
        return sorted(set(list(super().__dir__()) + list(self._parameters) + list(self._modules) + list(self._buffers)))


class Linear(Module):
    """``y = x @ weight.T + bias`` with PyTorch's default initialisation (uniform in ``±1/sqrt(in_features)``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        d = (_dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()).np
        w = _init.torch_default(default_generator._rng, (out_features, in_features), d)
        self.weight = Parameter(Tensor._make(np.asarray(w, dtype=d)))
        if bias:
            bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
            b = _init.uniform(default_generator._rng, (out_features,), d, -bound, bound)
            self.bias = Parameter(Tensor._make(np.asarray(b, dtype=d)))
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors (normal initialisation, as in PyTorch)."""

    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        w = default_generator._rng.standard_normal((num_embeddings, embedding_dim))
        self.weight = Parameter(Tensor._make(w.astype(_dt.get_default_dtype().np)))

    def forward(self, idx: Tensor) -> Tensor:
        return self.weight[_as_tensor(idx)]

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Sequential(Module):
    """Modules applied in order; indexable and iterable."""

    def __init__(self, *mods: Any) -> None:
        super().__init__()
        if len(mods) == 1 and isinstance(mods[0], collections.OrderedDict):
            for name, m in mods[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(mods):
                self.add_module(str(i), m)

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


class ModuleList(Module):
    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, m: Module) -> "ModuleList":
        self.add_module(str(len(self._modules)), m)
        return self

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k: str) -> Module:
        return self._modules[k]

    def __setitem__(self, k: str, m: Module) -> None:
        self.add_module(k, m)

    def __len__(self) -> int:
        return len(self._modules)

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()


def _activation(name: str, fn: Callable, extra: Callable[[Any], str] | None = None) -> type:
    def forward(self: Module, x: Tensor) -> Tensor:
        return fn(self, x)

    attrs = {"forward": forward, "__doc__": f"``{name}`` as a module."}
    if extra is not None:
        attrs["extra_repr"] = extra
    return type(name, (Module,), attrs)


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


ReLU = _activation("ReLU", lambda self, x: x.relu())
Sigmoid = _activation("Sigmoid", lambda self, x: x.sigmoid())
Tanh = _activation("Tanh", lambda self, x: x.tanh())
SiLU = _activation("SiLU", lambda self, x: _Functional.silu(x))


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.gelu(x, self.approximate)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.softplus(x, self.beta, self.threshold)


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x: Tensor) -> Tensor:
        return _Functional.log_softmax(x, self.dim)


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training mode (scaled by ``1/(1-p)``); identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return _Functional.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        _Functional._check_reduction(reduction)
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.l1_loss(input, target, self.reduction)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.huber_loss(input, target, self.reduction, self.delta)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss(weight=...) is not supported by funcgrad.tensor")
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.cross_entropy(input, target, reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.nll_loss(input, target, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(reduction)
        self.pos_weight = pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return _Functional.binary_cross_entropy_with_logits(input, target, self.reduction, self.pos_weight)


class utils:  # noqa: N801
    """``ft.nn.utils``: ``clip_grad_norm_`` and ``parameters_to_vector``."""

    @staticmethod
    def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0) -> Tensor:
        ps = [p for p in ([parameters] if isinstance(parameters, Tensor) else parameters) if p.grad is not None]
        if not ps:
            return Tensor._make(np.asarray(0.0, dtype=np.float32))
        total = math.sqrt(sum(float((p.grad._value.astype(np.float64) ** 2).sum()) for p in ps))
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            with no_grad():
                for p in ps:
                    p.grad.mul_(coef)
        return Tensor._make(np.asarray(total, dtype=ps[0].grad._value.dtype))

    @staticmethod
    def parameters_to_vector(parameters: Any) -> Tensor:
        from ..ops import cat

        return cat([p.reshape(-1) for p in parameters])


from . import functional, init  # noqa: E402,F401  (modules: import funcgrad.tensor.nn.functional as F)
