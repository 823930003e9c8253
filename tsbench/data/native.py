"""The only module that touches cffi: thin wrappers over the C core (phase 1).

Each wrapper allocates, makes one C call, checks, and returns. Importing this
module checks that the compiled core matches the sources it was built from.
"""

from __future__ import annotations

import itertools
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tsbench.core.buildid import source_hash
from tsbench.core.errors import UserError
from tsbench.data.schema import FAULT_SETTINGS, Compiled
from tsbench.data.simmemory import Budget, allocate

if TYPE_CHECKING:      # numpy is imported where it is used: generating text never needs it (~50 ms of start-up)
    import numpy as np

API_VERSION = 11  # TS_API_VERSION of the csrc/tsbench.h this package was written against

FORMATS = {"influx": 0, "csv": 1}  # TS_FMT_* values


class StaleBuildError(ImportError):
    pass


try:
    from tsbench.data import _native
except ImportError as exc:  # pragma: no cover - exercised by a fresh checkout without a build
    raise StaleBuildError(f"tsbench: the C core is not built ({exc}); run: pip install -e .") from None

ffi, lib = _native.ffi, _native.lib


def build_id() -> str:
    """The hash of the C sources the compiled core was built from."""
    return ffi.string(lib.ts_build_id()).decode()


def _check_build() -> None:
    if lib.ts_api_version() != API_VERSION:
        raise StaleBuildError(
            f"tsbench: the compiled C core has API version {lib.ts_api_version()}, "
            f"the package expects {API_VERSION}; run: pip install -e .")
    csrc = pathlib.Path(__file__).resolve().parents[2] / "csrc"
    if (csrc / "tsbench.h").exists():
        built, now = build_id(), source_hash(csrc)
        if built != now:
            raise StaleBuildError(
                f"tsbench: the compiled C core is stale (built from sources {built}, csrc/ is now {now}); "
                "run: pip install -e .")


_check_build()

_ERRORS = {-1: "bad argument", -2: "out of memory", -3: "buffer too small for one record"}
_STATE_PARTS = 7   # the parts of a simulator's per-entity memory (ts_sim_state_behind)
ERR_VALUE = -5   # TS_ERR_VALUE: a written value is +/-Inf or NaN


class NonFiniteError(UserError):
    """A field's value is +Inf, -Inf or NaN: the generator stops rather than write it."""


def _check(rc: int, what: str) -> None:
    if rc < 0:
        raise RuntimeError(f"{what}: {_ERRORS.get(rc, rc)}")


@dataclass
class Fill:
    """What one fill call produced."""

    bytes: int
    rows: int
    values: int
    first_epoch: int
    n_marks: int
    epoch: int
    done: bool
    series_created: int = 0      # records that were their series' first (epoch 0's, a churned entity's new ones)


def _fill(res) -> Fill:
    return Fill(res.bytes, res.rows, res.values, res.first_epoch, res.n_marks, res.epoch, bool(res.done),
                res.series_created)


