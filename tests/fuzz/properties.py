"""Properties of tsbench's readers of untrusted input, for hypothesis (issue 35, the fuzz
target): the C batch cutter over line-protocol and CSV data (native.cut through
batches.BatchReader, mapped and streamed), the queries-file reader (queries.read_queries),
the experiment reader (experiment.load_experiment) and the C render templates
(native.Template / native.render). Each property takes arbitrary or mutated input and
holds when the reader answers with a clean UserError or with a result that keeps the
reader's promise; anything else (another exception, a crash of the process) is a bug.

`check(name, examples)` runs one property for a number of examples (the smoke test of the
normal suite: a few; tests/fuzz/fuzz_readers.py: as many as fit in its time)."""

from __future__ import annotations

import atexit
import functools
import gzip
import json
import pathlib
import shutil
import tempfile

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsbench.core.errors import UserError
from tsbench.data import batches, native

END = "2016-01-01T00:10:00Z"
SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="tsbench-fuzz-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

# ---- inputs -------------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@functools.lru_cache(maxsize=None)
def samples() -> dict:
    """Valid inputs to mutate: a few lines of each data format, a queries file's lines
    (every shape), an experiment as data."""
    from tsbench import queries
    from tsbench.data.datafile import tables_of
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate

    ds = resolve(DatasetSpec(scale=2, end=END, use_case="devops"))
    out = {}
    for fmt in ("influx", "csv"):
        p = SCRATCH / f"sample.{fmt}"
        generate(ds, fmt, str(p), show_progress=False)
        out[fmt] = p.read_bytes().splitlines(keepends=True)[:40]
    specs = queries.generate(ds, ["max-cpu-1", "groupby-orderby-limit", "lastpoint", "high-cpu-1",
                                  "double-groupby-1"], 1, 1, allow_empty=True)
    queries.write_queries(SCRATCH / "q.jsonl", ds, 1, specs)
    out["queries"] = [json.loads(x) for x in (SCRATCH / "q.jsonl").read_text().splitlines()]
    out["layout"] = [(t.name, len(t.tags)) for t in tables_of(ds, 0, 0)]
    out["experiment"] = {"name": "fuzz", "datasets": {"d": {"scale": 1, "end": END}},
                         "targets": {"a": {"target": "duckdb"}, "b": {"target": "influx", "server": "local"}},
                         "phases": ["generate", "load", "queries", "execute", "validate"],
                         "load": {"workers": 2, "batch_size": 1000}, "queries": {"types": ["max-cpu-1"], "count": 2},
                         "matrix": {"load.workers": [1, 2]}}
    return out


@st.composite
def data_bytes(draw, fmt: str) -> bytes:
    """Lines of a real data file, mutated: bytes flipped, lines cut, dropped, doubled or
    replaced by arbitrary bytes; blank lines, CR LF and a missing last newline."""
    lines = list(draw(st.lists(st.sampled_from(samples()[fmt]), max_size=12)))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "junk", "blank", "crlf", "quote"]))
        if not lines:
            lines.append(b"")
        i = draw(st.integers(0, len(lines) - 1))
        ln = bytearray(lines[i])
        if kind == "flip" and ln:
            ln[draw(st.integers(0, len(ln) - 1))] = draw(st.integers(0, 255))
        elif kind == "cut":
            ln = ln[: draw(st.integers(0, len(ln)))]
        elif kind == "junk":
            ln = bytearray(draw(st.binary(max_size=40)))
        elif kind == "blank":
            ln = bytearray(draw(st.sampled_from([b"\n", b"\r\n", b"", b" \n"])))
        elif kind == "crlf":
            ln = ln.rstrip(b"\n") + b"\r\n"
        else:
            pos = draw(st.integers(0, len(ln)))
            ln[pos:pos] = draw(st.sampled_from([b'"', b"\\", b",", b" ", b"=", b"\\\n"]))
        lines[i] = bytes(ln)
    return b"".join(lines)


def _mutate(value, path_and_new):
    """value (JSON) with the item at a path replaced (a path into dicts and lists)."""
    path, new = path_and_new
    if not path:
        return new
    if isinstance(value, dict) and value:
        key = sorted(value, key=str)[path[0] % len(value)]
        return {**value, key: _mutate(value[key], (path[1:], new))}
    if isinstance(value, list) and value:
        i = path[0] % len(value)
        return value[:i] + [_mutate(value[i], (path[1:], new))] + value[i + 1:]
    return new


MUTATION = st.tuples(st.lists(st.integers(0, 20), max_size=4), JSON)

# ---- properties ---------------------------------------------------------------------------------


def strategies(**given_args):
    """The property's hypothesis strategies, recorded on it (check() applies them anew each run)."""
    def mark(fn):
        fn.given = given_args
        return fn
    return mark


