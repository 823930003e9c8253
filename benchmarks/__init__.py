"""tsbench's own speed and memory benchmarks, outside the package: each module is a nox
session (`nox -s bench`, `bench_load`, ...) run from the repository's root that prints its figures."""
