"""nccl-gdr-off: GPUDirect RDMA turned off for some GPUs by their distance to the NIC.

NCCL lets a NIC read and write GPU memory directly (GPUDirect RDMA, `/GDRDMA` on a NET
transport line) only when the PCIe path between the GPU and the NIC is no longer than
NCCL_NET_GDR_LEVEL; otherwise it logs `GPU Direct RDMA Disabled for GPU g / HCA n
(distance d >= l)` (2.4-2.8; `d > l` later) and stages every inter-node transfer through
host memory. That is NCCL's choice, not a failure, so the finding is informational: it
answers "why no GDRDMA" and says what would change it (docs/findings-nccl.md, "GPUDirect
RDMA off by distance"; sample nccl/86, NCCL 2.4.7: GPUs 2 and 3 at distance 3 >= 2).

Without that line the transport lines still tell: where no inter-node connection over
InfiniBand or RoCE (`via NET/IB/0`, `NET/IBext/0`) carries `/GDRDMA`, none uses GPUDirect
RDMA (nccl/213 of hold-out 7). NCCL's other `Disabled` wordings (`(no module)`: the peer-memory
module is not loaded; `(not supported by ...)`) say why where they are printed.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding

DISABLED = r"GPU Direct RDMA Disabled for GPU (\S+?)(?:\[\w+\])? / HCA (\S+) \(distance (\d+) >=? (\d+)\)"
WHY_NOT = r"GPU Direct RDMA Disabled for .*\((no module|not supported)[^)]*\)"
MIN_LEGS = 2  # inter-node connections over IB: one is a line a paste may have cut from its peers


def find(ctx: Case) -> list[Finding]:
    if "nccl_comms" not in ctx.run.tables():
        return _no_gdr_legs(ctx)
    rows = ctx.run.table("nccl_comms").filter(pl.col("raw").str.contains(DISABLED)).sort("source", "line_no").collect()
    if rows.height == 0:
        return _no_gdr_legs(ctx)
    found = rows.with_columns(pl.col("raw").str.extract_groups(DISABLED).struct.rename_fields(
        ["gpu_id", "hca", "distance", "gdr_level"]).alias("gdr")).unnest("gdr")
    gpus = found.unique(["host", "gpu_id"], keep="first", maintain_order=True)
    by_host = gpus.group_by("host", maintain_order=True).agg("gpu_id")
    named = "; ".join(", ".join(g) + (f" on {h}" if h else "") for h, g in by_host.iter_rows())
    distance, level = found["distance"][0], found["gdr_level"][0]
    return [Finding(
        id="nccl-gdr-off",
        severity="info",
        title="GPUDirect RDMA off for some GPUs (GPU-NIC distance)",
        verdict=(f"NCCL turned GPUDirect RDMA off for GPU {named} (HCA {found['hca'][0]}, distance {distance} "
                 f"against NCCL_NET_GDR_LEVEL {level}): the PCIe path between those GPUs and the NIC is longer than "
                 "the level allows, so their inter-node data is staged through host memory instead of going "
                 "between GPU and NIC directly."),
        impact=0.0,
        impact_text="inter-node transfers of those GPUs take a copy through host memory",
        recommendation=("If the platform supports peer-to-peer DMA over that path (see the GPU-NIC entry of "
                        "`nvidia-smi topo -m`), set NCCL_NET_GDR_LEVEL to it (PHB, or SYS across sockets) and "
                        "compare nccl-tests busbw with and without; otherwise run on GPUs near the NIC or give "
                        "each PCIe switch its own NIC. GDR also needs the peer-memory module (nvidia-peermem) "
                        "or DMA-BUF."),
        evidence=ctx.evidence(gpus.head(4)),
        metrics={"gpus": gpus.height, "distance": int(distance), "gdr_level": int(level)},
    )]


def _no_gdr_legs(ctx: Case) -> list[Finding]:
    """No inter-node connection over InfiniBand or RoCE uses GPUDirect RDMA (none has `/GDRDMA`)."""
    if "nccl_links" not in ctx.run.tables():
        return []
    legs = ctx.run.table("nccl_links").filter(pl.col("transport") == "NET/IB").sort("source", "line_no").collect()
    conns = legs.unique(["channel", "src_rank", "dst_rank"]).height  # both ends print a [send]/[receive] pair
    if conns < MIN_LEGS or legs["gdr"].fill_null(False).any():
        return []
    why = (ctx.run.table("nccl_comms").filter(pl.col("raw").str.contains(WHY_NOT)).sort("source", "line_no").collect()
           if "nccl_comms" in ctx.run.tables() else legs.clear())
    said = why["raw"].str.extract(WHY_NOT)[0] if why.height else ""
    reason = ("NCCL says why: the peer-memory module (nvidia-peermem) is not loaded." if said == "no module" else
              "NCCL says why: the NIC or its driver does not support it." if said else
              "The log does not say why: a GPU-NIC path longer than NCCL_NET_GDR_LEVEL, no peer-memory module "
              "(nvidia-peermem) or DMA-BUF, or GPUDirect RDMA turned off in the environment (NCCL_NET_GDR_LEVEL=LOC).")
    return [Finding(
        id="nccl-gdr-off",
        severity="info",
        title="GPUDirect RDMA not in use between the nodes",
        verdict=(f"None of the {conns} inter-node connections over InfiniBand/RoCE uses GPUDirect RDMA (no "
                 f"`/GDRDMA` on their transport lines): NCCL stages inter-node data through host memory. {reason}"),
        impact=0.0,
        impact_text="inter-node transfers take a copy through host memory",
        recommendation=("Check `nvidia-smi topo -m` for the GPU-NIC paths and that nvidia-peermem (or DMA-BUF) is "
                        "available; with NCCL_DEBUG=INFO, NCCL prints `GPU Direct RDMA Disabled ...` with its reason. "
                        "Compare nccl-tests busbw with GDR on and off before changing NCCL_NET_GDR_LEVEL."),
        confidence="high" if said else "medium",
        evidence=ctx.evidence(legs.head(2)) + ctx.evidence(why.head(1)),
        metrics={"ib_connections": conns, "reason": said or None},
    )]
