"""Executors: where the per-file work of an ingest runs. Here, one file after another
(`local`), or one worker process per core when there are many small files (still
`local`), or as Ray tasks, one per file (`ray`). All run `source.stage_files` (the parsers
cannot tell which), each file into its own staging, one chunk of the inputs at a time
(`inputs.chunks`); the caller publishes each chunk with one commit before the next is
staged.

With Ray, the store must be reachable from every worker: an s3:// store, or a local
folder when the cluster is this machine. Ray connects to $RAY_ADDRESS if set, else
starts a local cluster with one worker per core.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from loganalyze import formats, objstore
from loganalyze.errors import LoganalyzeError
from loganalyze.ingestion.inputs import chunks
from loganalyze.ingestion.results import SourceResult, Tally
from loganalyze.ingestion.source import Staged, stage_files
from loganalyze.reader import BATCH_BYTES
from loganalyze.store import Store

POOL_MIN_BYTES = 32 << 20  # files worth starting worker processes for (stage_in_processes)
EXECUTORS = ("local", "ray")
TASK_FILES = 50  # the most files a worker process stages in one task (parsed a batch of many at a time)


def stage_chunks(executor: str, store: Store, run: str | None, paths: list[str], as_format: str | None,
                 year: int | None, labels: dict[str, str], tally: Tally) -> Iterator[list[Staged]]:
    """Every input staged, in input order, a chunk at a time: the next chunk is staged once
    the caller asks for it (after committing this one). On an error nothing of the chunk
    under way stays staged."""
    if executor not in EXECUTORS:
        raise LoganalyzeError(f"unknown executor {executor!r}; executors: {', '.join(EXECUTORS)}")
    if executor == "ray":
        if "-" in paths:
            raise LoganalyzeError("--executor ray cannot read standard input ('-'): give files or URLs")
        for chunk in chunks(paths):
            yield stage_on_ray(store, run, chunk, as_format, year, labels, tally)
        return
    workers = worth_processes(store, paths)  # many small files: one process per core
    if workers:
        with process_pool(workers) as pool:
            for chunk in chunks(paths):
                yield stage_in_processes(pool, workers, store, run, chunk, as_format, year, labels, tally)
        return
    for chunk in chunks(paths):
        yield stage_here(store, run, chunk, as_format, year, labels, tally)


def stage_here(store: Store, run: str | None, paths: list[str], as_format: str | None, year: int | None,
               labels: dict[str, str], tally: Tally) -> list[Staged]:
    """The chunk's files in this process (a file given twice is parsed once)."""
    staged = stage_files(store, run, paths, as_format, year, labels, tally.reading)
    for result, entry, _ in staged:
        tally.finished(result, entry)
    return staged


def discard(staged: list[Staged]) -> None:
    for _, _, stage in staged:
        stage.discard()


def stage_on_ray(store: Store, run: str | None, paths: list[str], as_format: str | None,
                 year: int | None, labels: dict[str, str], tally: Tally) -> list[Staged]:
    """One Ray task per file; waits for all, so that the stagings of the tasks that
    succeeded are discarded when another failed."""
    ray = connect()
    task = ray.remote(stage_with_formats)
    files = [str(path) for path in formats.active().files.values()]  # see stage_with_formats
    refs = [task.remote(files, store, run, path, as_format, year, labels) for path in paths]
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


def stage_with_formats(formats: list[str], store: Store, run: str | None, path: str, *args) -> Staged:
    """One file's stage_files in a Ray worker, a fresh process: the format files the driver loaded
    (--formats) are loaded there first, so both executors know the same formats. The files
    must be readable on the workers (this machine, or a shared folder)."""
    # Imported here: loganalyze.formats.userformat imports loganalyze.errors, and so this package,
    # whose __init__ imports ingest; imported at the top, `import loganalyze.formats.userformat` first
    # would meet itself half-made.
    from loganalyze.formats.userformat import load_formats

    if formats:
        load_formats(formats)
    return stage_files(store, run, [path], *args)[0]


def connect():
    """The ray module, connected to a cluster (started here if none is running)."""
    try:
        import ray
    except ImportError:
        raise LoganalyzeError("--executor ray needs Ray: pip install 'loganalyze[ray]'") from None
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray


def _start_worker(parent: int, files: list[str]) -> None:
    """Worker process initializer: the format files the ingest's process installed are
    installed here too (a spawned process starts with the built-in formats only), and the
    process ends with its parent (_die_with_parent)."""
    from loganalyze.formats.userformat import load_formats  # see stage_with_formats

    _die_with_parent(parent)
    if files:
        load_formats(files)


def _die_with_parent(parent: int) -> None:
    """End this worker process when the ingest that started it ends, even by kill -9 (which
    leaves no chance to stop the pool). Linux: the kernel sends SIGKILL when the parent
    dies (PR_SET_PDEATHSIG); elsewhere a thread checks once a second."""
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
    if cores < 2 or len(paths) < 2 or not store.backend.local:  # worker processes stage into a local store only
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
    fork; each knows the format files installed here and ends with the ingest, even a killed
    one (_start_worker).

    Each worker's polars gets one thread (POLARS_MAX_THREADS, read when polars is imported,
    so set in the environment the workers are spawned with, unless the user set it): the
    workers already keep every core busy, and on a small file's frames polars' own threads
    cost more to hand work to than they save (a quarter of the CPU, docs/speed.md)."""
    import multiprocessing

    files = [str(path) for path in formats.active().files.values()]
    own = "POLARS_MAX_THREADS" not in os.environ
    if own:
        os.environ["POLARS_MAX_THREADS"] = "1"  # this process's polars has its threads already
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_start_worker, initargs=(os.getpid(), files)) as pool:
            yield pool
    finally:
        if own:
            os.environ.pop("POLARS_MAX_THREADS", None)


def stage_in_processes(pool: ProcessPoolExecutor, workers: int, store: Store, run: str | None, paths: list[str],
                       as_format: str | None, year: int | None, labels: dict[str, str],
                       tally: Tally) -> list[Staged]:
    """The chunk's files staged by the pool's processes, TASK_FILES to a task, in input order,
    as one process stages them (a file given twice counts once; the first error in input
    order is raised, and then nothing stays staged)."""
    stagings, futures = [store.staging() for _ in paths], []
    try:
        size = max(1, min(TASK_FILES, -(-len(paths) // (2 * workers))))  # two tasks a process at least
        tasks = [slice(i, i + size) for i in range(0, len(paths), size)]
        futures = [pool.submit(stage_files, store, run, paths[at], as_format, year, labels, into=stagings[at],
                               workers=1) for at in tasks]
        done: list[Staged] = []
        for future in futures:
            for result, entry, staged in future.result():
                done.append((result, entry, staged))
                tally.finished(result, entry)
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
