"""funcgrad.numpy.fft: values against numpy.fft, derivatives to second order in both modes,
vmap against a Python loop, float32 and float64, round trips, and the fake device."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import fft as ffft
from funcgrad.testing import check_grads

F = fnp.fft
RNG = np.random.default_rng(7)


def real(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def cplx(shape, dtype=np.complex128, seed=0):
    r = np.random.default_rng(seed)
    return (r.normal(size=shape) + 1j * r.normal(size=shape)).astype(dtype)


NORMS = [None, "ortho", "forward"]

# (id, function of (module, x), input kind, input shape): the one table every test reads.
CASES = [
    ("fft", lambda m, x: m.fft(x), "c", (3, 5)),
    ("fft_real", lambda m, x: m.fft(x, axis=0), "r", (4, 3)),
    ("fft_n_pad", lambda m, x: m.fft(x, n=7), "c", (2, 5)),
    ("fft_n_crop", lambda m, x: m.fft(x, n=3, norm="ortho"), "c", (2, 5)),
    ("ifft", lambda m, x: m.ifft(x, norm="forward"), "c", (3, 4)),
    ("fft2", lambda m, x: m.fft2(x), "c", (2, 3, 4)),
    ("ifft2_s", lambda m, x: m.ifft2(x, s=(4, 2)), "c", (3, 3)),
    ("fftn", lambda m, x: m.fftn(x, axes=(0, 2), norm="ortho"), "c", (2, 3, 4)),
    ("ifftn", lambda m, x: m.ifftn(x), "c", (2, 3)),
    ("rfft", lambda m, x: m.rfft(x), "r", (3, 6)),
    ("rfft_odd", lambda m, x: m.rfft(x, axis=0, norm="ortho"), "r", (5, 2)),
    ("rfft_n", lambda m, x: m.rfft(x, n=8, norm="forward"), "r", (2, 5)),
    ("irfft", lambda m, x: m.irfft(x), "c", (2, 4)),
    ("irfft_odd_n", lambda m, x: m.irfft(x, n=7, norm="ortho"), "c", (2, 4)),
    ("irfft_n_crop", lambda m, x: m.irfft(x, n=4, axis=0), "c", (5, 2)),
    ("rfft2", lambda m, x: m.rfft2(x), "r", (3, 4)),
    ("irfft2", lambda m, x: m.irfft2(x, s=(3, 5)), "c", (3, 3)),
    ("rfftn", lambda m, x: m.rfftn(x, axes=(0, 2)), "r", (3, 2, 4)),
    ("irfftn", lambda m, x: m.irfftn(x, norm="forward"), "c", (2, 3, 3)),
    ("hfft", lambda m, x: m.hfft(x), "c", (2, 4)),
    ("hfft_n", lambda m, x: m.hfft(x, n=5, norm="ortho"), "c", (3,)),
    ("ihfft", lambda m, x: m.ihfft(x, norm="forward"), "r", (2, 5)),
    ("fftshift", lambda m, x: m.fftshift(x), "r", (3, 4)),
    ("ifftshift", lambda m, x: m.ifftshift(x, axes=1), "c", (3, 5)),
    ("fftfreq_d", lambda m, x: m.fftfreq(5, d=x), "r", ()),
    ("rfftfreq_d", lambda m, x: m.rfftfreq(6, d=x), "r", ()),
    # a real-valued loss through a round trip, so second derivatives are not trivially zero
    ("power_spectrum", lambda m, x: m.irfft(m.rfft(x) * m.rfft(x * x), n=6), "r", (2, 6)),
]
IDS = [c[0] for c in CASES]


def make(kind, shape, dtype=np.float64, seed=0):
    if kind == "r":
        x = real(shape, dtype, seed)
        return np.abs(x) + 0.5 if shape == () else x
    return cplx(shape, np.complex64 if dtype == np.float32 else np.complex128, seed)


def _loss(f):
    """A real scalar of f's output, nonlinear so that order-2 checks see curvature."""
    def g(x):
        y = f(F, x)
        return fnp.sum(fnp.abs(y) ** 2) if fnp.iscomplexobj(y) else fnp.sum(fnp.sin(y))
    return g


@pytest.mark.parametrize("name,f,kind,shape", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_numpy(name, f, kind, shape, dtype):
    x = make(kind, shape, dtype)
    ours, ref = np.asarray(f(F, x)), f(np.fft, x)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol)
    assert ours.dtype == ref.dtype


