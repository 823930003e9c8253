"""Phase 3: draw queries once from the seed and store them in a queries file
that every target renders from (JSON lines: a header with the dataset, then one
QuerySpec per line)."""

from __future__ import annotations

import json
import pathlib
import zlib

import numpy as np

from ..dataset import Dataset
from ..errors import UserError
from .base import DatasetContext, QuerySpec
from .catalog import CATALOG
from . import iot  # noqa: F401,E402  (registers the iot types)

FORMAT_VERSION = 1


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


def context(ds: Dataset) -> DatasetContext:
    from ..datafile import tables_of
    from ..native import Simulator

    sim = Simulator(ds.compiled, ds.spec.seed, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs)
    tags = {t.key: _EntityValues(sim, k, ds.entities) for k, t in enumerate(ds.schema.entity_tags)}
    return DatasetContext(ds.spec.use_case, tables_of(ds, 0, 0), ds.start_ns, ds.end_ns, ds.interval_ns,
                          ds.entities, tags)


def query_type(name: str):
    if name not in CATALOG:
        raise UserError(f"unknown query type {name!r} (see: python -m tsbench queries list)")
    return CATALOG[name]


def generate(ds: Dataset, types: list[str], count: int, seed: int) -> list[QuerySpec]:
    """`count` queries of each type, parameters drawn from (seed, type, i) only."""
    if count < 1:
        raise UserError(f"--count: must be at least 1, got {count}")
    ctx = context(ds)
    qts = [query_type(t) for t in types]
    for qt in qts:
        why = qt.applies(ctx)
        if why:
            raise UserError(why)
    out = []
    for qt in qts:
        for i in range(count):
            rng = np.random.Generator(np.random.PCG64([seed, zlib.crc32(qt.name.encode()), i]))
            out.append(QuerySpec(len(out), qt.name, qt.make(rng, ctx)))
    return out


def write_queries(path: str | pathlib.Path, ds: Dataset, seed: int, specs: list[QuerySpec]) -> None:
    with open(path, "w") as f:
        f.write(json.dumps({"tsbench_queries": FORMAT_VERSION, "seed": seed, "dataset": ds.describe()}) + "\n")
        for s in specs:
            f.write(json.dumps(s.to_dict()) + "\n")


def read_queries(path: str | pathlib.Path) -> tuple[dict, list[QuerySpec]]:
    p = pathlib.Path(path)
    try:
        lines = p.read_text().splitlines()
    except FileNotFoundError:
        raise UserError(f"{p}: no such queries file (make one with: python -m tsbench queries generate)") from None
    try:
        head = json.loads(lines[0])
        if head.get("tsbench_queries") != FORMAT_VERSION:
            raise ValueError("not a tsbench queries file")
        specs = [QuerySpec.from_dict(json.loads(x)) for x in lines[1:] if x.strip()]
    except (ValueError, KeyError, IndexError) as exc:
        raise UserError(f"{p}: not a tsbench queries file ({exc})") from None
    for s in specs:
        query_type(s.type)
    return head, specs
