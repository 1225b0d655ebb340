"""Apply a declared LogFormat to a batch of lines, with polars expressions only.

Every step works on whole columns: recognising kinds (literal needles, then one regex
per kind), extracting fields (named groups or keys), grouping multi-line events. No
Python code runs per line, except in a kind's `handler`, which is kept for rare lines
(a server_args dump: one per server start).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl
import regex

from parsers.spec import LineKind, LogFormat, TsFormat

VALUE = r"([^ ,]+?)\.?(?:[ ,]|$)"
PAIR = r"[,.] [#A-Za-z][^:,]*?: [^ ,]+"


@dataclass
class Context:
    """What a parser needs to know about the source beyond its lines."""

    source: str
    year: int
    base_date: str  # YYYY-MM-DD, for logs that print only the time of day
    state: dict = field(default_factory=dict)


@dataclass
class Parsed:
    """A format's share of a batch: its tables, the lines each took, and which rows it claimed."""

    tables: dict[str, pl.DataFrame]
    lines: dict[str, int]
    claimed: pl.Series
    claimed_lines: pl.Series = field(default_factory=lambda: pl.Series([], dtype=pl.Int64))


def _needle_expr(kind: LineKind) -> pl.Expr:
    needles = (kind.needle,) if isinstance(kind.needle, str) else kind.needle
    hit = pl.lit(False)
    for n in needles:
        hit = hit | pl.col("msg").str.contains(n, literal=True)
    if kind.match:
        hit = hit & pl.col("msg").str.contains(kind.match)
    if kind.levels:
        hit = hit & pl.col("level").is_in(kind.levels)
    return hit


def classify(fmt: LogFormat) -> pl.Expr:
    """The name of the first kind whose needle and regex match the message, else null.

    Fallback kinds are left out here: they only take what is left once continuation
    lines have found their owners (see `claim_leftovers`).
    """
    kinds = [k for k in fmt.kinds if not k.fallback]
    expr = pl.when(_needle_expr(kinds[0])).then(pl.lit(kinds[0].name))
    for kind in kinds[1:]:
        expr = expr.when(_needle_expr(kind)).then(pl.lit(kind.name))
    return expr.otherwise(pl.lit(None, pl.String)).alias("kind")


def _parse_ts(f: TsFormat, ctx: Context) -> pl.Expr:
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
    prev = raw.forward_fill().shift(1)
    if "last" in state:
        prev = prev.fill_null(pl.lit(state["last"], pl.Datetime("us")))
    half = pl.duration(days=183)
    step = (raw < prev - half).fill_null(False).cast(pl.Int32) - (raw > prev + half).fill_null(False).cast(pl.Int32)
    out = frame.with_columns(_years=step.cum_sum() + state.get("years", 0))
    seen = out["ts_year"].drop_nulls()
    if seen.len():
        state["last"] = seen[-1]
    if out.height:
        state["years"] = int(out["_years"][-1])
    return out.with_columns(ts_year=raw.dt.offset_by(pl.format("{}y", "_years"))).drop("_years")


def _prefix_columns(fmt: LogFormat, frame: pl.DataFrame) -> list[pl.Expr]:
    """The prefix's named groups as columns (`ts` as `ts_raw`).

    A group name may appear once in a regex, so a header layout that orders its fields
    differently names them `level__2`, `ts__2`: they fill `level` and `ts` too. A column
    the wrappers already set (`process`) keeps its value where the prefix has none.
    """
    groups = pl.col("text").str.extract_groups(fmt.prefix)
    by_column: dict[str, list[pl.Expr]] = {}
    for name in regex.compile(fmt.prefix).groupindex:
        column = name.split("__")[0]
        if column != "msg":
            by_column.setdefault("ts_raw" if column == "ts" else column, []).append(groups.struct.field(name))
    for column, exprs in by_column.items():
        if column in frame.columns:
            exprs.append(pl.col(column))
    return [pl.coalesce(exprs).alias(column) for column, exprs in by_column.items()]


