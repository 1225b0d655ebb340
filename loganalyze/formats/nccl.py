"""NCCL_DEBUG output and PyTorch ProcessGroupNCCL errors, wherever they appear.

NCCL writes straight to stdout/stderr (or NCCL_DEBUG_FILE), so its lines turn up inside
SGLang and vLLM logs, behind launcher prefixes, and in files of their own: the format is
embeddable. Lines have the envelope `host:pid:tid [cudaDev] NCCL INFO|WARN|TRACE msg`
(WARN adds `file.cc:LINE`, and `(function)` from 2.30.7; 2.26+ may put `[date time] ` in
front). The message, level included (`NCCL INFO ...`), is what the kinds see, so a WARN
kind can be told from an INFO one; the level is cut off before fields are extracted.
PyTorch's watchdog and error lines have no envelope and are matched anywhere in the line.
Formats: docs/formats-sources.md#nccl-debug-output (NCCL 2.4 to 2.30.7, PyTorch 1.x to 2.7); the transport
and ring lines of every release from 2.3 are in docs/formats-nccl.md.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.spec import Handler, LineKind, LogFormat, Sample, TsFormat
from loganalyze.formats.tables import CANONICAL, Schema, table

I, F, S, B = pl.Int64, pl.Float64, pl.String, pl.Boolean

# Anything in front (launcher prefixes the wrappers left, `[0] `, a line counter, a clock), then
# `[rankN]:`, the optional 2.26+ timestamp, host:pid:tid (a host name is not all digits, so a
# clock's `10:00:01` is not one), [cudaDev], TRACE's elapsed ms,
# WARN's file:line (and 2.30.7's (function)), and the level. Only the level is required:
# cut excerpts keep `NCCL INFO Trees ...` or `[1] NCCL INFO Channel ...`.
PREFIX = (
    r"^.*?"
    r"(?:\[rank(?P<rank>\d+)\]:\s*)?"
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]\s*)?"
    r"(?:(?P<host>[^\s:\[\]]*[^\s:\[\]\d][^\s:\[\]]*):(?P<pid>\d+):(?P<tid>\d+) )?"
    r"(?:\[(?P<gpu>\d+)\] )?"
    r"(?:(?P<elapsed_ms>\d+\.\d+) )?"
    r"(?:(?P<src>[\w./-]*[A-Za-z.][\w./-]*:\d+)(?: \((?P<func>[^)]*)\))? )?"
    r"(?P<msg>NCCL (?P<level>INFO|WARN|TRACE|CALL|ABORT) .*)$"
)

ENVELOPE = r"^NCCL [A-Z]+ "
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

# ncclDataType_t and ncclRedOp_t (src/nccl.h.in).
DTYPES = {0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4), 4: ("int64", 8), 5: ("uint64", 8),
          6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2), 10: ("float8e4m3", 1),
          11: ("float8e5m2", 1)}
REDOPS = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}

# NCCL WARN texts worth telling apart (docs/formats-sources.md#warn-lines), first match wins.
WARN_CATEGORIES = (
    ("cuda_failure", r"Cuda failure"),
    ("p2p_disabled_nvlink", r"P2P is disabled between NVLINK"),
    ("p2p_disabled", r"P2P is disabled between"),
    ("ib_call_failed", r"Call to ibv_\w+ failed"),
    ("address_in_use", r"Address already in use"),
    ("shm_failure", r"/dev/shm|shared memory segment|posix_fallocate|shmutils"),
    ("call_failed", r"Call to \w+ failed"),
    ("connection_lost", r"Connection closed by remote|Broken pipe|Connection refused|connection abort|Connect to .* failed"),
    ("socket_error", r"socket progress error|NET/Socket|[Ss]ocket"),
    ("ring_loop", r"does not loop back"),
    ("version_mismatch", r"Mismatched NCCL version"),
    ("same_gpu", r"same GPU|Duplicate GPU"),
    ("wrong_type", r"wrong type \d+ != \d+"),
    ("timeout", r"[Tt]imeout|timed out"),
    # `Got completion with error 12, ...` in 2.4-2.7, `from peer <addr> with error 4, ...` later;
    # `with status=12 ...` or `status=<name>(12)` in newer IB code.
    ("ib_completion_error", r"Got completion (?:.* )?with (?:error|status=)"),
    # The HCA's own events (`NET/IB : mlx5_0:1 Got async event : port error`, ibv_event_type_str):
    # a port going down or a fatal queue error fails the transfers on it; `GID table change`,
    # `port active` and the like are informational.
    ("ib_async_error", r"Got async event : (?:port error|local catastrophic error|\w+ fatal error|CQ error"
                       r"|[\w ]*work queue[\w ]* error|device fatal)"),
    ("proxy_failure", r"Failed to execute operation"),
    # cudawrap.cc: the driver library could not be loaded, and init returns a system error (nccl/85, WSL2).
    ("cuda_library_missing", r"Failed to find CUDA library"),
)
# The categories that are a failure (NCCL returns an error), not advice about performance.
FAILURES = ("cuda_failure", "ib_call_failed", "address_in_use", "call_failed", "socket_error", "ring_loop",
            "version_mismatch", "same_gpu", "wrong_type", "timeout", "shm_failure", "ib_completion_error",
            "proxy_failure", "connection_lost", "ib_async_error", "cuda_library_missing")


# ---------------------------------------------------------------------------- handlers
# Handlers work on the rows of one kind as whole columns (no Python per line).

def _chain(*steps: Handler) -> Handler:
    def run(rows: pl.DataFrame) -> pl.DataFrame:
        for step in steps:
            rows = step(rows)
        return rows
    return run


def _declared(table: str) -> Handler:
    """Keep only the table's declared columns (plus what the engine drops itself)."""
    schema = TABLES.get(table) or CANONICAL[table]

    def keep(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.select([c for c in rows.columns if c in schema or c in ENGINE_COLUMNS])
    return keep


def _extract(**specs: tuple[str, pl.DataType]) -> Handler:
    """Optional fields found anywhere in the body, each by its own one-group regex.

    Used where fields come and go across releases in an order a single pattern cannot
    follow (init lines: nvmlDev, busId, commId, parent, color, key ...).
    """
    def add(rows: pl.DataFrame) -> pl.DataFrame:
        cols = []
        for name, (pattern, dtype) in specs.items():
            raw = pl.col("body").str.extract(pattern, 1)
            cols.append((raw.str.to_integer(base=10, strict=False) if dtype == I else raw.cast(dtype, strict=False)).alias(name))
        return rows.with_columns(cols)
    return add


def _init_what(rows: pl.DataFrame) -> pl.DataFrame:
    """`Init START` -> init_start, `Destroy COMPLETE` -> destroy_complete."""
    return rows.with_columns(what=pl.col("state").str.to_lowercase().str.replace(" ", "_")).drop("state")


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


def _colls(rows: pl.DataFrame) -> pl.DataFrame:
    """opCount is hex; bytes = count x the datatype's size."""
    dt = pl.col("datatype")
    return rows.with_columns(
        op_count=pl.col("op_count_hex").str.to_integer(base=16, strict=False),
        dtype=dt.replace_strict({k: v[0] for k, v in DTYPES.items()}, default=None, return_dtype=S),
        elem_bytes=dt.replace_strict({k: v[1] for k, v in DTYPES.items()}, default=None, return_dtype=I),
        redop_name=pl.col("redop").replace_strict(REDOPS, default="user", return_dtype=S),
    ).with_columns(bytes=pl.col("count") * pl.col("elem_bytes")).drop("op_count_hex")


def _tuning_bytes(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(algo=pl.col("algo").str.to_uppercase(), proto=pl.col("proto").str.to_uppercase())


def _warn_fields(rows: pl.DataFrame) -> pl.DataFrame:
    """A WARN's category (docs/formats-sources.md#warn-lines) and where NCCL raised it, as the event's JSON fields."""
    body = pl.col("body")
    category = pl.when(body.str.contains(WARN_CATEGORIES[0][1])).then(pl.lit(WARN_CATEGORIES[0][0]))
    for name, pattern in WARN_CATEGORIES[1:]:
        category = category.when(body.str.contains(pattern)).then(pl.lit(name))
    fields = pl.struct(
        category=category.otherwise(pl.lit("other")), src=pl.col("src"), func=pl.col("func"),
        host=pl.col("host"), pid=pl.col("pid").cast(I, strict=False), cuda_dev=pl.col("gpu").cast(I, strict=False),
    )
    return rows.with_columns(fields=fields.struct.json_encode())


def _torch_rank(rows: pl.DataFrame) -> pl.DataFrame:
    """The rank of a PyTorch line: `[rank3]:` in front, else `[Rank 3]` / `[PG 1 Rank 3]` inside."""
    body = pl.col("body")
    return rows.with_columns(rank=pl.coalesce(
        pl.col("rank"), body.str.extract(r"\[rank(\d+)\]:", 1), body.str.extract(r"\[(?:PG [^\]]*?)?Rank (\d+)\]", 1),
    ))


def _process_fields(rows: pl.DataFrame) -> pl.DataFrame:
    """Events from NCCL envelope lines keep host/pid/cudaDev in their JSON fields."""
    fields = pl.struct(host=pl.col("host"), pid=pl.col("pid").cast(I, strict=False),
                       cuda_dev=pl.col("gpu").cast(I, strict=False)).struct.json_encode()
    if "fields" in rows.columns:
        merged = pl.concat_str([pl.col("fields").str.strip_suffix("}"), pl.lit(","), fields.str.strip_prefix("{")])
        fields = pl.when(pl.col("fields").is_null() | (pl.col("fields") == "{}")).then(fields).otherwise(merged)
    return rows.with_columns(fields=fields)


# ---------------------------------------------------------------------------- kind builders

def _envelope_match(pattern: str) -> str:
    """Classify by the whole pattern behind the envelope, so a line whose needle matches but
    whose fields do not falls through to the next kind instead of being lost."""
    return ENVELOPE + (pattern[1:] if pattern.startswith("^") else ".*?" + pattern)


def _comm(name: str, what: str, needle, pattern: str, samples: tuple[str, ...], *, match: str | None = None,
          types: dict | None = None, handler: Handler | None = None) -> LineKind:
    steps = (handler,) if handler else ()
    return LineKind(
        name=name, table="nccl_comms", needle=needle, match=match or _envelope_match(pattern), pattern=pattern,
        types=types or {}, rewrites=STRIP, const={"what": what}, samples=samples,
        handler=_chain(*steps, _declared("nccl_comms")),
    )


def _table(table: str, name: str, what: str, needle, pattern: str, samples: tuple[str, ...], *,
           match: str | None = None, types: dict | None = None, handler: Handler | None = None) -> LineKind:
    steps = (handler,) if handler else ()
    return LineKind(
        name=name, table=table, needle=needle, match=match or _envelope_match(pattern), pattern=pattern,
        types=types or {},
        rewrites=STRIP, const={"what": what}, samples=samples, handler=_chain(*steps, _declared(table)),
    )


def _torch(name: str, needle, pattern: str | None, severity: str, samples: tuple[str, ...], *,
           match: str | None = None, types: dict | None = None, continuation: str | None = None) -> LineKind:
    """A PyTorch c10d line: no NCCL envelope, matched anywhere, fields packed as JSON."""
    return LineKind(
        name=name, table="events", needle=needle, match=match, pattern=pattern, types=types or {},
        pack="fields", message=True, const={"severity": severity}, continuation=continuation,
        samples=samples, handler=_chain(_torch_rank, _declared("events")),
    )


# ---------------------------------------------------------------------------- kinds

# `[PG 2 Rank 0] `, `[PG ID 0 PG GUID 0(default_pg) Rank 1] ` (2.5+).
PG = r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<pg_guid>[^\s(\]]+)(?:\((?P<pg_desc>[^)]*)\))?)? Rank \d+\] "
WORK = (
    r"WorkNCCL\(SeqNum=(?P<seq_num>\d+), OpType=(?P<op_type>\w+)"
    r"(?:, TensorShape=(?P<tensor_shape>\[[^\]]*\]))?"
    r"(?:, NumelIn=(?P<numel_in>-?\d+), NumelOut=(?P<numel_out>-?\d+))?"
    r", Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
    r"(?: ran for (?P<ran_for_ms>\d+) milliseconds before timing out)?"
)
INT = {"seq_num": I, "numel_in": I, "numel_out": I, "timeout_ms": I, "ran_for_ms": I,
       "work": I, "last_enqueued": I, "last_completed": I, "stuck_s": I}

