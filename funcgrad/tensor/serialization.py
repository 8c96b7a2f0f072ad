"""``ft.save(obj, path)`` / ``ft.load(path)``: tensors and (nested) state dicts, never pickled.

The file is a funcgrad checkpoint (``fg.save``: an ``.npz`` archive read with
``allow_pickle=False``, written atomically): one array per tensor, plus the
container structure encoded as JSON text stored in a uint8 array. So
``ft.load`` never executes code from the file (a pickle, such as a file
written by ``torch.save``, is refused), and ``ft.save`` refuses objects the
format cannot hold (anything but tensors, NumPy arrays, numbers, strings,
None, ft dtypes and dicts/lists/tuples of them) with a ``TypeError``.
``ft.load`` checks the structure as untrusted input: every entry's type and
fields, tensor indices (in range, each array used exactly once), dict keys and
nesting depth (at most ``MAX_NESTING`` containers); anything else is a
``CheckpointError`` naming the file and the key path in the structure.

Example::

    ft.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.ft")
    ckpt = ft.load("ckpt.ft")
    model.load_state_dict(ckpt["model"])
"""

from __future__ import annotations

import collections
import json
import os
import re
from typing import Any, cast

import numpy as np

from .. import backend as _backend
from .. import serialization as _ckpt
from . import dtypes as _dt
from .nn import Parameter
from .tensor import Tensor
from .tensor import device as _device

__all__ = ["save", "load"]

_FORMAT = "funcgrad.tensor/1"
_KEY_TYPES = (str, int, float, bool, type(None))


def _encode(obj: Any, arrays: list[Any], path: str) -> Any:
    if isinstance(obj, Tensor):
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
    for t, (types, encode, _, _) in _SCALARS.items():
        if isinstance(obj, types):
            return {"t": t, "v": encode(obj)}
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


MAX_NESTING = 64  # containers inside containers; state dicts nest 3 or 4 deep
_DEVICE_RE = re.compile(r"(cpu|cuda)(:[0-9]{1,4})?")
_DTYPES = {d.name: d for d in _dt._ALL}
# "t": (the Python types stored so, encode, whether a stored "v" is well-formed, decode); floats as reprs
_SCALARS: dict[str, tuple[Any, ...]] = {
    "int": ((int, np.integer), int, lambda v: type(v) is int, int),
    "float": ((float, np.floating), lambda x: repr(float(x)), lambda v: isinstance(v, str) and len(v) <= 64, float),
    "complex": ((complex, np.complexfloating), lambda x: [repr(x.real), repr(x.imag)],
                lambda v: isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) and len(x) <= 64 for x in v),
                lambda v: complex(float(v[0]), float(v[1]))),
    "dtype": (_dt.dtype, lambda x: x.name, lambda v: isinstance(v, str) and v in _DTYPES, _DTYPES.__getitem__),
}
_NODE_KEYS = {"tensor": ({"t", "i", "rg", "param"}, {"device"}), "ndarray": ({"t", "i"}, set()),
              **{t: ({"t", "v"}, set()) for t in _SCALARS},
              **{t: ({"t", "items"}, set()) for t in ("dict", "odict", "list", "tuple")}}


