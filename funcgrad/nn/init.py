"""Parameter initializers, reproducible from a key, a seed or a ``numpy.random.Generator``.

Every initializer is ``init(key, shape, dtype=float32, ...) -> array``.
``key`` is a ``fg.random`` key (the numbers come from ``fg.random``, JAX's
streams, and layers given a key seed a Generator from its bits), an int seed,
a ``numpy.random.Generator`` (numbers are drawn from it, so passing one
generator to several layers in turn is reproducible) or ``None`` (fresh,
non-reproducible randomness). Fans follow PyTorch's layout:
``shape[0]`` is the number of outputs, ``shape[1]`` of inputs, and any further
axes are the receptive field of a convolution kernel.

Example::

    from funcgrad.nn import init
    w = init.kaiming_uniform(0, (128, 64))                  # He et al., for relu
    w = init.glorot_uniform(np.random.default_rng(1), (10, 128))
    w = init.glorot_normal(fg.random.PRNGKey(0), (10, 128))
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..backend import to_numpy as fg_to_numpy
from ..random.threefry import is_key, key_data
from ..scipy._random_state import key_generator

__all__ = [
    "rng", "fans", "calculate_gain", "zeros", "ones", "constant", "uniform", "normal",
    "glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "he_uniform", "he_normal", "lecun_normal", "lecun_uniform", "orthogonal",
    "torch_default",
]

Key = "int | np.random.Generator | None"


def rng(key: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a seed, a Generator (returned as is), a
    ``fg.random`` key (seeded with the key's 64 bits) or None.

    Example::

        g = fg.nn.init.rng(0)
        g = fg.nn.init.rng(fg.random.PRNGKey(3))
    """
    if isinstance(key, np.random.Generator):
        return key
    if is_key(key):
        return key_generator(key_data(key))
    if key is None or isinstance(key, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(key)
    if isinstance(key, np.random.BitGenerator):
        return np.random.Generator(key)
    raise TypeError(
        f"key must be a fg.random key, an int seed, a numpy.random.Generator or None, got {type(key).__name__}"
    )


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def fans(shape: Sequence[int]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of this shape (PyTorch convention).

    Example::

        fg.nn.init.fans((16, 3, 3, 3))   # (27, 144)
    """
    shape = _shape(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str = "relu", param: float | None = None) -> float:
    """Recommended gain for a nonlinearity (as ``torch.nn.init.calculate_gain``).

    Example::

        fg.nn.init.calculate_gain("tanh")   # 5/3
    """
    if nonlinearity in ("linear", "identity", "sigmoid") or nonlinearity.startswith("conv"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope * slope))
    if nonlinearity == "selu":
        return 3.0 / 4.0
    raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def _cast_dtype(dtype: Any) -> np.dtype:
    dt: np.dtype = np.dtype(dtype)
    if dt.kind not in "fc":
        raise TypeError(f"initializers make floating-point parameters; got dtype {dt}")
    return dt


def _cast(x: np.ndarray, dtype: Any) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise TypeError(f"initializers make floating-point parameters; got dtype {dt}")
    return np.asarray(x, dtype=dt)


def zeros(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
    """All zeros (``key`` is ignored). Example: ``init.zeros(None, (3,))``."""
    return np.zeros(_shape(shape), dtype=dtype)


def ones(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
    """All ones (``key`` is ignored). Example: ``init.ones(None, (3,))``."""
    return np.ones(_shape(shape), dtype=dtype)


def constant(value: float) -> Callable[..., np.ndarray]:
    """An initializer that fills with ``value``. Example: ``init.constant(0.1)(None, (3,))``."""

    def init(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
        return np.full(_shape(shape), value, dtype=dtype)

    return init


def uniform(key: Any, shape: Any, dtype: Any = np.float32, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """Uniform on ``[low, high)``. Example: ``init.uniform(0, (3,), low=-1, high=1)``."""
    if is_key(key):
        from ..random.continuous import uniform as draw_uniform

        drawn: np.ndarray = draw_uniform(key, _shape(shape), _cast_dtype(dtype), low, high)
        return drawn
    return _cast(rng(key).uniform(low, high, size=_shape(shape)), dtype)


def normal(key: Any, shape: Any, dtype: Any = np.float32, std: float = 1.0, mean: float = 0.0) -> np.ndarray:
    """Normal with the given mean and standard deviation. Example: ``init.normal(0, (3,), std=0.02)``."""
    if is_key(key):
        from ..random.continuous import normal as draw_normal

        scaled: np.ndarray = draw_normal(key, _shape(shape), _cast_dtype(dtype)) * std + mean
        return scaled
    return _cast(rng(key).normal(mean, std, size=_shape(shape)), dtype)


def glorot_uniform(key: Any, shape: Any, dtype: Any = np.float32, gain: float = 1.0) -> np.ndarray:
    """Glorot/Xavier uniform: ``U(-a, a)``, ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    Example::

        w = init.glorot_uniform(0, (10, 20))
    """
    fan_in, fan_out = fans(shape)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform(key, shape, dtype, -a, a)


def glorot_normal(key: Any, shape: Any, dtype: Any = np.float32, gain: float = 1.0) -> np.ndarray:
    """Glorot/Xavier normal: std ``gain * sqrt(2 / (fan_in + fan_out))``. Example: ``init.glorot_normal(0, (10, 20))``."""
    fan_in, fan_out = fans(shape)
    return normal(key, shape, dtype, gain * math.sqrt(2.0 / (fan_in + fan_out)))


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal


def _kaiming_std(shape: Any, a: float, nonlinearity: str, mode: str) -> float:
    fan_in, fan_out = fans(shape)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform(key: Any, shape: Any, dtype: Any = np.float32, a: float = 0.0,
                    nonlinearity: str = "relu", mode: str = "fan_in") -> np.ndarray:
    """Kaiming/He uniform: ``U(-b, b)``, ``b = gain * sqrt(3 / fan)`` (``a``: leaky_relu slope).

    Example::

        w = init.kaiming_uniform(0, (128, 64))
    """
    bound = math.sqrt(3.0) * _kaiming_std(shape, a, nonlinearity, mode)
    return uniform(key, shape, dtype, -bound, bound)


def kaiming_normal(key: Any, shape: Any, dtype: Any = np.float32, a: float = 0.0,
                   nonlinearity: str = "relu", mode: str = "fan_in") -> np.ndarray:
    """Kaiming/He normal: std ``gain / sqrt(fan)``. Example: ``init.kaiming_normal(0, (128, 64))``."""
    return normal(key, shape, dtype, _kaiming_std(shape, a, nonlinearity, mode))


he_uniform = kaiming_uniform
he_normal = kaiming_normal


def lecun_normal(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
    """LeCun normal: std ``1 / sqrt(fan_in)``. Example: ``init.lecun_normal(0, (10, 20))``."""
    return normal(key, shape, dtype, 1.0 / math.sqrt(fans(shape)[0]))


def lecun_uniform(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
    """LeCun uniform: ``U(-sqrt(3 / fan_in), sqrt(3 / fan_in))``. Example: ``init.lecun_uniform(0, (10, 20))``."""
    b = math.sqrt(3.0 / fans(shape)[0])
    return uniform(key, shape, dtype, -b, b)


def torch_default(key: Any, shape: Any, dtype: Any = np.float32) -> np.ndarray:
    """PyTorch's default for Linear/Conv weights: Kaiming uniform with ``a = sqrt(5)``,
    i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``. Example: ``init.torch_default(0, (10, 20))``."""
    return kaiming_uniform(key, shape, dtype, a=math.sqrt(5.0), nonlinearity="leaky_relu")


def orthogonal(key: Any, shape: Any, dtype: Any = np.float32, gain: float = 1.0) -> np.ndarray:
    """A (semi-)orthogonal matrix, trailing axes flattened (Saxe et al.).

    Example::

        w = init.orthogonal(0, (64, 64))     # w @ w.T == I
    """
    shape = _shape(shape)
    if len(shape) < 2:
        raise ValueError(f"orthogonal needs at least 2 dimensions, got shape {shape}")
    rows, cols = shape[0], int(np.prod(shape[1:]))
    size = (max(rows, cols), min(rows, cols))
    if is_key(key):
        from ..random.continuous import normal as draw_normal

        a = np.asarray(fg_to_numpy(draw_normal(key, size)))
    else:
        a = rng(key).normal(size=size)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _cast(gain * q[:rows, :cols].reshape(shape), dtype)
