"""Benchmark clients' own logs: AIPerf (its console and `artifacts/logs/aiperf.log`), GuideLLM's
console and GenAI-Perf's console (docs/formats-sources.md#benchmark-client-logs).

A client logs with Python's logging as a user-configured server does (`2026-12-01 13:33:01.213 -
aiperf.cli_runner._single_run - INFO - ...` has the shape of a vLLM line behind a user's logging
format), so these files were taken for server logs and their lines typed as server events: a
client's `ERROR` or traceback could then become a server's crash. This format tells them apart by
what only the clients print: AIPerf's logger and service names (`system_controller`,
`records_manager`, `worker_<id>`, any `aiperf.` module) and source files, its console's
`HH:MM:SS.mmm LEVEL    message (file.py:N)` lines, GuideLLM's loguru lines naming `guidellm.`
modules, GenAI-Perf's `[INFO] genai_perf.` lines and inference-perf's `inference_perf.` loggers.

Every line of theirs is one `events` row whose severity is its level (AIPerf's NOTICE and
SUCCESS are info, TRACE is debug) and whose kind is this format's own, so no server finding
reads it; the file is a client's (loganalyze/diagnosis/base.py `CLIENT_FORMATS`), so its
tracebacks are the client's failures. The result tables and command lines in the same file are
the embeddable `bench` format's (read first, loganalyze/ingestion/dispatch.py).
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats import common
from loganalyze.formats.spec import LineKind, LogFormat, Sample, TsFormat

LEVELS = ("TRACE", "DEBUG", "INFO", "NOTICE", "SUCCESS", "WARNING", "ERROR", "CRITICAL")
LEVEL = "|".join(LEVELS)
SEVERITY = {"TRACE": "debug", "DEBUG": "debug", "NOTICE": "info", "SUCCESS": "info"}
# AIPerf's console redraws its progress bars (`Profiling: 36/150 |██▍   |  24% [00:07<00:23]`)
# with a carriage return and no newline, so the next log record follows the bar on its line.
BARS = r"(?:[A-Z][\w ]*: \d+/\d+ \|[^|\n]*\|\s*\d{1,3}% \[[^\]\n]*\])*"
CLOCK = r"\d\d:\d\d:\d\d\.\d{3,6}"
PREFIX = (
    rf"^{BARS}(?:"
    # aiperf.log: `2026-12-01 13:33:01.213 - system_controller - INFO - ` (0.4 prints no milliseconds)
    # (inference-perf's Python logging: `2025-08-19 17:52:49,038 - inference_perf.config - INFO - `)
    rf"(?P<ts>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?) - (?P<process>[\w.:/<>-]+) - (?P<level>{LEVEL}) - "
    # AIPerf's console: `13:33:01.213 INFO     ` (the level padded to 8)
    rf"|(?P<ts__2>{CLOCK}) (?P<level__2>{LEVEL}) +"
    # GuideLLM (loguru): `26-12-01 13:30:04|INFO     |guidellm.benchmark.benchmarker:run:116 - `
    rf"|(?P<ts__3>\d\d-\d\d-\d\d \d\d:\d\d:\d\d)\|(?P<level__3>{LEVEL}) *\|(?P<process__3>[\w.]+):[\w<>]+:\d+ - "
    # GenAI-Perf: `2024-10-01 10:42 [INFO] genai_perf.parser:803 - ` (early releases print no date)
    rf"|(?:(?P<ts__4>\d{{4}}-\d\d-\d\d \d\d:\d\d) )?\[(?P<level__4>{LEVEL})\] (?P<process__4>genai_perf[\w.]*):\d+ - "
    # The location AIPerf's console prints after the message: `(records_manager.py:1207)`, or
    # right-aligned at the terminal's edge in the rich console of mid-2025 releases.
    r")?(?P<msg>.*?)(?: \([\w.]+\.py:\d+\)| {2,}[\w.]+\.py:\d+)?\s*$"
)

# What only these clients print. AIPerf names its loggers after its services and classes, an
# instance's with an 8-hex id (`dataset_manager_ce93faa4`, `InferenceResultParser_c0198a97`).
AIPERF_LOGGER = (r"aiperf\.[\w.]+|(?:system_controller|records_manager|timing_manager|worker_manager|dataset_manager"
                 r"|gpu_telemetry_manager|server_metrics_manager|record_processor|worker)(?:_[0-9a-f]{8})?"
                 r"|_ServiceRegistry|EventLoopMonitor|PhaseRunner|PhaseOrchestrator|[A-Z]\w+_[0-9a-f]{8}")
AIPERF_FILE = (r"(?:system_controller(?:_dispatch)?|records_manager|dataset_manager|timing_manager|worker_manager"
               r"|service_registry|osl_mismatch_metrics|event_loop_monitor|phase_orchestrator|_single_run"
               r"|tokenizer_(?:validator|display)|exporter_manager|base_service_manager)\.py:\d+")
# GuideLLM 0.1's live panel of benchmarks, a row each: `│ [14:19:55]   100% synchronous
# (0.02 req/sec avg)`, a spinner before the share while one runs (bench/279 of hold-out 14).
GUIDELLM_PROGRESS = (r"^\s*│?\s*\[\d\d:\d\d:\d\d\]\s+(?:[^\d\s]\s+)?(?P<done_pct>\d{1,3})% (?P<profile>[\w@.]+(?: req/s)?)\s+"
                     r"\((?P<rate>[\d.]+) req/sec avg\)")
# An OpenAI-style inference route that a client posts to (CLIENT_HTTP below).
HTTP_ROUTE = r"/v1/(?:chat/)?completions|/generate\b"
DETECT = (
    rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? - (?:{AIPERF_LOGGER}|inference_perf\.[\w.]+) - (?:{LEVEL}) - ",
    rf"^(?:{BARS}){CLOCK} (?:{LEVEL}) +.*(?:\(| {{2}}){AIPERF_FILE}\)?\s*$",
    rf"^\d\d-\d\d-\d\d \d\d:\d\d:\d\d\|(?:{LEVEL}) *\|guidellm\.",
    GUIDELLM_PROGRESS,
    rf"\[(?:{LEVEL})\] genai_perf\.[\w.]+:\d+ - ",
    r"^\s*NVIDIA AIPerf \| |^CLI Command: aiperf |^Log File: \S*aiperf\.log$",
    # Their own words, behind any logging header.
    r"\bAIPerf System\b|^Starting benchmark for strategy: |^Detected passthrough args: "
    r"|^usage: (?:genai-perf|aiperf|guidellm) ",
    rf'HTTP Request: POST \S*(?:{HTTP_ROUTE}) "HTTP/|Retrying request to /(?:v1/)?(?:chat/)?completions in ',
)


def _severity(rows: pl.DataFrame) -> pl.DataFrame:
    """Severity from the level; the message without the padding after it, which a leader in
    front of the clock (`> `, an MPI tag) leaves in place of the prefix."""
    return rows.with_columns(severity=pl.col("level").replace(SEVERITY).str.to_lowercase(),
                             body=pl.col("body").str.strip_chars_start())


def _panel_severity(rows: pl.DataFrame) -> pl.DataFrame:
    warns = pl.col("fields").str.json_path_match("$.title").str.contains("(?i)warning").fill_null(False)
    return rows.with_columns(severity=pl.when(warns).then(pl.lit("warning")).otherwise(pl.lit("info")))


# The lines of Python's HTTP clients that a benchmark script logs when its logging is at INFO:
# httpx's one line per response (`HTTP Request: POST http://host/v1/chat/completions
# "HTTP/1.1 503 Service Unavailable"`) and the OpenAI SDK's `Retrying request to
# /chat/completions in 0.38 seconds` (fixtures/real/bench/81). Servers print httpx lines too,
# for the Hugging Face hub (HEAD/GET to huggingface.co), so only a request to an OpenAI-style
# inference route marks a file as a client's.
CLIENT_HTTP = LineKind(
    name="client_http", table="requests", needle="HTTP Request: ", match=r"^HTTP Request: [A-Z]+ \S+ \"HTTP/",
    pattern=r'^HTTP Request: (?P<method>[A-Z]+) (?:\w+://[^/\s]+)?(?P<path>\S*) "HTTP/(?P<http>[\d.]+) (?P<status>\d{3})',
    types={"status": pl.Int64},
    samples=(Sample('HTTP Request: POST http://10.0.0.13/v1/chat/completions "HTTP/1.1 503 Service Unavailable"',
                    method="POST", path="/v1/chat/completions", http="1.1", status=503),),
)
CLIENT_RETRY = LineKind(
    name="client_retry", table="events", needle="Retrying request to ", match=r"^Retrying request to \S+ in [\d.]+ seconds",
    pattern=r"^Retrying request to (?P<path>\S+) in (?P<delay_s>[\d.]+) seconds", types={"delay_s": pl.Float64},
    pack="fields", message=True, const={"severity": "warning"},
    samples=(Sample("Retrying request to /chat/completions in 0.384627 seconds", path="/chat/completions",
                    delay_s=0.384627),),
)

# perf_analyzer (under GenAI-Perf and Triton's tools) losing a request: `Thread [0] had error:
# OpenAI response returns HTTP code 500: ...` and `Failed to retrieve results from inference
# request.` (bench/316 of hold-out 17: a Kubernetes vLLM that died under it).
CLIENT_REQUEST_ERROR = LineKind(
    name="client_request_error", table="events", needle=("had error: ", "Failed to retrieve results"),
    pattern=r"^Thread \[(?P<thread>\d+)\] had error: (?P<error>.*)$|^(?P<lost>Failed to retrieve results) from inference request",
    types={"thread": pl.Int64}, pack="fields", message=True, const={"severity": "error"},
    samples=(Sample("Thread [0] had error: OpenAI response returns HTTP code 500: Internal Server Error", thread=0,
                    error="OpenAI response returns HTTP code 500: Internal Server Error"),
             Sample("Failed to retrieve results from inference request.", lost="Failed to retrieve results")),
)

KINDS = (
    common.TRACEBACK,
    CLIENT_HTTP,
    CLIENT_RETRY,
    CLIENT_REQUEST_ERROR,
    # argparse's refusal: the client exits before it sends a request (model_analyzer's
    # genai-perf command line without `profile`, fixtures/real/bench/91).
    LineKind(
        name="client_usage", table="events", needle="usage: ", match=r"^usage: [\w.-]+ ",
        pattern=r"(?s)^usage: (?P<program>[\w.-]+) .*?(?:\n[\w.-]+: error: (?P<error>[^\n]*))?$",
        continuation=r"^\s+\S|^[\w.-]+: error: ", pack="fields", message=True, const={"severity": "error"},
        samples=(Sample("usage: genai-perf [-h] [--version] {compare,profile} ...", program="genai-perf"),),
    ),
    # GuideLLM's setup steps (`✔ Tokenizer resolved, ...`), the resolved settings indented below.
    LineKind(
        name="client_step", table="events", needle="✔ ", match=r"^✔ \S", continuation=r"^  \S",
        message=True, const={"severity": "info"},
        samples=("✔ Setup complete, starting benchmarks...",),
    ),
    LineKind(
        name="client_progress", table="events", needle="req/sec avg)", match=GUIDELLM_PROGRESS,
        pattern=GUIDELLM_PROGRESS, types={"done_pct": pl.Int64, "rate": pl.Float64}, pack="fields", message=True,
        const={"severity": "info"},
        samples=(Sample("│ [14:24:55]   100% throughput            (0.53 req/sec avg)                    │",
                        done_pct=100, profile="throughput", rate=0.53),
                 Sample("│ [14:26:00] ⠼  15% constant@0.08 req/s   (0.05 req/sec avg)", done_pct=15,
                        profile="constant@0.08 req/s", rate=0.05)),
    ),
    # AIPerf's panels after its tables (`╭── Token Count Discrepancy Warning ──╮`, `│ ... │`
    # rows, `╰──╯`): one event each, a warning where its title says so.
    LineKind(
        name="client_panel", table="events", needle="╭", match=r"^\s*╭─", pattern=r"^\s*╭─+ ?(?P<title>[^─]*?) ?─",
        continuation=r"^\s*[│╰]", pack="fields", message=True, handler=_panel_severity,
        samples=(Sample("╭───────────── Output Sequence Length Mismatch Warning ─────────────╮",
                        title="Output Sequence Length Mismatch Warning", severity="warning"),),
    ),
    # inference-perf's settings, printed as YAML under one log line (bench/234).
    LineKind(
        name="client_config", table="events", needle="with the following config:",
        match=r"with the following config:\s*$", continuation=r"^(?:\s+\S|[\w-]+:(?:\s|$))", message=True,
        const={"severity": "info"},
        samples=("2025-08-19 17:52:49,038 - inference_perf.config - INFO - Benchmarking with the following config:",),
    ),
    # What AIPerf's console prints after its tables: the run's duration and where it wrote its
    # exports (a long path wrapped onto the next line at the terminal's width).
    LineKind(
        name="client_exports", table="events", needle=("Export:", "Log File:", "Benchmark Duration: "),
        match=r"^(?:(?:Server Metrics )?(?:CSV|JSON) Export|Log File|Benchmark Duration):(?: |$)",
        pattern=r"^(?:Benchmark Duration: (?P<duration_s>[\d.]+) sec|(?P<export>[\w ]+?):\s*(?P<path>\S+))",
        types={"duration_s": pl.Float64}, continuation=r"^/\S+$", pack="fields", message=True,
        const={"severity": "info"},
        samples=(Sample("Benchmark Duration: 43.43 sec", duration_s=43.43),
                 Sample("CSV Export: /tmp/rec/aiperf/artifacts/profile_export_aiperf.csv", export="CSV Export",
                        path="/tmp/rec/aiperf/artifacts/profile_export_aiperf.csv"),
                 Sample("Log File: /tmp/rec/aiperf/artifacts/logs/aiperf.log", export="Log File",
                        path="/tmp/rec/aiperf/artifacts/logs/aiperf.log")),
    ),
    LineKind(
        name="client_log", table="events", needle="", levels=LEVELS, fallback=True, message=True, handler=_severity,
        samples=(
            Sample("2026-12-01 13:33:01.213 - aiperf.cli_runner._single_run - INFO - Starting AIPerf System",
                   severity="info"),
            Sample("13:33:50.430 NOTICE   All credits completed (phase_orchestrator.py:358)", severity="info"),
            "2026-01-16 10:49:48 - system_controller - INFO - AIPerf System is CONFIGURED",
            "26-12-01 13:30:04|INFO     |guidellm.benchmark.benchmarker:run:116 - Starting benchmark for strategy: "
            "concurrent@2",
            "2024-10-01 10:42 [INFO] genai_perf.parser:803 - Detected passthrough args: ['-b', '1']",
        ),
    ),
)

FORMAT = LogFormat(
    name="client-log",
    description="Benchmark clients' own logs: AIPerf's console and aiperf.log, GuideLLM's and GenAI-Perf's console, "
                "inference-perf's log",
    releases="AIPerf 0.1 - 0.13, GuideLLM 0.3 - 0.8, GenAI-Perf 24.x - 25.x",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%y-%m-%d %H:%M:%S"), TsFormat("%Y-%m-%d %H:%M:%S%.f"), TsFormat("%Y-%m-%d %H:%M:%S,%3f"),
                TsFormat("%Y-%m-%d %H:%M"),
                TsFormat("%H:%M:%S%.f", complete="date")),
    detect=DETECT,
)
