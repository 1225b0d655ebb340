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


def samples_frame(samples: Sequence[pl.Series]) -> pl.DataFrame:
    """Several files' sample lines as one frame, `sample` the index of each line's file:
    detection scores the first lines of many small files in one pass."""
    if not samples:
        return pl.DataFrame({"text": pl.Series([], dtype=pl.String), "sample": pl.Series([], dtype=pl.UInt32)})
    lines = pl.concat([s.rename("text").cast(pl.String) for s in samples])
    index = pl.concat([pl.repeat(i, s.len(), dtype=pl.UInt32, eager=True) for i, s in enumerate(samples)])
    return pl.DataFrame({"text": lines, "sample": index})


def per_sample(frame: pl.DataFrame, aggs: list[pl.Expr], samples: int) -> list[dict]:
    """`aggs` over each sample's lines of `samples_frame`; an empty sample gets no row, so {}."""
    if not aggs or not frame.height:
        return [{} for _ in range(samples)]
    rows = {row.pop("sample"): row for row in frame.group_by("sample").agg(aggs).iter_rows(named=True)}
    return [rows.get(i, {}) for i in range(samples)]


def scores(fmts: Sequence[LogFormat], samples: Sequence[pl.Series]) -> list[list[float]]:
    """For each sample, each format's fraction of its lines that carry one of the format's
    detection marks, as they are or behind a leader the format does not know
    (loganalyze/formats/leader.py).

    All formats and samples in one polars pass: the lines are peeled once per kind of leader
    (with or without `# `), not once per format, and a format's marks are one regex (`_marks`).
    Detection runs once per file, and on a small file it was most of the ingest's CPU:
    polars keeps only 32 compiled patterns per thread, so each of the 70-odd marks and the
    1,400-character leader regex (12 ms) was compiled again for every file, and each of the
    ten polars calls had its fixed cost per file (docs/speed.md)."""
    frame = samples_frame(samples)
    both = leader.peel_both(frame["text"]) if frame.height and any(f.detect for f in fmts) else {}
    for comments in sorted({not f.hash_lines for f in fmts if f.detect} & both.keys()):
        # null where peeling left the line as it was (most lines): the marks are looked for there once
        peeled = both[comments]
        frame = frame.with_columns(pl.when(peeled != frame["text"]).then(peeled).alias(f"peeled_{comments}"))
    hits = [functools.reduce(or_, [pl.col(text).str.contains(mark).fill_null(False)
                                   for text in ("text", f"peeled_{not f.hash_lines}")
                                   for mark in _marks(tuple(f.detect))]).mean().alias(str(i))
            for i, f in enumerate(fmts) if f.detect]
    found = per_sample(frame, hits, len(samples))
    return [[float(one.get(str(i)) or 0.0) for i in range(len(fmts))] for one in found]


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


def guess_versions(fmt: LogFormat, samples: Sequence[pl.Series]) -> list[str | None]:
    """For each sample, the first version hint whose pattern occurs in its lines (all looked
    for in one pass over all the samples)."""
    if not fmt.versions:
        return [None] * len(samples)
    found = per_sample(samples_frame(samples), [pl.col("text").str.contains(pattern).any().alias(str(i))
                                                for i, (pattern, _) in enumerate(fmt.versions)], len(samples))
    return [next((label for i, (_, label) in enumerate(fmt.versions) if one.get(str(i))), None) for one in found]
