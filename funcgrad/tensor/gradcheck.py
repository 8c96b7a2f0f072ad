"""``gradcheck`` / ``gradgradcheck``: backward against central finite differences.

For every output element (and, for complex outputs, its imaginary unit too)
the gradient from ``ft.autograd.grad`` is compared with the numerical
gradient of ``L = Re(sum(conj(u) * output))`` along each input element (and
its imaginary direction for complex inputs): PyTorch's conjugate-Wirtinger
convention, so complex functions are checked as PyTorch checks them.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .backward import grad as _grad
from .grad_mode import enable_grad
from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails (``raise_exception=True``)."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _diff_outputs(out: Any) -> list:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True, fast_mode: bool = False,
              masked: Any = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences; True if they agree.

    Inputs that require grad are checked; use float64 (a warning says so
    otherwise). On mismatch raises :class:`GradcheckError` naming the output
    and input, with both Jacobians, or returns False with ``raise_exception=False``.

    Example::

        x = ft.randn(3, dtype=ft.float64, requires_grad=True)
        ft.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
    """
    ins = _as_tuple(inputs)
    diff = [i for i, t in enumerate(ins) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff:
        if ins[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or complex. This check "
                f"will likely fail if all the inputs are not of double precision floating point or complex. ",
                UserWarning, stacklevel=2,
            )
    with enable_grad():
        outs = _diff_outputs(func(*ins))
    # numerical evaluation: outputs as NumPy arrays for perturbed inputs
    base = [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, Tensor) else t for t in ins]

    def evaluate(j: int, flat_k: int, delta: complex) -> list:
        args = list(base)
        x = base[j].detach().clone()
        v = x._value.reshape(-1)
        v[flat_k] = v[flat_k] + delta
        args[j] = x.requires_grad_(base[j].requires_grad)
        with enable_grad():  # func may differentiate internally (gradgradcheck)
            res = _diff_outputs(func(*args))
        return [np.array(r.detach().numpy(), copy=True) for r in res]

    for oi, out in enumerate(outs):
        units = [1.0, 1j] if out.is_complex() else [1.0]
        n_out = out.numel()
        for j in diff:
            x = ins[j]
            n_in = x.numel()
            cplx_in = x.is_complex()
            numerical = np.zeros((len(units) * n_out, n_in), dtype=complex if cplx_in else float)
            analytical = np.zeros_like(numerical)
            for k in range(n_in):
                plus, minus = evaluate(j, k, eps)[oi], evaluate(j, k, -eps)[oi]
                d_re = (plus - minus).reshape(-1) / (2 * eps)
                if cplx_in:
                    plus_i, minus_i = evaluate(j, k, 1j * eps)[oi], evaluate(j, k, -1j * eps)[oi]
                    d_im = (plus_i - minus_i).reshape(-1) / (2 * eps)
                for ui, u in enumerate(units):
                    # dL/dx with L = Re(conj(u) * out_m), for every m
                    col = np.real(np.conj(u) * d_re)
                    if cplx_in:
                        col = col + 1j * np.real(np.conj(u) * d_im)
                    numerical[ui * n_out:(ui + 1) * n_out, k] = col
            for ui, u in enumerate(units):
                for m in range(n_out):
                    g_out = np.zeros(n_out, dtype=out._value.dtype)
                    g_out[m] = u
                    g_t = Tensor._make(g_out.reshape(out._value.shape))
                    with enable_grad():
                        fresh = _diff_outputs(func(*ins))[oi]
                        (g,) = _grad(fresh, ins[j], g_t, retain_graph=False, allow_unused=True)
                    if g is not None:
                        analytical[ui * n_out + m] = g.detach().numpy().reshape(-1)
            if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
                return _fail(
                    f"Jacobian mismatch for output {oi} with respect to input {j},\nnumerical:{_show(numerical)}\n"
                    f"analytical:{_show(analytical)}\n", raise_exception)
    return True


def _show(a: np.ndarray) -> str:
    return "tensor(" + np.array2string(a, separator=", ", precision=4) + ")"


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs,
    grad_outputs, create_graph=True)``. Random float64 ``grad_outputs`` are drawn when not given.

    Example::

        ft.autograd.gradgradcheck(lambda t: t.tanh(), (x,))
    """
    ins = _as_tuple(inputs)
    if grad_outputs is None:
        with enable_grad():
            outs = _diff_outputs(func(*ins))
        rng = np.random.default_rng(0)
        gouts = []
        for o in outs:
            v = rng.standard_normal(tuple(o.shape))
            if o.is_complex():
                v = v + 1j * rng.standard_normal(tuple(o.shape))
            gouts.append(Tensor._make(v.astype(o._value.dtype), requires_grad=True))
    else:
        gouts = [g.detach().requires_grad_(True) for g in _as_tuple(grad_outputs)]
    n_in = len(ins)

    def second(*args: Any) -> tuple:
        xs, gs = args[:n_in], args[n_in:]
        outs = _diff_outputs(func(*xs))
        dx = [t for t in xs if isinstance(t, Tensor) and t.requires_grad]
        res = _grad(outs, dx, list(gs), create_graph=True, allow_unused=True)
        return tuple(r for r in res if r is not None)

    return gradcheck(second, tuple(ins) + tuple(gouts), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
