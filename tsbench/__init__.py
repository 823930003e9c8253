"""tsbench: a benchmark suite for time-series databases.

Five phases (generate, load, queries, execute, validate), each a command of
`python -m tsbench`; the per-row work runs in a C core (tsbench._native).
"""

__version__ = "0.1.0"
