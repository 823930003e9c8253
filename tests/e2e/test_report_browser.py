"""The interactive report in a real browser (issue 38, items 4 and 5): Debian's headless
chromium driven by Playwright opens the report of a small DuckDB run (two load settings, two
query types; a copy of it given confidence intervals, a busy and a noisy cell and an
unsupported type, as the statistics and machine-noise columns give them; two load trials and
a stream's seconds) and of two runs on
one page: no console error and no request off the file; a filter changes the rows and bars;
every chart has drawn marks; the correctness matrix has one cell per database and query type
with the verdict the tables give; the numbers shown equal those computed here with pandas from
the parquet tables; a screenshot is saved (its path printed)."""

from __future__ import annotations

import json
import math
import pathlib
import re
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.report_shot import launch, open_report

END = "2016-01-01T00:20:00Z"
TYPES = ["max-cpu-1", "lastpoint"]
# plotly's marks: bars, line paths, points
MARKS = ".barlayer .point path, .scatterlayer path.js-line, .scatterlayer .point"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> pathlib.Path:
    """A real run folder: DuckDB at load.workers 1 and 2, queries in both cells."""
    from tsbench.experiments.experiment import load_experiment
    from tsbench.experiments.runner import Runner

    d = tmp_path_factory.mktemp("report-browser")
    (d / "exp.yaml").write_text(
        f"name: rb\ndatasets:\n  d: {{scale: 2, end: \"{END}\"}}\ntargets:\n  duck: {{target: duckdb}}\n"
        f"queries: {{types: [{', '.join(TYPES)}], count: 3}}\n"
        "matrix: {load.workers: [1, 2]}\n")
    return Runner(load_experiment(str(d / "exp.yaml")), d / "results", quiet=True).run()


@pytest.fixture(scope="module")
def noisy_run(run_dir, tmp_path_factory) -> pathlib.Path:
    """run_dir with the columns of issue 38's statistics and machine noise: intervals around
    rows/s, cell 0 noisy (the noisy figures' names, as text), cell 1 busy; and high-cpu-1 unsupported by the database."""
    d = shutil.copytree(run_dir, tmp_path_factory.mktemp("noisy") / "run")
    cells = pq.read_table(d / "cells.parquet").to_pandas()
    cells = cells.assign(rows_per_s_ci_low=cells["rows_per_s"] * 0.9, rows_per_s_ci_high=cells["rows_per_s"] * 1.2,
                         rows_per_s_cv=0.05, noisy=["rows_per_s", ""], noisy_reason=["rows_per_s: CI +-15%", ""],
                         busy=[False, True], busy_reason=["", "load average 3.5 before the cell"],
                         load_avg_before=[0.2, 3.5], unsupported='["high-cpu-1"]',
                         series=[18, 36], stream_query_p99_ms=[5.0, 7.5])
    pq.write_table(pa.Table.from_pandas(cells, preserve_index=False), d / "cells.parquet")
    load = pq.read_table(d / "load.parquet").to_pandas()            # a second load trial of each cell
    load = pd.concat([load.assign(trial=0), load.assign(trial=1, rows_per_s=load["rows_per_s"] * 1.1)])
    pq.write_table(pa.Table.from_pandas(load, preserve_index=False), d / "load.parquet")
    seconds = pd.DataFrame({"cell": [0] * 4 + [1] * 4, "op": "write", "second": [0, 1, 2, 3] * 2,
                            "rows": [700, 720, 710, 300, 1400, 1440, 1430, 500]})   # as a stream's seconds
    pq.write_table(pa.Table.from_pandas(seconds, preserve_index=False), d / "stream.parquet")
    return d


@pytest.fixture(scope="module")
def browser(noisy_run):
    """One chromium for the module, started after the runs (Playwright's loop would be theirs)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _report(run_dirs, out: pathlib.Path) -> pathlib.Path:
    from tsbench.experiments.report import write_report

    return write_report(run_dirs, out)


def _open(browser, path: pathlib.Path):
    """The report's page; its console errors, page errors and requests off the file recorded."""
    errors, requests = [], []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    return page, errors, requests


