"""Ingest: input files -> format detection -> parsed tables -> the run store.

One source at a time, batch by batch: each batch is unwrapped, offered to the formats
that claim lines anywhere (NCCL), then to the file's own format; what nobody claims is
kept in `unparsed` with its line number. Counts are checked to add up to the lines read.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

import polars as pl

import parsers
from loganalyze import objstore
from loganalyze.errors import LoganalyzeError, UnknownFormat
from loganalyze.reader import (BATCH_BYTES, LONG_LINE_BYTES, LONG_LINE_MARK, Input, ReadStats, open_input,
                               read_batches, spool_stdin)
from loganalyze.store import Staging, Store, check_run_name
from loganalyze.wrappers import unwrap
from parsers.engine import Context, guess_version, parse, settle
from parsers.spec import FileFormat, LogFormat

SAMPLE_LINES = 2000
PARSE_WORKERS = 2  # batches of one file parsed at once (see Pipeline)
POOL_MIN_BYTES = 32 << 20  # files worth starting worker processes for (stage_in_processes)
CHUNK_FILES = 1000  # a many-file ingest commits every CHUNK_FILES files or CHUNK_BYTES of input (see chunks)
CHUNK_BYTES = 1 << 30
Progress = Callable[[int, int, int, int], None]  # bytes read, lines read, files done, files in all
Reading = Callable[[int, int], None]  # bytes and lines read so far of the file being read
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
RESERVED_LABELS = frozenset({"run", "source"})  # the columns every table is joined to its labels on


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
    refused: str = ""  # why the file was not ingested (an unknown format); nothing of it is stored
    bad_utf8: int = 0
    long_lines: int = 0  # lines over 1 MiB, kept truncated in `unparsed`
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


def year_for(mtime: float, year: int | None) -> tuple[int, str, str]:
    """Year and base date for logs that print neither, and where they came from."""
    if year:
        return year, f"{year}-01-01", "--year"
    stamp = datetime.fromtimestamp(mtime)
    return stamp.year, stamp.date().isoformat(), "file modification time"


def choose_format(sample: pl.Series, path: Path, as_format: str | None) -> parsers.Format:
    if as_format:
        if as_format not in parsers.FORMATS:
            raise LoganalyzeError(f"unknown format {as_format!r}; known formats: {', '.join(parsers.FORMATS)}")
        return parsers.FORMATS[as_format]
    fmt, _ = parsers.detect(sample)
    if fmt is None:
        raise UnknownFormat(
            f"{path}: unknown format (known formats: {', '.join(parsers.FORMATS)}; use --as to force one)"
        )
    return fmt


def parse_batch(frame: pl.DataFrame, primary: LogFormat, ctx: Context) -> tuple[dict[str, list], dict[str, int]]:
    """All formats' tables for one batch, plus lines per table (unparsed included)."""
    remaining = frame
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, int] = {}
    if (long := _truncated(frame)) is not None:  # lines the reader cut (over 1 MiB) are kept as they are, unparsed
        remaining = frame.filter(~long)
        tables["unparsed"] = [frame.filter(long).select("line_no", ts="wrap_ts", text="raw")]
        lines["unparsed"] = int(long.sum())
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
        lines["unparsed"] = lines.get("unparsed", 0) + remaining.height
    return tables, lines


def _truncated(frame: pl.DataFrame) -> pl.Series | None:
    """Which lines of a batch the reader truncated, or None when none was (the usual case)."""
    if frame.height == 0 or frame["raw"].str.len_bytes().max() <= LONG_LINE_BYTES:
        return None
    long = frame["raw"].str.contains(LONG_LINE_MARK)
    return long if long.any() else None


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


def stateful(fmt: LogFormat) -> bool:
    """Whether parsing a batch needs the batches before it parsed first (year rollover, carried counters)."""
    return any(k.carry for k in fmt.kinds) or any(f.complete == "year" for f in fmt.ts_formats)