def _lines_of(data: bytes) -> list[bytes]:
    """The records of data as the cutter promises them: lines, a CR before the newline
    dropped, blank ones skipped, the last one even without its newline."""
    out = [ln[:-1] if ln.endswith(b"\r") else ln for ln in data.split(b"\n")]
    return [ln for ln in out if ln]


def _records(batch_list) -> list[bytes]:
    return [ln for b in batch_list for ln in _lines_of(bytes(b.data))]


@strategies(fmt=st.sampled_from(["influx", "csv"]), data=st.data(), batch=st.integers(1, 7))
def cut_whole_lines(fmt, data, batch):
    """Every batch is whole records, at most `batch` of them, counted right; the batches
    together are the file's records in order; mapped, streamed (gzip, in small chunks) and
    cut into byte ranges alike. CSV naming a measurement the dataset lacks: a UserError."""
    raw = data.draw(data_bytes(fmt))
    layout = native.CsvLayout(samples()["layout"]) if fmt == "csv" else None
    p = SCRATCH / f"cut.{fmt}"
    p.write_bytes(raw)
    with gzip.open(str(p) + ".gz", "wb") as f:
        f.write(raw)
    try:
        mapped = list(batches.BatchReader(p, fmt, batch, layout=layout))
    except UserError as exc:
        assert fmt == "csv" and "CSV data names measurement" in str(exc), exc
        return
    for b in mapped:
        text = bytes(b.data)
        assert 1 <= b.rows <= batch and b.rows == len(_lines_of(text))
        assert text.endswith(b"\n") or raw.endswith(text)
        assert 0 <= b.values <= len(text)
    assert _records(mapped) == _lines_of(raw)
    chunk = batches.CHUNK
    batches.CHUNK = data.draw(st.integers(1, 64))
    try:
        streamed = list(batches.BatchReader(str(p) + ".gz", fmt, batch, "gzip", layout=layout))
    finally:
        batches.CHUNK = chunk
    assert [(bytes(b.data), b.rows, b.values) for b in streamed] == [(bytes(b.data), b.rows, b.values) for b in mapped]
    parts = data.draw(st.integers(1, 4))
    ranged = [b for r in batches.byte_ranges(p, parts) for b in batches.BatchReader(p, fmt, batch, layout=layout,
                                                                                    byte_range=r)]
    assert _records(ranged) == _lines_of(raw)
    assert sum(b.values for b in ranged) == sum(b.values for b in mapped)


@st.composite
def queries_file(draw) -> str:
    """A real queries file (every shape) with lines mutated, replaced by other JSON or
    text, dropped or added."""
    lines: list = list(samples()["queries"])          # JSON values, or str: a line as it is
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["mutate", "json", "text", "drop", "add"]))
        if kind == "mutate":
            lines[i] = _mutate(lines[i], draw(MUTATION)) if not isinstance(lines[i], str) else lines[i]
        elif kind == "json":
            lines[i] = draw(JSON)
        elif kind == "text":
            lines[i] = draw(st.text(max_size=40)).replace("\n", " ")
        elif kind == "drop" and len(lines) > 1:
            del lines[i]
        else:
            lines.insert(i, _mutate(samples()["queries"][-1], draw(MUTATION)))
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)


@strategies(text=queries_file())
def queries_reader(text):
    """A queries file is read into query specs of known types, or refused with a UserError."""
    from tsbench import queries

    p = SCRATCH / "fuzz.jsonl"
    p.write_text(text)
    try:
        head, specs = queries.read_queries(p)
    except UserError:
        return
    assert isinstance(head, dict) and specs
    for s in specs:
        queries.query_type(s.type)
        json.dumps(s.to_dict())


