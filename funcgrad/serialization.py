"""Safe checkpoints of pytrees: ``fg.save(path, tree)`` and ``fg.load(path, like=tree)``.

Format: an uncompressed ``.npz`` archive (readable by ``numpy.load``) with one
``.npy`` member per leaf (``leaf_00000.npy``, ...) and a JSON member
``__funcgrad__.json`` that records the format version, each leaf's key path
(e.g. ``.layers[0].weight``), shape and dtype, and the tree structure as text.

Safety:

* loading never unpickles: members are read with ``allow_pickle=False`` and
  object arrays are refused, so a crafted file cannot execute code;
* every member is checked (zip CRC, ``.npy`` header, shape and dtype against
  the metadata), so a truncated or corrupted file gives a
  :class:`CheckpointError` that says what is wrong;
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

import io
import json
import os
import tempfile
import zipfile
from typing import Any

import numpy as np

from . import tree_util
from .backend import device_of, namespace_of, put_array, to_numpy
from .core import Box

__all__ = ["save", "load", "CheckpointError"]

FORMAT = "funcgrad-checkpoint"
VERSION = 1
_META = "__funcgrad__.json"
_PY_SCALARS = (bool, int, float, complex)


class CheckpointError(ValueError):
    """A checkpoint is unreadable, unsafe, or does not match the expected tree."""


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


def save(path: str | os.PathLike[str], tree: Any) -> None:
    """Write the pytree ``tree`` of arrays to ``path`` atomically (an ``.npz`` file).

    Leaves must be arrays (NumPy, CuPy: copied to the host) or Python numbers;
    the tree's containers and static fields (module configuration) are not
    stored: :func:`load` takes them from ``like``. The file is written to a
    temporary name beside ``path`` and renamed over it only when complete.

    Example::

        fg.save("model.npz", model)
    """
    path = os.fspath(path)
    pairs, treedef = tree_util.tree_flatten_with_path(tree)
    arrays = []
    entries = []
    for i, (kp, leaf) in enumerate(pairs):
        key = tree_util.keystr(kp)
        arr = _to_host(key, leaf)
        arrays.append(arr)
        entries.append({"path": key, "shape": list(arr.shape), "dtype": arr.dtype.str,
                        "python_type": type(leaf).__name__ if isinstance(leaf, _PY_SCALARS) else None})
    meta = {"format": FORMAT, "version": VERSION, "num_leaves": len(arrays), "leaves": entries,
            "treedef": repr(treedef)}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + ".", suffix=".partial", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                zf.writestr(_META, json.dumps(meta))
                for i, arr in enumerate(arrays):
                    with zf.open(_leaf_name(i) + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, arr, allow_pickle=False)
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


def _read_member(zf: zipfile.ZipFile, name: str, path: str) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        raise CheckpointError(f"fg.load: {path} is missing the member {name!r}; the file is incomplete or "
                              f"not a funcgrad checkpoint") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as e:
        raise CheckpointError(f"fg.load: {path} is corrupted (member {name!r}: {e})") from None


def _read_array(data: bytes, name: str, path: str) -> np.ndarray:
    buf = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(buf)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except ValueError as e:
        raise CheckpointError(f"fg.load: {path}: member {name!r} is not a valid .npy array ({e})") from None
    if dtype.hasobject:
        raise CheckpointError(
            f"fg.load: {path}: member {name!r} holds Python objects (pickled data); refusing to load it. "
            f"funcgrad checkpoints never contain pickles: this file was not written by fg.save and may "
            f"be malicious"
        )
    buf.seek(0)
    try:
        arr = np.lib.format.read_array(buf, allow_pickle=False)
    except ValueError as e:
        raise CheckpointError(f"fg.load: {path}: member {name!r} is truncated or corrupted ({e})") from None
    if buf.read(1):
        raise CheckpointError(f"fg.load: {path}: member {name!r} has trailing data; the file is corrupted")
    return arr


def _read(path: str) -> tuple[dict[str, Any], list[np.ndarray]]:
    try:
        zf = zipfile.ZipFile(path, "r")
    except FileNotFoundError:
        raise
    except zipfile.BadZipFile as e:
        with open(path, "rb") as f:
            head = f.read(2)
        hint = (" It looks like a pickle; funcgrad never loads pickles." if head[:1] == b"\x80" else "")
        raise CheckpointError(
            f"fg.load: {path} is not a readable funcgrad checkpoint (not a complete zip/npz archive: {e}); "
            f"it may be truncated or corrupted.{hint}"
        ) from None
    with zf:
        raw = _read_member(zf, _META, path)
        try:
            meta = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"fg.load: {path}: the metadata is corrupted ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise CheckpointError(f"fg.load: {path} is not a funcgrad checkpoint (no valid metadata)")
        if meta.get("version") != VERSION:
            raise CheckpointError(
                f"fg.load: {path} has checkpoint format version {meta.get('version')!r}; this funcgrad reads "
                f"version {VERSION}"
            )
        entries = meta.get("leaves")
        if not isinstance(entries, list) or len(entries) != meta.get("num_leaves"):
            raise CheckpointError(f"fg.load: {path}: the metadata is inconsistent (leaf count)")
        expected = {_META} | {_leaf_name(i) + ".npy" for i in range(len(entries))}
        extra = sorted(set(zf.namelist()) - expected)
        if extra:
            raise CheckpointError(f"fg.load: {path} has unexpected members {extra[:5]}; refusing a tampered file")
        arrays = []
        for i, entry in enumerate(entries):
            name = _leaf_name(i) + ".npy"
            arr = _read_array(_read_member(zf, name, path), name, path)
            if list(arr.shape) != list(entry.get("shape", [])) or arr.dtype.str != entry.get("dtype"):
                raise CheckpointError(
                    f"fg.load: {path}: leaf {entry.get('path')!r} has shape {arr.shape} and dtype {arr.dtype}, "
                    f"but the metadata says {tuple(entry.get('shape', []))} and {entry.get('dtype')}; the file "
                    f"is corrupted"
                )
            arrays.append(arr)
    return meta, arrays


def _restore_like(arr: np.ndarray, like: Any, device: Any = None) -> Any:
    if isinstance(like, _PY_SCALARS):
        return type(like)(arr.item())
    if isinstance(like, np.generic):
        return arr[()]
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
    """Read a checkpoint written by :func:`save`; never executes code from the file.

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
    meta, arrays = _read(path)
    entries = meta["leaves"]
    if like is None:
        return {e["path"]: (a if device is None else put_array(a, device)) for e, a in zip(entries, arrays)}
    pairs, treedef = tree_util.tree_flatten_with_path(like)
    if len(pairs) != len(arrays):
        raise CheckpointError(
            f"fg.load: {path} holds {len(arrays)} arrays, but `like` has {len(pairs)} leaves; the checkpoint "
            f"was saved from a different structure (saved: {meta.get('treedef')}; expected: {treedef!r})"
        )
    leaves = []
    for (kp, like_leaf), entry, arr in zip(pairs, entries, arrays):
        key = tree_util.keystr(kp)
        if entry["path"] != key:
            raise CheckpointError(
                f"fg.load: {path}: structure mismatch: the checkpoint has a leaf at {entry['path'] or 'the root'} "
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
    return treedef.unflatten(leaves)
