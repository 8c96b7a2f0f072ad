"""``ft.save(obj, f)`` / ``ft.load(f)``: PyTorch's weight files, read without ever unpickling code.

``ft.save`` writes the zip format of ``torch.save`` (``torch.load(path,
weights_only=True)`` reads it; see :mod:`funcgrad.tensor.torch_format`):
tensors, Parameters, numbers, strings, None, dtypes, ``ft.Size`` and nested
dicts/OrderedDicts/lists/tuples of them; anything else is a ``TypeError``
(modules, optimizers and functions are never pickled: save their
``state_dict()``).

``ft.load`` reads files written by ``torch.save`` (zip and legacy formats),
by ``ft.save``, and by ``ft.save`` of earlier funcgrad versions (a funcgrad
checkpoint, ``.npz``). PyTorch's pickle is read by a restricted unpickler
that resolves only the names a weight file needs and refuses any other
global, naming it; every size, offset and CRC is checked before memory is
allocated, so a crafted or damaged file is a ``CheckpointError`` naming the
file and what was wrong, never code execution or a memory blow-up.

Example::

    ft.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.pt")
    ckpt = ft.load("ckpt.pt")
    model.load_state_dict(ckpt["model"])
"""

from __future__ import annotations

import collections
import json
import os
import re
from typing import IO, Any, cast

import numpy as np

from .. import _npz_reader as _npz
from .. import serialization as _ckpt
from . import dtypes as _dt
from .nn import Parameter
from .tensor import Tensor
from . import torch_format

__all__ = ["save", "load"]

_FORMAT = "funcgrad.tensor/1"
_KEY_TYPES = (str, int, float, bool, type(None))


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
        value = torch_format.placed(arr, dev, self.map_location)
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


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None,
         _use_new_zipfile_serialization: bool = True, **_: Any) -> None:
    """Save tensors / (nested) state dicts to ``f`` (a path or a writable binary file) in
    torch.save's zip format; a path is written atomically (a temporary file renamed over it).

    Example::

        ft.save(model.state_dict(), "model.pt")   # torch.load("model.pt", weights_only=True) reads it
    """
    if pickle_module is not None:
        raise TypeError("ft.save writes only the safe subset of pickle torch.load(weights_only=True) reads; "
                        "pickle_module is not supported")
    if not _use_new_zipfile_serialization:
        raise ValueError("ft.save writes only the zip format (_use_new_zipfile_serialization=True)")
    if isinstance(f, (str, os.PathLike)):
        # (a TypeError midway removes the temporary file: the previous file, if any, stays)
        _ckpt.atomic_write(f, lambda out: torch_format.write_torch_file(obj, out))
    elif hasattr(f, "write"):
        torch_format.write_torch_file(obj, f)
    else:
        raise TypeError(f"ft.save(obj, f): f must be a file path or a writable binary file, got {type(f).__name__}")


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, weights_only: bool = True,
         **_: Any) -> Any:
    """Load a file written by ``torch.save`` (zip or legacy format) or ``ft.save``; ``f`` is a path or
    a readable, seekable binary file. Never executes code from the file: any global but the tensor,
    storage, Size, dtype and OrderedDict names of a weight file is refused with
    ``funcgrad.serialization.CheckpointError`` naming it.

    Tensors go to the device they were saved from, as in PyTorch, unless
    ``map_location`` says otherwise: a device (``"cpu"``, ``"cuda:1"``) for all of
    them, or a dict such as ``{"cuda:0": "cpu"}``. bfloat16 tensors are read as
    float32 (with a warning); views of one storage share memory.

    Example::

        model.load_state_dict(ft.load("model.pt", map_location="cpu"))
    """
    if isinstance(f, (str, os.PathLike)):
        where = f"ft.load: {os.fspath(f)}"
        with open(f, "rb") as fh:
            head = fh.read(4)
            if torch_format.is_legacy(head) or (torch_format.is_zip(head) and not _is_funcgrad_checkpoint(fh)):
                return torch_format.read_torch_file(fh, where, map_location)
        if head[:1] == b"\x80":
            raise _ckpt.CheckpointError(f"{where} is a plain pickle, not a torch.save file; funcgrad never loads "
                                        f"arbitrary pickles (they can run code)")
        return _load_funcgrad_checkpoint(f, where, map_location)
    if hasattr(f, "read") and hasattr(f, "seek"):
        return torch_format.read_torch_file(f, "ft.load: <file object>", map_location)
    raise TypeError(f"ft.load(f): f must be a file path or a readable binary file, got {type(f).__name__}")


def _is_funcgrad_checkpoint(f: IO[bytes]) -> bool:
    """Whether the zip at ``f`` names the metadata member of fg.save (earlier ft.save files)."""
    f.seek(0, os.SEEK_END)
    members = _npz.read_directory(f, f.tell(), "ft.load", foreign=True)
    return _ckpt._META in members


def _load_funcgrad_checkpoint(f: str | os.PathLike[str], where: str, map_location: Any) -> Any:
    """A file ``ft.save`` wrote before it wrote PyTorch's format (a funcgrad checkpoint)."""
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
    meta = _npz.parse_json(raw.tobytes(), f"{where}: the structure")
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
