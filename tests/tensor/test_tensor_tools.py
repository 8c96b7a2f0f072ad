"""autograd.functional, gradcheck/gradgradcheck, anomaly detection, profiler, Variable."""

import threading

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.autograd.functional as AF


def _x(*shape, seed=0):
    return ft.randn(*shape, generator=ft.Generator().manual_seed(seed), dtype=ft.float64)


def test_functional_vjp_jvp():
    x = _x(3)
    v = _x(3, seed=1)
    out, g = AF.vjp(lambda t: t.sin() * 2, x, v)
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(x.numpy()) * v.numpy())
    assert not g.requires_grad and not out.requires_grad
    out, t = AF.jvp(lambda t: t.sin() * t, x, v)
    np.testing.assert_allclose(t.numpy(), (np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())) * v.numpy())
    out, (ga, gb) = AF.vjp(lambda a, b: (a * b).sum(), (x, v))
    np.testing.assert_allclose(ga.numpy(), v.numpy())
    np.testing.assert_allclose(gb.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="The vector v can only be None if"):
        AF.vjp(lambda t: t * 2, x)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.vjp(lambda t: 3, x, v)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: a * 2, (x, v), v, strict=True)


def test_functional_jacobian_hessian():
    x = _x(3)
    J = AF.jacobian(lambda t: t ** 2, x)
    np.testing.assert_allclose(J.numpy(), np.diag(2 * x.numpy()))
    Jv = AF.jacobian(lambda t: t ** 2, x, vectorize=True)
    assert Jv.equal(J)
    Jf = AF.jacobian(lambda t: t ** 2, x, vectorize=True, strategy="forward-mode")
    assert Jf.equal(J)
    Ja, Jb = AF.jacobian(lambda a, b: a * b, (x, x * 2))
    np.testing.assert_allclose(Ja.numpy(), np.diag(2 * x.numpy()))
    H = AF.hessian(lambda t: (t ** 3).sum(), x)
    np.testing.assert_allclose(H.numpy(), np.diag(6 * x.numpy()))
    v = _x(3, seed=2)
    out, hv = AF.hvp(lambda t: (t ** 3).sum(), x, v)
    np.testing.assert_allclose(hv.numpy(), 6 * x.numpy() * v.numpy())
    out, vh = AF.vhp(lambda t: (t.sin() * t).sum(), x, v)
    Hs = AF.hessian(lambda t: (t.sin() * t).sum(), x)
    np.testing.assert_allclose(vh.numpy(), v.numpy() @ Hs.numpy())
    Jc = AF.jacobian(lambda t: t.exp(), x, create_graph=True)
    assert Jc.requires_grad
    with pytest.raises(RuntimeError, match="independent of input"):
        AF.jacobian(lambda a, b: a * 2, (x, v), strict=True)
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode"'):
        AF.jacobian(lambda t: t, x, strategy="sideways")


def test_gradcheck_reports_and_returns_bool():
    class Wrong(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 x g

    x = _x(3).requires_grad_()
    with pytest.raises(ft.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        ft.autograd.gradcheck(Wrong.apply, (x,))
    assert ft.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert ft.autograd.gradcheck(lambda t: t * t, (x,)) is True
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        ft.autograd.gradcheck(lambda t: t * 2, (ft.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        ft.autograd.gradcheck(lambda t: t * 2, (ft.ones(2),))

    class WrongSecond(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x.detach() ** 2 * g  # first derivative right, not differentiable w.r.t. x

    assert ft.autograd.gradcheck(WrongSecond.apply, (x,))
    assert ft.autograd.gradgradcheck(WrongSecond.apply, (x,), raise_exception=False) is False


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:divide by zero:RuntimeWarning")
def test_detect_anomaly_names_forward_op():
    x = ft.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), ft.autograd.detect_anomaly():
        assert ft.autograd.is_anomaly_enabled()
        y = x / x  # 0/0: its backward makes NaN
        with pytest.warns(UserWarning, match="Error detected in DivBackward0") as record:
            with pytest.raises(RuntimeError) as info:
                y.sum().backward()
    # -g * x / x**2 at 0; the message is PyTorch's alone, the forward traceback is in the warning
    assert str(info.value) == "Function 'DivBackward0' returned nan values in its 1th output."
    warned = "".join(str(w.message) for w in record)
    assert "Traceback of forward call that caused the error" in warned
    assert "y = x / x" in warned  # the user's line
    assert not ft.autograd.is_anomaly_enabled()
    x.grad = None
    (x / x).sum().backward()  # without anomaly mode: NaN passes silently, as in PyTorch
    assert np.isnan(x.grad.numpy()[0])
    ft.autograd.set_detect_anomaly(True)
    assert ft.autograd.is_anomaly_enabled()
    ft.autograd.set_detect_anomaly(False)
    with ft.autograd.set_detect_anomaly(True):
        assert ft.autograd.is_anomaly_enabled()
    assert not ft.autograd.is_anomaly_enabled()

    class Boom(ft.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    with pytest.warns(UserWarning, match="Anomaly Detection"), ft.autograd.detect_anomaly():
        z = Boom.apply(x)
        with pytest.warns(UserWarning, match="Error detected in BoomBackward"):
            with pytest.raises(ValueError, match="boom"):
                z.sum().backward()


def test_profiler():
    x = ft.randn(50, 50, requires_grad=True)
    with ft.autograd.profiler.profile() as prof:
        with ft.autograd.profiler.record_function("my_block"):
            y = (x @ x).tanh().sum()
        y.backward()
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::matmul"].count == 1 and avg["aten::tanh"].count == 1
    assert "MmBackward0" in avg and "TanhBackward0" in avg and avg["my_block"].count == 1
    assert all(e.cpu_time_total >= 0 for e in avg.values())
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    assert "Name" in table and "# of Calls" in table and "Self CPU time total" in table
    assert len(table.strip().splitlines()) == 5 + 5
    (x * 2).sum()  # not recorded after the block
    assert sum(e.count for e in prof.key_averages() if e.key == "aten::multiply") == 0
    with ft.autograd.profiler.profile(enabled=False) as off:
        x * 2
    assert len(off.events()) == 0


def test_variable_is_deprecated_alias():
    with pytest.warns(DeprecationWarning):
        v = ft.autograd.Variable(ft.ones(2), requires_grad=True)
    assert isinstance(v, ft.Tensor) and v.requires_grad
    assert isinstance(ft.ones(1), ft.autograd.Variable)


def test_threads_forward_backward_on_own_graphs():
    errors = []
    results = {}

    def work(k):
        try:
            for _ in range(20):
                x = ft.tensor([float(k), 1.0], requires_grad=True, dtype=ft.float64)
                y = (x * x * k).sum()
                with ft.no_grad() if k % 2 else ft.enable_grad():
                    pass
                y.backward()
                results[k] = x.grad.tolist()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(8):
        assert results[k] == [2.0 * k * k, 2.0 * k]


def test_threads_accumulate_into_shared_leaf():
    w = ft.zeros(3, requires_grad=True, dtype=ft.float64)
    n_threads, n_iter = 8, 50
    barrier = threading.Barrier(n_threads)
    errors = []

    def work():
        try:
            barrier.wait()
            for _ in range(n_iter):
                (w * 2.0 + 1.0).sum().backward()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert w.grad.tolist() == [2.0 * n_threads * n_iter] * 3  # no lost update
