"""NCCL: which transport each communicator uses, how many channels, what nccl-tests measured,
how big the collectives are, and which collective hung.

Sources are the nccl/nccl-tests tables (loganalyze/formats/nccl/, loganalyze/formats/nccl_tests.py) plus the
PyTorch and SGLang watchdog events. Per-communicator facts come from init lines: transport
lines carry no comm pointer, so each is tied to the nearest `Init START` before it (2.18+)
or `Init COMPLETE` after it (older releases print no START) of the same host, pid and
cudaDev. The communicator key is `commId` (shared by all ranks), else the source and nranks.
The line forms are described in docs/formats-sources.md#nccl-debug-output.
"""

from __future__ import annotations

import polars as pl

from loganalyze.kinds import kind_in, kind_prefix, kinds
from loganalyze.metrics.base import Family, round_or_none
from loganalyze.run import Run

KB, MB = 1024, 1024 * 1024
DECODE_BYTES = (8 * KB, 1 * MB)  # TP decode allreduce: hidden x tokens x 2 B (docs/formats-sources.md#reference-bandwidths)
LARGE_BYTES = 64 * MB  # bandwidth-bound sizes; compare these with link peaks, never the Avg line
COLLAPSE = 0.7  # busbw below 70 % of the peak at a smaller size, from there on: a collapse
BF16 = 2
TYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
              "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
P2P = ("P2P/direct pointer", "P2P/CUMEM", "P2P/IPC", "P2P/indirect", "P2P")
TIMEOUT_KINDS = kinds("pg_watchdog_timeout")
SGLANG_TIMEOUT = kinds("watchdog_timeout")
PYTORCH = kind_prefix("pg_")
WARN, TRAIL = kinds("nccl_warn"), kinds("nccl_error_trail")
ERRORS, ABORT, PROGRESS = kinds("pg_nccl_error", "nccl_error_trail"), kinds("pg_abort"), kinds("pg_watchdog_progress")


def nccl(run: Run) -> Family | None:
    """The NCCL family, or None when the run holds no NCCL, nccl-tests or watchdog data."""
    t = {name: run.table(name).collect() for name in ("nccl_comms", "nccl_links", "nccl_topo", "nccl_colls",
                                                      "nccl_perf")}
    events = run.table("events").filter(
        pl.col("kind").str.starts_with(PYTORCH) | kind_in(WARN + TRAIL + SGLANG_TIMEOUT)
        | pl.col("message").str.contains("NCCL error")).collect()
    if all(df.height == 0 for df in t.values()) and events.height == 0:
        return None
    comms = comm_keys(t["nccl_comms"])
    links = link_facts(t["nccl_links"], t["nccl_comms"], comms)
    per_comm = comm_summary(links, t["nccl_links"], t["nccl_comms"], comms)
    env = env_overrides(t["nccl_comms"], t["nccl_perf"])
    perf = perf_rows(t["nccl_perf"])
    colls = t["nccl_colls"].filter(pl.col("what") == "call")
    timeouts, progress = watchdog(events)
    stats = run.table("stats").select("source", "line_no", "raw", "running", "queued", "gen_throughput")
    hangs = hang_context(events, stats)  # reads the stats table only when there is a timeout
    frames = {
        "links": links, "transport_mix": transport_mix(links), "comms": per_comm, "env": env, "busbw": perf,
        "coll_sizes": coll_sizes(colls), "coll_progress": coll_progress(colls),
        "coll_behind": ranks_behind(coll_progress(colls)), "timeouts": timeouts,
        "progress": progress, "hangs": hangs, "topo": t["nccl_topo"], "lone_processes": lone_processes(t["nccl_perf"]),
        "warns": events.filter(kind_in(WARN)),
        "errors": events.filter(kind_in(ERRORS)
                                | pl.col("message").str.contains("NCCL error")),
    }
    summary = {
        **version_summary(t["nccl_comms"]), **transport_summary(links, per_comm, env),
        **topo_summary(t["nccl_topo"]), **perf_summary(perf), **coll_summary(colls),
        **timeout_summary(timeouts, progress, hangs),
        "process_abort": events.filter(kind_in(ABORT) | pl.col("message").str.contains(
            "taking the entire process down")).height > 0,
    }
    return Family("nccl", summary, frames, notes=_notes(perf, links))


