"""prefill-bound (info): prefill batches full to their token budget while requests queue.

An SGLang scheduler admits waiting requests into a prefill batch until the batch's new
tokens reach its budget: `max_prefill_tokens` (16384 unless set), or a smaller
`chunked_prefill_size`. Where every prefill batch is that full (one more request of the
batch's mean prompt length would not fit), requests keep waiting (at least as many as run),
and the KV cache is far from full, the server is limited by how many prompt tokens it
prefills per batch: long prompts, not memory and not a concurrency cap
(docs/findings.md). Read from the prefill stats lines alone, so an excerpt
of two of them is enough; it says how sure it is and whether the budget was assumed.

vLLM's scheduler spends a token budget per step, `--max-num-batched-tokens`, on the running
requests' decode tokens and prefill chunks first and admits a waiting request only while
budget is left. Prompts longer than the budget take several steps each to prefill, so
requests wait with free sequence slots and an empty KV cache. vLLM's stats line prints no
per-batch tokens: the vLLM case is read from the configured budget, the benchmark's mean
prompt length above it, and the stats lines (requests waiting below the cap at low KV usage
in most of the load) (docs/findings.md).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.metrics.base import config_value

DEFAULT_MAX_PREFILL_TOKENS = 16384  # SGLang's server_args default, every release
MIN_ROWS = 2
FULL_SHARE = 0.8  # of prefill batches at their budget with requests waiting
LOW_USAGE = 0.5  # token usage below this: the KV cache is not what holds requests back
SURE_ROWS = 5
WAITING_SHARE = 0.5  # vLLM: of the loaded intervals with requests waiting below the cap at low KV usage


def _budget(ctx: Case) -> tuple[int, str]:
    """The prefill token budget per batch, and where it came from."""
    config = ctx.run.table("config").collect()
    _, prefill, _ = config_value(config, "max_prefill_tokens")
    _, chunk, _ = config_value(config, "chunked_prefill_size")
    budget = int(prefill) if prefill else DEFAULT_MAX_PREFILL_TOKENS
    origin = "max_prefill_tokens" if prefill else "SGLang's default max_prefill_tokens (no server args: assumed)"
    if chunk and 0 < chunk < budget:
        return int(chunk), "chunked_prefill_size"
    return budget, origin


def find(ctx: Case) -> list[Finding]:
    if "stats" not in ctx.run.tables():
        return []
    cols = ["source", "line_no", "ts", "new_seq", "new_tokens", "queued", "running", "token_usage"]
    rows = (ctx.run.table("stats").filter((pl.col("phase") == "prefill") & pl.col("new_tokens").is_not_null()
                                          & (pl.col("new_seq") > 0) & pl.col("queued").is_not_null())
            .select(cols).collect().sort("ts", "source", "line_no"))
    if rows.height == 0:
        return _step_budget(ctx)
    if rows.height < MIN_ROWS or (rows["token_usage"].max() or 0) >= LOW_USAGE:
        return []
    c = ctx.metrics.get("concurrency")
    if c and c.summary["cap"] and (c.summary["running_max"] or 0) >= c.summary["cap"]:
        return []  # running at the cap: concurrency-cap's case
    budget, origin = _budget(ctx)
    if rows["new_tokens"].max() > budget:
        return []  # the budget assumed is not this server's
    per_request = (pl.col("new_tokens") / pl.col("new_seq")).ceil()
    full = rows.filter((pl.col("new_tokens") + per_request > budget) & (pl.col("queued") > 0)
                       & (pl.col("queued") >= pl.col("running").fill_null(0)))
    if full.height < FULL_SHARE * rows.height or full["queued"][-1] < full["queued"][0]:
        return []
    seqs, tokens = full["new_seq"], full["new_tokens"]
    running = f" with {_span(full['running'])} running" if full["running"].null_count() < full.height else ""
    sure = "low" if rows.height < SURE_ROWS else "medium"
    few = f" ({rows.height} prefill lines: low confidence)" if sure == "low" else ""
    return [Finding(
        id="prefill-bound", severity="info",
        title=f"Prefill-bound: each prefill batch is full to its {budget}-token budget while requests wait",
        verdict=(f"{full.height} of {rows.height} prefill batches admit {_span(seqs)} requests, {_span(tokens)} new "
                 f"tokens (about {int((tokens / seqs).mean())} per request), as many as the budget ({budget}, "
                 f"{origin}) allows, while {full['queued'][0]} -> {full['queued'][-1]} requests wait{running} at "
                 f"token usage {_span(full['token_usage'])}: the server is limited by the prompt tokens it prefills "
                 f"per batch, not by the KV cache{few}."),
        impact=0.0, impact_text="time to first token grows with the queue while the KV cache stays mostly empty",
        recommendation=("Raise --max-prefill-tokens (and --chunked-prefill-size) if memory allows, give prefill its "
                        "own servers (PD disaggregation), or shorten prompts / reuse prefixes (radix cache)."),
        confidence=sure, evidence=ctx.evidence(full.head(2)),
        metrics={"prefill_rows": rows.height, "full_rows": full.height, "budget": budget, "budget_source": origin},
    )]


def _span(values: pl.Series) -> str:
    """`3` or `7-10`: the range of a column over the batches."""
    low, high = values.min(), values.max()
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def _mean_prompt(ctx: Case) -> float | None:
    """The benchmark's mean prompt length: input tokens per completed request (or its input_len)."""
    if "bench" not in ctx.run.tables():
        return None
    bench = ctx.run.table("bench").select("input_tokens", "completed", "input_len").collect()
    per = bench.select((pl.col("input_tokens") / pl.col("completed")).mean(), pl.col("input_len").mean()).row(0)
    return next((float(v) for v in per if v is not None and v == v), None)


