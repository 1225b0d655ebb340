"""Line kinds that every server format shares: what Python, uvicorn, PyTorch and the libraries
under both servers print (access lines, tracebacks, warnings, progress bars, exit reports).

Each is declared once here and listed in loganalyze/formats/sglang.py and loganalyze/formats/vllm/; where the
strings come from is in docs/formats-sources.md#lines-both-servers-share.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.spec import Key, LineKind, Sample


def stats_kind(name: str, phase: str, needle, match: str, samples: tuple[str, ...], *, keys: tuple[Key, ...],
               rewrites: tuple[tuple[str, str], ...]) -> LineKind:
    """A server's periodic `key: value` stats line: one `stats` row, its phase a constant, keys
    the server does not declare kept in `extra` (a new release's counters are not lost)."""
    return LineKind(name=name, table="stats", needle=needle, match=match, keys=keys, extra=True,
                    rewrites=rewrites, const={"phase": phase}, samples=samples)

I, F = pl.Int64, pl.Float64


def severity_from_level(default: str = "info"):
    """Handler for the catch-all kinds: an event as severe as the level its line was logged
    at (`default` where the line has none), so a format file can say it as data."""

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.with_columns(severity=pl.col("level").str.to_lowercase().fill_null(default))

    return handle


def fraction(percent: pl.Expr) -> pl.Expr:
    """A percentage as a fraction, rounded to 10 places: polars divides one row exactly and
    many rows by the reciprocal, so 57% would read 0.57 in one batch and 0.5700000000000001
    in another; rounded, every path agrees (and with Python's 57 / 100 in bench_json)."""
    return (percent / 100).round(10)


ACCESS = LineKind(
    name="access",
    table="requests",
    needle='" ',
    # uvicorn's `INFO:     ` is lost where a paste or a log setup drops the level (sglang/107).
    match=r'^(?:INFO:\s+)?\S+:\d+ - "[A-Z]+ ',
    pattern=r'^(?:INFO:\s+)?(?P<client>\S+):(?P<port>\d+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/(?P<http>[\d.]+)" (?P<status>\d{3})',
    types={"port": pl.Int64, "status": pl.Int64},
    samples=('INFO:     127.0.0.1:41452 - "GET /get_model_info HTTP/1.1" 200 OK',
             Sample('127.0.0.1:53440 - "POST /v1/chat/completions HTTP/1.1" 200 OK', client="127.0.0.1", port=53440,
                    method="POST", path="/v1/chat/completions", http="1.1", status=200)),
)

# Frames, source lines, carets and the final `SomeError: ...` line of a Python traceback.
TRACEBACK_CONTINUATION = (
    r"^(?:\s|File \"|Traceback \(most recent|During handling of|The above exception|"
    r"[\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b|\^|~)"
)

# The lines that only a Python traceback or stack dump has: where a file of them alone
# comes from, the server format is chosen by them (formats.by_kinds).
FRAME = (r'^\s*File "[^"]+", line \d+|^Traceback \(most recent call last\)|^[\w.]*(?:Error|Exception): '
         r'|^(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\)|^Thread \d+ \((?:idle|active)')

_SITE = "/mnt/dolphinfs/hdd_pool/docker/user/hadoop-aipnlp/INS/user/env/user/lib/python3.12/site-packages"

TRACEBACK = LineKind(
    name="traceback",
    table="events",
    needle="Traceback (most recent call last)",
    pattern=r"(?s)^(?:.*\n(?P<error>[\w.]*(?:Error|Exception|Exit|Interrupt))(?::[ \t]*(?P<detail>[^\n]*))?)?",
    continuation=TRACEBACK_CONTINUATION,
    # A traceback pasted without its first line (a ticket's excerpt, a cut log, a batch that
    # starts inside one): its frames, or a lone final `SomeError: ...` line, are one.
    orphan=r"^\s*File \"|^[\w.]*(?:Error|Exception): ",
    const={"severity": "error"},
    pack="fields",
    message=True,
    # SGLang 0.4.4 out of memory in the overlap thread (fixtures/real/sglang/64_*.log).
    samples=(Sample("\n".join((
        "Traceback (most recent call last):",
        f'  File "{_SITE}/sglang/srt/managers/tp_worker_overlap_thread.py", line 111, in forward_thread_func',
        "    with torch.get_device_module(self.device).stream(self.forward_stream):",
        "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{_SITE}/torch/cuda/__init__.py", line 595, in __exit__',
        "    torch.cuda.set_stream(self.src_prev_stream)  # type: ignore[arg-type]",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{_SITE}/vllm/utils.py", line 928, in _patched_set_stream',
        "    prev_set_stream(stream)",
        f'  File "{_SITE}/torch/cuda/__init__.py", line 636, in set_stream',
        "    _set_stream_by_id(",
        f'  File "{_SITE}/torch/cuda/__init__.py", line 618, in _set_stream_by_id',
        "    torch._C._cuda_setStream(",
        "RuntimeError: CUDA error: out of memory",
    )), error="RuntimeError", detail="CUDA error: out of memory"),),
)

# A stack dump of a live process: Python's faulthandler (`Thread 0x... (most recent call
# first):`, `Current thread ...`, `Stack ...`, `Timeout (0:05:00)!` from
# dump_traceback_later) and py-spy (`Thread 309 (idle): "MainThread"`, its `Process N:` and
# `Python v3.12` header; SGLang's watchdog prints it behind `Pyspy dump for PID N:`). One
# event per thread block, its frames as continuation lines, innermost first in both tools.
# Not an exception: a process printed where it is, which is a stall's evidence
# (docs/findings.md, hang).
DUMP_THREAD = (
    r"(?:(?P<current>Current) thread|Thread|Stack)(?: (?P<thread>(?:0x)?[0-9a-fA-F]+))?"
    r" \((?:most recent call first|(?P<state>idle|active|gil|active\+gil|[a-z+ ]+))\)(?:: \"(?P<thread_name>[^\"]*)\")?:?"
)
# faulthandler frames read `File "f.py", line 3 in g` (no comma: a traceback's has one);
# py-spy's `g (pkg/f.py:3)`, `read (libc.so.6)` with --native, then --locals' blocks.
# A frame whose function name another writer's output cut off ends in `in` (sglang/214).
DUMP_FRAME = r"[ \t]+File \"[^\"]*\", line \d+ in(?: \S|$)|[ \t]+\S.* \([^()\s]+\)$|[ \t]+<no Python frame>$"
STACK_DUMP = LineKind(
    name="stack_dump",
    table="events",
    needle=("most recent call first)", "Thread ", "Pyspy dump for PID ", "Process ", "Timeout ("),
    match=(rf"^(?:{DUMP_THREAD}$|Pyspy dump for PID \d+|Process \d+: \S|Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!$)"),
    # The header's facts, then the innermost frame (`top`); an orphan run (frames cut from
    # their header) has only the frame.
    pattern=(rf"^(?:(?:{DUMP_THREAD}|Pyspy dump for PID (?P<pid>\d+)|Process (?P<process_pid>\d+): (?P<command>[^\n]*)"
             r"|Timeout \((?P<timeout>[\d:.]+)\)!)[^\n]*(?:\n(?:[ \t]*\n)*|$))?(?:[ \t]+(?P<top>\S[^\n]*))?"),
    types={"pid": pl.Int64, "process_pid": pl.Int64},
    continuation=rf"^(?:{DUMP_FRAME}|Python v\d|[ \t]+(?:Arguments|Locals):$|[ \t]{{8,}}\S|\s*$)",
    orphan=r"^[ \t]+File \"[^\"]*\", line \d+ in \S|^[ \t]+\S.* \([\w./<>-]+\.py:\d+\)$",
    const={"severity": "warning"},
    pack="fields",
    message=True,
    samples=(
        "Thread 0x00007fe403b964c0 (most recent call first):",
        'Thread 309 (active): "MainThread"',
        "Pyspy dump for PID 163685 (py-spy dump --native --pid 163685):",
    ),
)

# Python's report of a fatal error (faulthandler on a fatal signal, Py_FatalError on an
# abort): `Fatal Python error: Aborted`, the dump of its threads, then since Python 3.10 the
# `Extension modules: numpy..., torch._C, ... (total: N)` it had loaded. Either line says the
# process died; the dump between them is where, and a paste cut above the first line keeps
# only the dump and the module list (fixtures/real/sglang/220).
FATAL_ERROR = LineKind(
    name="fatal_error",
    table="events",
    needle=("Fatal Python error: ", "Extension modules: "),
    pattern=r"Fatal Python error: (?P<error>.+)|^Extension modules: .*?(?:\(total: (?P<modules>\d+)\))?$",
    types={"modules": pl.Int64},
    const={"severity": "critical"},
    pack="fields",
    message=True,
    samples=(Sample("Fatal Python error: Segmentation fault", error="Segmentation fault"),
             Sample("Extension modules: numpy.core._multiarray_umath, numpy.core._multiarray_tests, torch._C (total: 3)",
                    modules=3)),
)

# A GPU kernel's own assertion (CUDA's device-side assert, printed once per failing thread):
# `../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [4,0,0]
# Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.`, and the
# bounds check some kernel generators print instead (`Out Of Bound Tensor access detected at
# dim[1]: assert(63 < 63)`, sglang/275 of hold-out 15). The CUDA context is lost after it: every
# later CUDA call fails with `device-side assert triggered`, so the first is the cause.
DEVICE_ASSERT = LineKind(
    name="device_assert",
    table="events",
    needle=("] Assertion `", "Out Of Bound Tensor access detected"),
    pattern=(r"^(?P<src>\S+?):(?P<src_line>\d+): (?P<function>.*?): block: \[(?P<block>[\d,]+)\], thread: "
             r"\[(?P<thread>[\d,]+)\] Assertion `(?P<assertion>.*)` failed"
             r"|^Out Of Bound Tensor access detected at (?P<bound>dim\[-?\d+\]: .*)$"),
    types={"src_line": pl.Int64},
    const={"severity": "critical"},
    pack="fields",
    message=True,
    samples=(Sample("../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [4,0,0] "
                    "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
                    src="../aten/src/ATen/native/cuda/IndexKernel.cu", src_line=92, function="operator()",
                    block="0,0,0", thread="4,0,0",
                    assertion='-sizes[i] <= index && index < sizes[i] && "index out of bounds"'),
             Sample("Out Of Bound Tensor access detected at dim[1]: assert(63 < 63)", bound="dim[1]: assert(63 < 63)")),
)

# pydantic's report of a configuration it rejected (vLLM's config classes since 0.10, SGLang's
# server args): `1 validation error for ModelConfig`, then per field `  Value error, <why>
# [type=value_error, input_value=..., input_type=...]`. The server stops before it starts; the
# `<why>` line is often all a user pastes (vllm/281 of hold-out 19: max_model_len above the
# model's derived maximum).
CONFIG_REJECTED = LineKind(
    name="config_rejected",
    table="events",
    needle=("Value error, ", "Assertion failed, "),
    pattern=r"^\s*(?:Value error|Assertion failed), (?P<error>.+?)(?: \[type=(?P<error_type>\w+)[^\]]*\]?)?$",
    const={"severity": "critical"},
    pack="fields",
    message=True,
    samples=(Sample("  Value error, User-specified max_model_len (131072) is greater than the derived max_model_len "
                    "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json). "
                    "[type=value_error, input_value=ArgsKwargs((), {'model': ...}), input_type=ArgsKwargs]",
                    error="User-specified max_model_len (131072) is greater than the derived max_model_len "
                          "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json).",
                    error_type="value_error"),),
)

# libmlx5 (the verbs provider of Mellanox/NVIDIA NICs) reporting a failed work completion
# itself, below NCCL or any other RDMA user: `mlx5: <host>: got completion with error:` and a
# hex dump of the CQE (nccl/302 of hold-out 17: a weight broadcast between Ray nodes).
RDMA_COMPLETION_ERROR = LineKind(
    name="rdma_completion_error",
    table="events",
    needle="got completion with error",
    # `mlx5: ` reads as a launcher's host label (it holds a digit) where most lines start with it.
    pattern=r"^(?:mlx\d: )?(?P<host>[^:\s]+): got completion with error:",
    const={"severity": "error"},
    pack="fields",
    message=True,
    continuation=r"^(?:[0-9a-f]{8} ){3}[0-9a-f]{8}\s*$",
    samples=(Sample("(LLMRayActor pid=90738, ip=10.0.0.1) mlx5: host_unknown: got completion with error:",
                    host="host_unknown"),),
)

# UCX's signal handler (the transport library under NIXL, Open MPI and others, ucs/debug/debug.c):
# `[host:pid:thread:tid] Caught signal 11 (Segmentation fault: <detail>)`, then its backtrace,
# `==== backtrace (tid: N) ====`, ` 0  /path/libucs.so(ucs_handle_error+0x294) [0x7f...]`, a
# closing rule. Abseil's failure-signal handler (in Ray, gRPC and others that link it):
# `*** SIGABRT received at time=1718198436 on cpu 25 ***`, then `PC: @ 0x... (unknown) fn` and
# `    @ 0x...` frames. A native crash of the process that printed it.
NATIVE_SIGNAL = LineKind(
    name="native_signal",
    table="events",
    needle=("Caught signal ", " received at time="),
    match=r"^(?:\[[^\]]*\] )?Caught signal \d+ \(|^(?:\*+ )?SIG[A-Z]+ received at time=\d+",
    pattern=r"^(?:\[(?P<host>[^:\]]+):(?P<pid>\d+):\d+:(?P<tid>\d+)\] )?Caught signal (?P<signal>\d+) "
            r"\((?P<signal_name>[^:)]+)(?:: (?P<detail>[^)]*))?\)"
            r"|^(?:\*+ )?(?P<abseil_signal>SIG[A-Z]+) received at time=\d+(?: on cpu (?P<cpu>\d+))?",
    types={"pid": pl.Int64, "tid": pl.Int64, "signal": pl.Int64, "cpu": pl.Int64},
    const={"severity": "critical"},
    pack="fields",
    message=True,
    continuation=r"^=+(?: backtrace \(tid: *\d+\) =+)?$|^\s*\d+\s+\S.*\[0x[0-9a-f]+\]$|^(?:PC: |\s+)@ +0x[0-9a-f]+ ",
    samples=(Sample("\n".join((
        "[node01:12796:1:13303] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
        "address 0x7fbd60001400)",
        "==== backtrace (tid:  13303) ====",
        " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x294) [0x7fbec008fba4]")),
        host="node01", pid=12796, tid=13303, signal=11, signal_name="Segmentation fault",
        detail="invalid permissions for mapped object at address 0x7fbd60001400"),
        Sample("*** SIGABRT received at time=1718198436 on cpu 25 ***", abseil_signal="SIGABRT", cpu=25)),
)

# HCCL, the collective library of Ascend NPUs (torch_npu's ProcessGroupHCCL, the NCCL of
# vllm-ascend and SGLang on NPU): its errors carry a code of the EI family (`EI0009: [PID: N]
# <time> Transport init error. Reason: ...`, then an indented `Solution:` line), or come
# through torch_npu as `HCCL function error: HcclCommInitRootInfo(...), error code is 7` and
# `ERR02200 DIST call hccl api failed`.
HCCL_ERROR = LineKind(
    name="hccl_error",
    table="events",
    needle=("EI0", "EI9", "HCCL function error", "hccl api failed"),
    match=r"\bEI\d{4}: |HCCL function error: |call hccl api failed",
    pattern=r"(?P<code>EI\d{4}): (?:\[PID: (?P<pid>\d+)\] \S+ )?(?P<error>[^.\n]+)(?:\. ?Reason: (?P<reason>[^\n]+))?"
            r"|HCCL function error: (?P<call>\w+)(?:.*?error code is (?P<error_code>\d+))?|(?P<dist>DIST call hccl api failed)",
    types={"pid": pl.Int64, "error_code": pl.Int64},
    const={"severity": "critical"},
    pack="fields",
    message=True,
    continuation=r"^(?:\[rank\d+\]:)?\s+(?:Solution|TraceBack)",
    samples=(Sample("[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: "
                    "[Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[10.0.0.1]",
                    code="EI0009", pid=2225827, error="Transport init error",
                    reason="[Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[10.0.0.1]"),
             Sample("[ERROR] 2025-03-26-11:49:20 (PID:4176, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.",
                    dist="DIST call hccl api failed")),
)


def info_event(name: str, needle, pattern: str | None, samples: tuple[str, ...], severity: str = "info",
               **kw) -> LineKind:
    """An `events` kind whose fields (the pattern's groups) are packed into `fields`."""
    return LineKind(name=name, table="events", needle=needle, pattern=pattern, pack="fields", message=True,
                    const={"severity": severity}, samples=samples, **kw)


# uvicorn's lifecycle lines, in front of either server's HTTP API: the process, the address
# it listens on, startup and shutdown (uvicorn/server.py, uvicorn/lifespan/on.py). A
# `Shutting down` here is where a shutdown began (loganalyze/diagnosis/base.py).
UVICORN = info_event(
    "uvicorn", ("Started server process [", "Waiting for application startup.", "Application startup complete.",
                "Uvicorn running on ", "Shutting down", "Finished server process [",
                "Waiting for application shutdown.", "Application shutdown complete.",
                "Waiting for background tasks to complete.", "Waiting for connections to close."),
    r"^INFO:\s+(?:Started server process \[(?P<pid>\d+)\]|Finished server process \[(?P<finished_pid>\d+)\]"
    r"|Uvicorn running on (?P<url>\w+://[^\s:/]+(?::(?P<port>\d+))?)|.)",
    (Sample("INFO:     Uvicorn running on http://0.0.0.0:33446 (Press CTRL+C to quit)",
            url="http://0.0.0.0:33446", port=33446),
     Sample("INFO:     Started server process [3370558]", pid=3370558),
     Sample("INFO:     Waiting for application startup."),
     Sample("INFO:     Waiting for background tasks to complete. (CTRL+C to force quit)")),
    types={"pid": I, "finished_pid": I, "port": I}, match=r"^INFO:\s+")

# uvicorn's own complaints: a request it could not parse (a client speaking TLS or HTTP/2 to
# the plain port), an exception in the app, whose traceback follows as its own event.
UVICORN_WARNING = info_event(
    "uvicorn_warning", ("Invalid HTTP request received.", "Exception in ASGI application"),
    r"^(?:WARNING|ERROR):\s+(?P<what>.+?)\.?$",
    (Sample("WARNING:  Invalid HTTP request received.", what="Invalid HTTP request received"),),
    severity="warning", match=r"^(?:WARNING|ERROR):\s+")

# The glob of weight files the loader picked (vLLM's model_executor/model_loader/weight_utils.py,
# which SGLang's srt/model_loader/weight_utils.py copies): safetensors, or pickled `*.bin`.
WEIGHTS_FORMAT = info_event(
    "weights_format", "Using model weights format ", r"Using model weights format (?P<patterns>\[[^\]]*\])",
    (Sample("Using model weights format ['*.safetensors']", patterns="['*.safetensors']"),))

# torch.distributed's Gloo context, once per process group created (gloo/transport/.../context.cc):
# how many peers this rank reached of how many it expected.
GLOO_CONNECTED = info_event(
    "gloo_connected", " peer ranks",
    r"Rank (?P<gloo_rank>\d+) is connected to (?P<peers>\d+) peer ranks\. Expected number of connected peer ranks "
    r"is : (?P<expected>\d+)",
    (Sample("[Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 0",
            gloo_rank=0, peers=0, expected=0),),
    types={"gloo_rank": I, "peers": I, "expected": I})

# A tqdm bar with a total (`what: 40%|████  | 2/5 [00:01<00:01, 1.9it/s]`): vLLM's graph capture,
# SGLang's `Capturing batches (bs=1 avail_mem=38.72 GB)`, downloads. One event per bar state.
PROGRESS = info_event(
    "progress", "%|", r"^(?P<what>[^|]+?): +(?P<percent>\d+)%\|[^|]*\| *(?P<done>\d+)/(?P<total>\d+) "
    r"\[(?P<elapsed>[\d:]+)",
    (Sample("Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:01<00:00, 33.86it/s]",
            what="Capturing CUDA graphs (decode, FULL)", percent=100.0, done=35, total=35, elapsed="00:01"),
     Sample("Capturing batches (bs=1 avail_mem=38.72 GB): 100%|██████████| 4/4 [00:04<00:00,  1.24s/it]",
            what="Capturing batches (bs=1 avail_mem=38.72 GB)", percent=100.0, done=4, total=4, elapsed="00:04")),
    types={"percent": F, "done": I, "total": I}, match=r"^[^|]+?: +\d+%\|")

# Python's `warnings` module on stderr: `file.py:12: UserWarning: text`, then the source line
# that warned, indented. `<frozen importlib._bootstrap_external>` is the file of a warning
# raised while importing. A source line whose header line was glued to other output (nanobind's
# last line has no newline) is one warning on its own.
PYTHON_WARNING = info_event(
    "python_warning", "Warning: ",
    r"^(?P<file>\S+\.py|<frozen [\w.]+>):(?P<line>\d+): (?P<category>\w*Warning): |^\s+warnings\.warn\(",
    (Sample("/env/lib/python3.11/site-packages/transformers/models/gemma3/configuration_gemma3.py:242: FutureWarning: "
            "The `sliding_window_pattern` attribute is deprecated",
            file="/env/lib/python3.11/site-packages/transformers/models/gemma3/configuration_gemma3.py", line="242",
            category="FutureWarning"),
     Sample("<frozen importlib._bootstrap_external>:1241: FutureWarning: The cuda.cudart module is deprecated and will "
            "be removed in a future release, please switch to use the cuda.bindings.runtime module instead.",
            file="<frozen importlib._bootstrap_external>", line="1241", category="FutureWarning")),
    severity="warning", match=r"^(?:\S+\.py|<frozen [\w.]+>):\d+: \w*Warning: ",
    continuation=r"^(?:\s|[a-z])", orphan=r"^\s+warnings\.warn\(")

# Mooncake's transfer engine, the KV transfer backend of SGLang's PD disaggregation and of
# vLLM's Mooncake connectors, reporting a transfer it could not make. It logs through glog
# (`E0612 14:05:26.176716 1192408 tcp_transport.cpp:136] `, peeled as a leader:
# loganalyze/formats/leader.py); SGLang adds `Session <address> failed.` when it drops the
# peer. Where the strings come from: docs/formats-sources.md#mooncake-transfer-engine.
TRANSFER_ERROR = info_event(
    "transfer_error", ("Body failed", "ASIO exception", "Process failed for slice", "Failed to complete transfers",
                       "failed for key", "Session ", "for remote agent", "Failed to connect to ", "Connect timeout to",
                       "Transfer slice failed", "data transfer timeout"),
    r"^(?:(?:Session|TcpTransport)::(?P<op>\w+) (?:failed|encountered an ASIO exception)"
    r"|[Ww]orker: Process failed for slice|Failed to complete transfers after (?P<timeout_s>\d+) seconds"
    r"|Transfer ?failed for key|Session (?P<session>\S+) failed\.$"
    r"|(?P<call>\w+XferReq): (?P<detail>.+)"
    # The transport's connection to the peer's segment (Mooncake's Ascend direct transport on
    # NPUs, vllm-ascend's PD), a slice it could not move, a synchronous batch that ran out of time.
    r"|Failed to connect to (?:target|segment): (?P<peer>[^,\s]+)|Connect timeout to: (?P<timeout_peer>[^,\s]+)"
    r"|Transfer slice failed|Sync batch data transfer timeout after (?P<timeout_ns>\d+)ns)"
    r"(?:.*?(?:Error: |Exception: |\): |status: )(?P<error>[^,]+))?",
    (Sample("Session::writeBody failed. Error: Bad address (value: 14), total_transferred_bytes_: 0, current "
            "transferred_bytes: 0", op="writeBody", error="Bad address (value: 14)"),
     Sample("TcpTransport::startTransfer encountered an ASIO exception. Slice details - source_addr: 0x3da7e4c800, "
            "length: 569344, opcode: 1, target_id: 2. Exception: connect: Cannot assign requested address",
            op="startTransfer", error="connect: Cannot assign requested address"),
     Sample("Session 172.20.0.9:15004 failed.", session="172.20.0.9:15004"),
     # NIXL's agent (the backend of SGLang's and vLLM's NIXL connectors) through glog.
     Sample("createXferReq: metadata for remote agent '40ed030f-2f55-4d2c-88c7-84f70da8adbb' not found",
            call="createXferReq", detail="metadata for remote agent '40ed030f-2f55-4d2c-88c7-84f70da8adbb' not found"),
     Sample("Failed to connect to target: 10.0.0.1:25482, status: 103900", peer="10.0.0.1:25482", error="103900"),
     Sample("Connect timeout to: 10.2:20033, you can increase the timeout duration to reduce the ASCEND_CONNECT_TIMEOUT "
            "environment variable.", timeout_peer="10.2:20033"),
     Sample("Transfer slice failed with status: 103902", error="103902"),
     Sample("Sync batch data transfer timeout after 33061142969ns", timeout_ns=33061142969)),
    severity="warning", types={"timeout_s": I, "timeout_ns": I},
    match=r"^(?:Session::\w+Body failed|TcpTransport::\w+ encountered an ASIO|[Ww]orker: Process failed for slice"
          r"|Failed to complete transfers after|Transfer ?failed for key|Session \S+ failed\.$"
          r"|\w+XferReq: .*(?:not found|failed|error)"
          r"|Failed to connect to (?:target|segment): |Connect timeout to: |Transfer slice failed"
          r"|Sync batch data transfer timeout after)")

# The transfer engine's start-up, through the same glog header: its handshake address, the
# topology it found, the RDMA device and GID it picked (Mooncake's transfer_engine.cpp,
# rdma_context.cpp), and glog's own note when a process logs before initialising it.
TRANSFER_ENGINE = info_event(
    "transfer_engine", ("Transfer Engine ", "Auto-discovering topology", "Topology discovery complete",
                        "Find best gid index", "RDMA device: ", "Metrics reporting is disabled",
                        "Logging before InitGoogleLogging()"),
    r"^(?:Topology discovery complete\. Found (?P<hcas>\d+) HCAs|RDMA device: (?P<device>[^,]+),"
    r"|Transfer Engine RPC using (?P<handshake>\S+) handshake, listening on (?P<address>\S+)|.)",
    (Sample("Transfer Engine RPC using P2P handshake, listening on 10.0.0.13:16590", handshake="P2P",
            address="10.0.0.13:16590"),
     Sample("Topology discovery complete. Found 1 HCAs.", hcas=1),
     Sample("RDMA device: mlx5_3, LID: 17, GID: (GID_Index 0) fe:80:00:00:00:00:00:00:9c:63:c0:03:00:1a:42:6e",
            device="mlx5_3"),
     Sample("WARNING: Logging before InitGoogleLogging() is written to STDERR")),
    types={"hcas": I},
    match=r"^(?:Transfer Engine |Auto-discovering topology|Topology discovery complete|Find best gid index"
          r"|RDMA device: |Metrics reporting is disabled|WARNING: Logging before InitGoogleLogging\(\))")

# nanobind (the C++ bindings of Triton and others) lists the objects still alive when the
# interpreter exits (src/nb_internals.cpp, 0.0.8+): a header per kind of object, then up to
# 10 or 20 ` - leaked ...` lines and ` - ... skipped remainder`. Since 2.5 the report ends
# with a `See https://...` line printed without a newline, so the next output is glued to it.
# Noise of a process that is exiting, not a fault: info.
NANOBIND_LEAKS = info_event(
    "nanobind_leaks", "nanobind: leaked ",
    # (a listing cut from its header, after a block another format took, has no fields)
    r"^(?:nanobind: leaked (?P<leaked>\d+) (?P<what>instances|keep_alive records|types|functions)!)?",
    (Sample("\n".join(("nanobind: leaked 4 instances!",
                       ' - leaked instance 0x7fa305a54be8 of type "triton._C.libtriton.ir.attribute"',
                       ' - leaked instance 0x7fa305a54bc8 of type "triton._C.libtriton.ir.attribute"')),
            leaked=4, what="instances"),
     Sample("\n".join(("nanobind: leaked 514 functions!", ' - leaked function "create_scaled_downcast_fp4"',
                       " - ... skipped remainder",
                       "nanobind: this is likely caused by a reference counting issue in the binding code.",
                       "See https://nanobind.readthedocs.io/en/latest/refleaks.html")),
            leaked=514, what="functions")),
    types={"leaked": I}, match=r"^nanobind: leaked \d+ ",
    continuation=r"^\s*- (?:leaked |\.\.\. skipped remainder)|^nanobind: this is likely|^See https://nanobind\.",
    orphan=r"^\s*- leaked ")

# PyTorch's C++ logging (c10/util/Logging.cpp): `[W1201 13:32:45.388606115 utils.cpp:68] Warning: ...`;
# the month has no leading zero (`[W701 ...` is July 1); torch 2.3 and older print no date, `[W socket.cpp:663] ...`; once a process group exists,
# `[rank0]:` comes first. ProcessGroupNCCL's watchdog lines are the NCCL format's
# (loganalyze/formats/nccl/); these are the rest: warnings and info.
# torch_npu's warnings all name `compiler_depend.ts`, the stand-in file its CMake build gives them.
TORCH_CPP = r"^(?:\[rank\d+\]:)?\[(?P<level_char>[IW])(?:\d{3,4} \d\d:\d\d:\d\d\.\d+ (?:\d+ )?| )(?P<file>[\w.]+\.(?:cpp|cc|h|hpp|ts)):(?P<line>\d+)\] "
TORCH_WARNING = info_event(
    "torch_warning", (".cpp:", ".h:", ".cc:", ".hpp:", "compiler_depend.ts:"), TORCH_CPP,
    (Sample("[W1201 13:32:45.388606115 utils.cpp:68] Warning: NUMA binding: Using MEMBIND policy for memory allocation "
            "on the NUMA nodes (0). Memory allocations will be strictly bound to these NUMA nodes. (function "
            "init_cpu_memory_env)", level_char="W", file="utils.cpp", line="68"),
     Sample("[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - "
            "Cannot assign requested address).", level_char="W", file="socket.cpp", line="663"),
     Sample("[rank0]:[W701 02:36:19.144600040 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() "
            "was not called before program exit, which can leak resources. For more info, please see "
            "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
            level_char="W", file="ProcessGroupNCCL.cpp", line="1575"),
     Sample("[rank0]:[W326 11:49:12.331714626 compiler_depend.ts:133] Warning: Warning: Device do not support double "
            "dtype now, dtype cast repalce with float. (function operator())",
            level_char="W", file="compiler_depend.ts", line="133")),
    severity="warning", match=TORCH_CPP)

# numexpr (imported by pandas) says how many threads it will use, through the root logger
# (numexpr/utils.py): cores found, the cap, the threads.
NUMEXPR = info_event(
    "numexpr_threads", ("NumExpr defaulting to ", "NumExpr detected ", "but NumExpr set to maximum of "),
    r"NumExpr defaulting to (?P<threads>\d+) threads|NumExpr detected (?P<cores>\d+) cores but \"NUMEXPR_MAX_THREADS\" "
    r"not set, so enforcing safe limit of (?P<limit>\d+)|detected (?P<virtual_cores>\d+) virtual cores but NumExpr "
    r"set to maximum of (?P<maximum>\d+)",
    (Sample("NumExpr defaulting to 16 threads.", threads=16),
     Sample('Note: NumExpr detected 128 cores but "NUMEXPR_MAX_THREADS" not set, so enforcing safe limit of 16.',
            cores=128, limit=16)),
    types={"threads": I, "cores": I, "limit": I, "virtual_cores": I, "maximum": I})

# The banner an NVIDIA NGC-based image (vllm/vllm-openai, lmsysorg/sglang) prints from its
# entrypoint before the server starts (sglang/121): the image name between `==` rules, the CUDA
# version, the container licence's lines. A rule is as long as the title it frames.
CONTAINER_BANNER = info_event(
    "container_banner", ("==", "CUDA Version ", "Container image Copyright", "This container image and its contents",
                         "By pulling and using the container", "nvidia-deep-learning-container-license",
                         "NGC-DL-CONTAINER-LICENSE"),
    r"^(?:={8,30}|== (?P<image>.+) ==|CUDA Version (?P<cuda_version>[\d.]+)|.)",
    (Sample("== CUDA ==", image="CUDA"), Sample("CUDA Version 12.4.1", cuda_version="12.4.1"),
     Sample("Container image Copyright (c) 2016-2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.")),
    match=r"^(?:={8,30}$|== .+ ==$|CUDA Version [\d.]+$|Container image Copyright .*NVIDIA|This container image "
          r"and its contents are governed by the NVIDIA |By pulling and using the container, you accept|"
          r"https://developer\.nvidia\.com/ngc/nvidia-deep-learning-container-license$|A copy of this license is "
          r"made available in this container at /NGC-DL-CONTAINER-LICENSE)")

# Python's line between two chained tracebacks. Inside a traceback it is the traceback's
# (TRACEBACK_CONTINUATION); alone, where an excerpt starts at it (sglang/123), it is this kind,
# and the traceback that follows is the one with the error.
TRACEBACK_CHAIN = info_event(
    "traceback_chain", ("During handling of the above exception", "The above exception was the direct cause"), None,
    (Sample("During handling of the above exception, another exception occurred:"),),
    match=r"^(?:During handling of the above exception, another exception occurred|The above exception was the "
          r"direct cause of the following exception):$")

# aiohttp's access log (Common Log Format), which SGLang's PD bootstrap server prints for each
# rank that registers (`PUT /route`) or looks up its peer (`GET /route?engine_rank=N`): the
# disaggregation's control traffic, not inference requests, hence an event and not `requests`.
AIOHTTP_ACCESS = info_event(
    "aiohttp_access", ' HTTP/1.',
    r'^(?P<client>\S+) \[[^\]]+\] "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3}) (?P<bytes>\d+|-)',
    (Sample('10.0.0.1 [26/Jun/2025:02:04:08 +0000] "PUT /route HTTP/1.1" 200 155 "-" "python-requests/2.32.3"',
            client="10.0.0.1", method="PUT", path="/route", status=200, bytes="155"),),
    types={"status": I}, match=r'^\S+ \[\d{1,2}/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "[A-Z]+ ')


# Both engines' fused MoE and block-FP8 kernels fall back to default tile settings where no
# tuned file exists for the GPU (`device_name=NVIDIA_H20-3e`): a hint that tuning may help,
# not a fault (sglang/252 of hold-out 13; vLLM prints the same words).
DEFAULT_KERNEL_CONFIG = info_event(
    "default_kernel_config", "Performance might be sub-optimal! Config file not found at ",
    r"Using default (?P<kernel>.+?) config\. Performance might be sub-optimal! Config file not found at (?P<path>\S+)",
    (Sample("Using default MoE config. Performance might be sub-optimal! Config file not found at /sglang/srt/layers/"
            "moe/fused_moe_triton/configs/E=256,N=256,device_name=NVIDIA_H20-3e,dtype=fp8_w8a8.json",
            kernel="MoE", path="/sglang/srt/layers/moe/fused_moe_triton/configs/E=256,N=256,device_name=NVIDIA_H20-3e,"
            "dtype=fp8_w8a8.json"),))


# The kinds of Python and library lines that both engines print, in the order both declare them.
ENGINE_PROCESS_KINDS = (PYTHON_WARNING, TORCH_WARNING, NANOBIND_LEAKS, GLOO_CONNECTED, WEIGHTS_FORMAT, DEFAULT_KERNEL_CONFIG,
                        NUMEXPR, STACK_DUMP, FATAL_ERROR, NATIVE_SIGNAL, DEVICE_ASSERT, CONFIG_REJECTED, RDMA_COMPLETION_ERROR, HCCL_ERROR, TRANSFER_ERROR,
                        TRANSFER_ENGINE, CONTAINER_BANNER, TRACEBACK_CHAIN, AIOHTTP_ACCESS)
