"""spec-net-negative: the speculative run's sweep delivers less than the baseline's.

Needs `diagnose RUN --baseline RUN` with a benchmark sweep in both, the run speculating and
the baseline not. At each concurrency both ran, speculation helps when its output tok/s is
more than 2 % above the baseline's and hurts when it is more than 2 % below (about the
spread of a benchmark rerun). The finding gives both ranges and the throughput lost at the
highest concurrency both ran, the load a busy server sees. Speculation losing is the effect
of causes found by other checks (the concurrency cap, low acceptance, the verification
cost), so it is listed after them.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.diagnosis.bench_evidence import bench_evidence
from loganalyze.metrics.base import Family

TOLERANCE = 0.02
CRITICAL_LOSS = 0.25


def _speculates(metrics: dict[str, Family]) -> bool:
    spec, sweep = metrics.get("speculative"), metrics.get("sweep")
    return bool((spec and spec.summary["algorithm"]) or (sweep and sweep.summary["accept_length"]))


def spans(chosen: list[int], levels: list[int]) -> str:
    """`C=2-128` for consecutive levels of the sweep, `C=1, C=8-16` otherwise."""
    runs: list[list[int]] = []
    inside = False
    for c in levels:
        if c in chosen and inside:
            runs[-1].append(c)
        elif c in chosen:
            runs.append([c])
        inside = c in chosen
    return ", ".join(f"C={r[0]}" if len(r) == 1 else f"C={r[0]}-{r[-1]}" for r in runs)


def _why(joined: pl.DataFrame, hurts: list[int], spec: Family | None) -> str:
    capped = joined.filter(pl.col("c").is_in(hurts) & (pl.col("cause") == "cap reached"))["c"].to_list()
    parts = []
    if capped:
        cap = joined["cap"].drop_nulls().first() if "cap" in joined.columns else None
        parts.append(f"from C={capped[0]} the server sits at its cap" + (f" of {cap}" if cap else "")
                     + " while requests queue")
    if [c for c in hurts if c not in capped]:
        length = spec.summary["accept_len_mean"] if spec else None
        parts.append("below that, each draft-and-verify step costs more than the "
                     + (f"{length:.2f} tokens it yields" if length else "tokens it yields"))
    return "; ".join(parts)


def find(ctx: Case) -> list[Finding]:
    base = ctx.baseline_metrics or {}
    sweep, base_sweep = ctx.metrics.get("sweep"), base.get("sweep")
    if not sweep or not base_sweep or not _speculates(ctx.metrics) or _speculates(base):
        return []
    theirs = base_sweep.frames["levels"].select("c", base_tok_s="output_throughput", base_row=pl.struct(pl.all()))
    joined = sweep.frames["levels"].join(theirs, on="c").sort("c").with_columns(
        ratio=pl.col("output_throughput") / pl.col("base_tok_s"))
    levels = joined["c"].to_list()
    hurts = joined.filter(pl.col("ratio") < 1 - TOLERANCE)["c"].to_list()
    helps = joined.filter(pl.col("ratio") > 1 + TOLERANCE)["c"].to_list()
    if not hurts:
        return []
    top = joined.row(-1, named=True)
    loss, lost = 1 - top["ratio"], top["base_tok_s"] - top["output_throughput"]
    why = _why(joined, hurts, ctx.metrics.get("speculative"))
    even = [c for c in levels if c not in helps and c not in hurts]
    where = [f"{word} at {spans(cs, levels)}" for word, cs in (("helps", helps), ("is even", even), ("hurts", hurts)) if cs]
    verdict = (f"Against {ctx.baseline.name}, speculation {', '.join(where[:-1])}{' and ' if len(where) > 1 else ''}"
               f"{where[-1]}: at C={top['c']} it gives {top['output_throughput']:,.0f} output tok/s "
               f"against {top['base_tok_s']:,.0f} ({loss:.0%} less, {lost:,.0f} tok/s lost)"
               + (f"; {why}." if why else "."))
    switch = (f"Turn speculation off above C={helps[-1]}, where it stops paying" if helps else
              "Turn speculation off: it pays at no concurrency measured")
    return [Finding(
        id="spec-net-negative",
        severity="critical" if loss >= CRITICAL_LOSS else "warning",
        title=f"Speculation loses {loss:.0%} of throughput at C={top['c']} against {ctx.baseline.name}",
        verdict=verdict,
        impact=float(max(loss, 0.0)),
        impact_text=f"{lost:,.0f} output tok/s ({loss:.0%}) less than {ctx.baseline.name} at C={top['c']}",
        recommendation=(f"{switch} (route high-concurrency traffic to a non-speculative server), or remove what makes "
                        "it lose: raise the concurrency cap, use a drafter matched to the target model."),
        evidence=(bench_evidence(ctx.run, top, "output_throughput")
                  + bench_evidence(ctx.baseline, top["base_row"], "output_throughput")),
        metrics={"by_concurrency": joined.select("c", tok_s="output_throughput", base_tok_s="base_tok_s",
                                                 ratio="ratio").to_dicts(),
                 "helps": helps, "hurts": hurts, "lost_tok_s": round(float(lost), 1)},
        consequence=True,
    )]
