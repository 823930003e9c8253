"""A dataset the workers generate in place (phase 2: `load --generate ... --cluster`):
what `load` needs of a data file (format, counts, tables), where the counts are the sums
of the shares' manifests once every worker made its group."""

from __future__ import annotations

from dataclasses import dataclass, field

from tsbench.data.datafile import tables_of
from tsbench.data.dataset import Dataset


@dataclass
class GeneratedData:
    dataset: Dataset
    format: str
    compression: str = "none"
    path: None = None
    rows: int = 0
    values: int = 0
    shares: list = field(default_factory=list)     # per slot: {"slot", "path", "rows", "values", "sha256"}

    def tables(self):
        return tables_of(self.dataset, self.rows, self.values)
