"""The interactive report's page (after a run; `tsbench report` and the end of `run`): one
self-contained HTML file that works offline: plotly's JavaScript inlined (no CDN), the
data model of report_model.py as JSON, and report.js (beside this module) that draws it."""

from __future__ import annotations

import html
import json
import pathlib

from tsbench.core.outfile import write_text
from tsbench.experiments import report_model
from tsbench.experiments.runread import read_run

SCRIPT = pathlib.Path(__file__).with_name("report.js")

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: .6em 0; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.caption { color: #555; font-size: 13px; max-width: 1100px; }
#filters fieldset { display: inline-block; vertical-align: top; margin: 0 .6em .6em 0; max-height: 11em;
  overflow-y: auto; font-size: 13px; }
#filters label { display: block; white-space: nowrap; }
.warn { background: #fff4e5; border: 1px solid #f0a020; padding: .5em .8em; margin: .6em 0; }
tr.warned td { background: #fffaf0; }
.badge { color: #a05a00; font-weight: bold; }
.ci { color: #666; font-size: 11px; display: block; }
.chart { width: 100%; min-height: 360px; }
.chart[data-empty] { min-height: 0; }
#correctness, #relative-table, #cells { overflow-x: auto; }
td.cm { font-size: 12px; text-align: center; min-width: 5em; }
td.cm.equal { background: #e8f5e9; color: #17672d; } td.cm.differing, td.cm.errors { background: #fdecea; color: #b00020; }
td.cm.excluded { background: #f3f3f3; color: #777; } td.cm.not-run, td.cm.not-validated { color: #999; }
select { margin: 0 .4em; }
"""


def write_report(run_dirs, out: str | pathlib.Path | None = None) -> pathlib.Path:
    """The interactive report of one run folder or several into out (default: report.html in
    the run folder, which one run alone may have)."""
    dirs = [run_dirs] if isinstance(run_dirs, (str, pathlib.Path)) else list(run_dirs)
    runs = [read_run(d) for d in dirs]
    path = pathlib.Path(out) if out else pathlib.Path(dirs[0]) / "report.html"
    write_text(path, "--output" if out else "report", page(report_model.build(runs)))
    return path


def _json(model: dict) -> str:
    """model as JSON safe inside a <script> element."""
    return json.dumps(model, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")


def page(model: dict) -> str:
    """The HTML of the report of model."""
    from plotly.offline import get_plotlyjs

    runs = model["runs"]
    if len(runs) == 1:
        r = runs[0]
        title = f"{r['experiment']} {r['run_id']}"
        h1 = f"<h1>{html.escape(r['experiment'])} <small>run {html.escape(r['run_id'])}</small></h1>"
    else:
        title = f"{len(runs)} runs"
        h1 = f"<h1>{len(runs)} runs <small>{html.escape(', '.join(r['label'] for r in runs))}</small></h1>"
    return "\n".join([
        f"<!doctype html><html><head><meta charset='utf-8'><title>tsbench: {html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body>", h1, "<div id='runs'></div>", BODY,
        f"<script>{get_plotlyjs()}</script>",
        f"<script id='tsbench-data' type='application/json'>{_json(model)}</script>",
        f"<script>{SCRIPT.read_text()}</script>", "</body></html>"])


BODY = """
<div id='warnings'></div>
<h2>Choose</h2>
<div id='filters'></div>
<h2>Cells</h2>
<p class='caption'>One row per cell (a database at one setting), from the cells table. Figures over several
trials are medians; where the run has them, the 95% confidence interval is beneath (CI) and a noisy figure or a
cell that ran on a busy machine is marked &#9888;. Efficiency: values per CPU second of the database (the
server's CPU seconds during the load; an in-process database's: the client's, marked c); bytes on disk per
value stored (disk_bytes / values); disk over raw: disk_bytes over the raw size, 8 bytes per value and per
row's timestamp (values x 8 + rows x 8, tags not counted).</p>
<div id='cells'></div>
<h2>A figure per cell</h2>
<p class='caption'>The chosen figure of the cells table per cell, with its 95% confidence interval as an error
bar where the run has one.</p>
<div><select id='figure-choice'></select></div>
<div id='figure-chart' class='chart'></div>
<h2>Query latency relative to the best</h2>
<p class='caption'>As ClickBench shows them: per query type, each cell's latency (the chosen statistic over its
ok executions, from the queries table) divided by the best shown cell's; 1 is the fastest. The last group is
the geometric mean of the ratios over the query types every shown cell ran.</p>
<div>statistic <select id='stat-choice'><option>p50</option><option>p90</option><option>p99</option>
<option>mean</option></select></div>
<div id='relative-chart' class='chart'></div>
<div id='relative-table'></div>
<h2>Latency distribution</h2>
<p class='caption'>The cumulative distribution of one query type's latencies per cell: every ok execution (many
executions: 400 quantiles of them); log scale.</p>
<div>query type <select id='cdf-choice'></select></div>
<div id='cdf-chart' class='chart'></div>
<h2>Ingest over time</h2>
<p class='caption'>Rows written per second (load table, sampled every second) and, for stream cells, rows
answered per second (stream table; each stream's last, partial second left out). Drag to zoom; the slider
below moves the window.</p>
<div id='load-chart' class='chart'></div>
<div id='stream-chart' class='chart'></div>
<h2>Streams: memory against series, query latency against write rate</h2>
<p class='caption'>For stream cells (cells table): the database's peak PSS (server_pss_peak_bytes; an
in-process database: client_pss_peak_bytes) against the distinct series written (series), and the p99 of the
queries run while writing (stream_query_p99_ms, from each query's due time) against the write rate reached
(rows_per_s); a line per database.</p>
<div id='series-chart' class='chart'></div>
<div id='rate-chart' class='chart'></div>
<h2>Database CPU and memory</h2>
<p class='caption'>Sampled every second from the server's processes (resources table; an in-process database:
the client process); 100% = one core; memory is PSS.</p>
<div id='cpu-chart' class='chart'></div>
<div id='memory-chart' class='chart'></div>
<h2>Correctness</h2>
<p class='caption'>Database x query type, from the queries table's valid column (each distinct query checked
against the reference engine) and the cells table's unsupported column: equal, differing, errors, excluded
(with the reason), not run. Hover for the detail.</p>
<div id='correctness'></div>
<p class='caption'>Every figure comes from the run folder's parquet tables and manifest.json (column names and
units: tsbench's docs, docs/results.md).</p>
"""
