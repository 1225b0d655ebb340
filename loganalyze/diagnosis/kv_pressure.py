"""kv-pressure: the KV cache near full for a long stretch, with retractions or preemptions.

When token usage stays at 0.9 or more the scheduler can admit no more requests and
evicts running ones (SGLang retracts, vLLM preempts): throughput collapses while the
queue grows. This is memory, not a configured cap. The evidence is any of: usage at 0.9+
in 30 % of intervals; retraction or preemption lines; a preemption counter in a
`/metrics` scrape or AIPerf's server-metrics export (vLLM 0.32 logs none of its
preemptions); requests waiting while the
cache is full (two such intervals, or one in ten). Where no stats line shows the run (a user
with only AIPerf's artifacts), the gauges of AIPerf's server-metrics export stand in for
them: their percentiles bound the share of samples at 0.9+ from below; its JSONL or
Parquet (the scrapes themselves) give the same statistics, computed here
(docs/formats-sources.md#server-metrics).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.kinds import kind_in, kinds

NEAR_FULL_SHARE = 0.3
FULL = 0.9
WAITING_FULL = 2  # intervals with requests waiting on a full cache ...
WAITING_FULL_SHARE = 0.1  # ... or this share of them
FEW_ROWS = 10  # stats lines below which a full cache is a glimpse, not a stretch (confidence low)
MANY_EVICTIONS = 5  # fewer are a warning: vLLM's docs call an occasional preemption normal under load
SCRAPES = kinds("server_scrape")  # AIPerf's JSONL and Parquet: the scrapes over the run (formats/server_metrics.py)
EVICTION_KINDS = kinds("retraction", "preemption", "preempt_resumed")  # SGLang's "KV cache pool is full. Retract requests." is a retraction; V1 logs a preemption when the request resumes
COUNTERS = r"^(?:vllm:num_preemptions(?:_total)?|sglang:num_retracted_reqs(?:_total)?)$"
GAUGES = {"usage": r"^(?:vllm:kv_cache_usage_perc|vllm:gpu_cache_usage_perc|sglang:token_usage)$",
          "waiting": r"^(?:vllm:num_requests_waiting|sglang:num_queue_reqs)$",
          "running": r"^(?:vllm:num_requests_running|sglang:num_running_reqs)$"}


def scraped_evictions(ctx: Case) -> int:
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


def exported_gauges(ctx: Case) -> dict | None:
    """KV usage, waiting and running over the run as AIPerf's server-metrics export
    summarises them (max and percentiles of its ~1 s scrapes), or None without them.
    `near_full_min` is the share of samples at 0.9+ that the percentiles prove, at least:
    p75 at 0.9+ means a quarter of them or more. The statistics are each gauge's own, so
    they cannot say that requests waited at the moments the cache was full."""
    if "metrics" not in ctx.run.tables():
        return None
    gauges = ctx.run.table("metrics").filter(pl.col("name").str.contains("|".join(GAUGES.values())))
    rows = gauges.filter(pl.col("stat").is_not_null()).collect()
    if rows.height == 0:
        rows = scrape_stats(gauges.filter(kind_in(SCRAPES)).collect())
    usage = rows.filter(pl.col("name").str.contains(GAUGES["usage"]))
    if usage.height == 0:
        return None
    level = usage.filter(pl.col("stat").str.contains(r"^p\d") & (pl.col("value") >= FULL)) \
        .select(pl.col("stat").str.extract(r"^p([\d.]+)").cast(pl.Float64).min())
    lowest = level.item()

    def stat(gauge: str, which: str) -> float | None:
        return rows.filter(pl.col("name").str.contains(GAUGES[gauge]) & (pl.col("stat") == which))["value"].max()

    evidence = rows.filter(pl.col("stat") == "max").sort("source", "line_no") \
        .unique(["name"], keep="first", maintain_order=True)
    return {"near_full_min": round(1 - lowest / 100, 2) if lowest is not None else 0.0,
            "usage_max": stat("usage", "max"), "waiting_max": stat("waiting", "max"),
            "running_max": stat("running", "max"),
            "running_p50": stat("running", "p50"), "waiting_p50": stat("waiting", "p50"),
            "evidence": evidence.select("source", "line_no", "raw")}


def scrape_stats(samples: pl.DataFrame) -> pl.DataFrame:
    """The statistics AIPerf's summary export gives (max, p1-p99), computed over the scrapes
    themselves (its JSONL or Parquet, one sample per gauge series and scrape), so the same
    rules read either; `max`'s row is the scrape that holds the maximum, as evidence."""
    if samples.height == 0:
        return samples.select("name", "stat", "value", "source", "line_no", "raw")
    levels = (1, 5, 10, 25, 50, 75, 90, 95, 99)
    per_name = samples.group_by("name").agg(
        *(pl.col("value").quantile(q / 100, interpolation="nearest").alias(f"p{q}") for q in levels))
    stats = per_name.unpivot(index="name", variable_name="stat", value_name="value")
    top = samples.sort("value", "line_no", descending=[True, False]).unique("name", keep="first") \
        .select("name", stat=pl.lit("max"), value="value", source="source", line_no="line_no", raw="raw")
    return pl.concat([top, stats], how="diagonal_relaxed")


