"""The interactive report's data model (after a run): one JSON-able dict built from the
parquet tables and manifests of one or more run folders (runread.py), which the page's
script (report.js) only filters, divides and draws. Every figure is a column of a table
or computed here from them with pandas: per cell its figures (with the confidence
intervals, noisy and busy columns where the run has them) and efficiency; per cell and
query type the latency percentiles and points of the CDF; per run, database and query
type the correctness verdict; per cell the per-second load, stream and resource series."""

from __future__ import annotations

import json
import math

# the cells table's figure columns the report shows (stats.FIGURES and a few more), with units
EXTRA_FIGURES = {"qps": "queries/s", "queries_run": "queries", "stream_p99_ms": "ms", "stream_query_p99_ms": "ms",
                 "series": "series", "server_pss_peak_bytes": "bytes", "client_pss_peak_bytes": "bytes"}
MACHINE = ("load_avg", "loadavg", "steal", "other_cpu", "other_proc")   # words of machine-noise columns (issue 38, item 6)
CDF_POINTS = 400            # a CDF of more executions is drawn through this many of its quantiles
RAW_BYTES_PER_VALUE = 8     # "raw": each value and each row's timestamp as a 64-bit number, tags not counted


def figures() -> dict[str, str]:
    """{figure column: unit} of the cells table."""
    from tsbench.experiments.stats import FIGURES

    return {**{k: unit for k, (_phases, unit) in FIGURES.items()}, **EXTRA_FIGURES}


def _clean(v):
    """A table value as JSON: NaN, infinities and NA as None, numpy scalars as Python's."""
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):       # NaN (missing), or a rate over no time
        return None
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:
        pass
    return v


def build(runs: list[tuple[dict, dict]]) -> dict:
    """The model of runs, each (frames, manifest) as runread.read_run gives them."""
    out: dict = {"runs": [], "cells": [], "latency": [], "correctness": [], "series": [],
                 "figures": figures(), "raw_bytes_per_value": RAW_BYTES_PER_VALUE}
    for i, (frames, manifest) in enumerate(runs):
        out["runs"].append(_run(i, manifest))
        same = sum(r["label"] == out["runs"][-1]["label"] for r in out["runs"])
        if same > 1:                      # the same run twice (or a copy of it): told apart by its place
            out["runs"][-1]["label"] += f" ({same})"
        out["cells"] += _cells(i, frames["cells"], manifest)
        out["latency"] += _latency(i, frames["queries"])
        out["correctness"] += _correctness(i, frames["cells"], frames["queries"])
        out["series"] += _series(i, frames)
    return out


def _run(i: int, m: dict) -> dict:
    host = m.get("host") or {}
    return {"run": i, "label": f"{m['experiment']}/{m['run_id']}", "experiment": m["experiment"],
            "run_id": m["run_id"], "description": (m.get("config") or {}).get("description", ""),
            "host": {k: host.get(k) for k in ("cpu_model", "cores", "memory_bytes", "kernel")},
            "servers": m.get("servers") or {}, "status": m.get("status") or {},
            "git_revision": m.get("git_revision"), "tsbench": m.get("tsbench"),
            "datasets": {k: {"rows": v.get("rows"), "values": v.get("values")}
                         for k, v in (m.get("datasets") or {}).items() if isinstance(v, dict)}}


