"""Runs side by side: the comparison table of the reference case (docs/formats-sources.md#the-reference-case), one row per run.

Each row reads the run's metrics families, never its raw tables: the engine and version
the logs name, the speculative settings, the concurrency cap, single-stream and peak
output throughput from the benchmark sweep, acceptance from the server log (or, without
one, from the benchmark client), and TTFT / TPOT at the peak. Deltas are relative to the
first run given, so `compare(base, spec)` reads as "what speculation changed".
"""

from __future__ import annotations

import polars as pl

from loganalyze.metrics import compute
from loganalyze.metrics.base import Family
from loganalyze.run import Run

SERVER_FORMATS = ("sglang", "vllm")
RATE_RANGE = (0.05, 0.95)  # typical range of per-interval accept rates, not one odd interval

SCHEMA = {
    "run": pl.String, "engine": pl.String, "version": pl.String, "speculative": pl.String, "cap": pl.Int64,
    "single_stream_tok_s": pl.Float64, "peak_tok_s": pl.Float64, "peak_c": pl.Int64,
    "accept_length": pl.Float64, "max_accept_length": pl.Float64,
    "accept_rate_low": pl.Float64, "accept_rate_high": pl.Float64,
    "ttft_p50_ms": pl.Float64, "ttft_p99_ms": pl.Float64, "tpot_p50_ms": pl.Float64, "tpot_p99_ms": pl.Float64,
}


def _engine(run: Run) -> tuple[str | None, str | None]:
    """The server format of the run's server logs (a bench console that mentions `sglang` is
    not one: it has no stats or events) and the version its lines were recognised as."""
    for source in run.info["sources"]:
        server_lines = {"stats", "events"} & set(source.get("lines_by_table") or {})
        if source.get("format") in SERVER_FORMATS and server_lines:
            return source["format"], source.get("version")
    return None, None


def _speculative(spec: Family | None, sweep: Family | None) -> str:
    if not spec or not spec.summary.get("algorithm"):
        return "on (settings not logged)" if sweep and sweep.summary["accept_length"] else "off"
    s = spec.summary
    parts = [f"{k} {s[key]}" for k, key in (("steps", "steps"), ("topk", "topk"), ("draft", "draft_tokens")) if s.get(key)]
    return f"{s['algorithm']} ({', '.join(parts)})" if parts else s["algorithm"]


def _accept_rates(spec: Family | None, sweep: Family | None) -> tuple[float | None, float | None]:
    """Low and high accept rate of the server's intervals, else the benchmark client's one value."""
    if spec is not None:
        rates = spec.frames["timeline"]["accept_rate"].drop_nulls()
        if rates.len():
            return rates.quantile(RATE_RANGE[0]), rates.quantile(RATE_RANGE[1])
    rate = sweep.summary["accept_rate"] if sweep else None
    return rate, rate


def row(run: Run) -> dict:
    """One run's comparison row (None where its logs say nothing)."""
    m = compute(run)
    sweep, spec, conc = m.get("sweep"), m.get("speculative"), m.get("concurrency")
    s = sweep.summary if sweep else {}
    levels = sweep.frames["levels"] if sweep else pl.DataFrame()
    engine, guessed = _engine(run)
    cfg = run.config()
    server_version = levels["server_version"].drop_nulls().first() if "server_version" in levels.columns else None
    bench_cap = levels["server_cap"].drop_nulls().first() if "server_cap" in levels.columns else None
    low, high = _accept_rates(spec, sweep)
    return {
        "run": run.name,
        "engine": engine,
        "version": cfg.get("engine_version") or server_version or guessed,
        "speculative": _speculative(spec, sweep),
        "cap": (conc.summary["cap"] if conc else None) or bench_cap,
        "single_stream_tok_s": s.get("single_stream_tok_s"),
        "peak_tok_s": s.get("peak_tok_s"),
        "peak_c": s.get("peak_level"),
        "accept_length": (spec.summary["accept_len_mean"] if spec else None) or s.get("accept_length"),
        "max_accept_length": spec.summary["max_accept_len"] if spec else None,
        "accept_rate_low": low,
        "accept_rate_high": high,
        "ttft_p50_ms": s.get("ttft_p50_ms_at_peak"),
        "ttft_p99_ms": s.get("ttft_p99_ms_at_peak"),
        "tpot_p50_ms": s.get("tpot_p50_ms_at_peak"),
        "tpot_p99_ms": s.get("tpot_p99_ms_at_peak"),
    }


def compare(runs: list[Run]) -> pl.DataFrame:
    """One row per run, with single-stream and peak deltas (fractions) against the first run."""
    frame = pl.DataFrame([row(r) for r in runs], schema=SCHEMA)
    first = frame.row(0, named=True)
    return frame.with_columns(
        single_stream_delta=pl.col("single_stream_tok_s") / pl.lit(first["single_stream_tok_s"], pl.Float64) - 1,
        peak_delta=pl.col("peak_tok_s") / pl.lit(first["peak_tok_s"], pl.Float64) - 1,
    )
