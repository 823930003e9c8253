"""InfluxDB literals (phase 3, and phase 2's statements): identifiers, strings,
numbers, durations and RFC 3339 times as InfluxQL and Flux spell them, and
RFC 3339 read back from Flux's answers (phase 5). Shared by the loader, both
query languages and the iot renderers; imports nothing of the package."""

from __future__ import annotations

import calendar
import datetime as dt
from decimal import Decimal

_UNITS = (("d", 86_400 * 10**9), ("h", 3_600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("ns", 1))
# Flux's range() takes times, not "everything": the widest the storage engine holds.
FLUX_MIN_TIME = "1677-09-21T00:12:43.145224194Z"
FLUX_MAX_TIME = "2262-04-11T23:47:16.854775806Z"


def ident(name: str) -> str:
    """An InfluxQL identifier: "name", with \\ and " escaped."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ql_str(s: str) -> str:
    """An InfluxQL string literal: 'text'."""
    return "'" + str(s).replace("\\", "\\\\").replace("'", "\\'") + "'"


def fx_str(s: str) -> str:
    """A Flux string literal: "text"."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def number(x) -> str:
    """A float literal without exponent (InfluxQL reads no 1e-05)."""
    s = format(Decimal(repr(float(x))), "f")
    return s if "." in s else s + ".0"


def duration(ns: int) -> str:
    """A duration literal both InfluxQL and Flux read: 1m, 1h, 90s, 1500ms, 7ns."""
    ns = int(ns)
    if ns <= 0:
        raise ValueError(f"bucket width must be positive, got {ns} ns")
    for unit, n in _UNITS:
        if ns % n == 0:
            return f"{ns // n}{unit}"
    raise AssertionError


def rfc3339(ns: int) -> str:
    """Epoch ns as RFC 3339 UTC with up to nine fractional digits."""
    s, frac = divmod(int(ns), 10**9)
    t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=s)
    out = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if frac:
        out += "." + f"{frac:09d}".rstrip("0")
    return out + "Z"


def parse_rfc3339(s: str) -> int:
    """RFC 3339 (Flux writes UTC with Z and up to nine fractional digits) to epoch ns."""
    off = 0
    if s.endswith(("Z", "z")):
        body = s[:-1]
    else:
        body, zone = s[:-6], s[-6:]
        off = (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    head, _, frac = body.partition(".")
    secs = calendar.timegm(dt.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").timetuple()) - off
    return secs * 10**9 + (int((frac + "000000000")[:9]) if frac else 0)