@st.composite
def experiment_text(draw) -> str:
    kind = draw(st.sampled_from(["mutate", "mutate", "yaml", "text"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "yaml":
        return yaml.safe_dump(draw(JSON))
    exp = samples()["experiment"]
    for _ in range(draw(st.integers(1, 3))):
        exp = _mutate(exp, draw(MUTATION))
    return yaml.safe_dump(exp)


KEYS = st.sampled_from(["name", "datasets.d.scale", "datasets.d", "matrix.load.workers", "targets.a.target",
                        "targets", "phases", "load.workers", "queries.count", "description", "x.y", "matrix"])
OVERRIDES = st.lists(st.builds("{}={}".format, KEYS | st.text(max_size=12), st.text(max_size=24)), max_size=2)


@strategies(text=experiment_text(), overrides=OVERRIDES)
def experiment_reader(text, overrides):
    """An experiment file (with `run --set` items) is read into an experiment with its
    cells, or refused with a UserError."""
    from tsbench.experiments.experiment import load_experiment

    p = SCRATCH / "fuzz.yaml"
    p.write_text(text)
    try:
        exp = load_experiment(p, tuple(overrides))
    except UserError:
        return
    assert exp.cells and exp.phases


ENCODING = st.sampled_from(sorted(native.ENCODINGS))
OP = st.one_of(st.tuples(st.just("lit"), st.binary(max_size=6)), st.tuples(st.just("sep"), st.binary(max_size=2)),
               st.tuples(st.just("col"), st.integers(0, 6), ENCODING),
               st.tuples(st.just("if"), st.integers(0, 6), st.integers(0, 3)),
               st.just(("open",)), st.just(("open", "bson")), st.just(("close",)))


@st.composite
def csv_part(draw) -> bytes:
    """CSV lines without their measurement (as split_csv leaves them): a real line's
    columns, mutated, or arbitrary bytes."""
    real = [ln.split(b",", 1)[1] for ln in samples()["csv"] if b"," in ln]
    lines = draw(st.lists(st.sampled_from(real), max_size=5))
    if draw(st.booleans()):
        lines.append(draw(st.binary(max_size=60)))
    lines = [bytearray(x) for x in lines]
    for ln in lines:
        if ln and draw(st.booleans()):
            ln[draw(st.integers(0, len(ln) - 1))] = draw(st.sampled_from(b'",\n\\-.e9Z:T \xff\x00'))
    return b"".join(bytes(x) for x in lines)


@strategies(ops=st.lists(OP, max_size=12), part=csv_part(), pad=st.integers(0, 8))
def render_templates(ops, part, pad):
    """Any template the ops make, over any CSV part: rendered text with one end per line
    in order, a CsvRenderError naming the problem, or (ops no template allows) ValueError."""
    try:
        tpl = native.Template(ops)
    except ValueError:
        return
    buf = b"#" * pad + part + b"#" * pad
    try:
        text, ends = native.render(tpl, buf, pad, len(part))
    except native.CsvRenderError:
        return
    assert len(ends) <= part.count(b"\n") + 1
    assert all(int(a) <= int(b) for a, b in zip(ends[:-1], ends[1:]))
    assert not len(ends) or int(ends[-1]) == len(text)


@strategies(data=st.data(), chunk=st.integers(1, 200), points=st.integers(1, 9))
def lp_schema_scan(data, chunk, points):
    """The import's scan of mutated line protocol (tsbench.data.lpscan over csrc/lp_scan.c):
    every line counted once (points, blank, comments, errors) against the file's lines, each
    error at a line of the file, and the same schema whatever the chunks and scan arrays."""
    import io

    from tsbench.data import lpscan
    raw = data.draw(data_bytes("influx"))
    whole = lpscan.scan_stream(io.BytesIO(raw), "ns")
    c = whole["counts"]
    assert c["lines"] == c["file_lines"] == raw.count(b"\n") + (not raw.endswith(b"\n") and len(raw) > 0)
    assert all(1 <= e["line"] <= c["lines"] for e in whole["errors"])
    small = native.LpScanner(points, 16 * points, 16 * points)
    assert lpscan.scan_stream(io.BytesIO(raw), "ns", chunk_bytes=chunk, scanner=small) == whole


@strategies(data=st.data(), chunk=st.integers(1, 200))
def lp_import(data, chunk):
    """The import of mutated line protocol (tsbench.data.lpimport): a user error and nothing
    left, or one Parquet file per measurement whose rows are the scan's points."""
    import pyarrow.parquet as pq

    from tsbench.data import lpimport
    raw = data.draw(data_bytes("influx"))
    with tempfile.TemporaryDirectory(prefix="tsbench-fuzz-import-") as tmp:
        src, out = pathlib.Path(tmp) / "in.lp", pathlib.Path(tmp) / "out"
        src.write_bytes(raw)
        try:
            manifest = lpimport.import_file(str(src), str(out), "ns", chunk_bytes=chunk)
        except UserError:
            assert sorted(p.name for p in pathlib.Path(tmp).iterdir()) == ["in.lp"]
            return
        for name, m in manifest["schema"]["measurements"].items():
            assert pq.ParquetFile(out / manifest["files"][name]).metadata.num_rows == m["points"]
        assert len(list(out.iterdir())) == len(manifest["files"]) + 1


PROPERTIES = {"cut": cut_whole_lines, "queries": queries_reader, "experiment": experiment_reader,
              "render": render_templates, "lpscan": lp_schema_scan, "lpimport": lp_import}


def check(name: str, examples: int) -> None:
    """Run property `name` for `examples` examples (fresh random ones each call)."""
    prop = PROPERTIES[name]
    run = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                   suppress_health_check=list(HealthCheck))(given(**prop.given)(prop))
    run()
