"""Findings on the real vLLM 0.32 runs recorded by benchmarks/record_vllm.py (the second batch of
cases: the default stats interval, a request-rate client, prefix caching, chunked prefill, an engine
killed under AIPerf, a GuideLLM sweep), read from the lines those programs wrote."""

from __future__ import annotations

from conftest import FIXTURES
from loganalyze.diagnosis import diagnose

VLLM = FIXTURES / "engines" / "vllm-0.32"


def test_a_cap_on_ten_second_stats_lines_says_how_few_they_are(ingest_one):
    """vLLM's default interval: 7 stats lines over the load, 4 of them at Running 4 with 8-12 waiting."""
    _, run = ingest_one(VLLM / "capped-10s" / "server.log")
    (cap,) = [f for f in diagnose(run) if f.id == "concurrency-cap"]
    assert cap.metrics["cap"] == 4 and cap.metrics["queue_max"] == 12
    assert "rests on 7 stats lines only, about 10 s apart (4 at the cap with a queue)" in cap.verdict
    assert cap.confidence == "medium"  # the cap is the configuration's; the share of 7 lines is rough


def test_one_benchmark_above_the_cap_is_no_sweep(ingest_one):
    case = VLLM / "capped-10s"
    _, run = ingest_one(case / "server.log", case / "bench.txt")
    (cap,) = [f for f in diagnose(run) if f.id == "concurrency-cap"]
    assert cap.verdict.endswith("The benchmark's concurrency of 16 is above the cap.") and "sweep" not in cap.verdict


def test_an_engine_core_killed_mid_load_is_named_as_such(ingest_one):
    """kill -9 of EngineCore_DP0 under load: the API server's 'engine core exited unexpectedly'
    (line 154) is the cause, its EngineDeadError tracebacks after the cleanup lines the consequence."""
    _, run = ingest_one(VLLM / "unclean-shutdown" / "server.log")
    crash = diagnose(run)[0]
    assert (crash.id, crash.severity, crash.title) == ("crash", "critical", "Engine core died")
    assert "exited unexpectedly (" in crash.verdict and "line 154), with no error or traceback" in crash.verdict
    assert "the 19 error(s) after it are the API server's consequence (EngineDeadError)" in crash.verdict
    assert crash.evidence[0].line == 154


def test_long_prompts_through_a_small_step_budget_are_prefill_bound(ingest_one):
    """--max-num-batched-tokens 128 and 1,500-token prompts (bench: 72,009 input tokens, 48 requests):
    requests wait with free seq slots and an empty KV cache."""
    case = VLLM / "chunked-prefill"
    _, run = ingest_one(case / "server.log", *sorted(case.glob("vllm-*.json")))
    (pb,) = [f for f in diagnose(run) if f.id == "prefill-bound"]
    assert pb.metrics == {"budget": 128, "mean_prompt": 1500.2, "held_rows": 11, "loaded_rows": 13}
    assert "each takes about 12 steps to prefill" in pb.verdict
    assert pb.evidence[0].text.endswith("Chunked prefill is enabled with max_num_batched_tokens=128.")
    assert not [f for f in diagnose(run) if f.id in ("concurrency-cap", "kv-pressure")]


def test_short_prompts_under_the_default_budget_are_not_prefill_bound(ingest_one):
    """The capped run: 64-token prompts, the default budget: its queue is the sequence cap's."""
    case = VLLM / "capped"
    _, run = ingest_one(case / "server.log", case / "bench.txt")
    assert not [f for f in diagnose(run) if f.id == "prefill-bound"]


def test_aiperf_per_request_errors_name_the_cause_without_a_server_log(ingest_one):
    """Only AIPerf's artifacts: the errors of profile_export.jsonl say why requests failed."""
    art = VLLM / "aiperf-failing" / "artifacts"
    _, run = ingest_one(art / "profile_export.jsonl", art / "profile_export_aiperf.json")
    (failed,) = [f for f in diagnose(run) if f.id == "bench-failures" and f.metrics.get("problem") == "failed-requests"]
    assert "HTTP 400 Bad Request: This model's maximum context length is 256 tokens." in failed.verdict
    assert "(x15)" in failed.verdict and "max_model_len" in failed.recommendation


