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

import json
import re

import polars as pl

from loganalyze.formats.bench_json.exports import HTML_REPORT, aiperf_request, guidellm_rows, html_report, html_rows
from loganalyze.formats.bench_json.paste import PROSE, document_opening, loads, objects
from loganalyze.formats.bench_json.results import MARKS, request_rows, result_row, scalars, tool_of, unwrapped
from loganalyze.formats.bench_tables import BENCH, BENCH_REQUESTS
from loganalyze.formats.parse import Parsed
from loganalyze.formats.spec import Context, FileFormat


def line_results(texts: list[str]) -> list[dict | None]:
    """The bench columns of each line that is one whole result object (a JSONL result echoed
    into a console log or captured with a server's output), None for any other line."""
    out: list[dict | None] = []
    for text in texts:
        try:
            obj = loads(text.strip())
        except ValueError:
            obj = None
        obj = unwrapped(obj)
        tool = tool_of(obj) if isinstance(obj, dict) else None
        out.append(None if tool is None else {**result_row(obj, tool), "raw": scalars(obj)})
    return out


def read(frame: pl.DataFrame, ctx: Context) -> Parsed:
    texts = frame["text"].to_list()
    report = html_report(texts) if any(HTML_REPORT in t for t in texts[:SNIFF_LINES]) else None
    if report is not None:  # the whole file is the report: its markup is how it shows the data
        rows = [{**row, "line_no": int(frame["line_no"][report[0]]), "kind": "result_file",
                 "raw": json.dumps({k: v for k, v in row.items() if v is not None})} for row in html_rows(report[1])]
        return _parsed(frame, rows, [], frame["line_no"].to_list())
    results, requests, claimed, records = [], [], [], []
    for line_no, lines, obj in objects(frame):
        record = aiperf_request(obj)
        if record is not None:
            records.append({**record, "line_no": line_no})
            claimed += lines
            continue
        obj = unwrapped(obj)
        tool = tool_of(obj) if isinstance(obj, dict) else None
        if tool is None:
            continue
        rows = guidellm_rows(obj) if tool == "guidellm" else [result_row(obj, tool)]
        results += [{**row, "line_no": line_no, "kind": "result_file",
                     "raw": json.dumps({k: v for k, v in row.items() if v is not None}, default=str) if tool == "guidellm"
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
    at = next((i for i, line in enumerate(lines[:PROSE + 1]) if document_opening(line, True) is not None), 0)
    opening = document_opening(lines[at], True) if lines else None
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
