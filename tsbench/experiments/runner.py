"""The experiment runner (all phases): for each cell of an experiment's matrix,
generate the dataset (cached by its spec, reused across cells), then its trials
(trials.py): each load trial starts a fresh server (or reaches a URL and drops the
tables), loads and verifies; after the last one the queries are drawn (once per
dataset) and each execute trial runs and validates them on that database; each
stream trial is a new stream on a fresh server. A cell that fails (a trial failing
fails it; the remaining trials are skipped) is recorded with the server's words and
the run goes on; Ctrl-C or SIGTERM marks the current cell interrupted and keeps the rest.
Results go to results/<experiment>/<run-id>/: manifest.json and parquet tables
`cells` (one row per cell, its figures the medians over its trials: stats.py),
`trials` (per cell, phase and trial), `load` (per cell per second), `queries` (per
execution), `resources` (per cell per second per role, from the monitor),
`verify` (per cell per table, with the verify phase) and `stream` (per cell per
second per writer, query type and freshness probe, with the stream phase: the
stream command's per-second table), each row with its phase's `trial`, readable
without tsbench, rewritten as each cell ends. A stream experiment (phases: [stream])
generates no data file: its writers make their data as they go."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import traceback

from tsbench.core import aiorun, secrets, signals
from tsbench.core.errors import Fatal, Retryable, Unsupported, UserError
from tsbench.core.hostfacts import host_facts
from tsbench.core.options import build
from tsbench.core.outfile import OutputFile, write_text
from tsbench.execute.run import ExecOptions, ExecResult
from tsbench.experiments import session, stats
from tsbench.experiments.experiment import Cell, Experiment, cells, describe_cell
from tsbench.experiments.monitor import ResourceMonitor
from tsbench.experiments.noise import NoiseMeter
from tsbench.experiments.trials import execute_row, label, load_columns, query_columns, stream_columns, trial_row
from tsbench.load.run import LoadError, LoadOptions


def _dataset_key(decl: dict, fmt: str) -> str:
    return hashlib.sha256(json.dumps([decl, fmt], sort_keys=True).encode()).hexdigest()[:16]


def _git_revision() -> str | None:
    try:
        p = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                           cwd=pathlib.Path(__file__).resolve().parent, timeout=10)
        return p.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _ms(v) -> str:
    return "-" if v is None else f"{v:,.2f} ms"


def cell_row(c: Cell) -> dict:
    """The cells table's columns known before the cell runs."""
    return {"cell": c.id, "dataset": c.dataset_name, "target_name": c.target_name,
            "target": c.target.target, "server": c.target.server,
            "options": json.dumps(c.target.options, sort_keys=True),
            "knobs": json.dumps(c.knobs, sort_keys=True),
            "workers": c.load.workers, "batch_size": c.load.batch_size, "cluster": c.load.cluster,
            "clients": 1, "client_hosts": socket.gethostname(), "status": "ok", "reason": ""}


