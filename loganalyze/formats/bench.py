"""Benchmark client output printed to a console (docs/formats-sources.md#benchmark-clients).

Covers the `Serving Benchmark Result` block of sglang.bench_serving (0.1.22 - 0.5.x) and
of vLLM benchmark_serving.py / `vllm bench serve` (0.4 - 0.33), sglang bench_one_batch,
`vllm bench latency` and `vllm bench throughput`, the command line and `Namespace(...)`
args that precede them, and vLLM's pre-run lines (`Maximum request concurrency: 64`).

A block is its banner line plus the rows that follow it (engine continuation lines); its
rows are read by label, never by position, because every release adds, renames or
reorders rows (`Max reqeuest concurrency`, `Total Token throughput`, P90 rows, the
speculative section). Each block is one `bench` row whose line_no is the banner's; rows
cut off from their banner (a paste that starts mid-block) are a partial block from the
first duration row or section title on (UNBANNERED, SECTION), and stay in `unparsed` above it.

The format is embeddable: sglang's bench_one_batch prints into a server-style log, and
bench output gets captured with a server's, so results are claimed in any file (a file
whose lines a server format recognises is that server's, see loganalyze/formats/__init__.py). As an
embeddable format runs over every line of every file, all printed results are one line
kind: the engine groups continuation lines once, not once per result layout.

The blocks and one-line results are read in loganalyze/formats/bench_results.py; this module
holds the kinds around them (command lines, args, pre-run lines, progress) and the format.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats import bench_json, common, result_tables
from loganalyze.formats.bench_results import (
    ANY_LINE_RESULT, HEADER, SGLANG_MULTITURN, SGLANG_TASK, SUMMARY, TRTLLM_SECTION, TRTLLM_SESSION, results)
from loganalyze.formats.bench_tables import BENCH
from loganalyze.formats.config import explode_pairs, repr_dump
from loganalyze.formats.spec import LineKind, LogFormat, Sample


# Rows inside a block: `label:  value` (the label is padded to 40), a label alone
# (`Per-position acceptance (%):`), a dash-centred section title, the closing `=` * 50.
BLOCK_ROW = r"^\s*[A-Za-z#][^:]*:(?:\s+\S.*)?\s*$|^-{3,}[^-].*[^-]-{3,}\s*$|^={50}\s*$"

# A server's stats message logged among a client's rows (its leader peeled: `Engine 000: Avg
# prompt throughput: ...`, SGLang's `Decode batch. #running-req: ...`) has a row's shape but
# is the server's line (bench/276 of hold-out 13).
SERVER_STATS = r"^Engine \d+: |^Avg prompt throughput: |^(?:Decode|Prefill) batch[., ]"

SUMMARY_ROW = r"^={20,}\s*$|^= [A-Z][A-Z0-9 +/-]*\s*$|^\[\w+\] \w+\s*:\s*\S|^-{10,}\s*$"

# A vLLM or SGLang block whose banner and first rows a paste cut starts again at its duration
# row, which no other line prints with that label (bench/65).
UNBANNERED = r"^(?:Successful requests|Total time|concurrency|Load time|Benchmark duration \(s\)):\s*\S"
# A paste that holds only some of a block's sections (a comment quoting the latencies:
# bench/206 and bench/207 of hold-out 7) is still a benchmark's output: their dash-centred
# titles are vLLM's and SGLang's own, and each starts again a block cut from its banner.
SECTION = (r"^-{3,}(?:Time to First Token|Time per Output Token \(excl\. 1st token\)|Inter-[Tt]oken Latency"
           r"|End-to-[Ee]nd Latency|Speculative Decoding)-{3,}\s*$")

TOOLS = (
    r"sglang\.(?:bench_serving|benchmark\.serving|bench_one_batch_server|bench_one_batch|bench_latency|"
    r"bench_offline_throughput|benchmark\.one_batch)|vllm bench (?:serve|latency|throughput)|benchmark_(?:serving|latency|throughput)\.py"
    r"|genai-perf(?: profile)?|aiperf profile|guidellm (?:benchmark|run)|trtllm-bench|genai-bench benchmark"
    r"|evalscope perf|inference-perf|max benchmark"
)

CMDLINE = rf"(?:^|[\s/])(?:{TOOLS})(?:\s|$)"

# termplotlib's plot lines (gnuplot `dumb`): a row between bars, blank or with the plot's marks,
# no digit, no inner bar and no `=` (nvidia-smi's grid and text tables' rows have those, a
# separator `|-----|` has no space); a border between corners carries its y value (gnuplot
# labels the top and bottom tics), which nvidia-smi's bare `+-----+` does not. A plot starts at
# a border (the bottom one starts the x axis's record); a paste cut inside a plot at a row.
Y_VALUE = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
CHART_BORDER = rf"^\s*{Y_VALUE}\s+\+-{{10,}}\+\s*$"
MARKS = r"[ *.o#+x-]"
# Ten marks or more, one of them a space or `*` (no look-ahead in the regex engine).
CHART_ROW = rf"^\s*(?:{Y_VALUE}\s*)?\|(?:{MARKS}{{0,9}}[ *]{MARKS}{{9,}}|{MARKS}{{9,}}[ *]{MARKS}{{0,9}})\|\s*$"
CHART_MORE = rf"{CHART_ROW}|{CHART_BORDER}|^\s*-?\d+(?:\.\d+)?(?:\s+-?\d+(?:\.\d+)?){{2,}}\s*$"

ALL_FAILED = r"^(?:\S+\.py:\d+: UserWarning: )?All requests failed\. This is likely due to a misconfiguration"

# trtllm-bench's own steps, logged behind TensorRT-LLM's `[11/21/2024-10:26:10] [TRT-LLM] [I] `
# (tensorrt_llm/bench/benchmark/*.py, 0.15 - 1.x): words no server prints, so a console of
# trtllm-bench that dies before its PERFORMANCE OVERVIEW is still the client's (bench/224).
TRTLLM_PHASE = (r"Preparing to run (?:throughput|latency) benchmark\.\.\.|Setting up benchmarker and infrastructure\."
                r"|Setting up (?:throughput|latency) benchmark\.|Initializing (?:Throughput|Latency) Benchmark\. \[rate=[^\]]*\]"
                r"|Ready to start benchmark\.|Benchmark Shutdown called!|Starting benchmarking async task\.")
PHASE = (r"^\s*(?P<phase>Starting initial single prompt test run\.\.\.|Initial test run completed\. Starting main benchmark run"
         r"\.\.\.|Skipping initial test run\. Starting main benchmark run\.\.\.|Starting warmup with (?P<warmups>\d+) "
         r"sequences?\.\.\.|Warmup completed with (?P<warmed>\d+) sequences?\. Starting main benchmark run\.\.\."
         r"|(?:Starting|Stopping) profiler\.\.\.|Profiler (?:started|stopped)"
         r"|tip: install termplotlib and gnuplot to plot the metrics|Waiting for endpoint to become up in \d+ seconds"
         rf"|{TRTLLM_PHASE})\s*$")


def tool_name(printed: pl.Expr) -> pl.Expr:
    """One name per client whatever its entry point: `vllm bench serve` and benchmark_serving.py
    are `vllm.bench_serve`, `sglang.benchmark.serving` is `sglang.bench_serving`."""
    return (
        printed.str.replace(r"^vllm bench (\w+)$", "vllm.bench_$1")
        .str.replace(r"^benchmark_(\w+)\.py$", "vllm.bench_$1")
        .str.replace(r"^sglang\.benchmark\.(\w+)$", "sglang.bench_$1")
        .str.replace(r"^(genai-perf|aiperf|guidellm|genai-bench|evalscope)\b.*$", "$1")
        .str.replace(r"^max benchmark$", "max.benchmark")
        .replace({"vllm.bench_serving": "vllm.bench_serve", "sglang.bench_serve": "sglang.bench_serving",
                  "sglang.bench_latency": "sglang.bench_one_batch"})
    )


def _cmdline(rows: pl.DataFrame) -> pl.DataFrame:
    """`--flag value` pairs of a benchmark command line as config rows `bench.<flag>`, plus `bench.tool`.
    argparse's `usage: genai-perf [-h] ...` names the client but ran nothing: it is left unread,
    for the client's log (loganalyze/formats/client_log.py)."""
    usage = pl.col("body").str.starts_with("usage: ")
    unread = rows.filter(usage).select("line_no", unread=pl.lit(True))
    # A wrapped command line (its continuation lines) reads as the one line it was.
    rows = rows.filter(~usage).with_columns(body=pl.col("body").str.replace_all(r"\s*\\?\s*\n", " "))
    flag = r"--[\w-]+(?:[ =](?:[^-\s]\S*|-\d\S*)(?:\s+(?:[^-\s]\S*|-\d\S*))*)?"
    tool = tool_name(pl.col("body").str.extract(rf"({TOOLS})", 1))
    text = pl.col("body") + " --tool " + tool
    key = pl.element().str.extract(r"^--([\w-]+)", 1).str.replace_all("-", "_")
    value = pl.element().str.extract(r"^--[\w-]+[ =](.*)$", 1).fill_null("True")
    pairs = text.str.extract_all(flag).list.eval(pl.concat_list(pl.lit("bench.") + key, value))
    out = explode_pairs(rows, pairs, "bench_cmdline")
    return pl.concat([out, unread], how="diagonal_relaxed") if unread.height else out


