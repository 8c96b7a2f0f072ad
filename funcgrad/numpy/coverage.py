"""Every public name of NumPy and its status in funcgrad.numpy (the API reference's table).

``status(name)`` says, for a public name of ``numpy`` (or ``"fft.<name>"`` /
``"linalg.<name>"``), one of:

* ``"differentiable"``: VJP, JVP and batching (a primitive's rules, or a composition
  of differentiable functions);
* ``"passes through"``: accepts traced values but its result carries no derivative
  (comparisons, rounding, integer and index results, histograms, set operations,
  printing), or it takes no array to differentiate (creation from shapes, windows);
* ``"numpy's own"``: a type, constant, submodule or utility with no array input,
  re-exported unchanged;
* ``"refused"``: calling (or, for a submodule, reaching) it raises an error naming
  the function and what to use instead.

The classification is derived from the functions themselves (a primitive's
``differentiable`` flag) plus the explicit lists below, so the table in the docs
is generated from it and cannot drift. tests/test_numpy_coverage.py fails on any
name of ``dir(numpy)`` that is not classified.

Example::

    from funcgrad.numpy import coverage
    coverage.status("polyfit")     # ('differentiable', '')
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

__all__ = ["status", "table", "numpy_names", "REFUSED_MODULES", "STATUSES"]

STATUSES = ("differentiable", "passes through", "numpy's own", "refused")

# Submodules of numpy that funcgrad.numpy does not provide, and what to use instead.
REFUSED_MODULES: dict[str, str] = {
    "core": "NumPy's private implementation package; use the functions of funcgrad.numpy",
    "lib": "NumPy's implementation package; its public functions are in funcgrad.numpy itself",
    "ma": "masked arrays cannot be traced; use fnp.where, or the nan-functions (fnp.nanmean ...) with NaN as the mask",
    "emath": "not wrapped; for complex results of sqrt/log of negatives use fnp.sqrt(fnp.astype(x, complex))",
    "polynomial": "numpy.polynomial's classes are not traced; use fnp.polyval, polyfit, polyder, polyint, roots",
    "ctypeslib": "C interop on plain memory; use numpy.ctypeslib on plain arrays",
    "f2py": "a Fortran build tool, not array code",
}

# Names users bring from other libraries (PyTorch, JAX, SciPy) that NumPy does not have: where they live.
ELSEWHERE: dict[str, str] = {
    "sigmoid": "funcgrad.scipy.special.expit, or fg.nn.sigmoid",
    "log_sigmoid": "funcgrad.scipy.special.log_expit, or fg.nn.log_sigmoid",
    "logit": "funcgrad.scipy.special.logit",
    "softmax": "funcgrad.scipy.special.softmax, or fg.nn.softmax",
    "log_softmax": "funcgrad.scipy.special.log_softmax, or fg.nn.log_softmax",
    "logsumexp": "funcgrad.scipy.special.logsumexp, or fg.nn.logsumexp",
    "softplus": "fg.nn.softplus (or fnp.logaddexp(0, x))",
    "relu": "fg.nn.relu (or fnp.maximum(x, 0))",
    "gelu": "fg.nn.gelu", "silu": "fg.nn.silu", "swish": "fg.nn.swish", "elu": "fg.nn.elu",
    "leaky_relu": "fg.nn.leaky_relu", "one_hot": "fg.nn.one_hot",
    "erf": "funcgrad.scipy.special.erf", "erfc": "funcgrad.scipy.special.erfc",
    "gammaln": "funcgrad.scipy.special.gammaln", "lgamma": "funcgrad.scipy.special.gammaln",
    "digamma": "funcgrad.scipy.special.digamma", "expit": "funcgrad.scipy.special.expit",
    "xlogy": "funcgrad.scipy.special.xlogy",
    "clamp": "fnp.clip", "cat": "fnp.concatenate", "numel": "fnp.size",
}

# Non-primitive functions whose results carry no derivative (queries, index builders,
# creation from shapes, windows without a parameter ...). Primitives say it themselves.
_PASSING = {
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "can_cast", "lexsort", "ravel_multi_index",
    "ix_", "diag_indices", "indices", "isscalar", "issubdtype", "promote_types", "tril_indices", "triu_indices",
    "zeros", "ones", "empty", "arange", "eye", "identity", "tri", "zeros_like", "ones_like", "empty_like",
    "bartlett", "blackman", "hamming", "hanning", "mgrid", "ogrid", "s_", "index_exp", "ndindex",
    "histogramdd", "array2string", "array_repr", "array_str", "save", "savetxt", "savez", "savez_compressed",
    "einsum_path", "iterable", "isfortran", "may_share_memory", "shares_memory", "common_type", "mask_indices",
    "intersect1d", "histogram", "histogram2d", "histogram_bin_edges",
}
# Composites whose derivative comes from the user's function or a traced argument.
_NOTES = {
    "fromfunction": "NumPy's own; differentiable through the function's closure",
    "apply_along_axis": "differentiable when func1d is",
    "apply_over_axes": "differentiable when func is",
    "piecewise": "differentiable when the branch functions are",
    "vectorize": "runs the function under vmap on traced values",
    "fill_diagonal": "in place; rebinds a traced array",
    "put": "in place; rebinds a traced array",
    "place": "in place; rebinds a traced array",
    "putmask": "in place; rebinds a traced array",
    "copyto": "in place; rebinds a traced array",
    "kaiser": "in beta",
    "fftfreq": "differentiable in d",
    "rfftfreq": "differentiable in d",
    "roots": "at simple roots",
    "trim_zeros": "cut points read from the values (not under vmap)",
    "frexp": "in the mantissa",
    "ldexp": "in x1",
    "geomspace": "in scalar end points",
    "lstsq": "refused when traced: use pinv or solve",
}


# Where the function's own flags do not tell the whole story.
_OVERRIDE: dict[str, tuple[str, str]] = {
    "linalg.lstsq": ("refused", "on traced values: not differentiable here; use fnp.linalg.pinv(a) @ b, or "
                                "solve(a.T @ a, a.T @ b) (plain arrays work)"),
    "linalg.eig": ("refused", "its derivative: the forward works, differentiating raises (use eigh for symmetric "
                              "or Hermitian matrices)"),
    "linalg.eigvals": ("refused", "its derivative: the forward works, differentiating raises (use eigvalsh for "
                                  "symmetric or Hermitian matrices)"),
}


def numpy_names() -> list[str]:
    """The public names of ``numpy`` (``dir(numpy)`` without leading underscores)."""
    return sorted(n for n in dir(np) if not n.startswith("_"))


def _refused_function(obj: Any) -> str | None:
    doc = getattr(obj, "__doc__", None) or ""
    return doc[len("Refused: "):].rstrip(".") if doc.startswith("Refused: ") else None


def status(name: str) -> tuple[str, str] | None:
    """``(status, note)`` of public NumPy name ``name`` in funcgrad.numpy, or None if unclassified."""
    import funcgrad.numpy as fnp

    if name in _OVERRIDE:
        return _OVERRIDE[name]
    obj: Any = fnp
    for part in name.split("."):
        if part in REFUSED_MODULES and obj is fnp:
            return "refused", REFUSED_MODULES[part]
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    base = name.rsplit(".", 1)[-1]
    reason = _refused_function(obj)
    if reason is not None:
        return "refused", reason
    from ..core import Primitive

    prim = getattr(obj, "primitive", None)
    if isinstance(prim, Primitive):
        return ("differentiable" if prim.differentiable else "passes through"), _NOTES.get(base, "")
    if isinstance(obj, types.ModuleType):
        if obj.__name__.startswith("funcgrad."):
            return "differentiable", "submodule: see its functions"
        return "numpy's own", "submodule (plain arrays)"
    if obj is getattr(np, base, None) and base not in _NOTES:
        return "numpy's own", ""
    if base in _PASSING:
        return "passes through", _NOTES.get(base, "")
    if isinstance(obj, type) and base != "vectorize":
        return "numpy's own", ""
    if not callable(obj) and not hasattr(obj, "__getitem__"):
        return "numpy's own", ""
    return "differentiable", _NOTES.get(base, "")


def table(prefix: str = "") -> list[tuple[str, str, str]]:
    """``(name, status, note)`` for every public name of ``numpy`` (or ``numpy.<prefix>``)."""
    mod = np if not prefix else getattr(np, prefix)
    names = sorted(n for n in dir(mod) if not n.startswith("_") and (not prefix or n != "test")
                   and (not prefix or callable(getattr(mod, n))))
    out = []
    for n in names:
        full = f"{prefix}.{n}" if prefix else n
        s = status(full)
        out.append((full, s[0] if s else "unclassified", s[1] if s else ""))
    return out
