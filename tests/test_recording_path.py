"""Issue 30: one rule dispatch for every walk (``VJPNode.run_rules``), primitives named at their
declaration (``front_of``), and the Tensor layer's per-primitive facts keyed by the primitive."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft
from funcgrad.core import Primitive, defprimitive, get_primitive
from funcgrad.core.declare import front_of
from funcgrad.core.reverse import VJPNode
from funcgrad.tensor import graph, torch_names


def _scale_raw(x, y):
    return x * y


scale = defprimitive(_scale_raw, name="scale_for_run_rules", vjp=(lambda g, ans, x, y: g * y, None))


def test_run_rules_runs_each_traced_positions_rule():
    node = VJPNode(get_primitive(scale), [], [0], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    (ct,) = node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs)
    assert ct == 3.0


def test_run_rules_names_the_missing_rule():
    node = VJPNode(get_primitive(scale), [], [1], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    with pytest.raises(NotImplementedError, match="VJP of argument 1 of primitive 'scale_for_run_rules'"):
        node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs)


def test_run_rules_prefers_vjp_all_and_gives_it_every_argnum():
    seen = []

    def vjp_all(g, ans, argnums, x, y):
        seen.append(argnums)
        return [g * y if k == 0 else g * x for k in argnums]

    both = defprimitive(_scale_raw, name="scale_all_for_run_rules", vjp_all=vjp_all)
    node = VJPNode(get_primitive(both), [], [0, 1], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    assert node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs) == [3.0, 2.0]
    assert seen == [(0, 1)]


def test_the_core_walk_and_the_tensor_walk_agree_through_run_rules():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    want = fg.grad(lambda x, y: fnp.sum(fnp.arctan2(x, y)), argnums=(0, 1))(a, b)
    x, y = ft.tensor(a, requires_grad=True), ft.tensor(b, requires_grad=True)
    ft.atan2(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want[0])
    np.testing.assert_allclose(y.grad.numpy(), want[1])


def test_front_of_names_the_primitive_at_the_declaration():
    @front_of(scale)
    def scale_by(x, factor=2.0):
        return scale(x, factor)

    assert scale_by.primitive is get_primitive(scale)
    for fn in (fnp.sum, fnp.mean, fnp.prod, fnp.amax):
        assert isinstance(fn.primitive, Primitive) and fn.primitive.name == fn.__name__.replace("amax", "max")


def test_tensor_facts_are_keyed_by_primitive_objects():
    assert all(isinstance(p, Primitive) for p in graph.VIEW_PRIMITIVES)
    assert all(isinstance(p, Primitive) for p in torch_names.NODE_NAMES)
    assert torch_names.torch_name(get_primitive(fnp.multiply)) == "MulBackward0"
    assert torch_names.torch_name(get_primitive(scale)) == "ScaleForRunRulesBackward0"  # the default
    x = ft.ones(2, 3, requires_grad=True)
    assert type((x * 2).grad_fn).__name__ == "MulBackward0"
    assert type(x.reshape(6).grad_fn).__name__ == "ViewBackward0" and x.reshape(6)._base is x
    assert type(x.expand(4, 2, 3).grad_fn).__name__ == "ExpandBackward0"