def _namespace(rows: pl.DataFrame) -> pl.DataFrame:
    """The client's `Namespace(...)` args, keys prefixed `bench.` so they never shadow server config."""
    out = repr_dump("bench_args")(rows)
    return out.with_columns(key=pl.lit("bench.") + pl.col("key"))


# sglang.bench_serving's dataset totals, printed when it samples its prompts (`#Input tokens: 296523`).
DATASET_TOTALS = r"^#(?:Input|Output) tokens: \d+\s*$"

PREAMBLE_KEYS = {"#input tokens": "dataset_input_tokens", "#output tokens": "dataset_output_tokens",
                 "traffic request rate": "request_rate", "burstiness factor": "burstiness",
                 "maximum request concurrency": "max_concurrency"}


def _preamble(rows: pl.DataFrame) -> pl.DataFrame:
    """vLLM's pre-run lines (`Maximum request concurrency: 64`) as config rows `bench.<key>`."""
    label = pl.col("body").str.extract(r"^([^:]+):", 1).str.to_lowercase().replace_strict(PREAMBLE_KEYS, default=None)
    value = pl.col("body").str.extract(r":\s*([^\s(]+)", 1).str.strip_suffix(".")
    pair = pl.concat_list(pl.lit("bench.") + label, value)
    return explode_pairs(rows, pair.reshape((-1, 1, 2)).cast(pl.List(pl.List(pl.String))), "bench_preamble")


