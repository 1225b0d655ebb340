"""nccl-one-nic: every inter-node connection goes through one NIC.

NCCL opens its inter-node channels on the NICs nearest each GPU; where all of them name the
same device (`via NET/IB/0/GDRDMA` on every leg), that one NIC bounds inter-node bandwidth.
On a node with one NIC that is simply the hardware, so the finding is a note: the log cannot
tell one NIC from one of several chosen (nccl/06: two A100 nodes whose user asked why only
IB device 0 carried traffic). It is a finding of its own, not a part of nccl-transport,
because it says nothing is wrong with how ranks in a box talk. Over TCP sockets the sockets,
not the NIC count, bound bandwidth, and nccl-transport says so instead (docs/findings-nccl.md).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding


def find(ctx: Case) -> list[Finding]:
    fam = ctx.metrics.get("nccl")
    if not fam or not fam.frames["links"].height:
        return []
    links = fam.frames["links"]
    net = links.filter(pl.col("transport").str.starts_with("NET") & ~pl.col("intra").fill_null(False))
    if (net.height == 0 or (net["transport"] == "NET/Socket").all() or links["host"].drop_nulls().n_unique() < 2
            or net["net_dev"].drop_nulls().n_unique() != 1):
        return []
    dev = net["net_dev"].drop_nulls()[0]
    conns = net.unique(["channel", "src_rank", "dst_rank"]).height  # both ends print a [send]/[receive] pair
    return [Finding(
        id="nccl-one-nic",
        severity="info",
        title="One NIC carries all inter-node traffic",
        verdict=(f"All {conns} inter-node connections use one NIC ({net['via'][0]}): NIC device {dev} carries "
                 "every inter-node ring. On nodes with one NIC that is the hardware; on nodes with several, the "
                 "others are idle."),
        impact=0.0,
        impact_text="inter-node bandwidth is one NIC's",
        recommendation="If the nodes have several NICs, check NIC selection and GPU-NIC affinity (NCCL_IB_HCA, "
                       "`nvidia-smi topo -m`).",
        confidence="medium",
        evidence=ctx.evidence(net.sort("source", "line_no").head(4)),
        metrics={"connections": conns, "net_dev": dev},
    )]
