"""NCCL's transport and topology lines: links between ranks (P2P, SHM, NET, CollNet) into
`nccl_links` with rings and trees, and the topology NCCL found (paths, graphs, NIC distances)
into `nccl_topo`."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.nccl.lines import ENVELOPE, table_kind
from loganalyze.formats.spec import Sample

I, F, S = pl.Int64, pl.Float64, pl.String

def _links(rows: pl.DataFrame) -> pl.DataFrame:
    """Normalise the transport and read its flags; tell what the bracketed peer ids are.

    Releases put different things in `rank[...]` (docs/formats-nccl.md): nothing (2.3-2.4
    NET and `P2P/common device` lines), the cudaDev index (2.3-2.4 `Ring` lines), the bus id
    (2.5-2.18.1), the nvmlDev index (2.18.3+). A bus id is printed as hex `%lx` of the PCI
    address without separators (`0000:07:00.0` -> `7000`, `4a000`): four or more digits or
    a hex letter. A small decimal is a cudaDev on a `Ring` line, an nvmlDev on a `Channel`
    line. `peer_format` says which: busid, cuda, nvml, or null (no ids).
    """
    via = pl.col("via")
    transport = (
        pl.when(via.str.starts_with("P2P/direct pointer")).then(pl.lit("P2P/direct pointer"))
        .when(via.str.starts_with("P2P/CUMEM")).then(pl.lit("P2P/CUMEM"))
        .when(via.str.starts_with("P2P/IPC")).then(pl.lit("P2P/IPC"))
        .when(via.str.starts_with("P2P/indirect")).then(pl.lit("P2P/indirect"))
        .when(via.str.starts_with("P2P/MNNVL")).then(pl.lit("P2P/MNNVL"))
        .when(via.str.starts_with("P2P")).then(pl.lit("P2P"))
        .when(via.str.starts_with("SHM") | via.str.starts_with("direct shared memory")).then(pl.lit("SHM"))
        .when(via.str.starts_with("NET/IB")).then(pl.lit("NET/IB"))
        .when(via.str.starts_with("NET/Socket")).then(pl.lit("NET/Socket"))
        .when(via.str.starts_with("NET/")).then(pl.lit("NET/") + via.str.extract(r"^NET/([^/(]+)", 1))
        .otherwise(via.str.extract(r"^([^/ ]+)", 1))
    )
    bus = lambda c: pl.col(c).str.contains(r"[a-fA-Fx]") | (pl.col(c).str.len_chars() >= 4)  # noqa: E731
    peer_format = (
        pl.when(pl.col("src_dev").is_null() & pl.col("dst_dev").is_null()).then(pl.lit(None, S))
        .when(bus("src_dev") | bus("dst_dev")).then(pl.lit("busid"))
        .when(pl.col("word") == "Ring").then(pl.lit("cuda"))
        .otherwise(pl.lit("nvml"))
    )
    # 2.3 prints NET links on the receiving side only, without `[receive]` (peer -> me).
    old_net = pl.col("direction").is_null() & via.str.starts_with("NET/")
    direction = pl.when(old_net).then(pl.lit("receive")).otherwise("direction")
    return rows.with_columns(
        transport=transport,
        read=via.str.contains("/read"),
        gdr=via.str.contains("GDRDMA"),
        ce=via.str.contains("/CE"),
        shared=via.str.contains("/Shared"),
        pxn_rank=via.str.extract(r"\((\d+)\)", 1).cast(I, strict=False),
        peer_format=peer_format,
        direction=direction,
        # the printing process: the receiver on a receive line, else the sender
        rank=pl.when(direction == "receive").then(pl.col("dst_rank")).otherwise(pl.col("src_rank")).cast(S),
    ).with_columns(
        src_gpu=pl.when(pl.col("peer_format").is_in(["nvml", "cuda"])).then(pl.col("src_dev").cast(I, strict=False)),
        dst_gpu=pl.when(pl.col("peer_format").is_in(["nvml", "cuda"])).then(pl.col("dst_dev").cast(I, strict=False)),
    )


def _collnet(rows: pl.DataFrame) -> pl.DataFrame:
    """A CollNet leg: its transport (`COLLNET/SHARP`) and GPUDirect flag; the printer is the rank."""
    via = pl.col("via")
    return rows.with_columns(transport=via.str.extract(r"^(COLLNET/[^/]+)", 1), gdr=via.str.contains("GDRDMA"),
                             rank=pl.col("src_rank").cast(S))


def _ring_len(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(ring_len=pl.col("ranks").str.extract_all(r"\d+").list.len().cast(I))


def _ntrees(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(ntrees=pl.col("trees").str.extract_all(r"\[\d+\]").list.len().cast(I))


def _topo_paths(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (source node, destination) of a GRAPH path line: `GPU/0-4e000 (5/10.0/SYS)`."""
    entry = r"(\S+) \((\d+)/([\d.]+)/(\w+)\)"
    out = rows.with_columns(_p=pl.col("paths").str.extract_all(entry)).explode("_p").drop("paths")
    return out.filter(pl.col("_p").is_not_null()).with_columns(
        dst=pl.col("_p").str.extract(entry, 1),
        hops=pl.col("_p").str.extract(entry, 2).cast(I, strict=False),
        bw=pl.col("_p").str.extract(entry, 3).cast(F, strict=False),
        path_type=pl.col("_p").str.extract(entry, 4),
    ).drop("_p")


