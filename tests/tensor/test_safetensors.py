"""safetensors (issue 29): ft.safetensors (the safetensors.torch API) and fg.save/fg.load's
format="safetensors", against a file written by the real safetensors package and the bytes it
read from ours (recorded by tests/fixtures/make_torch_weights.py); crafted files refused; fuzzing.
Also the NumPy-scalar leaf that fg.save wrote and fg.load refused."""

from __future__ import annotations

import io
import json
import os
import struct
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_weights_cases import safetensors_object

import funcgrad as fg
import funcgrad.tensor as ft
from funcgrad.serialization import CheckpointError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
with open(os.path.join(FIXTURES, "torch_weights.json")) as _f:
    RECORD = json.load(_f)["safetensors"]
FILE = os.path.join(FIXTURES, "torch_weights", "tensors.safetensors")


def array_of(rec):
    data = np.array(rec["real"]) + 1j * np.array(rec["imag"]) if "real" in rec else np.array(rec["data"])
    return data.astype(rec["dtype"]).reshape(rec["shape"])


def test_file_written_by_safetensors_loads_exactly():
    with pytest.warns(UserWarning, match="bfloat16 tensors are upcast to float32"):
        got = ft.safetensors.load_file(FILE)
    assert sorted(got) == sorted(RECORD["file"])
    for name, rec in RECORD["file"].items():
        want = array_of(rec)
        assert got[name].numpy().dtype == want.dtype and np.array_equal(got[name].numpy(), want), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat = fg.load(FILE)  # fg.load reads any safetensors file as {name: array}
    assert np.array_equal(flat["i"], array_of(RECORD["file"]["i"]))


def test_ft_save_bytes_are_what_safetensors_read():
    data = ft.safetensors.save(safetensors_object(ft), metadata={"note": "ft"})
    assert data.hex() == RECORD["ft_save"]
    back = ft.safetensors.load(data)
    for name, rec in RECORD["read_by_safetensors"].items():
        assert np.array_equal(back[name].numpy(), array_of(rec)) and back[name].shape == tuple(rec["shape"]), name
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and json.loads(data[8:8 + n])["__metadata__"] == {"note": "ft"}


def test_save_file_load_file_round_trip(tmp_path):
    obj = safetensors_object(ft)
    ft.safetensors.save_file(obj, tmp_path / "m.safetensors")
    back = ft.safetensors.load_file(tmp_path / "m.safetensors", device="cpu")
    assert list(back) == list(obj)
    for k in obj:
        assert back[k].dtype is obj[k].dtype and back[k].equal(obj[k]), k
    with pytest.raises(TypeError, match="only tensors can be saved"):
        ft.safetensors.save_file({"a": 1.0}, tmp_path / "bad.safetensors")
    with pytest.raises(TypeError, match="metadata must map strings to strings"):
        ft.safetensors.save({"a": ft.ones(1)}, metadata={"a": 1})


def test_fg_save_safetensors_format_and_numpy_scalar_leaves(tmp_path):
    tree = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "lr": 0.5, "n": 3, "x": np.float64(2.5),
            "y": np.float32(1.5), "flag": np.bool_(True)}
    for fmt, name in (("npz", "t.npz"), ("safetensors", "t.safetensors")):
        fg.save(tmp_path / name, tree, format=fmt)
        back = fg.load(tmp_path / name, like=tree)
        for k in tree:
            assert type(back[k]) is type(tree[k]) and np.array_equal(back[k], tree[k]), (fmt, k)
        flat = fg.load(tmp_path / name)
        assert float(flat["['x']"]) == 2.5
    with pytest.raises(ValueError, match="format must be 'npz' or 'safetensors'"):
        fg.save(tmp_path / "z", tree, format="pickle")


def _file(header: dict | bytes, buffer: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + buffer


ENTRY = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("data, match", [
    (_file({"a": ENTRY}, b"\0" * 8, length=2**62), "claims a 4611686018427387904-byte header"),
    (_file({"a": ENTRY}, b"\0" * 4), "data_offsets \\[0, 8\\]; expected \\[begin, end\\] within the 4-byte buffer"),
    (_file({"a": ENTRY}, b"\0" * 12), "cover 8 bytes of a 12-byte buffer"),
    (_file({"a": {**ENTRY, "shape": [3]}}, b"\0" * 8), "spans 8 bytes, but shape \\[3\\] of F32 needs 12"),
    (_file({"a": ENTRY, "b": ENTRY}, b"\0" * 8), "starts at byte 0 of the buffer, but the previous one ends at 8"),
    (_file({"a": {**ENTRY, "dtype": "F8_E4M3"}}, b"\0" * 8), "dtype 'F8_E4M3'"),
    (_file({"a": {**ENTRY, "shape": [2**30, 2**30]}}, b"\0" * 8), "more than 2\\*\\*48 elements"),
    (_file(b'{"a": 1, "a": 2}'), "appears twice"),
    (_file({"__metadata__": {"k": 1}}), "__metadata__ must map strings to strings"),
    (_file(b"[1, 2]"), "does not start with"),
    (b"\x01\x00", "only 2 bytes"),
])
def test_crafted_safetensors_are_refused(tmp_path, data, match):
    path = tmp_path / "x.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=match):
        ft.safetensors.load_file(path)
    with pytest.raises(CheckpointError):
        ft.safetensors.load(data)


def test_unsigned_wide_dtypes_are_refused_by_ft_but_read_by_fg(tmp_path):
    data = _file({"u": {"dtype": "U32", "shape": [1], "data_offsets": [0, 4]}}, b"\x07\0\0\0")
    with pytest.raises(CheckpointError, match="tensor 'u' has dtype uint32"):
        ft.safetensors.load(data)
    (tmp_path / "u.safetensors").write_bytes(data)
    assert fg.load(tmp_path / "u.safetensors")["u"].tolist() == [7]


with open(FILE, "rb") as _f:
    ORIGINAL = _f.read()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["truncate", "flip", "grow"]), data=st.data())
def test_damaged_safetensors_are_refused_or_well_formed(kind, data):
    """No checksum in the format: a flipped byte may load (a changed value, or a changed name in the
    header), but a load always has as many tensors, with the recorded sizes, and anything else is a
    CheckpointError."""
    buf = bytearray(ORIGINAL)
    if kind == "truncate":
        buf = buf[:data.draw(st.integers(0, len(buf) - 1))]
    elif kind == "flip":
        buf[data.draw(st.integers(0, len(buf) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    else:
        at = data.draw(st.integers(0, len(buf)))
        buf[at:at] = data.draw(st.binary(min_size=1, max_size=16))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ft.safetensors.load(bytes(buf))
    except CheckpointError:
        return
    assert len(got) == len(RECORD["file"])
    assert sorted(t.numel() for t in got.values()) == sorted(int(np.prod(r["shape"])) for r in RECORD["file"].values())


def test_file_objects_for_ft_save_and_load():
    buffer = io.BytesIO()
    ft.save({"a": ft.ones(2)}, buffer)
    buffer.seek(0)
    assert ft.load(buffer)["a"].tolist() == [1.0, 1.0]
