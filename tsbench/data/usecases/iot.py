"""The iot use case (phase 1): trucks with readings and diagnostics, and
imperfect delivery (dropped groups, late groups, missing, late, null fields and
null tags) with TSBS's probabilities as defaults, all configurable.

Delivery is decided per (truck, measurement) stream, so any split of trucks
across processes yields the same records. A late entry keeps its timestamp and
is written 1..max_delay epochs later (a late group: group_size epochs later).
"""

from __future__ import annotations

from tsbench.data.schema import (
    INIT_DRAW,
    Faults,
    Field,
    Schema,
    Series,
    choice_tag,
    const,
    cwd,
    init_by_tag,
    init_uniform,
    normal,
    tag,
    uniform,
)
from tsbench.data.usecases.base import UseCase, fault_model

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


# --param KEY=VALUE: the fault settings with TSBS's defaults (schema.FAULT_SETTINGS)
IotParams = fault_model("IotParams", "iot")


class Iot(UseCase):
    """iot: scale = trucks; readings and diagnostics per truck per epoch, with
    imperfect delivery (--param missing=0.1 late=0.3 ... ; all 0 for perfect data)."""

    name = "iot"
    Params = IotParams

    def schema(self) -> Schema:
        faults = Faults(**self.params.model_dump())
        return Schema("iot", (readings(), diagnostics()), entity_tags=TRUCK_TAGS, faults=faults)
