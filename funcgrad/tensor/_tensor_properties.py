"""Dtype casts, predicates, memory queries and in-place random samplers of ``Tensor``: ``byte``/``char``/
``short``/``bfloat16``/``chalf``, ``is_signed``/``is_nonzero``/``is_same_size``/``is_conj``/``is_neg``/
``isreal``/``isposinf``/``isneginf``, ``get_device``/``data_ptr``/``pin_memory``, and ``cauchy_``,
``exponential_``, ``geometric_``, ``log_normal_``, ``random_``, ``multinomial`` drawing from the Tensor
layer's generator (``ft.manual_seed``) as ``normal_``/``uniform_`` do.

funcgrad.tensor has no bfloat16 or complex32: ``bfloat16()`` and ``chalf()`` upcast (to float32 and
complex64) with a warning, as the weight loader reads bfloat16 storages.

Example::

    ft.empty(3).exponential_(2.0)       # Exp(rate 2) draws
    ft.tensor([1., float("inf")]).isposinf()   # [False, True]
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable

import numpy as np


from ..backend import namespace_of
from . import dtypes as _dt
from .sampling import multinomial_draws
from .tensor_class import new_tensor
from .tensor_type import TensorBase, TensorT


def _cast_to(name: str) -> Callable[..., Any]:
    """The method ``x.<name>()``: ``x.to(ft.<dtype>)``."""
    target = {"byte": _dt.uint8, "char": _dt.int8, "short": _dt.int16}[name]

    def method(self: TensorBase[Any], memory_format: Any = None) -> Any:
        return self.to(target)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``x.to(ft.{target.name})``. Example: ``ft.tensor([1.5]).{name}()``."
    return method


def _no_device(name: str) -> Callable[..., Any]:
    """``x.<name>()`` for an accelerator funcgrad does not drive: PyTorch's error when it is absent."""

    def method(self: TensorBase[Any], *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name.upper()} is not available: funcgrad.tensor runs on the CPU and on CUDA devices "
                           f"(.cpu(), .cuda())")

    method.__name__ = method.__qualname__ = name
    return method


