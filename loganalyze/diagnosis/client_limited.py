"""client-limited: running flat below any cap with an empty queue: the load generator's limit."""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.diagnosis.kv_pressure import FULL

MIN_ROWS = 5


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    if not c or c.summary["decode_rows"] < MIN_ROWS:
        return []
    s = c.summary
    t = c.frames["timeline"]
    if t["queued"].null_count() or (s["queued_fraction"] or 0) > 0.05 or s["running_max"] is None:
        return []
    if s["cap"] and s["running_max"] >= s["cap"]:
        return []
    # A plateau on a full KV cache is the server's memory, whatever the client sends: saying
    # "the server is not the limit" beside kv-pressure would contradict it (sglang/51, vllm/14).
    top = t.filter((pl.col("running") == s["running_max"]) & ~(pl.col("token_usage") >= FULL).fill_null(False))
    if top.height < 0.5 * t.height:
        return []
    return [Finding(
        id="client-limited", severity="info",
        title=f"Concurrency set by the client ({s['running_max']} running, queue empty)",
        verdict=(f"Running requests stay at {s['running_max']} with an empty queue in {top.height} of "
                 f"{t.height} decode intervals: the client sends no more; the server is not the limit."),
        impact=0.0, impact_text="none on the server side",
        recommendation="Raise the benchmark's concurrency (--max-concurrency) to measure the server's limit.",
        confidence="medium", evidence=ctx.evidence(top.head(3)),
        metrics={"running": s["running_max"], "cap": s["cap"]},
    )]
