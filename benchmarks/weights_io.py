"""ft.load / ft.save of a PyTorch weight file against torch.load(weights_only=True) / torch.save (issue 29).

Run (needs torch): ``python benchmarks/weights_io.py``. A state dict of 16 float32 1024x1024
tensors (64 MiB) in torch's zip format; best and median of 5 wall-clock runs, and ft.load's
peak traced memory (one copy of the data).
"""
import os
import statistics
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np, torch
import funcgrad.tensor as ft
d = tempfile.mkdtemp()
sd = {f"layer{i}.weight": torch.randn(1024, 1024) for i in range(16)}  # 64 MiB float32
path = os.path.join(d, "w.pt"); torch.save(sd, path)
def best(f, n=5):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts), statistics.median(ts)
print("torch.load  ", best(lambda: torch.load(path, weights_only=True)))
print("ft.load     ", best(lambda: ft.load(path)))
tracemalloc.start(); ft.load(path); print("ft.load peak MiB", tracemalloc.get_traced_memory()[1] / 2**20); tracemalloc.stop()
fsd = ft.load(path)
p2 = os.path.join(d, "f.pt")
print("torch.save  ", best(lambda: torch.save(sd, p2)))
print("ft.save     ", best(lambda: ft.save(fsd, p2)))
