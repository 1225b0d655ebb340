"""Dispatch: which format's tables each line of a batch ends in.

The formats that claim lines anywhere (NCCL, embedded in a server's log) take theirs
first, then the file's own format; what nobody claims goes to `unparsed` with its line
number, so the counts of every table add up to the lines read. Structured files (JSON
results) are read whole, the same accounting after.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

import polars as pl

from loganalyze import formats
from loganalyze.ingestion.results import SourceResult
from loganalyze.reader import LONG_LINE_BYTES, LONG_LINE_MARK
from loganalyze.store import Staging
from loganalyze.formats import glued, sources, wraps
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context, FileFormat, LogFormat


def parse_batch(frame: pl.DataFrame, primary: LogFormat, ctx: Context) -> tuple[dict[str, list], dict[str, Counter]]:
    """All formats' tables for one batch, plus lines per table (unparsed included) per source
    of the batch (its lines may be several small files', loganalyze/formats/sources.py).

    A line that holds several records (loganalyze/formats/glued.py) is parsed as one row per record,
    counted once. Where a terminal wrapped records onto several lines (loganalyze/formats/wraps.py),
    the batch is parsed again from the same state with each record whole; a record then
    counts all its lines, and one that is still unparsed is kept as the lines it was.
    """
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, Counter] = {}
    if (long := _truncated(frame)) is not None:  # lines the reader cut (over 1 MiB) are kept as they are, unparsed
        tables["unparsed"] = [frame.filter(long).select("line_no", ts="wrap_ts", text="raw")]
        lines["unparsed"] = sources.counts(frame.filter(long), pl.lit(1))
        frame = frame.filter(~long)
    _parse_lines(frame, primary, ctx, tables, lines)
    return tables, lines


def _parse_lines(frame: pl.DataFrame, primary: LogFormat, ctx: Context, tables: dict[str, list],
                 lines: dict[str, Counter]) -> None:
    """parse_batch's lines into `tables` and `lines`. Lines cut into records and records a
    terminal wrapped are judged by the counts and widths of the whole batch, so a batch of
    several sources that has either is parsed source by source: each as it is alone."""
    state = copy.deepcopy(ctx.state)
    several = sources.several(frame)
    cut = glued.split(frame, glued.record_starts([primary, *formats.active().embeddable()]))
    found = None if several and cut.height > frame.height else _parse_whole(cut, primary, ctx, state, several)
    if found is None:
        for part in sources.by_source(frame):  # each from the batch's state, as alone
            ctx.state.clear()
            ctx.state.update(copy.deepcopy(state))
            _parse_lines(part, primary, ctx, tables, lines)
        return
    typed, counts, left = found
    counted = sum(sum(n.values()) for n in counts.values())
    if cut.height > frame.height and counted + int((left["glued"] == 0).sum()) != frame.height:
        # A line's records counted other than once (a record continued over the lines below
        # it, say): the batch is parsed again with every line whole, as before the cut.
        typed, counts, left = _parse_whole(frame.with_columns(glued=pl.lit(0, pl.UInt32)), primary, ctx, state, False)
    for t, parts in typed.items():
        tables.setdefault(t, []).extend(parts)
    for t, n in counts.items():
        lines.setdefault(t, Counter()).update(n)
    if left.height:
        tables.setdefault("unparsed", []).append(left.select("line_no", "glued", ts="wrap_ts", text="raw"))
        lines.setdefault("unparsed", Counter()).update(sources.counts(left, pl.col("glued") == 0))


def _parse_whole(frame: pl.DataFrame, primary: LogFormat, ctx: Context, state: dict,
                 several: bool) -> tuple[dict[str, list], dict[str, Counter], pl.DataFrame] | None:
    """`_parse_formats` from `state`, and again with each record a terminal wrapped whole;
    None where the batch holds `several` sources and a terminal wrapped some (see _parse_lines)."""
    ctx.state.clear()
    ctx.state.update(copy.deepcopy(state))
    typed, counts, left = _parse_formats(frame, primary, ctx)
    rests = wraps.remainders(frame, primary, frame["line_no"].is_in(left["line_no"].implode()))
    if rests.height and several:
        return None
    if rests.height:
        ctx.state.clear()
        ctx.state.update(copy.deepcopy(state))
        typed, counts, left = _parse_formats(wraps.rejoin(frame, rests), primary, ctx)
        heads = (rests.filter(pl.col("head").is_in(left["line_no"].implode()))
                 .select("line_no", glued=pl.lit(0, pl.UInt32)))
        left = frame.join(pl.concat([left.select("line_no", "glued"), heads]), on=["line_no", "glued"], how="semi")
    return typed, counts, left


def _parse_formats(frame: pl.DataFrame, primary: LogFormat,
                   ctx: Context) -> tuple[dict[str, list], dict[str, Counter], pl.DataFrame]:
    """Every format's tables and lines per table for the batch, and the lines none claimed;
    the embeddable formats (NCCL inside a server log, say) first, the file's own with its own_kinds."""
    remaining = frame
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, Counter] = {}
    for fmt in [f for f in formats.active().embeddable() if f is not primary] + [primary.alone]:
        if remaining.height == 0:
            break
        got = parse(fmt, remaining, ctx)
        for t, df in got.tables.items():
            tables.setdefault(t, []).append(df)
        for t, n in got.by_source.items():
            lines.setdefault(t, Counter()).update(n)
        remaining = remaining.filter(~got.claimed)
    return tables, lines, remaining


