"""Startup timeline: weight loading, compilation, graph capture, ready.

"The server hangs" is often a server still loading hundreds of GB of weights; a log that
ends inside the load phase with shard progress advancing is loading, not hung.
Phases come from events whose kinds the parsers name (see PHASES); durations prefer the
`elapsed_s` the server printed, else the longer of the gap between a phase's first and
last line and the elapsed time of a shard progress bar (tqdm's `MM:SS` or `H:MM:SS`):
SGLang before 0.5 prints no load time of its own and the bar's lines carry no timestamp,
while a bar of one model's shards is shorter than the timestamped load of model and draft.
A load whose end line is not in the log (a paste cut between `Starting to load model` and
the memory profile, vllm/169) lasted at most until the next phase's first line: that is its
time, said to be inferred (`load_end_inferred`), and such a load is not still running.
"""

from __future__ import annotations

import polars as pl

from loganalyze.kinds import kind_in, kinds
from loganalyze.metrics.base import Family, round_or_none
from loganalyze.run import Run

PHASES = {
    "load": kinds("load_model_begin", "load_weight_begin", "load_weight_end", "shard_progress", "weights_loaded",
                  "weights_read"),
    "engine init": kinds("engine_init"),  # vLLM V1: profile, KV cache, warm-up (`init engine ... took 9.61 s`)
    "compile": kinds("torch_compile", "dynamo_compile"),
    "graph capture": kinds("graph_capture_begin", "graph_capture_end", "graph_capture_bs", "graph_capture_done"),
    "kv cache": kinds("kv_cache_allocated", "memory_pool_end", "gpu_blocks", "kv_cache_size", "memory_profile",
                      "memory_profile_results", "kv_cache_memory"),
}
READY = kinds("server_ready")
SHARDS = kinds("shard_progress")
LOADED = kinds("load_weight_end", "weights_loaded", "weights_read")
PRINTED_SECONDS = pl.col("fields").str.extract(r'"(?:elapsed_s|seconds|load_s|time_s)":\s*([\d.]+)', 1).cast(pl.Float64)
_BAR = r'"elapsed":\s*"(?:(\d+):)?(\d+):(\d+)"'
BAR_SECONDS = (  # tqdm's elapsed `[05:42<00:00, ...]` / `[1:09:28<00:00, ...]`
    pl.col("fields").str.extract(_BAR, 1).cast(pl.Float64).fill_null(0) * 3600
    + pl.col("fields").str.extract(_BAR, 2).cast(pl.Float64) * 60
    + pl.col("fields").str.extract(_BAR, 3).cast(pl.Float64)
)


def phase_of(kind: pl.Expr) -> pl.Expr:
    expr = pl.when(kind.is_in(READY)).then(pl.lit("ready"))
    for phase, names in PHASES.items():
        expr = expr.when(kind.is_in(list(names))).then(pl.lit(phase))
    return expr.otherwise(None)


def startup(run: Run) -> Family | None:
    events = run.table("events").with_columns(phase=phase_of(pl.col("kind"))).filter(
        pl.col("phase").is_not_null()).sort("ts", "source", "line_no").collect()
    if events.height == 0:
        return None
    first = run.table("events").select(pl.col("ts").min()).collect().item()
    phases = (
        events.filter(pl.col("phase") != "ready")
        .group_by("phase", maintain_order=True)
        .agg(start=pl.col("ts").min(), end=pl.col("ts").max(), printed_s=PRINTED_SECONDS.max(),
             bar_s=BAR_SECONDS.max(), lines=pl.len())
        .with_columns(seconds=pl.coalesce(
            "printed_s", pl.max_horizontal((pl.col("end") - pl.col("start")).dt.total_seconds(), "bar_s")))
    )
    ready = events.filter(pl.col("phase") == "ready")
    load = events.filter(pl.col("phase") == "load")
    shards = load.filter(kind_in(SHARDS))["fields"].str.json_decode()
    progress = shards.struct.field("percent").to_list() if shards.len() else []
    load_done = load.filter(kind_in(LOADED)).height > 0
    later = _after_load(events) if load.height and not load_done else None
    still_loading = load.height > 0 and not load_done and ready.height == 0 and later is None
    load_s = _seconds(phases, "load")
    if later is not None and load["ts"].min() is not None:
        load_s = max(load_s or 0.0, (later - load["ts"].min()).total_seconds())
    ready_ts = ready["ts"].min() if ready.height else None
    summary = {
        "ready": ready.height > 0,
        "startup_s": round_or_none((ready_ts - first).total_seconds(), 1) if ready_ts and first else None,
        "load_s": round_or_none(load_s, 1),
        "load_end_inferred": later is not None,
        "graph_capture_s": round_or_none(_seconds(phases, "graph capture"), 1),
        "compile_s": round_or_none(_seconds(phases, "compile"), 1),
        "engine_init_s": round_or_none(_seconds(phases, "engine init"), 1),
        "still_loading": still_loading,
        "load_progress_pct": progress[-1] if progress else None,
        "load_progress_first_pct": progress[0] if progress else None,
    }
    return Family("startup", summary, {"phases": phases, "events": events.select(
        "ts", "source", "line_no", "raw", "kind", "phase", "rank")})


def _after_load(events: pl.DataFrame):
    """When the first line of a later phase came, after the last line of a load whose end
    line is missing; None where no such line has a time."""
    at = events.with_row_index("_i")
    last = at.filter(pl.col("phase") == "load")["_i"].max()
    after = at.filter((pl.col("_i") > last) & (pl.col("phase") != "load") & pl.col("ts").is_not_null())
    return after["ts"].min() if after.height else None


def _seconds(phases: pl.DataFrame, name: str) -> float | None:
    row = phases.filter(pl.col("phase") == name)
    return float(row["seconds"][0]) if row.height and row["seconds"][0] is not None else None
