"""nccl-transport: GPUs in one box talking through host memory or the network instead of P2P,
P2P turned off by the environment, a topology that rules P2P out, or too few channels.

Every TP decode step pays two allreduces per layer, so the transport NCCL picked at init
bounds every step (docs/formats-sources.md, "Transport lines" and "What the init log says
about performance"). Reference busbw and thresholds are cited in docs/findings-nccl.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from loganalyze.diagnosis.base import SEVERITIES, Case, Finding

# Large-message 8-GPU ring busbw, GB/s (docs/formats-sources.md#reference-bandwidths): PCIe P2P 20-35 ("normal PCIe",
# NVIDIA/nccl#1639: 28), SHM bounded by host memory "a few GB/s to ~20", NET/Socket "a few".
REF_P2P_PCIE = (20.0, 35.0)
REF_SHM = (3.0, 20.0)
REF_SOCKET = (1.0, 5.0)
# One InfiniBand/RoCE NIC, GB/s per direction: 200 Gb/s (HDR, 200 GbE) to 400 Gb/s (NDR,
# 400 GbE) line rate / 8 (docs/findings-nccl.md).
REF_IB_NIC = (25.0, 50.0)
# Share of a TP decode step spent in allreduce on PCIe boxes: an assumption used only to
# turn a collective slowdown into a throughput estimate (docs/findings-nccl.md).
COMM_SHARE = 0.3
FEW_CHANNELS = 2  # 1-2 coll channels = low ring parallelism (docs/formats-sources.md)
MANY_RANKS = 8  # beyond one 8-GPU box, or NVLink: few channels then limit bandwidth
P2P_OFF_LEVELS = ("LOC", "0")


@dataclass
class Part:
    severity: str
    text: str
    recommendation: str
    impact: float = 0.0
    rows: pl.DataFrame | None = None
    facts: dict = field(default_factory=dict)


def _mid(ref: tuple[float, float]) -> float:
    return sum(ref) / 2


def _gpus(rows: pl.DataFrame, limit: int = 8) -> str:
    """`GPU 7->2, 3->7 on node01`: the device ids as printed (GPU index from 2.18, else bus id)."""
    pairs = rows.select(pl.concat_str([pl.col("src_dev"), pl.lit("->"), pl.col("dst_dev")]).alias("p"))["p"]
    uniq = pairs.unique(maintain_order=True).to_list()
    hosts = sorted(rows["host"].drop_nulls().unique().to_list())
    more = f" (+{len(uniq) - limit} more)" if len(uniq) > limit else ""
    return f"{', '.join(uniq[:limit])}{more}" + (f" on {', '.join(hosts)}" if hosts else "")


def shm_part(links: pl.DataFrame) -> Part | None:
    shm = links.filter(pl.col("transport") == "SHM")
    if shm.height == 0:
        return None
    share = shm.height / links.height
    lost = 1 - _mid(REF_SHM) / _mid(REF_P2P_PCIE)
    return Part(
        "warning",
        f"{shm.height} of {links.height} channel connections ({share:.0%}) go through host memory (SHM) instead of "
        f"P2P: GPU {_gpus(shm)}. SHM busbw is bounded by host memory ({REF_SHM[0]:.0f}-{REF_SHM[1]:.0f} GB/s on 8 "
        f"GPUs) against {REF_P2P_PCIE[0]:.0f}-{REF_P2P_PCIE[1]:.0f} GB/s for PCIe P2P, so collectives can run ~2x slower.",
        "Check why P2P is off: `nvidia-smi topo -m` (PHB/SYS pairs are beyond NCCL's default P2P level PXB), "
        "NCCL_P2P_DISABLE in the environment, ACS/IOMMU on the PCIe switches. Then measure both with nccl-tests "
        "(`all_reduce_perf -b 8K -e 1G -f 2 -g N`, default vs NCCL_P2P_LEVEL=SYS): P2P through the CPU root "
        "complex is not always faster (NVIDIA/nccl#1817).",
        impact=share * lost * COMM_SHARE, rows=shm, facts={"shm_links": shm.height},
    )


def net_part(links: pl.DataFrame) -> Part | None:
    net = links.filter(pl.col("transport").str.starts_with("NET") & pl.col("intra").fill_null(False))
    if net.height == 0:
        return None
    lost = 1 - _mid(REF_SOCKET) / _mid(REF_P2P_PCIE)
    return Part(
        "warning",
        f"{net.height} connections between ranks on the same node use the network ({', '.join(net['transport'].unique().sort())}): "
        f"GPU {_gpus(net)}. NCCL did not see these ranks as one host (hostname/host-hash mismatch across containers, "
        "or NCCL_SHM_DISABLE=1 with P2P off); intra-node traffic over NET is very slow.",
        "Run the ranks of one box in one container / network namespace (or with the same hostname), and do not set "
        "NCCL_SHM_DISABLE=1 together with NCCL_P2P_DISABLE=1.",
        impact=lost * COMM_SHARE, rows=net, facts={"net_intra_links": net.height},
    )


def alone_in_node(raw_comms: pl.DataFrame) -> bool:
    """Every communicator the log describes has one rank on each node (`localRanks 1`): no two
    of its GPUs share a box, so P2P and SHM, which join GPUs of one node, carry nothing."""
    if "local_ranks" not in raw_comms.columns:
        return False
    local = raw_comms["local_ranks"].drop_nulls()
    return local.len() > 0 and local.max() == 1


def env_part(s: dict, env: pl.DataFrame, links: pl.DataFrame, alone: bool = False) -> Part | None:
    """P2P turned off by NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; moot where each node holds one rank
    (`alone`, nccl/131: three nodes of one GPU each with NCCL_P2P_LEVEL=LOC)."""
    off = s.get("p2p_disable") == "1" or (s.get("p2p_level") or "").upper() in P2P_OFF_LEVELS
    if not off or alone:
        return None
    var = "NCCL_P2P_DISABLE=1" if s.get("p2p_disable") == "1" else f"NCCL_P2P_LEVEL={s['p2p_level']}"
    rows = env.filter(pl.col("var").is_in(["NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"]))
    return Part(
        "warning",
        f"P2P is disabled by the environment ({var}): every intra-node transfer goes through host memory.",
        f"Remove {var} unless it is the workaround for a P2P hang (ACS/IOMMU redirect, local-inference-lab/rtx6kpro#15); "
        "if so, fix the platform (ACS off on the PCIe switches, IOMMU passthrough) and re-enable P2P.",
        impact=(1 - _mid(REF_SHM) / _mid(REF_P2P_PCIE)) * COMM_SHARE, rows=rows, facts={"p2p_env": var},
    )


def forced_part(s: dict, env: pl.DataFrame) -> Part | None:
    level = (s.get("p2p_level") or "").upper()
    if level not in ("SYS", "PHB"):
        return None
    return Part(
        "info",
        f"NCCL_P2P_LEVEL={level} forces P2P across the CPU root complex{' and sockets' if level == 'SYS' else ''}; "
        "whether that beats SHM depends on the root complex.",
        "Benchmark both P2P levels with nccl-tests and keep the faster (NVIDIA/nccl#1773, #1817).",
        rows=env.filter(pl.col("var") == "NCCL_P2P_LEVEL"), facts={"p2p_level": level},
    )


def topo_part(s: dict, topo: pl.DataFrame, links: pl.DataFrame) -> Part | None:
    types = s.get("gpu_path_types") or {}
    far = [t for t in ("SYS", "PHB") if t in types]
    if not far or (links.height and links["transport"].str.starts_with("P2P").all()):
        return None
    bw = s.get("gpu_path_bw") or {}
    desc = ", ".join(f"{t} at {bw.get(t, 0):.0f} GB/s" for t in far)
    rows = topo.filter((pl.col("what") == "path") & pl.col("path_type").is_in(far) & pl.col("dst").str.starts_with("GPU"))
    return Part(
        "warning" if "SYS" in far else "info",
        f"GPU-to-GPU paths go through the CPU ({desc}; system maxBw {s.get('topo_max_bw')}): beyond NCCL's default "
        "P2P level (PXB), so NCCL uses SHM, and SYS pairs cross the inter-socket link. Low collective bandwidth here "
        "is topology-bound, not a bug.",
        "Keep a TP group inside one socket / one PCIe switch (CUDA_VISIBLE_DEVICES), or benchmark NCCL_P2P_LEVEL=SYS "
        "against the default.",
        impact=(1 - _mid(REF_SHM) / _mid(REF_P2P_PCIE)) * COMM_SHARE if "SYS" in far else 0.0,
        rows=rows.unique(["source", "line_no"], keep="first"), facts={"gpu_path_types": types},
    )


def channels_part(per_comm: pl.DataFrame, links: pl.DataFrame, raw: pl.DataFrame) -> Part | None:
    """Few channels by the totals NCCL printed (ring listing, trees, `coll channels`), not by the
    channel numbers seen in transport lines: excerpts cut those."""
    if per_comm.height == 0 or "channels_stated" not in per_comm.columns:
        return None
    nvlink = links.height > 0 and bool(links["read"].fill_null(False).any())
    nics = links.filter(pl.col("transport").str.starts_with("NET") & ~pl.col("intra").fill_null(False))[
        "net_dev"].drop_nulls().n_unique() if links.height else 0
    pc = per_comm if "hosts" in per_comm.columns else per_comm.with_columns(hosts=pl.lit(None, pl.UInt32))
    # Across nodes NCCL opens about two channels per NIC: where every inter-node connection
    # goes through one NIC, two channels is what the network gives, not a limit of its own
    # (nccl/100); where the log shows none, the NICs are unknown and the count still stands.
    across = (pl.col("nranks") > MANY_RANKS) | (pl.col("hosts").fill_null(1) > 1)
    big = pl.when(across).then(pl.lit(nics != 1)).otherwise(pl.lit(nvlink))
    few = pc.filter((pl.col("channels_stated") <= FEW_CHANNELS) & big)
    if few.height == 0:
        return None
    r = few.row(0, named=True)
    return Part(
        "warning",
        f"Only {r['channels_stated']} channel(s) for {r['nranks']} ranks: low ring parallelism limits large-message "
        "bandwidth (PCIe boxes typically use 2-4, NVSwitch H100 16-32).",
        "Check NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS and NCCL_ALGO overrides; compare busbw with nccl-tests at the "
        "same rank count.",
        impact=0.05, rows=raw.filter(pl.col("what") == "ring"),
        facts={"channels": r["channels_stated"], "nranks": r["nranks"]},
    )


def _ib_devices(raw_comms: pl.DataFrame, topo: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lines that list IB/RoCE devices (`NET/IB : Using [0]mlx5_0:1/IB`, 2.4's `IB NIC distance`),
    and lines that say there is none (`NET/IB : No device found.`)."""
    ib = raw_comms.filter(pl.col("what") == "net_ib")
    listed = ib.filter(pl.col("value").str.contains(r"^Using \[\d+\]"))
    nic = topo.filter((pl.col("what") == "nic_distance") & (pl.col("link_type") == "IB")) if topo.height else topo
    seen = pl.concat([listed.select("source", "line_no", "raw"), nic.select("source", "line_no", "raw")]) \
        if nic.height else listed.select("source", "line_no", "raw")
    none = ib.filter(pl.col("value").str.contains("No device found")).select("source", "line_no", "raw")
    return seen, none


