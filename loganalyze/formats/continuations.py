"""Multi-line records: continuation lines (traceback frames, a dump's later lines) given to
the line that heads them, and a run of continuation lines without its head made one record
of its own (an orphan run, where a log was cut)."""

from __future__ import annotations

import polars as pl

from loganalyze.formats import sources
from loganalyze.formats.spec import LineKind, LogFormat


def _where_unclaimed(pattern: str) -> pl.Expr:
    """`msg` matches `pattern` on lines no kind took (the regex runs on those lines only)."""
    return pl.when(pl.col("kind").is_null()).then(pl.col("msg")).str.contains(pattern).fill_null(False)


def fill_in_runs(value: pl.Expr, run: pl.Expr) -> pl.Expr:
    """`value.forward_fill().over(run)` for a `run` that only grows down the frame (a
    cum_sum: each group is consecutive rows, and the null rows are one group), without a
    window over as many groups as rows: that took a second per 100 MB of a log whose
    lines mostly end runs. A value carries on while the rows stay in its run."""
    keyed = pl.when(run.is_not_null()).then(value)
    last_run = pl.when(keyed.is_not_null()).then(run).forward_fill()
    in_run = pl.when(last_run == run).then(keyed.forward_fill())
    unkeyed = pl.when(run.is_null()).then(pl.when(run.is_null()).then(value).forward_fill())
    return pl.coalesce(in_run, unkeyed)


def attach_continuations(frame: pl.DataFrame, fmt: LogFormat) -> pl.DataFrame:
    """Give unclaimed continuation lines (traceback frames, wrapped dumps) to the line above.

    A run of consecutive lines that are either a kind's start line or match its
    continuation pattern belongs to the last start line in the run; any other line, one
    that no kind took included, ends the run.
    """
    frame = frame.with_columns(owner=pl.lit(None, pl.Int64))
    fence = sources.fence(frame)  # a file's first line ends the run above it, from another file
    for kind in fmt.kinds:
        if not kind.continuation:
            continue
        start = (pl.col("kind") == kind.name).fill_null(False)
        cont = _where_unclaimed(kind.continuation)
        if kind.not_continuation:
            cont = cont & ~pl.col("msg").str.contains(kind.not_continuation)
        if not (frame["kind"] == kind.name).any():  # no start line: nobody gets an owner
            continue
        found = frame.select(cont).to_series()
        if not found.any():
            continue
        frame, cont = frame.with_columns(__cont=found), pl.col("__cont")
        run = (~(start | cont) | fence).cum_sum()
        frame = frame.with_columns(
            owner=pl.coalesce(
                "owner",
                pl.when(cont).then(fill_in_runs(pl.when(start).then(pl.col("line_no")), run)),
            )
        ).drop("__cont", strict=False)
    for kind in fmt.kinds:
        if kind.orphan and kind.continuation:
            frame = adopt_orphans(frame, kind, fence)
    return frame


def adopt_orphans(frame: pl.DataFrame, kind: LineKind, fence: pl.Expr) -> pl.DataFrame:
    """Make a run of continuation lines that has no start line one line of `kind`.

    A log cut mid-traceback, or a batch that begins inside one, leaves frames with no
    `Traceback` line above them. The run's first line that matches `kind.orphan` takes
    the kind and the rest of the run belongs to it; lines of the run before it (a message
    that merely looks like a continuation, `Exception raised in creation task: ...`) stay
    as they are.
    """
    loose = pl.col("owner").is_null() & _where_unclaimed(kind.continuation)
    found = frame.select(loose).to_series()
    if not found.any():
        return frame
    frame, loose = frame.with_columns(__loose=found), pl.col("__loose")
    orphan = pl.when(loose).then(pl.col("msg")).str.contains(kind.orphan).fill_null(False)
    hit = (loose & orphan).cast(pl.Int64)
    seen = hit.cum_sum()
    before_run = pl.when(loose & (~loose.shift(1, fill_value=False) | fence)).then(seen - hit).forward_fill()
    head = (hit == 1) & (seen - before_run == 1)
    head_line = fill_in_runs(pl.when(head).then(pl.col("line_no")), (~loose | fence).cum_sum())
    return frame.with_columns(
        kind=pl.when(head).then(pl.lit(kind.name)).otherwise("kind"),
        owner=pl.when(loose & ~head).then(head_line).otherwise("owner"),
    ).drop("__loose", strict=False)
