"""Benchmark sweeps: throughput against concurrency, and what the server did at each step.

Results come from the `bench` table, printed blocks and results files alike. A printed
block lacks what only the command line says (`--max-concurrency`, `--num-prompts`): it
takes those from the nearest client args above it in the same file (config `bench.*`).

The rules (each number's note says which one gave it):
* Level: the requested concurrency (`max_concurrency`; bench_one_batch's batch size); an
  export that names none takes its twin's (same tool, completed requests and throughput:
  one run written as JSON, CSV and a console table). One result per level: the one with the most completed requests, then the most fields (a
  results file over the printed block of the same run), then the latest.
* Single-stream speed: output tok/s at C=1; when that level printed none, 1000 / mean TPOT.
* Knee: the first level where the next one adds less than 10 % per doubling of C,
  (T_next / T) ** (1 / log2(C_next / C)) - 1 < 0.10, so uneven steps compare fairly.
* Rate sweep: results that name no concurrency but two offered request rates or more
  (GuideLLM's constant and Poisson stages, `--request-rate` runs) are levels of the rate, in
  `rate_levels`, with the same knee rule per doubling of the rate and the same server join.
* Failed requests: the client's count; sglang prints none, so prompts sent - completed.
* Achieved concurrency: sglang's `Concurrency` (sum of latencies / duration); otherwise
  Little's law, request throughput x mean E2E, with E2E = TTFT + TPOT x (tokens per request
  - 1) when the client printed no E2E.
* Server join: when results carry their end time (vLLM's `date`) a step is the window
  [end - duration, end]. Otherwise the k - 1 longest idle gaps between the server's decode
  lines (each at least 10 s and 3x the median gap) cut the log into k steps, matched to the
  levels in ascending order, as a sweep script runs them.
* Cause at a step: `cap reached` (running at the server cap while requests queue), `KV cache
  full` (token usage >= 0.9 while requests queue), `client-limited` (achieved below 80 % of
  requested with an empty queue), else `compute-bound` (the server runs all it is sent).
"""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import Family, decode_rows, primary_rank, round_or_none
from loganalyze.metrics.concurrency import NEAR_FULL, find_cap, server_sources
from loganalyze.run import Run

KNEE_GAIN = 0.10
MIN_IDLE_S = 10.0
IDLE_FACTOR = 3.0
CAPPED_SHARE = 0.5
CLIENT_SHARE = 0.8

# Client args (config `bench.<key>`) -> the bench column they fill.
# GenAI-Perf's and AIPerf's `--concurrency N` holds N requests in flight: a max concurrency.
ARGS = {"max_concurrency": "max_concurrency", "concurrency": "max_concurrency", "num_prompts": "num_prompts", "request_rate": "request_rate",
        "model": "model", "model_path": "model", "dataset_name": "dataset", "backend": "backend"}
ARG_TYPES = {"max_concurrency": pl.Int64, "num_prompts": pl.Int64, "request_rate": pl.Float64}


def client_args(run: Run) -> pl.DataFrame:
    """Per source and line, the client args in force there (later args override earlier ones)."""
    cfg = run.table("config").filter(pl.col("key").str.starts_with("bench.")).collect()
    cfg = cfg.with_columns(column=pl.col("key").str.strip_prefix("bench.").replace_strict(ARGS, default=None))
    cfg = cfg.filter(pl.col("column").is_not_null() & ~pl.col("value").is_in(["None", "not set", ""]))
    if cfg.height == 0:
        return cfg.select("source", "line_no")
    wide = cfg.pivot(on="column", index=["source", "line_no"], values="value", aggregate_function="first")
    cols = [c for c in wide.columns if c not in ("source", "line_no")]
    return wide.sort("source", "line_no").with_columns(pl.col(cols).forward_fill().over("source"))


