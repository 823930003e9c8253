"""Parsing of times and durations given on the command line or in experiment
files (all phases). Times are integers of nanoseconds since the Unix epoch."""

from __future__ import annotations

import datetime as dt
import re

from tsbench.core.errors import UserError

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000,
          "h": 3_600_000_000_000, "d": 86_400_000_000_000, "w": 7 * 86_400_000_000_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w)")


def parse_time(text: str, option: str) -> int:
    """RFC 3339 (2016-01-01T00:00:00Z), a date (2016-01-01, UTC) or integer ns."""
    t = str(text).strip()
    if re.fullmatch(r"-?\d{10,}", t):
        return int(t)
    try:
        d = dt.datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UserError(f"{option}: cannot parse time {text!r} (use RFC 3339 like 2016-01-01T00:00:00Z)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.timezone.utc)
    delta = d - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def format_time(ns: int) -> str:
    d = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ns % 1_000_000_000:09d}".rstrip("0") if ns % 1_000_000_000 else "") + "Z"


def parse_duration(text: str, option: str) -> int:
    """Go-style durations: 10s, 1m30s, 100ms, 1.5h, 7d."""
    t = str(text).strip()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(t) or not t:
        raise UserError(f"{option}: cannot parse duration {text!r} (use e.g. 10s, 1m, 100ms, 1d)")
    if total <= 0:
        raise UserError(f"{option}: the duration must be positive")
    return int(round(total))
