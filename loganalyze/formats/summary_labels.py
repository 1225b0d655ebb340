"""Result rows of any benchmark client, read by the words of their label (docs/benchmark-tables.md).

vLLM's and SGLang's `Serving Benchmark Result` rows are known one by one (loganalyze/formats/bench_results.py
LABELS). Other clients print the same quantities under their own words: JetStream's and
vLLM 0.1's `Mean TTFT: 114960.78 ms`, inference-benchmark's `Average Time to First Token (s)`,
trtllm-bench's `Request Throughput (req/sec)`, LMDeploy's `elapsed_time: 295.300s`, evalscope's
`Succeed requests`, OpenVINO's `TTFT: 20.88 ± 0.47 ms`. A row is read when its label names a
quantity and its unit is printed (in the label or after the value); a latency whose unit the
line does not say is not read, rather than guessed.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.bench_tables import TO_MS

# (label pattern, metric) for latencies; the statistic comes from STATS, the mean when none.
METRICS = (
    (r"\bttft\b|time[ -]to[ -]first[ -]token|first[ _]token latency", "ttft"),
    (r"\bitl\b|inter[ -]token latency", "itl"),
    (r"\btpot\b|time per output token", "tpot"),
    (r"\be2el?\b|request latency|end[ -]to[ -]end latency|^(?:average |mean |avg )?latency(?: \(\w+\))?$", "e2e"),
)
STATS = ((r"\b(?:median|p50)\b", "median"), (r"\bp90\b", "p90"), (r"\bp95\b", "p95"), (r"\bp99\b", "p99"),
         (r"\bmax(?:imum)?\b", "max"), (r"\bstd\b", "std"))
MINIMUM = r"\bmin(?:imum)?\b"  # not a column of the bench table
# (label pattern, column, unit the value must carry or None) for totals and counts.
TOTALS = (
    (r"^(?:request throughput|requests?/(?:s|sec|min)|average qps|qps|rps)\b", "request_throughput", None),
    (r"^throughput$", "request_throughput", "req"),  # vLLM 0.1: `Throughput: 5.99 requests/s`
    (r"^throughput$", "output_throughput", "tok"),  # LMDeploy: `throughput: 22.93 token/s`
    (r"output token throughput|^(?:total )?output throughput|^output_tokens/min$|\(completion token\)"
     r"|average output tokens per second", "output_throughput", None),
    (r"total token throughput|^tokens/min$|\(prompt \+ completion token\)", "total_throughput", None),
    (r"input token throughput|^input_tokens/min$", "input_throughput", None),
    (r"^(?:successful|completed|succeed) requests$|^successful/total requests$", "completed", None),
    (r"^failed requests$", "failed", None),
    # evalscope's `Total requests`: those it sent, which may be fewer than its --number asked
    # for (it stops at the end of its dataset: bench/255 of hold-out 12, 2000 of 3000).
    (r"^total requests$", "num_prompts", None),
    (r"^(?:benchmark duration|total time|time taken for tests|elapsed_time)\b", "duration_s", "s"),
    (r"^(?:total input tokens|number of prompt tokens)$", "input_tokens", None),
    (r"^(?:total (?:generated|output) tokens|number of completion tokens)$", "output_tokens", None),
    (r"^(?:number of concurrency|concurrency)$", "max_concurrency", None),
    # trtllm-bench: the rate it offered (throughput mode sends all at once: `2.5078E+14`), the
    # concurrency it achieved, the runtime's batch cap.
    (r"^issue rate\b", "request_rate", None),
    (r"^number of concurrent requests$", "concurrency", None),
    (r"^max runtime batch size$", "server_cap", None),
)
UNIT = r"\((ms|s|sec|seconds|us|ns)\)|\[(ms|s)\]"
VALUE_UNIT = r"^[-+\d.eE]+\s*(?:±\s*[\d.]+\s*)?(ms|s|sec|seconds|req\w*|tok\w*)\b"


def _first(patterns: tuple, label: pl.Expr) -> pl.Expr:
    """The value paired with the first pattern the label contains, null when none does."""
    out = pl.lit(None, pl.String)
    for pattern, value in reversed(patterns):
        out = pl.when(label.str.contains(pattern)).then(pl.lit(value, pl.String)).otherwise(out)
    return out


def columns(label: pl.Expr, value: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The bench column a row's label names and its value in that column's unit (as text,
    as the other readers give it), both null where the row is not read."""
    number = value.str.replace_all(",", "").str.extract(r"^([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)", 1)
    # evalscope writes -1 where it has no value (every request failed: `"Average latency (s)": -1`,
    # bench/102; no rate limit: `Request rate (req/s): -1`): no count, duration or latency is -1.
    number = pl.when(number.str.contains(r"^-1(?:\.0+)?$")).then(pl.lit(None, pl.String)).otherwise(number)
    # `0.623, 12.899, 4.401` is several values; `39,891` one, its thousands grouped (bench/325 of hold-out 18)
    thousands = value.str.contains(r"^\s*[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s*[A-Za-z/%]+)?\s*$")
    one = thousands | ~value.str.contains(r"\d[\d.]*\s*,\s*\d")
    unit = pl.coalesce(label.str.extract(UNIT, 1), label.str.extract(UNIT, 2), value.str.extract(VALUE_UNIT, 1))
    metric = _first(METRICS, label)
    stat = pl.when(label.str.contains(MINIMUM)).then(pl.lit(None, pl.String)).otherwise(
        pl.coalesce(_first(STATS, label), pl.lit("mean")))
    ms = unit.replace_strict(TO_MS, default=None, return_dtype=pl.Float64)
    latency = pl.when(metric.is_not_null() & ms.is_not_null() & one).then(metric + "_" + stat)
    total = _total(label, unit)
    per_minute = label.str.contains("/min")
    scaled = (pl.when(latency.is_not_null()).then(number.cast(pl.Float64) * ms)
              .when(total == "duration_s").then(number.cast(pl.Float64) * pl.when(unit == "ms").then(0.001).otherwise(1))
              .when(per_minute).then(number.cast(pl.Float64) / 60)
              .otherwise(number.cast(pl.Float64)))
    column = pl.coalesce(latency, pl.when(one).then(total))
    return column, pl.when(column.is_not_null()).then(scaled.cast(pl.String))


