"""spec-below-break-even: accept length under the break-even tau*(b) at the batch sizes seen.

The draft passes and the (k+1)-token verification must cost less than the tokens they
gain; when tau < tau*(b) each speculative step is slower per token than a plain one.
Claimed only where the plain step was measured (a --baseline run without speculation at
the same batch sizes): a cost model alone called working ngram speculation (acceptance
~78 %, twice the throughput) below break-even.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.metrics.breakeven import break_even


def find(ctx: Case) -> list[Finding]:
    spec, steps = ctx.metrics.get("speculative"), ctx.metrics.get("steps")
    if not spec or not steps or spec.summary["accept_len_mean"] is None:
        return []
    base_steps = (ctx.baseline_metrics or {}).get("steps")
    if base_steps is None:
        return []
    table = break_even(steps, spec, base_steps).drop_nulls("tau_star")
    below = table.filter(pl.col("tau") < pl.col("tau_star"))
    if below.height == 0:
        return []
    speedup = (below["speedup"] * below["intervals"]).sum() / below["intervals"].sum()
    batches = below["running"].to_list()
    worst = below.sort("tau_star", descending=True).row(0, named=True)
    verdict = (f"At batch sizes {_ranges(batches)} the accept length ({worst['tau']:.2f}) is below the break-even "
               f"{worst['tau_star']:.2f} (step {worst['step_ms']:.1f} ms vs {worst['base_step_ms']:.1f} ms "
               f"without speculation at batch {worst['running']}): speculation costs more per step than it gains.")
    evidence_rows = steps.frames["intervals"].filter(pl.col("running").is_in(batches)).head(3)
    return [Finding(
        id="spec-below-break-even",
        severity="warning",
        title="Speculation below break-even",
        verdict=verdict,
        impact=float(max(0.0, 1 - speedup)),
        impact_text=f"speculative steps give {speedup:.2f}x the tokens/s of plain decoding at these batch sizes",
        recommendation=("Turn speculation off above the batch size where tau < tau*, or lower "
                        "--speculative-num-steps / --speculative-num-draft-tokens so verification costs less; "
                        "a drafter with higher acceptance raises tau."),
        confidence="high",
        evidence=ctx.evidence(evidence_rows),
        metrics={"break_even": table.to_dicts(), "method": table["method"][0]},
        consequence=True,
    )]


def _ranges(values: list[int]) -> str:
    values = sorted(values)
    return f"{values[0]}" if len(values) == 1 else f"{values[0]}-{values[-1]}"
