"""tsbench: a benchmark suite for time-series databases.

Five phases (generate, load, queries, execute, validate), each a command of
`python -m tsbench`; the per-row work runs in a C core (tsbench.data._native).
"""

import os

# numpy's BLAS threads would compete with the generator for the cores; tsbench needs none
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