def results(run: Run) -> pl.DataFrame:
    """Every bench result, with client args filled in and the load level it ran at."""
    bench = run.table("bench").collect()
    args = client_args(run)
    if bench.height and args.width > 2:
        joined = bench.sort("line_no").join_asof(args.sort("line_no"), on="line_no", by="source",
                                                 strategy="backward", suffix="_arg", check_sortedness=False)
        fills = [pl.coalesce(c, pl.col(f"{c}_arg").cast(ARG_TYPES.get(c, pl.String), strict=False)).alias(c)
                 for c in args.columns if f"{c}_arg" in joined.columns]
        bench = joined.with_columns(fills).select(bench.columns)
    e2e = pl.coalesce("e2e_mean", pl.col("ttft_mean") + pl.col("tpot_mean") * (
        pl.col("output_tokens") / pl.col("completed") - 1))
    out = bench.with_columns(
        c=pl.coalesce("max_concurrency", "batch_size"),
        achieved=pl.coalesce("concurrency", pl.col("request_throughput") * e2e / 1000),
        failed=pl.coalesce("failed", (pl.col("num_prompts") - pl.col("completed")).clip(lower_bound=0)),
    )
    # One run written by several exports (AIPerf's JSON, CSV and console table): a copy that
    # names no level is the result of the level its twin names (same tool, completed requests
    # and request throughput), not a result of its own.
    twin = [pl.col("tool"), pl.col("completed"), pl.col("request_throughput").round(2)]
    known = pl.col("completed").is_not_null() & pl.col("request_throughput").is_not_null()
    out = out.with_columns(c=pl.when(known).then(pl.col("c").fill_null(pl.col("c").max().over(twin)))
                           .otherwise(pl.col("c")))
    return out.sort("source", "line_no")


def per_level(rows: pl.DataFrame, key: str = "c") -> pl.DataFrame:
    """One result per level of `key` (concurrency `c`, or the offered `request_rate`): most
    completed, then most fields, then latest; with the gain to the next and how much of the
    level was achieved (requests in flight, or requests per second)."""
    filled = pl.sum_horizontal(pl.all().is_not_null().cast(pl.Int32))
    picked = (
        rows.filter(pl.col(key).is_not_null() & pl.col("output_throughput").is_not_null())
        .with_columns(_filled=filled)
        .sort([key, "completed", "_filled", "ts", "line_no"], descending=[False, True, True, True, True],
              nulls_last=True)
        .unique(key, keep="first", maintain_order=True)
        .drop("_filled")
    )
    doublings = (pl.col(key).shift(-1) / pl.col(key)).log(2)
    achieved = pl.col("achieved") if key == "c" else pl.col("request_throughput")
    return picked.with_columns(
        gain_per_doubling=(pl.col("output_throughput").shift(-1) / pl.col("output_throughput")) ** (1 / doublings) - 1,
        achieved_ratio=achieved / pl.col(key),
    )


def by_time(decode: pl.DataFrame, levels: pl.DataFrame, key: str = "c") -> pl.DataFrame:
    """Each decode line in the window [end - duration, end] of the level whose run it falls in."""
    windows = levels.select(
        key, start=pl.col("ts") - pl.duration(microseconds=(pl.col("duration_s") * 1e6).cast(pl.Int64)),
        end=pl.col("ts"),
    ).sort("start")
    joined = decode.join_asof(windows, left_on="ts", right_on="start", strategy="backward")
    return joined.filter(pl.col("ts") <= pl.col("end")).drop("start", "end")


def by_order(decode: pl.DataFrame, levels: pl.DataFrame, key: str = "c") -> pl.DataFrame | None:
    """Cut the decode lines at the k - 1 longest idle gaps; step i is the i-th level in ascending order."""
    k = levels.height
    gaps = decode.with_columns(gap=pl.col("ts").diff().dt.total_microseconds() / 1e6)
    threshold = max(MIN_IDLE_S, IDLE_FACTOR * (gaps["gap"].median() or 0))
    cuts = gaps.filter(pl.col("gap") >= threshold).sort("gap", descending=True).head(k - 1)
    if cuts.height != k - 1:
        return None
    step = pl.col("line_no").is_in(cuts["line_no"].implode()).cast(pl.Int32).cum_sum()
    order = levels.sort(key).select(key).with_row_index("step")
    return gaps.with_columns(step=step.cast(pl.UInt32)).join(order, on="step").drop("gap", "step")


