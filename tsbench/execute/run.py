"""Phase 4 (and 5): run a queries file against a target and measure it.

N asyncio workers take queries in file order (cycling for --count/--duration);
with --rate the i-th query is scheduled at t0 + i/rate and its latency counts
from that scheduled time, so a slow server cannot hide its queueing. Burn-in
queries are run but not counted. Cache modes: warm (a first pass over the
file is run and discarded), cold (before each pass the server is restarted and
the OS page cache dropped; where that is not possible the run is recorded as
lukewarm with the reason), cold-query (the same before every query).

The timed pass only sends, receives and records: each execution's raw answer is
kept (within ExecOptions.keep_bytes; past it the workers pause, untimed, while
the kept answers are checked) and turned into canonical rows, digested and
compared with the reference engine's answer after the pass (validate), so no
client work but the target's own finish() (client_s) falls inside a latency, which
one timer measures (execute/timer.py). Every
execution gets its own verdict; each distinct answer is compared once."""

from __future__ import annotations

import asyncio
import collections
import collections.abc
import hashlib
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from tsbench.core.errors import Fatal, Retryable, Unsupported, UserError
from tsbench.core.options import options_fields
from tsbench.core.watch import watchdog
from tsbench.databases.shared.target import Target
from tsbench.execute import responses
from tsbench.execute.options import ExecuteCommand
from tsbench.execute.timer import timed_query
from tsbench.queries.base import Answer, QuerySpec, RowSet
from tsbench.queries.compare import at_resolution, compare, tolerance

PERCENTILES = (50, 90, 95, 99, 99.9)


@dataclass
@options_fields(ExecuteCommand, rename={"stall_timeout": "stall_seconds", "check_answers": "validate"})
class ExecOptions:
    """An execute's options: ExecuteCommand's fields (execute/options.py), stall_timeout as
    stall_seconds; cache may also be none (validate: one pass, nothing discarded)."""

    rel_tol: float | None = None     # float tolerance (default: from the target's float_digits)
    keep_bytes: int = 256 << 20      # raw answers kept in the timed pass before an untimed check
    progress: bool = True
    show_values: bool = True         # an answer's values in a mismatch's diff (False: --redact)

    def check(self) -> None:
        if self.workers < 1:
            raise UserError(f"--workers: must be at least 1, got {self.workers}")
        if self.count is not None and self.count < 1:
            raise UserError(f"--count: must be at least 1, got {self.count}")
        if self.rate is not None and self.rate <= 0:
            raise UserError(f"--rate: must be positive, got {self.rate}")
        if self.max_rows < 0:
            raise UserError(f"--max-rows: must be at least 0, got {self.max_rows}")
        if self.query_timeout <= 0:
            raise UserError(f"--query-timeout: must be positive seconds, got {self.query_timeout:g}")
        if self.stall_seconds <= 0:
            raise UserError(f"--stall-timeout: must be positive seconds, got {self.stall_seconds:g}")
        if self.cache not in ("warm", "cold", "cold-query", "none"):
            raise UserError(f"--cache: warm, cold or cold-query, got {self.cache!r}")
        if self.cluster:
            self._check_cluster()

    def _check_cluster(self) -> None:
        from tsbench.core.clusteraddress import parse

        parse(self.cluster)
        if self.cache in ("cold", "cold-query"):
            raise UserError(f"execute --cluster: --cache {self.cache} restarts the server between the driver's "
                            "passes; not with --cluster")
        if self.print_responses:
            raise UserError("execute --cluster: --print-responses shows the answers of one client; not with --cluster")


