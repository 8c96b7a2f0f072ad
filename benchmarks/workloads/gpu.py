"""GPU section: an MLP training step and a Hessian-vector product on CuPy vs PyTorch CUDA.

The workloads live in ``benchmarks/gpu.py`` (runnable on its own as ``python -m benchmarks.gpu``);
without a visible GPU they produce no tables.
"""

from ..gpu import build  # noqa: F401
