"""The thread pipeline of one file: batches parsed on worker threads and written in order,
with `InOrder` for formats whose batches carry state from one to the next."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import replace

import polars as pl

from loganalyze.formats.timestamps import settle
from loganalyze.formats.spec import Context, LogFormat

PARSE_WORKERS = 2  # batches of one file parsed at once (see Pipeline)


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
