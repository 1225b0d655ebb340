"""What nccl-tests measured: one row per size with its bucket (decode-sized, large), where the
bus bandwidth collapses, and lines showing processes that each ran as a job of their own."""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import round_or_none


KB, MB = 1024, 1024 * 1024

DECODE_BYTES = (8 * KB, 1 * MB)  # TP decode allreduce: hidden x tokens x 2 B (docs/formats-sources.md#reference-bandwidths)

LARGE_BYTES = 64 * MB  # bandwidth-bound sizes; compare these with link peaks, never the Avg line

COLLAPSE = 0.7  # busbw below 70 % of the peak at a smaller size, from there on: a collapse

TYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
              "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}


# ---------------------------------------------------------------------------- nccl-tests

def _infer_test() -> pl.Expr:
    """Which collective a row with no test name measured (nccl-tests size/count rules, docs/formats-sources.md#nccl-tests-output)."""
    elem = pl.col("type").replace_strict(TYPE_BYTES, default=None, return_dtype=pl.Int64)
    return (pl.when(pl.col("redop") == "none").then(pl.lit("all_gather_perf"))
            .when(pl.col("root") >= 0).then(pl.lit("reduce_perf"))
            .when(pl.col("size") == pl.col("count") * elem).then(pl.lit("all_reduce_perf"))
            .otherwise(pl.lit("reduce_scatter_perf")))


def perf_rows(perf: pl.DataFrame) -> pl.DataFrame:
    """nccl-tests rows with the test, the rank count and the best of out-of-place/in-place.

    Ranks: the `# Using devices` lines, else nThread x nGpus, else solved from busbw/algbw
    (AllReduce factor 2(n-1)/n, AllGather/ReduceScatter (n-1)/n).
    """
    if perf.height == 0:
        return perf.with_columns(busbw=pl.lit(None, pl.Float64), nranks=pl.lit(None, pl.Int64), bucket=pl.lit(None, pl.String))
    # A test named below its rows (a ticket that pastes the table, then the command) names them too.
    perf = perf.sort("source", "line_no").with_columns(
        test=pl.col("test").forward_fill().backward_fill().over("source"))
    devices = perf.filter(pl.col("what") == "device").group_by("source").agg(
        n_devices=pl.col("dev_rank").n_unique(), device_names=pl.col("device_name").unique().sort(),
        device_hosts=pl.col("dev_host").drop_nulls().n_unique())
    params = perf.filter(pl.col("what") == "params").group_by("source").agg(
        n_params=(pl.col("ngpus") * pl.col("nthread")).last())
    rows = perf.filter(pl.col("what") == "row").join(devices, on="source", how="left").join(params, on="source", how="left")
    ratio = (pl.col("oop_busbw") / pl.col("oop_algbw")).filter(pl.col("oop_algbw") > 0).median().over("source")
    test = pl.coalesce("test", _infer_test())
    solved = pl.when(test.str.starts_with("all_reduce")).then(2 / (2 - ratio)).when(
        test.str.starts_with("all_gather") | test.str.starts_with("reduce_scatter") | test.str.starts_with("alltoall")
    ).then(1 / (1 - ratio))
    return rows.with_columns(
        test=test,
        nranks=pl.coalesce("n_devices", "n_params", solved.round(0).cast(pl.Int64, strict=False)),
        # no device lines and no `nThread .. nGpus` line: the count is worked out from busbw/algbw
        nranks_inferred=pl.coalesce("n_devices", "n_params").is_null() & solved.is_not_null(),
        busbw=pl.max_horizontal("oop_busbw", "ip_busbw"),
        algbw=pl.max_horizontal("oop_algbw", "ip_algbw"),
        time_us=pl.min_horizontal("oop_time_us", "ip_time_us"),
        bucket=pl.when(pl.col("size").is_between(*DECODE_BYTES)).then(pl.lit("decode"))
        .when(pl.col("size") >= LARGE_BYTES).then(pl.lit("large")).otherwise(pl.lit("other")),
    ).select("source", "line_no", "raw", "test", "nranks", "nranks_inferred", "device_names", "device_hosts", "size",
             "count", "type", "redop", "time_us",
             "algbw", "busbw", "oop_busbw", "ip_busbw", "oop_wrong", "ip_wrong", "bucket")


HEADER = ("params", "columns", "test_start", "command", "version")


