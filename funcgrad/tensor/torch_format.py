"""PyTorch weight files (``torch.save``'s formats): read them safely, write the zip format.

Reading (:func:`read_torch_file`) accepts

* the zip format of ``torch.save`` (PyTorch >= 1.6): a stored zip with
  ``<archive>/data.pkl`` (the pickle), ``<archive>/data/<key>`` (each storage's
  raw bytes), ``<archive>/byteorder`` and ``<archive>/version``;
* the legacy format (``_use_new_zipfile_serialization=False``): five pickles in
  a row (magic number, protocol 1001, system info, the object, the storage
  keys) followed by each storage as an int64 element count and its bytes.

The pickle goes through :mod:`funcgrad.tensor.torch_pickle`'s restricted
unpickler; then :class:`Builder` turns its records into tensors: every storage
is one NumPy array (its size checked against the bytes the file holds before it
is allocated, its CRC checked), and every tensor is a view of its storage's
array (offset, sizes and strides checked against the storage's length), so
tensors that shared a storage in PyTorch share memory here. bfloat16 storages
are upcast to float32 with a warning (funcgrad.tensor has no bfloat16).

Writing (:func:`write_torch_file`) produces the zip format with the same pickle
subset, so ``torch.load(path, weights_only=True)`` reads it; each tensor gets
its own contiguous storage, aligned to 64 bytes as PyTorch aligns them.
"""

from __future__ import annotations

import collections
import io
import os
import pickletools
import re
import struct
import warnings
import zipfile
import zlib
from typing import IO, Any, Callable

import numpy as np

from .. import _npz_reader as _npz
from .._npz_reader import CheckpointError
from . import dtypes as _dt
from . import torch_pickle as tp
from .nn import Parameter
from .. import backend as _backend
from .tensor import Size, Tensor
from .tensor import device as _device

__all__ = ["placed", "is_zip", "is_legacy", "read_torch_file", "write_torch_file", "MAX_NESTING"]

MAX_NESTING = 64  # containers inside containers; state dicts nest 3 or 4 deep
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]{1,200}")
_DEVICE_RE = re.compile(r"(cpu|cuda)(:[0-9]{1,4})?")
_KEY_TYPES = (str, int, float, bool, type(None))
_CHUNK = 1 << 24
_STORAGE_NAMES = {np.dtype(v[0]): k for k, v in tp.STORAGE_DTYPES.items() if k != "BFloat16Storage"}
_TORCH_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                      "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def is_legacy(head: bytes) -> bool:
    """The legacy format starts with the pickled magic number (protocol 2, LONG1 of 10 bytes)."""
    return head[:4] == b"\x80\x02\x8a\x0a"


# ------------------------------------------------------------------------------------------- reading


def placed(arr: np.ndarray, saved_device: str | None, map_location: Any) -> Any:
    """The array on the device PyTorch's rules give: ``map_location`` (a device, a string, a dict
    from saved to wanted device strings, or a function ``(cpu tensor, saved location) -> tensor``,
    like ``lambda storage, loc: storage``) if given, else the device it was saved from."""
    dev = saved_device or "cpu"
    if isinstance(map_location, dict):
        dev = map_location.get(dev, dev)
    elif callable(map_location) and not isinstance(map_location, (str, _device)):
        moved = map_location(Tensor._make(arr), dev)
        if not isinstance(moved, Tensor):
            raise TypeError(f"ft.load: map_location returned a {type(moved).__name__}; a function map_location "
                            f"must return the tensor (storage) it is given, possibly moved to another device")
        return moved._value
    elif map_location is not None:
        dev = map_location
    d = _device(dev)
    if d.type == "cpu":
        return arr
    from .size_device import _backend_device

    return _backend.device_put(arr, _backend_device(d))


def _read_exact_into(f: IO[bytes], offset: int, arr: np.ndarray, where: str) -> int:
    """Fill ``arr`` from ``f`` at ``offset`` in chunks; returns the CRC-32 of the bytes read."""
    view = memoryview(arr.reshape(-1).view(np.uint8).data)
    f.seek(offset)
    crc, pos = 0, 0
    while pos < len(view):
        got = f.readinto(view[pos:pos + _CHUNK])  # type: ignore[attr-defined]
        if not got:
            raise CheckpointError(f"{where}: the file is truncated (a storage ends {len(view) - pos} bytes early)")
        crc = zlib.crc32(view[pos:pos + got], crc)
        pos += got
    return crc