def stream_dataset(c: Cell):
    """A stream cell's dataset: its declaration, from the current time with stream.start now."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.stream.run import start_now

    decl = c.dataset.generated_settings()       # a file dataset has no stream phase (load_experiment)
    if c.stream.time is not None:
        decl.update(interval=c.stream.interval(), end=None)
    if c.stream.start == "now":
        decl.update(start=start_now(decl["interval"]), end=None)
    return resolve(DatasetSpec(**decl))


class Runner:
    def __init__(self, exp: Experiment, results: str | pathlib.Path, quiet: bool = False, redact: bool = False):
        self.exp, self.quiet, self.redact = exp, quiet, redact
        self._redactions = contextlib.ExitStack()     # one per imported dataset with --redact, until run() ends
        self.phases = set(exp.phases)
        self.run_id = time.strftime("%Y%m%dT%H%M%S")
        self.dir = pathlib.Path(results) / exp.name / self.run_id
        self.data_dir = pathlib.Path(results) / exp.name / "data"
        self.cell_rows: list[dict] = []
        self.trial_rows: list[dict] = []
        self._trial: tuple[str, int, int] | None = None     # the trial running: (phase, trial, trials)
        self.load_rows: list[dict] = []
        self.query_rows: list[dict] = []
        self.resource_rows: list[dict] = []
        self.verify_rows: list[dict] = []
        self.stream_rows: list[dict] = []
        self.interrupted: str | None = None     # the signal that stopped the run
        self.servers: dict[str, str] = {}
        self.ceilings: dict[str, dict] = {}
        self.clients: dict[str, list] = {}      # cell id: its --cluster slots (worker, host facts, figures)
        self.datasets: dict[str, dict] = {}
        self._refs: dict[str, object] = {}
        self._noise: dict[int, NoiseMeter] = {}  # cell id: the machine's noise over its trials

    def say(self, msg: str) -> None:
        if not self.quiet:
            print(f"tsbench: {secrets.mask(msg)}", file=sys.stderr, flush=True)

    def run(self) -> pathlib.Path:
        """Every cell in turn, the results rewritten as each ends; SIGINT and SIGTERM stop
        the run alike (servers stopped, finished cells kept, the current one interrupted)."""
        all_cells = cells(self.exp)
        for d in (self.dir, self.data_dir):
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserError(f"--results: cannot make the folder {str(d)!r}: {exc.strerror or exc}") from None
        self._write()                           # a readable run folder from the start
        with self._redactions, signals.as_interrupt() as caught:
            try:
                for c in all_cells:
                    several = ", ".join(f"{n} {ph}" for ph, n in self._planned(c).items() if n > 1)
                    self.say(f"[{c.id + 1}/{len(all_cells)}] {describe_cell(c)}"
                             + (f"; trials: {several}" if several else ""))
                    self._run_cell(c, caught)
                    self._write()
            except KeyboardInterrupt:
                self.interrupted = caught.name or "SIGINT"
                self.say(f"interrupted ({self.interrupted}): finished cells are kept, "
                         f"the current cell is marked interrupted")
            finally:
                with signals.deferred():        # a further signal waits for the last write
                    self._write()
        return self.dir

    @property
    def not_ok(self) -> int:
        """Cells whose status is not ok."""
        return sum(r["status"] != "ok" for r in self.cell_rows)

    def _run_cell(self, c: Cell, caught) -> None:
        """One cell; any error fails that cell only (the server's words, or ours with a trace)."""
        from tsbench import databases

        row = cell_row(c) | {"trials": json.dumps(self._planned(c))}
        self.cell_rows.append(row)
        t0 = time.perf_counter()
        self._trial = None
        try:
            streams_only = self.phases == {"stream"}         # no data file: the writers make their data
            df = None if streams_only else self._datafile(c, databases.target_class(c.target.target).format)
            aiorun.run(self._cell(c, row, df))
        except KeyboardInterrupt:
            row.update(status="interrupted",
                       reason=self._trial_ended(c, "interrupted", f"interrupted by {caught.name or 'SIGINT'}"))
            raise
        except (UserError, Fatal, Retryable, Unsupported, OSError, asyncio.TimeoutError) as exc:
            row.update(status="failed", reason=self._trial_ended(c, "failed", str(exc) or type(exc).__name__))
            self.say(f"cell {c.id} failed: {row['reason']}")
        except Exception as exc:         # a bug of ours: recorded with its trace, and the run goes on
            row.update(status="failed",
                       reason=self._trial_ended(c, "failed", f"internal error: {type(exc).__name__}: {exc}"))
            self.say(f"cell {c.id} failed: {row['reason']}\n{traceback.format_exc()}")
        finally:
            row["cell_seconds"] = round(time.perf_counter() - t0, 3)
            row.update(stats.cell_columns([t for t in self.trial_rows if t["cell"] == c.id and t["status"] == "ok"],
                                          [q for q in self.query_rows if q["cell"] == c.id]))

    def _planned(self, c: Cell) -> dict:
        """The trials each phase of the cell runs (the cells table's trials column)."""
        out = {}
        if "load" in self.phases:
            out["load"] = c.load.repeat
        if "stream" in self.phases:
            out["stream"] = c.stream.repeat
        if self.phases & {"queries", "execute", "validate"} and c.queries_here:
            out["execute"] = c.execute.repeat
        return out

    def _begin(self, phase: str, trial: int, n: int) -> str:
        """Enter a trial; its name in progress lines: the phase, with "trial 2/3" when there are several."""
        self._trial = (phase, trial, n)
        return label(phase, trial, n) if n > 1 else phase

    def _add_trial(self, c: Cell, phase: str, figures: dict, status: str = "ok", reason: str = "") -> None:
        _, trial, _ = self._trial
        self.trial_rows.append({"cell": c.id, **trial_row(phase, trial, figures, status, reason)})

    def _trial_ended(self, c: Cell, status: str, reason: str) -> str:
        """A trial failed or interrupted: its row in the trials table says so (added if the
        phase had not recorded it); the cell's reason names the trial when there are several."""
        if self._trial is None:
            return reason
        phase, trial, n = self._trial
        last = self.trial_rows[-1] if self.trial_rows else {}
        if (last.get("cell"), last.get("phase"), last.get("trial")) == (c.id, phase, trial):
            last.update(status=status, reason=reason)
        else:
            self._add_trial(c, phase, {}, status, reason)
        return f"{label(phase, trial, n)}: {reason}" if n > 1 else reason

    def _datafile(self, c: Cell, fmt: str):
        from tsbench.data.datafile import open_datafile
        from tsbench.data.dataset import DatasetSpec, resolve
        from tsbench.data.generate import generate

        if c.dataset.file:
            return self._stored_datafile(c, fmt)
        decl = c.dataset.generated_settings()
        path = self.data_dir / f"{c.dataset_name}-{_dataset_key(decl, fmt)}.{fmt}"
        if not pathlib.Path(str(path) + ".manifest.json").exists():
            self.say(f"generating {c.dataset_name} ({fmt})")
            ds = resolve(DatasetSpec(**decl))
            t0 = time.perf_counter()
            # several processes write the same bytes as one, faster
            generate(ds, fmt, str(path), None, None, 1, min(os.cpu_count() or 1, 4), show_progress=not self.quiet)
            self.say(f"generated {path.name} in {time.perf_counter() - t0:.1f} s")
        df = open_datafile(path)
        self.datasets[c.dataset_name] = {"spec": df.dataset.describe(), "sha256": df.manifest.get("sha256"),
                                         "rows": df.rows, "values": df.values}
        return df

    def _stored_datafile(self, c: Cell, fmt: str):
        """A dataset of the user's file: imported once into the data folder (keyed by the file's path,
        size, time and the import's settings), then written in the target's format once."""
        from tsbench.data.datafile import open_datafile
        from tsbench.data.importing import import_data
        from tsbench.data.stored import open_stored
        from tsbench.core.redact import Redaction, key as redact_key
        from tsbench.data.storedfile import write_datafile
        from tsbench.queries.storedview import every_tag_value

        src = pathlib.Path(c.dataset.file).resolve()
        st = src.stat()
        settings = c.dataset.import_settings()
        key = _dataset_key([str(src), st.st_size, st.st_mtime_ns, settings.model_dump()], "import")
        folder = self.data_dir / f"{c.dataset_name}-import-{key}"
        if not (folder / "import.json").exists():
            self.say(f"importing {src.name} for {c.dataset_name}")
            t0 = time.perf_counter()
            m = import_data(str(src), str(folder), settings)
            self.say(f"imported {sum(m['rows'].values()):,} rows in {len(m['rows'])} measurements in "
                     f"{time.perf_counter() - t0:.1f} s")
        ds = open_stored(folder)
        if self.redact and c.dataset_name not in self.datasets:
            self._redactions.enter_context(secrets.redacting(Redaction(every_tag_value(ds), redact_key())))
        path = self.data_dir / f"{c.dataset_name}-{key}.{fmt}"
        if not pathlib.Path(str(path) + ".manifest.json").exists():
            write_datafile(ds, fmt, str(path))
        df = open_datafile(path)
        self.datasets[c.dataset_name] = {"spec": ds.describe(), "source": {"file": src.name,
                                                                            "sha256": ds.meta["source"].get("sha256")},
                                         "sha256": df.manifest.get("sha256"), "rows": df.rows, "values": df.values}
        return df

    async def _cell(self, c: Cell, row: dict, df) -> None:
        if self.phases <= {"generate"}:
            return
        if "load" in self.phases:
            await self._ceiling(c, df)
        if "stream" in self.phases:             # each stream trial on a fresh target
            for k in range(c.stream.repeat):
                name = self._begin("stream", k, c.stream.repeat)
                async with self._target(c, row, k) as (conn, mon):
                    await self._stream(c, row, conn, mon, name)
            return
        n = c.load.repeat if "load" in self.phases else 1
        for k in range(n):                      # each load trial on a fresh target; the queries on the last
            name = self._begin("load", k, n) if "load" in self.phases else None
            async with self._target(c, row, k) as (conn, mon):
                if "load" in self.phases:
                    await self._load(c, row, df, conn, mon, name)
                if "verify" in self.phases:
                    await self._verify(c, row, df, conn, k)
                if k == n - 1 and self.phases & {"queries", "execute", "validate"} and c.queries_here:
                    await self._queries(c, row, df, conn, mon)

    @contextlib.asynccontextmanager
    async def _target(self, c: Cell, row: dict, trial: int):
        """(connection, resource monitor) of a fresh target: a local server started anew,
        or the URL reached again; the monitor's rows carry the trial."""
        t = c.target
        reach = session.Reach(t.target, t.server, t.options, t.server_options, name=f"{self.exp.name}-{t.target}",
                              stall_seconds=self._connect_bound(c))
        async with session.open_target(reach, announce=not self.quiet) as conn:
            mon = ResourceMonitor(conn.server.pids if conn.server else None, conn.datadir,
                                  labels={"cell": c.id, "trial": trial}, noise=self._noise_of(c))
            try:
                with mon:
                    row["server_version"] = await session.server_version(conn)
                    self.servers[c.target_name] = row["server_version"]
                    yield conn, mon
            finally:
                self.resource_rows.extend(mon.rows)
                for k, v in mon.peaks().items():          # the peaks over every trial's target
                    row[k] = v if row.get(k) is None else row[k] if v is None else max(row[k], v)
                row.update(mon.noise())                   # over every trial's span so far (one meter a cell)

    def _noise_of(self, c: Cell) -> NoiseMeter:
        """The cell's noise meter, shared by the monitors of its trials."""
        return self._noise.setdefault(c.id, NoiseMeter())

    def _connect_bound(self, c: Cell) -> float:
        """Connecting and the version probe: the shortest stall bound of the phases the cell runs."""
        sections = [(c.load, {"load", "verify"}), (c.execute, {"queries", "execute", "validate"}),
                    (c.stream, {"stream"})]
        return min((sec.stall_timeout for sec, used in sections if used & self.phases), default=session.STALL_S)

    async def _load(self, c: Cell, row: dict, df, conn, mon: ResourceMonitor, name: str) -> None:
        mon.phase = "load"
        lo = c.load
        self.say(f"{name}: {df.rows:,} rows, {lo.workers} workers x {lo.batch_size:,}")
        opts = build(LoadOptions, dict(lo), if_exists="drop", progress=not self.quiet)
        try:
            res = await session.load(conn, df, opts)
        except LoadError as exc:
            if getattr(exc, "result", None) is not None:
                self._load_rows(c, exc.result)
            raise
        self._load_rows(c, res)
        row.update(load_columns(res))
        self._add_trial(c, "load", load_columns(res))
        self.say(f"loaded in {res.seconds:.1f} s: {row['rows_per_s']:,.0f} rows/s, {row['values_per_s']:,.0f} "
                 f"values/s, {row['mb_per_s']:.1f} MB/s; verified {res.counted:,} {res.count_unit}; "
                 f"disk {(res.datadir_bytes or 0) / 1e6:,.1f} MB")

    async def _stream(self, c: Cell, row: dict, conn, mon: ResourceMonitor, name: str) -> None:
        """The stream phase: the cell's dataset written as it is generated (stream/run.py)."""
        from tsbench.stream.run import StreamError, stream_options

        mon.phase = "stream"
        ds = stream_dataset(c)
        self.datasets[c.dataset_name] = {"spec": ds.describe()}
        row.update(workers=c.stream.writers, batch_size=c.stream.batch_size)
        specs = None
        if c.stream.queries:
            names = session.select_types(ds, c.queries.types, c.queries.families)
            specs = session.draw(ds, names, c.queries.count, c.queries.seed, allow_empty=True) if names else None
        opts = stream_options(c.stream, specs, progress=not self.quiet)
        self.say(f"{name}: {ds.entities * len(ds.schema.series):,} series, {opts.writers} writers x "
                 f"{opts.batch_size:,}" + (f", {opts.rate:,.0f} rows/s" if opts.rate else ", closed loop"))
        try:
            res = await session.stream(conn, ds, opts)
        except StreamError as exc:
            if getattr(exc, "result", None) is not None:
                self._stream_rows(c, ds, row, exc.result)
            raise
        self._stream_rows(c, ds, row, res)
        self.say(f"streamed {res.rows:,} rows in {res.seconds:.1f} s: {row['rows_per_s'] or 0:,.0f} rows/s, "
                 f"write p99 {_ms(row['stream_p99_ms'])}, {res.errors} errors; verified {res.counted:,} "
                 f"{res.count_unit}" if res.verified else f"streamed {res.rows:,} rows; {res.verify_note}")

    def _stream_rows(self, c: Cell, ds, row: dict, res) -> None:
        trial = self._trial[1]
        self.stream_rows.extend({"cell": c.id, "trial": trial, **r} for r in res.seconds_rows())
        row.update(stream_columns(ds, res), cluster=c.stream.cluster)
        self._add_trial(c, "stream", stream_columns(ds, res))
        if res.clients:
            self.clients[c.id] = res.clients

    async def _verify(self, c: Cell, row: dict, df, conn, trial: int) -> None:
        """The per-table check (the verify phase): every table holds what the data file has,
        counts and values (a file's figure and the stored one as text: they may be ints
        beyond int64 or floats)."""
        from tsbench.load.verify import verify

        v = await verify(conn, df)
        self.verify_rows.extend({"cell": c.id, "trial": trial, **r} for r in v.tables)
        self.verify_rows.extend({"cell": c.id, "trial": trial, **r, "file": repr(r["file"]),
                                 "stored": repr(r["stored"])} for r in v.values)
        bad = [r for r in v.tables if r["difference"]]
        self.say(f"verify: {len(v.tables) - len(bad)}/{len(v.tables)} tables hold what the data file has; values: "
                 f"{sum(r['status'] == 'ok' for r in v.values):,} checks ok, {len(v.differing()) - len(bad):,} differ")
        if not v.ok:
            raise UserError(f"verify: {v.summary()}")

    async def _queries(self, c: Cell, row: dict, df, conn, mon: ResourceMonitor) -> None:
        """Draw the queries (once), then the execute trials on this database, each a measured pass."""
        mon.labels["trial"] = 0
        mon.phase = "queries"
        ds, q, ex = df.dataset, c.queries, c.execute
        names = session.select_types(ds, q.types, q.families)
        if not names:
            return
        specs = session.draw(ds, names, q.count, q.seed, reference=lambda: self._reference(c, ds), say=self.say)
        ref = self._reference(c, ds) if "validate" in self.phases else None
        opts = build(ExecOptions, dict(ex), validate=ref is not None, progress=not self.quiet,
                     show_values=not self.redact)
        for j in range(ex.repeat):
            name = self._begin("execute", j, ex.repeat)
            mon.labels["trial"] = j
            mon.phase = "execute"
            self.say(f"{name}: {len(specs)} queries of {len(names)} types, {ex.workers} workers, {ex.cache} cache"
                     + (", validated" if ref is not None else ""))
            er = await session.run_queries(conn, ds, specs, opts, ref)
            if er.clients:
                self.clients[f"{c.id}/execute"] = er.clients
            failure = self._record_queries(c, row, er, ref is not None, j)
            if failure:                         # the remaining trials are skipped
                row.update(status="failed", reason=self._trial_ended(c, "failed", failure))
                return

    def _reference(self, c: Cell, ds):
        """One reference per dataset, shared by the cells that query it: answers from the
        disk cache, the engine built only at the first answer not there."""
        name = c.dataset_name
        if name not in self._refs:
            self._refs[name] = session.reference(ds, say=lambda m: self.say(f"reference for {name}: {m}"))
        return self._refs[name]

    def _record_queries(self, c: Cell, row: dict, er: ExecResult, validated: bool, trial: int) -> str | None:
        """An execute trial's rows and figures; why it failed, else None."""
        t0 = min((r["start"] for r in er.records), default=0.0)
        for r in er.records:
            self.query_rows.append({"cell": c.id, "trial": trial, **r, "start": round(r["start"] - t0, 6)})
        row.update(query_columns(er))
        self.trial_rows.append({"cell": c.id, **execute_row(trial, er)})
        failure = self.trial_rows[-1]["reason"] or None
        self.say(f"executed {len(er.records)}: p50 {_ms(row['query_p50_ms'])}, p99 {_ms(row['query_p99_ms'])}, "
                 f"{row['query_errors']} errors"
                 + (f", {row['validated'] - row['mismatches']}/{row['validated']} equal to the reference "
                    f"({row['validated_nonempty']} non-empty; {row['executions_validated']} executions checked)"
                    if validated else "")
                 + (f", unsupported: {', '.join(er.unsupported)}" if er.unsupported else ""))
        return failure

    async def _ceiling(self, c: Cell, df) -> None:
        """The harness ceiling: the same file and batch size into the null target (no
        database, no network), once per data file and batch size."""
        from tsbench import databases
        from tsbench.load.run import load

        bs = c.load.batch_size
        key = f"{pathlib.Path(df.path).name} batch {bs}"
        if key in self.ceilings:
            return
        null = databases.target_class("null")()
        s = (await load(null, df, LoadOptions(workers=1, batch_size=bs, progress=False))).summary()
        self.ceilings[key] = {"rows_per_s": s["rows_per_s"], "values_per_s": s["values_per_s"],
                              "mb_per_s": s["mb_per_s"], "seconds": s["seconds"]}
        self.say(f"harness ceiling ({key}): {s['rows_per_s']:,.0f} rows/s")

    def _load_rows(self, c: Cell, res) -> None:
        trial = self._trial[1]
        for t in res.timeline:
            self.load_rows.append({"cell": c.id, "trial": trial, **t})
        if res.clients:
            self.clients[c.id] = res.clients

    def _write(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from tsbench import __version__
        from tsbench.data.native import build_id

        for name, rows in (("cells", self.cell_rows), ("trials", self.trial_rows), ("load", self.load_rows), ("queries", self.query_rows),
                           ("resources", self.resource_rows), ("verify", self.verify_rows),
                           ("stream", self.stream_rows)):
            keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "cell", k))
            table = pa.Table.from_pylist([secrets.mask_deep({k: r.get(k) for k in keys}) for r in rows]) \
                if rows else pa.table({})
            with OutputFile(self.dir / f"{name}.parquet", "--results") as f:     # never a half-written table
                pq.write_table(table, f)
        manifest = {"experiment": self.exp.name, "run_id": self.run_id, "config": self.exp.model_dump(),
                    "overrides": self.exp._overrides,
                    "tsbench": __version__, "git_revision": _git_revision(), "c_core": build_id(), "host": host_facts(),
                    "datasets": self.datasets, "servers": self.servers, "harness_ceiling": self.ceilings,
                    "cluster_clients": self.clients, "cells": len(self.cell_rows),
                    "reference": {n: r.summary() for n, r in self._refs.items()},
                    "status": {s: sum(r["status"] == s for r in self.cell_rows)
                               for s in ("ok", "failed", "interrupted")},
                    "interrupted_by": self.interrupted or None}
        write_text(self.dir / "manifest.json", "--results", json.dumps(secrets.mask_deep(manifest), indent=2) + "\n")
