"""Records a terminal wrapped onto several lines are read whole (loganalyze/formats/wraps.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import loganalyze as la
from loganalyze.formats import nccl
from loganalyze.formats.wraps import rejoin, remainders
from loganalyze.wrappers import unwrap

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
WATCHDOG = REAL / "nccl" / "97_torch-watchdog-broadcast-seqnum-4-terminal-wrapped-lines.log"
TRACEBACK = REAL / "vllm" / "96_v1-xpu-enginecore-terminal-wrapped-to-serve-one-request-kv-4.26-gt-4.25.log"


def frame(lines: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line_no": range(1, len(lines) + 1), "text": lines}).with_columns(raw=pl.col("text"))


def test_watchdog_timeouts_cut_at_one_width_are_read_whole(tmp_path):
    src = la.ingest([WATCHDOG], run="w", store=tmp_path).sources[0]
    assert src.lines_by_table == {"events": 10}
    events = la.open_run("w", tmp_path).table("events").collect()
    assert events["line_no"].to_list() == [1, 3, 5, 7, 9]
    assert all("NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 18000" in m for m in events["message"])


def test_a_traceback_cut_mid_name_keeps_its_frames_and_its_error(tmp_path):
    src = la.ingest([TRACEBACK], run="t", store=tmp_path).sources[0]
    assert src.lines_by_table == {"events": 17, "unparsed": 1}  # the unparsed one: the opening ``` fence
    events = la.open_run("t", tmp_path).table("events").collect()
    assert "in _initialize_kv_caches\n" in events.filter(pl.col("kind") == "traceback")["message"][0]
    assert events.filter(pl.col("kind") == "kv_cache_insufficient")["line_no"].to_list() == [18]


def test_the_remainder_goes_back_on_its_line_and_the_row_counts_both():
    lines = WATCHDOG.read_text().splitlines()[:4]
    f = frame(lines)
    rests = remainders(f, nccl.FORMAT, pl.Series([True] * 4))
    assert rests.rows() == [(2, 1), (4, 3)]
    joined = rejoin(f, rests)
    assert joined["line_no"].to_list() == [1, 3] and joined["wrapped"].to_list() == [1, 1]
    assert joined["text"][1] == lines[2] + lines[3]


def test_lines_that_start_like_lines_or_share_no_width_stay_apart():
    long = "x" * 120
    cases = [
        [long, "```", long, "```"],  # markup after long lines
        [long, "an odd line"],  # one long line above one odd line: no window
        [long, "rest a", "y" * 90, "rest b"],  # the lines above differ by 30 columns
        [long, "[rank1]: a record", long, "  indented frame"],
    ]
    for lines in cases:
        assert remainders(frame(lines), nccl.FORMAT, pl.Series([True] * len(lines))).height == 0, lines


def test_claimed_lines_are_never_remainders():
    lines = WATCHDOG.read_text().splitlines()[:4]
    assert remainders(frame(lines), nccl.FORMAT, pl.Series([True, False, True, False])).height == 0


def test_two_windows_and_a_cut_at_a_space_are_read_whole(tmp_path):
    """vllm/137 (hold-out 5): Ray worker lines cut at 129 columns, the API server's at 136, and
    some cuts fall on the space between two words (` because this process group ...`)."""
    path = next((REAL / "vllm").glob("137_*.log"))
    src = la.ingest([path], run="v", store=tmp_path).sources[0]
    assert "unparsed" not in src.lines_by_table and src.blank == 4  # a Ray tag with nothing after it: blank
    events = la.open_run("v", tmp_path).table("events").collect()
    assert events.filter(pl.col("kind") == "weights_read")["message"].to_list() == [
        "Loading weights took 194.64 seconds", "Loading weights took 194.90 seconds"]
    assert events.filter(pl.col("kind") == "custom_allreduce_disabled")["line_no"].to_list() == [3]


def test_an_indented_wrapper_loses_its_indentation_only_before_a_collectors_prefix():
    """nccl/281 of hold-out 15: MPI-tagged nccl-tests rows pasted eight spaces deep; a
    traceback's indented frame keeps its indentation."""
    lines = ["        [1,0]<stdout>:        2048            32     float    none      -1   106.88    0.02",
             "   2026-01-05T10:00:01Z INFO x", '  File "/x/y.py", line 3, in <module>', "    TTFT   | 12"]
    got = unwrap(frame(lines), 2026)["text"].to_list()
    assert got == ["        2048            32     float    none      -1   106.88    0.02", "INFO x", *lines[2:]]
