"""The results benchmark clients print to a console (loganalyze/formats/bench.py): `Serving
Benchmark Result` blocks and other clients' summary blocks, read row by row by label, and
the one-line results of bench_one_batch, `vllm bench latency` and `vllm bench throughput`."""

from __future__ import annotations

import polars as pl
import regex

from loganalyze.formats import summary_labels
from loganalyze.formats.bench_tables import BENCH
from loganalyze.formats.common import fraction


HEADER = r"^=+ ?Serving Benchmark Result ?=+\s*$"

FOOTER = r"(?m)^={50}\s*$"

# Other clients' summary blocks (loganalyze/formats/summary_labels.py): inference-benchmark's `====Result
# for Model: X====`, fw-ai's `=== Summary ===`, trtllm-bench's `= PERFORMANCE OVERVIEW` and its
# `[Latency] P50 : x` rows, vLLM's guided-serving `Benchmark Results:`, evalscope's
# `Benchmarking summary:`. Blocks printed with no banner (JetStream, vLLM 0.1, LMDeploy,
# OpenVINO) are recognised by their first row.
SUMMARY = (r"^=+ ?Result for .*$|^=+ Summary =+\s*$|^= PERFORMANCE OVERVIEW\s*$"
           r"|^(?:Benchmark Results|Benchmarking summary)\s*:\s*$")

# trtllm-bench prints `= SECTION` banners between `=` rules before its PERFORMANCE OVERVIEW
# (backend, request details, world and runtime): a paste's first one heads a block of its
# own, which the overview's block right below takes in (`_with_sections`), so the load it
# offered and the runtime's batch cap are read with the performance rows.
TRTLLM_SECTION = r"^= (?:PYTORCH BACKEND|ENGINE DETAILS|REQUEST DETAILS|WORLD \+ RUNTIME INFORMATION)\s*$"

# Printed label (lower case) -> bench column. Latency rows are matched by LATENCY_ROW.
LABELS = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "request rate configured (rps)": "request_rate",
    "max request concurrency": "max_concurrency",
    "maximum request concurrency": "max_concurrency",
    "successful requests": "completed",
    "failed requests": "failed",
    "benchmark duration (s)": "duration_s",
    "total input tokens": "input_tokens",
    "total generated tokens": "output_tokens",
    "total generated tokens (retokenized)": "output_tokens_retokenized",
    "request throughput (req/s)": "request_throughput",
    "request goodput (req/s)": "goodput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "peak_output_throughput",
    "peak concurrent requests": "peak_concurrency",
    "total token throughput (tok/s)": "total_throughput",
    "concurrency": "concurrency",
    "accept length": "accept_length",
    "acceptance length": "accept_length",
    "acceptance rate (%)": "accept_rate",
    "drafts": "drafts",
    "draft tokens": "draft_tokens",
    "accepted tokens": "accepted_tokens",
}

PERCENT = ("accept_rate",)

LATENCY_ROW = r"^(mean|median|std|max|p\d+(?:\.\d+)?) (ttft|tpot|itl|e2el|e2e latency) \(ms\)$"

# Rows only sglang's block prints: they tell its block from vLLM's, which has no Backend row.
SGLANG_ROWS = r"(?m)^(?:Backend|Traffic request rate|Total generated tokens \(retokenized\)|Accept length):"


def _rows(rows: pl.DataFrame) -> pl.DataFrame:
    """(line_no, label, value) for every `label: value` row of every block, labels normalised."""
    pair = pl.element().str.extract_groups(r"^\s*(?P<label>[^:]+?):\s*(?P<value>.*?)\s*$")
    long = (
        rows.select("line_no", row=pl.col("block").list.eval(pair))
        .explode("row")
        .unnest("row")
        .filter(pl.col("label").is_not_null())
    )
    norm = (pl.col("label").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
            .str.replace("reqeuest", "request"))
    latency = norm.str.extract_groups(LATENCY_ROW)
    metric = latency.struct.field("2").replace({"e2el": "e2e", "e2e latency": "e2e"})
    stat = latency.struct.field("1").replace({"p50": "median"})
    known = pl.coalesce(norm.replace_strict(LABELS, default=None), metric + "_" + stat)
    generic, generic_value = summary_labels.columns(norm, pl.col("value"))
    column = pl.coalesce(known, generic)
    column = pl.when(column.is_in(list(BENCH))).then(column)  # P99.9 and the like: `extra`
    value = pl.when(pl.col("value").str.to_lowercase().is_in(["not set", "none", "n/a", ""])).then(None).otherwise(
        pl.when(known.is_null() & generic.is_not_null()).then(generic_value)
        .otherwise(pl.col("value").str.strip_suffix("%"))
    )
    long = long.with_columns(norm=norm, column=column, value=value,
                             failed=summary_labels.failed_of(norm, pl.col("value")),
                             rate=summary_labels.rate_of(norm, pl.col("value")))
    implied = [long.filter(pl.col(c).is_not_null()).with_columns(column=pl.lit(name), value=pl.col(c))
               for c, name in (("failed", "failed"), ("rate", "request_rate"))]
    return pl.concat([long, *implied]).drop("failed", "rate")