def _truncated(frame: pl.DataFrame) -> pl.Series | None:
    """Which lines of a batch the reader truncated, or None when none was (the usual case)."""
    if frame.height == 0 or frame["raw"].str.len_bytes().max() <= LONG_LINE_BYTES:
        return None
    long = frame["raw"].str.contains(LONG_LINE_MARK)
    return long if long.any() else None


@dataclass
class Member:
    """One source of a batch: where its parts are staged, what it became, its id (the
    tables' `source` column)."""

    staged: Staging
    result: SourceResult
    source: str


def stage_tables(members: list[Member], tables: dict[str, list[pl.DataFrame]], lines: dict[str, Counter]) -> None:
    """A batch's tables and line counts given to its sources (by their index in the batch)."""
    for t, parts in tables.items():
        for k, df in sources.split(pl.concat(parts, how="diagonal_relaxed")).items():
            member = members[k]
            df = df.with_columns(source=pl.lit(member.source))
            order = ["line_no"]
            if "glued" in df.columns:  # the store keeps no such column: the count says it
                if n_glued := int((df["glued"] > 0).sum()):
                    member.result.glued[t] = member.result.glued.get(t, 0) + n_glued
                order.append("glued")
            member.staged.write(t, df.sort(order))
    for t, counted in lines.items():
        for k, n in counted.items():
            result = members[k].result
            result.lines_by_table[t] = result.lines_by_table.get(t, 0) + n


def read_file_frame(fmt: FileFormat, frame: pl.DataFrame, ctx: Context, member: Member) -> None:
    """A structured file (JSON results), whole or one batch of it (`FileFormat.by_batch`), is
    parsed by its format; its line counts are checked the same way. A file of blank lines,
    forced to a format with `--as`, gives the reader nothing to read."""
    if not frame.height:
        return
    got = fmt.read(frame, ctx)
    tables = {t: [df] for t, df in got.tables.items()}
    lines = dict(got.by_source)
    rest = frame.filter(~frame["line_no"].is_in(got.claimed_lines.implode()))
    if rest.height:
        tables.setdefault("unparsed", []).append(rest.select("line_no", "text", ts=pl.lit(None, pl.Datetime("us"))))
        lines["unparsed"] = lines.get("unparsed", Counter()) + Counter({0: rest.height})
    stage_tables([member], tables, lines)