TORCH_KINDS = (
    _torch("pg_watchdog_timeout", "Watchdog caught collective operation timeout",
           rf"(?:{PG}.*?)?Watchdog caught collective operation timeout: {WORK}", "critical", (
               Sample("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=134217728, NumelOut=134217728, Timeout(ms)=600000) "
                      "ran for 600059 milliseconds before timing out.",
                      numel_in=134217728, numel_out=134217728, op_type="ALLREDUCE", ran_for_ms=600059, seq_num=2,
                      timeout_ms=600000),
               "[E ProcessGroupNCCL.cpp:458] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=512, "
               "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800844 milliseconds before timing out.",
               "[E ProcessGroupNCCL.cpp:414] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
               "OpType=BROADCAST, TensorShape=[1024], Timeout(ms)=1800000) ran for 1803964 milliseconds before "
               "timing out.",
           ), types=INT),
    _torch("pg_watchdog_progress", ("Timeout at NCCL work", "detected by watchdog at work"),
           rf"(?:{PG})?(?:Timeout at NCCL work|Exception \(either an error or timeout\) detected by watchdog at work): "
           r"(?P<work>-?\d+), last enqueued NCCL work: (?P<last_enqueued>-?\d+), "
           r"last completed NCCL work: (?P<last_completed>-?\d+)", "error", (
               "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 2 Rank 0] Timeout at NCCL work: 2, last enqueued NCCL "
               "work: 2, last completed NCCL work: 1.",
               Sample("[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
                      "Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: "
                      "811, last completed NCCL work: 807.",
                      last_completed=807, last_enqueued=811, pg="0", pg_desc="default_pg", pg_guid="0", work=808),
           ), types=INT),
    _torch("pg_watchdog_stuck", "watchdog got stuck for",
           rf"(?:{PG})?ProcessGroupNCCL's watchdog got stuck for (?P<stuck_s>\d+) seconds", "critical", (
               "[PG ID 0 PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL's watchdog got stuck for 480 seconds "
               "without making progress in monitoring enqueued collectives.",
           ), types=INT),
    _torch("flight_recorder", ("light recorder", "light Recorder", "dump signal", "dumping nccl trace",
                               "dump debug info"),
           r"(?i)(?P<notice>flight recorder trace successfully dumped|finished flight recorder|"
           r"dumping nccl trace to (?P<path>\S+)|received a dump signal[^.]*? from\s*(?P<signal_from>this local rank|rank -?\d+)|"
           r"observed flight recorder dump signal|dump signal received through pipe|"
           r"terminating the process after attempting to dump debug info, due to (?P<reason>[^.]+)|"
           r"flight recorder dump in heartbeatMonitor)"
           r"(?:.*?last enqueued NCCL work: (?P<last_enqueued>-?\d+), last completed NCCL work: (?P<last_completed>-?\d+))?",
           "info", (
               "[rank0]:[I1206 18:44:13.1 ProcessGroupNCCL.cpp:1302] [PG 0 Rank 0] ProcessGroupNCCL dumping nccl "
               "trace to /tmp/nccl_trace_rank_0",
               "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this "
               "local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 811, last "
               "completed NCCL work: 807.",
           ), types=INT),
    _torch("pg_failed_notice", ("Some NCCL operations have failed or timed out", "taking the entire process down",
                                "Process group watchdog thread terminated with exception"),
           r"(?P<notice>Some NCCL operations have failed or timed out|taking the entire process down|"
           r"Process group watchdog thread terminated with exception)(?::\s*(?P<detail>.*))?", "error", (
               "[rank0]:[E ProcessGroupNCCL.cpp:583] [Rank 0] To avoid data inconsistency, we are taking the entire "
               "process down.",
           )),
    # Only glog-enveloped lines: a Python `...Error: NCCL error in:` line ends a traceback the
    # file's own format owns.
    _torch("pg_nccl_error", "NCCL error in:",
           r"NCCL error in: (?P<where>[^,]+), (?P<error>[^,(]+?)\s*(?:\([^)]*\))?(?:, NCCL version (?P<nccl_version>[\w.]+))?"
           r"(?:$|\n|,)", "error",
           ("[rank0]:[E ProcessGroupNCCL.cpp:1316] NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",),
           match=r"^\s*(?:\[\d+\]\s*)?\["),
    _torch("pg_abort", "terminate called after throwing an instance of 'c10::DistBackendError'",
           r"throwing an instance of '(?P<exception>[\w:]+)'", "critical",
           ("terminate called after throwing an instance of 'c10::DistBackendError'",)),
    _torch("pg_cpp_exception", "Exception raised from",
           r"Exception raised from (?P<function>\w+) at (?P<location>\S+)", "error",
           ("Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 "
            "(most recent call first):",),
           match=r"ProcessGroupNCCL|c10d|[Nn][Cc][Cc][Ll]", continuation=r"^frame #\d+: "),
)

