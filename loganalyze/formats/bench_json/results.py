"""One benchmark result object into one `bench` row, by the client that wrote it: keys mapped
by name across releases, latencies by statistic and metric, AIPerf's summaries, a labelled
client's own names, per-request arrays into `bench_requests` rows."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime

import polars as pl

from loganalyze.formats import summary_labels
from loganalyze.formats.bench_tables import BENCH, BENCH_REQUESTS, TO_MS


KEYS = {
    "backend": "backend", "endpoint_type": "backend", "dataset_name": "dataset", "model_id": "model",
    "label": "label", "tag": "label", "run_name": "label",
    "request_rate": "request_rate", "max_concurrency": "max_concurrency", "num_prompts": "num_prompts",
    "batch_size": "batch_size", "input_len": "input_len", "output_len": "output_len",
    "random_input_len": "input_len", "random_output_len": "output_len",
    "duration": "duration_s", "benchmark_duration": "duration_s", "elapsed_time": "duration_s",
    "completed": "completed", "num_requests": "completed", "failed": "failed",
    "total_input_tokens": "input_tokens", "total_input": "input_tokens",
    "total_output_tokens": "output_tokens", "total_output": "output_tokens",
    "total_output_tokens_retokenized": "output_tokens_retokenized",
    "total_output_retokenized": "output_tokens_retokenized",
    "request_throughput": "request_throughput", "requests_per_second": "request_throughput",
    "request_goodput": "goodput", "input_throughput": "input_throughput", "prefill_throughput": "input_throughput",
    "output_throughput": "output_throughput", "output_token_throughput": "output_throughput",
    "median_decode_throughput": "output_throughput",
    "total_throughput": "total_throughput", "total_token_throughput": "total_throughput",
    "tokens_per_second": "total_throughput", "overall_throughput": "total_throughput",
    "max_output_tokens_per_s": "peak_output_throughput", "max_concurrent_requests": "peak_concurrency",
    "concurrency": "concurrency", "accept_length": "accept_length",
    "spec_decode_acceptance_length": "accept_length", "spec_decode_num_drafts": "drafts",
    "spec_decode_draft_tokens": "draft_tokens", "spec_decode_accepted_tokens": "accepted_tokens",
    "spec_decode_per_position_acceptance_rates": "per_position",
}

# Keys in seconds where the bench table keeps milliseconds.
SECONDS = {"prefill_latency": "ttft_mean", "median_decode_latency": "tpot_median", "total_latency": "e2e_mean",
           "latency": "e2e_mean", "avg_latency": "e2e_mean"}

LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)(?:_ms)?$")

METRIC = {"e2el": "e2e", "e2e_latency": "e2e"}

# The keys that tell which client wrote an object; the first tool whose mark is present wins.
TOOLS = (
    # inference-benchmark (GoogleCloudPlatform's ai-on-gke benchmark_serving.py), its `metrics`
    # object: first, as its `avg_latency` (ms) is also vLLM bench latency's (s).
    ("inference-benchmark", ("num_prompts_attempted", "num_prompts_succeeded")),
    # GuideLLM's report, or one benchmark's `metrics` pasted on their own.
    ("guidellm", ("benchmarks", "time_to_first_token_ms", "request_totals")),
    ("aiperf", ("input_config", "error_summary")),
    # GenAI-Perf's export has AIPerf's shape (`{"time_to_first_token": {"unit": "ms", "avg": ...}}`):
    # either, pasted without AIPerf's config block, reads the same way.
    ("genai-perf", ("time_to_first_token", "request_latency")),
    ("sglang.bench_one_batch", ("prefill_latency", "last_gen_throughput")),
    ("vllm.bench_latency", ("avg_latency",)),
    ("vllm.bench_throughput", ("requests_per_second",)),
    ("sglang.bench_serving", ("total_output_tokens_retokenized", "total_output_retokenized", "server_info",
                              "sharegpt_output_len", "accept_length")),
    ("vllm.bench_serve", ("completed",)),
    # inference-perf's lifecycle report (`summary_lifecycle_metrics.json`, one per stage).
    ("inference-perf", ("load_summary", "successes")),
    # LLMPerf's summary (token_benchmark_ray.py's `*_summary.json`): `results_<metric>_<stat>`.
    ("llmperf", ("results_num_requests_started", "results_ttft_s_mean")),
    # Clients whose keys are printed labels, read by their words (loganalyze/formats/summary_labels.py).
    ("evalscope", ("Succeed requests", "Time taken for tests (s)")),
    ("awscurl", ("totalTimeMills", "timeToFirstByte", "failedRequests")),
)

LABELLED = ("evalscope", "awscurl")

# A measured rate under any of its names (`output_token_throughput` in sglang 0.2's JSON lines).
MEASURES = tuple(f'"{k}"' for k, column in KEYS.items() if column.endswith("_throughput"))

MARKS = tuple(dict.fromkeys(tuple(f'"{k}"' for _, keys in TOOLS for k in keys) + MEASURES + (
    '"guidellm_version"', '"median_ttft_ms"', '"duration"', '"time_to_first_token"',
    '"total_sum"', '"Failed requests"', '"Average QPS"', '"errorRate"', '"tokenThroughput"')))

ARRAYS = {"input_lens": "input_len", "output_lens": "output_len", "errors": "error"}


# inference-benchmark's keys: latencies in ms (`avg_latency`, whole requests, queueing included),
# TTFT in s where it streamed (`avg_TTFT`), throughput in output tokens/s; its
# `avg_per_output_token_latency` is latency / output tokens, no TPOT, so it stays in `extra`.
INFERENCE_BENCHMARK = {"num_prompts_attempted": "num_prompts", "num_prompts_succeeded": "completed",
                       "request_rate": "request_rate", "benchmark_time": "duration_s",
                       "throughput_rps": "request_throughput", "throughput": "output_throughput",
                       "total_output_token": "output_tokens", "total_input_tokens": "input_tokens"}
INFERENCE_BENCHMARK_STATS = {"avg": "mean", "median": "median", "p90": "p90", "p99": "p99", "max": "max"}


def unwrapped(obj: object) -> object:
    """inference-benchmark's JSON (`{"metrics": {...}, "dimensions": {"backend": ...}}`) as one
    object of its numbers and names; any other object as it is."""
    metrics = obj.get("metrics") if isinstance(obj, dict) else None
    if not (isinstance(metrics, dict) and "num_prompts_attempted" in metrics):
        return obj
    names = obj.get("dimensions") if isinstance(obj.get("dimensions"), dict) else {}
    return {**{k: v for k, v in names.items() if isinstance(v, str)}, **metrics}


def inference_benchmark_row(obj: dict) -> dict:
    row: dict = {"tool": "inference-benchmark", "extra": []}
    for key, value in obj.items():
        stat, _, name = key.partition("_")
        if key in INFERENCE_BENCHMARK:
            row[INFERENCE_BENCHMARK[key]] = typed_value(value, BENCH[INFERENCE_BENCHMARK[key]])
        elif name in ("latency", "TTFT") and stat in INFERENCE_BENCHMARK_STATS and as_number(value) is not None:
            metric, scale = ("e2e", 1) if name == "latency" else ("ttft", 1000)
            row[f"{metric}_{INFERENCE_BENCHMARK_STATS[stat]}"] = value * scale
        elif key in ("backend", "model_id"):
            row[KEYS[key]] = value
        elif as_number(value) is not None:
            row["extra"].append({"key": key, "value": str(value)})
    if row.get("num_prompts") is not None and row.get("completed") is not None:
        row["failed"] = row["num_prompts"] - row["completed"]
    return row


# LLMPerf's names: its configured load, its counts, and `results_<metric>_s_<stat>` in seconds
# (`quantiles_p50`, `mean`, `max`, `stddev`); its throughputs per request are no run's.
LLMPERF = {"num_concurrent_requests": "max_concurrency", "mean_input_tokens": "input_len",
           "mean_output_tokens": "output_len", "results_num_requests_started": "num_prompts",
           "results_num_completed_requests": "completed", "results_number_errors": "failed",
           "results_mean_output_throughput_token_per_s": "output_throughput", "model": "model"}
LLMPERF_METRICS = {"ttft": "ttft", "inter_token_latency": "itl", "end_to_end_latency": "e2e"}
LLMPERF_LATENCY = re.compile(r"^results_(ttft|inter_token_latency|end_to_end_latency)_s_(?:quantiles_)?"
                             r"(mean|p50|p90|p95|p99|max|stddev)$")


def llmperf_row(obj: dict) -> dict:
    """LLMPerf's summary: its requests started, completed and failed (`results_number_errors`,
    their HTTP codes in `results_error_code_frequency`, kept in `extra`), latencies in seconds."""
    row: dict = {"tool": "llmperf", "extra": []}
    for key, value in obj.items():
        latency = LLMPERF_LATENCY.match(key)
        if key in LLMPERF:
            row[LLMPERF[key]] = typed_value(value, BENCH[LLMPERF[key]])
        elif latency and as_number(value) is not None:
            stat = {"p50": "median", "stddev": "std"}.get(latency.group(2), latency.group(2))
            row[f"{LLMPERF_METRICS[latency.group(1)]}_{stat}"] = value * 1000
        elif key == "results_num_completed_requests_per_min" and as_number(value) is not None:
            row["request_throughput"] = value / 60
        elif key == "results_error_code_frequency":  # `{429.0: 130}`, as the summary errors read them
            row["extra"] += [{"key": f"error {code}", "value": "answered with this status"}
                             for code, _ in re.findall(r"(\d+)(?:\.0)?\s*:\s*(\d+)", str(value))]
        elif key in ("results_error_rate", "name", "version"):
            row["extra"].append({"key": key, "value": str(value)})
    return row


# inference-perf's report: `successes.latency.<metric>.<stat>` in seconds, its rates in
# `successes.throughput`, the load it sent in `load_summary`.
INFERENCE_PERF_METRICS = {"request_latency": "e2e", "time_to_first_token": "ttft", "time_per_output_token": "tpot",
                          "inter_token_latency": "itl"}
INFERENCE_PERF_RATES = {"output_tokens_per_sec": "output_throughput", "input_tokens_per_sec": "input_throughput",
                        "total_tokens_per_sec": "total_throughput", "requests_per_sec": "request_throughput"}


def inference_perf_row(obj: dict) -> dict:
    """inference-perf's report of one stage: the requests it sent at the rate asked, those that
    succeeded and failed, latencies by statistic."""
    load, ok, bad = (obj.get(k) if isinstance(obj.get(k), dict) else {} for k in ("load_summary", "successes", "failures"))
    row: dict = {"tool": "inference-perf", "extra": [], "num_prompts": as_number(load.get("count")),
                 "request_rate": as_number(load.get("requested_rate")), "completed": as_number(ok.get("count")),
                 "failed": as_number(bad.get("count"))}
    if as_number(load.get("achieved_rate")) is not None:
        row["extra"].append({"key": "achieved_rate", "value": str(load["achieved_rate"])})
    latency = ok.get("latency") if isinstance(ok.get("latency"), dict) else {}
    for name, metric in INFERENCE_PERF_METRICS.items():
        stats = latency.get(name) if isinstance(latency.get(name), dict) else {}
        for stat, value in stats.items():
            column = f"{metric}_{stat}"
            if column in BENCH and as_number(value) is not None:
                row[column] = value * 1000
    rates = ok.get("throughput") if isinstance(ok.get("throughput"), dict) else {}
    row.update({column: rates[k] for k, column in INFERENCE_PERF_RATES.items() if as_number(rates.get(k)) is not None})
    return {k: v for k, v in row.items() if v is not None}


def tool_of(obj: dict) -> str | None:
    for tool, keys in TOOLS:
        if any(k in obj for k in keys):
            return tool
    return None


def _latency_column(key: str) -> str | None:
    m = LATENCY_KEY.match(key)
    if not m:
        return None
    stat = "median" if m.group(1) == "p50" else m.group(1)
    column = f"{METRIC.get(m.group(2), m.group(2))}_{stat}"
    return column if column in BENCH else None


def _server_info(info: dict) -> dict:
    """Model, version and effective cap from sglang's `server_info` (0.5.5+)."""
    states = info.get("internal_states") or [{}]
    cap = (states[0] or {}).get("max_num_reqs") or info.get("max_running_requests")
    return {"model": info.get("model_path"), "server_version": info.get("version"), "server_cap": cap}


