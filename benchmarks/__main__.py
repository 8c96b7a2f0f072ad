"""``python -m benchmarks``: pin every library to one thread (unless ``--threads default|both``), then run."""

import sys

from .peers import pin_thread_env
from .threads import mode_from_argv

if mode_from_argv(sys.argv[1:]) == "one":
    pin_thread_env()  # before NumPy, torch or JAX load their thread pools

from .run import main  # noqa: E402

main()
