"""ft.compile (torch.compile's entry point) staged with fg.jit: the same outputs, gradients and running
statistics as eager mode over several training steps, parameters read afresh at every call, one program per
signature, and clear refusals (warning + eager, or CompileError with fullgraph=True) for what cannot be staged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.compiled import CompileError, CompiledModule


def _pair(make):
    ft.manual_seed(0)
    model = make()
    twin = make()
    twin.load_state_dict(model.state_dict())
    return model, twin


def _cnn():
    return ft.nn.Sequential(ft.nn.Conv2d(3, 4, 3, padding=1, bias=False), ft.nn.BatchNorm2d(4), ft.nn.ReLU(),
                            ft.nn.MaxPool2d(2), ft.nn.Flatten(), ft.nn.Linear(4 * 3 * 3, 5))


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_compiled_module_trains_like_eager():
    model, twin = _pair(_cnn)
    fast = ft.compile(model)
    assert isinstance(fast, CompiledModule) and fast._orig_mod is model
    opts = [ft.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, twin)]
    x = ft.randn(2, 3, 6, 6)
    y = ft.tensor([1, 3])
    for _ in range(3):  # the parameters change between calls: the staged program must read them afresh
        losses = []
        for net, opt in zip((fast, twin), opts):
            opt.zero_grad()
            loss = ft.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss)
        _close(*losses)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        _close(p, q)
    _close(model[1].running_mean, twin[1].running_mean)
    _close(model[1].running_var, twin[1].running_var)
    assert int(model[1].num_batches_tracked) == int(twin[1].num_batches_tracked) == 3
    assert len(fast._compiled._programs) == 1  # one program, reused
    model.eval(), twin.eval()
    _close(fast(x), twin(x))  # eval mode is another signature: staged again
    assert len(fast._compiled._programs) == 2


def test_compiled_module_shares_state_and_attributes():
    model = ft.nn.Linear(3, 2)
    fast = ft.compile(model)
    assert [k for k in fast.state_dict()] == ["_orig_mod.weight", "_orig_mod.bias"]
    assert fast.in_features == 3 and fast.weight is model.weight
    assert list(fast.parameters())[0] is model.weight


def test_compiled_function_reads_the_modules_it_names_and_new_shapes_trace_again():
    model, twin = _pair(lambda: ft.nn.Sequential(ft.nn.Linear(4, 3), ft.nn.Tanh()))

    def loss(x):
        return model(x).pow(2).sum()

    fast = ft.compile(loss)
    for n in (2, 2, 5):
        x = ft.randn(n, 4)
        fast(x).backward()
        twin(x).pow(2).sum().backward()
        with ft.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
            for q in twin.parameters():
                q -= 0.1 * q.grad
    _close(model[0].weight, twin[0].weight)
    _close(model[0].weight.grad, twin[0].weight.grad)
    assert len(fast._programs) == 2  # shapes (2, 4) and (5, 4)


def test_pytrees_and_non_tensor_arguments():
    def f(pair, scale, *, shift=0.0):
        a, b = pair
        return {"sum": a * scale + b + shift, "diff": a - b}

    fast = ft.compile(f)
    a = ft.randn(3, requires_grad=True)
    b = ft.randn(3)
    out = fast((a, b), 2.0, shift=1.0)
    _close(out["sum"], a * 2.0 + b + 1.0)
    out["sum"].sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 2.0, np.float32))
    fast((a, b), 3.0)  # another scale: another program
    assert len(fast._programs) == 2


def test_data_dependent_control_flow_warns_once_and_runs_eagerly():
    def f(x):
        return x * 2 if x.sum() > 0 else -x

    fast = ft.compile(f)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert fast(ft.ones(3)).tolist() == [2.0, 2.0, 2.0]
        assert fast(-ft.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert len(seen) == 1 and "cannot be staged" in str(seen[0].message) and "fullgraph" in str(seen[0].message)
    with pytest.raises(CompileError, match="cannot be staged.*control flow"):
        ft.compile(f, fullgraph=True)(ft.ones(3))


def test_item_and_in_place_changes_to_inputs_are_refused():
    def reads(x):
        return x * x.max().item()

    def writes(x):
        x.mul_(2)
        return x + 1

    with pytest.raises(CompileError, match="item"):
        ft.compile(reads, fullgraph=True)(ft.ones(2))
    with pytest.raises(CompileError, match="argument 0.*in place"):
        ft.compile(writes, fullgraph=True)(ft.ones(2))
    x = ft.ones(2)
    with pytest.warns(UserWarning, match="in place"):
        out = ft.compile(writes)(x)
    assert x.tolist() == [2.0, 2.0] and out.tolist() == [3.0, 3.0]  # the eager semantics


def test_hooks_are_refused_and_still_run():
    model = ft.nn.Linear(2, 2)
    calls = []
    model.register_forward_hook(lambda m, inp, out: calls.append(1))
    with pytest.raises(CompileError, match="forward_hooks"):
        ft.compile(model, fullgraph=True)(ft.ones(1, 2))
    with pytest.warns(UserWarning, match="forward_hooks"):
        ft.compile(model)(ft.ones(1, 2))
    assert calls == [1]


def test_a_real_error_is_the_eager_error():
    fast = ft.compile(ft.nn.Linear(3, 2))
    with pytest.raises(Exception, match="shape|align|size"):
        fast(ft.ones(4, 5))


def test_torch_compile_signature():
    f = lambda x: x + 1  # noqa: E731
    assert ft.compile(f, disable=True) is f
    eager = ft.compile(f, backend="eager")
    assert eager(ft.ones(1)).tolist() == [2.0] and not eager._programs
    deco = ft.compile(fullgraph=True, mode="reduce-overhead", dynamic=False)(f)
    assert deco(ft.ones(2)).tolist() == [2.0, 2.0] and deco.fullgraph
    with pytest.raises(RuntimeError, match="mode or options"):
        ft.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="unrecognized mode='fast'"):
        ft.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="must be a callable"):
        ft.compile(3)
    with pytest.raises(TypeError, match="dynamic"):
        ft.compile(f, dynamic="yes")


def test_loose_tensor_that_requires_grad_is_refused():
    w = ft.randn(3, requires_grad=True)
    with pytest.raises(CompileError, match="requires grad outside any module"):
        ft.compile(lambda x: x * w, fullgraph=True)(ft.ones(3))


def _staged_traces(fast):
    return sum(program.traces for program, _ in fast._compiled._programs.values())


def test_compiled_training_step_traces_once_and_stages_only_what_requires_grad():
    """BatchNorm's running statistics and an input batch that needs no gradient are plain program inputs:
    the program is traced once for the signature (not once per call) and stages no gradient for them."""
    model, twin = _pair(_cnn)
    fast = ft.compile(model, fullgraph=True)
    x, y = ft.randn(2, 3, 6, 6), ft.tensor([1, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a retrace per call would warn
        for _ in range(4):
            for net in (fast, twin):
                net.zero_grad()
                ft.nn.functional.cross_entropy(net(x), y).backward()
    assert _staged_traces(fast) == 1
    for p, q in zip(model.parameters(), twin.parameters()):
        _close(p.grad, q.grad)
    _close(model[1].running_mean, twin[1].running_mean)
    _close(model[1].running_var, twin[1].running_var)
    assert int(model[1].num_batches_tracked) == 4
    xg = x.clone().requires_grad_(True)  # an input that requires grad: another signature, its gradient staged
    xe = x.clone().requires_grad_(True)
    ft.nn.functional.cross_entropy(fast(xg), y).backward()
    ft.nn.functional.cross_entropy(twin(xe), y).backward()
    _close(xg.grad, xe.grad)


class _Rescale(ft.nn.Module):
    """y = x * scale, then the buffer scale is doubled in place: the gradient is the old scale's."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", ft.full((3,), 2.0))

    def forward(self, x):
        y = x * self.scale
        with ft.no_grad():
            self.scale.mul_(2.0)
        return y


