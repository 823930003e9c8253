"""`tsbench queries` (phase 3): draw queries once from a seed (generate), and the query
types with the targets that run them (list)."""

from __future__ import annotations

import click

from tsbench.commands.common import key_values, writable
from tsbench.commands.fromodel import options_of
from tsbench.core.errors import UserError
from tsbench.queries import FAMILIES
from tsbench.queries.options import QueriesSettings


def _dataset_from(datafile: str | None, dataset: str | None):
    """A Dataset from a data file's manifest or from --dataset KEY=VALUE,...; an import
    folder (tsbench import -o DIR) as its StoredDataset."""
    from pathlib import Path

    from tsbench.data.dataset import resolve, spec_from_pairs

    if datafile and Path(datafile).is_dir():
        from tsbench.data.stored import open_stored

        return open_stored(datafile)
    if datafile:
        from tsbench.data.datafile import open_datafile

        return open_datafile(datafile).dataset
    if not dataset:
        raise UserError("give a DATAFILE (its manifest names the dataset) or --dataset KEY=VALUE,...")
    kv = {k.replace("-", "_"): v for k, v in key_values(tuple(x for x in dataset.split(",") if x), "--dataset").items()}
    return resolve(spec_from_pairs(kv, "--dataset"))


@click.group("queries")
def queries_cmd() -> None:
    """Phase 3: draw queries once from a seed, for every database alike."""


@queries_cmd.command("generate")
@click.argument("datafile", required=False)
@click.option("--dataset", default=None, metavar="KEY=VALUE,...",
              help="The dataset, if no DATAFILE (a data file, or an import folder): "
                   "use_case=devops,scale=100,end=...,seed=123")
@click.option("--types", "-T", default=None, help="Comma-separated query types (see: queries list).")
@click.option("--family", default=None, help=f"All types of a family that fit the dataset: {', '.join(FAMILIES)}.")
@options_of(QueriesSettings)
@click.option("--allow-empty", is_flag=True,
              help="Keep every first draw, even when its answer is empty (no reference engine is built).")
@click.option("--output", "-o", required=True, callback=writable, help="Queries file (JSON lines).")
def queries_generate(datafile, dataset, types, family, count, seed, allow_empty, output) -> None:
    """Draw COUNT queries of each type; parameters depend on the seed, type,
    index and the dataset's data only, never on the target.

    \b
    Empty answers are redrawn: query i of a type is drawn from (seed, type, i);
    if its answer on the reference engine (the dataset in DuckDB, built first)
    has no rows, it is drawn again from (seed, type, i, attempt), attempts 1 to
    31, and the first with a non-empty answer is kept; if all 32 are empty (the
    type finds nothing in this dataset) the first draw is kept. --allow-empty
    keeps the first draw always. On an import folder (or a data file made from
    one) without --types or --family: the generic family, and the family of the
    use case its schema was recognized as."""
    from tsbench import queries
    from tsbench.experiments import session

    ds = _dataset_from(datafile, dataset)
    if types:
        names = [t.strip() for t in types.split(",") if t.strip()]
    elif family or ds.stored:
        names = session.select_types(ds, [], [family] if family else [])
        if not names:
            raise UserError(f"--family: no {family or 'generic'!r} query type fits this dataset (families: "
                            f"{', '.join(FAMILIES)})")
    else:
        raise UserError("queries generate: give --types or --family")
    specs = session.draw(ds, names, count, seed, allow_empty=allow_empty,
                         say=lambda m: click.echo(f"queries generate: {m}", err=True))
    queries.write_queries(output, ds, seed, specs, allow_empty=allow_empty)
    click.echo(f"{len(specs)} queries ({len(names)} types x {count}) -> {output}", err=True)


@queries_cmd.command("list")
@click.argument("datafile", required=False)
@click.option("--dataset", default=None, metavar="KEY=VALUE,...",
              help="Only the types that fit this dataset (if no DATAFILE): use_case=devops,scale=100,...")
@click.option("--markdown", is_flag=True, help="A Markdown table (the README's), reasons as footnotes.")
@click.option("--why", is_flag=True, help="Also print, per target, why each type it does not run is not run.")
def queries_list(datafile, dataset, markdown, why) -> None:
    """Every query type: family, shape, meaning, and which targets run it
    (derived from the shapes each target's dialect implements). With a DATAFILE
    (a data file, or an import folder) or --dataset: only the types that fit that
    dataset (on an import: of the families drawn on it by default)."""
    from tsbench.databases.shared.support import markdown_table, support_matrix

    m = support_matrix()
    if datafile or dataset:
        m.types = _fitting(_dataset_from(datafile, dataset), m.types)
    if markdown:
        click.echo(markdown_table(m), nl=False)
        return
    cols = list(m.columns)
    click.echo("type\tfamily\tshape\t" + "\t".join(cols) + "\tmeaning")
    for qt in m.types:
        marks = "\t".join("yes" if m.runs(c, qt.name) else "-" for c in cols)
        click.echo(f"{qt.name}\t{qt.family}\t{qt.shape}\t{marks}\t{qt.doc}")
    if why:
        shown = {qt.name for qt in m.types}
        for c in cols:
            for t, reason in m.reasons(c).items():
                if t in shown:
                    click.echo(f"{c}: {t}: {reason}")


def _fitting(ds, types: list) -> list:
    """The types that fit the dataset (on an import, of its default families)."""
    from tsbench.experiments import session

    names = set(session.select_types(ds, [], [] if ds.stored else list(FAMILIES)))
    return [qt for qt in types if qt.name in names]
