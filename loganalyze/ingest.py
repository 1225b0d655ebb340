"""Ingest: input files -> format detection -> parsed tables -> the run store.

One source at a time, batch by batch: each batch is unwrapped, offered to the formats
that claim lines anywhere (NCCL), then to the file's own format; what nobody claims is
kept in `unparsed` with its line number. Counts are checked to add up to the lines read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path

import polars as pl

import parsers
from loganalyze.errors import LoganalyzeError
from loganalyze.reader import ReadStats, check_readable, read_batches, spool_stdin
from loganalyze.store import Staging, Store, check_run_name
from loganalyze.wrappers import unwrap
from parsers.engine import Context, guess_version, parse
from parsers.spec import FileFormat, LogFormat

SAMPLE_LINES = 2000
Progress = Callable[[int, int], None]


@dataclass
class SourceResult:
    """What one input became: the contract behind `ingest --format json`."""

    path: str
    sha256: str
    format: str
    version: str | None
    lines: int
    blank: int
    tables: dict[str, int] = field(default_factory=dict)
    lines_by_table: dict[str, int] = field(default_factory=dict)
    unparsed: int = 0
    bad_utf8: int = 0
    year: int = 0
    year_source: str = ""
    skipped: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IngestResult:
    run: str
    store: str
    sources: list[SourceResult]

    def to_dict(self) -> dict:
        return {"run": self.run, "store": self.store, "sources": [s.to_dict() for s in self.sources]}


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def year_for(path: Path, year: int | None) -> tuple[int, str, str]:
    """Year and base date for logs that print neither, and where they came from."""
    if year:
        return year, f"{year}-01-01", "--year"
    try:
        mtime = datetime.fromtimestamp(path.stat().st_mtime)
        return mtime.year, mtime.date().isoformat(), "file modification time"
    except OSError:
        today = date.today()
        return today.year, today.isoformat(), "current year"


def choose_format(sample: pl.Series, path: Path, as_format: str | None) -> parsers.Format:
    if as_format:
        if as_format not in parsers.FORMATS:
            raise LoganalyzeError(f"unknown format {as_format!r}; known formats: {', '.join(parsers.FORMATS)}")
        return parsers.FORMATS[as_format]
    fmt, _ = parsers.detect(sample)
    if fmt is None:
        raise LoganalyzeError(
            f"{path}: unknown format (known formats: {', '.join(parsers.FORMATS)}; use --as to force one)"
        )
    return fmt


def parse_batch(frame: pl.DataFrame, primary: LogFormat, ctx: Context) -> tuple[dict[str, list], dict[str, int]]:
    """All formats' tables for one batch, plus lines per table (unparsed included)."""
    remaining = frame
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, int] = {}
    for fmt in [f for f in parsers.embeddable() if f is not primary] + [primary]:
        if remaining.height == 0:
            break
        got = parse(fmt, remaining, ctx)
        for t, df in got.tables.items():
            tables.setdefault(t, []).append(df)
        for t, n in got.lines.items():
            lines[t] = lines.get(t, 0) + n
        remaining = remaining.filter(~got.claimed)
    if remaining.height:
        tables.setdefault("unparsed", []).append(remaining.select("line_no", ts="wrap_ts", text="raw"))
        lines["unparsed"] = remaining.height
    return tables, lines


def stage_tables(staged: Staging, tables: dict[str, list[pl.DataFrame]], lines: dict[str, int],
                 ctx: Context, result: SourceResult) -> None:
    for t, parts in tables.items():
        df = pl.concat(parts, how="diagonal_relaxed").with_columns(source=pl.lit(ctx.source))
        staged.write(t, df.sort("line_no"))
    for t, n in lines.items():
        result.lines_by_table[t] = result.lines_by_table.get(t, 0) + n


def read_whole_file(fmt: FileFormat, frame: pl.DataFrame, ctx: Context, staged: Staging,
                    result: SourceResult) -> None:
    """Structured files (JSON results) are parsed whole; their line counts are checked the same way."""
    got = fmt.read(frame, ctx)
    tables = {t: [df] for t, df in got.tables.items()}
    lines = dict(got.lines)
    rest = frame.filter(~frame["line_no"].is_in(got.claimed_lines.implode()))
    if rest.height:
        tables.setdefault("unparsed", []).append(rest.select("line_no", "text", ts=pl.lit(None, pl.Datetime("us"))))
        lines["unparsed"] = lines.get("unparsed", 0) + rest.height
    stage_tables(staged, tables, lines, ctx, result)


def ingest_source(store: Store, run: str, path: Path, shown: str, as_format: str | None,
                  year: int | None, progress: Progress | None) -> SourceResult:
    check_readable(path)
    sha = sha256_of(path)
    yr, base_date, year_source = year_for(path, year)
    stats = ReadStats()
    staged: Staging | None = None
    result: SourceResult | None = None
    whole: list[pl.DataFrame] = []
    try:
        for batch in read_batches(path, stats):
            if result is None:
                if store.has_source(run, sha):
                    return SourceResult(shown, sha, "", None, 0, 0, skipped=True)
                sample = unwrap(batch.head(SAMPLE_LINES), yr)["text"]
                fmt = choose_format(sample, path, as_format)
                version = guess_version(fmt, sample) if isinstance(fmt, LogFormat) else None
                result = SourceResult(shown, sha, fmt.name, version, 0, 0,
                                      year=yr, year_source=year_source)
                ctx = Context(source=sha[:16], year=yr, base_date=base_date)
                staged = store.staging()
            if isinstance(fmt, FileFormat):
                whole.append(batch)
                continue
            frame = unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), yr)
            tables, lines = parse_batch(frame, fmt, ctx)
            stage_tables(staged, tables, lines, ctx, result)
            if progress:
                progress(stats.bytes_read, stats.lines)
        if result is None:
            raise LoganalyzeError(f"{path}: no text lines (only blank lines)")
        if whole:
            read_whole_file(fmt, pl.concat(whole), ctx, staged, result)
        result.lines, result.blank, result.bad_utf8 = stats.lines, stats.blank, stats.bad_utf8
        result.tables = dict(staged.rows)
        result.unparsed = result.lines_by_table.get("unparsed", 0)
        accounted = sum(result.lines_by_table.values()) + result.blank
        if accounted != result.lines:
            raise AssertionError(f"{path}: {accounted} lines accounted for, {result.lines} read")
        entry = {"id": sha[:16], **{k: v for k, v in result.to_dict().items() if k != "skipped"}}
        entry["size"] = path.stat().st_size
        result.skipped = not store.commit(run, entry, staged)
        staged = None
        return result
    finally:
        if staged is not None:
            staged.discard()


def ingest(paths: Iterable[str | Path], run: str | None = None, store: Store | str | Path | None = None,
           as_format: str | None = None, year: int | None = None,
           progress: Progress | None = None) -> IngestResult:
    """Parse each input into run `run` (a new `run<N>` if None); '-' reads standard input."""
    store = store if isinstance(store, Store) else Store(store)
    paths = list(paths)
    if not paths:
        raise LoganalyzeError("nothing to ingest: give at least one file")
    store.cleanup()
    run = check_run_name(run) if run else store.next_run_name()
    results = []
    for p in paths:
        if str(p) == "-":
            spooled = spool_stdin()
            try:
                results.append(ingest_source(store, run, spooled, "<stdin>", as_format, year, progress))
            finally:
                os.unlink(spooled)
        else:
            results.append(ingest_source(store, run, Path(p), str(p), as_format, year, progress))
    return IngestResult(run=run, store=str(store.root), sources=results)
