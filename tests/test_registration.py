"""Registration instead of patching: funcgrad.numpy registers with the core through its
hooks, and every public name of funcgrad.numpy is the function its own module defines."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.numpy.creation
import funcgrad.numpy.shape_ops
from funcgrad.core import Box, hooks
from funcgrad.core import reverse as core_reverse


def test_every_public_name_is_its_modules_function():
    assert fnp.reshape is funcgrad.numpy.shape_ops.reshape
    assert fnp.zeros is funcgrad.numpy.creation.zeros
    wrong = []
    for name in dir(fnp):
        value = getattr(fnp, name)
        module = getattr(value, "__module__", None) or ""
        if name.startswith("_") or not callable(value) or not module.startswith("funcgrad.numpy"):
            continue
        mod = importlib.import_module(module)
        own = getattr(value, "__name__", name)  # an alias (row_stack = vstack) names its original
        if getattr(mod, name, None) is not value and getattr(mod, own, None) is not value:
            wrong.append(f"{name} ({module})")
    assert wrong == []


def test_core_is_not_patched_by_numpy():
    # what the core needs from an array library lives in core.hooks, set by register_* calls
    assert not hasattr(core_reverse, "zeros_like") or core_reverse.zeros_like is hooks.zeros_like
    assert hooks._fallback is not None and hooks._zeros_like is not hooks._default_zeros_like
    assert Box.__add__ is funcgrad.numpy.box_methods.ArrayMethods.__add__


def test_register_box_methods_gives_boxes_a_mixin():
    class Extra:
        def twice(self):
            return self * 2

    hooks.register_box_methods(Extra)
    try:
        assert np.allclose(fg.grad(lambda x: fnp.sum(x.twice()))(np.ones(3)), 2.0)
    finally:
        del Box.twice


def test_watch_batching_fallback_sees_a_primitive_without_rule():
    prim = fg.primitive(lambda x: np.sin(x), "sin_without_batch_rule")
    with hooks.watch_batching_fallback() as seen, pytest.warns(UserWarning, match="no batching rule"):
        out = fg.vmap(prim)(np.arange(3.0))
    assert np.allclose(out, np.sin(np.arange(3.0)))
    assert seen == ["sin_without_batch_rule"]
    with hooks.watch_batching_fallback() as seen:
        fg.vmap(fnp.sin)(np.arange(3.0))
    assert seen == []