def test_aiperf_errors_after_the_engine_died(ingest_one):
    art = VLLM / "engine-killed-aiperf" / "artifacts"
    _, run = ingest_one(art / "profile_export.jsonl", art / "profile_export_aiperf.json")
    (failed,) = [f for f in diagnose(run) if f.id == "bench-failures" and f.metrics.get("problem") == "failed-requests"]
    assert ("ClientConnectorError: ConnectionRefusedError(111, \"Connect call failed ('127.0.0.1', 8000)\") (x105); "
            "HTTP 500 Internal Server Error: EngineCore encountered an issue.") in failed.verdict


def test_a_cases_labels_file_is_no_log():
    """expected.toml beside the logs: its note quotes 'engine core exited unexpectedly' and
    'max_num_batched_tokens=128', which a vLLM reading took for an event and a setting."""
    import polars as pl

    from loganalyze import formats

    for case in ("unclean-shutdown", "chunked-prefill"):
        lines = pl.Series((VLLM / case / "expected.toml").read_text().splitlines())
        assert formats.settings_file(lines) and formats.detect(lines)[0] is None
    log = pl.Series((VLLM / "unclean-shutdown" / "server.log").read_text().splitlines()[:200])
    prom = pl.Series((VLLM / "unclean-shutdown" / "metrics.prom").read_text().splitlines()[:200])
    assert not formats.settings_file(log) and not formats.settings_file(prom)


def test_a_rate_sweep_knee_is_where_throughput_stops_rising(ingest_one):
    """GuideLLM constant rates 0.5, 1, 2, 4 req/s against --max-num-seqs 2: 128, 251, 226, 153 output
    tok/s; median TTFT 248 ms at 1 req/s, 3.1 s and 12.2 s beyond; from 2 req/s Running sits at 2
    while up to 34 wait. The console alone gives the knee; the server log names the cap."""
    case = VLLM / "guidellm-rate-sweep"
    _, run = ingest_one(case / "guidellm.txt", name="client")
    (over,) = [f for f in diagnose(run) if f.id == "bench-overload"]
    assert "offered rates (0.5, 1, 2, 4 req/s) output throughput stops rising at 251 tok/s from 1 req/s" in over.verdict
    assert "max-num-seqs" not in over.verdict and over.metrics["rate_knee"] == 1.0
    _, run = ingest_one(case / "server.log", case / "guidellm.txt", case / "benchmarks.json", case / "benchmarks.csv")
    (cap,) = [f for f in diagnose(run) if f.id == "concurrency-cap"]
    assert cap.metrics["cap"] == 2 and cap.metrics["cap_hit_at_rate"] == 2.0 and cap.metrics["plateau_from_rate"] == 1.0
    assert ("sweep of offered request rates stops rising at 251 output tok/s from 1 req/s (median TTFT 248 ms there, "
            "up to 12,247 ms beyond) and first hits the cap at 2 req/s") in cap.verdict


def test_aiperf_short_of_its_concurrency_with_an_idle_server_is_the_client(ingest_one):
    """AIPerf --concurrency 64 held 48.3 on average; the server (--max-num-seqs 128) never queued."""
    case = VLLM / "aiperf-client-limited"
    _, run = ingest_one(case / "server.log", case / "artifacts" / "profile_export_aiperf.json")
    (short,) = [f for f in diagnose(run) if f.id == "client-bottleneck"]
    assert short.metrics == {"requested": 64, "achieved": 48.33, "server_running_max": 45}
    assert "held 48.3 on average (its effective concurrency, 76%)" in short.verdict
    # Capped at the server: AIPerf's 16 were in flight, 12 of them waiting there.
    case = VLLM / "aiperf-capped"
    _, run = ingest_one(case / "server.log", case / "artifacts" / "profile_export_aiperf.json", name="capped")
    assert not [f for f in diagnose(run) if f.id == "client-bottleneck"]
