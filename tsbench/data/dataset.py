"""What a dataset is (phase 1 and every later phase): a DatasetSpec names the
use case, scale, time range, seed and parameters; `resolve` turns it into the
schema, the entity count and the epochs the simulator runs."""

from __future__ import annotations

from dataclasses import dataclass, fields

from tsbench.core.bounds import MAX_SEED, check_entities, check_time
from tsbench.core.errors import UserError
from tsbench.core.options import options_fields
from tsbench.core.timeutil import format_time, parse_duration, parse_time
from tsbench.data.options import DatasetSettings
from tsbench.data.schema import Compiled, Schema, compile_schema
from tsbench.data.usecases import USE_CASES, use_case


@dataclass
@options_fields(DatasetSettings)
class DatasetSpec:
    """The generate options that define the data (not where it goes), already of their
    types: DatasetSettings's fields and defaults (data/options.py), which click's options
    and an experiment file's datasets: entries are made of; spec_from_pairs checks text
    by it. A plain dataclass, the one the phases pass around."""


def spec_from_pairs(pairs: dict[str, str], option: str) -> DatasetSpec:
    """KEY=VALUE pairs (--generate, --dataset) as a DatasetSpec: the spec's own keys
    converted and checked by pydantic (scale=10 is a number), the others the use case's
    parameters. A bad value is one line naming the option and the key."""
    from pydantic import ValidationError

    keys = {f.name for f in fields(DatasetSpec)} - {"params"}
    own = {k: v for k, v in pairs.items() if k in keys}
    try:
        return DatasetSpec(**dict(DatasetSettings.model_validate(
            {**own, "params": {k: v for k, v in pairs.items() if k not in keys}})))
    except ValidationError as exc:
        e = exc.errors()[0]
        raise UserError(f"{option} {'.'.join(map(str, e['loc']))}={own.get(e['loc'][0])}: {e['msg']}") from None


@dataclass
class Dataset:
    spec: DatasetSpec
    schema: Schema
    compiled: Compiled
    entities: int
    start_ns: int
    interval_ns: int
    epochs: int
    stored = False       # made by the simulator (a StoredDataset, data/stored.py, is read from an import)

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.epochs * self.interval_ns

    @property
    def total_epochs(self) -> int:
        """Epochs the simulator emits, with the tail where late records land."""
        return self.epochs + (self.schema.faults.max_lateness if self.epochs else 0)

    def group_range(self, group: int, groups: int) -> tuple[int, int]:
        """Entities [lo, hi) of group `group` of `groups`: an exact split."""
        return group * self.entities // groups, (group + 1) * self.entities // groups

    def describe(self) -> dict:
        """The resolved spec as plain data, for manifests."""
        return {"use_case": self.spec.use_case, "scale": self.entities, "start": format_time(self.start_ns),
                "end": format_time(self.end_ns), "interval_ns": self.interval_ns, "epochs": self.epochs,
                "seed": self.spec.seed, "params": self.spec.params, "schema_file": self.spec.schema_file,
                "schema": self.schema.name}


def spec_of(described: dict) -> DatasetSpec:
    """The DatasetSpec back from Dataset.describe() (as stored in manifests and queries files)."""
    d = described
    params = dict(d.get("params") or {})
    if d["use_case"] == "synthetic":
        # points / shards only derive the time range, which end and interval now state
        for k in ("points", "shards", "points_per_shard", "shard_duration"):
            params.pop(k, None)
    return DatasetSpec(use_case=d["use_case"], scale=None if d["use_case"] == "synthetic" else d["scale"],
                       start=d["start"], end=d["end"], interval=f"{d['interval_ns']}ns", seed=d["seed"],
                       params=params, schema_file=d.get("schema_file"))


def resolve(spec: DatasetSpec) -> Dataset:
    if spec.use_case not in USE_CASES:
        raise UserError(f"--use-case: unknown use case {spec.use_case!r} (one of {', '.join(USE_CASES)})")
    cls = use_case(spec.use_case)
    if spec.use_case == "custom":
        uc = cls(spec.params, schema_file=spec.schema_file)
    else:
        if spec.schema_file:
            raise UserError("--schema: only the custom use case takes a schema file")
        uc = cls(spec.params)
    if not 0 <= spec.seed <= MAX_SEED:
        raise UserError("--seed: must be within 0 .. 2^64-1")
    start = check_time(parse_time(spec.start, "--start"), "--start")
    end = check_time(parse_time(spec.end, "--end"), "--end") if spec.end is not None else None
    interval = parse_duration(spec.interval, "--interval") if spec.interval is not None else None
    entities = check_entities(uc.entities(spec.scale), "--scale" if spec.scale is not None else "--param")
    start, interval, epochs = uc.time_range(start, end, interval)
    uc.interval_ns = interval
    schema = uc.schema()
    check_time(start + (epochs + schema.faults.max_lateness + 1) * interval, "--end, --interval or --param (the latest a late point comes)")
    return Dataset(spec, schema, compile_schema(schema), entities, start, interval, epochs)
