"""Fuzzing the loaders (issue 14): real checkpoints written by fg.save and ft.save, cut short,
bit-flipped, with zip / .npy header fields overwritten or bytes inserted and deleted. Every
outcome must be either exactly the original data or a CheckpointError -- never another
exception, never other data."""

from __future__ import annotations

import functools
import os
import struct
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.tensor as ft
from funcgrad import tree_util
from funcgrad.serialization import CheckpointError

FG_TREE = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "f": np.arange(4.0).reshape(2, 2).T,
           "i": np.array([1, -2], np.int64), "c": np.array([1 - 2j], np.complex128), "m": np.array([True, False]),
           "e": np.zeros((0, 3), np.float16), "s": 0.5, "n": 3}
FT_OBJ = {"model": {"w": ft.arange(3.0), "b": ft.ones(2, requires_grad=True)}, "epoch": 3, "lr": 0.25,
          "names": ["a", None, (1, 2.5)], "dtype": ft.float64, "c": 1 + 2j}
ANCHORS = (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\x93NUMPY", b'{"format"')


@functools.cache
def _files() -> dict:
    """The original files' bytes (module-level, not a fixture, so hypothesis's reports stay short)."""
    d = tempfile.mkdtemp(prefix="fg-fuzz-")
    fg_path, ft_path = os.path.join(d, "tree.npz"), os.path.join(d, "obj.ft")
    fg.save(fg_path, FG_TREE)
    ft.save(FT_OBJ, ft_path)
    with open(fg_path, "rb") as a, open(ft_path, "rb") as b:
        return {"fg": a.read(), "ft": b.read(), "dir": d}


def _anchors(data: bytes) -> list[int]:
    out = []
    for sig in ANCHORS:
        pos = data.find(sig)
        while pos >= 0:
            out.append(pos)
            pos = data.find(sig, pos + 1)
    return sorted(out)


@st.composite
def mutations(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "header", "splice"]))
    buf = bytearray(data)
    if kind == "truncate":
        return bytes(buf[:draw(st.integers(0, len(buf) - 1))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 3))):
            pos = draw(st.integers(0, len(buf) - 1))
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        return bytes(buf)
    if kind == "header":  # overwrite a field near a zip record, a .npy magic or the JSON metadata
        at = draw(st.sampled_from(_anchors(data))) + draw(st.integers(0, 60))
        fmt = draw(st.sampled_from(["<B", "<H", "<L"]))
        bits = 8 * struct.calcsize(fmt)
        value = draw(st.sampled_from([0, 1, 2**bits - 1, 2**(bits - 1), 2**(bits - 1) - 1]) | st.integers(0, 2**bits - 1))
        at = min(at, len(buf) - struct.calcsize(fmt))
        struct.pack_into(fmt, buf, at, value)
        return bytes(buf)
    pos = draw(st.integers(0, len(buf)))
    cut = draw(st.integers(0, 8))
    return bytes(buf[:pos]) + draw(st.binary(max_size=8)) + bytes(buf[pos + cut:])


def _same_fg(a, b):
    assert tree_util.tree_structure(a) == tree_util.tree_structure(b)
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        assert type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype
        assert np.asarray(x).shape == np.asarray(y).shape and np.array_equal(x, y)


def _same_ft(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, ft.Tensor):
        assert a.dtype is b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_ft(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_ft(x, y)
    else:
        assert a == b


def _outcome(load):
    try:
        return load()
    except CheckpointError:
        return CheckpointError


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fg_load_of_damaged_file_is_exact_or_refused(data):
    files = _files()
    bad = data.draw(mutations(files["fg"]))
    path = os.path.join(files["dir"], "damaged.npz")
    with open(path, "wb") as f:
        f.write(bad)
    back = _outcome(lambda: fg.load(path, like=FG_TREE))
    if back is not CheckpointError:
        _same_fg(back, FG_TREE)
    flat = _outcome(lambda: fg.load(path))
    if flat is not CheckpointError:
        assert list(flat) == [tree_util.keystr(kp) for kp, _ in tree_util.tree_flatten_with_path(FG_TREE)[0]]
        for (kp, leaf), arr in zip(tree_util.tree_flatten_with_path(FG_TREE)[0], flat.values()):
            assert arr.dtype == np.asarray(leaf).dtype and np.array_equal(arr, leaf)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_ft_load_of_damaged_file_is_exact_or_refused(data):
    files = _files()
    bad = data.draw(mutations(files["ft"]))
    path = os.path.join(files["dir"], "damaged.ft")
    with open(path, "wb") as f:
        f.write(bad)
    back = _outcome(lambda: ft.load(path))
    if back is not CheckpointError:
        _same_ft(back, FT_OBJ)


def test_undamaged_files_round_trip(tmp_path):
    files = _files()
    (tmp_path / "a.npz").write_bytes(files["fg"])
    _same_fg(fg.load(tmp_path / "a.npz", like=FG_TREE), FG_TREE)
    (tmp_path / "a.ft").write_bytes(files["ft"])
    _same_ft(ft.load(tmp_path / "a.ft"), FT_OBJ)