def _positions(long: pl.DataFrame) -> pl.DataFrame:
    """vLLM 0.14+ `  Position i:` rows as one list of acceptance fractions per block."""
    pos = long.with_columns(i=pl.col("norm").str.extract(r"^position (\d+)$", 1).cast(pl.Int64)).filter(
        pl.col("i").is_not_null()
    )
    return pos.sort("line_no", "i").group_by("line_no").agg(
        per_position=fraction(pl.col("value").cast(pl.Float64, strict=False))
    )


def _typed(wide: pl.DataFrame) -> pl.DataFrame:
    """Cast the pivoted text columns to the bench schema (ints via float: `325.00`)."""
    cols = []
    for c in wide.columns:
        if c not in BENCH or c == "line_no":
            continue
        dtype = BENCH[c]
        num = pl.col(c).cast(pl.Float64, strict=False)
        if c in PERCENT:
            cols.append(fraction(num).alias(c))
        elif dtype in (pl.Int64, pl.Float64):
            cols.append(num.cast(dtype, strict=False).alias(c))
    return wide.with_columns(cols)


def serving_blocks(rows: pl.DataFrame) -> pl.DataFrame:
    """One bench row per `Serving Benchmark Result` block or other client's summary block,
    its rows read by label."""
    # Cut at the footer; a rule right under a banner (`Benchmark Results:` / `=====`) is not one.
    ruled = r"^[^\n]*\n={50}[ \t]*\n"
    text = (pl.when(pl.col("body").str.contains(ruled))
            .then(pl.col("body").str.replace(rf"(?s)({ruled}.*?\n={{50}}[ \t]*)\n.*$", "$1"))
            .otherwise(pl.col("body").str.replace(r"(?s)(\n={50}[ \t]*)\n.*$", "$1")))
    serving = text.str.contains(r"(?m)^=+ ?Serving Benchmark Result")
    first = text.str.split("\n").list.first()
    bannered = first.str.contains(HEADER) | first.str.contains(SUMMARY) | first.str.contains(TRTLLM_SECTION)
    rows = rows.with_columns(
        block=text.str.split("\n"),  # cut at the footer
        # Partial: a vLLM or SGLang block that stops before its footer, or any block that
        # starts without its banner (a paste that cut it: bench/65); another client's block
        # under its own banner has no footer to miss.
        partial=(serving & ~text.str.contains(FOOTER)) | ~bannered,
        tool=pl.when(text.str.contains(SGLANG_ROWS)).then(pl.lit("sglang.bench_serving"))
        .when(serving).then(pl.lit("vllm.bench_serve"))
        .when(text.str.contains(r"(?m)^= PERFORMANCE OVERVIEW")).then(pl.lit("trtllm-bench")),
    )
    long = _rows(rows)
    known = long.filter(pl.col("column").is_not_null())
    wide = (
        known.pivot(on="column", index="line_no", values="value", aggregate_function="first")
        if known.height else pl.DataFrame({"line_no": rows["line_no"]})
    )
    other = long.filter(pl.col("column").is_null() & pl.col("value").is_not_null()
                        & ~pl.col("norm").str.contains(r"^position \d+$"))
    extra = other.group_by("line_no").agg(extra=pl.struct(key="label", value="value"))
    out = rows.join(_typed(wide), on="line_no", how="left")
    return out.join(_positions(long), on="line_no", how="left").join(extra, on="line_no", how="left")


NUM = r"[\d.eE+-]+"

F_, I_ = pl.Float64, pl.Int64

