"""The fuzz target (`nox -s fuzz [SECONDS]`, issue 35): each property of properties.py run
over fresh random examples, batch after batch, for its share of TSBENCH_FUZZ_SECONDS
(default 90 in all). The file is named so that the normal pytest run does not collect it;
tests/e2e/test_fuzz_smoke.py runs every property for a few examples there."""

from __future__ import annotations

import os
import time

import pytest
from properties import PROPERTIES, check

SECONDS = float(os.environ.get("TSBENCH_FUZZ_SECONDS", "90"))
BATCH = 50           # examples a hypothesis run (a new run draws new ones): the most a property overruns its share


@pytest.mark.parametrize("name", PROPERTIES)
def test_fuzz(name):
    deadline = time.monotonic() + SECONDS / len(PROPERTIES)
    runs = 0
    while time.monotonic() < deadline:
        check(name, BATCH)
        runs += 1
    print(f"fuzz {name}: {runs} runs of {BATCH} examples, none failed")
