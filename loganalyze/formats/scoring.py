"""How well a format recognises sample lines, for detection: the share that carry its
detection marks, the share its own kinds take, and the version its hints name."""

from __future__ import annotations

import polars as pl

from loganalyze.formats import common, leader
from loganalyze.formats.classify import classify_rows, kind_needles
from loganalyze.formats.prefix import split_prefix
from loganalyze.formats.spec import Context, LogFormat

MIN_NEEDLE = 6  # characters a needle needs to tell a format from another (kind_share)


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
    vague = [k.name for k in fmt.kinds if k.fallback or min(map(len, kind_needles(k))) < MIN_NEEDLE]
    own = kinds.is_not_null() & ~kinds.is_in(common_kinds + vague).fill_null(False)
    shared = kinds.is_in(common_kinds).fill_null(False) | framed["msg"].str.contains(common.FRAME)
    return float(own.mean()), float(shared.mean())


def guess_version(fmt: LogFormat, lines: pl.Series) -> str | None:
    """The first version hint whose pattern occurs in the sample lines."""
    for pattern, label in fmt.versions:
        if lines.str.contains(pattern).any():
            return label
    return None