class InOrder:
    """Batches of a format that carries state from one batch to the next (year-less
    timestamps, counters) parsed side by side all the same: each on its own, from an empty
    state, then checked in order against the state the batches before it left
    (`engine.settle`). Once a batch fails that check (the log crossed New Year, or vLLM V0
    counters carried over), it is parsed again in order, and the batches after it are
    parsed with the state before them, one at a time, as each batch before is settled;
    parsing one still overlaps writing the one before."""

    def __init__(self, parse: Callable[[pl.DataFrame, Context], tuple[dict, dict]], ctx: Context):
        self.parse, self.ctx = parse, ctx
        self.guessing, self.settled = True, 0
        self.stopped: BaseException | None = None
        self.turn = threading.Condition()

    def guess(self, batch: pl.DataFrame, seq: int) -> tuple:
        """On a parse thread: batch `seq` (0, 1, ... in file order) parsed on its own, or, once
        guessing failed, with the state of the batches before it as soon as they are settled."""
        if self.guessing:
            state: dict = {}
            return batch, seq, state, self.parse(batch, replace(self.ctx, state=state))
        with self.turn:
            self.turn.wait_for(lambda: self.settled == seq or self.stopped)
        if self.stopped:
            raise self.stopped
        return batch, seq, None, self.parse(batch, self.ctx)

    def take(self, batch: pl.DataFrame, seq: int, state: dict | None, parsed: tuple[dict, dict]) -> tuple[dict, dict]:
        """On the writing thread, batch after batch in order: the batch's tables as parsing in
        order makes them (`state` None: it was parsed in order)."""
        try:
            if state is not None and not settle(self.ctx.state, state):
                self.guessing = False
                parsed = self.parse(batch, self.ctx)
        except BaseException as e:
            self.stop(e)  # batches waiting for this one would wait forever
            raise
        with self.turn:
            self.settled = seq + 1
            self.turn.notify_all()
        return parsed

    def stop(self, error: BaseException | None = None) -> None:
        """Release the parse threads waiting for their turn: the ingest failed (with `error`)."""
        with self.turn:
            self.stopped = self.stopped or error or CancelledError()
            self.turn.notify_all()


class Pipeline:
    """Batches parsed on `workers` threads and written, in order, on one more.

    polars releases the GIL, so reading batch N+1 (this thread), parsing N and N-1 and
    writing N-2 use both cores. At most `workers` batches wait to be parsed and one to be
    written, which bounds memory (in a worker process of a many-file ingest, one parse
    thread). A format whose batches depend on the one before is parsed through `InOrder`.
    """

    def __init__(self, workers: int, write: Callable):
        self.workers, self.write = workers, write
        self.parsing = ThreadPoolExecutor(workers, thread_name_prefix="loganalyze-parse")
        self.writing = ThreadPoolExecutor(1, thread_name_prefix="loganalyze-write")
        self.parsed: deque = deque()
        self.written: deque = deque()

    def submit(self, parse: Callable, *args, done: Callable | None = None) -> None:
        self.parsed.append((self.parsing.submit(parse, *args), done))
        while len(self.parsed) > self.workers:
            self._hand_over()

    def _hand_over(self) -> None:
        future, done = self.parsed.popleft()
        self.written.append(self.writing.submit(self.write, *future.result()))
        while len(self.written) > 1:
            self.written.popleft().result()
        if done:
            done()

    def finish(self) -> None:
        while self.parsed:
            self._hand_over()
        while self.written:
            self.written.popleft().result()

    def close(self) -> None:
        """Stop: batches not started are dropped, running ones are waited for."""
        for pool in (self.parsing, self.writing):
            pool.shutdown(wait=True, cancel_futures=True)


