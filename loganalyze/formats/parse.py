"""Apply a declared LogFormat to a batch of lines, with polars expressions only.

Every step works on whole columns: recognising kinds (literal needles, then one regex
per kind), extracting fields (named groups, or keys, which the compiled tokenizer reads:
loganalyze/formats/keys.py), grouping multi-line events. No Python code runs per line, except in a
kind's `handler`, which is kept for rare lines (a server_args dump: one per server start).

`parse` runs the steps in order, each in a module of its own: `prefix` (prefix, leaders,
`timestamps`), `classify`, `continuations`, `fields`; `scoring` serves detection.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import polars as pl
import regex

from loganalyze.formats.classify import claim_leftovers, classify_rows, sift_pattern
from loganalyze.formats.continuations import attach_continuations
from loganalyze.formats.fields import extract
from loganalyze.formats import sources
from loganalyze.formats.prefix import split_prefix
from loganalyze.formats.spec import Context, LogFormat


@dataclass
class Parsed:
    """A format's share of a batch: its tables, the lines each took, and which rows it claimed.
    `by_source`: the lines each table took per source of the batch (loganalyze/formats/sources.py),
    which `lines` sums; a structured file's reader, whose batch is one file, gives `lines` only."""

    tables: dict[str, pl.DataFrame]
    lines: dict[str, int]
    claimed: pl.Series
    claimed_lines: pl.Series = field(default_factory=lambda: pl.Series([], dtype=pl.Int64))
    by_source: dict[str, Counter] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_source:
            self.by_source = {t: Counter({0: n}) for t, n in self.lines.items()}


def parse(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> Parsed:
    """Claim and parse the lines of `frame` that belong to `fmt`.

    A format's `gate` (a literal every one of its lines contains, or a tuple of literals one
    of which each line contains) keeps an embeddable format from running all its kinds over
    every line of another format's file.
    """
    if fmt.gate is not None:
        gates = [fmt.gate] if isinstance(fmt.gate, str) else list(fmt.gate)
        gated = frame["text"].str.contains("|".join(regex.escape(g) for g in gates))
        inner = parse(replace(fmt, gate=None), frame.filter(gated), ctx) if gated.any() else None
        claimed = pl.repeat(False, frame.height, eager=True)
        if inner:  # row by row: the rows of one line cut into records (loganalyze/formats/glued.py) are claimed one by one
            claimed = claimed.scatter(gated.arg_true(), inner.claimed)
        return Parsed(inner.tables if inner else {}, inner.lines if inner else {}, claimed,
                      by_source=inner.by_source if inner else {})
    sift = sift_pattern(fmt) if fmt.embeddable else None  # most files have no line of an embeddable format
    if sift is not None and not frame["text"].str.contains(sift).any():
        return Parsed({}, {}, pl.repeat(False, frame.height, eager=True))
    if "wrapped" not in frame.columns:  # the lines a terminal wrapped each record onto, after its first
        frame = frame.with_columns(wrapped=pl.lit(0, pl.UInt32))
    # `glued`: the records before this one on its line, where dispatch cut one (loganalyze/formats/glued.py)
    glued = "glued" in frame.columns
    first_on_line = (pl.col("glued") == 0) if glued else pl.lit(True)
    framed = split_prefix(fmt, frame, ctx)
    framed = framed.with_columns(classify_rows(fmt, framed))
    framed = claim_leftovers(attach_continuations(framed, fmt), fmt)
    owners = framed.filter(pl.col("owner").is_not_null())
    if owners.height:
        bodies = owners.group_by("owner", maintain_order=True).agg(cont=pl.col("msg").str.join("\n"),
                                                                   cont_lines=(first_on_line.sum() if glued else pl.len())
                                                                   .cast(pl.UInt32) + pl.col("wrapped").sum())
        if glued:  # the lines below a line cut into records continue its last record only
            framed = framed.with_columns(__head=pl.when(pl.col("line_no").is_last_distinct()).then("line_no"))
            framed = framed.join(bodies, left_on="__head", right_on="owner", how="left").drop("__head")
        else:
            framed = framed.join(bodies, left_on="line_no", right_on="owner", how="left")
    else:  # no continuation lines: the join would add nothing
        framed = framed.with_columns(cont=pl.lit(None, pl.String), cont_lines=pl.lit(None, pl.UInt32))
    framed = framed.with_columns(
        body=pl.when(pl.col("cont").is_not_null()).then(pl.col("msg") + "\n" + pl.col("cont")).otherwise("msg"),
        span=1 + pl.col("cont_lines").fill_null(0) + pl.col("wrapped"),
    )
    by_kind = framed.partition_by("kind", as_dict=True, include_key=True)
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, Counter] = {}
    keys = ["line_no", "glued"] if glued else ["line_no"]  # what tells a row from the others
    claimed_rows: list[pl.DataFrame] = []
    for kind in fmt.kinds:
        rows = by_kind.get((kind.name,), framed.clear())
        if rows.height == 0:
            continue
        good = extract(kind, rows).filter(pl.col("ok"))
        if good.height == 0:
            continue
        read = good
        if kind.carry and sources.several(good):  # small files, each a batch of its own: each from an empty state
            good = pl.concat([kind.carry(part, {}) for part in sources.by_source(good)], how="diagonal_relaxed")
        elif kind.carry:
            good = kind.carry(good, ctx.state.setdefault(("carry", fmt.name, kind.name, ctx.source), {}))
        if kind.handler:
            good = kind.handler(good)
            if "unread" in good.columns:  # see spec.Handler
                gone = pl.col("unread").fill_null(False)
                read = read.filter(~pl.col("line_no").is_in(good.filter(gone)["line_no"].implode()))
                good = good.filter(~gone).drop("unread")
        claimed_rows.append(read.select(keys))
        if owners.height:
            heads = read.filter(pl.col("cont").is_not_null())["line_no"] if glued else read["line_no"]
            owned = owners.filter(pl.col("owner").is_in(heads.implode()))
            claimed_rows.append(owned.select(keys))
        # A line holding several records is counted once, by its first (loganalyze/formats/glued.py).
        if read.height:
            span = pl.col("span").cast(pl.Int64)
            weight = span - (pl.col("glued") > 0).cast(pl.Int64) if glued else span
            lines.setdefault(kind.table, Counter()).update(sources.counts(read, weight))
        if kind.message:
            good = good.with_columns(message=pl.col("body"))
        tables.setdefault(kind.table, []).append(
            good.drop("text", "msg", "body", "ok", "owner", "cont", "cont_lines", "wrap_ts", "wrapped", "logged",
                      strict=False)
        )
    taken = pl.concat(claimed_rows) if claimed_rows else frame.select(keys).clear()
    claimed_lines = taken["line_no"]
    if glued:
        claimed = frame.select(keys).join(taken.unique().with_columns(__taken=pl.lit(True)), on=keys, how="left",
                                          maintain_order="left")["__taken"].fill_null(False)
    else:
        claimed = frame["line_no"].is_in(claimed_lines.implode())
    merged = {t: pl.concat(parts, how="diagonal_relaxed") for t, parts in tables.items()}
    return Parsed(tables=merged, lines={t: sum(n.values()) for t, n in lines.items()}, claimed=claimed,
                  claimed_lines=claimed_lines, by_source=lines)