@dataclass
class ExecResult:
    target: str
    cache: str
    cache_note: str = ""
    records: list[dict] = field(default_factory=list)      # one per measured execution
    validation: list[dict] = field(default_factory=list)   # one per distinct query: its executions' verdicts
    unsupported: list[str] = field(default_factory=list)
    seconds: float = 0.0                 # the measured passes' wall time, untimed checks excluded
    check_seconds: float = 0.0           # the untimed checks of the kept answers (between and after passes)
    timeline: list[dict] = field(default_factory=list)
    clients: list[dict] = field(default_factory=list)     # --cluster: each slot's worker, host and figures

    def stats(self) -> list[dict]:
        """Per query type: count, latency min/mean/percentiles/max (ms), qps, ttfb, bytes, errors."""
        out = []
        types = sorted({r["type"] for r in self.records})
        for t in types + ["all"]:
            rs = [r for r in self.records if t == "all" or r["type"] == t]
            good = [r for r in rs if r["status"] == "ok"]
            ok = np.array([r["latency"] for r in good]) * 1e3
            ttfb = [r["ttfb"] for r in good if r["ttfb"] is not None]
            client = [r["client_s"] for r in good if r["client_s"] is not None]
            row = {"type": t, "count": len(rs), "errors": len(rs) - len(good),
                   "qps": round(len(ok) / self.seconds, 2) if self.seconds else None,
                   **_verdicts(rs)}
            if len(ok):
                row.update(min_ms=float(ok.min()), mean_ms=float(ok.mean()), max_ms=float(ok.max()),
                           **{f"p{p:g}_ms": float(np.percentile(ok, p)) for p in PERCENTILES},
                           ttfb_p50_ms=float(np.median(ttfb) * 1e3) if ttfb else None,
                           client_p50_ms=float(np.median(client) * 1e3) if client else None,
                           bytes_mean=_mean_or_none([r["bytes"] for r in good]))
            out.append(row)
        return out

    def summary(self) -> dict:
        return {"target": self.target, "cache": self.cache, "cache_note": self.cache_note,
                "seconds": round(self.seconds, 3), "check_seconds": round(self.check_seconds, 3),
                "stats": self.stats(), "validation": self.validation,
                "unsupported": self.unsupported, "timeline": self.timeline,
                "clients": len(self.clients) or 1, "client_slots": self.clients}


def _verdicts(rs: list[dict]) -> dict:
    """Validation counts of some records: distinct queries checked, of them those whose
    expected answer was not empty, those with an execution that differs; and executions."""
    checked = [r for r in rs if r["valid"] is not None]
    return {"validated": len({r["id"] for r in checked}),
            "validated_nonempty": len({r["id"] for r in checked if r["empty"] is False}),
            "mismatches": len({r["id"] for r in checked if r["valid"] is False}),
            "executions_validated": len(checked),
            "executions_mismatched": sum(r["valid"] is False for r in checked)}