def _tables(d: pathlib.Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pq.read_table(d / "cells.parquet").to_pandas(), pq.read_table(d / "queries.parquet").to_pandas()


def _marks(page) -> dict[str, int]:
    """Per plotly chart on the page: its drawn marks."""
    return page.evaluate("""(sel) => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')].map(
        (el) => [el.id, [...el.querySelectorAll(sel)].filter((p) => (p.getAttribute('d') || 'x') !== 'M0,0Z'
        && !(p.getAttribute('d') || 'x').startsWith('M0,0')).length]))""", MARKS)


def test_the_report_draws_every_chart_offline_without_an_error(browser, noisy_run, tmp_path):
    page, errors, requests = _open(browser, _report(noisy_run, tmp_path / "r.html"))
    marks = _marks(page)
    assert set(marks) == {"figure-chart", "relative-chart", "cdf-chart", "load-chart", "stream-chart", "series-chart",
                          "rate-chart", "cpu-chart", "memory-chart"}
    assert all(n > 0 for n in marks.values()), marks
    stream = page.evaluate("document.getElementById('stream-chart').data.map(t => [t.x, t.y])")
    assert stream == [[[0, 1, 2], [700, 720, 710]], [[0, 1, 2], [1400, 1440, 1430]]]   # the partial last second left out
    lines = page.evaluate("document.getElementById('load-chart').data.map(t => t.name)")
    assert lines == [f"duck workers={w} trial {t}" for w in (1, 2) for t in (0, 1)]
    assert not errors and not requests, (errors, requests)
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()


def test_a_filter_changes_the_rows_and_bars(browser, noisy_run, tmp_path):
    page, errors, _ = _open(browser, _report(noisy_run, tmp_path / "r.html"))
    rows = lambda: page.eval_on_selector_all("#cells-table tbody tr", "rs => rs.map(r => r.dataset.key)")  # noqa: E731
    bars = lambda: page.evaluate("document.getElementById('relative-chart').data.map(t => t.name)")  # noqa: E731
    assert rows() == ["0:0", "0:1"] and bars() == ["duck workers=1", "duck workers=2"]
    page.uncheck("input[data-filter='settings'][value='workers=1']")
    assert rows() == ["0:1"] and bars() == ["duck workers=2"]
    assert page.locator("#relative-chart .barlayer .point path").count() == len(TYPES) + 1   # and the geometric mean
    page.uncheck("input[data-filter='type'][value='lastpoint']")
    assert page.evaluate("document.getElementById('relative-chart').data[0].x") == ["max-cpu-1", "geometric mean"]
    assert page.locator("#correctness-table td.cm").count() == 2        # max-cpu-1 and the unsupported type
    assert not errors, errors
    page.close()


def test_the_correctness_matrix_has_a_cell_per_database_and_type(browser, run_dir, noisy_run, tmp_path):
    page, errors, _ = _open(browser, _report([run_dir, noisy_run], tmp_path / "two.html"))
    got = page.eval_on_selector_all("#correctness-table td.cm", "ts => ts.map(t => [t.dataset.db, t.dataset.type, "
                                    "t.dataset.state, t.title])")
    _, queries = _tables(run_dir)
    assert queries["valid"].notna().all()                 # every execution checked against the reference
    valid = queries.groupby("type")["valid"].all()
    m = json.loads((run_dir / "manifest.json").read_text())
    labels = [f"{m['experiment']}/{m['run_id']}{more} · duck" for more in ("", " (2)")]   # noisy_run: a copy
    types = TYPES + ["high-cpu-1"]
    assert sorted((db, ty) for db, ty, _, _ in got) == sorted((db, ty) for db in labels for ty in types)
    for db, ty, state, title in got:
        if ty == "high-cpu-1":
            assert state == ("excluded" if db == labels[1] else "not run"), (db, ty, state)
            assert db != labels[1] or "unsupported" in title
        else:
            assert state == ("equal" if valid[ty] else "differing"), (db, ty, state)
    assert not errors, errors
    page.close()


def test_the_numbers_shown_are_the_tables(browser, noisy_run, tmp_path):
    page, errors, _ = _open(browser, _report(noisy_run, tmp_path / "r.html"))
    cells, queries = _tables(noisy_run)
    shown = page.eval_on_selector_all(
        "#cells-table tbody td[data-v]", "ts => ts.map(t => [t.parentElement.dataset.key, t.dataset.col, "
        "Number(t.dataset.v), t.childNodes[0].textContent])")
    by = {(key, col): (v, text) for key, col, v, text in shown}
    for c in cells.itertuples():
        key = f"0:{c.cell}"
        raw = 8 * (c.values + c.rows)
        # column: (the value, its scale on the page, the digits shown)
        expect = {"rows_per_s": (c.rows_per_s, 1, 0), "disk_bytes": (c.disk_bytes, 1e6, 1),
                  "bytes_per_value": (c.disk_bytes / c.values, 1, 3), "disk_to_raw": (c.disk_bytes / raw, 1, 3),
                  "values_per_cpu_s": (c.values / c.client_cpu_s, 1, 0)}      # DuckDB: the client's CPU
        for col, (v, scale, digits) in expect.items():
            got, text = by[key, col]
            assert math.isclose(got, v, rel_tol=1e-9), (key, col, got, v)
            shown = text.strip().removesuffix(" c")
            assert re.fullmatch(r"[\d,]+" + (rf"\.\d{{{digits}}}" if digits else ""), shown), (key, col, text)
            assert abs(float(shown.replace(",", "")) - v / scale) <= 0.5 * 10**-digits * (1 + 1e-9), (key, col, text, v)
        assert by[key, "values_per_cpu_s"][1].endswith(" c")
    ci = page.inner_text("#cells-table tbody tr[data-key='0:0'] td[data-col='rows_per_s'] .ci")
    low, high = (float(x.replace(",", "")) for x in re.fullmatch(r"CI ([\d,]+) – ([\d,]+)", ci).groups())
    assert abs(low - cells.rows_per_s[0] * 0.9) <= 0.5 and abs(high - cells.rows_per_s[0] * 1.2) <= 0.5, ci
    assert "load_avg_before 3.50" in page.inner_text("#cells-table tbody tr[data-key='0:1']")
    warnings = page.inner_text("#warnings")
    assert "ran on a busy machine" in warnings and "load average 3.5 before the cell" in warnings
    assert "noisy" in warnings and "CI +-15%" in warnings
    # the latency table: each cell's p50 per type, and its ratio to the best
    ok = queries[queries["status"] == "ok"]
    p50 = ok.groupby(["cell", "type"])["latency"].quantile(0.5) * 1e3
    td = page.eval_on_selector_all("#latency-table td[data-v]", "ts => ts.map(t => [t.dataset.key, "
                                   "t.parentElement.dataset.type, Number(t.dataset.v), t.textContent])")
    assert len(td) == len(p50) == 2 * len(TYPES)
    for key, ty, v, text in td:
        cell = int(key.split(":")[1])
        assert math.isclose(v, p50[cell, ty], rel_tol=1e-9), (key, ty, v, p50[cell, ty])
        ratio = float(re.fullmatch(r".* \((\d+\.\d\d)\)", text).group(1))
        assert abs(ratio - p50[cell, ty] / p50[:, ty].min()) <= 0.005 + 1e-9, (text, p50[:, ty])
    assert not errors, errors
    page.close()


def test_a_run_of_one_trial_without_statistics_reports(browser, run_dir, tmp_path):
    """A run folder of before issue 38 (no trial column, no trials table, no interval, noise or
    busy column) draws the same charts, without a warning."""
    d = shutil.copytree(run_dir, tmp_path / "old")
    (d / "trials.parquet").unlink(missing_ok=True)
    for p in d.glob("*.parquet"):
        t = pq.read_table(p)
        drop = [c for c in t.column_names if c == "trial" or c.endswith(("_ci_low", "_ci_high", "_cv"))
                or c.startswith(("busy", "noisy", "load_avg", "steal", "other_cpu"))]
        pq.write_table(t.drop(drop), p)
    page, errors, _ = _open(browser, _report(d, tmp_path / "r.html"))
    assert all(n > 0 for n in _marks(page).values()) and len(_marks(page)) == 6
    assert "Nothing to show" in page.inner_text("#stream-chart")      # a run of no stream
    assert page.inner_text("#warnings") == "" and page.locator("#cells-table .ci").count() == 0
    assert not errors, errors
    page.close()