def test_compiled_buffer_written_back_after_use_keeps_the_gradient_of_the_value_read():
    fast = ft.compile(_Rescale(), fullgraph=True)
    for k in range(3):
        x = ft.ones(3, requires_grad=True)
        fast(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0 ** (k + 1)))
    np.testing.assert_allclose(fast.scale.numpy(), np.full(3, 16.0))


def _running_statistics_closed_form(batches, momentum=0.1):
    """torch's BatchNorm update: ``r = (1 - m) r + m s`` with the batch mean and the unbiased variance."""
    mean, var, states = np.zeros(3), np.ones(3), []
    for x in batches:
        mean = (1 - momentum) * mean + momentum * x.mean(axis=0)
        var = (1 - momentum) * var + momentum * x.var(axis=0, ddof=1)
        states.append((mean, var))
    return states


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("frozen", [True, False])
def test_compiled_batchnorm_updates_running_statistics_from_the_first_call(frozen, training):
    """With frozen affine parameters nothing the program reads requires grad; the first (tracing) call then
    returned the buffers' old values, so the first update was lost (fixed in fg.jit's first call)."""
    batches = [np.random.default_rng(k).standard_normal((5, 3)).astype(np.float32) for k in range(3)]
    eager, compiled = ft.nn.BatchNorm1d(3), ft.nn.BatchNorm1d(3)
    fast = ft.compile(compiled, fullgraph=True)
    for bn in (eager, compiled):
        bn.train(training)
        if frozen:
            bn.weight.requires_grad_(False)
            bn.bias.requires_grad_(False)
    expected = _running_statistics_closed_form(batches)
    for k, x in enumerate(batches):
        _close(fast(ft.tensor(x)), eager(ft.tensor(x)))
        for bn in (eager, compiled):
            mean, var = expected[k] if training else (np.zeros(3), np.ones(3))
            np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-5, atol=1e-6)
            assert int(bn.num_batches_tracked) == (k + 1 if training else 0)
