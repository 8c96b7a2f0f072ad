"""funcgrad's benchmark suite: ``python -m benchmarks --help``; results in benchmarks/RESULTS.md."""
