"""Dispatch: which format's tables each line of a batch ends in.

The formats that claim lines anywhere (NCCL, embedded in a server's log) take theirs
first, then the file's own format; what nobody claims goes to `unparsed` with its line
number, so the counts of every table add up to the lines read. Structured files (JSON
results) are read whole, the same accounting after.
"""

from __future__ import annotations

import copy

import polars as pl

from loganalyze import formats
from loganalyze.ingestion.results import SourceResult
from loganalyze.reader import LONG_LINE_BYTES, LONG_LINE_MARK
from loganalyze.store import Staging
from loganalyze.formats import glued, wraps
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context, FileFormat, LogFormat


def parse_batch(frame: pl.DataFrame, primary: LogFormat, ctx: Context) -> tuple[dict[str, list], dict[str, int]]:
    """All formats' tables for one batch, plus lines per table (unparsed included).

    A line that holds several records (loganalyze/formats/glued.py) is parsed as one row per record,
    counted once. Where a terminal wrapped records onto several lines (loganalyze/formats/wraps.py),
    the batch is parsed again from the same state with each record whole; a record then
    counts all its lines, and one that is still unparsed is kept as the lines it was.
    """
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, int] = {}
    if (long := _truncated(frame)) is not None:  # lines the reader cut (over 1 MiB) are kept as they are, unparsed
        tables["unparsed"] = [frame.filter(long).select("line_no", ts="wrap_ts", text="raw")]
        lines["unparsed"] = int(long.sum())
        frame = frame.filter(~long)
    state = copy.deepcopy(ctx.state)
    cut = glued.split(frame, glued.record_starts([primary, *formats.active().embeddable()]))
    typed, counts, left = _parse_whole(cut, primary, ctx, state)
    if cut.height > frame.height and sum(counts.values()) + int((left["glued"] == 0).sum()) != frame.height:
        # A line's records counted other than once (a record continued over the lines below
        # it, say): the batch is parsed again with every line whole, as before the cut.
        typed, counts, left = _parse_whole(frame.with_columns(glued=pl.lit(0, pl.UInt32)), primary, ctx, state)
    for t, parts in typed.items():
        tables.setdefault(t, []).extend(parts)
    for t, n in counts.items():
        lines[t] = lines.get(t, 0) + n
    if left.height:
        tables.setdefault("unparsed", []).append(left.select("line_no", "glued", ts="wrap_ts", text="raw"))
        lines["unparsed"] = lines.get("unparsed", 0) + int((left["glued"] == 0).sum())
    return tables, lines


def _parse_whole(frame: pl.DataFrame, primary: LogFormat, ctx: Context,
                 state: dict) -> tuple[dict[str, list], dict[str, int], pl.DataFrame]:
    """`_parse_formats` from `state`, and again with each record a terminal wrapped whole."""
    ctx.state.clear()
    ctx.state.update(copy.deepcopy(state))
    typed, counts, left = _parse_formats(frame, primary, ctx)
    rests = wraps.remainders(frame, primary, frame["line_no"].is_in(left["line_no"].implode()))
    if rests.height:
        ctx.state.clear()
        ctx.state.update(copy.deepcopy(state))
        typed, counts, left = _parse_formats(wraps.rejoin(frame, rests), primary, ctx)
        heads = (rests.filter(pl.col("head").is_in(left["line_no"].implode()))
                 .select("line_no", glued=pl.lit(0, pl.UInt32)))
        left = frame.join(pl.concat([left.select("line_no", "glued"), heads]), on=["line_no", "glued"], how="semi")
    return typed, counts, left


def _parse_formats(frame: pl.DataFrame, primary: LogFormat,
                   ctx: Context) -> tuple[dict[str, list], dict[str, int], pl.DataFrame]:
    """Every format's tables and lines per table for the batch, and the lines none claimed;
    the embeddable formats (NCCL inside a server log, say) first."""
    remaining = frame
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, int] = {}
    for fmt in [f for f in formats.active().embeddable() if f is not primary] + [primary]:
        if remaining.height == 0:
            break
        got = parse(fmt, remaining, ctx)
        for t, df in got.tables.items():
            tables.setdefault(t, []).append(df)
        for t, n in got.lines.items():
            lines[t] = lines.get(t, 0) + n
        remaining = remaining.filter(~got.claimed)
    return tables, lines, remaining


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
        order = ["line_no"]
        if "glued" in df.columns:  # the store keeps no such column: the count says it
            if n_glued := int((df["glued"] > 0).sum()):
                result.glued[t] = result.glued.get(t, 0) + n_glued
            order.append("glued")
        staged.write(t, df.sort(order))
    for t, n in lines.items():
        result.lines_by_table[t] = result.lines_by_table.get(t, 0) + n


def read_file_frame(fmt: FileFormat, frame: pl.DataFrame, ctx: Context, staged: Staging,
                    result: SourceResult) -> None:
    """A structured file (JSON results), whole or one batch of it (`FileFormat.by_batch`), is
    parsed by its format; its line counts are checked the same way. A file of blank lines,
    forced to a format with `--as`, gives the reader nothing to read."""
    if not frame.height:
        return
    got = fmt.read(frame, ctx)
    tables = {t: [df] for t, df in got.tables.items()}
    lines = dict(got.lines)
    rest = frame.filter(~frame["line_no"].is_in(got.claimed_lines.implode()))
    if rest.height:
        tables.setdefault("unparsed", []).append(rest.select("line_no", "text", ts=pl.lit(None, pl.Datetime("us"))))
        lines["unparsed"] = lines.get("unparsed", 0) + rest.height
    stage_tables(staged, tables, lines, ctx, result)