def _nic_distance(rows: pl.DataFrame) -> pl.DataFrame:
    """`CUDA Dev c[n], NET NIC distance : d ...` -> src GPU/c, dst NET/<name>, node nvmlDev n, one distance per NIC."""
    return rows.with_columns(src=pl.lit("GPU/") + pl.col("src"), dst=pl.lit("NET/") + pl.col("link_type"),
                             node=pl.lit("nvmlDev ") + pl.col("node"))


# from 2.7, `/connIndex` from 2.12; ids in brackets from 2.3 (P2P, SHM) or 2.5 (NET);
# `[send]`/`[receive]` on NET lines from 2.4.
LINK_KINDS = (
    table_kind("nccl_links", "link", "link", " via ",
           r"^(?P<word>Channel|Ring) (?P<channel>\d+)(?:/(?P<conn_index>\d+))? : "
           r"(?P<src_rank>\d+)(?:\[(?P<src_dev>[0-9a-fA-Fx]+)\])? -> (?P<dst_rank>\d+)(?:\[(?P<dst_dev>[0-9a-fA-Fx]+)\])?"
           r"(?: \[(?P<direction>send|receive)\])? via (?P<via>.+?)\s*$",
           (
               Sample("NCCL INFO Channel 01 : 7[7] -> 2[2] via SHM/direct/direct",
                      ce=False, channel=1, dst_dev="2", dst_gpu=2, dst_rank=2, gdr=False, peer_format="nvml",
                      read=False, shared=False, src_dev="7", src_gpu=7, src_rank=7, transport="SHM",
                      via="SHM/direct/direct"),
               "NCCL INFO Channel 00/0 : 1[1] -> 3[3] via P2P/direct pointer",
               "NCCL INFO Channel 00 : 3[4a000] -> 6[44000] [send] via NET/IB/0/GDRDMA",
               "NCCL INFO Channel 00 : 1[a000] -> 0[7000] via P2P/IPC/read",
               "NCCL INFO Channel 05/0 : 6[6] -> 5[5] via P2P/CUMEM",
               "NCCL INFO Channel 00 : 0[0] -> 1[1] via direct shared memory",
               "NCCL INFO Channel 01/0 : 3[3] -> 2[2] via P2P/indirect/1[1]",
               "NCCL INFO Channel 00/1 : 4[4] -> 12[4] [send] via NET/IB/4(8)/GDRDMA/Shared",
               # 2.5-2.6: `Ring`, bus ids
               "NCCL INFO Ring 00 : 12[41000] -> 11[2d000] via P2P/IPC",
               "NCCL INFO Ring 00 : 1[23000] -> 8[1e000] [send] via NET/IB/1/GDRDMA",
               "NCCL INFO Ring 00 : 3[3e000] -> 0[1a000] via direct shared memory",
               # 2.3-2.4: `Ring`, cudaDev on P2P/SHM lines, no ids on NET lines
               "NCCL INFO Ring 00 : 26[2] -> 24[0] via P2P/IPC",
               "NCCL INFO Ring 01 : 0[0] -> 1[1] via P2P/direct pointer",
               "NCCL INFO Ring 00 : 2[2] -> 3[3] via direct shared memory",
               "NCCL INFO Ring 00 : 34 -> 33 [send] via NET/Socket/0",
               "NCCL INFO Ring 00 : 16 -> 24 [receive] via NET/IB/0/GDRDMA",
               "NCCL INFO Ring 00 : 0 -> 1 via P2P/common device",
               # 2.3: NET printed by the receiver alone, without a direction
               "NCCL INFO Ring 00 : 7 -> 8 via NET/IB/0/GDRDMA",
               "NCCL INFO Ring 01 : 15 -> 0 via NET/Socket/1",
           ), types={k: I for k in ("channel", "conn_index", "src_rank", "dst_rank")},
           handler=_links),
    # CollNet (SHARP) legs have one end: `Coll` 2.6-2.8, `CollNet` 2.9+, `/connIndex` 2.14+.
    table_kind("nccl_links", "collnet", "collnet", " via COLLNET/",
           r"^Coll(?:Net)? (?P<channel>\d+)(?:/(?P<conn_index>\d+))? : (?P<src_rank>\d+) "
           r"\[(?P<direction>send|receive)\] via (?P<via>COLLNET/.+?)\s*$",
           ("NCCL INFO Coll 00 : 3 [send] via COLLNET/SHARP/0/GDRDMA",
            "NCCL INFO CollNet 01 : 0 [receive] via COLLNET/SHARP/1",
            "NCCL INFO CollNet 00/0 : 5 [send] via COLLNET/SHARP/0/GDRDMA"),
           types={"channel": I, "conn_index": I, "src_rank": I}, handler=_collnet),
    # The ring listing rank 0 prints: `Ring NN :` 2.3, `Channel NN :` 2.4, `Channel NN/NN :` 2.5+.
    table_kind("nccl_links", "ring", "ring", ("Channel ", "Ring "),
           r"^(?:Channel|Ring) (?P<channel>\d+)(?:/(?P<nchannels>\d+))? :\s*(?P<ranks>[\d ]*\d)\s*(?:\.\.\.)?\s*$",
           (Sample("NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8  15  14  13  12  11  10   9",
                   channel=0, nchannels=2, ranks="0   1   2   3   4   5   6   7   8  15  14  13  12  11  10   9",
                   ring_len=16),
            "NCCL INFO Channel 00 :    0   1   2   3",
            "NCCL INFO Ring 00 :    0   1   2   3   4   5   6   7"),
           types={"channel": I, "nchannels": I}, handler=_ring_len),
    table_kind("nccl_links", "ring_graph", "ring_graph", "Ring ",
           r"^Ring (?P<channel>\d+) : (?P<prev>-?\d+) -> (?P<me>-?\d+) -> (?P<next>-?\d+)",
           ("NCCL INFO Ring 00 : 7 -> 0 -> 1",), types={"channel": I, "prev": I, "me": I}),
    table_kind("nccl_links", "trees", "tree", "Trees ", r"^Trees (?P<trees>.*?)\s*$",
           ("NCCL INFO Trees [0] 1/-1/-1->0->7 [1] 1/-1/-1->0->7",), handler=_ntrees),
    table_kind("nccl_links", "tree_graph", "tree_graph", "Tree ",
           r"^Tree (?P<channel>\d+) : (?P<prev>-?\d+) -> (?P<me>-?\d+) -> (?P<next>[-\d/]+)",
           ("NCCL INFO Tree 0 : -1 -> 0 -> 1/-1/-1",), types={"channel": I, "prev": I, "me": I}),
    table_kind("nccl_links", "connected", "connected", "Connected ",
           r"^Connected (?P<connected>[\w ]+?)(?:, use ring PXN (?P<ring_pxn>\d+) GDR (?P<ring_gdr>\d+))?\s*$",
           ("NCCL INFO Connected all rings", "NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
            "NCCL INFO Connected all trees"), types={"ring_pxn": I, "ring_gdr": I}),
)

