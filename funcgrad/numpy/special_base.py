"""What special functions stand on, below ``funcgrad.scipy``: finding the arrays'
``scipy.special``-like module (imported on first use: SciPy for NumPy arrays,
``cupyx.scipy.special`` for CuPy), declaring an elementwise special function from it, and
the modified Bessel functions ``i0`` and ``i1``, declared here because ``numpy.i0`` is one
of NumPy's functions: ``fnp.i0`` and ``fg.scipy.special.i0`` are this one primitive.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ._batching import elementwise_rule
from ._typing import Array, ArrayLike

__all__ = ["i0", "i1"]


_SPECIAL_BY_NAMESPACE: dict[int, tuple[Any, Any]] = {}  # id(xp) -> (xp, module): xp kept, so ids stay valid


def _special_namespace(xp: Any, fn_name: str = "special functions") -> Any:
    """The ``scipy.special``-like module for arrays of namespace ``xp``.

    numpy -> ``scipy.special`` (needs the ``scipy`` extra); a namespace with a
    ``scipy_special`` attribute -> that attribute; cupy -> ``cupyx.scipy.special``.
    Imports happen on first use, so importing funcgrad never needs SciPy or CuPy.
    """
    hit = _SPECIAL_BY_NAMESPACE.get(id(xp))
    if hit is not None and hit[0] is xp:
        return hit[1]
    ns_name = getattr(xp, "__name__", None) or type(xp).__name__
    if xp is np:
        try:
            import scipy.special as mod
        except ImportError as e:
            raise ImportError(
                f"funcgrad.scipy.special.{fn_name} on NumPy arrays needs SciPy, which could not be "
                f"imported ({e}); install it with: pip install funcgrad[scipy]"
            ) from e
    elif getattr(xp, "scipy_special", None) is not None:
        mod = xp.scipy_special
    elif ns_name == "cupy" or ns_name.startswith("cupy."):
        try:
            import cupyx.scipy.special as mod
        except ImportError as e:
            raise ImportError(
                f"funcgrad.scipy.special.{fn_name} on CuPy arrays needs cupyx.scipy.special, which "
                f"could not be imported ({e}); install CuPy with: pip install funcgrad[cuda]"
            ) from e
    else:
        raise NotImplementedError(
            f"funcgrad.scipy.special.{fn_name}: no special-function module is known for arrays of "
            f"namespace {ns_name!r}; it is neither numpy nor cupy and has no 'scipy_special' "
            f"attribute (a module like scipy.special holding the functions for its arrays)"
        )
    _SPECIAL_BY_NAMESPACE[id(xp)] = (xp, mod)
    return mod


def _special_function(xp: Any, name: str) -> Callable[..., Any]:
    mod = _special_namespace(xp, name)
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(
            f"{getattr(mod, '__name__', mod)} has no function '{name}', which "
            f"funcgrad.scipy.special.{name} needs for arrays of namespace "
            f"{getattr(xp, '__name__', xp)!r}"
        )
    out: Callable[..., Any] = fn
    return out


def _special_raw(name: str) -> Callable[..., Any]:
    """Raw function calling ``<special module of the arguments>.<name>``."""

    def raw(*args: Any) -> Any:
        return _special_function(namespace_of(*args), name)(*args)

    raw.__name__ = raw.__qualname__ = name
    return raw


def unary_special(name: str, d: Callable[[Any, Any], Any], doc: str) -> Callable[[ArrayLike], Array]:
    """Declare the elementwise special function ``name`` whose derivative is ``d(ans, x)``."""
    return defprimitive(_special_raw(name), vjp=lambda g, ans, x: g * d(ans, x), jvp=lambda t, ans, x: t * d(ans, x),
                        batch_from=elementwise_rule, doc=doc)


i0: Callable[[ArrayLike], Array] = unary_special("i0", lambda ans, x: i1(x), """Modified Bessel function of the first kind, order 0. Differentiable ``scipy.special.i0`` (``fnp.i0``, ``fg.scipy.special.i0``); d/dx = i1(x).

    Example::

        i0(fnp.array([0.0, 1.0]))
    """)


def _i1_prime(ans: Any, x: Any) -> Any:
    at_zero = x == 0
    safe_x = fnp.where(at_zero, 1.0, x)
    return fnp.where(at_zero, 0.5, i0(x) - ans / safe_x)


i1: Callable[[ArrayLike], Array] = unary_special("i1", lambda ans, x: _i1_prime(ans, x), """Modified Bessel function of the first kind, order 1. Differentiable ``scipy.special.i1``.

    d/dx = i0(x) - i1(x) / x, with its limit 1/2 at x = 0. At exactly x = 0
    derivatives are exact to second order (third and higher read 0 there).

    Example::

        i1(fnp.array([0.0, 1.0]))
    """)