# ---------------------------------------------------------------------------- communicators

def comm_keys(comms: pl.DataFrame) -> pl.DataFrame:
    """Init lines with their communicator key (commId, else source:nranks)."""
    init = comms.filter(pl.col("what").is_in(["init_start", "init_complete"]))
    return init.with_columns(comm_key=pl.coalesce(
        "comm_id", pl.concat_str([pl.col("source"), pl.lit(":n"), pl.col("nranks").cast(pl.String)]),
    )).select("source", "line_no", "host", "pid", "gpu", "what", "comm", "comm_key", "nranks", "rank")


def _attach(rows: pl.DataFrame, init: pl.DataFrame, what: str, strategy: str) -> pl.DataFrame:
    anchors = init.filter((pl.col("what") == what) & pl.col("host").is_not_null()).select(
        "source", "host", "pid", "gpu", pl.col("line_no").alias("_at"), pl.col("comm_key").alias(f"_k_{what}"),
        pl.col("nranks").alias(f"_n_{what}"), pl.col("comm").alias(f"_c_{what}")).sort("_at")
    if anchors.height == 0 or rows.height == 0:
        return rows.with_columns(pl.lit(None, pl.String).alias(f"_k_{what}"), pl.lit(None, pl.Int64).alias(f"_n_{what}"),
                                 pl.lit(None, pl.String).alias(f"_c_{what}"))
    return rows.sort("line_no").join_asof(anchors, left_on="line_no", right_on="_at", by=["source", "host", "pid", "gpu"],
                                          strategy=strategy, check_sortedness=False).drop("_at")


def with_comm(rows: pl.DataFrame, comms: pl.DataFrame) -> pl.DataFrame:
    """Give rows without a comm pointer (transport, channel lines) their communicator key."""
    rows = _attach(_attach(rows, comms, "init_start", "backward"), comms, "init_complete", "forward")
    fallback = pl.concat_str([pl.col("source"), pl.lit(":?")])
    return rows.with_columns(
        comm_key=pl.coalesce("_k_init_start", "_k_init_complete", fallback),
        comm_nranks=pl.coalesce("_n_init_start", "_n_init_complete"),
        comm=pl.coalesce("_c_init_start", "_c_init_complete"),
    ).drop("_k_init_start", "_k_init_complete", "_n_init_start", "_n_init_complete", "_c_init_start", "_c_init_complete")


def _nnodes(comms_table: pl.DataFrame, comms: pl.DataFrame) -> pl.DataFrame:
    """nNodes per communicator key, from `comm 0x.. rank r nRanks n nNodes k ...` lines."""
    info = comms_table.filter(pl.col("what") == "comm_info").select("source", "host", "pid", "comm", "nnodes")
    keys = comms.select("source", "host", "pid", "comm", "comm_key").unique()
    return info.join(keys, on=["source", "host", "pid", "comm"]).group_by("comm_key").agg(nnodes=pl.col("nnodes").max())