def socket_part(links: pl.DataFrame, raw_comms: pl.DataFrame, topo: pl.DataFrame) -> Part | None:
    """Every inter-node connection on TCP sockets: no IB/RoCE transport in use.

    A NET link not known to be intra-node joins two hosts: NCCL offers P2P and SHM only to
    ranks of one host hash, so NET is what is left between hosts (docs/formats-nccl.md).
    Quiet when any NET link uses another transport (an InfiniBand log). A warning only when
    the log lists IB/RoCE devices that went unused; otherwise informational: sockets are
    all an Ethernet-only cluster has.
    """
    net = links.filter(pl.col("transport").str.starts_with("NET"))
    inter = net.filter(~pl.col("intra").fill_null(False))
    if inter.height == 0 or (net["transport"] != "NET/Socket").any():
        return None
    seen, none = _ib_devices(raw_comms, topo)
    hosts = inter["host"].drop_nulls().n_unique()
    where = f" from {hosts} hosts" if hosts > 1 else ""
    why = (" NCCL lists IB/RoCE devices but did not use them." if seen.height else
           " `NET/IB : No device found`: NCCL saw no InfiniBand/RoCE device." if none.height else
           " No InfiniBand/RoCE device appears in the log.")
    lost = 1 - _mid(REF_SOCKET) / _mid(REF_IB_NIC)
    return Part(
        "warning" if seen.height else "info",
        f"Inter-node traffic goes over TCP sockets: every inter-node connection shown ({inter.height}{where}) "
        f"uses NET/Socket; no IB/RoCE transport is in use.{why} NCCL over sockets reaches a few GB/s "
        f"({REF_SOCKET[0]:.0f}-{REF_SOCKET[1]:.0f}), one InfiniBand/RoCE NIC {REF_IB_NIC[0]:.0f}-{REF_IB_NIC[1]:.0f} "
        "GB/s; on an Ethernet-only cluster this is expected.",
        "If the nodes have InfiniBand/RoCE NICs, make them visible to NCCL (/dev/infiniband and the rdma-core "
        "libraries inside the container, NCCL_IB_DISABLE and NCCL_NET unset; on AWS EFA the aws-ofi-nccl plugin) "
        "until `NET/IB : Using [0]mlx5_...` appears. On plain Ethernet, NCCL_SOCKET_NTHREADS and "
        "NCCL_NSOCKS_PERTHREAD raise socket throughput.",
        impact=lost * COMM_SHARE if seen.height else 0.0,
        rows=pl.concat([inter.head(3).select("source", "line_no", "raw"), seen.head(2), none.head(1)]),
        facts={"socket_links": inter.height, "ib_devices_listed": seen.height > 0},
    )


