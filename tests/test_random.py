"""fg.random semantics: transforms (vmap over keys == loop, jit staging, scan/fori_loop),
derivatives (check_grads, implicit gradients against finite differences), the new
primitives through the shared spec factory, bad input, and the fake device.
JAX's own numbers are compared in test_random_jax.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.random as fr
from factories import CHECKS, Spec, check_spec
from funcgrad.random import xla_math
from funcgrad.random.floats import erf_inv, log1p, scale_shift
from funcgrad.testing import check_grads

sp = pytest.importorskip("scipy.special")

KEY = fr.PRNGKey(0)
KEYS = fr.split(KEY, 4)

SAMPLERS = {
    "normal": lambda k: fr.normal(k, (3,)),
    "normal32": lambda k: fr.normal(k, (3,), np.float32),
    "uniform_bounds": lambda k: fr.uniform(k, (2,), minval=-1.0, maxval=2.0),
    "randint": lambda k: fr.randint(k, (3,), 0, 10),
    "randint_uint8": lambda k: fr.randint(k, (3,), 0, 256, np.uint8),
    "bits": lambda k: fr.bits(k, (2,)),
    "split": lambda k: fr.split(k, 3),
    "fold_in": lambda k: fr.fold_in(k, 5),
    "permutation": lambda k: fr.permutation(k, 6),
    "permutation_2d": lambda k: fr.permutation(k, np.arange(6.0).reshape(2, 3), axis=1),
    "choice": lambda k: fr.choice(k, 5, (3,), False),
    "choice_p": lambda k: fr.choice(k, 4, (3,), p=np.array([0.1, 0.2, 0.3, 0.4])),
    "categorical": lambda k: fr.categorical(k, np.zeros(4), shape=(3,)),
    "bernoulli": lambda k: fr.bernoulli(k, 0.3, (5,)),
    "poisson": lambda k: fr.poisson(k, np.array([2.0, 30.0])),
    "binomial": lambda k: fr.binomial(k, np.array([4.0, 300.0]), 0.4),
    "multinomial": lambda k: fr.multinomial(k, 50.0, np.array([0.2, 0.3, 0.5])),
    "gamma": lambda k: fr.gamma(k, np.array([0.5, 2.0])),
    "beta": lambda k: fr.beta(k, 2.0, 3.0, (2,)),
    "dirichlet": lambda k: fr.dirichlet(k, np.ones(3)),
    "truncated_normal": lambda k: fr.truncated_normal(k, -1.0, 1.0, (3,)),
    "multivariate_normal": lambda k: fr.multivariate_normal(k, np.zeros(2), np.eye(2), (2,)),
    "exponential": lambda k: fr.exponential(k, (2,)),
    "laplace": lambda k: fr.laplace(k, (2,)),
    "logistic": lambda k: fr.logistic(k, (2,)),
    "gumbel": lambda k: fr.gumbel(k, (2,)),
    "gumbel_highest": lambda k: fr.gumbel(k, (2,), np.float32, mode="highest"),
    "cauchy": lambda k: fr.cauchy(k, (2,)),
    "t": lambda k: fr.t(k, 3.0, (2,)),
    "orthogonal": lambda k: fr.orthogonal(k, 3),
    "ball": lambda k: fr.ball(k, 2, shape=(2,)),
    "rademacher": lambda k: fr.rademacher(k, (4,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_vmap_over_keys_equals_a_loop(name):
    f = SAMPLERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback warning
        batched = fg.vmap(f)(KEYS)
    looped = np.stack([f(k) for k in KEYS])
    assert batched.dtype == looped.dtype and np.array_equal(batched, looped)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_stages_draws(name):
    """Under fg.jit a draw is a staged computation of the key: new keys give new numbers."""
    f = SAMPLERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no frozen-draw warning
        jitted = fg.jit(f)
        for k in (KEYS[0], KEYS[1], KEYS[0]):
            assert np.array_equal(jitted(k), f(k))
    assert not np.array_equal(f(KEYS[0]), f(KEYS[1])) or name in ("poisson",)


def test_program_shows_the_key_primitives():
    text = str(fg.make_program(lambda k: fr.normal(k, (2,)))(KEY))
    assert "random_bits" in text and "random_erf_inv" in text


def test_fold_in_and_split_inside_fori_loop_scan_and_jit():
    def body(i, carry):
        k, acc = carry
        return k, acc + fr.normal(fr.fold_in(k, i), ())

    want = sum(fr.normal(fr.fold_in(KEY, i), ()) for i in range(3))
    assert fg.fori_loop(0, 3, body, (KEY, 0.0))[1] == pytest.approx(want, rel=1e-15)
    assert fg.jit(lambda k: fg.fori_loop(0, 3, body, (k, 0.0))[1])(KEY) == pytest.approx(want, rel=1e-15)

    def step(k, _):
        k, sub = fr.split(k)
        return k, fr.uniform(sub, ())

    k, want = KEY, []
    for _ in range(3):
        k, sub = fr.split(k)
        want.append(fr.uniform(sub, ()))
    np.testing.assert_array_equal(fg.scan(step, KEY, None, length=3)[1], want)
    np.testing.assert_array_equal(fg.jit(lambda k: fg.scan(step, k, None, length=3)[1])(KEY), want)


def test_vmap_fold_in_over_data_and_traced_seed():
    np.testing.assert_array_equal(fg.vmap(lambda i: fr.fold_in(KEY, i))(np.arange(3)),
                                  np.stack([fr.fold_in(KEY, i) for i in range(3)]))
    np.testing.assert_array_equal(fg.jit(fr.PRNGKey)(np.int64(-5)), fr.PRNGKey(-5))


def test_keys_are_pytree_leaves():
    tree = {"key": KEY, "w": np.ones(2)}
    assert len(fg.tree_util.tree_leaves(tree)) == 2
    out = fg.jit(lambda t: fr.normal(t["key"], (2,)) * t["w"])(tree)
    np.testing.assert_array_equal(out, fr.normal(KEY, (2,)))


# ---------------------------------------------------------------- derivatives


def test_check_grads_of_reparameterized_samplers():
    check_grads(lambda lo, hi: fr.uniform(KEY, (3,), minval=lo, maxval=hi), (-1.0, 2.0), order=2)
    check_grads(lambda lo, hi: fr.truncated_normal(KEY, lo, hi, (4,)), (-0.5, 1.2), order=2)
    check_grads(lambda m, c: fr.multivariate_normal(KEY, m, c @ c.T + np.eye(2), (3,)),
                (np.array([1.0, 2.0]), np.array([[1.0, 0.2], [0.1, 0.8]])), order=2)
    check_grads(lambda m, c: fr.multivariate_normal(KEY, m, c @ c.T + np.eye(2), (3,), method="svd"),
                (np.array([1.0, 2.0]), np.array([[1.0, 0.2], [0.1, 0.8]])), order=1)


@pytest.mark.parametrize("sampler", ["gamma", "loggamma"])
@pytest.mark.parametrize("seed", [0, 5])
def test_implicit_gamma_gradient_matches_finite_differences(sampler, seed):
    """The implicit gradient moves the sample along a fixed CDF level: dx/da is the finite
    difference of ``gammaincinv(a, u)`` at ``u = gammainc(a, x)`` (not of the rejection
    sampler's output, whose path in ``a`` is a different coupling)."""
    key = fr.PRNGKey(seed)
    a = np.array([0.3, 0.9, 1.0, 2.5, 12.0, 150.0])
    draw = getattr(fr, sampler)
    x = draw(key, a)
    grad = fg.jacfwd(lambda a: draw(key, a))(a).diagonal()
    sample = np.exp(x) if sampler == "loggamma" else x
    u = sp.gammainc(a, sample)
    h = 1e-5 * a
    fd = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
    if sampler == "loggamma":
        fd = fd / sample
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    np.testing.assert_allclose(fg.jacrev(lambda a: draw(key, a))(a).diagonal(), grad, rtol=1e-12)


def test_reparameterized_gradients_are_unbiased():
    """d/da E[x] by averaging pathwise gradients over many draws: gamma 1, beta b/(a+b)**2,
    dirichlet (the first component's mean a0/sum(a) in a0), truncated normal's mean in its bounds."""
    key = fr.PRNGKey(11)
    n = 20000
    g = fg.grad(lambda a: fnp.mean(fr.gamma(key, a, (n,))))(2.5)
    assert g == pytest.approx(1.0, rel=0.03)
    g = fg.grad(lambda a: fnp.mean(fr.beta(key, a, 3.0, (n,))))(2.0)
    assert g == pytest.approx(3.0 / 25.0, rel=0.05)
    g = fg.grad(lambda a: fnp.mean(fr.dirichlet(key, a, (n,))[:, 0]))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    lo, hi = -0.5, 1.2
    phi = lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)  # noqa: E731
    big = sp.ndtr(hi) - sp.ndtr(lo)
    # d/dlo of E = (phi(lo) - phi(hi)) / Z  is  phi(lo) * (phi(lo) - phi(hi) - lo * Z) / Z**2
    want = phi(lo) * (phi(lo) - phi(hi) - lo * big) / big**2
    g = fg.grad(lambda lo: fnp.mean(fr.truncated_normal(key, lo, hi, (n,))))(lo)
    assert g == pytest.approx(want, rel=0.05)


