"""What the stack dumps in a run say: which process is stuck, and in what.

A faulthandler or py-spy dump (events of kind `stack_dump`, loganalyze/formats/common.py) is printed
when a process is stuck: by SGLang's watchdog, by faulthandler's timer, or by a user who
ran py-spy. It is not a crash. Its main thread's innermost frames say where the process
waits; docs/findings.md (hang) has the rule. A dump printed right after a `Fatal Python
error` line, or right before the `Extension modules:` list that ends Python's fatal-error
report (a paste cut above its first line), is where a process died instead: that one is
the crash's (crash.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from loganalyze.diagnosis.base import Case
from loganalyze.kinds import kind_in, kinds

DUMP, FATAL = kinds("stack_dump"), kinds("fatal_error")

TOP_FRAMES = 4  # innermost frames named in a verdict

# What the main thread waits for, from its frames (innermost first); the first that matches wins.
WAITS = (
    ("waiting in a torch.distributed / NCCL collective (the ranks are out of step: one of them never joined it)",
     r"distributed_c10d|pynccl|\bnccl|all_reduce|allreduce|all_gather|allgather|(?<!shm_)broadcast|reduce_scatter"
     r"|all_to_all|alltoall|\bbarrier\b|custom_all_reduce|point_to_point|recv_object|send_object|recv_tensor_dict"),
    ("waiting for a message from another process (a ZMQ, shared-memory or pipe receive: the stuck process is the sender)",
     r"shm_broadcast|\bzmq\b|zmq/|recv_multipart|\bdequeue\b|multiprocessing/connection|get_response"),
    ("waiting for the GPU (a device synchronisation: a kernel that does not finish)",
     r"synchronize|Synchronize|\bitem \(|tolist|cudaStream|aclrt|eventfd_read"),
    ("waiting on a lock or condition held by another thread", r"\bacquire\b|threading\.py\S* line \d+ in wait|wait \(threading\.py"),
)
HELPER_THREAD = r"_bootstrap \(threading\.py|threading\.py\", line \d+ in _bootstrap"
# A parent that waits for its child processes (SGLang's DP controller and launcher, in
# multiprocessing's join): idle by design, so its dump says nothing is stuck in it
# (sglang/211: the DP controller's watchdog dumped it while its ranks kept decoding).
CHILDREN = r"popen_fork|\bwait4\b|\bwaitpid\b|join \(multiprocessing/process\.py|process\.py\", line \d+ in join"
FRAME = re.compile(r'^\s+File "(?:[^"]*/)?([^"/]+)", line (\d+) in (\S+)$|^\s+(\S.*?) \(([^()\s]+)\)$', re.M)


@dataclass(frozen=True)
class Stuck:
    """The main thread of one dump and what it waits in."""

    rows: pl.DataFrame  # the dump events, for evidence
    tool: str  # faulthandler or py-spy
    thread: str  # as the dump names it
    frames: list[str]  # innermost first, as `function (file:line)`
    waits: str | None  # one of WAITS, or None: running its own code

    def in_collective(self) -> bool:
        return self.waits == WAITS[0][0]

    def where(self) -> str:
        return " <- ".join(self.frames[:TOP_FRAMES]) or "no Python frame"

    def verdict(self) -> str:
        what = self.waits or "running its own code, not blocked in a collective or a wait: a loop or a slow step there"
        return f"the {self.tool} dump shows {self.thread} in {self.where()}: {what}."


def frames(message: str) -> list[str]:
    """A dump's frames, innermost first, as `function (file:line)` whichever tool printed them."""
    out = []
    for m in FRAME.finditer(message or ""):
        out.append(f"{m[3]} ({m[1]}:{m[2]})" if m[3] else f"{m[4]} ({m[5]})")
    return out


def dumps(ctx: Case) -> pl.DataFrame:
    """The run's stack dumps, less those that follow a fatal error (a crash's stack) and a
    benchmark client's."""
    rows = ctx.events(kind_in(DUMP + FATAL) | (pl.col("severity") == "critical"))
    if rows.height == 0:
        return rows
    # The events around each dump that are not dumps: a fatal error before it, or the module
    # list of a fatal error's report after it, means it is the crash's.
    # (The first fatal error after a dump, whatever is printed between: another process's
    # output interleaves with a dying one's, sglang/214.)
    other = pl.when(~kind_in(DUMP)).then(pl.col("kind"))
    module_list = pl.when(kind_in(FATAL)).then(pl.col("fields").str.json_path_match("$.error").is_null())
    marks = rows.with_columns(before=other.shift(1).forward_fill().over("source"),
                              after=module_list.shift(-1).backward_fill().over("source"))
    out = marks.filter(kind_in(DUMP) & ~pl.col("before").fill_null("").is_in(list(FATAL))
                       & ~pl.col("after").fill_null(False) & ~ctx.by_client()).drop("before", "after")
    # One dump is a run of thread blocks, one line after the other (a blank line between):
    # the rank its header names (SGLang's `[... TP6] Pyspy dump for PID`) is every block's.
    gap = pl.col("line_no") - (pl.col("line_no") + pl.col("span").fill_null(1)).shift(1).over("source")
    block = (gap.fill_null(2) > 1).cum_sum()
    return out.with_columns(rank=pl.col("rank").fill_null(pl.col("rank").drop_nulls().first().over(block)))


def stuck(rows: pl.DataFrame) -> Stuck | None:
    """The main thread of the dumps in `rows`: py-spy's MainThread, else the first thread not
    started by `threading` (faulthandler does not name threads), else the first thread; none
    where every such thread is a parent waiting for its children (CHILDREN)."""
    if rows.height == 0:
        return None
    fields = rows["fields"].str.json_decode(pl.Struct({"thread": pl.String, "thread_name": pl.String,
                                                        "state": pl.String, "current": pl.String}))
    rows = rows.with_columns(fields.struct.unnest())
    threads = rows.filter(pl.col("message").str.contains(r"^\s*File |^\s+\S.* \(|^(?:Current thread|Thread|Stack) "))
    if threads.height == 0:
        return None
    helper = threads["message"].str.contains(HELPER_THREAD)
    main = threads.filter(pl.col("thread_name") == "MainThread")
    main = main if main.height else threads.filter(~helper)
    main = main if main.height else threads
    working = main.filter(~pl.col("message").str.contains(CHILDREN))
    if working.height == 0:
        return None
    r = working.row(0, named=True)
    found = frames(r["message"])
    text = "\n".join(found)
    waits = next((what for what, pattern in WAITS if re.search(pattern, text)), None)
    tool = "py-spy" if r["state"] or re.search(r"\w \([^()\s]+\)$", r["message"] or "", re.M) else "faulthandler"
    name = r["thread_name"] or ("the current thread" if r["current"] else "the main thread")
    if r["rank"]:
        name = f"{r['rank']}'s {name}"
    return Stuck(rows=rows.filter(pl.col("line_no") == r["line_no"]), tool=tool, thread=name, frames=found, waits=waits)