NCCL_EVENTS = (
    LineKind(
        name="nccl_warn", table="events", needle="NCCL WARN ", match=r"^NCCL WARN ", rewrites=STRIP, message=True,
        const={"severity": "warning"}, handler=_chain(_warn_fields, _declared("events")),
        samples=(Sample("NCCL WARN Cuda failure 'peer access is not supported between these two devices'",
                        category="cuda_failure"),
                 # NCCL 2.4-2.7's wording, without `from peer <address>` (nccl/120).
                 Sample("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
                        category="ib_completion_error"),
                 Sample("NCCL WARN NET/IB : mlx5_0:1 Got async event : port error", category="ib_async_error"),
                 Sample("NCCL WARN NET/IB : mlx5_2:1 Got async event : GID table change", category="other")),
    ),
    # `transport.cc:165 -> 2`: the return-code trail NCCL prints as an error unwinds.
    LineKind(
        name="nccl_error_trail", table="events", needle=" -> ", match=ENVELOPE + r"[\w./-]+\.(?:cc|cu|h|cpp):\d+ -> \d+",
        pattern=r"^(?P<where>[\w./-]+:\d+) -> (?P<code>\d+)", types={"code": I}, rewrites=STRIP, pack="fields",
        message=True, const={"severity": "error"}, handler=_chain(_process_fields, _declared("events")),
        samples=("NCCL INFO transport/p2p.cc:275 -> 1",),
    ),
)

