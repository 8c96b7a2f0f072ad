"""In-place methods of ``Tensor``: the ``*_`` methods, ``__setitem__``, ``__i*__`` operators.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` (its only subclass). It takes the helpers it shares from
``tensor_helpers`` and ``size_device`` and never imports ``tensor.py``: it is generic in the Tensor class
(``TensorT``, see ``tensor_type.py``).
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..numpy import elementwise as _elementwise
from ..numpy import indexing as _indexing
from .grad_mode import state as _mode
from .inplace_writes import check_stale_view
from .torch_names import view_rebase_error

from .inplace_variant import inplace_variant
from .factory_defaults import _rng
from .tensor_class import is_tensor, new_tensor
from .torch_names import named, named_node_class
from .tensor_helpers import (
    node_mark, _to_raw_index, _is_basic, _shape_arg, _as_tensor, _cast, _scalar_like, _finish_inplace,
)
from .tensor_type import TensorBase, TensorT


class _InplaceMixin(TensorBase[TensorT]):
    __slots__ = ()
    _value: Any  # Box's slot: declared for mypy, which reads ``self._value = ...`` below as the mixin's own

    def t_(self: TensorT) -> "TensorT":
        if self.dim() > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return _transpose_in_place(self, 0, 1, "TBackward1") if self.dim() == 2 else self

    def __setitem__(self: TensorT, idx: Any, value: Any) -> None:
        idx = _to_raw_index(idx)
        tup = idx if isinstance(idx, tuple) else (idx,)
        if _is_basic(tup):
            target = self if tup in ((), (Ellipsis,)) else self[tup]  # x[...] = v writes x itself (PyTorch)
            target.copy_(value)
            return
        check_stale_view(self)
        mark = node_mark()
        v = value if is_tensor(value) else _scalar_like(value, self) if not isinstance(value, (list, np.ndarray)) else _as_tensor(value)
        if is_tensor(v):
            v = _cast(v, self.dtype)
        out = _as_tensor(named("IndexPutBackward0", fnp.indexing.IndexUpdateRef(self, idx).set, _indexing._index_set)(v))
        _finish_inplace(self, out, mark)

    # ------------------------------------------------------------------ in-place
    def _inplace(self: TensorT, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "TensorT":
        check_stale_view(self)
        mark = node_mark()
        out = fn(self, *args, **kwargs)
        return _finish_inplace(self, _as_tensor(out), mark)

    (add_, sub_, mul_, div_, pow_, clamp_, clamp_min_, clamp_max_, masked_fill_, lerp_, neg_, abs_, exp_, log_, sqrt_,
     sin_, cos_, tanh_, sigmoid_, relu_, reciprocal_, square_) = (
        inplace_variant(name) for name in ("add", "sub", "mul", "div", "pow", "clamp", "clamp_min", "clamp_max",
                                       "masked_fill", "lerp", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh",
                                       "sigmoid", "relu", "reciprocal", "square"))
    clip_ = clamp_

    def addcmul_(self: TensorT, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "TensorT":
        return self._inplace(lambda s: s + value * tensor1 * tensor2)

    def addcdiv_(self: TensorT, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "TensorT":
        return self._inplace(lambda s: s + value * tensor1 / tensor2)

    def copy_(self: TensorT, src: Any, non_blocking: builtins.bool = False) -> "TensorT":
        """Copy ``src`` (broadcast, cast to this dtype) into this tensor, in place."""
        src = _as_tensor(src)
        if src.dim() > self.dim() or np.broadcast_shapes(tuple(src.shape), tuple(self.shape)) != tuple(self.shape):
            raise RuntimeError(
                f"output with shape [{', '.join(map(str, self.shape))}] doesn't match the broadcast shape "
                f"[{', '.join(map(str, np.broadcast_shapes(tuple(src.shape), tuple(self.shape))))}]"
            )
        return self._fill_with(src, "CopyBackwards")

    def fill_(self: TensorT, value: Any) -> "TensorT":
        if is_tensor(value):
            if value.dim() != 0:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                                   f"dimensions.")
            return self._fill_with(value, "FillBackward1")
        v = new_tensor(namespace_of(self._value).asarray(value, dtype=self._value.dtype))
        return self._fill_with(v, "FillBackward0")

    def zero_(self: TensorT) -> "TensorT":
        zero = new_tensor(namespace_of(self._value).zeros((), dtype=self._value.dtype))
        return self._fill_with(zero, "ZeroBackward0")

    def _fill_with(self: TensorT, v: "TensorT", name: str | None = None) -> "TensorT":
        """Write ``v`` (broadcast) into this tensor; recorded (as node ``name``) only when a gradient can flow."""
        check_stale_view(self)
        mark = node_mark()
        out = v
        if _mode.enabled and (self.requires_grad or v.requires_grad):
            everywhere = namespace_of(self._value).ones((), dtype=bool)
            where = fnp.where if name is None else named(name, fnp.where, _elementwise._where)
            out = _as_tensor(where(everywhere, fnp.broadcast_to(_cast(v, self.dtype), tuple(self.shape)), self))
        return _finish_inplace(self, out, mark, check_dtype=False)

    def uniform_(self: TensorT, a: builtins.float = 0.0, b: builtins.float = 1.0, generator: Any = None) -> "TensorT":
        return self._overwrite(generator, lambda rng, shape: rng.uniform(a, b, size=shape))

    def normal_(self: TensorT, mean: builtins.float = 0.0, std: builtins.float = 1.0,
                generator: Any = None) -> "TensorT":
        return self._overwrite(generator, lambda rng, shape: rng.normal(mean, std, size=shape))

    def bernoulli_(self: TensorT, p: Any = 0.5, *, generator: Any = None) -> "TensorT":
        """Fill with 0/1 draws, 1 with probability ``p`` (a float, or a tensor broadcast to ``self``).

        Example: ``ft.empty(3).bernoulli_(0.5)``.
        """
        if is_tensor(p):
            probs = np.broadcast_to(np.asarray(p.detach().cpu()._value, dtype=np.float64), tuple(self.shape))
        else:
            probs = np.float64(p)
        if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        return self._overwrite(generator, lambda rng, shape: rng.random(size=shape) < probs)

    def scatter_add_(self: TensorT, dim: builtins.int, index: Any, src: Any) -> "TensorT":
        """In-place ``scatter_add``: ``self[index[i][j]][j] += src[i][j]`` for ``dim=0``.

        Example: ``ft.zeros(3).scatter_add_(0, ft.tensor([0, 0, 2]), ft.ones(3))``.
        """
        return self._inplace(type(self).scatter_add, dim, index, src)

    def _overwrite(self: TensorT, generator: Any, draw: Callable[[Any, tuple[Any, ...]], Any]) -> "TensorT":
        """Fill with ``draw(rng, shape)``: host random numbers from ``generator`` (or the default one)."""
        host_values = draw(_rng(generator), tuple(self.shape))
        return self._fill_with(new_tensor(namespace_of(self._value).asarray(host_values.astype(self._value.dtype))))

    __iadd__, __isub__, __imul__, __itruediv__, __ipow__ = add_, sub_, mul_, div_, pow_

    # ------------------------------------------------------------------ metadata changed in place
    def _check_meta_inplace(self: TensorT, op: str) -> None:
        if self._requires_grad:
            if self._node is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise NotImplementedError(f"{op} on a tensor with autograd history is not supported here; use the "
                                      f"out-of-place form (see docs/tensor.md)")
        if self._base is not None:
            raise NotImplementedError(f"{op} on a view is not supported here; call it on the base tensor or use "
                                      f"the out-of-place form")

    def _set_value_inplace(self: TensorT, value: Any) -> "TensorT":
        self._value = value
        self._version_counter[0] += 1
        return self

    def transpose_(self: TensorT, dim0: builtins.int, dim1: builtins.int) -> "TensorT":
        """In-place ``transpose``: this tensor becomes its transpose (no memory is written; a view
        stays a view of the same base). With history the change is recorded, and the version
        bumped, as in PyTorch (a value saved for backward then refuses it, there too).

        Example::

            t = ft.zeros(2, 3); t.transpose_(0, 1)   # t.shape == (3, 2)
        """
        return _transpose_in_place(self, dim0, dim1, "TransposeBackward1")

    swapdims_ = swapaxes_ = transpose_

    def resize_(self: TensorT, *sizes: Any) -> "TensorT":
        """Resize in place, keeping the first elements in row-major order; new elements are zero
        (PyTorch leaves them uninitialised). Refused for tensors that require grad, as in PyTorch.

        Example::

            t = ft.tensor([1., 2., 3., 4.]); t.resize_(2, 2)
        """
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        self._check_meta_inplace("resize_()")
        shape = _shape_arg(sizes)
        if builtins.any(d < 0 for d in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
        if tuple(shape) == tuple(self._value.shape):
            return self  # nothing changes: no version bump, as in PyTorch
        xp = namespace_of(self._value)
        flat = xp.reshape(self._value, (-1,))
        n = int(np.prod(shape, dtype=np.int64))
        new = xp.zeros(n, dtype=self._value.dtype)
        k = builtins.min(n, flat.shape[0])
        new[:k] = flat[:k]
        return self._set_value_inplace(xp.reshape(new, shape))

    def resize_as_(self: TensorT, other: "TensorT") -> "TensorT":
        return self.resize_(tuple(other.shape))


def _transpose_in_place(t: Any, dim0: int, dim1: int, name: str) -> Any:
    """``transpose_`` (``t_``), its node named ``name`` as PyTorch's in-place variant's."""
    if not t.requires_grad and t._base is None:  # (the property: a stale view is refreshed first)
        return t._set_value_inplace(t.transpose(dim0, dim1)._value)
    if t._requires_grad and t._node is None and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    check_stale_view(t)
    if t._view_kind is not None and _mode.enabled and (t._node is not None or t._base._requires_grad):
        raise RuntimeError(view_rebase_error(t, indirect=False))  # no_grad, inference or multi-output view
    _become(t, t.transpose(dim0, dim1))  # recorded; of a view, a view of the same base
    node = t._node
    if node is not None:  # (PyTorch's TransposeBackward1 / TBackward1)
        node.__class__ = named_node_class(getattr(node, "_named_base", type(node)), name)
    return t


def _become(t: Any, out: Any) -> None:
    """``t`` takes the value and history of ``out``, computed from it by a view operation (an
    in-place change of metadata: ``transpose_``); its version is bumped, as PyTorch's is."""
    t._value = out._value
    if out._node is not None:
        t._node, t._output_nr = out._node, out._output_nr
    t._version_counter[0] += 1
    if t._base is not None:
        t._view_fns, t._view_version = out._view_fns, t._version_counter[0]
