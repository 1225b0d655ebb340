"""Ingest: input files -> format detection -> parsed tables -> the run store.

One source at a time, batch by batch: each batch is unwrapped, offered to the formats
that claim lines anywhere (NCCL), then to the file's own format; what nobody claims is
kept in `unparsed` with its line number. Counts are checked to add up to the lines read.

The parts, in the order data goes through them: `inputs` (arguments to files, chunks),
`executors` (where each file is staged: here, worker processes, Ray), `source` (one
input into a staging), `detect`, `pipeline` (parse threads), `dispatch` (lines to
formats' tables), `results`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable
from pathlib import Path

from loganalyze.errors import LoganalyzeError, UnknownFormat
from loganalyze.ingestion.executors import discard, stage_chunks
from loganalyze.ingestion.inputs import expand_inputs
from loganalyze.ingestion.results import IngestResult, Progress, SourceResult, Tally
from loganalyze.store import Staging, Store, check_run_name, open_store

__all__ = ["IngestResult", "SourceResult", "ingest"]


def ingest(paths: Iterable[str | Path], run: str | None = None, store: Store | str | Path | None = None,
           as_format: str | None = None, year: int | None = None,
           progress: Progress | None = None, executor: str = "local",
           labels: dict[str, str] | None = None, strict: bool = False, engine: str | None = None) -> IngestResult:
    """Parse each input into run `run` (a new `run<N>` if None); '-' reads standard input,
    s3:// URLs and globs name objects. `executor` ("local" or "ray") runs the per-file parsing
    (`engine` is its deprecated name);
    `labels` (cluster, host, ...) are stored with each source and become query columns;
    `progress(bytes, lines, files_done, files)` is called as the ingest goes.

    Inputs are staged and published chunk by chunk (`chunks`: up to 1,000 files or 1 GiB),
    each chunk by one commit, so the store gets each chunk whole or, after an error or a
    crash, not at all: an ingest of fewer files is all or nothing, a bigger one keeps the
    chunks before, and the same command again (the same --run) adds only what is missing.
    A file of no known format is left out and said so (`refused`); it is an error when
    nothing else was given, or with `strict`.
    """
    if engine is not None:
        warnings.warn("ingest(engine=) is deprecated: use executor= (the same values)", DeprecationWarning, stacklevel=2)
        executor = engine
    store = open_store(store)
    paths = expand_inputs(paths)
    if not paths:
        raise LoganalyzeError("nothing to ingest: give at least one file")
    if run is not None:
        check_run_name(run)
    store.cleanup()
    results: list[SourceResult] = []
    target, committed = run, 0
    try:
        with contextlib.closing(stage_chunks(executor, store, run, paths, as_format, year, labels or {},
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
