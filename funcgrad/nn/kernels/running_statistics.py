"""Batch normalization's running statistics blended with a batch's, as one kernel.

In training, batch normalization (PyTorch's rule, which ``fg.nn`` and ``ft.nn`` follow) moves its running
statistics toward the batch's::

    new_mean = (1 - momentum) * running_mean + momentum * batch_mean
    new_var  = (1 - momentum) * running_var  + momentum * batch_var * count / (count - 1)

with ``batch_var`` the biased variance over the ``count`` values of each feature (made unbiased here).
Both results come from one call: :func:`blend_running_statistics_into` writes them into the running
buffers (the Tensor layer's BatchNorm owns its buffers and updates them in place), and
:func:`blend_running_statistics` is the pure primitive that returns new arrays (``fg.nn.batch_norm``,
and values traced by ``fg.jit`` or ``ft.compile``). Running statistics are state, not a result to
differentiate: the primitive is not differentiated (its results carry no tangent under ``fg.grad`` or
``fg.jvp``), and it batches under ``fg.vmap`` (a batch of models, each with its own statistics).

Example::

    new_mean, new_var = blend_running_statistics(mean, var, batch_mean, batch_var, 0.1, 512)
"""

from __future__ import annotations

from typing import Any, Callable

from ...core import defprimitive
from ...numpy._batching import move_to_front
from ...numpy.nondiff import ndim, shape
import funcgrad.numpy as fnp

__all__ = ["blend_running_statistics", "blend_running_statistics_into"]


def _unbiased(batch_var: Any, count: int) -> Any:
    """The batch's biased variance made unbiased over ``count`` values (a new array)."""
    return batch_var * (count / max(count - 1, 1))


def blend_running_statistics_into(running_mean: Any, running_var: Any, batch_mean: Any, batch_var: Any,
                                  momentum: Any, count: int) -> None:
    """Blend a batch's statistics into the running buffers ``running_mean`` and ``running_var`` in place
    (arrays of one namespace, shape ``(C,)``; the batch's mean and biased variance of the same shape over
    ``count`` values each). The same numbers as :func:`blend_running_statistics`, with no new buffers.

    Example::

        blend_running_statistics_into(module_mean, module_var, batch_mean, batch_var, 0.1, 512)
    """
    keep = 1 - momentum
    running_mean *= keep
    running_mean += momentum * batch_mean
    running_var *= keep
    running_var += momentum * _unbiased(batch_var, count)


def _blend_raw(running_mean: Any, running_var: Any, batch_mean: Any, batch_var: Any, momentum: Any,
               count: int) -> tuple[Any, Any]:
    mean, var = running_mean.copy(), running_var.copy()  # (the in-place blend keeps their dtype)
    blend_running_statistics_into(mean, var, batch_mean, batch_var, momentum, count)
    return mean, var


def _blend_batch(args: list[Any], dims: list[Any]) -> tuple[Any, tuple[Any, Any]]:
    """vmap: each batched argument's batch axis first; a result is batched when its running statistic, its
    batch statistic or the momentum is, and then has the batch axis even where its running one had none."""
    *arrays, count = args
    size = next(shape(a)[d] for a, d in zip(arrays, dims) if d is not None)
    fronted = [a if d is None else move_to_front(a, d) for a, d in zip(arrays, dims)]
    per = [shape(a)[d is not None:] for a, d in zip(fronted, dims)]
    rank = max(len(p) for p in per)
    # per-example parts right-aligned (a unit axis after the batch axis where an argument has fewer)
    rm, rv, bm, bv, m = (a if d is None else fnp.reshape(a, (size,) + (1,) * (rank - len(p)) + p)
                         for a, d, p in zip(fronted, dims, per))
    runs = [rm, rv]
    batched: list[int | None] = []
    for k in range(2):
        b = k + 2  # the batch statistic blended into it
        if dims[k] is None and dims[b] is None and dims[4] is None:
            batched.append(None)
            continue
        batched.append(0)
        if dims[k] is None:  # the blend writes into a copy of the running statistic: give it the batch axis
            runs[k] = fnp.broadcast_to(runs[k], (size,) + fnp.broadcast_shapes(per[k], per[b], per[4]))
    new_mean, new_var = blend_running_statistics(runs[0], runs[1], bm, bv, m, count)
    return (new_mean, new_var), (batched[0], batched[1])


blend_running_statistics: Callable[..., Any] = defprimitive(
    _blend_raw, name="blend_running_statistics", differentiable=False, batch=_blend_batch, multiple_results=True,
    doc="``(new_mean, new_var)``: batch normalization's running mean and variance moved toward a batch's "
        "(``(1 - momentum) * running + momentum * batch``, the batch's biased variance made unbiased over its "
        "``count`` values) in one kernel; new arrays in the running statistics' dtype. Not differentiated: "
        "running statistics are state. Example: ``blend_running_statistics(rm, rv, bm, bv, 0.1, 512)``.")
