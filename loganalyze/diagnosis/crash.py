"""crash: the server logged a traceback or its engine died, and no more specific finding (oom,
nccl-error) explains it. A benchmark client's tracebacks are the client's (bench-failures).
What follows a shutdown (the API server's EngineDeadError after a SIGINT or SIGTERM) is its
consequence: then an info finding says the server was shut down.

The verdict names the exception and the innermost frames' functions, which usually say
which phase failed (profile_run: startup memory profiling; init_device: device setup).
"""

from __future__ import annotations

import json
import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.diagnosis.hang import GLOO_TIMEOUT
from loganalyze.diagnosis.nccl_error import HCCL_TEXT, TEXT as NCCL_TEXT, failures as nccl_failures
from loganalyze.diagnosis.oom import OOM_TEXT, no_kv_blocks
from loganalyze.kinds import kind_in, kinds

ERRORS = kinds("traceback", "exception", "process_crash", "engine_dead", "fatal_error", "native_signal", "device_assert",
               "config_rejected")
KINDS = (*ERRORS, *kinds("engine_exited"))
# A KV transfer worker's error explains the traceback printed below it (kv-transfer says so).
TRANSFER = kinds("kv_transfer_error", "kv_transfer_failed", "kv_connector_failed")
# A process that says it died without a traceback of its own: SGLang's parent reporting a
# child's SIGQUIT, the shell's `Killed`. Alone they are the crash; beside a watchdog timeout,
# an out-of-memory or another finding's lines they are its consequence.
DIED = kinds("child_failed", "killed")
EXPLAINS_DEATH = kinds("watchdog_timeout", "watchdog_batch", "stack_dump", "oom", "nccl_error", "kv_transfer_failed",
                       "kv_transfer_error", "kv_connector_failed", "hccl_error")
TITLES = {"engine_exited": "Engine core died", "native_signal": "Native crash", "device_assert": "Device-side assert",
          "config_rejected": "Configuration rejected at startup"}
BEFORE = 5  # lines before a traceback where the line that caused it may stand
# A KV connector may log its failure after the traceback it caught (vLLM's NIXL connector:
# the zmq error's traceback, its final line, then `Handshake failed for request R`).
TRANSFER_AFTER = 2


def _where(message: str) -> str:
    functions = re.findall(r", in (\w+)", message)
    return ", ".join(dict.fromkeys(functions[-3:])) if functions else "unknown"


def _explained(ctx: Case, rows: pl.DataFrame, reason: pl.Expr) -> pl.Series:
    """Tracebacks that another finding explains: an out-of-memory or NCCL event on a line of
    the traceback, the line after it (the final error line a kind took from it), or just
    before it (`# GPU blocks: 0`, then the traceback it causes)."""
    causes = ctx.events((reason | no_kv_blocks(ctx) | kind_in(TRANSFER)) & ~kind_in(KINDS)).select(
        "source", "line_no", after=pl.when(kind_in(TRANSFER)).then(TRANSFER_AFTER).otherwise(0))
    # NCCL's failure lines just before a traceback (a connect WARN, its return-code trail: sglang/292
    # of hold-out 17, the scheduler's init dying on them) are nccl-error's.
    nccl = nccl_failures(ctx).select("source", "line_no", after=pl.lit(0, pl.Int32))
    causes = pl.concat([causes, nccl], how="vertical_relaxed")
    if causes.height == 0:
        return pl.Series([False] * rows.height, dtype=pl.Boolean)
    spans = rows.with_row_index("_i").select("_i", "source", start=pl.col("line_no") - BEFORE,
                                             end=pl.col("line_no") + pl.col("span"))
    near = spans.join(causes, on="source").filter(pl.col("line_no").is_between("start", pl.col("end") + pl.col("after")))
    return pl.Series(range(rows.height)).is_in(near["_i"].cast(pl.Int64).implode())


