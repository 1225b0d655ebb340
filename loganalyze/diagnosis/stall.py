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

The other face: requests that run and make no progress. Stats intervals in a row, over
half a minute, with requests running and not one token computed (prompt or generated) are a
stuck engine, whatever waits (vllm/183 of hold-out 10: one request, 0.0 tokens/s for 40 s
while /health answers). A busy step is never that long: even a CPU backend's slowest step
(vllm/81, 1.2 tok/s) computes tokens in every interval. Where the stats stop, vLLM says it
itself: its engine logs `No available shared memory broadcast block found in 60 seconds` each
minute its workers take no step. Two of them after a stats line of requests running and no
token computed, and no stats line between that shows progress, are the same stuck engine
(vllm/207 of hold-out 12: two DP engines of 2 running each on Ascend, 0.0 tokens/s, then the
wait every minute). Alone the wait is no hang: a long compilation logs it too.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import TRACEBACKS, Case, Finding, value_range
from loganalyze.diagnosis.kv_pressure import EVICTION_KINDS, scraped_evictions
from loganalyze.kinds import kind_in, kinds

MIN_ROWS = 2
QUEUE_TO_RUNNING = 5
KV_ROOM = 0.9
# Tokens/s one decode stream gets at most: a small model on a fast GPU decodes a few hundred a
# second per request (sglang/111: 184 tok/s single-stream); above this per running request the
# queue is being served.
SINGLE_STREAM_TOK_S = 400.0
NO_PROGRESS_ROWS = 3  # stats intervals in a row with requests running and no token computed ...
NO_PROGRESS_S = 30  # ... over at least this long
# ... or almost none while requests wait with KV room and none is prefilled: under this many
# tokens/s per running request (a 5 s step; a CPU backend decodes 0.6 tok/s, vllm/119) the
# requests in flight crawl and the waiting ones are not admitted (vllm/249 of hold-out 16:
# 2 running, 5-6 waiting, 0.1 tok/s, KV 3 %).
CRAWL_TOK_S = 0.2
BROADCAST_WAITS = 2  # vLLM's one-minute waits for its workers after such an interval
BROADCAST_WAIT = kinds("shm_broadcast_wait")


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    if ctx.events(kind_in(EVICTION_KINDS)).height or scraped_evictions(ctx):
        return []
    if not c:
        return _broadcast_timeout(ctx)
    t = c.frames["timeline"]
    return _waiting(ctx, t) or _no_progress(ctx, t) or _broadcast_wait(ctx, t)


