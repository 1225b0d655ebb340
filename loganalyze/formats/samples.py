"""Testing a format against its own sample lines (`loganalyze formats --test`).

Each sample is parsed with the whole format, as ingest would parse it: it must be claimed
by its own kind and yield its fields (exactly those a `Sample` declares). The built-ins'
samples are checked the same way in tests/test_line_kind_samples.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

import polars as pl

from loganalyze.formats.definition import groups, type_name, written_columns
from loganalyze.formats.parse import parse
from loganalyze.formats.registry import active
from loganalyze.formats.spec import Context, LineKind, LogFormat, expected
from loganalyze.formats.tables import COMMON
from loganalyze.wrappers import unwrap


@dataclass
class SampleResult:
    """What one sample line became: the kind that took it and the fields it yielded."""

    kind: str
    sample: str
    claimed_by: str | None
    fields: dict[str, Any]
    problem: str | None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "sample": self.sample, "claimed_by": self.claimed_by, "fields": self.fields,
                "problem": self.problem}


def sample_frame(lines: list[str]) -> pl.DataFrame:
    """Lines as ingest hands them to the engine: numbered, collector wrappers (kubectl,
    `(EngineCore pid=1)`, ...) removed, so that samples are lines as the log has them."""
    frame = pl.DataFrame({"line_no": range(1, len(lines) + 1), "raw": lines},
                         schema={"line_no": pl.Int64, "raw": pl.String})
    return unwrap(frame.with_columns(text=pl.col("raw")), date.today().year)


# Columns that are not fields of a line: the whole message, the pairs no key names, the line count.
NOT_FIELDS = ("message", "extra", "span")


def _fields(kind: LineKind, rows: list[dict]) -> dict[str, Any]:
    """The non-null fields a line gave, as its table stores them, packed ones unpacked. A
    settings line gives one `config` row per setting: its fields are {key: value}; of another
    line with several rows (an NCCL topology line, one per path), the first row's."""
    if kind.table == "config" and kind.handler is not None:
        return {r["key"]: r["value"] for r in rows if r.get("key") is not None and r.get("value") is not None}
    row = rows[0]
    if kind.handler is not None or kind.carry is not None:  # working columns may be left: only stored ones count
        stored = active().tables.get(kind.table, {})
        names = [c for c in row if c in stored and c not in COMMON]
    else:
        names = list(written_columns(kind))
    out = {c: row[c] for c in sorted(names) if c not in kind.const and c not in NOT_FIELDS and row.get(c) is not None}
    pack = kind.pack or ("fields" if kind.table == "events" else None)  # where events keep a line's own fields
    if pack and isinstance(out.get(pack), str):
        packed = json.loads(out.pop(pack))
        out = dict(sorted({**out, **{k: v for k, v in packed.items() if v is not None}}.items()))
    return out


def _owners(fmt: LogFormat, lines: list[str]) -> dict[int, list[dict]]:
    """For each claimed line, the output rows it belongs to: its own, or for a continuation
    line those of the last line above that has rows (the engine gives continuations to the
    line above). A line has several rows when it holds several settings."""
    ctx = Context(source="samples", year=date.today().year, base_date=date.today().isoformat())
    got = parse(fmt, sample_frame(lines), ctx)
    starts: dict[int, list[dict]] = {}
    for df in got.tables.values():
        for row in df.iter_rows(named=True):
            starts.setdefault(row["line_no"], []).append(row)
    owners, owner = {}, None
    for line_no in range(1, len(lines) + 1):
        owner = starts.get(line_no, owner)
        if line_no in starts or (owner is not None and line_no in got.claimed_lines):
            owners[line_no] = owner
    return owners


def _as_text(fmt: LogFormat, kind: LineKind) -> LogFormat:
    """The format with `kind`'s fields left as text: a field that is null typed but not as text
    did not fit its type (strict=False casts turn a mismatch into a silent null)."""
    text_kind = replace(kind, types={}, keys=tuple(replace(k, dtype=pl.String, percent=False) for k in kind.keys))
    return replace(fmt, kinds=tuple(text_kind if k is kind else k for k in fmt.kinds))


def _dtype_of(kind: LineKind, column: str) -> pl.DataType:
    return kind.types.get(column) or next((k.dtype for k in kind.keys if k.column == column), pl.String)


def _verdict(kind: LineKind, sample: str, rows: list[dict] | None, text_rows: list[dict] | None,
             continues: bool) -> SampleResult:
    claimed_by = rows[0].get("kind") if rows else None
    if rows is None:
        return SampleResult(kind.name, sample, None, {}, "no kind claims it (the needle, match or pattern does not match)")
    if claimed_by != kind.name:
        return SampleResult(kind.name, sample, claimed_by, {},
                           f"claimed by kind {claimed_by} (listed earlier, or its needle is too broad)")
    expect = expected(sample)
    if continues:  # the rest of a block the sample above starts: judged with it
        problem = "continues the sample above, so its expected fields are never its own" if expect else None
        return SampleResult(kind.name, sample, claimed_by, {}, problem)
    got = _fields(kind, rows)
    as_text = _fields(kind, text_rows) if text_rows else {}
    problem = None
    if expect is not None:  # the sample says which fields are null on purpose (nccl-tests' `N/A`)
        problem = _unexpected(got, expect)
    elif lost := sorted(set(as_text) - set(got)):
        problem = f"field {lost[0]}: {as_text[lost[0]]!r} is not a valid {type_name(_dtype_of(kind, lost[0]))}"
    elif (groups(kind.pattern) or kind.keys or kind.handler) and not got:
        problem = "claimed, but every field is null"
    return SampleResult(kind.name, sample, claimed_by, got, problem)


def _unexpected(got: Mapping[str, Any], expect: Mapping[str, object]) -> str | None:
    """How the fields a sample gave differ from those it declares, first difference only."""
    for column in sorted(set(got) | set(expect)):
        if column not in expect:
            return f"field {column}: got {got[column]!r}, which the sample does not expect"
        if column not in got:
            return f"field {column}: expected {expect[column]!r}, got null"
        if got[column] != expect[column]:
            return f"field {column}: expected {expect[column]!r}, got {got[column]!r}"
    return None


def run_kind_samples(fmt: LogFormat, kind: LineKind) -> list[SampleResult]:
    """Parse a kind's samples together, as one small log, with the whole format.

    Each sample must be claimed by `kind` (a sample may also continue the one above, as
    the lines of a banner do) and every field it captures must fit its type. A `Sample`
    must give exactly the fields it declares; of a plain line, a kind that extracts fields
    must yield one. A sample may hold several lines joined by newlines.
    """
    if not kind.samples:
        return [SampleResult(kind.name, "", None, {}, "no samples: add a real line under samples")]
    lines, first_lines = [], []
    for sample in kind.samples:
        first_lines.append(len(lines) + 1)
        lines += sample.split("\n")
    typed = _owners(fmt, lines)
    # Handlers and carried counters need the typed fields: only plain extraction is re-run as text.
    as_text = {} if kind.handler or kind.carry else _owners(_as_text(fmt, kind), lines)
    out = []
    for sample, first in zip(kind.samples, first_lines):
        rows = typed.get(first)
        continues = rows is not None and rows[0]["line_no"] != first
        out.append(_verdict(kind, sample, rows, as_text.get(first), continues))
    return out


def run_samples(fmt: LogFormat) -> list[SampleResult]:
    """Every sample of every kind; a kind with no sample is a problem too (nothing tests it)."""
    return [result for kind in fmt.kinds for result in run_kind_samples(fmt, kind)]
