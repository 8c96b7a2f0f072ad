"""Typed key arrays (``fg.random.key``, issue 28): JAX 0.10's behaviour from recorded fixtures
(tests/fixtures/random_typed_keys_jax.json, made by make_random_typed_keys_jax.py), and
typed keys through every transform, pytrees, the fake device and the layers above."""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.random as fr

RECORDED = json.loads((pathlib.Path(__file__).parent / "fixtures" / "random_typed_keys_jax.json").read_text())
KEY = fr.key(0)
KEYS = fr.split(KEY, 4)


def data(k):
    return np.asarray(fr.key_data(k))


# ---------------------------------------------------------------- JAX's numbers and shapes


@pytest.mark.parametrize("seed", RECORDED["seeds"])
def test_typed_keys_match_jax(seed):
    want = RECORDED["cases"][str(seed)]
    k = fr.key(seed)
    ks = fr.split(k, (2, 3))
    made = {"key": k, "split3": fr.split(k, 3), "split23": ks, "split23[1]": ks[1], "split23[:, 2]": ks[:, 2],
            "split23.reshape(6)": ks.reshape(6), "split23.T": ks.T, "fold_in 5": fr.fold_in(k, 5)}
    for label, got in made.items():
        assert isinstance(got, fr.PRNGKeyArray), label
        assert list(got.shape) == want[label]["shape"], label
        np.testing.assert_array_equal(data(got), np.array(want[label]["data"], np.uint32), err_msg=label)
    assert str(k.dtype) == want["key"]["dtype"] == "key<fry>"
    np.testing.assert_array_equal(fr.normal(k, (3,)), want["normal"])
    np.testing.assert_array_equal(fr.bits(k, (3,), np.uint32), want["bits32"])
    np.testing.assert_array_equal(fr.randint(k, (4,), 0, 100), want["randint"])
    np.testing.assert_array_equal(ks == ks[0, 1], want["eq"])
    np.testing.assert_array_equal(data(k), fr.PRNGKey(seed))     # the raw key's data


def test_key_array_behaves_as_an_array_of_keys():
    ks = fr.split(KEY, (2, 3))
    assert (ks.shape, ks.ndim, ks.size, len(ks)) == ((2, 3), 2, 6, 2)
    assert [k.shape for k in ks] == [(3,), (3,)]
    assert ks[..., 0].shape == (2,) and ks[None].shape == (1, 2, 3) and ks[np.array([1, 0, 1])].shape == (3, 3)
    assert ks.ravel().shape == (6,) and ks.reshape(3, 2).shape == (3, 2) and ks[:1].squeeze().shape == (3,)
    assert ks.transpose(1, 0).shape == (3, 2)
    np.testing.assert_array_equal(data(ks.T[2, 1]), data(ks[1, 2]))
    np.testing.assert_array_equal(ks != ks[0], [[False, False, False], [True, True, True]])
    np.testing.assert_array_equal(ks == ks[0, 0], [[True, False, False], [False, False, False]])
    assert "key<fry>" in repr(KEY) and "PRNGKeyArray" in repr(KEY)
    assert fr.issubdtype(KEY.dtype, fr.prng_key) and fr.issubdtype(KEY.dtype, KEY.dtype)
    assert not fr.issubdtype(fr.PRNGKey(0).dtype, fr.prng_key) and not fr.issubdtype(KEY.dtype, np.integer)
    assert fr.issubdtype(np.float32, np.floating)
    assert str(fr.key_impl(KEY)) == RECORDED["behaviour"]["key_impl"]["value"] == "threefry2x32"
    assert str(fr.key_impl(fr.PRNGKey(0))) == RECORDED["behaviour"]["key_impl_raw"]["value"]
    assert fr.key_impl(KEY) == fr.key_impl(KEYS)
    np.testing.assert_array_equal(data(fr.wrap_key_data(data(KEYS))), data(KEYS))
    assert fr.wrap_key_data(np.array([1, 2], np.uint32)).shape == ()
    np.testing.assert_array_equal(fr.key_data(fr.PRNGKey(3)), fr.PRNGKey(3))   # raw keys: themselves
    assert fr.key(0, impl="threefry2x32").shape == () and fr.PRNGKey(0, impl=fr.key_impl(KEY)).shape == (2,)
    # raw keys stay raw, typed keys stay typed
    assert not isinstance(fr.split(fr.PRNGKey(0)), fr.PRNGKeyArray)
    assert not isinstance(fr.fold_in(fr.PRNGKey(0), 1), fr.PRNGKeyArray)


