"""Rules of a hand-written backward kernel taken from its funcgrad.numpy form.

A fused backward (``lstm_pointwise_backward``, ``standardize_tangent``,
``attention_backward``) runs as one primitive on raw arrays; to differentiate it
again (double backward, forward-over-reverse) its VJP and JVP are those of the same
formula written with funcgrad.numpy operations, which the transforms differentiate.

Example::

    vjp_all, jvp_all = composed_rules(lstm_pointwise_backward_composed)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ...transforms.custom import _partial_jvp, _partial_vjp

__all__ = ["composed_rules", "zeros_for"]


def zeros_for(cts: Sequence[Any], likes: Sequence[Any]) -> list[Any]:
    """The cotangents with zeros (shaped like ``likes``) where a result got none."""
    return [fnp.zeros_like(a) if ct is None else ct for ct, a in zip(cts, likes)]


def composed_rules(composed: Callable[..., Any], multiple_results: bool = True
                   ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(vjp_all, jvp_all)`` of a primitive equal to ``composed`` (funcgrad.numpy operations).

    Keyword arguments of the primitive (static options) are passed on to ``composed``.
    """

    def as_tuple(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        out = composed(*args, **kwargs)
        return tuple(out) if multiple_results else (out,)

    def vjp_all(g: Any, ans: Any, argnums: Sequence[int], *args: Any, **kwargs: Any) -> list[Any]:
        cts = tuple(zeros_for(g, ans)) if multiple_results else (g,)
        return _partial_vjp(lambda *a: as_tuple(*a, **kwargs), args, argnums, cts)

    def jvp_all(tangents: list[Any], ans: Any, *args: Any, **kwargs: Any) -> Any:
        out = _partial_jvp(lambda *a: as_tuple(*a, **kwargs), args, tangents)
        return out if multiple_results else out[0]

    return vjp_all, jvp_all
