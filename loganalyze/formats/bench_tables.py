"""The benchmark tables, shared by the console parser and the results-file parser.

`bench` has one row per benchmark result (one run of a client at one load level),
whatever printed it; `bench_requests` one row per request where the client saved
per-request arrays. Latencies are milliseconds, durations seconds, rates per second,
acceptance rates fractions, so that sglang, vLLM and other clients compare directly.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.tables import PAIRS, Schema, table

I, F, S, B = pl.Int64, pl.Float64, pl.String, pl.Boolean

LATENCY_METRICS = ("ttft", "tpot", "itl", "e2e")
# A printed time unit -> milliseconds, the unit of every latency column.
TO_MS = {"ns": 1e-6, "us": 1e-3, "μs": 1e-3, "ms": 1.0, "s": 1000.0, "sec": 1000.0, "seconds": 1000.0}
LATENCY_STATS = ("mean", "median", "std", "p90", "p95", "p99", "max")

BENCH = {
    "tool": S, "backend": S, "model": S, "dataset": S, "label": S, "server_version": S, "server_cap": I,
    "request_rate": F, "max_concurrency": I, "num_prompts": I, "batch_size": I, "input_len": I, "output_len": I,
    "completed": I, "failed": I, "duration_s": F,
    "input_tokens": I, "output_tokens": I, "output_tokens_retokenized": I,
    "request_throughput": F, "goodput": F, "input_throughput": F, "output_throughput": F, "total_throughput": F,
    "peak_output_throughput": F, "peak_concurrency": F, "concurrency": F,
    "accept_length": F, "accept_rate": F, "drafts": I, "draft_tokens": I, "accepted_tokens": I,
    "per_position": pl.List(F),
    **{f"{m}_{s}": F for m in LATENCY_METRICS for s in LATENCY_STATS},
    "partial": B, "block": pl.List(S), "extra": PAIRS,
}

BENCH_REQUESTS = {
    "tool": S, "request": I, "input_len": I, "output_len": I, "ttft_ms": F, "latency_ms": F,
    "start_s": F, "itl_ms": pl.List(F), "error": S,
}

TABLES: dict[str, Schema] = {"bench": table(BENCH), "bench_requests": table(BENCH_REQUESTS)}
