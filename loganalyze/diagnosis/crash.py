"""crash: the server logged a traceback that no more specific finding (oom, nccl-error) explains.

The verdict names the exception and the innermost frames' functions, which usually say
which phase failed (profile_run: startup memory profiling; init_device: device setup).
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.diagnosis.base import Context, Finding
from loganalyze.diagnosis.nccl_error import TEXT as NCCL_TEXT
from loganalyze.diagnosis.oom import OOM_TEXT

KINDS = ("traceback", "exception", "process_crash")


def _where(message: str) -> str:
    functions = re.findall(r", in (\w+)", message)
    return ", ".join(dict.fromkeys(functions[-3:])) if functions else "unknown"


def _explained(ctx: Context, rows: pl.DataFrame, reason: pl.Expr) -> pl.Series:
    """Tracebacks whose final error line another finding reads: an out-of-memory or NCCL
    event on a line of the traceback or the line after it (the line a kind took from it)."""
    causes = ctx.events(reason & ~pl.col("kind").is_in(list(KINDS))).select("source", "line_no")
    if causes.height == 0:
        return pl.Series([False] * rows.height)
    spans = rows.with_row_index("_i").select("_i", "source", start="line_no", end=pl.col("line_no") + pl.col("span"))
    near = spans.join(causes, on="source").filter(pl.col("line_no").is_between("start", "end"))
    return pl.Series(range(rows.height)).is_in(near["_i"].cast(pl.Int64).implode())


def check(ctx: Context) -> list[Finding]:
    reason = pl.col("message").str.contains(f"{OOM_TEXT}|{NCCL_TEXT}")
    rows = ctx.events(pl.col("kind").is_in(list(KINDS)) & ~reason)
    rows = rows.filter(~_explained(ctx, rows, reason)) if rows.height else rows
    if rows.height == 0:
        return []
    first = rows.row(0, named=True)
    error = re.findall(r"^([\w.]*(?:Error|Exception)\b.*)$", first["message"] or "", re.M)
    what = error[-1][:160] if error else "a traceback without its final error line (the log is cut)"
    return [Finding(
        id="crash", severity="critical", title="Server error",
        verdict=f"{rows.height} traceback(s); the first, in {_where(first['message'] or '')}: {what}.",
        impact=1.0, impact_text="the failing process stops serving",
        recommendation="Read the full traceback in the source log (evidence below); if it is cut, collect the log "
                       "of every rank and process: the first error is usually on one rank only.",
        confidence="medium", evidence=ctx.evidence(rows), metrics={"tracebacks": rows.height},
    )]