def _waiting(ctx: Case, t: pl.DataFrame) -> list[Finding]:
    # Running at the server's cap is the cap holding the queue back, however long it is (vllm/271 of
    # hold-out 18: 600 running at max_num_seqs 600, 4,475 waiting): concurrency-cap's, not a stall.
    stalled = t.filter(
        (pl.col("queued") > 0) & ~pl.col("at_cap").fill_null(False)
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


def crawling() -> pl.Expr:
    """Intervals where the requests in flight crawl (under CRAWL_TOK_S each) while others wait
    with KV room: stuck, which slow-decode leaves to this finding."""
    return ((pl.col("gen_throughput").fill_null(0) < CRAWL_TOK_S * pl.col("running"))
            & (pl.col("queued").fill_null(0) > 0) & (pl.col("token_usage").fill_null(0) < KV_ROOM))


def _no_progress(ctx: Case, t: pl.DataFrame) -> list[Finding]:
    """The longest run of intervals in a row with requests running and no token computed (or
    almost none, with requests waiting that are not admitted)."""
    gen = pl.col("gen_throughput").fill_null(0)
    idle = (pl.col("running") > 0) & ((gen == 0) | crawling()) & (pl.col("prompt_throughput").fill_null(0) == 0)
    runs = t.with_columns(_idle=idle).with_columns(
        _run=(pl.col("_idle") != pl.col("_idle").shift()).fill_null(True).cum_sum())  # the first line starts a run
    longest = (runs.filter("_idle").group_by("_run").agg(n=pl.len(), first=pl.col("ts").min(), last=pl.col("ts").max())
               .sort("n", descending=True).head(1))
    if longest.height == 0 or longest["n"][0] < NO_PROGRESS_ROWS:
        return []
    first, last = longest["first"][0], longest["last"][0]
    # Each stats line covers the interval before it: n lines cover n intervals, not n - 1.
    step = t["ts"].diff().dt.total_seconds().median() if t["ts"].null_count() == 0 and t.height > 1 else None
    seconds = ((last - first).total_seconds() + (step or 0)) if first is not None and last is not None else None
    if seconds is None or seconds < NO_PROGRESS_S:
        return []
    rows = runs.filter(pl.col("_run") == longest["_run"][0])
    return [Finding(
        id="hang", severity="critical",
        title="Engine stuck: requests run and " + ("no token is computed" if rows["gen_throughput"].fill_null(0).max() == 0
                                                     else "almost no token is computed"),
        verdict=(f"In {rows.height} stats intervals in a row over {seconds:.0f} s, {value_range(rows['running'])} "
                 f"{'request runs' if rows['running'].max() == 1 else 'requests run'} while the engine computes "
                 + ("no token at all (prompt and generation throughput 0.0)" if rows["gen_throughput"].fill_null(0).max() == 0
                    else f"almost nothing (generation {value_range(rows['gen_throughput'])} tok/s, no prompt token) "
                         f"while {value_range(rows['queued'])} wait with KV room")
                 + ": the requests in flight are stuck, not slow."),
        impact=0.9, impact_text="the requests in flight never finish",
        recommendation=("Dump the engine's stack while it is stuck (`py-spy dump --pid <engine pid>`) to see where it "
                        "waits; a multimodal request stuck in preprocessing, a hung collective between ranks (run "
                        "with NCCL_DEBUG=INFO) and a deadlocked scheduler look alike from the stats."),
        confidence="medium", evidence=ctx.evidence(rows.head(3)),
        metrics={"stuck_intervals": rows.height, "stuck_s": seconds, "running_max": rows["running"].max()},
    )]


def _broadcast_timeout(ctx: Case) -> list[Finding]:
    """vLLM's engine that waited for its workers (`No available shared memory broadcast block`)
    until its read of their answer timed out (a traceback through shm_broadcast's acquire_read
    ending in TimeoutError: vllm/227 of hold-out 14, under Ray Data): the workers stopped
    answering. Read where no stats line shows the run; with stats lines, _broadcast_wait."""
    waits = ctx.events(kind_in(BROADCAST_WAIT))
    timed_out = ctx.events(kind_in(TRACEBACKS) & pl.col("message").str.contains(r"(?s)shm_broadcast\.py.*acquire_read")
                           & pl.col("message").str.contains(r"TimeoutError").fill_null(False))
    if waits.height == 0 or timed_out.height == 0:
        return []
    return [Finding(
        id="hang", severity="critical",
        title="Engine waited for its workers until it timed out",
        verdict=(f"The engine logged {waits.height} wait(s) for its workers' shared-memory broadcast, then its read "
                 "of their answer timed out (TimeoutError in shm_broadcast's acquire_read): a worker stopped "
                 "answering, and the engine died of the wait. No stats line shows what ran at the time."),
        impact=0.9, impact_text="the engine stopped serving",
        recommendation=("Find the worker that stopped: its own log or a stack dump (py-spy dump, "
                        "VLLM_TRACE_FUNCTION) at the time of the first wait; a collective that never returned "
                        "(NCCL_DEBUG=INFO), a device fault or a long compilation are the usual causes."),
        confidence="medium", evidence=ctx.evidence(pl.concat([waits.head(1), timed_out.head(1)], how="diagonal_relaxed")),
        metrics={"broadcast_waits": waits.height},
    )]


def _broadcast_wait(ctx: Case, t: pl.DataFrame) -> list[Finding]:
    """vLLM's engine waiting minute after minute for its workers after the last stats line, which
    had requests running and no token computed."""
    waits = ctx.events(kind_in(BROADCAST_WAIT)).filter(pl.col("ts").is_not_null())
    stamped = t.filter(pl.col("ts").is_not_null())
    if waits.height < BROADCAST_WAITS or stamped.height == 0:
        return []
    before = stamped.filter(pl.col("ts") <= waits["ts"].min())
    last = before.filter(pl.col("ts") == before["ts"].max()) if before.height else before
    after = stamped.filter(pl.col("ts") > waits["ts"].min())
    idle = last.filter((pl.col("running") > 0) & (pl.col("gen_throughput").fill_null(0) == 0)
                       & (pl.col("prompt_throughput").fill_null(0) == 0))
    if last.height == 0 or idle.height < last.height or (after["gen_throughput"].fill_null(0) > 0).any():
        return []
    return [Finding(
        id="hang", severity="critical",
        title="Engine stuck: its workers take no step",
        verdict=(f"The last stats line has {value_range(last['running'])} requests running and no token computed "
                 f"(prompt and generation throughput 0.0), and then the engine waited {waits.height} times for its "
                 "workers (`No available shared memory broadcast block found in 60 seconds`): the requests in flight "
                 "are stuck, not slow."),
        impact=0.9, impact_text="the requests in flight never finish",
        recommendation=("Dump the stacks of the engine's workers while they are stuck (`py-spy dump --pid <worker pid>`) "
                        "to see where they wait; a hung collective between ranks (run with NCCL_DEBUG=INFO) or one "
                        "worker that died leaves the others waiting so."),
        confidence="medium", evidence=ctx.evidence(last.head(1)) + ctx.evidence(waits.head(2)),
        metrics={"broadcast_waits": waits.height, "running_max": last["running"].max()},
    )]
