"""Benchmark of the query forms (`nox -s bench_dialects`, phases 3-5): per database, a
local server started by tsbench holds a small devops dataset (and an iot one where
the dialect declares forms of iot types); for every query type its dialect declares
other forms of (Dialect.forms), queries are drawn and each runs in every form,
tsbench's own first, through the target's timed query path (execute/forms.py), in
alternating rounds. Every form's answers are compared with tsbench's form's (the
validate phase's comparison): a form that differs is WRONG and never the fastest.
Printed per database and type: form, p50 ms, ratio to the fastest correct form
(paired: each query's latency in a form over the same query's in tsbench's form in
the same round, the median of those, so the machine's load cancels), and the
reason (form_reasons) where tsbench's form is > 1.2x the fastest.
Exits 1 if tsbench's form is > 1.2x the fastest correct form without a reason.

    python -m benchmarks.dialects --databases influx,questdb --hosts 10 --hours 6 \\
        --queries 20 --rounds 5 --record docs/figures
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import subprocess
import sys
import tempfile

from benchmarks import record

SLACK = 1.2                       # tsbench's form may be this much slower than the fastest, no more
START = datetime.datetime(2016, 1, 1, tzinfo=datetime.UTC)


def _with_forms() -> list[str]:
    """Every registered target whose default dialect declares other forms."""
    from tsbench import databases

    return [n for n in databases.names() if databases.target_class(n).dialects and _dialect_class(n).forms]


def _dialect_class(target: str):
    """The default dialect class of a target (the one its queries are rendered in)."""
    from tsbench import databases

    cls = databases.target_class(target)
    return cls.dialects[next(iter(cls.dialects))]


def _datafile(a, use_case: str, fmt: str):
    """A data file of the use case in the target's format (generated once into the data dir)."""
    from tsbench.data.datafile import open_datafile

    end = (START + datetime.timedelta(hours=a.hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = os.path.join(a.data_dir, f"{use_case}{a.hosts}-{a.hours}h.{fmt}")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "-u", use_case, "--scale", str(a.hosts),
                        "--seed", str(a.seed), "--end", end, "-j", "1", "--format", fmt, "-o", path],
                       check=True, timeout=1800)
    return open_datafile(path)


def _types(dialect, ds) -> list[str]:
    """The types with declared forms that the dialect runs and that fit the dataset."""
    from tsbench import queries

    ctx = queries.context(ds)
    runs = dialect.query_types()
    return [t for t in dialect.forms if t in runs and queries.CATALOG[t].applies(ctx) is None]


def _draw(ds, types: list[str], a, ref) -> list:
    """a.queries queries of each type (never empty answers); a type the dataset is too small
    for is said and left out."""
    from tsbench.core.errors import UserError
    from tsbench.experiments import session
    from tsbench.queries.base import QuerySpec

    specs = []
    for t in types:
        try:
            drawn = session.draw(ds, [t], a.queries, a.seed, reference=ref)
        except UserError as exc:
            print(f"  {t}: not drawn ({exc})")
            continue
        specs += [QuerySpec(len(specs) + i, s.type, s.params) for i, s in enumerate(drawn)]
    return specs


async def _measure(db: str, df, types: list[str], a) -> dict:
    """Load the data into a fresh local server, draw, run every form: (type, form) -> FormRun."""
    from tsbench.data.datafile import tables_of
    from tsbench.execute.forms import run_forms
    from tsbench.experiments import session
    from tsbench.load.run import LoadOptions

    ref = session.reference(df.dataset, say=lambda _m: None)
    specs = _draw(df.dataset, types, a, ref)
    reach = session.Reach(db, name=f"bench-forms-{db}")     # its own instance, not a user's default one
    async with session.open_target(reach, announce=False) as conn:
        await session.load(conn, df, LoadOptions(progress=False, workers=2, compact=True))
        await conn.target.attach(tables_of(df.dataset, 0, 0))
        version = await session.server_version(conn)
        print(f"{db} {version}: {df.dataset.spec.use_case} {a.hosts} hosts x {a.hours} h, {a.queries} queries "
              f"a type, {a.rounds} rounds", flush=True)
        return await run_forms(conn.target, specs, ref, rounds=a.rounds)


