"""Several records on one line: the newlines between them were lost.

A log pasted into a ticket from a viewer that joined its lines, or a collector that passed
a worker's output on without its newlines (vllm/44: five V0 stats records of a Ray actor,
each behind its own `(_AsyncLLMEngine pid=1974) INFO 01-25 11:26:58 llm_engine.py:706] `,
on one line), holds one record after another. Alone, such a line gives at most its first
record (a kind's fields are found once per line). A format declares what starts one of its
records wherever it stands (`LogFormat.record_start`: its header, and the message starts
of its stats records for records glued without their header); a line that holds two or
more is cut before each start after the first into one row per record, a Ray or process
tag in front of a start going with it. The rows keep the line's number, and `glued` counts
the records before each on its line: the line is counted once, by its first record
(loganalyze/formats/parse.py), so the lines still add up; ingest reports the others per table
(`SourceResult.glued`).

Only lines where one of the format's `record_marks` (literals each start holds one of)
occurs twice are searched: the regex on every line of a big log would cost a third of a
parse. So a record without its header next to one with a header but no stats message,
where each mark occurs once, stays one line.

What stands before a line's first record start (a leader, a prefix cut short by the
paste) stays with that record, as it would on a line of its own, unless it is words that
start with no leader (loganalyze/formats/leader.py): then two writers shared one terminal, and a process's record
begins in the middle of another's output (Python's `Extension modules: ...` list, then
`[2025-04-17 11:44:15 TP3] Scheduler hit an exception`, fixtures/real/sglang/214). Such a
line is cut before that start too, the other writer's text a row of its own. Only lines
that hold a mark and do not start with a record are searched for one.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from loganalyze.formats import leader
from loganalyze.formats.spec import LogFormat

CUT = "\x1e"  # marks the cuts; a line that already holds one is never cut
# A Ray or process tag in front of a record start goes with the record (loganalyze/wrappers.py).
TAG = r"(?:\([^()]*pid=\d+[^()]*\) )?"


class Starts(NamedTuple):
    """What starts a record of any of the formats of a file (`record_starts`)."""

    start: str  # a record start, header or bare message
    marks: tuple[str, ...]  # literals one of which each start holds (none: every line is searched)
    header: str | None  # a start that is a format's own header


def record_starts(formats: list[LogFormat]) -> Starts | None:
    """The record starts of `formats`, or None when no format declares one."""
    declared = [f for f in formats if f.record_start]
    if not declared:
        return None
    marks = () if any(not f.record_marks for f in declared) else tuple(m for f in declared for m in f.record_marks)
    headers = [f.record_header for f in declared if f.record_header]
    return Starts("|".join(f"(?:{f.record_start})" for f in declared), marks,
                  "|".join(f"(?:{h})" for h in headers) or None)


def _interleaved(text: pl.Series, header: str | None, some: pl.Series) -> pl.Series:
    """Which lines (of those `some` marks) hold a format's header after words that start
    with no leader: another writer's output, the record begun in the middle of it. Only lines that
    do not start with a header are searched."""
    at = (some & ~text.str.contains(f"^{TAG}(?:{header})")).arg_true() if header else pl.Series([], dtype=pl.UInt32)
    if not at.len():
        return pl.repeat(False, text.len(), eager=True)
    before = text.gather(at).str.extract(f"^(.*?){TAG}(?:{header})", 1).fill_null("")
    # Another writer's text has a word in it (spaces and rules, `  | ` of a pasted table, do
    # not) and starts with no leader: a collector's stamp and tags in front of a record
    # (torchserve's `2024-09-13T22:25:37,532 [WARN ] W-9000-model_1.0-stderr MODEL_LOG - `) wrap it.
    other = before.str.contains(r"\w") & (leader.split(before)["lead"].str.len_chars() == 0)
    found = other & ~text.gather(at).str.contains(CUT, literal=True)
    return pl.repeat(False, text.len(), eager=True).scatter(at, found)


def split(frame: pl.DataFrame, starts: Starts | None) -> pl.DataFrame:
    """`frame` with each line that holds several records cut into one row per record (`text`
    and `raw` cut at the same places, `line_no` kept), and `glued`: the records before the
    row's on its line (0 for every line that holds one). `starts` is `record_starts`'."""
    frame = frame.with_columns(glued=pl.lit(0, pl.UInt32))
    if starts is None or frame.height == 0:
        return frame
    start, marks, header = starts
    text = frame["text"]
    counts = [text.str.count_matches(m, literal=True) for m in marks]
    maybe = pl.select(pl.any_horizontal(c >= 2 for c in counts)).to_series() if marks \
        else pl.repeat(True, frame.height, eager=True)
    inner = _interleaved(text, header, pl.select(pl.any_horizontal(c >= 1 for c in counts)).to_series() if marks
                         else pl.repeat(True, frame.height, eager=True))
    if not maybe.any() and not inner.any():
        return frame
    at = maybe.arg_true()
    several = maybe.scatter(at, (text.gather(at).str.count_matches(start) >= 2)
                            & ~text.gather(at).str.contains(CUT, literal=True)) | inner
    if not several.any():
        return frame
    lines = frame.filter(several).with_columns(_inner=inner.filter(several)).with_row_index("_line")
    pieces = (lines.select("_line", "_inner",
                           text=pl.col("text").str.replace_all(f"{TAG}(?:{start})", CUT + "${0}").str.split(CUT))
              .explode("text").with_columns(_at=pl.int_range(pl.len()).over("_line")))
    # The text before the first start belongs to the first record (on an interleaved line,
    # to a record of its own); a start with nothing after it (a header behind a user's own
    # logging header) belongs to the next.
    alone = pl.col("text").str.replace(f"^{TAG}(?:{start})", "").str.strip_chars() == ""
    new = ((pl.col("_at") >= 2) | ((pl.col("_at") == 1) & pl.col("_inner"))) & ~alone.shift(1).over("_line")
    records = (pieces.with_columns(glued=new.cum_sum().over("_line").cast(pl.UInt32))
               .group_by("_line", "glued", maintain_order=True).agg(pl.col("text").str.join("")))
    rest = records.filter(pl.col("glued") > 0).group_by("_line").agg(_rest=pl.col("text").str.len_chars().sum())
    cut = (lines.drop("text", "glued", "_inner").join(records, on="_line").join(rest, on="_line", how="left")
           .with_columns(raw=pl.when(pl.col("glued") > 0).then("text")
                         .otherwise(pl.col("raw").str.slice(0, pl.col("raw").str.len_chars() - pl.col("_rest").fill_null(0))))
           # The space between two records separated them, as the lost newline did: the
           # record's text ends before it (its raw keeps it).
           .with_columns(text=pl.when(pl.col("glued") < pl.col("glued").max().over("_line"))
                         .then(pl.col("text").str.strip_chars_end()).otherwise("text")))
    return pl.concat([frame.filter(~several), cut.select(frame.columns)]).sort("line_no", "glued")
