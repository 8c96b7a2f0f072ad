"""Safe checkpoints of pytrees: ``fg.save(path, tree)`` and ``fg.load(path, like=tree)``.

Format: an uncompressed ``.npz`` archive (readable by ``numpy.load``) with one
``.npy`` member per leaf (``leaf_00000.npy``, ...) and a JSON member
``__funcgrad__.json`` that records the format version, each leaf's key path
(e.g. ``.layers[0].weight``), shape and dtype, and the tree structure as text.

Safety (the format and the rules are in docs/nn.md, "File format"):

* loading never unpickles or evaluates anything: ``.npy`` headers are parsed
  by a fixed pattern and only boolean, integer, floating and complex dtypes
  are accepted, so a crafted file cannot execute code;
* the archive is read by a strict reader (``funcgrad._npz_reader``) that
  accepts only what ``save`` writes (stored members, unique names, laid end to
  end, local headers agreeing with the central directory) and checks every
  offset and size against the file's real size, and every leaf's size from the
  metadata against its member, before any array is allocated; each array is
  allocated once and filled from the file, so memory stays at the data the
  file really holds;
* every member is checked (CRC-32, ``.npy`` header, shape and dtype against
  the metadata) and the metadata's every field is type- and range-checked, so
  a truncated, corrupted or crafted file gives a :class:`CheckpointError`
  naming the file, the member or metadata key path and what is wrong;
* with ``like=``, the stored tree must match ``like``'s structure, key paths,
  shapes and dtypes; a mismatch names the key path;
* ``save`` writes to a temporary file in the same directory, flushes it to
  disk and renames it over ``path`` (``os.replace``, atomic on POSIX and
  Windows), so a crash mid-save leaves the previous checkpoint intact.

Example::

    fg.save("ckpt.npz", {"model": model, "opt": opt_state, "step": np.array(step)})
    restored = fg.load("ckpt.npz", like={"model": model, "opt": opt_state, "step": np.array(0)})
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from typing import IO, Any, Callable, NamedTuple

import numpy as np

from . import _npz_reader as _npz
from . import _safetensors
from . import tree_util
from ._npz_reader import CheckpointError, parse_json
from .backend import device_of, namespace_of, put_array, to_numpy
from .core import Box

__all__ = ["save", "load", "CheckpointError", "atomic_write"]

FORMAT = "funcgrad-checkpoint"
VERSION = 1
_META = "__funcgrad__.json"
_PY_SCALARS = (bool, int, float, complex)


MAX_METADATA_BYTES = 64 * 2**20  # like safetensors' 100 MB header limit: JSON costs ~10-25x its size in memory
_META_KEYS = {"format", "version", "num_leaves", "leaves", "treedef"}
_ENTRY_KEYS = {"path", "shape", "dtype"}
_PY_TYPE_NAMES = (None, "bool", "int", "float", "complex")


def _leaf_name(i: int) -> str:
    return f"leaf_{i:05d}"


def _to_host(path: str, x: Any) -> np.ndarray:
    if isinstance(x, Box):
        raise TypeError(
            f"fg.save: the leaf at {path or 'the root'} is a traced value; save concrete arrays, "
            f"outside of grad/jvp/vmap"
        )
    if isinstance(x, _PY_SCALARS) or isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
    elif hasattr(x, "shape") and hasattr(x, "dtype"):
        arr = np.asarray(to_numpy(x))
    else:
        raise TypeError(
            f"fg.save: the leaf at {path or 'the root'} is a {type(x).__name__}; checkpoints hold only "
            f"arrays and numbers (put configuration in the tree structure, e.g. fg.nn.static_field)"
        )
    if arr.dtype.hasobject or arr.dtype.kind not in "biufc":
        raise TypeError(
            f"fg.save: the leaf at {path or 'the root'} has dtype {arr.dtype}; only boolean, integer, "
            f"floating and complex arrays can be saved safely"
        )
    return arr


def save(path: str | os.PathLike[str], tree: Any, *, format: str = "npz") -> None:  # noqa: A002
    """Write the pytree ``tree`` of arrays to ``path`` atomically (an ``.npz`` file, or with
    ``format="safetensors"`` a safetensors file whose tensor names are the leaves' key paths).

    Leaves must be arrays (NumPy, CuPy: copied to the host) or Python numbers;
    the tree's containers and static fields (module configuration) are not
    stored: :func:`load` takes them from ``like``. The file is written to a
    temporary name beside ``path`` and renamed over it only when complete.

    Example::

        fg.save("model.npz", model)
        fg.save("model.safetensors", model, format="safetensors")
    """
    if format not in ("npz", "safetensors"):
        raise ValueError(f"fg.save: format must be 'npz' or 'safetensors', got {format!r:.40}")
    path = os.fspath(path)
    pairs, treedef = tree_util.tree_flatten_with_path(tree)
    arrays = []
    entries = []
    for i, (kp, leaf) in enumerate(pairs):
        key = tree_util.keystr(kp)
        arr = _to_host(key, leaf)
        arrays.append(arr)
        entries.append({"path": key, "shape": list(arr.shape), "dtype": arr.dtype.str,
                        "python_type": type(leaf).__name__ if type(leaf) in _PY_SCALARS else None})
    meta = {"format": FORMAT, "version": VERSION, "num_leaves": len(arrays), "leaves": entries,
            "treedef": repr(treedef)}
    if format == "safetensors":
        _save_safetensors(path, entries, arrays)
        return
    meta_text = json.dumps(meta)
    if len(meta_text) > MAX_METADATA_BYTES:  # load would refuse it: never write what cannot be read back
        raise ValueError(f"fg.save: the tree's metadata ({len(arrays)} leaves) takes {len(meta_text)} bytes, over "
                         f"the {MAX_METADATA_BYTES}-byte limit of the format; save the tree in several files")

    def write(f: IO[bytes]) -> None:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            zf.writestr(_META, meta_text)
            for i, arr in enumerate(arrays):
                with zf.open(_leaf_name(i) + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)

    atomic_write(path, write)


def _save_safetensors(path: str, entries: list[dict[str, Any]], arrays: list[np.ndarray]) -> None:
    named = {}
    for e, arr in zip(entries, arrays):
        if e["path"] in named:
            raise ValueError(f"fg.save: two leaves have the key path {e['path']!r:.100}; safetensors names each "
                             f"tensor by its key path, so save this tree with format='npz'")
        named[e["path"]] = arr
    metadata = {"format": FORMAT, "version": str(VERSION)}
    atomic_write(path, lambda f: _safetensors.write(f, named, metadata))


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, flush it to disk and rename it over
    ``path`` (atomic on POSIX and Windows): a crash mid-save leaves the previous file intact."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + ".", suffix=".partial", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Entry(NamedTuple):
    path: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


def _check_meta(meta: Any, where: str) -> list[_Entry]:
    """The leaves the (untrusted) metadata describes, after checking every field's type and range."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{where} is not a funcgrad checkpoint (no valid metadata: the member {_META!r} "
                              f"must be a JSON object with \"format\": {FORMAT!r})")
    version = meta.get("version")
    if type(version) is not int or version != VERSION:
        raise CheckpointError(f"{where} has checkpoint format version {version!r:.40}; this funcgrad reads "
                              f"version {VERSION}")
    unknown = sorted(set(meta) - _META_KEYS)
    if unknown:
        raise CheckpointError(f"{where}: metadata has unknown keys {unknown[:5]!r:.200}; refusing a file fg.save "
                              f"did not write")
    entries = meta.get("leaves")
    if not isinstance(entries, list):
        raise CheckpointError(f"{where}: metadata 'leaves' must be a list, got {type(entries).__name__}")
    n = meta.get("num_leaves")
    if type(n) is not int or n != len(entries):
        raise CheckpointError(f"{where}: metadata 'num_leaves' is {n!r:.40} but 'leaves' lists {len(entries)}; "
                              f"the metadata is inconsistent")
    if not isinstance(meta.get("treedef", ""), str):
        raise CheckpointError(f"{where}: metadata 'treedef' must be a string")
    out = []
    for i, e in enumerate(entries):
        at = f"{where}: metadata leaves[{i}]"
        if not isinstance(e, dict):
            raise CheckpointError(f"{at} must be an object, got {type(e).__name__}")
        missing = sorted(_ENTRY_KEYS - set(e))
        extra = sorted(set(e) - _ENTRY_KEYS - {"python_type"})
        if missing:
            raise CheckpointError(f"{at}: missing keys {missing}")
        if extra:
            raise CheckpointError(f"{at}: unknown keys {extra[:5]!r:.100}; refusing a file fg.save did not write")
        if not isinstance(e["path"], str):
            raise CheckpointError(f"{at}.path must be a string (a key path), got {type(e['path']).__name__}")
        if e.get("python_type") not in _PY_TYPE_NAMES:
            raise CheckpointError(f"{at}.python_type must be one of bool/int/float/complex or null")
        shape = _npz.check_shape(e["shape"], f"{at}.shape")
        dtype = _npz.parse_dtype(e["dtype"])
        if dtype is None:
            raise CheckpointError(
                f"{at}.dtype is {e['dtype']!r:.40}; only boolean, integer, floating and complex dtypes are "
                f"loaded" + (". Object arrays hold Python objects (pickled data): refusing to load them, since "
                             "funcgrad checkpoints never contain pickles and this file may be malicious"
                             if "O" in str(e["dtype"]) else ""))
        out.append(_Entry(e["path"], shape, dtype))
    return out