def _mean_or_none(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def drop_page_cache() -> str | None:
    """Drop the OS page cache; None on success, else why not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return None
    except OSError as exc:
        return f"cannot drop the OS page cache ({exc.strerror or exc})"


async def _cold(target: Target, server, workers: int) -> str | None:
    """Restart the server (connections opened again, untimed) and drop the page cache;
    the reason if not possible."""
    reasons = []
    if server is not None and not server.restart_keeps_data:
        reasons.append(f"{server.kind} keeps its data in memory only: not restarted (a restart would lose it)")
    elif server is not None:
        await target.close()
        await asyncio.to_thread(server.restart)
        target.url = server.url
        await target.open()
        await target.prepare(workers)
    else:
        why = await target.drop_caches()
        if why:
            reasons.append(why)
    why = drop_page_cache()
    if why:
        reasons.append(why)
    return "; ".join(reasons) or None


async def execute(target: Target, specs: list[QuerySpec], opts: ExecOptions, reference=None, server=None,
                  tables=None) -> ExecResult:
    """Run the queries the target renders (the rest recorded as unsupported): burn-in and
    warm-up passes unrecorded, then the measured passes, each cold if asked; every measured
    execution checked after its pass."""
    opts.check()
    ex = Execution(target, opts, reference)
    if not ex.render(specs):
        return ex.res
    async with watchdog(f"queries on {ex.res.target}", progress=lambda: ex.answered,
                        stall_seconds=opts.stall_seconds):
        await target.prepare(opts.workers)      # its probes too (a /ping): a server stopped as execute starts
        await ex.warm_up()
        await ex.measured(server)
    ex.summarize()
    return ex.res


def _digest(rows: list[tuple]) -> str:
    """A canonical answer's digest (exact: floats by repr)."""
    return hashlib.blake2b(repr(rows).encode(), digest_size=8).hexdigest()


def _kept_bytes(ans: Answer) -> int:
    """About how much memory a kept answer holds (raw bytes, or ~40 bytes a value)."""
    raw = ans.raw.rows if isinstance(ans.raw, RowSet) else ans.raw
    if isinstance(raw, (bytes, bytearray)):
        return len(raw)
    n = ans.nbytes or 0
    for rows in (raw, ans.rows):
        if isinstance(rows, list) and rows and isinstance(rows[0], (tuple, list)):
            n += len(rows) * 40 * (len(rows[0]) + 1)
    return n


class Cycled(collections.abc.Sequence):
    """The queries at positions `at` (a range) of the runnable ones cycled: a sequence of
    any length that holds nothing but the range (slices are ranges too)."""

    def __init__(self, runnable: list[QuerySpec], at: range):
        self.runnable, self.at = runnable, at

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return Cycled(self.runnable, self.at[k])
        return self.runnable[self.at[k] % len(self.runnable)]


class _Taken:
    """A pass's (position, query) pairs, each made when a worker takes it (the deque's
    bool and popleft, without holding the pass)."""

    def __init__(self, seq):
        self._it = enumerate(seq)
        self._next = next(self._it, None)

    def __bool__(self) -> bool:
        return self._next is not None

    def popleft(self) -> tuple[int, QuerySpec]:
        item, self._next = self._next, next(self._it, None)
        return item


class Execution:
    """One execute call: the rendered queries, the workers' passes, the untimed checks
    of the kept answers and the result."""

    def __init__(self, target: Target, opts: ExecOptions, reference):
        self.target, self.opts, self.reference = target, opts, reference
        self.res = ExecResult(type(target).name, opts.cache)
        self.runnable: list[QuerySpec] = []
        self.specs: dict[int, QuerySpec] = {}
        self.natives: dict[int, object] = {}
        self.pending: list[tuple[dict, Answer]] = []      # measured executions not yet checked
        self.kept = 0                                     # their _kept_bytes
        self.paused = 0.0                                 # seconds of untimed checks between passes
        self.verdicts: dict[tuple[int, str], str | None] = {}   # (id, digest) -> None or the diff
        self.shown: set[int] = set()
        self.answered = 0                                 # queries answered (stall watch)
        self.share = (0, 1)                               # slot i of n runs measured queries i, i + n, ...
        self.kept_rows: dict[str, list] | None = None     # a cluster slot's distinct answers ("id:digest": rows)
        digits = target.float_digits
        self.rel_tol = opts.rel_tol or (10.0 ** (1 - digits) if digits else 0.0)   # 0: doubles (compare.py)

    def render(self, specs: list[QuerySpec]) -> bool:
        """Render every query once, before anything is timed; False if none can run."""
        for s in specs:
            try:
                self.natives[s.id] = self.target.render(s)
                self.specs[s.id] = s
                self.runnable.append(s)
            except Unsupported:
                if s.type not in self.res.unsupported:
                    self.res.unsupported.append(s.type)
        return bool(self.runnable)

    async def warm_up(self) -> None:
        """The unrecorded passes: burn-in, and a first pass over the file when warm."""
        if self.opts.burn_in:
            await self.run_pass(self.plan(self.opts.burn_in), False, None, None)
        if self.opts.cache == "warm":
            await self.run_pass(self.runnable, False, None, None)

    def plan(self, n: int | None) -> Cycled:
        """n queries of the file cycled, made as they are taken (no list of n)."""
        if n is None:
            n = len(self.runnable) * 1000     # --duration: enough, the deadline stops it
        return Cycled(self.runnable, range(n))

    async def measured(self, server) -> None:
        """The recorded passes (cold: the server restarted and caches dropped before each),
        each followed by the untimed check of its answers."""
        opts, res = self.opts, self.res
        measured = opts.count if opts.count is not None else (None if opts.duration else len(self.runnable))
        seq = self.plan(measured)[self.share[0]::self.share[1]]
        cold = opts.cache in ("cold", "cold-query")
        passes = 1
        if opts.cache == "cold":
            passes = max(1, -(-len(seq) // len(self.runnable)))
        elif opts.cache == "cold-query":
            passes = len(seq)               # every query meets a just-restarted server and an empty page cache
        notes: list[str] = []
        sampler = _Sampler(res, len(seq), f"execute {res.target}", opts.progress)
        t0 = time.perf_counter()
        ticker = asyncio.create_task(sampler.run())
        try:
            per = -(-len(seq) // passes)
            for k in range(passes):
                if cold:
                    why = await _cold(self.target, server, opts.workers)
                    if why and why not in notes:
                        notes.append(why)
                deadline = t0 + self.paused + opts.duration if opts.duration else None
                await self.run_pass(seq[k * per:(k + 1) * per], True, time.perf_counter() if opts.rate else None,
                                    deadline)
                self.check_kept()
        finally:
            ticker.cancel()
            res.seconds = time.perf_counter() - t0 - self.paused
            sampler.sample()
            sampler.close()
        if cold and notes:
            res.cache, res.cache_note = "lukewarm", "; ".join(notes)

    async def run_pass(self, seq: list[QuerySpec], record: bool, t_sched0: float | None,
                       deadline: float | None) -> None:
        """The workers take the queries in order; when the kept answers pass keep_bytes they
        stop, the answers are checked (untimed: deadline and schedule move on by as much),
        and they go on."""
        queue = _Taken(seq)
        while queue:
            await asyncio.gather(*(self._worker(w, queue, record, t_sched0, deadline)
                                   for w in range(self.opts.workers)))
            if not queue or (deadline is not None and time.perf_counter() > deadline):
                return
            dt = self.check_kept()
            deadline = None if deadline is None else deadline + dt
            t_sched0 = None if t_sched0 is None else t_sched0 + dt

    async def _worker(self, w: int, queue: collections.deque, record: bool, t_sched0: float | None,
                      deadline: float | None) -> None:
        while queue and self.kept <= self.opts.keep_bytes:
            if deadline is not None and time.perf_counter() > deadline:
                return
            i, s = queue.popleft()
            sched = None
            if t_sched0 is not None:
                sched = t_sched0 + i / self.opts.rate
                delay = sched - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            await self.one(w, s, sched, record)

    async def one(self, w: int, s: QuerySpec, sched: float | None, record: bool) -> None:
        """One query: run it and record its timing; the answer is kept for check_kept()."""
        start = time.perf_counter()
        rec = {"id": s.id, "type": s.type, "worker": w, "start": start, "status": "ok", "error": "",
               "ttfb": None, "bytes": None, "rows": 0, "client_s": None, "connect_s": None,
               "valid": None, "empty": None, "answer_digest": None}
        queued = 0.0 if sched is None else start - sched
        try:
            async with asyncio.timeout(self.opts.query_timeout):
                ans = await timed_query(self.target, self.natives[s.id])
            self.answered += 1
            rec.update(ttfb=ans.ttfb, bytes=ans.nbytes, client_s=ans.client_s, connect_s=ans.connect_s,
                       latency=queued + ans.seconds)
        except (Fatal, Retryable, TimeoutError) as exc:
            ans = None
            self.answered += not isinstance(exc, TimeoutError)     # the server's refusal is an answer
            why = (f"no answer within {self.opts.query_timeout:g} s (--query-timeout)"
                   if isinstance(exc, TimeoutError) else str(exc)[:1000])
            rec.update(status="error", error=why, latency=queued + time.perf_counter() - start)
        if not record:
            return
        self.res.records.append(rec)
        if ans is not None:
            if ans.rows is not None and not self.opts.print_responses:
                ans.raw = None                     # the client computed the rows: the raw answer is not needed
            self.pending.append((rec, ans))
            self.kept += _kept_bytes(ans)

    # ---- untimed: the kept answers checked --------------------------------------------------
    def check_kept(self) -> float:
        """Canonical rows, digest and verdict of every kept answer; the seconds it took."""
        t0 = time.perf_counter()
        for rec, ans in self.pending:
            self._check(rec, ans)
        self.pending, self.kept = [], 0
        dt = time.perf_counter() - t0
        self.paused += dt
        self.res.check_seconds += dt
        return dt

    def _check(self, rec: dict, ans: Answer) -> None:
        s = self.specs[rec["id"]]
        native = self.natives[s.id]
        try:
            rows = self.target.answer_rows(native, ans)
        except (Fatal, Retryable) as exc:
            rec.update(status="error", error=str(exc)[:1000])
            return
        digest = _digest(rows)
        rec.update(rows=len(rows), answer_digest=digest)
        if self.kept_rows is not None:
            self.kept_rows.setdefault(f"{s.id}:{digest}", rows)
        if self.opts.print_responses and s.id not in self.shown:
            self.shown.add(s.id)
            shown = self.target.answer_lines(native, ans, self.opts.max_rows)
            print(responses.show(self.res.target, s, native, shown, rows, self.opts.max_rows), flush=True)
        self.judge(rec, s, rows, digest)

    def judge(self, rec: dict, s: QuerySpec, rows: list[tuple], digest: str) -> None:
        """An execution's verdict against the reference engine (each distinct answer compared once)."""
        if not self.opts.validate or self.reference is None:
            return
        expected = at_resolution(s.params, self.reference.expected(s), self.target.time_resolution_ns)
        key = (s.id, digest)
        if key not in self.verdicts:
            mm = compare(s.params, expected, rows, tolerance(s, self.rel_tol, self.reference))
            self.verdicts[key] = mm.diff(values=self.opts.show_values) if mm else None
        rec.update(valid=self.verdicts[key] is None, empty=not expected)

    def summarize(self) -> None:
        """One validation entry per distinct query: its executions' verdicts together."""
        by_id: dict[int, list[dict]] = {}
        for r in self.res.records:
            if r["valid"] is not None:
                by_id.setdefault(r["id"], []).append(r)
        for i, rs in by_id.items():
            bad = [r for r in rs if not r["valid"]]
            diff = self.verdicts[i, bad[0]["answer_digest"]] if bad else ""
            self.res.validation.append({"id": i, "type": rs[0]["type"], "ok": not bad, "diff": diff,
                                        "rel_tol": self.rel_tol, "empty": rs[0]["empty"], "executions": len(rs),
                                        "mismatched": len(bad),
                                        "answers": len({r["answer_digest"] for r in rs})})


class _Sampler:
    def __init__(self, res: ExecResult, total: int, label: str, show: bool):
        self.res, self.t0 = res, time.perf_counter()
        self.bar = None
        if show and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                TextColumn("{task.fields[rate]}"), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(label, total=max(total, 1), rate="")

    def sample(self) -> None:
        t = time.perf_counter() - self.t0
        n = len(self.res.records)
        prev = self.res.timeline[-1] if self.res.timeline else {"t": 0.0, "queries": 0}
        qps = (n - prev["queries"]) / max(t - prev["t"], 1e-9)
        self.res.timeline.append({"t": round(t, 3), "queries": n, "qps": round(qps, 1),
                                  "errors": sum(r["status"] == "error" for r in self.res.records)})
        if self.bar is not None:
            self.bar.update(self.task, completed=n, rate=f"{qps:,.0f} q/s")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.sample()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
