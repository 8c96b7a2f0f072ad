"""What the Tensor factories use when not told otherwise: the random generator (``ft.Generator``,
``ft.manual_seed``) and the default device (``ft.set_default_device``).

A module of its own, below ``tensor.py``: the in-place samplers (``x.uniform_()``) and ``x.bernoulli()``
draw from the generator, while ``creation.py``, which makes Tensors, sits above ``tensor.py``.

Example::

    from funcgrad.tensor.factory_defaults import Generator
    g = Generator().manual_seed(0)          # ft.Generator
"""

from __future__ import annotations

import builtins
from typing import Any, cast

import numpy as np

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed"]


class Generator:
    """A random generator (NumPy's PCG64), like ``torch.Generator``.

    Example::

        g = ft.Generator().manual_seed(0)
        ft.randn(3, generator=g)
    """

    def __init__(self, device: Any = "cpu"):
        self._seed = 67280421310721
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> "Generator":
        seed = builtins.int(seed)
        self._seed = seed
        self._rng = np.random.default_rng(seed & 0xFFFFFFFFFFFFFFFF)
        return self

    def seed(self) -> int:
        s = builtins.int(cast(Any, np.random.SeedSequence().entropy)) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict[Any, Any]:
        return cast("dict[Any, Any]", self._rng.bit_generator.state)

    def set_state(self, state: dict[Any, Any]) -> "Generator":
        self._rng.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (``ft.rand``, ``ft.randn``, module initialisation ...)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def _rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng


_DEFAULT_DEVICE: list[Any] = [None]  # ft.set_default_device: where factories put tensors made without device=
