"""NCCL's collectives as traced and watched: call sizes and each rank's last opCount (COLL
lines), and the watchdog's timeouts: which collective hung, on which ranks, after how long."""

from __future__ import annotations

import polars as pl

from loganalyze.kinds import kind_in, kinds
from loganalyze.metrics.base import round_or_none
from loganalyze.metrics.nccl.perf import DECODE_BYTES


BF16 = 2

TIMEOUT_KINDS = kinds("pg_watchdog_timeout")

SGLANG_TIMEOUT = kinds("watchdog_timeout")

# PyTorch's heartbeat monitor on the watchdog thread itself: no progress for
# TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, the process is terminated after a debug dump.
HEARTBEAT = kinds("pg_heartbeat_timeout", "pg_watchdog_stuck")
# The monitor's last word, `Terminating the process after attempting to dump debug info, due to
# ProcessGroupNCCL watchdog hang.`, a flight-recorder notice whose reason is the same verdict.
FLIGHT_RECORDER = kinds("flight_recorder")
WATCHDOG_HANG = kind_in(HEARTBEAT) | (kind_in(FLIGHT_RECORDER) & pl.col("fields").str.json_path_match(
    "$.reason").str.contains("watchdog hang").fill_null(False))

ERRORS, ABORT, PROGRESS = kinds("pg_nccl_error", "nccl_error_trail"), kinds("pg_abort"), kinds("pg_watchdog_progress")


# ---------------------------------------------------------------------------- COLL traces

def coll_sizes(colls: pl.DataFrame) -> pl.DataFrame:
    """Calls and message sizes per operation (bytes = count x datatype size)."""
    if colls.height == 0:
        return pl.DataFrame(schema={"op": pl.String, "calls": pl.UInt32})
    return colls.group_by("op", "dtype", "nranks").agg(
        calls=pl.len(), bytes_min=pl.col("bytes").min(), bytes_median=pl.col("bytes").median(),
        bytes_max=pl.col("bytes").max(), decode_sized=pl.col("bytes").is_between(*DECODE_BYTES).mean(),
        comms=pl.col("comm").n_unique(),
    ).sort("calls", descending=True)


def coll_progress(colls: pl.DataFrame) -> pl.DataFrame:
    """The last opCount each process issued per communicator: a rank behind the others is the
    one that stopped issuing (COLL lines are logged at enqueue, never at completion)."""
    if colls.height == 0:
        return pl.DataFrame(schema={"host": pl.String, "last_op_count": pl.Int64})
    return colls.sort("line_no").group_by("source", "host", "pid", "gpu", "comm", "nranks").agg(
        last_op_count=pl.col("op_count").last(), last_op=pl.col("op").last(), calls=pl.len(),
        line_no=pl.col("line_no").last(), raw=pl.col("raw").last(),
    ).sort("last_op_count")


def ranks_behind(progress: pl.DataFrame) -> pl.DataFrame:
    """Processes whose last opCount is below the highest of other processes in communicators
    of the same size (comm pointers differ per process, so the size stands for the comm)."""
    if progress.height == 0:
        return progress
    per = progress.group_by("source", "host", "pid", "nranks").agg(
        last_op_count=pl.col("last_op_count").max(), line_no=pl.col("line_no").max(), raw=pl.col("raw").last())
    per = per.with_columns(top=pl.col("last_op_count").max().over("nranks"), procs=pl.len().over("nranks"))
    return per.filter((pl.col("procs") > 1) & (pl.col("last_op_count") < pl.col("top"))).sort("line_no")


def coll_summary(colls: pl.DataFrame) -> dict:
    if colls.height == 0:
        return {"coll_calls": 0}
    behind = ranks_behind(coll_progress(colls))
    return {
        "coll_calls": colls.height,
        "coll_ops": dict(sorted(colls["op"].value_counts().iter_rows())),
        "coll_bytes_median": int(colls["bytes"].median()) if colls["bytes"].median() is not None else None,
        "coll_bytes_max": colls["bytes"].max(),
        "coll_decode_fraction": round_or_none(colls["bytes"].is_between(*DECODE_BYTES).mean()),
        "coll_ranks_behind": behind.height > 0,
    }


# ---------------------------------------------------------------------------- watchdog

WATCHDOG_FIELDS = pl.Struct({
    "pg": pl.String, "pg_desc": pl.String, "seq_num": pl.Int64, "op_type": pl.String, "numel_in": pl.Int64,
    "numel_out": pl.Int64, "timeout_ms": pl.Int64, "ran_for_ms": pl.Int64, "tensor_shape": pl.String,
})

PROGRESS_FIELDS = pl.Struct({"pg": pl.String, "work": pl.Int64, "last_enqueued": pl.Int64, "last_completed": pl.Int64})


