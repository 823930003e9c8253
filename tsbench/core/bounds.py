"""The largest value each numeric option may take (all phases): what can run on one
machine, so that a number too large is one line naming the option (exit 2) before
anything is built, never a MemoryError, an overflow in the C core or hours of work that
cannot end. The phases' option models (data/options.py, load/options.py, ...: the
command line's click ranges and the experiment file's fields) take them from here;
resolve() (dataset.py) checks the dataset's own (entities, times) for both."""

from __future__ import annotations

from tsbench.core.errors import UserError

MAX_ENTITIES = 10 ** 9          # --scale and -P tags: the simulator keeps about 1-2 kB per entity (TBs here)
MAX_SCHEMA_ITEMS = 10_000       # synthetic measurements, fields: each one is in every epoch of every entity
MAX_TAGS = 64                   # synthetic tags of a series
MAX_GROUPS = 4096               # generate --groups: a file per group
MAX_PROCESSES = 256             # -j: processes of one generate or load
MAX_WORKERS = 1024              # workers, writers, query workers: tasks and connections of one client
MAX_BATCH_ROWS = 1_000_000      # rows per batch: a batch is in memory whole (hundreds of MB here)
MAX_QUERIES = 10 ** 12          # queries of an execute (--count, --burn-in); made as they are run
MAX_QUERIES_PER_TYPE = 1_000_000  # queries generate --count: every one is written to the file
MAX_COUNT = 10 ** 12            # other counts (points per series, errors tolerated, rows shown)
MAX_RATE = 1e9                  # rows/s or queries/s
MAX_SECONDS = 366 * 86_400.0    # any duration, delay, timeout or window in seconds: a year
MAX_REPEAT = 1000               # trials of a phase (repeat: N, --repeat N)
MAX_SEED = 2 ** 64 - 1          # seeds are unsigned 64-bit

INT64_MAX = 2 ** 63 - 1         # times are int64 nanoseconds since 1970: 1677-09-21 .. 2262-04-11
INT64_MIN = -2 ** 63


def check_entities(n: int, what: str = "--scale") -> int:
    if n > MAX_ENTITIES:
        raise UserError(f"{what}: {n:,} entities, more than the {MAX_ENTITIES:,} tsbench can simulate")
    return n


def check_time(ns: int, what: str) -> int:
    """A time in int64 nanoseconds, else one line naming the option."""
    if not INT64_MIN <= ns <= INT64_MAX:
        raise UserError(f"{what}: beyond the times tsbench can write (int64 nanoseconds since 1970: "
                        "1677-09-21 .. 2262-04-11)")
    return ns