class _Decoder:
    """Rebuilds what :func:`save` stored from the (untrusted) structure, checking every node:
    its type and fields, the nesting depth, and that each array index is in range and used once."""

    def __init__(self, where: str, arrays: list[Any], map_location: Any):
        self.where, self.arrays, self.map_location = where, arrays, map_location
        self.used = [False] * len(arrays)

    def fail(self, at: str, what: str) -> _ckpt.CheckpointError:
        return _ckpt.CheckpointError(f"{self.where}: the structure at {at or 'the root'} {what}")

    def index(self, node: dict[Any, Any], at: str) -> np.ndarray:
        i = node["i"]
        if type(i) is not int or not 0 <= i < len(self.arrays):
            raise self.fail(at, f"refers to array {i!r:.40}, but the file holds {len(self.arrays)} "
                                f"(indices 0 to {len(self.arrays) - 1})")
        if self.used[i]:
            raise self.fail(at, f"refers to array {i} a second time; ft.save stores each tensor once")
        self.used[i] = True
        return cast("np.ndarray", self.arrays[i])

    def decode(self, node: Any, at: str, depth: int) -> Any:
        if node is None or isinstance(node, (bool, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("t"), str) or node["t"] not in _NODE_KEYS:
            raise self.fail(at, f"is a malformed entry {node!r:.80} (expected null, a boolean, a string or an "
                                f"object with a known \"t\")")
        t = node["t"]
        required, optional = _NODE_KEYS[t]
        if not required <= set(node) <= required | optional:
            raise self.fail(at, f"is a {t!r} entry with keys {sorted(node)!r:.120}; expected {sorted(required)}")
        if t in ("tensor", "ndarray"):
            return self.array(node, t, at)
        if t in _SCALARS:
            return self.scalar(node, t, at)
        if depth >= MAX_NESTING:
            raise self.fail(at, f"is nested more than {MAX_NESTING} containers deep")
        items = node["items"]
        if not isinstance(items, list):
            raise self.fail(at, f"is a {t!r} entry whose items are not a list")
        if t in ("list", "tuple"):
            seq = [self.decode(v, f"{at}[{i}]", depth + 1) for i, v in enumerate(items)]
            return seq if t == "list" else tuple(seq)
        d: dict[Any, Any] = collections.OrderedDict() if t == "odict" else {}
        for i, kv in enumerate(items):
            if not isinstance(kv, list) or len(kv) != 2:
                raise self.fail(f"{at}.items[{i}]", "must be a [key, value] pair")
            k = self.decode(kv[0], f"{at}.items[{i}][0]", depth + 1)
            if not isinstance(k, _KEY_TYPES):
                raise self.fail(f"{at}.items[{i}][0]", f"is a dict key of type {type(k).__name__}; keys are "
                                                       f"strings, numbers, booleans or None")
            if k in d:
                raise self.fail(f"{at}[{k!r:.60}]", "is a dict key that appears twice")
            d[k] = self.decode(kv[1], f"{at}[{k!r:.60}]", depth + 1)
        return d

    def array(self, node: dict[Any, Any], t: str, at: str) -> Any:
        arr = self.index(node, at)
        if t == "ndarray":
            return arr
        rg, param, dev = node["rg"], node["param"], node.get("device")
        if type(rg) is not bool or type(param) is not bool:
            raise self.fail(at, "is a tensor entry whose 'rg' and 'param' are not booleans")
        if arr.dtype not in _dt._BY_NP:
            raise self.fail(at, f"is a tensor of dtype {arr.dtype}, which funcgrad.tensor does not support")
        if rg and arr.dtype.kind not in "fc":
            raise self.fail(at, f"is a {arr.dtype} tensor marked requires_grad; only floating and complex "
                                f"tensors can require gradients")
        if dev is not None and (not isinstance(dev, str) or not _DEVICE_RE.fullmatch(dev)):
            raise self.fail(at, f"names the device {dev!r:.40}; expected 'cpu', 'cuda' or 'cuda:N'")
        value = _placed(arr, dev, self.map_location)
        if param:
            return Parameter(Tensor._make(value), requires_grad=rg)
        return Tensor._make(value, requires_grad=rg)

    def scalar(self, node: dict[Any, Any], t: str, at: str) -> Any:
        v = node["v"]
        _, _, well_formed, decode = _SCALARS[t]
        try:
            if well_formed(v):
                return decode(v)
        except ValueError:
            pass
        raise self.fail(at, f"is a malformed {t!r} entry (value {v!r:.60})")


def save(obj: Any, f: str | os.PathLike[str], pickle_module: Any = None, **_: Any) -> None:
    """Save tensors / (nested) state dicts to ``f`` (a path) in a safe, pickle-free format.

    Example::

        ft.save(model.state_dict(), "model.ft")
    """
    if pickle_module is not None:
        raise TypeError("ft.save never pickles; pickle_module is not supported")
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ft.save(obj, f): f must be a file path, got {type(f).__name__}")
    arrays: list[Any] = []
    structure = _encode(obj, arrays, "")
    text = json.dumps({"format": _FORMAT, "structure": structure}).encode("utf-8")
    if len(text) > _ckpt.MAX_METADATA_BYTES:  # load would refuse it
        raise ValueError(f"ft.save: the structure takes {len(text)} bytes of JSON, over the "
                         f"{_ckpt.MAX_METADATA_BYTES}-byte limit of the format; save it in several files")
    _ckpt.save(f, {"structure": np.frombuffer(text, dtype=np.uint8), "tensors": arrays})


def load(f: str | os.PathLike[str], map_location: Any = None, weights_only: bool = True, **_: Any) -> Any:
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
    where = f"ft.load: {os.fspath(f)}"
    flat = _ckpt.load(f)
    skey = "['structure']"
    if skey not in flat:
        raise _ckpt.CheckpointError(f"{where} is a funcgrad checkpoint but not one written by ft.save "
                                    f"(use fg.load for functional checkpoints)")
    n = len(flat) - 1
    names = {skey} | {f"['tensors'][{i}]" for i in range(n)}
    if set(flat) != names:
        extra = sorted(set(flat) - names)
        raise _ckpt.CheckpointError(f"{where}: unexpected arrays {extra[:5]!r:.200} in a file written by ft.save")
    raw = flat[skey]
    if raw.dtype != np.uint8 or raw.ndim != 1 or raw.size > _ckpt.MAX_METADATA_BYTES:
        raise _ckpt.CheckpointError(f"{where}: the structure must be a 1-D uint8 array of at most "
                                    f"{_ckpt.MAX_METADATA_BYTES} bytes (JSON text), got {raw.dtype} {raw.shape}")
    meta = _ckpt.parse_json(raw.tobytes(), f"{where}: the structure")
    if not isinstance(meta, dict) or set(meta) != {"format", "structure"} or meta["format"] != _FORMAT:
        fmt = meta.get("format") if isinstance(meta, dict) else None
        raise _ckpt.CheckpointError(f"{where}: unknown format {fmt!r:.60} (expected an object with "
                                    f"format {_FORMAT!r} and a structure)")
    decoder = _Decoder(where, [flat[f"['tensors'][{i}]"] for i in range(n)], map_location)
    out = decoder.decode(meta["structure"], "", 0)
    if not all(decoder.used):
        raise _ckpt.CheckpointError(f"{where}: the file holds {decoder.used.count(False)} arrays that its "
                                    f"structure never refers to; ft.save never writes such a file")
    return out
