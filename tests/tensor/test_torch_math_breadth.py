"""The maths breadth of funcgrad.tensor (issue 29, part A) against PyTorch: every case of
tests/tensor/torch_math_cases.py (values, dtypes, result field names and gradients) and every error case
(exception type and message) compared with torch's results recorded in tests/fixtures/torch_math.json
(regenerate with tests/fixtures/make_torch_math.py), and live when torch is installed; every new name is
covered by a case. Then what a fixture cannot show: second derivatives (gradgradcheck), the device path
(the fake device, no host transfer), and the runtime settings.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor import (
    _tensor_reductions_more, _tensor_special, _tensor_spectral, loss_ops, torch_config, torch_math,
)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_math_cases import CASES, ERRORS, P, SIG, U, V, X, Y, run_case, run_error  # noqa: E402

try:
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except (ImportError, ValueError):  # e.g. torch blocked in sys.modules
    HAVE_TORCH = False

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
RECORDED = json.loads((FIXTURES / "torch_math.json").read_text())


def _decoder():
    spec = importlib.util.spec_from_file_location("_make_torch_compare", FIXTURES / "make_torch_compare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.decode


DECODE = _decoder()


# Where funcgrad's gradient differs from PyTorch 2.13's on purpose (the values are still compared):
# PyTorch's derivative of ldexp(x, e) is 0 where the exponent e is negative (it differentiates through an
# integer power); the true derivative 2**e is checked in test_ldexp_gradient_is_two_to_the_exponent.
TORCH_GRADIENT_DIFFERS = {"ldexp", "ldexp:ft", "ldexp_", "ldexp_:ft"}
# The piecewise-constant functions (floor, ceil, round, trunc, sign: _tensor_math's, without history as
# before) leave a result without history, so their in-place forms do too; PyTorch records their zero
# gradient. The comparison checks that PyTorch's gradient is zero everywhere there.
ZERO_GRADIENT_WITHOUT_HISTORY = {"ceil_", "ceil_:ft", "floor_", "floor_:ft", "round_", "round_:ft", "round_:decimals",
                                 "trunc_", "trunc_:ft", "sgn_", "sign_", "fix", "fix:ft", "fix_", "fix_:ft",
                                 "special.round"}


def _close(a, b, message):
    single = np.asarray(b).dtype in (np.float32, np.complex64)  # (float32 results: to float32's rounding)
    np.testing.assert_allclose(a, b, rtol=2e-5 if single else 1e-6, atol=1e-6 if single else 1e-7, err_msg=message)


def _compare(ours, theirs, key):
    assert ours["dtypes"] == theirs["dtypes"], f"{key}: dtypes {ours['dtypes']} != torch {theirs['dtypes']}"
    assert ours["fields"] == theirs["fields"], f"{key}: fields {ours['fields']} != torch {theirs['fields']}"
    assert len(ours["values"]) == len(theirs["values"]), key
    for i, (a, b) in enumerate(zip(ours["values"], theirs["values"])):
        assert np.shape(a) == np.shape(b), f"{key}: value {i} shape {np.shape(a)} != torch {np.shape(b)}"
        _close(a, b, f"{key}: value {i}")
    if "grads_missing" in theirs or key in TORCH_GRADIENT_DIFFERS:  # (ours: checked by the tests below)
        return
    if key in ZERO_GRADIENT_WITHOUT_HISTORY:
        assert "grads" not in ours, f"{key}: now recorded: compare it (remove it from the set)"
        assert all(g is None or not np.any(g) for g in theirs["grads"]), key
        return
    assert ("grads" in ours) == ("grads" in theirs), f"{key}: gradients computed by only one side"
    for i, (a, b) in enumerate(zip(ours.get("grads", []), theirs.get("grads", []))):
        assert (a is None) == (b is None), f"{key}: gradient {i} is None on one side only"
        if a is not None:
            _close(a, b, f"{key}: gradient {i}")


def test_fixture_covers_every_case():
    assert set(RECORDED["results"]) == set(CASES), "regenerate with tests/fixtures/make_torch_math.py"
    assert set(RECORDED["errors"]) == set(ERRORS), "regenerate with tests/fixtures/make_torch_math.py"


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("key", sorted(CASES))
def test_case_matches_recorded_torch(key):
    _compare(run_case(ft, key), DECODE(RECORDED["results"][key]), key)


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_error_matches_recorded_torch(key):
    assert RECORDED["errors"][key] is not None, f"{key}: torch raised nothing (fix the case)"
    assert run_error(ft, key) == RECORDED["errors"][key]


@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed (it is only a reference, never a dependency)")
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("key", sorted(CASES))
def test_case_matches_live_torch(key):
    import torch

    torch.set_default_dtype(torch.float32)
    _compare(run_case(ft, key), run_case(torch, key), key)


def _mixin_names(mixin):
    return {n for n in vars(mixin) if not n.startswith("_") or n in ("__lshift__", "__rshift__")}


SETTINGS = set(torch_config.__all__)


@pytest.mark.parametrize("names", [set(torch_math.__all__) | set(loss_ops.__all__),
                                   _mixin_names(_tensor_special._SpecialMixin),
                                   _mixin_names(_tensor_reductions_more._ReductionsMoreMixin),
                                   _mixin_names(_tensor_spectral._SpectralMixin),
                                   {f"special.{n}" for n in ft.special.__all__}],
                         ids=["torch_math", "special_mixin", "reductions_mixin", "spectral_mixin", "ft.special"])
def test_every_new_name_has_a_recorded_case(names):
    covered = {k.split(":")[0] for k in CASES}
    missing = sorted(n for n in names if n not in covered and n not in
                     {"_bitwise", "__ilshift__", "__irshift__"})
    assert missing == [], f"names without a torch case: {missing}"


# ---------------------------------------------------------------------------- second derivatives
def _t(a, requires_grad=True):
    return ft.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


GRADGRAD = {
    "erfinv": (lambda x: x.erfinv(), [X]),
    "lgamma": (lambda x: x.lgamma(), [P]),
    "digamma": (lambda x: x.digamma(), [P]),
    "polygamma1": (lambda x: x.polygamma(1), [P]),
    "mvlgamma": (lambda x: x.mvlgamma(3), [2 + P]),
    "i0": (lambda x: x.i0(), [X]),
    "sinc": (lambda x: x.sinc(), [X]),
    "logit_eps": (lambda x: x.logit(0.25), [U]),
    "atanh": (lambda x: x.atanh(), [X]),
    "acosh": (lambda x: x.acosh(), [1 + P]),
    "hypot": (lambda x, y: x.hypot(y), [X, Y]),
    "logaddexp2": (lambda x, y: x.logaddexp2(y), [X, Y]),
    "xlogy": (lambda x, y: x.xlogy(y), [X, P]),
    "igamma_both": (lambda a, x: a.igamma(x), [P, 2 * U]),
    "ldexp": (lambda x: x.ldexp(ft.tensor([1, -2, 3, 0])), [X]),
    "frexp": (lambda x: x.frexp().mantissa, [13 * X]),
    "cummax": (lambda x: x.cummax(1).values, [X]),
    "cummin": (lambda x: x.cummin(0).values, [X]),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), [X]),
    "kthvalue": (lambda x: x.kthvalue(2, 1).values, [X]),
    "mode": (lambda x: x.mode(1).values, [X]),
    "nanmedian": (lambda x: x.nanmedian(0).values, [X]),
    "nanmean": (lambda x: x.nanmean(1), [X]),
    "quantile": (lambda x: x.quantile(ft.tensor([0.2, 0.7], dtype=ft.float64), dim=1), [X]),
    "nanquantile": (lambda x: x.nanquantile(0.3, dim=0), [X]),
    "cov_weights": (lambda x, a: x.cov(aweights=a), [X, P[0]]),
    "corrcoef": (lambda x: x.corrcoef()[0, 1:], [X]),
    "dist3": (lambda x, y: x.dist(y, 3), [X, Y]),
    "diff": (lambda x: x.diff(n=2), [X]),
    "renorm": (lambda x: x.renorm(2, 0, 0.8), [X]),
    "trapezoid_x": (lambda y, x: ft.trapezoid(y, x), [X, np.array([0.0, 0.5, 1.5, 1.75])]),
    "cumulative_trapezoid": (lambda y: ft.cumulative_trapezoid(y, dim=0), [X]),
    "gradient_edge2": (lambda x: ft.gradient(x, dim=1, edge_order=2)[0], [X]),
    "gradient_coordinates": (lambda x: ft.gradient(x, spacing=[ft.tensor([0.0, 0.5, 1.5, 1.75])], dim=1)[0], [X]),
    "special.airy_ai": (lambda x: ft.special.airy_ai(x), [np.array([-2.0, -0.5, 0.7, 2.5])]),
    "special.i0e": (lambda x: ft.special.i0e(x), [3 * X]),
    "special.ndtri": (lambda x: ft.special.ndtri(x), [U]),
    "special.bessel_y1": (lambda x: ft.special.bessel_y1(x), [2 * P]),
    "special.chebyshev_t": (lambda x: ft.special.chebyshev_polynomial_t(x, ft.tensor([0, 1, 3, 6])), [X[0]]),
    "special.laguerre_l": (lambda x: ft.special.laguerre_polynomial_l(x, 3), [X]),
    "stft": (lambda x, w: x.stft(8, 3, window=w, return_complex=True).abs(), [SIG[:20], np.hanning(8) + 0.1]),
    "istft": (lambda s: ft.istft(ft.complex(s[0], s[1]), 8, 3), [np.cos(np.arange(70.0)).reshape(2, 5, 7)]),
}


@pytest.mark.parametrize("key", sorted(GRADGRAD))
def test_second_derivatives(key):
    fn, data = GRADGRAD[key]
    args = [_t(a) for a in data]
    assert ft.autograd.gradcheck(fn, args)
    assert ft.autograd.gradgradcheck(fn, args)


def test_inverse_hyperbolic_in_place_forms_are_differentiable():
    # PyTorch 2.13 has no derivative for acosh_/asinh_/atanh_ (the fixture records that); ours is the
    # derivative of the out-of-place function
    for name, data in (("acosh_", 1 + P), ("asinh_", X), ("atanh_", X), ("arctanh_", X)):
        x = _t(data)
        getattr(x.clone(), name)().sum().backward()
        base = _t(data)
        getattr(base, name[:-1])().sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), base.grad.numpy())


# ---------------------------------------------------------------------------- what a fixture cannot show
def test_logcumsumexp_gradient_does_not_overflow():
    x = _t([-1000.0, 0.0, 1000.0, 999.0])
    x.logcumsumexp(0).sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    # d/dx_j sum_i out_i = sum_{i >= j} softmax(x[:i+1])_j
    xs = x.detach().numpy()
    want = sum(np.concatenate([np.exp(xs[:i + 1] - np.logaddexp.reduce(xs[:i + 1])), np.zeros(3 - i)])
               for i in range(4))
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-12)


def test_ldexp_gradient_is_two_to_the_exponent():
    x = _t([1.5, 2.0, -0.5])
    x.ldexp(ft.tensor([-2, 3, 0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.25, 8.0, 1.0])


def test_cummax_gradient_goes_to_the_last_of_tied_maxima():
    x = _t([1.0, 3.0, 3.0, 2.0])
    x.cummax(0).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 2.0, 0.0])


def test_scans_and_counts_stay_on_the_device():
    fake_backend = pytest.importorskip("fake_backend")
    fake_backend.install()
    host = np.array([[0.3, -0.7, 0.2, 0.9], [-0.4, 0.55, 0.1, -0.25]])
    x = ft.tensor(host).to("fake")
    x.requires_grad_(True)
    with fake_backend.no_host_sync():
        values, indices = x.cummax(1)
        lcse = x.logcumsumexp(1)
        q = x.quantile(0.5, dim=1)
        med = x.nanmedian(1).values
        loss = values.sum() + lcse.sum() + q.sum() + med.sum() + x.erfinv().sum() + x.hypot(x).sum()
        loss.backward()
    assert type(values._value).__name__ == "FakeArray" and type(indices._value).__name__ == "FakeArray"
    np.testing.assert_array_equal(fake_backend.fake.asnumpy(indices._value), [[0, 0, 0, 3], [0, 1, 1, 1]])
    np.testing.assert_allclose(fake_backend.fake.asnumpy(lcse._value), np.logaddexp.accumulate(host, axis=1))
    assert type(x.grad._value).__name__ == "FakeArray"


def test_binary_functions_refuse_what_is_not_a_tensor_or_number():
    with pytest.raises(TypeError, match="hypot.*'other' must be Tensor or Number, not list"):
        _t(X).hypot([1.0, 2.0])


def test_runtime_settings_are_recorded_and_reported():
    before = ft.get_num_threads()
    assert before >= 1
    try:
        ft.set_num_threads(3)
        assert ft.get_num_threads() == 3
        with pytest.raises(RuntimeError, match="positive"):
            ft.set_num_threads(0)
        ft.use_deterministic_algorithms(True, warn_only=True)
        assert ft.are_deterministic_algorithms_enabled() and ft.is_deterministic_algorithms_warn_only_enabled()
        assert ft.get_deterministic_debug_mode() == 1
        ft.set_deterministic_debug_mode("error")
        assert ft.get_deterministic_debug_mode() == 2
        with pytest.raises(RuntimeError, match="debug_mode"):
            ft.set_deterministic_debug_mode("loud")
        ft.set_float32_matmul_precision("high")
        assert ft.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="has no effect"):
            ft.set_float32_matmul_precision("low")
        assert ft.get_float32_matmul_precision() == "high"
        assert ft.set_flush_denormal(True) is False
        ft.set_warn_always(True)
        assert ft.is_warn_always_enabled()
    finally:
        ft.set_num_threads(before)
        ft.set_deterministic_debug_mode(0)
        ft.set_float32_matmul_precision("highest")
        ft.set_warn_always(False)
    assert set(torch_config.__all__) <= set(ft.__all__)


# ---------------------------------------------------------------------------- under ft.func's transforms
UNDER_FUNC = {
    "erfinv": lambda r: r.erfinv(), "lgamma": lambda r: (r.abs() + 0.5).lgamma(), "hypot": lambda r: r.hypot(r * 2),
    "xlogy": lambda r: r.xlogy(r.abs() + 1), "hardshrink": lambda r: r.hardshrink(0.3),
    "logit_eps": lambda r: r.abs().logit(0.2), "prelu": lambda r: r.unsqueeze(0).prelu(ft.tensor([0.1])),
    "logcumsumexp": lambda r: r.logcumsumexp(0), "nanmean": lambda r: r.nanmean(), "aminmax": lambda r: r.aminmax().max,
    "frexp": lambda r: r.frexp().mantissa, "diff": lambda r: r.diff(), "dist": lambda r: r.dist(r * 2, 3),
    "cov": lambda r: r.reshape(2, 2).cov(), "renorm": lambda r: r.reshape(2, 2).renorm(2, 0, 0.5),
    "trapezoid": lambda r: ft.trapezoid(r), "gradient": lambda r: ft.gradient(r)[0],
    "special.airy_ai": lambda r: ft.special.airy_ai(r), "special.i0e": lambda r: ft.special.i0e(r),
    "special.chebyshev_t": lambda r: ft.special.chebyshev_polynomial_t(r, 3),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(UNDER_FUNC))
def test_composes_with_ft_func_vmap_and_grad(name):
    f = UNDER_FUNC[name]
    x = ft.tensor(X[:2])
    batched = ft.func.vmap(f)(x)
    np.testing.assert_allclose(batched.numpy(), ft.stack([f(x[i]) for i in range(2)]).numpy())
    g = ft.func.grad(lambda r: f(r).sum())(x[0])
    leaf = x[0].clone().requires_grad_(True)
    f(leaf).sum().backward()
    np.testing.assert_allclose(g.numpy(), leaf.grad.numpy())


def test_istft_refuses_a_window_whose_overlap_vanishes():
    w = ft.hann_window(16, dtype=ft.float64)
    spec = ft.tensor(SIG).stft(16, 4, window=w, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        spec.istft(16, 4, window=w, center=False)


def test_istft_inverts_stft_with_the_identity_as_gradient():
    x = _t(SIG)
    w = ft.hann_window(16, dtype=ft.float64)
    y = x.stft(16, 4, window=w, return_complex=True).istft(16, 4, window=w, length=100)
    weights = np.cos(np.arange(100.0))
    (y * ft.tensor(weights)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), SIG, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), weights, atol=1e-12)


def test_counts_selections_and_spectra_stay_on_the_device():
    fake_backend = pytest.importorskip("fake_backend")
    fake_backend.install()
    fake = fake_backend.fake
    x = ft.tensor(X).to("fake")
    labels = ft.tensor(np.array([0, 3, 3, 1])).to("fake")
    results = {
        "histc": x.histc(4, -1.0, 1.0), "histogram": x.histogram(3).hist, "bincount": labels.bincount(),
        "bincount_weights": labels.bincount(ft.tensor(V[:4]).to("fake")), "mode": x.mode(1).values,
        "kthvalue": x.kthvalue(2, 1).indices, "cov": x.cov(), "diff": x.diff(), "cummin": x.cummin(0).indices,
        "stft": ft.tensor(SIG).to("fake").stft(16, 4, window=ft.hann_window(16, dtype=ft.float64).to("fake"),
                                               return_complex=True),
        "erfinv_": x.clone().erfinv_(), "special.i0e": ft.special.i0e(x), "nan_to_num": x.nan_to_num(),
    }
    for name, t in results.items():
        assert type(t._value).__name__ == "FakeArray", name
    np.testing.assert_array_equal(fake.asnumpy(results["bincount"]._value), [1, 1, 0, 2])
    np.testing.assert_allclose(fake.asnumpy(results["histc"]._value), ft.tensor(X).histc(4, -1.0, 1.0).numpy())
    back = results["stft"].istft(16, 4, window=ft.hann_window(16, dtype=ft.float64).to("fake"), length=100)
    np.testing.assert_allclose(fake.asnumpy(back._value), SIG, atol=1e-12)