INIT_REST = dict(
    nvml_dev=(r" nvmlDev (\d+)", I), bus_id=(r" busId ([0-9a-fA-F]+)", S), comm_id=(r" commId (0x[0-9a-fA-F]+)", S),
    parent=(r" parent (0x[0-9a-fA-F]+|\(nil\))", S), split_count=(r" (?:splitCount|childCount) (-?\d+)", I),
    color=(r" color (-?\d+)", I), key=(r" key (-?\d+)", I), used_bytes=(r" used (\d+) bytes", I),
)
TIMINGS = {f"{k}_s": (rf"\b{k} ([\d.]+)", F) for k in
           ("kernels", "alloc", "bootstrap", "allgathers", "topo", "graphs", "connections", "rest")}

COMM_KINDS = (
    _comm("version", "version", "NCCL version ",
          r"NCCL version (?P<version>\d+\.\d+\.\d+)[\w.-]*?(?:\+cuda(?P<cuda>[\d.]+))?", (
              "NCCL INFO NCCL version 2.26.5+cuda12.9", "NCCL version 2.8.2+cuda11.1",
          ), match=r"NCCL version \d+\.\d+\.\d+[\w.-]*\+cuda|^NCCL INFO NCCL version "),
    _comm("git_version", "git_version", "NCCL git version", r"NCCL git version (?P<value>.+)$",
          ("NCCL INFO NCCL git version master 1a2b3c4",)),
    _comm("cuda_driver", "cuda_driver", "cudaDriverVersion", r"cudaDriverVersion (?P<driver>\d+)",
          ("NCCL INFO cudaDriverVersion 12080",), types={"driver": I}),
    # Six forms from 2.4 to 2.30 (docs/formats-sources.md#communicator-init-lines); optional fields are picked out one by one.
    _comm("comm_init", "init", (" Init START", " Init COMPLETE", " Destroy COMPLETE", " Abort COMPLETE"),
          r"^(?:\[Rank \d+\] )?(?:(?P<api>nccl\w+) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>-?\d+) "
          r"nranks (?P<nranks>-?\d+) cudaDev (?P<cuda_dev>-?\d+).*?-\s*(?P<state>(?:Init|Destroy|Abort) (?:START|COMPLETE))",
          (
              "NCCL INFO comm 0x7fe3d4001980 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE",
              "NCCL INFO comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE",
              "NCCL INFO comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1234abcd - Init COMPLETE",
              "NCCL INFO comm 0x560b5bb3c4b0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId "
              "0x4aaa1c7a0b3bfb3d - Init START",
              "NCCL INFO ncclCommSplit comm 0x5e30 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 57000 parent 0x5d10 "
              "splitCount 1 color 0 key 0- Init START",
              "NCCL INFO [Rank 3] ncclCommInitRank comm 0x5e303a52bd70 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId "
              "57000 commId 0xadcb40d61cc1bc4b - Init START",
              "NCCL INFO comm 0x5e30 rank 0 nranks 2 cudaDev 0 busId 57000 commId 0xad - Destroy COMPLETE",
          ), types={"nranks": I, "cuda_dev": I}, handler=_chain(_extract(**INIT_REST), _init_what)),
    _comm("comm_info", "comm_info", " nNodes ",
          r"^comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
          r"localRanks (?P<local_ranks>\d+) localRank (?P<local_rank>\d+)(?: MNNVL (?P<mnnvl>\d+))?",
          ("NCCL INFO comm 0x8a6f4b0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",),
          types={k: I for k in ("nranks", "nnodes", "local_ranks", "local_rank", "mnnvl")}),
    _comm("init_timings", "init_timings", "Init timings",
          r"^Init timings(?: - (?P<api>\w+))?: rank (?P<rank>\d+) nranks (?P<nranks>\d+) total (?P<init_s>[\d.]+)",
          ("NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 8 total 0.92 (kernels 0.21, alloc 0.01, "
           "bootstrap 0.05, allgathers 0.01, topo 0.22, graphs 0.02, connections 0.37, rest 0.03)",),
          types={"nranks": I, "init_s": F}, handler=_extract(**TIMINGS)),
    _comm("channels", "channels", " coll channels, ",
          r"^(?P<coll_channels>\d+) coll channels, (?:(?P<collnet_channels>\d+) collnet channels, )?"
          r"(?:(?P<nvls_channels>\d+) nvls channels, )?(?P<p2p_channels>\d+) p2p channels, "
          r"(?P<p2p_per_peer>\d+) p2p channels per peer",
          ("NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer",),
          types={k: I for k in ("coll_channels", "collnet_channels", "nvls_channels", "p2p_channels", "p2p_per_peer")}),
    _comm("cc_mode", "cc", "CC ", r"^CC (?P<cc>On|Off)(?:, Multi-GPU CC (?:On|Off))?(?:, workFifoBytes (?P<value>\d+))?",
          ("NCCL INFO CC Off, workFifoBytes 1048576",)),
    _comm("nvls_support", "nvls", "NVLS multicast support is",
          r"NVLS multicast support is (?P<nvls>not available|available) on dev (?P<cuda_dev>\d+)",
          ("NCCL INFO NVLS multicast support is not available on dev 7",), types={"cuda_dev": I}),
    _comm("env", "env", "set by environment to", r"^(?P<env_var>\S+) set by environment to (?P<env_value>.*?)\.?$",
          ("NCCL INFO NCCL_P2P_DISABLE set by environment to 1", "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0.",
           "NCCL INFO NCCL_P2P_LEVEL set by environment to SYS")),
    _comm("network", "network", "Using network ", r"^Using network (?P<network>\S+)",
          ("NCCL INFO Using network Socket",)),
    _comm("bootstrap", "bootstrap", "Bootstrap", r"^Bootstrap ?: Using (?P<value>\S+)",
          ("NCCL INFO Bootstrap : Using eno1np0:10.0.0.1<0>", "NCCL INFO Bootstrap: Using bond0:10.0.0.1<0>")),
    _comm("net_ib", "net_ib", "NET/IB", r"^NET/IB ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/IB : No device found.", "NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB bond0:10.0.0.1<0>")),
    _comm("net_socket", "net_socket", "NET/Socket", r"^NET/Socket ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/Socket : Using [0]eno1np0:10.0.0.1<0>",)),
    _comm("net_plugin", "net_plugin", "NET/Plugin", r"^NET/Plugin ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
           "NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")),
    _comm("profiler_plugin", "profiler_plugin", "PROFILER/Plugin", r"^PROFILER/Plugin ?: ?(?P<value>.*)$",
          ("NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so.",)),
    _comm("p2p_disabled", "p2p_disabled", "P2P is disabled between",
          r"P2P is disabled between (?:NVLINK )?connected GPUs (?P<value>\d+ and \d+)",
          ("NCCL INFO P2P is disabled between connected GPUs 1 and 3. You can repress this message with "
           "NCCL_IGNORE_DISABLED_P2P=1.",)),
    _comm("affinity", "affinity", "Setting affinity for GPU",
          r"Setting affinity for GPU (?P<cuda_dev>\d+) to (?P<value>\S+)",
          ("NCCL INFO Setting affinity for GPU 0 to ffffffff,00000000,ffffffff",), types={"cuda_dev": I}),
    _comm("p2p_chunksize", "p2p_chunksize", "P2P Chunksize set to", r"P2P Chunksize set to (?P<value>\d+)",
          ("NCCL INFO P2P Chunksize set to 131072",)),
)

