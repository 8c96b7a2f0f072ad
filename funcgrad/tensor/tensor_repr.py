"""``repr`` of a Tensor, laid out as PyTorch's: one number format per tensor (integers shown as
``1.``, fixed ``1.5000`` or scientific ``1.0000e+03``, chosen from the nonzero finite values),
right-aligned columns, rows wrapped at ``linewidth``, large tensors summarised with ``...``, the
real and imaginary parts of complex tensors formatted apart, and the suffixes (``size=``,
``dtype=``, ``grad_fn=``, ``requires_grad=True``) wrapped onto a new line when they do not fit.
The options are this module's own (:func:`set_printoptions`), not NumPy's.

Example::

    ft.zeros(0, 2)                       # tensor([], size=(0, 2))
    ft.tensor([1 + 2j, 3 - 1j])          # tensor([1.+2.j, 3.-1.j])
    ft.set_printoptions(precision=2)     # tensor([0.33]) for ft.tensor([1 / 3])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["format_tensor", "set_printoptions", "PRINT_OPTIONS"]


@dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTIONS = PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Printing options of Tensors, as ``torch.set_printoptions`` (NumPy's own are left alone).

    ``profile`` is ``"default"``, ``"short"`` or ``"full"``; ``sci_mode`` True/False forces or
    forbids scientific notation (None: chosen per tensor).

    Example::

        ft.set_printoptions(precision=2)
        ft.tensor([1 / 3])                   # tensor([0.33])
        ft.set_printoptions(profile="default")
    """
    opts = PRINT_OPTIONS
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        opts.precision, opts.threshold, opts.edgeitems, opts.linewidth = _PROFILES[profile]
    if precision is not None:
        opts.precision = precision
    if threshold is not None:
        opts.threshold = threshold
    if edgeitems is not None:
        opts.edgeitems = edgeitems
    if linewidth is not None:
        opts.linewidth = linewidth
    opts.sci_mode = sci_mode


class _NumberFormat:
    """One format for every element of a (summarised) real array, and its width."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        p = PRINT_OPTIONS.precision
        flat = values.ravel()
        if not self.floating:
            self.width = max((len(str(v)) for v in flat.tolist()), default=1)
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8
            texts = [f"{v:.{p}e}" if self.sci_mode else f"{v:.0f}." for v in finite.tolist()]
        else:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
            texts = [f"{v:.{p}e}" if self.sci_mode else f"{v:.{p}f}" for v in finite.tolist()]
        if PRINT_OPTIONS.sci_mode is not None:
            self.sci_mode = PRINT_OPTIONS.sci_mode
        self.width = max(len(s) for s in texts)

    def __call__(self, value: Any) -> str:
        p = PRINT_OPTIONS.precision
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{p}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("." if math.isfinite(value) else "")
        else:
            text = f"{value:.{p}f}"
        return text.rjust(self.width)


def _summarized(v: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (``edgeitems`` at each end of every axis)."""
    e = PRINT_OPTIONS.edgeitems
    for axis, n in enumerate(v.shape):
        if n > 2 * e:
            v = np.concatenate([v.take(range(e), axis), v.take(range(n - e, n), axis)], axis)
    return v


def _element_writer(v: np.ndarray, summarize: bool) -> tuple[Callable[[Any], str], int]:
    """A function writing one element, and the width PyTorch counts per element for line wrapping."""
    shown = _summarized(v) if summarize else v
    if v.dtype.kind == "c":
        real, imag = _NumberFormat(shown.real), _NumberFormat(shown.imag)

        def write(z: Any) -> str:
            imag_text = (imag(z.imag) + "j").lstrip()
            return real(z.real) + (imag_text if imag_text[0] in "+-" else "+" + imag_text)

        return write, real.width + imag.width + 3
    fmt = _NumberFormat(shown)
    return fmt, fmt.width + 2


def _body(v: np.ndarray, indent: int, summarize: bool, write: Callable[[Any], str], element_len: int) -> str:
    e = PRINT_OPTIONS.edgeitems
    if v.ndim == 0:
        return write(v.tolist())
    if v.ndim == 1:
        n = v.shape[0]
        if summarize and not e:
            data = ["..."]
        elif summarize and n > 2 * e:
            data = [write(x) for x in v[:e].tolist()] + [" ..."] + [write(x) for x in v[n - e:].tolist()]
        else:
            data = [write(x) for x in v.tolist()]
        per_line = max(1, int(math.floor((PRINT_OPTIONS.linewidth - indent) / element_len)))
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    n = v.shape[0]
    rows = range(n)
    if summarize and n > 2 * e:
        parts = [_body(v[i], indent + 1, summarize, write, element_len) for i in range(e)] + ["..."]
        parts += [_body(v[i], indent + 1, summarize, write, element_len) for i in range(n - e, n)]
    else:
        parts = [_body(v[i], indent + 1, summarize, write, element_len) for i in rows]
    return "[" + ("," + "\n" * (v.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def format_values(v: np.ndarray, indent: int) -> str:
    """The bracketed elements of host array ``v`` as PyTorch prints them (``[]`` when empty)."""
    if v.size == 0:
        return "[]"
    if v.dtype == np.float16:
        v = v.astype(np.float32)
    summarize = v.size > PRINT_OPTIONS.threshold
    write, element_len = _element_writer(v, summarize)
    return _body(v, indent, summarize, write, element_len)


def format_tensor(v: np.ndarray, suffixes: list[str], prefix: str = "tensor(") -> str:
    """``prefix`` + the elements + the ``suffixes``, each after ", " or, when the line would pass
    ``linewidth``, on a new line under the first element; then ")"."""
    text = prefix + format_values(v, len(prefix))
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > PRINT_OPTIONS.linewidth:
            parts.append(",\n" + " " * len(prefix) + suffix)
            last_line = len(prefix) + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"
