"""Benchmark results printed as tables (loganalyze/formats/result_tables.py): GenAI-Perf and AIPerf box
tables and CSV exports, GuideLLM pipe tables, each read from real outputs to the bench
columns, with the same numbers the client's JSON gives where the run saved one."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, sample
from loganalyze.diagnosis import diagnose

AIPERF = FIXTURES / "engines" / "vllm-0.32" / "aiperf"
GUIDELLM = FIXTURES / "engines" / "vllm-0.32" / "guidellm"


def rows(run) -> list[dict]:
    return run.table("bench").sort("line_no").collect().to_dicts()


def test_genai_perf_box_table_in_ns_with_a_cut(ingest_one):
    _, run = ingest_one(sample("bench", "08_"))
    (row,) = rows(run)
    assert row["tool"] == "genai-perf" and row["line_no"] == 5  # the title line, above the border
    assert (row["e2e_mean"], row["e2e_p99"]) == pytest.approx((4110.62343, 5217.352175))  # ns -> ms
    assert row["ttft_mean"] is None  # the paste holds no TTFT row: nothing is made up
    assert {"key": "Num output token", "value": "331"} in row["extra"]


def test_genai_perf_marker_in_a_cell_and_headless_paste(ingest_one):
    _, run = ingest_one(sample("bench", "09_"))
    (row,) = rows(run)
    assert row["ttft_mean"] == 1764.61  # behind the author's `--->`
    assert (row["tpot_mean"], row["e2e_p90"]) == (22.17, 13068.19)  # GenAI-Perf's ITL is the others' TPOT
    _, run = ingest_one(sample("bench", "31_"), name="headless")  # no title, no top border
    (row,) = rows(run)
    assert (row["ttft_mean"], row["tpot_mean"], row["output_throughput"]) == (1389.69, 18.15, 1067.75)


def test_aiperf_console_csv_and_json_agree(ingest_one):
    _, run = ingest_one(AIPERF / "artifacts")
    by_file = {r["source"]: r for r in rows(run)}
    assert len(by_file) == 3  # console table, CSV export, JSON export of one run
    for row in by_file.values():
        assert row["tool"] == "aiperf"
        assert row["ttft_mean"] == pytest.approx(1436.12, abs=0.01)
        assert row["e2e_median"] == pytest.approx(1772.02, abs=0.01)
        assert row["output_throughput"] == pytest.approx(1034.39, abs=0.01)
        assert row["request_throughput"] == pytest.approx(3.45, abs=0.01)
        assert row["concurrency"] == pytest.approx(5.61, abs=0.01)


def test_aiperf_error_summary_alone_counts_the_failures(ingest_one):
    _, run = ingest_one(sample("bench", "213_"))  # every request answered 400: the only table printed
    (row,) = rows(run)
    assert (row["tool"], row["failed"], row["completed"]) == ("aiperf", 500, None)
    (error,) = row["extra"]
    assert error["key"] == "error 400 Bad Request" and "max_completion_tokens" in error["value"]
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity) == ("bench-failures", "critical")
    assert "none counts a success" in finding.verdict and "HTTP 400 Bad Request" in finding.verdict


def test_aiperf_wrapped_row_names_are_joined(ingest_one):
    _, run = ingest_one(AIPERF / "artifacts" / "profile_export_console.txt")
    (row,) = rows(run)
    keys = {e["key"] for e in row["extra"]}
    assert "Output Token Throughput Per User (tokens/sec/user)" in keys
    assert "Completed Requests (Success + Error) (requests)" in keys
    assert not any("Platform" in k for k in keys)  # the panel below the table is not a row


def test_genai_perf_csv_export(ingest_one):
    _, run = ingest_one(sample("bench", "33_"))
    (row,) = rows(run)
    assert row["tool"] == "genai-perf"
    assert (row["ttft_mean"], row["request_throughput"], row["completed"]) == (1146.31, 1.5, 40)


def test_guidellm_tables_join_per_benchmark(ingest_one):
    _, run = ingest_one(GUIDELLM / "guidellm.txt")
    two, eight = rows(run)
    assert (two["label"], two["max_concurrency"], eight["max_concurrency"]) == ("concurrent@2", 2, 8)
    assert (two["completed"], two["failed"], two["duration_s"], two["output_tokens"]) == (16, 0, 15.0, 12288)
    assert (eight["e2e_mean"], eight["ttft_median"], eight["ttft_p95"]) == (7200.0, 4319.1, 4610.8)  # `3.2*`, `±` read
    assert (eight["request_throughput"], eight["concurrency"], eight["output_throughput"]) == (0.7, 6.8, 709.3)
    assert (eight["itl_mean"], eight["tpot_mean"]) == (5.3, 9.2)


def test_guidellm_constant_rate_is_a_rate(ingest_one):
    _, run = ingest_one(sample("bench", "20_"))
    (row,) = rows(run)
    assert (row["label"], row["request_rate"], row["max_concurrency"], row["duration_s"]) == ("constant", None, None, 30.0)
    assert row["input_tokens"] == 956


def test_concurrency_client_tables_never_read_as_a_flood(ingest_one):
    """AIPerf at --concurrency 8: TTFT 1.4 s against an ITL of 0.6 ms, 150 requests, no rate
    printed. vLLM's and SGLang's clients default to every prompt at once, AIPerf does not."""
    _, run = ingest_one(AIPERF / "artifacts" / "profile_export_console.txt")
    assert "bench-overload" not in {f.id for f in diagnose(run)}


def test_guidellm_json_agrees_with_its_console_tables(ingest_one):
    _, run = ingest_one(GUIDELLM / "benchmarks.json")
    two, eight = rows(run)  # one row per benchmark, both on the JSON's one line
    assert (two["label"], two["max_concurrency"], eight["label"], eight["max_concurrency"]) == (
        "concurrent@2", 2, "concurrent@8", 8)
    assert (eight["completed"], eight["failed"], eight["duration_s"], eight["output_tokens"]) == (17, 0, 15.0, 13056)
    assert eight["ttft_median"] == pytest.approx(4319.1, abs=0.05)  # the console's `4319.1`
    assert eight["e2e_mean"] == pytest.approx(7182.3, abs=0.05) and eight["concurrency"] == pytest.approx(6.84, abs=0.01)
    assert eight["output_throughput"] == pytest.approx(709.25, abs=0.01)


def test_json_export_pasted_into_a_ticket_and_cut(ingest_one):
    """bench/36: GenAI-Perf's JSON export after a fence, the stored post ending inside it:
    the longest prefix that closes is read, with AIPerf's shape."""
    result, run = ingest_one(sample("bench", "36_"))
    (row,) = rows(run)
    assert row["tool"] == "genai-perf"
    assert (row["ttft_mean"], row["e2e_mean"]) == pytest.approx((184.6378, 5767.4348), abs=1e-3)
    assert row["request_throughput"] == pytest.approx(17.2225, abs=1e-4)
    src = result.sources[0]
    assert src.lines_by_table["unparsed"] == 1  # the fence line


