"""Side by side with TSBS (`nox -s bench_tsbs -- --tsbs-bin DIR`), beside the five phases: it
measures phases 2 and 4 of tsbench against TSBS's own tools on the same server.

For each database (InfluxDB, VictoriaMetrics, QuestDB, Cassandra) one server is started
by tsbench's own machinery. TSBS's devops data (tsbs_generate_data, seed 123) is loaded
with TSBS's loader, tsbench's devops data of the same shape (hosts, span, seed) with
tsbench; then, per query type both tools run, TSBS's queries (tsbs_generate_queries +
tsbs_run_queries_<db>, 1 worker) and tsbench's (drawn as `tsbench queries` draws them,
run as `tsbench execute` runs them, 1 worker) in alternating blocks, each tool on its own
data and on the other's (this separates data from query form and client). Where the
database holds both data sets at once (InfluxDB: two databases; Cassandra: two
keyspaces) the four cells alternate; where the names collide (VictoriaMetrics: one
store; QuestDB: tables named after the measurements) TSBS's data is loaded and queried
by both tools, then replaced by tsbench's, on the same server process. Then the load
rates: TSBS's loader on its file, tsbench on TSBS's file and tsbench on its own, in
rounds, with the server's CPU seconds per million rows (InfluxDB, VictoriaMetrics).

TSBS is not part of the project: its already built binaries are named by --tsbs-bin.
Every subprocess and wait is bounded; the servers stop when their block ends."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from benchmarks import record
from tsbench.core import signals

TYPES = ("single-groupby-1-1-1", "single-groupby-5-1-12", "double-groupby-1", "cpu-max-all-8", "high-cpu-1",
         "lastpoint", "groupby-orderby-limit")
SEED = 123
KEPT = "tsbench, empty answers kept"     # tsbench's high-cpu-1 drawn as TSBS draws it: empty answers kept
START = datetime.datetime(2016, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class Db:
    """How each tool reaches one database: TSBS's format and flags, tsbench's option naming
    the other tool's data where both can be held at once (None: one after the other)."""

    name: str
    tsbs_format: str
    tsbench_format: str
    tsbs_name: str | None           # TSBS's database/keyspace, if it can sit beside tsbench's
    tsbench_option: str | None      # the tsbench option naming it
    tsbs_types: tuple = TYPES       # the types TSBS generates for this format
    cross: bool = True              # whether each tool's queries read the other's data (same column names)

    def url(self, ports: dict) -> str:
        if self.name == "cassandra":
            return f"cassandra://127.0.0.1:{ports['cql']}"
        return f"http://127.0.0.1:{ports['http']}"


DBS = {
    "influx": Db("influx", "influx", "influx", "benchmark", "database"),
    "victoriametrics": Db("victoriametrics", "victoriametrics", "influx", None, None,
                          ("single-groupby-1-1-1", "single-groupby-5-1-12", "double-groupby-1", "cpu-max-all-8")),
    # TSBS's tables have their designated timestamp as `timestamp`, tsbench's as `time`: no cross
    "questdb": Db("questdb", "questdb", "influx", None, None, cross=False),
    # TSBS's Cassandra loader cannot load into Cassandra 4 or later (its tables are made WITH COMPACT
    # STORAGE; made without it, its loader's session is closed before the first write: preRun's
    # deferred cleanup, load/loader.go), and its query runner needs all five series tables and
    # answers nothing on tsbench's keyspace: no TSBS cells, the load's failure noted
    "cassandra": Db("cassandra", "cassandra", "csv", "benchmark", "keyspace", ()),
}


def tsbs_load_argv(a, db: Db, ports: dict, path: str) -> list[str]:
    """TSBS's loader, 4 workers x 10,000 rows as tsbench's default; gzip off on both sides."""
    exe = os.path.join(a.tsbs_bin, f"tsbs_load_{db.name}")
    common = ["--file", path, "--workers", "4", "--batch-size", "10000"]
    if db.name == "influx":
        return [exe, *common, "--urls", db.url(ports), "--gzip=false", "--db-name", "benchmark"]
    if db.name == "victoriametrics":
        return [exe, *common, "--urls", db.url(ports) + "/write"]
    if db.name == "questdb":
        return [exe, *common, "--url", db.url(ports) + "/", "--ilp-bind-to", f"127.0.0.1:{ports['ilp']}"]
    return [exe, *common, "--hosts", f"127.0.0.1:{ports['cql']}", "--db-name", "benchmark",
            "--write-timeout", "60s", "--do-create-db=false"]          # the keyspace: tsbs_keyspace()


