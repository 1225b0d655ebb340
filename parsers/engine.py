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
    return hit


def classify(fmt: LogFormat) -> pl.Expr:
    """The name of the first kind whose needle and regex match the message, else null."""
    expr = pl.when(_needle_expr(fmt.kinds[0])).then(pl.lit(fmt.kinds[0].name))
    for kind in fmt.kinds[1:]:
        expr = expr.when(_needle_expr(kind)).then(pl.lit(kind.name))
    return expr.otherwise(pl.lit(None, pl.String)).alias("kind")


def timestamp(formats: tuple[TsFormat, ...], ctx: Context) -> pl.Expr:
    """Parse the prefix's `ts` group with each layout in turn, completing year or date."""
    parsed = []
    for f in formats:
        raw = pl.col("ts_raw")
        layout = f.strftime
        if f.complete == "year":
            raw, layout = pl.lit(f"{ctx.year}-") + raw, "%Y-" + layout
        elif f.complete == "date":
            raw, layout = pl.lit(f"{ctx.base_date} ") + raw, "%Y-%m-%d " + layout
        parsed.append(raw.str.to_datetime(layout, strict=False, time_unit="us"))
    return pl.coalesce(*parsed, pl.col("wrap_ts")) if parsed else pl.col("wrap_ts")


def split_prefix(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Add msg, ts and the prefix's other named groups as columns."""
    names = [n for n in regex.compile(fmt.prefix).groupindex if n != "msg"]
    groups = pl.col("text").str.extract_groups(fmt.prefix)
    cols = [groups.struct.field(n).alias("ts_raw" if n == "ts" else n) for n in names]
    out = frame.with_columns(*cols, msg=pl.coalesce(groups.struct.field("msg"), pl.col("text")))
    if "ts_raw" not in out.columns:
        out = out.with_columns(ts_raw=pl.lit(None, pl.String))
    return out.with_columns(ts=timestamp(fmt.ts_formats, ctx)).drop("ts_raw")


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
    return frame


def _cast(expr: pl.Expr, dtype: pl.DataType, percent: bool = False) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.when(expr.is_in(["True", "true"])).then(True).when(expr.is_in(["False", "false"])).then(False)
    if percent:
        expr = expr.str.strip_suffix("%")
        return expr.cast(pl.Float64, strict=False) / 100
    if dtype in (pl.Int64, pl.Float64):
        return expr.str.replace_all(",", "").cast(dtype, strict=False)
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
    framed = attach_continuations(framed, fmt)
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
