"""Several sources in one batch: many small files parsed in one polars pass.

Each polars call costs a fixed few hundred microseconds, and parsing a batch takes some
150 of them, whatever its height: a 2,000-line file parsed alone paid that fixed cost
for every file (docs/speed.md, "Many small files"). So small files of one format are
parsed together, one batch holding the lines of many.

A row's `line_no` then says which source it is from: the source's index in the batch
times 2**32, plus the line's number in its file (`combine`). Every step of the parse
keys rows by `line_no`, so they stay apart by it, and a file's lines are never next to
another's in number: the steps that look at the line above by number (terminal wraps,
result tables) see a gap at each boundary; those that follow runs of rows down the batch
(continuation lines) end them at each source's first row (`fence`). `split` gives each source's rows back with its own line numbers; `counts`
counts lines per source.

A batch of several sources holds only files of one batch each, so each starts from an
empty state, as it does alone: where a format carries state down a file (year-less
timestamps rolled over at New Year, vLLM V0's cumulative counters), the step works per
source (loganalyze/formats/timestamps.py `roll_years`, a kind's `carry` in parse.py).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

SHIFT = 1 << 32  # line numbers of one source stay under it: a 16 MiB batch holds at most 16 M lines


def combine(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """The batches of several sources as one, source k's line numbers moved by k * SHIFT."""
    if len(frames) == 1:
        return frames[0]
    return pl.concat([f.with_columns(pl.col("line_no") + k * SHIFT) for k, f in enumerate(frames)])


def several(frame: pl.DataFrame) -> bool:
    """Whether the batch holds lines of more than one source (detection's sample has no line numbers: one)."""
    if frame.height < 2 or "line_no" not in frame.columns:
        return False
    return frame["line_no"].min() // SHIFT != frame["line_no"].max() // SHIFT


def fence(frame: pl.DataFrame) -> pl.Expr:
    """True on each source's first row but the batch's first: where a run of rows down the
    batch (a record's continuation lines) ends, as it ends where a file does."""
    if not several(frame):
        return pl.lit(False)
    index = pl.col("line_no") // SHIFT
    return (index != index.shift(1)).fill_null(False)


def counts(frame: pl.DataFrame, weight: pl.Expr) -> Counter:
    """The sum of `weight` over the rows of each source (by its index in the batch)."""
    if frame.height == 0:
        return Counter()
    if not several(frame):
        return Counter({int(frame["line_no"][0] // SHIFT): int(frame.select(weight.sum()).item())})
    got = frame.group_by(index=pl.col("line_no") // SHIFT).agg(n=weight.sum())
    return Counter(dict(zip(got["index"].to_list(), got["n"].to_list())))


def split(frame: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """Each source's rows of a table (by its index in the batch), with its own line numbers."""
    if frame.height == 0:
        return {}
    if not several(frame):
        k = int(frame["line_no"][0] // SHIFT)
        return {k: frame.with_columns(pl.col("line_no") - k * SHIFT) if k else frame}
    parts = frame.with_columns(__source=pl.col("line_no") // SHIFT).partition_by("__source", as_dict=True)
    return {int(k[0]): part.drop("__source").with_columns(pl.col("line_no") - int(k[0]) * SHIFT)
            for k, part in parts.items()}


def by_source(frame: pl.DataFrame) -> list[pl.DataFrame]:
    """A batch of several sources cut into one batch per source, in order (line numbers as they are)."""
    parts = frame.with_columns(__source=pl.col("line_no") // SHIFT).partition_by("__source", as_dict=True)
    return [part.drop("__source") for _, part in sorted(parts.items())]
