"""Whether two runs may be compared (`compare`, after runs): what differs between their
manifests among the things a comparison assumes equal: the datasets (spec and sha256 of
each), the queries drawn (the experiment's queries section: types, families, count,
seed), the C core's build and the machine (CPU model, cores, memory). Settings that a
comparison is meant to weigh (workers, batch size, cache, ...) are not among them."""

from __future__ import annotations

import json

MACHINE = ("cpu_model", "cores", "memory_bytes")


def differences(base: dict, other: dict) -> list[str]:
    """What differs between the manifests base and other, one phrase each
    ("dataset d: sha256 abab12.. vs cdcd34..", "machine: cores 2 vs 4"); [] when comparable."""
    return [*_datasets(base.get("datasets") or {}, other.get("datasets") or {}),
            *_fields("queries", _queries(base), _queries(other)),
            *_fields("C build", {"c_core": base.get("c_core")}, {"c_core": other.get("c_core")}),
            *_fields("machine", _machine(base), _machine(other))]


def _datasets(base: dict, other: dict) -> list[str]:
    out = []
    for name in sorted(set(base) ^ set(other)):
        out.append(f"dataset {name}: only in {'BASE' if name in base else 'OTHER'}")
    for name in sorted(set(base) & set(other)):
        b, o = base[name] or {}, other[name] or {}
        out += _fields(f"dataset {name}", {"spec": b.get("spec"), "sha256": b.get("sha256")},
                       {"spec": o.get("spec"), "sha256": o.get("sha256")})
    return out


def _queries(manifest: dict) -> dict:
    return dict(((manifest.get("config") or {}).get("queries")) or {})


def _machine(manifest: dict) -> dict:
    host = manifest.get("host") or {}
    return {k: host.get(k) for k in MACHINE}


def _fields(what: str, base: dict, other: dict) -> list[str]:
    """One phrase naming the keys whose values differ, with both values ("BASE vs OTHER"), or none."""
    keys = [k for k in dict.fromkeys([*base, *other]) if base.get(k) != other.get(k)]
    if not keys:
        return []
    return [f"{what}: " + ", ".join(f"{k} {_shown(base.get(k))} vs {_shown(other.get(k))}" for k in keys)]


def _shown(v) -> str:
    """A manifest value in a phrase: text as it is (a hash cut to 12 digits), None as
    "unknown", anything else as compact JSON."""
    if v is None:
        return "unknown"
    if isinstance(v, str):
        return v[:12] + ".." if len(v) > 16 and all(c in "0123456789abcdef" for c in v) else v
    return json.dumps(v, separators=(",", ":"), sort_keys=True)
