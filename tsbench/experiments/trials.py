"""Trials (the load, execute and stream phases): a phase run N times (`repeat: N` in an
experiment file, `--repeat N` on the commands), what `run` (runner.py) and the `load`,
`execute` and `stream` commands share. A load or stream trial starts from an empty
database: a new session.open_target (a fresh local server; by URL the tables the trial
before left are dropped: if_exists drop); an execute trial is a new measured pass over the
same queries on the same database. Each trial's figures are a row of the `trials` table
under the cells table's column names (load_columns, query_columns, stream_columns); the
commands print each trial's main figure and the median (summary_lines)."""

from __future__ import annotations

import dataclasses
import json
import statistics

# each phase's main figure: (column, unit), the one the commands print per trial
MAIN = {"load": ("rows_per_s", "rows/s"), "stream": ("rows_per_s", "rows/s"), "execute": ("query_p50_ms", "ms p50")}


def label(phase: str, trial: int, n: int) -> str:
    """"load trial 2/3" (trial 0-based, as in the tables; the label counts from 1)."""
    return f"{phase} trial {trial + 1}/{n}"


def fresh(reach, trial: int, n: int):
    """A load or stream trial's session.Reach: a local server started anew each trial,
    left running (--keep-server) after the last only."""
    return dataclasses.replace(reach, keep_server=reach.keep_server and trial == n - 1)


def if_exists(reach, trial: int, given: str) -> str:
    """A write trial's if_exists: the given one, but by URL after the first trial drop (the
    tables the trial before left; a fresh local server has none)."""
    from tsbench.databases import is_local

    return given if trial == 0 or is_local(reach.server) else "drop"


async def each(phase: str, n: int, one) -> None:
    """A command's trials: await one(trial) for each in turn; an error stops them, its
    line naming the trial when there are several (the runner names it in the cell's reason)."""
    from tsbench.core.errors import UserError

    for k in range(n):
        try:
            await one(k)
        except UserError as exc:
            if n == 1:
                raise
            raise UserError(f"{label(phase, k, n)}: {exc}") from exc


def trial_row(phase: str, trial: int, figures: dict, status: str = "ok", reason: str = "") -> dict:
    """A row of the `trials` table (the runner adds the cell)."""
    return {"phase": phase, "trial": trial, **figures, "status": status, "reason": reason}


def execute_row(trial: int, er) -> dict:
    """An execute trial's row (an ExecResult): failed when a query failed or an answer differs."""
    why = query_failure(er)
    return trial_row("execute", trial, query_columns(er), "failed" if why else "ok", why or "")


def summary_lines(rows: list[dict]) -> list[str]:
    """Each trial's main figure and, over the ok trials, the median: what the commands
    print after the last trial's summary when there is more than one."""
    phase = rows[0]["phase"]
    col, unit = MAIN[phase]
    fmt = "{:,.2f}" if unit.startswith("ms") else "{:,.0f}"
    lines = [f"  {label(phase, r['trial'], len(rows))}: "
             + (f"{fmt.format(r[col])} {unit}" if r.get(col) is not None else "-")
             + ("" if r["status"] == "ok" else f" ({r['status']}: {r['reason']})") for r in rows]
    got = [r[col] for r in rows if r["status"] == "ok" and r.get(col) is not None]
    if got:
        lines.append(f"  median over {len(got)} trials: {fmt.format(statistics.median(got))} {unit}")
    return lines


def load_columns(res) -> dict:
    """A finished load's figures (a LoadResult): the trials table's and the cells table's columns."""
    return {"rows": res.rows, "values": res.values, "bytes": res.bytes, "load_seconds": round(res.seconds, 3),
            "rows_per_s": res.rate(res.rows), "values_per_s": res.rate(res.values),
            "mb_per_s": round(res.bytes / res.seconds / 1e6, 2) if res.seconds else None,
            "client_cpu_s": round(res.client_cpu_seconds, 3),
            "server_cpu_s": None if res.server_cpu_seconds is None else round(res.server_cpu_seconds, 3),
            "backoffs": res.backoffs, "backoff_seconds": round(res.backoff_seconds, 3),
            "compact_seconds": None if res.compact_seconds is None else round(res.compact_seconds, 3),
            "verified": res.verified, "counted": res.counted, "expected": res.expected,
            "disk": json.dumps(res.disk, sort_keys=True), "disk_bytes": res.datadir_bytes,
            "disk_own_bytes": res.own_disk_bytes, **client_columns(res)}


