"""funcgrad.numpy.fft: NumPy's discrete Fourier transforms, differentiable.

Three primitives do the work, each over a tuple of axes of exactly the sizes
to transform (``n``/``s`` padding and cropping are done before, with
differentiable slicing and ``pad``):

* ``_c2c``: the complex transform (``fftn`` or ``ifftn``). It is linear and the
  DFT matrix is symmetric, so its VJP is the same transform of the cotangent
  (JAX's complex convention: cotangents pair by ``Re(sum(ct * dx))``, no
  conjugate); a real input keeps the real part.
* ``_r2c``: ``rfftn`` of a real input, i.e. the complex transform followed by
  keeping the first ``n // 2 + 1`` entries of the last axis. Its VJP zero-pads
  the cotangent back to ``n`` entries, transforms it and keeps the real part.
* ``_c2r``: ``irfftn`` to a real output of ``n`` entries along the last axis.
  It equals ``Re(ifftn(w * pad(y)))`` with weights ``w`` = 1 for the zero (and,
  for even ``n``, the Nyquist) frequency and 2 for the others: that is the
  Hermitian-symmetry weighting. Its VJP is therefore ``w * ifftn(g)`` cropped
  to the half spectrum.

Every rule is written with these primitives and funcgrad.numpy, so derivatives
of any order work in both modes; each primitive batches by shifting its axes
past the batch axis. The transforms run in the arrays' own namespace
(``cupy.fft`` on the GPU). ``hfft``/``ihfft``, the 1-D, 2-D and n-D forms and
the shifts are compositions.

Example::

    import funcgrad as fg, funcgrad.numpy as fnp
    power = lambda x: fnp.sum(fnp.abs(fnp.fft.rfft(x)) ** 2)
    fg.grad(power)(fnp.linspace(0.0, 1.0, 8))
"""

from __future__ import annotations

import operator
from typing import Any, Literal, Sequence, Union

import numpy as np

import funcgrad.numpy as fnp

from ..backend import device_constant, namespace_of
from ..core import Box, defprimitive
from ._batching import move_to_front
from ._util import dtype, ndim, shape

# numpy.fft's normalisations (None means "backward")
Norm = Union[Literal["backward", "ortho", "forward"], None]

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq",
]

_NORMS = (None, "backward", "ortho", "forward")
_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(norm: Any, fn: str) -> str:
    if norm not in _NORMS:
        raise ValueError(
            f"funcgrad.numpy.fft.{fn}: norm must be None, 'backward', 'ortho' or 'forward'; got {norm!r}"
        )
    return "backward" if norm is None else norm


def _raw_fft(x: Any) -> Any:
    while isinstance(x, Box):
        x = x._value
    return namespace_of(x).fft


# --- the three primitives ---------------------------------------------------

def _c2c_raw(x: Any, axes: tuple[Any, ...], norm: str, inverse: bool) -> Any:
    f = _raw_fft(x)
    return (f.ifftn if inverse else f.fftn)(x, axes=axes, norm=norm)


def _c2c_vjp(g: Any, ans: Any, x: Any, axes: tuple[Any, ...], norm: str, inverse: bool) -> Any:
    ct = _c2c(g, axes, norm, inverse)
    return ct if fnp.iscomplexobj(x) else fnp.real(ct)


def _shift(axes: tuple[Any, ...], per: int) -> tuple[Any, ...]:
    return tuple(operator.index(a) % per + 1 for a in axes)


def _batch_axes(fn: Any) -> Any:
    def wrapped(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, ...]:
        # positional layout: (x, axes, *params)
        x = move_to_front(args[0], dims[0])
        return fn(x, _shift(args[1], ndim(x) - 1), *args[2:], **kwargs), 0

    return wrapped


_c2c = defprimitive(_c2c_raw, name="fft_c2c", vjp=_c2c_vjp, linear=True, reads={0: {0}},
                    batch_from=_batch_axes)


def _r2c_raw(x: Any, axes: tuple[Any, ...], norm: str) -> Any:
    return _raw_fft(x).rfftn(x, axes=axes, norm=norm)