# A client's own progress bar: no description before the percentage (a server's bars say
# what they load or capture). Its total is the number of prompts sent.
PROGRESS = r"^\s*(?:(?:Benchmarking|Processing(?:\[[\w.-]+\])?):?\s*)?\d{1,3}%\|(?:[^|]*\|)?\s*\d+/(\d+) \["


def _progress(rows: pl.DataFrame) -> pl.DataFrame:
    """The client's progress bar as config `bench.num_prompts`: its total. vLLM's block
    before 0.10 prints no failed count, so `Successful requests: 1` after `100/100` is 99
    failures only the bar tells (bench/24)."""
    pair = pl.concat_list(pl.lit("bench.num_prompts"), pl.col("body").str.extract(PROGRESS, 1))
    return explode_pairs(rows, pair.reshape((-1, 1, 2)).cast(pl.List(pl.List(pl.String))), "bench_progress")


def _json_lines(rows: pl.DataFrame) -> pl.DataFrame:
    """A results file's object on one line of a text file: the columns bench-json gives it."""
    found = bench_json.line_results(rows["body"].to_list())
    keep = [i for i, row in enumerate(found) if row is not None]
    if not keep:
        return rows.clear()
    schema = {c: t for c, t in BENCH.items() if c != "block"}
    typed = pl.DataFrame([found[i] for i in keep], schema_overrides=schema, strict=False, infer_schema_length=None)
    return rows[keep].drop([c for c in typed.columns if c in rows.columns]).hstack(typed)