NODE = r"(?:GPU|CPU|NIC|NET|NVS|PCI)/[0-9A-Fa-fx-]+"
TOPO_KINDS = (
    table_kind("nccl_topo", "topo_path", "path", " :",
           rf"^(?P<src>{NODE}) :(?P<paths>(?: ?\S+ \(\d+/[\d.]+/\w+\))+)\s*$",
           ("NCCL INFO GPU/CE000 :GPU/0-4e000 (5/10.0/SYS) GPU/0-ce000 (0/5000.0/LOC) CPU/0-1 (2/24.0/PHB)",),
           handler=_topo_paths),
    table_kind("nccl_topo", "topo_system", "system", "=== System",
           r"=== System : maxBw (?P<max_bw>[\d.]+) totalBw (?P<total_bw>[\d.]+)",
           ("NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===",), types={"max_bw": F, "total_bw": F}),
    table_kind("nccl_topo", "topo_pattern", "pattern", "Pattern ",
           r"^Pattern (?P<pattern>\d+), crossNic (?P<cross_nic>\d+), nChannels (?P<nchannels>\d+), "
           r"bw (?P<bw_intra>[\d.]+)/(?P<bw_inter>[\d.]+), type (?P<type_intra>\w+)/(?P<type_inter>\w+), "
           r"sameChannels (?P<same_channels>\d+)",
           ("NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 10.000000/10.000000, type PHB/PIX, sameChannels 1",),
           types={"pattern": I, "cross_nic": I, "nchannels": I, "bw_intra": F, "bw_inter": F, "same_channels": I}),
    # 2.4 only: each GPU's PCI distance to each NIC of the network in use (Socket or IB).
    table_kind("nccl_topo", "nic_distance", "nic_distance", " NIC distance :",
           r"^CUDA Dev (?P<src>\d+)\[(?P<node>\d+)\], (?P<link_type>\S+) NIC distance :\s*(?P<path_type>\w+(?: \w+)*)\s*$",
           ("NCCL INFO CUDA Dev 0[0], Socket NIC distance :  PHB",
            "NCCL INFO CUDA Dev 3[5], IB NIC distance :  PIX PHB SYS SYS"),
           handler=_nic_distance),
    table_kind("nccl_topo", "topo_link", "link", "+ ",
           rf"^\s*\+ (?P<link_type>\w+)\[(?P<bw>[\d.]+)\] - (?P<dst>\S+)(?: \((?P<node_info>[^)]*)\))?",
           ("NCCL INFO + PCI[24.0] - PCI/0-4b000",), types={"bw": F}),
    table_kind("nccl_topo", "topo_node", "node", "/",
           rf"^\s*(?P<node>{NODE})(?: \((?P<node_info>[^)]*)\))?\s*$", ("NCCL INFO CPU/0-0 (1/1/2)",),
           match=ENVELOPE + rf"\s*{NODE}(?: \([^)]*\))?\s*$"),
)