def ib_unusable_part(raw_comms: pl.DataFrame, warns: pl.DataFrame) -> Part | None:
    """An InfiniBand/RoCE device NCCL found but could not open, and sockets in its place.

    ncclIbInit lists the HCAs and opens each; one it cannot open (`Call to ibv_open_device
    failed`, `NET/IB : Unable to open device mlx5_0`) is skipped, and with none left NCCL says
    `NET/IB : No device found` and picks sockets, `Using network Socket` (nccl/134: a container
    without the RDMA device). The job runs, every inter-node byte on TCP: a warning even before any
    channel line shows it.
    """
    probes = warns.filter(pl.col("fields").str.contains('"category":"ib_probe_failed"')
                          | pl.col("message").str.contains(r"NET/IB\s*: Unable to open device"))
    # 2.4-2.5 print no `Using network`; their socket transport says `NET/Socket : Using` only
    # when it is the network (initNet falls back to it when IB's init fails).
    sockets = raw_comms.filter(((pl.col("what") == "network") & (pl.col("network") == "Socket"))
                               | ((pl.col("what") == "net_socket") & pl.col("value").str.starts_with("Using")))
    if probes.height == 0 or sockets.height == 0:
        return None
    return Part(
        "warning",
        "NCCL found an InfiniBand/RoCE device but could not open it (the IB verbs probe failed) and uses TCP "
        f"sockets instead (`Using network Socket`): inter-node traffic runs at a few GB/s ({REF_SOCKET[0]:.0f}-"
        f"{REF_SOCKET[1]:.0f}) instead of an IB/RoCE NIC's {REF_IB_NIC[0]:.0f}-{REF_IB_NIC[1]:.0f} GB/s.",
        "Give the process the RDMA device: in a container /dev/infiniband (or the RDMA device plugin's resource), "
        "the rdma-core libraries and IPC_LOCK / an unlimited memlock ulimit; check `ibv_devinfo` in the same "
        "environment until `NET/IB : Using [0]mlx5_...` appears.",
        impact=(1 - _mid(REF_SOCKET) / _mid(REF_IB_NIC)) * COMM_SHARE,
        rows=pl.concat([probes.head(2).select("source", "line_no", "raw"), sockets.head(1).select("source", "line_no", "raw")]),
        facts={"ib_probe_failures": probes.height},
    )