def _read_safetensors(f: IO[bytes], where: str) -> tuple[dict[str, Any], list[_Entry], list[np.ndarray]]:
    arrays, _ = _safetensors.read(f, where)
    entries = [_Entry(name, tuple(arr.shape), arr.dtype) for name, arr in arrays.items()]
    return {"treedef": "(a safetensors file: tensors by name)"}, entries, list(arrays.values())


def _read(path: str) -> tuple[dict[str, Any], list[_Entry], list[np.ndarray]]:
    where = f"fg.load: {path}"
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        if _safetensors.is_safetensors(f.read(9)):
            return _read_safetensors(f, where)
        f.seek(0)
        if f.read(1) == b"\x80":
            raise CheckpointError(f"{where} is not a readable funcgrad checkpoint: it looks like a pickle; "
                                  f"funcgrad never loads pickles")
        members = _npz.read_directory(f, file_size, where)
        m = members.get(_META)
        if m is None:
            raise CheckpointError(f"{where} is missing the member {_META!r}; the file is incomplete or not a "
                                  f"funcgrad checkpoint")
        if m.size > MAX_METADATA_BYTES:
            raise CheckpointError(f"{where}: member {_META!r} is {m.size} bytes; metadata is limited to "
                                  f"{MAX_METADATA_BYTES} bytes")
        mwhere = f"{where}: member {_META!r}"
        meta = parse_json(_npz.read_member_bytes(f, m, mwhere), mwhere)
        entries = _check_meta(meta, where)
        names = [_leaf_name(i) + ".npy" for i in range(len(entries))]
        extra = sorted(set(members) - set(names) - {_META})
        if extra:
            raise CheckpointError(f"{where} has unexpected members {extra[:5]}; refusing a tampered file")
        for name in names:
            if name not in members:
                raise CheckpointError(f"{where} is missing the member {name!r}; the file is incomplete or "
                                      f"corrupted")
        # every size is checked against the metadata before any array is read
        for name, e in zip(names, entries):
            nbytes = e.dtype.itemsize
            for d in e.shape:
                nbytes *= d
            header = members[name].size - nbytes
            if not 10 <= header <= 12 + _npz.MAX_NPY_HEADER:
                raise CheckpointError(
                    f"{where}: member {name!r} (leaf {e.path or 'at the root'}) is {members[name].size} bytes, but "
                    f"the metadata says shape {e.shape} and dtype {e.dtype}: {nbytes} bytes of data plus a .npy "
                    f"header; the file is truncated, corrupted or crafted")
        headers = []
        for name, e in zip(names, entries):
            mw = f"{where}: member {name!r}"
            _, dtype, shape, fortran, raw = _npz.read_npy_header(f, members[name], mw)
            if shape != e.shape or dtype != e.dtype:
                raise CheckpointError(
                    f"{mw}: leaf {e.path!r} has shape {shape} and dtype {dtype} in its .npy header, but the "
                    f"metadata says {e.shape} and {e.dtype}; the file is corrupted")
            headers.append((raw, fortran))
        arrays = [_npz.read_npy_data(f, members[name], raw, e.dtype, e.shape, fortran, f"{where}: member {name!r}")
                  for name, e, (raw, fortran) in zip(names, entries, headers)]
    return meta, entries, arrays