def _cells(i: int, cells, manifest: dict) -> list[dict]:
    figs = figures()
    noise = [c for c in cells.columns if any(w in c for w in MACHINE)]
    rows = []
    for c in cells.to_dict("records"):
        row = {"key": f"{i}:{c['cell']}", "run": i, "cell": int(c["cell"]), "target": c["target_name"],
               "kind": c["target"], "settings": c.get("settings") or "", "status": c["status"],
               "reason": _clean(c.get("reason")) or "", "dataset": c.get("dataset")}
        for f in figs:
            row[f] = _clean(c.get(f))
            if f"{f}_ci_low" in c:
                row[f"{f}_ci"] = [_clean(c[f"{f}_ci_low"]), _clean(c.get(f"{f}_ci_high"))]
            if f"{f}_cv" in c:
                row[f"{f}_cv"] = _clean(c[f"{f}_cv"])
        for flag in ("noisy", "busy"):
            row[flag] = bool(_clean(c.get(flag)) or False)
            row[f"{flag}_reason"] = _clean(c.get(f"{flag}_reason")) or ""
        row["machine"] = {k: _clean(c[k]) for k in noise}
        row.update(_efficiency(c, manifest))
        rows.append(row)
    return rows


def _efficiency(c: dict, manifest: dict) -> dict:
    """Values per CPU second of the database, bytes on disk per value, disk over raw size."""
    ds = (manifest.get("datasets") or {}).get(c.get("dataset")) or {}
    values = _clean(c.get("values")) or ds.get("values")
    rows = _clean(c.get("rows")) or ds.get("rows")
    cpu, role = _clean(c.get("server_cpu_s")), "server"
    if cpu is None:
        cpu, role = _clean(c.get("client_cpu_s")), "client"       # an in-process database: the client's
    disk = _clean(c.get("disk_bytes"))
    raw = RAW_BYTES_PER_VALUE * (values + rows) if values and rows else None
    return {"values": values, "rows": rows, "cpu_s": cpu, "cpu_role": role if cpu is not None else None,
            "values_per_cpu_s": values / cpu if values and cpu else None,
            "bytes_per_value": disk / values if disk is not None and values else None,
            "raw_bytes": raw, "disk_to_raw": disk / raw if disk is not None and raw else None,
            "file_bytes": _clean(c.get("bytes"))}


def _latency(i: int, queries) -> list[dict]:
    """Per cell and query type, of its ok executions: n, p50, p90, p99, mean (ms) and CDF points."""
    if queries.empty:
        return []
    ok = queries[queries["status"] == "ok"]
    out = []
    for (cell, qtype), g in ok.groupby(["cell", "type"], sort=False):
        ms = g["latency"].astype(float) * 1e3
        q = ms.quantile([0.5, 0.9, 0.99])
        out.append({"key": f"{i}:{cell}", "run": i, "cell": int(cell), "type": qtype, "n": int(len(ms)),
                    "p50": float(q[0.5]), "p90": float(q[0.9]), "p99": float(q[0.99]), "mean": float(ms.mean()),
                    "cdf": _cdf(ms)})
    return out


def _cdf(ms) -> list[list[float]]:
    """[[ms, fraction at or below], ...]: every execution, or CDF_POINTS quantiles of many."""
    import numpy as np

    v = np.sort(ms.to_numpy())
    if len(v) > CDF_POINTS:
        fr = np.linspace(1 / CDF_POINTS, 1, CDF_POINTS)
        return [[float(x), float(f)] for x, f in zip(np.quantile(v, fr), fr)]
    return [[float(x), (k + 1) / len(v)] for k, x in enumerate(v)]


def _unsupported(cells) -> dict[str, set]:
    out: dict[str, set] = {}
    if "unsupported" in cells:
        for c in cells.itertuples():
            if isinstance(c.unsupported, str) and c.unsupported:
                out.setdefault(c.target_name, set()).update(json.loads(c.unsupported))
    return out


def _why(kind: str) -> dict[str, str]:
    """Why this tsbench's dialect of kind runs no form of some query types (the support matrix)."""
    try:
        from tsbench.databases.shared.support import support_matrix

        return support_matrix().reasons(kind)
    except Exception:            # a kind this tsbench does not know: the reason is left out
        return {}


