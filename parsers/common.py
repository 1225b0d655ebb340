"""Line kinds that every server format shares: uvicorn access lines and Python tracebacks."""

from __future__ import annotations

import polars as pl

from parsers.spec import LineKind, Sample

def fraction(percent: pl.Expr) -> pl.Expr:
    """A percentage as a fraction, rounded to 10 places: polars divides one row exactly and
    many rows by the reciprocal, so 57% would read 0.57 in one batch and 0.5700000000000001
    in another; rounded, every path agrees (and with Python's 57 / 100 in bench_json)."""
    return (percent / 100).round(10)


ACCESS = LineKind(
    name="access",
    table="requests",
    needle='" ',
    match=r'^INFO:\s+\S+:\d+ - "[A-Z]+ ',
    pattern=r'^INFO:\s+(?P<client>\S+):(?P<port>\d+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/(?P<http>[\d.]+)" (?P<status>\d{3})',
    types={"port": pl.Int64, "status": pl.Int64},
    samples=('INFO:     127.0.0.1:41452 - "GET /get_model_info HTTP/1.1" 200 OK',),
)

# Frames, source lines, carets and the final `SomeError: ...` line of a Python traceback.
TRACEBACK_CONTINUATION = (
    r"^(?:\s|File \"|Traceback \(most recent|During handling of|The above exception|"
    r"[\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b|\^|~)"
)

# The lines that only a Python traceback or stack dump has: where a file of them alone
# comes from, the server format is chosen by them (parsers.by_kinds).
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
DUMP_FRAME = r"[ \t]+File \"[^\"]*\", line \d+ in \S|[ \t]+\S.* \([^()\s]+\)$|[ \t]+<no Python frame>$"
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

# faulthandler on a fatal signal: the dump after this line is where the process died.
FATAL_ERROR = LineKind(
    name="fatal_error",
    table="events",
    needle="Fatal Python error: ",
    pattern=r"Fatal Python error: (?P<error>.+)",
    const={"severity": "critical"},
    pack="fields",
    message=True,
    samples=("Fatal Python error: Segmentation fault",),
)
