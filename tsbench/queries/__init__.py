"""Phase 3: draw queries once from the seed and store them in a queries file
that every target renders from (JSON lines: a header with the dataset, then one
QuerySpec per line).

The drawing rule. Query i of type T takes its parameters from a generator seeded
with (seed, crc32(T), i): attempt 0. Unless empty answers are allowed, the query
is then asked of the reference engine (reference.py, the dataset in DuckDB); if
its answer has no rows, attempts 1 .. 31 draw again from (seed, crc32(T), i,
attempt) and the first whose answer is not empty is kept; if all 32 (ATTEMPTS) are
empty (the type finds nothing in this dataset), attempt 0 is kept. So high-cpu-1
gets a host and 12 h holding a usage_user > 90 whenever one of 32 draws finds one,
and a type that cannot answer anything here keeps its usual draw. Parameters
still depend only on the seed, the type, the index and the dataset's data (fixed
by the dataset's own seed), never on the target; a non-empty attempt 0 is kept as
drawn, and allow_empty keeps attempt 0 always (the draws made before this rule).
"""

from __future__ import annotations

import json
import pathlib
import zlib
from typing import Callable

from tsbench.core.errors import UserError
from tsbench.data.dataset import Dataset
from tsbench.queries import iot  # noqa: F401,E402  (registers the iot types)
from tsbench.queries import generic  # noqa: F401,E402  (registers the generic types)
from tsbench.queries.base import DatasetContext, QuerySpec
from tsbench.queries.catalog import CATALOG
from tsbench.queries.shapes import summed

FAMILIES = tuple(dict.fromkeys(qt.family for qt in CATALOG.values()))     # devops, flux, ...: the catalog's

FORMAT_VERSION = 1
ATTEMPTS = 32          # draws tried per query before an empty answer is kept (the rule above)