def link_facts(links_table: pl.DataFrame, comms_table: pl.DataFrame, comms: pl.DataFrame) -> pl.DataFrame:
    """Transport lines with their communicator and whether both ends sit in one box.

    SHM and P2P (but MNNVL) are intra-node by construction. A NET link is intra-node when
    the communicator has one node, or when the peer rank was seen logging from the same
    host; otherwise it is taken as inter-node (null when unknown). The process that prints
    a link is its sender, except on a `[receive]` line: there it is the receiver, and the
    peer is the rank on the left of the arrow (in a multi-node log both ends print the link).
    """
    link = links_table.filter(pl.col("what") == "link")
    if link.height == 0:
        return link.with_columns(comm_key=pl.lit(None, pl.String), comm_nranks=pl.lit(None, pl.Int64),
                                 intra=pl.lit(None, pl.Boolean), peer_host=pl.lit(None, pl.String),
                                 net_dev=pl.lit(None, pl.String))
    receive = pl.col("direction") == "receive"
    link = with_comm(link, comms).with_columns(
        _own=pl.when(receive).then("dst_rank").otherwise("src_rank"),
        _peer=pl.when(receive).then("src_rank").otherwise("dst_rank"),
    )
    hosts = pl.concat([
        link.select("comm_key", rank_=pl.col("_own"), host_=pl.col("host")),
        comms.select("comm_key", rank_=pl.col("rank").cast(pl.Int64, strict=False), host_=pl.col("host")),
    ]).drop_nulls().unique(["comm_key", "rank_"])
    link = link.join(hosts, left_on=["comm_key", "_peer"], right_on=["comm_key", "rank_"], how="left") \
        .rename({"host_": "peer_host"}).drop("_own", "_peer").join(_nnodes(comms_table, comms), on="comm_key", how="left")
    t = pl.col("transport")
    intra = (
        pl.when(t.str.starts_with("SHM") | (t.str.starts_with("P2P") & (t != "P2P/MNNVL"))).then(True)
        .when(pl.col("nnodes") == 1).then(True)
        .when(pl.col("peer_host").is_not_null() & pl.col("host").is_not_null()).then(pl.col("peer_host") == pl.col("host"))
        .otherwise(None)
    )
    return link.with_columns(intra=intra, net_dev=pl.col("via").str.extract(r"^NET/[^/]+/(\d+)", 1)).sort("source", "line_no")


def transport_mix(links: pl.DataFrame) -> pl.DataFrame:
    """Per communicator and transport: link lines, distinct rank pairs, channels, GPUs involved."""
    if links.height == 0:
        return pl.DataFrame(schema={"comm_key": pl.String, "transport": pl.String, "links": pl.UInt32})
    return links.group_by("comm_key", "transport").agg(
        links=pl.len(),
        pairs=pl.struct("src_rank", "dst_rank").n_unique(),
        channels=pl.col("channel").n_unique(),
        intra=pl.col("intra").all(),
        hosts=pl.col("host").drop_nulls().unique().sort(),
        gpus=pl.concat_str([pl.col("src_dev"), pl.lit("->"), pl.col("dst_dev")]).unique().sort(),
        read=pl.col("read").any(), gdr=pl.col("gdr").any(),
    ).sort("comm_key", "links", descending=[False, True])


def comm_summary(links: pl.DataFrame, links_table: pl.DataFrame, comms_table: pl.DataFrame,
                 comms: pl.DataFrame) -> pl.DataFrame:
    """Per communicator: ranks, hosts, channels (ring listing, `coll channels` line, or the
    channel numbers of its transport lines), and its transport mix."""
    rings = with_comm(links_table.filter(pl.col("what") == "ring"), comms).group_by("comm_key").agg(
        ring_channels=pl.col("nchannels").max(), ring_len=pl.col("ring_len").max())
    trees = with_comm(links_table.filter(pl.col("what") == "tree"), comms).group_by("comm_key").agg(
        tree_channels=pl.col("ntrees").max())
    chans = with_comm(comms_table.filter(pl.col("what") == "channels"), comms).group_by("comm_key").agg(
        coll_channels=pl.col("coll_channels").max(), p2p_per_peer=pl.col("p2p_per_peer").max())
    from_links = links.group_by("comm_key").agg(
        link_channels=pl.col("channel").max() + 1, link_ranks=pl.max_horizontal("src_rank", "dst_rank").max() + 1,
        hosts=pl.col("host").drop_nulls().n_unique(), nranks_init=pl.col("comm_nranks").max(),
        transports=pl.col("transport").unique().sort(),
    ) if links.height else pl.DataFrame(schema={"comm_key": pl.String})
    parts = [df for df in (rings, trees, chans, from_links) if df.height]
    keys = pl.concat([df.select("comm_key") for df in parts]).unique() if parts else pl.DataFrame(
        schema={"comm_key": pl.String})
    out = keys
    for df in parts:
        out = out.join(df, on="comm_key", how="left") if df.height else out
    cols = set(out.columns)
    pick = lambda *c: pl.max_horizontal([pl.col(x) for x in c if x in cols]) if any(x in cols for x in c) \
        else pl.lit(None, pl.Int64)  # noqa: E731
    return out.with_columns(
        channels=pick("ring_channels", "tree_channels", "coll_channels", "link_channels"),
        channels_stated=pick("ring_channels", "tree_channels", "coll_channels"),  # totals NCCL printed
        nranks=pick("nranks_init", "ring_len", "link_ranks"),
    ).sort("comm_key")