def _restore_like(arr: np.ndarray, like: Any, device: Any = None) -> Any:
    if isinstance(like, np.generic):  # before Python numbers: np.float64 is a float subclass
        return arr[()]
    if isinstance(like, _PY_SCALARS):
        return type(like)(arr.item())
    if device is not None:
        return put_array(arr, device)
    if isinstance(like, np.ndarray):
        return arr
    if namespace_of(like) is np:
        return arr
    return put_array(arr, device_of(like))  # back to the device (and GPU index) of `like`


def _like_dtype(x: Any) -> np.dtype:
    if isinstance(x, _PY_SCALARS):
        return np.asarray(x).dtype
    d = getattr(x, "dtype", None)  # a device array's dtype, without reading it back to the host
    return np.dtype(d) if d is not None else np.asarray(x).dtype


def load(path: str | os.PathLike[str], like: Any = None, *, device: Any = None) -> Any:
    """Read a checkpoint written by :func:`save` (either format; a safetensors file written by
    another tool loads too, as ``{name: array}``); never executes code from the file.

    With ``like`` (a pytree of the expected structure, e.g. a freshly built
    model and ``opt.init(params)``), the result has ``like``'s structure and
    static fields, and each array is checked against the corresponding leaf
    of ``like`` (key path, shape, dtype); arrays go to ``like``'s device, or
    to ``device`` when given (``'cpu'``, ``'cuda'``, ...). A checkpoint saved
    from GPU arrays loads on the CPU and the other way round.
    Without ``like``, a dict ``{key path: array}`` is returned (NumPy arrays,
    or arrays on ``device``).

    Raises :class:`CheckpointError` (a ``ValueError``) for a corrupted,
    truncated, foreign or unsafe file and for any mismatch with ``like``.

    Example::

        model = fg.load("model.npz", like=fg.nn.MLP(64, 10, hidden_sizes=(128,)))
    """
    path = os.fspath(path)
    meta, entries, arrays = _read(path)
    if like is None:
        seen: set[str] = set()
        for e in entries:
            if e.path in seen:
                raise CheckpointError(f"fg.load: {path}: two leaves have the key path {e.path!r:.100}; pass like= "
                                      f"to load them by position")
            seen.add(e.path)
        out = {}
        for i, e in enumerate(entries):
            out[e.path] = arrays[i] if device is None else put_array(arrays[i], device)
            arrays[i] = None  # type: ignore[call-overload]  # a host copy is freed once it is on the device
        return out
    pairs, treedef = tree_util.tree_flatten_with_path(like)
    if len(pairs) != len(arrays):
        raise CheckpointError(
            f"fg.load: {path} holds {len(arrays)} arrays, but `like` has {len(pairs)} leaves; the checkpoint "
            f"was saved from a different structure (saved: {meta.get('treedef')!s:.2000}; expected: {treedef!r})"
        )
    leaves = []
    for i, ((kp, like_leaf), entry) in enumerate(zip(pairs, entries)):
        arr = arrays[i]
        key = tree_util.keystr(kp)
        if entry.path != key:
            raise CheckpointError(
                f"fg.load: {path}: structure mismatch: the checkpoint has a leaf at {entry.path or 'the root'} "
                f"where `like` has one at {key or 'the root'}"
            )
        want_shape = tuple(like_leaf._shape() if isinstance(like_leaf, Box) else np.shape(like_leaf)
                           if isinstance(like_leaf, _PY_SCALARS) else getattr(like_leaf, "shape", ()))
        if tuple(arr.shape) != want_shape:
            raise CheckpointError(
                f"fg.load: {path}: shape mismatch at {key or 'the root'}: the checkpoint has {tuple(arr.shape)}, "
                f"`like` expects {want_shape}"
            )
        want_dtype = _like_dtype(like_leaf)
        if arr.dtype != want_dtype:
            if isinstance(like_leaf, _PY_SCALARS) and arr.dtype.kind == want_dtype.kind:
                pass  # a Python number: any width of the same kind
            else:
                raise CheckpointError(
                    f"fg.load: {path}: dtype mismatch at {key or 'the root'}: the checkpoint has {arr.dtype}, "
                    f"`like` expects {want_dtype} (convert after loading without `like` if intended)"
                )
        leaves.append(_restore_like(arr, like_leaf, device))
        arrays[i] = None  # type: ignore[call-overload]
    return treedef.unflatten(leaves)
