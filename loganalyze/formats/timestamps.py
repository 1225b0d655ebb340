"""A line's timestamp from the prefix's text: the format's layouts tried in order, a year
given to logs that print none (rolled over where the clock runs backwards, across batches
by the source's state, and checked in order by `settle` when batches were parsed alone)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from loganalyze.formats import sources
from loganalyze.formats.spec import Context, TsFormat


def parse_ts(f: TsFormat, ctx: Context) -> pl.Expr:
    raw, layout = pl.col("ts_raw"), f.strftime
    if f.complete == "year":
        raw, layout = pl.lit(f"{ctx.year}-") + raw, "%Y-" + layout
    elif f.complete == "date":
        raw, layout = pl.lit(f"{ctx.base_date} ") + raw, "%Y-%m-%d " + layout
    return raw.str.to_datetime(layout, strict=False, time_unit="us")


def roll_years(frame: pl.DataFrame, state: dict) -> pl.DataFrame:
    """Keep year-less timestamps (`ts_year`) monotonic across New Year.

    Every line gets the context's year, so 31 Dec -> 1 Jan reads as a jump back of
    almost a year: a jump back of more than half a year adds one, a jump forward of as
    much (a line from another process printed just before midnight) takes it back. The
    previous raw timestamp and the years added so far carry over to the next batch.
    """
    raw = pl.col("ts_year")
    half = pl.duration(days=183)
    if sources.several(frame):  # small files, each a batch of its own: each from an empty state, as alone
        key = pl.col("line_no") // sources.SHIFT
        prev = pl.col("_prev")
        step = (raw < prev - half).fill_null(False).cast(pl.Int32) - (raw > prev + half).fill_null(False).cast(pl.Int32)
        out = frame.with_columns(_prev=raw.forward_fill().shift(1).over(key)).with_columns(_step=step)
        out = out.with_columns(_years=pl.col("_step").cum_sum().over(key)).drop("_prev", "_step")
        return out.with_columns(ts_year=raw.dt.offset_by(pl.format("{}y", "_years"))).drop("_years")
    prev = raw.forward_fill().shift(1)
    if "last" in state:
        prev = prev.fill_null(pl.lit(state["last"], pl.Datetime("us")))
    elif frame["ts_year"].drop_nulls().len():
        state["first"] = frame["ts_year"].drop_nulls()[0]  # for `settle`: a batch parsed on its own
    step = (raw < prev - half).fill_null(False).cast(pl.Int32) - (raw > prev + half).fill_null(False).cast(pl.Int32)
    out = frame.with_columns(_years=step.cum_sum() + state.get("years", 0))
    seen = out["ts_year"].drop_nulls()
    if seen.len():
        state["last"] = seen[-1]
    if out.height:
        state["years"] = int(out["_years"][-1])
    return out.with_columns(ts_year=raw.dt.offset_by(pl.format("{}y", "_years"))).drop("_years")


def settle(state: dict, alone: dict) -> bool:
    """Whether a batch parsed on its own (from an empty state, ending in `alone`) is what it
    would be parsed after the batches before it (ending in `state`); if so, `state` becomes
    the state after it, as if it had been parsed in order.

    So the batches of a format with year-less timestamps can be parsed side by side: that
    holds unless a year has rolled over before the batch or at its first line, and unless
    a kind carried counters over (vLLM V0 spec lines), which a batch on its own cannot.
    """
    if any(key[0] != "years" for key in alone):
        return False
    half = dt.timedelta(days=183)
    for key, mine in alone.items():
        before = state.get(key, {})
        if before.get("years", 0) != 0:
            return False
        if "first" in mine and "last" in before and abs(mine["first"] - before["last"]) > half:
            return False
    for key, mine in alone.items():
        after = state.setdefault(key, {})
        after["years"] = mine.get("years", 0)
        if "last" in mine:
            after["last"] = mine["last"]
    return True


def dated_layouts(frame: pl.DataFrame, formats: list[TsFormat], ctx: Context) -> list[pl.Expr | pl.Series]:
    """The dated layouts, tried in order; those after the one that reads every timestamp are
    left out (they would only fill nulls that are not there)."""
    if len(formats) < 2:
        return [parse_ts(f, ctx) for f in formats]
    present = frame["ts_raw"].is_not_null()
    out: list[pl.Series] = []
    filled = None
    for f in formats:
        if filled is not None and not (present & filled.is_null()).any():
            break
        parsed = frame.select(parse_ts(f, ctx)).to_series().alias(f"__ts{len(out)}")
        out.append(parsed)
        filled = parsed if filled is None else filled.fill_null(parsed)
    return out
