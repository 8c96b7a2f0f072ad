"""ft.autograd.graph.to_dot: the Tensor side's backward graph as Graphviz DOT."""

from __future__ import annotations

import re
import shutil

import pytest

import funcgrad.tensor as ft


def test_to_dot_follows_next_functions():
    x = ft.randn(3, requires_grad=True)
    w = ft.randn(3, requires_grad=True)
    y = (x * w).sin().sum()
    dot = ft.autograd.graph.to_dot(y)
    labels = dict(re.findall(r'^\s+(\w+) \[label="([^"]*)"', dot, re.M))
    edges = re.findall(r"^\s+(\w+) -> (\w+)", dot, re.M)
    names = {k: v.split("\\n")[0] for k, v in labels.items()}
    assert sorted(names.values()) == sorted(["output 0", "SumBackward0", "SinBackward0", "MulBackward0", "leaf", "leaf"])
    by = {v: k for k, v in names.items() if v != "leaf"}
    assert (by["SinBackward0"], by["SumBackward0"]) in edges and (by["SumBackward0"], "out0") in edges
    leaves = [k for k, v in names.items() if v == "leaf"]
    assert {(leaf, by["MulBackward0"]) for leaf in leaves} <= set(edges)
    assert "saves other, self" in labels[by["MulBackward0"]] and "float32[3]" in labels[leaves[0]]


def test_to_dot_of_several_outputs_and_a_leaf_output():
    x = ft.randn(2, requires_grad=True)
    dot = ft.autograd.graph.to_dot([x * 2, x])
    assert "out0" in dot and "out1" in dot and "MulBackward0" in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")
def test_to_svg():
    x = ft.randn(2, requires_grad=True)
    assert "<svg" in ft.autograd.graph.to_svg((x * x).sum())
