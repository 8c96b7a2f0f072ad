"""fg.save / fg.load: round trips, mismatches, corrupted files, pickles, atomic writes."""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as nn
import funcgrad.optim as optim
from funcgrad import tree_util
from funcgrad.serialization import CheckpointError, load, save


def model_and_state():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, key=0), nn.relu, nn.Flatten(), nn.Linear(2 * 4 * 4, 3, key=1))
    opt = optim.adamw(1e-3)
    state = opt.init(model)
    g = tree_util.tree_map(np.ones_like, model)
    _, state = opt.update(g, state, model)
    return model, state


def test_round_trip_of_mixed_tree(tmp_path):
    tree = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.ones(2, np.float16),
        "c128": np.array([1 + 2j]),
        "ints": (np.arange(3, dtype=np.int8), np.array(7, dtype=np.uint64)),
        "flags": [np.array([True, False]), None],
        "scalars": {"py_float": 0.5, "py_int": 3, "np_scalar": np.float32(2.5)},
        "empty": np.zeros((0, 4)),
    }
    path = tmp_path / "tree.npz"
    save(path, tree)
    back = load(path, like=tree)
    assert tree_util.tree_structure(back) == tree_util.tree_structure(tree)
    for a, b in zip(tree_util.tree_leaves(tree), tree_util.tree_leaves(back)):
        assert type(a) is type(b) and np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype
    flat = load(path)
    assert set(flat) >= {"['f32']", "['ints'][0]", "['scalars']['py_int']"}
    # an ordinary npz: NumPy reads it without pickles
    with np.load(path, allow_pickle=False) as z:
        assert np.array_equal(z["leaf_00000"], tree["c128"])


def test_modules_and_optimizer_states_round_trip(tmp_path):
    model, state = model_and_state()
    path = tmp_path / "ckpt.npz"
    save(path, {"model": model, "opt": state, "step": np.array(12)})
    fresh_model = nn.Sequential(nn.Conv2d(1, 2, 3, key=5), nn.relu, nn.Flatten(), nn.Linear(2 * 4 * 4, 3, key=6))
    fresh_state = optim.adamw(1e-3).init(fresh_model)
    back = load(path, like={"model": fresh_model, "opt": fresh_state, "step": np.array(0)})
    assert nn.tree_equal(back["model"], model) and back["model"] == model
    assert nn.tree_equal(back["opt"], state) and int(back["step"]) == 12
    x = np.ones((1, 1, 6, 6), np.float32)
    assert np.array_equal(back["model"](x), model(x))
    # training resumes identically from the restored optimizer state
    opt = optim.adamw(1e-3)
    g = tree_util.tree_map(np.ones_like, model)
    u1, _ = opt.update(g, state, model)
    u2, _ = opt.update(g, back["opt"], back["model"])
    assert nn.tree_equal(u1, u2)


def test_mismatches_name_the_key_path(tmp_path):
    model, _ = model_and_state()
    path = tmp_path / "m.npz"
    save(path, model)
    wider = nn.Sequential(nn.Conv2d(1, 3, 3, key=0), nn.relu, nn.Flatten(), nn.Linear(3 * 4 * 4, 3, key=1))
    with pytest.raises(CheckpointError, match=r"shape mismatch at \.layers\[0\]\.weight.*\(2, 1, 3, 3\).*\(3, 1, 3, 3\)"):
        load(path, like=wider)
    as64 = tree_util.tree_map(lambda x: x.astype(np.float64), model)
    with pytest.raises(CheckpointError, match=r"dtype mismatch at \.layers\[0\]\.weight.*float32.*float64"):
        load(path, like=as64)
    with pytest.raises(CheckpointError, match="holds 4 arrays, but `like` has 2 leaves"):
        load(path, like=nn.Linear(3, 3))
    with pytest.raises(CheckpointError, match=r"structure mismatch.*\.layers\[0\]\.weight.*\['a'\]"):
        load(path, like={"a": np.zeros((2, 1, 3, 3), np.float32), "b": 0, "c": 0, "d": 0})
    assert isinstance(CheckpointError("x"), ValueError)


def test_truncated_and_corrupted_files(tmp_path):
    model, _ = model_and_state()
    path = tmp_path / "m.npz"
    save(path, model)
    data = path.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        bad = tmp_path / f"cut{cut}.npz"
        bad.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="truncated or corrupted|corrupted|incomplete"):
            load(bad, like=model)
    # flip bytes inside an array's data: the zip CRC catches it
    pos = data.find(b"leaf_00002.npy") + 300
    flipped = bytearray(data)
    for i in range(pos, pos + 8):
        flipped[i] ^= 0xFF
    bad = tmp_path / "flipped.npz"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="corrupted"):
        load(bad, like=model)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"definitely not a checkpoint" * 10)
    with pytest.raises(CheckpointError, match="not a readable funcgrad checkpoint"):
        load(junk)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.ones(3))
    with pytest.raises(CheckpointError, match="missing the member"):
        load(foreign)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.npz")


