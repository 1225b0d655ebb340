"""Splitting each line into its prefix's named groups (level, timestamp, process ...) and the
message: the format's prefix regex compiled to a plan of literal cuts where it can be,
leaders the prefix does not know peeled off (loganalyze/formats/leader.py), timestamps read."""

from __future__ import annotations

import functools

import polars as pl
import regex

from loganalyze.formats import leader
from loganalyze.formats.spec import Context, LogFormat
from loganalyze.formats.timestamps import dated_layouts, parse_ts, roll_years

PFX = "__pfx"
SUFFIX = "\x00suffix:"  # marks a prefix plan whose message is the rest less a suffix


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


def _prefix_again(fmt: LogFormat, text: pl.Series, groups: pl.Series) -> tuple[pl.Series, pl.Series] | None:
    """The lines whose message holds the format's prefix again, without their first prefix,
    and the prefix's groups of them; None when there is none.

    A deployment that stamps each line in the format's own shape (`[2025-03-11 16:44:27]
    [2025-03-11 01:44:27 TP0] Decode batch ...`: local time in front of the server's UTC) leaves
    the server's prefix, rank tag and all, inside the message. The server's prefix gives the
    line's groups but its timestamp: the deployment's stamp is on every line (tqdm bars and
    other output the server's logger does not write have no other), so it keeps one clock
    for the file. Only a message that starts like its line does (first three characters) is tried."""
    msg = groups.struct.field("msg")
    near = (msg.str.len_chars() < text.str.len_chars()) & (msg.str.slice(0, 3) == text.str.slice(0, 3))
    at = near.fill_null(False).arg_true()
    if not at.len():
        return None
    inner = msg.gather(at)
    took = ~_bare(prefix_groups(fmt.prefix, inner), inner)
    if not took.any():
        return None
    rows = at.filter(took)
    again = text.clone().scatter(rows, inner.filter(took))
    mask = pl.repeat(False, text.len(), eager=True).scatter(rows, True)
    outer, split = groups.struct.unnest(), prefix_groups(fmt.prefix, again).struct.unnest()
    stamps = [n for n in split.columns if n.split("__")[0] == "ts"]
    split = split.with_columns(pl.when(mask).then(outer[n]).otherwise(split[n]).alias(n) for n in stamps)
    return again, split.to_struct(PFX)


def split_prefix(fmt: LogFormat, frame: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Add msg, ts and the prefix's other named groups as columns.

    Leaders the format does not know are peeled twice: in front of its prefix on the lines
    where the prefix took nothing (its prefix may follow: `> [2026-01-05 10:00:01 TP0] ...`,
    so the prefix is applied again behind it), and in front of the message it found
    (`[10:00:01] INFO Decode batch ...`, where SGLang's prefix takes only the clock). A line
    stamped twice in the prefix's own shape is split at its second prefix (_prefix_again).
    """
    groups = prefix_groups(fmt.prefix, frame["text"])
    peeled = peel_leaders(fmt, frame, "text", _bare(groups, frame["text"]), ctx)
    if peeled is not None:
        frame, groups = peeled, prefix_groups(fmt.prefix, peeled["text"])
    again = _prefix_again(fmt, frame["text"], groups)
    if again is not None:
        frame, groups = frame.with_columns(text=again[0]), again[1]
    frame = frame.with_columns(groups)
    groups = pl.col(PFX)
    out = frame.with_columns(*_prefix_columns(fmt, frame), msg=pl.coalesce(groups.struct.field("msg"), pl.col("text")))
    out = out.drop(PFX).with_columns(msg=leader.strip_suffix(out["msg"]))
    # A level the prefix found inside its message (NCCL's `INFO ...`: the kinds read it) is
    # the message's own start, not a leader.
    own_level = (out["msg"].str.starts_with(out["level"] + " ").fill_null(False) if "level" in out.columns
                 else pl.repeat(False, out.height, eager=True))
    behind = peel_leaders(fmt, out, "msg", ~own_level, ctx)
    out = out if behind is None else behind
    if "ts_raw" not in out.columns:
        out = out.with_columns(ts_raw=pl.lit(None, pl.String))
    by_year = [parse_ts(f, ctx) for f in fmt.ts_formats if f.complete == "year"]
    dated = dated_layouts(out, [f for f in fmt.ts_formats if f.complete != "year"], ctx)
    if by_year:
        state = ctx.state.setdefault(("years", fmt.name, ctx.source), {})
        out = roll_years(out.with_columns(ts_year=pl.coalesce(by_year)), state)
    else:
        out = out.with_columns(ts_year=pl.lit(None, pl.Datetime("us")))
    out = out.with_columns(ts=pl.coalesce(*dated, "ts_year", "wrap_ts")).drop("ts_raw", "ts_year")
    if any(k.logged for k in fmt.kinds):  # what the `logged` kinds take (loganalyze/formats/spec.py)
        level = pl.col("level").is_not_null() if "level" in out.columns else pl.lit(False)
        out = out.with_columns(logged=pl.col("ts").is_not_null() | level)
    return out
