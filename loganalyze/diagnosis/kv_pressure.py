"""kv-pressure: the KV cache near full for a long stretch, with retractions or preemptions.

When token usage stays at 0.9 or more the scheduler can admit no more requests and
evicts running ones (SGLang retracts, vLLM preempts): throughput collapses while the
queue grows. This is memory, not a configured cap. The evidence is any of: usage at 0.9+
in 30 % of intervals; retraction or preemption lines; a preemption counter in a
`/metrics` scrape or AIPerf's server-metrics export (vLLM 0.32 logs none of its
preemptions); requests waiting while the
cache is full (two such intervals, or one in ten).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Context, Finding
from loganalyze.kinds import kind_in, kinds

NEAR_FULL_SHARE = 0.3
FULL = 0.9
WAITING_FULL = 2  # intervals with requests waiting on a full cache ...
WAITING_FULL_SHARE = 0.1  # ... or this share of them
EVICTION_KINDS = kinds("retraction", "preemption")  # SGLang's "KV cache pool is full. Retract requests." is a retraction
COUNTERS = r"^(?:vllm:num_preemptions(?:_total)?|sglang:num_retracted_reqs(?:_total)?)$"


def scraped_evictions(ctx: Context) -> int:
    """Preemptions (vLLM) or retractions (SGLang) the server's own counters saw: a `/metrics`
    scrape's value, or the increase over the run in AIPerf's export (stat `total`). A series
    (the counter, `_total` aside, and its labels) held by several files (scrapes of one
    server over time, AIPerf's JSON and CSV of one run, a scrape taken after it) counts
    once, at its largest value; the series of several engines add up (docs/formats-sources.md#server-metrics)."""
    if "metrics" not in ctx.run.tables():
        return 0
    rows = ctx.run.table("metrics").filter(pl.col("name").str.contains(COUNTERS)
                                           & (pl.col("stat").is_null() | (pl.col("stat") == "total"))) \
        .group_by(pl.col("name").str.replace(r"_total$", ""), "labels").agg(pl.col("value").max()).collect()
    return int(rows["value"].sum() or 0)


def check(ctx: Context) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    evictions = ctx.events(kind_in(EVICTION_KINDS))
    scraped = scraped_evictions(ctx)
    near = (c.summary["near_full_fraction"] or 0) if c else 0
    timeline = c.frames["timeline"] if c else None
    waiting = timeline.filter((pl.col("token_usage") >= FULL) & (pl.col("queued") > 0)) \
        if timeline is not None else None
    blocked = waiting is not None and waiting.height > 0 and (
        waiting.height >= WAITING_FULL or waiting.height >= WAITING_FULL_SHARE * timeline.height)
    if near < NEAR_FULL_SHARE and evictions.height == 0 and not scraped and not blocked:
        return []
    full_rows = (waiting if blocked else timeline.filter(pl.col("token_usage") >= FULL)).head(3) \
        if timeline is not None else None
    count = evictions.height + scraped
    evicted = (f"; {evictions.height} retraction/preemption events" if evictions.height else "") + (
        f"; {scraped} preemptions counted in /metrics" if scraped else "")
    if blocked:
        evicted += f"; requests waited while the cache was full in {waiting.height} interval(s)"
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
        confidence="high" if near >= NEAR_FULL_SHARE or count else "medium",
        evidence=ctx.evidence(pl.concat(evidence_rows, how="diagonal")),
        metrics={"near_full_fraction": near, "evictions": count, "scraped_evictions": scraped,
                 "waiting_on_full": waiting.height if waiting is not None else 0,
                 "token_usage_max": c.summary["token_usage_max"] if c else None},
    )]
