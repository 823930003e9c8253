"""Stream: series churn (`--churn FRACTION/INTERVAL`), as Kubernetes pods come and go.
Every INTERVAL of data time that share of the entities (so of the series) is replaced by
new ones: the C simulator (ts_sim_set_churn) writes a replaced entity's first entity tag
with a generation suffix (host_7 -> host_7_g1 -> host_7_g2 ...), its values going on as
they were. Which entities go is a fixed cycle from an offset the seed draws, so the same
seed makes the same bytes; each batch's fill says how many of its records were a new
series' first (the per-second table's series_created)."""

from __future__ import annotations

from dataclasses import dataclass

from tsbench.core.errors import UserError


@dataclass(frozen=True)
class Churn:
    fraction: float          # of the entities, replaced every period
    period_ns: int           # data time between replacements

    def per_period(self, entities: int) -> int:
        """Entities replaced each period: the fraction of them, rounded, at least one."""
        return min(entities, max(1, round(self.fraction * entities)))


def parse_churn(text: str, option: str = "--churn") -> Churn:
    """FRACTION/INTERVAL, e.g. 0.1/60s: a fraction in (0, 1] and a positive duration."""
    from tsbench.core.timeutil import parse_duration

    head, sep, tail = str(text).partition("/")
    try:
        fraction = float(head)
    except ValueError:
        fraction = float("nan")
    if not sep or not 0 < fraction <= 1:
        raise UserError(f"{option}: FRACTION/INTERVAL with a fraction in (0, 1] and a positive interval of data "
                        f"time, e.g. 0.1/60s; got {text!r}")
    if tail.strip().startswith("-"):
        raise UserError(f"{option}: the interval must be positive, got {tail!r}")
    return Churn(fraction, parse_duration(tail, f"{option} interval"))


def check_churn(ds, option: str = "--churn") -> None:
    """A dataset churn applies to: with an entity tag to renew, and one point a series an
    epoch (no faults), so each new series' first point is known. (A stream's dataset is a
    generated one: an imported file is refused by the stream phase before this.)"""
    from tsbench.data.schema import Faults

    if not ds.schema.entity_tags:
        raise UserError(f"{option}: the schema {ds.schema.name!r} has no entity tag to give new values")
    if ds.schema.faults != Faults():
        raise UserError(f"{option}: the dataset has missing or late points (faults), so a new series' first point "
                        "is not known; churn a use case without faults (e.g. iot with -P missing=0 ...)")


def churn_of(ds, text: str | None) -> Churn | None:
    """A stream's churn option as a Churn checked against its dataset, or None."""
    if text is None:
        return None
    churn = parse_churn(text)
    check_churn(ds)
    return churn