REFUSALS = {
    "add": lambda: KEY + 1, "mul": lambda: KEY * KEY, "neg": lambda: -KEY, "to_numpy": lambda: np.asarray(KEY),
    "eq_raw": lambda: KEY == fr.PRNGKey(0), "key_of_key": lambda: fr.key(KEY),
    "key_of_array": lambda: fr.key(np.arange(3)), "wrap_typed": lambda: fr.wrap_key_data(KEY),
    "wrap_bad_shape": lambda: fr.wrap_key_data(np.zeros(3, np.uint32)),
    "wrap_bad_dtype": lambda: fr.wrap_key_data(np.zeros(2, np.int32)),
    "float": lambda: float(KEY), "bool": lambda: bool(KEY), "hash": lambda: hash(KEY),
    "normal_batched": lambda: fr.normal(KEYS, (2,)), "impl_unknown": lambda: fr.key(0, impl="foo"),
}
WORDS = {"add": "add does not accept key arrays", "mul": "key_data", "to_numpy": "fg.random.key_data",
         "eq_raw": "compare typed keys with typed keys", "key_of_key": "scalar seed", "key_of_array": "shape (3,)",
         "wrap_typed": "already wrapped", "wrap_bad_shape": "shape (3,)", "wrap_bad_dtype": "dtype int32",
         "normal_batched": "key array of shape (4,) != ()", "impl_unknown": "threefry2x32"}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_what_jax_refuses_is_refused_clearly(name):
    expected = RECORDED["behaviour"][name]
    assert not expected["ok"]
    with pytest.raises(getattr(__builtins__, expected["error"], None) or eval(expected["error"])) as info:
        REFUSALS[name]()
    if name in WORDS:
        assert WORDS[name] in str(info.value)


def test_numpy_arrays_and_funcgrad_ops_refuse_keys():
    with pytest.raises(TypeError, match="key"):
        np.ones(2) + KEY
    with pytest.raises(TypeError, match="key_data"):
        fnp.sum(KEYS)
    with pytest.raises(TypeError, match="key_data"):
        KEY.astype(np.uint32)


# ---------------------------------------------------------------- transforms