class _Payload:
    """Unpickling this calls os.system(...): a file appears if code ever runs."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _zip_with(path, members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())


def test_pickle_payloads_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    evil_obj = np.empty(1, dtype=object)
    evil_obj[0] = _Payload(marker)
    # sanity: this payload does run when unpickled
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_Payload(probe)))
    assert probe.exists()

    # 1) a checkpoint whose leaf is an object array (valid metadata, pickled data)
    good = tmp_path / "good.npz"
    save(good, {"w": np.zeros(1)})
    with zipfile.ZipFile(good) as zf:
        meta = zf.read("__funcgrad__.json").decode().replace('"<f8"', '"|O"')
    npy = io.BytesIO()
    np.lib.format.write_array(npy, evil_obj, allow_pickle=True)
    evil = tmp_path / "evil.npz"
    _zip_with(evil, {"__funcgrad__.json": meta, "leaf_00000.npy": npy.getvalue()})
    with pytest.raises(CheckpointError, match="pickled data.*refusing"):
        load(evil, like={"w": np.zeros(1)})
    with pytest.raises(CheckpointError, match="pickled data"):
        load(evil)
    # 2) a raw pickle file
    raw = tmp_path / "raw.npz"
    raw.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(CheckpointError, match="pickle"):
        load(raw)
    # 3) np.savez with allow_pickle (an object member next to valid ones)
    mixed = tmp_path / "mixed.npz"
    np.savez(mixed, leaf_00000=evil_obj)
    with pytest.raises(CheckpointError):
        load(mixed)
    # 4) an extra member smuggled into a valid checkpoint
    with zipfile.ZipFile(good) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["payload.pkl"] = pickle.dumps(_Payload(marker))
    smuggled = tmp_path / "smuggled.npz"
    _zip_with(smuggled, members)
    with pytest.raises(CheckpointError, match="unexpected members"):
        load(smuggled)
    assert not marker.exists()


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.npz"
    old = {"w": np.arange(4.0), "b": np.ones(2)}
    save(path, old)
    before = path.read_bytes()
    calls = {"n": 0}
    real_write = np.lib.format.write_array

    def crash_on_second(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("simulated crash mid-save")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        save(path, {"w": np.zeros(4), "b": np.zeros(2)})
    monkeypatch.undo()
    assert path.read_bytes() == before  # the previous checkpoint is intact
    assert np.array_equal(load(path, like=old)["w"], np.arange(4.0))
    assert sorted(os.listdir(tmp_path)) == ["ckpt.npz"]  # no temporary file left behind
    save(path, {"w": np.zeros(4), "b": np.zeros(2)})  # a complete save replaces it
    assert np.array_equal(load(path, like=old)["w"], np.zeros(4))


def test_save_rejects_what_it_cannot_store_safely(tmp_path):
    with pytest.raises(TypeError, match=r"leaf at \['f'\] is a function"):
        save(tmp_path / "x.npz", {"f": lambda: 0})
    with pytest.raises(TypeError, match="dtype object"):
        save(tmp_path / "x.npz", {"o": np.array([None, 1], dtype=object)})
    with pytest.raises(TypeError, match="traced value"):
        fg.grad(lambda x: save(tmp_path / "x.npz", x) or x.sum())(np.ones(2))
    assert not (tmp_path / "x.npz").exists()


def test_zip64_archives_round_trip(tmp_path, monkeypatch):
    """Archives past 4 GiB or 65,535 members get zip64 records; forced here with tiny limits."""
    tree = {"a": np.arange(50.0), "b": np.ones((3, 4), np.float32), "c": np.array(3)}
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 100)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 2)
    save(tmp_path / "z64.npz", tree)
    monkeypatch.undo()
    data = (tmp_path / "z64.npz").read_bytes()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data  # zip64 end record and locator
    back = load(tmp_path / "z64.npz", like=tree)
    assert all(np.array_equal(back[k], tree[k]) and back[k].dtype == tree[k].dtype for k in tree)
    with np.load(tmp_path / "z64.npz", allow_pickle=False) as z:
        assert np.array_equal(z["leaf_00000"], tree["a"])


def test_save_refuses_metadata_the_loader_would_refuse(tmp_path, monkeypatch):
    import funcgrad.serialization as ser
    import funcgrad.tensor as ft

    import funcgrad.tensor.torch_pickle as tp

    monkeypatch.setattr(ser, "MAX_METADATA_BYTES", 500)
    monkeypatch.setattr(tp, "MAX_PICKLE_BYTES", 500)
    with pytest.raises(ValueError, match="over the 500-byte limit"):
        save(tmp_path / "big.npz", {f"k{i}": np.zeros(1) for i in range(20)})
    with pytest.raises(ValueError, match="over the 500-byte limit"):
        ft.save({f"k{i}": ft.zeros(1) for i in range(20)}, tmp_path / "big.ft")
    assert not os.listdir(tmp_path)


def test_duplicate_key_paths_need_like(tmp_path):
    class Key:
        def __init__(self, i):
            self.i = i

        def __repr__(self):
            return "'k'"

        def __lt__(self, other):
            return self.i < other.i

    tree = {Key(0): np.zeros(1), Key(1): np.ones(1)}  # two keys that print alike
    save(tmp_path / "dup.npz", tree)
    with pytest.raises(CheckpointError, match=r"two leaves have the key path.*pass like="):
        load(tmp_path / "dup.npz")
    back = load(tmp_path / "dup.npz", like=tree)
    assert [float(v[0]) for v in back.values()] == [0.0, 1.0]


def test_checkpoint_error_is_named_by_its_public_module(tmp_path):
    """Issue 31: tracebacks showed funcgrad._npz_reader.CheckpointError."""
    assert f"{CheckpointError.__module__}.{CheckpointError.__qualname__}" == "funcgrad.serialization.CheckpointError"
    assert pickle.loads(pickle.dumps(CheckpointError("x"))).args == ("x",)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CheckpointError):
        fg.load(bad)
