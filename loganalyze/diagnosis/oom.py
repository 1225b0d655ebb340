"""oom: out-of-memory errors, dead engines and allocation failures: the server stopped serving."""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Context, Finding

KINDS = ("oom", "engine_dead", "kv_cache_insufficient", "alloc_failure")
OOM_TEXT = r"OutOfMemoryError|out of memory|Not enough memory"


def check(ctx: Context) -> list[Finding]:
    in_traceback = pl.col("kind").is_in(["traceback", "exception"]) & pl.col("message").str.contains(OOM_TEXT)
    rows = ctx.events(pl.col("kind").is_in(list(KINDS)) | in_traceback)
    if rows.height == 0:
        return []
    first = rows.row(0, named=True)
    return [Finding(
        id="oom", severity="critical", title="Out of memory",
        verdict=f"{rows.height} out-of-memory or engine-death event(s); the first: {first['message'][:160]!s}",
        impact=1.0, impact_text="the server stops serving",
        recommendation=("Lower memory use: --mem-fraction-static (SGLang) or --gpu-memory-utilization (vLLM) a "
                        "little lower to leave room for activations and graphs, smaller --max-running-requests / "
                        "--max-num-seqs or --cuda-graph-max-bs, shorter --context-length."),
        evidence=ctx.evidence(rows), metrics={"events": rows.height},
    )]
