"""``repr`` of tensors against torch 2.13's, recorded in tests/fixtures/torch_repr.json by
tests/fixtures/make_torch_repr.py: empty tensors of every rank, 0-d, dtypes, requires_grad and
grad_fn suffixes, complex and bool layouts, summarised large tensors, print options."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import funcgrad.tensor as ft

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "fixtures"))
from make_torch_repr import CASES  # noqa: E402

RECORDED = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "torch_repr.json").read_text())


def _ours(text: str) -> str:
    return text.replace("torch.", "ft.")  # dtypes print as ft.float64 (documented)


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_torch(name):
    ft.manual_seed(0)
    assert repr(eval(CASES[name], {"ft": ft})) == _ours(RECORDED[name])  # noqa: S307


def test_print_options_match_torch():
    try:
        ft.set_printoptions(precision=2)
        assert repr(ft.tensor([1 / 3, 2.0])) == RECORDED["precision_2"]
        ft.set_printoptions(profile="default", sci_mode=True)
        assert repr(ft.tensor([1.5, 2.0])) == RECORDED["sci_mode_true"]
        ft.set_printoptions(profile="default")
        ft.set_printoptions(threshold=5, edgeitems=2)
        assert repr(ft.arange(10.0)) == RECORDED["threshold_5"]
    finally:
        ft.set_printoptions(profile="default")
    assert repr(ft.tensor([1 / 3])) == "tensor([0.3333])"


def test_print_options_leave_numpy_alone():
    before = np.get_printoptions()
    try:
        ft.set_printoptions(precision=1, threshold=3)
        assert np.get_printoptions() == before
    finally:
        ft.set_printoptions(profile="default")


def test_bad_profile_is_named():
    with pytest.raises(ValueError, match="profile must be one of.*'nope'"):
        ft.set_printoptions(profile="nope")


def test_str_is_repr_and_format_of_0d_formats_the_number():
    t = ft.tensor([0.5, 1.25])
    assert str(t) == repr(t) == "tensor([0.5000, 1.2500])"
    assert f"{ft.tensor(2.5):.2f}" == "2.50"