def split_prefix(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Add msg, ts and the prefix's other named groups as columns."""
    groups = pl.col("text").str.extract_groups(fmt.prefix)
    out = frame.with_columns(*_prefix_columns(fmt, frame), msg=pl.coalesce(groups.struct.field("msg"), pl.col("text")))
    if "ts_raw" not in out.columns:
        out = out.with_columns(ts_raw=pl.lit(None, pl.String))
    by_year = [_parse_ts(f, ctx) for f in fmt.ts_formats if f.complete == "year"]
    dated = [_parse_ts(f, ctx) for f in fmt.ts_formats if f.complete != "year"]
    if by_year:
        state = ctx.state.setdefault(("years", fmt.name, ctx.source), {})
        out = roll_years(out.with_columns(ts_year=pl.coalesce(by_year)), state)
    else:
        out = out.with_columns(ts_year=pl.lit(None, pl.Datetime("us")))
    return out.with_columns(ts=pl.coalesce(*dated, "ts_year", "wrap_ts")).drop("ts_raw", "ts_year")


def attach_continuations(frame: pl.DataFrame, fmt: LogFormat) -> pl.DataFrame:
    """Give unclaimed continuation lines (traceback frames, wrapped dumps) to the line above.

    A run of consecutive lines that are either a kind's start line or match its
    continuation pattern belongs to the last start line in the run.
    """
    frame = frame.with_columns(owner=pl.lit(None, pl.Int64))
    for kind in fmt.kinds:
        if not kind.continuation:
            continue
        start = pl.col("kind") == kind.name
        cont = pl.col("kind").is_null() & pl.col("msg").str.contains(kind.continuation)
        run = (~(start | cont)).cum_sum()
        frame = frame.with_columns(
            owner=pl.coalesce(
                "owner",
                pl.when(cont).then(pl.when(start).then(pl.col("line_no")).forward_fill().over(run)),
            )
        )
    for kind in fmt.kinds:
        if kind.orphan and kind.continuation:
            frame = adopt_orphans(frame, kind)
    return frame


def adopt_orphans(frame: pl.DataFrame, kind: LineKind) -> pl.DataFrame:
    """Make a run of continuation lines that has no start line one line of `kind`.

    A log cut mid-traceback, or a batch that begins inside one, leaves frames with no
    `Traceback` line above them. When the run's first line matches `kind.orphan`, it
    takes the kind and the rest of the run belongs to it.
    """
    loose = pl.col("kind").is_null() & pl.col("owner").is_null() & pl.col("msg").str.contains(kind.continuation)
    head = loose & ~loose.shift(1, fill_value=False) & pl.col("msg").str.contains(kind.orphan)
    head_line = pl.when(head).then(pl.col("line_no")).forward_fill().over((~loose).cum_sum())
    return frame.with_columns(
        kind=pl.when(head).then(pl.lit(kind.name)).otherwise("kind"),
        owner=pl.when(loose & ~head).then(head_line).otherwise("owner"),
    )


def claim_leftovers(frame: pl.DataFrame, fmt: LogFormat) -> pl.DataFrame:
    """Fallback kinds (a catch-all for WARNING lines, say) take lines nothing else took."""
    for kind in fmt.kinds:
        if kind.fallback:
            free = pl.col("kind").is_null() & pl.col("owner").is_null() & _needle_expr(kind)
            frame = frame.with_columns(kind=pl.when(free).then(pl.lit(kind.name)).otherwise("kind"))
    return frame


def _cast(expr: pl.Expr, dtype: pl.DataType, percent: bool = False) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.when(expr.is_in(["True", "true"])).then(True).when(expr.is_in(["False", "false"])).then(False)
    if percent:
        expr = expr.str.strip_suffix("%")
        return expr.cast(pl.Float64, strict=False) / 100
    if dtype in (pl.Int64, pl.Float64):
        return expr.str.replace_all(",", "").cast(dtype, strict=False)
    if isinstance(dtype, pl.List):
        return expr.str.split(",").list.eval(pl.element().str.strip_chars().cast(dtype.inner, strict=False))
    return expr.cast(dtype, strict=False)


def extract(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """Turn the rows of one kind into typed columns; rows that yield nothing get `ok` false.

    Several keys may fill one column (`token usage` / `full token usage`): the first
    present wins. With `pack`, the named groups go into one JSON column instead.
    """
    body = pl.col("body")
    for pattern, replacement in kind.rewrites:
        body = body.str.replace_all(pattern, replacement)
    rows = rows.with_columns(body=body)
    cols: dict[str, pl.Expr] = {}
    got: list[pl.Expr] = []
    if kind.pattern:
        names = list(regex.compile(kind.pattern).groupindex)
        groups = pl.col("body").str.extract_groups(kind.pattern)
        for n in names:
            cols[n] = _cast(groups.struct.field(n), kind.types.get(n, pl.String))
        got.append(pl.col("body").str.contains(kind.pattern))
    for k in kind.keys:
        sep = regex.escape(kind.key_sep)
        raw = pl.col("body").str.extract(rf"(?:^|[,.] ){regex.escape(k.key)}{sep}{VALUE}", 1)
        value = _cast(raw, k.dtype, k.percent)
        cols[k.column] = pl.coalesce(cols[k.column], value) if k.column in cols else value
        got.append(raw.is_not_null())
    if kind.extra:
        known = [k.key for k in kind.keys]
        pairs = pl.col("body").str.extract_all(PAIR).list.eval(
            pl.element().str.replace(r"^[,.] ", "").str.splitn(": ", 2).struct.rename_fields(["key", "value"])
        )
        cols["extra"] = pairs.list.filter(~pl.element().struct.field("key").is_in(known))
    if kind.pack and cols:
        exprs = [pl.struct([e.alias(n) for n, e in cols.items()]).struct.json_encode().alias(kind.pack)]
    else:
        exprs = [e.alias(n) for n, e in cols.items()]
    ok = pl.any_horizontal(got) if got else pl.lit(True)
    consts = [pl.lit(v).alias(c) for c, v in kind.const.items()]
    return rows.with_columns(*exprs, *consts, ok=ok)


def parse(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> Parsed:
    """Claim and parse the lines of `frame` that belong to `fmt`.

    A format's `gate` (a literal every one of its lines contains, or a tuple of literals one
    of which each line contains) keeps an embeddable format from running all its kinds over
    every line of another format's file.
    """
    if fmt.gate is not None:
        gates = [fmt.gate] if isinstance(fmt.gate, str) else list(fmt.gate)
        gated = frame["text"].str.contains_any(gates)
        inner = parse(replace(fmt, gate=None), frame.filter(gated), ctx) if gated.any() else None
        claimed = frame["line_no"].is_in(inner.claimed_lines.implode()) if inner else pl.Series([False] * frame.height)
        return Parsed(inner.tables if inner else {}, inner.lines if inner else {}, claimed)
    framed = split_prefix(fmt, frame, ctx).with_columns(classify(fmt))
    framed = claim_leftovers(attach_continuations(framed, fmt), fmt)
    bodies = (
        framed.filter(pl.col("owner").is_not_null())
        .group_by("owner", maintain_order=True)
        .agg(cont=pl.col("msg").str.join("\n"), cont_lines=pl.len())
    )
    framed = framed.join(bodies, left_on="line_no", right_on="owner", how="left").with_columns(
        body=pl.when(pl.col("cont").is_not_null()).then(pl.col("msg") + "\n" + pl.col("cont")).otherwise("msg"),
        span=1 + pl.col("cont_lines").fill_null(0),
    )
    tables: dict[str, list[pl.DataFrame]] = {}
    lines: dict[str, int] = {}
    claimed_rows: list[pl.Series] = []
    for kind in fmt.kinds:
        rows = framed.filter(pl.col("kind") == kind.name)
        if rows.height == 0:
            continue
        good = extract(kind, rows).filter(pl.col("ok"))
        if good.height == 0:
            continue
        claimed_rows.append(good["line_no"])
        owned = framed.filter(pl.col("owner").is_in(good["line_no"].implode()))
        claimed_rows.append(owned["line_no"])
        lines[kind.table] = lines.get(kind.table, 0) + int(good["span"].sum())
        if kind.carry:
            good = kind.carry(good, ctx.state.setdefault(("carry", fmt.name, kind.name, ctx.source), {}))
        if kind.handler:
            good = kind.handler(good)
        if kind.message:
            good = good.with_columns(message=pl.col("body"))
        tables.setdefault(kind.table, []).append(
            good.drop("text", "msg", "body", "ok", "owner", "cont", "cont_lines", "wrap_ts", strict=False)
        )
    claimed_lines = pl.concat(claimed_rows) if claimed_rows else pl.Series([], dtype=pl.Int64)
    claimed = frame["line_no"].is_in(claimed_lines.implode())
    merged = {t: pl.concat(parts, how="diagonal_relaxed") for t, parts in tables.items()}
    return Parsed(tables=merged, lines=lines, claimed=claimed, claimed_lines=claimed_lines)


def score(fmt: LogFormat, lines: pl.Series) -> float:
    """Fraction of sample lines that carry one of the format's detection marks."""
    if lines.len() == 0:
        return 0.0
    hit = pl.Series([False] * lines.len())
    for pattern in fmt.detect:
        hit = hit | lines.str.contains(pattern)
    return float(hit.mean())


def guess_version(fmt: LogFormat, lines: pl.Series) -> str | None:
    """The first version hint whose pattern occurs in the sample lines."""
    for pattern, label in fmt.versions:
        if lines.str.contains(pattern).any():
            return label
    return None
