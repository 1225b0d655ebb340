"""Where the per-file work of an ingest runs: here, one file after another (`local`, or
one process per core for many small files), or as Ray tasks, one per file (`ray`). All
run `ingest.stage_file` (the parsers cannot tell which), each file into its own staging,
one chunk of the inputs at a time (`ingest.chunks`); the caller publishes each chunk with
one commit before the next is staged.

With Ray, the store must be reachable from every worker: an s3:// store, or a local
folder when the cluster is this machine. Ray connects to $RAY_ADDRESS if set, else
starts a local cluster with one worker per core.
"""

from __future__ import annotations

from collections.abc import Iterator

from loganalyze.errors import LoganalyzeError
from loganalyze.ingest import (SourceResult, Tally, chunks, process_pool, stage_file, stage_in_processes,
                               worth_processes)
from loganalyze.store import Staging, Store

ENGINES = ("local", "ray")
Staged = tuple[SourceResult, "dict | None", Staging]


def stage_chunks(engine: str, store: Store, run: str | None, paths: list[str], as_format: str | None,
                 year: int | None, labels: dict[str, str], tally: Tally) -> Iterator[list[Staged]]:
    """Every input staged, in input order, a chunk at a time: the next chunk is staged once
    the caller asks for it (after committing this one). On an error nothing of the chunk
    under way stays staged."""
    if engine not in ENGINES:
        raise LoganalyzeError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    if engine == "ray":
        if "-" in paths:
            raise LoganalyzeError("--engine ray cannot read standard input ('-'): give files or URLs")
        for chunk in chunks(paths):
            yield stage_on_ray(store, run, chunk, as_format, year, labels, tally)
        return
    workers = worth_processes(store, paths)  # many small files: one process per core
    if workers:
        with process_pool(workers) as pool:
            for chunk in chunks(paths):
                yield stage_in_processes(pool, store, run, chunk, as_format, year, labels, tally)
        return
    for chunk in chunks(paths):
        yield stage_here(store, run, chunk, as_format, year, labels, tally)


def stage_here(store: Store, run: str | None, paths: list[str], as_format: str | None, year: int | None,
               labels: dict[str, str], tally: Tally) -> list[Staged]:
    """One file after another in this process."""
    staged: list[Staged] = []
    try:
        for path in paths:
            taken = frozenset(e["id"] for _, e, _ in staged if e)  # a file given twice is parsed once
            staged.append(stage_file(store, run, path, as_format, year, labels, tally.reading, taken))
            tally.finished(*staged[-1][:2])
    except BaseException:
        discard(staged)
        raise
    return staged


def discard(staged: list[Staged]) -> None:
    for _, _, stage in staged:
        stage.discard()


def stage_on_ray(store: Store, run: str | None, paths: list[str], as_format: str | None,
                 year: int | None, labels: dict[str, str], tally: Tally) -> list[Staged]:
    """One Ray task per file; waits for all, so that the stagings of the tasks that
    succeeded are discarded when another failed."""
    from parsers.userformat import INSTALLED

    ray = connect()
    task = ray.remote(stage_with_formats)
    formats = [str(user.path) for user in INSTALLED.values()]
    refs = [task.remote(formats, store, run, path, as_format, year, labels) for path in paths]
    staged, errors = [], []
    for ref in refs:
        try:
            staged.append(ray.get(ref))
            tally.finished(*staged[-1][:2])
        except ray.exceptions.RayTaskError as e:
            errors.append(e.cause if isinstance(e.cause, Exception) else e)
    if errors:
        discard(staged)
        raise errors[0]
    return staged


def stage_with_formats(formats: list[str], *args) -> Staged:
    """stage_file in a Ray worker, a fresh process: the format files the driver loaded
    (--formats) are loaded there first, so both engines know the same formats. The files
    must be readable on the workers (this machine, or a shared folder)."""
    if formats:
        import loganalyze

        loganalyze.load_formats(formats)
    return stage_file(*args)


def connect():
    """The ray module, connected to a cluster (started here if none is running)."""
    try:
        import ray
    except ImportError:
        raise LoganalyzeError("--engine ray needs Ray: pip install 'loganalyze[ray]'") from None
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray
