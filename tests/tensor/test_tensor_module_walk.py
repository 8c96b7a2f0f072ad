"""``Module.parameters()`` walks the module tree without building names: the same tensors in the same order
as ``named_parameters()`` (shared modules and parameters once), and a subclass's ``named_parameters`` or
``named_modules`` still decides."""

from __future__ import annotations

import funcgrad.tensor as ft


def _tree():
    shared = ft.nn.Linear(2, 2)
    inner = ft.nn.Sequential(shared, ft.nn.Linear(2, 3), ft.nn.ReLU())
    net = ft.nn.Sequential(shared, inner, ft.nn.BatchNorm1d(3), ft.nn.Linear(3, 1))
    return net, shared


def test_parameters_follow_named_parameters():
    net, shared = _tree()
    named = [p for _, p in net.named_parameters()]
    got = list(net.parameters())
    assert len(got) == len(named) == 8 and all(a is b for a, b in zip(got, named))
    assert [p for p in net.parameters(recurse=False)] == []
    assert all(a is b for a, b in zip(shared.parameters(recurse=False), [shared.weight, shared.bias]))


def test_a_shared_parameter_comes_once():
    a, b = ft.nn.Linear(2, 2), ft.nn.Linear(2, 2)
    b.weight = a.weight
    net = ft.nn.Sequential(a, b)
    got = list(net.parameters())
    assert len(got) == 3 and got[0] is a.weight and got[2] is b.bias


def test_a_subclass_that_renames_its_parameters_decides():
    class OnlyWeights(ft.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ft.nn.Linear(2, 2)

        def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
            return iter([("w", self.lin.weight)])

    class Flat(ft.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = ft.nn.Linear(2, 2), ft.nn.Linear(2, 2)

        def named_modules(self, memo=None, prefix=""):
            return iter([("", self), ("b", self.b)])

    m = OnlyWeights()
    assert list(m.parameters()) == [m.lin.weight]
    f = Flat()
    got = list(f.parameters())
    assert len(got) == 2 and got[0] is f.b.weight and got[1] is f.b.bias
