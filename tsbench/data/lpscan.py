"""Reading a line-protocol file for the import (phase 1 of a user's own data): the file is
streamed in chunks cut at line ends, each chunk scanned in C (native.LpScanner), and its
schema gathered with numpy, batch by batch: measurements, their tag keys with the number of
distinct values, fields with their types, nulls, the time range, the step between a series'
consecutive points, and the points older than their series' previous one.

Memory is bounded by the chunk, the scan arrays and per-series state (three numbers per
series), whatever the file's size; distinct tag values are counted exactly up to
TAG_VALUES_EXACT per tag key and estimated beyond (the k smallest hashes: a few 0.1 %).
Nothing of the data's values is kept: the schema holds names, types and counts only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from tsbench.core.errors import UserError
from tsbench.data import native

CHUNK_BYTES = 8 << 20
TAG_VALUES_EXACT = 1 << 16      # distinct values per tag key counted exactly (their hashes kept)
MAX_ERRORS = 100                # errors collected (all are counted)
_NO_TIME = np.iinfo(np.int64).min
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_M1, _M2 = np.uint64(0xbf58476d1ce4e5b9), np.uint64(0x94d049bb133111eb)


class LpScanError(UserError):
    """Lines of a line-protocol file that cannot be imported: FILE:LINE: reason, one a line."""

    def __init__(self, path: str, schema: dict):
        errs = schema["errors"]
        lines = [f"{path}:{e['line']}: {e['reason']}" for e in errs[:10]]
        more = schema["counts"]["errors"] - len(lines)
        super().__init__("\n".join(lines) + (f"\n... and {more} more" if more > 0 else ""))


MEASUREMENT_ESCAPES, NAME_ESCAPES = b", ", b",= "   # what a backslash escapes in a measurement; a key or tag value


def unescape(raw: bytes, specials: bytes) -> str:
    """A name's text as written (a span of the scan) without its escapes: a backslash before
    one of specials is dropped, before anything else kept (InfluxDB's rules)."""
    text = raw.decode("utf-8", "replace")
    return re.sub(r"\\([" + re.escape(specials.decode()) + "])", r"\1", text)


def unescape_string(raw: bytes) -> bytes:
    """A string field value as the scan spans it (inside the quotes) without its escapes."""
    return re.sub(rb'\\(["\\])', rb"\1", raw)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: FNV hashes spread over 64 bits (the k-smallest estimate needs it)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def _round3(steps: np.ndarray) -> np.ndarray:
    """Positive int64 steps rounded to 3 significant digits (a bounded set of distinct steps)."""
    digits = np.searchsorted(_POW10, steps, side="right")
    div = _POW10[np.maximum(digits - 3, 0)]
    return (steps + div // 2) // div * div


@dataclass
class _Measurement:
    name: str
    points: int = 0
    series: int = 0
    tags: dict = field(default_factory=dict)      # key hash -> [name, sorted distinct value hashes]
    fields: dict = field(default_factory=dict)    # key hash -> [name, type, first line, values]
    steps: dict = field(default_factory=dict)     # step rounded to 3 digits (ns) -> count
    compared: int = 0      # timed points that had a previous timed point in their series
    out_of_order: int = 0
    duplicates: int = 0
    tmin: int = np.iinfo(np.int64).max
    tmax: int = np.iinfo(np.int64).min


class SchemaScan:
    """The schema of a line-protocol stream, batch by batch (feed, then result)."""

    def __init__(self, precision: str, max_errors: int = MAX_ERRORS):
        self.precision = precision
        self.max_errors = max_errors
        self.meas: dict[int, _Measurement] = {}
        self.shapes: set[int] = set()
        self.keys = np.empty(0, np.uint64)     # series hashes, sorted
        self.last = np.empty(0, np.int64)      # each series' last timestamp (_NO_TIME: none yet)
        self.counts = dict.fromkeys(("lines", "points", "values", "blank", "comments", "errors", "no_time"), 0)
        self.errors: list[dict] = []

    def feed(self, buf, batch: native.LpBatch) -> None:
        """Add one scanned batch (buf: the buffer its spans point into, from its start)."""
        a = batch.arrays
        c = self.counts
        c["lines"] += batch.lines
        c["points"] += batch.points
        c["blank"] += batch.blank
        c["comments"] += batch.comments
        c["errors"] += batch.errors
        c["values"] += len(a["field_key"])
        c["no_time"] += int(batch.points - np.count_nonzero(a["has_time"]))
        for line, code in zip(a["err_line"].tolist(), a["err_code"].tolist()):
            self._error(line, native.LP_ERRORS.get(code, f"error {code}"))
        if batch.points:
            self._shapes(buf, a)
            self._steps(a, self._series_ids(buf, a))

    def _error(self, line: int, reason: str) -> None:
        if len(self.errors) < self.max_errors:
            self.errors.append({"line": int(line), "reason": reason})

    def _measurement(self, buf, a: dict, i: int) -> _Measurement:
        h = int(a["meas"][i])
        m = self.meas.get(h)
        if m is None:
            off, n = int(a["meas_off"][i]), int(a["meas_len"][i])
            m = self.meas[h] = _Measurement(unescape(bytes(buf[off:off + n]), MEASUREMENT_ESCAPES))
        return m

    def _shapes(self, buf, a: dict) -> None:
        """Points, fields, types and type changes per measurement, by the lines' shapes (the
        measurement, field keys and types in order): one Python step per distinct shape."""
        shapes, first, count = np.unique(a["shape"], return_index=True, return_counts=True)
        for k in np.argsort(first, kind="stable"):
            i, n = int(first[k]), int(count[k])
            m = self._measurement(buf, a, i)
            m.points += n
            lo = int(a["field_end"][i - 1]) if i else 0
            for j in range(lo, int(a["field_end"][i])):
                self._field(buf, a, m, j, int(a["line"][i]), n, int(shapes[k]) in self.shapes)
            self.shapes.add(int(shapes[k]))

    def _field(self, buf, a: dict, m: _Measurement, j: int, line: int, n: int, known: bool) -> None:
        kh, typ = int(a["field_key"][j]), native.LP_TYPES[a["field_type"][j]]
        f = m.fields.get(kh)
        if f is None:
            off, kl = int(a["field_off"][j]), int(a["field_klen"][j])
            f = m.fields[kh] = [unescape(bytes(buf[off:off + kl]), NAME_ESCAPES), typ, line, 0]
        f[3] += n
        if f[1] != typ and not known:
            self._error(line, f"field {f[0]!r} of measurement {m.name!r} is {typ} here, "
                              f"{f[1]} at line {f[2]}")

    def _series_ids(self, buf, a: dict) -> np.ndarray:
        """Each point's series as an index into the series state; series not seen before are
        registered (no timestamp yet) and their tags counted."""
        s = a["series"]
        pos = np.searchsorted(self.keys, s)
        if len(self.keys) and (self.keys[np.minimum(pos, len(self.keys) - 1)] == s).all():
            return pos
        known = np.isin(s, self.keys)
        new, first = np.unique(s[~known], return_index=True)
        reps = np.sort(np.flatnonzero(~known)[first])
        keys = np.concatenate([self.keys, new])
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.last = np.concatenate([self.last, np.full(len(new), _NO_TIME, np.int64)])[order]
        _, at, per = np.unique(a["meas"][reps], return_index=True, return_counts=True)
        for j in np.argsort(at, kind="stable").tolist():      # one step a measurement, not a series
            self._measurement(buf, a, int(reps[at[j]])).series += int(per[j])
        self._tags(buf, a, reps)
        return np.searchsorted(self.keys, s)

    def _tags(self, buf, a: dict, reps: np.ndarray) -> None:
        """The tag keys and distinct values of the new series' first points (reps)."""
        ends = a["tag_end"][reps].astype(np.int64)
        starts = np.where(reps > 0, a["tag_end"][np.maximum(reps - 1, 0)], 0).astype(np.int64)
        per = ends - starts
        idx = np.repeat(starts - np.cumsum(per) + per, per) + np.arange(int(per.sum()))
        owner = np.repeat(reps, per)
        kh, vh = a["tag_key"][idx], _mix(a["tag_val"][idx])
        meas = a["meas"][owner]
        pairs, first = np.unique(np.stack([meas, kh], axis=1), axis=0, return_index=True)
        for (mh, key), j in zip(pairs.tolist(), first.tolist()):
            m = self.meas[mh]
            t = m.tags.get(key)
            if t is None:
                off, kl = int(a["tag_off"][idx[j]]), int(a["tag_klen"][idx[j]])
                t = m.tags[key] = [unescape(bytes(buf[off:off + kl]), NAME_ESCAPES), np.empty(0, np.uint64)]
            vals = vh[(meas == mh) & (kh == key)]
            t[1] = np.union1d(t[1], vals)[:TAG_VALUES_EXACT]

    def _steps(self, a: dict, ids: np.ndarray) -> None:
        """Each timed point against its series' previous one: steps, duplicates, out of order."""
        timed = a["has_time"].view(bool)
        if not timed.any():
            return
        t, mh = a["time"][timed], a["meas"][timed]
        prev = native.lp_prev_times(ids[timed].astype(np.int64), t, self.last)
        steps = t - prev
        compared = prev != _NO_TIME
        for h in np.unique(mh).tolist():
            sel = mh == h
            self._measure_steps(self.meas[h], t[sel], steps[sel & compared])

    @staticmethod
    def _measure_steps(m: _Measurement, times: np.ndarray, steps: np.ndarray) -> None:
        m.tmin, m.tmax = min(m.tmin, int(times.min())), max(m.tmax, int(times.max()))
        m.compared += len(steps)
        m.out_of_order += int(np.count_nonzero(steps < 0))
        m.duplicates += int(np.count_nonzero(steps == 0))
        pos = steps[steps > 0]
        if not len(pos):
            return
        lo, hi = int(pos.min()), int(pos.max())
        if lo == hi:                       # regular data: one step, no sort
            lo = int(_round3(pos[:1])[0])
            m.steps[lo] = m.steps.get(lo, 0) + len(pos)
            return
        vals, cnt = np.unique(_round3(pos), return_counts=True)
        for v, n in zip(vals.tolist(), cnt.tolist()):
            m.steps[v] = m.steps.get(v, 0) + n

    def result(self) -> dict:
        """The schema as plain data (JSON-able)."""
        meas = {m.name: _measurement_dict(m) for m in self.meas.values()}
        timed = [m for m in self.meas.values() if m.tmin <= m.tmax]
        ooo = sum(m.out_of_order for m in self.meas.values())
        with_prev = sum(m.compared for m in self.meas.values())
        return {"format": "influx", "precision": self.precision, "counts": dict(self.counts),
                "series": int(len(self.keys)),
                "time": {"min_ns": min(m.tmin for m in timed), "max_ns": max(m.tmax for m in timed)} if timed else None,
                "out_of_order": {"points": ooo, "share": ooo / with_prev if with_prev > 0 else 0.0},
                "measurements": meas, "errors": sorted(self.errors, key=lambda e: e["line"]),
                "bounds": {"tag_values_exact_up_to": TAG_VALUES_EXACT}}


def _cardinality(hashes: np.ndarray) -> tuple[int, bool]:
    """Distinct values from the sorted smallest hashes kept: exact below the bound, else the
    k-minimum-values estimate (k - 1) / (k-th hash / 2^64)."""
    k = len(hashes)
    if k < TAG_VALUES_EXACT:
        return k, True
    return int(round((k - 1) / (float(hashes[-1]) / 2.0 ** 64))), False


def _interval(steps: dict) -> dict | None:
    if not steps:
        return None
    vals = np.array(sorted(steps), np.int64)
    cnt = np.array([steps[v] for v in vals.tolist()], np.int64)
    cum = np.cumsum(cnt)

    def q(p: float) -> int:
        return int(vals[np.searchsorted(cum, p * (cum[-1] - 1), side="right")])

    med = q(0.5)
    return {"steps": int(cum[-1]), "min_ns": int(vals[0]), "p10_ns": q(0.1), "median_ns": med,
            "p90_ns": q(0.9), "max_ns": int(vals[-1]), "regular_share": steps[med] / int(cum[-1])}


def _measurement_dict(m: _Measurement) -> dict:
    tags = {}
    for name, hashes in sorted(m.tags.values(), key=lambda t: t[0]):
        n, exact = _cardinality(hashes)
        tags[name] = {"cardinality": n, "exact": exact}
    fields = {f[0]: {"type": f[1], "values": f[3], "nulls": m.points - f[3]}
              for f in sorted(m.fields.values(), key=lambda f: f[0])}
    timed = m.tmin <= m.tmax
    return {"points": m.points, "series": m.series, "tags": tags, "fields": fields,
            "time": {"min_ns": m.tmin, "max_ns": m.tmax} if timed else None,
            "interval": _interval(m.steps), "out_of_order": m.out_of_order, "duplicates": m.duplicates}


def chunks(f, chunk_bytes: int = CHUNK_BYTES):
    """(buffer, length) of whole lines read from binary file f, at most about chunk_bytes
    each (a longer line gets a chunk of its own); the last line may lack its newline. A
    buffer is reused: use it before asking for the next."""
    buf = bytearray(chunk_bytes)
    keep = 0
    while True:
        with memoryview(buf) as view:
            n = f.readinto(view[keep:])
        total = keep + n
        if n == 0:
            if keep:
                yield buf, keep
            return
        cut = buf.rfind(b"\n", 0, total) + 1
        if cut == 0:                       # no line end yet: read on, into a larger buffer when full
            if total == len(buf):
                buf = buf + bytearray(len(buf))
            keep = total
            continue
        yield buf, cut
        buf[:total - cut] = buf[cut:total]
        keep = total - cut


class LineCountError(RuntimeError):
    """The scan's lines differ from the file's: a bug, never the data's fault."""


def scan_stream(f, precision: str, chunk_bytes: int = CHUNK_BYTES, max_errors: int = MAX_ERRORS,
                scanner: native.LpScanner | None = None, sink=None) -> dict:
    """The schema of the line protocol read from binary file f (see SchemaScan.result), its
    counts checked against the newlines read. sink(schema scan, buf, batch), when given, is
    called with each batch after the schema has taken it (the import writes it)."""
    scanner = scanner or native.LpScanner(1 << 15, 1 << 19, 1 << 19, max_errors)
    schema = SchemaScan(precision, max_errors)
    newlines = 0
    ends_open = False
    for buf, length in chunks(f, chunk_bytes):
        newlines += int(np.count_nonzero(np.frombuffer(buf, np.uint8, length) == 0x0A))
        ends_open = buf[length - 1] != 0x0A
        start = 0
        while start < length:
            batch = scanner.scan(buf, start, length, schema.counts["lines"] + 1, precision)
            view = memoryview(buf)[start:length]
            schema.feed(view, batch)
            if sink is not None:
                sink(schema, view, batch)
            start += batch.used
            if not batch.done and batch.used == 0:     # one line has more tags or fields than the arrays
                scanner = scanner.grown()
    out = schema.result()
    c = out["counts"]
    file_lines = newlines + ends_open
    if c["lines"] != file_lines or c["points"] + c["blank"] + c["comments"] + c["errors"] != c["lines"]:
        raise LineCountError(f"lp scan: {c} against the file's {file_lines} lines")
    out["counts"]["file_lines"] = file_lines
    return out


def scan_file(path: str, precision: str, chunk_bytes: int = CHUNK_BYTES, max_errors: int = MAX_ERRORS,
              strict: bool = True) -> dict:
    """The schema of a line-protocol file; strict: LpScanError (FILE:LINE: reason) when a line
    does not parse or a field's type changes."""
    if precision not in native.PRECISIONS:
        raise UserError(f"unknown precision {precision!r} (one of {', '.join(native.PRECISIONS)})")
    with open(path, "rb") as f:
        schema = scan_stream(f, precision, chunk_bytes, max_errors)
    if strict and schema["errors"]:
        raise LpScanError(str(path), schema)
    return schema