def server_steps(run: Run, levels: pl.DataFrame, key: str = "c") -> tuple[pl.DataFrame | None, str | None]:
    """What the server reported at each level (running, queue, token usage), and the matching rule."""
    decode = primary_rank(decode_rows(run).filter(pl.col("ts").is_not_null()))
    if decode.height == 0 or levels.height == 0:
        return None, None
    timed = levels["ts"].null_count() == 0 and levels["duration_s"].null_count() == 0
    matched = by_time(decode, levels, key) if timed else by_order(decode, levels, key)
    if matched is None or matched.height == 0:
        return None, None
    cap, _, _ = find_cap(run.table("config").collect(), decode, *server_sources(run))
    at_cap = (pl.col("running") >= cap) & (pl.col("queued") > 0) if cap else pl.lit(False)
    steps = matched.group_by(key).agg(
        decode_lines=pl.len(),
        running_median=pl.col("running").median(),
        running_max=pl.col("running").max(),
        queued_mean=pl.col("queued").mean(),
        queued_max=pl.col("queued").max(),
        token_usage_max=pl.col("token_usage").max(),
        capped_fraction=at_cap.mean(),
        server_first_line=pl.col("line_no").min(),
        server_source=pl.col("source").first(),
    ).with_columns(cap=pl.lit(cap, pl.Int64))
    return steps, "time window" if timed else "order of levels"


def cause(key: str = "c") -> pl.Expr:
    """Why throughput stops growing at a step (see the module docstring). At a rate level the
    server falling behind also lowers the achieved share, so there client-limited needs the
    server's empty queue seen, not merely no server log."""
    queue = pl.col("queued_max").fill_null(0) > 0
    seen = pl.lit(True) if key == "c" else pl.col("queued_max").is_not_null()
    return (
        pl.when(pl.col("capped_fraction") >= CAPPED_SHARE).then(pl.lit("cap reached"))
        .when(queue & (pl.col("token_usage_max") >= NEAR_FULL)).then(pl.lit("KV cache full"))
        .when(seen & ~queue & (pl.col("achieved_ratio") < CLIENT_SHARE)).then(pl.lit("client-limited"))
        .when(pl.col("decode_lines").is_not_null()).then(pl.lit("compute-bound"))
        .otherwise(pl.lit(None, pl.String))
    )


def single_stream(levels: pl.DataFrame) -> tuple[float | None, str]:
    one = levels.filter(pl.col("c") == 1)
    if one.height == 0:
        return None, "no C=1 level"
    row = one.row(0, named=True)
    if row["output_throughput"] is not None:
        return row["output_throughput"], "output tok/s at C=1"
    if row["tpot_mean"]:
        return 1000 / row["tpot_mean"], "1000 / mean TPOT at C=1"
    return None, "C=1 printed neither output throughput nor TPOT"


def knee(levels: pl.DataFrame, key: str = "c") -> int | float | None:
    flat = levels.filter(pl.col("gain_per_doubling") < KNEE_GAIN)
    return flat[key][0] if flat.height else None


def with_server(run: Run, levels: pl.DataFrame, key: str) -> tuple[pl.DataFrame, str | None]:
    """The levels with what the server did at each (server_steps) and the cause at each step."""
    steps, join_rule = server_steps(run, levels, key)
    if steps is not None:
        levels = levels.join(steps, on=key, how="left")
    else:
        levels = levels.with_columns(decode_lines=pl.lit(None, pl.UInt32), capped_fraction=pl.lit(None, pl.Float64),
                                     queued_max=pl.lit(None, pl.Int64), token_usage_max=pl.lit(None, pl.Float64))
    return levels.with_columns(cause=cause(key)), join_rule


