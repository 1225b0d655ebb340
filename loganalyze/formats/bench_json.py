"""Benchmark results files: sglang `--output-file` JSONL, vLLM `--save-result` JSON, the
JSON of sglang bench_one_batch, `vllm bench latency` and `vllm bench throughput`
(docs/formats-sources.md#benchmark-clients), and AIPerf's aggregate
`profile_export_aiperf.json` (AIPerf's inter-token latency is (latency - TTFT) / (tokens - 1),
the TPOT of the other clients) and per-request `profile_export.jsonl`, GuideLLM's
`benchmarks.json` (0.3+: one result per benchmark) and the data its HTML report embeds,
and results files pasted in part (docs/benchmark-tables.md).

One JSON object is one result, one `bench` row whose line_no is the object's first line;
per-request arrays, where the client saved them, become `bench_requests` rows. Keys are
mapped by name, so the 0.2-era sglang names (`total_input`, `median_ttft`) and later ones
land in the same columns. A file is JSON lines when its first line is a whole object
(sglang appends one per run, vLLM with --append-result); otherwise the whole file is one
JSON document (an object, or a list of objects), or one pasted into a ticket: after a fence
or a few lines of prose, and maybe cut short (`pasted`).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from datetime import datetime

import polars as pl

from loganalyze.formats import summary_labels
from loganalyze.formats.bench_tables import BENCH, BENCH_REQUESTS, TO_MS
from loganalyze.formats.result_tables import load_level
from loganalyze.formats.parse import Parsed
from loganalyze.formats.spec import Context, FileFormat

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


# GuideLLM's distributions (successful requests) -> bench metric, and the unit they are in.
GUIDELLM_DISTRIBUTIONS = {"time_to_first_token_ms": ("ttft", 1.0), "time_per_output_token_ms": ("tpot", 1.0),
                          "inter_token_latency_ms": ("itl", 1.0), "request_latency": ("e2e", 1000.0)}
GUIDELLM_STATS = {"mean": "mean", "median": "median", "std_dev": "std", "max": "max"}
# Rates over all requests, as GuideLLM's own Server Throughput table prints them.
GUIDELLM_RATES = {"requests_per_second": "request_throughput", "request_concurrency": "concurrency",
                  "prompt_tokens_per_second": "input_throughput", "output_tokens_per_second": "output_throughput",
                  "tokens_per_second": "total_throughput"}


def guidellm_rows(obj: dict) -> list[dict]:
    """One result per benchmark (load level) of a GuideLLM report (0.3+ `benchmarks.json`);
    one for a benchmark's metrics pasted without the report around them."""
    if "benchmarks" not in obj:
        return [_guidellm_row({"metrics": obj})]
    return [_guidellm_row(b) for b in obj.get("benchmarks") or [] if isinstance(b, dict)]


def _guidellm_row(bench: dict) -> dict:
    metrics = bench.get("metrics") or {}
    strategy = (bench.get("config") or {}).get("strategy") or {}
    row: dict = {"tool": "guidellm", "duration_s": _number(bench.get("duration"))}
    kind = strategy.get("type_")
    level = _number(strategy.get("streams") or strategy.get("max_concurrency") or strategy.get("rate"))
    if kind:
        row.update(load_level(f"{kind}@{level:g}" if kind in ("concurrent", "constant", "poisson") and level else kind))
    totals = metrics.get("request_totals") or {}
    row.update(completed=totals.get("successful"), failed=totals.get("errored"))
    for key, (metric, scale) in GUIDELLM_DISTRIBUTIONS.items():
        stats = (metrics.get(key) or {}).get("successful") or {}
        values = {**{c: stats.get(k) for k, c in GUIDELLM_STATS.items()},
                  **{p: (stats.get("percentiles") or {}).get(p) for p in ("p90", "p95", "p99")}}
        row.update({f"{metric}_{c}": v * scale for c, v in values.items() if _number(v) is not None})
    for key, column in GUIDELLM_RATES.items():
        row[column] = _number(((metrics.get(key) or {}).get("total") or {}).get("mean"))
    for key, column in (("prompt_token_count", "input_tokens"), ("output_token_count", "output_tokens")):
        total = _number(((metrics.get(key) or {}).get("successful") or {}).get("total_sum"))
        row[column] = int(total) if total is not None else None
    return row


