"""Benchmark clients' own logs (loganalyze/formats/client_log.py): AIPerf's console and aiperf.log,
GuideLLM's and GenAI-Perf's console, told from server logs by content and read as client events,
on the files those clients wrote (fixtures/engines/vllm-0.32) and real pastes (fixtures/real/bench)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import sample
from loganalyze import formats
from loganalyze.diagnosis import diagnose

ENGINES = Path(__file__).resolve().parent.parent / "fixtures" / "engines" / "vllm-0.32"


def _format(result) -> str:
    (source,) = result.sources
    return source.format


@pytest.mark.parametrize("path", [
    ENGINES / "aiperf" / "aiperf.txt",  # the console: `13:33:01.213 INFO     ... (file.py:81)`
    ENGINES / "aiperf-failing" / "artifacts" / "logs" / "aiperf.log",  # `... - system_controller - INFO - ...`
    ENGINES / "guidellm" / "guidellm.txt",  # loguru lines of `guidellm.` modules around its tables
])
def test_client_files_are_client_logs_not_server_logs(path, ingest_one):
    result, run = ingest_one(path)
    assert _format(result) == "client-log"
    events = run.table("events").collect()
    assert set(events["kind"]) <= {"client_log", "client_step", "client_panel", "client_usage", "client_warnings", "client_exports",
                                  "traceback"}
    assert diagnose(run) == []


def test_aiperf_console_lines_behind_its_progress_bars(ingest_one):
    """AIPerf redraws `Profiling: 36/150 |██▍ |  24% [00:07<00:23]` with a carriage return: the
    warning logged after it is on the same line, and is read with its level and clock."""
    result, run = ingest_one(ENGINES / "aiperf" / "aiperf.txt")
    events = run.table("events").collect()
    behind = events.filter(pl.col("raw").str.contains("Profiling: 36/150", literal=True))
    assert behind["message"].to_list()[0].startswith("Event loop for timing_manager is taking too long")
    assert behind["severity"].to_list()[0] == "warning"
    assert events.filter(pl.col("message") == "All credits completed")["severity"].to_list() == ["info"]  # NOTICE
    (source,) = result.sources
    assert source.lines_by_table["bench"] == 63  # its four result tables (lines 305-367), read by the bench format first
    panels = events.filter(pl.col("kind") == "client_panel")["line_no"].to_list()
    assert panels == [374, 382, 398]  # its notices after the tables are panels, not more of the tables
    assert source.unparsed <= 20


def test_aiperf_console_trailer_and_wrapped_command_are_typed(ingest_one):
    """After its tables AIPerf's console prints its command, wrapped at the terminal's width, the
    run's duration and its export paths (a long one wrapped onto the next line): all typed."""
    _, run = ingest_one(ENGINES / "aiperf" / "aiperf.txt")
    config = run.table("config").collect()
    bench = dict(zip(config["key"], config["value"]))
    assert bench["bench.endpoint_type"] == "chat"  # the value starts the second line
    assert (bench["bench.concurrency"], bench["bench.request_count"], bench["bench.tool"]) == ("8", "150", "aiperf")
    assert bench["bench.ui_type"] == "simple"  # a flag of the last line
    events = run.table("events").filter(pl.col("kind") == "client_exports").sort("line_no").collect()
    fields = [json.loads(f) for f in events["fields"]]
    assert fields[0]["duration_s"] == 43.43
    assert fields[3]["export"] == "Server Metrics CSV Export"
    assert fields[3]["path"].endswith("/artifacts/server_metrics_export.csv")  # from the line below it
    assert events.height == 6 and set(events["severity"]) == {"info"}


def test_aiperf_log_file_keeps_logger_as_process(ingest_one):
    """bench/90 (aiperf#578, AIPerf 0.4): no milliseconds, loggers by service and instance id."""
    _, run = ingest_one(sample("bench", "90_"))
    events = run.table("events").sort("line_no").collect()
    assert events.height == 7
    assert events["process"].to_list()[:2] == ["SyntheticDatasetComposer", "dataset_manager_ce93faa4"]
    assert str(events["ts"][0]) == "2026-01-16 10:49:41"


