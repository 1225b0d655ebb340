"""NCCL_DEBUG output and PyTorch ProcessGroupNCCL errors, wherever they appear.

NCCL writes straight to stdout/stderr (or NCCL_DEBUG_FILE), so its lines turn up inside
SGLang and vLLM logs, behind launcher prefixes, and in files of their own: the format is
embeddable. Lines have the envelope `host:pid:tid [cudaDev] NCCL INFO|WARN|TRACE msg`
(WARN adds `file.cc:LINE`, and `(function)` from 2.30.7; 2.26+ may put `[date time] ` in
front; 2.0-2.2 print no `NCCL` tag). The message, level included (`INFO ...`), is what the
kinds see, so a WARN kind can be told from an INFO one; the level is cut off before fields
are extracted.
PyTorch's watchdog and error lines have no envelope and are matched anywhere in the line.
Formats: docs/formats-sources.md#nccl-debug-output (NCCL 2.4 to 2.30.7, PyTorch 1.x to 2.7); the transport
and ring lines of every release from 2.3 are in docs/formats-nccl.md.

The kinds live by what they read, in the order classification tries them: `errors`
(PyTorch's c10d lines, NCCL WARN lines and the return-code trail), `colls` (collective
calls and tuning), `transport` (links, rings, trees, topology), `comms` (init, version,
settings, timings; and any other envelope line, last). `lines` holds the envelope, the
tables and the kind builders they share.
"""

from __future__ import annotations

from dataclasses import replace

from loganalyze.formats.common import TORCH_WARNING
from loganalyze.formats.nccl.colls import COLL_KINDS
from loganalyze.formats.nccl.comms import COMM_KINDS, OTHER
from loganalyze.formats.nccl.errors import NCCL_EVENTS, RESULT_NEEDLES, TORCH_KINDS
from loganalyze.formats.nccl.lines import PREFIX, TABLES  # noqa: F401 (TABLES: the format's tables)
from loganalyze.formats.nccl.transport import LINK_KINDS, TOPO_KINDS
from loganalyze.formats.spec import LogFormat, Sample, TsFormat

# PyTorch's other C++ log lines of ProcessGroupNCCL (`[rank6]:[W319 12:03:46.604992123
# ProcessGroupNCCL.cpp:4721] ... using GPU 6 as device used by this process is currently
# unknown`, nccl/143) are the engines' torch_warning kind, the same here: in a file of NCCL
# lines no server format is there to take them.
PG_WARNING = replace(TORCH_WARNING, needle="ProcessGroupNCCL.cpp:", samples=(
    *(s for s in TORCH_WARNING.samples if "ProcessGroupNCCL.cpp:" in s),
    Sample("[rank6]:[W319 12:03:46.604992123 ProcessGroupNCCL.cpp:4721] [PG ID 0 PG GUID 0 Rank 6]  using GPU 6 as "
           "device used by this process is currently unknown. This can potentially cause a hang if this rank to GPU "
           "mapping is incorrect. You can pecify device_id in init_process_group() to force use of a particular device.",
           level_char="W", file="ProcessGroupNCCL.cpp", line="4721")))
KINDS = (*TORCH_KINDS, *NCCL_EVENTS, *COLL_KINDS, *LINK_KINDS, *TOPO_KINDS, *COMM_KINDS, PG_WARNING, OTHER)

# What starts an NCCL record wherever it stands in a line (loganalyze/formats/glued.py): the
# envelope's host:pid:tid and [cudaDev], where printed, and the level; or the bare `NCCL
# version` line. A paste that lost the newlines (nccl/85: a WSL2 log, a dozen records a line)
# is cut before each, the host going with its record. The version line is one with its
# `+cuda`: PyTorch's `NCCL error in: ..., NCCL version 2.26.2` ends a message (vllm/182).
# A `[cudaDev]` goes with the record only behind its host: `via P2P/indirect/1[1] NCCL INFO`
# ends the record before with its own bracket.
RECORD_START = (r"(?:[^\s:\[\]]*[^\s:\[\]\d][^\s:\[\]]*:\d+:\d+ (?:\[\d+\] )?)?NCCL (?:INFO|WARN|TRACE|CALL|ABORT) "
                r"|NCCL version \d+\.\d+\.\d+[\w.-]*\+cuda")
# The envelope itself, a WARN's `file.cc:N` included: what a record begun inside another
# writer's output starts with (a bare `NCCL version` inside an error message is no record).
RECORD_HEADER = r"[^\s:\[\]]*[^\s:\[\]\d][^\s:\[\]]*:\d+:\d+ (?:\[\d+\] )?(?:[\w./-]+:\d+ )?(?:NCCL|CCOM) (?:INFO|WARN|TRACE|CALL|ABORT) "

FORMAT = LogFormat(
    name="nccl",
    description="NCCL_DEBUG output (2.0 - 2.30) and PyTorch ProcessGroupNCCL watchdog/errors, anywhere",
    releases="NCCL 2.0 - 2.30.7; PyTorch 1.x - 2.7",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%Y-%m-%d %H:%M:%S%.f"), TsFormat("%Y-%m-%dT%H:%M:%S%.f")),
    detect=(
        r"\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN|TRACE) ",
        r"^\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?(?:INFO|WARN) ",  # 2.0-2.2: no NCCL tag
        r"NCCL (?:INFO|WARN) ",
        r"\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?CCOM (?:INFO|WARN) ",  # AWS Neuron's CCOM
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
        (r"^\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?(?:INFO|WARN) ", "2.0-2.2"),
    ),
    embeddable=True,
    record_start=RECORD_START,
    record_marks=("NCCL ", "CCOM "),
    record_header=RECORD_HEADER,
    # Every NCCL envelope and c10d line holds "NCCL"; the C++ abort and its frames do not, nor
    # do 2.0-2.2's envelopes (`[3] INFO `, `socket.h:194 WARN `), nor PyTorch's text of a failed
    # call (`ncclInternalError: Internal check failed.`).
    gate=("NCCL", "CCOM", "DistBackendError", "frame #", "] INFO ", " WARN ", *RESULT_NEEDLES),
)