class Simulator:
    """A C simulator of a compiled schema over entities [lo, hi) and `epochs`
    ticks of `interval_ns` from `start_ns`. Its per-entity memory (state, and the tag
    parts of format `cache`, None: none) is in memory within `budget`, else in a file
    (simmemory)."""

    def __init__(self, compiled: Compiled, seed: int, entity_lo: int, entity_hi: int,
                 start_ns: int, interval_ns: int, epochs: int, budget: Budget | None = None,
                 cache: str | None = "influx"):
        keep = []

        def arr(ctype: str, values):
            a = ffi.new(f"{ctype}[]", max(len(values), 1))
            for i, v in enumerate(values):
                a[i] = v
            keep.append(a)
            return a

        sc = ffi.new("ts_schema *")
        strtab = ffi.new("char[]", compiled.strtab)
        keep.append(strtab)
        sc.strtab = strtab
        sc.stroff = arr("int32_t", compiled.stroff)
        sc.n_strings = len(compiled.stroff) - 1
        parts = ffi.new("ts_part[]", max(len(compiled.parts), 1))
        for i, (kind, width, a, b, x, y) in enumerate(compiled.parts):
            parts[i] = {"kind": kind, "width": width, "a": a, "b": b, "x": x, "y": y}
        sc.parts, sc.n_parts = parts, len(compiled.parts)
        tags = ffi.new("ts_tag[]", max(len(compiled.tags), 1))
        for i, (key, fp, np_) in enumerate(compiled.tags):
            tags[i] = {"key": key, "first_part": fp, "n_parts": np_}
        sc.tags, sc.n_tags, sc.n_entity_tags = tags, len(compiled.tags), compiled.n_entity_tags
        series = ffi.new("ts_series[]", len(compiled.series))
        for i, (name, ff, nf, ft, nt) in enumerate(compiled.series):
            series[i] = {"name": name, "first_field": ff, "n_fields": nf, "first_tag": ft, "n_tags": nt}
        sc.series, sc.n_series = series, len(compiled.series)
        fields = ffi.new("ts_field[]", len(compiled.fields))
        for i, f in enumerate(compiled.fields):
            fields[i] = f
        sc.fields, sc.n_fields = fields, len(compiled.fields)
        sc.table, sc.n_table = arr("double", compiled.table), len(compiled.table)
        sc.itable, sc.n_itable = arr("int32_t", compiled.itable), len(compiled.itable)
        sc.faults = {s.name: s.type(getattr(compiled.faults, s.name)) for s in FAULT_SETTINGS}
        keep += [parts, tags, series, fields]
        err = ffi.new("char[]", 512)
        sim = lib.ts_sim_new(sc, seed & 0xFFFFFFFFFFFFFFFF, entity_lo, entity_hi, start_ns, interval_ns, epochs,
                             err, 512)
        if sim == ffi.NULL:
            raise UserError(f"schema rejected by the C core: {ffi.string(err).decode()}")
        self._sim = ffi.gc(sim, lib.ts_sim_free)
        self._budget, self._cache_fmt, self.memory = budget or Budget(), FORMATS[cache] if cache else -1, None
        self._res = ffi.new("ts_fill_result *")
        self._compiled, self._start_ns, self._interval_ns = compiled, start_ns, interval_ns
        self.n_series = len(compiled.series)
        self._entities = max(entity_hi - entity_lo, 0)
        self._stats = None
        self.max_tags = max(compiled.n_entity_tags + s[4] for s in compiled.series)

    def _set_memory(self) -> None:
        """Before the first fill: hand the C simulator its per-entity memory (simmemory.allocate)."""
        fmt = self._cache_fmt
        self.memory = allocate(int(lib.ts_sim_state_bytes(self._sim, fmt)), self._budget)
        self._mem = ffi.from_buffer(self.memory.buf, require_writable=True)   # alive as long as the simulator
        self._parts = ffi.new("uint64_t[]", 3 * _STATE_PARTS)
        _check(lib.ts_sim_set_memory(self._sim, self._mem, len(self._mem), fmt), "set_memory")

    def _ready(self):
        """The C simulator, with its memory."""
        if self.memory is None:
            self._set_memory()
        return self._sim

    def _release(self) -> None:
        """After a fill: a state in a file hands back its pages behind the cursor."""
        if self.memory is not None and self.memory.in_file:
            n = lib.ts_sim_state_behind(self._sim, self._parts, _STATE_PARTS)
            _check(n, "state_behind")
            p = self._parts
            self.memory.release([(p[3 * i], p[3 * i + 1], p[3 * i + 2]) for i in range(n)])

    def set_churn(self, entities: int, per_period: int, period_ns: int) -> None:
        """Series churn before the first fill (ts_sim_set_churn): of the dataset's `entities`,
        `per_period` replaced by new series every period_ns of data time."""
        _check(lib.ts_sim_set_churn(self._sim, entities, per_period, period_ns), "set_churn")

    def churn_generation(self, entity: int, epoch: int) -> int:
        """How often the entity was replaced by that epoch (0 without churn)."""
        return int(lib.ts_sim_churn_generation(self._sim, entity, epoch))

    def record_bound(self, fmt: str) -> int:
        return int(lib.ts_sim_record_bound(self._sim, FORMATS[fmt]))

    def fill(self, fmt: str, buf, marks=None) -> Fill:
        """Fill `buf` (a writable buffer) with whole records; `marks` (a writable
        buffer of int64) gets the end offset of each epoch's records."""
        sim = self._ready()
        with ffi.from_buffer(buf, require_writable=True) as cbuf:
            if marks is None:
                rc = lib.ts_sim_fill(sim, FORMATS[fmt], cbuf, len(cbuf), ffi.NULL, 0, self._res)
            else:
                with ffi.from_buffer("int64_t[]", marks, require_writable=True) as cm:
                    rc = lib.ts_sim_fill(sim, FORMATS[fmt], cbuf, len(cbuf), cm, len(cm), self._res)
        self._check_fill(rc, "fill")
        return _fill(self._res)

    def fill_rows(self, fmt: str, buf, max_rows: int) -> Fill:
        """Fill `buf` with whole records, at most max_rows of them."""
        sim = self._ready()
        with ffi.from_buffer(buf, require_writable=True) as cbuf:      # no export of buf outlives the call
            rc = lib.ts_sim_fill_rows(sim, FORMATS[fmt], cbuf, len(cbuf), max_rows, self._res)
        self._check_fill(rc, "fill")
        return _fill(self._res)

    def simulate(self, max_rows: int) -> Fill:
        """(Benchmarks) make up to max_rows records' values as a fill would, without formatting them."""
        self._check_fill(lib.ts_sim_simulate(self._ready(), max_rows, self._res), "simulate")
        return _fill(self._res)

    def track_stats(self) -> None:
        """From now on, every fill adds what it writes to the value statistics (value_stats)."""
        n_fields = len(self._compiled.fields)
        self._stats = (ffi.new("ts_field_stats[]", max(n_fields, 1)),
                       ffi.new("uint8_t[]", max(self._entities * self.n_series, 1)),
                       ffi.new("int64_t[]", self.n_series))
        st, seen, series = self._stats
        _check(lib.ts_sim_set_stats(self._sim, st, n_fields, seen, len(seen), series, self.n_series), "set_stats")

    def value_stats(self) -> dict:
        """What the fills since track_stats wrote (valuestats.Raw's form): per series the
        streams with a record; per schema field (count, sum, comp, sum_abs, min, max, isum)."""
        st, _, series = self._stats
        fields = []
        for i in range(len(self._compiled.fields)):
            f = st[i]
            fields.append((int(f.count), float(f.sum), float(f.comp), float(f.sum_abs), float(f.min), float(f.max),
                           int(f.isum_hi) << 64 | int(f.isum_lo)))
        return {"series": [int(series[s]) for s in range(self.n_series)], "fields": fields}

    def _check_fill(self, rc: int, what: str) -> None:
        self._release()
        if rc == ERR_VALUE:
            raise NonFiniteError(self._nonfinite(int(self._res.bad_field), int(self._res.bad_time)))
        _check(rc, what)

    def _nonfinite(self, f: int, time_ns: int) -> str:
        """One line naming the field (measurement.field), the tick and its timestamp."""
        from tsbench.core.timeutil import format_time

        c = self._compiled
        text = c.strtab.split(b"\0")
        series = next(se for se in c.series if se[1] <= f < se[1] + se[2])
        name = f"{text[series[0]].decode()}.{text[c.fields[f]['name']].decode()}"
        tick = (time_ns - self._start_ns) // self._interval_ns
        return (f"field {name} is not finite (+Inf, -Inf or NaN) at tick {tick} ({format_time(time_ns)}); "
                f"fix its evolution in the schema (a ratio over 0, a walk that overflows)")

    def fill_columns(self, cap: int, width: int) -> tuple[Fill, dict[str, np.ndarray]]:
        """Up to `cap` records as columns: time (ns), entity, series, null_tag,
        delay (epochs late), values (cap x width, NaN where null)."""
        import numpy as np

        cols = {"time": np.empty(cap, np.int64), "entity": np.empty(cap, np.int64),
                "series": np.empty(cap, np.int32), "null_tag": np.empty(cap, np.int32),
                "delay": np.empty(cap, np.int32),
                "values": np.empty((cap, width), np.float64)}
        c = ffi.new("ts_columns *")
        c.time = ffi.cast("int64_t *", cols["time"].ctypes.data)
        c.entity = ffi.cast("int64_t *", cols["entity"].ctypes.data)
        c.series = ffi.cast("int32_t *", cols["series"].ctypes.data)
        c.null_tag = ffi.cast("int32_t *", cols["null_tag"].ctypes.data)
        c.delay = ffi.cast("int32_t *", cols["delay"].ctypes.data)
        c.values = ffi.cast("double *", cols["values"].ctypes.data)
        c.width = width
        self._check_fill(lib.ts_sim_fill_columns(self._ready(), c, cap, self._res), "fill_columns")
        res = _fill(self._res)
        return res, {k: v[: res.rows] for k, v in cols.items()}

    def tag_values(self, entity: int, series: int) -> list[str]:
        """The tag values of one entity for one series, in declared order."""
        buf = ffi.new("char[]", 1 << 16)
        lens = ffi.new("int32_t[]", self.max_tags + 1)
        n = lib.ts_sim_tag_values(self._sim, entity, series, buf, 1 << 16, lens, self.max_tags + 1)
        _check(n, "tag_values")
        raw = ffi.buffer(buf, sum(lens[i] for i in range(n)))[:]
        out, pos = [], 0
        for i in range(n):
            out.append(raw[pos: pos + lens[i]].decode())
            pos += lens[i]
        return out


