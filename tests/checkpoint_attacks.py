"""Crafted checkpoint files (issue 14) and a harness that loads them in a child process
under an address-space limit, reporting the error and the memory each load took.

Shared by tests/test_checkpoint_attacks.py; every builder writes one file and
returns its path.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile

import numpy as np

import funcgrad as fg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AS_LIMIT = 2**30  # the child's address space: 1 GiB

META = "__funcgrad__.json"


def npy_header(descr: str, shape: tuple, fortran: bool = False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return buf.getvalue()


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def meta_for(specs: list[tuple[str, tuple, str]], **over) -> dict:
    meta = {"format": "funcgrad-checkpoint", "version": 1, "num_leaves": len(specs),
            "leaves": [{"path": p, "shape": list(s), "dtype": d, "python_type": None} for p, s, d in specs],
            "treedef": "PyTreeDef(...)"}
    meta.update(over)
    return meta


def write_zip(path, members, compression=zipfile.ZIP_STORED) -> str:
    """``members``: (name, bytes) pairs, written in order (duplicates allowed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(path, "w", compression=compression) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return str(path)


def members_of(path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        return [(n, zf.read(n)) for n in zf.namelist()]


def small_checkpoint(d, name="small.npz") -> str:
    path = os.path.join(d, name)
    fg.save(path, {"w": np.arange(4.0), "b": np.ones(2, np.float32)})
    return path


def cd_entries(data: bytes) -> dict[str, int]:
    """Offsets of the central directory entries, by member name."""
    out = {}
    pos = data.find(b"PK\x01\x02")
    while pos >= 0:
        n_len = struct.unpack_from("<H", data, pos + 28)[0]
        out[data[pos + 46:pos + 46 + n_len].decode()] = pos
        pos = data.find(b"PK\x01\x02", pos + 4)
    return out


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def patched(src, dst, edits) -> str:
    """A copy of ``src`` with ``(offset, struct format, value)`` edits."""
    data = bytearray(_read(src))
    for off, fmt, value in edits:
        struct.pack_into(fmt, data, off, value)
    with open(dst, "wb") as f:
        f.write(bytes(data))
    return str(dst)


# --------------------------------------------------------------------------- fg.load attacks

def zip_bomb(d) -> str:
    """~130 KB: the metadata says 4 float64s, the deflated member inflates to 128 MiB."""
    path = os.path.join(d, "bomb.npz")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(META, json.dumps(meta_for([("['w']", (4,), "<f8")])))
        info = zipfile.ZipInfo("leaf_00000.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as m:
            m.write(npy(np.zeros(4)))
            zeros = bytes(2**20)
            for _ in range(128):
                m.write(zeros)
    return path


def npy_claims(d, n: int, meta_agrees: bool) -> str:
    header = npy_header("<f8", (n,))
    path = os.path.join(d, f"claims{n}_{meta_agrees}.npz")
    shape = (n,) if meta_agrees else (4,)
    return write_zip(path, [(META, json.dumps(meta_for([("['w']", shape, "<f8")]))),
                            ("leaf_00000.npy", header + bytes(32))])


def header_claims_4gib(d, member: str) -> str:
    """A tiny archive whose central directory says ``member`` holds 4 GiB - 2 bytes."""
    src = write_zip(os.path.join(d, "tiny.npz"), [(META, json.dumps(meta_for([("['w']", (1,), "<f8")]))),
                                                  ("leaf_00000.npy", npy(np.zeros(1)))])
    data = _read(src)
    at = cd_entries(data)[member]
    return patched(src, os.path.join(d, f"claims4g_{member}.npz"), [(at + 20, "<L", 2**32 - 2), (at + 24, "<L", 2**32 - 2)])


def cd_claims_4gib(d) -> str:
    src = small_checkpoint(d, "cd4g_src.npz")
    data = _read(src)
    eocd = data.rfind(b"PK\x05\x06")
    return patched(src, os.path.join(d, "cd4g.npz"), [(eocd + 12, "<L", 2**32 - 2)])


def duplicate_members(d) -> str:
    meta = json.dumps(meta_for([("['w']", (2,), "<f8")]))
    return write_zip(os.path.join(d, "dup.npz"), [(META, meta), ("leaf_00000.npy", npy(np.array([1.0, 2.0]))),
                                                  ("leaf_00000.npy", npy(np.array([666.0, 666.0])))])


def duplicate_meta(d) -> str:
    meta = json.dumps(meta_for([("['w']", (2,), "<f8")]))
    other = json.dumps(meta_for([("['evil']", (2,), "<f8")]))
    return write_zip(os.path.join(d, "dupmeta.npz"), [(META, meta), ("leaf_00000.npy", npy(np.array([1.0, 2.0]))),
                                                      (META, other)])


def compressed(d, method) -> str:
    src = small_checkpoint(d, f"c{method}_src.npz")
    return write_zip(os.path.join(d, f"compressed{method}.npz"), members_of(src), compression=method)


def bit_in_cd(d, field_offset: int, fmt: str, value: int, tag: str) -> str:
    """The small checkpoint with one central-directory field of the leaf ``leaf_00000.npy`` changed."""
    src = small_checkpoint(d, f"{tag}_src.npz")
    at = cd_entries(_read(src))["leaf_00000.npy"]
    return patched(src, os.path.join(d, f"{tag}.npz"), [(at + field_offset, fmt, value)])


def with_meta(d, tag: str, meta_text: str | bytes) -> str:
    """One float64 leaf of shape (2,) under the given metadata text."""
    return write_zip(os.path.join(d, f"meta_{tag}.npz"), [(META, meta_text), ("leaf_00000.npy", npy(np.zeros(2)))])


def _meta_json(**over) -> str:
    return json.dumps(meta_for([("['w']", (2,), "<f8")], **over))


def _entry(**over) -> str:
    entry = {"path": "['w']", "shape": [2], "dtype": "<f8", "python_type": None}
    entry.update(over)
    for k in [k for k, v in over.items() if v is _DROP]:
        del entry[k]
    return json.dumps(meta_for([], num_leaves=1, leaves=[entry]))


_DROP = object()

MALFORMED_META = {
    # name: (metadata text, words the error must contain)
    "not_an_object": ("[1, 2]", ["not a funcgrad checkpoint"]),
    "entry_not_object": (json.dumps(meta_for([], num_leaves=1, leaves=[5])), ["leaves[0]", "must be an object"]),
    "entry_missing_path": (_entry(path=_DROP), ["leaves[0]", "missing keys ['path']"]),
    "path_not_string": (_entry(path=5), ["leaves[0].path", "must be a string"]),
    "negative_shape": (_entry(shape=[-2]), ["leaves[0].shape[0]", "[0, 2**48]"]),
    "absurd_shape": (_entry(shape=[10**30]), ["leaves[0].shape[0]", "[0, 2**48]"]),
    "float_shape": (_entry(shape=[2.0]), ["leaves[0].shape[0]"]),
    "bool_shape": (_entry(shape=[True, True]), ["leaves[0].shape[0]"]),
    "shape_not_list": (_entry(shape="2"), ["leaves[0].shape", "must be a list"]),
    "too_many_dims": (_entry(shape=[1] * 100), ["leaves[0].shape", "100 dimensions"]),
    "object_dtype": (_entry(dtype="|O"), ["leaves[0].dtype", "refusing"]),
    "string_dtype": (_entry(dtype="<U4"), ["leaves[0].dtype", "'<U4'"]),
    "structured_dtype": (_entry(dtype=[["a", "<f8"]]), ["leaves[0].dtype"]),
    "dtype_garbage": (_entry(dtype="<f8\x00evil"), ["leaves[0].dtype"]),
    "unknown_entry_key": (_entry(extra=1), ["leaves[0]", "unknown keys ['extra']"]),
    "leaves_not_list": (_meta_json(leaves={"a": 1}), ["'leaves' must be a list"]),
    "num_leaves_wrong": (_meta_json(num_leaves=3), ["'num_leaves' is 3"]),
    "num_leaves_bool": (_meta_json(num_leaves=True), ["'num_leaves' is True"]),
    "num_leaves_huge_digits": ('{"format": "funcgrad-checkpoint", "version": 1, "num_leaves": ' + "9" * 5000 + "}",
                               ["not valid JSON"]),
    "version_bool": (_meta_json(version=True), ["format version True"]),
    "treedef_not_string": (_meta_json(treedef=[1]), ["'treedef' must be a string"]),
    "unknown_key": (_meta_json(evil=1), ["unknown keys ['evil']"]),
    "duplicate_json_key": (_meta_json()[:-1] + ', "leaves": []}', ["'leaves'", "appears twice"]),
    "deep_nesting": (_meta_json(treedef="x")[:-1].replace('"treedef": "x"', '"treedef": ' + "[" * 100000 + "]" * 100000)
                     + "}", ["nested too deeply"]),
    "nan_constant": (_meta_json()[:-1] + ', "treedef": NaN}', ["not valid JSON"]),
    "not_utf8": (b'{"format": "\xff"}', ["not valid JSON"]),
}


# --------------------------------------------------------------------------- ft.load attacks

def ft_file(d, tag: str, structure, arrays) -> str:
    """A file laid out exactly as ft.save writes it, with a crafted structure."""
    path = os.path.join(d, f"ft_{tag}.ft")
    text = structure if isinstance(structure, str) else json.dumps({"format": "funcgrad.tensor/1",
                                                                    "structure": structure})
    fg.save(path, {"structure": np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8),
                   "tensors": list(arrays)})
    return path


def _t(i, **over):
    node = {"t": "tensor", "i": i, "rg": False, "param": False}
    node.update(over)
    return node


def _L(*items):
    return {"t": "list", "items": list(items)}


def _nested(depth):
    text = '{"t": "list", "items": [' * depth + ']}' * depth
    return '{"format": "funcgrad.tensor/1", "structure": ' + text + "}"


TWO = (np.arange(3.0, dtype=np.float32), np.full(2, 7, np.int64))
FT_CRAFTED = {
    # name: (structure, arrays, words the error must contain)
    "negative_index": ({"t": "dict", "items": [["a", _t(0)], ["b", _t(-1)]]}, TWO[:1], ["['b']", "refers to array -1"]),
    "index_out_of_range": (_L(_t(5)), TWO, ["[0]", "refers to array 5", "indices 0 to 1"]),
    "index_bool": (_L(_t(0), _t(True)), TWO, ["[1]", "refers to array True"]),
    "index_reused": (_L(_t(0), _t(0)), TWO[:1], ["[1]", "a second time"]),
    "index_missing": (_L({"t": "tensor", "rg": False, "param": False}), TWO[:1], ["[0]", "keys"]),
    "unused_arrays": (_L(_t(0)), TWO, ["1 arrays", "never refers"]),
    "items_not_list": ({"t": "list", "items": 5}, (), ["the root", "not a list"]),
    "dict_item_not_pair": ({"t": "dict", "items": [[1, 2, 3]]}, (), [".items[0]", "[key, value] pair"]),
    "dict_key_tensor": ({"t": "dict", "items": [[_t(0), "x"]]}, TWO[:1], [".items[0][0]", "dict key of type Tensor"]),
    "dict_key_repeated": ({"t": "dict", "items": [["a", "x"], ["a", "y"]]}, (), ["['a']", "appears twice"]),
    "unknown_type": ({"t": "pickle", "v": "x"}, (), ["the root", "malformed entry"]),
    "not_a_node": (_L([1, 2]), (), ["[0]", "malformed entry"]),
    "float_not_string": ({"t": "float", "v": [1]}, (), ["malformed 'float'"]),
    "float_garbage": ({"t": "float", "v": "one"}, (), ["malformed 'float'"]),
    "int_as_string": ({"t": "int", "v": "1"}, (), ["malformed 'int'"]),
    "complex_short": ({"t": "complex", "v": ["1"]}, (), ["malformed 'complex'"]),
    "dtype_object": ({"t": "dtype", "v": "object"}, (), ["malformed 'dtype'"]),
    "rg_on_int_tensor": (_L(_t(0, rg=True)), TWO[1:], ["int64 tensor marked requires_grad"]),
    "rg_not_bool": (_L(_t(0, rg="yes")), TWO[:1], ["'rg' and 'param' are not booleans"]),
    "bad_device": (_L(_t(0, device="tpu:0")), TWO[:1], ["names the device 'tpu:0'"]),
    "deep_nesting_json": (_nested(5000), (), ["nested too deeply"]),
    "deep_nesting": (_nested(200), (), ["nested more than 64"]),
    "structure_not_json": ("{'format': nope", (), ["the structure", "not valid JSON"]),
    "structure_not_object": ("[1]", (), ["unknown format"]),
}


# --------------------------------------------------------------------------- the child process

_CHILD = r"""
import json, resource, sys, traceback, tracemalloc
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import funcgrad as fg, funcgrad.tensor as ft

def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024

jobs = json.loads(sys.stdin.read())
base = rss("VmRSS:")
out = {}
for name, loader, path in jobs:
    tracemalloc.start()
    try:
        (fg.load if loader == "fg" else ft.load)(path)
        err = None
    except BaseException as e:  # noqa: B036 - report everything, MemoryError included
        err = (type(e).__name__, str(e)[:2000])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out[name] = {"error": err, "traced_peak": peak}
print(json.dumps({"results": out, "rss_rise": rss("VmHWM:") - base, "base": base}))
"""


def load_in_child(jobs: list[tuple[str, str, str]], limit: int = AS_LIMIT) -> dict:
    """Load each ``(name, 'fg' | 'ft', path)`` in one child process limited to ``limit`` bytes of
    address space; per job, the error (type name, message) or None and the tracemalloc peak,
    plus the rise of the child's peak resident set over all jobs."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CHILD, str(limit)], input=json.dumps(jobs), capture_output=True,
                       check=False, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])