@pytest.mark.parametrize("sampler", ["gamma", "loggamma"])
def test_second_derivative_of_gamma_in_its_shape(sampler):
    """d2x/da2 at a fixed key, against central differences of the exact implicit path
    x(a) = gammaincinv(a, u) at the sample's CDF level u (the rejection sampler's own output is
    a different coupling, not smooth in a); the implicit gradient dx/da(a, x) is itself checked
    by check_grads in both arguments and both modes (its derivative is the second derivative)."""
    from funcgrad.random.gamma_family import _implicit_gradient

    draw = getattr(fr, sampler)
    a = np.array([0.4, 1.0, 2.5, 12.0, 150.0])
    log_space = sampler == "loggamma"
    check_grads(lambda a, x: _implicit_gradient(a, x, log_space=log_space), (a, draw(KEY, a)), order=1,
                modes=("fwd", "rev"))
    second = np.array([fg.grad(fg.grad(lambda s, i=i: draw(KEY, a + (np.arange(5) == i) * s)[i]))(0.0)
                       for i in range(5)])
    x = draw(KEY, a)
    u = sp.gammainc(a, np.exp(x) if sampler == "loggamma" else x)
    h = 1e-3 * a
    path = (lambda a: np.log(sp.gammaincinv(a, u))) if sampler == "loggamma" else (lambda a: sp.gammaincinv(a, u))
    fd = (path(a + h) - 2 * path(a) + path(a - h)) / h**2
    np.testing.assert_allclose(second, fd, rtol=2e-4, atol=1e-8)
    np.testing.assert_allclose(fg.hessian(lambda a: fnp.sum(draw(KEY, a)))(a).diagonal(), second, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="third derivative"):
        fg.grad(fg.grad(fg.grad(lambda a: draw(KEY, a))))(2.0)