def ingest_source(store: Store, run: str | None, src: Input, shown: str, staged: Staging,
                  as_format: str | None, year: int | None, progress: Reading | None,
                  taken: set[str]) -> tuple[SourceResult, dict | None]:
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

    def parse_one(batch: pl.DataFrame, context: Context) -> tuple[dict, dict]:
        frame = unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), yr)
        return parse_batch(frame, fmt, context)

    def write_one(tables: dict, lines: dict) -> None:
        stage_tables(staged, tables, lines, ctx, result)

    def write_in_order(*parsed: object) -> None:
        write_one(*order.take(*parsed))

    pipeline: Pipeline | None = None
    order: InOrder | None = None
    try:
        for seq, batch in enumerate(read_batches(src, stats)):
            if result is None:
                sample = unwrap(batch.head(SAMPLE_LINES), yr)["text"]
                try:
                    fmt = choose_format(sample, src.path, as_format)
                except UnknownFormat as e:
                    return SourceResult(shown, src.sha256, "", None, 0, 0, refused=str(e)), None
                version = guess_version(fmt, sample) if isinstance(fmt, LogFormat) else None
                result = SourceResult(shown, src.sha256, fmt.name, version, 0, 0, year=yr, year_source=year_source)
                ctx = Context(source=sid, year=yr, base_date=base_date)
                if isinstance(fmt, LogFormat) and any(map(stateful, [fmt, *parsers.embeddable()])):
                    order = InOrder(parse_one, ctx)
                    pipeline = Pipeline(PARSE_WORKERS, write_in_order)
                elif isinstance(fmt, LogFormat):
                    pipeline = Pipeline(PARSE_WORKERS, write_one)
            if isinstance(fmt, FileFormat):
                whole.append(batch)
                continue
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
        read_whole_file(fmt, pl.concat(whole), ctx, staged, result)
    result.lines, result.blank, result.bad_utf8 = stats.lines, stats.blank, stats.bad_utf8
    result.long_lines = stats.long_lines
    result.tables = dict(staged.rows)
    result.unparsed = result.lines_by_table.get("unparsed", 0)
    accounted = sum(result.lines_by_table.values()) + result.blank
    if accounted != result.lines:
        raise AssertionError(f"{src.path}: {accounted} lines accounted for, {result.lines} read")
    entry = {"id": sid, **{k: v for k, v in result.to_dict().items() if k != "skipped"}, "size": src.size}
    return result, entry


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


def expand_inputs(args: Iterable[str | Path]) -> list[str]:
    """Arguments with their globs expanded: object URLs by listing, local patterns that name
    no file (quoted, so the shell left them) with `**` across folders, a folder as every
    file below it (hidden ones left out), in name order."""
    out: list[str] = []
    for arg in map(str, args):
        if objstore.is_url(arg):
            out += objstore.expand(arg)
        elif Path(arg).is_dir():
            files = [str(p) for p in sorted(Path(arg).rglob("*")) if p.is_file()
                     and not any(part.startswith(".") for part in p.relative_to(arg).parts)]
            if not files:
                raise LoganalyzeError(f"{arg}: is a directory with no files to ingest")
            out += files
        elif any(c in arg for c in "*?[") and not Path(arg).exists():
            out += sorted(glob.glob(arg, recursive=True)) or [arg]
        else:
            out.append(arg)
    return out


def parse_labels(pairs: Iterable[str]) -> dict[str, str]:
    """`key=value` pairs (--label cluster=a) as a dict; a key is what a SQL column can be named."""
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not LABEL_KEY.fullmatch(key):
            raise LoganalyzeError(f"bad label {pair!r}: use key=value, the key of a-z 0-9 _ (e.g. cluster=a)")
        if key in RESERVED_LABELS:
            raise LoganalyzeError(f"bad label {pair!r}: {key!r} is reserved (every table has its own {key} column)")
        labels[key] = value
    return labels


def stage_file(store: Store, run: str | None, arg: str, as_format: str | None, year: int | None,
               labels: dict[str, str], progress: Reading | None = None,
               taken: frozenset[str] = frozenset()) -> tuple[SourceResult, dict | None, Staging]:
    """One input parsed into its own staging: the unit of work of every engine
    (loganalyze/engines.py). On failure the staging is discarded here, where it was made."""
    staged = store.staging()
    try:
        src, shown = open_argument(arg, staged)
        with src:
            result, entry = ingest_source(store, run, src, shown, staged, as_format, year, progress, set(taken))
    except BaseException:
        staged.discard()
        raise
    if entry is not None and labels:
        entry["labels"] = labels
    return result, entry, staged


