"""The results page (docs/results.md) against a run folder: the columns of each parquet
table and the manifest's keys that the page does not name, for the end-to-end tests
that make run folders to check it with."""

from __future__ import annotations

import json
import pathlib
import re

import pyarrow.parquet as pq

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "results.md"
TABLES = ("cells", "trials", "load", "stream", "queries", "verify", "resources")


def sections() -> dict[str, str]:
    """The page's text about each table (from the paragraph that starts "`name`" to the next such)
    and about the manifest ("manifest"), by name."""
    text = PAGE.read_text()
    names = "|".join(("manifest.json", *TABLES))
    parts = re.split(rf"\n\n(?=`({names})`)", text)
    return {parts[i].removesuffix(".json"): parts[i + 1] for i in range(1, len(parts), 2)}


def _named(name: str, text: str) -> bool:
    """Whether text names a column: as a word, or through a `prefix_*` it gives."""
    if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
        return True
    return any(name.startswith(prefix) for prefix in re.findall(r"(\w+_) ?\*", text))


def undocumented(run: pathlib.Path) -> dict[str, list[str]]:
    """{table or "manifest": the columns or keys of the run folder that its section of the page does not name}."""
    about = sections()
    out = {}
    for table in TABLES:
        names = pq.read_schema(run / f"{table}.parquet").names
        out[table] = [n for n in names if not _named(n, about.get(table, ""))]
    keys = json.loads((run / "manifest.json").read_text())
    out["manifest"] = [k for k in keys if not _named(k, about.get("manifest", ""))]
    return {k: v for k, v in out.items() if v}
