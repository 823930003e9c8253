"""The reference answers' disk cache (phase 5, and phase 3's check for empty
answers): one Arrow IPC file per (dataset, query), read by cached.py so that a
run whose answers are all here never builds the reference engine.

Where: $TSBENCH_REFERENCE_CACHE when set (a directory; `off` disables the
cache), else reference-answers/ in tsbench's home (homedir.py: $TSBENCH_HOME,
else ~/.cache/tsbench). Layout: <dataset key>/<query key>.arrow, beside
<dataset key>/dataset.json (the dataset, for people). The dataset key is a
sha256 over all that fixes the engine's tables: the simulator's inputs (compiled
schema, seed, entities, start, interval, epochs), the C core's build id,
DuckDB's version and reference.py's source; for an import, its import.json's
sha256 and loadable view instead of the simulator's inputs and the C core. The
query key is a sha256 over the type, the parameters and the SQL the engine runs
(not the query's id).

An answer is its columns, each typed from its values (int64, float64, string;
nulls kept), so that reading gives back equal tuples, floats bit for bit; an
answer of other types is not stored. Entries are written to a temp file renamed
into place, so a crash or a concurrent run never leaves half an entry; one that
cannot be read is computed again, with a one-line note."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import tempfile
from typing import Callable

import pyarrow as pa

from tsbench.core.homedir import root as home_root
from tsbench.data.dataset import Dataset
from tsbench.queries.base import QuerySpec

ENV = "TSBENCH_REFERENCE_CACHE"
FORMAT = 1                     # bump when the files or the keys change meaning
TAG = f"tsbench reference answer {FORMAT}".encode()
_TYPES = {int: pa.int64(), float: pa.float64(), str: pa.string()}


def cache_dir() -> pathlib.Path | None:
    """The cache's folder, from the environment; None when disabled."""
    where = os.environ.get(ENV)
    if where is None or where == "":
        return pathlib.Path(home_root()) / "reference-answers"
    return None if where.strip().lower() == "off" else pathlib.Path(where).expanduser()


def _sha(obj) -> str:
    text = json.dumps(obj, sort_keys=True, default=lambda b: b.hex() if isinstance(b, bytes) else str(b))
    return hashlib.sha256(text.encode()).hexdigest()


def dataset_key(ds: Dataset) -> str:
    """Changes whenever the reference engine's tables would."""
    import duckdb

    from tsbench.data.native import build_id

    engine = pathlib.Path(__file__).with_name("reference.py").read_bytes()
    if ds.stored:
        return _stored_key(ds, engine, duckdb.__version__)
    return _sha({"format": FORMAT, "compiled": dataclasses.asdict(ds.compiled), "seed": ds.spec.seed,
                 "entities": ds.entities, "start_ns": ds.start_ns, "interval_ns": ds.interval_ns,
                 "epochs": ds.epochs, "c_core": build_id(), "duckdb": duckdb.__version__,
                 "engine": hashlib.sha256(engine).hexdigest()})[:32]


def _stored_key(ds, engine: bytes, duckdb_version: str) -> str:
    """An import's key: its import.json's sha256 (which names its Parquet files' contents),
    the loadable view and the SQL that reads it, DuckDB's version and reference.py's source."""
    view = pathlib.Path(__file__).with_name("storedview.py").read_bytes()
    return _sha({"format": FORMAT, "import_sha256": ds.meta_sha256,
                 "tables": [dataclasses.asdict(t) for t in ds.tables], "duckdb": duckdb_version,
                 "engine": hashlib.sha256(engine + view).hexdigest()})[:32]


def query_key(spec: QuerySpec, sql: str) -> str:
    """Changes whenever the query's type, parameters or SQL do."""
    return _sha({"type": spec.type, "params": spec.params, "sql": sql})[:32]


class Unstorable(ValueError):
    """An answer whose values the cache cannot give back exactly."""


def encode(rows: list[tuple], qkey: str) -> pa.Table:
    """An answer as a table of typed columns c0, c1, ... (tagged with its query key)."""
    cols = list(zip(*rows))
    arrays = [pa.array(list(col), _column_type(col)) for col in cols]
    meta = {b"tsbench": TAG, b"query": qkey.encode()}
    return pa.table(arrays, names=[f"c{i}" for i in range(len(cols))]).replace_schema_metadata(meta)


def _column_type(col: tuple) -> pa.DataType:
    kinds = {type(v) for v in col if v is not None}
    if not kinds:
        return pa.null()
    if len(kinds) > 1 or next(iter(kinds)) not in _TYPES:
        raise Unstorable(f"a column holds {', '.join(sorted(k.__name__ for k in kinds))}")
    return _TYPES[kinds.pop()]


def decode(table: pa.Table, qkey: str) -> list[tuple]:
    """The answer back from its table; ValueError if the table is not the entry of qkey."""
    meta = table.schema.metadata or {}
    if meta.get(b"tsbench") != TAG or meta.get(b"query") != qkey.encode():
        raise ValueError("not this query's entry")
    return list(zip(*(c.to_pylist() for c in table.columns)))


class AnswerStore:
    """One dataset's folder of the cache. say: where notes go (an unreadable entry,
    a folder that cannot be written: the cache is then left alone for the run)."""

    def __init__(self, root: pathlib.Path, ds: Dataset, say: Callable[[str], None]):
        self.dir, self.ds, self.say, self.writable = root / dataset_key(ds), ds, say, True

    def path(self, qkey: str) -> pathlib.Path:
        return self.dir / f"{qkey}.arrow"

    def get(self, qkey: str) -> list[tuple] | None:
        """The cached answer; None when absent or unreadable (with a note)."""
        p = self.path(qkey)
        try:
            with pa.memory_map(str(p)) as f:
                return decode(pa.ipc.open_file(f).read_all(), qkey)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, pa.ArrowException) as exc:
            self.say(f"reference cache: {p} unreadable ({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                     "computing it again")
            return None

    def put(self, qkey: str, rows: list[tuple]) -> None:
        """Store an answer atomically; an answer of other types is skipped."""
        if not self.writable:
            return
        try:
            table = encode(rows, qkey)
        except (Unstorable, OverflowError, pa.ArrowException):
            return          # not storable as typed columns: the answer stays computed, only not cached
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not (self.dir / "dataset.json").exists():
                _atomic(self.dir / "dataset.json", lambda f: f.write(json.dumps(self.ds.describe()).encode()))
            _atomic(self.path(qkey), lambda f: _write_ipc(f, table))
        except OSError as exc:
            self.writable = False
            self.say(f"reference cache: cannot write {self.dir} ({exc.strerror or exc}); answers not cached")


def _write_ipc(f, table: pa.Table) -> None:
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(f, table.schema, options=opts) as w:
        w.write_table(table)


def _atomic(path: pathlib.Path, write: Callable) -> None:
    """Write path through a temp file in its folder renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:           # any failure, Ctrl-C included: no temp file left, then raised on
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
