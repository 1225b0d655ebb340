"""drain-excluded (info): end-of-benchmark drain windows left out of steady-state numbers."""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    if not c or not c.summary["drain_rows"]:
        return []
    rows = c.frames["timeline"].filter(pl.col("drain"))
    return [Finding(
        id="drain-excluded", severity="info", title="Drain windows excluded",
        verdict=(f"{rows.height} decode intervals are an end-of-load drain (running falls "
                 f"{rows['running'].max()} -> {rows['running'].min()} with an empty queue); they are left out of "
                 "steady-state means. Falling throughput there is the batch emptying, not saturation."),
        impact=0.0, impact_text="none: excluded from steady-state numbers",
        recommendation="Compare runs on steady-state windows only; lengthen the benchmark if drains dominate.",
        evidence=ctx.evidence(rows.head(2)), metrics={"drain_rows": rows.height},
    )]
