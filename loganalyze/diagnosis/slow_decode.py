"""slow-decode: each decode step takes far longer than a GPU needs at this batch size.

At small batches a decode step is bound by reading the weights once: tens of ms for
models that fit their GPUs (15.7 ms for a 547 GB MoE over 8 PCIe GPUs in the reference
case). When even the fastest pure-decode interval (no prompt tokens in its window: a
prefill inflates the step estimate) is far above that with a handful of requests, the
cause is per-step overhead: CPU offload, swapping, eager mode on a slow host, or a
misconfigured device.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding, extreme_rows, value_range
from loganalyze.diagnosis.kv_pressure import FULL
from loganalyze.diagnosis.stall import crawling

SMALL_BATCH = 8
SLOW_MS = 75.0
MIN_INTERVALS = 2
# Fewer intervals than this, none of them slower than CLEAR x SLOW_MS, are a hint, not a
# warning: 112 ms over four one-line excerpts of four DP engines (vllm/180 of hold-out 10) is
# also what a large MoE over several nodes or a slower accelerator takes.
FEW_INTERVALS = 5
CLEAR = 2.0


def find(ctx: Case) -> list[Finding]:
    steps = ctx.metrics.get("steps")
    if not steps:
        return []
    no_prefill = pl.col("prompt_throughput").fill_null(0) < 1
    # A full cache with requests waiting evicts and recomputes: its throughput counts no step
    # (vllm/216 of hold-out 13: 7 running at 94-100 % KV).
    no_eviction = ~((pl.col("token_usage") >= FULL) & (pl.col("queued") > 0)).fill_null(False)
    small = steps.frames["intervals"].filter(
        (pl.col("running") <= SMALL_BATCH) & pl.col("step_ms").is_not_null() & no_prefill & no_eviction
        & ~crawling().fill_null(False))  # requests crawling while others wait unadmitted: hang's (stall.py)
    if small.height < MIN_INTERVALS:
        return []
    fastest = float(small["step_ms"].min())
    if fastest < SLOW_MS:
        return []
    median = float(small["step_ms"].median())
    tok_s = 1000 / fastest
    hint = small.height < FEW_INTERVALS and median < CLEAR * SLOW_MS
    caveat = (f" Only {small.height} intervals, none far above {SLOW_MS:.0f} ms: a large model over several nodes or a "
              "slower accelerator takes this long too, and the log does not say which this is." if hint else "")
    return [Finding(
        id="slow-decode", severity="info" if hint else "warning",
        title=f"Slow decode steps: {fastest:.0f} ms at batch <= {SMALL_BATCH}",
        verdict=(f"With {value_range(small['running'])} request{'' if small['running'].max() == 1 else 's'} running a decode step takes "
                 f"at least {fastest:.0f} ms (median {median:.0f} ms over {small.height} intervals), at most "
                 f"{tok_s:.1f} tok/s per request: "
                 "per-step overhead, not queueing or capacity." + caveat),
        impact=min(1.0, 1 - SLOW_MS / fastest), impact_text=f"single-stream speed {tok_s:.1f} tok/s at best",
        recommendation=("Check for CPU offload or swap (--cpu-offload-gb, swap space), that CUDA graphs are on "
                        "(no --enforce-eager / --disable-cuda-graph), the GPU clocks and PCIe link, and that the "
                        "model fits the GPUs without offloading."),
        confidence="low" if hint else "medium", evidence=ctx.evidence(extreme_rows(small, "step_ms")),
        metrics={"step_ms_min": round(fastest, 1), "step_ms_median": round(median, 1), "intervals": small.height},
    )]
