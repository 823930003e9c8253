"""The iot use case (phase 1): trucks with readings and diagnostics, and
imperfect delivery (dropped groups, late groups, missing, late, null fields and
null tags) with TSBS's probabilities as defaults, all configurable.

Delivery is decided per (truck, measurement) stream, so any split of trucks
across processes yields the same records. A late entry keeps its timestamp and
is written 1..max_delay epochs later (a late group: group_size epochs later).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field as PField

from ..schema import (Faults, Field, Schema, Series, choice_tag, const, cwd, init_by_tag, init_uniform, normal,
                      tag, uniform, INIT_DRAW)
from .base import UseCase

MODELS = {"F-150": (2000, 200, 15), "G-2000": (5000, 300, 19), "H-2": (1500, 150, 12)}

TRUCK_TAGS = (
    tag("name", "truck_{entity}"),
    choice_tag("fleet", ["East", "West", "North", "South"]),
    choice_tag("driver", ["Derek", "Rodney", "Albert", "Andy", "Seth", "Trish"]),
    choice_tag("model", list(MODELS)),
    choice_tag("device_version", ["v1.0", "v1.5", "v2.0", "v2.3"]),
)


def model_fields() -> tuple[Field, ...]:
    names = ("load_capacity", "fuel_capacity", "nominal_fuel_consumption")
    return tuple(const(n, init_by_tag("model", {m: v[i] for m, v in MODELS.items()}), type="float")
                 for i, n in enumerate(names))


def readings() -> Series:
    return Series("readings", (
        cwd("latitude", uniform(-0.005, 0.005), -90, 90, init_uniform(0, 90), type="float", decimals=5),
        cwd("longitude", uniform(-0.005, 0.005), -180, 180, init_uniform(0, 180), type="float", decimals=5),
        cwd("elevation", uniform(-10, 10), 0, 5000, init_uniform(0, 500), type="float", decimals=0),
        cwd("velocity", uniform(-10, 10), 0, 100, 0, type="float", decimals=0),
        cwd("heading", uniform(-5, 5), 0, 360, init_uniform(0, 360), type="float"),
        cwd("grade", uniform(-5, 5), 0, 100, 0, type="float"),
        cwd("fuel_consumption", uniform(-5, 5), 0, 50, 25, type="float", decimals=1),
        *model_fields(),
    ))


def diagnostics() -> Series:
    return Series("diagnostics", (
        cwd("fuel_state", uniform(-0.001, 0), 0, 1, 1, type="float", decimals=1, reset=True),
        Field("current_load", "fresh", uniform(0, 5000), init=INIT_DRAW, type="float", prob=0.05),
        cwd("status", normal(0, 1), 0, 5, 0, type="int"),
        *model_fields(),
    ))


class IotParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    group_size: int = PField(10, ge=1)
    group_drop: float = PField(0.01, ge=0, le=1)
    group_late: float = PField(0.05, ge=0, le=1)
    missing: float = PField(0.10, ge=0, le=1)
    late: float = PField(0.30, ge=0, le=1)
    null_field: float = PField(0.10, ge=0, le=1)
    null_tag: float = PField(0.01, ge=0, le=1)
    max_delay: int = PField(10, ge=1)


class Iot(UseCase):
    """iot: scale = trucks; readings and diagnostics per truck per epoch, with
    imperfect delivery (--param missing=0.1 late=0.3 ... ; all 0 for perfect data)."""

    name = "iot"
    Params = IotParams

    def schema(self) -> Schema:
        p = self.params
        faults = Faults(group_size=p.group_size, group_drop=p.group_drop, group_late=p.group_late,
                        entry_missing=p.missing, entry_late=p.late, field_null=p.null_field,
                        tag_null=p.null_tag, max_delay=p.max_delay)
        return Schema("iot", (readings(), diagnostics()), entity_tags=TRUCK_TAGS, faults=faults)
