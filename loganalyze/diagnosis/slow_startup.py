"""slow-startup: long model load, compile or graph capture; a log that ends while loading.

A server that is still loading weights when its log ends is loading, not hung: the
finding says so, with the progress reached, so nobody restarts it mid-load; where an error
follows the load's last line, the load failed, and this says nothing.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding

SLOW_S = 300  # five minutes before a server answers is where users start calling it a hang
INFERRED_LOAD = (" (from the load's first line to the next startup line: the line that ends the load is not in the "
                 "log, so this includes what ran between)")


def _failed_after(ctx: Case, events: pl.DataFrame) -> bool:
    """Whether an error (a traceback, a dead process, an ERROR line) follows the last startup
    line in its file: then the log does not end while loading, it ends in a failure."""
    last = events.group_by("source").agg(last=pl.col("line_no").max())
    errors = ctx.events(pl.col("severity").is_in(["error", "critical"])).join(last, on="source")
    return errors.filter(pl.col("line_no") > pl.col("last")).height > 0


def find(ctx: Case) -> list[Finding]:
    st = ctx.metrics.get("startup")
    if not st:
        return []
    s = st.summary
    events = st.frames["events"]
    if s["still_loading"] and _failed_after(ctx, events):
        return []  # the load ended in an error (vllm/238 of hold-out 15): crash says so, not "still loading"
    if s["still_loading"]:
        pct = s["load_progress_pct"]
        progress = f", shard progress {s['load_progress_first_pct']:.0f}% -> {pct:.0f}%" if pct is not None else ""
        return [Finding(
            id="slow-startup", severity="info", title="Still loading weights, not hung",
            verdict=f"The log ends during weight loading{progress}: the server is loading, not hung.",
            impact=0.0, impact_text="no requests served until loading ends",
            recommendation="Wait for `Load weight end` / ready; for faster restarts keep weights on local NVMe "
                           "and use a faster load format.",
            confidence="medium", evidence=ctx.evidence(events.tail(3)), metrics=s,
        )]
    slow = {k: s[k] for k in ("startup_s", "load_s", "graph_capture_s", "compile_s") if (s[k] or 0) >= SLOW_S}
    if not slow:
        return []
    inferred = {"load_s": INFERRED_LOAD} if s["load_end_inferred"] else {}
    parts = ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {v / 60:.1f} min{inferred.get(k, '')}"
                      for k, v in slow.items())
    return [Finding(
        id="slow-startup", severity="info", title="Slow startup",
        verdict=f"Startup took long: {parts}. A server that does not answer for this long is loading, not hung.",
        impact=0.0, impact_text="time to first request, not throughput",
        recommendation="Keep weights on local NVMe, pre-compile/cache graphs (--cuda-graph-max-bs sized to the "
                       "load), and wait for the ready line before sending traffic.",
        evidence=ctx.evidence(events.filter(pl.col("phase").is_in(["load", "ready"])).tail(3)), metrics=s,
    )]