def rate_sweep(run: Run, rows: pl.DataFrame) -> tuple[pl.DataFrame | None, dict]:
    """Results at two offered request rates or more and no concurrency (GuideLLM's constant or
    Poisson stages, `vllm bench serve --request-rate` runs): throughput against the offered rate.
    The knee is the same rule as for concurrency, per doubling of the rate: there the server
    stops keeping up, so what it is offered beyond queues and TTFT climbs."""
    rated = rows.filter(pl.col("c").is_null() & pl.col("request_rate").is_between(0, 1e6, closed="none"))
    levels = per_level(rated, "request_rate")
    if levels.height < 2:
        return None, {}
    levels, join_rule = with_server(run, levels, "request_rate")
    at = knee(levels, "request_rate")
    beyond = levels.filter(pl.col("request_rate") > at) if at is not None else levels.head(0)
    knee_row = levels.filter(pl.col("request_rate") == at).row(0, named=True) if at is not None else {}
    peak = levels.sort("output_throughput", descending=True, nulls_last=True).row(0, named=True)
    return levels, {
        "rate_levels": levels["request_rate"].to_list(),
        "rate_knee": at,
        "rate_peak_tok_s": round_or_none(peak["output_throughput"], 1),
        "rate_peak": peak["request_rate"],
        "rate_plateau_cause": beyond["cause"].drop_nulls().mode().sort().first() if beyond.height else None,
        "ttft_p50_ms_at_rate_knee": round_or_none(knee_row.get("ttft_median"), 1),
        "ttft_p50_ms_beyond_rate_knee": round_or_none(beyond["ttft_median"].max(), 1) if beyond.height else None,
        "rate_server_join": join_rule,
    }


def sweep(run: Run) -> Family | None:
    rows = results(run)
    if rows.height == 0:
        return None
    levels, join_rule = with_server(run, per_level(rows), "c")
    rate_levels, rate_summary = rate_sweep(run, rows)
    ss, ss_note = single_stream(levels)
    peak = levels.sort("output_throughput", descending=True, nulls_last=True).head(1)
    p = peak.row(0, named=True) if peak.height else {}
    knee_level = knee(levels)
    beyond = levels.filter(pl.col("c") >= knee_level) if knee_level else levels.head(0)
    counted = levels if levels.height else rows  # a printed block without a level still counts
    summary = {
        "tool": rows["tool"].drop_nulls().first(),
        "results": rows.height,
        "levels": levels["c"].to_list(),
        "single_stream_tok_s": round_or_none(ss, 1),
        "peak_tok_s": round_or_none(p.get("output_throughput"), 1),
        "peak_level": p.get("c"),
        "knee_level": knee_level,
        "plateau_cause": beyond["cause"].drop_nulls().mode().sort().first() if beyond.height else None,
        "achieved_at_peak": round_or_none(p.get("achieved"), 1),
        "achieved_ratio_min": round_or_none(levels["achieved_ratio"].min()),
        "ttft_p50_ms_at_peak": round_or_none(p.get("ttft_median"), 1),
        "ttft_p99_ms_at_peak": round_or_none(p.get("ttft_p99"), 1),
        "tpot_p50_ms_at_peak": round_or_none(p.get("tpot_median"), 2),
        "tpot_p99_ms_at_peak": round_or_none(p.get("tpot_p99"), 2),
        "accept_length": round_or_none(rows["accept_length"].drop_nulls().last(), 3),
        "accept_rate": round_or_none(rows["accept_rate"].drop_nulls().last(), 3),
        "completed": counted["completed"].sum(),
        "failed": counted["failed"].sum(),
        "server_join": join_rule,
        **rate_summary,
    }
    notes = {
        "single_stream_tok_s": ss_note,
        "knee_level": f"first level where the next adds < {KNEE_GAIN:.0%} per doubling of concurrency",
        "achieved_at_peak": "sglang Concurrency, else Little's law (request throughput x mean E2E)",
        "levels": "one result per level: most completed requests, then most fields, then latest",
    }
    if join_rule:
        notes["server_join"] = ("each result's [end - duration, end] window" if join_rule == "time window" else
                                "k - 1 longest idle gaps between decode lines, levels in ascending order")
    if rate_levels is not None:
        notes["rate_knee"] = f"first offered rate where the next adds < {KNEE_GAIN:.0%} per doubling of the rate"
    frames = {"levels": levels, "results": rows} | ({"rate_levels": rate_levels} if rate_levels is not None else {})
    return Family("sweep", summary, frames, notes)

