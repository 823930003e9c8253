"""Phase 4 (and 5): run a queries file against a target and measure it.

N asyncio workers take queries in file order (cycling for --count/--duration);
with --rate the i-th query is scheduled at t0 + i/rate and its latency counts
from that scheduled time, so a slow server cannot hide its queueing. Burn-in
queries are run but not counted. Cache modes: warm (a first pass over the
file is run and discarded), cold (before each pass the server is restarted and
the OS page cache dropped; where that is not possible the run is recorded as
lukewarm with the reason), cold-query (the same before every query). Every answer of a distinct query can be checked
against the reference engine (validate)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import UserError
from .queries.base import QuerySpec
from .queries.compare import DEFAULT_REL_TOL, compare
from .databases.target import Target
from .errors import Fatal, Retryable, Unsupported

PERCENTILES = (50, 90, 95, 99, 99.9)


@dataclass
class ExecOptions:
    workers: int = 1
    count: int | None = None         # measured queries (default: one pass over the file)
    duration: float | None = None    # or: seconds of measured queries
    burn_in: int = 0
    rate: float | None = None        # queries per second, all workers together
    cache: str = "warm"              # warm | cold | cold-query | none (validate: one pass, nothing discarded)
    validate: bool = True
    rel_tol: float | None = None     # float tolerance (default: from the target's float_digits)
    print_responses: bool = False
    progress: bool = True

    def check(self) -> None:
        if self.workers < 1:
            raise UserError(f"--workers: must be at least 1, got {self.workers}")
        if self.count is not None and self.count < 1:
            raise UserError(f"--count: must be at least 1, got {self.count}")
        if self.rate is not None and self.rate <= 0:
            raise UserError(f"--rate: must be positive, got {self.rate}")
        if self.cache not in ("warm", "cold", "cold-query", "none"):
            raise UserError(f"--cache: warm, cold or cold-query, got {self.cache!r}")


@dataclass
class ExecResult:
    target: str
    cache: str
    cache_note: str = ""
    records: list[dict] = field(default_factory=list)      # one per measured execution
    validation: list[dict] = field(default_factory=list)   # one per distinct query checked
    unsupported: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timeline: list[dict] = field(default_factory=list)

    def stats(self) -> list[dict]:
        """Per query type: count, latency min/mean/percentiles/max (ms), qps, ttfb, bytes, errors."""
        out = []
        bad = {}
        for v in self.validation:
            bad[v["type"]] = bad.get(v["type"], 0) + (not v["ok"])
        types = sorted({r["type"] for r in self.records})
        for t in types + ["all"]:
            rs = [r for r in self.records if t == "all" or r["type"] == t]
            ok = np.array([r["latency"] for r in rs if r["status"] == "ok"]) * 1e3
            ttfb = [r["ttfb"] for r in rs if r["status"] == "ok" and r["ttfb"] is not None]
            row = {"type": t, "count": len(rs), "errors": sum(r["status"] == "error" for r in rs),
                   "qps": round(len(ok) / self.seconds, 2) if self.seconds else None,
                   "mismatches": sum(bad.values()) if t == "all" else bad.get(t, 0)}
            if len(ok):
                row.update(min_ms=float(ok.min()), mean_ms=float(ok.mean()), max_ms=float(ok.max()),
                           **{f"p{p:g}_ms": float(np.percentile(ok, p)) for p in PERCENTILES},
                           ttfb_p50_ms=float(np.median(ttfb) * 1e3) if ttfb else None,
                           bytes_mean=_mean_or_none([r["bytes"] for r in rs if r["status"] == "ok"]))
            out.append(row)
        return out

    def summary(self) -> dict:
        return {"target": self.target, "cache": self.cache, "cache_note": self.cache_note,
                "seconds": round(self.seconds, 3), "stats": self.stats(), "validation": self.validation,
                "unsupported": self.unsupported, "timeline": self.timeline}


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


async def _cold(target: Target, server) -> str | None:
    """Restart the server and drop the page cache; the reason if not possible."""
    reasons = []
    if server is not None:
        await target.close()
        await asyncio.to_thread(server.restart)
        target.url = server.url
        await target.open()
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
    warm-up passes unrecorded, then the measured passes, each cold if asked."""
    opts.check()
    ex = _Execution(target, opts, reference)
    if not ex.render(specs):
        return ex.res
    if opts.burn_in:
        await ex.run_pass(ex.plan(opts.burn_in), False, None, None)
    if opts.cache == "warm":
        await ex.run_pass(ex.runnable, False, None, None)
    await ex.measured(server)
    return ex.res