class Builder:
    """Turns the unpickled records into tensors, parameters and containers, checking every one.

    ``storage_of(ref)`` returns the NumPy array of a storage (read once per key). Shared
    structure stays shared (each record is converted once), so a pickle of repeated references
    costs its size, not its unfolded size.
    """

    def __init__(self, where: str, storage_of: Callable[[tp.StorageRef], np.ndarray], map_location: Any):
        self.where, self.storage_of, self.map_location = where, storage_of, map_location
        self.done: dict[int, Any] = {}
        self.keep: list[Any] = []  # keeps converted records alive so their ids stay unique

    def fail(self, at: str, what: str) -> CheckpointError:
        return CheckpointError(f"{self.where}: the object at {at or 'the root'} {what}")

    def build(self, obj: Any, at: str = "", depth: int = 0) -> Any:
        if obj is None or type(obj) in (bool, int, float, complex, str, bytes):
            return obj
        if id(obj) in self.done:
            return self.done[id(obj)]
        out = self.convert(obj, at, depth)
        self.done[id(obj)] = out
        self.keep.append(obj)
        return out

    def convert(self, obj: Any, at: str, depth: int) -> Any:
        if isinstance(obj, tp.TensorRecord):
            return self.tensor(obj, at)
        if isinstance(obj, tp.ParameterRecord):
            data = obj.data
            if not isinstance(data, tp.TensorRecord) or type(obj.requires_grad) is not bool:
                raise self.fail(at, "is a Parameter whose data is not a tensor")
            t = self.tensor(data, at, requires_grad=False)
            if obj.requires_grad and t.dtype.np.kind not in "fc":
                raise self.fail(at, f"is a {t.dtype.name} Parameter marked requires_grad; only floating and "
                                    f"complex tensors can require gradients")
            return Parameter(t, requires_grad=obj.requires_grad)
        if isinstance(obj, tp.SizeRecord):
            dims = obj.dims
            if not isinstance(dims, tuple) or not all(type(d) is int and d >= 0 for d in dims):
                raise self.fail(at, "is a torch.Size of something other than non-negative integers")
            return Size(dims)
        if isinstance(obj, tp.DtypeRecord):
            return self.dtype(obj.name, at)
        if isinstance(obj, (tp.StorageRef, tp.StorageTypeRecord)):
            raise self.fail(at, "is a bare storage; funcgrad.tensor loads tensors, not storages")
        if isinstance(obj, (dict, list, tuple)):
            if depth >= MAX_NESTING:
                raise self.fail(at, f"is nested more than {MAX_NESTING} containers deep")
            if isinstance(obj, dict):
                out: dict[Any, Any] = (collections.OrderedDict() if isinstance(obj, tp.MappingRecord) else
                                       collections.Counter() if isinstance(obj, tp.CounterRecord) else {})
                for k, v in obj.items():
                    if type(k) not in _KEY_TYPES:
                        raise self.fail(at, f"is a dict with a key of type {type(k).__name__}; keys must be "
                                            f"strings, numbers, booleans or None")
                    out[k] = self.build(v, f"{at}[{k!r:.60}]", depth + 1)
                return out
            items = [self.build(v, f"{at}[{i}]", depth + 1) for i, v in enumerate(obj)]
            return items if isinstance(obj, list) else tuple(items)
        raise self.fail(at, f"is a {type(obj).__name__} ({obj!r:.60}), which a weight file never holds")

    def dtype(self, name: str, at: str) -> _dt.dtype:
        name = _TORCH_DTYPE_NAMES.get(name, name)
        if name == "bfloat16":
            warnings.warn(f"{self.where}: torch.bfloat16 is read as ft.float32 (funcgrad.tensor has no bfloat16)",
                          stacklevel=4)
            return _dt.float32
        return _dt._by_name(name)

    def tensor(self, rec: tp.TensorRecord, at: str, requires_grad: bool | None = None) -> Tensor:
        ref = rec.storage
        if not isinstance(ref, tp.StorageRef):
            raise self.fail(at, "is a tensor whose storage is not a persistent storage reference")
        offset, size, stride = rec.offset, rec.size, rec.stride
        if isinstance(size, tp.SizeRecord):
            size = size.dims
        if (type(offset) is not int or offset < 0 or not isinstance(size, tuple) or not isinstance(stride, tuple)
                or len(size) != len(stride) or len(size) > tp.MAX_NDIM
                or not all(type(v) is int and 0 <= v < 2**48 for v in size + stride)):
            raise self.fail(at, f"is a tensor with a malformed offset, size or stride ({offset!r:.40}, {size!r:.80}, "
                                f"{stride!r:.80}): expected a non-negative offset and as many non-negative sizes "
                                f"as strides (at most {tp.MAX_NDIM})")
        rg = rec.requires_grad if requires_grad is None else requires_grad
        if type(rg) is not bool:
            raise self.fail(at, "is a tensor whose requires_grad is not a boolean")
        storage = self.storage_of(ref)
        if 0 in size:
            value = np.empty(size, dtype=storage.dtype)
        else:
            last = offset + sum((n - 1) * s for n, s in zip(size, stride))
            if last >= storage.size:
                raise self.fail(at, f"is a tensor reaching element {last} of storage {ref.key!r:.40}, which holds "
                                    f"{storage.size}; the file is corrupted or crafted")
            item = storage.dtype.itemsize
            value = np.lib.stride_tricks.as_strided(storage[offset:], shape=size,
                                                    strides=tuple(s * item for s in stride))
        if rg and value.dtype.kind not in "fc":
            raise self.fail(at, f"is a {value.dtype} tensor marked requires_grad; only floating and complex tensors "
                                f"can require gradients")
        return Tensor._make(placed(value, ref.location, self.map_location), requires_grad=rg)