def test_exact_erf_inv_differentiates_and_batches_like_the_fast_one():
    """erf_inv's exact mode (the gamma family's, maxwell's, wald's, orthogonal's normals): the same
    rules; its values within an ulp or two of the fast path's and equal to XLA's polynomial."""
    x = np.array([-0.9, -0.3, 0.1, 0.7, 0.999])
    check_grads(lambda v: erf_inv(v, exact=True), (x,), order=2)
    np.testing.assert_allclose(erf_inv(x, exact=True), erf_inv(x), rtol=1e-15)
    np.testing.assert_array_equal(fg.vmap(lambda v: erf_inv(v, exact=True))(x), erf_inv(x, exact=True))
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(erf_inv(x32, exact=True), sp.erfinv(x32.astype(np.float64)), rtol=1e-6)


def test_key_based_draws_do_not_differentiate_through_the_key():
    assert fg.grad(lambda s: fnp.sum(fr.normal(KEY, (3,))) * s)(2.0) == pytest.approx(float(np.sum(fr.normal(KEY, (3,)))))


# The differentiable primitives of fg.random, through the shared factory (every check).
RANDOM_SPECS = [
    Spec("random_erf_inv", erf_inv, sp.erfinv, ["unit"], rtol=1e-11, atol=1e-13),
    Spec("random_log1p", log1p, np.log1p, ["positive"], rtol=1e-14),
    Spec("random_xla_exp", xla_math.exp, np.exp, ["real"], rtol=1e-15),
    Spec("random_xla_erf", xla_math.erf, sp.erf, ["real"], rtol=1e-14),
    Spec("random_scale_shift", scale_shift, lambda u, a, b: u * a + b, ["real", "real", "real"],
         shapes=((2, 3), (3,), (2, 1)), rtol=1e-14),
]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("spec", RANDOM_SPECS, ids=repr)
def test_spec(spec, check):
    check_spec(spec, check)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("call,error,words", [
    (lambda: fr.normal(0, (2,)), TypeError, "expected a PRNG key"),
    (lambda: fr.normal(np.array([1.0, 2.0]), (2,)), TypeError, "uint32"),
    (lambda: fr.normal(np.zeros(3, np.uint32), (2,)), TypeError, "shape (3,)"),
    (lambda: fr.normal(KEYS, (2,)), ValueError, "Use fg.vmap"),
    (lambda: fr.split(KEYS), ValueError, "single key"),
    (lambda: fr.normal(KEY, (-1,)), ValueError, "negative"),
    (lambda: fr.normal(KEY, (2.5,)), TypeError, "not an integer"),
    (lambda: fr.uniform(KEY, (2,), np.int32), ValueError, "float dtype"),
    (lambda: fr.randint(KEY, (2,), 0, 5, np.float64), TypeError, "integer dtypes"),
    (lambda: fr.bits(KEY, (2,), np.int32), ValueError, "unsigned"),
    (lambda: fr.fold_in(KEY, np.arange(2)), TypeError, "scalar"),
    (lambda: fr.fold_in(KEY, 1.5), TypeError, "integer"),
    (lambda: fr.PRNGKey(1.5), TypeError, "integer"),
    (lambda: fr.PRNGKey(2**64), OverflowError, "64 bits"),
    (lambda: fr.choice(KEY, 3, (5,), replace=False), ValueError, "larger sample"),
    (lambda: fr.choice(KEY, 3, 5), TypeError, "sequence"),
    (lambda: fr.choice(KEY, 3, (2,), p=np.ones(4) / 4), ValueError, "p must be None"),
    (lambda: fr.multivariate_normal(KEY, np.zeros(2), np.eye(2), method="qr"), ValueError, "method"),
    (lambda: fr.multivariate_normal(KEY, np.zeros(2), np.eye(3)), ValueError, "cov.shape"),
    (lambda: fr.uniform(KEY, (3,), minval=np.zeros(2)), ValueError, None),
    (lambda: fr.gamma(KEY, np.ones(3), (2,)), ValueError, "broadcast-compatible"),
    (lambda: fr.gamma(KEY, -1.0), ValueError, "positive"),
    (lambda: fr.bernoulli(KEY, 1, (2,)), TypeError, "floating dtype"),
    (lambda: fr.bernoulli(KEY, 0.5, (2,), mode="mid"), ValueError, "expected 'high' or 'low'"),
    (lambda: fr.permutation(KEY, 2.5), TypeError, "integer or at least 1-dimensional"),
    (lambda: fr.categorical(KEY, np.zeros(3), shape=(4,), replace=False), ValueError, "cannot exceed"),
    (lambda: fr.poisson(KEY, -1.0), ValueError, "non-negative"),
    (lambda: fr.binomial(KEY, 5.0, 0.5, dtype=np.int64), ValueError, "float dtype"),
    (lambda: fr.binomial(KEY, np.ones(3), 0.5, (2,)), ValueError, "broadcast-compatible"),
    (lambda: fr.binomial(KEY, 5.0, np.array([0.5j])), TypeError, "real numbers"),
    (lambda: fr.multinomial(KEY, 5.0, 0.5), ValueError, "outcome"),
    (lambda: fr.multinomial(KEY, np.ones(4), np.ones((3, 2)) / 2), ValueError, "broadcast-compatible"),
    (lambda: fr.gumbel(KEY, (2,), mode="top"), ValueError, "'low', 'high' or 'highest'"),
])
def test_bad_input_is_refused_clearly(call, error, words):
    with pytest.raises(error) as info:
        call()
    if words:
        assert words in str(info.value)


