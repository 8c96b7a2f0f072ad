"""``Tensor.relu`` on the rectifier primitive against the ``where`` it replaced (issue 29, session 7).

Run: ``python benchmarks/tensor_relu.py``. A float32 tensor of 10**6 elements; the minimum over
5 repeats of 10 calls of the forward alone and of forward + ``sum().backward()``.
"""
import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad.numpy as fnp  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
from funcgrad.numpy import elementwise as _elementwise  # noqa: E402
from funcgrad.tensor.tensor_helpers import _cond, _zero_like_scalar  # noqa: E402
from funcgrad.tensor.torch_names import named  # noqa: E402


def relu_by_where(t):
    """The former ``Tensor.relu``: a select over the mask ``t > 0`` (NaN became 0)."""
    return named("ReluBackward0", fnp.where, _elementwise._where)(_cond(t._value > 0), t, _zero_like_scalar(t))


def main() -> None:
    x = ft.randn(1_000_000, requires_grad=True)

    def step(f):
        f(x).sum().backward()
        x.grad = None

    for name, f in (("where (before)", relu_by_where), ("rectifier primitive (after)", ft.Tensor.relu)):
        step(f)
        both = min(timeit.repeat(lambda: step(f), number=10, repeat=5)) / 10
        forward = min(timeit.repeat(lambda: f(x.detach()), number=10, repeat=5)) / 10
        print(f"{name}: forward {forward * 1e3:.2f} ms, forward+backward {both * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
