"""How well a format recognises sample lines, for detection: the share that carry its
detection marks, the share its own kinds take, and the version its hints name."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from operator import or_

import polars as pl

from loganalyze.formats import common, leader
from loganalyze.formats.classify import classify_rows, kind_needles
from loganalyze.formats.prefix import split_prefix
from loganalyze.formats.spec import Context, LogFormat

MIN_NEEDLE = 6  # characters a needle needs to tell a format from another (kind_share)


def scores(fmts: Sequence[LogFormat], lines: pl.Series) -> list[float]:
    """Each format's fraction of sample lines that carry one of its detection marks, as they
    are or behind a leader the format does not know (loganalyze/formats/leader.py).

    All formats in one polars pass: the lines are peeled once per kind of leader (with or
    without `# `), not once per format, and a format's marks are one regex (`_marks`).
    Detection runs once per file, and on a small file it was most of the ingest's CPU:
    polars keeps only 32 compiled patterns per thread, so each of the 70-odd marks and the
    1,400-character leader regex (12 ms) was compiled again for every file (docs/speed.md)."""
    if lines.len() == 0:
        return [0.0] * len(fmts)
    texts = {"text": lines}
    for comments in sorted({not f.hash_lines for f in fmts if f.detect}):
        texts[f"peeled_{comments}"] = leader.peel(lines, comments=comments)
    hits = [functools.reduce(or_, [pl.col(text).str.contains(mark) for text in ("text", f"peeled_{not f.hash_lines}")
                                   for mark in _marks(tuple(f.detect))]).mean().alias(str(i))
            for i, f in enumerate(fmts) if f.detect]
    found = pl.DataFrame(texts).select(hits).row(0, named=True) if hits else {}
    return [float(found.get(str(i)) or 0.0) for i in range(len(fmts))]


@functools.lru_cache(maxsize=256)
def _marks(detect: tuple[str, ...]) -> tuple[str, ...]:
    """A format's detection marks as one regex where they make one (a line matches
    `(?:a)|(?:b)` exactly when it matches a or b), else as they are: marks of a format file
    that name the same group cannot be joined."""
    if len(detect) < 2:
        return detect
    joined = "|".join(f"(?:{m})" for m in detect)
    try:
        pl.Series([""]).str.contains(joined)
    except pl.exceptions.PolarsError:
        return detect
    return (joined,)


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
    vague = [k.name for k in fmt.kinds if k.fallback or min(map(len, kind_needles(k))) < MIN_NEEDLE]
    own = kinds.is_not_null() & ~kinds.is_in(common_kinds + vague).fill_null(False)
    shared = kinds.is_in(common_kinds).fill_null(False) | framed["msg"].str.contains(common.FRAME)
    return float(own.mean()), float(shared.mean())


def guess_version(fmt: LogFormat, lines: pl.Series) -> str | None:
    """The first version hint whose pattern occurs in the sample lines (all looked for in one pass)."""
    if not fmt.versions:
        return None
    found = lines.to_frame("text").select(pl.col("text").str.contains(pattern).any().alias(str(i))
                                          for i, (pattern, _) in enumerate(fmt.versions)).row(0)
    return next((label for (_, label), hit in zip(fmt.versions, found) if hit), None)