def find(ctx: Case) -> list[Finding]:
    reason = pl.col("message").str.contains(f"{OOM_TEXT}|{NCCL_TEXT}|{HCCL_TEXT}|{GLOO_TIMEOUT}")
    rows = ctx.events(kind_in(KINDS) & ~reason & ~ctx.by_client())
    rows = rows.filter(~_explained(ctx, rows, reason)) if rows.height else rows
    late = ctx.after_shutdown(rows)
    if rows.height and late.all():
        return [_shut_down(ctx, rows)]
    after, rows = rows.filter(late), rows.filter(~late)
    if rows.height == 0:
        return _died(ctx, reason)
    # The first error in time across the run's files (a line without a time, as in an excerpt
    # or a note pasted beside the logs, after the timed ones): the cause, the rest follow it.
    rows = rows.sort(pl.col("ts").is_null(), "ts", "source", "line_no", maintain_order=True)
    first = rows.row(0, named=True)
    if first["kind"] == "engine_exited":
        here = pl.col("source") == first["source"]
        before = ctx.events(kind_in(ERRORS) & here & (pl.col("line_no") < first["line_no"]))
        verdict = _engine_died(first, after.filter(here & (pl.col("line_no") > first["line_no"])), before.height)
    elif first["kind"] == "native_signal":
        verdict = _native(first)
    elif first["kind"] == "fatal_error":
        verdict = _fatal(first, rows.height)
    elif first["kind"] == "device_assert":
        verdict = _device_assert(first, rows)
    elif first["kind"] == "config_rejected":
        verdict = _rejected(first)
    else:
        verdict = f"{rows.height} traceback(s); the first, in {_where(first['message'] or '')}: {_error(first)}."
    native = first["kind"] == "native_signal"
    return [Finding(
        id="crash", severity="critical",
        title=TITLES.get(first["kind"], "Server error"),
        verdict=verdict,
        impact=1.0, impact_text="the failing process stops serving",
        recommendation=RECOMMEND_NATIVE if native else (
            "Read the full traceback in the source log (evidence below); if it is cut, collect the log "
            "of every rank and process: the first error is usually on one rank only."),
        confidence="medium", evidence=ctx.evidence(rows), metrics={"tracebacks": rows.height},
    )]


RECOMMEND_NATIVE = (
    "The crash is in native code, in the libraries the backtrace names: check that their release matches the one the "
    "server was built and tested with (a pip wheel's bundled UCX against the system's, NIXL against vLLM or SGLang), "
    "try another transport of that library (UCX_TLS, or another transfer backend), and report it with the backtrace.")


def _native(row: dict) -> str:
    """A process killed by a signal that a native library's handler reported (UCX's `Caught signal`),
    with the libraries and symbols of its backtrace, innermost first."""
    f = json.loads(row["fields"] or "{}")
    message = row["message"] or ""
    libs = dict.fromkeys(re.findall(r"/(lib[A-Za-z_]+?)(?:-[0-9a-f]{8})?\.so", message))
    # UCX's `lib.so(symbol+0x294)`, abseil's `@ 0x79bbf20969fc  (unknown)  pthread_kill`.
    symbols = dict.fromkeys(a or b for a, b in re.findall(r"\((\w+)\+0x|@ +0x[0-9a-f]+ +\S+ +(\w+)$", message, re.M))
    detail = f": {f['detail']}" if f.get("detail") else ""
    signal = (f"signal {f.get('signal')} ({f.get('signal_name')}{detail})" if f.get("signal") is not None
              else f.get("abseil_signal") or "a signal")
    trace = (f"; its backtrace runs through {', '.join(libs)}" + (f" ({', '.join(symbols)})" if symbols else "")
             if libs else f"; its backtrace names {', '.join(symbols)}" if symbols else "; no backtrace follows in the log")
    return (f"A process{' (pid ' + str(f['pid']) + ')' if f.get('pid') else ''} died of "
            f"{signal}, reported by a native library's signal handler{trace}: a crash in "
            "native code, not a Python exception.")


def _fatal(row: dict, errors: int) -> str:
    """Python's report of a fatal error: `Fatal Python error: Aborted`, or only the
    `Extension modules:` list that ends it where a paste cut the line that names the error."""
    error = json.loads(row["fields"] or "{}").get("error")
    said = (f"`Fatal Python error: {error[:120]}`" if error else
            "Python's fatal-error report (the `Extension modules:` list it prints last; the line that names the "
            "error is not in the log)")
    others = f"; {errors - 1} other error(s) follow" if errors > 1 else ""
    return (f"A process died of a fatal error: {said}. Python prints this on a fatal signal (a segmentation fault, "
            f"an abort from native code such as a CUDA or NCCL failure) or an unrecoverable interpreter error, with the "
            f"stack of each thread above it{others}.")


