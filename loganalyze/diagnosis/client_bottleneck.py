"""client-bottleneck: the benchmark client says it could not send the load it was asked to.

GuideLLM checks itself after each benchmark and prints what it found under `Warnings
(<benchmark>)`: "mean generation delay was 4% of mean time to first token ... This means
that the benchmark was likely bottlenecked by the data generation" (it built requests
slower than it sent them). Then the load the server saw is lighter than the benchmark's
label, and the server's numbers at that level say nothing about its limit
(fixtures/engines/vllm-0.32/guidellm-client-bound: 8 streams asked, the server ran 0-1).
The finding rests on the client's own words; a late dispatch alone ("conversations were
loaded late") is not enough: GuideLLM prints it for healthy runs on a busy machine too.
"""

from __future__ import annotations

import json
import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.kinds import kind_in, kinds

WARNINGS = kinds("client_warnings")
BOTTLENECK = re.compile(r"(?s)⚠\s+([^⚠]*?bottlenecked by [^.⚠]*)\.")


def find(ctx: Case) -> list[Finding]:
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
