"""Synthetic run folders for the tests of what reads them (`compare`, the summary table):
the manifest, cells, queries and trials tables as the runner writes them, with figures
drawn from known distributions, so a test knows what a comparison should find."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tsbench.experiments.stats import cell_columns

TYPES = ("lastpoint", "high-cpu-1")
# the cells of every synthetic run: (target name, load workers)
CELLS = (("a", 1), ("a", 4), ("b", 4))


def manifest(run_id: str, **change) -> dict:
    m = {"experiment": "synthetic", "run_id": run_id, "tsbench": "0.1.0", "c_core": "29c657ed409bb604",
         "config": {"description": "", "queries": {"types": list(TYPES), "families": [], "count": 10, "seed": 1}},
         "host": {"cpu_model": "Some CPU", "cores": 2, "memory_bytes": 8 * 2**30, "kernel": "6", "python": "3.11"},
         "datasets": {"d": {"spec": {"use_case": "devops", "scale": 10}, "sha256": "ab" * 32}},
         "status": {"ok": len(CELLS)}, "cells": len(CELLS)}
    return {**m, **change}


def write_run(d: pathlib.Path, seed: int, *, trials: int = 3, queries: int = 60, slow: float = 1.0,
              rows_per_s: float = 100_000.0, spread: float = 0.01, first_cell: int = 0, one_trial_tables=False,
              busy: bool | None = None, **manifest_change) -> pathlib.Path:
    """A run folder at d: the cells of CELLS (ids from first_cell on), each with `trials`
    load and execute trials (rows/s about rows_per_s, relative spread `spread`) and
    `queries` executions of each type a trial (lognormal latencies times `slow`).
    one_trial_tables: written as before trials (no trials table, no trial column)."""
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    cells, trial_rows, query_rows = [], [], []
    for k, (name, workers) in enumerate(CELLS):
        cell = first_cell + k
        mine_t, mine_q = _cell_trials(rng, cell, trials, queries, slow, rows_per_s * workers, spread)
        row = {"cell": cell, "status": "ok", "reason": "", "target": "null", "target_name": name, "dataset": "d",
               "knobs": json.dumps({"target": name, "load.workers": workers}), "workers": workers,
               **cell_columns(mine_t, mine_q)}
        if busy is not None:
            row.update(busy=busy, busy_reason="load average 3.5 on 2 cores" if busy else "")
        cells.append(row)
        trial_rows += mine_t
        query_rows += mine_q
    if one_trial_tables:
        query_rows = [{k: v for k, v in q.items() if k != "trial"} for q in query_rows]
    else:
        _table(d / "trials.parquet", trial_rows)
    _table(d / "cells.parquet", cells)
    _table(d / "queries.parquet", query_rows)
    (d / "manifest.json").write_text(json.dumps(manifest(d.name, **manifest_change)))
    return d


def _cell_trials(rng, cell, trials, queries, slow, rows_per_s, spread):
    trial_rows, query_rows = [], []
    for t in range(trials):
        rate = rows_per_s * (1 + spread * rng.standard_normal())
        trial_rows.append({"cell": cell, "phase": "load", "trial": t, "status": "ok", "reason": "",
                           "rows_per_s": rate, "values_per_s": 10 * rate, "disk_bytes": 5_000_000.0,
                           "client_cpu_s": 2.0 * (1 + spread * rng.standard_normal())})
        lat = {ty: rng.lognormal(-6 + i, 0.3, queries) * slow for i, ty in enumerate(TYPES)}
        every = np.concatenate(list(lat.values())) * 1e3
        trial_rows.append({"cell": cell, "phase": "execute", "trial": t, "status": "ok", "reason": "",
                           "query_p50_ms": float(np.percentile(every, 50)),
                           "query_p99_ms": float(np.percentile(every, 99)), "qps": 1000 / every.mean()})
        query_rows += [{"cell": cell, "trial": t, "id": i, "type": ty, "status": "ok", "latency": float(s)}
                       for ty, ss in lat.items() for i, s in enumerate(ss)]
    return trial_rows, query_rows


def _table(p: pathlib.Path, rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]), p)