class _Storages:
    """Each storage key's array, read once; the key's type and size must agree everywhere."""

    def __init__(self, where: str, read: Callable[[str, np.dtype, int], np.ndarray]):
        self.where, self.read = where, read
        self.arrays: dict[str, np.ndarray] = {}
        self.types: dict[str, str] = {}
        self.warned = False

    def check_ref(self, pid: Any) -> tp.StorageRef:
        if not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage":
            raise CheckpointError(f"{self.where}: the pickle has a persistent id {pid!r:.100} that is not a "
                                  f"('storage', type, key, location, numel) reference")
        stype, key, location, numel = pid[1:5]
        view = pid[5] if len(pid) == 6 else None
        if not isinstance(stype, tp.StorageTypeRecord):
            raise CheckpointError(f"{self.where}: a storage reference names the type {stype!r:.60}, not one of "
                                  f"torch's storage types ({', '.join(tp.STORAGE_DTYPES)})")
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            raise CheckpointError(f"{self.where}: a storage key {key!r:.60} is not a short name of letters and "
                                  f"digits")
        if not isinstance(location, str) or not _DEVICE_RE.fullmatch(location):
            raise CheckpointError(f"{self.where}: storage {key!r} was saved on {location!r:.40}; funcgrad reads "
                                  f"storages saved on 'cpu' or 'cuda[:N]'")
        if type(numel) is not int or numel < 0:
            raise CheckpointError(f"{self.where}: storage {key!r} has the element count {numel!r:.40}")
        if self.types.setdefault(key, stype.name) != stype.name:
            raise CheckpointError(f"{self.where}: storage {key!r} is read as both {self.types[key]} and "
                                  f"{stype.name}; the file is corrupted or crafted")
        return tp.StorageRef(stype.name, key, location, numel, view)

    def array(self, ref: tp.StorageRef) -> np.ndarray:
        if ref.view is not None:
            return self.legacy_view(ref)
        got = self.arrays.get(ref.key)
        if got is None:
            raw_dtype, name = tp.STORAGE_DTYPES[ref.storage_type]
            got = self.read(ref.key, raw_dtype, ref.numel)
            if name == "bfloat16":
                got = (got.astype(np.uint32) << 16).view(np.float32)
                if not self.warned:
                    warnings.warn(f"{self.where}: bfloat16 tensors are upcast to float32 (funcgrad.tensor has "
                                  f"no bfloat16); every value is kept exactly", stacklevel=5)
                    self.warned = True
            self.arrays[ref.key] = got
        if got.size != ref.numel:
            raise CheckpointError(f"{self.where}: storage {ref.key!r} holds {got.size} elements, but the pickle "
                                  f"says {ref.numel}")
        return got

    def legacy_view(self, ref: tp.StorageRef) -> np.ndarray:
        view = ref.view
        if (not isinstance(view, tuple) or len(view) != 3 or type(view[1]) is not int or type(view[2]) is not int
                or view[1] < 0 or view[2] < 0 or view[1] + view[2] > ref.numel):
            raise CheckpointError(f"{self.where}: storage {ref.key!r} has a malformed view {view!r:.80}")
        base = self.array(ref._replace(view=None))
        return base[view[1]:view[1] + view[2]]


