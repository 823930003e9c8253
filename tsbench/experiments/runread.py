"""A run folder read (after a run; the report's first step): the manifest and the parquet
tables as pandas frames, every string masked, checked by runcheck.py, and the words that
tell a cell apart from the others of its target (its settings)."""

from __future__ import annotations

import json
import pathlib

from tsbench.core import secrets
from tsbench.core.errors import UserError
from tsbench.experiments.runcheck import check_manifest, check_tables

TABLES = ("cells", "load", "queries", "resources", "stream")


def read_run(run_dir: str | pathlib.Path) -> tuple[dict, dict]:
    """{table name: pandas DataFrame} and the manifest of a run folder."""
    import pandas as pd

    d = pathlib.Path(run_dir)
    if not (d / "manifest.json").is_file():
        raise UserError(f"{d}: not a run folder (no manifest.json; runs are in results/<experiment>/<run-id>/)")
    manifest = secrets.mask_deep(_manifest(d / "manifest.json"))
    frames = {}
    for name in TABLES + ("trials",):      # trials: a run before issue 38 has none (it is one trial)
        p = d / f"{name}.parquet"
        frames[name] = _masked(_parquet(p)) if p.is_file() else pd.DataFrame()
    check_tables(d, frames)             # no cells, no queries where queries ran, or not tsbench's tables: an error
    cells = frames["cells"]
    if not cells.empty:                  # what sets a cell apart, for labels: its knobs (and dataset)
        several = cells["dataset"].nunique() > 1
        frames["cells"] = cells.assign(settings=[
            " ".join(([f"dataset={c.dataset}"] if several else []) + ([_knobs(c)] if _knobs(c) else []))
            for c in cells.itertuples()])
    return frames, manifest


def _masked(frame):
    """frame with every string masked (secrets.py), in case a writer let a secret through."""
    for col in frame.select_dtypes(include=["object", "string"]).columns:
        frame[col] = frame[col].map(secrets.mask_deep, na_action="ignore")
    return frame


def _manifest(p: pathlib.Path) -> dict:
    """A run's manifest.json; a corrupt one is a UserError."""
    try:
        manifest = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{p}: not a readable run manifest ({exc})") from None
    check_manifest(p, manifest)
    return manifest


def _parquet(p: pathlib.Path):
    """A run's parquet table; a corrupt or truncated one is a UserError."""
    import pandas as pd

    try:
        return pd.read_parquet(p)
    except Exception as exc:         # pyarrow's errors (ArrowInvalid, OSError) share no base of their own
        raise UserError(f"{p}: not a readable parquet table ({type(exc).__name__}: {exc})") from None


def _settings(cell) -> str:
    """What sets a cell apart from the others of its target, e.g. "workers=2 batch_size=5000"."""
    return getattr(cell, "settings", None) or _knobs(cell)


def _knobs(cell) -> str:
    """A cell's matrix knobs (other than the target), e.g. "workers=2 batch_size=5000"."""
    knobs = json.loads(cell.knobs) if isinstance(cell.knobs, str) else {}
    parts = [f"{k.split('.')[-1]}={v}" for k, v in knobs.items() if k != "target"]
    if getattr(cell, "repetition", 0):       # a run folder from before trials (repetitions: separate cells)
        parts.append(f"rep {cell.repetition + 1}")
    return " ".join(parts)


def _label(cell) -> str:
    return f"{cell.target_name} {_settings(cell)}".strip()
