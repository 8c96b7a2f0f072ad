"""The short paths from ``ft.<op>`` / ``t.<op>()`` / operators into the recorder: each one gives the
same values, dtypes, graph nodes and errors as the generic traced call it skips."""

import math
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.tensor as ft

UNARY = [("sin", np.sin), ("tanh", np.tanh), ("exp", np.exp), ("log1p", np.log1p), ("asin", np.arcsin),
         ("arccos", np.arccos), ("atan", np.arctan), ("sqrt", np.sqrt), ("sigmoid", lambda a: 1 / (1 + np.exp(-a)))]


@pytest.mark.parametrize("name,ref", UNARY)
def test_unary_paths_agree(name, ref):
    a = np.array([0.1, 0.4, 0.7])
    x = ft.tensor(a, requires_grad=True)
    outs = [getattr(x, name)(), getattr(ft, name)(x), getattr(ft, name)(ft.nn.Parameter(ft.tensor(a)))]
    for out in outs:
        np.testing.assert_allclose(out.detach().numpy(), ref(a), rtol=1e-12)
        assert out.grad_fn is not None and out.requires_grad
    # non-Tensor inputs (lists, arrays, numbers) and integer tensors compute in the default float dtype
    np.testing.assert_allclose(getattr(ft, name)(a.tolist()).numpy(), ref(a), rtol=1e-6)  # float32
    np.testing.assert_allclose(getattr(ft, name)(a).numpy(), ref(a), rtol=1e-12)
    assert getattr(ft, name)(0.5).item() == pytest.approx(ref(0.5))
    assert getattr(ft.tensor([0, 1]), name)().dtype is ft.float32
    assert getattr(ft, name)(ft.tensor([0, 1])).dtype is ft.float32
    # out=, and its refusal when an input requires grad
    buf = ft.empty(3, dtype=ft.float64)
    assert getattr(ft, name)(ft.tensor(a), out=buf) is buf
    np.testing.assert_allclose(buf.numpy(), ref(a), rtol=1e-12)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        getattr(ft, name)(x, out=ft.empty(3))
    with pytest.raises(TypeError):
        getattr(ft, name)(x, 1)


def test_unary_under_a_result_hook_and_transforms():
    x = ft.tensor([0.0, 2.0], requires_grad=True)
    with fg.debug_nans():  # a result hook: the ops take the generic traced call, which sees it
        with pytest.raises(FloatingPointError, match="primitive 'arcsin'"):
            ft.asin(x)
        with pytest.raises(FloatingPointError, match="primitive 'arcsin'"):
            x.asin()
        with pytest.raises(FloatingPointError, match="primitive 'divide'"):
            (x - 2.0) / (x - 2.0)
    g = ft.func.grad(lambda t: ft.tanh(ft.sin(t)).sum())(ft.tensor([0.3, 0.6]))
    np.testing.assert_allclose(g.numpy(), np.cos([0.3, 0.6]) * (1 - np.tanh(np.sin([0.3, 0.6])) ** 2), rtol=1e-6)
    v = ft.func.vmap(lambda t: ft.exp(t) * 2.0 + t)(ft.tensor([[0.0, 1.0], [2.0, 3.0]]))
    np.testing.assert_allclose(v.numpy(), np.exp([[0.0, 1.0], [2.0, 3.0]]) * 2 + [[0.0, 1.0], [2.0, 3.0]], rtol=1e-6)


@pytest.mark.parametrize("op,ref", [(lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
                                    (lambda a, b: a * b, np.multiply), (lambda a, b: a / b, np.divide)])
def test_binary_operators_scalars_broadcasting_and_gradients(op, ref):
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[0.5], [2.0]])
    x, y = ft.tensor(a, requires_grad=True), ft.tensor(b, requires_grad=True)
    out = op(x, y)
    np.testing.assert_allclose(out.detach().numpy(), ref(a, b))
    out.sum().backward()
    assert x.grad.shape == (1, 3) and y.grad.shape == (2, 1)
    for left, right in ((x, 2.5), (2.5, x), (x, 3), (3, x)):
        r = op(left, right)
        np.testing.assert_allclose(r.detach().numpy(), ref(*(v.detach().numpy() if isinstance(v, ft.Tensor) else v
                                                            for v in (left, right))))
        assert r.dtype is ft.float64 and r.requires_grad
    assert op(ft.tensor([1, 2]), 2).dtype is (ft.float32 if ref is np.divide else ft.int64)
    assert op(ft.tensor([1, 2]), 2.0).dtype is ft.float32


def test_angle_of_real_and_integer_tensors():
    x = ft.tensor([1.0, -2.0, 0.0], requires_grad=True)
    out = x.angle()
    np.testing.assert_allclose(out.detach().numpy(), [0.0, math.pi, 0.0])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    assert ft.angle(ft.tensor([3, -1])).dtype is ft.float32
    np.testing.assert_allclose(ft.tensor([1j, -2.0]).angle().numpy(), [math.pi / 2, math.pi])


