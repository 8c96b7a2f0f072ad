"""The pickles inside PyTorch weight files: a restricted reader and a small writer.

``torch.save`` stores a pickle whose only globals are a handful of PyTorch
rebuild functions (``torch._utils._rebuild_tensor_v2``, ``_rebuild_parameter``),
storage types (``torch.FloatStorage``, ...), ``torch.Size``, dtypes and
```collections.OrderedDict`` (and ``Counter``); the tensors' bytes live outside the pickle, named
by persistent ids ``('storage', storage_type, key, location, numel)``.

:func:`read_pickle` reads such a pickle without ever importing or calling
anything but the stand-ins below: :class:`RestrictedUnpickler` maps each
allowed global to a local function that only builds a plain record (a
:class:`StorageRef`, :class:`TensorRecord`, ...), and refuses every other
global, naming it. Before unpickling, every opcode is checked
(:func:`check_opcodes`): only the binary opcodes ``torch.save`` emits, memo
indices that grow one at a time (so the unpickler's memo table stays as small
as the file), bounded integers, bounded size. Nothing from the file is
executed.

:class:`PickleWriter` emits the same subset (protocol 2), so files written by
``ft.save`` read in ``torch.load(weights_only=True)``.

Example::

    refs = []
    obj = read_pickle(data, lambda pid: refs.append(pid) or pid, "ft.load: model.pt")
"""

from __future__ import annotations

import collections
import io
import pickle
import pickletools
import struct
from typing import Any, Callable, NamedTuple, cast

import numpy as np

from .._npz_reader import CheckpointError

__all__ = ["STORAGE_DTYPES", "StorageRef", "TensorRecord", "ParameterRecord", "SizeRecord", "RestrictedUnpickler",
           "check_opcodes", "read_pickle", "PickleWriter", "MAX_PICKLE_BYTES"]

MAX_PICKLE_BYTES = 32 * 2**20  # a state dict of 100k tensors pickles to ~20 MB
MAX_LONG_BYTES = 16  # integers in weight files are sizes, strides, steps: 8 bytes suffice
MAX_NDIM = 64

# storage type name -> (NumPy dtype of the stored bytes, dtype name in PyTorch)
STORAGE_DTYPES: dict[str, tuple[np.dtype[Any], str]] = {
    "FloatStorage": (np.dtype("<f4"), "float32"), "DoubleStorage": (np.dtype("<f8"), "float64"),
    "HalfStorage": (np.dtype("<f2"), "float16"), "BFloat16Storage": (np.dtype("<u2"), "bfloat16"),
    "LongStorage": (np.dtype("<i8"), "int64"), "IntStorage": (np.dtype("<i4"), "int32"),
    "ShortStorage": (np.dtype("<i2"), "int16"), "CharStorage": (np.dtype("i1"), "int8"),
    "ByteStorage": (np.dtype("u1"), "uint8"), "BoolStorage": (np.dtype("?"), "bool"),
    "ComplexFloatStorage": (np.dtype("<c8"), "complex64"), "ComplexDoubleStorage": (np.dtype("<c16"), "complex128"),
}
_DTYPE_NAMES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "complex64", "complex128", "float", "double", "half", "long", "int", "short", "cfloat", "cdouble"}

# the binary opcodes torch.save's pickles use (protocols 2 to 4); text opcodes (quadratic integer parsing),
# object construction (INST, OBJ, NEWOBJ), extension codes and sets are refused
_ALLOWED_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE",
    "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "BINFLOAT",
    "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "BINSTRING", "SHORT_BINSTRING",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT", "MEMOIZE",
    "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "BINPERSID",
})


class StorageRef(NamedTuple):
    """A persistent id: storage ``key`` of ``numel`` elements of ``storage_type`` saved on ``location``."""
    storage_type: str
    key: str
    location: str
    numel: int
    view: Any  # the legacy format's (view key, offset, size) or None


