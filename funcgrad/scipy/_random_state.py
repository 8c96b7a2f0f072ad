"""The one conversion of a ``random_state`` / ``rng`` argument into a NumPy generator.

funcgrad's SciPy-side draws (``stats.dirichlet.rvs``, ``sparse.random``) run
SciPy's and NumPy's own samplers on the host, so they need a NumPy generator.
Besides SciPy's spellings (None, an int seed, a ``numpy.random.Generator`` or
``RandomState``), a ``fg.random`` key is accepted: its ``uint32[2]`` data seeds
``numpy.random.default_rng`` with the key's 64 bits (high word first). This
module holds that seeding rule, :func:`key_generator`, once: ``fg.nn.init.rng``
calls it too, so a key gives reproducible draws and split keys give different
ones. A typed key (``fg.random.key``, whose module sits above this layer) is
recognised by its ``__funcgrad_key_data__()`` method, which returns its data. (These are NumPy's streams, not JAX's: for
JAX's numbers and reparameterized derivatives use ``fg.random.dirichlet``.)

Example::

    numpy_generator(fg.random.PRNGKey(3), "rvs")     # default_rng(3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import to_numpy
from ..core.trace import is_traced

__all__ = ["numpy_generator", "is_key_data", "key_generator"]


def is_key_data(value: Any) -> bool:
    """Is ``value`` a single ``fg.random`` key (a ``uint32`` array of shape ``(2,)``)?"""
    if is_traced(value):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.uint32 and tuple(getattr(value, "shape", ())) == (2,)


def key_generator(key_data: Any) -> np.random.Generator:
    """The one seeding rule from a key to NumPy: ``default_rng`` of the key's 64 bits (high word first).

    ``key_data`` is a single key's concrete ``uint32[2]`` data (on any device).

    Example::

        key_generator(np.array([0, 3], np.uint32))        # default_rng(3)
    """
    hi, lo = (int(v) for v in np.asarray(to_numpy(key_data)).reshape(2))
    return np.random.default_rng((hi << 32) | lo)


def _typed_key_data(value: Any) -> Any:
    """The data of a typed ``fg.random`` key array (its ``__funcgrad_key_data__()``), else None."""
    unwrap = getattr(type(value), "__funcgrad_key_data__", None)
    return None if unwrap is None else unwrap(value)


def numpy_generator(random_state: Any, name: str) -> Any:
    """A NumPy generator for ``random_state``, as ``scipy.stats`` makes one (an int seeds a
    ``RandomState``), or for a ``fg.random`` key.

    Example::

        numpy_generator(0, "dirichlet.rvs")                      # RandomState(0)
        numpy_generator(fg.random.PRNGKey(0), "dirichlet.rvs")   # default_rng(0)
    """
    if random_state is None:
        return np.random.mtrand._rand
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.RandomState(random_state)
    typed = _typed_key_data(random_state)
    if typed is not None:
        random_state = typed
    if is_traced(random_state):
        raise TypeError(f"{name}: random_state is a traced value (a key inside vmap/jit/grad), but these "
                        f"draws run NumPy's generator on the host and need a concrete key; draw outside "
                        f"the transform, or use fg.random's samplers, which trace")
    if is_key_data(random_state):
        return key_generator(random_state)
    raise TypeError(f"{name}: random_state must be None, an int seed or a numpy.random.Generator (or "
                    f"RandomState), or a single fg.random key (fg.random.key(seed), or a uint32 array of shape (2,)), got "
                    f"{type(random_state).__name__}")
