"""The synthetic use case (phase 1): cardinality studies in the style of inch
(`-t 10,10,10`, measurements, fields per point, points per series) and ingen
(tag product, points per series per shard, shards).

Series = the product of the tag cardinalities; tag k of series i is
value<(i / stride_k) % card_k>, the last tag varying fastest. Field values are
floats on a clamped random walk in [0, 100].
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic import Field as PField

from tsbench.core.bounds import MAX_SCHEMA_ITEMS, MAX_TAGS
from tsbench.core.errors import UserError
from tsbench.core.timeutil import parse_duration
from tsbench.data.schema import Schema, Series, Tag, cwd, init_uniform, normal, parse_template
from tsbench.data.usecases.base import UseCase


class SyntheticParams(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    tags: list[int] = [10, 10, 10]
    measurements: int = PField(1, ge=1, le=MAX_SCHEMA_ITEMS)
    fields: int = PField(1, ge=1, le=MAX_SCHEMA_ITEMS)
    points: int | None = PField(None, ge=1)          # inch -p: points per series
    shards: int | None = PField(None, ge=1)          # ingen -shards
    points_per_shard: int | None = PField(None, ge=1)  # ingen -p
    shard_duration: str = "1d"
    field_type: str = "float"

    @field_validator("tags", mode="before")
    @classmethod
    def _split(cls, v):
        if isinstance(v, str):
            try:
                v = [int(x) for x in v.split(",") if x.strip()]
            except ValueError:
                raise ValueError("tag cardinalities are integers like 10,10,10") from None
        if not v or any(int(x) < 1 for x in v):
            raise ValueError("tag cardinalities are positive integers like 10,10,10")
        if len(v) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags")
        return v


class Synthetic(UseCase):
    """synthetic: series = product of --param tags=10,10,10; --param points=N
    (inch) or --param shards=S points_per_shard=P [shard_duration=1d] (ingen)."""

    name = "synthetic"
    Params = SyntheticParams

    def entities(self, scale: int | None) -> int:
        n = math.prod(self.params.tags)
        if scale is not None and scale != n:
            raise UserError(f"--scale: synthetic derives its series count from --param tags "
                            f"({'x'.join(map(str, self.params.tags))} = {n}); drop --scale")
        return n

    def time_range(self, start_ns, end_ns, interval_ns):
        p = self.params
        if p.shards is not None or p.points_per_shard is not None:
            if p.shards is None or p.points_per_shard is None:
                raise UserError("--param: ingen style needs both shards and points_per_shard")
            if end_ns is not None or interval_ns is not None or p.points is not None:
                raise UserError("--end/--interval: ingen style derives them from shards, points_per_shard "
                                "and shard_duration; drop them")
            shard = parse_duration(p.shard_duration, "--param shard_duration")
            if shard % p.points_per_shard:
                raise UserError("--param points_per_shard: must divide shard_duration in whole nanoseconds")
            return start_ns, shard // p.points_per_shard, p.shards * p.points_per_shard
        if p.points is not None:
            if end_ns is not None:
                raise UserError("--end: with --param points the end is start + points x interval; drop --end")
            return start_ns, interval_ns or 10_000_000_000, p.points
        return super().time_range(start_ns, end_ns, interval_ns)

    def schema(self) -> Schema:
        p = self.params
        if p.field_type not in ("float", "int"):
            raise UserError("--param field_type: float or int")
        cards = p.tags
        tags = []
        for k, card in enumerate(cards):
            stride = math.prod(cards[k + 1:])
            tags.append(Tag(f"tag{k}", parse_template(f"value{{entity/{stride}%{card}}}")))
        fields = tuple(cwd(f"v{j}", normal(0, 1), 0, 100, init_uniform(0, 100), type=p.field_type)
                       for j in range(p.fields))
        series = tuple(Series(f"m{m}", fields) for m in range(p.measurements))
        return Schema("synthetic", series, entity_tags=tuple(tags))
