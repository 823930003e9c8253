"""A cell's figures over trials (issue 38, item 2): the median with its 95% bootstrap
interval and CV; a wide interval is noisy with the reason the data gives; a latency
figure of one trial gets its interval from the queries; the same data, the same columns."""

from __future__ import annotations

import numpy as np

from tsbench.experiments.stats import cell_columns


def _load(*rows_per_s, **extra):
    return [{"cell": 0, "phase": "load", "trial": i, "status": "ok", "rows_per_s": v, "disk_bytes": 1000, **extra}
            for i, v in enumerate(rows_per_s)]


def _queries(latencies_s, trial=0):
    return [{"cell": 0, "trial": trial, "type": "t", "status": "ok", "latency": s} for s in latencies_s]


def test_an_interval_holds_the_median_and_a_steady_figure_is_not_noisy():
    got = cell_columns(_load(100_000, 101_000, 99_000, 100_500, 99_500), [])
    assert got["rows_per_s"] == 100_000
    assert 99_000 <= got["rows_per_s_ci_low"] <= got["rows_per_s"] <= got["rows_per_s_ci_high"] <= 101_000
    assert 0 < got["rows_per_s_cv"] < 0.02
    assert got["noisy"] == "" and got["noisy_reason"] == ""


def test_a_wide_spread_is_noisy_and_says_why():
    got = cell_columns(_load(100, 105, 69), [])
    assert got["noisy"] == "rows_per_s"
    assert got["rows_per_s_ci_low"] < 0.9 * got["rows_per_s"]
    reason = got["noisy_reason"]
    assert reason.startswith("rows_per_s: 3 trials, CV 21%, interval -31%/")
    assert reason.endswith("trial 2 is 31% below the median"), reason


def test_a_constant_figure_has_a_zero_width_interval():
    got = cell_columns(_load(100, 105, 69), [])
    assert got["disk_bytes"] == got["disk_bytes_ci_low"] == got["disk_bytes_ci_high"] == 1000
    assert got["disk_bytes_cv"] == 0 and "disk_bytes" not in got["noisy"]


def test_the_same_data_gives_the_same_columns():
    rng = np.random.default_rng(5)
    trials = _load(*rng.normal(1000, 150, 7)) + [{"cell": 0, "phase": "execute", "trial": 0, "query_p99_ms": 30.0}]
    queries = _queries(rng.lognormal(-5, 1, 300))          # one execute trial: its interval from the queries
    assert cell_columns(trials, queries) == cell_columns(list(trials), list(queries))


def test_one_trial_of_latency_is_bootstrapped_over_its_queries():
    rng = np.random.default_rng(1)
    lat = rng.lognormal(-5, 1, 40)
    trial = [{"cell": 0, "phase": "execute", "trial": 0, "status": "ok", "qps": 50.0,
              "query_p50_ms": float(np.percentile(lat, 50) * 1e3), "query_p99_ms": float(np.percentile(lat, 99) * 1e3)}]
    got = cell_columns(trial, _queries(lat) + [{"cell": 0, "trial": 0, "status": "error", "latency": 9.0}])
    for fig in ("query_p50_ms", "query_p99_ms"):
        assert got[f"{fig}_ci_low"] <= got[fig] <= got[f"{fig}_ci_high"]
        assert got[f"{fig}_ci_low"] < got[f"{fig}_ci_high"]
        assert got[f"{fig}_cv"] is None
    assert got["qps_ci_low"] is None and got["qps_ci_high"] is None        # not a figure of the queries
    assert "query_p99_ms" in got["noisy"].split(",")
    assert "query_p99_ms: one trial, interval -" in got["noisy_reason"]
    assert "from 40 queries" in got["noisy_reason"]                        # the error left out


def test_two_trials_give_a_cv_but_no_interval_over_trials():
    got = cell_columns(_load(100, 200), [])
    assert got["rows_per_s"] == 150 and got["rows_per_s_ci_low"] is None and got["noisy"] == ""
    assert round(got["rows_per_s_cv"], 3) == 0.471


def test_a_failed_trial_is_left_out_when_an_ok_one_is_there():
    trials = _load(100, 100, 100) + [{"cell": 0, "phase": "load", "trial": 3, "status": "failed", "rows_per_s": 5}]
    got = cell_columns(trials, [])
    assert got["rows_per_s"] == 100 and got["rows_per_s_ci_high"] == 100 and got["noisy"] == ""


def test_the_summary_shows_each_median_with_its_interval_and_marks_the_noisy(tmp_path):
    from tsbench.experiments.report import text_summary

    from runfolders import write_run

    lines = text_summary(write_run(tmp_path / "run", 1, spread=0.3)).splitlines()
    cell0 = lines[1].split()
    assert cell0[:4] == ["0", "a", "workers=1", "ok"]
    assert cell0[4:8] == ["110,368", "+-76%*", "1,103,675", "+-76%*"]        # rows/s, values/s: noisy
    assert cell0[8:11] == ["5.0", "4.12", "+-1%"]                             # disk MB (no PSS), p50: steady
    assert lines[2].strip().startswith("noisy: rows_per_s: 3 trials, CV 67%, interval -76%/+40%, trial 1 is 76% below")
    assert lines[-1] == "* noisy: its 95% interval reaches further than 10% of the median from it"


def test_every_column_of_the_statistics_is_named_on_the_results_page():
    from resultsdoc import _named, sections

    trials = _load(1, 2, 3) + [{"cell": 0, "phase": "execute", "trial": 0, "status": "ok", "qps": 1.0,
                                **{f: 1.0 for f in ("query_p50_ms", "query_p90_ms", "query_p99_ms", "query_mean_ms")}}]
    trials[0].update(values_per_s=1.0, mb_per_s=1.0, client_cpu_s=1.0, server_cpu_s=1.0)
    columns = cell_columns(trials, _queries([0.1, 0.2]))
    assert len(columns) == 11 * 4 + 2
    cells = sections()["cells"]
    assert [c for c in columns if not _named(c, cells)] == []