def tsbs_query_argv(a, db: Db, ports: dict, path: str, dbname: str | None) -> list[str]:
    exe = os.path.join(a.tsbs_bin, f"tsbs_run_queries_{db.name}")
    common = ["--file", path, "--workers", "1", "--print-interval", "0"]
    if dbname:
        common += ["--db-name", dbname]
    if db.name == "cassandra":
        return [exe, *common, "--host", f"127.0.0.1:{ports['cql']}", "--aggregation-plan", "client",
                "--read-timeout", "60s"]
    return [exe, *common, "--urls", db.url(ports) + ("/" if db.name == "questdb" else "")]


async def run(argv: list[str], timeout: float) -> str:
    """A TSBS command, bounded (killed past `timeout` or when the run is stopped); its stdout
    (a failure raises with the first lines it said)."""
    p = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(p.communicate(), timeout)
    except BaseException:
        p.kill()
        await p.wait()
        raise
    if p.returncode:
        said = [x for x in (err or out).decode(errors="replace").splitlines() if x.strip()]
        raise RuntimeError(f"{os.path.basename(argv[0])}: exit {p.returncode}: {' / '.join(said[:2])[:300]}")
    return out.decode(errors="replace")


def end_of(a) -> str:
    return (START + datetime.timedelta(hours=a.hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def tsbs_data(a, db: Db) -> str:
    path = os.path.join(a.data_dir, f"tsbs-{db.tsbs_format}-{a.hosts}-{a.hours}h.dat")
    if not os.path.exists(path):
        await run([os.path.join(a.tsbs_bin, "tsbs_generate_data"), "--use-case", "devops", "--scale", str(a.hosts),
             "--seed", str(SEED), "--timestamp-end", end_of(a), "--format", db.tsbs_format, "--file", path + ".tmp"],
            a.timeout)
        os.replace(path + ".tmp", path)
    return path


async def tsbench_data(a, fmt: str) -> str:
    path = os.path.join(a.data_dir, f"tsbench-{fmt}-{a.hosts}-{a.hours}h.dat")
    if not os.path.exists(path + ".manifest.json"):
        await run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.hosts), "--seed", str(SEED),
                   "--end", end_of(a), "--format", fmt, "-j", "2", "-o", path], a.timeout)
    return path


def foreign_manifest(tsbs_path: str, tsbench_path: str) -> None:
    """TSBS's influx file as tsbench's load takes it: tsbench's manifest of the same shape
    beside it, its size put right and no sha256 (the rows and values are the same: TSBS's
    devops and tsbench's write the same series, epochs and fields)."""
    m = json.loads(pathlib.Path(tsbench_path + ".manifest.json").read_text())
    m["bytes"] = m["file_bytes"] = os.path.getsize(tsbs_path)
    m.pop("sha256", None)
    pathlib.Path(tsbs_path + ".manifest.json").write_text(json.dumps(m))