def _correctness(i: int, cells, queries) -> list[dict]:
    """One verdict per database (target name) and query type of run i: equal (every validated
    execution matched the reference), differing, errors, excluded (unsupported), not validated
    or not run."""
    unsupported = _unsupported(cells)
    q = queries.merge(cells[["cell", "target_name"]], on="cell") if not queries.empty else queries
    types = list(dict.fromkeys(list(q["type"]) if not q.empty else []))
    types += sorted({t for s in unsupported.values() for t in s} - set(types))
    kinds = dict(zip(cells["target_name"], cells["target"]))
    out = []
    for target in dict.fromkeys(cells["target_name"]):
        why = _why(kinds[target]) if unsupported.get(target) else {}
        mine = q[q["target_name"] == target] if not q.empty else q
        for qtype in types:
            g = mine[mine["type"] == qtype] if not mine.empty else mine
            out.append({"run": i, "target": target, "type": qtype,
                        **_verdict(g, qtype in unsupported.get(target, ()), why.get(qtype))})
    return out


def _verdict(g, unsupported: bool, why: str | None) -> dict:
    if g.empty:
        if unsupported:
            return {"state": "excluded", "detail": "excluded: unsupported by this database (cells.unsupported)"
                    + (f": {why}" if why else "")}
        return {"state": "not run", "detail": "no execution recorded"}
    errors = int((g["status"] == "error").sum())
    checked = g[g["valid"].notna()] if "valid" in g else g.iloc[0:0]
    distinct = checked.sort_values("valid").drop_duplicates(["cell", "id"]) if "id" in checked else checked
    bad = int((distinct["valid"] == False).sum())  # noqa: E712
    n = len(distinct)
    if bad:
        return {"state": "differing", "detail": f"{bad} of {n} distinct queries differ from the reference answer",
                "bad": bad, "n": n}
    if errors:
        first = g[g["status"] == "error"]["error"].iloc[0] if "error" in g else ""
        return {"state": "errors", "detail": f"{errors} executions failed: {str(first)[:200]}", "n": n}
    if n:
        return {"state": "equal", "detail": f"{n} distinct queries equal to the reference answer", "n": n}
    return {"state": "not validated", "detail": "executions recorded, none validated"}


def _series(i: int, frames: dict) -> list[dict]:
    """Per-second series of each cell (and trial): load rows/s, stream rows/s, the database's CPU
    and memory."""
    out = []
    load, stream, res = frames["load"], frames["stream"], frames["resources"]
    if not load.empty and "rows_per_s" in load:
        out += _lines(i, "load", load, "t", "rows_per_s")
    if not stream.empty:
        w = stream[stream["op"] == "write"]
        keys = ["cell", "trial"] if "trial" in w else ["cell"]
        w = w.groupby(keys + ["second"], as_index=False)["rows"].sum()
        w = w[w["second"] < w.groupby(keys)["second"].transform("max")]       # the last second is partial
        out += _lines(i, "stream", w, "second", "rows")
    if not res.empty:
        has_server = set(res.loc[res["role"] == "server", "cell"])
        mine = res[(res["role"] == "server") | ~res["cell"].isin(has_server)]
        mine = mine.assign(pss_mib=mine["pss_bytes"] / 2**20)
        out += _lines(i, "cpu", mine, "elapsed_s", "cpu_percent", role=True)
        out += _lines(i, "memory", mine, "elapsed_s", "pss_mib", role=True)
    return out


def _lines(i: int, kind: str, frame, x: str, y: str, role: bool = False) -> list[dict]:
    keys = ["cell", "trial"] if "trial" in frame and frame["trial"].nunique() > 1 else ["cell"]
    out = []
    for k, g in frame.groupby(keys, sort=True):
        k = k if isinstance(k, tuple) else (k,)
        g = g.sort_values(x)
        out.append({"key": f"{i}:{k[0]}", "kind": kind, "trial": _clean(k[1]) if len(k) > 1 else None,
                    "role": g["role"].iloc[0] if role else None,
                    "x": [round(float(v), 3) for v in g[x]], "y": [_clean(float(v)) for v in g[y]]})
    return out
