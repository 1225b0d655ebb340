"""Tables out of the store: Parquet, CSV, JSON or JSON lines, chosen by the file's extension.

Shared by `export` (a run's tables) and `query` (a result). Parquet keeps every type; CSV
cannot hold lists or structs (`extra`, `per_position`), so those become JSON text in
their cell; JSON keeps them nested. Parquet, CSV and JSON lines stream from the store to
the file; a JSON array is built in memory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import polars as pl

from loganalyze.errors import LoganalyzeError
from loganalyze.escape import terminal
from loganalyze.query import polars_message
from loganalyze.redact import redact_frame
from loganalyze.run import open_run
from loganalyze.store import Store
from loganalyze import formats

SUFFIXES = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "ndjson", ".ndjson": "ndjson"}
EXTENSION = {"parquet": ".parquet", "csv": ".csv", "json": ".json", "ndjson": ".jsonl"}
FORMATS = tuple(EXTENSION)
TABLE_ROWS = 50


def format_of(path: Path) -> str | None:
    """The file format a path's extension names, or None (a folder, or an unknown extension)."""
    return SUFFIXES.get(path.suffix.lower())


def result_format(given: str | None, output: Path | None) -> str:
    """A query result's format: as given, else the one `output`'s extension names, else a
    table for the terminal; Parquet, which is binary, only to a file."""
    fmt = given or (format_of(output) if output else None) or "table"
    if fmt == "parquet" and output is None:
        raise LoganalyzeError("parquet is binary: write it to a file with -o FILE.parquet")
    return fmt


