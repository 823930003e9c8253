"""Which use case an imported dataset's schema is (phase 1 for a user's own data, read by the
phases that draw queries): an import whose schema is tsbench's devops schema (TSBS's devops
data, as `tsbs_generate_data --use-case devops` writes it) can have the devops query family
drawn on it. Only names and types are compared, never values:

- the measurements are devops's nine, no more and no fewer;
- each measurement's tag keys are devops's (the ten host tags, and the measurement's own);
- each measurement's fields are devops's by name, every one numeric (float or integer).
  The cpu fields are floats in tsbench and integers in TSBS: either is devops.

detect_use_case says "devops" or None, and why (the first difference when None).
"""

from __future__ import annotations

NUMERIC = ("float", "integer")


def _expected(name: str) -> dict[str, tuple[set[str], set[str]]]:
    """The use case's measurements: {measurement: (tag keys, field names)}."""
    from tsbench.data.usecases import use_case
    schema = use_case(name)().schema()
    return {s.name: ({t.key for t in schema.series_tags(i)}, {f.name for f in s.fields if not f.hidden})
            for i, s in enumerate(schema.series)}


def _difference(name: str, measurements: dict) -> str | None:
    """The first way the import's measurements differ from the use case's, or None."""
    want = _expected(name)
    missing, extra = sorted(set(want) - set(measurements)), sorted(set(measurements) - set(want))
    if missing or extra:
        return (f"measurements {', '.join(missing)} missing" if missing
                else f"measurements not in {name}: {', '.join(extra)}")
    for meas, (tags, fields) in sorted(want.items()):
        got = measurements[meas]
        if set(got["tags"]) != tags:
            return f"{meas}: tag keys {sorted(got['tags'])} are not {name}'s {sorted(tags)}"
        if set(got["fields"]) != fields:
            odd = sorted(set(got["fields"]) ^ fields)
            return f"{meas}: fields differ from {name}'s ({', '.join(odd)})"
        for f, info in sorted(got["fields"].items()):
            if info["type"] not in NUMERIC:
                return f"{meas}.{f} is {info['type']}, not a number"
    return None


def detect_use_case(measurements: dict) -> tuple[str | None, str]:
    """("devops", why) when the import's schema (import.json's schema.measurements) is
    devops's, else (None, the first difference)."""
    why = _difference("devops", measurements)
    if why is not None:
        return None, f"not devops: {why}"
    cpu = {info["type"] for info in measurements["cpu"]["fields"].values()}
    kind = "integer (as TSBS writes them)" if cpu == {"integer"} else \
        "float (as tsbench writes them)" if cpu == {"float"} else "mixed float and integer"
    return "devops", f"devops: its nine measurements, tag keys and fields; cpu fields {kind}"