def _r2c_vjp(g: Any, ans: Any, x: Any, axes: tuple[Any, ...], norm: str) -> Any:
    full = _fit(g, axes[-1], shape(x)[axes[-1]])
    return fnp.real(_c2c(full, axes, norm, False))


_r2c = defprimitive(_r2c_raw, name="fft_r2c", vjp=_r2c_vjp, linear=True, reads={0: {0}},
                    batch_from=_batch_axes)


def _c2r_raw(y: Any, axes: tuple[Any, ...], n: int, norm: str) -> Any:
    s = [y.shape[a] for a in axes[:-1]] + [n]
    return _raw_fft(y).irfftn(y, s=s, axes=axes, norm=norm)


def _c2r_vjp(g: Any, ans: Any, y: Any, axes: tuple[Any, ...], n: int, norm: str) -> Any:
    z = _c2c(g, axes, norm, True)
    z = _fit(z, axes[-1], n // 2 + 1)
    return z * _weights_like(z, axes[-1], n)


def _weights_like(z: Any, axis: int, n: int) -> Any:
    m = n // 2 + 1
    w: Any = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    nd = ndim(z)
    w = w.reshape((m,) + (1,) * (nd - 1 - axis % nd)).astype(np.finfo(dtype(z)).dtype)
    raw = z
    while isinstance(raw, Box):
        raw = raw._value
    return device_constant(raw, w)


_c2r = defprimitive(_c2r_raw, name="fft_c2r", vjp=_c2r_vjp, linear=True, reads={0: set()},
                    batch_from=_batch_axes)


# --- sizes and axes ---------------------------------------------------------

def _fit(x: Any, axis: int, n: int) -> Any:
    """``x`` cropped or zero-padded to ``n`` entries along ``axis`` (differentiable)."""
    nd = ndim(x)
    axis = operator.index(axis) % nd
    have = shape(x)[axis]
    if have == n:
        return x
    if have > n:
        return x[(slice(None),) * axis + (slice(0, n),)]
    widths = [(0, 0)] * nd
    widths[axis] = (0, n - have)
    return fnp.pad(x, widths)


def _axes_sizes(x: Any, s: Any, axes: Any, fn: str, default_all: bool = True) -> tuple[tuple[Any, ...], list[Any]]:
    nd = ndim(x)
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    else:
        axes = tuple(operator.index(a) for a in np.atleast_1d(axes)) if not isinstance(axes, (tuple, list)) else tuple(axes)
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"funcgrad.numpy.fft.{fn}: axis {a} is out of bounds for an array of dimension {nd}")
    axes = tuple(a % nd for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"funcgrad.numpy.fft.{fn}: repeated axes {axes} are not supported")
    if s is None:
        sizes = [None] * len(axes)
    else:
        s = [None if v is None or v == -1 else operator.index(v) for v in s]
        if len(s) != len(axes):
            raise ValueError(f"funcgrad.numpy.fft.{fn}: s and axes must have the same length; got {len(s)} and {len(axes)}")
        sizes = s
    for v in sizes:
        if v is not None and v < 1:
            raise ValueError(f"funcgrad.numpy.fft.{fn}: invalid number of data points ({v}); must be at least 1")
    return axes, sizes


def _as_array(a: Any) -> Any:
    return a if isinstance(a, Box) or hasattr(a, "shape") else fnp.asarray(a)


# --- the public transforms --------------------------------------------------

def _cfftn(a: Any, s: Any, axes: Any, norm: Any, inverse: bool, fn: str) -> Any:
    nm = _check_norm(norm, fn)
    a = _as_array(a)
    axes, sizes = _axes_sizes(a, s, axes, fn)
    for ax, n in zip(axes, sizes):
        if n is not None:
            a = _fit(a, ax, n)
    if not axes:
        return a
    return _c2c(a, axes, nm, inverse)


def _real_input(a: Any, fn: str) -> Any:
    if fnp.iscomplexobj(a):
        raise TypeError(f"funcgrad.numpy.fft.{fn} takes a real input; got a complex array (use fft/fftn for complex data)")
    return a


