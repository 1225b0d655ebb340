"""spec-k-too-high: deep draft positions are almost never accepted; a smaller k pays better.

Each draft position costs a draft pass and a verified token whether or not it is kept,
and adds on average its acceptance rate in tokens. Per-position acceptance is the
k-tuning signal (docs/formats-sources.md#speculative-decoding): positions accepted
under 20 % of the time add under 0.2 token per step and are not worth their cost.
"""

from __future__ import annotations

from loganalyze.diagnosis.base import Case, Finding

WORTH = 0.2
WASTED = 0.1


def find(ctx: Case) -> list[Finding]:
    spec = ctx.metrics.get("speculative")
    positions = spec.summary["per_position"] if spec else None
    if not positions or len(positions) < 3 or min(positions) >= WASTED or positions[0] < WORTH:
        return []
    useful = max(1, sum(1 for p in positions if p >= WORTH))
    k = spec.summary["steps"] or len(positions)
    if useful >= k - 1:
        return []
    wasted = [i for i, p in enumerate(positions) if p < WASTED]
    rows = spec.frames["timeline"].tail(2)
    return [Finding(
        id="spec-k-too-high", severity="warning",
        title=f"Too many speculative tokens: k={k}, only {useful} worth drafting",
        verdict=(f"Acceptance by position falls from {positions[0]:.0%} to {positions[-1]:.0%}; "
                 f"{_positions(wasted)} accepted under {WASTED:.0%} of the time, so k={k} drafts tokens that "
                 f"are verified and thrown away. Accept length {spec.summary['accept_len_mean']} comes from the first "
                 f"{useful} positions."),
        impact=round(len(wasted) / k * 0.3, 3),
        impact_text=f"{len(wasted)} of {k} draft positions cost a draft pass and a verified token for almost nothing",
        recommendation=f"Set num_speculative_tokens (or --speculative-num-steps) to {useful}.",
        evidence=ctx.evidence(rows),
        metrics={"k": k, "suggested_k": useful, "per_position": positions},
    )]


def _positions(idx: list[int]) -> str:
    return f"position {idx[0]} is" if len(idx) == 1 else f"positions {idx[0]}-{idx[-1]} are"