def test_fmod_is_not_remainder():
    x = ft.tensor([-3.0, 3.0, -1.5], requires_grad=True)
    np.testing.assert_array_equal(ft.fmod(x, 2).detach().numpy(), np.fmod([-3.0, 3.0, -1.5], 2))  # sign of x
    np.testing.assert_array_equal(x.remainder(2).detach().numpy(), np.remainder([-3.0, 3.0, -1.5], 2))
    np.testing.assert_array_equal((x % 2).detach().numpy(), np.remainder([-3.0, 3.0, -1.5], 2))
    assert ft.fmod(ft.tensor([-7]), 2).item() == -1 and ft.fmod(x, 2).grad_fn.name() == "FmodBackward0"
    ft.fmod(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


def test_node_names_where_the_rename_is_skipped():
    x = ft.randn(2, 3, requires_grad=True)
    names = {
        "MmBackward0": x @ x.T, "BmmBackward0": x[None] @ x.T[None], "MatmulBackward0": x[0] @ x.T,
        "PowBackward0": x ** ft.tensor(3.0), "PowBackward2": 2.0 ** x, "SumBackward1": x.sum(()),
        "SumBackward0": x.sum(), "MeanBackward1": x.mean(0),
    }
    for want, t in names.items():
        assert t.grad_fn.name() == want and type(t.grad_fn).__name__ == want
    assert (x.detach().long() ** 2).dtype is ft.int64 and (x ** 2).grad_fn.name() == "PowBackward0"
    np.testing.assert_allclose((x ** 2).detach().numpy(), x.detach().numpy() ** 2)


def test_float16_repr_has_no_overflow_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "dtype=ft.float16" in repr(ft.tensor([0.5, 3e4, 1e-3], dtype=ft.float16))


def test_every_method_function_is_bound_to_its_own_name():
    from funcgrad.tensor import ops

    methods = [n for n in ops.__all__ if (getattr(ops, n).__doc__ or "").startswith(f"``ft.{n}(input")]
    assert len(methods) > 150 and {"sin", "sum", "matmul", "detach"} <= set(methods)
    for n in ops.__all__:
        f = getattr(ops, n)
        if (f.__doc__ or "").startswith("``ft."):
            assert f.__name__ == n and f.__doc__.startswith(f"``ft.{n}(input"), n


def test_short_path_tensor_has_every_field_make_sets():
    """record's short path builds its output field by field (GraphBox._make, inline): the same
    fields, with what _make would give a recorded output."""
    from funcgrad.tensor.boxes import GraphBox

    x = ft.tensor([0.1, 0.2], requires_grad=True)
    fast = x.sin()
    made = ft.Tensor._make(fast._value, fast._node, 0, True)
    slots = [n for cls in type(fast).__mro__ for n in getattr(cls, "__slots__", ()) if n != "__dict__"]
    assert "_view_version" in slots and "_trace" in slots
    for name in slots:
        if name.startswith("__") or not hasattr(made, name):
            continue
        a, b = getattr(fast, name), getattr(made, name)
        if name == "_vc":  # a counter of its own
            assert a == b and a is not b
        else:
            assert a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b), name
    assert type(fast).__mro__[1:].count(GraphBox) == 1


def test_floating_point_warnings_do_not_leak_from_any_thread():
    """Tensor ops compute inf/nan quietly (one shared quiet context: a second thread finds it
    entered and falls back), and leave the caller's error state as it was."""
    import threading

    x = ft.tensor([0.0, -1.0], requires_grad=True)
    errors: list[BaseException] = []

    def work():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                for _ in range(2000):
                    y = x.log().exp()
                    assert not np.isfinite(y.detach().numpy()[1])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # the context entered already (here by the caller; a thread's call in progress alike): the op
    # falls back to setting the error state, and other RuntimeErrors are not taken for that
    from funcgrad.tensor import quiet

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = quiet.quiet_run(lambda: x.log())
    assert y.grad_fn is not None and np.isneginf(y.detach().numpy()[0])
    with pytest.raises(RuntimeError, match="boom"):
        quiet.quiet_run(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    with np.errstate(divide="raise"):
        x.log()  # quiet even where the caller raises
        with pytest.raises(FloatingPointError):
            np.log(np.array([0.0]))
    assert np.geterr()["divide"] == "warn"


def test_a_users_primitive_runs_in_the_callers_context():
    """Only declared fast paths (NumPy on arrays) run in the quiet context; a user's primitive
    called on Tensors sees the caller's context variables (its inf/nan stay quiet all the same)."""
    import contextvars

    scale = contextvars.ContextVar("scale", default=1.0)
    times_scale = fg.defprimitive(lambda x: x * scale.get(), name="times_scale",
                                  vjp=lambda g, ans, x: g * scale.get())
    log_zero = fg.defprimitive(lambda x: np.log(x - x), name="log_zero", vjp=lambda g, ans, x: g * 0.0)
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    token = scale.set(3.0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = times_scale(x)
            z = log_zero(x)
            y.sum().backward()
    finally:
        scale.reset(token)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 6.0])
    assert np.all(np.isneginf(z.detach().numpy()))
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_fast_paths_run_no_users_code():
    """What lets the quiet context hold no other context variable: every declared fast path is
    NumPy's or funcgrad's own function (none takes a callable)."""
    import gc

    import funcgrad.scipy  # noqa: F401 - its primitives too
    from funcgrad.core import Primitive

    fast = [p for p in gc.get_objects() if isinstance(p, Primitive) and p.fast_types]
    assert len(fast) > 100
    for p in fast:
        module = getattr(p.fast_fn, "__module__", None) or ""
        assert module.split(".")[0] in ("numpy", "funcgrad"), (p.name, module)
        assert p.name not in ("apply_along_axis", "piecewise", "vectorize", "frompyfunc"), p.name
