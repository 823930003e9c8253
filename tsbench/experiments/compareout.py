"""What `tsbench compare` prints and writes (after runs): the comparisons of compare.py
as a plain-text table (stdout), a Markdown page and JSON. Each comparison: the runs,
what differs between them (with --allow-different) and the warnings first, then a row per
figure (target, settings, figure, query type, base, other, ratio [95% interval], p,
verdict), and last a line counting the verdicts."""

from __future__ import annotations

import json
import math

from tsbench.experiments.compare import ALPHA, VERDICTS, Comparison, Row

HEAD = ("target", "settings", "figure", "type", "base", "other", "ratio [95% CI]", "p", "verdict")
RIGHT = {"base", "other", "p"}       # columns aligned right in the text table


def text(comparisons: list[Comparison], threshold_pct: float) -> str:
    return "\n\n".join(_text_one(c, threshold_pct) for c in comparisons) + "\n"


def _text_one(c: Comparison, threshold_pct: float) -> str:
    out = [f"BASE  {c.base}", f"OTHER {c.other}"]
    out += [f"differs: {d} (compared anyway: --allow-different)" for d in c.differences]
    out += c.warnings
    out.append(rule(c, threshold_pct))
    cells = [HEAD] + [cells_of(r) for r in c.rows]
    width = [max(len(row[i]) for row in cells) for i in range(len(HEAD))]
    for row in cells:
        out.append("  ".join(v.rjust(w) if h in RIGHT else v.ljust(w)
                             for h, v, w in zip(HEAD, row, width)).rstrip())
    out.append(count_line(c))
    return "\n".join(out)


def rule(c: Comparison, threshold_pct: float) -> str:
    """How the verdicts were reached, in a line."""
    tests = len({r.test_key for r in c.rows if r.p is not None})
    return (f"ratio = OTHER/BASE; p: Holm-corrected over this pair's {tests} tests; faster or slower needs "
            f"p < {ALPHA:g}, the interval on one side of 1 and a difference of {threshold_pct:g}% or more")


def count_line(c: Comparison) -> str:
    """e.g. "41 figures: 39 no difference, 2 slower, 0 faster" (and those too few trials tested none)."""
    n = c.counts()
    extra = f", {n['too few trials']} too few trials" if n["too few trials"] else ""
    return (f"{len(c.rows)} figures: {n['no difference']} no difference, {n['slower']} slower, "
            f"{n['faster']} faster{extra}")


def cells_of(r: Row) -> tuple[str, ...]:
    """A row's values as the table shows them."""
    ci = f" [{r.ci_low:.2f}, {r.ci_high:.2f}]" if _finite(r.ci_low) and _finite(r.ci_high) else ""
    return (r.target, r.settings or "-", r.figure, r.type or "-", number(r.base), number(r.other),
            f"{r.ratio:.2f}{ci}", p_value(r.p), r.verdict)


def number(v: float) -> str:
    """A figure for reading: thousands grouped from 100 on, else three significant digits."""
    if not _finite(v):
        return ""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def p_value(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def markdown(comparisons: list[Comparison], threshold_pct: float) -> str:
    out = ["# tsbench compare", ""]
    for c in comparisons:
        out += [f"## `{c.other}` against `{c.base}`", ""]
        out += [f"- differs: {d} (compared anyway: --allow-different)" for d in c.differences]
        out += [f"- {w}" for w in c.warnings]
        out += ["", rule(c, threshold_pct) + ".", "",
                "| " + " | ".join(HEAD) + " |", "|" + "|".join("---:" if h in RIGHT else "---" for h in HEAD) + "|"]
        out += ["| " + " | ".join(v.replace("|", "\\|") for v in cells_of(r)) + " |" for r in c.rows]
        out += ["", count_line(c), ""]
    return "\n".join(out)


def to_json(comparisons: list[Comparison], threshold_pct: float) -> str:
    return json.dumps({"threshold_pct": threshold_pct, "alpha": ALPHA, "verdicts": list(VERDICTS),
                       "comparisons": [c.as_dict() for c in comparisons]}, indent=2) + "\n"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
