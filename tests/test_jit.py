"""fg.jit: staged programs, their passes, jit inside other transforms, and every error path.

The transform tests (test_transforms.py, test_vmap.py, test_scan.py, test_custom.py) also
run under fg.jit through tests/jit_modes.py; this file holds what only jit has.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.staging import StagedValueError
from funcgrad.testing import check_grads

rng = np.random.default_rng(0)
X = np.array([0.3, -0.7, 1.1])


def loss(x):
    return fnp.sum(fnp.tanh(x) * fnp.sin(x)) + fnp.sum(fnp.exp(-x * x))


def mlp(params, x):
    (w1, b1), (w2, b2) = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.sum((h @ w2 + b2) ** 2)


PARAMS = ((rng.standard_normal((3, 5)), rng.standard_normal(5)), (rng.standard_normal((5, 2)), rng.standard_normal(2)))
XB = rng.standard_normal((4, 3))


def allclose_tree(a, b, **kw):
    for u, v in zip(fg.tree_util.tree_leaves(a), fg.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(u, v, **kw)


# --- values: jit of transforms and transforms of jit equal eager ---------------------

TRANSFORMS = {
    "none": (lambda f: f, False),
    "grad": (fg.grad, False),
    "hessian": (fg.hessian, False),
    "jacfwd": (fg.jacfwd, False),
    "jacrev_grad": (lambda f: fg.jacrev(fg.grad(f)), False),
    "vmap_grad": (lambda f: fg.vmap(fg.grad(f)), True),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_jit_of_transform_equals_eager_and_replays(name, dtype):
    transform, batched = TRANSFORMS[name]
    arg = np.stack([X, 2 * X]) if batched else X
    eager = transform(loss)
    jitted = fg.jit(transform(loss))
    for a in (arg, arg * 0.5, arg + 1):  # the first call traces, the rest replay
        a = a.astype(dtype)
        r = jitted(a)
        e = eager(a)
        assert np.asarray(r).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(r, e, rtol=1e-5 if dtype == np.float32 else 1e-12)
    assert jitted.cache_size() == 1


@pytest.mark.parametrize("transform", [fg.grad, fg.hessian, fg.jacfwd, fg.jacrev])
def test_transform_of_jit_equals_eager(transform):
    jf = fg.jit(loss)
    for a in (X, X * 0.5):
        np.testing.assert_allclose(transform(jf)(a), transform(loss)(a), rtol=1e-12, atol=1e-14)


def test_jvp_vmap_hvp_of_jit_equal_eager():
    jf = fg.jit(loss)
    v = np.array([0.5, -1.0, 2.0])
    allclose_tree(fg.jvp(jf, (X,), (v,)), fg.jvp(loss, (X,), (v,)), rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(jf)(XB), fg.vmap(loss)(XB), rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(fg.grad(jf))(XB), fg.vmap(fg.grad(loss))(XB), rtol=1e-12)
    allclose_tree(fg.hvp(jf, (X,), (v,)), fg.hvp(loss, (X,), (v,)), rtol=1e-12)
    d3 = fg.grad(fg.grad(fg.grad(fg.jit(fnp.sin))))
    np.testing.assert_allclose(d3(0.7), -np.cos(0.7))


def test_mlp_pytree_params_grad_of_jit_and_jit_of_grad():
    eager = fg.grad(mlp)(PARAMS, XB)
    allclose_tree(fg.jit(fg.grad(mlp))(PARAMS, XB), eager, rtol=1e-12)
    allclose_tree(fg.grad(fg.jit(mlp))(PARAMS, XB), eager, rtol=1e-12)


def test_grad_of_jit_hands_residuals_to_the_backward_program():
    jf = fg.jit(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(x)))
    fg.grad(jf)(X)
    fwd = next(iter(next(iter(jf.cache.values())).staged.splits.values()))
    names = [e.prim.name for e in fwd.bwd.program.eqns]
    assert "sin" not in names and "exp" not in names  # no forward recomputation
    assert fwd.n_res >= 1


@pytest.mark.parametrize("modes", [("rev",), ("fwd",), ("fwd", "rev")])
def test_check_grads_on_jitted_functions_order_2(modes):
    check_grads(fg.jit(loss), (X,), order=2, modes=modes)
    check_grads(fg.jit(fg.grad(loss)), (X,), order=2, modes=modes)
    check_grads(fg.jit(lambda w, b: mlp(((w, b), PARAMS[1]), XB)), PARAMS[0], order=2, modes=modes)


def test_kwargs_static_args_and_outputs_pytrees():
    def f(x, scale, *, mode="sum", y=None):
        out = fnp.sum(x) if mode == "sum" else fnp.max(x)
        return {"out": out * scale + fnp.sum(y), "twice": (x * 2,)}

    jf = fg.jit(f, static_argnames=("mode",))
    for mode in ("sum", "max"):
        r = jf(X, 2.0, mode=mode, y=X)
        e = f(X, 2.0, mode=mode, y=X)
        allclose_tree(r, e)
        assert set(r) == {"out", "twice"}
    assert jf.cache_size() == 2


def test_static_argnums_value_is_part_of_the_key():
    f = fg.jit(lambda x, n: x * n if n > 1 else -x, static_argnums=1)
    np.testing.assert_allclose(f(X, 3), X * 3)
    np.testing.assert_allclose(f(X, 1), -X)
    np.testing.assert_allclose(f(X, 3), X * 3)
    assert f.cache_size() == 2


def test_python_bools_and_callables_are_static():
    f = fg.jit(lambda x, flag, g: g(x) if flag else -x)
    np.testing.assert_allclose(f(X, True, fnp.sin), np.sin(X))
    np.testing.assert_allclose(f(X, False, fnp.sin), -X)
    np.testing.assert_allclose(f(X, True, fnp.cos), np.cos(X))


def test_traced_integer_index_is_an_input_not_a_constant():
    f = fg.jit(lambda x, i: x[i] * 2)
    assert f(X, 0) == 2 * X[0]
    assert f(X, 2) == 2 * X[2]  # replay with another index
    np.testing.assert_allclose(f(X, np.array([2, 0])), 2 * X[[2, 0]])
    np.testing.assert_allclose(f(X, np.array([1, 1])), 2 * X[[1, 1]])


# --- the program and its passes -----------------------------------------------------------

def test_make_program_prints_like_a_jaxpr():
    text = str(fg.make_program(lambda x: fnp.sin(x) * 2)(X))
    assert "lambda" in text and "sin" in text and "multiply" in text and "float64[3]" in text


def test_cse_merges_and_dce_drops_pure_calls():
    prog = fg.make_program(lambda x: (fnp.sin(x) + fnp.sin(x), fnp.cos(x))[0])(X)
    names = [e.prim.name for e in prog.eqns]
    assert names.count("sin") == 1 and "cos" not in names


def test_impure_primitives_are_never_dropped_or_merged():
    calls = []

    def _effect(x):
        calls.append(1)
        return x * 1.0

    effect = fg.defprimitive(_effect, name="effect", pure=False, vjp=lambda g, ans, x: g)
    f = fg.jit(lambda x: (effect(x), effect(x), x * 2)[2])
    f(X)
    calls.clear()
    f(X + 1)
    assert len(calls) == 2


def test_buffer_reuse_never_writes_into_callers_arrays():
    n = 20000  # above the reuse threshold
    x = rng.standard_normal(n)
    keep = x.copy()
    f = fg.jit(lambda x: fnp.sin(fnp.exp(fnp.tanh(x) * 2.0) + 1.0))
    for _ in range(3):
        out = f(x)
    np.testing.assert_allclose(out, np.sin(np.exp(np.tanh(keep) * 2.0) + 1.0))
    np.testing.assert_array_equal(x, keep)
    src = next(iter(f.cache.values())).run.source
    assert "out=" in src and "out=v0" not in src
    out2 = f(x)
    assert out2 is not out  # nothing is kept between calls


def test_captured_arrays_are_frozen_at_trace_time():
    w = np.ones(3)
    f = fg.jit(lambda x: x * w)
    np.testing.assert_allclose(f(X), X)
    w[:] = 5.0  # documented: the program holds the value w had when it was traced
    np.testing.assert_allclose(f(X), X)


def test_inplace_writes_work_as_under_other_transforms():
    def f(x):
        a = fnp.zeros(3)
        a[1] = x[0]
        a += x
        b = x * 1
        b[2] = 10.0
        return fnp.sum(a * b)

    for x in (X, X + 1):
        np.testing.assert_allclose(fg.jit(f)(x), f(x))
        np.testing.assert_allclose(fg.jit(fg.grad(f))(x), fg.grad(f)(x))
        np.testing.assert_allclose(fg.grad(fg.jit(f))(x), fg.grad(f)(x))


def test_an_input_written_in_place_and_returned_is_the_new_value_on_the_first_call():
    """The first call (the tracing one) returned the caller's unchanged array for an input that the
    function wrote in place and returned (``x += 1; return x``); later calls were right."""
    def add_in_place(x):
        x += 1.0
        return x

    def set_all(x):
        x[...] = x * 2.0
        return x, x

    for fn, expected in ((add_in_place, X + 1.0), (set_all, (X * 2.0, X * 2.0))):
        jitted = fg.jit(fn)
        x = X.copy()
        for _ in range(2):  # first (tracing) call and a replay give the new value
            np.testing.assert_allclose(jitted(x), expected)
        np.testing.assert_array_equal(x, X)  # the caller's array is not written
    same = fg.jit(lambda x: x)
    assert same(X) is X  # an input returned untouched is still the caller's own object


def test_fake_device_backend_runs_the_program_on_the_device():
    fb.install()
    g = fg.jit(fg.grad(loss))
    fx = fb.to_fake(X)
    with fb.no_host_sync():
        r = g(fx)
        r2 = g(fx * 2.0)
    assert isinstance(r, fb.FakeArray) and isinstance(r2, fb.FakeArray)
    device_entry = next(e for k, e in g.cache.items() if k[1][0][0] is fb.FakeArray)
    # the generated program calls the device namespace's own functions (no dispatch per call)
    assert all(getattr(e.fn, "__module__", "") == "fake_backend" for e in device_entry.program.eqns
               if e.prim.name in ("tanh", "sin", "cos", "multiply", "add", "subtract"))
    np.testing.assert_allclose(fb.fake.asnumpy(r2), fg.grad(loss)(X * 2.0), rtol=1e-12)
    g(X)  # a host array of the same shape is another signature
    assert g.cache_size() == 2
    with fb.no_host_sync():
        r3 = fg.grad(fg.jit(loss))(fx)
    np.testing.assert_allclose(fb.fake.asnumpy(r3), fg.grad(loss)(X), rtol=1e-12)


# --- errors: each wrong-answer path raises ------------------------------------------------

def h(x):
    return x if x > 0 else -x


@pytest.mark.parametrize("make", [
    lambda: fg.jit(h),
    lambda: fg.grad(fg.jit(h)),
    lambda: fg.jit(fg.grad(h)),
    lambda: fg.jit(fg.grad(fg.grad(h))),
])
def test_branch_on_traced_value_raises_naming_the_line(make):
    with pytest.raises(StagedValueError, match=r"(?s)bool\(\).*test_jit.py.*x if x > 0.*static_argnums.*fnp.where.*fori_loop"):
        make()(-0.5)
    with pytest.raises((StagedValueError, TypeError), match="bool"):  # vmap(jit(h)): a per-example branch
        fg.vmap(fg.jit(h))(-X)


@pytest.mark.parametrize("body,what", [
    (lambda x: x * int(x[0]), "int()"),
    (lambda x: x * float(x[0]), "float()"),
    (lambda x: x * x[0].item(), "item()"),
    (lambda x: fnp.zeros(x[0].astype(int)), "index"),
    (lambda x: x[x > 0], "boolean mask"),
    (lambda x: np.asarray(x), "numpy.asarray"),
])
def test_python_use_of_traced_values_raises(body, what):
    with pytest.raises(StagedValueError, match=what):
        fg.jit(body)(X)
    with pytest.raises(StagedValueError, match=what):
        fg.grad(lambda x: fnp.sum(fg.jit(body)(x)))(X)


def test_grad_of_jitted_branch_raises_instead_of_freezing_it():
    # eagerly grad(h)(-x) = -1; a frozen branch traced at +x would say +1
    with pytest.raises(StagedValueError):
        jh = fg.jit(h)
        fg.grad(jh)(0.5)


def test_random_draws_during_tracing_raise():
    with pytest.raises(RuntimeError, match="global random state.*Pass randomness in"):
        fg.jit(lambda x: x + np.random.standard_normal(3))(X)
    gen = np.random.default_rng(1)
    with pytest.raises(RuntimeError, match="random generator.*pass them as"):
        fg.jit(lambda x: x + gen.standard_normal(3))(X)
    with pytest.raises(RuntimeError, match="random generator"):
        fg.jit(lambda x, g: x + g.standard_normal(3), static_argnums=1)(X, gen)
    noise = gen.standard_normal(3)  # the way out: pass the draws in
    np.testing.assert_allclose(fg.jit(lambda x, n: x + n)(X, noise), X + noise)


def test_unhashable_static_argument_and_untraceable_argument():
    with pytest.raises(TypeError, match="static argument 1 must be hashable.*tuple"):
        fg.jit(lambda x, s: x * s[0], static_argnums=1)(X, [1, 2])
    with pytest.raises(TypeError, match=r"argument .*\[0\]\[1\].*set.*not hashable"):
        fg.jit(lambda x, s: x)(X, {1, 2} and set())


def test_escaping_traced_value_raises_leaked_error():
    leak = []
    fg.jit(lambda x: leak.append(x * 2) or x)(X)
    with pytest.raises(fg.LeakedTraceError, match="traced by jit"):
        fnp.sin(leak[0])


def test_tensors_record_one_node_whose_backward_is_staged():
    import funcgrad.tensor as ft

    fun = lambda x, w: fnp.sum(fnp.tanh(x * w) ** 2)  # noqa: E731
    f = fg.jit(fun)

    def fresh():
        return ft.tensor([0.1, 0.2, 0.3], requires_grad=True), ft.tensor([1.0, 2.0, 3.0], requires_grad=True)

    (t, w), (t2, w2) = fresh(), fresh()
    seen = []
    t.register_hook(seen.append)  # hooks and .grad accumulation stay the graph's, eager
    for _ in range(2):
        y = f(t, w)
        y.backward()
        (ft.tanh(t2 * w2) ** 2).sum().backward()
    assert "JitCallBackward" in repr(y.grad_fn) and len(seen) == 2
    np.testing.assert_allclose(t.grad.numpy(), t2.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-12)
    forward = next(iter(next(iter(f.cache.values())).staged.splits.values()))
    assert forward  # the node's backward is the staged backward program, no recomputation
    (t3, w3), (t4, w4) = fresh(), fresh()  # double backward through the staged rules
    (g3,) = ft.autograd.grad(f(t3, w3), t3, create_graph=True)
    (g4,) = ft.autograd.grad((ft.tanh(t4 * w4) ** 2).sum(), t4, create_graph=True)
    np.testing.assert_allclose(ft.autograd.grad(g3.sum(), t3)[0].numpy(), ft.autograd.grad(g4.sum(), t4)[0].numpy(),
                               rtol=1e-12)


def test_retrace_logging_and_warning(caplog, monkeypatch):
    monkeypatch.setattr(fg.config, "jit_log_compiles", True)
    monkeypatch.setattr(fg.config, "jit_retrace_warn", 2)
    f = fg.jit(lambda x: x * 2)
    with caplog.at_level(logging.WARNING, logger="funcgrad.jit"):
        f(np.ones(2))
        f(np.ones(3))
    assert "first call" in caplog.text
    assert "changed from ndarray of shape (2,)" in caplog.text and "(3,)" in caplog.text
    with pytest.warns(RuntimeWarning, match="traced 3 times"):
        f(np.ones(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(np.ones(4))  # cached: no trace, no warning
        f(np.ones(5))  # warned once only


def test_scalar_programs_run_on_python_floats_and_fall_back_like_numpy():
    d3 = fg.grad(fg.grad(fg.grad(lambda x: fnp.exp(fnp.sin(x)) + fnp.tanh(x) * x)))
    j = fg.jit(d3)
    for x in (0.7, 1.3, np.float64(-0.2)):
        r = j(x)
        assert type(r) is type(d3(x))
        np.testing.assert_allclose(r, d3(x), rtol=1e-13)
    assert "_m.sin" in next(iter(j.cache.values())).run.source
    with np.errstate(all="ignore"):
        cases = [(lambda x: fnp.exp(x) * 2.0, 1000.0), (lambda x: fnp.log(x) + 1.0, 0.0),
                 (lambda x: 1.0 / x + x, 0.0), (lambda x: x ** 0.5 + x, -1.0)]
        for f, x in cases:  # Python's math raises here; NumPy's inf/nan come back instead
            f_jit = fg.jit(f)
            f_jit(1.0)  # traced at a harmless point, replayed at the edge case
            np.testing.assert_equal(f_jit(x), f(np.float64(x)))


def test_identity_operations_are_removed():
    # with a NumPy scalar input, seeds like ones * x neither cast nor broadcast: they go
    prog = fg.make_program(fg.grad(fg.grad(lambda x: fnp.sin(x) * x)))(np.float64(0.3))
    for e in prog.eqns:
        if e.prim.name == "multiply":
            consts = [a.value for a in e.ins if hasattr(a, "value")]
            assert not any(np.all(np.asarray(c) == 1.0) for c in consts), prog
    # a Python float input: 1.0 * x makes it a NumPy scalar, so that multiply stays
    assert fg.jit(fg.grad(fg.grad(lambda x: fnp.sin(x) * x)))(0.3) == fg.grad(fg.grad(lambda x: fnp.sin(x) * x))(0.3)


# functions whose eager code passes traced values through lists, index arrays, reductions,
# sorting, interpolation ...: the replayed program must follow new inputs, never freeze them
REPLAY_CASES = {
    "stack": lambda x: fnp.stack([x, x * 2]),
    "concatenate": lambda x: fnp.concatenate([x, fnp.sin(x)]),
    "array_of_entries": lambda x: fnp.array([x[0], x[1] * 2]),
    "einsum": lambda x: fnp.einsum("i,i->", x, x),
    "where": lambda x: fnp.where(x > 1, x, -x),
    "python_sum": lambda x: sum([x, x]),
    "at_set": lambda x: fnp.zeros(3).at[1].set(x[2]),
    "sort": lambda x: fnp.sort(-x),
    "argmax_index": lambda x: x[fnp.argmax(x)],
    "norm": lambda x: fnp.linalg.norm(x),
    "pad_cumsum": lambda x: fnp.cumsum(fnp.pad(x, 1)),
    "outer": lambda x: fnp.outer(x, x),
    "split": lambda x: fnp.split(x, 3)[1],
    "clip_maximum": lambda x: fnp.clip(x, 0.5, 1.5) + fnp.maximum(x, 1.0),
    "interp": lambda x: fnp.interp(1.5, x, x ** 2),
    "median_nan_literal": lambda x: fnp.median(x) + fnp.minimum(x, float("inf")),
}


@pytest.mark.parametrize("name", list(REPLAY_CASES))
def test_replay_follows_new_inputs(name):
    f = REPLAY_CASES[name]
    x = np.arange(3.0)
    total = lambda z: fnp.sum(f(z))  # noqa: E731
    j, jg = fg.jit(f), fg.jit(fg.grad(total))
    gj = fg.grad(lambda z: fnp.sum(j(z)))
    j(x)
    jg(x + 0.3)
    for y in (x + 1.7, x[::-1] * 3.1):
        np.testing.assert_allclose(j(y.copy()), fg.jit(f)(y.copy()))  # replay == a fresh trace
        np.testing.assert_allclose(gj(y), fg.grad(total)(y))
        np.testing.assert_allclose(jg(y), fg.grad(total)(y))


def _nondiff_cases():
    from test_indexing import _ND  # the table of non-differentiable functions on traced values

    return _ND


@pytest.mark.parametrize("name,fn", _nondiff_cases(), ids=[n for n, _ in _nondiff_cases()])
def test_nondiff_functions_replay_or_refuse(name, fn):
    rng_nd = np.random.default_rng(12)
    x, x2 = rng_nd.standard_normal((2, 4)), rng_nd.standard_normal((2, 4))
    jf = fg.jit(lambda a: fn(fnp, a))
    try:
        first = jf(x)
    except StagedValueError as err:  # data-dependent shapes (unique ...), lexsort's key list: refused, never frozen
        assert "traced by fg.jit" in str(err)
        return
    np.testing.assert_array_equal(first, fn(np, x))
    np.testing.assert_array_equal(jf(x2), fn(np, x2))  # replayed on new values


def test_passes_keep_generalized_ufuncs_apart():
    # broadcast_to before matmul is not an implicit broadcast (matmul has a core signature),
    # and matmul never writes into one of its own arguments
    n = 40  # 40x40 float64: above the reuse threshold
    a, o = rng.standard_normal((1, n)), rng.standard_normal((n, n))
    f = lambda a, o: fnp.broadcast_to(a, (n, n)) @ o + fnp.broadcast_to(a, (n, n)) * o  # noqa: E731
    g = lambda x: (fnp.exp(x) @ x) @ fnp.tanh(x) * 2.0  # noqa: E731
    jf, jg = fg.jit(f), fg.jit(g)
    for k in range(3):
        np.testing.assert_allclose(jf(a + k, o), f(a + k, o))
        np.testing.assert_allclose(jg(o * 0.1 * k), g(o * 0.1 * k))


def test_grad_of_jit_with_integer_and_constant_outputs_uses_the_split_programs():
    def f(x):
        return fnp.sum(fnp.sin(x) ** 2), fnp.argmax(x), 3.0

    jf = fg.jit(f)
    loss = lambda h: lambda x: h(x)[0] * 2 + h(x)[1]  # noqa: E731
    for x in (X, -X):
        np.testing.assert_allclose(fg.grad(loss(jf))(x), fg.grad(loss(f))(x))
        np.testing.assert_allclose(fg.hessian(lambda x: jf(x)[0])(x), fg.hessian(lambda x: f(x)[0])(x), atol=1e-14)
    forward = next(iter(next(iter(jf.cache.values())).staged.splits.values()))
    assert forward and forward.float_outs == [0]  # no recomputing fallback


def test_signed_zero_literals_are_not_merged():
    f = lambda x: (fnp.copysign(1.0, x * 0.0) + 10 * fnp.copysign(1.0, x * -0.0)  # noqa: E731
                   + 100 * fnp.copysign(1.0, x * np.float64(-0.0)) + 1000 * fnp.copysign(1.0, x * np.float64(0.0)))
    np.testing.assert_array_equal(fg.jit(f)(X), f(X))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_lowered_sums_are_numpys_sums(dtype):
    x = (rng.standard_normal((4, 5)) * 10).astype(dtype)
    cases = [lambda x: fnp.sum(x), lambda x: fnp.sum(x, axis=1), lambda x: fnp.sum(x, axis=(0, 1), keepdims=True),
             lambda x: fnp.sum(x, 0, keepdims=True), lambda x: fnp.sum(x, axis=-1, dtype=np.float64)]
    for f in cases:
        j = fg.jit(f)
        j(x)
        r, e = j(x + 1), f(x + 1)
        assert type(r) is type(e) and np.asarray(r).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(r, e)


def test_dtype_classes_as_arguments_are_static():
    j = fg.jit(lambda x, d: fnp.astype(x, d) * 2)
    assert j(X, np.float32).dtype == np.float32 and j(X, np.float64).dtype == np.float64
    assert j.cache_size() == 2


def test_captured_array_written_during_tracing_is_two_constants():
    b = np.zeros(3)

    def g(x):
        y = x * b
        b[0] = 1.0  # a write into a captured array between two uses
        return y + x * b

    jg = fg.jit(g)
    jg(X)
    b[0] = 0.0
    np.testing.assert_allclose(jg(X), g(X))  # replay: the first use saw zeros, the second a 1


# --------------------------------------------------------------------------
# the two bit-for-bit rewrites of the compiler: diagonal products and blocked elementwise programs


def _spy(monkeypatch, name, module="passes"):
    """Count how often ``funcgrad.jit.<module>``'s rewrite ``name`` is applied (white-box: the
    rewrite fired)."""
    import importlib

    staging = importlib.import_module(f"funcgrad.jit.{module}")
    calls = []
    original = getattr(staging, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(staging, name, spy)
    return calls


@pytest.mark.parametrize("w_as_argument", [False, True])
def test_jacrev_diagonal_rewrite_equals_eager_bit_for_bit(monkeypatch, w_as_argument):
    calls = _spy(monkeypatch, "_diag_rows")
    rng = np.random.default_rng(0)
    n = 40
    W = rng.standard_normal((n, n))
    x = rng.standard_normal(n)
    if w_as_argument:
        f = lambda x, W: fnp.tanh(W @ x)  # noqa: E731
        args = (x, W)
    else:
        f = lambda x: fnp.tanh(W @ x)  # noqa: E731
        args = (x,)
    staged = fg.jit(fg.jacrev(f))
    staged(*args)  # the first call traces (and computes eagerly); later calls run the program
    np.testing.assert_array_equal(staged(*args), fg.jacrev(f)(*args))
    assert calls, "the diagonal-product rewrite did not fire"
    # non-finite values take the product itself, so inf/nan come out exactly as in eager
    for bad in (np.inf, np.nan):
        xb = x.copy()
        xb[3] = bad
        bad_args = (xb,) + args[1:]
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(staged(*bad_args), fg.jacrev(f)(*bad_args))
    if w_as_argument:
        Wb = W.copy()
        Wb[2, 5] = np.inf
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(staged(x, Wb), fg.jacrev(f)(x, Wb))


def test_blocked_elementwise_program_equals_eager_bit_for_bit(monkeypatch):
    calls = _spy(monkeypatch, "_runner", "blocking")
    n = (1 << 18) + 123  # 2 MiB of float64 and a ragged last block
    x = np.linspace(-3.0, 3.0, n)
    f = lambda x: fnp.sum(fnp.sin(x) ** 2 + fnp.tanh(x))  # noqa: E731
    g = fg.jit(fg.grad(f))
    g(x)  # the first call traces (and computes eagerly); later calls run the program
    np.testing.assert_array_equal(g(x), fg.grad(f)(x))
    assert calls, "the compiler was not asked to block the program"
    h = fg.jit(lambda x: fnp.sin(x) * fnp.cos(x) + 1.0)
    h(x)
    np.testing.assert_array_equal(h(x), np.sin(x) * np.cos(x) + 1.0)
    np.testing.assert_array_equal(h(x[:1000]), np.sin(x[:1000]) * np.cos(x[:1000]) + 1.0)  # another signature