class _PropertiesMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ casts
    byte, char, short = _cast_to("byte"), _cast_to("char"), _cast_to("short")
    ipu, xpu, mtia = _no_device("ipu"), _no_device("xpu"), _no_device("mtia")

    def bfloat16(self: TensorT, memory_format: Any = None) -> "TensorT":
        """funcgrad.tensor has no bfloat16: float32, with a warning (as the weight loader reads bfloat16)."""
        warnings.warn("funcgrad.tensor has no bfloat16; bfloat16() returns a float32 tensor", UserWarning,
                      stacklevel=2)
        return self.to(_dt.float32)

    def chalf(self: TensorT, memory_format: Any = None) -> "TensorT":
        """funcgrad.tensor has no complex32: complex64, with a warning."""
        warnings.warn("funcgrad.tensor has no complex32; chalf() returns a complex64 tensor", UserWarning,
                      stacklevel=2)
        return self.to(_dt.complex64)

    # ------------------------------------------------------------------ predicates
    def is_signed(self: TensorT) -> builtins.bool:
        """Whether the dtype holds negative values (False for uint8 and bool). Example: ``ft.ones(1).is_signed()``."""
        return builtins.bool(self.dtype.is_signed)

    def is_nonzero(self: TensorT) -> builtins.bool:
        """The truth of a one-element tensor (PyTorch's errors for more or fewer elements).

        Example: ``ft.tensor([0.5]).is_nonzero()`` is True.
        """
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def is_same_size(self: TensorT, other: Any) -> builtins.bool:
        """Whether ``other`` has the same shape. Example: ``ft.ones(2).is_same_size(ft.zeros(2))``."""
        return tuple(self.shape) == tuple(other.shape)

    def is_conj(self: TensorT) -> builtins.bool:
        """False: conjugation is never lazy here (``conj()`` makes the values). Example: ``x.is_conj()``."""
        return False

    def is_neg(self: TensorT) -> builtins.bool:
        """False: negation is never lazy here. Example: ``x.is_neg()``."""
        return False

    def resolve_neg(self: TensorT) -> "TensorT":
        """``self`` (negation is never lazy here). Example: ``x.resolve_neg()``."""
        return self

    def isreal(self: TensorT) -> "TensorT":
        """True where the imaginary part is zero (everywhere for a real tensor). Example: ``ft.tensor([1j, 2]).isreal()``."""
        xp = namespace_of(self._value)
        if self.is_complex():
            return new_tensor(self._value.imag == 0)
        return new_tensor(xp.ones(self._value.shape, dtype=bool))

    def isposinf(self: TensorT) -> "TensorT":
        """True where the value is +inf. Example: ``ft.tensor([1., float("inf")]).isposinf()``."""
        if self.is_complex():
            raise RuntimeError("isposinf does not support complex inputs.")
        v = self._value
        return new_tensor((v == np.inf) if v.dtype.kind == "f" else namespace_of(v).zeros(v.shape, dtype=bool))

    def isneginf(self: TensorT) -> "TensorT":
        """True where the value is -inf. Example: ``ft.tensor([1., -float("inf")]).isneginf()``."""
        if self.is_complex():
            raise RuntimeError("isneginf does not support complex inputs.")
        v = self._value
        return new_tensor((v == -np.inf) if v.dtype.kind == "f" else namespace_of(v).zeros(v.shape, dtype=bool))

    # ------------------------------------------------------------------ memory
    def get_device(self: TensorT) -> builtins.int:
        """-1 on the CPU, else the device's index. Example: ``ft.ones(1).get_device()`` is -1."""
        dev = self.device
        return -1 if dev.type == "cpu" else builtins.int(dev.index or 0)

    def data_ptr(self: TensorT) -> builtins.int:
        """The address of the first element (NumPy's ``__array_interface__``; CuPy's ``data.ptr``): equal for
        tensors that start at the same memory, as PyTorch's. Example: ``x.data_ptr() == x.view(-1).data_ptr()``."""
        v = self._value
        iface = getattr(v, "__array_interface__", None)
        if iface is not None:
            return builtins.int(iface["data"][0])
        data = getattr(v, "data", None)
        return builtins.int(getattr(data, "ptr", 0) or 0)

    const_data_ptr = data_ptr

    def pin_memory(self: TensorT, device: Any = None) -> "TensorT":
        """``self`` (host memory is not pinned here; copies to a device work without it). Example: ``x.pin_memory()``."""
        return self

    def is_pinned(self: TensorT, device: Any = None) -> builtins.bool:
        """False (see ``pin_memory``)."""
        return False

    def share_memory_(self: TensorT) -> "TensorT":
        """``self``: tensors cross processes by pickling here. Example: ``x.share_memory_()``."""
        return self

    def is_shared(self: TensorT) -> builtins.bool:
        """False (see ``share_memory_``)."""
        return False

    def apply_(self: TensorT, callable: Callable[[Any], Any]) -> "TensorT":  # noqa: A002
        """Replace each element ``v`` by ``callable(v)``, in place (CPU tensors that do not require grad).

        Example: ``ft.tensor([1., 2.]).apply_(lambda v: v * 10)``.
        """
        return self._map_host(lambda *vs: callable(*vs), "apply_")

    def map_(self: TensorT, tensor: Any, callable: Callable[[Any, Any], Any]) -> "TensorT":  # noqa: A002
        """Replace each element ``v`` by ``callable(v, w)`` with ``w`` from ``tensor`` (broadcast), in place.

        Example: ``ft.tensor([1., 2.]).map_(ft.tensor([3., 4.]), lambda a, b: a * b)``.
        """
        return self._map_host(callable, "map_", tensor)

    def map2_(self: TensorT, x: Any, y: Any, callable: Callable[[Any, Any, Any], Any]) -> "TensorT":  # noqa: A002
        """``map_`` with two other tensors. Example: ``a.map2_(b, c, lambda u, v, w: u + v * w)``."""
        return self._map_host(callable, "map2_", x, y)

    def _map_host(self: TensorT, fn: Callable[..., Any], op: str, *others: Any) -> "TensorT":
        if self.requires_grad:
            raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"{op} is only implemented on CPU tensors")
        arrays = [np.broadcast_to(np.asarray(o._value), tuple(self.shape)) for o in others]
        values = [fn(v, *(a[i] for a in arrays)) for i, v in np.ndenumerate(self._value)]
        self.copy_(new_tensor(np.asarray(values, dtype=self._value.dtype).reshape(self._value.shape)))
        return self

    # ------------------------------------------------------------------ random samplers (in place)
    def cauchy_(self: TensorT, median: builtins.float = 0.0, sigma: builtins.float = 1.0, *,
                generator: Any = None) -> "TensorT":
        """Fill with Cauchy draws (``median + sigma * tan(pi * (u - 1/2))``). Example: ``ft.empty(3).cauchy_()``."""
        self._floating("cauchy_")
        return self._overwrite(generator, lambda rng, shape: median + sigma * rng.standard_cauchy(shape))

    def exponential_(self: TensorT, lambd: builtins.float = 1.0, *, generator: Any = None) -> "TensorT":
        """Fill with exponential draws of rate ``lambd``. Example: ``ft.empty(3).exponential_(2.0)``."""
        self._floating("exponential_")
        if lambd <= 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._overwrite(generator, lambda rng, shape: rng.exponential(1.0 / lambd, shape))

    def geometric_(self: TensorT, p: builtins.float, *, generator: Any = None) -> "TensorT":
        """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...).

        Example: ``ft.empty(3).geometric_(0.5)``.
        """
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return self._overwrite(generator, lambda rng, shape: rng.geometric(p, shape))

    def log_normal_(self: TensorT, mean: builtins.float = 1.0, std: builtins.float = 2.0, *,
                    generator: Any = None) -> "TensorT":
        """Fill with ``exp(N(mean, std))`` draws. Example: ``ft.empty(3).log_normal_(0.0, 1.0)``."""
        self._floating("log_normal_")
        if std <= 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self._overwrite(generator, lambda rng, shape: rng.lognormal(mean, std, shape))

    def random_(self: TensorT, *bounds: Any, generator: Any = None, **kwargs: Any) -> "TensorT":
        """Fill with integers drawn uniformly from ``[from, to)``: ``random_(from, to)``, ``random_(to)`` (from 0),
        or ``random_()`` (``[0, 2**mantissa]`` for floats, the dtype's range from 0 for integers).

        Example: ``ft.empty(4).random_(0, 10)``.
        """
        low, to = (0, None) if not bounds else (0, bounds[0]) if len(bounds) == 1 else bounds[:2]
        low, to = kwargs.pop("from", low), kwargs.pop("to", to)
        if kwargs or len(bounds) > 2:
            raise TypeError("random_() takes 'from', 'to' and 'generator' arguments")
        if to is None:
            kind = self._value.dtype
            to = (2 ** (np.finfo(kind).nmant + 1) + 1 if kind.kind == "f" else
                  2 if kind.kind == "b" else builtins.int(np.iinfo(kind).max) + 1)
        low, to = builtins.int(low), builtins.int(to)
        if low >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={to}")
        return self._overwrite(generator, lambda rng, shape: rng.integers(low, to, shape))

    def multinomial(self: TensorT, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Any = None) -> "TensorT":
        """``num_samples`` category indices per row, drawn with probabilities proportional to ``self``.

        Example: ``ft.tensor([1.0, 3.0]).multinomial(4, replacement=True)``.
        """
        probs = np.asarray(self.detach().cpu()._value, dtype=np.float64)
        shape = (num_samples,) if probs.ndim == 1 else (probs.shape[0], num_samples)
        out = new_tensor(namespace_of(self._value).zeros(shape, dtype=np.int64))
        return out._overwrite(generator, lambda rng, _: multinomial_draws(rng, probs, num_samples, replacement))

    def _floating(self: TensorT, op: str) -> None:
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(f"{op} expects a floating point tensor, got {self.dtype}")


