"""Phase 1 -> 2: what a data file holds, value by value in aggregate. The C core
adds up each written value while generate fills (native.Simulator.track_stats);
this module merges several processes' figures in slice order and turns them
into the manifest's "stats": per table, its series (entity tag sets with a
row) and per field the count, sum, sum of magnitudes, min and max of its
non-null values. Integer sums are exact; a float sum is a compensated sum, the
exact sum rounded but for rare near-ties, the same for any process count in all
but those. A file whose manifest lacks them (an older file) gets them from one
pass of the simulator (stats_of). verify.py compares them with the database's."""

from __future__ import annotations

from tsbench.core.model import FieldStats, TableStats

SIMULATE_ROWS = 1 << 20      # records a simulate call makes when computing stats without a file


def _two_sum(a: float, b: float) -> tuple[float, float]:
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def merge(parts: list[dict]) -> dict:
    """Several simulators' value_stats (consecutive entity slices), in slice order, as one."""
    out = {"series": list(parts[0]["series"]), "fields": [list(f) for f in parts[0]["fields"]]}
    for p in parts[1:]:
        out["series"] = [a + b for a, b in zip(out["series"], p["series"])]
        for acc, (count, s, comp, sabs, lo, hi, isum) in zip(out["fields"], p["fields"]):
            if not count:
                continue
            if not acc[0]:
                acc[:] = [count, s, comp, sabs, lo, hi, isum]
                continue
            total, err = _two_sum(acc[1], s)
            acc[:] = [acc[0] + count, total, acc[2] + comp + err, acc[3] + sabs, min(acc[4], lo), max(acc[5], hi),
                      acc[6] + isum]
    return out


def to_manifest(ds, raw: dict) -> dict:
    """Per table (measurement): {"series", "fields": {name: {count, sum, sum_abs, min, max}}}."""
    out = {}
    for s, se in enumerate(ds.schema.series):
        first = ds.compiled.series[s][1]
        fields = {}
        for f, fd in enumerate(se.fields):
            if fd.hidden:
                continue
            count, s_, comp, sabs, lo, hi, isum = raw["fields"][first + f]
            as_int = fd.type == "int"
            fields[fd.name] = {"count": count, "sum": isum if as_int else s_ + comp, "sum_abs": sabs,
                               "min": (int(lo) if as_int else lo) if count else None,
                               "max": (int(hi) if as_int else hi) if count else None}
        out[se.name] = {"series": raw["series"][s], "fields": fields}
    return out


def table_stats(entry: dict) -> TableStats:
    """One table's manifest entry as the TableStats a target's stats() answers."""
    return TableStats(entry["series"], {k: FieldStats(v["count"], v["sum"], v["min"], v["max"])
                                        for k, v in entry["fields"].items()})


def stats_of(ds, lo: int, hi: int) -> dict:
    """The manifest's "stats" for entities [lo, hi) of ds, from one pass of the simulator
    (no text made): for a data file whose manifest has none."""
    from tsbench.data.native import Simulator

    sim = Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs, cache=None)
    sim.track_stats()
    while not sim.simulate(SIMULATE_ROWS).done:
        pass
    return to_manifest(ds, sim.value_stats())
