"""``ft.save(obj, path)`` / ``ft.load(path)``: tensors and (nested) state dicts, never pickled.

The file is a funcgrad checkpoint (``fg.save``: an ``.npz`` archive read with
``allow_pickle=False``, written atomically): one array per tensor, plus the
container structure encoded as JSON text stored in a uint8 array. So
``ft.load`` never executes code from the file (a pickle, such as a file
written by ``torch.save``, is refused), and ``ft.save`` refuses objects the
format cannot hold (anything but tensors, NumPy arrays, numbers, strings,
None, ft dtypes and dicts/lists/tuples of them) with a ``TypeError``.

Example::

    ft.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.ft")
    ckpt = ft.load("ckpt.ft")
    model.load_state_dict(ckpt["model"])
"""

from __future__ import annotations

import collections
import json
import os
from typing import Any

import numpy as np

from .. import backend as _backend
from .. import serialization as _ckpt
from .. import tree_util
from . import dtypes as _dt
from .tensor import Tensor
from .tensor import device as _device

__all__ = ["save", "load"]

_FORMAT = "funcgrad.tensor/1"
_KEY_TYPES = (str, int, float, bool, type(None))


def _encode(obj: Any, arrays: list, path: str) -> Any:
    if isinstance(obj, Tensor):
        from .nn import Parameter

        arrays.append(np.array(obj.detach().numpy(force=True), copy=True))  # a device tensor: copied to the host
        node = {"t": "tensor", "i": len(arrays) - 1, "rg": bool(obj.requires_grad and obj.is_leaf),
                "param": isinstance(obj, Parameter)}
        if obj.device.type != "cpu":
            node["device"] = str(obj.device)
        return node
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject or obj.dtype.kind not in "biufc":
            raise TypeError(f"ft.save: the array at {path or 'the root'} has dtype {obj.dtype}, which cannot be saved "
                            f"safely (only boolean, integer, floating and complex arrays)")
        arrays.append(np.array(obj, copy=True))
        return {"t": "ndarray", "i": len(arrays) - 1}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return {"t": "int", "v": int(obj)}
    if isinstance(obj, (float, np.floating)):
        return {"t": "float", "v": repr(float(obj))}
    if isinstance(obj, (complex, np.complexfloating)):
        return {"t": "complex", "v": [repr(obj.real), repr(obj.imag)]}
    if isinstance(obj, _dt.dtype):
        return {"t": "dtype", "v": obj.name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, _KEY_TYPES):
                raise TypeError(f"ft.save: dict key {k!r} at {path or 'the root'} is a {type(k).__name__}; keys must "
                                f"be strings, numbers, booleans or None")
            items.append([_encode(k, arrays, path), _encode(v, arrays, f"{path}[{k!r}]")])
        return {"t": "odict" if isinstance(obj, collections.OrderedDict) else "dict", "items": items}
    if isinstance(obj, (list, tuple)):
        return {"t": "list" if isinstance(obj, list) else "tuple",
                "items": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(
        f"ft.save cannot store the {type(obj).__name__} at {path or 'the root'}: the format holds tensors, NumPy "
        f"arrays, numbers, strings, None and (nested) dicts, lists and tuples of them. It never pickles, so "
        f"arbitrary objects (modules, optimizers, functions) cannot be saved: save their state_dict() instead."
    )


def _placed(arr: np.ndarray, saved_device: str | None, map_location: Any) -> Any:
    """The array on the device PyTorch's rules give: ``map_location`` (a device, a string, or a
    dict from saved to wanted device strings) if given, else the device it was saved from."""
    dev = saved_device or "cpu"
    if isinstance(map_location, dict):
        dev = map_location.get(dev, dev)
    elif map_location is not None:
        dev = map_location
    if callable(dev) and not isinstance(dev, (str, _device)):
        raise TypeError("ft.load: map_location as a function is not supported; pass a device, a string or a dict")
    d = _device(dev)
    if d.type == "cpu":
        return arr
    from .tensor import _fg_device

    return _backend.device_put(arr, _fg_device(d))


def _decode(node: Any, arrays: list, map_location: Any = None) -> Any:
    if node is None or isinstance(node, (bool, str)):
        return node
    if not isinstance(node, dict) or "t" not in node:
        raise _ckpt.CheckpointError(f"ft.load: malformed structure entry {node!r}")
    t = node["t"]
    if t == "tensor":
        arr = _placed(arrays[node["i"]], node.get("device"), map_location)
        if node.get("param"):
            from .nn import Parameter

            return Parameter(Tensor._make(arr), requires_grad=node.get("rg", True))
        return Tensor._make(arr, requires_grad=bool(node.get("rg")))
    if t == "ndarray":
        return arrays[node["i"]]
    if t == "int":
        return int(node["v"])
    if t == "float":
        return float(node["v"])
    if t == "complex":
        return complex(float(node["v"][0]), float(node["v"][1]))
    if t == "dtype":
        return _dt.as_dtype(np.dtype(node["v"])) if node["v"] != "bool" else _dt.bool
    if t in ("dict", "odict"):
        d = collections.OrderedDict() if t == "odict" else {}
        for k, v in node["items"]:
            d[_decode(k, arrays, map_location)] = _decode(v, arrays, map_location)
        return d
    if t == "list":
        return [_decode(v, arrays, map_location) for v in node["items"]]
    if t == "tuple":
        return tuple(_decode(v, arrays, map_location) for v in node["items"])
    raise _ckpt.CheckpointError(f"ft.load: unknown entry type {t!r} in the structure")


def save(obj: Any, f: str | os.PathLike, pickle_module: Any = None, **_: Any) -> None:
    """Save tensors / (nested) state dicts to ``f`` (a path) in a safe, pickle-free format.

    Example::

        ft.save(model.state_dict(), "model.ft")
    """
    if pickle_module is not None:
        raise TypeError("ft.save never pickles; pickle_module is not supported")
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ft.save(obj, f): f must be a file path, got {type(f).__name__}")
    arrays: list = []
    structure = _encode(obj, arrays, "")
    text = json.dumps({"format": _FORMAT, "structure": structure}).encode("utf-8")
    _ckpt.save(f, {"structure": np.frombuffer(text, dtype=np.uint8), "tensors": arrays})


def _key(*path: Any) -> str:
    (pairs, _) = tree_util.tree_flatten_with_path({path[0]: [0] * (path[1] + 1)} if len(path) > 1 else {path[0]: 0})
    return tree_util.keystr(pairs[-1][0])


def load(f: str | os.PathLike, map_location: Any = None, weights_only: bool = True, **_: Any) -> Any:
    """Load what :func:`save` wrote. Never unpickles: a pickle (or any file crafted to run code) is
    refused with ``funcgrad.serialization.CheckpointError`` before anything in it is interpreted.

    Tensors go back to the device they were saved from, as in PyTorch, unless
    ``map_location`` says otherwise: a device (``"cpu"``, ``"cuda:1"``) for all of
    them, or a dict such as ``{"cuda:0": "cpu"}``.

    Example::

        model.load_state_dict(ft.load("model.ft"))
    """
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ft.load(f): f must be a file path, got {type(f).__name__}")
    flat = _ckpt.load(f)
    skey = _key("structure")
    if skey not in flat:
        raise _ckpt.CheckpointError(f"ft.load: {os.fspath(f)} is a funcgrad checkpoint but not one written by ft.save "
                                    f"(use fg.load for functional checkpoints)")
    meta = json.loads(bytes(flat[skey].astype(np.uint8)).decode("utf-8"))
    if meta.get("format") != _FORMAT:
        raise _ckpt.CheckpointError(f"ft.load: unknown format {meta.get('format')!r}")
    arrays = []
    i = 0
    while True:
        k = _key("tensors", i)
        if k not in flat:
            break
        arrays.append(flat[k])
        i += 1
    return _decode(meta["structure"], arrays, map_location)
