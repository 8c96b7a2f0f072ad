"""Rearrangements computed on labels: NumPy does the index bookkeeping, funcgrad the gather.

A function that only moves, repeats or drops elements (``insert``, ``resize``,
``block``, ``put``, ``fill_diagonal`` ...) is run by NumPy on *label* arrays:
each input element is replaced by its position in the concatenation of all
the inputs' flattened elements. The labels that come out say, for every output
element, which input element it is; one differentiable gather then builds the
output from the (possibly traced) inputs. NumPy's own semantics (broadcasting,
negative indices, modes, wrapping) hold by construction, and derivatives, vmap
and devices come from ``getitem`` and ``concatenate``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ._util import dtype, shape

__all__ = ["label_arrays", "gather"]


def label_arrays(arrays: Sequence[Any]) -> list[np.ndarray]:
    """One int64 label array per input, shaped like it, numbered consecutively."""
    out, start = [], 0
    for a in arrays:
        s = tuple(shape(a))
        n = int(np.prod(s, dtype=np.int64))
        out.append(np.arange(start, start + n, dtype=np.int64).reshape(s))
        start += n
    return out


def gather(arrays: Sequence[Any], labels: np.ndarray, out_dtype: Any = None) -> Any:
    """The array whose element ``i`` is element ``labels[i]`` of the flattened inputs."""
    if out_dtype is None:
        out_dtype = np.result_type(*[dtype(a) for a in arrays])
    flat = [fnp.reshape(fnp.astype(fnp.asarray(a), out_dtype) if dtype(a) != out_dtype else a, (-1,))
            for a in arrays]
    source = flat[0] if len(flat) == 1 else fnp.concatenate(flat)
    labels = np.asarray(labels)
    if labels.size == 0:
        return fnp.reshape(source[np.zeros(0, dtype=np.int64)], labels.shape)
    return source[labels]


def relabel(fn: Callable[..., np.ndarray], arrays: Sequence[Any], out_dtype: Any = None) -> Any:
    """``fn(*label_arrays)`` (NumPy on labels), then the gather from ``arrays``."""
    return gather(arrays, fn(*label_arrays(arrays)), out_dtype)
