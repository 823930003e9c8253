"""The report of a run (after a run): `write_report` writes the interactive page
(report_page.py, from the data model of report_model.py), `text_summary` the cells as
plain text. The run folder is read by runread.py; the static PNG page, the fallback for
notebooks, is report_static.py. This module keeps the names others import."""

from __future__ import annotations

import math
import pathlib

from tsbench.experiments.report_static import _fmt, _num, latency_table, render, write_static  # noqa: F401
from tsbench.experiments.runread import TABLES, _settings, read_run  # noqa: F401


def text_summary(run_dir: str | pathlib.Path) -> str:
    """The cells as a plain-text table (printed after `run` and by `report`): each figure the
    median over trials with its 95% interval as +-% of it (the wider side), * where noisy
    (the reasons under the cell); PSS is the server's peak."""
    frames, _ = read_run(run_dir)
    cells = frames["cells"]
    sw = max([8] + [len(_settings(c)) for c in cells.itertuples()])
    tw = max([6] + [len(str(c.target_name)) for c in cells.itertuples()])
    head = f"{'cell':>4} {'target':<{tw}} {'settings':<{sw}} {'status':<11} {'rows/s':>16} {'values/s':>18} " \
           f"{'disk MB':>8} {'PSS MiB':>8} {'p50 ms':>14} {'p99 ms':>14} {'valid (non-empty)':>17}"
    out = [head]
    for c in cells.itertuples():
        g = lambda k: getattr(c, k, None)  # noqa: E731
        valid = ""
        if g("validated") is not None and not math.isnan(_num(g("validated"))):
            bad, ne = _num(g("mismatches")), _num(g("validated_nonempty"))
            valid = f"{int(g('validated')) - (0 if math.isnan(bad) else int(bad))}/{int(g('validated'))}" + \
                ("" if math.isnan(ne) else f" ({int(ne)})")
        out.append(f"{c.cell:>4} {str(c.target_name):<{tw}} {_settings(c):<{sw}} {c.status:<11} "
                   f"{_with_interval(g, 'rows_per_s'):>16} {_with_interval(g, 'values_per_s'):>18} "
                   f"{_fmt(_num(g('disk_bytes')) / 1e6, ',.1f'):>8} "
                   f"{_fmt(_num(g('server_pss_peak_bytes')) / 2**20, ',.0f'):>8} "
                   f"{_with_interval(g, 'query_p50_ms', ',.2f'):>14} "
                   f"{_with_interval(g, 'query_p99_ms', ',.2f'):>14} {valid:>17}")
        if c.status != "ok":
            out.append(f"{'':>4} {c.status}: {str(c.reason)[:300]}")
        if isinstance(g("noisy_reason"), str) and g("noisy_reason"):
            out.append(f"{'':>4} noisy: {g('noisy_reason')[:600]}")
    if any(isinstance(n, str) and n for n in cells.get("noisy", ())):
        out.append("* noisy: its 95% interval reaches further than 10% of the median from it")
    return "\n".join(out)


def _with_interval(g, fig: str, spec: str = ",.0f") -> str:
    """A cell's figure as "12,345 +-4%": the median over trials and the wider side of its
    95% interval as a share of it; * when noisy; the median alone where there is no interval."""
    v = _num(g(fig))
    text = _fmt(v, spec)
    lo, hi = _num(g(f"{fig}_ci_low")), _num(g(f"{fig}_ci_high"))
    if text and v and not (math.isnan(lo) or math.isnan(hi)):
        text += f" +-{max(v - lo, hi - v) / abs(v):.0%}"
    noisy = g("noisy")
    if text and isinstance(noisy, str) and fig in noisy.split(","):
        text += "*"
    return text


def write_report(run_dir, out: str | pathlib.Path | None = None) -> pathlib.Path:
    """The interactive report of a run folder (or of a list of them) into out (default:
    report.html in the run folder); report_page.py."""
    from tsbench.experiments.report_page import write_report as write_page

    return write_page(run_dir, out)
