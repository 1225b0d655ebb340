"""Does speculation pay for itself at each batch size?

A speculative step yields tau tokens per request (the accept length) and costs T_spec(b);
a plain step yields 1 token and costs T_base(b). Speculation wins when
tau > tau*(b) = T_spec(b) / T_base(b), and its speedup is tau * T_base(b) / T_spec(b)
(Leviathan et al. 2023, batch-aware form; see docs/formats-sources.md#speculative-decoding). With a baseline run, T_base comes from its measured step times (fitted line
between batch sizes). Without one, the low-batch cost model tau* = 1 + k * c is used,
with c = 0.1, the upper end for EAGLE-style heads, labelled as a model.
"""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import Family
from loganalyze.metrics.steps import step_time_at

DRAFT_COST_RATIO = 0.1


def break_even(spec_steps: Family, spec: Family, base_steps: Family | None) -> pl.DataFrame:
    """Per batch size of the speculative run: tau, tau*, speedup, and how tau* was obtained."""
    table = spec_steps.frames["by_batch"]
    if base_steps is not None:
        base = [step_time_at(base_steps, b) for b in table["running"].to_list()]
        out = table.with_columns(base_step_ms=pl.Series(base, dtype=pl.Float64))
        out = out.with_columns(tau_star=pl.col("step_ms") / pl.col("base_step_ms"))
        out = out.with_columns(speedup=pl.col("tokens_per_step") * pl.col("base_step_ms") / pl.col("step_ms"),
                               method=pl.lit("measured against baseline"))
    else:
        k = spec.summary.get("steps") or 0
        out = table.with_columns(base_step_ms=pl.lit(None, pl.Float64),
                                 tau_star=pl.lit(1 + k * DRAFT_COST_RATIO if k else None, pl.Float64),
                                 speedup=pl.lit(None, pl.Float64),
                                 method=pl.lit(f"cost model 1 + k*c, k={k}, c={DRAFT_COST_RATIO}"))
    return out.rename({"tokens_per_step": "tau"}).select(
        "running", "intervals", "tau", "step_ms", "base_step_ms", "tau_star", "speedup", "method")