# The line results: (first-line regex, body pattern, column types, constants). Seconds
# columns end in `_s` and become the milliseconds the bench table keeps.
ONE_BATCH = (
    r"^Prefill\. latency: ",
    rf"(?s)^Prefill\. latency: (?P<ttft_mean_s>{NUM}) s, throughput:\s+(?P<input_throughput>{NUM}) token/s"
    r"(?:.*?Batch size: (?P<batch_size>\d+))?"
    rf"(?:.*?(?:median|avg) latency: (?P<tpot_median_s>{NUM}) s, (?:median|avg) throughput:\s+"
    rf"(?P<output_throughput>{NUM}) token/s)?"
    rf"(?:.*?Total\. latency:\s+(?P<e2e_mean_s>{NUM}) s, throughput:\s+(?P<total_throughput>{NUM}) token/s)?",
    {"batch_size": I_},
    {"tool": "sglang.bench_one_batch"},
)

LATENCY = (
    rf"^Avg latency: {NUM} seconds",
    rf"(?s)^Avg latency: (?P<e2e_mean_s>{NUM}) seconds(?:.*?\b50% percentile latency: (?P<e2e_median_s>{NUM}))?"
    rf"(?:.*?\b90% percentile latency: (?P<e2e_p90_s>{NUM}))?(?:.*?\b99% percentile latency: (?P<e2e_p99_s>{NUM}))?",
    {},
    {"tool": "vllm.bench_latency"},
)

THROUGHPUT = (
    r"^Throughput: [\d.]+ requests/s, ",
    r"(?s)^Throughput: (?P<request_throughput>[\d.]+) requests/s, (?P<total_throughput>[\d.]+) "
    r"(?:total )?tokens/s(?:, (?P<output_throughput>[\d.]+) output tokens/s)?"
    r"(?:.*?Total num prompt tokens:\s+(?P<input_tokens>\d+))?(?:.*?Total num output tokens:\s+(?P<output_tokens>\d+))?",
    {"input_tokens": I_, "output_tokens": I_},
    {"tool": "vllm.bench_throughput"},
)

# SGLang's task benchmarks (benchmark/mtbench, gsm8k, mmmu, ... run against a server): the
# questions answered, their output throughput and, with speculation, the accept length
# (output tokens per verify step), on one line or as `Latency: 34.241 s` (the whole run's time,
# not a request's) then `Output throughput` and `Accept length` rows; scripts derived from
# them print `Average ` before each label.
SGLANG_TASK = (
    rf"^#questions: \d+, .*Throughput: {NUM} token/s|^(?:Average )?Latency: {NUM} s[ \t]*(?:\n|$)",
    rf"(?s)^(?:#questions: (?P<num_prompts>\d+), .*?Throughput: (?P<output_throughput>{NUM}) token/s"
    rf"(?:, Acceptance length: (?P<accept_length>{NUM}))?"
    rf"|(?:Average )?Latency: (?P<duration_s>{NUM}) s(?:.*?\bOutput throughput: (?P<output_throughput_>{NUM}) token/s)?"
    rf"(?:.*?\bAccept(?:ance)? length: (?P<accept_length_>{NUM}))?)",
    {"num_prompts": I_},
    {"tool": "sglang.benchmark"},
)

# TensorRT-LLM's session benchmarks before trtllm-bench (0.5 - 0.12): the C++
# gptSessionBenchmark and benchmarks/python/benchmark.py print one `[BENCHMARK] key value ...`
# line per batch size, in their own orders; latency (ms) is the batch's whole generation, the
# tokens per second its generated tokens over that time.
TRTLLM_SESSION = (
    r"^\[BENCHMARK\] .*\bbatch_size \d+ ",
    rf"^\[BENCHMARK\] .*?\bbatch_size (?P<batch_size>\d+) input_length (?P<input_len>\d+) output_length (?P<output_len>\d+)"
    rf"(?:.*?\blatency\(ms\) (?P<e2e_mean>{NUM}) tokensPerSec (?P<output_throughput>{NUM})"
    rf"|.*?\btokens_per_sec (?P<output_throughput_>{NUM})(?: percentile95\(ms\) (?P<e2e_p95>{NUM}))?"
    rf"(?: percentile99\(ms\) (?P<e2e_p99>{NUM}))?(?: latency\(ms\) (?P<e2e_mean_>{NUM}))?)?",
    {"batch_size": I_, "input_len": I_, "output_len": I_},
    {"tool": "trtllm.benchmark"},
)

