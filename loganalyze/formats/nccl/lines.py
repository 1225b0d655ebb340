"""What every NCCL kind shares: the envelope in front of a message (the prefix, the level
cut off before fields are read), the format's own tables, and the builders of table kinds."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.spec import Handler, LineKind
from loganalyze.formats.tables import CANONICAL, Schema, table

I, F, S, B = pl.Int64, pl.Float64, pl.String, pl.Boolean

# Anything in front (launcher prefixes the wrappers left, `[0] `, a line counter, a clock), then
# `[rankN]:`, the optional 2.26+ timestamp, host:pid:tid (a host name is not all digits, so a
# clock's `10:00:01` is not one), [cudaDev], TRACE's elapsed ms,
# WARN's file:line (and 2.30.7's (function)), and the `NCCL` tag. Only the tag is required:
# cut excerpts keep `NCCL INFO Trees ...` or `[1] NCCL INFO Channel ...`. NCCL 2.0-2.2 print
# no tag (`host:2123:2230 [3] INFO transport/net_ib.cu:555 -> 2`, `host:3171:3171 [0]
# misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]`): there the host and [cudaDev]
# are required instead. AWS Neuron's collectives (CCOM, NCCL's code for Trainium/Inferentia)
# print the same envelope with `CCOM` for the tag (`102203:102204 [0] init.cc:99 CCOM WARN ...`).
# The message starts at the level either way, so every kind reads one.
HOST = r"(?P<host{n}>[^\s:\[\]]*[^\s:\[\]\d][^\s:\[\]]*):(?P<pid{n}>\d+):(?P<tid{n}>\d+) "
SRC = r"[\w./-]*[A-Za-z.][\w./-]*:\d+"
LEVELS = "INFO|WARN|TRACE|CALL|ABORT"
PREFIX = (
    r"^.*?"
    r"(?:\[rank(?P<rank>\d+)\]:\s*)?"
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]\s*)?"
    r"(?:"
    rf"(?:{HOST.format(n='')})?"
    r"(?:\[(?P<gpu>\d+)\] )?"
    r"(?:(?P<elapsed_ms>\d+\.\d+) )?"
    rf"(?:(?P<src>{SRC})(?: \((?P<func>[^)]*)\))? )?"
    r"(?:NCCL|CCOM) "
    rf"|{HOST.format(n='__2')}\[(?P<gpu__2>\d+)\] (?:(?P<src__2>{SRC}) )?"
    r")"
    rf"(?P<msg>(?P<level>{LEVELS}) .*)$"
)

ENVELOPE = rf"^(?:{LEVELS}) "
STRIP = ((ENVELOPE, ""),)
# `glued`: the records before a row's on its line (loganalyze/formats/glued.py), counted by ingest.
ENGINE_COLUMNS = {"text", "msg", "body", "ok", "owner", "cont", "cont_lines", "wrap_ts", "glued"}
PROCESS = {"host": S, "pid": I, "tid": I}
TABLES: dict[str, Schema] = {}

TABLES["nccl_comms"] = table({
    **PROCESS, "what": S, "comm": S, "comm_id": S, "api": S, "nranks": I, "cuda_dev": I, "nvml_dev": I,
    "bus_id": S, "parent": S, "color": I, "key": I, "split_count": I, "used_bytes": I,
    "nnodes": I, "local_ranks": I, "local_rank": I, "mnnvl": I,
    "version": S, "cuda": S, "driver": I,
    "coll_channels": I, "collnet_channels": I, "nvls_channels": I, "p2p_channels": I, "p2p_per_peer": I,
    "cc": S, "nvls": S, "env_var": S, "env_value": S, "network": S, "value": S,
    "init_s": F, "kernels_s": F, "alloc_s": F, "bootstrap_s": F, "allgathers_s": F, "topo_s": F,
    "graphs_s": F, "connections_s": F, "rest_s": F,
})
TABLES["nccl_links"] = table({
    **PROCESS, "what": S, "channel": I, "nchannels": I, "conn_index": I,
    "src_rank": I, "src_dev": S, "dst_rank": I, "dst_dev": S, "peer_format": S, "src_gpu": I, "dst_gpu": I,
    "direction": S, "via": S, "transport": S, "read": B, "gdr": B, "ce": B, "shared": B, "pxn_rank": I,
    "ranks": S, "ring_len": I, "prev": I, "me": I, "next": S, "trees": S, "ntrees": I,
    "connected": S, "ring_pxn": I, "ring_gdr": I,
})
TABLES["nccl_topo"] = table({
    **PROCESS, "what": S, "src": S, "dst": S, "hops": I, "bw": F, "path_type": S, "max_bw": F, "total_bw": F,
    "pattern": I, "cross_nic": I, "nchannels": I, "bw_intra": F, "bw_inter": F, "type_intra": S,
    "type_inter": S, "same_channels": I, "link_type": S, "node": S, "node_info": S,
})
TABLES["nccl_colls"] = table({
    **PROCESS, "what": S, "op": S, "op_count": I, "sendbuff": S, "recvbuff": S, "count": I, "datatype": I,
    "dtype": S, "elem_bytes": I, "bytes": I, "redop": I, "redop_name": S, "root": I, "comm": S, "nranks": I,
    "stream": S, "algo": S, "proto": S, "chan_lo": I, "chan_hi": I, "model_time": F,
})


# Handlers work on the rows of one kind as whole columns (no Python per line).

def chain(*steps: Handler) -> Handler:
    def run(rows: pl.DataFrame) -> pl.DataFrame:
        for step in steps:
            rows = step(rows)
        return rows
    return run


def declared(table: str) -> Handler:
    """Keep only the table's declared columns (plus what the engine drops itself)."""
    schema = TABLES.get(table) or CANONICAL[table]

    def keep(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.select([c for c in rows.columns if c in schema or c in ENGINE_COLUMNS])
    return keep


# ---------------------------------------------------------------------------- kind builders

def envelope_match(pattern: str) -> str:
    """Classify by the whole pattern behind the envelope, so a line whose needle matches but
    whose fields do not falls through to the next kind instead of being lost."""
    return ENVELOPE + (pattern[1:] if pattern.startswith("^") else ".*?" + pattern)


def table_kind(table: str, name: str, what: str, needle, pattern: str, samples: tuple[str, ...], *,
           match: str | None = None, types: dict | None = None, handler: Handler | None = None) -> LineKind:
    steps = (handler,) if handler else ()
    return LineKind(
        name=name, table=table, needle=needle, match=match or envelope_match(pattern), pattern=pattern,
        types=types or {},
        rewrites=STRIP, const={"what": what}, samples=samples, handler=chain(*steps, declared(table)),
    )

