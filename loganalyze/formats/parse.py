"""Apply a declared LogFormat to a batch of lines, with polars expressions only.

Every step works on whole columns: recognising kinds (literal needles, then one regex
per kind), extracting fields (named groups, or keys, which the compiled tokenizer reads:
loganalyze/formats/keys.py), grouping multi-line events. No Python code runs per line, except in a
kind's `handler`, which is kept for rare lines (a server_args dump: one per server start).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field, replace

import polars as pl
import regex

from loganalyze.formats import common, keys, leader
from loganalyze.formats.common import fraction
from loganalyze.formats.spec import LineKind, LogFormat, TsFormat

PFX = "__pfx"
SUFFIX = "\x00suffix:"  # marks a prefix plan whose message is the rest less a suffix
CODE_LINE = r"^\s+raise\s"
MIN_NEEDLE = 6  # characters a needle needs to tell a format from another (kind_share)


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


def _needles(kind: LineKind) -> tuple[str, ...]:
    return (kind.needle,) if isinstance(kind.needle, str) else tuple(kind.needle)


def classify_rows(fmt: LogFormat, frame: pl.DataFrame) -> pl.Series:
    """The name of the first kind whose needle, regex and levels a line's message passes, else null.

    Fallback kinds are left out here: they only take what is left once continuation
    lines have found their owners (see `claim_leftovers`); so is quoted source code, which
    belongs to the traceback around it. The needles are looked for by the compiled
    tokenizer, one pass over the lines (loganalyze/formats/keys.py `KindIds`): each line gets the
    first kind in order one of whose needles it holds. A kind's regex (and level filter)
    then runs only on the lines its needle found; a line it turns away goes on to the
    kinds after it.
    """
    kinds = [k for k in fmt.kinds if not k.fallback]
    ids_of = keys.KindIds([_needles(k) for k in kinds], frame["msg"])
    ids = ids_of.first()
    # Quoted source inside a traceback (`    raise ValueError("No available memory ...")`)
    # is a frame of it, never an event of its own.
    found = (ids >= 0).arg_true()
    code = frame["msg"].gather(found).str.contains(CODE_LINE)
    if code.any():
        ids = ids.scatter(found.filter(code), -1)
    present = set(ids.unique().to_list())
    for at, k in enumerate(kinds):
        if at not in present or not (k.match or k.levels):
            continue
        rows = (ids == at).arg_true()
        test = pl.lit(True)
        if k.match:
            test = test & pl.col("msg").str.contains(k.match)
        if k.levels:
            test = test & pl.col("level").is_in(k.levels)
        # A test that gives null (a line with no level, under a level filter) turns no line away.
        tested = frame.select("msg", *(["level"] if k.levels else []))[rows]
        away = rows.filter(~tested.select(test.fill_null(True)).to_series())
        if away.len():
            again = ids_of.first(at + 1, away)
            ids = ids.scatter(away, again)
            present |= set(again.unique().to_list())
    names = pl.Series("kind", [k.name for k in kinds], dtype=pl.String)
    return names.gather(pl.select(pl.when(ids >= 0).then(ids)).to_series()).alias("kind")


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
    elif frame["ts_year"].drop_nulls().len():
        state["first"] = frame["ts_year"].drop_nulls()[0]  # for `settle`: a batch parsed on its own
    half = pl.duration(days=183)
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


def _top_level(pattern: str) -> list[tuple[int, str]]:
    """(depth, char) for each character of `pattern` outside escapes and classes, or [] if unbalanced."""
    out, depth, i, in_class = [], 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return []
        out.append((depth, c))
        i += 1
    return out if depth == 0 and not in_class else []


@functools.lru_cache(maxsize=None)
def prefix_plan(prefix: str) -> tuple[str, str | None] | None:
    """Split a prefix `^HEAD(?P<msg>TAIL)$` into a regex for HEAD's groups and one for the rest.

    Capturing `(?P<msg>.*)$` costs a walk through the whole line; HEAD alone stops where
    the message starts, and the message is then the rest of the line (TAIL `.*`), the rest
    less a suffix (TAIL `.*?SUFFIX` with no group in SUFFIX: the lazy message ends where
    the leftmost match of `SUFFIX$` starts), or what the TAIL regex finds in it. Where the
    TAIL regex does not match, the whole prefix is applied to the line, so the groups are
    always those of `prefix`. None when the prefix has another shape (no top-level msg
    group, alternation at the top, global flags).
    """
    at = prefix.find("(?P<msg>")
    if not prefix.startswith("^") or at < 0 or not prefix.endswith("$") or prefix.endswith("\\$"):
        return None
    head, tail = prefix[1:at], prefix[at:]
    chars = _top_level(head)
    if (head and not chars) or not _top_level(tail) or any(d == 0 and c == "|" for d, c in chars + _top_level(tail)):
        return None
    if regex.search(r"\(\?[a-zA-Z]+\)", prefix) or PFX in prefix:
        return None
    try:
        regex.compile(f"^(?P<{PFX}>{head})")
        regex.compile("^" + tail)
    except regex.error:
        return None
    if tail == "(?P<msg>.*)$":
        return f"^(?P<{PFX}>{head})", None
    lazy = "(?P<msg>.*?)"
    suffix = tail[len(lazy):-1]
    if tail.startswith(lazy) and _top_level(suffix) and not any(d == 0 and c == "|" for d, c in _top_level(suffix)):
        try:
            if regex.compile(f"(?:{suffix})").groups == 0:
                return f"^(?P<{PFX}>{head})", SUFFIX + suffix
        except regex.error:
            pass
    return f"^(?P<{PFX}>{head})", "^" + tail


def prefix_groups(prefix: str, text: pl.Series) -> pl.Series:
    """The same struct as `text.str.extract_groups(prefix)`, found faster (see prefix_plan)."""
    plan = prefix_plan(prefix)
    if plan is None or text.len() == 0:
        return text.str.extract_groups(prefix).alias(PFX)
    names = list(regex.compile(prefix).groupindex)
    head_re, tail_re = plan
    if head_re == f"^(?P<{PFX}>)":  # the prefix is the message alone
        head, rest = pl.DataFrame(), text
    else:
        head = text.str.extract_groups(head_re).struct.unnest()
        rest = text.str.slice(head[PFX].str.len_chars())
    if tail_re is None:
        tail = rest.to_frame("msg")
    elif tail_re.startswith(SUFFIX):  # always matches: SUFFIX$ can, at the latest, match empty at the end
        tail = rest.str.replace(f"(?:{tail_re[len(SUFFIX):]})$", "").to_frame("msg")
    else:
        tail = rest.str.extract_groups(tail_re).struct.unnest()
    out = pl.concat([head.drop(PFX), tail], how="horizontal").select(names) if head.width else tail.select(names)
    missed = out["msg"].is_null()
    if missed.any():
        at = missed.arg_true()
        full = text.gather(at).str.extract_groups(prefix).struct.unnest()
        out = out.with_columns(out[n].clone().scatter(at, full[n]) for n in names)
    return out.to_struct(PFX)


def _prefix_columns(fmt: LogFormat, frame: pl.DataFrame) -> list[pl.Expr]:
    """The prefix's named groups as columns (`ts` as `ts_raw`).

    A group name may appear once in a regex, so a header layout that orders its fields
    differently names them `level__2`, `ts__2`: they fill `level` and `ts` too. A column
    the wrappers already set (`process`) keeps its value where the prefix has none.
    """
    groups = pl.col(PFX)
    by_column: dict[str, list[pl.Expr]] = {}
    for name in regex.compile(fmt.prefix).groupindex:
        column = name.split("__")[0]
        if column != "msg":
            by_column.setdefault("ts_raw" if column == "ts" else column, []).append(groups.struct.field(name))
    for column, exprs in by_column.items():
        if column in frame.columns:
            exprs.append(pl.col(column))
    return [pl.coalesce(exprs).alias(column) for column, exprs in by_column.items()]


def peel_leaders(fmt: LogFormat, frame: pl.DataFrame, column: str, where: pl.Series, ctx: Context) -> pl.DataFrame | None:
    """The frame with the leaders the format does not know (a user's logging format, `> `
    quoting, an MPI tag: loganalyze/formats/leader.py) removed from `column` on the rows `where` holds;
    a leader's timestamp fills `wrap_ts` and its level `level` (where the format's prefix
    has one). None when no such row has a leader.

    From `text`, a leader followed by indentation stays: the prefix applied again would
    take the indentation that makes a traceback frame a frame; it is peeled from `msg`."""
    text = frame[column]
    at = (where & text.str.contains(leader.START)).arg_true()
    if not at.len():
        return None
    # `# ` is a comment leader only in front of a whole line: vLLM's messages start with `# GPU blocks`.
    found = leader.split(text.gather(at), comments=column == "text" and not fmt.hash_lines)
    # A line that is all leader (a progress bar alone) is its own message.
    has = (found["lead"].str.len_chars() > 0) & (found["rest"].str.strip_chars().str.len_chars() > 0)
    if column == "text":
        has = has & ~found["rest"].str.contains(r"^\s")
    if not has.any():
        return None
    at, found = at.filter(has), found.filter(has)
    stamp = found.select(leader.parse_stamp(pl.col("lead_ts"), ctx.year, ctx.base_date)).to_series()
    out = frame.with_columns(text.clone().scatter(at, found["rest"]).alias(column),
                             frame["wrap_ts"].clone().scatter(at, frame["wrap_ts"].gather(at).fill_null(stamp)))
    if "level" in regex.compile(fmt.prefix).groupindex:
        level = out["level"] if "level" in out.columns else pl.repeat(None, out.height, dtype=pl.String, eager=True)
        out = out.with_columns(level.clone().scatter(at, level.gather(at).fill_null(found["lead_level"])).alias("level"))
    return out


def _bare(groups: pl.Series, text: pl.Series) -> pl.Series:
    """The lines the prefix took nothing from: none of its groups found, and the message
    (if any) starts where the line does. Most lines of a log have their format's prefix,
    and for them the null test alone decides."""
    names = [f for f in groups.struct.fields if f != "msg"]
    empty = (pl.select(pl.all_horizontal([groups.struct.field(n).is_null() for n in names])).to_series() if names
             else pl.repeat(True, text.len(), eager=True))
    at = empty.arg_true()
    if not at.len():
        return empty
    msg = groups.struct.field("msg").gather(at)
    starts = msg.is_null() | text.gather(at).str.starts_with(msg.fill_null(""))
    return empty.clone().scatter(at, starts)


def split_prefix(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Add msg, ts and the prefix's other named groups as columns.

    Leaders the format does not know are peeled twice: in front of its prefix on the lines
    where the prefix took nothing (its prefix may follow: `> [2026-01-05 10:00:01 TP0] ...`,
    so the prefix is applied again behind it), and in front of the message it found
    (`[10:00:01] INFO Decode batch ...`, where SGLang's prefix takes only the clock).
    """
    groups = prefix_groups(fmt.prefix, frame["text"])
    peeled = peel_leaders(fmt, frame, "text", _bare(groups, frame["text"]), ctx)
    if peeled is not None:
        frame, groups = peeled, prefix_groups(fmt.prefix, peeled["text"])
    frame = frame.with_columns(groups)
    groups = pl.col(PFX)
    out = frame.with_columns(*_prefix_columns(fmt, frame), msg=pl.coalesce(groups.struct.field("msg"), pl.col("text")))
    out = out.drop(PFX).with_columns(msg=leader.strip_suffix(out["msg"]))
    behind = peel_leaders(fmt, out, "msg", pl.repeat(True, out.height, eager=True), ctx)
    out = out if behind is None else behind
    if "ts_raw" not in out.columns:
        out = out.with_columns(ts_raw=pl.lit(None, pl.String))
    by_year = [_parse_ts(f, ctx) for f in fmt.ts_formats if f.complete == "year"]
    dated = _dated(out, [f for f in fmt.ts_formats if f.complete != "year"], ctx)
    if by_year:
        state = ctx.state.setdefault(("years", fmt.name, ctx.source), {})
        out = roll_years(out.with_columns(ts_year=pl.coalesce(by_year)), state)
    else:
        out = out.with_columns(ts_year=pl.lit(None, pl.Datetime("us")))
    return out.with_columns(ts=pl.coalesce(*dated, "ts_year", "wrap_ts")).drop("ts_raw", "ts_year")


