"""Window functions: NumPy's ``bartlett``, ``blackman``, ``hamming``, ``hanning`` and ``kaiser``.

The window length is an integer, so the first four have no differentiable input
(they are NumPy's values); ``kaiser`` is differentiable in its shape parameter
``beta`` (through ``i0``).

Example::

    fg.grad(lambda b: fnp.sum(fnp.kaiser(8, b)))(5.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def bartlett(M: int) -> Any:
    """``numpy.bartlett``: the triangular window of ``M`` points.

    Example::

        fnp.bartlett(5)   # [0, 0.5, 1, 0.5, 0]
    """
    return np.bartlett(M)


def blackman(M: int) -> Any:
    """``numpy.blackman``: the Blackman window of ``M`` points.

    Example::

        fnp.blackman(4)
    """
    return np.blackman(M)


def hamming(M: int) -> Any:
    """``numpy.hamming``: the Hamming window of ``M`` points.

    Example::

        fnp.hamming(4)
    """
    return np.hamming(M)


def hanning(M: int) -> Any:
    """``numpy.hanning``: the Hann window of ``M`` points.

    Example::

        fnp.hanning(4)
    """
    return np.hanning(M)


def kaiser(M: int, beta: Any) -> Any:
    """``numpy.kaiser``: the Kaiser window, differentiable in ``beta``.

    Example::

        fnp.kaiser(4, 5.0)
    """
    from ..backend import namespace_of

    if not isinstance(beta, Box) and namespace_of(beta) is np:
        return np.kaiser(M, beta)
    M = int(M)
    if M < 1:
        return np.array([])
    if M == 1:
        return fnp.reshape(beta * 0.0 + 1.0, (1,))
    n = np.arange(0, M)
    alpha = (M - 1) / 2.0
    arg = np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)
    from ..backend import device_constant
    from ..core import unbox_all

    return fnp.i0(beta * device_constant(unbox_all(beta), arg)) / fnp.i0(beta)