def test_genai_perf_usage_error_is_a_client_that_sent_nothing(ingest_one):
    """bench/91: genai-perf without `profile` prints its usage and exits: a bench-failures
    warning that names the error, and the usage line is no command line of a benchmark."""
    _, run = ingest_one(sample("bench", "91_"))
    (found,) = diagnose(run)
    assert (found.id, found.severity, found.metrics["problem"]) == ("bench-failures", "warning", "usage-error")
    assert "invalid choice: 'my_model'" in found.verdict
    assert run.table("config").filter(pl.col("key") == "bench.concurrency_range").collect()["value"].to_list() == ["64"]


def test_a_vllm_log_behind_a_users_logging_format_stays_vllm():
    """The shape AIPerf's log shares with a user-configured vLLM log decides nothing: the
    logger names do."""
    lines = pl.Series([
        "2026-01-05 10:00:01 - vllm.engine.metrics - INFO - Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 12.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.1%, "
        "CPU KV cache usage: 0.0%.",
        "2026-01-05 10:00:02 - vllm.engine.llm_engine - WARNING - something",
    ])
    fmt, scores = formats.detect(lines)
    assert fmt.name == "vllm" and scores["client-log"] == 0.0


def test_a_clients_httpx_answers_are_its_requests_and_their_errors_a_finding(ingest_one):
    """bench/81 (gpustack's benchmark script, OpenAI SDK at INFO): httpx logs each answer
    (`HTTP Request: POST .../v1/chat/completions "HTTP/1.1 503 Service Unavailable"`) and the
    SDK its retries; no result counts failures, so the finding says what was answered, no more."""
    result, run = ingest_one(sample("bench", "81_"))
    assert _format(result) == "client-log"
    rows = run.table("requests").collect()
    assert rows.select("kind", "method", "path", "http").unique().rows() == [
        ("client_http", "POST", "/v1/chat/completions", "1.1")]
    assert rows["status"].to_list() == [503] * 6
    retry = run.table("events").filter(pl.col("kind") == "client_retry").collect()
    assert (retry["severity"].to_list(), json.loads(retry["fields"][0])["delay_s"]) == (["warning"], 0.384627)
    (found,) = diagnose(run)
    assert (found.id, found.severity, found.metrics["statuses"]) == ("bench-failures", "warning", {"503": 6})
    assert "6 HTTP 503" in found.verdict and "not known" in found.verdict


def test_a_servers_httpx_lines_to_the_hub_do_not_make_it_a_client():
    """Servers log httpx lines too, for the Hugging Face hub (the HEAD line is from a model
    mirror's journal, vtuber-plan/olah#14): only a POST to an inference route marks a client."""
    lines = pl.Series([
        "2024-08-08 11:18:50 | INFO | httpx | HTTP Request: HEAD https://huggingface.co/api/models/meta-llama/"
        'Meta-Llama-3.1-405B-Instruct-FP8/revision/7c365a34d0fed5b4afb118cf253395f47f6efa72 "HTTP/1.1 200 OK"',
        "INFO 06-02 11:03:56 [api_server.py:1336] Starting vLLM API server on http://0.0.0.0:8000",
        "INFO 04-10 03:44:38 [loggers.py:87] Engine 000: Avg prompt throughput: 10.8 tokens/s, Avg generation "
        "throughput: 34.3 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit "
        "rate: 85.7%",
    ])
    fmt, scores = formats.detect(lines)
    assert fmt.name == "vllm" and scores["client-log"] == 0.0


def test_inference_perf_log_with_its_yaml_config(ingest_one):
    """bench/234: inference-perf's Python logging (comma before the milliseconds) and the YAML
    config it prints under one line: a client's log, every line typed, no finding."""
    result, run = ingest_one(sample("bench", "234_"))
    source = result.sources[0]
    assert (source.format, source.unparsed) == ("client-log", 0)
    events = run.table("events").sort("line_no").collect()
    assert events["kind"].to_list() == ["client_config", "client_log", "client_log"]
    assert str(events["ts"][0]) == "2025-08-19 17:52:49.038000"
    assert diagnose(run) == []


def test_guidellm_01_progress_panel(ingest_one):
    """bench/279 (hold-out 14): GuideLLM 0.1's live `Benchmarks` panel pasted twice: a client's
    log, each row a benchmark's share done and rate, no finding."""
    result, run = ingest_one(sample("bench", "279_"))
    assert result.sources[0].format == "client-log"
    rows = run.table("events").filter(pl.col("kind") == "client_progress").sort("line_no").collect()
    first = json.loads(rows["fields"][0])
    assert rows.height == 6 and first == {"done_pct": 100, "profile": "synchronous", "rate": 0.02}
    assert diagnose(run) == []