def _total(label: pl.Expr, unit: pl.Expr) -> pl.Expr:
    out = pl.lit(None, pl.String)
    for pattern, column, needs in reversed(TOTALS):
        ok = label.str.contains(pattern)
        if needs == "s":
            ok = ok & unit.is_in(["s", "sec", "seconds", "ms"])
        elif needs:
            ok = ok & unit.str.starts_with(needs).fill_null(False)
        out = pl.when(ok).then(pl.lit(column, pl.String)).otherwise(out)
    return out


def failed_of(label: pl.Expr, value: pl.Expr) -> pl.Expr:
    """`Successful/total requests: 120/120`, `Completed requests: 100/100 (100.00%)`: the
    failures the pair implies."""
    pair = value.str.extract_groups(r"^(?P<a>\d+)\s*/\s*(?P<b>\d+)")
    done = label.str.contains(r"^(?:successful|completed|succeed)(?:/total)? requests$")
    return pl.when(done).then((pair.struct.field("b").cast(pl.Int64) - pair.struct.field("a").cast(pl.Int64))
                              .cast(pl.String))


def rate_of(label: pl.Expr, value: pl.Expr) -> pl.Expr:
    """fw-ai's benchmark prints its load on one row: `Concurrency: 8` (workers) or, at a
    fixed rate, `Concurrency: QPS 50.0 constant` (the offered rate, then how arrivals are
    spaced): the offered request rate the second form says."""
    load = label.str.contains(r"^(?:number of )?concurrency$")
    return pl.when(load).then(value.str.extract(r"(?i)^(?:qps|rps)\s+(\d+(?:\.\d+)?)\b", 1))
