"""The short ways of a training step (issue 26): the backward visitor's one-frame leaves and primitive nodes,
the optimizers' slot tensors updated in place, the parameter walk gathered in one list. Each must do what the
general path does (PyTorch's semantics); these cases fail if a short way skips a check."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_leaves_given_one_gradient_array_get_their_own_grads():
    a = ft.ones(3, requires_grad=True)
    b = ft.ones(3, requires_grad=True)
    (a + b).backward(ft.ones(3))  # add's rule hands the same array to both leaves
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.mul_(5.0)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))


def test_leaf_grad_layout_accumulation_and_hooks():
    w = ft.tensor(np.asfortranarray(np.arange(6.0).reshape(2, 3)), requires_grad=True)
    x = ft.tensor(np.arange(6.0).reshape(2, 3))
    (w * x).sum().backward()
    assert w.grad.numpy().flags.f_contiguous  # PyTorch's layout contract: the leaf's strides
    first = w.grad
    seen = []
    w.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    w.register_post_accumulate_grad_hook(lambda p: seen.append("post"))
    (w * x).sum().backward()
    assert w.grad is first  # accumulated in place
    np.testing.assert_array_equal(w.grad.numpy(), 3 * x.numpy())
    np.testing.assert_array_equal(seen[0], x.numpy())
    assert seen[1] == "post"


def test_nodes_of_several_inputs_check_what_they_saved():
    a = ft.ones(3, requires_grad=True)
    c = ft.ones(3, requires_grad=True) * 1.0
    y = (a * c).sum()
    c.add_(1.0)  # a saved value changed in place: the version check raises
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    a.grad = None
    y = (a * (ft.ones(3) * 2.0)).sum()
    y.backward(retain_graph=True)
    y.backward()  # the graph was kept: the gradients add up
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 4.0))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


@pytest.mark.parametrize("n_params", [2, 10])  # the list update and the flat (concatenated) one
@pytest.mark.parametrize("name", ["SGD", "Adam", "NAdam"])
def test_slot_tensors_stay_the_same_objects_from_step_to_step(name, n_params):
    params = [ft.ones(4, requires_grad=True) for _ in range(n_params)]
    kwargs = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    opt = getattr(ft.optim, name)(params, **kwargs)
    held = None
    for k in range(3):
        opt.zero_grad()
        sum(((p - k) ** 2).sum() for p in params).backward()
        opt.step()
        slots = [dict(opt.state[p]) for p in params]
        if held is None:
            held = slots
            versions = [{s: t._version for s, t in st.items()} for st in slots]
            order = {"SGD": ["momentum_buffer"], "Adam": ["step", "exp_avg", "exp_avg_sq"],
                     "NAdam": ["step", "mu_product", "exp_avg", "exp_avg_sq"]}[name]
            assert all(list(st) == order for st in slots)  # PyTorch's order of the slots
            continue
        for st, before, v0 in zip(slots, held, versions):
            for s, t in st.items():
                assert t is before[s]
                if s not in ("step", "mu_product"):
                    assert t._version == v0[s] + k
    if name != "SGD":
        assert all(int(opt.state[p]["step"].item()) == 3 for p in params)
    loop = getattr(ft.optim, name)([ft.ones(4, requires_grad=True)], foreach=False, **kwargs)
    (p0,) = loop.param_groups[0]["params"]
    for k in range(3):
        loop.zero_grad()
        ((p0 - k) ** 2).sum().backward()
        loop.step()
    for s, t in loop.state[p0].items():
        np.testing.assert_allclose(opt.state[params[-1]][s].numpy(), t.numpy(), rtol=1e-6)


def test_parameters_walk_leaves_out_nones_and_repeats_in_named_order():
    lin = ft.nn.Linear(2, 2)
    net = ft.nn.Sequential(lin, ft.nn.ReLU(), ft.nn.Conv2d(1, 1, 1, bias=False))
    net.again = lin  # a module met twice
    net.add_module("nothing", None)
    net.tied = lin.weight  # a parameter met twice
    net.me = net  # a module that holds itself
    names = [n for n, _ in net.named_parameters()]
    params = list(net.parameters())
    assert len(params) == len(names) == 3
    assert [id(p) for p in params] == [id(p) for _, p in net.named_parameters()]
    assert [type(m).__name__ for m in net.modules()] == ["Sequential", "Linear", "ReLU", "Conv2d"]
    assert net._module_list() == list(net.modules())


def test_nodes_of_several_outputs_take_zeros_for_the_unused_and_check_what_they_saved():
    x = ft.tensor(np.arange(1.0, 7.0), requires_grad=True)
    first, second = (x * 1.0).split(3)
    (first * 2.0).sum().backward()  # the second output gets no gradient: zeros there
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2, 0, 0, 0])
    a = ft.tensor(np.diag([1.0, 2.0, 3.0]), requires_grad=True)
    b = a * 1.0
    w, v = ft.linalg.eigh(b)
    w.add_(1.0)  # a saved output changed in place: the version check raises
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


def test_relu_takes_the_one_frame_recorder(monkeypatch):
    import funcgrad.tensor.tensor_trace as trace
    from funcgrad.core.reverse import USE_STEPS

    taken = []
    one = trace.TensorTrace.record_one

    def spy(self, prim, args, argnums):  # type: ignore[no-untyped-def]
        out = one(self, prim, args, argnums)
        taken.append(out is not USE_STEPS)
        return out

    monkeypatch.setattr(trace.TensorTrace, "record_one", spy)
    x = ft.tensor([1.0, -2.0, float("nan")], requires_grad=True)
    out = ft.relu(x * 1.0)
    assert taken == [True, True] and type(out.grad_fn).__name__ == "ReluBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])  # NaN lets the gradient through (PyTorch)


@pytest.mark.parametrize("foreach", [False, None, True])  # the loop, the list update (2 parameters), the flat one
@pytest.mark.parametrize("n_params", [2, 10])
def test_hyperparameters_that_shape_the_state_may_change_between_steps(foreach, n_params):
    """PyTorch's SGD starts a momentum buffer (the gradient itself) when momentum is turned on after some steps,
    and leaves it in the state when it is turned off; Adam turned amsgrad raises PyTorch's KeyError."""
    for momenta, want in (((0.0, 0.9, 0.9), 0.368), ((0.9, 0.0, 0.0), 0.512)):
        params = [ft.ones(3, requires_grad=True) for _ in range(n_params)]
        opt = ft.optim.SGD(params, lr=0.1, momentum=momenta[0], foreach=foreach)
        for m in momenta:
            opt.param_groups[0]["momentum"] = m
            opt.zero_grad()
            sum((p * p).sum() for p in params).backward()
            opt.step()
        np.testing.assert_allclose(params[-1].detach().numpy(), np.full(3, want), rtol=1e-6)
        assert list(opt.state[params[0]]) == ["momentum_buffer"]
    params = [ft.ones(3, requires_grad=True) for _ in range(n_params)]
    opt = ft.optim.Adam(params, lr=0.1, foreach=foreach)
    for amsgrad in (False, True):
        opt.param_groups[0]["amsgrad"] = amsgrad
        opt.zero_grad()
        sum((p * p).sum() for p in params).backward()
        if amsgrad:
            with pytest.raises(KeyError, match="max_exp_avg_sq"):
                opt.step()
        else:
            opt.step()


def test_module_attributes_in_pytorchs_order_and_before_init():
    lin = ft.nn.Linear(2, 2)
    lin.register_buffer("weight_scale", ft.ones(1))
    assert lin.weight is lin._parameters["weight"] and lin.weight_scale is lin._buffers["weight_scale"]
    net = ft.nn.Sequential(lin)
    assert getattr(net, "0") is lin
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nothing'"):
        lin.nothing  # noqa: B018

    class Early(ft.nn.Module):
        def __init__(self) -> None:
            self.__dict__["_parameters"] = {"w": ft.nn.Parameter(ft.ones(1))}  # the other stores not made yet
            assert self.w is self._parameters["w"]
            with pytest.raises(AttributeError, match="has no attribute 'v'"):
                self.v  # noqa: B018
            super().__init__()

    Early()
