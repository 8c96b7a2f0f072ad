"""``ft.safetensors``: the ``safetensors.torch`` API (``save_file``, ``load_file``, ``save``,
``load``) on funcgrad tensors.

The format and the checks on reading are in :mod:`funcgrad._safetensors`:
nothing in the file is executed, sizes and offsets are checked against the
file before memory is allocated, and a damaged or crafted file is a
``CheckpointError`` naming the file and the tensor. bfloat16 tensors are read
as float32 (with a warning); unsigned 16/32/64-bit tensors, which
funcgrad.tensor has no dtype for, are refused by name.

Example::

    ft.safetensors.save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(ft.safetensors.load_file("model.safetensors"))
"""

from __future__ import annotations

import io
import os
from typing import IO, Any

import numpy as np

from .. import _safetensors
from ..serialization import CheckpointError, atomic_write
from . import dtypes as _dt
from .tensor import Tensor
from .torch_format import placed

__all__ = ["save_file", "load_file", "save", "load"]


def _host_arrays(tensors: dict[str, Any]) -> dict[str, np.ndarray]:
    if not isinstance(tensors, dict):
        raise TypeError(f"safetensors: expected a dict of tensors, got {type(tensors).__name__}")
    out = {}
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"safetensors: the value for {name!r:.60} is a {type(t).__name__}; only tensors can be "
                            f"saved (use the metadata for strings)")
        out[name] = np.asarray(t.detach().numpy(force=True), order="C")
    return out


def _tensors(arrays: dict[str, np.ndarray], where: str, device: Any) -> dict[str, Tensor]:
    out = {}
    for name, arr in arrays.items():
        if arr.dtype not in _dt._BY_NP:
            raise CheckpointError(f"{where}: tensor {name!r:.80} has dtype {arr.dtype}, which funcgrad.tensor does "
                                  f"not support")
        out[name] = Tensor._make(placed(arr, "cpu", device))
    return out


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike[str],
              metadata: dict[str, str] | None = None) -> None:
    """Write ``{name: tensor}`` to ``filename`` (atomically) in the safetensors format.

    Example::

        ft.safetensors.save_file({"w": ft.ones(2)}, "w.safetensors", metadata={"step": "3"})
    """
    arrays = _host_arrays(tensors)
    atomic_write(filename, lambda f: _safetensors.write(f, arrays, metadata))


def load_file(filename: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Tensor]:
    """The ``{name: tensor}`` of a safetensors file, on ``device``.

    Example::

        sd = ft.safetensors.load_file("model.safetensors")
    """
    where = f"safetensors.load_file: {os.fspath(filename)}"
    with open(filename, "rb") as f:
        arrays, _ = _safetensors.read(f, where)
    return _tensors(arrays, where, device)


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``{name: tensor}``.

    Example::

        data = ft.safetensors.save({"w": ft.ones(2)})
    """
    buffer = io.BytesIO()
    _safetensors.write(buffer, _host_arrays(tensors), metadata)
    return buffer.getvalue()


def load(data: bytes) -> dict[str, Tensor]:
    """The ``{name: tensor}`` of safetensors ``data`` (bytes).

    Example::

        ft.safetensors.load(ft.safetensors.save({"w": ft.ones(2)}))["w"]
    """
    stream: IO[bytes] = io.BytesIO(data)
    arrays, _ = _safetensors.read(stream, "safetensors.load")
    return _tensors(arrays, "safetensors.load", "cpu")