def _gauge_verdict(g: dict) -> str:
    waiting = f", up to {g['waiting_max']:.0f} requests waiting" if g["waiting_max"] else ""
    running = f" and at most {g['running_max']:.0f} running" if g["running_max"] is not None else ""
    return (f"AIPerf's server-metrics export: KV usage at 0.9 or more in at least {g['near_full_min']:.0%} of its "
            f"samples (max {g['usage_max']:.2f}){waiting}{running}; no stats lines, so whether requests waited "
            "at the moments the cache was full is not shown")


def _evicted(evictions: pl.DataFrame) -> int:
    """How many evictions the lines count: vLLM V0's `total_num_cumulative_preemption=87` is
    a counter (87 preemptions, not one), and it is printed on only some of them."""
    if evictions.height == 0:
        return 0
    total = evictions["fields"].str.json_path_match("$.cumulative").cast(pl.Int64, strict=False).max()
    return max(evictions.height, total or 0)


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    gauges = exported_gauges(ctx) if c is None else None
    if gauges and (gauges["near_full_min"] >= NEAR_FULL_SHARE
                   or (gauges["near_full_min"] >= WAITING_FULL_SHARE and gauges["waiting_max"])):
        return [_from_gauges(ctx, gauges)]
    evictions = ctx.events(kind_in(EVICTION_KINDS))
    scraped = scraped_evictions(ctx)
    near = (c.summary["near_full_fraction"] or 0) if c else 0
    timeline = c.frames["timeline"] if c else None
    phase = "decode"
    if timeline is None and (prefill := _prefill_rows(ctx)).height:
        timeline, phase = prefill, "prefill"
        near = float((prefill["token_usage"] >= FULL).mean())
    waiting = timeline.filter((pl.col("token_usage") >= FULL) & (pl.col("queued") > 0)) \
        if timeline is not None else None
    blocked = waiting is not None and waiting.height > 0 and (
        waiting.height >= WAITING_FULL or waiting.height >= WAITING_FULL_SHARE * timeline.height)
    if near < NEAR_FULL_SHARE and evictions.height == 0 and not scraped and not blocked:
        return []
    full_rows = (waiting if blocked else timeline.filter(pl.col("token_usage") >= FULL)).head(3) \
        if timeline is not None else None
    count = _evicted(evictions) + scraped
    evicted = (f"; {_evicted(evictions)} request(s) retracted or preempted" if evictions.height else "") + (
        f"; {scraped} preemptions counted in /metrics" if scraped else "")
    if blocked:
        evicted += f"; requests waited while the cache was full in {waiting.height} interval(s)"
    usage_max = c.summary["token_usage_max"] if c else timeline["token_usage"].max() if timeline is not None else None
    queue_max = c.summary["queue_max"] if c else timeline["queued"].max() if timeline is not None else None
    usage = (f"token usage at 0.9 or more in {near:.0%} of {timeline.height:,} {phase} intervals (max {usage_max})"
             if timeline is not None else "")
    queue = f", up to {queue_max} requests queued" if queue_max else ""
    few = timeline is not None and timeline.height < FEW_ROWS
    if few:
        usage += " (few stats lines: whether it stayed full is not shown)"
    evidence_rows = [evictions.head(2).select("source", "line_no", "raw")]
    if full_rows is not None:
        evidence_rows.insert(0, full_rows.select("source", "line_no"))
    return [Finding(
        id="kv-pressure",
        severity="critical" if count >= MANY_EVICTIONS or (count and near >= NEAR_FULL_SHARE) else "warning",
        title="KV cache full" + (": requests evicted" if count else ""),
        verdict=f"The KV cache is the limit: {usage}{queue}{evicted}." if usage else
                f"The KV cache is the limit{evicted}; no stats lines, so how full it ran and how many requests "
                "waited is not shown.",
        impact=min(1.0, float(near) * 0.8 + (0.2 if count else 0.0)),
        impact_text="admission stalls and evicted requests recompute their prefill",
        recommendation=("Give the KV cache more memory (--mem-fraction-static for SGLang, --gpu-memory-utilization "
                        "for vLLM), lower max concurrency (--max-running-requests / --max-num-seqs) or max tokens, "
                        "or add GPUs."),
        confidence="low" if few and not count else "high" if timeline is not None and (near >= NEAR_FULL_SHARE or count)
        else "medium",
        evidence=ctx.evidence(pl.concat(evidence_rows, how="diagonal")),
        metrics={"near_full_fraction": near, "evictions": count, "scraped_evictions": scraped,
                 "waiting_on_full": waiting.height if waiting is not None else 0,
                 "token_usage_max": usage_max, "phase": phase},
    )]


