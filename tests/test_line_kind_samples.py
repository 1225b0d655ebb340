"""Every line kind's `samples` parse to that kind, in every format (the samples double as tests).

A kind's samples are fed together as one small log: a multi-line sample (a banner, a
traceback) then stays one event, and independent lines stay separate rows. Every line
must be claimed, and every row produced must carry the kind's name. Every built-in format
also passes `loganalyze formats --test` (loganalyze.formats.samples.run_samples): fields that fit their
types, and the values its `Sample`s expect.
"""

from __future__ import annotations

import polars as pl
import pytest

from loganalyze import formats
from loganalyze.wrappers import unwrap
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context, LogFormat, expected
from loganalyze.formats.samples import run_samples

LINE_FORMATS = [pytest.param(fmt, id=fmt.name) for fmt in formats.FORMATS.values() if isinstance(fmt, LogFormat)]
KINDS = [
    pytest.param(fmt, kind, id=f"{fmt.name}-{kind.name}")
    for fmt in formats.FORMATS.values() if isinstance(fmt, LogFormat)
    for kind in fmt.kinds
]


def frame_of(samples: tuple[str, ...]) -> pl.DataFrame:
    """The frame ingest hands a parser: numbered, unwrapped lines with the raw text kept."""
    lines = [line for sample in samples for line in sample.split("\n")]
    raw = pl.DataFrame({"line_no": range(1, len(lines) + 1), "raw": list(lines)},
                       schema={"line_no": pl.Int64, "raw": pl.String})
    return unwrap(raw.with_columns(text=pl.col("raw")), 2026)


@pytest.mark.parametrize("fmt, kind", KINDS)
def test_kind_samples_are_claimed_by_the_kind(fmt, kind):
    assert kind.samples, f"{fmt.name}.{kind.name} has no sample lines"
    got = parse(fmt, frame_of(kind.samples), Context(source="samples", year=2026, base_date="2026-01-01"))
    lines = [line for sample in kind.samples for line in sample.split("\n")]
    assert got.claimed.all(), [s for s, c in zip(lines, got.claimed) if not c]
    assert sum(got.lines.values()) == len(lines)
    kinds = {k for table in got.tables.values() for k in table["kind"].unique().to_list()}
    assert kinds == {kind.name}


@pytest.mark.parametrize("fmt", LINE_FORMATS)
def test_every_builtin_format_passes_its_own_check(fmt):
    results = run_samples(fmt)
    assert [(r.kind, r.problem, r.sample[:80]) for r in results if r.problem] == []
    asserted = [r for r in results if expected(r.sample)]
    assert len(asserted) >= 3, f"{fmt.name}: give a few samples (stats lines first) the values they must parse to"