def p2p_veto_part(raw_comms: pl.DataFrame, warns: pl.DataFrame) -> Part | None:
    vetoes = raw_comms.filter(pl.col("what") == "p2p_disabled")
    warned = warns.filter(pl.col("fields").str.contains('"category":"p2p_disabled'))
    if vetoes.height == 0 and warned.height == 0:
        return None
    pairs = sorted(set(vetoes["value"].drop_nulls().to_list()))
    return Part(
        "warning",
        f"NCCL reports P2P disabled or not possible between GPUs ({', '.join(pairs) or 'see evidence'}; NVML's "
        "`P2P is disabled between connected GPUs`, CUDA's `Could not enable P2P`): cards without P2P support, or "
        "ACS/IOMMU blocking peer traffic.",
        "Check ACS on the PCIe switches and the IOMMU mode; on GeForce/workstation cards P2P may be unsupported.",
        impact=(1 - _mid(REF_SHM) / _mid(REF_P2P_PCIE)) * COMM_SHARE,
        rows=pl.concat([vetoes.select("source", "line_no", "raw"), warned.select("source", "line_no", "raw")]),
    )


def cc_part(s: dict, raw_comms: pl.DataFrame) -> Part | None:
    if not s.get("cc_on"):
        return None
    return Part("warning", "Confidential computing is on (`CC On`): NCCL uses bounce buffers, a large overhead.",
                "Turn CC off for serving if the deployment allows it.", impact=0.1,
                rows=raw_comms.filter((pl.col("what") == "cc") & (pl.col("cc") == "On")))


