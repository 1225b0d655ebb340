"""What GuideLLM and AIPerf export beside a plain result: GuideLLM's benchmarks (one row per
rate), its HTML report's embedded runs, AIPerf's per-request records."""

from __future__ import annotations

import json

from loganalyze.formats.bench_json.results import as_number, typed_value
from loganalyze.formats.bench_tables import BENCH, TO_MS
from loganalyze.formats.result_cells import load_level


# GuideLLM's distributions (successful requests) -> bench metric, and the unit they are in.
GUIDELLM_DISTRIBUTIONS = {"time_to_first_token_ms": ("ttft", 1.0), "time_per_output_token_ms": ("tpot", 1.0),
                          "inter_token_latency_ms": ("itl", 1.0), "request_latency": ("e2e", 1000.0)}

GUIDELLM_STATS = {"mean": "mean", "median": "median", "std_dev": "std", "max": "max"}

# Rates over all requests, as GuideLLM's own Server Throughput table prints them.
GUIDELLM_RATES = {"requests_per_second": "request_throughput", "request_concurrency": "concurrency",
                  "prompt_tokens_per_second": "input_throughput", "output_tokens_per_second": "output_throughput",
                  "tokens_per_second": "total_throughput"}


def guidellm_rows(obj: dict) -> list[dict]:
    """One result per benchmark (load level) of a GuideLLM report (0.3+ `benchmarks.json`);
    one for a benchmark's metrics pasted without the report around them."""
    if "benchmarks" not in obj:
        return [_guidellm_row({"metrics": obj})]
    return [_guidellm_row(b) for b in obj.get("benchmarks") or [] if isinstance(b, dict)]


def _guidellm_row(bench: dict) -> dict:
    metrics = bench.get("metrics") or {}
    strategy = (bench.get("config") or {}).get("strategy") or {}
    row: dict = {"tool": "guidellm", "duration_s": as_number(bench.get("duration"))}
    kind = strategy.get("type_")
    level = as_number(strategy.get("streams") or strategy.get("max_concurrency") or strategy.get("rate"))
    if kind:
        row.update(load_level(f"{kind}@{level:g}" if kind in ("concurrent", "constant", "poisson") and level else kind))
    totals = metrics.get("request_totals") or {}
    row.update(completed=totals.get("successful"), failed=totals.get("errored"))
    for key, (metric, scale) in GUIDELLM_DISTRIBUTIONS.items():
        stats = (metrics.get(key) or {}).get("successful") or {}
        values = {**{c: stats.get(k) for k, c in GUIDELLM_STATS.items()},
                  **{p: (stats.get("percentiles") or {}).get(p) for p in ("p90", "p95", "p99")}}
        row.update({f"{metric}_{c}": v * scale for c, v in values.items() if as_number(v) is not None})
    for key, column in GUIDELLM_RATES.items():
        row[column] = as_number(((metrics.get(key) or {}).get("total") or {}).get("mean"))
    for key, column in (("prompt_token_count", "input_tokens"), ("output_token_count", "output_tokens")):
        total = as_number(((metrics.get(key) or {}).get("successful") or {}).get("total_sum"))
        row[column] = int(total) if total is not None else None
    return row


# GuideLLM's HTML report embeds its data as one JavaScript assignment; each run (benchmark)
# is a flat record: rates over all requests and the p95 / p99 of each latency in ms.
HTML_REPORT = "window.GUIDELLM_REPORT = "

HTML_RUNS = {"request_rate": "request_throughput", "concurrency": "concurrency", "total_tps": "total_throughput",
             "input_tps": "input_throughput", "output_tps": "output_throughput", "successful": "completed",
             "errored": "failed", "configured_concurrency": "max_concurrency",
             "configured_request_rate": "request_rate",
             **{f"{key}_{p}_ms": f"{metric}_{p}" for key, metric in (("request_latency", "e2e"), ("ttft", "ttft"),
                                                                      ("itl", "itl"), ("tpot", "tpot"))
                for p in ("p95", "p99")}}


def html_report(texts: list[str]) -> tuple[int, dict] | None:
    """(index of its line, data) of the report a GuideLLM HTML file embeds, None if none."""
    at = next((i for i, t in enumerate(texts) if HTML_REPORT in t), None)
    if at is None:
        return None
    text = "\n".join(texts[at:])
    try:
        data, _ = json.JSONDecoder().raw_decode(text, text.index(HTML_REPORT) + len(HTML_REPORT))
    except ValueError:
        return None
    return (at, data) if isinstance(data, dict) else None


def html_rows(data: dict) -> list[dict]:
    """One result per run of GuideLLM's HTML report (0.8)."""
    model = (data.get("header") or {}).get("model")
    rows = []
    for run in data.get("runs") or []:
        if not isinstance(run, dict):
            continue
        row: dict = {"tool": "guidellm", "model": model}
        row.update({column: typed_value(run.get(key), BENCH[column]) for key, column in HTML_RUNS.items()})
        level = load_level(str(run.get("label") or run.get("strategy") or ""))
        row.update({k: v for k, v in level.items() if row.get(k) is None})
        rows.append(row)
    return rows


# AIPerf's profile_export.jsonl: one request per line, `{"metadata": {...}, "metrics": {name:
# {"value": ..., "unit": ...}}}`, and `error` on a request that failed.
AIPERF_REQUEST = {"input_sequence_length": "input_len", "output_sequence_length": "output_len",
                  "time_to_first_token": "ttft_ms", "request_latency": "latency_ms", "inter_chunk_latency": "itl_ms"}


def aiperf_request(obj: object) -> dict | None:
    """The bench_requests columns of one line of AIPerf's per-request export, None for any
    other object: latencies in ms whatever unit the record names, start in epoch seconds."""
    if not (isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and isinstance(obj.get("metadata"), dict)
            and "request_start_ns" in obj["metadata"]):
        return None
    row: dict = {"tool": "aiperf", "start_s": (as_number(obj["metadata"]["request_start_ns"]) or 0) / 1e9 or None}
    for key, column in AIPERF_REQUEST.items():
        metric = obj["metrics"].get(key)
        value = metric.get("value") if isinstance(metric, dict) else None
        scale = TO_MS.get(metric.get("unit"), 1.0) if column.endswith("_ms") and isinstance(metric, dict) else 1.0
        if isinstance(value, list):
            row[column] = [v * scale for v in value if as_number(v) is not None]
        elif as_number(value) is not None:
            row[column] = value * scale
    error = obj.get("error")
    if error:
        row["error"] = error if isinstance(error, str) else json.dumps(error)
    return row
