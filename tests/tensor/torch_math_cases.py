"""The cases of tests/tensor/test_torch_math_breadth.py: every maths name of ``funcgrad.tensor`` added for
issue 29 (``torch_math``, ``torch_config`` aside, and the ``_tensor_special``/``_tensor_reductions_more``
mixins), run the same way on ``ft`` and on ``torch``.

``CASES[key] = (fn, inputs, grad)``: ``fn(T, *tensors)`` with ``T`` the module; ``inputs`` are NumPy arrays
(made tensors of their dtype) or other values passed as they are; ``grad`` says which float inputs require
grad (True: all of them). A key is the name it covers, optionally followed by ``:variant``.
``ERRORS[key] = fn(T)``: a call that must raise PyTorch's exception type and message.

:func:`run_case` and :func:`run_error` give the JSON-able results compared, recorded by
tests/fixtures/make_torch_math.py (``torch_math.json``).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...], Any]] = {}
ERRORS: dict[str, Callable[[Any], Any]] = {}


def case(key: str, fn: Callable[..., Any], *inputs: Any, grad: Any = True) -> None:
    assert key not in CASES, key
    CASES[key] = (fn, inputs, grad)


X = np.array([[0.3, -0.7, 0.2, 0.9], [-0.4, 0.55, 0.1, -0.25], [0.8, -0.15, 0.45, 0.05]])  # in (-1, 1)
Y = np.array([[0.6, 0.35, -0.5, 1.3], [0.2, -1.1, 0.75, 0.4], [-0.3, 0.9, 0.15, -0.65]])
P = np.array([[0.5, 1.25, 2.0, 3.5], [0.75, 1.5, 2.5, 4.0], [1.1, 0.6, 3.0, 1.9]])  # positive
U = np.array([[0.1, 0.3, 0.5, 0.7], [0.9, 0.2, 0.6, 0.45], [0.05, 0.85, 0.35, 0.95]])  # in (0, 1)
V = np.array([0.4, -1.2, 2.5, 0.7, -0.3, 1.9])
I = np.array([[3, -2, 5], [0, 7, -4]])
J = np.array([[6, 4, 10], [3, 21, 8]])
BA = np.array([True, False, True, False])
BB = np.array([True, True, False, False])
NANS = np.array([[1.0, np.nan, -2.0, 3.5], [np.inf, 0.5, -np.inf, np.nan], [np.nan, np.nan, np.nan, np.nan]])
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 4.0, -1.0, 4.0, 0.0]])
F32 = X.astype(np.float32)

# ---------------------------------------------------------------- unary functions (method and ft.<name>)
for name, data in [("acosh", 1 + P), ("asinh", X), ("atanh", X), ("arccosh", 1 + P), ("arcsinh", X),
                   ("arctanh", X), ("erf", X), ("erfc", X), ("erfinv", X), ("digamma", P), ("lgamma", P), ("i0", X),
                   ("sinc", X), ("deg2rad", X), ("rad2deg", X), ("logit", U), ("positive", X), ("fix", 3 * X)]:
    case(name, lambda T, x, n=name: getattr(x, n)(), data)
    case(f"{name}:ft", lambda T, x, n=name: getattr(T, n)(x), data)
for name in ("erf", "lgamma", "sinc", "deg2rad", "i0", "asinh", "logit"):
    case(f"{name}:int", lambda T, x, n=name: getattr(T, n)(x), I, grad=False)
case("erf:float32", lambda T, x: x.erf(), F32)
case("polygamma", lambda T, x: T.polygamma(1, x), P)
case("polygamma:n0", lambda T, x: x.polygamma(0), P)
case("polygamma:n2", lambda T, x: x.polygamma(2), P)
case("mvlgamma", lambda T, x: x.mvlgamma(2), 1 + P)
case("mvlgamma:ft", lambda T, x: T.mvlgamma(x, p=3), 1.5 + P)
case("logit:eps", lambda T, x: x.logit(eps=0.2), U)
case("logit:eps_ft", lambda T, x: T.logit(x, 0.15), U)
case("nan_to_num", lambda T, x: x.nan_to_num(), NANS)
case("nan_to_num:values", lambda T, x: T.nan_to_num(x, nan=7.0, posinf=100.0, neginf=-50.0), NANS)
case("nan_to_num:float32", lambda T, x: x.nan_to_num(), NANS.astype(np.float32))
case("nan_to_num:int", lambda T, x: x.nan_to_num(), I, grad=False)
case("frexp", lambda T, x: x.frexp(), 13 * X)
case("frexp:ft", lambda T, x: T.frexp(x), np.array([8.0, -0.375, 0.0, 1e-3]))
case("frexp:float32", lambda T, x: x.frexp(), 13 * F32)
case("positive:int", lambda T, x: T.positive(x), I, grad=False)

# ---------------------------------------------------------------- binary functions
for name, a, b in [("hypot", X, Y), ("logaddexp", X, Y), ("logaddexp2", X, Y), ("copysign", X, Y),
                   ("fmax", X, Y), ("fmin", X, Y), ("xlogy", X, P), ("igammac", P, 2 * U)]:
    case(name, lambda T, x, y, n=name: getattr(x, n)(y), a, b, grad=(name not in ("igammac",)) or (False, True))
    case(f"{name}:ft", lambda T, x, y, n=name: getattr(T, n)(x, y), a, b,
         grad=(name not in ("igammac",)) or (False, True))
case("igamma", lambda T, x, y: x.igamma(y), P, 2 * U, grad=(False, True))
case("igamma:ft", lambda T, x, y: T.igamma(x, y), P, 2 * U, grad=(False, True))
case("hypot:broadcast", lambda T, x, y: x.hypot(y), X, Y[0], grad=True)
case("fmax:nan", lambda T, x, y: T.fmax(x, y), NANS[0], np.array([0.0, 1.0, np.nan, 2.0]), grad=False)
case("fmin:nan", lambda T, x, y: T.fmin(x, y), NANS[0], np.array([0.0, 1.0, np.nan, 2.0]), grad=False)
case("fmax:int_float", lambda T, x, y: T.fmax(x, y), I, X[:2, :3], grad=False)
case("copysign:number", lambda T, x: x.copysign(-1.0), X)
case("copysign:int", lambda T, x, y: T.copysign(x, y), I, J, grad=False)
case("xlogy:number", lambda T, x: x.xlogy(3.0), X)
case("xlogy:number_first", lambda T, y: T.xlogy(2.0, y), P)
case("xlogy:zeros", lambda T, x, y: T.xlogy(x, y), np.array([0.0, 0.0, 1.5]), np.array([0.0, 2.0, 3.0]), grad=False)
case("nextafter", lambda T, x, y: T.nextafter(x, y), X, Y, grad=False)
case("nextafter:method", lambda T, x, y: x.nextafter(y), F32, Y.astype(np.float32), grad=False)
case("heaviside", lambda T, x, y: x.heaviside(y), np.array([-1.5, 0.0, 2.0, 0.0]), np.array([0.5, 0.25, 0.7, 3.0]),
     grad=False)
case("heaviside:ft", lambda T, x, y: T.heaviside(x, y), I, np.array([9, 8, 7]), grad=False)
case("ldexp", lambda T, x, e: x.ldexp(e), X, np.array([[1, -2, 3, 0]] * 3))
case("ldexp:ft", lambda T, x, e: T.ldexp(x, e), X, np.array([2, 0, -1, 5]), grad=True)
case("gcd", lambda T, a, b: a.gcd(b), I, J, grad=False)
case("gcd:ft", lambda T, a, b: T.gcd(a, b), J, np.array([4, 6, 5]), grad=False)
case("lcm", lambda T, a, b: a.lcm(b), I, J, grad=False)
case("lcm:ft", lambda T, a, b: T.lcm(a, b), J, np.array([4, 6, 5]), grad=False)
for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    case(name, lambda T, a, b, n=name: getattr(a, n)(b), I, J, grad=False)
    case(f"{name}:ft", lambda T, a, b, n=name: getattr(T, n)(a, b), I, J, grad=False)
    case(f"{name}:bool", lambda T, a, b, n=name: getattr(a, n)(b), BA, BB, grad=False)
    case(f"{name}:number", lambda T, a, n=name: getattr(a, n)(6), I, grad=False)
case("bitwise_not", lambda T, a: a.bitwise_not(), I, grad=False)
case("bitwise_and:bool_number", lambda T, a: (a.bitwise_and(6), a.bitwise_xor(True)), BA, grad=False)
case("bitwise_not:ft_bool", lambda T, a: T.bitwise_not(a), BA, grad=False)
case("bitwise_left_shift", lambda T, a, b: a.bitwise_left_shift(b), J, np.array([1, 2, 3]), grad=False)
case("bitwise_left_shift:ft", lambda T, a: T.bitwise_left_shift(a, 2), J, grad=False)
case("bitwise_right_shift", lambda T, a, b: a.bitwise_right_shift(b), J, np.array([1, 2, 3]), grad=False)
case("bitwise_right_shift:ft", lambda T, a: T.bitwise_right_shift(a, 1), J, grad=False)
case("__lshift__", lambda T, a: a << 3, J, grad=False)
case("__rshift__", lambda T, a: a >> 1, J, grad=False)
case("addcmul", lambda T, x, a, b: x.addcmul(a, b, value=0.5), X, Y, P)
case("addcdiv", lambda T, x, a, b: x.addcdiv(a, b, value=-2.0), X, Y, P)
case("hardshrink", lambda T, x: x.hardshrink(0.3), X)
case("prelu", lambda T, x, w: x.prelu(w), X, np.array([0.25, -0.5, 1.5, 0.1]))
case("prelu:one_weight", lambda T, x, w: x.prelu(w), Y, np.array([0.1]))
case("hardshrink:default", lambda T, x: x.hardshrink(), 2 * X)
case("rsub", lambda T, x, y: T.rsub(x, y), X, Y)
case("rsub:alpha_number", lambda T, x: T.rsub(x, 2.0, alpha=3), X)
case("vander", lambda T, x: T.vander(x), V[:4])
case("vander:int", lambda T, x: T.vander(x), np.array([1, 2, 3]), grad=False)
case("vander:increasing_N", lambda T, x: T.vander(x, N=5, increasing=True), V[:3])
case("vander:bool_N0", lambda T, x: (T.vander(x), T.vander(x, 0)), BA, grad=False)

# ---------------------------------------------------------------- dtype promotion (integers, bools, mixed floats)
I32 = I.astype(np.int32)
case("promotion:xlogy_int_float32", lambda T, a, b: T.xlogy(a, b), I, P[:2, :3].astype(np.float32), grad=False)
case("promotion:logaddexp_32_64", lambda T, a, b: T.logaddexp(a, b), F32, Y)
case("promotion:hypot_32_0d64", lambda T, a, b: T.hypot(a, b), F32, np.array(2.0))
case("promotion:copysign_int_number", lambda T, a: T.copysign(a, -2.0), I, grad=False)
case("promotion:ldexp_int", lambda T, a, e: T.ldexp(a, e), I, J, grad=False)
case("promotion:gcd_32_64", lambda T, a, b: T.gcd(a, b), I32, J, grad=False)
case("promotion:bitwise_and_32_number", lambda T, a: a.bitwise_and(3), I32, grad=False)
case("promotion:bitwise_or_bool_int", lambda T, a, b: a.bitwise_or(b), BA[:3], I32[0], grad=False)
case("promotion:erf_bool", lambda T, a: a.erf(), BA, grad=False)
case("promotion:igamma_int_float", lambda T, a, b: a.igamma(b), J, 2 * U[:2, :3], grad=False)
case("promotion:fmin_int_int", lambda T, a, b: T.fmin(a, b), I, J, grad=False)
case("promotion:nextafter_32", lambda T, a: T.nextafter(a, T.zeros((), dtype=T.float32)), F32, grad=False)
case("promotion:cummax_bool", lambda T, a: a.cummax(0), BB, grad=False)
case("promotion:logcumsumexp_float32", lambda T, a: T.logcumsumexp(a, 0), F32)
case("promotion:quantile_float32", lambda T, a: a.quantile(0.3, dim=0), F32)
case("promotion:nanmean_dtype", lambda T, a: a.nanmean(dtype=T.float64), F32)
case("promotion:histc_float32", lambda T, a: a.histc(3), F32, grad=False)
case("promotion:cov_float32_aweights64", lambda T, a, w: a.cov(aweights=w), F32, P[0])
case("promotion:trapezoid_int", lambda T, y: T.trapezoid(y), I, grad=False)
case("promotion:diff_int_prepend_float", lambda T, a, p: a.diff(prepend=p), I, np.array([[0.5], [1.5]]),
     grad=False)

# ---------------------------------------------------------------- in-place forms (methods and ft.<name>_)
INPLACE_UNARY = {  # name_ -> data
    "acosh_": 1 + P, "asinh_": X, "atanh_": X, "arccosh_": 1 + P, "arcsinh_": X, "arctanh_": X, "erf_": X,
    "erfc_": X, "erfinv_": X, "digamma_": P, "lgamma_": P, "i0_": X, "sinc_": X, "deg2rad_": X, "rad2deg_": X,
    "logit_": U, "nan_to_num_": NANS, "fix_": 3 * X, "bitwise_not_": I, "absolute_": X, "acos_": X, "arccos_": X,
    "asin_": X, "arcsin_": X, "atan_": X, "arctan_": X, "ceil_": 3 * X, "cosh_": X, "sinh_": X, "tan_": X,
    "exp2_": X, "expm1_": X, "floor_": 3 * X, "frac_": 3 * X, "log10_": P, "log1p_": P, "log2_": P,
    "negative_": X, "round_": 3 * X, "rsqrt_": P, "sgn_": X, "sign_": X, "trunc_": 3 * X, "logical_not_": X,
}
for name, data in INPLACE_UNARY.items():
    diff = data.dtype.kind == "f" and name not in ("logical_not_",)
    case(name, lambda T, x, n=name: getattr(x.clone(), n)(), data, grad=diff)
INPLACE_BINARY = {  # name_ -> (self, other)
    "hypot_": (X, Y), "copysign_": (X, Y), "nextafter_": (X, Y), "xlogy_": (X, P), "igamma_": (P, 2 * U),
    "igammac_": (P, 2 * U), "heaviside_": (X, Y), "ldexp_": (X, np.array([1, -2, 3, 0])), "gcd_": (I, J),
    "lcm_": (I, J), "bitwise_and_": (I, J), "bitwise_or_": (I, J), "bitwise_xor_": (I, J),
    "bitwise_left_shift_": (J, np.array([1, 2, 3])), "bitwise_right_shift_": (J, np.array([1, 2, 3])),
    "atan2_": (X, Y), "arctan2_": (X, Y), "divide_": (X, P), "multiply_": (X, Y), "subtract_": (X, Y),
    "true_divide_": (X, P), "floor_divide_": (3 * X, P), "fmod_": (3 * X, P), "remainder_": (3 * X, P),
    "eq_": (X, X * (X > 0)), "ne_": (X, X * (X > 0)), "lt_": (X, Y), "le_": (X, Y), "gt_": (X, Y), "ge_": (X, Y),
    "greater_": (X, Y), "greater_equal_": (X, Y), "less_": (X, Y), "less_equal_": (X, Y), "not_equal_": (X, Y),
    "logical_and_": (X, Y), "logical_or_": (X, Y), "logical_xor_": (X, Y),
}
_NO_GRAD = {"nextafter_", "heaviside_", "floor_divide_", "eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_",
            "greater_equal_", "less_", "less_equal_", "not_equal_", "logical_and_", "logical_or_", "logical_xor_"}
for name, (a, b) in INPLACE_BINARY.items():
    g = False if name in _NO_GRAD or a.dtype.kind != "f" else ((False, True) if name.startswith("igamma") else True)
    case(name, lambda T, x, y, n=name: getattr(x.clone(), n)(y), a, b, grad=g)
case("polygamma_", lambda T, x: x.clone().polygamma_(1), P)
case("mvlgamma_", lambda T, x: x.clone().mvlgamma_(2), 1 + P)
case("float_power_", lambda T, x: x.clone().float_power_(2.5), P)
case("cumsum_", lambda T, x: x.clone().cumsum_(1), X)
case("cumprod_", lambda T, x: x.clone().cumprod_(0), X)
case("renorm_", lambda T, x: x.clone().renorm_(2, 0, 0.8), X)
case("logit_:eps", lambda T, x: x.clone().logit_(0.2), U)
case("round_:decimals", lambda T, x: x.clone().round_(decimals=1), 3 * X)
case("eq_:number", lambda T, x: x.clone().eq_(0.2), X, grad=False)
case("lt_:int_self", lambda T, x, y: x.clone().lt_(y), I, J, grad=False)
case("conj_physical_", lambda T, x: T.view_as_real(T.complex(x, 2 * x).conj_physical_()), X)
case("conj_physical_:ft", lambda T, x: T.view_as_real(T.conj_physical_(T.complex(x, x * x))), X)
TORCH_INPLACE = {  # ft.<name>_(x)
    "abs_": X, "acos_": X, "acosh_": 1 + P, "arccos_": X, "arccosh_": 1 + P, "arcsin_": X, "arcsinh_": X,
    "arctan_": X, "arctanh_": X, "asin_": X, "asinh_": X, "atan_": X, "atanh_": X, "ceil_": 3 * X, "cos_": X,
    "cosh_": X, "deg2rad_": X, "erf_": X, "erfc_": X, "exp2_": X, "exp_": X, "expm1_": X, "fix_": 3 * X,
    "floor_": 3 * X, "frac_": 3 * X, "i0_": X, "log10_": P, "log1p_": P, "log2_": P, "log_": P, "logit_": U,
    "nan_to_num_": NANS, "neg_": X, "negative_": X, "rad2deg_": X, "reciprocal_": P, "round_": 3 * X, "rsqrt_": P,
    "sigmoid_": X, "sin_": X, "sinc_": X, "sinh_": X, "sqrt_": P, "square_": X, "tan_": X, "tanh_": X, "trunc_": 3 * X,
}
for name, data in TORCH_INPLACE.items():
    case(f"{name}:ft", lambda T, x, n=name: getattr(T, n)(x.clone()), data)
case("clamp_:ft", lambda T, x: T.clamp_(x.clone(), -0.3, 0.5), X)
case("clip_:ft", lambda T, x: T.clip_(x.clone(), min=-0.3), X)
case("clamp_min_:ft", lambda T, x: T.clamp_min_(x.clone(), 0.12), X)
case("clamp_max_:ft", lambda T, x: T.clamp_max_(x.clone(), 0.12), X)
case("gcd_:ft", lambda T, a, b: T.gcd_(a.clone(), b), I, J, grad=False)
case("lcm_:ft", lambda T, a, b: T.lcm_(a.clone(), b), I, J, grad=False)
case("ldexp_:ft", lambda T, x, e: T.ldexp_(x.clone(), e), X, np.array([1, -2, 3, 0]))
case("xlogy_:ft", lambda T, x, y: T.xlogy_(x.clone(), y), X, P)

# ---------------------------------------------------------------- scans and reductions
case("aminmax", lambda T, x: x.aminmax(), X)
case("aminmax:dim", lambda T, x: T.aminmax(x, dim=1, keepdim=True), X)
case("aminmax:dim0", lambda T, x: x.aminmax(dim=0), X)
case("aminmax:int", lambda T, x: x.aminmax(), I, grad=False)
for name in ("cummax", "cummin"):
    case(name, lambda T, x, n=name: getattr(x, n)(1), TIES)
    case(f"{name}:ft", lambda T, x, n=name: getattr(T, n)(x, 0), X)
    case(f"{name}:nan", lambda T, x, n=name: getattr(x, n)(-1), NANS, grad=False)
    case(f"{name}:int", lambda T, x, n=name: getattr(x, n)(0), I, grad=False)
    case(f"{name}:scalar", lambda T, x, n=name: getattr(x, n)(0), np.array(2.5))
case("logcumsumexp", lambda T, x: x.logcumsumexp(1), X)
case("logcumsumexp:ft", lambda T, x: T.logcumsumexp(x, 0), Y)
case("logcumsumexp:large", lambda T, x: x.logcumsumexp(0), np.array([-1000.0, 0.0, 1000.0, 999.0, -5.0]))
case("logcumsumexp:float32", lambda T, x: x.logcumsumexp(-1), F32)
case("kthvalue", lambda T, x: x.kthvalue(2), X)
case("kthvalue:ft", lambda T, x: T.kthvalue(x, 3, 0, keepdim=True), X)
case("kthvalue:dim0", lambda T, x: x.kthvalue(1, dim=0), Y)
case("msort", lambda T, x: x.msort(), X)
case("msort:ft", lambda T, x: T.msort(x), Y)
case("mode", lambda T, x: x.mode(), TIES)
case("mode:ft", lambda T, x: T.mode(x, 0, keepdim=True), np.array([[1, 2, 2], [1, 3, 2], [5, 3, 1], [1, 3, 9]]),
     grad=False)
case("mode:int_ties", lambda T, x: x.mode(), np.array([2, 1, 2, 1, 3]), grad=False)
case("nanmedian", lambda T, x: x.nanmedian(), NANS[:2])
case("nanmedian:dim", lambda T, x: T.nanmedian(x, 1), NANS[:2])  # (an all-NaN row: index unspecified)
case("nanmedian:keepdim", lambda T, x: x.nanmedian(0, keepdim=True), np.where(X > 0.5, np.nan, X))
case("nanmean", lambda T, x: x.nanmean(), np.where(X > 0.5, np.nan, X))
case("nanmean:dim", lambda T, x: T.nanmean(x, 1, keepdim=True), np.where(X > 0.5, np.nan, X))
case("nanmean:all_nan", lambda T, x: x.nanmean(0), NANS, grad=False)
case("quantile", lambda T, x: x.quantile(0.3), X)
case("quantile:dim", lambda T, x: T.quantile(x, 0.75, dim=1, keepdim=True), X)
case("quantile:tensor_q", lambda T, x, q: x.quantile(q, dim=0), X, np.array([0.1, 0.5, 0.9]), grad=(True, False))
case("quantile:tensor_q_keepdim", lambda T, x, q: x.quantile(q, dim=1, keepdim=True), X, np.array([0.2, 0.6]),
     grad=(True, False))
case("quantile:tensor_q_all_keepdim", lambda T, x, q: x.quantile(q, keepdim=True), X, np.array([0.2, 0.6]),
     grad=(True, False))
for mode in ("lower", "higher", "midpoint", "nearest"):
    case(f"quantile:{mode}", lambda T, x, m=mode: x.quantile(0.4, dim=1, interpolation=m), X)
case("quantile:nearest_half", lambda T, x: x.quantile(0.5, interpolation="nearest"), V[:4])
case("quantile:nan", lambda T, x: x.quantile(0.5, dim=1), NANS, grad=False)
case("nanquantile", lambda T, x: x.nanquantile(0.4, dim=1), np.where(X > 0.5, np.nan, X))
case("nanquantile:ft", lambda T, x, q: T.nanquantile(x, q, dim=1), NANS, np.array([0.25, 0.5]), grad=False)
case("histc", lambda T, x: x.histc(5, -1.0, 1.0), X, grad=False)
case("histc:ft_range", lambda T, x: T.histc(x, bins=4), X, grad=False)
case("histc:outside", lambda T, x: x.histc(3, 0.0, 0.5), X.astype(np.float32), grad=False)
case("histc:constant", lambda T, x: x.histc(4), np.full(3, 2.0), grad=False)
case("histogram:range", lambda T, x: x.histogram(5, range=(-0.5, 0.5)), X, grad=False)
case("histogram:constant", lambda T, x: x.histogram(2), np.full(3, 2.0), grad=False)
case("histogram", lambda T, x: x.histogram(4), X, grad=False)
case("histogram:ft_edges", lambda T, x, e: T.histogram(x, e), X, np.array([-1.0, 0.0, 0.25, 1.0]), grad=False)
case("histogram:weights_density", lambda T, x, w: T.histogram(x, 3, range=(-0.5, 0.5), weight=w, density=True), X,
     P, grad=False)
case("bincount", lambda T, x: x.bincount(), np.array([0, 3, 3, 1, 7]), grad=False)
case("bincount:weights", lambda T, x, w: x.bincount(w, minlength=10), np.array([0, 3, 3, 1, 7]), V[:5], grad=False)
case("bincount:weights32", lambda T, x, w: x.bincount(w), np.array([0, 3, 3, 1]), V[:4].astype(np.float32),
     grad=False)
case("cov", lambda T, x: x.cov(), X)
case("cov:ft_correction0", lambda T, x: T.cov(x, correction=0), X)
case("cov:1d", lambda T, x: x.cov(), V)
case("cov:fweights", lambda T, x, f: x.cov(fweights=f), X, np.array([1, 2, 1, 3]), grad=(True, False))
case("cov:aweights", lambda T, x, a: x.cov(aweights=a), X, P[0], grad=True)
case("cov:both", lambda T, x, f, a: x.cov(fweights=f, aweights=a), X, np.array([1, 2, 1, 3]), P[1],
     grad=(True, False, True))
case("cov:int", lambda T, x: x.cov(), I, grad=False)
case("cov:one_variable", lambda T, x: x.cov(), X[:1])
case("corrcoef:one_variable", lambda T, x: x.corrcoef(), X[:1], grad=False)
case("corrcoef", lambda T, x: x.corrcoef(), X)
case("corrcoef:ft", lambda T, x: T.corrcoef(x), Y)
for p in (2, 1, 3, float("inf"), 0):
    case(f"dist:p{p}", lambda T, x, y, p=p: x.dist(y, p), X, Y, grad=p != 0)
case("dist:ft", lambda T, x, y: T.dist(x, y), X, Y[0])
case("diff", lambda T, x: x.diff(), X)
case("diff:ft_n2_dim0", lambda T, x: T.diff(x, n=2, dim=0), X)
case("diff:prepend_append", lambda T, x, a, b: x.diff(dim=1, prepend=a, append=b), X, Y[:, :1], P[:, :2])
case("diff:bool", lambda T, x: x.diff(), BA, grad=False)
case("diff:int", lambda T, x: T.diff(x), I, grad=False)
case("renorm", lambda T, x: x.renorm(2, 0, 0.8), X)
case("sum_to_size", lambda T, x: x.sum_to_size(1, 4), X)
case("sum_to_size:tuple_lead", lambda T, x: x.sum_to_size((4,)), X)
case("sum_to_size:same", lambda T, x: x.sum_to_size(3, 4), X)
case("sum_to_size:inner", lambda T, x: x.reshape(3, 2, 2).sum_to_size(3, 1, 2), X)
case("apply_", lambda T, x: x.clone().apply_(lambda v: v * v - 1), X, grad=False)
case("map_", lambda T, x, y: x.clone().map_(y, lambda a, b: a * 2 + b), X, Y[0], grad=False)
case("map2_", lambda T, x, y, z: x.clone().map2_(y, z, lambda a, b, c: a - b * c), I, J, np.array([1, 2, 3]),
     grad=False)
case("renorm:ft_p1_dim1", lambda T, x: T.renorm(x, 1, 1, 0.5), X)

# ---------------------------------------------------------------- torch functions that are not methods
case("trapezoid", lambda T, y: T.trapezoid(y), X)
case("trapezoid:x", lambda T, y, x: T.trapezoid(y, x), X, np.array([0.0, 0.5, 1.5, 1.75]))
case("trapezoid:dx_dim0", lambda T, y: T.trapezoid(y, dx=0.25, dim=0), X)
case("trapz", lambda T, y, x: T.trapz(y, x, dim=-1), X, np.array([0.0, 0.5, 1.5, 1.75]))
case("trapz:dx", lambda T, y: T.trapz(y, dx=2.0), X)
case("cumulative_trapezoid", lambda T, y: T.cumulative_trapezoid(y), X)
case("cumulative_trapezoid:x_dim0", lambda T, y, x: T.cumulative_trapezoid(y, x, dim=0), X, np.array([0.0, 1.0, 3.0]))
case("cumulative_trapezoid:dx", lambda T, y: T.cumulative_trapezoid(y, dx=0.5), V)
case("gradient", lambda T, x: T.gradient(x), X)
case("gradient:spacing", lambda T, x: T.gradient(x, spacing=0.5, dim=1), X)
case("gradient:spacing_list", lambda T, x: T.gradient(x, spacing=[2.0, 0.5]), X)
case("gradient:edge2", lambda T, x: T.gradient(x, dim=1, edge_order=2), X)
case("gradient:coordinates", lambda T, x, c: T.gradient(x, spacing=(c,), dim=1), X, np.array([0.0, 0.5, 1.5, 1.75]),
     grad=(True, False))
case("gradient:1d", lambda T, x: T.gradient(x), V)
case("gradient:coordinates_edge2", lambda T, x, c: T.gradient(x, spacing=[c], dim=0, edge_order=2), X,
     np.array([0.0, 0.25, 1.0]), grad=(True, False))
case("gradient:coordinates_2d", lambda T, x, c, r: T.gradient(x, spacing=(r, c)), X, np.array([0.0, 0.5, 1.5, 1.75]),
     np.array([-1.0, 0.0, 2.0]), grad=(True, False, False))
for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
    case(name, lambda T, n=name: getattr(T, n)(7), grad=False)
    case(f"{name}:symmetric", lambda T, n=name: getattr(T, n)(6, periodic=False, dtype=T.float64), grad=False)
    case(f"{name}:short", lambda T, n=name: (getattr(T, n)(0), getattr(T, n)(1), getattr(T, n)(2)), grad=False)
case("hamming_window:alpha_beta", lambda T: T.hamming_window(8, True, 0.5, 0.5), grad=False)
case("kaiser_window:beta", lambda T: T.kaiser_window(9, False, 5.0), grad=False)


# ---------------------------------------------------------------- ft.special (torch.special)
for name, data in [("airy_ai", np.array([-3.0, -1.2, -0.3, 0.4, 1.5, 4.0])), ("bessel_j0", 2 * P), ("bessel_j1", 2 * P),
                   ("bessel_y0", 2 * P), ("bessel_y1", 2 * P), ("digamma", P), ("entr", P), ("erf", X), ("erfc", X),
                   ("erfinv", X), ("erfcx", 6 * X), ("exp2", X), ("expit", X), ("expm1", X), ("gammaln", P),
                   ("i0", X), ("i0e", 3 * X),
                   ("i1", X), ("i1e", 3 * X), ("log1p", P), ("log_ndtr", 3 * X), ("modified_bessel_i0", X),
                   ("modified_bessel_i1", X), ("modified_bessel_k0", P), ("modified_bessel_k1", P), ("ndtr", X),
                   ("ndtri", U), ("psi", P), ("round", 3 * X), ("sinc", X), ("spherical_bessel_j0", 3 * X)]:
    # (torch has no derivative for its Bessel functions and polynomials: those compare values only)
    g = not (name.startswith(("bessel", "modified_bessel", "spherical", "airy")))
    case(f"special.{name}", lambda T, x, n=name: getattr(T.special, n)(x), data, grad=g)
case("special.erf:int", lambda T, x: T.special.erf(x), I, grad=False)
case("special.polygamma", lambda T, x: T.special.polygamma(2, x), P)
case("special.multigammaln", lambda T, x: T.special.multigammaln(x, 2), 1 + P)
case("special.logit", lambda T, x: T.special.logit(x, eps=0.25), U)
case("special.round:decimals", lambda T, x: T.special.round(x, decimals=1), 3 * X, grad=False)
case("special.softmax", lambda T, x: T.special.softmax(x, 1), X)
case("special.log_softmax", lambda T, x: T.special.log_softmax(x, 0), X)
case("special.logsumexp", lambda T, x: T.special.logsumexp(x, 1, keepdim=True), X)
for name, a, b in [("xlogy", X, P), ("xlog1py", X, P), ("zeta", 1.5 + P, P), ("gammainc", P, 2 * U),
                   ("gammaincc", P, 2 * U)]:
    g = True if name in ("xlogy", "xlog1py") else (False, True)
    if name == "zeta":
        g = False  # (torch: no derivative)
    case(f"special.{name}", lambda T, x, y, n=name: getattr(T.special, n)(x, y), a, b, grad=g)
case("special.xlogy:number", lambda T, y: T.special.xlogy(2.0, y), P)
for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
             "laguerre_polynomial_l", "legendre_polynomial_p"):
    case(f"special.{name}", lambda T, x, n=name: getattr(T.special, n)(x, 4), X, grad=False)
    case(f"special.{name}:tensor_n", lambda T, x, k, n=name: getattr(T.special, n)(x, k), X[0],
         np.array([0, 1, 3, 6]), grad=False)

# ---------------------------------------------------------------- stft / istft
SIG = np.sin(np.arange(100.0) * 0.3) + 0.1 * np.arange(100.0) / 100
case("stft", lambda T, x: T.stft(x, 16, return_complex=True).abs(), SIG)
case("stft:hann_hop5", lambda T, x: x.stft(16, 5, window=T.hann_window(16, dtype=T.float64), return_complex=True)
     .abs(), SIG)
case("stft:win10_not_centered", lambda T, x: T.stft(x, 16, win_length=10, window=T.hann_window(10, dtype=T.float64),
                                                      center=False, return_complex=True).abs(), SIG)
case("stft:constant_normalized", lambda T, x: T.stft(x, 16, pad_mode="constant", normalized=True,
                                                       return_complex=True).abs(), SIG)
case("stft:twosided", lambda T, x: T.stft(x, 16, onesided=False, return_complex=True).abs(), SIG)
case("stft:replicate_real_view", lambda T, x: T.stft(x, 16, pad_mode="replicate", return_complex=False), SIG)
case("stft:circular_batch", lambda T, x: T.stft(x, 8, 3, pad_mode="circular", return_complex=True).abs(),
     np.stack([SIG[:40], SIG[40:80]]))
case("stft:window_grad", lambda T, x, w: T.stft(x, 16, 4, window=w, return_complex=True).abs(), SIG,
     np.hanning(16) + 0.1)
case("istft", lambda T, x: T.istft(T.stft(x, 16, 4, window=T.hann_window(16, dtype=T.float64), return_complex=True),
                                   16, 4, window=T.hann_window(16, dtype=T.float64)), SIG)
case("istft:length", lambda T, x: x.stft(16, 5, window=T.hann_window(16, dtype=T.float64), return_complex=True)
     .istft(16, 5, window=T.hann_window(16, dtype=T.float64), length=90), SIG)
case("istft:normalized_padded", lambda T, x: T.istft(
    T.stft(x, 16, 4, window=T.hann_window(16, dtype=T.float64), normalized=True, return_complex=True), 16, 4,
    window=T.hann_window(16, dtype=T.float64), normalized=True, length=120), SIG)
case("istft:twosided_batch", lambda T, x: T.istft(T.stft(x, 8, 2, onesided=False, return_complex=True), 8, 2,
                                                  onesided=False), np.stack([SIG[:40], SIG[40:80]]))

# ---------------------------------------------------------------- the torch namespace's losses (reduction enums)
case("binary_cross_entropy_with_logits", lambda T, x, t: T.binary_cross_entropy_with_logits(x, t), X, U,
     grad=(True, False))
case("binary_cross_entropy_with_logits:weights_sum", lambda T, x, t, w, pw: T.binary_cross_entropy_with_logits(
    x, t, w, pw, 2), X, U, P[0], P[1], grad=(True, False, False, False))
case("kl_div", lambda T, x, t: T.kl_div(x, t), X, U, grad=(True, False))
case("kl_div:log_target_none", lambda T, x, t: T.kl_div(x, t, 0, log_target=True), X, Y)
case("poisson_nll_loss", lambda T, x, t: T.poisson_nll_loss(x, t, True, False, 1e-8, 1), X, 3 * U, grad=(True, False))
case("poisson_nll_loss:full_sum", lambda T, x, t: T.poisson_nll_loss(x, t, False, True, 1e-6, 2), P, 3 * U + 1,
     grad=(True, False))
case("hinge_embedding_loss", lambda T, x, t: T.hinge_embedding_loss(x, t, 0.5, 0), X, np.sign(Y), grad=(True, False))
case("cosine_embedding_loss", lambda T, a, b, t: T.cosine_embedding_loss(a, b, t, 0.1), X, Y,
     np.array([1.0, -1.0, 1.0]), grad=(True, True, False))
case("margin_ranking_loss", lambda T, a, b, t: T.margin_ranking_loss(a, b, t, 0.2, 2), X[0], Y[0],
     np.array([1.0, -1.0, 1.0, -1.0]), grad=(True, True, False))
case("triplet_margin_loss", lambda T, a, p, n: T.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, 1), X, Y, P)
case("ctc_loss", lambda T, lp, t: T.ctc_loss(lp.log_softmax(2), t, [4, 4], [2, 1], 0, 1, False),
     np.linspace(-1, 1, 24).reshape(4, 2, 3), np.array([[1, 2], [1, 0]]), grad=(True, False))
case("ctc_loss:default_none", lambda T, lp, t: T.ctc_loss(lp.log_softmax(2), t, [4, 3], [2, 1]),
     np.linspace(-1, 1, 24).reshape(4, 2, 3) ** 2, np.array([[1, 2], [2, 0]]), grad=(True, False))

# ---------------------------------------------------------------- errors (PyTorch's type and message)
def error(key: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        ERRORS[key] = fn
        return fn
    return register


error("kthvalue_k")(lambda T: T.tensor(X).kthvalue(5, 1))
error("quantile_q")(lambda T: T.tensor(X).quantile(1.5))
error("quantile_interpolation")(lambda T: T.tensor(X).quantile(0.5, interpolation="cubic"))
error("quantile_int")(lambda T: T.tensor(I).quantile(0.5))
error("quantile_q_dtype")(lambda T: T.tensor(X).quantile(T.tensor([0.5], dtype=T.float32)))
error("nanmean_int")(lambda T: T.tensor(I).nanmean())
error("mvlgamma_p")(lambda T: T.tensor(P).mvlgamma(0))
error("bitwise_and_float")(lambda T: T.tensor(X).bitwise_and(T.tensor(Y)))
error("gcd_float")(lambda T: T.tensor(X).gcd(T.tensor(Y)))
error("frexp_int")(lambda T: T.tensor(I).frexp())
error("heaviside_dtypes")(lambda T: T.tensor(X).heaviside(T.tensor(I)))
error("cov_3d")(lambda T: T.zeros(2, 2, 2).cov())
error("bincount_negative")(lambda T: T.tensor(I[0]).bincount())
error("bincount_2d")(lambda T: T.tensor(J).bincount())
error("diff_0d")(lambda T: T.tensor(1.0).diff())
error("polygamma_negative")(lambda T: T.polygamma(-1, T.tensor(P)))
error("positive_bool")(lambda T: T.tensor(BA).positive())
error("float_power__float32")(lambda T: T.tensor(F32).float_power_(2.0))
error("erf__int")(lambda T: T.tensor(I).erf_())
error("lgamma__int")(lambda T: T.tensor(I).lgamma_())
error("hann_window_negative")(lambda T: T.hann_window(-1))
error("renorm_1d")(lambda T: T.tensor(V).renorm(2, 0, 1.0))
error("aminmax_empty")(lambda T: T.zeros(0).aminmax())
error("cummax_dim")(lambda T: T.tensor(X).cummax(2))
error("logit__int")(lambda T: T.tensor(I).logit_())
error("sum_to_size")(lambda T: T.tensor(X).sum_to_size(5))
error("hypot_int")(lambda T: T.tensor(I).hypot(T.tensor(J)))
error("logaddexp_bool")(lambda T: T.tensor(BA).logaddexp(T.tensor(BB)))
error("igamma_int")(lambda T: T.igamma(T.tensor(J), T.tensor(I)))
error("nextafter_int")(lambda T: T.tensor(I).nextafter(T.tensor(J)))
error("shift_bool")(lambda T: T.tensor(BA).bitwise_left_shift(T.tensor(BB)))
error("bitwise_not_float")(lambda T: T.tensor(X).bitwise_not())
error("vander_2d")(lambda T: T.vander(T.tensor(X)))
error("stft_return_complex")(lambda T: T.tensor(SIG).stft(16))
error("istft_real")(lambda T: T.tensor(SIG).reshape(10, 10).istft(16))


# ---------------------------------------------------------------- running a case
def _requires(grad: Any, k: int, a: Any) -> bool:
    if not (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
        return False
    return bool(grad) if isinstance(grad, bool) else bool(grad[k])


def _tensors(out: Any) -> list[Any]:
    """The tensors of a result (a tensor, or a (named) tuple of tensors, possibly nested)."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return [out]