def _report(db: str, dialect, qtype: str, runs: dict) -> bool:
    """Print one type's forms; False if tsbench's form is > SLACK x the fastest correct one
    and the dialect gives no reason. A form's ratio: the median of its paired ratios to
    tsbench's form (same query, same round), over the fastest correct form's."""
    forms = [r for (t, _), r in runs.items() if t == qtype]
    mine = next(r for r in forms if r.form == "tsbench")
    rel = {r.form: r.to(mine) for r in forms}
    best = min((rel[r.form] for r in forms if r.correct and rel[r.form] is not None), default=None)
    print(f"  {qtype}")
    for r in forms:
        ratio = rel[r.form] / best if best and rel[r.form] is not None else None
        note = f"WRONG: {r.wrong.splitlines()[0]}" if r.wrong else f"{r.errors} errors" if r.errors else ""
        p50 = f"{r.p50_ms:9.3f}" if r.p50_ms is not None else f"{'-':>9}"
        print(f"    {r.form:<28} {p50} ms  {f'{ratio:5.2f}x' if ratio else '    -'}  {note}")
        if ratio is not None and r.correct:
            record.figure(f"{db} {qtype} {r.form}: p50", r.p50_ms, "ms")
            record.figure(f"{db} {qtype} {r.form}: ratio to the fastest", ratio, "x")
    if not mine.correct or best is None or 1.0 <= SLACK * best:
        return True
    why = dialect.form_reasons.get(qtype)
    print(f"    tsbench's form is {1.0 / best:.2f}x the fastest: "
          + (f"kept because {why}" if why else "NO REASON GIVEN (form_reasons)"))
    return why is not None


async def _database(db: str, a) -> bool:
    """Every use case with forms on one database, each on its own server; True if all are fair."""
    from tsbench import databases, queries

    dialect, fair = _dialect_class(db), True
    iot = any(queries.CATALOG[t].family == "iot" for t in dialect.forms)
    for use_case in ("devops", "iot") if iot else ("devops",):
        df = _datafile(a, use_case, databases.target_class(db).format)
        types = _types(dialect, df.dataset)
        if not types:
            continue
        async with asyncio.timeout(a.timeout):
            runs = await _measure(db, df, types, a)
        for t in dict.fromkeys(t for t, _ in runs):
            fair = _report(db, dialect, t, runs) and fair
    return fair


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--databases", default=None, help="comma-separated targets (default: every one whose "
                                                     "dialect declares other forms)")
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--hours", type=int, default=6)
    ap.add_argument("--queries", type=int, default=20, help="queries drawn a type")
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds (after one checked round)")
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds a database's run may take")
    ap.add_argument("--data-dir", default=None)
    record.arguments(ap)
    a = ap.parse_args()
    a.data_dir = a.data_dir or tempfile.mkdtemp(prefix="tsbench-forms-")
    os.makedirs(a.data_dir, exist_ok=True)
    record.start("dialects", a)
    fair = True
    names = [d.strip() for d in a.databases.split(",") if d.strip()] if a.databases else _with_forms()
    for db in names:
        fair = asyncio.run(_database(db, a)) and fair
    print(f"p50: each form's latencies over {a.rounds} rounds (send -> last byte plus client work, 1 worker); "
          "ratio: the median over (query, round) of a form's latency over tsbench's form's for the same query in "
          f"the same round, over the fastest correct form's; tsbench's form may be at most {SLACK}x the fastest "
          "unless the dialect says why (form_reasons)")
    record.finish()
    sys.exit(0 if fair else 1)


if __name__ == "__main__":
    main()