def env_overrides(comms_table: pl.DataFrame, perf: pl.DataFrame) -> pl.DataFrame:
    """NCCL_* settings: `X set by environment to v` lines and NCCL_X=v on an nccl-tests command line."""
    lines = comms_table.filter(pl.col("what") == "env").select("source", "line_no", "raw", var="env_var", value="env_value")
    cmd = perf.filter(pl.col("env").is_not_null() & (pl.col("env") != "")).select(
        "source", "line_no", "raw", _kv=pl.col("env").str.split(" ")).explode("_kv").with_columns(
        var=pl.col("_kv").str.extract(r"^([^=]+)=", 1), value=pl.col("_kv").str.extract(r"=(.*)$", 1)).drop("_kv")
    return pl.concat([lines, cmd.select(lines.columns)]).unique(["source", "var", "value"], keep="first").sort("source", "line_no")


def _env_value(env: pl.DataFrame, var: str) -> str | None:
    rows = env.filter(pl.col("var") == var)
    return rows["value"][-1] if rows.height else None


# ---------------------------------------------------------------------------- summaries

def version_summary(comms: pl.DataFrame) -> dict:
    ver = comms.filter(pl.col("what") == "version")
    drv = comms.filter(pl.col("what") == "cuda_driver")["driver"].drop_nulls()
    cc = comms.filter(pl.col("what") == "cc")["cc"].drop_nulls()
    nvls = comms.filter(pl.col("what") == "nvls")["nvls"].drop_nulls()
    net = comms.filter(pl.col("what") == "network")["network"].drop_nulls()
    timings = comms.filter(pl.col("what") == "init_timings")
    return {
        "nccl_versions": sorted(ver["version"].drop_nulls().unique().to_list()),
        "cuda_versions": sorted(ver["cuda"].drop_nulls().unique().to_list()),
        "cuda_driver": int(drv.max()) if drv.len() else None,
        "cc_on": bool((cc == "On").any()) if cc.len() else None,
        "nvls_available": bool((nvls == "available").any()) if nvls.len() else None,
        "networks": sorted(net.unique().to_list()),
        "init_s_max": round_or_none(timings["init_s"].max(), 2) if timings.height else None,
        "init_bootstrap_s_max": round_or_none(timings["bootstrap_s"].max(), 2) if timings.height else None,
    }


