"""Which kind each line is: the first kind whose needle, regex and levels its message passes
(the needles found in one pass by the compiled tokenizer), fallback kinds for what is left
once continuation lines have their owners, and the one regex of a format's needles that
tells a batch with none of its lines."""

from __future__ import annotations

import polars as pl
import regex

from loganalyze.formats import keys
from loganalyze.formats.spec import LineKind, LogFormat

CODE_LINE = r"^\s+raise\s"


def _needle_expr(kind: LineKind) -> pl.Expr:
    needles = (kind.needle,) if isinstance(kind.needle, str) else kind.needle
    hit = pl.lit(False)
    for n in needles:
        hit = hit | pl.col("msg").str.contains(n, literal=True)
    if kind.match:
        hit = hit & pl.col("msg").str.contains(kind.match)
    if kind.levels:
        hit = hit & pl.col("level").is_in(kind.levels)
    if kind.logged:
        hit = hit & pl.col("logged")
    return hit


def kind_needles(kind: LineKind) -> tuple[str, ...]:
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
    ids_of = keys.KindIds([kind_needles(k) for k in kinds], frame["msg"])
    ids = ids_of.first()
    # Quoted source inside a traceback (`    raise ValueError("No available memory ...")`)
    # is a frame of it, never an event of its own.
    found = (ids >= 0).arg_true()
    code = frame["msg"].gather(found).str.contains(CODE_LINE)
    if code.any():
        ids = ids.scatter(found.filter(code), -1)
    present = set(ids.unique().to_list())
    for at, k in enumerate(kinds):
        if at not in present or not (k.match or k.levels or k.logged):
            continue
        rows = (ids == at).arg_true()
        test = pl.lit(True)
        if k.match:
            test = test & pl.col("msg").str.contains(k.match)
        if k.levels:
            test = test & pl.col("level").is_in(k.levels)
        if k.logged:
            test = test & pl.col("logged")
        # A test that gives null (a line with no level, under a level filter) turns no line away.
        tested = frame.select("msg", *(["level"] if k.levels else []), *(["logged"] if k.logged else []))[rows]
        away = rows.filter(~tested.select(test.fill_null(True)).to_series())
        if away.len():
            again = ids_of.first(at + 1, away)
            ids = ids.scatter(away, again)
            present |= set(again.unique().to_list())
    names = pl.Series("kind", [k.name for k in kinds], dtype=pl.String)
    return names.gather(pl.select(pl.when(ids >= 0).then(ids)).to_series()).alias("kind")


def claim_leftovers(frame: pl.DataFrame, fmt: LogFormat) -> pl.DataFrame:
    """Fallback kinds (a catch-all for WARNING lines, say) take lines nothing else took."""
    for kind in fmt.kinds:
        if kind.fallback:
            if not frame.select((pl.col("kind").is_null() & pl.col("owner").is_null()).any()).item():
                continue
            free = pl.col("kind").is_null() & pl.col("owner").is_null() & _needle_expr(kind)
            frame = frame.with_columns(kind=pl.when(free).then(pl.lit(kind.name)).otherwise("kind"))
    return frame


_SIFTS: dict[int, tuple[tuple, str | None]] = {}


def sift_pattern(fmt: LogFormat) -> str | None:
    """One regex for all the needles of `fmt`, when a batch without any of them can yield
    nothing (no kind takes any line, and no state carries over). A kind that adopts orphan
    lines adds its orphan pattern with its `^` anchors dropped: a line behind a leader may
    head an orphan run too, and a sift may only ever match more, never less."""
    known = _SIFTS.get(id(fmt.kinds))  # by kinds: a gated format is parsed as a copy without its gate
    if known and known[0] is fmt.kinds:
        return known[1]
    needles = [n for k in fmt.kinds for n in kind_needles(k)]
    sift = "|".join([regex.escape(n) for n in dict.fromkeys(needles)]
                    + [regex.sub(r"(^|\|)\^", r"\1", k.orphan) for k in fmt.kinds if k.orphan])
    if not needles or not all(needles) or any(k.carry for k in fmt.kinds):
        sift = None
    elif any(f.complete == "year" for f in fmt.ts_formats):
        sift = None
    _SIFTS[id(fmt.kinds)] = (fmt.kinds, sift)
    return sift
