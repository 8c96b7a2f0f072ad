"""funcgrad.scipy.signal: every mode against SciPy, derivatives to order 2 in both inputs, vmap, device."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import signal as S

from scipy_harness import Case, check_derivatives, check_fake_device, check_float32, check_values, check_vmap

rng = np.random.default_rng(0)
SHAPES = [((7,), (3,)), ((4,), (4,)), ((3,), (5,)), ((5, 4), (2, 3)), ((2, 3), (3, 4)), ((4, 3, 3), (2, 2, 3))]
FUNCS = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d"]


def _valid_ok(sa, sv):
    return all(p >= q for p, q in zip(sa, sv)) or all(p <= q for p, q in zip(sa, sv))


def _case(name, mode, sa, sv):
    ours, ref = getattr(S, name), getattr(ss, name)

    def f(a, v):
        return ours(a, v, mode=mode)

    f.__name__ = f"{name}-{mode}-{sa}-{sv}"
    return Case(f, (rng.standard_normal(sa), rng.standard_normal(sv)), lambda a, v: ref(a, v, mode=mode), rtol=1e-9)


CASES = {}
for _sa, _sv in SHAPES:
    for _name in FUNCS:
        if _name.endswith("2d") and len(_sa) != 2:
            continue
        for _mode in ("full", "same", "valid"):
            if _mode == "valid" and not _valid_ok(_sa, _sv):
                continue
            _c = _case(_name, _mode, _sa, _sv)
            CASES[_c.fn.__name__] = _c
SMALL = sorted(n for n in CASES if "(4, 3, 3)" not in n)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy(name):
    check_values(CASES[name])


@pytest.mark.parametrize("name", SMALL)
def test_check_grads_order2(name):
    check_derivatives(CASES[name])


@pytest.mark.parametrize("name", [n for n in SMALL if n.startswith(("convolve-", "correlate2d"))])
def test_float32(name):
    check_float32(CASES[name])


@pytest.mark.parametrize("name", SMALL)
def test_vmap_matches_loop(name):
    check_vmap(CASES[name])


@pytest.mark.parametrize("name", [n for n in SMALL if n.startswith(("convolve-", "correlate-"))])
@pytest.mark.parametrize("argnum", [0, 1])
def test_vmap_one_input_batched(name, argnum):
    check_vmap(CASES[name], argnums=(argnum,))


@pytest.mark.parametrize("name", [n for n in SMALL if n.startswith(("convolve-", "correlate2d"))])
def test_fake_device(name):
    check_fake_device(CASES[name], rtol=1e-9, atol=1e-12)


def test_gradient_closed_form():
    # d/dk sum(convolve(x, k, 'valid')) = sum over the windows of x
    x = np.arange(6.0)
    g = fg.grad(lambda k: fnp.sum(S.convolve(x, k, mode="valid")))(np.ones(3))
    np.testing.assert_allclose(g, [x[2:6].sum(), x[1:5].sum(), x[0:4].sum()])


def test_errors():
    with pytest.raises(ValueError, match="mode must be"):
        S.convolve(np.ones(3), np.ones(2), mode="wrap")
    with pytest.raises(ValueError, match="same number of dimensions"):
        S.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="at least as large"):
        S.convolve(np.ones((3, 2)), np.ones((2, 3)), mode="valid")
    with pytest.raises(ValueError, match="2-D"):
        S.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        S.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(NotImplementedError, match="axes=None"):
        S.fftconvolve(np.ones((3, 3)), np.ones((2, 2)), axes=0)
