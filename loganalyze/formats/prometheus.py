"""Prometheus text exposition: a `/metrics` scrape of vLLM or SGLang, one or several over time.

Every sample line `name{label="v",...} value [timestamp_ms]` becomes a row of the `metrics`
table (name, labels as the text between the braces, value, the scrape's timestamp when
printed); `# HELP` and `# TYPE` lines become rows with the metric's type or help text, so a
counter (`vllm:num_preemptions_total`) can be told from a gauge. Servers publish there what
their logs may not print: vLLM 0.32 never logs its preemptions, its scrape counts them.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.spec import LineKind, LogFormat, Sample
from loganalyze.formats.tables import Schema, table

F, S = pl.Float64, pl.String

# `stat`, `since` and `endpoint` are for statistics over a window (AIPerf's exports,
# loganalyze/formats/server_metrics.py): a scrape's own samples have none.
TABLES: dict[str, Schema] = {"metrics": table({"name": S, "labels": S, "value": F, "scrape_ts_ms": F, "metric_type": S,
                                               "help": S, "stat": S, "since": pl.Datetime("us"), "endpoint": S})}

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"

KINDS = (
    LineKind(
        name="sample", table="metrics", needle=" ", match=rf"^{NAME}(?:\{{[^}}]*\}})? [^ ]+(?: -?\d+)?$",
        pattern=(rf"^(?P<name>{NAME})(?:\{{(?P<labels>[^}}]*)\}})? "
                 r"(?P<value>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[Nn]a[Nn]|[-+]?Inf))"
                 r"(?: (?P<scrape_ts_ms>-?\d+))?$"),
        types={"value": F, "scrape_ts_ms": F},
        samples=(Sample('vllm:num_preemptions_total{engine="0",model_name="tiny-llama"} 55.0',
                        labels='engine="0",model_name="tiny-llama"', name="vllm:num_preemptions_total", value=55.0),
                 Sample("process_resident_memory_bytes 6.51493376e+08",
                        name="process_resident_memory_bytes", value=651493376.0),
                 Sample('sglang:num_running_reqs{model_name="m"} 12.0 1733050000000',
                        labels='model_name="m"', name="sglang:num_running_reqs", scrape_ts_ms=1733050000000.0,
                        value=12.0)),
    ),
    LineKind(
        name="type", table="metrics", needle="# TYPE ", pattern=rf"^# TYPE (?P<name>{NAME}) (?P<metric_type>\w+)",
        samples=("# TYPE vllm:num_preemptions_total counter",),
    ),
    LineKind(
        name="help", table="metrics", needle="# HELP ", pattern=rf"^# HELP (?P<name>{NAME}) (?P<help>.*)$",
        samples=("# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.",),
    ),
)

FORMAT = LogFormat(
    name="prometheus",
    description="Prometheus text exposition (a /metrics scrape of vLLM or SGLang)",
    releases="text format 0.0.4",
    prefix=r"^(?P<msg>.*)$",
    hash_lines=True,
    kinds=KINDS,
    detect=(rf"^# (?:HELP|TYPE) {NAME} ", r"^(?:vllm|sglang):\w+(?:\{[^}]*\})? [-+\d.eE]+$"),
)