def _dated(frame: pl.DataFrame, formats: list[TsFormat], ctx: Context) -> list[pl.Expr | pl.Series]:
    """The dated layouts, tried in order; those after the one that reads every timestamp are
    left out (they would only fill nulls that are not there)."""
    if len(formats) < 2:
        return [_parse_ts(f, ctx) for f in formats]
    present = frame["ts_raw"].is_not_null()
    out: list[pl.Series] = []
    filled = None
    for f in formats:
        if filled is not None and not (present & filled.is_null()).any():
            break
        parsed = frame.select(_parse_ts(f, ctx)).to_series().alias(f"__ts{len(out)}")
        out.append(parsed)
        filled = parsed if filled is None else filled.fill_null(parsed)
    return out


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
    continuation pattern belongs to the last start line in the run.
    """
    frame = frame.with_columns(owner=pl.lit(None, pl.Int64))
    for kind in fmt.kinds:
        if not kind.continuation:
            continue
        start = pl.col("kind") == kind.name
        cont = _where_unclaimed(kind.continuation)
        if not (frame["kind"] == kind.name).any():  # no start line: nobody gets an owner
            continue
        found = frame.select(cont).to_series()
        if not found.any():
            continue
        frame, cont = frame.with_columns(__cont=found), pl.col("__cont")
        run = (~(start | cont)).cum_sum()
        frame = frame.with_columns(
            owner=pl.coalesce(
                "owner",
                pl.when(cont).then(fill_in_runs(pl.when(start).then(pl.col("line_no")), run)),
            )
        ).drop("__cont", strict=False)
    for kind in fmt.kinds:
        if kind.orphan and kind.continuation:
            frame = adopt_orphans(frame, kind)
    return frame


def adopt_orphans(frame: pl.DataFrame, kind: LineKind) -> pl.DataFrame:
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
    before_run = pl.when(loose & ~loose.shift(1, fill_value=False)).then(seen - hit).forward_fill()
    head = (hit == 1) & (seen - before_run == 1)
    head_line = fill_in_runs(pl.when(head).then(pl.col("line_no")), (~loose).cum_sum())
    return frame.with_columns(
        kind=pl.when(head).then(pl.lit(kind.name)).otherwise("kind"),
        owner=pl.when(loose & ~head).then(head_line).otherwise("owner"),
    ).drop("__loose", strict=False)


def claim_leftovers(frame: pl.DataFrame, fmt: LogFormat) -> pl.DataFrame:
    """Fallback kinds (a catch-all for WARNING lines, say) take lines nothing else took."""
    for kind in fmt.kinds:
        if kind.fallback:
            if not frame.select((pl.col("kind").is_null() & pl.col("owner").is_null()).any()).item():
                continue
            free = pl.col("kind").is_null() & pl.col("owner").is_null() & _needle_expr(kind)
            frame = frame.with_columns(kind=pl.when(free).then(pl.lit(kind.name)).otherwise("kind"))
    return frame


def _cast(expr: pl.Expr, dtype: pl.DataType, percent: bool = False, commas: bool = True) -> pl.Expr:
    """Typed value of a text field; `commas` False for text that has none (a key's value)."""
    if dtype == pl.Boolean:
        return pl.when(expr.is_in(["True", "true"])).then(True).when(expr.is_in(["False", "false"])).then(False)
    if percent:
        return fraction(expr.str.strip_suffix("%").cast(pl.Float64, strict=False))
    if dtype in (pl.Int64, pl.Float64):
        return (expr.str.replace_all(",", "") if commas else expr).cast(dtype, strict=False)
    if isinstance(dtype, pl.List):
        return expr.str.split(",").list.eval(pl.element().str.strip_chars().cast(dtype.inner, strict=False))
    return expr.cast(dtype, strict=False)


def key_columns(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the kind's key columns (`__k_<column>`), `__extra` and `__kok` (some key found).

    The compiled tokenizer finds each key's text (loganalyze/formats/keys.py); several keys may fill
    one column (`#running-req` / `#running_req`): the first in the kind's order whose text
    casts wins. Values never hold a comma, so numbers are cast as they are.
    """
    texts, pairs = keys.key_texts(kind, rows["body"])
    cols: dict[str, pl.Expr] = {}
    got: list[pl.Expr] = []
    for k, text in zip(kind.keys, texts):
        raw = pl.lit(text) if text is not None else pl.lit(None, pl.String)
        value = _cast(raw, k.dtype, k.percent, commas=False)
        cols[k.column] = pl.coalesce(cols[k.column], value) if k.column in cols else value
        got.append(raw.is_not_null())
    exprs = [e.alias(f"__k_{c}") for c, e in cols.items()]
    if pairs is not None:
        exprs.append(pl.lit(pairs).alias("__extra"))
    return rows.with_columns(*exprs, __kok=pl.any_horizontal(got) if got else pl.lit(False))


def extract(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """Turn the rows of one kind into typed columns; rows that yield nothing get `ok` false.

    Several keys may fill one column (`token usage` / `full token usage`): the first
    present wins. With `pack`, the named groups go into one JSON column instead.
    """
    body = rows["body"]  # a rewrite that matches no line changes nothing (one test for all of them, usually)
    if len(kind.rewrites) < 2 or body.str.contains("|".join(f"(?:{p})" for p, _ in kind.rewrites)).any():
        for pattern, replacement in kind.rewrites:
            if body.str.contains(pattern).any():
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
    temporary: list[str] = []
    if kind.keys or kind.extra:
        rows = key_columns(kind, rows)
        for column in dict.fromkeys(k.column for k in kind.keys):
            value = pl.col(f"__k_{column}")
            cols[column] = pl.coalesce(cols[column], value) if column in cols else value
            temporary.append(f"__k_{column}")
        if kind.keys:
            got.append(pl.col("__kok"))
        temporary.append("__kok")
        if kind.extra:
            cols["extra"] = pl.col("__extra")
            temporary.append("__extra")
    if kind.pack and cols:
        exprs = [pl.struct([e.alias(n) for n, e in cols.items()]).struct.json_encode().alias(kind.pack)]
    else:
        exprs = [e.alias(n) for n, e in cols.items()]
    ok = pl.any_horizontal(got) if got else pl.lit(True)
    consts = [pl.lit(v).alias(c) for c, v in kind.const.items()]
    return rows.with_columns(*exprs, *consts, ok=ok).drop(temporary)


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
        return Parsed(inner.tables if inner else {}, inner.lines if inner else {}, claimed)
    sift = _sift(fmt) if fmt.embeddable else None  # most files have no line of an embeddable format
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
    lines: dict[str, int] = {}
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
        if kind.carry:
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
            glued_rows = int((read["glued"] > 0).sum()) if glued else 0
            lines[kind.table] = lines.get(kind.table, 0) + int(read["span"].sum()) - glued_rows
        if kind.message:
            good = good.with_columns(message=pl.col("body"))
        tables.setdefault(kind.table, []).append(
            good.drop("text", "msg", "body", "ok", "owner", "cont", "cont_lines", "wrap_ts", "wrapped", strict=False)
        )
    taken = pl.concat(claimed_rows) if claimed_rows else frame.select(keys).clear()
    claimed_lines = taken["line_no"]
    if glued:
        claimed = frame.select(keys).join(taken.unique().with_columns(__taken=pl.lit(True)), on=keys, how="left",
                                          maintain_order="left")["__taken"].fill_null(False)
    else:
        claimed = frame["line_no"].is_in(claimed_lines.implode())
    merged = {t: pl.concat(parts, how="diagonal_relaxed") for t, parts in tables.items()}
    return Parsed(tables=merged, lines=lines, claimed=claimed, claimed_lines=claimed_lines)


_SIFTS: dict[int, tuple[tuple, str | None]] = {}


def _sift(fmt: LogFormat) -> str | None:
    """One regex for all the needles of `fmt`, when a batch without any of them can yield
    nothing (no kind takes any line, and no state carries over). A kind that adopts orphan
    lines adds its orphan pattern with its `^` anchors dropped: a line behind a leader may
    head an orphan run too, and a sift may only ever match more, never less."""
    known = _SIFTS.get(id(fmt.kinds))  # by kinds: a gated format is parsed as a copy without its gate
    if known and known[0] is fmt.kinds:
        return known[1]
    needles = [n for k in fmt.kinds for n in _needles(k)]
    sift = "|".join([regex.escape(n) for n in dict.fromkeys(needles)]
                    + [regex.sub(r"(^|\|)\^", r"\1", k.orphan) for k in fmt.kinds if k.orphan])
    if not needles or not all(needles) or any(k.carry for k in fmt.kinds):
        sift = None
    elif any(f.complete == "year" for f in fmt.ts_formats):
        sift = None
    _SIFTS[id(fmt.kinds)] = (fmt.kinds, sift)
    return sift


def score(fmt: LogFormat, lines: pl.Series) -> float:
    """Fraction of sample lines that carry one of the format's detection marks, as they are
    or behind a leader the format does not know (loganalyze/formats/leader.py)."""
    if lines.len() == 0:
        return 0.0
    hit = pl.Series([False] * lines.len())
    for text in (lines, leader.peel(lines, comments=not fmt.hash_lines)):
        for pattern in fmt.detect:
            hit = hit | text.str.contains(pattern)
    return float(hit.mean())


def kind_share(fmt: LogFormat, lines: pl.Series) -> tuple[float, float]:
    """The fractions of `lines` that `fmt`'s own kinds classify, and that are lines every
    server format shares (access lines, traceback frames). Fallback kinds and kinds found
    by a needle too short to be anyone's (`#`, ` `) count for neither."""
    if lines.len() == 0:
        return 0.0, 0.0
    frame = pl.DataFrame({"text": lines, "wrap_ts": pl.Series([None] * lines.len(), dtype=pl.Datetime("us"))})
    framed = split_prefix(fmt, frame, Context(source="detect", year=2000, base_date="2000-01-01"))
    kinds = classify_rows(fmt, framed)
    common_kinds = [k.name for k in fmt.kinds if k in (common.ACCESS, common.TRACEBACK)]
    vague = [k.name for k in fmt.kinds if k.fallback or min(map(len, _needles(k))) < MIN_NEEDLE]
    own = kinds.is_not_null() & ~kinds.is_in(common_kinds + vague).fill_null(False)
    shared = kinds.is_in(common_kinds).fill_null(False) | framed["msg"].str.contains(common.FRAME)
    return float(own.mean()), float(shared.mean())


def guess_version(fmt: LogFormat, lines: pl.Series) -> str | None:
    """The first version hint whose pattern occurs in the sample lines."""
    for pattern, label in fmt.versions:
        if lines.str.contains(pattern).any():
            return label
    return None
