"""``python -m benchmarks``: pin every library to one thread, then run."""

from .peers import pin_thread_env

pin_thread_env()  # before NumPy, torch or JAX load their thread pools

from .run import main  # noqa: E402

main()