def _archive_members(f: IO[bytes], size: int, where: str) -> tuple[str, dict[str, _npz.Member]]:
    members = _npz.read_directory(f, size, where, foreign=True)
    pickles = [n for n in members if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise CheckpointError(f"{where} is a zip archive but not a torch.save file (expected exactly one "
                              f"'<archive>/data.pkl', found {len(pickles)})")
    prefix = pickles[0][:-len("data.pkl")]
    stray = [n for n in members if not n.startswith(prefix)]
    if stray:
        raise CheckpointError(f"{where}: members {stray[:3]!r:.200} lie outside the archive folder {prefix!r}")
    return prefix, members


def _read_zip(f: IO[bytes], size: int, where: str, map_location: Any) -> Any:
    prefix, members = _archive_members(f, size, where)
    order = members.get(prefix + "byteorder")
    byteorder = "little"
    if order is not None:
        byteorder = _npz.read_member_bytes(f, order, f"{where}: member 'byteorder'").decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise CheckpointError(f"{where}: the byteorder member says {byteorder!r:.20}; expected little or big")
    pkl = members[prefix + "data.pkl"]
    if pkl.size > tp.MAX_PICKLE_BYTES:
        raise CheckpointError(f"{where}: the pickle is {pkl.size} bytes, over the {tp.MAX_PICKLE_BYTES}-byte limit")
    data = _npz.read_member_bytes(f, pkl, f"{where}: member 'data.pkl'")

    def read(key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        m = members.get(f"{prefix}data/{key}")
        mwhere = f"{where}: storage {key!r}"
        if m is None:
            raise CheckpointError(f"{mwhere} is referred to by the pickle but missing from the archive")
        if m.size != numel * dtype.itemsize:
            raise CheckpointError(f"{mwhere} holds {m.size} bytes, but the pickle says {numel} elements of "
                                  f"{dtype.itemsize} bytes; the file is truncated, corrupted or crafted")
        arr = np.empty(numel, dtype=dtype)
        if _read_exact_into(f, m.offset, arr, mwhere) != m.crc:
            raise CheckpointError(f"{mwhere}: CRC mismatch: the file is corrupted")
        return arr.byteswap(inplace=True) if byteorder == "big" and dtype.itemsize > 1 else arr

    storages = _Storages(where, read)
    obj = tp.read_pickle(data, storages.check_ref, where)
    return Builder(where, storages.array, map_location).build(obj)


def _next_pickle(f: IO[bytes], where: str, what: str) -> Any:
    """The next pickle of a legacy file (at most MAX_PICKLE_BYTES are read ahead); ``f`` is left after it."""
    start = f.tell()
    head = f.read(tp.MAX_PICKLE_BYTES + 1)
    buf = io.BytesIO(head)
    try:
        for op, _, _ in pickletools.genops(buf):
            pass
    except Exception as e:
        raise CheckpointError(f"{where}: the {what} pickle is truncated or malformed ({e!s:.120})") from None
    end = buf.tell()
    f.seek(start + end)
    return head[:end]


def _read_legacy(f: IO[bytes], size: int, where: str, map_location: Any) -> Any:
    def refuse_pid(pid: Any) -> Any:
        raise CheckpointError(f"{where}: a header pickle of the legacy format refers to a storage")

    magic = tp.read_pickle(_next_pickle(f, where, "magic number"), refuse_pid, where)
    if magic != LEGACY_MAGIC:
        raise CheckpointError(f"{where} is not a torch.save file (wrong magic number)")
    protocol = tp.read_pickle(_next_pickle(f, where, "protocol"), refuse_pid, where)
    if protocol != LEGACY_PROTOCOL:
        raise CheckpointError(f"{where}: legacy torch.save protocol {protocol!r:.20}; funcgrad reads {LEGACY_PROTOCOL}")
    info = tp.read_pickle(_next_pickle(f, where, "system info"), refuse_pid, where)
    if not isinstance(info, dict) or info.get("little_endian") is not True:
        raise CheckpointError(f"{where}: the file was written on a big-endian machine or its system info is "
                              f"malformed; funcgrad reads little-endian legacy files")
    main = _next_pickle(f, where, "object")
    refs: dict[str, tp.StorageRef] = {}
    storages = _Storages(where, lambda key, dtype, numel: arrays[key])

    def remember(pid: Any) -> tp.StorageRef:
        ref = storages.check_ref(pid)
        known = refs.setdefault(ref.key, ref._replace(view=None))
        if known.numel != ref.numel:
            raise CheckpointError(f"{where}: storage {ref.key!r} is given two sizes ({known.numel}, {ref.numel})")
        return ref

    obj = tp.read_pickle(main, remember, where)
    keys = tp.read_pickle(_next_pickle(f, where, "storage keys"), refuse_pid, where)
    if not isinstance(keys, list) or sorted(keys, key=str) != sorted(refs, key=str):
        raise CheckpointError(f"{where}: the list of storage keys does not match the storages the object uses")
    arrays: dict[str, np.ndarray] = {}
    for key in keys:
        ref = refs[key]
        dtype = tp.STORAGE_DTYPES[ref.storage_type][0]
        head = f.read(8)
        if len(head) != 8:
            raise CheckpointError(f"{where}: the file is truncated before storage {key!r}")
        (numel,) = struct.unpack("<q", head)
        if numel != ref.numel or numel * dtype.itemsize > size - f.tell():
            raise CheckpointError(f"{where}: storage {key!r} claims {numel} elements ({ref.numel} in the pickle; "
                                  f"{size - f.tell()} bytes left in the file); the file is truncated or crafted")
        arr = np.empty(numel, dtype=dtype)
        _read_exact_into(f, f.tell(), arr, f"{where}: storage {key!r}")
        arrays[key] = arr
    if f.tell() != size:
        raise CheckpointError(f"{where}: {size - f.tell()} unexpected bytes after the last storage")
    return Builder(where, storages.array, map_location).build(obj)


def read_torch_file(f: IO[bytes], where: str, map_location: Any) -> Any:
    """The object a ``torch.save`` file (zip or legacy, at ``f``'s start) holds; see the module doc."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    head = f.read(4)
    if is_zip(head):
        return _read_zip(f, size, where, map_location)
    if is_legacy(head):
        f.seek(0)
        return _read_legacy(f, size, where, map_location)
    raise CheckpointError(f"{where} is not a torch.save file (neither the zip nor the legacy format)")


# ------------------------------------------------------------------------------------------- writing


class _Encoder:
    """Writes ``obj``'s pickle and collects the storages: one contiguous array per tensor."""

    def __init__(self) -> None:
        self.w = tp.PickleWriter()
        self.storages: list[np.ndarray] = []
        self.keys: dict[int, str] = {}
        self.keep: list[Any] = []

    def encode(self, obj: Any, path: str) -> None:
        w = self.w
        if obj is None:
            w.none()
        elif isinstance(obj, bool):
            w.bool_(obj)
        elif isinstance(obj, (int, np.integer)):
            w.int_(int(obj))
        elif isinstance(obj, (float, np.floating)):
            w.float_(float(obj))
        elif isinstance(obj, (complex, np.complexfloating)):
            w.global_("builtins", "complex")
            w.mark()
            w.float_(float(obj.real))
            w.float_(float(obj.imag))
            w.tuple_end()
            w.reduce()
        elif isinstance(obj, str):
            w.str_(obj)
        elif isinstance(obj, _dt.dtype):
            w.global_("torch", obj.name)
        elif isinstance(obj, Size):
            w.global_("torch", "Size")
            w.mark()
            w.mark()
            self.ints(obj)
            w.tuple_end()
            w.tuple_end()
            w.reduce()
        elif isinstance(obj, Parameter):
            w.global_("torch._utils", "_rebuild_parameter")
            w.mark()
            self.tensor(obj, False)
            w.bool_(obj.requires_grad)
            w.empty_ordered_dict()
            w.tuple_end()
            w.reduce()
        elif isinstance(obj, Tensor):
            self.tensor(obj, bool(obj.requires_grad and obj.is_leaf))
        elif isinstance(obj, collections.Counter):  # Counter(dict): how pickle writes it
            w.global_("collections", "Counter")
            w.mark()
            self.encode(dict(obj), path)
            w.tuple_end()
            w.reduce()
        elif isinstance(obj, dict):
            if isinstance(obj, collections.OrderedDict):
                w.empty_ordered_dict()
            else:
                w.empty_dict()
            if obj:
                w.mark()
                for k, v in obj.items():
                    if not isinstance(k, _KEY_TYPES):
                        raise TypeError(f"ft.save: dict key {k!r:.60} at {path or 'the root'} is a {type(k).__name__}; "
                                        f"keys must be strings, numbers, booleans or None")
                    self.encode(k, path)
                    self.encode(v, f"{path}[{k!r}]")
                w.setitems()
        elif isinstance(obj, list):
            w.empty_list()
            if obj:
                w.mark()
                for i, v in enumerate(obj):
                    self.encode(v, f"{path}[{i}]")
                w.appends()
        elif isinstance(obj, tuple):
            w.mark()
            for i, v in enumerate(obj):
                self.encode(v, f"{path}[{i}]")
            w.tuple_end()
        else:
            what = "NumPy array (convert it with ft.from_numpy)" if isinstance(obj, np.ndarray) else type(obj).__name__
            raise TypeError(
                f"ft.save cannot store the {what} at {path or 'the root'}: the format holds tensors, numbers, "
                f"strings, None, dtypes, torch.Size and (nested) dicts, lists and tuples of them, as "
                f"torch.load(weights_only=True) reads them. Arbitrary objects (modules, optimizers, functions) "
                f"are never pickled: save their state_dict() instead.")

    def ints(self, values: Any) -> None:
        for v in values:
            self.w.int_(int(v))

    def tensor(self, t: Tensor, requires_grad: bool) -> None:
        w = self.w
        key = self.keys.get(id(t))
        arr = np.asarray(t.detach().numpy(force=True), order="C")  # to the host; 0-d stays 0-d
        if key is None:
            key = str(len(self.storages))
            self.keys[id(t)] = key
            self.keep.append(t)
            self.storages.append(arr.reshape(-1))
        name = _STORAGE_NAMES.get(arr.dtype)
        if name is None:
            raise TypeError(f"ft.save: tensors of dtype {arr.dtype} cannot be written in PyTorch's format")
        location = "cpu" if t.device.type == "cpu" else str(t.device)
        w.global_("torch._utils", "_rebuild_tensor_v2")
        w.mark()
        w.mark()
        w.str_("storage")
        w.global_("torch", name)
        w.str_(key)
        w.str_(location)
        w.int_(arr.size)
        w.tuple_end()
        w.persid()
        w.int_(0)
        w.mark()
        self.ints(arr.shape)
        w.tuple_end()
        strides, step = [], 1
        for n in reversed(arr.shape):
            strides.append(step)
            step *= n
        w.mark()
        self.ints(reversed(strides))
        w.tuple_end()
        w.bool_(requires_grad)
        w.empty_ordered_dict()
        w.tuple_end()
        w.reduce()


def _padded_info(zf: zipfile.ZipFile, name: str, size: int) -> zipfile.ZipInfo:
    """A stored member whose data starts on a 64-byte boundary (padding in the local extra field,
    as PyTorch writes it), so mmap-style readers can map each storage."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
    start = zf.fp.tell() if zf.fp is not None else 0
    header = 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
    pad = (-(start + header)) % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    return info


def write_torch_file(obj: Any, f: IO[bytes], archive: str = "archive") -> None:
    """Write ``obj`` to the binary file ``f`` in torch.save's zip format."""
    enc = _Encoder()
    enc.encode(obj, "")
    enc.w.stop()
    if len(enc.w.getvalue()) > tp.MAX_PICKLE_BYTES:  # ft.load would refuse it: never write what cannot be read back
        raise ValueError(f"ft.save: the structure pickles to {len(enc.w.getvalue())} bytes, over the "
                         f"{tp.MAX_PICKLE_BYTES}-byte limit of ft.load; save it in several files")
    records: list[tuple[str, Any]] = [("data.pkl", enc.w.getvalue()), (".format_version", b"1"),
                                      (".storage_alignment", b"64"), ("byteorder", b"little")]
    records += [(f"data/{i}", arr) for i, arr in enumerate(enc.storages)]
    records += [("version", b"3\n")]
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, payload in records:
            data = memoryview(payload.view(np.uint8).data if isinstance(payload, np.ndarray) else payload)
            info = _padded_info(zf, f"{archive}/{name}", data.nbytes)
            with zf.open(info, "w", force_zip64=data.nbytes * 1.05 > zipfile.ZIP64_LIMIT) as member:
                for pos in range(0, data.nbytes, _CHUNK):
                    member.write(data[pos:pos + _CHUNK])
