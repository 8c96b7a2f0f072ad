"""PyTorch's node names come from the op's declaration (issue 30): ``torch_names.named(name, fn)``
makes the node of ``fn``'s primitive of class ``name`` when the node is made, not by renaming it
after recording. Ops of one primitive whose PyTorch name depends on the call (``t()`` and
``permute`` both call ``transpose``) name it this way; only composites of ``funcgrad.nn`` (whose
last primitive depends on the reduction) name their result's node after the call
(``tensor_helpers.named_result``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import funcgrad.numpy as fnp
import funcgrad.tensor as ft
from funcgrad.tensor import grad_mode, tensor_helpers, torch_names
from funcgrad.tensor.torch_names import named


def _no_renames(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(node, name):  # noqa: ANN001
        raise AssertionError(f"{type(node).__name__} renamed to {name} after it was made")

    monkeypatch.setattr(tensor_helpers, "rename_node", refuse)
    monkeypatch.setattr(torch_names, "rename_node", refuse)


CASES = [
    (lambda x: x.t(), "TBackward0"),
    (lambda x: x.permute(1, 0), "PermuteBackward0"),
    (lambda x: x.transpose(0, 1), "TransposeBackward0"),
    (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
    (lambda x: x.reshape(6), "ViewBackward0"),
    (lambda x: x.t().reshape(6), "UnsafeViewBackward0"),  # not a view of its input: a copy
    (lambda x: x[0], "SelectBackward0"),
    (lambda x: x[:, 1:], "SliceBackward0"),
    (lambda x: x[[0, 1]], "IndexBackward0"),
    (lambda x: x.index_select(1, ft.tensor([0, 2])), "IndexSelectBackward0"),
    (lambda x: x.gather(1, ft.tensor([[0], [1]])), "GatherBackward0"),
    (lambda x: x.sum(1), "SumBackward1"),
    (lambda x: x.mean(0), "MeanBackward1"),
    (lambda x: x.max(), "MaxBackward1"),
    (lambda x: x.max(1).values, "MaxBackward0"),
    (lambda x: x.max(1, keepdim=True).values, "MaxBackward0"),
    (lambda x: x.amax(1), "AmaxBackward0"),
    (lambda x: x.var(1), "VarBackward0"),
    (lambda x: x.std(), "StdBackward0"),
    (lambda x: x.square(), "PowBackward0"),
    (lambda x: x.relu(), "ReluBackward0"),
    (lambda x: 2.0 - x, "RsubBackward1"),
    (lambda x: 2.0 ** x, "PowBackward2"),
    (lambda x: x.reciprocal(), "ReciprocalBackward0"),
    (lambda x: x.rsqrt(), "RsqrtBackward0"),
    (lambda x: x.softmax(1), "SoftmaxBackward0"),
    (lambda x: x.log_softmax(1), "LogSoftmaxBackward0"),
    (lambda x: x.logsumexp(1), "LogsumexpBackward0"),
    (lambda x: x.logsumexp(1, keepdim=True), "LogsumexpBackward0"),
    (lambda x: x.clamp(0.1, 0.5), "ClampBackward1"),
    (lambda x: x.clamp(min=0.1), "ClampBackward1"), (lambda x: x.clamp_min(0.1), "ClampMinBackward0"),
    (lambda x: x.clamp(max=ft.tensor(0.5)), "ClampBackward0"), (lambda x: x.clamp_max(ft.tensor(0.5)), "ClampMaxBackward1"),
    (lambda x: x.masked_fill(x > 0.3, 0.0), "MaskedFillBackward0"),
    (lambda x: x.norm(), "LinalgVectorNormBackward0"),
    (lambda x: x.norm(p=1), "LinalgVectorNormBackward0"),
    (lambda x: x.clone(), "CloneBackward0"),
    (lambda x: x.repeat(2, 1), "RepeatBackward0"),
    (lambda x: x[:1].expand(2, 3), "ExpandBackward0"),
    (lambda x: x @ ft.ones(3), "MvBackward0"),
    (lambda x: ft.cat([x, x]), "CatBackward0"),
    (lambda x: ft.stack([x, x]), "StackBackward0"),
    (lambda x: ft.where(x > 0.3, x, 0.0), "WhereBackward0"),
    (lambda x: ft.einsum("ij->i", x), "EinsumBackward0"),
    (lambda x: x.squeeze(), "SqueezeBackward0"),
    (lambda x: x.scatter_add(1, ft.tensor([[0], [1]]), ft.ones(2, 1, dtype=ft.float64)), "ScatterAddBackward0"),
]


@pytest.mark.parametrize("op, name", CASES, ids=[c[1] + str(i) for i, c in enumerate(CASES)])
def test_the_node_is_made_with_its_pytorch_name(op, name, monkeypatch):
    _no_renames(monkeypatch)
    x = ft.tensor(np.linspace(0.1, 0.6, 6).reshape(2, 3), requires_grad=True) * 1.0
    out = op(x)
    assert type(out.grad_fn).__name__ == name
    assert out.grad_fn.name() == name
    out.sum().backward()  # and the node runs its primitive's rules


def test_one_primitive_two_names():
    x = ft.randn(2, 3, requires_grad=True)
    assert x.t().grad_fn.name() == "TBackward0"
    assert x.permute(1, 0).grad_fn.name() == "PermuteBackward0"
    assert fnp.transpose(x).grad_fn.name() == "PermuteBackward0"  # the primitive's own (table) name


def test_the_request_names_only_its_primitive():
    x = ft.randn(3, requires_grad=True)

    def two_ops(a):
        return fnp.multiply(fnp.add(a, 1.0), 2.0)

    out = named("MyBackward0", two_ops, fnp.add)(x)
    assert out.grad_fn.name() == "MulBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "MyBackward0"
    assert grad_mode.state.name_request is None  # restored after the call


def test_the_outermost_op_names_the_pieces(monkeypatch):
    _no_renames(monkeypatch)
    x = ft.randn(3, 2, requires_grad=True) * 1.0
    assert {p.grad_fn.name() for p in x.unbind()} == {"UnbindBackward0"}
    assert {p.grad_fn.name() for p in x.split(2)} == {"SplitBackward0"}
    assert {p.grad_fn.name() for p in x.split([1, 2])} == {"SplitWithSizesBackward0"}
    assert {p.grad_fn.name() for p in x.chunk(3)} == {"SplitBackward0"}


def test_a_request_is_per_thread():
    x = ft.randn(2, 2, requires_grad=True)
    seen = {}

    def other_thread():
        seen["request"] = grad_mode.state.name_request
        seen["name"] = x.transpose(0, 1).grad_fn.name()

    def in_main(a):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        return fnp.swapaxes(a, 0, 1)

    out = named("SomethingElseBackward0", in_main, fnp.swapaxes)(x)
    assert out.grad_fn.name() == "SomethingElseBackward0"
    assert seen == {"request": None, "name": "TransposeBackward0"}


def test_a_stale_view_refreshed_inside_a_named_op_keeps_its_own_name():
    base = ft.randn(3, 2, dtype=ft.float64, requires_grad=True) * 1.0
    v = base[0]
    base.mul_(2)  # v is stale now: its next use re-derives it from base
    out = v[1:]  # a getitem, named SliceBackward0; v's refresh is a getitem too
    assert out.grad_fn.name() == "SliceBackward0"
    assert v.grad_fn.name() == "AsStridedBackward0"
    out.sum().backward()


def test_saved_tensor_hooks_inside_a_named_op_are_not_named():
    names = []

    def pack(t):
        names.append((t * 1.0).grad_fn)  # no grad inside pack: no node
        return t

    x = ft.randn(2, 3, requires_grad=True) * 1.0
    with ft.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = x.softmax(1)
    assert out.grad_fn.name() == "SoftmaxBackward0"
    assert names and all(n is None for n in names)


def test_composites_of_funcgrad_nn_name_their_result():
    x = ft.randn(4, 3, requires_grad=True)
    y = ft.randn(4, 3)
    assert ft.nn.functional.mse_loss(x, y).grad_fn.name() == "MseLossBackward0"
    assert ft.nn.functional.mse_loss(x, y, reduction="none").grad_fn.name() == "MseLossBackward0"
    assert ft.nn.functional.cross_entropy(x, ft.tensor([0, 1, 2, 0])).grad_fn.name() == "NllLossBackward0"


def test_a_name_that_is_the_primitives_own_costs_nothing():
    assert named("PermuteBackward0", fnp.transpose) is fnp.transpose  # the table's name: no request
    assert named("TBackward0", fnp.transpose) is not fnp.transpose
    with pytest.raises(TypeError, match="not a funcgrad primitive"):
        named("XBackward0", lambda a: a)


def test_the_count_of_named_calls_returns_to_zero_after_an_error():
    x = ft.randn(2, 3, requires_grad=True)
    with pytest.raises(ValueError):
        x.reshape(5)  # a named call (ViewBackward0 / UnsafeViewBackward0) that fails
    assert torch_names.NAMING[0] == 0 and grad_mode.state.name_request is None
    y = x.sin()  # the short way again
    assert y.grad_fn.name() == "SinBackward0"


def test_names_in_threads_at_once():
    errors = []

    def work():
        try:
            for _ in range(200):
                x = ft.randn(2, 3, requires_grad=True) * 1.0
                assert x.t().grad_fn.name() == "TBackward0"
                assert x.permute(1, 0).grad_fn.name() == "PermuteBackward0"
                assert x.sin().grad_fn.name() == "SinBackward0"
                assert {p.grad_fn.name() for p in x.unbind()} == {"UnbindBackward0"}
        except AssertionError as err:  # pragma: no cover - the failure is reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert torch_names.NAMING[0] == 0
