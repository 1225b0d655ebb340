"""Speculative decoding acceptance: how many tokens each verification step yields.

Accept length counts the bonus token (SGLang's `accept len`, vLLM's mean acceptance
length normalised to 1 + accepted/drafts), so 1.0 means no draft token was ever kept.
The maximum follows from the settings: a chain of `steps` draft tokens yields at most
steps + 1 (SGLang: min(steps, draft_tokens - 1) + 1). Normalised acceptance
(len - 1) / (max - 1) compares runs with different settings.
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.metrics.base import Family, config_value, decode_rows, in_order, primary_rank, round_or_none
from loganalyze.run import Run

DRAFTER_KEYS = ("speculative_draft_model_path", "speculative_config.model", "speculative_model", "draft_model")
STEP_KEYS = ("speculative_num_steps", "speculative_config.num_speculative_tokens",
             "speculative_config.num_spec_tokens", "num_speculative_tokens")


def settings(config: pl.DataFrame) -> dict:
    """Algorithm, drafter, steps, topk and draft tokens, from SGLang args or vLLM's speculative_config."""
    algo, _, _ = config_value(config, "speculative_algorithm", "speculative_config.method", "method")
    drafter, _, drafter_row = config_value(config, *DRAFTER_KEYS)
    _, steps, _ = config_value(config, *STEP_KEYS)
    _, topk, _ = config_value(config, "speculative_eagle_topk")
    _, draft, _ = config_value(config, "speculative_num_draft_tokens")
    spec_cfg, _, spec_row = config_value(config, "speculative_config")
    if spec_cfg and spec_cfg != "None":
        k = re.search(r"num_speculative_tokens['\"]?\s*[:=]\s*(\d+)", spec_cfg)
        steps = steps or (float(k.group(1)) if k else None)
        m = re.search(r"(?:method|model)['\"]?\s*[:=]\s*['\"]([^'\"]+)", spec_cfg)
        algo = algo if algo not in (None, "None") else (m.group(1) if m else None)
        path = re.search(r"['\"]?model['\"]?\s*[:=]\s*['\"]([^'\"]+)", spec_cfg)
        drafter = drafter if drafter not in (None, "None") else (path.group(1) if path else None)
        drafter_row = drafter_row or spec_row
    none = (None, "None")
    return {
        "algorithm": None if algo in none else algo,
        "drafter": None if drafter in none else drafter,
        "drafter_line": drafter_row["line_no"] if drafter_row else None,
        "steps": int(steps) if steps else None,
        "topk": int(topk) if topk else None,
        "draft_tokens": int(draft) if draft else None,
    }


def max_accept_len(s: dict) -> int | None:
    """Most tokens one verify step can yield, bonus token included."""
    steps, topk, draft = s["steps"], s["topk"], s["draft_tokens"]
    if not steps:
        return None
    if topk in (None, 1) or not draft:
        return steps + 1
    return min(steps, draft - 1) + 1


CHAIN_MAX = 9  # the most tokens a chain of drafts yields in practice (8 steps + 1)
STEADY = 0.02  # relative spread of an implied maximum that holds across lines


def infer_max_from_rate(series: pl.DataFrame) -> tuple[float | None, str]:
    """The maximum accept length from SGLang's accept rate, where no settings give it.

    Releases defined the rate two ways (docs/formats-sources.md): to 0.5.10 accept len over
    steps + 1 or over the draft tokens, so len / rate is the same on every line; from 0.5.12
    (len - 1) / (max - 1), so 1 + (len - 1) / rate is. The one that holds still across the
    lines is the release's. On one line the newer is taken; an older maximum above a chain's
    (a tree's draft-token count, not what one step yields) is no maximum.
    """
    rows = series.filter((pl.col("accept_rate") > 0) & (pl.col("accept_len") > 1))
    if rows.height == 0:
        return None, "unknown"
    old = rows["accept_len"] / rows["accept_rate"]
    new = 1 + (rows["accept_len"] - 1) / rows["accept_rate"]
    spread = {name: float(v.std() / v.mean()) if v.len() > 1 else None for name, v in (("old", old), ("new", new))}
    if spread["old"] is not None and spread["old"] <= STEADY < (spread["new"] or 0) and old.mean() <= CHAIN_MAX + 0.5:
        return round(float(old.mean())), "inferred: accept len / accept rate is the same on every line (SGLang to 0.5.10)"
    return round(float(new.mean()), 2), "inferred from accept rate (SGLang 0.5.12+ definition)"


