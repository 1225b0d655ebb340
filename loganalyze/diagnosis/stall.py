"""hang (stalled stats): requests wait while nothing, or almost nothing, runs.

A queue that stays long while `running` is zero or a small fraction of it, with KV room
left, is neither a cap nor memory: the scheduler cannot admit waiting requests (a stall,
a scheduler bug, or admission blocked on long prompts). Watchdog timeouts are the other
face of a hang (hang.py).

A server that preempts or retracts requests says its KV cache has no room, whatever the
usage it printed: vLLM V0 counts sequence groups as `Running` (one group of a beam search or
of n > 1 holds many sequences) and preempts below 90 % usage (vllm/141: 2 running, 98
pending at 74-86 %, a SWAP preemption, 7,200 tok/s generated). The queue is then memory's
(kv-pressure), not a stall. So is any interval that generates more than one decode stream can
(SINGLE_STREAM_TOK_S per running request): the server is busy, what `running` counts holds more
than one sequence each, or requests finish between two stats lines; a stalled scheduler does
not make thousands of tokens a second.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding, value_range
from loganalyze.diagnosis.kv_pressure import EVICTION_KINDS, scraped_evictions
from loganalyze.kinds import kind_in

MIN_ROWS = 2
QUEUE_TO_RUNNING = 5
KV_ROOM = 0.9
# Tokens/s one decode stream gets at most: a small model on a fast GPU decodes a few hundred a
# second per request (sglang/111: 184 tok/s single-stream); above this per running request the
# queue is being served.
SINGLE_STREAM_TOK_S = 400.0


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    if not c or ctx.events(kind_in(EVICTION_KINDS)).height or scraped_evictions(ctx):
        return []
    t = c.frames["timeline"]
    stalled = t.filter(
        (pl.col("queued") > 0)
        & ((pl.col("running") == 0) | (pl.col("queued") >= QUEUE_TO_RUNNING * pl.col("running")))
        & (pl.col("token_usage").fill_null(0) < KV_ROOM)
        & (pl.col("gen_throughput").fill_null(0) <= SINGLE_STREAM_TOK_S * pl.col("running").clip(lower_bound=1))
    )
    if stalled.height < MIN_ROWS or stalled.height < 0.5 * t.height:
        return []
    span = stalled["ts"].max() - stalled["ts"].min() if stalled["ts"].null_count() == 0 else None
    seconds = span.total_seconds() if span else 0
    minutes = f" over {seconds / 60:.0f} min" if seconds >= 90 else f" over {seconds:.0f} s" if span else ""
    tput = stalled["gen_throughput"].median()
    return [Finding(
        id="hang", severity="critical",
        title="Scheduler stalled: requests wait while almost nothing runs",
        verdict=(f"In {stalled.height} of {t.height} stats intervals{minutes}, {value_range(stalled['queued'])} "
                 f"requests wait while only {value_range(stalled['running'])} "
                 f"{'runs' if stalled['running'].max() == 1 else 'run'} (generation {tput:.1f} tok/s) "
                 "with KV room left: waiting requests are not admitted. This is a stall, not a cap or memory."),
        impact=0.9, impact_text="waiting requests are not served",
        recommendation=("Look for a scheduler stall: upgrade past known admission deadlocks, disable the feature "
                        "in the path (multi-step scheduling, chunked prefill, prefix caching) to bisect, and check "
                        "prompt lengths against max_num_batched_tokens / --chunked-prefill-size."),
        confidence="medium", evidence=ctx.evidence(stalled.head(3)),
        metrics={"stalled_intervals": stalled.height, "queue_max": stalled["queued"].max(),
                 "running_max": stalled["running"].max()},
    )]
