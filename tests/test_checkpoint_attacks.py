"""Hostile checkpoints (issue 14): each crafted file is loaded in a child process limited to
1 GiB of address space; the load must raise CheckpointError naming the file, the member or
key path and what was wrong, and take little memory (the files hold a few KB)."""

from __future__ import annotations

import functools
import os
import zipfile

import numpy as np
import pytest

import checkpoint_attacks as ca
import funcgrad as fg
import funcgrad.tensor as ft

SMALL_PEAK = 4 * 2**20  # bytes a refused load may allocate (tracemalloc peak)

# name: (loader, builder(dir) -> path, words the message must contain)
FG_ATTACKS = {
    "zip_bomb": (lambda d: ca.zip_bomb(d), ["'leaf_00000.npy'", "compressed (deflate)", "refused"]),
    "npy_1e12_header": (lambda d: ca.npy_claims(d, 10**12, False), ["'leaf_00000.npy'", "['w']", "(1000000000000,)", "(4,)"]),
    "npy_1e12": (lambda d: ca.npy_claims(d, 10**12, True), ["'leaf_00000.npy'", "8000000000000 bytes"]),
    "npy_1e9": (lambda d: ca.npy_claims(d, 10**9, True), ["'leaf_00000.npy'", "8000000000 bytes"]),
    "leaf_claims_4gib": (lambda d: ca.header_claims_4gib(d, "leaf_00000.npy"), ["'leaf_00000.npy'", "claims 4294967294 bytes"]),
    "meta_claims_4gib": (lambda d: ca.header_claims_4gib(d, ca.META), ["'__funcgrad__.json'", "claims 4294967294"]),
    "cd_claims_4gib": (lambda d: ca.cd_claims_4gib(d), ["central directory", "4294967294"]),
    "duplicate_members": (lambda d: ca.duplicate_members(d), ["'leaf_00000.npy'", "appears twice"]),
    "duplicate_metadata": (lambda d: ca.duplicate_meta(d), ["'__funcgrad__.json'", "appears twice"]),
    "deflated": (lambda d: ca.compressed(d, zipfile.ZIP_DEFLATED), ["compressed (deflate)", "fg.save never"]),
    "bzip2": (lambda d: ca.compressed(d, zipfile.ZIP_BZIP2), ["compressed (bzip2)"]),
    "lzma": (lambda d: ca.compressed(d, zipfile.ZIP_LZMA), ["compressed (lzma)"]),
    # bit flips in the central directory that zipfile turns into NotImplementedError / RuntimeError
    "unknown_method": (lambda d: ca.bit_in_cd(d, 10, "<H", 99, "method99"), ["'leaf_00000.npy'", "method 99"]),
    "encrypted_flag": (lambda d: ca.bit_in_cd(d, 8, "<H", 1, "encrypted"), ["'leaf_00000.npy'", "encrypted"]),
    "offset_past_end": (lambda d: ca.bit_in_cd(d, 42, "<L", 2**31, "offset"), ["'leaf_00000.npy'", "at offset 2147483648, past the end"]),
}
for _name, (_text, _words) in ca.MALFORMED_META.items():
    FG_ATTACKS["meta_" + _name] = (functools.partial(ca.with_meta, tag=_name, meta_text=_text), _words)
FT_ATTACKS = {name: (functools.partial(ca.ft_file, tag=name, structure=s, arrays=a), words)
              for name, (s, a, words) in ca.FT_CRAFTED.items()}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("attacks"))
    jobs, sizes = [], {}
    for loader, table in (("fg", FG_ATTACKS), ("ft", FT_ATTACKS)):
        for name, (build, _) in table.items():
            path = build(d)
            sizes[name] = os.path.getsize(path)
            jobs.append((name, loader, path))
    report = ca.load_in_child(jobs)
    return report, sizes


def _check(outcomes, name, words):
    report, sizes = outcomes
    res = report["results"][name]
    assert res["error"] is not None, f"{name}: loaded without error"
    kind, msg = res["error"]
    assert kind == "CheckpointError", f"{name}: {kind}: {msg}"
    for w in [w for w in words if w]:
        assert w in msg, f"{name}: {w!r} not in {msg!r}"
    assert sizes[name] < 2**20 and res["traced_peak"] < SMALL_PEAK, (name, sizes[name], res["traced_peak"])
    return msg


@pytest.mark.parametrize("name", sorted(FG_ATTACKS))
def test_fg_load_refuses_crafted_file(outcomes, name):
    msg = _check(outcomes, name, FG_ATTACKS[name][1])
    assert msg.startswith("fg.load: ") and ".npz" in msg.split()[1]  # names the file


@pytest.mark.parametrize("name", sorted(FT_ATTACKS))
def test_ft_load_refuses_crafted_structure(outcomes, name):
    msg = _check(outcomes, name, FT_ATTACKS[name][1])
    assert msg.startswith("ft.load: ") and ".ft" in msg


def test_refusals_stay_within_memory(outcomes):
    report, sizes = outcomes
    assert sizes["zip_bomb"] < 200_000  # a ~130 KB file that would inflate to 128 MiB
    assert report["rss_rise"] < 48 * 2**20, report["rss_rise"]  # all loads together, in the child


def test_valid_checkpoint_peak_is_its_data(tmp_path):
    """A 16 MB checkpoint loads under the same limit with one copy of its data, for both
    memory orders and a file written by ft.save."""
    data = {"a": np.arange(2**20, dtype=np.float64).reshape(1024, 1024).T, "b": np.ones(2**20)}
    path = tmp_path / "big.npz"
    fg.save(path, data)
    ft_path = tmp_path / "big.ft"
    ft.save({"w": ft.ones(2**21)}, ft_path)
    report = ca.load_in_child([("fg", "fg", str(path)), ("ft", "ft", str(ft_path))])
    for name, nbytes in (("fg", 16 * 2**20), ("ft", 8 * 2**20)):
        res = report["results"][name]
        assert res["error"] is None, res
        assert res["traced_peak"] < nbytes * 1.05 + 2**20, (name, res["traced_peak"])
    back = fg.load(path, like=data)
    assert np.array_equal(back["a"], data["a"]) and np.array_equal(back["b"], data["b"])
    assert back["a"].flags.f_contiguous  # the memory order is kept


def test_messages_name_file_member_and_key_path(tmp_path):
    path = ca.npy_claims(str(tmp_path), 10**9, True)
    with pytest.raises(fg.serialization.CheckpointError) as e:
        fg.load(path)
    msg = str(e.value)
    assert str(path) in msg and "'leaf_00000.npy'" in msg and "['w']" in msg and "(1000000000,)" in msg