# Transport lines of every release (docs/formats-nccl.md): `Ring NN` up to 2.6, `Channel NN`
# from 2.7, `/connIndex` from 2.12; ids in brackets from 2.3 (P2P, SHM) or 2.5 (NET);
# `[send]`/`[receive]` on NET lines from 2.4.
LINK_KINDS = (
    _table("nccl_links", "link", "link", " via ",
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
    _table("nccl_links", "collnet", "collnet", " via COLLNET/",
           r"^Coll(?:Net)? (?P<channel>\d+)(?:/(?P<conn_index>\d+))? : (?P<src_rank>\d+) "
           r"\[(?P<direction>send|receive)\] via (?P<via>COLLNET/.+?)\s*$",
           ("NCCL INFO Coll 00 : 3 [send] via COLLNET/SHARP/0/GDRDMA",
            "NCCL INFO CollNet 01 : 0 [receive] via COLLNET/SHARP/1",
            "NCCL INFO CollNet 00/0 : 5 [send] via COLLNET/SHARP/0/GDRDMA"),
           types={"channel": I, "conn_index": I, "src_rank": I}, handler=_collnet),
    # The ring listing rank 0 prints: `Ring NN :` 2.3, `Channel NN :` 2.4, `Channel NN/NN :` 2.5+.
    _table("nccl_links", "ring", "ring", ("Channel ", "Ring "),
           r"^(?:Channel|Ring) (?P<channel>\d+)(?:/(?P<nchannels>\d+))? :\s*(?P<ranks>[\d ]*\d)\s*(?:\.\.\.)?\s*$",
           (Sample("NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8  15  14  13  12  11  10   9",
                   channel=0, nchannels=2, ranks="0   1   2   3   4   5   6   7   8  15  14  13  12  11  10   9",
                   ring_len=16),
            "NCCL INFO Channel 00 :    0   1   2   3",
            "NCCL INFO Ring 00 :    0   1   2   3   4   5   6   7"),
           types={"channel": I, "nchannels": I}, handler=_ring_len),
    _table("nccl_links", "ring_graph", "ring_graph", "Ring ",
           r"^Ring (?P<channel>\d+) : (?P<prev>-?\d+) -> (?P<me>-?\d+) -> (?P<next>-?\d+)",
           ("NCCL INFO Ring 00 : 7 -> 0 -> 1",), types={"channel": I, "prev": I, "me": I}),
    _table("nccl_links", "trees", "tree", "Trees ", r"^Trees (?P<trees>.*?)\s*$",
           ("NCCL INFO Trees [0] 1/-1/-1->0->7 [1] 1/-1/-1->0->7",), handler=_ntrees),
    _table("nccl_links", "tree_graph", "tree_graph", "Tree ",
           r"^Tree (?P<channel>\d+) : (?P<prev>-?\d+) -> (?P<me>-?\d+) -> (?P<next>[-\d/]+)",
           ("NCCL INFO Tree 0 : -1 -> 0 -> 1/-1/-1",), types={"channel": I, "prev": I, "me": I}),
    _table("nccl_links", "connected", "connected", "Connected ",
           r"^Connected (?P<connected>[\w ]+?)(?:, use ring PXN (?P<ring_pxn>\d+) GDR (?P<ring_gdr>\d+))?\s*$",
           ("NCCL INFO Connected all rings", "NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
            "NCCL INFO Connected all trees"), types={"ring_pxn": I, "ring_gdr": I}),
)

NODE = r"(?:GPU|CPU|NIC|NET|NVS|PCI)/[0-9A-Fa-fx-]+"
TOPO_KINDS = (
    _table("nccl_topo", "topo_path", "path", " :",
           rf"^(?P<src>{NODE}) :(?P<paths>(?: ?\S+ \(\d+/[\d.]+/\w+\))+)\s*$",
           ("NCCL INFO GPU/CE000 :GPU/0-4e000 (5/10.0/SYS) GPU/0-ce000 (0/5000.0/LOC) CPU/0-1 (2/24.0/PHB)",),
           handler=_topo_paths),
    _table("nccl_topo", "topo_system", "system", "=== System",
           r"=== System : maxBw (?P<max_bw>[\d.]+) totalBw (?P<total_bw>[\d.]+)",
           ("NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===",), types={"max_bw": F, "total_bw": F}),
    _table("nccl_topo", "topo_pattern", "pattern", "Pattern ",
           r"^Pattern (?P<pattern>\d+), crossNic (?P<cross_nic>\d+), nChannels (?P<nchannels>\d+), "
           r"bw (?P<bw_intra>[\d.]+)/(?P<bw_inter>[\d.]+), type (?P<type_intra>\w+)/(?P<type_inter>\w+), "
           r"sameChannels (?P<same_channels>\d+)",
           ("NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 10.000000/10.000000, type PHB/PIX, sameChannels 1",),
           types={"pattern": I, "cross_nic": I, "nchannels": I, "bw_intra": F, "bw_inter": F, "same_channels": I}),
    # 2.4 only: each GPU's PCI distance to each NIC of the network in use (Socket or IB).
    _table("nccl_topo", "nic_distance", "nic_distance", " NIC distance :",
           r"^CUDA Dev (?P<src>\d+)\[(?P<node>\d+)\], (?P<link_type>\S+) NIC distance :\s*(?P<path_type>\w+(?: \w+)*)\s*$",
           ("NCCL INFO CUDA Dev 0[0], Socket NIC distance :  PHB",
            "NCCL INFO CUDA Dev 3[5], IB NIC distance :  PIX PHB SYS SYS"),
           handler=_nic_distance),
    _table("nccl_topo", "topo_link", "link", "+ ",
           rf"^\s*\+ (?P<link_type>\w+)\[(?P<bw>[\d.]+)\] - (?P<dst>\S+)(?: \((?P<node_info>[^)]*)\))?",
           ("NCCL INFO + PCI[24.0] - PCI/0-4b000",), types={"bw": F}),
    _table("nccl_topo", "topo_node", "node", "/",
           rf"^\s*(?P<node>{NODE})(?: \((?P<node_info>[^)]*)\))?\s*$", ("NCCL INFO CPU/0-0 (1/1/2)",),
           match=ENVELOPE + rf"\s*{NODE}(?: \([^)]*\))?\s*$"),
)

COLL_KINDS = (
    _table("nccl_colls", "coll", "call", "opCount ",
           r"^(?P<op>\w+): opCount (?P<op_count_hex>[0-9a-fA-F]+) sendbuff (?P<sendbuff>\S+) recvbuff (?P<recvbuff>\S+) "
           r"count (?P<count>\d+) datatype (?P<datatype>\d+) op (?P<redop>\d+) root (?P<root>-?\d+) comm (?P<comm>\S+) "
           r"\[nranks=(?P<nranks>\d+)\] stream (?P<stream>\S+)",
           (Sample("NCCL INFO AllReduce: opCount 139d sendbuff 0x78d056200000 recvbuff 0x78d056200000 count 7382228 "
                   "datatype 7 op 0 root 0 comm 0x78cfda045840 [nranks=128] stream 0x78d07125e5e0",
                   bytes=29528912, comm="0x78cfda045840", count=7382228, datatype=7, dtype="float32", elem_bytes=4,
                   nranks=128, op="AllReduce", op_count=5021, recvbuff="0x78d056200000", redop=0, redop_name="sum",
                   root=0, sendbuff="0x78d056200000", stream="0x78d07125e5e0"),),
           types={k: I for k in ("count", "datatype", "redop", "root", "nranks")}, handler=_colls),
    _table("nccl_colls", "tuning", "tuning", " Bytes -> Algo ",
           r"^(?:(?P<op>\w+): )?(?P<bytes>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)"
           r"(?: channel\{Lo\.\.Hi\}=\{(?P<chan_lo>\d+)\.\.(?P<chan_hi>\d+)\})?(?: time (?P<model_time>[\d.]+))?",
           (Sample("NCCL INFO AllReduce: 16777216 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}",
                   algo="RING", bytes=16777216, chan_hi=3, chan_lo=0, op="AllReduce", proto="SIMPLE"),),
           types={"bytes": I, "chan_lo": I, "chan_hi": I, "model_time": F}, handler=_tuning_bytes),
)

# Any other envelope line: kept (message in `value`) so NCCL lines never fall to `unparsed`
# of the file's own format.
OTHER = _comm("nccl_other", "other", "NCCL ", r"^(?P<value>.*)$", ("NCCL INFO Using non-device net plugin version 0",),
              match=r"^NCCL (?:INFO|TRACE|CALL|ABORT) ")

KINDS = (*TORCH_KINDS, *NCCL_EVENTS, *COLL_KINDS, *LINK_KINDS, *TOPO_KINDS, *COMM_KINDS, OTHER)

# What starts an NCCL record wherever it stands in a line (loganalyze/formats/glued.py): the
# envelope's host:pid:tid and [cudaDev], where printed, and the level; or the bare `NCCL
# version` line. A paste that lost the newlines (nccl/85: a WSL2 log, a dozen records a line)
# is cut before each, the host going with its record.
# A `[cudaDev]` goes with the record only behind its host: `via P2P/indirect/1[1] NCCL INFO`
# ends the record before with its own bracket.
RECORD_START = (r"(?:[^\s:\[\]]*[^\s:\[\]\d][^\s:\[\]]*:\d+:\d+ (?:\[\d+\] )?)?NCCL (?:INFO|WARN|TRACE|CALL|ABORT) "
                r"|NCCL version \d")

FORMAT = LogFormat(
    name="nccl",
    description="NCCL_DEBUG output (2.3 - 2.30) and PyTorch ProcessGroupNCCL watchdog/errors, anywhere",
    releases="NCCL 2.3 - 2.30.7; PyTorch 1.x - 2.7",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%Y-%m-%d %H:%M:%S%.f"), TsFormat("%Y-%m-%dT%H:%M:%S%.f")),
    detect=(
        r"\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN|TRACE) ",
        r"NCCL (?:INFO|WARN) ",
        r"^NCCL version \d",
        r"ProcessGroupNCCL\.cpp:\d+\]",
        r"Watchdog caught collective operation timeout",
    ),
    versions=(
        (r"\) NCCL WARN ", "2.30.7+"),
        (r"\[Rank \d+\] nccl\w+ comm 0x", "2.29+"),
        (r"Connected all rings, use ring PXN", "2.24+"),
        (r"Init timings - ", "2.23+"),
        (r"nccl\w+ comm 0x[0-9a-f]+ rank \d+ nranks", "2.21+"),
        (r"via P2P/CUMEM", "2.19+"),
        (r"Channel \d\d/\d+ : \d+\[\d{1,3}\] -> \d+\[\d{1,3}\] via P2P", "2.18+"),
        (r"Channel \d\d/\d : \d+\[[0-9a-f]{4,}\] -> ", "2.12-2.18.1"),
        (r"Channel \d\d : \d+\[[0-9a-f]{4,}\] -> \d+\[[0-9a-f]{4,}\] via P2P", "2.7-2.13"),
        (r"\bColl \d\d : \d+ \[(?:send|receive)\] via COLLNET", "2.6-2.8"),
        (r"Ring \d\d : \d+\[[0-9a-f]{4,}\] -> ", "2.5-2.6"),
        (r"CUDA Dev \d+\[\d+\], \S+ NIC distance", "2.4"),
        (r"Ring \d\d : \d+ -> \d+ \[(?:send|receive)\] via ", "2.4"),
        (r"Ring \d\d : \d+ -> \d+ via NET/", "2.3"),
        (r"Ring \d\d : \d+\[\d{1,3}\] -> \d+\[\d{1,3}\] via ", "2.3-2.4"),
    ),
    embeddable=True,
    record_start=RECORD_START,
    record_marks=("NCCL ",),
    # Every NCCL envelope and c10d line holds "NCCL"; the C++ abort and its frames do not.
    gate=("NCCL", "DistBackendError", "frame #"),
)
