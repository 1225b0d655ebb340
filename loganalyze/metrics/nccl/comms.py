"""Per-communicator NCCL facts: each transport line tied to its communicator's init, links and
their transports, channels, settings the environment overrode, versions, topology."""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import round_or_none


P2P = ("P2P/direct pointer", "P2P/CUMEM", "P2P/IPC", "P2P/indirect", "P2P")


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
