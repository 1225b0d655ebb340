"""NCCL's failures as `events`: PyTorch's ProcessGroupNCCL watchdog and error lines (no
envelope, matched anywhere), NCCL WARN lines with their category, and the return-code trail
NCCL prints as an error unwinds."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.nccl.lines import ENVELOPE, STRIP, chain, declared
from loganalyze.formats.spec import LineKind, Sample

I, S = pl.Int64, pl.String

# NCCL WARN texts worth telling apart (docs/formats-sources.md#warn-lines), first match wins.
WARN_CATEGORIES = (
    ("cuda_failure", r"Cuda failure"),
    ("p2p_disabled_nvlink", r"P2P is disabled between NVLINK"),
    ("p2p_disabled", r"P2P is disabled between"),
    # ncclIbInit probing the HCAs (list, open, query): NCCL skips a device it cannot open and,
    # with none left, says `NET/IB : No device found` and uses sockets (nccl/134: a container
    # without the RDMA device). Verbs that fail later, setting up a connection, are failures.
    ("ib_probe_failed", r"Call to ibv_(?:get_device_list|open_device|query_device|query_port|fork_init) failed"),
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
    # The AWS OFI plugin (EFA, Libfabric) failing a transfer or its setup: `NET/OFI Operation with
    # NULL context completed with error` (nccl/265 of hold-out 14), `NET/OFI Couldn't open AV`.
    ("ofi_failure", r"NET/OFI .*(?:completed with error|[Cc]ompletion error|Couldn't open AV)"),
    # The HCA's own events (`NET/IB : mlx5_0:1 Got async event : port error`, ibv_event_type_str):
    # a port going down or a fatal queue error fails the transfers on it; `GID table change`,
    # `port active` and the like are informational.
    ("ib_async_error", r"Got async event : (?:port error|local catastrophic error|\w+ fatal error|CQ error"
                       r"|[\w ]*work queue[\w ]* error|device fatal)"),
    ("proxy_failure", r"Failed to execute operation"),
    # The bootstrap root hearing one rank twice: two processes were given the same rank (a launcher
    # layout, nodes x processes per node, that does not match the world size; nccl/277 of hold-out 15).
    ("duplicate_rank", r"has already checked in"),
    # transport.cc finding no way between two ranks (Neuron's CCOM without its EFA plugin, nccl/270):
    # the communicator cannot be built.
    ("no_transport", r"No transport found between"),
    # cudawrap.cc: the driver library could not be loaded, and init returns a system error (nccl/85, WSL2).
    ("cuda_library_missing", r"Failed to find CUDA library"),
)
# The categories that are a failure (NCCL returns an error), not advice about performance.
FAILURES = ("cuda_failure", "ib_call_failed", "address_in_use", "call_failed", "socket_error", "ring_loop",
            "version_mismatch", "same_gpu", "wrong_type", "timeout", "shm_failure", "ib_completion_error",
            "ofi_failure", "proxy_failure", "no_transport", "duplicate_rank", "connection_lost", "ib_async_error", "cuda_library_missing")


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


def _torch(name: str, needle, pattern: str | None, severity: str, samples: tuple[str, ...], *,
           match: str | None = None, types: dict | None = None, continuation: str | None = None) -> LineKind:
    """A PyTorch c10d line: no NCCL envelope, matched anywhere, fields packed as JSON."""
    return LineKind(
        name=name, table="events", needle=needle, match=match, pattern=pattern, types=types or {},
        pack="fields", message=True, const={"severity": severity}, continuation=continuation,
        samples=samples, handler=chain(_torch_rank, declared("events")),
    )


# ---------------------------------------------------------------------------- kinds

# The names of ncclResult_t's failure codes, as PyTorch's exception text starts with them.
RESULT_CODES = ("ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
                "ncclInvalidUsage", "ncclRemoteError")
RESULT_NEEDLES = tuple(f"{code}: " for code in RESULT_CODES)

# `[PG 2 Rank 0] `, `[PG ID 0 PG GUID 0(default_pg) Rank 1] ` (2.5+).
PG = r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<pg_guid>[^\s(\]]+)(?:\((?P<pg_desc>[^)]*)\))?)? Rank \d+\] "
# The rest after OpType may be missing: a terminal or a paste cut the line (`NumelIn=1, Nume`,
# sglang/226 of hold-out 11); the collective and its SeqNum are still the watchdog's.
WORK = (
    r"WorkNCCL\(SeqNum=(?P<seq_num>\d+), OpType=(?P<op_type>\w+)(?:"
    r"(?:, TensorShape=(?P<tensor_shape>\[[^\]]*\]))?"
    r"(?:, NumelIn=(?P<numel_in>-?\d+), NumelOut=(?P<numel_out>-?\d+))?"
    r", Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
    r"(?: ran for (?P<ran_for_ms>\d+) milliseconds before timing out)?)?"
)
INT = {"seq_num": I, "numel_in": I, "numel_out": I, "timeout_ms": I, "ran_for_ms": I,
       "work": I, "last_enqueued": I, "last_completed": I, "stuck_s": I}

TORCH_KINDS = (
    _torch("pg_watchdog_timeout", "Watchdog caught collective operation timeout",
           # `:** ` where a ticket bolds the phrase (sglang/237 of hold-out 12)
           rf"(?:{PG}.*?)?Watchdog caught collective operation timeout:(?:\*\*)? {WORK}", "critical", (
               Sample("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=134217728, NumelOut=134217728, Timeout(ms)=600000) "
                      "ran for 600059 milliseconds before timing out.",
                      numel_in=134217728, numel_out=134217728, op_type="ALLREDUCE", ran_for_ms=600059, seq_num=2,
                      timeout_ms=600000),
               Sample("[rank4]:[E304 12:54:52.122900428 ProcessGroupNCCL.cpp:616] [Rank 4] **Watchdog caught collective "
                      "operation timeout:** WorkNCCL(SeqNum=151721, OpType=_ALLGATHER_BASE, NumelIn=8080, NumelOut=1",
                      seq_num=151721, op_type="_ALLGATHER_BASE"),
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
    # The heartbeat monitor (PyTorch 2.2+) that watches the watchdog thread: it saw no heartbeat
    # for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC and terminates the process after a debug dump;
    # workMetaList_.size() is how many collectives were still queued on that process group.
    _torch("pg_heartbeat_timeout", ("Heartbeat monitor timed out", "detected no heartbeat of its watchdog"),
           rf"(?:{PG})?(?:Heartbeat monitor timed out!(?:.*?workMetaList_\.size\(\)=(?P<queued_works>\d+))?"
           r"|(?P<first_pg>First PG) on this rank that detected no heartbeat)", "critical", (
               Sample("[rank0]:[E1019 01:04:03.356947152 ProcessGroupNCCL.cpp:1413] [PG 3 Rank 0] Heartbeat monitor "
                      "timed out! Process will be terminated after dumping debug info. workMetaList_.size()=121",
                      pg="3", queued_works=121),
               Sample("[rank7]:[E1019 01:04:03.357615073 ProcessGroupNCCL.cpp:1375] [PG 3 Rank 7] First PG on this "
                      "rank that detected no heartbeat of its watchdog.", pg="3", first_pg="First PG"),
           ), types={"queued_works": I}),
    _torch("flight_recorder", ("light recorder", "light Recorder", "dump signal", "dumping nccl trace",
                               "dump debug info"),
           r"(?i)(?P<notice>flight recorder trace successfully dumped|finished flight recorder|"
           r"dumping nccl trace to (?P<path>\S+)|received a dump signal[^.]*? from\s*(?P<signal_from>this local rank|rank -?\d+)|"
           r"observed flight recorder dump signal|dump signal received through pipe|"
           r"terminating the process after attempting to dump debug info, due to (?P<reason>[^.]+)|"
           r"flight recorder dump in heartbeatMonitor|ProcessGroupNCCL preparing to dump debug info)"
           r"(?:.*?last enqueued NCCL work: (?P<last_enqueued>-?\d+), last completed NCCL work: (?P<last_completed>-?\d+))?",
           "info", (
               "[rank0]:[I1206 18:44:13.1 ProcessGroupNCCL.cpp:1302] [PG 0 Rank 0] ProcessGroupNCCL dumping nccl "
               "trace to /tmp/nccl_trace_rank_0",
               "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this "
               "local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 811, last "
               "completed NCCL work: 807.",
               "[rank1]:[E ProcessGroupNCCL.cpp:1153] [PG 2 Rank 1] ProcessGroupNCCL preparing to dump debug info.",
               Sample("[rank0]:[F919 07:00:13.418192812 ProcessGroupNCCL.cpp:1653] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                      "[PG ID 0 PG GUID 0(default_pg) Rank 0] Terminating the process after attempting to dump debug "
                      "info, due to ProcessGroupNCCL watchdog hang.",
                      notice="Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL "
                             "watchdog hang", reason="ProcessGroupNCCL watchdog hang"),
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
    # PyTorch's message for a failed NCCL call, when it surfaces without `NCCL error in:` (as a
    # DistBackendError's text, or printed by a launcher): the result code's name, its meaning,
    # then `Last error:` and NCCL's own last WARN text (nccl/325 of hold-out 20).
    _torch("nccl_result_error", RESULT_NEEDLES,
           rf"(?P<result>{'|'.join(RESULT_CODES)}): (?P<error>.*)$", "error",
           (Sample("ncclInternalError: Internal check failed.", result="ncclInternalError",
                   error="Internal check failed."),),
           continuation=r"^Last error:\s*$"),
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
        name="nccl_warn", table="events", needle="WARN ", match=r"^WARN ", rewrites=STRIP, message=True,
        const={"severity": "warning"}, handler=chain(_warn_fields, declared("events")),
        samples=(Sample("NCCL WARN Cuda failure 'peer access is not supported between these two devices'",
                        category="cuda_failure"),
                 # NCCL 2.4-2.7's wording, without `from peer <address>` (nccl/120).
                 Sample("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
                        category="ib_completion_error"),
                 Sample("NCCL WARN NET/IB : mlx5_0:1 Got async event : port error", category="ib_async_error"),
                 Sample("NCCL WARN Call to ibv_open_device failed", category="ib_probe_failed"),
                 Sample("NCCL WARN Call to ibv_modify_qp failed with error No such device", category="ib_call_failed"),
                 Sample("NCCL WARN NET/IB : mlx5_2:1 Got async event : GID table change", category="other"),
                 Sample("NCCL WARN Bootstrap Root : rank 1 of 8 ranks has already checked in", category="duplicate_rank"),
                 # AWS Neuron's CCOM envelope (nccl/270).
                 Sample("CCOM WARN No transport found between devices 0 and 0. Possible replica group misconfiguration",
                        category="no_transport")),
    ),
    # nccl-tests' NCCLCHECK when a call fails: `<host>: Test NCCL failure common.cu:788 'unhandled
    # system error'` (2.x, ` / <last error>` inside the quotes from 2.13), `NCCL failure
    # common.cu:921 '...'` in the 2018 tests (nccl/133, nccl/142): the run's end, no envelope.
    LineKind(
        name="nccl_test_failure", table="events", needle="NCCL failure ",
        match=r"^(?:[^\s:]+: )?(?:Test )?NCCL failure [\w./-]+:\d+ '",
        pattern=r"^(?:(?P<host>[^\s:]+): )?(?:Test )?NCCL failure (?P<where>[\w./-]+:\d+) '(?P<error>.*?)(?: /(?: (?P<last_error>[^']+?))?)?\s*'",
        pack="fields", message=True, const={"severity": "error"},
        samples=(Sample("node01: Test NCCL failure common.cu:788 'unhandled system error'", host="node01",
                        where="common.cu:788", error="unhandled system error"),
                 Sample("NCCL failure common.cu:921 'unhandled system error'", where="common.cu:921",
                        error="unhandled system error"),
                 Sample("node02: Test NCCL failure common.cu:958 'internal error - please report this issue to the "
                        "NCCL developers / '", host="node02", where="common.cu:958",
                        error="internal error - please report this issue to the NCCL developers")),
    ),
    # A socket connect that NCCL retries: `Call to connect returned Connection timed out,
    # retrying` (2.4-2.18), `socketPollConnect: connect returned No route to host, retrying
    # (26/34) after sleep for 2600 msec` (2.19+). INFO, because a peer that starts late is
    # refused a few times and then connects; the diagnosis decides when it is a failure.
    LineKind(
        name="nccl_connect_retry", table="events", needle="connect returned ",
        match=r"^INFO (?:socketPollConnect: connect|Call to connect) returned ",
        pattern=r"returned (?P<reason>[^,]+), retrying(?: \((?P<attempt>\d+)/(?P<attempts>\d+)\))?"
                r"(?: after sleep for (?P<sleep_ms>\d+) msec)?",
        types={"attempt": I, "attempts": I, "sleep_ms": I}, rewrites=STRIP, pack="fields", message=True,
        const={"severity": "warning"}, handler=chain(_process_fields, declared("events")),
        samples=(Sample("NCCL INFO Call to connect returned Connection timed out, retrying",
                        reason="Connection timed out"),
                 Sample("NCCL INFO socketPollConnect: connect returned No route to host, retrying (34/34) after "
                        "sleep for 3400 msec", reason="No route to host", attempt=34, attempts=34, sleep_ms=3400)),
    ),
    # `transport.cc:165 -> 2`: the return-code trail NCCL prints as an error unwinds.
    LineKind(
        name="nccl_error_trail", table="events", needle=" -> ", match=ENVELOPE + r"[\w./-]+\.(?:cc|cu|h|cpp):\d+ -> \d+",
        pattern=r"^(?P<where>[\w./-]+:\d+) -> (?P<code>\d+)", types={"code": I}, rewrites=STRIP, pack="fields",
        message=True, const={"severity": "error"}, handler=chain(_process_fields, declared("events")),
        samples=("NCCL INFO transport/p2p.cc:275 -> 1",),
    ),
)