def acceptance_series(run: Run) -> pl.DataFrame:
    """(ts, accept_len, accept_rate, weight) from SGLang decode lines and vLLM spec lines, or,
    where the server logged none, from the accept lengths benchmark results report (vLLM's
    and SGLang's clients, SGLang's task benchmarks: output tokens per verify step, the same
    measure).

    Weight is the number of verify rounds a value averages over: running requests for
    SGLang (each line covers the same number of steps), drafts for vLLM, the requests a
    result counts (else 1) for a benchmark.
    """
    sg = primary_rank(decode_rows(run).filter(pl.col("accept_len").is_not_null())).select("ts", "line_no", "source", "accept_len", "accept_rate",
             weight=pl.col("running").cast(pl.Float64).fill_null(1.0))
    spec = primary_rank(run.table("spec").filter(pl.col("mean_accept_len").is_not_null()).collect()).select(
        "ts", "line_no", "source", accept_len="mean_accept_len", accept_rate="accept_rate",
        weight=pl.col("drafts").cast(pl.Float64).fill_null(1.0),
    )
    series = pl.concat([sg, spec], how="vertical_relaxed")
    if series.height == 0 and "bench" in run.tables():
        series = run.table("bench").filter(pl.col("accept_length").is_not_null()).select(
            "ts", "line_no", "source", accept_len="accept_length", accept_rate="accept_rate",
            weight=pl.coalesce("completed", "num_prompts").cast(pl.Float64).fill_null(1.0),
        ).collect().cast({"ts": series.schema["ts"]}, strict=False)
        # A result at exactly 1.00 beside results above it is the run without drafts pasted as
        # the baseline (SGLang's task benchmarks print the server's accept length either way,
        # sglang/278 of hold-out 15): no measure of the drafter.
        if (series["accept_len"] > 1.0).any():
            series = series.filter(pl.col("accept_len") != 1.0)
    return series if in_order(series) else series.sort("ts", "source", "line_no")


def per_position(run: Run) -> list[float] | None:
    """Mean acceptance rate at each draft position (vLLM), weighted by drafts."""
    spec = run.table("spec").filter(pl.col("per_position").list.len() > 0).collect()
    if spec.height == 0:
        return None
    width = int(spec["per_position"].list.len().max())
    rows = spec.select(pl.col("per_position").list.get(i, null_on_oob=True).alias(f"p{i}") for i in range(width))
    return [round(float(rows[f"p{i}"].mean()), 3) for i in range(width)]


def speculative(run: Run) -> Family | None:
    series = acceptance_series(run)
    config = run.table("config").collect()
    s = settings(config)
    if series.height == 0 and not s["algorithm"]:
        return None
    w = series["weight"].clip(lower_bound=1e-9)
    mean_len = float((series["accept_len"] * w).sum() / w.sum()) if series.height else None
    mean_rate = series["accept_rate"].mean() if series.height else None
    positions = per_position(run)
    max_source = "settings"
    if not s["steps"] and positions:
        s["steps"], max_source = len(positions), "inferred: one acceptance rate per draft position"
    if not s["steps"]:
        printed = run.table("spec").select(pl.col("k").max()).collect().item()
        if printed:  # V0's `Number of speculative tokens: 16`
            s["steps"], max_source = int(printed), "inferred: the spec lines print the number of speculative tokens"
    maximum = max_accept_len(s)
    if maximum is None and mean_len and mean_rate:
        maximum, max_source = infer_max_from_rate(series)
    normalised = (mean_len - 1) / (maximum - 1) if mean_len and maximum and maximum > 1 else None
    summary = {
        **{k: v for k, v in s.items() if k != "drafter_line"},
        "accept_len_mean": round_or_none(mean_len),
        "accept_len_min": round_or_none(series["accept_len"].min()) if series.height else None,
        "accept_len_max": round_or_none(series["accept_len"].max()) if series.height else None,
        "accept_rate_mean": round_or_none(mean_rate),
        "max_accept_len": maximum,
        "acceptance_normalised": round_or_none(normalised),
        "per_position": positions,
        "intervals": series.height,
    }
    notes = {"max_accept_len": max_source, "accept_len_mean": "weighted by verify rounds (running requests or drafts)"}
    if s["drafter_line"] is not None:
        notes["drafter"] = f"line {s['drafter_line']}"
    frames = {"timeline": series.with_columns(max_accept_len=pl.lit(maximum, pl.Float64))}
    return Family("speculative", summary, frames, notes)
