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

from . import forward_ad as fwAD
from .backward import grad as _grad
from .creation import zeros_like
from .function import Function
from .grad_mode import enable_grad
from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails (``raise_exception=True``)."""


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _diff_outputs(out: Any) -> list[Any]:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True, fast_mode: bool = False,
              masked: Any = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences; True if they agree.

    Inputs that require grad are checked; use float64 (a warning says so
    otherwise). ``check_forward_ad=True`` also compares forward-AD Jacobian columns (dual inputs,
    ``ft.autograd.forward_ad``) with the numerical ones; ``check_backward_ad=False`` skips the
    backward comparison. On mismatch raises :class:`GradcheckError` naming the output
    and input, with both Jacobians, or returns False with ``raise_exception=False``.

    Example::

        x = ft.randn(3, dtype=ft.float64, requires_grad=True)
        ft.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
    """
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, check_backward_ad,
                          check_forward_ad, check_undefined_grad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func: Callable[..., Any], inputs: Any, eps: float, atol: float, rtol: float, nondet_tol: float,
               check_grad_dtypes: bool, check_backward_ad: bool, check_forward_ad: bool,
               check_undefined_grad: bool = True) -> bool:
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
                UserWarning, stacklevel=3,
            )
        if any(st == 0 and n > 1 for st, n in zip(getattr(ins[i]._value, "strides", ()), ins[i].shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               f"are non-overlapping to be able to compute the numerical gradients correctly. You "
                               f"should call .contiguous on the input before passing it to gradcheck.")
    with enable_grad():
        outs = _diff_outputs(func(*ins))
    analytical = {(oi, j): _analytical(out, ins, j, nondet_tol, check_grad_dtypes)
                  for oi, out in enumerate(outs) if out.requires_grad for j in diff} if check_backward_ad else {}
    forward = _forward_jacobians(func, ins, diff, len(outs)) if check_forward_ad else {}

    def evaluate(j: int, idx: tuple[Any, ...], delta: complex) -> list[Any]:
        # PyTorch's way: perturb the input's own data in place (a function that reads its
        # inputs through a closure sees the perturbation too), then restore it
        data = ins[j]._value
        orig = data[idx].copy()
        try:
            data[idx] = orig + delta
            with enable_grad():  # func may differentiate internally (gradgradcheck)
                res = _diff_outputs(func(*ins))
            # copied before the restore: an output may be the input itself or a view of it
            values = [np.array(r.detach().numpy(), copy=True) for r in res]
        finally:
            data[idx] = orig
        for r, o in zip(res, outs):
            for what, a, b in (("shape", tuple(o.shape), tuple(r.shape)), ("dtype", o.dtype, r.dtype)):
                if a != b:
                    raise AssertionError(f"Expected `func` to return outputs with the same {what} when inputs are "
                                         f"perturbed on index {idx} by {eps}, but got: {what}s {a} and {b}.")
        return values

    any_differentiable = any(o.requires_grad for o in outs)
    _numerical: dict[Any, Any] = {}
    for j in diff:
        x = ins[j]
        cplx_in = x.is_complex()
        for k in range(x.numel()):
            idx = tuple(int(i) for i in np.unravel_index(k, tuple(x.shape)))
            # central differences of every output along the element's real (and imaginary) direction
            diffs = [[(p - m).reshape(-1) / (2 * eps) for p, m in zip(evaluate(j, idx, d), evaluate(j, idx, -d))]
                     for d in ([eps, 1j * eps] if cplx_in else [eps])]
            for oi, out in enumerate(outs):
                if not any_differentiable:
                    if any(np.any(d[oi] != 0) for d in diffs):
                        raise GradcheckError("Numerical gradient for function expected to be zero")
                    continue
                units = [1.0, 1j] if out.is_complex() else [1.0]
                numerical = _numerical.setdefault((oi, j), np.zeros(
                    (len(units) * out.numel(), x.numel()), dtype=complex if cplx_in else float))
                # dL/dx with L = Re(conj(u) * out_m), for each unit u and every m: real part, then imaginary part
                numerical[:, k] = np.concatenate([sum(c * np.real(np.conj(u) * d[oi]) for c, d in zip((1, 1j), diffs))
                                                  for u in units])
    if check_backward_ad:
        _compare_backward(_numerical, analytical, outs, rtol, atol)
    for (oi, j), numerical in sorted(_numerical.items()):
        ana = forward.get((oi, j))
        if ana is not None and not np.allclose(ana, numerical, rtol=rtol, atol=atol):
            raise GradcheckError(_mismatch(" computed with forward mode", oi, j, numerical, ana))
    if check_backward_ad and any_differentiable:
        _check_backward_mul_by_grad_output(outs, [ins[j] for j in diff])
        if check_undefined_grad:
            _check_undefined_output_grads(func, ins, [ins[j] for j in diff])
    return True


def _compare_backward(numerical: dict[Any, Any], analytical: dict[Any, Any], outs: list[Any], rtol: float,
                      atol: float) -> None:
    """Backward Jacobians against numerical ones, in PyTorch's order and words: the imaginary parts of
    complex outputs (real outputs as they are) for every output and input, then the real parts."""
    any_complex = any(o.is_complex() for o in outs)
    for part in (("imaginary", "real") if any_complex else ("real",)):
        for (oi, j), num in sorted(numerical.items()):
            ana = analytical.get((oi, j), np.zeros_like(num))
            prefix = ""
            if outs[oi].is_complex():  # rows: the real part's block, then the imaginary part's
                n_out = outs[oi].numel()
                rows = slice(n_out, None) if part == "imaginary" else slice(0, n_out)
                num, ana = num[rows], ana[rows]
                prefix = f"While considering the {part} part of complex outputs only, "
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                raise GradcheckError(prefix + _mismatch("", oi, j, num, ana))


def _mismatch(mode: str, oi: int, j: int, numerical: np.ndarray, analytical: np.ndarray) -> str:
    return (f"Jacobian{mode} mismatch for output {oi} with respect to input {j},\n"
            f"numerical:{_show(numerical)}\nanalytical:{_show(analytical)}\n")


def _forward_jacobians(func: Callable[..., Any], ins: tuple[Any, ...], diff: list[Any], n_outs: int) -> dict[Any, Any]:
    """{(output, input): d output / d input} column by column with forward AD: input ``j`` made
    dual with the unit tangent of each of its elements in turn."""
    jac: dict[Any, Any] = {}
    for j in diff:
        x = ins[j]
        if x.is_complex():
            raise NotImplementedError("gradcheck(check_forward_ad=True) supports real inputs only")
        for k in range(x.numel()):
            unit = zeros_like(x.detach())
            unit._value.reshape(-1)[k] = 1
            with fwAD.dual_level():
                args = list(ins)
                args[j] = fwAD.make_dual(x, unit)
                with enable_grad():
                    res = _diff_outputs(func(*args))
                for oi, r in enumerate(res[:n_outs]):
                    if r.is_complex():
                        raise NotImplementedError("gradcheck(check_forward_ad=True) supports real outputs only")
                    t = fwAD.unpack_dual(r).tangent
                    col = np.zeros(r.numel()) if t is None else np.asarray(t.numpy(), dtype=float).reshape(-1)
                    jac.setdefault((oi, j), np.zeros((r.numel(), x.numel())))[:, k] = col
    return jac


def _analytical(out: Tensor, ins: tuple[Any, ...], j: int, nondet_tol: float, check_grad_dtypes: bool) -> np.ndarray:
    """The rows of d out / d ins[j] by backward, computed twice: PyTorch's reentrancy check."""
    units = [1.0, 1j] if out.is_complex() else [1.0]
    n_out, x = out.numel(), ins[j]
    runs = []
    for _ in range(2):
        rows = np.zeros((len(units) * n_out, x.numel()), dtype=complex if x.is_complex() else float)
        for ui, u in enumerate(units):
            for m in range(n_out):
                g_out = np.zeros(n_out, dtype=out._value.dtype)
                g_out[m] = u
                with enable_grad():
                    (g,) = _grad(out, x, Tensor._make(g_out.reshape(out._value.shape)), retain_graph=True,
                                 allow_unused=True)
                if g is None:
                    continue
                if tuple(g.shape) != tuple(x.shape):
                    raise GradcheckError("Analytical gradient has incorrect size")
                if check_grad_dtypes and g.dtype != x.dtype:
                    raise GradcheckError("Gradient has dtype mismatch")
                rows[ui * n_out + m] = np.asarray(g.detach().numpy()).reshape(-1)
        runs.append(rows)
    if np.abs(runs[0] - runs[1]).max(initial=0.0) > nondet_tol:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives "
            f"different values, although analytical gradient matches numerical gradient.The tolerance for "
            f"nondeterminism was {nondet_tol}. Pass nondet_tol=<tol> to gradcheck if the backward is meant to be "
            f"non-deterministic.")
    return runs[0]