def watchdog(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """PyTorch watchdog timeouts, one per (source, rank, SeqNum, OpType) (the
    `terminated with exception` line repeats the first), and the progress lines."""
    keep = ["source", "line_no", "raw", "rank", "ts"]
    wd = events.filter(kind_in(TIMEOUT_KINDS))
    timeouts = wd.select(*keep, f=pl.col("fields").str.json_decode(WATCHDOG_FIELDS)).unnest("f").sort("line_no") \
        .unique(["source", "rank", "seq_num", "op_type"], keep="first", maintain_order=True)
    prog = events.filter(kind_in(PROGRESS))
    progress = prog.select(*keep, f=pl.col("fields").str.json_decode(PROGRESS_FIELDS)).unnest("f").sort("line_no")
    return timeouts.with_columns(numel_bytes_bf16=pl.col("numel_in") * BF16), progress


def hang_context(events: pl.DataFrame, stats: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Each timeout (PyTorch or SGLang watchdog) with the last stats line before it in its file:
    what the server was doing when it stopped."""
    hangs = events.filter(kind_in(TIMEOUT_KINDS + SGLANG_TIMEOUT) | WATCHDOG_HANG).select(
        "source", "line_no", "raw", "kind", "rank", "fields").sort("line_no")
    if hangs.height and isinstance(stats, pl.LazyFrame):
        stats = stats.collect()
    if hangs.height == 0 or stats.height == 0:
        return hangs.with_columns(stats_line=pl.lit(None, pl.Int64), stats_raw=pl.lit(None, pl.String),
                                  running=pl.lit(None, pl.Int64), queued=pl.lit(None, pl.Int64))
    before = stats.select("source", stats_line="line_no", stats_raw="raw", running="running", queued="queued").sort("stats_line")
    return hangs.join_asof(before, left_on="line_no", right_on="stats_line", by="source", strategy="backward",
                           check_sortedness=False)


def timeout_summary(timeouts: pl.DataFrame, progress: pl.DataFrame, hangs: pl.DataFrame) -> dict:
    out: dict = {"watchdog_timeouts": timeouts.height,
                 "sglang_watchdog_timeouts": hangs.filter(kind_in(SGLANG_TIMEOUT)).height,
                 **heartbeat_summary(hangs.filter(WATCHDOG_HANG))}
    if timeouts.height:
        first = timeouts.row(0, named=True)
        out.update({
            "timeout_op": first["op_type"], "timeout_seq": first["seq_num"], "timeout_numel": first["numel_in"],
            "timeout_numel_out": first["numel_out"], "timeout_ms": first["timeout_ms"], "timeout_ran_for_ms": first["ran_for_ms"],
            "timeout_pg": timeouts["pg"].drop_nulls().first() if timeouts["pg"].drop_nulls().len() else None,
            "timeout_ranks": sorted(timeouts["rank"].drop_nulls().unique().to_list(), key=_num),
            "timeout_seqs": sorted(timeouts["seq_num"].drop_nulls().unique().to_list()),
            "reported_ranks": sorted(set(timeouts["rank"].drop_nulls().to_list()) | set(progress["rank"].drop_nulls()
                                     .to_list()), key=_num),
        })
    if progress.height:
        last = progress.group_by("rank").agg(pl.col("last_completed").min(), pl.col("last_enqueued").max())
        lo, hi = last["last_completed"].min(), last["last_completed"].max()
        out.update({
            "last_enqueued": progress["last_enqueued"].max(), "last_completed": lo,
            "straggler_ranks": sorted(last.filter(pl.col("last_completed") == lo)["rank"].drop_nulls().to_list(), key=_num)
            if lo is not None and hi is not None and lo < hi else [],
        })
    return out


HEARTBEAT_FIELDS = pl.Struct({"pg": pl.String, "stuck_s": pl.Int64, "queued_works": pl.Int64})


def heartbeat_summary(beats: pl.DataFrame) -> dict:
    """The heartbeat monitor's verdicts: on how many ranks the watchdog thread stopped, for
    how long (`got stuck for N seconds`) and how many collectives were queued behind it."""
    if beats.height == 0:
        return {"heartbeat_timeouts": 0}
    f = beats["fields"].str.json_decode(HEARTBEAT_FIELDS)
    return {"heartbeat_timeouts": beats.height,
            "heartbeat_ranks": sorted(beats["rank"].drop_nulls().unique().to_list(), key=_num),
            "heartbeat_pgs": sorted(f.struct.field("pg").drop_nulls().unique().to_list(), key=_num),
            "watchdog_stuck_s": f.struct.field("stuck_s").max(), "queued_works": f.struct.field("queued_works").max()}


def _num(rank: str | None) -> int:
    return int(rank) if rank and rank.isdigit() else 10**9