def _step_budget(ctx: Case) -> list[Finding]:
    """vLLM: prompts longer than --max-num-batched-tokens while requests wait below the cap, KV low."""
    _, budget, row = config_value(ctx.run.table("config").collect(), "max_num_batched_tokens")
    prompt = _mean_prompt(ctx)
    c = ctx.metrics.get("concurrency")
    if not budget or prompt is None or prompt <= budget or not c or not c.summary["cap"]:
        return []
    if (c.summary["token_usage_max"] or 0) >= LOW_USAGE:
        return []
    t = c.frames["timeline"]
    loaded = t.filter(pl.col("running") + pl.col("queued") > 0)
    held = loaded.filter((pl.col("queued") > 0) & (pl.col("running") < c.summary["cap"]))
    if loaded.height < MIN_ROWS or held.height < WAITING_SHARE * loaded.height:
        return []
    sure = "low" if loaded.height < SURE_ROWS else "medium"
    steps = int(-(-prompt // budget))
    return [Finding(
        id="prefill-bound", severity="info",
        title=f"Prefill-bound: prompts of ~{prompt:,.0f} tokens through a {int(budget)}-token step budget",
        verdict=(f"The benchmark's prompts average {prompt:,.0f} tokens, over the step budget of {int(budget)} "
                 f"(max_num_batched_tokens, line {row['line_no']}): each takes about {steps} steps to prefill. In "
                 f"{held.height} of {loaded.height} loaded stats intervals {_span(held['queued'])} requests wait "
                 f"while only {_span(held['running'])} run (cap {c.summary['cap']}) at KV usage "
                 f"{_span(held['token_usage'])}: the server is limited by the prompt tokens it prefills per step, "
                 "not by the KV cache or the sequence cap."),
        impact=round(held.height / loaded.height * 0.5, 2),
        impact_text="time to first token grows with the queue while sequence slots and the KV cache stay free",
        recommendation=("Raise --max-num-batched-tokens (vLLM's default is 2048 or more, larger for big GPUs) so a "
                        "step takes whole prompts, or shorten prompts / reuse prefixes (prefix caching)."),
        confidence=sure,
        evidence=ctx.evidence(pl.concat([ctx.config_rows("max_num_batched_tokens")
                                         .filter((pl.col("source") == row["source"]) & (pl.col("line_no") == row["line_no"]))
                                         .select("source", "line_no", "raw"),
                                         held.head(2).select("source", "line_no")], how="diagonal")),
        metrics={"budget": int(budget), "mean_prompt": round(prompt, 1), "held_rows": held.height,
                 "loaded_rows": loaded.height},
    )]
