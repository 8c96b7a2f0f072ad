"""The one conversion of a ``random_state`` / ``rng`` argument into a NumPy generator.

funcgrad's SciPy-side draws (``stats.dirichlet.rvs``, ``sparse.random``) run
SciPy's and NumPy's own samplers on the host, so they need a NumPy generator.
Besides SciPy's spellings (None, an int seed, a ``numpy.random.Generator`` or
``RandomState``), a ``fg.random`` key is accepted: a ``uint32`` array of shape
``(2,)`` seeds ``numpy.random.default_rng`` with the key's 64 bits (high word
first), the rule ``fg.nn.init.rng`` follows, so a key gives reproducible draws
and split keys give different ones. (These are NumPy's streams, not JAX's: for
JAX's numbers and reparameterized derivatives use ``fg.random.dirichlet``.)

Example::

    numpy_generator(fg.random.PRNGKey(3), "rvs")     # default_rng(3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import to_numpy
from ..core.trace import is_traced

__all__ = ["numpy_generator", "is_key_data"]


def is_key_data(value: Any) -> bool:
    """Is ``value`` a single ``fg.random`` key (a ``uint32`` array of shape ``(2,)``)?"""
    if is_traced(value):
        return False
    dtype = getattr(value, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.uint32 and tuple(getattr(value, "shape", ())) == (2,)


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
    if is_traced(random_state):
        raise TypeError(f"{name}: random_state is a traced value (a key inside vmap/jit/grad), but these "
                        f"draws run NumPy's generator on the host and need a concrete key; draw outside "
                        f"the transform, or use fg.random's samplers, which trace")
    if is_key_data(random_state):
        hi, lo = (int(v) for v in np.asarray(to_numpy(random_state)))
        return np.random.default_rng((hi << 32) | lo)
    raise TypeError(f"{name}: random_state must be None, an int seed or a numpy.random.Generator (or "
                    f"RandomState), or a fg.random key (a uint32 array of shape (2,)), got "
                    f"{type(random_state).__name__}")