def test_binomial_and_multinomial_moments_and_invalid_parameters():
    """Mean n p and variance n p (1 - p) over many draws on both algorithms (n q <= 10 and above);
    nan for p outside [0, 1] or a negative n, inf for an infinite n (JAX's rules); multinomial
    counts sum to n and have means n p."""
    for n, p in [(8.0, 0.3), (200.0, 0.45), (1000.0, 0.9)]:
        x = fr.binomial(KEY, n, p, (20000,))
        assert x.dtype == np.float64 and np.all(x == np.floor(x)) and 0 <= x.min() and x.max() <= n
        assert x.mean() == pytest.approx(n * p, rel=0.02)
        assert x.var() == pytest.approx(n * p * (1 - p), rel=0.06)
    odd = fr.binomial(KEY, np.array([5.0, -1.0, np.inf, np.nan, 3.0]), np.array([1.2, 0.5, 0.5, 0.5, 1.0]))
    assert np.isnan(odd[:2]).all() and odd[2] == np.inf and np.isnan(odd[3]) and odd[4] == 3.0
    assert fr.binomial(KEY, 10.0, np.float32(0.5), (3,), np.float32).dtype == np.float32
    p = np.array([0.1, 0.6, 0.3])
    counts = fr.multinomial(KEY, np.full(5000, 40.0), p, shape=(5000, 3))
    assert counts.shape == (5000, 3)
    np.testing.assert_array_equal(counts.sum(-1), 40.0)
    np.testing.assert_allclose(counts.mean(0), 40 * p, rtol=0.03)


