"""Benchmarks: funcgrad against plain NumPy and the peers (HIPS autograd, JAX, PyTorch)."""