def _rfftn(a: Any, s: Any, axes: Any, norm: Any, fn: str) -> Any:
    nm = _check_norm(norm, fn)
    a = _real_input(_as_array(a), fn)
    axes, sizes = _axes_sizes(a, s, axes, fn)
    for ax, n in zip(axes, sizes):
        if n is not None:
            a = _fit(a, ax, n)
    return _r2c(a, axes, nm)


def _irfftn(a: Any, s: Any, axes: Any, norm: Any, fn: str) -> Any:
    nm = _check_norm(norm, fn)
    a = _as_array(a)
    axes, sizes = _axes_sizes(a, s, axes, fn)
    last = axes[-1]
    n = sizes[-1] if sizes[-1] is not None else 2 * (shape(a)[last] - 1)
    if n < 1:
        raise ValueError(f"funcgrad.numpy.fft.{fn}: invalid number of data points ({n}); must be at least 1")
    for ax, m in zip(axes[:-1], sizes[:-1]):
        if m is not None:
            a = _fit(a, ax, m)
    a = _fit(a, last, n // 2 + 1)
    if not fnp.iscomplexobj(a):
        a = _to_complex(a)
    return _c2r(a, axes, n, nm)


def _to_complex(a: Any) -> Any:
    dt = dtype(a)
    cdt = np.complex64 if dt == np.float32 else np.complex128
    return fnp.astype(a, cdt)


def _one(n: int | None, axis: int) -> tuple[tuple[int] | None, tuple[int]]:
    return (None if n is None else (n,)), (axis,)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.fft``: the 1-D discrete Fourier transform.

    Example::

        fnp.fft.fft(fnp.array([1.0, 0.0, 0.0, 0.0]))   # [1, 1, 1, 1]
    """
    return _out(_cfftn(a, *_one(n, axis), norm, False, "fft"), out)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.ifft``: the inverse of :func:`fft`.

    Example::

        fnp.fft.ifft(fnp.fft.fft(x))   # x (as complex)
    """
    return _out(_cfftn(a, *_one(n, axis), norm, True, "ifft"), out)


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
         out: Any = None) -> Any:
    """Differentiable ``numpy.fft.fftn`` (over every axis by default).

    Example::

        fnp.fft.fftn(fnp.ones((2, 3)))   # 6 at [0, 0], zeros elsewhere
    """
    return _out(_cfftn(a, s, axes, norm, False, "fftn"), out)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          out: Any = None) -> Any:
    """Differentiable ``numpy.fft.ifftn``.

    Example::

        fnp.fft.ifftn(fnp.fft.fftn(x))   # x
    """
    return _out(_cfftn(a, s, axes, norm, True, "ifftn"), out)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
         out: Any = None) -> Any:
    """Differentiable ``numpy.fft.fft2`` (the last two axes by default).

    Example::

        fnp.fft.fft2(fnp.eye(2))
    """
    return _out(_cfftn(a, s, axes, norm, False, "fft2"), out)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
          out: Any = None) -> Any:
    """Differentiable ``numpy.fft.ifft2``.

    Example::

        fnp.fft.ifft2(fnp.fft.fft2(x))   # x
    """
    return _out(_cfftn(a, s, axes, norm, True, "ifft2"), out)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.rfft``: the FFT of a real input, ``n // 2 + 1`` frequencies.

    Example::

        fg.grad(lambda x: fnp.sum(fnp.abs(fnp.fft.rfft(x)) ** 2))(x)
    """
    return _out(_rfftn(a, *_one(n, axis), norm, "rfft"), out)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.irfft``: the real signal of ``n`` samples (default
    ``2 * (m - 1)``) whose half spectrum is ``a``.

    Example::

        fnp.fft.irfft(fnp.fft.rfft(x), n=len(x))   # x
    """
    return _out(_irfftn(a, *_one(n, axis), norm, "irfft"), out)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          out: Any = None) -> Any:
    """Differentiable ``numpy.fft.rfftn`` (half spectrum along the last of ``axes``).

    Example::

        fnp.fft.rfftn(fnp.ones((2, 4))).shape   # (2, 3)
    """
    return _out(_rfftn(a, s, axes, norm, "rfftn"), out)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           out: Any = None) -> Any:
    """Differentiable ``numpy.fft.irfftn``, the inverse of :func:`rfftn`.

    Example::

        fnp.fft.irfftn(fnp.fft.rfftn(x), s=x.shape)   # x
    """
    return _out(_irfftn(a, s, axes, norm, "irfftn"), out)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
          out: Any = None) -> Any:
    """Differentiable ``numpy.fft.rfft2``.

    Example::

        fnp.fft.rfft2(fnp.ones((2, 4))).shape   # (2, 3)
    """
    return _out(_rfftn(a, s, axes, norm, "rfft2"), out)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: Norm = None,
           out: Any = None) -> Any:
    """Differentiable ``numpy.fft.irfft2``.

    Example::

        fnp.fft.irfft2(fnp.fft.rfft2(x), s=x.shape)   # x
    """
    return _out(_irfftn(a, s, axes, norm, "irfft2"), out)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.hfft``: the real FFT of a signal with Hermitian symmetry,
    given by its first half ``a`` (``irfft`` of ``conj(a)`` with the opposite scaling).

    Example::

        fnp.fft.hfft(fnp.array([1.0, 2.0, 3.0]))   # 4 real values
    """
    nm = _check_norm(norm, "hfft")
    a = _as_array(a)
    return _out(_irfftn(fnp.conj(a), *_one(n, axis), _SWAP[nm], "hfft"), out)


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: Norm = None, out: Any = None) -> Any:
    """Differentiable ``numpy.fft.ihfft``, the inverse of :func:`hfft` (a real input).

    Example::

        fnp.fft.hfft(fnp.fft.ihfft(x), n=len(x))   # x
    """
    nm = _check_norm(norm, "ihfft")
    return _out(fnp.conj(_rfftn(a, *_one(n, axis), _SWAP[nm], "ihfft")), out)


def _out(result: Any, out: Any) -> Any:
    if out is None:
        return result
    out[...] = result
    return out


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Differentiable ``numpy.fft.fftshift``: the zero frequency moved to the centre.

    Example::

        fnp.fft.fftshift(fnp.fft.fftfreq(4))   # [-0.5, -0.25, 0, 0.25]
    """
    return _shift_by(x, axes, lambda n: n // 2)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """Differentiable ``numpy.fft.ifftshift``, the inverse of :func:`fftshift`.

    Example::

        fnp.fft.ifftshift(fnp.fft.fftshift(x))   # x
    """
    return _shift_by(x, axes, lambda n: -(n // 2))


def _shift_by(x: Any, axes: Any, amount: Any) -> Any:
    x = _as_array(x)
    nd = ndim(x)
    if axes is None:
        axes = tuple(range(nd))
    elif not isinstance(axes, (tuple, list)):
        axes = (axes,)
    if not axes:
        return x
    sh = shape(x)
    return fnp.roll(x, tuple(amount(sh[a]) for a in axes), axis=tuple(axes))


def fftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """``numpy.fft.fftfreq``; differentiable in the sample spacing ``d``.

    Example::

        fnp.fft.fftfreq(4, d=0.5)   # [0, 0.5, -1, -0.5]
    """
    return _freqs(np.fft.fftfreq(operator.index(n), 1.0), d, device)


def rfftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """``numpy.fft.rfftfreq``; differentiable in the sample spacing ``d``.

    Example::

        fnp.fft.rfftfreq(4)   # [0, 0.25, 0.5]
    """
    return _freqs(np.fft.rfftfreq(operator.index(n), 1.0), d, device)


def _freqs(base: np.ndarray, d: Any, device: Any) -> Any:
    if device is not None:
        base = fnp.asarray(base, device=device)
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return base / d if d != 1.0 else base
    return fnp.divide(device_constant(_raw(d), base) if not isinstance(d, (int, float)) else base, d)


def _raw(x: Any) -> Any:
    while isinstance(x, Box):
        x = x._value
    return x