def lone_processes(perf: pl.DataFrame) -> pl.DataFrame:
    """Lines showing that several nccl-tests processes each ran as a job of their own (a binary
    built without MPI=1, or started without mpirun), one row per line with `why`:

    - `rank_twice`: one rank number printed by several processes (pid or host) in one header
      (no data row between): one job lists each rank once, Rank 0 to N-1.
    - `interleaved`: a table (same header, type, redop, root) whose sizes restart inside the
      sweep: an increasing run of sizes, neither the first nor the last, shorter than the
      sweep. One process prints its sizes in increasing order; `-N` cycles repeat whole sweeps.
    - `nranks_1`: busbw 0.00 where algbw is at least 0.1 GB/s: busbw = algbw x (n-1)/n or
      2(n-1)/n is 0 only for n = 1 (and equals algbw for broadcast/reduce), a process alone.
      Reported only beside one of the two others: one GPU tested alone is a run of its own.
    - `summary_twice`: two `# Avg bus bandwidth` summaries with no header or data row between
      them: one job prints one summary per test, each process of separate jobs its own
      (nccl/123: `3.94145` and `3.94156` one after the other).
    """
    if perf.height == 0:
        return pl.DataFrame(schema={"source": pl.String, "line_no": pl.Int64, "raw": pl.String, "why": pl.String})
    perf = perf.sort("source", "line_no").with_columns(
        rows_before=(pl.col("what") == "row").cum_sum().over("source"),
        segment=pl.col("what").is_in(HEADER).cum_sum().over("source"),
    )
    dev = perf.filter(pl.col("what") == "device").with_columns(
        writers=pl.struct("dev_host", "dev_pid").n_unique().over("source", "rows_before", "dev_rank"))
    twice = dev.filter(pl.col("writers") > 1).with_columns(why=pl.lit("rank_twice"))
    table = ["source", "segment", "type", "redop", "root"]
    rows = perf.filter(pl.col("what") == "row").with_columns(
        restart=(pl.col("size") <= pl.col("size").shift(1)).fill_null(False).over(table))
    rows = rows.with_columns(run=pl.col("restart").cum_sum().over(table), sweep=pl.col("size").n_unique().over(table))
    rows = rows.with_columns(run_len=pl.len().over(*table, "run"), last_run=pl.col("run").max().over(table))
    short = (pl.col("run") > 0) & (pl.col("run") < pl.col("last_run")) & (pl.col("run_len") < pl.col("sweep"))
    rows = rows.with_columns(mixed=short.any().over(table))
    interleaved = rows.filter(pl.col("mixed") & pl.col("restart")).with_columns(why=pl.lit("interleaved"))
    algbw, busbw = pl.max_horizontal("oop_algbw", "ip_algbw"), pl.max_horizontal("oop_busbw", "ip_busbw")
    alone = rows.filter((busbw == 0) & (algbw >= 0.1)).with_columns(why=pl.lit("nranks_1"))
    summaries = perf.filter(pl.col("what") == "avg_busbw")
    again = summaries.filter(pl.len().over("source", "segment", "rows_before") > 1).with_columns(
        why=pl.lit("summary_twice"))
    found = [df.select("source", "line_no", "raw", "why") for df in (twice, interleaved, again) if df.height]
    if not found:
        return pl.DataFrame(schema={"source": pl.String, "line_no": pl.Int64, "raw": pl.String, "why": pl.String})
    sources = pl.concat(found)["source"].unique()
    found.append(alone.filter(pl.col("source").is_in(sources.implode())).select("source", "line_no", "raw", "why"))
    return pl.concat(found).sort("source", "line_no")


def collapse_size(rows: pl.DataFrame) -> int | None:
    """The smallest size from which busbw stays below COLLAPSE x the best busbw at any smaller size."""
    rows = rows.sort("size").with_columns(best_before=pl.col("busbw").cum_max().shift(1))
    low = rows.with_columns(low=(pl.col("busbw") < COLLAPSE * pl.col("best_before")).fill_null(False))
    stays = low.with_columns(stays=pl.col("low").reverse().cum_min().reverse())  # low from here to the end
    hit = stays.filter(pl.col("stays") & pl.col("low"))
    return int(hit["size"][0]) if hit.height else None


def perf_summary(perf: pl.DataFrame) -> dict:
    rows = perf.filter(pl.col("busbw").is_not_null()) if perf.height else perf
    if rows.height == 0:
        return {"perf_rows": 0}
    # A bandwidth verdict needs large messages: small ones are latency-bound (busbw 0.00 at
    # 8 B), so a table cut before the large sizes gives none (busbw_large None).
    large = rows.filter(pl.col("bucket") == "large")
    top = large if large.height else rows.filter(pl.col("size") == rows["size"].max())
    decode = rows.filter(pl.col("bucket") == "decode")
    names = rows["device_names"].drop_nulls()
    return {
        "perf_rows": rows.height,
        "perf_tests": sorted(rows["test"].drop_nulls().unique().to_list()),
        "perf_nranks": int(rows["nranks"].max()) if rows["nranks"].max() is not None else None,
        "perf_nranks_inferred": rows["nranks"].max() is not None
        and bool(rows.filter(pl.col("nranks") == rows["nranks"].max())["nranks_inferred"].all()),
        "perf_devices": sorted({n for lst in names.to_list() for n in lst}) if names.len() else [],
        # hosts the `# Using devices` lines name: more than one, and the test crossed the network
        "perf_hosts": int(rows["device_hosts"].max() or 0),
        "busbw_large": round_or_none(large["busbw"].max(), 2) if large.height else None,
        "busbw_large_size": int(top.sort("busbw")["size"][-1]),
        "busbw_peak": round_or_none(rows["busbw"].max(), 2),
        "busbw_decode_median": round_or_none(decode["busbw"].median(), 2) if decode.height else None,
        "time_decode_us_median": round_or_none(decode["time_us"].median(), 2) if decode.height else None,
        "collapse_size": collapse_size(rows),
        "wrong": int((rows["oop_wrong"].fill_null(0) + rows["ip_wrong"].fill_null(0)).sum()),
    }
