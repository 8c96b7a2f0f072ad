"""Where the SciPy kernels of ``funcgrad.scipy.<module>`` come from, per array namespace.

NumPy arrays use ``scipy.<module>`` (the optional ``scipy`` extra), CuPy arrays
``cupyx.scipy.<module>``, and any other namespace the module in its
``scipy_<module>`` attribute (the tests' fake device has ``scipy_linalg``).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

__all__ = ["require_scipy", "scipy_function"]

INSTALL = "pip install funcgrad[scipy]"


def require_scipy(module: str, uses: str | None = None) -> None:
    """Raise ImportError naming the install command when SciPy (``scipy.<uses>``, by default
    ``scipy.<module>``) cannot be imported for ``funcgrad.scipy.<module>``."""
    try:
        importlib.import_module("scipy." + (uses or module))
    except ImportError as e:
        raise ImportError(
            f"funcgrad.scipy.{module} needs SciPy, which could not be imported ({e}); "
            f"install it with: {INSTALL}"
        ) from e


_CACHE: dict[tuple[int, str], Any] = {}


def _module_for(xp: Any, module: str, what: str) -> Any:
    key = (id(xp), module)
    mod = _CACHE.get(key)
    if mod is not None:
        return mod
    ns_name = getattr(xp, "__name__", None) or type(xp).__name__
    if xp is np:
        require_scipy(module)
        mod = importlib.import_module("scipy." + module)
    elif getattr(xp, "scipy_" + module, None) is not None:
        mod = getattr(xp, "scipy_" + module)
    elif ns_name == "cupy" or ns_name.startswith("cupy."):
        try:
            mod = importlib.import_module("cupyx.scipy." + module)
        except ImportError as e:
            raise ImportError(
                f"{what} on CuPy arrays needs cupyx.scipy.{module}, which could not be imported "
                f"({e}); install CuPy with: pip install funcgrad[cuda]"
            ) from e
    else:
        raise NotImplementedError(
            f"{what}: no scipy.{module}-like module is known for arrays of namespace {ns_name!r}; "
            f"it is neither numpy nor cupy and has no 'scipy_{module}' attribute"
        )
    _CACHE[key] = mod
    return mod


def scipy_function(xp: Any, module: str, name: str) -> Callable[..., Any]:
    """``<scipy-like module for xp>.<module>.<name>``, or a clear error naming what is missing."""
    what = f"funcgrad.scipy.{module}.{name}"
    mod = _module_for(xp, module, what)
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(
            f"{getattr(mod, '__name__', mod)} has no function '{name}', which {what} needs for arrays "
            f"of namespace {getattr(xp, '__name__', xp)!r} (there is no counterpart on this device; "
            f"move the arrays to the host with fg.device_put(x, 'cpu'))"
        )
    out: Callable[..., Any] = fn
    return out