class _EntityValues:
    """The values of one entity tag for every entity, computed on demand."""

    def __init__(self, sim, k: int, n: int):
        self.sim, self.k, self.n, self.cache = sim, k, n, {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i not in self.cache:
            self.cache[i] = self.sim.tag_values(int(i), 0)[self.k]
        return self.cache[i]


def context(ds: Dataset, reference=None) -> DatasetContext:
    """The dataset as query types see it; reference: the dataset's reference, or a function
    returning one, for the types that draw from its values (else built when first asked).
    An import (a StoredDataset): its context is queries/storedview.py's."""
    if ds.stored:
        from tsbench.queries.storedview import context as stored_context

        return stored_context(ds, _LazyReference(ds, reference, None))
    from tsbench.data.datafile import tables_of
    from tsbench.data.native import Simulator

    sim = Simulator(ds.compiled, ds.spec.seed, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, cache=None)
    tags = {t.key: _EntityValues(sim, k, ds.entities) for k, t in enumerate(ds.schema.entity_tags)}
    return DatasetContext(ds.spec.use_case, tables_of(ds, 0, 0), ds.start_ns, ds.end_ns, ds.interval_ns,
                          ds.entities, tags, _LazyReference(ds, reference, None))


def query_type(name: str):
    if name not in CATALOG:
        raise UserError(f"unknown query type {name!r} (see: python -m tsbench queries list)")
    return CATALOG[name]


def generate(ds: Dataset, types: list[str], count: int, seed: int, *, allow_empty: bool = False,
             reference=None, say: Callable[[str], None] | None = None) -> list[QuerySpec]:
    """`count` queries of each type, parameters drawn from (seed, type, i) only,
    redrawn when the answer is empty (the rule in this module's docstring) unless
    allow_empty. reference: the dataset's Reference, or a function returning one
    (called once, at the first check); else one is built at the first check.
    say: called with progress lines (building the reference, redraws per type)."""
    if count < 1:
        raise UserError(f"--count: must be at least 1, got {count}")
    if not types:
        raise UserError("--types: no query type given: the queries file would be empty (see: queries list)")
    ref = _LazyReference(ds, reference, say)
    ctx = context(ds)
    ctx.reference = ref
    qts = [query_type(t) for t in types]
    for qt in qts:
        why = qt.applies(ctx)
        if why:
            raise UserError(why)
    check = None if allow_empty else _NonEmpty(ref)
    out = []
    for qt in qts:
        redrawn = kept_empty = 0
        for i in range(count):
            params, attempt = draw_one(qt, ctx, seed, i, check)
            redrawn += bool(attempt)
            kept_empty += attempt is None
            out.append(QuerySpec(len(out), qt.name, params))
            if check is not None and summed(params):
                check.ref.scales(out[-1])      # what validation bounds a sum's rounding by: cached with the answer
        if say and (redrawn or kept_empty):
            say(f"{qt.name}: {redrawn} of {count} redrawn (empty answer at attempt 0)"
                + (f", {kept_empty} still empty after {ATTEMPTS} attempts (attempt 0 kept)" if kept_empty else ""))
    return out


def draw_one(qt, ctx: DatasetContext, seed: int, i: int,
             nonempty: Callable[[str, dict], bool] | None = None) -> tuple[dict, int | None]:
    """Query i of type qt by the drawing rule: (params, the attempt kept, None when
    every attempt was empty and attempt 0 is kept). Without nonempty (allow_empty),
    attempt 0."""
    import numpy as np          # drawing only: a target's dialects import this package without it

    key = [seed, zlib.crc32(qt.name.encode()), i]
    first = qt.make(np.random.Generator(np.random.PCG64(key)), ctx)
    if nonempty is None or nonempty(qt.name, first):
        return first, 0
    for attempt in range(1, ATTEMPTS):
        p = qt.make(np.random.Generator(np.random.PCG64(key + [attempt])), ctx)
        if nonempty(qt.name, p):
            return p, attempt
    return first, None


class _LazyReference:
    """() -> the dataset's reference: the one given (or what the function given returns),
    else a CachedReference (answers from the disk cache, the engine built at the first
    answer not there), taken or made at the first call."""

    def __init__(self, ds: Dataset, given, say: Callable[[str], None] | None):
        self.ds, self.given, self.say, self.ref = ds, given, say, None

    def __call__(self):
        if self.ref is None:
            self.ref = self._make()
        return self.ref

    def _make(self):
        if self.given is not None:
            return self.given() if callable(self.given) else self.given
        from tsbench.queries.cached import CachedReference

        return CachedReference(self.ds, self.say)


class _NonEmpty:
    """Whether a drawn query's reference answer has rows (the reference taken at the first
    question), answers kept by the reference for validation."""

    def __init__(self, reference: _LazyReference):
        self.reference = reference

    @property
    def ref(self):
        return self.reference()

    def __call__(self, type_name: str, params: dict) -> bool:
        return bool(self.ref.expected(QuerySpec(-1, type_name, params)))


def write_queries(path: str | pathlib.Path, ds: Dataset, seed: int, specs: list[QuerySpec],
                  allow_empty: bool | None = None) -> None:
    """The queries file; allow_empty (when given) records how the queries were drawn."""
    head = {"tsbench_queries": FORMAT_VERSION, "seed": seed, "dataset": ds.describe()}
    if allow_empty is not None:
        head["allow_empty"] = allow_empty
    if not specs:
        raise UserError(f"{path}: no queries to write: an empty queries file is refused")
    from tsbench.core.outfile import write_text

    write_text(path, "--output", "".join(json.dumps(x) + "\n" for x in [head] + [s.to_dict() for s in specs]))


def read_queries(path: str | pathlib.Path) -> tuple[dict, list[QuerySpec]]:
    """The header and the specs of a queries file, every spec parsed into typed,
    bounded values (spec.py) before anything renders it; UserError in one line
    naming the file and line of the first that does not parse."""
    from tsbench.queries.spec import SpecError, parse

    p = pathlib.Path(path)
    try:
        lines = p.read_text().splitlines()
    except FileNotFoundError:
        raise UserError(f"{p}: no such queries file (make one with: python -m tsbench queries generate)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read the queries file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        head = json.loads(lines[0])
        if not isinstance(head, dict) or head.get("tsbench_queries") != FORMAT_VERSION:
            raise ValueError("not a tsbench queries file")
        if not isinstance(head.get("dataset"), dict):
            raise ValueError("its header names no dataset")
    except (ValueError, IndexError, RecursionError) as exc:
        raise UserError(f"{p}: not a tsbench queries file ({exc})") from None
    specs, ids = [], set()
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            s = QuerySpec(*parse(json.loads(line)))
        except (ValueError, RecursionError) as exc:        # SpecError, or not JSON
            raise UserError(f"{p}:{no}: {exc if isinstance(exc, SpecError) else f'not JSON ({exc})'}") from None
        if s.id in ids:
            raise UserError(f"{p}:{no}: query id {s.id} given twice")
        ids.add(s.id)
        specs.append(s)
    if not specs:
        raise UserError(f"{p}: the queries file holds no query")
    return head, specs