def _host(t: Any) -> Any:
    try:
        return np.array(t.detach().numpy(), copy=True)
    except RuntimeError:  # torch's ZeroTensor (a gradient known to be zero) needs force=True
        return np.array(t.detach().numpy(force=True), copy=True)


def _dtype(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


_FIELDS = ("values", "indices", "min", "max", "mantissa", "exponent", "hist", "bin_edges")  # of return types


def run_case(T: Any, key: str) -> dict[str, Any]:
    """``{"values", "dtypes", "fields", "grads"}`` of case ``key`` on module ``T`` (ft or torch); ``grads``
    holds the gradients of ``sum(w * out)`` (fixed weights ``w``, summed over the float results that require
    grad) with respect to each input that requires grad (None for the others)."""
    fn, inputs, grad = CASES[key]
    args = [T.tensor(a, requires_grad=_requires(grad, k, a)) if isinstance(a, np.ndarray) else a
            for k, a in enumerate(inputs)]
    out = fn(T, *args)
    outs = _tensors(out)
    result: dict[str, Any] = {
        "values": [_host(t) for t in outs], "dtypes": [_dtype(t) for t in outs],
        "fields": [f for f in _FIELDS if isinstance(out, tuple) and hasattr(out, f)],
    }
    leaves = [a for a in args if getattr(a, "requires_grad", False)]
    differentiable = [t for t in outs if t.requires_grad]
    if leaves and differentiable:
        loss = sum((t * T.tensor(np.cos(np.arange(t.numel()) + 0.5).reshape(tuple(t.shape)), dtype=t.dtype)).sum()
                   for t in differentiable)
        try:
            loss.backward()
        except (NotImplementedError, RuntimeError) as e:  # PyTorch has no derivative here (funcgrad has one)
            result["grads_missing"] = type(e).__name__
            return result
        result["grads"] = [None if not getattr(a, "requires_grad", False) or a.grad is None else _host(a.grad)
                           for a in args]
    return result


def run_error(T: Any, key: str) -> list[str] | None:
    """``[exception type, message start]`` of error case ``key`` (``torch.`` spelled ``ft.``), None if none."""
    try:
        ERRORS[key](T)
    except Exception as e:  # noqa: BLE001 - the point is to compare errors
        msg = re.sub(r"\s+", " ", str(e).replace("torch.", "ft.").strip().split("\n")[0])
        return [type(e).__name__, msg[:60]]
    return None