def _stage_into(store: Store, run: str | None, arg: str, as_format: str | None, year: int | None,
                labels: dict[str, str], staged: Staging) -> tuple[SourceResult, dict | None, Staging]:
    """stage_file in a worker process, into a staging the parent made (and so owns: the
    store's cleanup keeps the staging of a live process)."""
    global PARSE_WORKERS
    PARSE_WORKERS = 1  # the processes share the cores; one parse thread each bounds memory
    src, shown = open_argument(arg, staged)
    with src:
        result, entry = ingest_source(store, run, src, shown, staged, as_format, year, None, set())
    if entry is not None and labels:
        entry["labels"] = labels
    return result, entry, staged


def _die_with_parent(parent: int) -> None:
    """Worker process initializer: end this process when the ingest that started it ends,
    even by kill -9 (which leaves no chance to stop the pool). Linux: the kernel sends
    SIGKILL when the parent dies (PR_SET_PDEATHSIG); elsewhere a thread checks once a second."""
    import signal
    import threading

    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
            raise OSError
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1)
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="loganalyze-parent-watch").start()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def worth_processes(store: Store, paths: list[str]) -> int:
    """How many worker processes to stage `paths` with; 0: one file after another here.

    A big file already keeps two cores busy (see Pipeline), so processes pay only for many
    small files (a batch or two each, parsed on one thread) with enough bytes between them
    to cover starting the processes (about half a second of CPU each)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2 or len(paths) < 2 or type(store) is not Store:
        return 0
    if any(p == "-" or objstore.is_url(p) or not os.path.isfile(p) for p in paths):
        return 0
    total = sum(os.path.getsize(p) for p in paths)
    if total < POOL_MIN_BYTES or total / len(paths) > 2 * BATCH_BYTES:
        return 0
    return min(cores, len(paths))


@contextlib.contextmanager
def process_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """`workers` processes for a many-file ingest, kept for all its chunks (each costs about
    half a second of CPU to start). Spawned, not forked: polars' threads do not survive a
    fork; each ends with the ingest, even a killed one (_die_with_parent)."""
    import multiprocessing

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        yield pool


def stage_in_processes(pool: ProcessPoolExecutor, store: Store, run: str | None, paths: list[str],
                       as_format: str | None, year: int | None, labels: dict[str, str],
                       tally: Tally) -> list[tuple[SourceResult, dict | None, Staging]]:
    """Every file staged by the pool's processes at once, in input order, as the one-by-one
    loop stages them (a file given twice counts once; the first error in input order is
    raised, and then nothing stays staged)."""
    stagings, futures = [store.staging() for _ in paths], []
    try:
        futures = [pool.submit(_stage_into, store, run, p, as_format, year, labels, st)
                   for p, st in zip(paths, stagings)]
        done = []
        for future in futures:
            try:
                result, entry, staged = future.result()
            except BaseException as e:
                done.append(e)
                continue
            done.append((result, entry, staged))
            tally.finished(result, entry)
        failed = next((e for e in done if isinstance(e, BaseException)), None)
        if failed:
            raise failed
    except BaseException:
        for future in futures:
            future.cancel()
        for st in stagings:
            st.discard()
        raise
    out, seen = [], set()
    for result, entry, staged in done:
        if entry and entry["id"] in seen:
            staged.discard()
            result, entry = SourceResult(result.path, result.sha256, "", None, 0, 0, skipped=True), None
        elif entry:
            seen.add(entry["id"])
        out.append((result, entry, staged))
    return out


class Tally:
    """Progress over a whole ingest: the bytes and lines of the files done plus those read
    so far of the current one, and how many files of all are done."""

    def __init__(self, progress: Progress | None, files: int):
        self.progress, self.files = progress, files
        self.bytes = self.lines = self.done = 0

    def reading(self, bytes_read: int, lines: int) -> None:
        if self.progress:
            self.progress(self.bytes + bytes_read, self.lines + lines, self.done, self.files)

    def finished(self, result: SourceResult, entry: dict | None) -> None:
        """A file is staged (`entry` None: skipped or refused, nothing of it counted but the file)."""
        size = entry["size"] if entry else 0
        self.bytes, self.lines, self.done = self.bytes + size, self.lines + result.lines, self.done + 1
        self.reading(0, 0)


def chunks(paths: list[str]) -> Iterator[list[str]]:
    """The inputs in order, cut where a chunk reaches CHUNK_FILES files or CHUNK_BYTES bytes
    (on disk; an object or standard input counts as none): what one commit publishes, so
    that staging stays bounded and a crash loses at most the chunk under way."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        chunk.append(path)
        if path != "-" and not objstore.is_url(path):
            with contextlib.suppress(OSError):  # a missing file is an error where it is opened
                size += os.path.getsize(path)
        if len(chunk) >= CHUNK_FILES or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def ingest(paths: Iterable[str | Path], run: str | None = None, store: Store | str | Path | None = None,
           as_format: str | None = None, year: int | None = None,
           progress: Progress | None = None, engine: str = "local",
           labels: dict[str, str] | None = None, strict: bool = False) -> IngestResult:
    """Parse each input into run `run` (a new `run<N>` if None); '-' reads standard input,
    s3:// URLs and globs name objects. `engine` ("local" or "ray") runs the per-file parsing;
    `labels` (cluster, host, ...) are stored with each source and become query columns;
    `progress(bytes, lines, files_done, files)` is called as the ingest goes.

    Inputs are staged and published chunk by chunk (`chunks`: up to 1,000 files or 1 GiB),
    each chunk by one commit, so the store gets each chunk whole or, after an error or a
    crash, not at all: an ingest of fewer files is all or nothing, a bigger one keeps the
    chunks before, and the same command again (the same --run) adds only what is missing.
    A file of no known format is left out and said so (`refused`); it is an error when
    nothing else was given, or with `strict`.
    """
    from loganalyze.engines import discard, stage_chunks

    store = store if isinstance(store, Store) else Store(store)
    paths = expand_inputs(paths)
    if not paths:
        raise LoganalyzeError("nothing to ingest: give at least one file")
    if run is not None:
        check_run_name(run)
    store.cleanup()
    results: list[SourceResult] = []
    target, committed = run, 0
    try:
        with contextlib.closing(stage_chunks(engine, store, run, paths, as_format, year, labels or {},
                                             Tally(progress, len(paths)))) as staging:
            for staged in staging:
                results += [result for result, _, _ in staged]
                refused = [r.refused for r in results if r.refused]
                if refused and strict:
                    discard(staged)
                    more = f" (and {len(refused) - 1} more file(s) of no known format)" if len(refused) > 1 else ""
                    raise UnknownFormat(refused[0] + more)
                target, added = commit_chunk(store, target, staged)
                committed += sum(added)
    except LoganalyzeError as e:
        if committed:  # the chunks before stay: say where, so that the rest can be added
            raise type(e)(f"{e} ({committed:,} file(s) before it were stored in run {target}; the same ingest "
                          f"with --run {target} adds the rest)") from None
        raise
    if all(r.refused for r in results):
        more = f" (and {len(results) - 1} more file(s) of no known format)" if len(results) > 1 else ""
        raise UnknownFormat(results[0].refused + more)
    return IngestResult(run=target, store=str(store.root), sources=results)


def commit_chunk(store: Store, run: str | None, staged: list[tuple[SourceResult, dict | None, Staging]]
                 ) -> tuple[str | None, list[bool]]:
    """Publish one chunk's staged sources into `run` and discard the staging; marks as skipped
    the sources the run had already. Returns the run (the new run<N> once one is made; the
    chunks after go into it) and, per source staged, whether it was added."""
    try:
        entries = [(entry, stage) for _, entry, stage in staged if entry]
        if not entries:  # nothing new: no commit (it would make a catalog in an empty store)
            return run, []
        name, added = store.commit(run, entries)
    finally:
        for _, _, stage in staged:
            stage.discard()
    for result, new in zip([r for r, entry, _ in staged if entry], added):
        result.skipped = not new
    return (name if any(added) else run), added
