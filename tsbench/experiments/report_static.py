"""The static HTML report (after a run; the fallback for notebooks and `tsbench report
--static`): one file built from the run's parquet tables and manifest alone. Plots
(matplotlib, PNG inlined): ingest rate over time per cell (load and stream); a stream's
server memory against its series and its query p99 against its write rate; rows/s and
values/s by workers x batch size per target; disk bytes per target; latency percentiles per
query type and target; server CPU and memory over time. Tables: the cells with their status
and the server's words, the validation verdicts, the manifest's host facts."""

from __future__ import annotations

import base64
import html
import io
import json
import math
import pathlib

from tsbench.core.outfile import write_text
from tsbench.experiments.runread import TABLES, _label, _settings, read_run

def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _targets(cells) -> list[str]:
    return list(dict.fromkeys(cells["target_name"]))


def _grid(n: int, width: float = 5.0, height: float = 3.2):
    import matplotlib.pyplot as plt

    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


# ---- figures: each returns (title, caption, png) or None when the run has no such data ----------------

def _lines_per_target(cells, frame, x: str, y: str, xlabel: str, ylabel: str):
    """A panel per target, a line per cell: frame's y against x (frame has a cell column)."""
    labels = {c.cell: _label(c) for c in cells.itertuples()}
    target_of = dict(zip(cells["cell"], cells["target_name"]))
    ts = [t for t in _targets(cells) if t in set(target_of[c] for c in frame["cell"].unique())]
    fig, axes = _grid(len(ts))
    for ax, t in zip(axes, ts):
        for cell, g in frame[frame["cell"].map(target_of) == t].groupby("cell"):
            ax.plot(g[x], g[y], label=labels[cell], linewidth=1.2)
        ax.set_title(t)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def fig_ingest(cells, load):
    if load.empty or "rows_per_s" not in load:
        return None
    fig = _lines_per_target(cells, load, "t", "rows_per_s", "seconds since load start", "rows/s")
    return "Ingest rate over time", "Rows written per second, sampled every second, one line per cell.", _png(fig)