def server_cpu(pids: list[int]) -> float:
    """CPU seconds the server's processes have spent (user + system)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            f = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except (OSError, IndexError):
            pass
    return total / tick


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class Bench:
    """One database's run: its server, the connections to each data set, the figures."""

    a: argparse.Namespace
    db: Db
    main: object                                  # the Connection holding the server tsbench started
    ports: dict
    conns: dict = field(default_factory=dict)     # data ("TSBS", "tsbench") -> tsbench's Connection to it
    p50: dict = field(default_factory=dict)       # (type, tool, data) -> block medians, ms
    notes: dict = field(default_factory=dict)     # (type, tool, data) -> why there is no figure
    loads: dict = field(default_factory=dict)     # (loader, file) -> [(rows/s, server CPU s / M rows, client CPU s)]
    ds: object = None                             # tsbench's dataset (the queries are drawn from it)
    ref: object = None                            # its reference engine (empty answers redrawn)

    async def tsbs_queries(self, qtype: str, block: int) -> str:
        a = self.a
        n = -(-a.queries // a.blocks)
        path = os.path.join(a.data_dir, f"q-{self.db.tsbs_format}-{a.hosts}-{a.hours}h-{qtype}-{n}-{block}.gob")
        if not os.path.exists(path):
            await run([os.path.join(a.tsbs_bin, "tsbs_generate_queries"), "--use-case", "devops", "--scale", str(a.hosts),
                 "--seed", str(SEED + block), "--timestamp-start", START.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "--timestamp-end", end_of(a), "--format", self.db.tsbs_format, "--query-type", qtype,
                 "--queries", str(n), "--file", path + ".tmp"], a.timeout)
            os.replace(path + ".tmp", path)
        return path

    async def tsbs_block(self, qtype: str, block: int, data: str) -> float:
        """TSBS's p50 (ms) over one block of its queries, on `data`."""
        with tempfile.NamedTemporaryFile(suffix=".json") as res:
            dbname = (self.db.tsbs_name if data == "TSBS" else "tsbench") if self.db.tsbs_name else None
            queries = await self.tsbs_queries(qtype, block)
            await run([*tsbs_query_argv(self.a, self.db, self.ports, queries, dbname), "--results-file", res.name],
                      self.a.timeout)
            return json.loads(pathlib.Path(res.name).read_text())["Totals"]["overallQuantiles"]["all_queries"]["q50"]

    async def tsbench_block(self, specs, data: str) -> float:
        """tsbench's p50 (ms) over one block of its drawn queries, on `data` (1 worker, no validation)."""
        from tsbench.execute.run import ExecOptions
        from tsbench.experiments import session

        conn = self.conns[data]
        res = await session.run_queries(conn, self.ds, specs, ExecOptions(workers=1, cache="none", validate=False,
                                                                           progress=False))
        ok = [r["latency"] for r in res.records if r["status"] == "ok"]
        if len(ok) < len(res.records):
            bad = next(r for r in res.records if r["status"] != "ok")
            raise RuntimeError(f"{len(res.records) - len(ok)} of {len(res.records)} failed: "
                               f"{str(bad.get('error') or bad.get('status'))[:200]}")
        return statistics.median(ok) * 1e3

    async def cells(self, qtype: str, cells: list[tuple[str, str]], specs: dict) -> None:
        """The (tool, data) cells of one type in alternating blocks (specs: tsbench's drawn
        queries by tool); a cell that fails is noted (its first error) and left out of the later blocks."""
        per = -(-self.a.queries // self.a.blocks)
        for block in range(self.a.blocks):
            for tool, data in cells:
                key = (qtype, tool, data)
                if key in self.notes:
                    continue
                try:
                    if tool == "TSBS":
                        ms = await self.tsbs_block(qtype, block, data)
                    elif specs.get(tool) is None:
                        raise RuntimeError("tsbench does not run this type here")
                    else:
                        ms = await self.tsbench_block(specs[tool][block * per:(block + 1) * per], data)
                    self.p50.setdefault(key, []).append(ms)
                except Exception as exc:        # noqa: BLE001 - noted in the table, the run goes on
                    self.notes[key] = f"{type(exc).__name__}: {exc}"[:300]

    async def indexed(self) -> None:
        """QuestDB: tsbench's queries in alternating blocks without and with the index on the cpu
        table's hostname that TSBS's query runner adds before its queries (ALTER TABLE cpu ALTER
        COLUMN hostname ADD INDEX), dropped and added again between blocks."""
        for qtype in self.a.types:
            specs = self.draw(qtype)
            if specs is None:
                continue
            per = -(-len(specs) // self.a.blocks)
            for block in range(self.a.blocks):
                for tool in ("tsbench", "tsbench, hostname indexed"):
                    self.questdb_exec(f"ALTER TABLE cpu ALTER COLUMN hostname {'ADD' if ',' in tool else 'DROP'} INDEX")
                    ms = await self.tsbench_block(specs[block * per:(block + 1) * per], "tsbench")
                    self.p50.setdefault((qtype, tool, "tsbench"), []).append(ms)
            print(f"  {qtype}: tsbench {statistics.median(self.p50[(qtype, 'tsbench', 'tsbench')]):.2f}, hostname "
                  f"indexed {statistics.median(self.p50[(qtype, 'tsbench, hostname indexed', 'tsbench')]):.2f}")
        self.questdb_exec("ALTER TABLE cpu ALTER COLUMN hostname DROP INDEX")

    def questdb_exec(self, sql: str) -> None:
        q = urllib.parse.urlencode({"query": sql})
        try:
            with urllib.request.urlopen(f"{self.db.url(self.ports)}/exec?{q}", timeout=self.a.timeout) as r:
                r.read()
        except urllib.error.HTTPError as exc:
            if b"not indexed" not in exc.read() and "DROP" not in sql:
                raise

    def draw(self, qtype: str, allow_empty: bool = False):
        """tsbench's queries of one type as `tsbench queries generate` draws them (empty answers
        redrawn against the reference engine), or None where this target does not run the type."""
        from tsbench.databases.shared.support import support_matrix
        from tsbench.experiments import session

        if not support_matrix().runs(self.db.name, qtype):
            return None
        return session.draw(self.ds, [qtype], self.a.queries, SEED, reference=self.ref, allow_empty=allow_empty)

    async def queries(self, datas: list[str]) -> None:
        """Every type: the tools on the data sets the server holds now."""
        for qtype in self.a.types:
            cells = [(tool, d) for d in datas for tool in ("TSBS", "tsbench")
                     if (tool == "tsbench" or qtype in self.db.tsbs_types) and (self.db.cross or tool == d)]
            specs = {}
            try:
                specs["tsbench"] = self.draw(qtype)
                if qtype == "high-cpu-1" and "tsbench" in datas and specs["tsbench"] is not None:
                    # TSBS keeps a query whose answer is empty, tsbench redraws it: the same type with empties kept
                    specs[KEPT] = self.draw(qtype, allow_empty=True)
                    cells.append((KEPT, "tsbench"))
            except Exception as exc:            # noqa: BLE001
                self.notes[(qtype, "tsbench", "draw")] = str(exc)[:300]
            await self.cells(qtype, cells, specs)
            print(f"  {qtype}: " + ", ".join(f"{t} on {d} {statistics.median(self.p50[(qtype, t, d)]):.2f}"
                                             for t, d in cells if (qtype, t, d) in self.p50), flush=True)

    async def tsbs_load(self, path: str, extra: list[str] = ()) -> tuple[float, float, float]:
        """TSBS's loader on its file: (rows/s as it reports them, server CPU s per M rows, its CPU s)."""
        pids, c0, s0 = self.main.server.pids(), children_cpu(), None
        s0 = server_cpu(pids)
        out = await run([*tsbs_load_argv(self.a, self.db, self.ports, path), *extra], self.a.timeout)
        line = next(x for x in out.splitlines() if x.startswith("loaded") and " rows in " in x)
        rows, secs = int(line.split()[1]), float(line.split(" in ")[1].split("sec")[0])
        await self.main.target.flush()
        return rows / secs, (server_cpu(pids) - s0) / rows * 1e6, children_cpu() - c0

    async def tsbs_loaded(self, path: str) -> bool:
        """TSBS's data loaded by TSBS's loader, or its failure noted (TSBS's queries then run on tsbench's data only)."""
        try:
            self.say_load("TSBS's loader, TSBS's data", await self.tsbs_load(path))
            return True
        except (RuntimeError, subprocess.SubprocessError) as exc:
            self.notes[("load", "TSBS", "TSBS")] = str(exc)[:300]
            print(f"  load TSBS's loader, TSBS's data: failed: {exc}"[:300], flush=True)
            return False

    async def tsbench_load(self, conn, path: str, verify: bool = True) -> tuple[float, float, float]:
        """tsbench's load (4 workers x 10,000 rows, its defaults) into `conn`, dropping what is there."""
        from tsbench.data.datafile import open_datafile
        from tsbench.experiments import session
        from tsbench.load.run import LoadOptions

        pids = self.main.server.pids()
        s0 = server_cpu(pids)
        res = await session.load(conn, open_datafile(path), LoadOptions(progress=False, compact=False,
                                                                        if_exists="drop", verify=verify))
        if res.status != "ok":
            raise RuntimeError(f"tsbench load: {res.status}: {res.reason}")
        return res.rows / res.seconds, (server_cpu(pids) - s0) / res.rows * 1e6, res.client_cpu_seconds

    def say_load(self, what: str, fig: tuple[float, float, float]) -> None:
        print(f"  load {what}: {fig[0]:,.0f} rows/s, server {fig[1]:.2f} CPU s per M rows, client {fig[2]:.2f} CPU s",
              flush=True)


def connect(db: Db, server: str, options: dict | None = None, name: str | None = None):
    from tsbench.experiments import session

    return session.open_target(session.Reach(db.name, server, options or {}, name=name), announce=False)


async def one_database(a, db: Db) -> Bench:
    """Start the server, load both data sets, run the queries, measure the load rates; stop it."""
    from tsbench.data.datafile import open_datafile
    from tsbench.experiments import session

    tsbs_path = await tsbs_data(a, db) if db.tsbs_types else None
    own_path = await tsbench_data(a, db.tsbench_format)
    async with contextlib.AsyncExitStack() as stack:
        main = await stack.enter_async_context(connect(db, "local", name=f"tsbs-{db.name}"))
        st = main.server.state
        print(f"{db.name} {st.version} (pid {st.pid}), devops {a.hosts} hosts x {a.hours} h", flush=True)
        b = Bench(a, db, main, dict(st.ports))
        b.ds = open_datafile(own_path).dataset
        b.ref = session.reference(b.ds)
        url = db.url(b.ports)
        if db.name == "cassandra" and tsbs_path:
            await tsbs_keyspace(main)
        tsbs_data_in = tsbs_path is not None and await b.tsbs_loaded(tsbs_path)
        if db.tsbs_name:          # both data sets at once: tsbench's in its own database / keyspace
            b.conns["TSBS"] = await stack.enter_async_context(connect(db, url, {db.tsbench_option: db.tsbs_name}))
            b.conns["tsbench"] = main
            b.say_load("tsbench, tsbench's data", await b.tsbench_load(main, own_path))
            await b.queries(["TSBS", "tsbench"] if tsbs_data_in else ["tsbench"])
        else:                     # the names collide: TSBS's data first, then tsbench's in its place
            b.conns["TSBS"] = b.conns["tsbench"] = main
            if tsbs_data_in:
                await b.queries(["TSBS"])
            b.say_load("tsbench, tsbench's data", await b.tsbench_load(main, own_path))
            await (b.indexed() if db.name == "questdb" else b.queries(["tsbench"]))
        if db.tsbench_format == "influx" and db.name != "questdb" and a.load_rounds:
            await load_rounds(b, tsbs_path, own_path)
    return b


async def tsbs_keyspace(conn) -> None:
    """TSBS's Cassandra loader makes its tables WITH COMPACT STORAGE, which Cassandra 4 and later
    refuse: its keyspace and tables are made here without it (the loader runs with
    --do-create-db=false); otherwise as TSBS's creator.go makes them."""
    db = conn.target.db
    await db.rows("DROP KEYSPACE IF EXISTS benchmark")
    await db.rows("CREATE KEYSPACE benchmark WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    for t in ("bigint", "float", "double", "boolean", "blob"):
        await db.rows(f"CREATE TABLE benchmark.series_{t} (series_id text, timestamp_ns bigint, value {t}, "
                      "PRIMARY KEY (series_id, timestamp_ns))")


async def load_rounds(b: Bench, tsbs_path: str, own_path: str) -> None:
    """TSBS's loader on its file, tsbench on TSBS's file and tsbench on its own, in rounds,
    each into an emptied database (InfluxDB: database loadtest; VictoriaMetrics: the store)."""
    foreign_manifest(tsbs_path, own_path)
    opts = {"database": "loadtest"} if b.db.name == "influx" else {}
    async with connect(b.db, b.db.url(b.ports), opts) as conn:
        for _ in range(b.a.load_rounds):
            await empty(b, conn)
            extra = ["--db-name", "loadtest"] if b.db.name == "influx" else []
            b.loads.setdefault(("TSBS", "TSBS's file"), []).append(await b.tsbs_load(tsbs_path, extra))
            b.loads.setdefault(("tsbench", "TSBS's file"), []).append(await b.tsbench_load(conn, tsbs_path, False))
            b.loads.setdefault(("tsbench", "its own file"), []).append(await b.tsbench_load(conn, own_path))
            for (tool, f), figs in b.loads.items():
                b.say_load(f"{tool}, {f}", figs[-1])
        await empty(b, conn)


async def empty(b: Bench, conn) -> None:
    """Drop what the load rounds wrote (tsbench's own drop, as `--if-exists drop` does)."""
    from tsbench.core.model import Tables

    await conn.target.create(Tables((), 0, 0, 0, 0), "drop")


CELLS = (("TSBS", "TSBS"), ("tsbench", "tsbench"), ("TSBS", "tsbench"), ("tsbench", "TSBS"))
HEAD = ("TSBS p50 ms", "tsbench p50 ms", "TSBS on tsbench's data", "tsbench on TSBS's data", "tsbench / TSBS")


def table(benches: list[Bench]) -> None:
    """The side-by-side table (medians of the block p50s), the figures recorded, the notes."""
    print("\n| database | type | " + " | ".join(HEAD) + " |\n|---|---|" + "---|" * len(HEAD))
    notes = []
    for b in benches:
        for qtype in b.a.types:
            med = {c: statistics.median(b.p50[(qtype, *c)]) for c in CELLS if (qtype, *c) in b.p50}
            if not med:
                continue
            cells = [f"{med[c]:.2f}" if c in med else "-" for c in CELLS]
            both = CELLS[0] in med and CELLS[1] in med
            cells.append(f"{med[CELLS[1]] / med[CELLS[0]]:.2f}" if both else "-")
            print(f"| {b.db.name} | {qtype} | " + " | ".join(cells) + " |")
            for (tool, data), v in med.items():
                record.figure(f"{b.db.name} {qtype}: {tool} on {data}'s data p50", v, "ms")
        notes += [f"{b.db.name} {k[0]} {k[1]} on {k[2]}: {why}" for k, why in b.notes.items()]
    for b in benches:
        for (qtype, tool, data), v in b.p50.items():
            if tool not in ("TSBS", "tsbench"):
                print(f"{b.db.name} {qtype}, {tool}: p50 {statistics.median(v):.2f} ms")
                record.figure(f"{b.db.name} {qtype}: {tool} on {data}'s data p50", statistics.median(v), "ms")
    for b in benches:
        for (tool, f), figs in b.loads.items():
            rate, cpu, client = (statistics.median(x[i] for x in figs) for i in range(3))
            print(f"load {b.db.name}, {tool} on {f}: {rate:,.0f} rows/s, server {cpu:.2f} CPU s per M rows, "
                  f"client {client:.2f} CPU s (medians of {len(figs)} rounds)")
            record.figure(f"{b.db.name} load, {tool} on {f}: rows/s", rate, "rows/s")
            record.figure(f"{b.db.name} load, {tool} on {f}: server CPU per M rows", cpu, "s")
    for n in notes:
        print("note:", n)
    print(f"p50: the median over {benches[0].a.blocks} alternating blocks of each block's median latency, 1 worker; "
          "TSBS's as tsbs_run_queries reports it, tsbench's send -> last byte plus client work")


async def _main(a) -> None:
    benches = []
    for name in a.databases:
        try:
            benches.append(await asyncio.wait_for(one_database(a, DBS[name]), a.timeout * 10))
        except Exception as exc:                # noqa: BLE001 - one database's failure, the others go on
            print(f"{name}: failed: {type(exc).__name__}: {exc}"[:600], flush=True)
    if benches:
        table(benches)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tsbs-bin", required=True, help="directory of TSBS's built binaries")
    ap.add_argument("--databases", default=",".join(DBS), type=lambda s: s.split(","))
    ap.add_argument("--types", default=",".join(TYPES), type=lambda s: s.split(","))
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--hours", type=int, default=13)
    ap.add_argument("--queries", type=int, default=200, help="queries per type and tool (each data set)")
    ap.add_argument("--blocks", type=int, default=4, help="alternating blocks the queries are cut into")
    ap.add_argument("--load-rounds", type=int, default=2, help="rounds of the load comparison (0: none)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds any one step may take")
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "tsbench-tsbs"))
    record.arguments(ap)
    a = ap.parse_args()
    bad = [d for d in a.databases if d not in DBS]
    if bad or not os.path.isfile(os.path.join(a.tsbs_bin, "tsbs_generate_data")):
        ap.error(f"unknown database {bad[0]!r}" if bad else f"{a.tsbs_bin}: no tsbs_generate_data there")
    os.makedirs(a.data_dir, exist_ok=True)
    record.start("tsbs", a)
    with signals.as_interrupt() as caught:      # SIGTERM as Ctrl-C: the servers stopped, TSBS's commands killed
        try:
            asyncio.run(_main(a))
        except KeyboardInterrupt:
            print(f"stopped ({caught.name or 'SIGINT'}); the servers it started are stopped", file=sys.stderr)
            sys.exit(signals.EXIT_CODES[caught.name or "SIGINT"])
    record.finish()


if __name__ == "__main__":
    main()
