"""low-acceptance: speculative accept length far below what the settings allow.

Thresholds (sources in docs/findings.md):
matched drafters with a 3-step chain reach accept length 2.45-3.05, i.e. a normalised
acceptance (len - 1) / (max - 1) of at least ~0.48; below 0.4 the drafter is weak or
mismatched; at or below 1.3 with 3+ steps it is broken (wrong checkpoint, vocabulary,
RoPE). A per-position rate that collapses after the first position is the signature of
a drafter trained for another model. With per-position data (vLLM) the drafter is judged
on the first position: 70 % or more is a working drafter whose low average comes from
too many positions (spec-k-too-high), 50-70 % a mild mismatch.

Prompt lookup (ngram) has no drafter to mismatch: its acceptance is how much the output
repeats the prompt, a property of the traffic, so it is info with a fix of its own. So is
acceptance counted over fewer than FEW_DRAFTED draft tokens (a few requests of a test:
vllm/232 of hold-out 15), unless the drafter is broken.
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding, extreme_rows

HEALTHY_NORMALISED = 0.48
LOW_NORMALISED = 0.40
MISMATCH_NORMALISED = 0.25
BROKEN_LEN = 1.3
FEW_DRAFTED = 1000  # draft tokens below which acceptance is a small sample (info; warning if broken)
NGRAM = r"(?i)ngram|prompt.?lookup"  # the algorithm names of prompt lookup (SGLang NGRAM, vLLM ngram)
COLLAPSE_RATIO = 0.5
HEALTHY_FIRST = 0.7  # first-position acceptance of a working drafter (vLLM per-position data)
MILD_FIRST = 0.5


NGRAM_FIX = ("Prompt lookup pays where outputs copy their prompts (code edits, RAG, summaries); for other "
             "traffic use a trained drafter (EAGLE-3, MTP) or turn speculation off, and fewer speculative tokens "
             "waste fewer verify slots meanwhile.")


def _basename(path: str | None) -> str:
    return re.sub(r"[-_.]", "", (path or "").rstrip("/").split("/")[-1].lower())


def drafter_mismatch(target: str | None, drafter: str | None) -> bool:
    """True when the drafter's name does not contain the served model's name (Kimi-K2 vs Kimi-K2.5)."""
    t, d = _basename(target), _basename(drafter)
    return bool(t and d) and t not in d


def _collapse(per_position: list[float] | None) -> bool:
    return bool(per_position and len(per_position) > 1 and per_position[0] > 0
                and per_position[1] < COLLAPSE_RATIO * per_position[0])


def find(ctx: Case) -> list[Finding]:
    spec = ctx.metrics.get("speculative")
    if not spec or spec.summary["accept_len_mean"] is None:
        return []
    s = spec.summary
    length, maximum, norm = s["accept_len_mean"], s["max_accept_len"], s["acceptance_normalised"]
    first = s["per_position"][0] if s["per_position"] else None
    if norm is None or norm >= LOW_NORMALISED or (first is not None and first >= HEALTHY_FIRST):
        return []
    broken = length <= BROKEN_LEN and (maximum or 0) >= 4
    reference = 1 + HEALTHY_NORMALISED * (maximum - 1)
    lost = max(0.0, 1 - length / reference)
    target = ctx.run.config().get("model_path") or ctx.run.config().get("model")
    mismatch = drafter_mismatch(target, s["drafter"])
    mild = first is not None and first >= MILD_FIRST
    ngram = bool(re.search(NGRAM, s.get("algorithm") or ""))
    cause = ("prompt lookup (ngram) finding few matches: the outputs repeat little of their prompts" if ngram else
             "a broken drafter or integration (wrong checkpoint, vocabulary or RoPE, or hidden states not "
             "reaching the drafter, as in PD disaggregation)" if broken else
             "a mild drafter/target mismatch (first-position acceptance "
             f"{first:.0%}); the low average comes mostly from deep positions" if mild else
             "a drafter trained for another model" if mismatch or _collapse(s["per_position"]) else
             "a drafter mismatched to the target" if norm < MISMATCH_NORMALISED else
             "a weak or domain-mismatched drafter")
    drafter = f" Drafter: {s['drafter']}" + (f" (target: {target})" if target else "") + "." if s["drafter"] else ""
    source = spec.notes.get("max_accept_len", "")
    inferred = source.startswith("inferred")
    verdict = (f"Accept length {length:.2f} of a possible {maximum:g} (normalised {norm:.0%}; matched drafters "
               f"reach about {reference:.2f} with " + ("this maximum" if inferred else "these settings")
               + f"), which points to {cause}.{drafter}")
    if inferred:
        verdict += f" The settings are not in the log: the maximum is {source}."
    if _collapse(s["per_position"]):
        verdict += f" Acceptance per position {s['per_position']} collapses after the first position."
    drafted = ctx.run.table("spec").select(pl.col("drafted").sum()).collect().item() or None
    few = drafted is not None and drafted < FEW_DRAFTED
    if few:
        verdict += f" Only {drafted} draft tokens were counted: a small sample."
    rows = extreme_rows(spec.frames["timeline"].select("source", "line_no", "accept_len"), "accept_len", largest=False)
    drafter_rows = ctx.config_rows("speculative_draft_model_path", "speculative_config", "speculative_model")
    evidence = ctx.evidence(pl.concat([drafter_rows.select("source", "line_no", "raw"),
                                       rows.select("source", "line_no")], how="diagonal"))
    return [Finding(
        id="low-acceptance",
        severity=("warning" if few else "critical") if broken and not ngram else "info" if mild or few or ngram
        else "warning",
        title=f"Low speculative acceptance: {length:.2f} of {maximum:g} tokens per step",
        verdict=verdict,
        impact=lost,
        impact_text=f"{lost:.0%} fewer tokens per verification step than a matched drafter",
        recommendation=(NGRAM_FIX if ngram else
                        "Train or fine-tune the drafter on the target model's own outputs (SpecForge or "
                        "speculators, regenerating data with the served model), check the drafter was built "
                        "for this exact target; until then lower --speculative-num-steps or turn speculation off."),
        confidence="low" if few else "high" if s["intervals"] >= 5 and not inferred else "medium",
        evidence=evidence,
        metrics={k: s[k] for k in ("accept_len_mean", "accept_len_min", "accept_len_max", "max_accept_len",
                                   "acceptance_normalised", "steps", "topk", "draft_tokens", "drafter",
                                   "per_position")} | {"matched_reference": round(reference, 2)},
    )]
