"""Inputs into their stagings: each opened (a local file, standard input, an object),
detected, parsed, its lines accounted for. Small files of one format are parsed together,
many in one batch (`Batches`; loganalyze/formats/sources.py), since each batch pays the parse's
fixed cost; a file of more than one batch goes through the pipeline batch by batch on its
own (`stream`), where a format whose batches carry state (vLLM's year-less timestamps) is
checked in order. Both parse with `dispatch.parse_batch`, a lone file being a batch of one
source. The unit of work
of every executor (loganalyze/ingestion/executors.py) is `stage_files`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import polars as pl

from loganalyze import formats
from loganalyze import objstore
from loganalyze.errors import LoganalyzeError, UnknownFormat
from loganalyze.ingestion.detect import SAMPLE_LINES, choose_formats, year_for
from loganalyze.ingestion.dispatch import Member, parse_batch, read_file_frame, stage_tables
from loganalyze.ingestion.pipeline import PARSE_WORKERS, InOrder, Pipeline, stateful
from loganalyze.ingestion.results import Reading, SourceResult
from loganalyze.reader import BATCH_BYTES, Input, ReadStats, open_input, read_batches, spool_stdin
from loganalyze.store import Staging, Store
from loganalyze.wrappers import unwrap
from loganalyze.formats.scoring import guess_versions
from loganalyze.formats.sources import combine
from loganalyze.formats.spec import Context, FileFormat, LogFormat

Staged = tuple[SourceResult, "dict | None", Staging]


@dataclass
class Read:
    """A source read and detected; its tables are staged once its batch is written."""

    member: Member
    stats: ReadStats
    path: Path
    size: int


def prepared(batch: pl.DataFrame, year: int) -> pl.DataFrame:
    """A batch as the parse reads it: the line as read kept as `raw`, the wrappers removed from `text`."""
    return unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), year)


class Batches:
    """Small files waiting to be parsed together, by format, year and base date (the
    context a batch is parsed in), up to a reader's batch of text each; parsed on the
    pipeline's threads and written on its writing thread."""

    def __init__(self, workers: int):
        self.pipeline = Pipeline(workers, stage_tables)
        self.waiting: dict[tuple, tuple[LogFormat, Context, list[pl.DataFrame], list[Member], list[int]]] = {}

    def add(self, fmt: LogFormat, ctx: Context, frame: pl.DataFrame, member: Member, size: int) -> None:
        key = (fmt.name, ctx.year, ctx.base_date)
        _, _, frames, members, sizes = self.waiting.setdefault(key, (fmt, ctx, [], [], []))
        frames.append(frame)
        members.append(member)
        sizes.append(size)
        if sum(sizes) >= BATCH_BYTES:
            self.flush(key)

    def flush(self, key: tuple) -> None:
        fmt, ctx, frames, members, _ = self.waiting.pop(key)
        self.pipeline.submit(_parse_members, fmt, ctx, frames, members)

    def finish(self) -> None:
        for key in list(self.waiting):
            self.flush(key)
        self.pipeline.finish()

    def close(self) -> None:
        self.pipeline.close()


def _parse_members(fmt: LogFormat, ctx: Context, frames: list[pl.DataFrame], members: list[Member]) -> tuple:
    return (members, *parse_batch(combine(frames), fmt, ctx))


@dataclass
class Opened:
    """An input whose first batch is read, waiting for its format: a file of one batch waits
    with others, so that their formats are detected in one pass; `rest`, a longer file's
    batches after the first, is read while the file is open."""

    staged: Staging
    shown: str
    sha256: str
    path: Path
    size: int
    stats: ReadStats
    year: tuple[int, str, str]  # year, base date, where they came from
    first: pl.DataFrame
    ready: pl.DataFrame | None  # the first batch prepared, where detection read it whole
    sample: pl.Series
    rest: Iterator[pl.DataFrame] | None