def test_jax_behaviour_for_empty_randint_span_and_zero_draws():
    np.testing.assert_array_equal(fr.randint(KEY, (3,), 5, 2), [5, 5, 5])   # maxval <= minval gives minval
    assert fr.choice(KEY, 3, (0,)).shape == (0,)
    assert fr.normal(KEY, (0, 3)).shape == (0, 3)


# ---------------------------------------------------------------- device


def test_draws_on_the_fake_device_stay_there():
    import fake_backend as fb

    fb.install()
    key = fb.to_fake(KEY)
    with fb.no_host_sync():
        bits = fr.bits(key, (5,))
        keys = fr.split(key, 3)
        u = fr.uniform(key, (5,), minval=-1.0, maxval=1.0)
    assert isinstance(bits, fb.FakeArray) and isinstance(keys, fb.FakeArray) and isinstance(u, fb.FakeArray)
    np.testing.assert_array_equal(fb.fake.asnumpy(bits), fr.bits(KEY, (5,)))
    np.testing.assert_array_equal(fb.fake.asnumpy(keys), fr.split(KEY, 3))
    np.testing.assert_array_equal(fb.fake.asnumpy(u), fr.uniform(KEY, (5,), minval=-1.0, maxval=1.0))
    n = fr.normal(key, (50,))
    assert isinstance(n, fb.FakeArray)
    np.testing.assert_array_equal(fb.fake.asnumpy(n), fr.normal(KEY, (50,)))


def test_gamma_family_on_the_fake_device_stays_there():
    """The gamma loop (XLA's float32 log, the rsqrt, the fused erf_inv) runs in the device's
    namespace: the draws stay on the device and equal the host's bit for bit (the rsqrt
    estimate tables are uploaded to the device)."""
    import fake_backend as fb

    fb.install()
    for dt, rtol in ((np.float32, 0.0), (np.float64, 0.0)):
        a = np.array([0.3, 2.0, 7.5], dt)
        for sampler in (fr.gamma, fr.loggamma):
            on_device = sampler(fb.to_fake(KEY), fb.to_fake(a), (4, 3), dt)
            assert isinstance(on_device, fb.FakeArray)
            np.testing.assert_allclose(fb.fake.asnumpy(on_device), sampler(KEY, a, (4, 3), dt), rtol=rtol)


