"""no_grad, enable_grad, set_grad_enabled, inference_mode: context managers, decorators, threads."""

import threading

import pytest

import funcgrad.tensor as ft


def test_no_grad_and_enable_grad():
    x = ft.ones(2, requires_grad=True)
    with ft.no_grad():
        assert not ft.is_grad_enabled()
        y = x * 2
        with ft.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    assert ft.is_grad_enabled()

    @ft.no_grad()
    def f(t):
        return t * 2

    @ft.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with ft.no_grad():
        assert g(x).requires_grad

    @ft.no_grad()
    def gen(t):
        yield t * 2
        yield t * 3

    assert [v.requires_grad for v in gen(x)] == [False, False]
    assert ft.is_grad_enabled()


def test_set_grad_enabled():
    x = ft.ones(2, requires_grad=True)
    with ft.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    ft.set_grad_enabled(False)
    assert not ft.is_grad_enabled()
    ft.set_grad_enabled(True)
    assert ft.is_grad_enabled()

    @ft.set_grad_enabled(False)
    def h(t):
        return t * 2

    assert ft.is_grad_enabled()  # decorating does not change the mode
    assert not h(x).requires_grad and ft.is_grad_enabled()
    with pytest.raises(TypeError, match="must be a bool"):
        ft.set_grad_enabled("yes")


def test_inference_mode():
    x = ft.ones(2, requires_grad=True)
    with ft.inference_mode():
        assert ft.is_inference_mode_enabled() and not ft.is_grad_enabled()
        y = x * 2
        c = ft.ones(2)
    assert y.is_inference() and c.is_inference() and not y.requires_grad
    assert not x.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * y
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode is not allowed"):
        y.add_(1)
    z = y.clone()  # a clone outside inference mode is a normal tensor
    assert not z.is_inference()
    (x * z).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with ft.inference_mode(False):
        assert not ft.is_inference_mode_enabled()

    @ft.inference_mode()
    def f(t):
        return t * 2

    @ft.inference_mode
    def f2(t):
        return t * 2

    assert f(x).is_inference() and f2(x).is_inference()


def test_grad_mode_is_thread_local():
    x = ft.ones(2, requires_grad=True)
    results = {}
    started = threading.Event()
    release = threading.Event()

    def other():
        started.wait()
        results["enabled"] = ft.is_grad_enabled()
        results["req"] = (x * 2).requires_grad
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with ft.no_grad():
        started.set()
        release.wait()
        assert not (x * 2).requires_grad
    t.join()
    assert results == {"enabled": True, "req": True}