def open_source(store: Store, run: str | None, src: Input, shown: str, staged: Staging, year: int | None,
                taken: set[str]) -> Opened | tuple[SourceResult, None]:
    """Read an opened input's first batch and detection sample; a (result, None) when it is
    skipped. `taken` holds the ids staged earlier in this ingest, so a file given twice counts once."""
    sid = src.sha256[:16]
    if sid in taken or (run is not None and store.has_source(run, sid)):
        return SourceResult(shown, src.sha256, "", None, 0, 0, skipped=True), None
    dated = year_for(src.mtime, year)
    stats = ReadStats()
    lines = read_batches(src, stats)
    first = next(lines, None)
    if first is None:
        raise LoganalyzeError(f"{src.path}: no text lines (only blank lines)")
    ready = prepared(first, dated[0]) if first.height <= SAMPLE_LINES else None  # unwrapped once, read twice
    sample = unwrap(first.head(SAMPLE_LINES), dated[0])["text"] if ready is None else ready["text"]
    second = next(lines, None)
    rest = None if second is None else chain([second], lines)
    return Opened(staged, shown, src.sha256, src.path, src.size, stats, dated, first, ready, sample, rest)


def begin(opened: list[Opened], as_format: str | None, batches: Batches, progress: Reading | None,
          workers: int) -> list[Read | tuple[SourceResult, None]]:
    """Detect the inputs' formats (all in one pass) and parse them: a file of one batch waits
    in `batches`, a longer one is parsed here batch by batch."""
    fmts = choose_formats([o.sample for o in opened], [o.path for o in opened], as_format)
    versions: dict[int, str | None] = {}
    for fmt in {id(f): f for f in fmts if isinstance(f, LogFormat)}.values():
        at = [i for i, f in enumerate(fmts) if f is fmt]
        versions.update(zip(at, guess_versions(fmt, [opened[i].sample for i in at])))
    out: list[Read | tuple[SourceResult, None]] = []
    for i, (o, fmt) in enumerate(zip(opened, fmts)):
        if isinstance(fmt, UnknownFormat):
            out.append((SourceResult(o.shown, o.sha256, "", None, 0, 0, refused=str(fmt)), None))
            continue
        yr, base_date, year_source = o.year
        result = SourceResult(o.shown, o.sha256, fmt.name, versions.get(i), 0, 0, year=yr, year_source=year_source)
        ctx = Context(source=o.sha256[:16], year=yr, base_date=base_date)
        read = Read(Member(o.staged, result, ctx.source), o.stats, o.path, o.size)
        out.append(read)
        if isinstance(fmt, FileFormat) and fmt.by_batch is not None and fmt.by_batch("\n".join(o.sample)):
            for batch in chain([o.first], o.rest or []):  # one record a line: read batch by batch
                read_file_frame(fmt, batch, ctx, read.member)
            continue
        if isinstance(fmt, FileFormat):
            read_file_frame(fmt, pl.concat([o.first, *(o.rest or [])]), ctx, read.member)
            continue
        first = o.ready if o.ready is not None else o.first
        if o.rest is None:
            frame = first if o.ready is not None else prepared(first, yr)
            batches.add(fmt, ctx, frame, read.member, o.stats.bytes_read)
        else:
            carries = any(map(stateful, [fmt, *formats.active().embeddable()]))
            stream(fmt, ctx, read.member, chain([first], o.rest), o.stats, progress, workers, carries)
    return out


def stream(fmt: LogFormat, ctx: Context, member: Member, batched: Iterator[pl.DataFrame], stats: ReadStats,
           progress: Reading | None, workers: int, carries: bool) -> None:
    """A file's batches parsed on `workers` threads and written in order; batches that carry
    state (`carries`) checked in order (`InOrder`)."""

    def parse_one(batch: pl.DataFrame, context: Context) -> tuple:
        # The first batch comes prepared (it has `raw`) when detection read it whole.
        return ([member], *parse_batch(batch if "raw" in batch.columns else prepared(batch, ctx.year), fmt, context))

    def write_in_order(*parsed: object) -> None:
        stage_tables(*order.take(*parsed))

    order = InOrder(parse_one, ctx) if carries else None
    pipeline = Pipeline(workers, write_in_order if order else stage_tables)
    try:
        for seq, batch in enumerate(batched):
            at = (stats.bytes_read, stats.lines)
            task = (order.guess, batch, seq) if order else (parse_one, batch, ctx)
            pipeline.submit(*task, done=(lambda at=at: progress(*at)) if progress else None)
        pipeline.finish()
    finally:
        if order:
            order.stop()
        pipeline.close()


