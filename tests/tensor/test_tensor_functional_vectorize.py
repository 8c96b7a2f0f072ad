"""autograd.functional jacobian/hessian: one backward walk batched by fg.vmap (vectorize=True, or
vectorize=False when the walk runs no user code) gives the same numbers as the row-by-row loop,
including the eager semantics of detach / no_grad / custom Functions, and falls back to the loop
where a step does not batch. A hook on the output forces the loop (the walk then runs user code)."""

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.autograd.functional as AF


def _x(*shape, seed=0, dtype=ft.float64):
    return ft.randn(*shape, generator=ft.Generator().manual_seed(seed), dtype=dtype)


A = _x(4, 3, seed=5)


class Straight(ft.autograd.Function):
    """Forward squares, backward claims 10 * grad: only the recorded (eager) graph knows."""

    @staticmethod
    def forward(ctx, a):
        return a * a

    @staticmethod
    def backward(ctx, g):
        return g * 10


class HostBackward(ft.autograd.Function):
    """A backward that reads its gradient on the host: it cannot be batched by vmap."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.exp()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return ft.tensor(g.numpy() * np.exp(a.detach().numpy()))


def _no_grad_mix(t):
    with ft.no_grad():
        c = t * 3
    return (c * t).tanh()


JAC_FNS = {
    "matmul_tanh": lambda t: ft.tanh(A @ t),
    "outer": lambda t: t[:, None] * t[None, :],
    "detach": lambda t: t.detach() * t,
    "no_grad": _no_grad_mix,
    "function": lambda t: Straight.apply(t) + t.sin(),
    "host_backward": lambda t: HostBackward.apply(t) * 2,
    "reductions": lambda t: ft.stack([t.sum(), (t ** 2).mean(), t.logsumexp(0)]),
}


def _looped(f, calls):
    """``f`` with a no-op hook on its output: the walk runs user code, so jacobian loops over rows."""

    def g(*args):
        y = f(*args)
        y.register_hook(lambda grad: calls.append(tuple(grad.shape)))
        return y

    return g


@pytest.mark.parametrize("name", sorted(JAC_FNS))
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64])
def test_vectorized_jacobian_equals_loop(name, dtype):
    f = JAC_FNS[name]
    x = _x(3, dtype=dtype)
    if name == "matmul_tanh":
        f = (lambda a: lambda t: ft.tanh(a @ t))(A.to(dtype))
    calls = []
    loop = AF.jacobian(_looped(f, calls), x)
    out_shape = tuple(loop.shape)[:loop.dim() - x.dim()]
    assert calls == [out_shape] * int(np.prod(out_shape))  # one walk per row, each with an unbatched gradient
    default = AF.jacobian(f, x)
    vec = AF.jacobian(f, x, vectorize=True)
    assert vec.dtype == loop.dtype and tuple(vec.shape) == tuple(loop.shape)
    tol = 1e-5 if dtype == ft.float32 else 1e-12
    np.testing.assert_allclose(vec.numpy(), loop.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(default.numpy(), loop.numpy(), rtol=tol, atol=tol)
    assert not vec.requires_grad and not default.requires_grad


def test_default_loops_when_the_walk_runs_user_code():
    x = _x(3)
    kept = []

    def f(t):
        u = t.sin()
        u.retain_grad()
        kept.append(u)
        return u * t

    j = AF.jacobian(f, x)
    np.testing.assert_allclose(j.numpy(), np.diag(np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())), atol=1e-12)
    assert kept[0].grad is None or isinstance(kept[0].grad.numpy(), np.ndarray)  # no traced value leaked


def test_vectorized_jacobian_keeps_eager_semantics():
    x = _x(3)
    xs = x.numpy()
    np.testing.assert_allclose(AF.jacobian(JAC_FNS["detach"], x, vectorize=True).numpy(), np.diag(xs))
    np.testing.assert_allclose(AF.jacobian(JAC_FNS["function"], x, vectorize=True).numpy(),
                               np.diag(10 + np.cos(xs)))


def test_vectorized_jacobian_several_inputs_and_outputs():
    a, b = _x(2, 3), _x(3, seed=1)

    def f(p, q):
        return p @ q, (p * 2).sum(0), q * 0 + 1  # the last output does not depend on anything

    loop = AF.jacobian(f, (a, b))
    vec = AF.jacobian(f, (a, b), vectorize=True)
    for lo, ve in zip(loop, vec):
        for l_blk, v_blk in zip(lo, ve):
            assert tuple(l_blk.shape) == tuple(v_blk.shape)
            np.testing.assert_allclose(v_blk.numpy(), l_blk.numpy(), atol=1e-12)
    # an input the output does not use: zeros
    j_unused = AF.jacobian(lambda p, q: p.exp(), (a, b), vectorize=True)
    assert np.all(j_unused[1].numpy() == 0) and tuple(j_unused[1].shape) == (2, 3, 3)


def test_vectorized_hessian_equals_loop_and_closed_form():
    x = _x(3)

    def f(t):
        u = ft.tanh(A @ t)
        return (u * u).sum() + 0.5 * (t @ t)

    h_loop = AF.hessian(_looped(f, []), x)
    h_vec = AF.hessian(f, x, vectorize=True)
    h_default = AF.hessian(f, x)
    np.testing.assert_allclose(h_default.numpy(), h_vec.numpy(), atol=1e-12)
    a, xs = A.numpy(), x.numpy()
    t = np.tanh(a @ xs)
    w = (2 - 6 * t * t) * (1 - t * t)
    expected = a.T @ (w[:, None] * a) + np.eye(3)
    np.testing.assert_allclose(h_vec.numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(h_loop.numpy(), expected, atol=1e-12)
    # tuple inputs, a (1, 1) output whose dims are dropped
    hh = AF.hessian(lambda p, q: ((p * q) ** 2).sum().reshape(1, 1), (x, x * 2), vectorize=True)
    hl = AF.hessian(lambda p, q: ((p * q) ** 2).sum().reshape(1, 1), (x, x * 2))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(hh[i][j].numpy(), hl[i][j].numpy(), atol=1e-12)
            assert tuple(hh[i][j].shape) == (3, 3)


def test_vectorize_still_refuses_strict_and_keeps_create_graph():
    x = _x(3)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        AF.hessian(lambda t: (t ** 3).sum(), x, strict=True, vectorize=True)
    x.requires_grad_()
    hc = AF.hessian(lambda t: (t ** 3).sum(), x, vectorize=True, create_graph=True)
    assert hc.requires_grad
    (g,) = ft.autograd.grad(hc.sum(), x)
    np.testing.assert_allclose(g.numpy(), 6 * np.ones(3))


def test_rows_in_chunks_when_the_batch_would_be_large(monkeypatch):
    import funcgrad.tensor.functional as functional

    a, b = _x(2, 3), _x(3, seed=1)

    def f(p, q):
        return ft.tanh(p @ q) * q.sum(), p.exp()

    whole = AF.jacobian(f, (a, b), vectorize=True)
    monkeypatch.setattr(functional, "_BATCH_ELEMENTS", 7)  # 7 // 6 = one row per walk
    chunked = AF.jacobian(f, (a, b), vectorize=True)
    looped = AF.jacobian(_looped(lambda p, q: f(p, q)[0], []), (a, b))
    for w_out, c_out in zip(whole, chunked):
        for w_blk, c_blk in zip(w_out, c_out):
            np.testing.assert_allclose(c_blk.numpy(), w_blk.numpy(), atol=1e-12)
    for l_blk, c_blk in zip(looped, chunked[0]):
        np.testing.assert_allclose(c_blk.numpy(), l_blk.numpy(), atol=1e-12)
