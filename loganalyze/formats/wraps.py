"""Records that a terminal wrapped onto several lines.

A log copied from a terminal window (and pasted into a ticket from there) has every record
longer than the window cut at the same width: `... WorkNCCL(SeqNum=4, OpTy` and, on the next
line, `pe=BROADCAST, NumelIn=112, ...`. The remainder has no prefix of its own, so alone it
is unparsed, and the record it was cut from no longer matches its kind (or, in a traceback,
the remainder breaks the run of frames). A remainder is found by the width: the lines it
follows are all about as long (one window), and the remainder itself starts mid-token, with
no prefix, wrapper, bracket, digit, space or markup. ingest parses such a batch again with
each remainder put back on its record's line; the record then spans both lines.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.prefix import prefix_groups
from loganalyze.formats.spec import LogFormat

MIN_WIDTH = 79  # an 80-column window, less a trailing space the paste dropped
SLACK = 1  # lines cut at one width differ by a stripped space or a wide character
# How a line that is not a remainder starts: a record, a wrapper, a frame, markup. One space
# before a word is the exception: a window cut at the space between two words (vllm/137:
# `... Custom allreduce is disabled` / ` because this process group spans across nodes.`);
# an indented frame or table row starts with more.
STARTS_LIKE_A_LINE = r"^(?:\s|[\[(<{>#|*`~\d=+-])"
CUT_AT_A_SPACE = r"^ \S"


def remainders(frame: pl.DataFrame, primary: LogFormat, unclaimed: pl.Series) -> pl.DataFrame:
    """The unclaimed lines of `frame` that are the rest of the line above, cut by a terminal:
    columns `line_no` and `head` (the line the record starts on)."""
    text = frame["text"]
    above = text.str.len_chars().cast(pl.Int64).shift(1)
    follows = frame["line_no"].diff() == 1
    line_start = text.str.contains(STARTS_LIKE_A_LINE) & ~text.str.contains(CUT_AT_A_SPACE)
    maybe = (unclaimed & follows & (above >= MIN_WIDTH) & (text.str.len_chars() > 0) & ~line_start).fill_null(False)
    if "process" in frame.columns:
        maybe = maybe & frame["process"].is_null()
    if not maybe.any():
        return pl.DataFrame(schema={"line_no": pl.Int64, "head": pl.Int64})
    at = maybe.arg_true()
    groups = prefix_groups(primary.prefix, text.gather(at))
    named = [f for f in groups.struct.fields if f != "msg"]
    if named:
        bare = pl.select(pl.all_horizontal(groups.struct.field(n).is_null() for n in named)).to_series()
        maybe = maybe.scatter(at.filter(~bare), False)
    cuts = _windows(above.filter(maybe))
    if not cuts:
        return pl.DataFrame(schema={"line_no": pl.Int64, "head": pl.Int64})
    rest = maybe & pl.select(pl.any_horizontal((above - cut).abs() <= SLACK for cut in cuts)).to_series()
    return (frame.select("line_no", rest=rest)
            .with_columns(head=pl.when(~pl.col("rest")).then(pl.col("line_no")).forward_fill())
            .filter(pl.col("rest")).drop("rest"))


def _windows(lengths: pl.Series) -> list[int]:
    """The widths the terminal cut at: each length (give or take SLACK) that at least two of
    the lines above remainders share; one long line above one odd line is no evidence of a
    window. Usually one; two where streams were cut at their own widths before they were
    merged (vllm/137: a Ray worker's lines at 129 columns, the API server's at 136)."""
    counts = lengths.cast(pl.Int64).rename("width").value_counts(name="n")
    near = [counts.with_columns(pl.col("width") + d) for d in range(-SLACK, SLACK + 1)]
    around = (pl.concat(near).group_by("width").agg(pl.col("n").sum())
              .join(counts.select("width"), on="width").filter(pl.col("n") >= 2).sort("width"))
    return around["width"].to_list()


def rejoin(frame: pl.DataFrame, rests: pl.DataFrame) -> pl.DataFrame:
    """`frame` with each remainder's text put back at the end of its head's, the remainder
    lines left out, and `wrapped`: how many lines each row stands for beyond its first."""
    tails = (frame.join(rests, on="line_no").group_by("head", maintain_order=True)
             .agg(tail=pl.col("text").str.join(""), raw_tail=pl.col("raw").str.join(""), wrapped=pl.len()))
    # A line cut into several records (loganalyze/formats/glued.py) is continued by its last.
    last = pl.col("line_no").is_last_distinct()
    joined = frame.with_columns(__head=pl.when(last).then(pl.col("line_no"))).join(
        tails, left_on="__head", right_on="head", how="left").drop("__head")
    return (joined.filter(~pl.col("line_no").is_in(rests["line_no"].implode()))
            .with_columns(text=pl.col("text") + pl.col("tail").fill_null(""),
                          raw=pl.col("raw") + pl.col("raw_tail").fill_null(""),
                          wrapped=pl.col("wrapped").fill_null(0))
            .drop("tail", "raw_tail"))