class TensorRecord:
    __slots__ = ("storage", "offset", "size", "stride", "requires_grad")

    def __init__(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad = requires_grad


class ParameterRecord:
    __slots__ = ("data", "requires_grad")

    def __init__(self, data: Any, requires_grad: Any):
        self.data, self.requires_grad = data, requires_grad


class SizeRecord:
    __slots__ = ("dims",)

    def __init__(self, dims: Any):
        self.dims = dims


class DtypeRecord(NamedTuple):
    name: str


class StorageTypeRecord(NamedTuple):
    name: str


# The stand-ins raise ValueError for bad arguments: read_pickle turns it into a CheckpointError naming the file.
class MappingRecord(collections.OrderedDict):  # type: ignore[type-arg]
    """``collections.OrderedDict`` as the pickle builds it; BUILD may only attach ``_metadata``
    (PyTorch's per-module versions), which is dropped."""

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) - {"_metadata"}:
            raise ValueError("an OrderedDict in the pickle is given attributes other than _metadata")


class CounterRecord(dict):  # type: ignore[type-arg]
    """``collections.Counter`` as the pickle builds it (a scheduler's milestones)."""


def _counter(mapping: Any = None) -> CounterRecord:
    if mapping is not None and not isinstance(mapping, dict):
        raise ValueError("collections.Counter in the pickle is built from something other than a dict")
    return CounterRecord(mapping or {})


def _rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                       backward_hooks: Any = None, metadata: Any = None) -> TensorRecord:
    return TensorRecord(storage, offset, size, stride, requires_grad)


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any) -> TensorRecord:
    return TensorRecord(storage, offset, size, stride, False)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> ParameterRecord:
    return ParameterRecord(data, requires_grad)


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> ParameterRecord:
    return ParameterRecord(data, requires_grad)


def _size(dims: Any = ()) -> SizeRecord:
    return SizeRecord(dims)


def _latin1_bytes(text: Any, encoding: Any = "utf-8") -> bytes:
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise ValueError("_codecs.encode in the pickle is used for something other than bytes")
    return text.encode("latin1")


def _complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise ValueError("builtins.complex in the pickle is given something other than two numbers")
    return complex(real, imag)


def _allowed_global(module: str, name: str) -> Any:
    if module == "collections" and name == "OrderedDict":
        return MappingRecord
    if module == "collections" and name == "Counter":
        return _counter
    if module == "torch._utils":
        found = {"_rebuild_tensor_v2": _rebuild_tensor_v2, "_rebuild_tensor": _rebuild_tensor,
                 "_rebuild_parameter": _rebuild_parameter,
                 "_rebuild_parameter_with_state": _rebuild_parameter_with_state}.get(name)
        if found is not None:
            return found
    if module == "torch":
        if name in STORAGE_DTYPES:
            return StorageTypeRecord(name)
        if name == "Size":
            return _size
        if name in _DTYPE_NAMES:
            return DtypeRecord(name)
    if (module, name) == ("_codecs", "encode"):
        return _latin1_bytes
    if (module, name) == ("builtins", "complex"):
        return _complex
    return None