# AIPerf's profile_export_aiperf.json: each metric is {"unit": ..., "avg": ..., "p50": ...}.
AIPERF_DISTRIBUTIONS = {"time_to_first_token": "ttft", "inter_token_latency": "tpot", "request_latency": "e2e"}

AIPERF_STATS = {"avg": "mean", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99", "std": "std", "max": "max"}

AIPERF_TOTALS = {"request_throughput": "request_throughput", "output_token_throughput": "output_throughput",
                 "total_token_throughput": "total_throughput", "benchmark_duration": "duration_s",
                 "request_count": "completed", "error_request_count": "failed", "total_isl": "input_tokens",
                 "total_osl": "output_tokens"}


def aiperf_row(obj: dict) -> dict:
    """AIPerf's aggregate export: distributions in their unit (ms by default), totals as `avg`."""
    row: dict = {"tool": "aiperf"}
    for key, metric in AIPERF_DISTRIBUTIONS.items():
        stats = obj.get(key) or {}
        scale = TO_MS.get(stats.get("unit", "ms"), 1.0)
        row.update({f"{metric}_{c}": stats[k] * scale for k, c in AIPERF_STATS.items() if stats.get(k) is not None})
    for key, column in AIPERF_TOTALS.items():
        value = obj.get(key)
        row[column] = value.get("avg") if isinstance(value, dict) else value
    config = obj.get("input_config") or {}
    loadgen, endpoint = config.get("loadgen") or {}, config.get("endpoint") or {}
    # 0.13 names the load per phase (`phases: [{kind: profiling, concurrency: 8}]`) and the
    # models under `models.items`; earlier releases under `loadgen` and `endpoint.model_names`.
    phase = next((p for p in config.get("phases") or [] if isinstance(p, dict) and p.get("kind") == "profiling"), {})
    models = [m.get("name") for m in (config.get("models") or {}).get("items") or [] if isinstance(m, dict)]
    row.update(max_concurrency=loadgen.get("concurrency", phase.get("concurrency")),
               request_rate=loadgen.get("request_rate", phase.get("request_rate")),
               model=(endpoint.get("model_names") or models or [None])[0])
    achieved = obj.get("effective_concurrency")
    if isinstance(achieved, dict) and achieved.get("avg") is not None:
        row["concurrency"] = achieved["avg"]  # requests in flight on average
    if isinstance(obj.get("end_time"), str):
        row["ts"] = datetime.fromisoformat(obj["end_time"])
    return row


def labelled_row(obj: dict, tool: str) -> dict:
    """A result whose keys are printed labels (evalscope's `Average time to first token (s)`,
    awscurl's camelCase `failedRequests`), read by their words as other clients' summary rows
    are: a latency only where its key names its unit. Scalars not read go to `extra`."""
    pairs = [(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", k).lower(), k, str(v)) for k, v in obj.items()
             if as_number(v) is not None]
    frame = pl.DataFrame(pairs, schema={"label": pl.String, "key": pl.String, "value": pl.String}, orient="row")
    column, value = summary_labels.columns(pl.col("label"), pl.col("value"))
    failed = summary_labels.failed_of(pl.col("label"), pl.col("value"))
    read = frame.with_columns(column=column, number=value, failed=failed)
    row: dict = {"tool": tool, "extra": []}
    for key, printed, name, number, fails in read.select("key", "value", "column", "number", "failed").iter_rows():
        if name in BENCH and number is not None:  # None: a value that means none (evalscope's -1)
            row.setdefault(name, typed_value(float(number), BENCH[name]))
        else:
            row["extra"].append({"key": key, "value": printed})
        if fails is not None:
            row.setdefault("failed", int(fails))
    return row


def result_row(obj: dict, tool: str) -> dict:
    """The bench columns of one result object; unknown scalar keys go to `extra`."""
    if tool in ("aiperf", "genai-perf"):
        return {**aiperf_row(obj), "tool": tool}
    if tool in LABELLED:
        return labelled_row(obj, tool)
    if tool == "inference-benchmark":
        return inference_benchmark_row(obj)
    if tool == "llmperf":
        return llmperf_row(obj)
    if tool == "inference-perf":
        return inference_perf_row(obj)
    row: dict = {"tool": tool, "extra": []}
    for key, value in obj.items():
        column = KEYS.get(key) or _latency_column(key)
        if key in SECONDS and as_number(value) is not None:
            row[SECONDS[key]] = value * 1000
        elif key == "percentiles" and isinstance(value, dict):
            row.update({f"e2e_{'median' if p == '50' else 'p' + p}": v * 1000 for p, v in value.items()
                        if f"e2e_{'median' if p == '50' else 'p' + p}" in BENCH and as_number(v) is not None})
        elif key == "server_info" and isinstance(value, dict):
            row.update({k: v for k, v in _server_info(value).items() if v is not None and k not in row})
        elif key == "spec_decode_acceptance_rate" and as_number(value) is not None:
            row["accept_rate"] = round(value / 100, 10)  # as loganalyze.formats.common.fraction
        elif key == "date" and isinstance(value, str):
            row["ts"] = _date(value)
        elif column:
            row.setdefault(column, typed_value(value, BENCH.get(column)))
        elif not isinstance(value, (list, dict)) and key not in ARRAYS:
            row["extra"].append({"key": key, "value": None if value is None else str(value)})
    if tool == "sglang.bench_one_batch" and "batch_size" in row:
        row.setdefault("max_concurrency", row["batch_size"])
    return row


def as_number(value: object) -> int | float | None:
    """A JSON number that fits a column (not a bool, not inf or NaN), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if abs(value) < 2**63 and math.isfinite(value) else None  # abs first: a huge int has no float


def typed_value(value: object, dtype: pl.DataType | None) -> object:
    """A value as its column can hold it: `"max_concurrency": "many"` is null, not a failed ingest."""
    if dtype is None or value is None:
        return value
    if isinstance(dtype, pl.List):
        return [typed_value(v, dtype.inner) for v in value] if isinstance(value, list) else None
    if dtype.is_nested():
        return value if isinstance(value, (list, dict)) else None
    if dtype.is_numeric():
        number = as_number(value)
        return number if number is None or dtype.is_float() or float(number).is_integer() else None
    if dtype == pl.String:
        return value if isinstance(value, str) else json.dumps(value)
    if dtype == pl.Boolean:
        return value if isinstance(value, bool) else None
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None


def _date(text: str) -> datetime | None:
    """vLLM's `date` (%Y%m%d-%H%M%S, local time, written when the run ended)."""
    try:
        return datetime.strptime(text, "%Y%m%d-%H%M%S")
    except ValueError:
        return None


def request_rows(obj: dict, tool: str, line_no: int) -> pl.DataFrame | None:
    """One row per request from the per-request arrays (`--output-details`, `--save-detailed`)."""
    n = max((len(obj[k]) for k in ("ttfts", "output_lens", "input_lens") if isinstance(obj.get(k), list)), default=0)
    if n == 0:
        return None
    cols: dict[str, pl.Series] = {}
    for key, column in ARRAYS.items():
        if isinstance(obj.get(key), list) and len(obj[key]) == n:
            cols[column] = pl.Series(obj[key], dtype=BENCH_REQUESTS[column], strict=False)
    for key, column in (("ttfts", "ttft_ms"), ("latencies", "latency_ms"), ("start_times", "start_s")):
        if isinstance(obj.get(key), list) and len(obj[key]) == n:
            scale = 1 if key == "start_times" else 1000
            cols[column] = pl.Series(obj[key], dtype=pl.Float64, strict=False) * scale
    if isinstance(obj.get("itls"), list) and len(obj["itls"]) == n:
        cols["itl_ms"] = pl.Series(obj["itls"], dtype=pl.List(pl.Float64), strict=False).list.eval(pl.element() * 1000)
    return pl.DataFrame(cols).with_columns(
        request=pl.int_range(pl.len(), dtype=pl.Int64), line_no=pl.lit(line_no, pl.Int64), tool=pl.lit(tool)
    )


def scalars(obj: dict) -> str:
    """The object's scalar fields as JSON: the `raw` that findings quote. Per-request arrays
    and sglang's `server_info` are left out; they can be megabytes."""
    return json.dumps({k: v for k, v in obj.items() if not isinstance(v, (list, dict))})