# SGLang's multi-turn benchmark (benchmark/hicache/bench_multiturn.py), one summary per request
# rate: `Total requests: 1280 at 1.0 requests per second`, then TTFT, ITL and latency rows in
# seconds without a unit (the script's perf_counter differences), and the requests per second
# it completed (sglang/283 of hold-out 16).
SGLANG_MULTITURN = (
    r"^Performance metrics summary:[ \t]*(?:\n|$)",
    rf"(?s)^Performance metrics summary:.*?\bTotal requests: (?P<completed>\d+) at (?P<request_rate>{NUM}) requests per second"
    rf"(?:.*?\bAverage TTFT: (?P<ttft_mean_s>{NUM}))?(?:.*?\bP90 TTFT: (?P<ttft_p90_s>{NUM}))?"
    rf"(?:.*?\bP99 TTFT: (?P<ttft_p99_s>{NUM}))?(?:.*?\bMedian TTFT: (?P<ttft_median_s>{NUM}))?"
    rf"(?:.*?\bAverage ITL: (?P<itl_mean_s>{NUM}))?(?:.*?\bAverage latency: (?P<e2e_mean_s>{NUM}))?"
    rf"(?:.*?\bP90 latency: (?P<e2e_p90_s>{NUM}))?(?:.*?\bMedian latency: (?P<e2e_median_s>{NUM}))?"
    rf"(?:.*?\bThroughput: (?P<request_throughput>{NUM}) requests per second)?",
    {"completed": I_},
    {"tool": "sglang.bench_multiturn"},
)

LINE_RESULTS = (ONE_BATCH, LATENCY, THROUGHPUT, SGLANG_TASK, TRTLLM_SESSION, SGLANG_MULTITURN)

ANY_LINE_RESULT = "|".join(spec[0] for spec in LINE_RESULTS)


def line_result(rows: pl.DataFrame, spec: tuple) -> pl.DataFrame:
    """A bench row per result printed as a few lines (bench_one_batch, vllm bench latency/throughput,
    SGLang's task benchmarks). Columns in seconds are named `<column>_s` and kept in milliseconds.

    bench_one_batch's prefill is the batch's TTFT and one decode step each request's TPOT;
    its batch size is the load level (max_concurrency).
    """
    _, pattern, types, const = spec
    groups = pl.col("body").str.extract_groups(pattern)
    values: dict[str, list[pl.Expr]] = {}
    for name in regex.compile(pattern).groupindex:
        value = groups.struct.field(name).cast(pl.Float64, strict=False)
        column = name.rstrip("_")  # a column the pattern's alternatives both give (`accept_length_`)
        if column.endswith("_s") and column[:-2] in BENCH:
            values.setdefault(column[:-2], []).append(value * 1000)
        else:
            values.setdefault(column, []).append(value.cast(types.get(column, F_), strict=False))
    cols = [pl.coalesce(found).alias(column) for column, found in values.items()]
    out = rows.with_columns(*cols, *(pl.lit(v).alias(k) for k, v in const.items()))
    return out.with_columns(max_concurrency=pl.col("batch_size")) if "batch_size" in out.columns else out


def _with_sections(rows: pl.DataFrame) -> pl.DataFrame:
    """trtllm-bench's sections above its PERFORMANCE OVERVIEW, one block, joined to the
    overview's block when that starts within a few lines of their end: one result, on the
    line of the first section."""
    rows = rows.sort("line_no")
    overview = r"(?m)^= PERFORMANCE OVERVIEW"
    head = pl.col("body").str.contains("(?m)" + TRTLLM_SECTION) & ~pl.col("body").str.contains(overview)
    near = (pl.col("line_no").shift(-1) - (pl.col("line_no") + pl.col("span"))).fill_null(99) <= 3
    joins = head & near & pl.col("body").shift(-1).str.contains(overview).fill_null(False)
    taken = rows.with_columns(joins=joins, prev_joins=joins.shift(1).fill_null(False),
                              prev_body=pl.col("body").shift(1), prev_line=pl.col("line_no").shift(1))
    return taken.filter(~pl.col("joins")).with_columns(
        body=pl.when("prev_joins").then(pl.col("prev_body") + "\n" + pl.col("body")).otherwise("body"),
        line_no=pl.when("prev_joins").then("prev_line").otherwise("line_no"),
    ).drop("joins", "prev_joins", "prev_body", "prev_line")


def results(rows: pl.DataFrame) -> pl.DataFrame:
    """Handler of the one result kind: each group goes to the reader of its first line."""
    rows = _with_sections(rows).with_columns(block=pl.col("body").str.split("\n"))
    parts = []
    blocks = rows.filter(~pl.col("body").str.contains(ANY_LINE_RESULT))
    if blocks.height:
        parts.append(serving_blocks(blocks))
    for spec in LINE_RESULTS:
        mine = rows.filter(pl.col("body").str.contains(spec[0]))
        if mine.height:
            parts.append(line_result(mine, spec))
    return pl.concat(parts, how="diagonal_relaxed")
