"""core.reverse.backward_pass as the one walk of every layer: visitors, pruning to targets,
reentrant passes nested deeper than Python's recursion limit, and carried thread state."""

import sys
import threading

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.reverse import DECLINE, VJPNode, Visitor, backward_pass, carry_thread_state


def _chain(n):
    """x -> n nodes in a row; each node's cotangent to its parent is its own plus one."""
    nodes = [VJPNode(None, (), (), None, None, None)]
    for _ in range(n):
        nodes.append(VJPNode(None, (nodes[-1],), (0,), None, None, None))
    return nodes


class _PlusOne(Visitor):
    def __init__(self):
        self.seen = []

    def visit(self, node, g, live):
        self.seen.append((node, g, live))
        return [g + 1] * len(node.parents) if node.parents else None


def test_visitor_does_each_nodes_work_and_the_walk_keeps_order_and_sums():
    x, a, b = _chain(2)
    c = VJPNode(None, (a, b), (0, 1), None, None, None)  # a fans out to b and c
    v = _PlusOne()
    backward_pass([(c, 0)], visitor=v)
    order = [n for n, _, _ in v.seen]
    assert order.index(b) < order.index(a) < order.index(x)
    got = {n: g for n, g, _ in v.seen}
    assert got[b] == 1 and got[a] == 1 + 2 and got[x] == 4


def test_targets_prune_the_walk():
    x, a, b = _chain(2)
    y = VJPNode(None, (), (), None, None, None)
    d = VJPNode(None, (b, y), (0, 1), None, None, None)
    v = _PlusOne()
    backward_pass([(d, 0)], visitor=v, targets=[a])
    visited = {n: live for n, _, live in v.seen}
    assert set(visited) == {d, b, a}  # neither x (behind the target) nor y (leads to no target)
    assert visited[a] is False and visited[b] is True


class _Reenter(Visitor):
    """Each node's work starts a whole nested pass, ``depth`` deep."""

    state = threading.local()

    def __init__(self, depth):
        self.depth = depth
        self.threads = set()

    def visit(self, node, g, live):
        self.threads.add(threading.get_ident())
        assert getattr(self.state, "mode", None) == "carried"
        if self.depth > 0:
            self.depth -= 1
            (x,) = _chain(0)
            backward_pass([(VJPNode(None, (x,), (0,), None, None, None), 0)], visitor=self)
        return [g] if node.parents else None


def test_reentrant_passes_nest_deeper_than_the_recursion_limit():
    carry_thread_state(_Reenter.state)
    _Reenter.state.mode = "carried"
    depth = 3 * sys.getrecursionlimit()
    v = _Reenter(depth)
    x, a = _chain(1)
    backward_pass([(a, 0)], visitor=v)
    assert v.depth == 0 and len(v.threads) > 1


def test_errors_of_a_nested_pass_on_another_thread_reach_the_caller():
    class Fails(_Reenter):
        def visit(self, node, g, live):
            if self.depth == 0:
                raise ValueError("the deepest pass failed")
            return super().visit(node, g, live)

    carry_thread_state(_Reenter.state)
    _Reenter.state.mode = "carried"
    x, a = _chain(1)
    with pytest.raises(ValueError, match="deepest pass failed"):
        backward_pass([(a, 0)], visitor=Fails(2 * sys.getrecursionlimit()))


def test_functional_grad_unchanged():
    def f(x):
        return fnp.sum(fnp.tanh(fnp.sin(x)) * x)

    x = np.array([0.1, 0.2, 0.3])
    c = np.cos(x)
    t = np.tanh(np.sin(x))
    np.testing.assert_allclose(fg.grad(f)(x), t + x * (1 - t * t) * c)


class _StepPlusOne(_PlusOne):
    """The same work, done by ``step`` for nodes of one parent except ``declined`` ones."""

    def __init__(self, declined=()):
        super().__init__()
        self.stepped = []
        self.declined = set(declined)

    def step(self, node, g):
        if node in self.declined:
            return DECLINE
        self.stepped.append(node)
        return g + 1


def test_visitor_step_runs_single_parent_nodes_and_hands_declined_ones_to_visit():
    x, a, b = _chain(2)
    c = VJPNode(None, (a, b), (0, 1), None, None, None)  # two parents: always visited
    for declined in ((), (b,), (a, b)):
        v = _StepPlusOne(declined)
        backward_pass([(c, 0)], visitor=v)
        assert [g for n, g, _ in v.seen if n is x] == [4]  # the same sums as with visits only
        assert set(v.stepped) == {a, b} - set(declined)
        assert {n for n, _, _ in v.seen} == {c, x} | set(declined)
    # a pruned pass (targets) visits every node: step is not tried
    v = _StepPlusOne()
    backward_pass([(c, 0)], visitor=v, targets=[x])
    assert v.stepped == []