def _families(s: dict) -> str:
    """The transports by family (P2P, SHM, NET/IB, NET/Socket): the title of a healthy finding
    names what the log shows, not P2P where every link is on the network."""
    parts = (t.split("/") for t in s["transports"])
    return ", ".join(sorted({"/".join(p[:2]) if p[0] == "NET" else p[0] for p in parts}))


def healthy_text(s: dict) -> str:
    """The transport mix; "GPUs in a box talk P2P" only where P2P lines are there to say so."""
    mix = ", ".join(f"{t} x{n}" for t, n in s["transports"].items())
    chans = f", {s['channels_min']} channel(s)" if s.get("channels_min") else ""
    return f"Transport lines show {mix}{chans}" + (": GPUs in a box talk P2P." if s.get("p2p_links") else ".")


def find(ctx: Case) -> list[Finding]:
    fam = ctx.metrics.get("nccl")
    if not fam:
        return []
    s, f = fam.summary, fam.frames
    links = f["links"]
    raw_comms = ctx.run.table("nccl_comms").collect()
    raw_links = ctx.run.table("nccl_links").collect()
    tcp = socket_part(links, raw_comms, f["topo"]) if links.height else None
    parts = [p for p in (
        shm_part(links) if links.height else None, net_part(links) if links.height else None,
        env_part(s, f["env"], links, alone_in_node(raw_comms)), forced_part(s, f["env"]), topo_part(s, f["topo"], links),
        # over TCP the sockets, not ring parallelism, bound inter-node bandwidth
        None if tcp else channels_part(f["comms"], links, raw_links), tcp,
        ib_unusable_part(raw_comms, f["warns"]), p2p_veto_part(raw_comms, f["warns"]), cc_part(s, raw_comms),
    ) if p]
    if not parts:
        # Nothing wrong in the transports: a healthy log stays quiet (the NCCL metrics still list
        # the transports for the report); a note saying "no problem" would read as a finding.
        return []
    parts.sort(key=lambda p: (SEVERITIES.index(p.severity), -p.impact))
    lead = healthy_text(s) + " " if links.height and all(p.severity == "info" for p in parts) else ""
    rows = [p.rows.select("source", "line_no", "raw") for p in parts if p.rows is not None and p.rows.height]
    impact = min(1.0, sum(p.impact for p in parts))
    return [Finding(
        id="nccl-transport", severity=parts[0].severity, title=_title(parts[0]),
        verdict=lead + " ".join(p.text for p in parts),
        impact=round(impact, 3),
        impact_text=((f"collectives up to ~{_mid(REF_P2P_PCIE) / _mid(REF_SHM):.1f}x slower than PCIe P2P; "
                      if any("SHM" in p.text or "SYS" in p.text for p in parts) else "")
                     + f"~{impact:.0%} of decode throughput if allreduce is {COMM_SHARE:.0%} of a step (assumed)")
        if impact else "informational",
        recommendation=" ".join(dict.fromkeys(p.recommendation for p in parts)),
        confidence="high" if links.height else "medium",
        evidence=ctx.evidence(pl.concat(rows).unique(["source", "line_no"], keep="first", maintain_order=True)) if rows else [],
        metrics={**_facts(s), **{k: v for p in parts for k, v in p.facts.items()}},
    )]


def _title(p: Part) -> str:
    t = p.text
    if "host memory (SHM)" in t:
        return "NCCL falls back to SHM instead of P2P"
    if "use the network" in t:
        return "Ranks in one box talk over the network"
    if "disabled by the environment" in t:
        return "P2P disabled by the environment"
    if "GPU-to-GPU paths go through the CPU" in t:
        return "GPU topology rules out P2P"
    if "channel(s) for" in t:
        return "Few NCCL channels"
    if "over TCP sockets" in t:
        return "Inter-node traffic over TCP sockets"
    if "could not open it" in t:
        return "InfiniBand/RoCE device unusable: NCCL uses sockets"
    return "NCCL transport"


def _facts(s: dict) -> dict:
    return {k: s.get(k) for k in ("transports", "channels_min", "nranks_max", "p2p_disable", "p2p_level", "hosts")}
