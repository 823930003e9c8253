"""Query dialects (phases 3-5): how one database's query language states the
catalog's shapes, TSBS's "filler" idea. A dialect implements shapes, not query
types: a method per basic shape (aggregate, rows, last) that turns a drawn
query's parameters into the database's native query, and a renderer per custom
shape it knows (the iot types). The query types a dialect runs are derived:
every catalog type whose shape it implements, minus its declared exclusions,
each with its reason. So a type added to the catalog in a known shape runs
everywhere at once, and `support()` says for every type why it does not.

A dialect may also declare other correct forms of a type's question (`forms`),
which benchmarks/dialects.py times against tsbench's own rendering on a loaded
server; where one is faster by more than 1.2x and tsbench keeps its own,
`form_reasons` says why.

    class MetricsQL(Dialect):
        name = "metricsql"
        excluded = {"high-cpu-all": "rows filtered on a field need row output"}
        def aggregate(self, p): ...
        def rows(self, p): ...
        def last(self, p): ...
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from tsbench.core.errors import Unsupported
from tsbench.queries.base import BASIC_SHAPES, QuerySpec, shape_of
from tsbench.queries.catalog import CATALOG

# the name of tsbench's own rendering among a query type's forms
TSBENCH_FORM = "tsbench"


class Dialect:
    """Base class: subclasses override the shape methods they implement."""

    name: ClassVar[str] = ""
    # query type -> why this dialect does not run it, though it implements its shape
    excluded: ClassVar[Mapping[str, str]] = {}
    # custom shape (a catalog type's own name) -> renderer(dialect, params) -> native query
    custom: ClassVar[Mapping[str, Callable[[Any, dict], Any]]] = {}
    # query type -> {form name -> renderer(dialect, params) -> native query}: other correct
    # ways to ask the same question, measured against tsbench's own rendering (the implicit
    # form "tsbench", never listed here) by benchmarks/dialects.py
    forms: ClassVar[Mapping[str, Mapping[str, Callable[[Any, dict], Any]]]] = {}
    # query type -> why tsbench's form is kept although another correct form was measured
    # faster than it by more than 1.2x (also said in the dialect's docstring)
    form_reasons: ClassVar[Mapping[str, str]] = {}

    def aggregate(self, p: dict) -> Any:
        raise NotImplementedError

    def rows(self, p: dict) -> Any:
        raise NotImplementedError

    def last(self, p: dict) -> Any:
        raise NotImplementedError

    # ---- derived capabilities -------------------------------------------------------------
    @classmethod
    def shapes(cls) -> frozenset[str]:
        """The shapes this dialect implements: the basic ones it overrides, and its custom ones."""
        basic = {s for s in BASIC_SHAPES if getattr(cls, s) is not getattr(Dialect, s)}
        return frozenset(basic) | frozenset(cls.custom)

    @classmethod
    def support(cls) -> dict[str, str | None]:
        """Every catalog type: None if this dialect runs it, else the reason it does not."""
        shapes = cls.shapes()
        out: dict[str, str | None] = {}
        for name, qt in CATALOG.items():
            if name in cls.excluded:
                out[name] = cls.excluded[name]
            elif qt.shape not in shapes:
                out[name] = f"{cls.name} does not implement the {qt.shape} shape"
            else:
                out[name] = None
        return out

    @classmethod
    def query_types(cls) -> frozenset[str]:
        return frozenset(n for n, why in cls.support().items() if why is None)

    def client_finished(self, p: dict) -> bool:
        """Whether the target computes this query's answer on the client from what the
        server sends (a HAVING, a join of per-field series, a global LIMIT, a merge of
        several requests), beyond decoding it. That work is part of the latency and
        recorded on its own (client_s); decoding alone is done after the timed pass."""
        return False

    # ---- rendering ----------------------------------------------------------------------
    def render(self, spec: QuerySpec) -> Any:
        """The native query of a drawn query; Unsupported with the reason for a type it does not run."""
        why = self.support().get(spec.type, f"unknown query type {spec.type!r}")
        if why is not None:
            raise Unsupported(f"{self.name}: query type {spec.type} is not run ({why})")
        shape = shape_of(spec.params)
        if shape in BASIC_SHAPES:
            return getattr(self, shape)(spec.params)
        return self.render_custom(shape, spec.params)

    def render_custom(self, shape: str, p: dict) -> Any:
        return self.custom[shape](self, p)

    def render_form(self, spec: QuerySpec, form: str) -> Any:
        """The native query of a drawn query in one of its forms: "tsbench" is render(spec),
        any other a renderer of forms[spec.type]; Unsupported for a form not declared."""
        native = self.render(spec)
        if form == TSBENCH_FORM:
            return native
        renderer = self.forms.get(spec.type, {}).get(form)
        if renderer is None:
            raise Unsupported(f"{self.name}: query type {spec.type} has no form {form!r}")
        return renderer(self, spec.params)

    @classmethod
    def form_names(cls, query_type: str) -> tuple[str, ...]:
        """Every form of a query type: tsbench's first, then the declared ones."""
        return (TSBENCH_FORM, *cls.forms.get(query_type, {}))