def fig_throughput(cells):
    import matplotlib.pyplot as plt
    import numpy as np

    ok = cells[(cells["status"] == "ok")] if "rows_per_s" in cells else cells.iloc[0:0]
    ok = ok.dropna(subset=["rows_per_s"]) if not ok.empty else ok
    if ok.empty:
        return None
    ok = ok.assign(setting="w" + ok["workers"].astype(str) + " x b" + ok["batch_size"].astype(str))
    settings = list(dict.fromkeys(ok.sort_values(["workers", "batch_size"])["setting"]))
    ts = _targets(ok)
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.3 * len(settings) * len(ts)), 3.6))
    width = 0.8 / len(ts)
    x = np.arange(len(settings))
    for ax, col, unit in ((axes[0], "rows_per_s", "rows/s"), (axes[1], "values_per_s", "values/s")):
        for i, t in enumerate(ts):
            mean = ok[ok["target_name"] == t].groupby("setting")[col].mean()
            ax.bar(x + i * width - 0.4 + width / 2, [mean.get(s, 0) for s in settings], width, label=t)
        ax.set_xticks(x, settings, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(unit)
        ax.set_title(f"{unit} by workers x batch size")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    return ("Load throughput", "Each cell's whole-load rate (rows and values per second; the median over its load trials), "
            "the mean of the cells of one setting; "
            "w = load workers, b = batch size.", _png(fig))


def fig_disk(cells):
    import matplotlib.pyplot as plt

    if "disk_bytes" not in cells:
        return None
    d = cells.dropna(subset=["disk_bytes"])
    if d.empty:
        return None
    labels = [_label(c) for c in d.itertuples()]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(d)), 3.6))
    colors = {t: f"C{i}" for i, t in enumerate(_targets(cells))}
    x = range(len(d))
    ax.bar([i - 0.2 for i in x], d["disk_bytes"] / 1e6, 0.4, color=[colors[t] for t in d["target_name"]],
           label="data directory")
    if "disk_own_bytes" in d:
        ax.bar([i + 0.2 for i in x], d["disk_own_bytes"].fillna(0) / 1e6, 0.4, hatch="//", fill=False,
               edgecolor=[colors[t] for t in d["target_name"]], label="the database's own figure")
        ax.legend(fontsize=7)
    ax.set_xticks(list(x), labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("MB on disk")
    ax.set_title("Disk after load and compaction")
    ax.grid(axis="y", alpha=0.3)
    return ("Disk size", "After the load was verified and compacted, per cell: the allocated bytes of the whole "
            "data directory (WAL and catalogs included; solid) and the database's own figure for its data "
            "(hatched).", _png(fig))


def fig_latency(cells, queries):
    import matplotlib.pyplot as plt
    import numpy as np

    if queries.empty:
        return None
    q = queries[queries["status"] == "ok"].merge(cells[["cell", "target_name"]], on="cell")
    if q.empty:
        return None
    types = list(dict.fromkeys(q["type"]))
    ts = _targets(q)
    fig, axes = plt.subplots(3, 1, figsize=(max(10, 0.5 * len(types) * max(1, len(ts) / 2)), 11),
                             sharex=True, layout="constrained")
    width = 0.8 / len(ts)
    x = np.arange(len(types))
    for ax, p in zip(axes, (50, 90, 99)):
        for i, t in enumerate(ts):
            g = q[q["target_name"] == t].groupby("type")["latency"]
            v = g.quantile(p / 100) * 1e3
            ax.bar(x + i * width - 0.4 + width / 2, [v.get(ty, np.nan) for ty in types], width, label=t)
        ax.set_yscale("log")
        ax.set_xticks(x, types, rotation=45, ha="right", fontsize=8)
        ax.set_title(f"p{p} latency", fontsize=10)
        ax.set_ylabel("ms (log scale)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=len(ts))
    return ("Query latency", "Percentiles of each query type's latency per target, over every recorded execution "
            "of every cell (burn-in excluded). A missing bar: not run (unsupported) or only errors.", _png(fig))


def fig_resources(cells, resources):
    if resources.empty:
        return None
    labels = {c.cell: _label(c) for c in cells.itertuples()}
    srv = resources[resources["role"] == "server"]
    if srv.empty:
        srv = resources[resources["role"] == "client"]
        who = "client (in-process database)"
    else:
        who = "server"
    ts = _targets(cells)
    target_of = dict(zip(cells["cell"], cells["target_name"]))
    fig, axes = _grid(2 * len(ts), width=4.6, height=2.8) if len(ts) > 0 else (None, [])
    for k, t in enumerate(ts):
        cpu_ax, mem_ax = axes[2 * k], axes[2 * k + 1]
        sub = resources[resources["cell"].map(target_of) == t]
        role = "server" if (sub["role"] == "server").any() else "client"
        for cell, g in sub[sub["role"] == role].groupby("cell"):
            cpu_ax.plot(g["elapsed_s"], g["cpu_percent"], linewidth=1, label=labels[cell])
            mem_ax.plot(g["elapsed_s"], g["pss_bytes"] / 2**20, linewidth=1, label=labels[cell])
        cpu_ax.set_title(f"{t}: {role} CPU %", fontsize=9)
        mem_ax.set_title(f"{t}: {role} PSS MiB", fontsize=9)
        for ax in (cpu_ax, mem_ax):
            ax.set_xlabel("seconds since cell start", fontsize=8)
            ax.grid(alpha=0.3)
        cpu_ax.legend(fontsize=6)
    return ("Server CPU and memory", f"Sampled every second from the {who} processes (an in-process database is "
            "measured as the client); 100% = one core.", _png(fig))


def fig_stream(cells, stream):
    """Rows answered per second of each stream cell: the dip while series are created, the plateau."""
    if stream.empty:
        return None
    w = stream[stream["op"] == "write"].groupby(["cell", "second"], as_index=False)["rows"].sum()
    w = w[w["second"] < w.groupby("cell")["second"].transform("max")]          # the last second is partial
    fig = _lines_per_target(cells, w, "second", "rows", "second of the stream", "rows/s")
    return ("Stream: ingest rate over time", "Rows answered in each second of the stream, all writers together, "
            "one line per cell (a dip while the database creates new series, then a plateau); each stream's last, "
            "partial second left out.", _png(fig))


def _points_per_target(ok, x: str, y: str, xlabel: str, ylabel: str, logx: bool = False):
    """One axis, a line of points per target: ok's y against x (sorted by x)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
    for t in _targets(ok):
        g = ok[ok["target_name"] == t].sort_values(x)
        ax.plot(g[x], g[y], marker="o", label=t)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def fig_memory_by_series(cells):
    """Server peak PSS against the series streamed, one line per target (cardinality studies)."""
    if "series" not in cells or cells["series"].nunique() < 2:
        return None
    ok = cells[cells["status"] == "ok"]
    mem = ok["server_pss_peak_bytes"].where(ok["server_pss_peak_bytes"].notna(), ok["client_pss_peak_bytes"])
    ok = ok.assign(mem=mem / 2**20).groupby(["target_name", "series"], as_index=False, sort=False)["mem"].max()
    fig = _points_per_target(ok, "series", "mem", "series", "peak PSS MiB", logx=True)
    return ("Stream: memory against cardinality", "The server's peak PSS (an in-process database: the client's) "
            "over each ok stream cell, against the distinct series it wrote.", _png(fig))


def fig_query_p99_by_rate(cells):
    """Query p99 while writing against the write rate reached, one line per target (mixed runs)."""
    if "stream_query_p99_ms" not in cells or cells["stream_query_p99_ms"].notna().sum() < 1:
        return None
    ok = cells[(cells["status"] == "ok") & cells["stream_query_p99_ms"].notna()]
    fig = _points_per_target(ok, "rows_per_s", "stream_query_p99_ms", "write rate reached, rows/s",
                             "query p99 ms (from the due time)")
    return ("Stream: query latency while writing", "p99 of the queries run while writing (all types, latency from "
            "each query's due time) against the cell's write rate.", _png(fig))


# ---- tables ----------------------------------------------------------------------------------------

def _num(v) -> float:
    """A table value as a float; missing (None) is NaN."""
    return float("nan") if v is None else float(v)


def _fmt(v, spec=",.0f") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    try:
        return format(v, spec)
    except (TypeError, ValueError):
        return str(v)


def cells_table(cells) -> str:
    head = ["cell", "target", "settings", "status", "rows/s", "values/s", "MB/s", "disk MB", "verified",
            "server peak PSS MiB", "server peak RSS summed MiB", "client peak PSS MiB", "queries", "p50 ms", "p99 ms", "validated (non-empty)", "mismatches",
            "server's words"]
    out = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for c in cells.itertuples():
        g = lambda k: getattr(c, k, None)  # noqa: E731
        status = html.escape(str(c.status))
        out.append("<tr>" + "".join(f"<td>{x}</td>" for x in [
            c.cell, html.escape(c.target_name if c.target_name == c.target else f"{c.target_name} ({c.target})"),
            html.escape(_settings(c)),
            f"<span class='{status}'>{status}</span>", _fmt(g("rows_per_s")), _fmt(g("values_per_s")),
            _fmt(g("mb_per_s"), ",.1f"), _fmt(_num(g("disk_bytes")) / 1e6, ",.1f"),
            html.escape(str(g("verified")) if g("verified") is not None else ""),
            _fmt(_num(g("server_pss_peak_bytes")) / 2**20, ",.0f"),
            _fmt(_num(g("server_rss_sum_peak_bytes")) / 2**20, ",.0f"),
            _fmt(_num(g("client_pss_peak_bytes")) / 2**20, ",.0f"), _fmt(g("queries_run")),
            _fmt(g("query_p50_ms"), ",.2f"), _fmt(g("query_p99_ms"), ",.2f"), _validated(g),
            _fmt(g("mismatches")), html.escape(str(c.reason or ""))[:600]]) + "</tr>")
    return "\n".join(out + ["</table>"])


def _validated(g) -> str:
    """Executions validated, and of them those whose expected answer was not empty: "88 (80)"."""
    n, ne = _num(g("validated")), _num(g("validated_nonempty"))
    if math.isnan(n):
        return ""
    return f"{int(n)}" + ("" if math.isnan(ne) else f" ({int(ne)})")


def _distinct_verdicts(q):
    """One row per distinct query of a cell: valid unless one of its executions differed."""
    if q.empty:
        return q
    return q.sort_values("valid").drop_duplicates(["cell", "id"])      # False sorts first


def verdict_table(cells, queries) -> str:
    """Query type x target: distinct queries validated n/n (of them non-empty; a query is
    valid when every execution of it was), MISMATCH, errors, or unsupported."""
    unsupported: dict[str, set] = {}
    if "unsupported" in cells:
        for c in cells.itertuples():
            if isinstance(c.unsupported, str) and c.unsupported:
                unsupported.setdefault(c.target_name, set()).update(json.loads(c.unsupported))
    if queries.empty and not unsupported:
        return "<p>No queries were run.</p>"
    q = queries.merge(cells[["cell", "target_name"]], on="cell") if not queries.empty else queries
    if not q.empty and "valid" not in q:
        q = q.assign(valid=None)                 # a run of a tsbench that did not record verdicts
    ts = _targets(cells)
    types = list(dict.fromkeys(list(q["type"]) if not q.empty else [])) + sorted(
        {t for s in unsupported.values() for t in s} - set(q["type"] if not q.empty else []))
    out = ["<table><tr><th>query type</th>" + "".join(f"<th>{html.escape(t)}</th>" for t in ts) + "</tr>"]
    for ty in types:
        tds = []
        for t in ts:
            g = q[(q["type"] == ty) & (q["target_name"] == t)] if not q.empty else q
            if g.empty:
                txt, cls = ("unsupported", "unsupported") if ty in unsupported.get(t, ()) else ("", "")
            else:
                checked = _distinct_verdicts(g[g["valid"].notna()])
                errors = int((g["status"] == "error").sum())
                bad = int((checked["valid"] == False).sum())  # noqa: E712
                nonempty = int((checked["empty"] == False).sum()) if "empty" in checked else None  # noqa: E712
                shown = f"{len(checked)}" + ("" if nonempty is None else f" ({nonempty} non-empty)")
                if bad:
                    txt, cls = f"MISMATCH {bad}/{shown}", "failed"
                elif errors:
                    txt, cls = f"{errors} errors", "failed"
                elif len(checked):
                    txt, cls = f"valid {len(checked)}/{shown}", "ok"
                else:
                    txt, cls = "not validated", ""
            tds.append(f"<td class='{cls}'>{txt}</td>")
        out.append(f"<tr><td>{html.escape(ty)}</td>" + "".join(tds) + "</tr>")
    return "\n".join(out + ["</table>"])


def latency_table(cells, queries) -> str:
    """Query type x target: p50 / p99 ms and the number of recorded executions."""
    if queries.empty:
        return ""
    q = queries[queries["status"] == "ok"].merge(cells[["cell", "target_name"]], on="cell")
    if q.empty:
        return ""
    ts = _targets(q)
    g = q.groupby(["type", "target_name"])["latency"]
    p50, p99, n = g.quantile(0.5) * 1e3, g.quantile(0.99) * 1e3, g.size()
    client = set(q[q["client_s"].notna()].groupby(["type", "target_name"]).groups) if "client_s" in q else set()
    out = ["<table><tr><th>query type</th>" + "".join(f"<th>{html.escape(t)}<br>p50 / p99 ms (n)</th>" for t in ts)
           + "</tr>"]
    for ty in dict.fromkeys(q["type"]):
        tds = "".join(f"<td>{_fmt(p50[ty, t], ',.2f')} / {_fmt(p99[ty, t], ',.2f')} ({n[ty, t]})"
                      f"{' *' if (ty, t) in client else ''}</td>"
                      if (ty, t) in n.index else "<td></td>" for t in ts)
        out.append(f"<tr><td>{html.escape(ty)}</td>{tds}</tr>")
    note = ("<p class='caption'>* the target computes this answer on the client from what the server sends; "
            "that work (the queries table's client_s) is inside the latency.</p>") if client else ""
    return "\n".join(out + ["</table>", note])


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.ok { color: #17672d; } td.ok { background: #e8f5e9; }
.failed { color: #b00020; font-weight: bold; } td.failed { background: #fdecea; }
.interrupted { color: #a05a00; font-weight: bold; }
td.unsupported { color: #777; background: #f7f7f7; }
img { max-width: 100%; border: 1px solid #eee; }
.caption { color: #555; font-size: 13px; }
code { background: #f6f6f6; padding: 1px 4px; }
"""


def render(run_dir: str | pathlib.Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    frames, m = read_run(run_dir)
    cells, load, queries, resources, stream = (frames[k] for k in TABLES)
    host = m.get("host", {})
    st = m.get("status", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>tsbench: {html.escape(m['experiment'])} "
             f"{html.escape(m['run_id'])}</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(m['experiment'])} <small>run {html.escape(m['run_id'])}</small></h1>",
             f"<p>{html.escape(m.get('config', {}).get('description', ''))}</p>",
             f"<p>{m.get('cells', 0)} cells: " + ", ".join(
                 f"<span class='{k}'>{st.get(k, 0)} {k}</span>" if st.get(k) else f"0 {k}"
                 for k in ("ok", "failed", "interrupted")) + ". "
             f"Host: {html.escape(str(host.get('cpu_model', '')))}, {host.get('cores')} cores, "
             f"{_fmt((host.get('memory_bytes') or 0) / 2**30, '.1f')} GiB, kernel {html.escape(str(host.get('kernel')))}."
             f" tsbench {html.escape(str(m.get('tsbench')))} ({html.escape(str(m.get('git_revision') or 'no git')[:12])}).</p>"]
    servers = m.get("servers") or {}
    if servers:
        parts.append("<p>Servers: " + ", ".join(f"{html.escape(k)} {html.escape(str(v))}"
                                               for k, v in servers.items()) + ".</p>")
    ceil = m.get("harness_ceiling") or {}
    if ceil:
        parts.append("<p>Harness ceiling (the same file into the null target): " + "; ".join(
            f"{html.escape(k)}: {_fmt(v.get('rows_per_s'))} rows/s" for k, v in ceil.items()) + ".</p>")
    parts += ["<h2>Cells</h2>", cells_table(cells) if not cells.empty else "<p>No cells.</p>"]
    if not cells.empty:
        for fig in (fig_ingest(cells, load), fig_stream(cells, stream), fig_memory_by_series(cells),
                    fig_query_p99_by_rate(cells), fig_throughput(cells) if stream.empty else None, fig_disk(cells)):
            if fig:
                parts += [f"<h2>{fig[0]}</h2><p class='caption'>{fig[1]}</p>", f"<img src='data:image/png;base64,{fig[2]}'>"]
        parts += ["<h2>Validation verdicts</h2><p class='caption'>Each distinct query checked against the reference "
                  "engine run on the same data (per query type and target, over all cells).</p>",
                  verdict_table(cells, queries)]
        for fig in (fig_latency(cells, queries), fig_resources(cells, resources)):
            if fig:
                parts += [f"<h2>{fig[0]}</h2><p class='caption'>{fig[1]}</p>", f"<img src='data:image/png;base64,{fig[2]}'>"]
                if fig[0] == "Query latency":
                    parts.append(latency_table(cells, queries))
    parts.append("<h2>Tables</h2><p class='caption'>In this folder: " + ", ".join(
        f"<code>{t}.parquet</code>" for t in TABLES) + " and <code>manifest.json</code>; "
        "column names and units are in tsbench's docs (docs/results.md).</p></body></html>")
    return "\n".join(parts)


def write_static(run_dir: str | pathlib.Path, out: str | pathlib.Path | None = None) -> pathlib.Path:
    """The static report of run_dir into out (default: report.html in the run folder)."""
    path = pathlib.Path(out) if out else pathlib.Path(run_dir) / "report.html"
    write_text(path, "--output" if out else "report", render(run_dir))
    return path