def test_guidellm_csv_gives_what_its_json_gives(ingest_one):
    _, run = ingest_one(GUIDELLM / "benchmarks.csv", name="csv")
    _, from_json = ingest_one(GUIDELLM / "benchmarks.json", name="json")
    columns = ["label", "max_concurrency", "completed", "failed", "duration_s", "ttft_mean", "ttft_median",
               "tpot_mean", "itl_mean", "e2e_mean", "concurrency", "output_throughput"]
    csv_rows, json_rows = rows(run), rows(from_json)
    assert [r["line_no"] for r in csv_rows] == [4, 5]  # each benchmark's own row
    for got, want in zip(csv_rows, json_rows, strict=True):
        for c in columns:
            assert got[c] == (want[c] if isinstance(want[c], str) else pytest.approx(want[c])), c


def test_guidellm_text_tables_wrapped_by_the_terminal(ingest_one):
    """bench/14: GuideLLM's `Benchmarks Info` table (no outer pipes) wrapped at 80 columns,
    each row over two or three lines, the last one cut: one result per benchmark."""
    _, run = ingest_one(sample("bench", "14_"))
    sync, throughput, constant = rows(run)
    assert (sync["label"], sync["line_no"], sync["max_concurrency"]) == ("synchronous", 11, 1)
    assert {k: sync[k] for k in ("completed", "failed", "duration_s", "input_tokens", "output_tokens")} == {
        "completed": 231, "failed": 0, "duration_s": 300.0, "input_tokens": 221015, "output_tokens": 37586}
    assert (throughput["completed"], throughput["failed"], throughput["output_tokens"]) == (62308, 2, 10207316)
    assert (constant["request_rate"], constant["completed"], constant["input_tokens"]) == (26.21, 7848, None)  # cut


def test_guidellm_rich_box_in_panels_with_a_wrapped_cell(ingest_one):
    """bench/39: GuideLLM 0.1's `Performance Stats by Benchmark` inside two rich panels
    (`│ │ ┏━━┓ │ │`), its header and its TTFT percentiles wrapped onto a second row."""
    _, run = ingest_one(sample("bench", "39_"))
    (row,) = rows(run)
    assert (row["label"], row["request_rate"], row["line_no"]) == ("asynchronous@2.00 req/sec", 2.0, 6)
    assert (row["ttft_median"], row["ttft_p90"], row["ttft_p99"]) == (13039.3, 22588.4, 24736.2)  # p99 wrapped
    assert (row["e2e_median"], row["e2e_p99"]) == (20200.0, 31800.0)  # seconds
    assert (row["itl_median"], row["itl_p95"]) == (54.7, 68.1)


