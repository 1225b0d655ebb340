"""client-bottleneck: the benchmark client says it could not send the load it was asked to.

GuideLLM checks itself after each benchmark and prints what it found under `Warnings
(<benchmark>)`: "mean generation delay was 4% of mean time to first token ... This means
that the benchmark was likely bottlenecked by the data generation" (it built requests
slower than it sent them). Then the load the server saw is lighter than the benchmark's
label, and the server's numbers at that level say nothing about its limit
(fixtures/engines/vllm-0.32/guidellm-client-bound: 8 streams asked, the server ran 0-1).
The finding rests on the client's own words; a late dispatch alone ("conversations were
loaded late") is not enough: GuideLLM prints it for healthy runs on a busy machine too.

AIPerf prints no such warning, but its own numbers say it: `Effective Concurrency` (the
requests it had in flight, on average) against the `--concurrency` it was asked to hold. Below
80 % of it (the sweep's client-limited share, loganalyze/metrics/sweep.py) while the server
queued nothing, the client did not keep its load in flight
(fixtures/engines/vllm-0.32/aiperf-client-limited: 48 of 64 on 2 shared cores, the server never
above 45 running with an empty queue). A run of few requests per slot ramps up and drains
for much of its time, and failed requests end early: neither is read as a client limit.
"""

from __future__ import annotations

import json
import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.diagnosis.bench_evidence import bench_evidence
from loganalyze.kinds import kind_in, kinds

WARNINGS = kinds("client_warnings")
BOTTLENECK = re.compile(r"(?s)⚠\s+([^⚠]*?bottlenecked by [^.⚠]*)\.")


CLIENT_SHARE = 0.8  # achieved / requested concurrency below which the client held less than asked
MIN_PER_SLOT = 5  # requests per slot, at least: fewer and the ramp-up and drain pull the average down
MAX_FAILED = 0.05  # share of failed requests above which the shortfall is the failures'


def find(ctx: Case) -> list[Finding]:
    return _warned(ctx) + _short_of_concurrency(ctx)


def client_short(ctx: Case) -> pl.DataFrame:
    """The results whose shortfall of concurrency is the client's (AIPerf's achieved concurrency
    well below the one it was asked to hold, enough requests per slot, few failed, the server
    queueing nothing): bench-failures' low-concurrency leaves these to this finding."""
    sweep = ctx.metrics.get("sweep")
    if not sweep:
        return pl.DataFrame()
    conc = ctx.metrics.get("concurrency")
    if conc and conc.summary["queue_max"]:  # the server queued: the client's requests were in flight, waiting there
        return sweep.frames["results"].head(0)
    return sweep.frames["results"].filter(
        (pl.col("tool") == "aiperf") & (pl.col("concurrency") < CLIENT_SHARE * pl.col("max_concurrency"))
        & (pl.col("completed") >= MIN_PER_SLOT * pl.col("max_concurrency"))
        & (pl.col("failed").fill_null(0) <= MAX_FAILED * (pl.col("completed") + pl.col("failed").fill_null(0))))


def _short_of_concurrency(ctx: Case) -> list[Finding]:
    """AIPerf's achieved concurrency well below the one it was asked to hold, the server idle."""
    rows = client_short(ctx)
    if rows.height == 0:
        return []
    conc = ctx.metrics.get("concurrency")
    row = rows.sort("completed", "line_no", descending=[True, False]).row(0, named=True)
    asked, held = row["max_concurrency"], row["concurrency"]
    server = (f", while the server ran at most {conc.summary['running_max']} with nothing waiting in "
              f"{conc.summary['decode_rows']} stats lines" if conc else
              "; no server log here says what the server ran, so this rests on the client's numbers alone")
    return [Finding(
        id="client-bottleneck",
        severity="warning",
        title="The benchmark client did not keep its concurrency in flight",
        verdict=(f"AIPerf was asked to hold {asked} requests in flight (--concurrency {asked}) but held {held:.1f} on "
                 f"average (its effective concurrency, {held / asked:.0%}){server}: the client, not the server, set "
                 f"the load, so the results do not measure the server at concurrency {asked}."),
        impact=0.0,
        impact_text="the results describe the client's limit, not the server's",
        recommendation=("Give the client more CPU (its own machine, fewer other processes, more AIPerf workers) or "
                        "a lower --concurrency, and rerun before comparing numbers."),
        confidence="medium" if conc else "low",
        evidence=bench_evidence(ctx.run, row, "max_concurrency", "concurrency"),
        metrics={"requested": asked, "achieved": round(held, 2), "server_running_max":
                 conc.summary["running_max"] if conc else None},
    )]


def _warned(ctx: Case) -> list[Finding]:
    rows = ctx.events(kind_in(WARNINGS) & pl.col("message").str.contains("bottlenecked by"))
    if rows.height == 0:
        return []
    said = [" ".join(m.group(1).split()) for m in BOTTLENECK.finditer(rows["message"][0])]
    levels = [json.loads(f or "{}").get("benchmark") for f in rows["fields"]]
    named = ", ".join(str(level) for level in levels if level)
    return [Finding(
        id="client-bottleneck",
        severity="warning",
        title="The benchmark client was the bottleneck",
        verdict=(f"The client reports that it limited its own benchmark{f' ({named})' if named else ''}: "
                 f"{said[0] if said else 'bottlenecked'}. The server saw less load than the benchmark's "
                 "label says, so these results do not measure the server at that load."),
        impact=0.0,
        impact_text="the results describe the client's limit, not the server's",
        recommendation=("Give the client more CPU (its own machine, fewer other processes), pre-generate or "
                        "cache its dataset, or lower the load level, and rerun before comparing numbers."),
        confidence="medium",
        evidence=ctx.evidence(rows.head(2)),
        metrics={"benchmarks": [level for level in levels if level]},
    )]
