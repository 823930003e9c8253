"""A small DevOps batch of line protocol and the samples its lines hold, read the slow plain
way, for the golden tests of the C encoders of series protocols (test_remote_write, test_otlp)."""

from __future__ import annotations

from conftest import run_cli


def devops_batch(tmp_path) -> bytes:
    """DevOps, 5 hosts x 1 minute, as line protocol."""
    path = tmp_path / "d.lp"
    run_cli("generate", "-q", "--scale", "5", "--end", "2016-01-01T00:01:00Z", "-o", str(path))
    return path.read_bytes()


def samples_by_series(data: bytes) -> tuple[dict[tuple, list], int]:
    """{(measurement_field, ((tag, value), ...) in the line's order): [(time ns, value), ...]}
    and the number of values."""
    out: dict[tuple, list] = {}
    values = 0
    for line in data.splitlines():
        key, fieldset, t = line.decode().split(" ")
        meas, *tags = key.split(",")
        for kv in fieldset.split(","):
            k, v = kv.split("=")
            out.setdefault((f"{meas}_{k}", tuple(tuple(x.split("=")) for x in tags)), []).append(
                (int(t), float(v.rstrip("i"))))
            values += 1
    return out, values
