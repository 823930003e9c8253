"""The comparison of runs (`tsbench compare`, after runs): for every cell of BASE that
OTHER has too (the same target name and settings, whatever their cell ids), every figure
both measured, as the ratio OTHER/BASE with its 95% interval and a verdict.

* A per-trial figure (rows/s, values/s, MB/s, disk bytes, CPU seconds, qps): the ratio of
  the medians over trials; its interval and p-value from scipy's bootstrap of that ratio
  (trials resampled in each run). Under MIN_TRIALS trials in either run it is not tested.
* A latency figure (p50, p90, p99, mean), per query type and over all types ("all"): the
  ratio of the figure over the ok executions of every trial; its interval from the
  bootstrap over the executions; its p-value from the Mann-Whitney U test of the two
  runs' latencies (one test per cell and query type, shared by its four figures).

The p-values of one BASE/OTHER pair are Holm-corrected together (statsmodels). A
verdict of faster or slower needs all three: the corrected p under ALPHA, the interval
wholly on that side of 1, and a ratio at least the threshold away from 1; faster means
better in the figure's direction (more rows/s or queries/s; less latency, CPU or disk)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from tsbench.core.errors import UserError
from tsbench.experiments.comparable import differences
from tsbench.experiments.stats import FIGURES, LATENCY, MIN_TRIALS, bootstrap, latency_figures, trial_values

ALPHA = 0.05
THRESHOLD_PCT = 10.0          # default: a difference under 10% is no difference (as the noisy rule's +-10%)
HIGHER_IS_BETTER = {"rows_per_s", "values_per_s", "mb_per_s", "qps"}
VERDICTS = ("no difference", "slower", "faster", "too few trials")
ALL_TYPES = "all"


@dataclass
class Row:
    """One figure of one cell in both runs."""

    target: str
    settings: str
    figure: str
    type: str                  # the query type of a latency figure ("all": every type); "" for the others
    base: float
    other: float
    ratio: float               # other / base
    ci_low: float | None
    ci_high: float | None
    test: str                  # "bootstrap", "mann-whitney", or "" (not tested)
    n_base: int                # trials, or executions of a latency figure
    n_other: int
    p_raw: float | None = None
    p: float | None = None     # Holm-corrected over the pair's tests
    verdict: str = ""

    @property
    def test_key(self) -> tuple:
        """The test this row's p-value comes from: one Mann-Whitney test per cell and query
        type (its four latency figures share it), one bootstrap per per-trial figure."""
        return (self.test, self.target, self.settings, self.type or self.figure)


@dataclass
class Comparison:
    """BASE against one OTHER: what differs between the runs, warnings, the rows."""

    base: str
    other: str
    differences: list[str]
    warnings: list[str]
    rows: list[Row]

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}

    def as_dict(self) -> dict:
        rows = [{k: _json_number(v) for k, v in asdict(r).items()} for r in self.rows]
        return {"base": self.base, "other": self.other, "differences": self.differences,
                "warnings": self.warnings, "counts": self.counts(), "rows": rows}


def compare_runs(base: str, others: list[str], threshold_pct: float = THRESHOLD_PCT,
                 allow_different: bool = False) -> list[Comparison]:
    """BASE against each of others (run folders). Runs that differ in what a comparison
    assumes equal (comparable.py) are a UserError naming what differs, unless allow_different."""
    from tsbench.experiments.report import read_run

    b_frames, b_manifest = read_run(base)
    read = []
    for other in others:                   # every run read and checked before any is compared
        o_frames, o_manifest = read_run(other)
        diffs = differences(b_manifest, o_manifest)
        if diffs and not allow_different:
            raise UserError(f"{other} is not comparable with {base}: {'; '.join(diffs)} "
                            "(--allow-different compares them anyway)")
        read.append((other, o_frames, diffs))
    return [compare_frames(base, b_frames, other, o_frames, threshold_pct, diffs) for other, o_frames, diffs in read]


def compare_frames(base: str, b_frames: dict, other: str, o_frames: dict, threshold_pct: float,
                   diffs: list[str]) -> Comparison:
    """The Comparison of two read runs (report.read_run's frames)."""
    b_cells, o_cells = run_cells(b_frames), run_cells(o_frames)
    rows, warnings = [], []
    for key, bc in b_cells.items():
        oc = o_cells.get(key)
        if oc is None:
            warnings.append(f"note: only in BASE: {bc.label}")
            continue
        warnings += bc.warnings("BASE") + oc.warnings("OTHER")
        rows += trial_rows(bc, oc) + latency_rows(bc, oc)
    warnings += [f"note: only in OTHER: {oc.label}" for key, oc in o_cells.items() if key not in b_cells]
    holm(rows)
    for r in rows:
        r.verdict = verdict(r, threshold_pct)
    return Comparison(base, other, diffs, warnings, rows)


@dataclass
class RunCell:
    """A cell of a run as compare reads it: its per-trial figures and ok latencies (ms) by query type."""

    id: int
    target: str
    settings: str
    status: str
    reason: str
    busy: str | None                       # why the machine was busy, when the cells table says it was
    trials: list[dict]
    latencies: dict[str, np.ndarray]

    @property
    def label(self) -> str:
        return f"{self.target} {self.settings}".strip()

    def warnings(self, which: str) -> list[str]:
        out = []
        if self.busy is not None:
            out.append(f"warning: {which} cell {self.id} ({self.label}) ran on a busy machine"
                       + (f": {self.busy}" if self.busy else ""))
        if self.status != "ok":
            out.append(f"warning: {which} cell {self.id} ({self.label}) is {self.status}: {self.reason[:200]}")
        return out


def run_cells(frames: dict) -> dict[tuple[str, str], RunCell]:
    """The cells of a read run by (target name, settings); a run without a trials table
    (before trials) is one trial of each figure, from its cells table."""
    cells, trials, queries = frames["cells"], frames.get("trials"), frames["queries"]
    out: dict[tuple[str, str], RunCell] = {}
    for c in cells.to_dict("records"):
        key = (str(c["target_name"]), str(c.get("settings") or ""))
        if key in out:
            continue                           # the same target and settings twice: the first
        mine = trials[trials["cell"] == c["cell"]].to_dict("records") if trials is not None and not trials.empty \
            else _one_trial(c)
        q = queries[(queries["cell"] == c["cell"]) & (queries["status"] == "ok")] if not queries.empty else queries
        reason = c.get("reason") if isinstance(c.get("reason"), str) else ""
        out[key] = RunCell(int(c["cell"]), key[0], key[1], str(c["status"]), reason, _busy(c), mine, _latencies(q))
    return out


def _one_trial(cell: dict) -> list[dict]:
    """A cell of a run before trials as its trials: each figure of the cells row, trial 0."""
    return [{"phase": FIGURES[fig][0][0], "trial": 0, "status": "ok", fig: cell[fig]}
            for fig in FIGURES if fig in cell]


def _latencies(q) -> dict[str, np.ndarray]:
    """The ok latencies (ms) by query type and over all types."""
    if q.empty:
        return {}
    out = {ty: g["latency"].to_numpy(dtype=float) * 1e3 for ty, g in q.groupby("type", sort=False)}
    out[ALL_TYPES] = q["latency"].to_numpy(dtype=float) * 1e3
    return out


def _busy(cell: dict) -> str | None:
    """The busy_reason of a cell that ran on a busy machine ("" with no reason), else None."""
    busy = cell.get("busy")
    if busy is None or (isinstance(busy, float) and math.isnan(busy)) or not bool(busy):
        return None
    reason = cell.get("busy_reason")
    return reason if isinstance(reason, str) else ""


def trial_rows(bc: RunCell, oc: RunCell) -> list[Row]:
    """The per-trial figures both cells measured, with the bootstrap of their ratio."""
    rows = []
    for fig in FIGURES:
        if fig in LATENCY:
            continue                           # from the executions (latency_rows)
        b = np.array([v for _, v in trial_values(bc.trials, fig)])
        o = np.array([v for _, v in trial_values(oc.trials, fig)])
        if not len(b) or not len(o) or np.median(b) == 0:
            continue                           # not measured by both, or no ratio
        row = Row(bc.target, bc.settings, fig, "", float(np.median(b)), float(np.median(o)),
                  float(np.median(o) / np.median(b)), None, None, "", len(b), len(o))
        if len(b) >= MIN_TRIALS and len(o) >= MIN_TRIALS:
            res = bootstrap((b, o), _median_ratio)
            row.ci_low, row.ci_high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            row.test, row.p_raw = "bootstrap", _bootstrap_p(res.bootstrap_distribution)
        rows.append(row)
    return rows


def _median_ratio(b, o, axis=-1):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(o, axis=axis) / np.median(b, axis=axis)


def _bootstrap_p(ratios: np.ndarray) -> float:
    """Two-sided p-value of "the ratio is 1" from its bootstrap distribution."""
    return float(min(1.0, 2 * min(np.mean(ratios <= 1), np.mean(ratios >= 1))))


def latency_rows(bc: RunCell, oc: RunCell) -> list[Row]:
    """The latency figures of each query type both cells ran (and of all types), with the
    bootstrap of their ratio over the executions and one Mann-Whitney U test per type."""
    from scipy import stats

    rows = []
    types = [t for t in bc.latencies if t in oc.latencies]
    for ty in types:
        b, o = bc.latencies[ty], oc.latencies[ty]
        if len(b) < 2 or len(o) < 2:
            continue
        bs, os_ = latency_figures(b), latency_figures(o)
        if not np.all(bs > 0):
            continue                           # no ratio
        ci = bootstrap((b, o), _latency_ratios).confidence_interval
        p = float(stats.mannwhitneyu(b, o, alternative="two-sided").pvalue)
        for i, fig in enumerate(LATENCY):
            rows.append(Row(bc.target, bc.settings, fig, ty, float(bs[i]), float(os_[i]), float(os_[i] / bs[i]),
                            float(ci.low[i]), float(ci.high[i]), "mann-whitney", len(b), len(o), p_raw=p))
    return rows


def _latency_ratios(b, o, axis=-1):
    with np.errstate(divide="ignore", invalid="ignore"):
        return latency_figures(o, axis) / latency_figures(b, axis)


def holm(rows: list[Row]) -> None:
    """Each tested row's p: its test's p-value Holm-corrected over the distinct tests of rows
    (a Mann-Whitney test shared by four latency rows counts once)."""
    from statsmodels.stats.multitest import multipletests

    tests = {r.test_key: r.p_raw for r in rows if r.p_raw is not None}
    if not tests:
        return
    corrected = dict(zip(tests, multipletests(list(tests.values()), alpha=ALPHA, method="holm")[1]))
    for r in rows:
        if r.p_raw is not None:
            r.p = float(corrected[r.test_key])


def verdict(r: Row, threshold_pct: float) -> str:
    """faster, slower, no difference, or too few trials (not tested)."""
    if r.p is None:
        return "too few trials"
    beyond = abs(r.ratio - 1) * 100 >= threshold_pct
    one_side = (r.ci_low is not None and r.ci_low > 1) if r.ratio > 1 else (r.ci_high is not None and r.ci_high < 1)
    if not (r.p < ALPHA and beyond and one_side):
        return "no difference"
    return "faster" if (r.ratio > 1) == (r.figure in HIGHER_IS_BETTER) else "slower"


def _json_number(v):
    """NaN and infinities as null (JSON has none)."""
    return None if isinstance(v, float) and not math.isfinite(v) else v