def _prefill_rows(ctx: Case) -> pl.DataFrame:
    """SGLang's prefill lines where the run has no decode line (a PD prefill server, an excerpt
    of prefill lines): they print the same token usage and queue."""
    if "stats" not in ctx.run.tables():
        return pl.DataFrame(schema={"token_usage": pl.Float64})
    return ctx.run.table("stats").filter((pl.col("phase") == "prefill") & pl.col("token_usage").is_not_null()) \
        .select("ts", "line_no", "source", "token_usage", pl.col("queued").fill_null(0)).collect()


def _from_gauges(ctx: Case, g: dict) -> Finding:
    """The finding from AIPerf's exported gauges alone (no stats lines)."""
    scraped = scraped_evictions(ctx)
    evicted = f"; {scraped} preemptions counted" if scraped else ""
    return Finding(
        id="kv-pressure",
        severity="critical" if scraped else "warning",
        title="KV cache full" + (": requests evicted" if scraped else ""),
        verdict=f"The KV cache is the limit: {_gauge_verdict(g)}{evicted}.",
        impact=min(1.0, g["near_full_min"] * 0.8 + (0.2 if scraped else 0.0)),
        impact_text="admission stalls and evicted requests recompute their prefill",
        recommendation=("Give the KV cache more memory (--gpu-memory-utilization for vLLM, --mem-fraction-static "
                        "for SGLang), lower max concurrency (--max-num-seqs / --max-running-requests) or max tokens, "
                        "or add GPUs."),
        confidence="high" if scraped else "medium",
        evidence=ctx.evidence(g["evidence"]),
        metrics={"near_full_min": g["near_full_min"], "token_usage_max": g["usage_max"],
                 "waiting_max": g["waiting_max"], "running_max": g["running_max"], "evictions": scraped,
                 "scraped_evictions": scraped},
    )