def labelled_row(obj: dict, tool: str) -> dict:
    """A result whose keys are printed labels (evalscope's `Average time to first token (s)`,
    awscurl's camelCase `failedRequests`), read by their words as other clients' summary rows
    are: a latency only where its key names its unit. Scalars not read go to `extra`."""
    pairs = [(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", k).lower(), k, str(v)) for k, v in obj.items()
             if _number(v) is not None]
    frame = pl.DataFrame(pairs, schema={"label": pl.String, "key": pl.String, "value": pl.String}, orient="row")
    column, value = summary_labels.columns(pl.col("label"), pl.col("value"))
    failed = summary_labels.failed_of(pl.col("label"), pl.col("value"))
    read = frame.with_columns(column=column, number=value, failed=failed)
    row: dict = {"tool": tool, "extra": []}
    for key, printed, name, number, fails in read.select("key", "value", "column", "number", "failed").iter_rows():
        if name in BENCH:
            row.setdefault(name, _typed(float(number), BENCH[name]))
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
    row: dict = {"tool": tool, "extra": []}
    for key, value in obj.items():
        column = KEYS.get(key) or _latency_column(key)
        if key in SECONDS and _number(value) is not None:
            row[SECONDS[key]] = value * 1000
        elif key == "percentiles" and isinstance(value, dict):
            row.update({f"e2e_{'median' if p == '50' else 'p' + p}": v * 1000 for p, v in value.items()
                        if f"e2e_{'median' if p == '50' else 'p' + p}" in BENCH and _number(v) is not None})
        elif key == "server_info" and isinstance(value, dict):
            row.update({k: v for k, v in _server_info(value).items() if v is not None and k not in row})
        elif key == "spec_decode_acceptance_rate" and _number(value) is not None:
            row["accept_rate"] = round(value / 100, 10)  # as loganalyze.formats.common.fraction
        elif key == "date" and isinstance(value, str):
            row["ts"] = _date(value)
        elif column:
            row.setdefault(column, _typed(value, BENCH.get(column)))
        elif not isinstance(value, (list, dict)) and key not in ARRAYS:
            row["extra"].append({"key": key, "value": None if value is None else str(value)})
    if tool == "sglang.bench_one_batch" and "batch_size" in row:
        row.setdefault("max_concurrency", row["batch_size"])
    return row


def line_results(texts: list[str]) -> list[dict | None]:
    """The bench columns of each line that is one whole result object (a JSONL result echoed
    into a console log or captured with a server's output), None for any other line."""
    out: list[dict | None] = []
    for text in texts:
        try:
            obj = _loads(text.strip())
        except ValueError:
            obj = None
        tool = tool_of(obj) if isinstance(obj, dict) else None
        out.append(None if tool is None else {**result_row(obj, tool), "raw": scalars(obj)})
    return out


def _number(value: object) -> int | float | None:
    """A JSON number that fits a column (not a bool, not inf or NaN), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if abs(value) < 2**63 and math.isfinite(value) else None  # abs first: a huge int has no float


def _typed(value: object, dtype: pl.DataType | None) -> object:
    """A value as its column can hold it: `"max_concurrency": "many"` is null, not a failed ingest."""
    if dtype is None or value is None:
        return value
    if isinstance(dtype, pl.List):
        return [_typed(v, dtype.inner) for v in value] if isinstance(value, list) else None
    if dtype.is_nested():
        return value if isinstance(value, (list, dict)) else None
    if dtype.is_numeric():
        number = _number(value)
        return number if number is None or dtype.is_float() or float(number).is_integer() else None
    if dtype == pl.String:
        return value if isinstance(value, str) else json.dumps(value)
    if dtype == pl.Boolean:
        return value if isinstance(value, bool) else None
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None


def _no_surrogates(obj: object) -> object:
    """JSON data with lone surrogates (`"\\ud800"`, valid JSON, not valid UTF-8) as U+FFFD."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(obj, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_surrogates(v) for v in obj]
    return obj


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _loads(text: str) -> object:
    obj = json.loads(text)
    return _no_surrogates(obj) if _SURROGATE.search(text) else obj


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


def pasted(lines: list[str]) -> list[tuple[int, int, object]]:
    """The JSON documents pasted into a ticket: (first, last) index of each one's lines and
    its value, in order.

    A document opens on a line of its own (`{`, `[`), at the end of a line of prose or log
    (`... - evalscope - INFO - {`), or, after a line that is no JSON, with a member of an
    object whose opening brace was left out (`"errorRate": 0.0,`: a fragment copied from a
    results file). It ends where its brackets close, and may be cut short (the post, or the
    stored copy, ended inside it; a fence closes it too): then it is cut back line by line
    until what is left parses once its open brackets are closed. The file's text is joined
    once and each document decoded where it stands, so a long file costs one pass."""
    paste = Paste(lines)
    out, i = [], 0
    while i < len(lines):
        opening = _opening(lines[i], i == 0 or not JSONISH.match(lines[i - 1]))
        if opening is None:
            i += 1
            continue
        last, value = paste.document(i, opening)
        if value is not None:
            out.append((i, last, value))
        i = last + 1 if value is not None else max(last, i + 1)
    return out


MEMBER = re.compile(r'^"[^"]+"\s*:\s*\S')
JSONISH = re.compile(r'^\s*(?:"|[{}\[\],]|-?\d|true\b|false\b|null\b)')  # a line inside a JSON document


def _opening(line: str, after_prose: bool) -> str | None:
    """How a JSON document opens on this line (`{`, `[`, or `{` before a member that
    follows a line of prose), None where none does."""
    text = line.strip()
    if text in ("{", "["):
        return text
    if MEMBER.match(text):
        return "{" if after_prose else None
    if text.endswith("{") and not text.startswith("}"):
        return "{"
    return None


class Paste:
    """A pasted text joined once, with where each line and each fence starts."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.text = "\n".join(lines)
        self.starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
        self.fences = [i for i, line in enumerate(lines) if line.strip().startswith("```")]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def document(self, start: int, opening: str) -> tuple[int, object | None]:
        """(index of its last line, value) of the document opening on line `start`; where no
        prefix of it parses, (index of the line it breaks on, None): no document of its
        own starts on its lines before that one, so the search goes on from there."""
        after = bisect.bisect_right(self.fences, start)
        end = self.fences[after] if after < len(self.fences) else len(self.lines)
        line = self.lines[start]
        if MEMBER.match(line.strip()):  # a fragment: decoded with the brace it left out
            text, at, shift = "{" + self.text[self.starts[start]:self.starts[end]], 0, self.starts[start] - 1
        else:
            text, at, shift = self.text, self.starts[start] + len(line.rstrip()) - 1, 0
        try:
            value, stop = json.JSONDecoder().raw_decode(text, at)
            if self.line_of(stop - 1 + shift) < end:
                return self.line_of(stop - 1 + shift), _no_surrogates(value)
            broken = end - 1
        except json.JSONDecodeError as e:
            broken = min(self.line_of(e.pos + shift), end - 1)  # the line it was cut on, or interrupted by
        for last in range(broken, max(start, broken - CUT_SEARCH) - 1, -1):
            cut = text[at:self.starts[last + 1] - shift].rstrip().rstrip(",")
            try:
                return last, _loads(cut + _closers(cut))
            except ValueError:
                continue
        return broken, None


PROSE = 5  # lines of fence or prose the first pasted document may follow
CUT_SEARCH = 40  # lines back from a cut to find a prefix that closes


def _closers(text: str) -> str:
    """The brackets that close what `text` leaves open (strings respected)."""
    stack, quoted, escaped = [], False, False
    for ch in text:
        if quoted:
            escaped, quoted = (False, quoted) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            quoted = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    return "".join(reversed(stack))


def _objects(frame: pl.DataFrame) -> list[tuple[int, list[int], object]]:
    """(line_no, lines it spans, parsed object) for each JSON value of the file."""
    first = frame["text"][0]
    try:
        _loads(first)
        lines_mode = True
    except ValueError:
        lines_mode = False
    if not lines_mode:
        numbers = frame["line_no"].to_list()
        try:
            docs = [(numbers, _loads("\n".join(frame["text"].to_list())))]
        except ValueError:
            docs = [(numbers[first:last + 1], doc) for first, last, doc in pasted(frame["text"].to_list())]
        return [(int(span[0]), span if i == 0 else [], v) for span, doc in docs
                for i, v in enumerate(doc if isinstance(doc, list) else [doc])]
    out = []
    for line_no, text in frame.select("line_no", "text").iter_rows():
        try:
            out.append((line_no, [line_no], _loads(text)))
        except ValueError:
            continue
    return out


def scalars(obj: dict) -> str:
    """The object's scalar fields as JSON: the `raw` that findings quote. Per-request arrays
    and sglang's `server_info` are left out; they can be megabytes."""
    return json.dumps({k: v for k, v in obj.items() if not isinstance(v, (list, dict))})


# GuideLLM's HTML report embeds its data as one JavaScript assignment; each run (benchmark)
# is a flat record: rates over all requests and the p95 / p99 of each latency in ms.
HTML_REPORT = "window.GUIDELLM_REPORT = "
HTML_RUNS = {"request_rate": "request_throughput", "concurrency": "concurrency", "total_tps": "total_throughput",
             "input_tps": "input_throughput", "output_tps": "output_throughput", "successful": "completed",
             "errored": "failed", "configured_concurrency": "max_concurrency",
             "configured_request_rate": "request_rate",
             **{f"{key}_{p}_ms": f"{metric}_{p}" for key, metric in (("request_latency", "e2e"), ("ttft", "ttft"),
                                                                      ("itl", "itl"), ("tpot", "tpot"))
                for p in ("p95", "p99")}}


def html_report(texts: list[str]) -> tuple[int, dict] | None:
    """(index of its line, data) of the report a GuideLLM HTML file embeds, None if none."""
    at = next((i for i, t in enumerate(texts) if HTML_REPORT in t), None)
    if at is None:
        return None
    text = "\n".join(texts[at:])
    try:
        data, _ = json.JSONDecoder().raw_decode(text, text.index(HTML_REPORT) + len(HTML_REPORT))
    except ValueError:
        return None
    return (at, data) if isinstance(data, dict) else None


def html_rows(data: dict) -> list[dict]:
    """One result per run of GuideLLM's HTML report (0.8)."""
    model = (data.get("header") or {}).get("model")
    rows = []
    for run in data.get("runs") or []:
        if not isinstance(run, dict):
            continue
        row: dict = {"tool": "guidellm", "model": model}
        row.update({column: _typed(run.get(key), BENCH[column]) for key, column in HTML_RUNS.items()})
        level = load_level(str(run.get("label") or run.get("strategy") or ""))
        row.update({k: v for k, v in level.items() if row.get(k) is None})
        rows.append(row)
    return rows


# AIPerf's profile_export.jsonl: one request per line, `{"metadata": {...}, "metrics": {name:
# {"value": ..., "unit": ...}}}`, and `error` on a request that failed.
AIPERF_REQUEST = {"input_sequence_length": "input_len", "output_sequence_length": "output_len",
                  "time_to_first_token": "ttft_ms", "request_latency": "latency_ms", "inter_chunk_latency": "itl_ms"}


def aiperf_request(obj: object) -> dict | None:
    """The bench_requests columns of one line of AIPerf's per-request export, None for any
    other object: latencies in ms whatever unit the record names, start in epoch seconds."""
    if not (isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and isinstance(obj.get("metadata"), dict)
            and "request_start_ns" in obj["metadata"]):
        return None
    row: dict = {"tool": "aiperf", "start_s": (_number(obj["metadata"]["request_start_ns"]) or 0) / 1e9 or None}
    for key, column in AIPERF_REQUEST.items():
        metric = obj["metrics"].get(key)
        value = metric.get("value") if isinstance(metric, dict) else None
        scale = TO_MS.get(metric.get("unit"), 1.0) if column.endswith("_ms") and isinstance(metric, dict) else 1.0
        if isinstance(value, list):
            row[column] = [v * scale for v in value if _number(v) is not None]
        elif _number(value) is not None:
            row[column] = value * scale
    error = obj.get("error")
    if error:
        row["error"] = error if isinstance(error, str) else json.dumps(error)
    return row


def read(frame: pl.DataFrame, ctx: Context) -> Parsed:
    texts = frame["text"].to_list()
    report = html_report(texts) if any(HTML_REPORT in t for t in texts[:SNIFF_LINES]) else None
    if report is not None:  # the whole file is the report: its markup is how it shows the data
        rows = [{**row, "line_no": int(frame["line_no"][report[0]]), "kind": "result_file",
                 "raw": json.dumps({k: v for k, v in row.items() if v is not None})} for row in html_rows(report[1])]
        return _parsed(frame, rows, [], frame["line_no"].to_list())
    results, requests, claimed, records = [], [], [], []
    for line_no, lines, obj in _objects(frame):
        record = aiperf_request(obj)
        if record is not None:
            records.append({**record, "line_no": line_no})
            claimed += lines
            continue
        tool = tool_of(obj) if isinstance(obj, dict) else None
        if tool is None:
            continue
        rows = guidellm_rows(obj) if tool == "guidellm" else [result_row(obj, tool)]
        results += [{**row, "line_no": line_no, "kind": "result_file",
                     "raw": json.dumps({k: v for k, v in row.items() if v is not None}) if tool == "guidellm"
                     else scalars(obj)} for row in rows]
        per_request = request_rows(obj, tool, line_no)
        if per_request is not None:
            requests.append(per_request)
        claimed += lines
    if records:
        frame_of = pl.DataFrame(records, schema_overrides={**BENCH_REQUESTS, "line_no": pl.Int64}, strict=False,
                                infer_schema_length=None)
        requests.append(frame_of.with_columns(request=pl.int_range(pl.len(), dtype=pl.Int64)))
    return _parsed(frame, results, requests, claimed, table="bench_requests" if records and not results else "bench")


def _parsed(frame: pl.DataFrame, results: list[dict], requests: list[pl.DataFrame], claimed: list[int],
            table: str = "bench") -> Parsed:
    """The tables of a results file, its claimed lines counted in `table`."""
    tables = {}
    if results:
        schema = {c: t for c, t in BENCH.items() if c not in ("block",)}
        tables["bench"] = pl.DataFrame(results, schema_overrides=schema, strict=False, infer_schema_length=None)
    if requests:
        tables["bench_requests"] = pl.concat(requests, how="diagonal_relaxed")
    return Parsed(tables=tables, lines={table: len(claimed)} if claimed else {},
                  claimed=frame["line_no"].is_in(claimed), claimed_lines=pl.Series(claimed, dtype=pl.Int64))


SNIFF_LINES = 2000  # the lines of a file that detection sees (loganalyze/ingestion/detect.py SAMPLE_LINES)


def sniff(head: str) -> float:
    """A JSON object or list carrying at least two benchmark result keys, or GuideLLM's HTML
    report (its embedded data)."""
    if HTML_REPORT in head:
        return 1.0
    lines = head.split("\n")
    at = next((i for i, line in enumerate(lines[:PROSE + 1]) if _opening(line, True) is not None), 0)
    opening = _opening(lines[at], True) if lines else None
    if not re.match(r"\s*(?:\{|\[\s*\{)", "\n".join([opening or lines[0], *lines[at + 1:]])):
        return 0.0  # an object, or a list of them; not `[0] `
    found = sum(1 for m in MARKS if m in head)
    return 1.0 if found >= 2 else 0.0


FORMAT = FileFormat(
    name="bench-json",
    description="Benchmark results files: sglang bench_serving JSONL, vLLM bench serve --save-result JSON, "
                "bench_one_batch / vllm bench latency / throughput JSON, AIPerf profile_export_aiperf.json and "
                "profile_export.jsonl, GuideLLM benchmarks.json and its HTML report",
    sniff=sniff,
    read=read,
    releases="sglang 0.2 - 0.5.x, vLLM 0.5 - 0.33",
)