def test_result_block_rewritten_as_a_markdown_table_of_two_runs(ingest_one):
    """bench/42: trtllm-bench's PERFORMANCE OVERVIEW retyped as `label | main | branch` rows
    under `-- | -- | --`: one result per value column, rows read by the words of their label."""
    _, run = ingest_one(sample("bench", "42_"))
    main, branch = rows(run)
    assert (main["request_throughput"], branch["request_throughput"]) == (0.9765, 0.9812)
    assert (main["output_throughput"], main["total_throughput"], main["e2e_mean"]) == (15999.06, 23998.59, 257805.8)
    assert (branch["output_throughput"], branch["e2e_mean"]) == (16075.82, 256444.3)
    assert main["line_no"] == branch["line_no"] == 38  # both columns of the same rows


SHARED = ("label", "max_concurrency", "completed", "failed", "request_throughput", "concurrency", "input_throughput",
          "output_throughput", "total_throughput", "ttft_p95", "ttft_p99", "e2e_p95", "e2e_p99", "itl_p95", "tpot_p99")


def test_guidellm_html_report_gives_what_its_json_gives(ingest_one):
    """Recorded GuideLLM 0.8.1 run: the HTML report's embedded data (one record per run, rates
    and p95 / p99 latencies) reads to the same numbers as benchmarks.json, run by run."""
    result, html = ingest_one(GUIDELLM / "benchmarks.html")
    assert result.sources[0].format == "bench-json"  # by its content: `window.GUIDELLM_REPORT = {...}`
    _, whole = ingest_one(GUIDELLM / "benchmarks.json", name="json")
    from_html, from_json = rows(html), rows(whole)
    assert [r["label"] for r in from_html] == ["concurrent@2", "concurrent@8"]
    assert [r["line_no"] for r in from_html] == [982, 982]  # the script line that holds the data
    for a, b in zip(from_html, sorted(from_json, key=lambda r: r["label"])):
        assert {k: a[k] for k in SHARED} == pytest.approx({k: b[k] for k in SHARED})
    assert (from_html[1]["completed"], from_html[1]["concurrency"]) == (17, pytest.approx(6.842840814590455))


def test_aiperf_per_request_export(ingest_one):
    """Recorded AIPerf 0.13 run: profile_export.jsonl, one request per line, into
    bench_requests; its means are the aggregate export's."""
    result, run = ingest_one(AIPERF / "artifacts" / "profile_export.jsonl")
    assert result.sources[0].lines_by_table == {"bench_requests": 150}
    requests = run.table("bench_requests").sort("request").collect()
    first = requests.row(0, named=True)
    assert (first["tool"], first["input_len"], first["output_len"]) == ("aiperf", 64, 304)
    assert (first["ttft_ms"], first["latency_ms"]) == pytest.approx((973.049821, 973.049821))
    assert first["start_s"] == pytest.approx(1796131987.0065986, abs=1e-6) and len(first["itl_ms"]) == 236  # chunk gaps
    assert requests["ttft_ms"].mean() == pytest.approx(1436.1238150066665)  # profile_export_aiperf.json's avg
    assert requests["latency_ms"].mean() == pytest.approx(1625.0051863666665)
    assert requests["output_len"].sum() == 44930 and requests["error"].null_count() == 150


def test_aiperf_per_request_export_of_failed_requests(ingest_one):
    """Recorded AIPerf run with prompts over --max-model-len 256: 15 of its 60 lines are
    failed requests, each with the server's answer in `error` and no latency."""
    _, run = ingest_one(AIPERF.parent / "aiperf-failing" / "artifacts" / "profile_export.jsonl")
    requests = run.table("bench_requests").collect()
    failed = requests.filter(requests["error"].is_not_null())
    assert (requests.height, failed.height) == (60, 15)
    assert failed["error"].str.contains('"code": 400').all()
    assert failed["error"].str.contains("maximum context length is 256 tokens").all()
    assert failed["ttft_ms"].null_count() == 15 and requests["ttft_ms"].null_count() == 15


def test_a_line_wider_than_any_table_is_kept_not_read(ingest_one, tmp_path):
    """Found by the store fuzzer: a 93,000-space line ending `NVIDIA AIPerf | LLM Metrics`
    held the table reader for 80 s (its shape checks are quadratic in Python's regex), and
    a CI run stalled on such files. A line wider than any client draws is not a table's: the
    table beside it is still read, the wide line stays in unparsed."""
    table = sample("bench", "08_").read_text()
    wide = " " * 400_000 + "NVIDIA AIPerf | LLM Metrics\n" + "-" * 400_000 + "| x |\n"
    path = tmp_path / "wide.log"
    path.write_text(table + "\n" * 6 + wide)
    result, run = ingest_one(path, as_format="bench")
    (row,) = rows(run)
    assert (row["e2e_mean"], row["e2e_p99"]) == pytest.approx((4110.62343, 5217.352175))
    unparsed = run.table("unparsed").collect()
    assert unparsed.filter(unparsed["text"].str.len_chars() > 4096).height == 2
    source = result.sources[0]
    assert sum(source.lines_by_table.values()) + source.blank == source.lines
