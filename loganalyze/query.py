"""SQL over the run store: every table as one LazyFrame across runs, queried with polars SQL.

Each table (stats, config, events, requests, unparsed, spec, and the tables formats
register) is the union of its files in the selected runs plus a `run` column, so one
query can compare runs. Nothing is read until the result is collected or written, and
polars reads only the columns and row groups the query needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from loganalyze.errors import LoganalyzeError
from loganalyze.store import Store
from parsers.tables import SCHEMAS, empty


def union(store: Store, counts: dict[str, dict[str, int]], table: str) -> pl.LazyFrame:
    """One table across runs (`counts`: each run's rows per table), with a `run` column;
    runs that lack the table add nothing."""
    parts = [store.scan(r, table).with_columns(run=pl.lit(r)) for r, tables in counts.items() if tables.get(table)]
    if parts:
        return pl.concat(parts, how="diagonal_relaxed")
    return empty(table).lazy().with_columns(run=pl.lit(None, pl.String))


def tables(store: Store | str | Path | None = None, runs: Sequence[str] | None = None) -> dict[str, pl.LazyFrame]:
    """Every table of the selected runs (default: all), by name; a run that does not exist is an error.

    The canonical and registered tables are always there, empty if no run has rows in
    them, so that a query written for one store runs on any other.
    """
    store = store if isinstance(store, Store) else Store(store)
    counts = {r: store.table_counts(r) for r in (runs or sorted(store.runs()))}
    names = set(SCHEMAS) | {t for c in counts.values() for t in c}
    return {t: union(store, counts, t) for t in sorted(names)}


def polars_message(e: Exception) -> str:
    """A polars error on one line: its message without the query plan it appends."""
    lines = [ln.strip() for ln in str(e).split("Resolved plan until failure")[0].splitlines()]
    return " ".join(ln for ln in lines if ln)


def query(sql: str, runs: Sequence[str] | None = None, store: Store | str | Path | None = None) -> pl.LazyFrame:
    """Run `sql` over the store's tables; returns the result unevaluated.

    The plan is resolved here (collect_schema), so a syntax error, an unknown table or
    column is a LoganalyzeError now rather than when the result is written.
    """
    frames = tables(store, runs)
    try:
        result = pl.SQLContext(frames=frames).execute(sql)
        result.collect_schema()
    except pl.exceptions.PolarsError as e:
        message = polars_message(e)
        if "not found" in message:
            message += f" (tables: {', '.join(frames)})"
        raise LoganalyzeError(f"query: {message}") from None
    return result
