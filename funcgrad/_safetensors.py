"""The safetensors format, read strictly and written exactly, on NumPy arrays.

A file is an 8-byte little-endian header length ``N``, ``N`` bytes of JSON
(``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
"__metadata__": {str: str}}``, padded with spaces) and the data buffer, each
tensor's bytes at ``[begin, end)`` of it, little-endian, C order.

:func:`read` checks the file as untrusted input before allocating anything:
the header length against the file size and a 100 MB cap (safetensors' own),
JSON without duplicate keys, every entry's fields, dtype and shape, offsets
that tile the buffer exactly (no gaps, no overlaps, nothing after) and sizes
that match shape and dtype. Each array is then allocated once and filled from
the file. bfloat16 is upcast to float32 with a warning (NumPy has no
bfloat16). :func:`write` lays tensors out in the order given, 8-byte aligned.

Example::

    write(f, {"w": np.ones((2, 3), np.float32)}, {"epoch": "3"})
    arrays, metadata = read(f, "model.safetensors")
"""

from __future__ import annotations

import json
import os
import struct
import warnings
from typing import IO, Any

import numpy as np

from ._npz_reader import CheckpointError, check_shape, parse_json

__all__ = ["read", "write", "is_safetensors", "MAX_HEADER_BYTES", "DTYPES"]

MAX_HEADER_BYTES = 100 * 2**20
DTYPES: dict[str, np.dtype[Any]] = {
    "BOOL": np.dtype("?"), "U8": np.dtype("u1"), "I8": np.dtype("i1"), "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"), "I32": np.dtype("<i4"), "U32": np.dtype("<u4"), "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"), "F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"), "BF16": np.dtype("<u2"),
}
_NAMES = {v: k for k, v in DTYPES.items() if k != "BF16"}
_CHUNK = 1 << 24


def is_safetensors(head: bytes) -> bool:
    """Whether ``head`` (the first 9+ bytes of a file) starts like a safetensors file."""
    return len(head) >= 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] <= MAX_HEADER_BYTES


def write(f: IO[bytes], arrays: dict[str, Any], metadata: dict[str, str] | None = None) -> None:
    """Write ``{name: array}`` (host arrays of the dtypes in :data:`DTYPES`) and ``metadata``."""
    header: dict[str, Any] = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("safetensors metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    offset = 0
    prepared = []
    for name, arr in arrays.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise TypeError(f"safetensors: tensor names must be strings other than '__metadata__', got {name!r:.60}")
        a = np.asarray(arr, order="C")
        code = _NAMES.get(a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype)
        if code is None:
            raise TypeError(f"safetensors: the tensor {name!r} has dtype {a.dtype}, which the format cannot hold")
        a = a.astype(DTYPES[code], copy=False)
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        prepared.append(a)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > MAX_HEADER_BYTES:
        raise ValueError(f"safetensors: the header takes {len(text)} bytes, over the {MAX_HEADER_BYTES}-byte limit")
    f.write(struct.pack("<Q", len(text)) + text)
    for a in prepared:
        data = a.reshape(-1).view(np.uint8).data
        for pos in range(0, len(data), _CHUNK):
            f.write(data[pos:pos + _CHUNK])


def _fail(where: str, what: str) -> CheckpointError:
    return CheckpointError(f"{where}: {what}")


def read(f: IO[bytes], where: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``({name: array}, metadata)`` from the safetensors file ``f`` (names in the order of their data),
    checked as described above."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    head = f.read(8)
    if len(head) != 8:
        raise _fail(where, f"is not a safetensors file (only {len(head)} bytes)")
    (n,) = struct.unpack("<Q", head)
    if n > MAX_HEADER_BYTES or n > size - 8:
        raise _fail(where, f"claims a {n}-byte header, but the file has {size} bytes (and the format allows at "
                           f"most {MAX_HEADER_BYTES}); it is truncated, corrupted or not a safetensors file")
    text = f.read(n)
    if not text.startswith(b"{"):
        raise _fail(where, "the header does not start with '{'; not a safetensors file")
    header = parse_json(text.rstrip(b" "), f"{where}: the header")
    if not isinstance(header, dict):
        raise _fail(where, "the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _fail(where, "__metadata__ must map strings to strings")
    buffer = size - 8 - n
    entries = []
    for name, e in header.items():
        at = f"{where}: tensor {name!r:.80}"
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise _fail(at, "must be an object with exactly dtype, shape and data_offsets")
        code = e["dtype"]
        if code not in DTYPES:
            raise _fail(at, f"has dtype {code!r:.20}; funcgrad reads {', '.join(DTYPES)}")
        shape = check_shape(e["shape"], f"{at}: shape")
        offs = e["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1] <= buffer):
            raise _fail(at, f"has data_offsets {offs!r:.60}; expected [begin, end] within the {buffer}-byte buffer")
        nbytes = DTYPES[code].itemsize * int(np.prod(shape, dtype=object))
        if offs[1] - offs[0] != nbytes:
            raise _fail(at, f"spans {offs[1] - offs[0]} bytes, but shape {list(shape)} of {code} needs {nbytes}")
        entries.append((offs[0], offs[1], name, code, shape))
    entries.sort(key=lambda x: (x[0], x[1]))
    end = 0
    for begin, stop, name, _, _ in entries:
        if begin != end:
            raise _fail(where, f"tensor {name!r:.80} starts at byte {begin} of the buffer, but the previous one ends "
                               f"at {end}; the tensors must tile the buffer")
        end = stop
    if end != buffer:
        raise _fail(where, f"the tensors cover {end} bytes of a {buffer}-byte buffer; the file is truncated, "
                           f"padded or crafted")
    arrays: dict[str, np.ndarray] = {}
    warned = False
    for begin, _, name, code, shape in entries:  # in the order of the data
        arr = np.empty(shape, DTYPES[code])
        view = arr.reshape(-1).view(np.uint8).data
        f.seek(8 + n + begin)
        got = 0
        while got < len(view):
            k = f.readinto(view[got:got + _CHUNK])  # type: ignore[attr-defined]
            if not k:
                raise _fail(where, f"the file is truncated inside tensor {name!r:.80}")
            got += k
        if code == "BF16":
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
            if not warned:
                warnings.warn(f"{where}: bfloat16 tensors are upcast to float32 (exactly)", stacklevel=3)
                warned = True
        arrays[name] = arr
    return arrays, metadata
