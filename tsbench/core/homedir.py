"""Where tsbench keeps its own files (every phase): $TSBENCH_HOME, else
tsbench/ under the user's cache dir ($XDG_CACHE_HOME, else ~/.cache). Only the
path; databases/server.py's home() makes and checks it, the reference answers'
cache (queries/answer_store.py) keeps a folder in it."""

from __future__ import annotations

import os


def root() -> str:
    """The path of tsbench's home, from the environment (not made here)."""
    return os.environ.get("TSBENCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tsbench")