def _json_text(column: str) -> pl.Expr:
    """A nested column as the JSON text of each value (null stays null), with whole-column expressions."""
    encoded = pl.struct(pl.col(column).alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(pl.col(column).is_null()).then(None).otherwise(encoded).alias(column)


def flat(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The frame with its nested columns as JSON text, which is what a CSV cell can hold."""
    nested = [c for c, t in lf.collect_schema().items() if t.is_nested()]
    return lf.with_columns(_json_text(c) for c in nested) if nested else lf


def collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Evaluate a query; an error that only shows while running (a failed cast) is one line too."""
    try:
        return lf.collect()
    except pl.exceptions.PolarsError as e:
        raise LoganalyzeError(f"query: {polars_message(e)}") from None


def table_text(lf: pl.LazyFrame) -> str:
    """The first TABLE_ROWS rows of a result as a table for the terminal, and a note when
    there are more: only TABLE_ROWS + 1 rows are computed, whatever the query's size."""
    df = collect(lf.head(TABLE_ROWS + 1))
    with pl.Config(tbl_rows=TABLE_ROWS, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        text = str(df.head(TABLE_ROWS))
    if df.height > TABLE_ROWS:
        text += f"\n(first {TABLE_ROWS} rows shown; more with LIMIT/OFFSET, --format csv or -o FILE)"
    return text


def stream(lf: pl.LazyFrame, fmt: str, out: IO[bytes], for_terminal: bool = False) -> None:
    """Write a result to a byte stream (standard output) batch by batch, in CSV, JSON
    (an array of rows) or JSON lines: memory stays bounded by a batch, not the result.
    `for_terminal`: control characters in the values are shown as escapes, not obeyed."""
    if fmt not in ("csv", "json", "ndjson"):
        raise LoganalyzeError(f"{fmt} is not a text format")
    if for_terminal:
        out = _TerminalWriter(out)
    lf = flat(lf) if fmt == "csv" else lf
    header, rows = fmt == "csv", False
    try:
        out.write(b"[" if fmt == "json" else b"")
        for df in lf.collect_batches(chunk_size=50_000):
            if fmt == "csv" and (df.height or header):
                out.write(df.write_csv(include_header=header).encode())
                header = False
            elif fmt == "ndjson":
                out.write(df.write_ndjson().encode())
            elif fmt == "json" and df.height:
                out.write((b"," if rows else b"") + df.write_json()[1:-1].encode())
                rows = True
        if header:  # no batch at all: the header alone
            out.write(lf.head(0).collect().write_csv().encode())
        out.write(b"]\n" if fmt == "json" else b"")
    except pl.exceptions.PolarsError as e:
        raise LoganalyzeError(f"query: {polars_message(e)}") from None
    out.flush()


class _TerminalWriter:
    """A byte stream that escapes control characters on their way to a terminal."""

    def __init__(self, out: IO[bytes]):
        self.out = out

    def write(self, data: bytes) -> None:
        self.out.write(terminal(data.decode("utf-8", "replace")).encode())

    def flush(self) -> None:
        self.out.flush()


def write_text(path: Path, text: str) -> None:
    """Write text to `path` through a temporary file renamed at the end; one-line errors."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        raise LoganalyzeError(f"{path}: cannot write ({e.strerror or e})") from None
    finally:
        _remove(tmp)


def as_text(lf: pl.LazyFrame, fmt: str) -> str:
    """A result as a table for the terminal (the first TABLE_ROWS rows), CSV, JSON (an
    array of rows) or JSON lines."""
    if fmt == "table":
        return table_text(lf)
    df = collect(flat(lf) if fmt == "csv" else lf)
    if fmt == "csv":
        return df.write_csv()
    if fmt == "json":
        return df.write_json()
    if fmt == "ndjson":
        return df.write_ndjson()
    raise LoganalyzeError(f"{fmt} is not a text format")


def write(lf: pl.LazyFrame, path: Path, fmt: str) -> None:
    """Write `lf` to `path` in `fmt`, through a temporary file renamed at the end, so that a
    failed or interrupted write never leaves a partial file under the real name."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        if fmt == "parquet":
            lf.sink_parquet(tmp)
        elif fmt == "csv":
            flat(lf).sink_csv(tmp, check_extension=False)
        elif fmt == "ndjson":
            lf.sink_ndjson(tmp)
        else:
            collect(lf).write_json(tmp)
        os.replace(tmp, path)
    except pl.exceptions.PolarsError as e:
        raise LoganalyzeError(f"{path}: {polars_message(e)}") from None
    except OSError as e:
        raise LoganalyzeError(f"{path}: cannot write ({e.strerror or e})") from None
    finally:
        _remove(tmp)


def _remove(path: Path) -> None:
    """Remove a temporary file if it is there (its folder may not even exist)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def export_run(run: str, out: str | Path, tables: Sequence[str] | None = None, fmt: str | None = None,
               store: Store | str | Path | None = None, redact: bool = True) -> list[Path]:
    """Write a run's tables (default: every table it has rows in) and return the files written,
    their secrets redacted (`redact_frame`) unless `redact=False`.

    `out` with a known extension (.parquet .csv .json .jsonl) is one file, so one table;
    anything else is a folder that gets `<table><ext>` per table, in `fmt` (default Parquet).
    """
    if fmt is not None and fmt not in EXTENSION:
        raise LoganalyzeError(f"unknown export format {fmt!r} (formats: {', '.join(FORMATS)})")
    r = open_run(run, store)
    clean = redact_frame if redact else (lambda lf: lf)
    have = r.tables()
    names = list(tables) if tables else sorted(have)
    if unknown := [t for t in names if t not in have and t not in formats.active().tables]:
        raise LoganalyzeError(f"run {run} has no table {unknown[0]!r} (tables: {', '.join(sorted(have)) or 'none'})")
    out = Path(out)
    if file_fmt := format_of(out):
        if fmt and fmt != file_fmt:
            raise LoganalyzeError(f"{out}: the extension says {file_fmt}, --format says {fmt}")
        if len(names) != 1:
            raise LoganalyzeError(f"{out}: a file holds one table; choose one with --table "
                                  f"({', '.join(names)}) or give a folder")
        write(clean(r.table(names[0])), out, file_fmt)
        return [out]
    fmt = fmt or "parquet"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LoganalyzeError(f"{out}: cannot make the folder ({e.strerror or e})") from None
    paths = [out / f"{t}{EXTENSION[fmt]}" for t in names]
    for t, path in zip(names, paths):
        write(clean(r.table(t)), path, fmt)
    return paths
