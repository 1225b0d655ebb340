"""One input into its own staging: opened (a local file, standard input, an object),
detected, parsed batch by batch through the pipeline, its lines accounted for. The unit
of work of every executor (loganalyze/ingestion/executors.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from loganalyze import formats
from loganalyze import objstore
from loganalyze.errors import LoganalyzeError, UnknownFormat
from loganalyze.ingestion.detect import SAMPLE_LINES, choose_format, year_for
from loganalyze.ingestion.dispatch import parse_batch, read_file_frame, stage_tables
from loganalyze.ingestion.pipeline import PARSE_WORKERS, InOrder, Pipeline, stateful
from loganalyze.ingestion.results import Reading, SourceResult
from loganalyze.reader import Input, ReadStats, open_input, read_batches, spool_stdin
from loganalyze.store import Staging, Store
from loganalyze.wrappers import unwrap
from loganalyze.formats.scoring import guess_version
from loganalyze.formats.spec import Context, FileFormat, LogFormat


def ingest_source(store: Store, run: str | None, src: Input, shown: str, staged: Staging,
                  as_format: str | None, year: int | None, progress: Reading | None,
                  taken: set[str], workers: int = PARSE_WORKERS) -> tuple[SourceResult, dict | None]:
    """Parse one opened input into `staged`; returns its result and catalog entry (None: skipped).

    `taken` holds the ids staged earlier in this ingest, so a file given twice counts once.
    """
    sid = src.sha256[:16]
    if sid in taken or (run is not None and store.has_source(run, sid)):
        return SourceResult(shown, src.sha256, "", None, 0, 0, skipped=True), None
    yr, base_date, year_source = year_for(src.mtime, year)
    stats = ReadStats()
    result: SourceResult | None = None
    whole: list[pl.DataFrame] = []

    def prepared(batch: pl.DataFrame) -> pl.DataFrame:
        return unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), yr)

    def parse_one(batch: pl.DataFrame, context: Context) -> tuple[dict, dict]:
        # The first batch comes prepared (it has `raw`) when detection read it whole.
        return parse_batch(batch if "raw" in batch.columns else prepared(batch), fmt, context)

    def write_one(tables: dict, lines: dict) -> None:
        stage_tables(staged, tables, lines, ctx, result)

    def write_in_order(*parsed: object) -> None:
        write_one(*order.take(*parsed))

    pipeline: Pipeline | None = None
    order: InOrder | None = None
    try:
        for seq, batch in enumerate(read_batches(src, stats)):
            if result is None:
                ready = prepared(batch) if batch.height <= SAMPLE_LINES else None  # unwrapped once, read twice
                sample = unwrap(batch.head(SAMPLE_LINES), yr)["text"] if ready is None else ready["text"]
                try:
                    fmt = choose_format(sample, src.path, as_format)
                except UnknownFormat as e:
                    return SourceResult(shown, src.sha256, "", None, 0, 0, refused=str(e)), None
                version = guess_version(fmt, sample) if isinstance(fmt, LogFormat) else None
                result = SourceResult(shown, src.sha256, fmt.name, version, 0, 0, year=yr, year_source=year_source)
                batched = isinstance(fmt, FileFormat) and fmt.by_batch is not None and fmt.by_batch("\n".join(sample))
                ctx = Context(source=sid, year=yr, base_date=base_date)
                if isinstance(fmt, LogFormat) and any(map(stateful, [fmt, *formats.active().embeddable()])):
                    order = InOrder(parse_one, ctx)
                    pipeline = Pipeline(workers, write_in_order)
                elif isinstance(fmt, LogFormat):
                    pipeline = Pipeline(workers, write_one)
            if isinstance(fmt, FileFormat):
                if batched:
                    read_file_frame(fmt, batch, ctx, staged, result)
                else:
                    whole.append(batch)
                continue
            if seq == 0 and ready is not None:
                batch = ready
            at = (stats.bytes_read, stats.lines)
            task = (order.guess, batch, seq) if order else (parse_one, batch, ctx)
            pipeline.submit(*task, done=(lambda at=at: progress(*at)) if progress else None)
        if pipeline:
            pipeline.finish()
    finally:
        if order:
            order.stop()
        if pipeline:
            pipeline.close()
    if result is None:
        raise LoganalyzeError(f"{src.path}: no text lines (only blank lines)")
    if whole:
        read_file_frame(fmt, pl.concat(whole), ctx, staged, result)
    result.lines, result.blank, result.bad_utf8 = stats.lines, stats.blank, stats.bad_utf8
    result.long_lines = stats.long_lines
    result.tables = dict(staged.rows)
    result.unparsed = result.lines_by_table.get("unparsed", 0)
    accounted = sum(result.lines_by_table.values()) + result.blank
    if accounted != result.lines:
        raise AssertionError(f"{src.path}: {accounted} lines accounted for, {result.lines} read")
    if as_format is None and not any(n for table, n in result.tables.items() if table != "unparsed"):
        return SourceResult(shown, src.sha256, "", None, 0, 0, refused=nothing_read(src.path, fmt.name),
                            looked_like=fmt.name), None
    entry = {"id": sid, **{k: v for k, v in result.to_dict().items() if k != "skipped"}, "size": src.size}
    return result, entry


def nothing_read(path: Path, detected: str) -> str:
    """Why a file whose detected format typed none of its lines is skipped: its first lines
    looked like that format (a README that names vLLM, the `vllm bench serve` command kept
    in a `commands.txt`), but nothing of it is a log line or result that format reads.
    Stored, it would be all `unparsed`; `--as` stores it all the same (docs/formats.md)."""
    return (f"{path}: unknown format: no line of it is one a format reads (it looked like {detected}; "
            f"use --as {detected} to store its lines as unparsed)")


def open_argument(arg: str | Path, staged: Staging) -> tuple[Input, str]:
    """The opened input for a path argument and how to show it; '-' is spooled and an
    object URL downloaded into `staged` first (and unlinked once open), so a crash leaves
    nothing outside the store's temp area."""
    if str(arg) != "-" and not objstore.is_url(arg):
        return open_input(Path(arg)), str(arg)
    local = objstore.download(str(arg), staged.dir) if objstore.is_url(arg) else spool_stdin(staged.dir)
    try:
        return open_input(local), str(arg) if objstore.is_url(arg) else "<stdin>"
    finally:
        local.unlink()


def stage_file(store: Store, run: str | None, arg: str, as_format: str | None, year: int | None,
               labels: dict[str, str], progress: Reading | None = None, taken: frozenset[str] = frozenset(),
               into: Staging | None = None, workers: int = PARSE_WORKERS) -> tuple[SourceResult, dict | None, Staging]:
    """One input parsed into its own staging, on `workers` parse threads: the unit of work
    of every executor. The staging is made here, and on failure discarded here, unless the
    caller made it (`into`: a worker process stages into one its parent owns, since the
    store's cleanup keeps the staging of a live process)."""
    staged = into or store.staging()
    try:
        src, shown = open_argument(arg, staged)
        with src:
            result, entry = ingest_source(store, run, src, shown, staged, as_format, year, progress, set(taken),
                                          workers)
    except BaseException:
        if into is None:
            staged.discard()
        raise
    if entry is not None and labels:
        entry["labels"] = labels
    return result, entry, staged