KINDS = (
    # One kind for every printed `label: value` result, so that the engine groups their
    # continuation lines once (grouping costs a window over every line of a file that has
    # a start line; tables have their own kind, their rows being of another shape).
    LineKind(
        name="result", table="bench",
        needle=("Serving Benchmark Result", "Prefill. latency:", "Avg latency:", "Throughput:", "Result for",
                "Summary", "PERFORMANCE OVERVIEW", "Benchmark Results", "Benchmarking summary", "Latency: ", "[BENCHMARK] ",
                "Performance metrics summary:"),
        match="|".join((HEADER, ANY_LINE_RESULT, SUMMARY)),
        # evalscope ends a summary of a few requests with `Too little data to calculate quantiles!`.
        continuation="|".join((BLOCK_ROW, r"^\d+% percentile latency: ", SUMMARY_ROW,
                               r"^\s*Too little data to calculate quantiles!\s*$")),
        orphan="|".join((UNBANNERED, SECTION, TRTLLM_SECTION)), not_continuation=SERVER_STATS,
        handler=results,
        samples=("============ Serving Benchmark Result ============",
                 Sample("Prefill. latency: 0.03161 s, throughput:   4049.31 token/s",
                        block=["Prefill. latency: 0.03161 s, throughput:   4049.31 token/s"], input_throughput=4049.31,
                        tool="sglang.bench_one_batch", ttft_mean=31.61),
                 Sample("Avg latency: 1.2345678 seconds",
                        block=["Avg latency: 1.2345678 seconds"], e2e_mean=1234.5678, tool="vllm.bench_latency"),
                 Sample("Throughput: 12.34 requests/s, 5678.90 total tokens/s, 2345.67 output tokens/s",
                        block=["Throughput: 12.34 requests/s, 5678.90 total tokens/s, 2345.67 output tokens/s"],
                        output_throughput=2345.67, request_throughput=12.34, tool="vllm.bench_throughput",
                        total_throughput=5678.9),
                 Sample("Performance metrics summary:\n  Total requests: 1280 at 1.0 requests per second\n"
                        "  Average TTFT: 0.36\n  Median TTFT: 0.24\n  Throughput: 0.98 requests per second",
                        block=["Performance metrics summary:", "  Total requests: 1280 at 1.0 requests per second",
                               "  Average TTFT: 0.36", "  Median TTFT: 0.24", "  Throughput: 0.98 requests per second"],
                        completed=1280, request_rate=1.0, ttft_mean=360.0, ttft_median=240.0, request_throughput=0.98,
                        tool="sglang.bench_multiturn")),
    ),
    LineKind(
        name="result_table", table="bench", needle=result_tables.NEEDLES, match=result_tables.START,
        continuation=result_tables.CONTINUATION, handler=result_tables.tables, orphan=result_tables.ORPHAN,
        # The lines of one AIPerf table (fixtures/real/bench/10), read as one result, then a grid.
        samples=(
            '                                           NVIDIA AIPerf | LLM Metrics',
            '┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━┓',
            '┃                               Metric ┃      avg ┃      min ┃      max ┃      p99 ┃      p90 ┃      p50 ┃  std ┃',
            '┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━┩',
            '│             Time to First Token (ms) │    40.84 │    38.58 │    47.18 │    46.69 │    42.24 │    40.35 │ 2.33 │',
            '│            Time to Second Token (ms) │    25.62 │    25.16 │    25.87 │    25.87 │    25.83 │    25.67 │ 0.21 │',
            # The top of a tabulate grid of runs (bench/69), read by loganalyze/formats/text_tables.py.
            '+----+-------------------+--------------------+---------------------+----------------+------------------+---------------+----------------+------------------+---------------+-----------------------+',
            '|    |   max_concurrency |   input_throughput |   output_throughput |   mean_ttft_ms |   median_ttft_ms |   p99_ttft_ms |   mean_tpot_ms |   median_tpot_ms |   p99_tpot_ms |   per_user_throughput |',
            '+====+===================+====================+=====================+================+==================+===============+================+==================+===============+=======================+',
            '|  0 |             1.000 |            123.947 |             123.947 |        138.884 |          139.747 |       147.518 |          7.936 |            7.755 |         9.210 |               123.947 |',
        ),
    ),
    LineKind(
        name="result_json", table="bench", needle=('"completed"', '"request_throughput"', '"median_ttft', '"output_token_throughput"'),
        match=r'^\s*\{".*\}\s*$', handler=_json_lines,
        samples=('{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 16, '
                 '"duration": 91.82, "completed": 300, "total_output_tokens": 300000, '
                 '"total_output_tokens_retokenized": 0, "request_throughput": 3.27}',),
    ),
    # GuideLLM's warnings after its tables: `Warnings (concurrent@2)`, then `⚠ ...` items whose
    # lines go on indented; the client's own word on what limited the benchmark.
    LineKind(
        name="client_warnings", table="events", needle="Warnings (", match=r"^Warnings \((?P<benchmark>[^)]+)\)\s*$",
        pattern=r"^Warnings \((?P<benchmark>[^)]+)\)", pack="fields", message=True, continuation=r"^⚠\s+\S|^  \S",
        const={"severity": "warning"},
        samples=("Warnings (concurrent@2)",
                 "⚠ mean generation delay was 4% of mean time to first token ms.total (0.014s /   ",
                 "  0.321s; threshold 1%).                                                        ",
                 "  This means that the benchmark was likely bottlenecked by the data generation. "),
    ),
    # The serving clients' warning when no request succeeded (the calculate_metrics of
    # sglang.bench_serving and of vLLM's benchmark_serving.py / `vllm bench serve`): Python's
    # warning line, then the source line that warned, indented, where the formatter prints it
    # (vLLM's newer one does not). Every request failed: the result, if any follows, is empty.
    LineKind(
        name="client_all_failed", table="events", needle="All requests failed",
        match=ALL_FAILED, continuation=r"^\s+\S", message=True, const={"severity": "error"},
        samples=("/sglang/benchmark/hicache/bench_serving.py:510: UserWarning: All requests failed. This is likely due "
                 "to a misconfiguration on the benchmark arguments.",
                 "  metrics, output_lens = calculate_metrics("),
    ),
    # The run's phases as vLLM's benchmark_serving.py / `vllm bench serve` and sglang.bench_serving
    # print them (their `benchmark()`): the single-prompt test run or warm-up before the timed
    # requests, the profiler, vLLM's hint when termplotlib is missing (bench/100, bench/108).
    LineKind(
        name="bench_phase", table="events",
        needle=("test run", "Starting warmup", "Warmup completed", "profiler", "Profiler", "tip: install termplotlib",
                "Waiting for endpoint", "benchmark.", "Benchmark. [", "Benchmark Shutdown", "benchmarker and",
                "benchmarking async"),
        match=PHASE, pattern=PHASE, types={"warmups": pl.Int64, "warmed": pl.Int64}, pack="fields", message=True,
        const={"severity": "info"},
        samples=("Starting initial single prompt test run...",
                 "Initial test run completed. Starting main benchmark run...",
                 "Skipping initial test run. Starting main benchmark run...",
                 "Warmup completed with 1 sequences. Starting main benchmark run...",
                 "tip: install termplotlib and gnuplot to plot the metrics",
                 "Stopping profiler...",
                 "[11/21/2024-10:26:10] [TRT-LLM] [I] Preparing to run throughput benchmark...",
                 "[11/21/2024-10:26:10] [TRT-LLM] [I] Initializing Throughput Benchmark. [rate=-1 req/s]",
                 "[11/21/2024-10:26:11] [TRT-LLM] [I] Benchmark Shutdown called!"),
    ),
    # A text plot before the result block: `vllm bench serve` and sglang.bench_serving draw
    # output tokens and requests per second with termplotlib (gnuplot's dumb terminal) when it
    # is installed (bench/106): rows between `|`, borders of `+---+`, the x-axis numbers last.
    LineKind(
        name="bench_chart", table="events", needle=("|", "+-"), match=CHART_BORDER, continuation=CHART_MORE,
        orphan=CHART_ROW, message=True, const={"severity": "info"},
        samples=("    0 +---------------------------------------------------------------------+",
                 "  14000 +---------------------------------------------------------------+"),
    ),
    LineKind(
        name="bench_progress", table="config", needle="%|", match=PROGRESS, handler=_progress,
        samples=("100%|██████████████████████████████████████████████████| 100/100 [00:02<00:00, 34.85it/s]",),
    ),
    LineKind(
        # `perf`: GenAI-Perf's and AIPerf's command lines hold no `bench` (fixtures/real/bench/91).
        name="bench_cmdline", table="config", needle=("bench", "perf", "guidellm"), match=CMDLINE, handler=_cmdline,
        # AIPerf's console wraps its `CLI Command: aiperf profile ...` at the terminal's width: the
        # later lines start with a flag, or with the quoted value of the flag that ended the line above.
        continuation=r"^(?:'[^'\n]*' )?--[\w-]+(?:[ =]|$)",
        samples=("python3 -m sglang.bench_serving --backend sglang --num-prompts 3000 --max-concurrency 64",
                 Sample("genai-perf -m my_model -- -b 1 -u server:8001 -i grpc --concurrency-range 64",
                        **{"bench.concurrency_range": "64", "bench.tool": "genai-perf"}),
                 Sample("CLI Command: aiperf profile --model 'tiny-llama' --endpoint-type \n"
                        "'chat' --streaming --concurrency 8 --request-count 150 \n"
                        "--output-artifact-dir 'artifacts' --no-auto-plot",
                        **{"bench.model": "tiny-llama", "bench.endpoint_type": "chat", "bench.streaming": "True",
                           "bench.concurrency": "8", "bench.request_count": "150",
                           "bench.output_artifact_dir": "artifacts", "bench.no_auto_plot": "True",
                           "bench.tool": "aiperf"})),
    ),
    LineKind(
        name="bench_namespace", table="config", needle="Namespace(", match=r"^Namespace\(", handler=_namespace,
        samples=("Namespace(backend='sglang', num_prompts=1000, max_concurrency=16, request_rate=inf)",),
    ),
    LineKind(
        name="bench_preamble", table="config",
        needle=("Traffic request rate: ", "Burstiness factor: ", "Maximum request concurrency: ", "#Input tokens: ",
                "#Output tokens: "),
        match=rf"^(?:Traffic request rate|Burstiness factor|Maximum request concurrency): \S|{DATASET_TOTALS}",
        handler=_preamble,
        samples=("Maximum request concurrency: 64", "#Input tokens: 296523"),
    ),
)

