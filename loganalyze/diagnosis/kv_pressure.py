"""kv-pressure: the KV cache near full for a long stretch, with retractions or preemptions.

When token usage stays at 0.9 or more the scheduler can admit no more requests and
evicts running ones (SGLang retracts, vLLM preempts): throughput collapses while the
queue grows. This is memory, not a configured cap.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Context, Finding

NEAR_FULL_SHARE = 0.3
EVICTION_KINDS = ("retraction", "preemption", "kv_cache_full")


def check(ctx: Context) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    evictions = ctx.events(pl.col("kind").is_in(list(EVICTION_KINDS)))
    near = (c.summary["near_full_fraction"] or 0) if c else 0
    if near < NEAR_FULL_SHARE and evictions.height == 0:
        return []
    timeline = c.frames["timeline"] if c else None
    full_rows = timeline.filter(pl.col("token_usage") >= 0.9).head(3) if timeline is not None else None
    count = evictions.height
    evicted = f"; {count} retraction/preemption events" if count else ""
    usage = f"token usage at 0.9 or more in {near:.0%} of decode intervals (max {c.summary['token_usage_max']})" if c else ""
    queue = f", up to {c.summary['queue_max']} requests queued" if c and c.summary["queue_max"] else ""
    evidence_rows = [evictions.head(2).select("source", "line_no", "raw")]
    if full_rows is not None:
        evidence_rows.insert(0, full_rows.select("source", "line_no"))
    return [Finding(
        id="kv-pressure",
        severity="critical" if count else "warning",
        title="KV cache full" + (": requests evicted" if count else ""),
        verdict=f"The KV cache is the limit: {usage}{queue}{evicted}." if usage else
                f"The KV cache is the limit{evicted}.",
        impact=min(1.0, float(near) * 0.8 + (0.2 if count else 0.0)),
        impact_text="admission stalls and evicted requests recompute their prefill",
        recommendation=("Give the KV cache more memory (--mem-fraction-static for SGLang, --gpu-memory-utilization "
                        "for vLLM), lower max concurrency (--max-running-requests / --max-num-seqs) or max tokens, "
                        "or add GPUs."),
        confidence="high" if near >= NEAR_FULL_SHARE else "medium",
        evidence=ctx.evidence(pl.concat(evidence_rows, how="diagonal")),
        metrics={"near_full_fraction": near, "evictions": count,
                 "token_usage_max": c.summary["token_usage_max"] if c else None},
    )]