def client_columns(res) -> dict:
    """clients: the client slots (Dask workers) that loaded, 1 without --cluster;
    client_hosts: their host names, comma-separated."""
    s = res.summary()
    return {"clients": s["clients"], "client_hosts": ",".join(s["client_hosts"])}


def query_columns(er) -> dict:
    """A finished execute's figures (an ExecResult, with validation): distinct queries
    validated, of them non-empty, mismatched; and the executions, each checked on its own;
    latency percentiles and mean over every measured query, in ms."""
    allst = er.stats()[-1]
    return {"execute_seconds": round(er.seconds, 3), "queries_run": len(er.records),
            "query_errors": allst["errors"], "mismatches": allst["mismatches"], "validated": allst["validated"],
            "validated_nonempty": allst["validated_nonempty"],
            "executions_validated": allst["executions_validated"],
            "executions_mismatched": allst["executions_mismatched"],
            "unsupported": json.dumps(er.unsupported), "cache": er.cache, "query_p50_ms": allst.get("p50_ms"),
            "query_p90_ms": allst.get("p90_ms"), "query_p99_ms": allst.get("p99_ms"),
            "query_mean_ms": allst.get("mean_ms"), "qps": allst.get("qps"),
            "client_work_types": json.dumps(sorted({r["type"] for r in er.records if r["client_s"] is not None}))}


def query_failure(er) -> str | None:
    """Why an execute trial failed (a query's error, an answer differing from the reference), else None."""
    errors = [r["error"] for r in er.records if r["status"] != "ok"]
    if errors:
        return f"{len(errors)} of {len(er.records)} queries failed; first: {errors[0]}"
    bad = [v for v in er.validation if not v["ok"]]
    if bad:
        return (f"{len(bad)} answers differ from the reference ({er.stats()[-1]['executions_mismatched']} "
                f"executions): " + bad[0]["diff"].splitlines()[0])
    return None


def stream_columns(ds, res) -> dict:
    """A stream's figures (StreamResult.summary's, flat): the trials and cells tables' columns."""
    s = res.summary()
    hosts = {"clients": s["clients"], "client_hosts": ",".join(s["client_hosts"])}
    lat, q, f = s["latency_ms"], s["queries"], s["freshness"]
    return {"series": ds.entities * len(ds.schema.series), "stream_seconds": s["seconds"],
            "stream_rows": s["rows"], "stream_values": s["values"], "rows_per_s": s["rows_per_s"],
            "stream_series_created": sum(r["series_created"] for r in res.table),
            "values_per_s": s["values_per_s"], "stream_errors": s["errors"], "stream_backoffs": s["backoffs"],
            "stream_p50_ms": lat.get("p50"), "stream_p99_ms": lat.get("p99"), "stream_max_ms": lat.get("max"),
            "client_cpu_s": s["client_cpu_seconds"], "server_cpu_s": s["server_cpu_seconds"],
            "verified": s["verify"]["ok"], "counted": s["verify"]["counted"], "expected": s["verify"]["expected"],
            "stream_query_pace": q.get("pace"), "stream_queries": q.get("count"),
            "stream_query_errors": q.get("errors"),
            "stream_query_p50_ms": q.get("latency_ms", {}).get("p50"),
            "stream_query_p99_ms": q.get("latency_ms", {}).get("p99"),
            "freshness_p50_ms": f.get("latency_ms", {}).get("p50"), "freshness_p99_ms": f.get("latency_ms", {}).get("p99"),
            "freshness_unseen": f.get("unseen"), **hosts}
