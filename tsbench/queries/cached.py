"""The reference as drawing (phase 3) and validation (phase 5) ask it: each
answer from memory, else from the disk cache (answer_store.py), else from the
reference engine (reference.py), which is built only at the first answer not
cached, timed and its memory measured. What it did (hits, misses, the build)
goes into a run's manifest."""

from __future__ import annotations

import sys
import time
from typing import Callable

from tsbench.data.dataset import Dataset
from tsbench.queries import answer_store, reference
from tsbench.queries.base import QuerySpec


def _stderr(msg: str) -> None:
    print(f"tsbench: {msg}", file=sys.stderr, flush=True)


class CachedReference:
    """expected(spec) like the engine's; the engine is built lazily. say: progress lines and notes."""

    def __init__(self, ds: Dataset, say: Callable[[str], None] | None = None):
        self.ds, self.say = ds, say or _stderr
        root = answer_store.cache_dir()
        self.store = answer_store.AnswerStore(root, ds, self.say) if root is not None else None
        self.engine = None
        self.answers: dict[str, list[tuple]] = {}
        self.hits = self.misses = 0
        self.build_seconds, self.pss_added_bytes = 0.0, 0

    def expected(self, spec: QuerySpec) -> list[tuple]:
        """The reference answer (each distinct query looked up once per process)."""
        return self._get(spec, reference.reference_sql(spec), lambda e: e.answer(spec), True)

    def scales(self, spec: QuerySpec) -> list[tuple]:
        """A summed aggregate's n and sum|x| per row and field (Reference.scales), cached alike."""
        return self._get(spec, reference.reference_scale_sql(spec), lambda e: e.scale_answer(spec), False)

    def _get(self, spec: QuerySpec, sql: str, compute, answer: bool) -> list[tuple]:
        """Rows of the reference's SQL for spec: from memory, the disk cache or the engine
        (answer: counted among the answers' hits and misses)."""
        key = answer_store.query_key(spec, sql)
        if key not in self.answers:
            rows = self.store.get(key) if self.store is not None else None
            if rows is None:
                self.misses += answer
                rows = compute(self._built())            # kept here, not in the engine too
                if self.store is not None:
                    self.store.put(key, rows)
            else:
                self.hits += answer
            self.answers[key] = rows
        return self.answers[key]

    def _built(self):
        if self.engine is None:
            import psutil

            ds, me = self.ds, psutil.Process()
            size = f"{ds.tables.rows:,} imported rows" if ds.stored else \
                f"{ds.entities:,} entities x {ds.epochs:,} epochs"
            self.say(f"building the reference engine ({size}): an answer is not in the cache")
            t0, pss0 = time.perf_counter(), me.memory_full_info().pss
            self.engine = reference.Reference(ds)
            self.build_seconds = round(time.perf_counter() - t0, 3)
            self.pss_added_bytes = me.memory_full_info().pss - pss0
            self.say(f"reference engine built in {self.build_seconds:.1f} s, "
                     f"{self.pss_added_bytes / 2**20:,.0f} MiB (PSS added)")
        return self.engine

    def summary(self) -> dict:
        """For the manifest: the cache's folder (None: disabled), distinct answers read from
        it (hits) and computed (misses), and the engine's build (0 when not built)."""
        return {"cache": str(self.store.dir) if self.store is not None else None, "hits": self.hits,
                "misses": self.misses, "built": self.engine is not None, "build_seconds": self.build_seconds,
                "pss_added_bytes": self.pss_added_bytes}

    def note(self) -> str:
        """One line: where the answers came from."""
        built = f"; engine built in {self.build_seconds:.1f} s" if self.engine is not None else \
            "; no engine built"
        where = "" if self.store is not None else " (cache off)"
        return f"reference answers: {self.hits} from the cache, {self.misses} computed{where}{built}"
