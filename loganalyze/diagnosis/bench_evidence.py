"""Evidence from benchmark results, for the findings that read the sweep.

A printed result is a block of rows: the evidence is the rows that carry the numbers,
each at its own line (the block's first line + its row index). A results file keeps one
JSON object per line: the evidence is that line, cut down to the fields that matter.
"""

from __future__ import annotations

import json

from loganalyze.diagnosis.base import Evidence
from loganalyze.run import Run

# bench column -> (printed label, JSON key) of the clients that write it.
FIELDS = {
    "completed": ("Successful requests:", ("completed",)),
    "failed": ("Failed requests:", ("failed",)),
    "max_concurrency": ("Max request concurrency:", ("max_concurrency",)),
    "concurrency": ("Concurrency:", ("concurrency",)),
    "output_throughput": ("Output token throughput (tok/s):", ("output_throughput",)),
    "output_tokens": ("Total generated tokens:", ("total_output_tokens",)),
    "output_tokens_retokenized": ("Total generated tokens (retokenized):", ("total_output_tokens_retokenized",)),
    "peak_concurrency": ("Peak concurrent requests:", ("max_concurrent_requests",)),
    "request_rate": ("Traffic request rate:", ("request_rate",)),
    "request_throughput": ("Request throughput (req/s):", ("request_throughput",)),
    "ttft_mean": ("Mean TTFT (ms):", ("mean_ttft_ms",)),
    "ttft_median": ("Median TTFT (ms):", ("median_ttft_ms",)),
    "tpot_mean": ("Mean TPOT (ms):", ("mean_tpot_ms",)),
    "tpot_median": ("Median TPOT (ms):", ("median_tpot_ms",)),
    "itl_mean": ("Mean ITL (ms):", ("mean_itl_ms",)),
    "itl_median": ("Median ITL (ms):", ("median_itl_ms",)),
    "e2e_mean": ("Mean E2E Latency (ms):", ("mean_e2e_latency_ms",)),
    "e2e_median": ("Median E2E Latency (ms):", ("median_e2e_latency_ms",)),
}
ALIASES = {"Max request concurrency:": ("Max reqeuest concurrency:", "Maximum request concurrency:"),
           "Traffic request rate:": ("Request rate configured (RPS):",)}


def _printed(path: str, row: dict, columns: tuple[str, ...]) -> list[Evidence]:
    out = []
    for column in columns:
        label = FIELDS[column][0]
        for i, text in enumerate(row["block"] or []):
            if text.strip().startswith((label, *ALIASES.get(label, ()))):
                out.append(Evidence(path, row["line_no"] + i, text.strip()))
                break
    return out


def _result_file(path: str, row: dict, columns: tuple[str, ...]) -> list[Evidence]:
    try:
        fields = json.loads(row["raw"] or "{}")
    except ValueError:  # not an object: quote the line as stored
        return [Evidence(path, row["line_no"], row["raw"] or "")]
    keys = [k for c in ("max_concurrency", *columns) for k in FIELDS[c][1] if k in fields]
    excerpt = ", ".join(f'"{k}": {json.dumps(fields[k])}' for k in dict.fromkeys(keys))
    return [Evidence(path, row["line_no"], "{" + excerpt + ", ...}")] if excerpt else []


def bench_evidence(run: Run, row: dict, *columns: str) -> list[Evidence]:
    """The lines of one bench result that show `columns` (bench column names)."""
    paths = {s["id"]: s["path"] for s in run.info["sources"]}
    path = paths.get(row["source"], row["source"])
    if row.get("block"):
        return _printed(path, row, columns)
    return _result_file(path, row, columns)