# ---------------------------------------------------------------- keys elsewhere


def test_keys_seed_the_scipy_side_draws():
    """A fg.random key is a random_state for dirichlet.rvs and sparse.random: it seeds NumPy's
    generator with the key's 64 bits (as fg.nn.init.rng does); other keys give other draws."""
    from funcgrad.scipy import sparse
    from funcgrad.scipy.stats import dirichlet

    key = fr.PRNGKey(2**33 + 5)
    alpha = np.array([1.0, 2.0, 3.0])
    draws = dirichlet.rvs(alpha, size=4, random_state=key)
    np.testing.assert_array_equal(draws, np.random.default_rng(2**33 + 5).dirichlet(alpha, size=4))
    np.testing.assert_array_equal(dirichlet.rvs(alpha, size=4, random_state=key), draws)
    assert not np.array_equal(dirichlet.rvs(alpha, size=4, random_state=fr.split(key)[0]), draws)
    a = sparse.random(6, 5, density=0.4, rng=key)
    b = sparse.random(6, 5, density=0.4, random_state=key)
    c = sparse.random(6, 5, density=0.4, rng=np.random.default_rng(2**33 + 5))
    np.testing.assert_array_equal(a.todense(), c.todense())
    np.testing.assert_array_equal(b.todense(), c.todense())
    with pytest.raises(TypeError, match="random_state must be None, an int seed"):
        dirichlet.rvs(alpha, random_state="seed")
    with pytest.raises(TypeError, match="fg.random key"):
        sparse.random(3, 3, rng=np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="traced value"):
        fg.vmap(lambda k: dirichlet.rvs(alpha, random_state=k))(fr.split(key, 2))


# ---------------------------------------------------------------- compiled kernels


def test_compiled_hash_and_erf_inv_give_the_numpy_paths_bits():
    """With numba installed, large host draws hash (and evaluate erf_inv) in compiled loops; the bits
    must be the NumPy path's (fg.config.jit_backend = "numpy" forces it). Without numba the compiled
    path reports itself off and every draw takes the NumPy path."""
    from funcgrad.random import native

    keys = fr.split(KEY, 3)
    draws = [
        lambda: fr.bits(KEY, (native.MIN_SIZE + 3,)),
        lambda: fr.bits(KEY, (native.MIN_SIZE,), np.uint64),
        lambda: fr.bits(KEY, (300, 300), np.uint8),
        lambda: fr.split(KEY, (native.MIN_SIZE,)),
        lambda: fg.vmap(lambda k: fr.bits(k, (native.MIN_SIZE,)))(keys),
        lambda: fr.normal(KEY, (native.MIN_SIZE,)),
        lambda: fr.normal(KEY, (native.MIN_SIZE,), np.float32),
        lambda: fr.truncated_normal(KEY, -3.0, 4.0, (native.MIN_SIZE,)),
        lambda: fr.truncated_normal(KEY, -3.0, 4.0, (native.MIN_SIZE,), np.float32),
        lambda: erf_inv(np.concatenate([np.linspace(-1.0, 1.0, native.MIN_SIZE + 1), [np.nan]])),
        lambda: erf_inv(np.concatenate([np.linspace(-1.0, 1.0, native.MIN_SIZE + 1), [np.nan]]).astype(np.float32)),
    ]
    before = fg.config.jit_backend
    try:
        fg.config.jit_backend = "auto"
        compiled = [f() for f in draws]
        if not native.enabled():
            assert native.hash_counters(np.zeros((1, 2), np.uint32), 1 << 20, "xor") is None
        fg.config.jit_backend = "numpy"
        assert not native.enabled()
        plain = [f() for f in draws]
    finally:
        fg.config.jit_backend = before
    for a, b in zip(compiled, plain):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
