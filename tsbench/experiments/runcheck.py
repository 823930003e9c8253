"""A run folder as the report reads it (after a run): the checks that make a report of
nothing, or of tables tsbench did not write, an error naming the file and what is wrong
instead of an empty page or an internal error. The report reads, of each table, the
columns below; a table tsbench wrote has them with these kinds (a column of numbers may
be all null); the manifest is an object naming the experiment and the run."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tsbench.core.errors import UserError
from tsbench.experiments.stats import FIGURES

REQUIRED = ("cells", "queries")       # the tables every run writes that the report cannot do without

# per table: {column: kind}, kind "num" (numbers, bools or nulls) or "text" (strings or nulls);
# the columns of a table with rows that the report reads without asking whether they are there
MUST = {
    "cells": {"cell": "num", "status": "text", "target": "text", "target_name": "text", "dataset": "text"},
    "queries": {"cell": "num", "type": "text", "status": "text", "latency": "num"},
    "load": {"cell": "num", "t": "num"},
    "resources": {"cell": "num", "role": "text", "elapsed_s": "num", "cpu_percent": "num", "pss_bytes": "num"},
    "stream": {"cell": "num", "op": "text", "second": "num", "rows": "num"},
    "trials": {"cell": "num", "phase": "text", "trial": "num"},
}
# columns the report reads when they are there
MAY = {
    "cells": {"knobs": "text", "reason": "text", "unsupported": "text", "repetition": "num", "workers": "num",
              "batch_size": "num", "series": "num", **{k: "num" for k in (
                  "rows_per_s", "values_per_s", "mb_per_s", "disk_bytes", "disk_own_bytes", "server_pss_peak_bytes",
                  "server_rss_sum_peak_bytes", "client_pss_peak_bytes", "queries_run", "query_p50_ms",
                  "query_p99_ms", "validated", "validated_nonempty", "mismatches", "stream_query_p99_ms")},
              # the statistics over trials (stats.py) and the busy mark, read by the summary and compare
              "noisy": "text", "noisy_reason": "text", "busy": "num", "busy_reason": "text",
              **{f"{f}_ci_{side}": "num" for f in FIGURES for side in ("low", "high")}},
    "queries": {"id": "num", "valid": "num", "empty": "num", "client_s": "num"},
    "load": {"rows_per_s": "num"},
    "trials": {"status": "text", **dict.fromkeys(FIGURES, "num")},
}


def check_tables(d: pathlib.Path, frames: dict) -> None:
    """Every table of frames (name: DataFrame) as the report reads it, else a UserError."""
    for name in REQUIRED:
        if not (d / f"{name}.parquet").is_file():
            raise UserError(f"{d / name}.parquet: missing: not a complete run folder (every run writes it)")
    cells = frames["cells"]
    if cells.empty:
        raise UserError(f"{d / 'cells'}.parquet: no cells: the run recorded nothing to report")
    for name, frame in frames.items():
        if not frame.empty:
            _columns(d / f"{name}.parquet", frame, MUST.get(name, {}), MAY.get(name, {}))
    _json_columns(d / "cells.parquet", cells)
    known = set(cells["cell"])
    for name, frame in frames.items():
        if name != "cells" and not frame.empty and not set(frame["cell"]) <= known:
            raise UserError(f"{d / name}.parquet: rows of cells that cells.parquet does not list: "
                            f"{sorted(set(frame['cell']) - known)[:5]}")
    ran = _total(cells, "queries_run")
    if ran and frames["queries"].empty:
        raise UserError(f"{d / 'queries'}.parquet: no queries, yet cells.parquet says {ran:,} were run")


def _columns(p: pathlib.Path, frame, must: dict, may: dict) -> None:
    import pandas as pd

    missing = [c for c in must if c not in frame.columns]
    if missing:
        raise UserError(f"{p}: no column {', '.join(missing)}: not a table tsbench wrote")
    for col, kind in {**may, **must}.items():
        if col not in frame.columns:
            continue
        values = frame[col]
        if values.isna().all():
            continue
        if kind == "num":
            ok = pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values) or \
                all(isinstance(v, (bool, int, float)) for v in values.dropna())
        else:
            ok = all(isinstance(v, str) for v in values.dropna())
        if not ok:
            raise UserError(f"{p}: column {col} holds {values.dtype} values, not "
                            f"{'numbers' if kind == 'num' else 'text'}: not a table tsbench wrote")


def _json_columns(p: pathlib.Path, cells) -> None:
    """knobs (a JSON object) and unsupported (a JSON list of names), where there."""
    for col, kind in (("knobs", dict), ("unsupported", list)):
        for v in (cells[col].dropna() if col in cells else ()):
            if not v and col == "unsupported":
                continue
            try:
                ok = isinstance(json.loads(v), kind)
            except ValueError:
                ok = False
            if not ok:
                raise UserError(f"{p}: column {col}: {v[:60]!r} is not a JSON {kind.__name__}")


def _total(cells, col: str) -> int:
    if col not in cells:
        return 0
    return int(cells[col].fillna(0).sum())


class _Host(BaseModel):
    model_config = ConfigDict(extra="allow")
    memory_bytes: float | None = None


class _Config(BaseModel):
    model_config = ConfigDict(extra="allow")
    description: str = ""


class _Manifest(BaseModel):
    """The manifest's fields the report reads."""

    model_config = ConfigDict(extra="allow")
    experiment: str
    run_id: str
    config: _Config = _Config()
    host: _Host = _Host()
    status: dict[str, int] = {}
    servers: dict[str, Any] | None = None
    harness_ceiling: dict[str, dict[str, Any]] | None = None


def check_manifest(p: pathlib.Path, manifest: Any) -> None:
    """A run's manifest as the report reads it, else a UserError naming the first wrong field."""
    if not isinstance(manifest, dict):
        raise UserError(f"{p}: not a run manifest (a JSON object)")
    try:
        _Manifest.model_validate(manifest)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"])
        raise UserError(f"{p}: not a run manifest: {where}: {e['msg']}") from None
