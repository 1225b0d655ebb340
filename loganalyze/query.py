"""SQL over the run store: every table as one LazyFrame across runs, queried with polars SQL.

Each table (stats, config, events, requests, unparsed, spec, and the tables formats
register) is the union of its files in the selected runs plus a `run` column, so one
query can compare runs, and the partition columns `date`, `cluster`, `host`, `engine`
(and any other label given on ingest) from the catalog, so a fleet can be grouped by
server. Nothing is read until the result is collected or written, and polars reads only
the columns and row groups the query needs; a `where` on partition values prunes whole
sources before that (SQL WHERE on them is correct too, but opens every file).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from loganalyze.errors import LoganalyzeError
from loganalyze.redact import redact as redact_text
from loganalyze.redact import redact_frame
from loganalyze.store import Store, open_store
from loganalyze import formats
from loganalyze.formats.tables import empty

PARTITIONS = ("date", "cluster", "host", "engine")


def partition_values(run: dict, src: dict) -> dict[str, str | None]:
    """A source's partition columns: its labels (--label on ingest), with `date` (the
    label, else the UTC day it was ingested), `cluster` (the label, else null), `host`
    (the label, else the file name up to its first dot: fleet dumps are named by host, as
    in logs/<day>/<cluster>/<host>.log.gz) and `engine` (the label, else the source's format)."""
    labels = src.get("labels", {})
    return {**labels, "date": labels.get("date") or src.get("ingested", run["created"])[:10],
            "cluster": labels.get("cluster"), "host": labels.get("host") or source_name(src.get("path", src["id"])),
            "engine": labels.get("engine") or src.get("format")}


def source_name(path: str) -> str:
    """`host7` for `s3://logs/day/c1/host7.log.gz` or `/var/log/host7.log`."""
    return path.rstrip("/").rsplit("/", 1)[-1].split(".")[0] or path


def restrict(store: Store, where: dict[str, str] | None) -> Store:
    """Only the sources whose partition values match `where`: partition pruning from the
    catalog, before any file is read."""
    if not where:
        return store
    return store.filtered(lambda run, src: all(partition_values(run, src).get(k) == v for k, v in where.items()))


def partitions(store: Store, runs: Sequence[str]) -> pl.DataFrame:
    """One row per (run, source) with its partition columns, to join to every table."""
    catalog = store.runs()
    rows = [{"run": r, "source": s["id"], **partition_values(catalog[r], s)} for r in runs for s in catalog[r]["sources"]]
    keys = sorted({k for row in rows for k in row} - {"run", "source", *PARTITIONS})
    return pl.DataFrame(rows, schema={c: pl.String for c in ("run", "source", *PARTITIONS, *keys)})


def union(store: Store, counts: dict[str, dict[str, int]], table: str, parts: pl.DataFrame) -> pl.LazyFrame:
    """One table across runs (`counts`: each run's rows per table), with a `run` column and
    the partition columns the table does not have itself (NCCL tables have their own `host`);
    runs that lack the table add nothing."""
    frames = [store.scan(r, table).with_columns(run=pl.lit(r)) for r, tables in counts.items() if tables.get(table)]
    frame = pl.concat(frames, how="diagonal_relaxed") if frames else \
        empty(formats.active().tables[table]).lazy().with_columns(run=pl.lit(None, pl.String))
    own = set(frame.collect_schema())
    extra = parts.select("run", "source", *(c for c in parts.columns if c not in own))
    if "source" not in own:
        return frame
    return frame.join(extra.lazy(), on=["run", "source"], how="left", maintain_order="left")


def tables(store: Store | str | Path | None = None, runs: Sequence[str] | None = None,
           where: dict[str, str] | None = None, redact: bool = False) -> dict[str, pl.LazyFrame]:
    """Every table of the selected runs (default: all), by name; a run that does not exist is an error.
    `where` (partition column -> value) keeps only the matching sources' files. With
    `redact`, every table is seen with its secrets already replaced (`redact_frame`), so
    no query, however its columns are renamed or filtered, sees one.

    The canonical and registered tables are always there, empty if no run has rows in
    them, so that a query written for one store runs on any other.
    """
    store = restrict(open_store(store), where)
    selected = [r for r in runs if not where or r in store.runs()] if runs else sorted(store.runs())
    counts = {r: store.table_counts(r) for r in selected}
    names = set(formats.active().tables) | {t for c in counts.values() for t in c}
    parts = partitions(store, selected)
    frames = {t: union(store, counts, t, parts) for t in sorted(names)}
    return {t: redact_frame(f) for t, f in frames.items()} if redact else frames


def polars_message(e: Exception) -> str:
    """A polars error on one line: its message without the query plan it appends."""
    lines = [ln.strip() for ln in str(e).split("Resolved plan until failure")[0].splitlines()]
    return " ".join(ln for ln in lines if ln)


# What a query may not hold outside its string literals: polars SQL's table functions
# (read_csv, read_parquet, read_json, read_ipc, ...) open any path or URL.
_TABLE_FUNCTION = re.compile(r"(?i)\b(?:read|scan)_\w*\s*\(")
_SQL_TOKENS = re.compile(r"""'(?:[^']|'')*'|"((?:[^"]|"")*)"|`([^`]*)`|--[^\n]*|/\*.*?(?:\*/|$)|\$\$.*?(?:\$\$|$)""",
                         re.S)


def _unquoted(sql: str) -> str:
    """The SQL with its string literals emptied, comments removed and quoted names unquoted."""
    def keep(m: re.Match) -> str:
        if m.group(1) is not None or m.group(2) is not None:
            return " " + (m.group(1) if m.group(1) is not None else m.group(2)) + " "
        return "''" if m.group(0).startswith("'") else " "
    return _SQL_TOKENS.sub(keep, sql)


def confine(sql: str) -> None:
    """Refuse SQL that would read anything but the store's tables (a file, a URL)."""
    if m := _TABLE_FUNCTION.search(_unquoted(sql)):
        raise LoganalyzeError(f"query: {m.group(0).rstrip('( ').lower()}() is not allowed: a query reads only the "
                              f"store's tables")


def query(sql: str, runs: Sequence[str] | None = None, store: Store | str | Path | None = None,
          where: dict[str, str] | None = None, redact: bool = False) -> pl.LazyFrame:
    """Run `sql` over the store's tables (of the sources matching `where`); returns the result unevaluated.

    The query reads the store only: table functions that open files or URLs
    (`read_csv('/etc/hostname')`) are refused before anything runs. With `redact`, the
    tables are redacted before the query sees them and the result after (a secret built
    by the query itself), and error messages too.

    The plan is resolved here (collect_schema), so a syntax error, an unknown table or
    column is a LoganalyzeError now rather than when the result is written.
    """
    confine(sql)
    frames = tables(store, runs, where, redact=redact)
    try:
        result = pl.SQLContext(frames=frames).execute(sql)
        result.collect_schema()
    except pl.exceptions.PolarsError as e:
        message = polars_message(e)
        if "not found" in message:
            message += f" (tables: {', '.join(frames)})"
        raise LoganalyzeError(f"query: {redact_text(message) if redact else message}") from None
    return redact_frame(result) if redact else result
