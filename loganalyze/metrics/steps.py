"""Decode step time, per interval and as a function of batch size.

SGLang prints a decode line every `decode_log_interval` steps (40 by default, 20 in 0.1.x),
so the step time is the gap between two consecutive decode lines of one rank divided by
that interval. Its `gen throughput` covers exactly the same window, so the step time is
also running x tokens-per-step / throughput, without the timestamps' one-second
resolution: that estimate is the one used, the timestamp one is kept as a cross-check.
vLLM prints no step count, so only the throughput estimate exists there.
Step time against batch size is fitted as `a + b * batch` (least squares).
"""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import Family, config_value, decode_rows, primary_rank, round_or_none
from loganalyze.run import Run

DEFAULT_INTERVAL = 40


def decode_interval(config: pl.DataFrame, version: str | None) -> int:
    _, value, _ = config_value(config, "decode_log_interval")
    if value:
        return int(value)
    return 20 if version == "0.1.x" else DEFAULT_INTERVAL


def step_rows(run: Run) -> pl.DataFrame:
    """Per decode interval: batch size, tokens per step per request, and step time in ms."""
    decode = primary_rank(decode_rows(run))
    if decode.height == 0:
        return decode
    versions = [s.get("version") for s in run.info["sources"] if s.get("format") == "sglang"]
    interval = decode_interval(run.table("config").collect(), versions[0] if versions else None)
    decode = with_spec_accept_len(run, decode)
    per_req = pl.col("accept_len").fill_null(1.0)
    return decode.with_columns(
        tokens_per_step=per_req,
        step_ms=pl.when(pl.col("gen_throughput") > 0)
        .then(1000 * pl.col("running") * per_req / pl.col("gen_throughput")),
        step_ms_ts=pl.col("ts").diff().dt.total_milliseconds() / interval,
    ).filter(pl.col("running") > 0)


def with_spec_accept_len(run: Run, decode: pl.DataFrame) -> pl.DataFrame:
    """vLLM prints acceptance on its own line next to the stats line: attach the nearest one.

    Its generation throughput counts every token, so tokens per step per request is the
    mean acceptance length of the same interval.
    """
    spec = run.table("spec").filter(pl.col("mean_accept_len").is_not_null() & pl.col("ts").is_not_null()).select(
        "ts", spec_len="mean_accept_len").sort("ts").collect()
    if spec.height == 0 or decode["ts"].null_count() == decode.height:
        return decode
    joined = decode.sort("ts").join_asof(spec, on="ts", strategy="nearest", tolerance="30s")
    return joined.with_columns(accept_len=pl.coalesce("accept_len", "spec_len")).drop("spec_len")


def fit_line(x: pl.Series, y: pl.Series) -> tuple[float, float] | None:
    """Least-squares a + b * x; None with fewer than two distinct x."""
    frame = pl.DataFrame({"x": x.cast(pl.Float64), "y": y.cast(pl.Float64)}).drop_nulls()
    if frame["x"].n_unique() < 2:
        return None
    mx, my = frame["x"].mean(), frame["y"].mean()
    b = float(((frame["x"] - mx) * (frame["y"] - my)).sum() / ((frame["x"] - mx) ** 2).sum())
    return float(my - b * mx), b


def by_batch(rows: pl.DataFrame) -> pl.DataFrame:
    """Median step time and mean tokens per step at each batch size seen."""
    return (
        rows.filter(pl.col("step_ms").is_not_null())
        .group_by("running")
        .agg(step_ms=pl.col("step_ms").median(), tokens_per_step=pl.col("tokens_per_step").mean(),
             intervals=pl.len())
        .sort("running")
    )


def steps(run: Run) -> Family | None:
    rows = step_rows(run)
    if rows.height == 0 or rows["step_ms"].drop_nulls().len() == 0:
        return None
    table = by_batch(rows)
    fit = fit_line(table["running"], table["step_ms"])
    summary = {
        "step_ms_median": round_or_none(rows["step_ms"].median(), 2),
        "step_ms_ts_median": round_or_none(rows["step_ms_ts"].median(), 2),
        "tokens_per_step": round_or_none(rows["tokens_per_step"].mean(), 3),
        "fit_a_ms": round_or_none(fit[0], 3) if fit else None,
        "fit_b_ms_per_req": round_or_none(fit[1], 4) if fit else None,
        "batch_sizes": table.height,
    }
    notes = {"step_ms_median": "running x tokens per step / gen throughput, per decode interval",
             "step_ms_ts_median": "timestamp gap / decode_log_interval (1 s resolution)"}
    return Family("steps", summary, {"by_batch": table, "intervals": rows.select(
        "ts", "source", "line_no", "running", "tokens_per_step", "step_ms", "step_ms_ts",
        "prompt_throughput", "gen_throughput", "token_usage", "queued")}, notes)


def step_time_at(family: Family, batch: float) -> float | None:
    """Step time at a batch size: the measured median there, else the fitted line."""
    table = family.frames["by_batch"]
    exact = table.filter(pl.col("running") == batch)
    if exact.height:
        return float(exact["step_ms"][0])
    a, b = family.summary["fit_a_ms"], family.summary["fit_b_ms_per_req"]
    return None if a is None else a + b * batch
