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
    """The cells as a plain-text table (printed after `run` and by `report`); PSS is the
    server's peak."""
    frames, _ = read_run(run_dir)
    cells = frames["cells"]
    sw = max([8] + [len(_settings(c)) for c in cells.itertuples()])
    tw = max([6] + [len(str(c.target_name)) for c in cells.itertuples()])
    head = f"{'cell':>4} {'target':<{tw}} {'settings':<{sw}} {'status':<11} {'rows/s':>10} {'values/s':>12} " \
           f"{'disk MB':>8} {'PSS MiB':>8} {'p50 ms':>8} {'p99 ms':>8} {'valid (non-empty)':>17}"
    out = [head]
    for c in cells.itertuples():
        g = lambda k: getattr(c, k, None)  # noqa: E731
        valid = ""
        if g("validated") is not None and not math.isnan(_num(g("validated"))):
            bad, ne = _num(g("mismatches")), _num(g("validated_nonempty"))
            valid = f"{int(g('validated')) - (0 if math.isnan(bad) else int(bad))}/{int(g('validated'))}" + \
                ("" if math.isnan(ne) else f" ({int(ne)})")
        out.append(f"{c.cell:>4} {str(c.target_name):<{tw}} {_settings(c):<{sw}} {c.status:<11} "
                   f"{_fmt(g('rows_per_s')):>10} {_fmt(g('values_per_s')):>12} "
                   f"{_fmt(_num(g('disk_bytes')) / 1e6, ',.1f'):>8} "
                   f"{_fmt(_num(g('server_pss_peak_bytes')) / 2**20, ',.0f'):>8} {_fmt(g('query_p50_ms'), ',.2f'):>8} "
                   f"{_fmt(g('query_p99_ms'), ',.2f'):>8} {valid:>17}")
        if c.status != "ok":
            out.append(f"{'':>4} {c.status}: {str(c.reason)[:300]}")
    return "\n".join(out)


def write_report(run_dir, out: str | pathlib.Path | None = None) -> pathlib.Path:
    """The interactive report of a run folder (or of a list of them) into out (default:
    report.html in the run folder); report_page.py."""
    from tsbench.experiments.report_page import write_report as write_page

    return write_page(run_dir, out)
