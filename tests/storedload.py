"""Tests of queries on imported data (phases 3-5 on tests/data/own/ref_small.lp): the import,
the generic queries drawn on it, and a target loaded with the data file written from the import
(data/storedfile.py) by the real loader, verified."""

from __future__ import annotations

import pathlib

from conftest import execute_on, load_into, run_cli

from tsbench import queries
from tsbench.data.stored import open_stored

LP = pathlib.Path(__file__).parent / "data" / "own" / "ref_small.lp"


def imported(tmp_path_factory):
    """ref_small.lp imported with `tsbench import`, opened as a StoredDataset."""
    d = tmp_path_factory.mktemp("own") / "ref_small"
    run_cli("import", str(LP), "-o", str(d))
    return open_stored(d)


def generic_names() -> list[str]:
    return [n for n, qt in queries.CATALOG.items() if qt.family == "generic"]


def load_view(target: str, url: str, ds, options: dict | None = None) -> int:
    """The view written in the target's format (data/storedfile.py) and loaded by the real
    loader, verified (counts and values); the row count."""
    import tempfile

    from tsbench.data.datafile import open_datafile
    from tsbench.data.storedfile import write_datafile
    from tsbench.databases import target_class

    with tempfile.TemporaryDirectory() as d:
        fmt = target_class(target).format
        path = pathlib.Path(d) / f"view.{fmt}"
        write_datafile(ds, fmt, str(path))
        res = load_into(target, url, open_datafile(path), options)
        return res.rows


class ViewFile:
    """What execute_on needs of a data file: its tables (the view's)."""

    def __init__(self, ds):
        self.ds = ds

    def tables(self):
        return self.ds.tables


def execute_view(target: str, url: str, ds, specs, reference, options: dict | None = None):
    return execute_on(target, url, ViewFile(ds), specs, reference, options, workers=2)