def transport_summary(links: pl.DataFrame, per_comm: pl.DataFrame, env: pl.DataFrame) -> dict:
    t = links["transport"] if links.height else pl.Series([], dtype=pl.String)
    intra = links.filter(pl.col("intra").fill_null(False)) if links.height else links
    channels = per_comm["channels"].drop_nulls() if "channels" in per_comm.columns else pl.Series([], dtype=pl.Int64)
    nranks = per_comm["nranks"].drop_nulls() if "nranks" in per_comm.columns else pl.Series([], dtype=pl.Int64)
    return {
        "links": links.height,
        "transports": dict(sorted(t.value_counts().iter_rows())) if links.height else {},
        "p2p_links": int(t.is_in(list(P2P)).sum()) if links.height else 0,
        "shm_links": int(t.str.starts_with("SHM").sum()) if links.height else 0,
        "net_links": int(t.str.starts_with("NET").sum()) if links.height else 0,
        "net_intra_links": int(intra["transport"].str.starts_with("NET").sum()) if intra.height else 0,
        "hosts": links["host"].drop_nulls().n_unique() if links.height else 0,
        "comms": per_comm.height,
        "nranks_max": int(nranks.max()) if nranks.len() else None,
        "channels_min": int(channels.min()) if channels.len() else None,
        "channels_max": int(channels.max()) if channels.len() else None,
        "p2p_disable": _env_value(env, "NCCL_P2P_DISABLE"),
        "p2p_level": _env_value(env, "NCCL_P2P_LEVEL"),
        "shm_disable": _env_value(env, "NCCL_SHM_DISABLE"),
        "env": {r["var"]: r["value"] for r in env.iter_rows(named=True)},
    }


def topo_summary(topo: pl.DataFrame) -> dict:
    """GPU-to-GPU path types of the GRAPH dump (PIX/PXB allow P2P by default; PHB/SYS do not)."""
    paths = topo.filter((pl.col("what") == "path") & pl.col("src").str.starts_with("GPU")
                        & pl.col("dst").str.starts_with("GPU") & (pl.col("path_type") != "LOC"))
    system = topo.filter(pl.col("what") == "system")
    return {
        "topo_max_bw": float(system["max_bw"].max()) if system.height else None,
        "gpu_path_types": dict(sorted(paths["path_type"].value_counts().iter_rows())) if paths.height else {},
        "gpu_path_bw": {r["path_type"]: r["bw"] for r in paths.group_by("path_type").agg(pl.col("bw").min())
                        .iter_rows(named=True)} if paths.height else {},
    }


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
        n_devices=pl.col("dev_rank").n_unique(), device_names=pl.col("device_name").unique().sort())
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
    ).select("source", "line_no", "raw", "test", "nranks", "nranks_inferred", "device_names", "size", "count", "type", "redop", "time_us",
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
        "busbw_large": round_or_none(large["busbw"].max(), 2) if large.height else None,
        "busbw_large_size": int(top.sort("busbw")["size"][-1]),
        "busbw_peak": round_or_none(rows["busbw"].max(), 2),
        "busbw_decode_median": round_or_none(decode["busbw"].median(), 2) if decode.height else None,
        "time_decode_us_median": round_or_none(decode["time_us"].median(), 2) if decode.height else None,
        "collapse_size": collapse_size(rows),
        "wrong": int((rows["oop_wrong"].fill_null(0) + rows["ip_wrong"].fill_null(0)).sum()),
    }


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
    hangs = events.filter(kind_in(TIMEOUT_KINDS + SGLANG_TIMEOUT)).select(
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
                 "sglang_watchdog_timeouts": hangs.filter(kind_in(SGLANG_TIMEOUT)).height}
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


def _num(rank: str | None) -> int:
    return int(rank) if rank and rank.isdigit() else 10**9


def _notes(perf: pl.DataFrame, links: pl.DataFrame) -> dict[str, str]:
    notes = {}
    if perf.height and perf["test"].null_count() == 0 and perf.height:
        notes["busbw"] = f"decode sizes {DECODE_BYTES[0] // KB} KB - {DECODE_BYTES[1] // MB} MB; large >= {LARGE_BYTES // MB} MB"
    if links.height and links["comm_key"].str.ends_with(":?").all():
        notes["comms"] = "no init lines: every transport line of a file counted as one communicator"
    return notes
