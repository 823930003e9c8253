"""Statistics over trials (after a run, and `compare`): a cell's figures as the median
over its trials with a 95% confidence interval and coefficient of variation, and
whether the interval is too wide to trust (noisy), with the reason the data gives.

Interface shared by the runner (runner.py calls `cell_columns` as each cell ends),
the report and `compare`. The intervals are scipy.stats' bootstrap (percentile method,
a fixed seed: the same data gives the same interval):

* three trials or more (MIN_TRIALS): over the trials, of their median;
* fewer, for the latency figures (query_p50/p90/p99/mean_ms): over the cell's queries
  (every ok execution of its trials), of the percentile or mean itself;
* fewer, for the other figures: none (null): one or two values give no interval worth
  the name.

A figure is noisy when its interval reaches further than NOISY (10%) of its median
from the median on either side."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WRITES = ("load", "stream")
# figure column of the `trials` and `cells` tables -> (the phases that measure it, unit)
FIGURES = {
    "rows_per_s": (WRITES, "rows/s"), "values_per_s": (WRITES, "values/s"), "mb_per_s": (("load",), "MB/s"),
    "disk_bytes": (("load",), "bytes"), "client_cpu_s": (WRITES, "CPU s"), "server_cpu_s": (WRITES, "CPU s"),
    "query_p50_ms": (("execute",), "ms"), "query_p90_ms": (("execute",), "ms"),
    "query_p99_ms": (("execute",), "ms"), "query_mean_ms": (("execute",), "ms"), "qps": (("execute",), "queries/s"),
}
# the latency figures: the percentile of the executions' latencies (ms) each is, or "mean"
LATENCY = {"query_p50_ms": 50, "query_p90_ms": 90, "query_p99_ms": 99, "query_mean_ms": "mean"}

MIN_TRIALS = 3          # fewer trials: no bootstrap over trials
LEVEL = 0.95            # of every interval
NOISY = 0.10            # an interval reaching further than this share of the median from it: noisy
RESAMPLES = 2000        # bootstrap resamples
SEED = 38               # of every bootstrap: the same data, the same interval
_BATCH_VALUES = 4_000_000   # values resampled at once (bounds the bootstrap's memory)


def cell_columns(trials: list[dict], queries: list[dict]) -> dict:
    """The cells table's figure columns of one cell from its rows of the `trials` table
    (one per phase and trial) and of the `queries` table: each figure the median over
    the trials of the phase that measures it, `<figure>_ci_low`, `<figure>_ci_high`
    (its 95% interval, null when there is none), `<figure>_cv` (over the trials, null
    under two), `noisy` (the noisy figures, comma-separated) and `noisy_reason`."""
    out: dict = {}
    noisy: list[Estimate] = []
    over_queries = QueryIntervals(ok_latencies_ms(queries))
    for fig in FIGURES:
        got = trial_values(trials, fig)
        if not got:
            continue
        est = estimate(fig, got, over_queries)
        out.update({fig: est.median, f"{fig}_ci_low": est.low, f"{fig}_ci_high": est.high, f"{fig}_cv": est.cv})
        if est.noisy:
            noisy.append(est)
    out["noisy"] = ",".join(e.figure for e in noisy)
    out["noisy_reason"] = "; ".join(e.reason() for e in noisy)
    return out


def trial_values(trials: list[dict], fig: str) -> list[tuple[int, float]]:
    """(trial, value) of fig in the trials of the phases that measure it; only the ok
    trials when there is one (a failed trial's figure is not a measure of the database)."""
    phases = FIGURES[fig][0]
    rows = [t for t in trials if t.get("phase") in phases and _number(t.get(fig))]
    ok = [t for t in rows if t.get("status", "ok") == "ok"]
    return [(int(t["trial"]) if _number(t.get("trial")) else 0, float(t[fig])) for t in (ok or rows)]


def ok_latencies_ms(queries: list[dict]) -> np.ndarray:
    """The latencies (ms) of the ok executions among queries (rows of the queries table)."""
    return np.array([q["latency"] * 1e3 for q in queries
                     if q.get("status") == "ok" and _number(q.get("latency"))], dtype=float)


_PERCENTILES = [p for p in LATENCY.values() if p != "mean"]


def latency_figures(x, axis=-1):
    """The LATENCY figures of latencies x (ms) in LATENCY's order, vectorized along axis:
    the percentiles (numpy's linear, as execute computes them), then the mean."""
    return np.concatenate([np.percentile(x, _PERCENTILES, axis=axis), np.mean(x, axis=axis)[None]])


class QueryIntervals:
    """The intervals of the latency figures over a cell's ok latencies (ms): one bootstrap
    for the four, made when first asked for."""

    def __init__(self, latencies_ms: np.ndarray):
        self.latencies_ms = latencies_ms
        self._ci = None

    def __len__(self) -> int:
        return len(self.latencies_ms)

    def of(self, fig: str) -> tuple[float, float]:
        if self._ci is None:
            self._ci = bootstrap((self.latencies_ms,), latency_figures).confidence_interval
        i = list(LATENCY).index(fig)
        return float(self._ci.low[i]), float(self._ci.high[i])


def bootstrap(samples: tuple, statistic):
    """scipy.stats.bootstrap of statistic over samples (independent), percentile method,
    LEVEL, RESAMPLES, the fixed SEED: the result (confidence_interval, bootstrap_distribution)."""
    from scipy import stats

    batch = max(1, _BATCH_VALUES // max(1, sum(len(s) for s in samples)))
    return stats.bootstrap(samples, statistic, n_resamples=RESAMPLES, confidence_level=LEVEL, method="percentile",
                           vectorized=True, batch=batch, rng=np.random.default_rng(SEED))


@dataclass
class Estimate:
    """A figure of a cell: the median over its trials, its interval, CV and where the interval came from."""

    figure: str
    median: float
    values: list[tuple[int, float]]       # (trial, value)
    low: float | None = None
    high: float | None = None
    cv: float | None = None
    queries: int = 0                      # the interval is over this many queries (0: over the trials)

    @property
    def noisy(self) -> bool:
        if self.low is None or self.high is None:
            return False
        return max(self.median - self.low, self.high - self.median) > NOISY * abs(self.median)

    def reason(self) -> str:
        """Why the interval is wide, from the data: e.g. "rows_per_s: 3 trials, CV 14%,
        interval -31%/+5%, trial 2 is 31% below the median"."""
        n = len(self.values)
        trials = "one trial" if n == 1 else f"{n} trials"
        cv = f", CV {self.cv:.0%}" if self.cv is not None else ""
        span = f"interval {_share(self.low - self.median, self.median)}/{_share(self.high - self.median, self.median)}"
        if self.queries:
            return f"{self.figure}: {trials}{cv}, {span} from {self.queries} queries"
        trial, value = max(self.values, key=lambda tv: abs(tv[1] - self.median))
        off = (value - self.median) / self.median if self.median else 0.0
        return (f"{self.figure}: {trials}{cv}, {span}, trial {trial} is {abs(off):.0%} "
                f"{'below' if off < 0 else 'above'} the median")


def estimate(fig: str, values: list[tuple[int, float]], over_queries: QueryIntervals) -> Estimate:
    """fig's Estimate from its (trial, value) pairs and the intervals over the cell's queries."""
    x = np.array([v for _, v in values], dtype=float)
    est = Estimate(fig, float(np.median(x)), values, cv=coefficient_of_variation(x))
    if len(x) >= MIN_TRIALS:
        ci = bootstrap((x,), lambda s, axis=-1: np.median(s, axis=axis)).confidence_interval
        est.low, est.high = float(ci.low), float(ci.high)
    elif fig in LATENCY and len(over_queries) >= 2:
        (est.low, est.high), est.queries = over_queries.of(fig), len(over_queries)
    return est


def coefficient_of_variation(x: np.ndarray) -> float | None:
    """scipy.stats.variation (sample standard deviation over the mean) of two values or more; else None."""
    from scipy import stats

    if len(x) < 2:
        return None
    if np.all(x == x[0]):
        return 0.0
    cv = float(stats.variation(x, ddof=1))
    return cv if np.isfinite(cv) else None


def _share(delta: float, of: float) -> str:
    """delta as a signed percentage of of: "+12%", "-3%"."""
    if not of:
        return f"{delta:+g}"
    return f"{delta / abs(of):+.0%}"


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and bool(np.isfinite(v))
