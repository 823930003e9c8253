"""Which query types each registered target runs (phases 3-5), as data derived from the
dialects: a column per target and query language (`influx`, `influx/flux`),
a row per catalog type, and for every type a target does not run, the reason.
`tsbench queries list` prints it; the docs' databases page shows its Markdown form,
generated from it (docs/gen_pages.py)."""

from __future__ import annotations

from dataclasses import dataclass

from tsbench.queries.catalog import CATALOG, QueryType


@dataclass
class SupportMatrix:
    types: list[QueryType]
    columns: dict[str, dict[str, str | None]]       # column -> {type: None (runs) or the reason}
    excluded: dict[str, dict[str, str]]             # column -> the types its dialect excludes, with the reason

    def runs(self, column: str, type_name: str) -> bool:
        return self.columns[column].get(type_name, "") is None

    def reasons(self, column: str) -> dict[str, str]:
        return {t: why for t, why in self.columns[column].items() if why is not None}


def support_matrix() -> SupportMatrix:
    """Every registered target that runs queries, per dialect (the default one named by the target)."""
    from tsbench.databases import names, target_class

    cols: dict[str, dict[str, str | None]] = {}
    excluded: dict[str, dict[str, str]] = {}
    for name in names():
        cls = target_class(name)
        for k, (lang, dialect) in enumerate(cls.dialects.items()):
            col = name if k == 0 else f"{name}/{lang}"
            cols[col], excluded[col] = dialect.support(), dict(dialect.excluded)
    return SupportMatrix(list(CATALOG.values()), cols, excluded)


def markdown_table(m: SupportMatrix) -> str:
    """The docs' table (databases page): a row per type; per column yes, `-` (the dialect does not implement the
    type's shape) or `no (N)` (excluded, the reason in footnote N below the table)."""
    cols = list(m.columns)
    notes: dict[str, int] = {}
    lines = ["| type | family | shape | " + " | ".join(cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for qt in m.types:
        cells = []
        for c in cols:
            why = m.excluded[c].get(qt.name)
            cells.append("yes" if m.runs(c, qt.name) else f"no{_note(notes, f'{c}: {why}')}" if why else "-")
        lines.append(f"| {qt.name} | {qt.family} | {qt.shape} | " + " | ".join(cells) + " |")
    lines += ["", "`-`: the target's dialect does not implement the type's shape."]
    lines += [f"{n}. {text}" for text, n in notes.items()]
    return "\n".join(lines) + "\n"


def _note(notes: dict[str, int], text: str) -> str:
    """A footnote marker, one number per distinct reason."""
    if text not in notes:
        notes[text] = len(notes) + 1
    return f" ({notes[text]})"