class _Execution:
    """One execute call: the rendered queries, the workers' passes and the result."""

    def __init__(self, target: Target, opts: ExecOptions, reference):
        self.target, self.opts, self.reference = target, opts, reference
        self.res = ExecResult(type(target).name, opts.cache)
        self.runnable: list[QuerySpec] = []
        self.natives: dict[int, object] = {}
        self.checked: set[int] = set()
        digits = target.float_digits
        self.rel_tol = opts.rel_tol or (10.0 ** (1 - digits) if digits else DEFAULT_REL_TOL)

    def render(self, specs: list[QuerySpec]) -> bool:
        """Render every query once, before anything is timed; False if none can run."""
        for s in specs:
            try:
                self.natives[s.id] = self.target.render(s)
                self.runnable.append(s)
            except Unsupported:
                if s.type not in self.res.unsupported:
                    self.res.unsupported.append(s.type)
        return bool(self.runnable)

    def plan(self, n: int | None) -> list[QuerySpec]:
        if n is None:
            n = len(self.runnable) * 1000     # --duration: enough, the deadline stops it
        return [self.runnable[i % len(self.runnable)] for i in range(n)]

    async def measured(self, server) -> None:
        """The recorded passes (cold: the server restarted and caches dropped before each)."""
        opts, res = self.opts, self.res
        measured = opts.count if opts.count is not None else (None if opts.duration else len(self.runnable))
        seq = self.plan(measured)
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
                    why = await _cold(self.target, server)
                    if why and why not in notes:
                        notes.append(why)
                deadline = t0 + opts.duration if opts.duration else None
                await self.run_pass(seq[k * per:(k + 1) * per], True, time.perf_counter() if opts.rate else None,
                                    deadline)
        finally:
            ticker.cancel()
            res.seconds = time.perf_counter() - t0
            sampler.sample()
            sampler.close()
        if cold and notes:
            res.cache, res.cache_note = "lukewarm", "; ".join(notes)

    async def run_pass(self, seq: list[QuerySpec], record: bool, t_sched0: float | None,
                       deadline: float | None) -> None:
        queue: asyncio.Queue = asyncio.Queue()
        for i, s in enumerate(seq):
            queue.put_nowait((i, s))

        async def worker(w: int):
            while True:
                try:
                    i, s = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if deadline is not None and time.perf_counter() > deadline:
                    return
                sched = None
                if t_sched0 is not None:
                    sched = t_sched0 + i / self.opts.rate
                    delay = sched - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await self.one(w, s, sched, record)

        await asyncio.gather(*(worker(w) for w in range(self.opts.workers)))

    async def one(self, w: int, s: QuerySpec, sched: float | None, record: bool) -> None:
        """One query: run, time to the answer's last byte, validate a distinct query once."""
        opts, res = self.opts, self.res
        start = time.perf_counter()
        rec = {"id": s.id, "type": s.type, "worker": w, "start": start, "status": "ok", "error": "",
               "ttfb": None, "bytes": None, "rows": 0}
        try:
            ans = await self.target.query(self.natives[s.id])
            # to the answer's last byte (or the driver's rows), not through our normalization
            end = start + ans.seconds if ans.seconds else time.perf_counter()
            rec.update(ttfb=ans.ttfb, bytes=ans.nbytes, rows=len(ans.rows))
            if opts.print_responses:
                print(f"-- query {s.id} ({s.type}) on {res.target}: {len(ans.rows)} rows\n"
                      f"{ans.raw}\n" + "\n".join(map(str, ans.rows[:50])), flush=True)
            if record and opts.validate and self.reference is not None and s.id not in self.checked:
                self.checked.add(s.id)
                mm = compare(s.params, self.reference.expected(s), ans.rows, self.rel_tol)
                res.validation.append({"id": s.id, "type": s.type, "ok": mm is None,
                                       "diff": mm.diff() if mm else "", "rel_tol": self.rel_tol})
        except (Fatal, Retryable) as exc:
            end = time.perf_counter()
            rec.update(status="error", error=str(exc)[:1000])
        rec["latency"] = end - (sched if sched is not None else start)
        if record:
            res.records.append(rec)


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
