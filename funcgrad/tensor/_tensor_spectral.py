"""``Tensor.stft`` and ``Tensor.istft``: the short-time Fourier transform and its inverse, as PyTorch's.

A mixin of :class:`funcgrad.tensor.tensor.Tensor` that does not import ``tensor.py``. Frames are gathered
by one index array (the padding at the ends too), windowed and transformed by ``funcgrad.numpy.fft``; the
inverse overlap-adds the frames by a scatter-add and divides by the summed squared window. Every step is
a recorded primitive, so both are differentiable (to any order) in the signal and the window.

Example::

    x = ft.randn(400)
    spec = x.stft(64, hop_length=16, window=ft.hann_window(64), return_complex=True)   # (33, 26)
    back = spec.istft(64, hop_length=16, window=ft.hann_window(64), length=400)         # x again
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from . import dtypes as _dt
from .tensor_class import new_tensor
from .tensor_type import TensorBase, TensorT

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _padded_positions(length: int, pad: int, mode: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The source index of each position of a signal of ``length`` padded by ``pad`` on both sides in
    ``mode``, and for ``"constant"`` the mask of the positions that are the signal's (None otherwise)."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: pad_mode must be one of {', '.join(_PAD_MODES)}, got '{mode}'")
    pos = np.arange(-pad, length + pad)
    if mode == "reflect":
        if pad >= length:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({pad}, {pad}) at dimension 1 of input [1, 1, {length}]")
        period = 2 * (length - 1) if length > 1 else 1
        pos = np.abs(pos) % period
        return np.where(pos >= length, period - pos, pos), None
    if mode == "replicate":
        return np.clip(pos, 0, length - 1), None
    if mode == "circular":
        return pos % length, None
    inside = (pos >= 0) & (pos < length)
    return np.clip(pos, 0, length - 1), inside


def _window(window: Any, win_length: int, n_fft: int, like: Any) -> Any:
    """The window, zero-padded on both sides to ``n_fft`` (``None``: ones), as PyTorch centres it."""
    if window is None:
        w = new_tensor(namespace_of(like._value).ones(win_length, dtype=like._value.dtype))
    else:
        w = window
        if w.dim() != 1 or w.shape[0] != win_length:
            raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                               f"window with size {list(w.shape)}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        zeros = namespace_of(w._value).zeros
        w = fnp.concatenate([new_tensor(zeros(left, dtype=w._value.dtype)), w,
                             new_tensor(zeros(n_fft - win_length - left, dtype=w._value.dtype))])
    return w


class _SpectralMixin(TensorBase[TensorT]):
    __slots__ = ()

    def stft(self: TensorT, n_fft: builtins.int, hop_length: builtins.int | None = None,
             win_length: builtins.int | None = None, window: Any = None, center: builtins.bool = True,
             pad_mode: str = "reflect", normalized: builtins.bool = False, onesided: builtins.bool | None = None,
             return_complex: builtins.bool | None = None) -> "TensorT":
        """The short-time Fourier transform of a 1-D signal or a batch of them (``(B, L)``): frames of
        ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), multiplied by ``window`` (default
        ones, zero-padded to ``n_fft``), transformed; ``(B,) freq x frames``. ``center`` pads ``n_fft // 2``
        on both sides (``pad_mode``); ``onesided`` (default for real input and window) keeps the
        ``n_fft // 2 + 1`` non-negative frequencies. Real input needs ``return_complex``, as in PyTorch;
        ``False`` gives the real view (``(..., 2)``). Differentiable."""
        complex_input = self.is_complex() or (window is not None and window.is_complex())
        if return_complex is None:
            if not complex_input:
                raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                                   "further require that return_complex=True in a future PyTorch release.")
            return_complex = True
        if not return_complex:
            warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                          "return complex tensors for all inputs, and return_complex=False will raise an error.",
                          UserWarning, stacklevel=2)
        if self.dim() not in (1, 2):
            raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {self.dim()}D")
        hop = n_fft // 4 if hop_length is None else hop_length
        win = n_fft if win_length is None else win_length
        if hop <= 0:
            raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
        if not 0 < win <= n_fft:
            raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
        x = self if self._value.dtype.kind in "fc" else self.to(_dt.get_default_dtype())
        length = x.shape[-1]
        mask = None
        if center:
            positions, mask = _padded_positions(length, n_fft // 2, pad_mode)
        else:
            positions = np.arange(length)
        padded = len(positions)
        if not 0 < n_fft <= padded:
            raise RuntimeError(f"stft: expected 0 < n_fft <= {padded}, but got n_fft={n_fft}")
        frames = 1 + (padded - n_fft) // hop
        starts = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]  # (frames, n_fft)
        xp = namespace_of(x._value)
        index = xp.asarray(positions[starts])
        segments = x[..., index]
        if mask is not None and not mask.all():
            segments = segments * new_tensor(xp.asarray(mask[starts].astype(x._value.dtype)))
        segments = segments * _window(window, win, n_fft, x)
        side = (not complex_input) if onesided is None else onesided
        if side and complex_input:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spectrum = fnp.fft.rfft(segments, axis=-1) if side else fnp.fft.fft(segments, axis=-1)
        if normalized:
            spectrum = spectrum * (1.0 / math.sqrt(n_fft))
        out = spectrum.transpose(-1, -2)
        if return_complex:
            return out
        return fnp.stack([fnp.real(out), fnp.imag(out)], axis=-1)

    def istft(self: TensorT, n_fft: builtins.int, hop_length: builtins.int | None = None,
              win_length: builtins.int | None = None, window: Any = None, center: builtins.bool = True,
              normalized: builtins.bool = False, onesided: builtins.bool | None = None,
              length: builtins.int | None = None, return_complex: builtins.bool = False) -> "TensorT":
        """The inverse of :meth:`stft` (a complex ``(B,) freq x frames`` input): each frame transformed back,
        windowed and overlap-added, divided by the overlap-added squared window (which must not vanish);
        ``center`` trims the padding; ``length`` trims or zero-pads the result. Differentiable."""
        if not self.is_complex():
            raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                               "return_complex=True.")
        if self.dim() not in (2, 3):
            raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {self.dim()}")
        hop = n_fft // 4 if hop_length is None else hop_length
        win = n_fft if win_length is None else win_length
        frames = self.shape[-1]
        side = (self.shape[-2] != n_fft) if onesided is None else onesided
        if side and self.shape[-2] != n_fft // 2 + 1:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {self.shape[-2]}")
        spectrum = self.transpose(-1, -2)  # (..., frames, freq)
        if normalized:
            spectrum = spectrum * math.sqrt(n_fft)
        if side:
            segments = fnp.fft.irfft(spectrum, n=n_fft, axis=-1)
        else:
            segments = fnp.fft.ifft(spectrum, axis=-1)
            if not return_complex:
                segments = fnp.real(segments)
        w = _window(window, win, n_fft, new_tensor(fnp.real(self._value)) if window is None else window)
        segments = segments * w
        total = n_fft + hop * (frames - 1)
        starts = (np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
        xp = namespace_of(self._value)
        batch = tuple(self.shape[:-2])
        out = new_tensor(xp.zeros(batch + (total,), dtype=segments._value.dtype))
        out = (fnp.indexing.IndexUpdateRef(out, (Ellipsis, xp.asarray(starts))).add(
            segments.reshape(batch + (-1,))))
        wxp = namespace_of(w._value)
        envelope = fnp.indexing.IndexUpdateRef(wxp.zeros(total, dtype=w._value.dtype), wxp.asarray(starts)).add(
            fnp.reshape(fnp.broadcast_to(w * w, (frames, n_fft)), (-1,)))
        start = n_fft // 2 if center else 0
        end = total - (n_fft // 2 if center else 0)
        if length is not None:
            end = min(start + length, total)
        out = out[..., start:end]
        envelope = envelope[start:end]
        if builtins.bool((namespace_of(envelope._value).abs(envelope._value) < 1e-11).any()):
            raise RuntimeError("istft: window overlap add min: 0 (the window's overlap-added square vanishes "
                               "somewhere: choose a window and hop_length that satisfy the NOLA condition)")
        out = out / envelope
        if length is not None and out.shape[-1] < length:
            pad = new_tensor(xp.zeros(batch + (length - out.shape[-1],), dtype=out._value.dtype))
            out = fnp.concatenate([out, pad], axis=-1)
        return out

