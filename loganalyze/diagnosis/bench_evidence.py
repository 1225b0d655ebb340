"""Evidence from benchmark results, for the findings that read the sweep.

A printed result is a block of rows: the evidence is the rows that carry the numbers,
each at its own line (the block's first line + its row index). A results file keeps one
JSON object per line: the evidence is that line, cut down to the fields that matter.

A result marked `partial` (a block cut before its footer or pasted without its banner, table
rows read without their header) may lack what would change a verdict: a finding that cites
one is held with less confidence and says which result was partial (`qualify`).
"""

from __future__ import annotations

import json

from dataclasses import replace

import polars as pl

from loganalyze.diagnosis.base import Evidence, Finding
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


LOWER = {"high": "medium", "medium": "low", "low": "low"}


def _partial_spans(run: Run) -> pl.DataFrame:
    """(path, first, last) lines of each partial bench result of the run."""
    if "bench" not in run.tables():
        return pl.DataFrame(schema={"path": pl.String, "first": pl.Int64, "last": pl.Int64})
    paths = {s["id"]: s["path"] for s in run.info["sources"]}
    rows = run.table("bench").filter(pl.col("partial").fill_null(False)).select("source", "line_no", "block").collect()
    return rows.select(path=pl.col("source").replace_strict(paths, default=pl.col("source")), first="line_no",
                       last=pl.col("line_no") + pl.col("block").list.len().fill_null(1).clip(lower_bound=1) - 1)


def qualify(run: Run, findings: list[Finding]) -> list[Finding]:
    """`findings` with each one whose evidence cites a partial bench result one step less
    confident (high, medium, low), its verdict naming the partial results and its metrics
    listing them (`partial_evidence`)."""
    spans = _partial_spans(run)
    if spans.height == 0:
        return findings
    out = []
    for f in findings:
        cited = [e for e in f.evidence if spans.filter((pl.col("path") == e.path) & (pl.col("first") <= e.line)
                                                       & (pl.col("last") >= e.line)).height]
        if not cited:
            out.append(f)
            continue
        where = sorted({f"{e.path}:{e.line}" for e in cited})
        note = (f" Partial evidence: the benchmark result at {', '.join(where)} is incomplete (cut before its end, "
                "or rows read without their header), so what the missing rows would show is unknown.")
        out.append(replace(f, confidence=LOWER.get(f.confidence, f.confidence), verdict=f.verdict + note,
                           metrics={**f.metrics, "partial_evidence": where}))
    return out