def _refused_global(where: str, module: Any, name: Any) -> CheckpointError:
    return CheckpointError(
        f"{where}: the pickle refers to the global {module!s:.100}.{name!s:.100}, which is not one of the tensor, "
        f"storage, Size, dtype and container names a weight file needs; refusing it (nothing from the file is "
        f"ever executed; save a state_dict() of tensors instead)")


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the globals of PyTorch weight files, each to a local stand-in that builds a record."""

    def __init__(self, file: Any, persistent_load: Callable[[Any], Any], where: str):
        super().__init__(file, encoding="ASCII")
        self._persistent_load = persistent_load
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed_global(str(module), str(name))
        if found is None:
            raise _refused_global(self.where, module, name)
        return found

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent_load(pid)


def check_opcodes(data: bytes, where: str) -> None:
    """Refuse a pickle with opcodes outside the binary subset, memo indices that skip ahead (the
    C unpickler sizes its memo table by the largest index), or integers longer than 16 bytes."""
    if len(data) > MAX_PICKLE_BYTES:
        raise CheckpointError(f"{where}: the pickle is {len(data)} bytes, over the {MAX_PICKLE_BYTES}-byte limit "
                              f"(a weight file's pickle holds only its structure)")
    memo = 0
    try:
        for op, raw_arg, pos in pickletools.genops(io.BytesIO(data)):
            name, arg = op.name, cast(Any, raw_arg)
            if name not in _ALLOWED_OPCODES:
                raise CheckpointError(f"{where}: the pickle uses the opcode {name} at byte {pos}, which torch.save "
                                      f"never writes; refusing it")
            if name == "GLOBAL":  # named before any opcode that would use it
                module, _, attr = str(arg).partition(" ")
                if _allowed_global(module, attr) is None:
                    raise _refused_global(where, module, attr)
            elif name in ("BINPUT", "LONG_BINPUT"):
                if not 0 <= arg <= memo:
                    raise CheckpointError(f"{where}: the pickle stores memo entry {arg} at byte {pos} when only "
                                          f"{memo} exist; refusing a crafted memo")
                memo = max(memo, arg + 1)
            elif name == "MEMOIZE":
                memo += 1
            elif name in ("BINGET", "LONG_BINGET") and not 0 <= arg < memo:
                raise CheckpointError(f"{where}: the pickle reads memo entry {arg} at byte {pos}, which was never "
                                      f"stored")
            elif name in ("LONG1", "LONG4") and (arg.bit_length() + 8) // 8 > MAX_LONG_BYTES:
                raise CheckpointError(f"{where}: the pickle holds a {arg.bit_length()}-bit integer at byte {pos}; "
                                      f"refusing integers over {8 * MAX_LONG_BYTES} bits")
    except CheckpointError:
        raise
    except Exception as e:  # truncated or malformed opcode stream
        raise CheckpointError(f"{where}: the pickle is truncated or malformed ({type(e).__name__}: "
                              f"{e!s:.200})") from None


def read_pickle(data: bytes, persistent_load: Callable[[Any], Any], where: str) -> Any:
    """Unpickle ``data`` (one pickle, after :func:`check_opcodes`) with the restricted unpickler;
    every failure is a :class:`CheckpointError` starting with ``where``."""
    check_opcodes(data, where)
    try:
        return RestrictedUnpickler(io.BytesIO(data), persistent_load, where).load()
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(f"{where}: the pickle is nested too deeply") from None
    except MemoryError:
        raise CheckpointError(f"{where}: the pickle is too large to read") from None
    except Exception as e:  # UnpicklingError, a stand-in called with the wrong arguments, BUILD on a tuple, ...
        raise CheckpointError(f"{where}: the pickle is malformed ({type(e).__name__}: {e!s:.200})") from None


class PickleWriter:
    """Protocol-2 pickle opcodes for the objects a weight file holds; ``torch.load`` reads them.

    Example::

        w = PickleWriter(); w.ordered_dict([("a", 1)]); w.stop(); data = w.getvalue()
    """

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.out.write(b"\x80\x02")  # PROTO 2

    def op(self, code: bytes) -> None:
        self.out.write(code)

    def global_(self, module: str, name: str) -> None:
        self.out.write(b"c" + module.encode("ascii") + b"\n" + name.encode("ascii") + b"\n")

    def none(self) -> None:
        self.op(b"N")

    def bool_(self, v: bool) -> None:
        self.op(b"\x88" if v else b"\x89")

    def int_(self, v: int) -> None:
        if 0 <= v < 256:
            self.out.write(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            self.out.write(b"M" + struct.pack("<H", v))
        elif -2**31 <= v < 2**31:
            self.out.write(b"J" + struct.pack("<i", v))
        else:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            self.out.write(b"\x8a" + bytes([len(raw)]) + raw)  # LONG1

    def float_(self, v: float) -> None:
        self.out.write(b"G" + struct.pack(">d", v))

    def str_(self, v: str) -> None:
        raw = v.encode("utf-8", "surrogatepass")
        self.out.write(b"X" + struct.pack("<I", len(raw)) + raw)

    def mark(self) -> None:
        self.op(b"(")

    def tuple_end(self) -> None:
        self.op(b"t")

    def empty_tuple(self) -> None:
        self.op(b")")

    def reduce(self) -> None:
        self.op(b"R")

    def empty_list(self) -> None:
        self.op(b"]")

    def appends(self) -> None:
        self.op(b"e")

    def empty_dict(self) -> None:
        self.op(b"}")

    def setitems(self) -> None:
        self.op(b"u")

    def persid(self) -> None:
        self.op(b"Q")

    def empty_ordered_dict(self) -> None:
        self.global_("collections", "OrderedDict")
        self.empty_tuple()
        self.reduce()

    def stop(self) -> None:
        self.op(b".")

    def getvalue(self) -> bytes:
        return self.out.getvalue()
