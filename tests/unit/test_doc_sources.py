"""What the docs site is made from stays right without a build: every target option says
what it means (its `description`, which the generated database page shows), and every
.py file that README.md or a page of docs/ names by a path exists in the tree (a path
from the repository's root, or from tsbench/ or tsbench/databases/ as the pages write
`execute/timer.py` and `cassandra/driver.py`)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# a file path as the docs write it: `tsbench/load/run.py`, tests/databases/<db>/test_x.py, queries/shapes.py
PATH = re.compile(r"(?<![\w./<>*-])([\w.<>*-]+/[\w./<>*-]*\.py)\b")
BASES = (ROOT, ROOT / "tsbench", ROOT / "tsbench" / "databases")


def test_every_target_option_says_what_it_means():
    from tsbench.databases import names, target_class

    missing = [f"{name}: {field}" for name in names()
               for field, info in target_class(name).options_model.model_fields.items()
               if not (info.description or "").strip()]
    assert not missing, f"target options without a description: {missing}"


def named_paths(text: str) -> set[str]:
    """The .py paths (with at least one folder) a Markdown text names."""
    return set(PATH.findall(text))


def missing_paths(text: str) -> list[str]:
    """The paths text names that match no file under any of BASES (a placeholder such as
    <db> or * matches any name)."""
    def exists(path: str) -> bool:
        pattern = re.sub(r"<[^>/]*>", "*", path)
        return any(any(base.glob(pattern)) if "*" in pattern else (base / pattern).is_file() for base in BASES)
    return sorted(p for p in named_paths(text) if not exists(p))


def _pages() -> list[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_file_the_docs_name_exists():
    stale = {str(p.relative_to(ROOT)): missing_paths(p.read_text()) for p in _pages()}
    stale = {page: paths for page, paths in stale.items() if paths}
    assert not stale, f"paths named in the docs that are not in the tree: {stale}"


def test_the_path_check_finds_a_stale_path():
    text = ("See `tsbench/cli.py`, tests/test_load.py and tests/databases/<db>/ (conftest in tests/conftest.py), "
            "databases/http_pool.py, execute/timer.py, cassandra/driver.py and load.py.")
    assert named_paths(text) == {"tsbench/cli.py", "tests/test_load.py", "tests/conftest.py",
                                 "databases/http_pool.py", "execute/timer.py", "cassandra/driver.py"}
    assert missing_paths(text) == ["databases/http_pool.py", "tests/test_load.py", "tsbench/cli.py"]
    assert missing_paths("tests/databases/<db>/test_nothing_here.py") == ["tests/databases/<db>/test_nothing_here.py"]
    assert missing_paths("tsbench/databases/<db>/target.py and tsbench/commands/*.py") == []
