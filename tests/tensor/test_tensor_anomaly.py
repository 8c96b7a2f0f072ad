"""Anomaly mode and floating-point warnings, as in PyTorch (our own tests)."""

import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_nan_in_backward_names_the_node_and_the_forward_line():
    x = ft.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = ft.autograd.detect_anomaly()
    with mode:
        y = x.sqrt()  # d sqrt at 0 is inf; times the zero below: nan
        z = y * 0
        with pytest.warns(UserWarning, match=r"Error detected in SqrtBackward0(.|\n)*y = x.sqrt\(\)"):
            with pytest.raises(RuntimeError) as info:
                z.sum().backward()
    # PyTorch's message alone: the forward line is in the warning, not appended to the error
    assert str(info.value) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert not ft.autograd.is_anomaly_enabled()


def test_check_nan_false_and_anomaly_off_let_nan_through():
    x = ft.tensor([0.0, 1.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])
    x.grad = None
    with pytest.warns(UserWarning, match="Anomaly Detection"), ft.autograd.detect_anomaly(check_nan=False):
        (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


def test_decorator_form_warns_once_when_decorating():
    with pytest.warns(UserWarning, match="Anomaly Detection"):
        @ft.autograd.detect_anomaly()
        def f():
            return ft.autograd.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f() and f()
    assert not ft.autograd.is_anomaly_enabled()


def test_numpy_floating_point_warnings_do_not_leak_from_tensor_ops():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning would raise
        a = ft.tensor([0.0, -1.0, 2.0], requires_grad=True)
        y = a / a + a.log() + a.sqrt() + ft.tensor([1e38]) * 10 + (a * 0).reciprocal() + a.pow(-1)
        assert np.isnan(y.detach().numpy()).any() and np.isinf(y.detach().numpy()).any()
        y.sum().backward()  # the backward rules hit 0/0 too
        assert np.isnan(a.grad.numpy()).any()
        (b,) = ft.autograd.grad((a.sqrt() * a.log()).sum(), a, create_graph=True)
        b.sum().backward()
    with pytest.warns(RuntimeWarning):  # NumPy's own state is untouched outside tensor ops
        np.array([0.0]) / 0.0


class _Outer(ft.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _Inner.apply(g * x)


class _Inner(ft.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_nested_anomaly_shows_the_node_that_induced_the_failing_one():
    x = ft.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly"), ft.autograd.detect_anomaly():
        y = _Outer.apply(x)  # the forward line of the outer node
        (gx,) = ft.autograd.grad(y.sum(), x, create_graph=True)
        with pytest.warns(UserWarning) as record:
            with pytest.raises(RuntimeError, match="Function '_InnerBackward' returned nan values") as info:
                gx.sum().backward()
    texts = [str(w.message) for w in record]
    assert any(t.startswith("Error detected in _InnerBackward") and "_Inner.apply(g * x)" in t for t in texts)
    assert any("Previous calculation was induced by _OuterBackward" in t and "y = _Outer.apply(x)" in t
               for t in texts)
    assert str(info.value) == "Function '_InnerBackward' returned nan values in its 0th output."


def test_no_reference_cycle_keeps_the_graph_after_an_anomaly_error():
    import gc
    import weakref

    def run():
        x = ft.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ft.autograd.detect_anomaly():
                y = x.sqrt()
                ref = weakref.ref(y)
                try:
                    (y * 0).sum().backward()
                except RuntimeError as e:
                    assert "SqrtBackward0" in str(e)  # the error names the node
        return ref

    gc.disable()
    try:
        assert run()() is None  # freed by reference counting alone
    finally:
        gc.enable()