def _check_backward_mul_by_grad_output(outs: list[Any], diff_inputs: list[Any]) -> None:
    """All-zero output gradients must give zero (or no) input gradients: PyTorch's
    "backward not multiplied by grad_output" check. An exception in backward propagates."""
    outs = [o for o in outs if o.requires_grad]
    with enable_grad():
        grads = _grad(outs, diff_inputs, [zeros_like(o) for o in outs], retain_graph=True, allow_unused=True)
    for g in grads:
        if g is not None and np.any(np.asarray(g.detach().numpy()) != 0):
            raise GradcheckError("backward not multiplied by grad_output")


class _UndefinedGrad(Function):
    """The identity whose backward gives an undefined (None) gradient, as PyTorch's
    ``torch._C._functions.UndefinedGrad``: the node before it then runs with None."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return None


_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'


def _check_undefined_output_grads(func: Callable[..., Any], ins: tuple[Any, ...], diff_inputs: list[Any]) -> None:
    """PyTorch's ``check_undefined_grad``: backward must run when every output gradient is undefined
    (None: a custom Function with ``set_materialize_grads(False)`` sees None, others zeros) and, with
    several outputs, when one is undefined at a time (the others zero); the input gradients must then be
    undefined or zero. A RuntimeError of backward becomes a GradcheckError; other errors propagate, as
    in PyTorch."""
    def outputs(undefined: int | None) -> list[Any]:  # None: all undefined
        with enable_grad():
            outs = [o for o in _diff_outputs(func(*ins)) if o.requires_grad]
            return [_UndefinedGrad.apply(o) if undefined in (None, k) else o for k, o in enumerate(outs)]

    cases = [outputs(None)]
    if len(cases[0]) > 1:
        cases += [outputs(k) for k in range(len(cases[0]))]
    for outs in cases:
        try:
            with enable_grad():
                grads = _grad(outs, diff_inputs, [zeros_like(o) for o in outs], allow_unused=True)
        except RuntimeError as err:
            _warn_undefined_check_is_new()
            raise GradcheckError(f"Expected backward function to handle undefined output grads. {_UNDEFINED_NOTE}") \
                from err
        if any(g is not None and np.any(np.asarray(g.detach().numpy()) != 0) for g in grads):
            _warn_undefined_check_is_new()
            raise GradcheckError("Expected all input grads to be undefined or zero when all output grads are undefined "
                                 f"or zero. {_UNDEFINED_NOTE}")


def _warn_undefined_check_is_new() -> None:
    warnings.warn("Backwards compatibility: New undefined gradient support checking feature is enabled by default, "
                  "but it may break existing callers of this function. If this is true for you, you can call this "
                  'function with "check_undefined_grad=False" to disable the feature', stacklevel=4)


def _show(a: np.ndarray) -> str:
    return "tensor(" + np.array2string(a, separator=", ", precision=4) + ")"


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5,
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

    def second(*args: Any) -> tuple[Any, ...]:
        xs, gs = args[:n_in], args[n_in:]
        outs = _diff_outputs(func(*xs))
        dx = [t for t in xs if isinstance(t, Tensor) and t.requires_grad]
        res = _grad(outs, dx, list(gs), create_graph=True, allow_unused=True)
        return tuple(r for r in res if r is not None)

    return gradcheck(second, tuple(ins) + tuple(gouts), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes)