def accounted(read: Read, as_format: str | None) -> tuple[SourceResult, dict | None]:
    """A read source's result and catalog entry once its tables are staged: its lines counted
    in exactly one table each; refused when its format typed none of them."""
    result, stats = read.member.result, read.stats
    result.lines, result.blank, result.bad_utf8 = stats.lines, stats.blank, stats.bad_utf8
    result.long_lines = stats.long_lines
    result.tables = dict(read.member.staged.rows)
    result.unparsed = result.lines_by_table.get("unparsed", 0)
    counted = sum(result.lines_by_table.values()) + result.blank
    if counted != result.lines:
        raise AssertionError(f"{read.path}: {counted} lines accounted for, {result.lines} read")
    if as_format is None and not any(n for table, n in result.tables.items() if table != "unparsed"):
        return SourceResult(result.path, result.sha256, "", None, 0, 0, refused=nothing_read(read.path, result.format),
                            looked_like=result.format), None
    entry = {"id": read.member.source, **{k: v for k, v in result.to_dict().items() if k != "skipped"},
             "size": read.size}
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


def stage_files(store: Store, run: str | None, args: list[str], as_format: str | None, year: int | None,
                labels: dict[str, str], progress: Reading | None = None, taken: frozenset[str] = frozenset(),
                into: list[Staging] | None = None, workers: int = PARSE_WORKERS) -> list[Staged]:
    """Inputs parsed, each into its own staging, on `workers` parse threads, small files many
    to a detection pass and a batch: the unit of work of every executor. Returns, per input
    in order, its result, catalog entry (None: skipped or refused) and staging. The stagings
    are made here, and on failure all discarded here, unless the caller made them (`into`,
    one per input: a worker process stages into those its parent owns, since the store's
    cleanup keeps the staging of a live process)."""
    stagings = list(into) if into is not None else []
    got: dict[int, Read | tuple[SourceResult, dict | None]] = {}
    waiting: dict[int, Opened] = {}
    batches = Batches(workers)
    taken, pending = set(taken), set()  # ids staged, ids read and not yet staged

    def detect_waiting() -> None:
        got.update(zip(waiting, begin(list(waiting.values()), as_format, batches, progress, workers)))
        waiting.clear()

    def stage_pending() -> None:
        """Every input read so far staged, and so known as stored or refused."""
        detect_waiting()
        batches.finish()
        for i, one in got.items():
            got[i] = accounted(one, as_format) if isinstance(one, Read) else one
        taken.update(entry["id"] for _, entry in got.values() if entry)
        pending.clear()

    try:
        for i, arg in enumerate(args):
            if into is None:
                stagings.append(store.staging())
            src, shown = open_argument(arg, stagings[i])
            with src:
                if src.sha256[:16] in pending:  # the same file again: counted once, if the first is stored
                    stage_pending()
                one = open_source(store, run, src, shown, stagings[i], year, taken)
                if isinstance(one, Opened):
                    pending.add(one.sha256[:16])
                if isinstance(one, Opened) and one.rest is not None:  # read on while the file is open
                    got[i] = begin([one], as_format, batches, progress, workers)[0]
                elif isinstance(one, Opened):
                    waiting[i] = one
                else:
                    got[i] = one
            if sum(o.stats.bytes_read for o in waiting.values()) >= BATCH_BYTES:
                detect_waiting()
        stage_pending()
        out: list[Staged] = []
        for i, staged in enumerate(stagings):
            result, entry = got[i]
            if entry is not None and labels:
                entry["labels"] = labels
            out.append((result, entry, staged))
    except BaseException:
        if into is None:
            for staged in stagings:
                staged.discard()
        raise
    finally:
        batches.close()
    return out