@pytest.mark.parametrize("name,f,kind,shape", CASES, ids=IDS)
def test_check_grads_float64(name, f, kind, shape):
    x = make(kind, shape)
    check_grads(lambda x: f(F, x), (x,), order=2, modes=("fwd", "rev"))
    check_grads(_loss(f), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,f,kind,shape", CASES[::3], ids=IDS[::3])
def test_check_grads_float32(name, f, kind, shape):
    x = make(kind, shape, np.float32)
    check_grads(lambda x: f(F, x), (x,), order=2, modes=("fwd", "rev"))


def test_vjp_closed_forms():
    # unnormalized DFT: vjp is the transpose (the DFT matrix is symmetric), JAX's convention
    x, g = cplx(6), cplx(6, seed=1)
    _, back = fg.vjp(F.fft, x)
    np.testing.assert_allclose(back(g)[0], np.fft.fft(g))
    # rfft: the cotangent of a real input is Re(fft(zero-padded g))
    xr, gr = real(6), cplx(4, seed=2)
    _, back = fg.vjp(F.rfft, xr)
    np.testing.assert_allclose(back(gr)[0], np.real(np.fft.fft(np.concatenate([gr, np.zeros(2)]))))
    # irfft with n even: Hermitian weights 1, 2, 2, 1 on ifft(g)'s half
    y, gx = cplx(4, seed=3), real(6, seed=4)
    _, back = fg.vjp(F.irfft, y)
    np.testing.assert_allclose(back(gx)[0], np.fft.ifft(gx)[:4] * np.array([1, 2, 2, 1]))
    # grad of the energy: Parseval
    xr = real(8)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(fnp.abs(F.fft(x)) ** 2))(xr), 2 * 8 * xr)


@pytest.mark.parametrize("name,f,kind,shape", CASES, ids=IDS)
def test_vmap_matches_loop(name, f, kind, shape):
    xs = np.stack([make(kind, shape, seed=s) for s in range(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback
        got = fg.vmap(lambda x: f(F, x))(xs)
        got_moved = fg.vmap(lambda x: f(F, x), in_axes=-1)(np.moveaxis(xs, 0, -1)) if shape else None
    want = np.stack([np.asarray(f(F, x)) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if got_moved is not None:
        np.testing.assert_allclose(got_moved, want, rtol=1e-12, atol=1e-12)


def test_grad_of_vmap_and_vmap_of_grad():
    xs = real((3, 6))
    per = [fg.grad(lambda x: fnp.sum(fnp.abs(F.rfft(x * x)) ** 2))(x) for x in xs]
    got = fg.vmap(fg.grad(lambda x: fnp.sum(fnp.abs(F.rfft(x * x)) ** 2)))(xs)
    np.testing.assert_allclose(got, np.stack(per), rtol=1e-12)
    jac = fg.jacfwd(fg.jacrev(lambda x: fnp.real(F.ifft(F.fft(x) ** 2))))(real(4))
    assert jac.shape == (4, 4, 4)


@pytest.mark.parametrize("norm", NORMS)
def test_round_trips(norm):
    x, z = real((3, 6)), cplx((3, 5))
    np.testing.assert_allclose(F.ifft(F.fft(z, norm=norm), norm=norm), z, atol=1e-12)
    np.testing.assert_allclose(F.irfft(F.rfft(x, norm=norm), n=6, norm=norm), x, atol=1e-12)
    np.testing.assert_allclose(F.irfftn(F.rfftn(x, norm=norm), s=x.shape, norm=norm), x, atol=1e-12)
    np.testing.assert_allclose(F.hfft(F.ihfft(x, norm=norm), n=6, norm=norm), x, atol=1e-12)
    np.testing.assert_allclose(F.ifftshift(F.fftshift(z)), z)
    # the round trip is the identity for derivatives too
    g = fg.grad(lambda x: fnp.sum(F.irfft(F.rfft(x, norm=norm), n=6, norm=norm) ** 2))(x)
    np.testing.assert_allclose(g, 2 * x, atol=1e-12)


def test_all_numpy_fft_functions_present():
    public = [n for n in dir(np.fft) if not n.startswith("_") and callable(getattr(np.fft, n)) and n != "test"]
    assert sorted(public) == sorted(ffft.__all__)
    for n in public:
        assert callable(getattr(F, n))


def test_errors():
    with pytest.raises(ValueError, match="norm must be"):
        F.fft(np.ones(3), norm="unitary")
    with pytest.raises(TypeError, match="real input"):
        F.rfft(np.ones(3) + 1j)
    with pytest.raises(ValueError, match="out of bounds"):
        F.fft(np.ones(3), axis=2)
    with pytest.raises(ValueError, match="same length"):
        F.fftn(np.ones((3, 3)), s=(3,), axes=(0, 1))
    with pytest.raises(ValueError, match="at least 1"):
        F.fft(np.ones(3), n=0)

# The fake-device runs of CASES are in tests/test_device_suite.py (test_fft).
