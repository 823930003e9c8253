"""Benchmark of phase 4 (`nox -s bench_protocols`): a database's query protocols side by
side on one loaded server. QuestDB (started by tsbench, 6 hours of devops at 100 hosts):
its HTTP /exec path (JSON answers on the shared HTTP pool, -O protocol=http) against its
PostgreSQL wire protocol (psycopg, -O protocol=pgwire) with text results (pg_results=text:
the simple query protocol) and binary ones (pg_results=binary: the extended protocol),
the same drawn queries per type, 1 worker, in alternating blocks (http, pg-text,
pg-binary, http, ...) so all meet the same load of a shared machine, each timed pass after
an untimed one over its block (QuestDB caches compiled queries by their text); every query's rows
checked equal over all three first (untimed). Prints each one's p50 and its ratio to
http's; q/s at 4 workers."""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile

from benchmarks import record
from benchmarks.queries import _datafile, _execute
from tsbench.queries.compare import compare

FLOAT_TOL = 1e-12
PG = ("pg-text", "pg-binary")          # -O protocol=pgwire with pg_results=text / binary
HEADS = ("http p50", *(f"{p} p50" for p in PG), *(f"{p} / http" for p in PG),
         "http q/s 4 workers", *(f"{p} q/s 4 workers" for p in PG))


async def _same_answers(targets: dict, specs) -> int:
    """Each query once on every protocol (untimed): its canonical rows equal (floats within
FLOAT_TOL: QuestDB's parallel aggregation sums in any order), else exit; how many."""
    for spec in specs:
        rows = {}
        for proto, t in targets.items():
            native = t.render(spec)
            rows[proto] = t.canonical(native, await t.query(native))
        first = next(iter(rows.values()))
        for proto, got in rows.items():
            bad = compare(spec.params, first, got, FLOAT_TOL)
            if bad is not None:
                raise SystemExit(f"{proto}'s answer differs from http's for {spec}:\n{bad.diff()}")
    return len(specs)


async def _alternating(targets: dict, specs, a) -> dict:
    """Each protocol's 1-worker p50 (ms) in alternating blocks, each timed pass after an untimed
    one over its block (QuestDB caches compiled queries by text, per protocol: whoever came
    second would meet them compiled), and its 4-worker q/s."""
    import numpy as np

    lat = {p: [] for p in targets}
    for k in range(0, len(specs), a.block):
        for proto, t in targets.items():
            res = await _execute(t, specs[k:k + a.block], 1, a.burn_in if k == 0 else 0, "warm")
            lat[proto] += [r["latency"] for r in res.records if r["status"] == "ok"]
    out = {}
    for proto, t in targets.items():
        out[f"{proto} p50"] = float(np.median(lat[proto])) * 1e3
        out[f"{proto} q/s 4 workers"] = (await _execute(t, specs, 4, a.burn_in)).stats()[-1]["qps"]
    for proto in PG:
        out[f"{proto} / http"] = out[f"{proto} p50"] / out["http p50"]
    return out


async def _run(a) -> None:
    from tsbench.data.datafile import tables_of
    from tsbench.databases import target_class
    from tsbench.experiments import session
    from tsbench.load.run import LoadOptions

    df = _datafile(a, "influx")
    async with session.open_target(session.Reach("questdb", name="bench-protocols-questdb"), announce=False) as c:
        await session.load(c, df, LoadOptions(progress=False, workers=2, compact=True))
        targets = {"http": c.target}
        for fmt in ("text", "binary"):
            targets[f"pg-{fmt}"] = target_class("questdb")(c.target.url, {"protocol": "pgwire", "pg_results": fmt})
        try:
            for t in list(targets.values())[1:]:
                await t.open()
                await t.attach(tables_of(df.dataset, 0, 0))
            print(f"questdb {await session.server_version(c)}, devops {a.scale} hosts x 6 h, {a.count} queries per "
                  f"type, {a.burn_in} burn-in, blocks of {a.block}; p50 ms at 1 worker", flush=True)
            print(f"{'type':>24} " + " ".join(f"{h:>13}" for h in HEADS))
            for qtype in a.types:
                specs = session.draw(df.dataset, [qtype], a.count, 123, allow_empty=True)
                await _same_answers(targets, specs)
                r = await _alternating(targets, specs, a)
                print(f"{qtype:>24} " + " ".join(f"{r[h]:>13.3f}" for h in HEADS), flush=True)
                for name, v in r.items():
                    record.figure(f"questdb {qtype}: {name}", v, "x" if "/" in name else
                                  "queries/s" if "q/s" in name else "ms")
        finally:
            for t in list(targets.values())[1:]:
                await t.close()
    print("every query's rows equal over both protocols (checked untimed before timing)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--types", default="single-groupby-1-1-1,cpu-max-all-8,double-groupby-1,high-cpu-1,lastpoint")
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--count", type=int, default=400, help="queries per type")
    ap.add_argument("--burn-in", type=int, default=50)
    ap.add_argument("--block", type=int, default=50, help="queries per block: the protocols alternate")
    ap.add_argument("--data-dir", default=None)
    record.arguments(ap)
    a = ap.parse_args()
    a.types = [t.strip() for t in a.types.split(",") if t.strip()]
    a.data_dir = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(a.data_dir, exist_ok=True)
    record.start("protocols", a)
    asyncio.run(_run(a))
    record.finish()


if __name__ == "__main__":
    main()