def _device_assert(first: dict, rows: pl.DataFrame) -> str:
    """A GPU kernel's assertion: the first is the cause, the CUDA errors after it its echo."""
    f = json.loads(first["fields"] or "{}")
    what = (f"`{f['assertion'][:120]}` failed in {f.get('function') or 'a kernel'} ({f['src']}:{f['src_line']})"
            if f.get("assertion") else f"a bounds check failed (`{(f.get('bound') or '')[:120]}`)")
    asserts = int((rows["kind"] == "device_assert").sum())
    return (f"A GPU kernel's own assertion stopped it: {what}, {asserts} line(s). After a device-side assert the "
            "CUDA context is lost and every later CUDA call fails; the usual cause is an index out of range "
            "(a token id beyond the vocabulary, a position or slot beyond the cache).")


def _rejected(row: dict) -> str:
    """pydantic's reason for a configuration it refused: the server never started."""
    error = json.loads(row["fields"] or "{}").get("error") or (row["message"] or "").strip()
    return (f"The server refused its configuration and stopped before serving: `{error[:200]}`. Nothing ran; "
            "the fix is in the arguments this line names.")


def _error(row: dict) -> str:
    error = re.findall(r"^([\w.]*(?:Error|Exception)\b.*)$", row["message"] or "", re.M)
    return error[-1][:160] if error else "a traceback without its final error line (the log is cut)"


def _engine_died(first: dict, consequences: pl.DataFrame, earlier: int) -> str:
    """vLLM's API server saw its engine-core process end with no error logged before it: the
    engine was ended from outside or died without a word. The errors after it (EngineDeadError
    per request in flight), which its `[shutdown]` cleanup lines precede, are its consequence."""
    names = (_error(r).split(":")[0].split(".")[-1] for r in consequences.iter_rows(named=True))
    errors = sorted({n for n in names if n and not n.startswith("a traceback")})
    follow = (f"; the {consequences.height} error(s) after it are the API server's consequence"
              + (f" ({', '.join(errors)})" if errors else "")) if consequences.height else ""
    said = (f"after {earlier} error(s) that other findings explain" if earlier else
            "with no error or traceback logged before it")
    cause = (" Nothing in the log says what ended it: a signal from outside (SIGKILL; the kernel's OOM killer, "
             "which `dmesg` shows) or a crash in native code." if not earlier else "")
    return (f"The engine core process exited unexpectedly ('{(first['message'] or '').strip()[:120]}', line "
            f"{first['line_no']}), {said}{follow}.{cause}")


def _died(ctx: Case, reason: pl.Expr) -> list[Finding]:
    """A process reported dead with no traceback and nothing that explains it."""
    died = ctx.events(kind_in(DIED) & ~ctx.by_client())
    died = died.filter(~ctx.after_shutdown(died)) if died.height else died
    if died.height == 0 or ctx.events(kind_in(EXPLAINS_DEATH) | reason).height:
        return []
    return [Finding(
        id="crash", severity="critical", title="A server process died",
        verdict=(f"{died.height} line(s) say a process died (`{(died['message'][0] or '')[:100]}`) and the log holds "
                 "no traceback or error that says why: the cause is in the dead process's own output, before "
                 "these lines."),
        impact=1.0, impact_text="the failing process stops serving",
        recommendation="Collect the full log of every rank and process from before this line: the first error is "
                       "usually on one rank only (an exception, an out-of-memory, a watchdog timeout). A bare "
                       "`Killed` is often the host's OOM killer: check `dmesg`.",
        confidence="low", evidence=ctx.evidence(died.head(3)), metrics={"lines": died.height},
    )]


def _shut_down(ctx: Case, rows: pl.DataFrame) -> Finding:
    return Finding(
        id="shutdown", severity="info", title="The server was shut down",
        verdict=(f"A shutdown began (a signal, `[shutdown]` lines), and the {rows.height} error(s) after it "
                 "(EngineDeadError and the like) are how the processes ended: not a crash."),
        impact=0.0, impact_text="none", recommendation="Nothing to change: the errors follow the shutdown.",
        evidence=ctx.evidence(rows.head(2)), metrics={"errors_after_shutdown": rows.height},
    )
