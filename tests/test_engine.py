"""The declarative engine: keys found by key, multi-line events, rewrites, unknown keys kept."""

from __future__ import annotations

import polars as pl

from loganalyze.formats import sglang
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context

CTX = Context(source="t", year=2026, base_date="2026-01-01")


def run(lines: list[str]):
    frame = pl.DataFrame({"line_no": range(1, len(lines) + 1), "text": lines}).with_columns(
        raw=pl.col("text"), wrap_ts=pl.lit(None, pl.Datetime("us")), process=pl.lit(None, pl.String))
    return parse(sglang.FORMAT, frame, CTX)


def test_fields_are_found_by_key_whatever_their_order():
    a = run(["Decode batch, #running-req: 48, #token: 100, token usage: 0.10, gen throughput (token/s): 9.50, "
             "#queue-req: 80"]).tables["stats"]
    b = run(["Decode batch, #queue-req: 80, gen throughput (token/s): 9.50, token usage: 0.10, #token: 100, "
             "#running-req: 48, brand new key: 7"]).tables["stats"]
    cols = ["running", "queued", "tokens", "token_usage", "gen_throughput"]
    assert a.select(cols).row(0) == b.select(cols).row(0) == (48, 80, 100, 0.10, 9.5)
    assert b["extra"][0].to_list() == [{"key": "brand new key", "value": "7"}]


def test_hybrid_swa_token_fields_are_rewritten_to_keys():
    got = run(["Decode batch. #running-req: 2, #token: full=100, swa=20, token usage: full=0.50, swa=0.10, "
               "gen throughput (token/s): 1.00, #queue-req: 0"]).tables["stats"]
    assert got.select("tokens", "token_usage", "swa_token_usage").row(0) == (100, 0.5, 0.1)


def test_traceback_is_one_event_with_its_error():
    lines = ["[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/x/scheduler.py", line 1, in run', "    foo()",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
             "[2026-01-01 00:00:01] INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK"]
    got = run(lines)
    assert got.lines == {"events": 4, "requests": 1}
    ev = got.tables["events"].row(0, named=True)
    assert ev["kind"] == "exception" and ev["span"] == 4 and "CUDA out of memory" in ev["message"]


def test_a_mangled_stats_line_is_not_claimed():
    got = run(["Decode batch, nothing useful here"])
    assert got.lines == {} and not got.claimed.any()


def test_time_only_prefix_takes_the_base_date():
    got = run(["[03:51:54] Decode batch, #running-req: 6, gen throughput (token/s): 24.33"]).tables["stats"]
    assert got["ts"][0].isoformat() == "2026-01-01T03:51:54"


def test_oom_inside_a_traceback_is_found_by_the_oom_check(tmp_path):
    import loganalyze as la
    from loganalyze.diagnosis import diagnose

    path = tmp_path / "crash.log"
    path.write_text("[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                    '  File "/x/scheduler.py", line 1, in run\n'
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    la.ingest([path], run="r", store=tmp_path / "s")
    found = diagnose(la.open_run("r", tmp_path / "s"))
    assert [f.id for f in found] == ["oom"] and found[0].severity == "critical"


def test_every_embeddable_format_can_skip_a_batch_without_its_lines():
    """An embeddable format runs over every batch of every file: its sift (needles, and the
    orphan patterns of kinds that adopt orphans) must exist, or each batch pays a full parse."""
    from loganalyze import formats
    from loganalyze.formats.classify import sift_pattern
    for fmt in formats.FORMATS.values():
        if getattr(fmt, "embeddable", False):
            assert sift_pattern(fmt) is not None, fmt.name