SAMPLERS = {
    "normal": lambda k: fr.normal(k, (3,)),
    "uniform32": lambda k: fr.uniform(k, (2,), np.float32, -1.0, 2.0),
    "randint": lambda k: fr.randint(k, (3,), 0, 10),
    "bits": lambda k: fr.bits(k, (2,)),
    "permutation": lambda k: fr.permutation(k, 5),
    "choice": lambda k: fr.choice(k, 5, (3,), False),
    "bernoulli": lambda k: fr.bernoulli(k, 0.3, (4,)),
    "gamma": lambda k: fr.gamma(k, np.array([0.5, 2.0])),
    "dirichlet": lambda k: fr.dirichlet(k, np.ones(3)),
    "truncated_normal": lambda k: fr.truncated_normal(k, -1.0, 1.0, (2,)),
    "binomial": lambda k: fr.binomial(k, 20.0, 0.3, (2,)),
    "split_data": lambda k: fr.key_data(fr.split(k, 3)),
    "fold_in_data": lambda k: fr.key_data(fr.fold_in(k, 7)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_takes_typed_keys_under_vmap_and_jit(name):
    f = SAMPLERS[name]
    for k in KEYS:
        np.testing.assert_array_equal(f(k), f(fr.key_data(k)))   # typed and raw: the same numbers
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback, no frozen draws
        batched = fg.vmap(f)(KEYS)
        jitted = fg.jit(f)
        for k in (KEYS[0], KEYS[1], KEYS[0]):
            np.testing.assert_array_equal(jitted(k), f(k))
    np.testing.assert_array_equal(batched, np.stack([f(k) for k in KEYS]))


def test_key_arrays_come_out_of_vmap_jit_and_scan():
    split_all = fg.vmap(fr.split)(KEYS)
    assert isinstance(split_all, fr.PRNGKeyArray) and split_all.shape == (4, 2)
    np.testing.assert_array_equal(data(split_all[2]), data(fr.split(KEYS[2])))
    jitted = fg.jit(lambda k: fr.split(k, 3))(KEY)
    assert isinstance(jitted, fr.PRNGKeyArray) and jitted.shape == (3,)
    np.testing.assert_array_equal(data(jitted), data(fr.split(KEY, 3)))
    # batch axis 1 of a (3, 4) key array
    grid = fr.split(KEY, (3, 4))
    cols = fg.vmap(lambda ks: fr.normal(ks[0], ()), in_axes=1)(grid)
    np.testing.assert_array_equal(cols, [fr.normal(grid[0, j], ()) for j in range(4)])

    def step(k, _):
        k, sub = fr.split(k)
        return k, fr.uniform(sub, ())

    k, want = KEY, []
    for _ in range(3):
        k, sub = fr.split(k)
        want.append(fr.uniform(sub, ()))
    last, draws = fg.scan(step, KEY, None, length=3)
    assert isinstance(last, fr.PRNGKeyArray)
    np.testing.assert_array_equal(data(last), data(k))
    np.testing.assert_array_equal(draws, want)
    np.testing.assert_array_equal(fg.jit(lambda k: fg.scan(step, k, None, length=3)[1])(KEY), want)

    def body(i, carry):
        k, acc = carry
        return k, acc + fr.normal(fr.fold_in(k, i), ())

    total = sum(fr.normal(fr.fold_in(KEY, i), ()) for i in range(3))
    assert fg.fori_loop(0, 3, body, (KEY, 0.0))[1] == pytest.approx(total, rel=1e-15)
    assert fg.jit(lambda k: fg.fori_loop(0, 3, body, (k, 0.0))[1])(KEY) == pytest.approx(total, rel=1e-15)
    traced_seed = fg.jit(lambda s: fr.key(s))(np.int64(5))
    np.testing.assert_array_equal(data(traced_seed), fr.PRNGKey(5))


def test_derivatives_of_draws_from_typed_keys():
    from funcgrad.testing import check_grads

    check_grads(lambda lo, hi: fr.uniform(KEY, (3,), minval=lo, maxval=hi), (-1.0, 2.0), order=2)
    check_grads(lambda m, c: fr.multivariate_normal(KEY, m, c @ c.T + np.eye(2), (3,)),
                (np.array([1.0, 2.0]), np.array([[1.0, 0.2], [0.1, 0.8]])), order=2)
    g = fg.grad(lambda a, k: fnp.sum(fr.gamma(k, a, (3,))))(2.0, KEY)     # a key as a non-differentiated arg
    assert g == pytest.approx(float(fg.grad(lambda a: fnp.sum(fr.gamma(fr.PRNGKey(0), a, (3,))))(2.0)))
    per_key = fg.vmap(fg.grad(lambda a, k: fr.gamma(k, a)), in_axes=(None, 0))(1.5, KEYS)
    np.testing.assert_array_equal(per_key, [fg.grad(lambda a: fr.gamma(k, a))(1.5) for k in KEYS])
    out, tangent = fg.jvp(lambda m: fr.normal(KEY, (2,)) + m, (1.0,), (1.0,))
    np.testing.assert_array_equal(tangent, [1.0, 1.0])
    h = fg.hessian(lambda a: fnp.sum(fr.gamma(KEY, a)))(np.array([1.5, 2.5]))
    assert h.shape == (2, 2) and h[0, 1] == 0.0


def test_key_arrays_are_pytrees_over_their_data():
    tree = {"key": KEYS, "w": np.ones(2)}
    leaves = fg.tree_util.tree_leaves(tree)
    assert len(leaves) == 2 and any(getattr(leaf, "shape", None) == (4, 2) for leaf in leaves)
    moved = fg.tree_util.tree_map(lambda x: x[::-1], {"key": KEYS})["key"]   # maps over the data
    assert isinstance(moved, fr.PRNGKeyArray)
    out = fg.jit(lambda t: fr.normal(t["key"][1], (2,)) * t["w"])(tree)
    np.testing.assert_array_equal(out, fr.normal(KEYS[1], (2,)))


def test_key_arrays_save_and_load_as_their_data(tmp_path):
    tree = {"keys": fr.split(fr.key(3), 2), "w": np.ones(2)}
    fg.save(tmp_path / "state.npz", tree)
    back = fg.load(tmp_path / "state.npz", like=tree)
    assert isinstance(back["keys"], fr.PRNGKeyArray) and back["keys"].shape == (2,)
    np.testing.assert_array_equal(data(back["keys"]), data(tree["keys"]))


def test_typed_keys_on_the_fake_device_stay_there():
    import fake_backend as fb

    fb.install()
    key = fr.wrap_key_data(fb.to_fake(fr.PRNGKey(0)))
    with fb.no_host_sync():
        keys = fr.split(key, 3)
        u = fr.uniform(keys[1], (5,))
        moved = fg.device_put(KEY, "cpu")
    assert isinstance(fr.key_data(keys), fb.FakeArray) and isinstance(u, fb.FakeArray)
    assert isinstance(moved, fr.PRNGKeyArray)
    np.testing.assert_array_equal(fb.fake.asnumpy(u), fr.uniform(fr.split(KEY, 3)[1], (5,)))


# ---------------------------------------------------------------- layers above


def test_typed_keys_in_nn_and_scipy():
    from funcgrad.scipy.stats import dirichlet

    drop = fg.nn.Dropout(0.5)
    x = np.ones((2, 8))
    np.testing.assert_array_equal(drop(x, key=KEYS[0]), drop(x, key=fr.key_data(KEYS[0])))
    w = fg.nn.init.normal(KEYS[1], (3, 2))
    np.testing.assert_array_equal(w, fg.nn.init.normal(fr.key_data(KEYS[1]), (3, 2)))
    assert fg.nn.init.rng(KEYS[2]).random() == fg.nn.init.rng(fr.key_data(KEYS[2])).random()
    layer, same = fg.nn.Linear(3, 2, key=KEYS[3]), fg.nn.Linear(3, 2, key=fr.key_data(KEYS[3]))
    np.testing.assert_array_equal(layer.weight, same.weight)
    alpha = np.array([1.0, 2.0])
    np.testing.assert_array_equal(dirichlet.rvs(alpha, size=3, random_state=KEY),
                                  dirichlet.rvs(alpha, size=3, random_state=fr.PRNGKey(0)))


def _draw(m, k):
    return fnp.sum(fr.normal(k, (3,)) * m + fr.gamma(k, m, (3,)))


TRANSFORMS = {
    "grad": lambda f, m, k: fg.grad(f)(m, k),
    "value_and_grad": lambda f, m, k: fg.value_and_grad(f)(m, k),
    "jacfwd": lambda f, m, k: fg.jacfwd(f)(m, k),
    "jacrev": lambda f, m, k: fg.jacrev(f)(m, k),
    "hessian": lambda f, m, k: fg.hessian(f)(m, k),
    "vjp": lambda f, m, k: fg.vjp(lambda x: f(x, k), m)[1](1.0),
    "jvp": lambda f, m, k: fg.jvp(lambda x: f(x, k), (m,), (1.0,)),
    "linearize": lambda f, m, k: fg.linearize(lambda x: f(x, k), m)[1](1.0),
    "checkpoint": lambda f, m, k: fg.grad(fg.checkpoint(f))(m, k),
    "jit_grad": lambda f, m, k: fg.jit(fg.grad(f))(m, k),
    "grad_jit": lambda f, m, k: fg.grad(fg.jit(f))(m, k),
    "vmap_grad": lambda f, m, k: fg.vmap(fg.grad(f), in_axes=(None, 0))(m, fr.split(k, 3)),
    "cond": lambda f, m, k: fg.grad(lambda x, kk: fg.cond(x > 0, lambda a: f(a[0], a[1]),
                                                          lambda a: -f(a[0], a[1]), (x, kk)))(m, k),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_a_typed_key_argument_through_every_transform(name):
    """A typed key passed beside the differentiated argument gives what its raw data gives."""
    run = TRANSFORMS[name]
    typed = run(_draw, 1.5, KEYS[2])
    raw = run(_draw, 1.5, fr.key_data(KEYS[2]))
    for a, b in zip(fg.tree_util.tree_leaves(typed), fg.tree_util.tree_leaves(raw)):
        np.testing.assert_array_equal(a, b)


def test_negative_vmap_axes_count_from_the_end_of_the_key_shape():
    # a key array's data has a trailing axis of 2: -1 must mean the keys' last axis, not the key words
    # (with exactly 2 keys a wrong reading would pass silently)
    two = fr.split(fr.key(0), 2)
    assert np.array_equal(fg.vmap(lambda k: fr.normal(k, (3,)), in_axes=-1)(two),
                          fg.vmap(lambda k: fr.normal(k, (3,)), in_axes=0)(two))
    grid = fr.split(fr.key(1), 6).reshape(2, 3)
    assert np.array_equal(fg.vmap(fr.key_data, in_axes=-1)(grid), fg.vmap(fr.key_data, in_axes=1)(grid))
    keys = fr.split(fr.key(2), 3)
    last = fg.vmap(lambda k: fr.split(k, 4), out_axes=-1)(keys)
    assert last.shape == (4, 3)
    assert np.array_equal(fr.key_data(last), fr.key_data(fg.vmap(lambda k: fr.split(k, 4), out_axes=1)(keys)))
    x = np.arange(10.0).reshape(2, 5)  # plain arrays keep NumPy's meaning of -1
    assert fg.vmap(lambda k, r: fr.normal(k) * r, in_axes=(-1, -1))(fr.split(fr.key(3), 5), x).shape == (5, 2)
