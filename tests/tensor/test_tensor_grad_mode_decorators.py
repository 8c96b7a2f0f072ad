"""Grad-mode decorators on generators and coroutines, and bare ``@no_grad``
(the behaviours of PyTorch's test_autograd grad-mode tests, our own tests)."""

import asyncio

import pytest

import funcgrad.tensor as ft

MODES = [
    (lambda: ft.no_grad(), False),
    (lambda: ft.enable_grad(), True),
    (lambda: ft.set_grad_enabled(False), False),
    (lambda: ft.inference_mode(), False),
]


@pytest.mark.parametrize("make, inside", MODES)
@pytest.mark.parametrize("outer", [True, False])
def test_generator_body_under_mode_caller_not(make, inside, outer):
    @make()
    def gen():
        got = yield ft.is_grad_enabled()
        yield (got, ft.is_grad_enabled())
        return "done"

    with ft.set_grad_enabled(outer):
        g = gen()
        assert next(g) is inside
        assert ft.is_grad_enabled() is outer  # between yields the caller keeps its mode
        assert g.send(7) == (7, inside)
        assert ft.is_grad_enabled() is outer
        with pytest.raises(StopIteration) as stop:
            next(g)
        assert stop.value.value == "done"
        assert ft.is_grad_enabled() is outer


def test_generator_throw_and_close_are_forwarded_under_the_mode():
    log = []

    @ft.no_grad()
    def gen():
        try:
            yield 1
        except ValueError as e:
            log.append(("caught", str(e), ft.is_grad_enabled()))
            yield 2
        finally:
            log.append(("finally", ft.is_grad_enabled()))

    g = gen()
    assert next(g) == 1
    assert g.throw(ValueError("boom")) == 2
    assert ft.is_grad_enabled()
    g.close()
    assert ft.is_grad_enabled()
    assert log == [("caught", "boom", False), ("finally", False)]

    g = gen()
    next(g)
    with pytest.raises(KeyError):
        g.throw(KeyError("not handled"))  # an unhandled exception comes back out
    assert ft.is_grad_enabled()


def test_generator_recording_follows_the_body_mode():
    x = ft.ones(2, requires_grad=True)

    @ft.no_grad()
    def steps():
        for _ in range(2):
            yield x * 2

    for y in steps():
        assert not y.requires_grad
        assert (x * 2).requires_grad  # the loop body records


@pytest.mark.parametrize("make, inside", MODES)
def test_coroutine_steps_under_mode_caller_not(make, inside):
    @make()
    async def work():
        a = ft.is_grad_enabled()
        await asyncio.sleep(0)
        return a, ft.is_grad_enabled()

    async def main():
        task = asyncio.ensure_future(work())
        seen = []
        for _ in range(3):
            seen.append(ft.is_grad_enabled())
            await asyncio.sleep(0)
        return await task, seen

    (a, b), seen = asyncio.run(main())
    assert (a, b) == (inside, inside)
    assert seen == [True, True, True]


def test_coroutine_exception_propagates_and_restores():
    @ft.no_grad()
    async def fails():
        await asyncio.sleep(0)
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        asyncio.run(fails())
    assert ft.is_grad_enabled()


def test_bare_no_grad_and_enable_grad_decorators():
    x = ft.ones(2, requires_grad=True)

    @ft.no_grad
    def f(t):
        """doc of f"""
        return t * 2

    @ft.enable_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad and f.__name__ == "f" and f.__doc__ == "doc of f"
    with ft.no_grad():
        assert g(x).requires_grad
    assert ft.is_grad_enabled()

    @ft.no_grad
    def gen():
        yield ft.is_grad_enabled()

    assert list(gen()) == [False] and ft.is_grad_enabled()
    with pytest.raises(TypeError, match="no_grad"):
        ft.no_grad(3)
    assert isinstance(ft.no_grad(), ft.no_grad)
