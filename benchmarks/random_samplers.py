"""Time the fg.random samplers that reproduce XLA's arithmetic (issue 28's exact paths).

    python benchmarks/random_samplers.py [--tree PATH] [--repeat 5]

``--tree`` imports funcgrad from another checkout (say an export of an older commit) to
compare before and after. Prints the median CPU time of each draw in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, args.tree)
    import numpy as np

    import funcgrad.random as fr

    key = fr.PRNGKey(0)
    draws = {
        "lognormal float32 (1e5)": lambda: fr.lognormal(key, 0.5, (100000,), np.float32),
        "lognormal float64 (1e5)": lambda: fr.lognormal(key, 0.5, (100000,), np.float64),
        "truncated_normal float32 (1e5)": lambda: fr.truncated_normal(key, -1.5, 2.0, (100000,), np.float32),
        "truncated_normal float64 (1e5)": lambda: fr.truncated_normal(key, -1.5, 2.0, (100000,), np.float64),
        "gamma float32 (1e4)": lambda: fr.gamma(key, 2.5, (10000,), np.float32),
        "gamma float64 (1e4)": lambda: fr.gamma(key, 2.5, (10000,), np.float64),
        "chisquare float64 (1e4)": lambda: fr.chisquare(key, 3.0, (10000,), np.float64),
        "orthogonal float32 (100 of 8x8)": lambda: fr.orthogonal(key, 8, (100,), np.float32),
    }
    out = {}
    for name, draw in draws.items():
        draw()
        times = []
        for _ in range(args.repeat):
            start = time.process_time()
            draw()
            times.append(time.process_time() - start)
        out[name] = statistics.median(times) * 1e3
        print(f"| {name} | {out[name]:.2f} |")
    return out


if __name__ == "__main__":
    main()
