"""spec-idle: speculative decoding configured, the server under load, and not one draft.

vLLM logs its speculative-decoding metrics line only for an interval in which drafts were
proposed, and SGLang prints the accept length on every decode line of a speculative
server; so a log whose settings turn speculation on, and whose decode lines show the server
generating for a while, but which holds no acceptance at all, is a server whose drafter
never proposed a token. ngram (prompt lookup) drafts only when the output repeats an n-gram
of the prompt: sampled output, or prompts with nothing to copy, leave it idle
(fixtures/engines/vllm-0.32/ngram-no-drafts). It costs what speculation costs (vLLM turns
off async scheduling for ngram, reserves draft slots in the token budget) and gives nothing.
An info finding: the run is not broken, its speculation is inert.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.metrics.base import decode_rows

MIN_BUSY = 5  # decode intervals with tokens generated: enough load for a drafter to have drafted


def find(ctx: Case) -> list[Finding]:
    spec = ctx.metrics.get("speculative")
    if not spec or not spec.summary.get("algorithm") or spec.summary.get("intervals"):
        return []
    busy = decode_rows(ctx.run).filter(pl.col("gen_throughput") > 0)
    if busy.height < MIN_BUSY:
        return []
    algorithm, steps = spec.summary["algorithm"], spec.summary.get("steps")
    width = f" with {steps} speculative tokens" if steps else ""
    lookup = algorithm.lower() in ("ngram", "prompt_lookup", "ngram_gpu", "suffix")
    why = ("ngram drafts only when the output repeats an n-gram of the prompt; sampled output or prompts with "
           "nothing to copy leave it idle" if lookup else "the drafter proposed no token")
    return [Finding(
        id="spec-idle",
        severity="info",
        title=f"Speculative decoding ({algorithm}) configured but it never drafted",
        verdict=(f"The server runs {algorithm} speculation{width}, and {busy.height} decode intervals show it "
                 f"generating (up to {busy['gen_throughput'].max():.0f} tok/s), yet no interval logged any "
                 f"speculative acceptance: {why}. Speculation then costs its overhead and speeds up nothing."),
        impact=0.0,
        impact_text="no token was drafted, so speculation cannot have helped",
        recommendation=("Check the workload the drafter sees: ngram needs outputs that copy the prompt (code edits, "
                        "summaries, RAG); otherwise use a draft model or EAGLE, or turn speculation off and compare."),
        confidence="medium",
        evidence=(ctx.evidence(ctx.config_rows("speculative_config").head(1))
                  + ctx.evidence(ctx.config_rows("speculative_algorithm").head(1))
                  + ctx.evidence(busy.sort("gen_throughput", descending=True).head(1))),
        metrics={"algorithm": algorithm, "busy_intervals": busy.height},
    )]