FORMAT = LogFormat(
    name="bench",
    description="Benchmark client console output: sglang bench_serving / bench_one_batch, vLLM bench serve / "
                "latency / throughput, GenAI-Perf / AIPerf / GuideLLM result tables, other clients' text tables",
    releases="sglang 0.1.22 - 0.5.x, vLLM 0.3 - 0.33",
    prefix=r"^(?P<msg>.*)$",
    kinds=KINDS,
    # A client's console is a file of this format's own: its tracebacks are the client's
    # (bench-failures: it died before its result, bench/209), not a server's crash.
    own_kinds=(common.TRACEBACK, common.TRACEBACK_CHAIN),
    embeddable=True,
    detect=(HEADER, SUMMARY, TRTLLM_SECTION, result_tables.GUIDELLM_CSV, r"^(?:Successful requests|Load time):\s*\S",
            r"^elapsed_time: [\d.]+s$", CMDLINE, r"^Prefill\. latency: .* token/s$", r"^Avg latency: [\d.]+ seconds$",
            r"^Throughput: [\d.]+ requests/s, ", SGLANG_TASK[0], TRTLLM_SESSION[0], SGLANG_MULTITURN[0], r"^\s*┃\s*(?:Statistic|Metric)\s*┃", r"┃\s*Benchmark\s*┃", r"^\s*┃\s*Code\s*┃\s*Type\s*┃",
            r"^(?:Metric|Statistic),avg,",
            r"^\s*(?:ℹ\s*)?(?:Run Summary Info|Request Latency Statistics|Server Throughput Statistics)",
            result_tables.TEXT_HEAD, result_tables.MD_METRIC, r"^\s*Benchmark\s*\|\s*(?:Start Time|Per Second)\s*\|",
            result_tables.RUN_HEAD, result_tables.SPACED_HEAD, result_tables.HEADLESS_ROW, result_tables.STAT_HEAD_ROW,
            result_tables.KEY_VALUE_HEAD, result_tables.MD_TABLE_HEAD,
            r"^Successful/total requests: \d+/\d+\s*$", SECTION, ALL_FAILED, PHASE, DATASET_TOTALS, rf"\[TRT-LLM\] \[I\] (?:{TRTLLM_PHASE})"),
    versions=(
        (r"^Max reqeuest concurrency:", "sglang 0.4.0-0.4.6"),
        (r"^Total input vision tokens:", "sglang 0.5.4+"),
        (r"^Max request concurrency:", "sglang 0.4.7+"),
        (r"^Peak concurrent requests:\s+\d+\.\d\d", "vllm 0.11+"),
        (r"^Total Token throughput \(tok/s\):", "vllm 0.6-0.12"),
    ),
)