def format_doubles(values: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The shortest round-trip text of each double, concatenated, and the end offset of each."""
    import numpy as np

    v = np.ascontiguousarray(values, dtype=np.float64)
    cap = len(v) * 340 + 1
    buf = ffi.new("char[]", cap)
    ends = np.empty(len(v), np.int64)
    n = lib.ts_format_doubles(ffi.cast("double *", v.ctypes.data), len(v), buf, cap,
                              ffi.cast("int64_t *", ends.ctypes.data))
    return ffi.buffer(buf, n)[:], ends


# ---- phase 2: cutting data files into batches ---------------------------------------------

@dataclass
class Cut:
    bytes: int
    rows: int
    values: int


class CsvLayout:
    """The measurements of a CSV data file and their tag counts (ts_csv_layout)."""

    def __init__(self, tables: list[tuple[str, int]]):
        self.names = [n for n, _ in tables]
        enc = [n.encode() for n in self.names]
        off = [0]
        for e in enc:
            off.append(off[-1] + len(e))
        self._strs = ffi.new("char[]", b"".join(enc) or b"\0")
        self._off = ffi.new("uint32_t[]", off)
        self._tags = ffi.new("uint32_t[]", [t for _, t in tables] or [0])
        self.c = ffi.new("ts_csv_layout *", {"names": self._strs, "name_off": self._off,
                                             "n_tags": self._tags, "n": len(tables)})


class CsvMeasurementError(UserError):
    def __init__(self, line: bytes, known: list[str]):
        name = line.split(b",", 1)[0].decode("utf-8", "replace")
        super().__init__(f"CSV data names measurement {name!r}, which the dataset lacks "
                         f"(measurements: {', '.join(known)})")


def cut(fmt: str, buf, start: int, end: int, max_rows: int, final: bool,
        layout: CsvLayout | None = None) -> Cut:
    """Whole records of buf[start:end], at most max_rows (the last partial line
    only when final)."""
    res = ffi.new("ts_cut_result *")
    with ffi.from_buffer(buf) as cbuf:          # released before any raise: no export of buf outlives the call
        rc = lib.ts_cut(FORMATS[fmt], layout.c if layout else ffi.NULL, cbuf + start, end - start, max_rows,
                        1 if final else 0, res)
    if rc == -4:
        pos = start + res.bytes
        raise CsvMeasurementError(bytes(buf[pos: pos + 200]), layout.names)
    _check(rc, "cut")
    return Cut(res.bytes, res.rows, res.values)


def split_csv(layout: CsvLayout, data) -> tuple[bytearray, list[Cut | None]]:
    """CSV records grouped by measurement, each line without its measurement
    column: (buffer, per measurement a Cut whose `bytes` is (offset, length) or None)."""
    dst = bytearray(max(memoryview(data).nbytes, 1))
    parts = ffi.new("ts_part_out[]", max(len(layout.names), 1))
    err = ffi.new("uint64_t *")
    with ffi.from_buffer(data) as src, ffi.from_buffer(dst, require_writable=True) as cdst:
        rc = lib.ts_split_csv(layout.c, src, len(src), cdst, len(dst), parts, err)
    if rc == -4:
        raise CsvMeasurementError(bytes(data[err[0]: err[0] + 200]), layout.names)
    _check(rc, "split_csv")
    out = [(int(p.offset), int(p.bytes), int(p.rows), int(p.values)) if p.rows else None
           for p in (parts[i] for i in range(len(layout.names)))]
    return dst, out


def route_series(fmt: str, data, parts: int, layout: CsvLayout | None = None) -> tuple[bytearray, list[Cut]]:
    """The records of data grouped into `parts` by a hash of their series key (csv needs
    the layout): (buffer, per part a Cut whose `bytes` is (offset, length))."""
    dst = bytearray(memoryview(data).nbytes + 1)
    out = ffi.new("ts_part_out[]", parts)
    err = ffi.new("uint64_t *")
    with ffi.from_buffer(data) as src, ffi.from_buffer(dst, require_writable=True) as cdst:
        rc = lib.ts_route_series(FORMATS[fmt], layout.c if layout else ffi.NULL, src, len(src), parts,
                                 cdst, len(dst), out, err)
    if rc == -4:
        raise CsvMeasurementError(bytes(data[err[0]: err[0] + 200]), layout.names)
    _check(rc, "route_series")
    return dst, [Cut((int(p.offset), int(p.bytes)), int(p.rows), int(p.values)) for p in (out[i] for i in range(parts))]


# ---- phase 2: rendering CSV parts through a template (ts_render) ---------------------------

ENCODINGS = {"raw": 0, "json": 1, "jsonin": 2, "ns": 5, "ms": 6, "subms": 7, "day": 8,
             # CQL binary values ([bytes], NULL as unset): text, double, bigint, time as bigint ns,
             # timestamp, int ns within the ms, date
             "v_text": 9, "v_double": 10, "v_bigint": 11, "v_ns": 12, "v_ms": 13, "v_subms": 14, "v_date": 15,
             # BSON element values: double, int64, time as a UTC datetime (ms), string, time floored
             # to its UTC hour as a UTC datetime
             "b_double": 16, "b_int64": 17, "b_date": 18, "b_string": 19, "b_hour": 20}
TEXT_ENCODINGS = {ENCODINGS[e] for e in ("raw", "json", "jsonin", "v_text", "b_string")}
OPEN_FLAVOURS = {"cql": 0, "bson": 1}       # ("open",) is ("open", "cql")
OPEN_DEPTH = 4                              # values open at once, at most (render.c)
_OP_LIT, _OP_COL, _OP_IF, _OP_OPEN, _OP_CLOSE, _OP_SEP = 0, 1, 2, 3, 4, 5
_ERR_SPACE, _ERR_CSV, _ERR_TIME, _ERR_COLUMN, _ERR_NUMBER = -3, -6, -7, -8, -9
_RENDER_ERRORS = {_ERR_CSV: "a malformed CSV line (an unterminated quote or text after a closing quote)",
                  _ERR_TIME: "column {col} is not a time YYYY-MM-DDTHH:MM:SS[.fraction]Z (or is out of range)",
                  _ERR_COLUMN: "the line has no column {col}",
                  _ERR_NUMBER: "column {col} is not a number of its type (or is out of range)"}


class CsvRenderError(UserError):
    """A CSV line a template cannot render: the problem and the start of the line."""

    def __init__(self, problem: str, line: bytes):
        start = line.split(b"\n", 1)[0][:120].decode("utf-8", "replace")
        super().__init__(f"CSV data: {problem}, in the line {start!r}")


class Template:
    """The text each CSV line of a measurement becomes (ts_template), from ops:
    ("lit", bytes) | ("col", i, encoding) | ("if", i, k): when column i is NULL
    skip the next k ops | ("open"[, "cql" | "bson"]) ... ("close",): what the ops
    between write, as one CQL binary value or one BSON document (its length
    first) | ("sep", bytes): a JSON separator, written unless it would come first
    in its object or array (after "{" or "[", or at the line's start). Column 0 is the time, then the tags, then the fields."""

    def __init__(self, ops: list[tuple]):
        lits = bytearray()
        rows = [_op_row(k, op, len(ops) - k, lits) for k, op in enumerate(ops)]
        opened = [r["kind"] for r in rows if r["kind"] in (_OP_OPEN, _OP_CLOSE)]
        depth = list(itertools.accumulate(1 if k == _OP_OPEN else -1 for k in opened))
        if depth and (depth[-1] != 0 or min(depth) < 0 or max(depth) > OPEN_DEPTH):
            raise ValueError(f"template ops: every (\"open\",) needs its (\"close\",), {OPEN_DEPTH} deep at most")
        self.ops = list(ops)
        self.max_col = max((r["col"] for r in rows if r["kind"] in (_OP_COL, _OP_IF)), default=0)
        text = [r["col"] for r in rows if r["kind"] == _OP_COL and r["enc"] in TEXT_ENCODINGS]
        self.n_cols = sum(r["kind"] == _OP_COL for r in rows)
        # output bytes per line: at most `line_bound` + 6 * line length * n_cols (all escaped);
        # usually about `line_guess` + line length * `repeats` (the most any column is written)
        self.line_bound = len(lits) + 24 * self.n_cols + 3 * len(opened)
        self.line_guess = len(lits) + 24 * (self.n_cols - len(text)) + 2 * len(text) + 3 * len(opened)
        self.repeats = max((text.count(c) for c in set(text)), default=0)
        self._ops = ffi.new("ts_op[]", rows or [{}])
        self._lits = ffi.new("char[]", bytes(lits) or b"\0")
        self.c = ffi.new("ts_template *", {"ops": self._ops, "n_ops": len(rows), "max_col": self.max_col,
                                           "lits": self._lits})


def _op_row(k: int, op: tuple, left: int, lits: bytearray) -> dict:
    """One ts_op from its tuple (a literal appended to lits); ValueError when not valid."""
    if op[0] in ("lit", "sep") and len(op) == 2 and isinstance(op[1], (bytes, bytearray)):
        row = {"kind": _OP_LIT if op[0] == "lit" else _OP_SEP, "lit_off": len(lits), "lit_len": len(op[1])}
        lits += op[1]
        return row
    if op[0] == "col" and len(op) == 3 and op[2] in ENCODINGS and op[1] >= 0:
        return {"kind": _OP_COL, "col": op[1], "enc": ENCODINGS[op[2]]}
    if op[0] == "if" and len(op) == 3 and op[1] >= 0 and 0 <= op[2] < left:
        return {"kind": _OP_IF, "col": op[1], "skip": op[2]}
    if op == ("close",):
        return {"kind": _OP_CLOSE}
    flavour = op[1] if op[0] == "open" and len(op) == 2 else "cql"
    if op[0] == "open" and len(op) <= 2 and flavour in OPEN_FLAVOURS:
        return {"kind": _OP_OPEN, "enc": OPEN_FLAVOURS[flavour]}
    raise ValueError(f"template op {k} is not valid: {op!r}")


def render(tpl: Template, buf, offset: int, length: int) -> tuple[memoryview, np.ndarray]:
    """Every CSV line of buf[offset:offset+length] through tpl: (the text, a
    memoryview of bytes; the end offset in it of each line's output, uint64).
    Blank lines render nothing."""
    import numpy as np

    src = ffi.from_buffer(buf)
    if offset < 0 or length < 0 or offset + length > len(src):
        raise ValueError("render: the range is outside the buffer")
    lines = int(np.count_nonzero(np.frombuffer(buf, np.uint8, length, offset) == 10)) + 1
    worst = lines * tpl.line_bound + 6 * length * tpl.n_cols + 64          # what C can need
    out = np.empty(min(worst, lines * tpl.line_guess + length * tpl.repeats * 9 // 8 + 64), np.uint8)
    ends = np.empty(lines, np.uint64)          # a line per newline at most
    cols = ffi.new("ts_span[]", tpl.max_col + 1)
    st = ffi.new("ts_render_state *")
    while True:
        rc = lib.ts_render(tpl.c, src + offset, length, ffi.cast("char *", out.ctypes.data), len(out),
                           ffi.cast("uint64_t *", ends.ctypes.data), len(ends), cols, tpl.max_col + 1, st)
        if rc != _ERR_SPACE or len(out) >= worst:
            break
        more = np.empty(min(2 * len(out), worst), np.uint8)   # more room; C goes on from where it stopped
        more[: st.out_used] = out[: st.out_used]
        out = more
    if rc in _RENDER_ERRORS:
        pos = offset + st.err_pos
        raise CsvRenderError(_RENDER_ERRORS[rc].format(col=st.err_col), bytes(buf[pos: pos + 200]))
    _check(rc, "render")
    return memoryview(out)[: st.out_used], ends[: st.lines]


# ---- phase 2: grouping rendered BSON documents by key (ts_bson_groups) ------------------------

def bson_groups(keys, key_ends: np.ndarray, docs, doc_ends: np.ndarray,
                name: bytes) -> tuple[memoryview, np.ndarray, memoryview, np.ndarray]:
    """The lines of two renders of one CSV part (render(): each line's key and its element,
    each a BSON document) grouped by equal key bytes, groups in the order of their first line:
    (the groups' keys, their end offsets, the groups' update documents
    {"$push": {name: {"$each": [their lines' elements]}}}, their end offsets)."""
    import numpy as np

    n = len(key_ends)
    if len(doc_ends) != n or key_ends.dtype != np.uint64 or doc_ends.dtype != np.uint64:
        raise ValueError("bson_groups: the keys and elements of the same lines, with uint64 ends")
    kbuf, dbuf = ffi.from_buffer(keys), ffi.from_buffer(docs)
    if n and (int(key_ends[-1]) > len(kbuf) or int(doc_ends[-1]) > len(dbuf)):
        raise ValueError("bson_groups: an end offset is outside its buffer")
    key_ends, doc_ends = np.ascontiguousarray(key_ends), np.ascontiguousarray(doc_ends)
    filters = np.empty(max(int(key_ends[-1]) if n else 0, 1), np.uint8)
    updates = np.empty(max((int(doc_ends[-1]) if n else 0) + (58 + len(name)) * n, 1), np.uint8)
    fends, uends = np.empty(max(n, 1), np.uint64), np.empty(max(n, 1), np.uint64)
    scratch = np.empty(int(lib.ts_bson_groups_scratch(n)), np.uint64)
    out = ffi.new("ts_groups_out *")
    u64 = lambda a: ffi.cast("uint64_t *", a.ctypes.data)  # noqa: E731
    rc = lib.ts_bson_groups(kbuf, u64(key_ends), dbuf, u64(doc_ends), n, name, len(name),
                            ffi.cast("char *", filters.ctypes.data), len(filters), u64(fends),
                            ffi.cast("char *", updates.ctypes.data), len(updates), u64(uends), len(uends),
                            u64(scratch), len(scratch), out)
    _check(rc, "bson_groups")
    g = int(out.groups)
    return (memoryview(filters)[: out.filter_used], fends[:g], memoryview(updates)[: out.update_used],
            uends[:g])


# ---- phase 1 with several processes: merging the simulators' outputs ----------------------

MERGE_DONE, MERGE_FULL, MERGE_NEED = 0, 1, 2   # TS_MERGE_* values


class Merger:
    """Interleaves the fills of n simulators of consecutive entity ranges epoch
    by epoch (ts_merge): the bytes one simulator of the whole range writes, as
    pieces. A segment of `min_ref` bytes or more is handed out where the
    simulator wrote it (no copy); shorter ones are gathered in a buffer of `cap`
    bytes. At most `max_pieces` pieces a call."""

    def __init__(self, n: int, cap: int, min_ref: int = 1 << 15, max_pieces: int = 1024):
        self.n = n
        self._srcs = ffi.new("ts_merge_src[]", n)    # zeros: no buffer yet
        self._views: list = [None] * n                 # each source's buffer, as Python sees it
        self._keep: list = [None] * n
        self._st = ffi.new("ts_merge_state *")
        self._buf = bytearray(cap)
        self._pieces = ffi.new("int64_t[]", 3 * max_pieces)     # (source or -1, offset, length) each
        self._out = ffi.new("ts_merge_out *", {
            "dst": ffi.from_buffer(self._buf, require_writable=True), "cap": cap, "min_ref": min_ref,
            "pieces": self._pieces, "max_pieces": max_pieces})

    @property
    def turn(self) -> int:
        """The source whose buffer the last MERGE_NEED asks for."""
        return int(self._st.turn)

    @property
    def epoch(self) -> int:
        return int(self._st.epoch)

    def feed(self, i: int, data, marks, fill: Fill) -> None:
        """Hand in source i's next buffer: `data` and `marks` (int64) as `fill` left them.
        The pieces of its previous buffer are invalid from here on."""
        d, m = ffi.from_buffer(data), ffi.from_buffer("int64_t[]", marks)
        if fill.n_marks > len(m) or fill.bytes > len(d):
            raise ValueError("merge: the fill does not match its buffers")
        self._keep[i], self._views[i] = (d, m), memoryview(data).cast("B")
        s = self._srcs[i]
        s.data, s.bytes, s.marks, s.n_marks = d, fill.bytes, m, fill.n_marks
        s.first_epoch, s.last, s.next, s.pos = fill.first_epoch, int(fill.done), 0, 0

    def merge(self) -> tuple[int, list[memoryview]]:
        """Merge as far as possible: (MERGE_*, the pieces in order). The gathered
        pieces are valid until the next call, a source's until its next feed."""
        rc = lib.ts_merge(self._srcs, self.n, self._st, self._out)
        _check(rc, "merge")
        own = memoryview(self._buf)
        flat = ffi.unpack(self._pieces, 3 * self._out.n_pieces)
        return rc, [(own if src < 0 else self._views[src])[off: off + n]
                    for src, off, n in zip(flat[0::3], flat[1::3], flat[2::3])]


# ---- import: scanning line protocol (ts_lp_scan_lines) -------------------------------------

LP_TYPES = ("float", "integer", "unsigned", "string", "boolean")   # TS_LP_* in order
PRECISIONS = {"ns": 0, "us": 1, "ms": 2, "s": 3}                    # TS_PREC_*
LP_ERRORS = {1: "no measurement name", 2: "a tag without '=' or with an empty key or value",
             3: "no field set", 4: "a field without '=' or with an empty key", 5: "a field with no value",
             6: "a value that is no number, string or boolean", 7: "not an integer (i) or out of range",
             8: "not an unsigned integer (u) or out of range", 9: "a string with no closing quote",
             10: "text after a string value", 11: "a timestamp that is not an integer or out of range in ns"}
# the arrays of a scan: name -> (C type, numpy dtype, which capacity sizes it)
_LP_ARRAYS = {"line": ("int64_t", "i8", "p"), "meas": ("uint64_t", "u8", "p"), "series": ("uint64_t", "u8", "p"),
              "shape": ("uint64_t", "u8", "p"), "time": ("int64_t", "i8", "p"), "has_time": ("uint8_t", "u1", "p"),
              "meas_off": ("uint32_t", "u4", "p"), "meas_len": ("uint32_t", "u4", "p"),
              "tag_end": ("uint32_t", "u4", "p"), "field_end": ("uint32_t", "u4", "p"),
              "tag_key": ("uint64_t", "u8", "t"), "tag_val": ("uint64_t", "u8", "t"), "tag_off": ("uint32_t", "u4", "t"),
              "tag_klen": ("uint32_t", "u4", "t"), "tag_vlen": ("uint32_t", "u4", "t"),
              "field_key": ("uint64_t", "u8", "f"), "field_type": ("uint8_t", "u1", "f"),
              "field_value": ("int64_t", "i8", "f"), "field_off": ("uint32_t", "u4", "f"),
              "field_klen": ("uint32_t", "u4", "f"), "field_voff": ("uint32_t", "u4", "f"),
              "field_vlen": ("uint32_t", "u4", "f"),
              "err_line": ("int64_t", "i8", "e"), "err_code": ("int32_t", "i4", "e"), "err_col": ("uint32_t", "u4", "e")}


@dataclass
class LpBatch:
    """What one ts_lp_scan_lines call read: counts, and numpy arrays trimmed to them
    (per point: line .. field_end; per tag: tag_*; per field: field_*; per error: err_*)."""

    used: int
    lines: int
    points: int
    blank: int
    comments: int
    errors: int
    done: bool           # False: an array filled up; scan buf[used:] next
    arrays: dict


class LpScanner:
    """Reusable arrays for scanning line protocol: points, tags and fields per call at most."""

    def __init__(self, points: int, tags: int, fields: int, max_errors: int = 100):
        import numpy as np
        self.caps = {"p": points, "t": tags, "f": fields, "e": max_errors}
        self.np = {k: np.empty(self.caps[c], dt) for k, (_, dt, c) in _LP_ARRAYS.items()}
        self.c = ffi.new("ts_lp_scan *", {"cap_points": points, "cap_tags": tags, "cap_fields": fields,
                                          "max_errors": max_errors})
        for k, (ct, _, _) in _LP_ARRAYS.items():
            setattr(self.c, k, ffi.cast(ct + " *", self.np[k].ctypes.data))

    def grown(self) -> LpScanner:
        """A scanner with twice the room (a line with more tags or fields than this one holds)."""
        c = self.caps
        return LpScanner(2 * c["p"], 2 * c["t"], 2 * c["f"], c["e"])

    def scan(self, buf, start: int, end: int, first_line: int, precision: str) -> LpBatch:
        """Scan the whole lines of buf[start:end] (first_line: the file line number of the first)."""
        s = self.c
        s.precision, s.first_line = PRECISIONS[precision], first_line
        with ffi.from_buffer(buf) as cbuf:
            rc = lib.ts_lp_scan_lines(s, cbuf + start, end - start)
        if rc not in (0, -3):
            _check(rc, "lp_scan")
        got = {"p": s.points, "t": s.tags, "f": s.fields, "e": min(s.errors, self.caps["e"])}
        arrays = {k: a[:got[_LP_ARRAYS[k][2]]] for k, a in self.np.items()}
        return LpBatch(int(s.used), int(s.lines), int(s.points), int(s.blank), int(s.comments),
                       int(s.errors), rc == 0, arrays)


def lp_prev_times(ids: np.ndarray, times: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Each point's series' previous time in file order (ids: int64 indices into last, the
    per-series last times, updated in place)."""
    import numpy as np
    prev = np.empty(len(ids), np.int64)
    rc = lib.ts_lp_prev_times(ffi.cast("int64_t *", ids.ctypes.data), ffi.cast("int64_t *", times.ctypes.data),
                              len(ids), ffi.cast("int64_t *", last.ctypes.data), len(last),
                              ffi.cast("int64_t *", prev.ctypes.data))
    _check(rc, "lp_prev_times")
    return prev


# ---- protobuf bodies of series protocols (ts_rw_encode, ts_otlp_encode) ------------------------

@dataclass
class RemoteWrite:
    """One batch as a protocol's protobuf message: its bytes (a view into the encoder's buffer,
    valid until its next call) and what it holds."""

    body: memoryview
    series: int
    samples: int
    skipped: int      # string values: no sample


class _SeriesEncoder:
    """Line protocol batches into one protocol's protobuf messages (uncompressed), two C calls a
    batch: the scan (ts_lp_scan_lines) and the encoding (what: the protocol's name; c_scratch and
    c_encode: its C functions). Arrays grow as batches need."""

    what = ""
    c_scratch = c_encode = None
    arg_error = ""        # what TS_ERR_ARG can mean besides a bad call

    def __init__(self, points: int = 1024, fields: int = 8192, out_bytes: int = 1 << 16):
        import numpy as np
        self._np = np
        self._scanner = LpScanner(points, 8 * points, fields, max_errors=1)
        self._scratch = np.empty(0, np.uint64)
        self._out = bytearray(out_bytes)
        self._res = ffi.new("ts_rw_out *")

    def _scan(self, data) -> LpBatch:
        while True:
            got = self._scanner.scan(data, 0, len(data), 1, "ns")
            if got.done:
                break
            self._scanner = self._scanner.grown()
        if got.errors:
            a = got.arrays
            raise UserError(f"{self.what}: line {int(a['err_line'][0])} of a batch is not line protocol: "
                            f"{LP_ERRORS.get(int(a['err_code'][0]), 'unreadable')}")
        return got

    def encode(self, data) -> RemoteWrite:
        """The batch `data` (whole lines of line protocol, ns timestamps) as one message."""
        got = self._scan(data)
        need = int(self.c_scratch(got.arrays["field_key"].size))
        if self._scratch.size < need:
            self._scratch = self._np.empty(need, self._np.uint64)
        scratch = ffi.cast("uint64_t *", self._scratch.ctypes.data)
        with ffi.from_buffer(data) as cbuf:
            while True:
                with ffi.from_buffer(self._out, require_writable=True) as cout:
                    rc = self.c_encode(self._scanner.c, cbuf, cout, len(cout), scratch, self._scratch.size,
                                       self._res)
                if rc != -3:
                    break
                self._out = bytearray(max(int(self._res.used), 2 * len(self._out)))
        _check(rc, f"{self.what} encode{self.arg_error}")
        r = self._res
        return RemoteWrite(memoryview(self._out)[:r.used], int(r.series), int(r.samples), int(r.skipped))


class RemoteWriteEncoder(_SeriesEncoder):
    """Line protocol batches into Prometheus remote-write 1.0 WriteRequests (ts_rw_encode)."""

    what = "remote-write"
    c_scratch, c_encode = staticmethod(lib.ts_rw_scratch), staticmethod(lib.ts_rw_encode)
    arg_error = " (a point of more than 255 tags?)"


class OtlpEncoder(_SeriesEncoder):
    """Line protocol batches into OTLP ExportMetricsServiceRequests (ts_otlp_encode)."""

    what = "otlp"
    c_scratch, c_encode = staticmethod(lib.ts_otlp_scratch), staticmethod(lib.ts_otlp_encode)
