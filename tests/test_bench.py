"""Benchmark outputs: printed results and results files parse by label with their real values,
sweeps give single-stream, peak and knee, and the reference case's comparison comes out."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from click.testing import CliRunner

import loganalyze as la
from conftest import FIXTURES, sample
from loganalyze.cli import main
from loganalyze.compare import compare
from loganalyze.diagnosis import diagnose

REF = FIXTURES / "reference"
BENCH_SAMPLES = [("sglang", "09_"), ("sglang", "11_"), ("sglang", "25_"), ("vllm", "32_"), ("vllm", "34_")]


def bench(run) -> list[dict]:
    return run.table("bench").sort("source", "line_no").collect().to_dicts()


def ids(run, baseline=None) -> list[str]:
    return [f.id for f in diagnose(run, baseline)]


@pytest.mark.parametrize("engine,prefix", BENCH_SAMPLES, ids=lambda x: x)
def test_every_bench_sample_is_accounted(engine, prefix, ingest_one):
    result, _ = ingest_one(sample(engine, prefix))
    src = result.sources[0]
    assert sum(src.lines_by_table.values()) + src.blank == src.lines


def test_09_sglang_040_block_with_typo_and_failed_requests(ingest_one):
    _, run = ingest_one(sample("sglang", "09_"))
    (row,) = bench(run)
    assert (row["tool"], row["line_no"], row["backend"]) == ("sglang.bench_serving", 2, "sglang")
    assert math.isinf(row["request_rate"]) and row["max_concurrency"] is None  # `Max reqeuest concurrency: not set`
    assert (row["completed"], row["input_tokens"], row["output_tokens"], row["output_tokens_retokenized"]) == (
        1648, 369103, 326408, 326356)
    assert (row["duration_s"], row["output_throughput"], row["total_throughput"]) == (170.41, 1915.40, 4081.34)
    assert (row["e2e_mean"], row["e2e_median"], row["ttft_mean"]) == (80126.93, 81160.44, 44294.80)
    assert row["partial"] is True  # the paste stops before the footer
    assert run.config()["bench.num_prompts"] == "3000"
    assert run.metrics()["sweep"].summary["failed"] == 1352
    found = {f.id: f for f in diagnose(run)}
    failed = found["bench-failures"]
    assert failed.metrics["problem"] == "failed-requests"
    assert failed.severity == "critical" and failed.metrics["failed"] == 1352
    assert [e.line for e in failed.evidence] == [1, 6] and "1648" in failed.evidence[1].text
    assert "bench-overload" in found and "44.3 s" in found["bench-overload"].verdict


def test_11_sglang_054_accept_length_low_concurrency_retokenized(ingest_one):
    _, run = ingest_one(sample("sglang", "11_"))
    (row,) = bench(run)
    assert (row["max_concurrency"], row["request_rate"], row["completed"]) == (256, 256.0, 256)
    assert (row["accept_length"], row["concurrency"]) == (5.86, 142.34)
    assert (row["output_tokens"], row["output_tokens_retokenized"]) == (512000, 231736)
    assert {"key": "Total input vision tokens", "value": "0"} in row["extra"]
    found = ids(run)
    problems = {f.metrics["problem"] for f in diagnose(run) if f.id == "bench-failures"}
    assert problems == {"low-concurrency", "retokenized-mismatch"}
    assert "bench-overload" not in found  # --max-concurrency holds requests back on the client


def test_25_bench_one_batch_command_line_is_client_config(ingest_one):
    _, run = ingest_one(sample("sglang", "25_"))
    cfg = run.config()
    assert (cfg["bench.tool"], cfg["bench.tp"], cfg["bench.enable_dp_attention"]) == (
        "sglang.bench_one_batch", "2", "True")
    assert "tp" not in cfg  # client args never shadow the server's


def test_32_vllm_09_old_labels(ingest_one):
    _, run = ingest_one(sample("vllm", "32_"))
    (row,) = bench(run)
    assert (row["tool"], row["completed"], row["failed"]) == ("vllm.bench_serve", 1000, None)
    assert row["total_throughput"] == 14029.44  # `Total Token throughput` (capital T, <= 0.12)
    assert (row["ttft_mean"], row["ttft_median"], row["ttft_p99"]) == (9626.13, 9459.70, 12666.73)
    assert (row["tpot_mean"], row["itl_median"], row["itl_p99"]) == (77.86, 25.44, 214.35)
    assert run.config()["bench.model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "bench-overload" in ids(run)


def test_34_vllm_011_peak_rows_and_cut_block(ingest_one):
    result, run = ingest_one(sample("vllm", "34_"))
    tail, row = bench(run)
    # The tail of an earlier block, its banner cut: partial from its section title on.
    assert (tail["line_no"], tail["partial"], tail["e2e_mean"], tail["completed"]) == (5, True, 31805.05, None)
    assert (row["line_no"], row["completed"], row["failed"], row["request_rate"]) == (16, 325, 0, 65.0)
    assert (row["peak_output_throughput"], row["peak_concurrency"]) == (8169.00, 325.00)
    assert (row["request_throughput"], row["output_throughput"]) == (4.17, 4274.51)
    unparsed = run.table("unparsed").collect()["line_no"].to_list()
    assert unparsed[:4] == [1, 2, 3, 4]  # rows above the cut block's first section title
    overload = {f.id: f for f in diagnose(run)}["bench-overload"]
    assert "65 requests/s" in overload.verdict and overload.evidence[0].line == 19


@pytest.mark.parametrize("prefix", ["208_", "212_"])
def test_a_clients_traceback_is_a_benchmark_that_failed_not_a_server_crash(ingest_one, prefix):
    """Hold-out 7: benchmark_serving.py died on a traceback (a --backend the server does not
    speak) before its result, in a console the vLLM format reads: its frames run in the
    client's code, so the run measured nothing and no server crashed."""
    _, run = ingest_one(sample("bench", prefix))
    found = {f.id: f for f in diagnose(run)}
    assert "crash" not in found
    failed = found["bench-failures"]
    assert (failed.severity, failed.metrics["problem"], failed.metrics["tracebacks"]) == ("warning", "client-crashed", 1)
    assert "benchmark_serving.py" in failed.evidence[0].text or "Traceback" in failed.evidence[0].text


def test_a_few_requests_at_a_rate_are_one_request_long_not_an_overload(ingest_one):
    """bench/59: 5 requests at 4/s served at 0.14/s because each takes 34 s, TTFT 0.49 s: no queue."""
    _, run = ingest_one(sample("bench", "59_"))
    (row,) = bench(run)
    assert (row["completed"], row["request_rate"], row["request_throughput"], row["ttft_mean"]) == (5, 4.0, 0.14, 489.53)
    assert "bench-overload" not in ids(run)


CONSOLE = """\
$ vllm bench serve --model Qwen/Qwen3-8B --num-prompts 200 --max-concurrency 64
Namespace(subparser='bench', model='Qwen/Qwen3-8B', num_prompts=200, max_concurrency=64, request_rate=inf)
Traffic request rate: inf
Maximum request concurrency: 64
============ Serving Benchmark Result ============
Successful requests:                     198       
Failed requests:                         2         
Benchmark duration (s):                  20.41     
Request goodput (req/s):                 8.50      
Output token throughput (tok/s):         1241.74   
Total token throughput (tok/s):          11276.19  
---------------Time to First Token----------------
Mean TTFT (ms):                          512.30    
P90 TTFT (ms):                           900.00    
---------------Inter-token Latency----------------
P99.9 ITL (ms):                          300.00    
---------------Speculative Decoding---------------
Acceptance rate (%):                     45.20     
Acceptance length:                       2.36      
Drafts:                                  10000     
Per-position acceptance (%):
  Position 0:                            70.10     
  Position 1:                            42.00     
==================================================
Avg latency: 1.5234 seconds
50% percentile latency: 1.50 seconds
99% percentile latency: 1.70 seconds
Throughput: 12.34 requests/s, 5678.90 total tokens/s, 2345.67 output tokens/s
Total num prompt tokens:  102400
Total num output tokens:  25600
Prefill. latency: 0.20000 s, throughput:  81920.00 token/s
Decode 0. Batch size: 16, latency: 0.01200 s, throughput:   1333.33 token/s
Decode.  median latency: 0.01210 s, median throughput:   1322.31 token/s
Total. latency:  1.750 s, throughput:  10532.57 token/s
"""


def test_console_results_of_every_client(tmp_path, ingest_one):
    path = tmp_path / "console.log"
    path.write_text(CONSOLE)
    result, run = ingest_one(path)
    assert result.sources[0].format == "bench" and result.sources[0].unparsed == 0
    serve, latency, throughput, one_batch = bench(run)
    assert (serve["completed"], serve["failed"], serve["goodput"], serve["ttft_p90"]) == (198, 2, 8.5, 900.0)
    assert (serve["accept_rate"], serve["accept_length"], serve["drafts"]) == (pytest.approx(0.452), 2.36, 10000)
    assert serve["per_position"] == pytest.approx([0.701, 0.42])
    assert {"key": "P99.9 ITL (ms)", "value": "300.00"} in serve["extra"] and serve["partial"] is False
    assert (latency["tool"], latency["e2e_mean"], latency["e2e_median"], latency["e2e_p99"]) == (
        "vllm.bench_latency", pytest.approx(1523.4), pytest.approx(1500.0), pytest.approx(1700.0))
    assert (throughput["request_throughput"], throughput["output_throughput"], throughput["input_tokens"]) == (
        12.34, 2345.67, 102400)
    assert (one_batch["tool"], one_batch["batch_size"], one_batch["max_concurrency"]) == ("sglang.bench_one_batch", 16, 16)
    assert (one_batch["ttft_mean"], one_batch["tpot_median"]) == (pytest.approx(200.0), pytest.approx(12.1))
    cfg = run.config()
    assert (cfg["bench.max_concurrency"], cfg["bench.request_rate"], cfg["bench.num_prompts"]) == ("64", "inf", "200")


def test_vllm_save_result_with_per_request_arrays(tmp_path, ingest_one):
    result = {"date": "20260102-030405", "backend": "vllm", "model_id": "m", "num_prompts": 3, "request_rate": "inf",
              "max_concurrency": 2, "duration": 10.0, "completed": 2, "failed": 1, "total_input_tokens": 30,
              "total_output_tokens": 20, "request_throughput": 0.2, "output_throughput": 2.0, "p99_e2el_ms": 900.0,
              "spec_decode_acceptance_rate": 40.0, "spec_decode_acceptance_length": 2.2,
              "spec_decode_per_position_acceptance_rates": [0.6, 0.4],
              "input_lens": [10, 10, 10], "output_lens": [10, 10, 0], "ttfts": [0.1, 0.2, 0.0],
              "itls": [[0.01, 0.02], [0.03], []], "errors": ["", "", "timeout"]}
    path = tmp_path / "vllm-infqps-concurrency2.json"
    path.write_text(json.dumps(result, indent=2))  # pretty-printed: one object over many lines
    src, run = ingest_one(path)
    assert src.sources[0].format == "bench-json" and src.sources[0].unparsed == 0
    (row,) = bench(run)
    assert (row["line_no"], str(row["ts"]), row["failed"], row["e2e_p99"]) == (1, "2026-01-02 03:04:05", 1, 900.0)
    assert (row["accept_rate"], row["accept_length"], row["per_position"]) == (0.4, 2.2, [0.6, 0.4])
    reqs = run.table("bench_requests").sort("request").collect()
    assert reqs["ttft_ms"].to_list() == pytest.approx([100.0, 200.0, 0.0])
    assert reqs["itl_ms"].to_list()[0] == pytest.approx([10.0, 20.0])
    assert reqs["error"].to_list() == ["", "", "timeout"] and set(reqs["line_no"]) == {1}


def test_sglang_jsonl_old_and_new_key_names(tmp_path, ingest_one):
    old = {"backend": "sglang", "dataset_name": "sharegpt", "request_rate": 8.0, "total_input": 100,
           "total_output": 50, "total_output_retokenized": 50, "median_ttft": 12.5, "output_token_throughput": 5.0,
           "benchmark_duration": 10.0}
    new = {"backend": "sglang-oai", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": 4,
           "completed": 8, "duration": 4.0, "total_output_tokens": 80, "total_output_tokens_retokenized": 80,
           "output_throughput": 20.0, "median_ttft_ms": 30.0, "accept_length": None,
           "server_info": {"model_path": "m", "version": "0.5.6", "internal_states": [{"max_num_reqs": 48}]}}
    path = tmp_path / "sglang_0102_8.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\nnot json\n")
    result, run = ingest_one(path)
    assert result.sources[0].lines_by_table == {"bench": 2, "unparsed": 1}
    first, second = bench(run)
    assert (first["input_tokens"], first["ttft_median"], first["output_throughput"], first["duration_s"]) == (
        100, 12.5, 5.0, 10.0)
    assert (second["model"], second["server_version"], second["server_cap"], second["line_no"]) == ("m", "0.5.6", 48, 2)
    assert "server_info" not in json.loads(second["raw"])


def test_sglang_0_2_multi_jsonl_alone_is_a_results_file(ingest_one):
    """bench/75: `bench_serving --multi` of 2024 wrote only old key names (median_ttft,
    output_token_throughput) and one tool mark (sharegpt_output_len): still a results file."""
    result, run = ingest_one(sample("bench", "75_"))
    assert result.sources[0].format == "bench-json" and result.sources[0].unparsed == 0
    one, two = bench(run)
    assert (one["request_rate"], one["ttft_median"], one["itl_median"], one["output_throughput"]) == pytest.approx(
        (1.0, 32.953862100839615, 12.583150564412666, 187.74840245645584))
    assert (two["request_rate"], two["input_tokens"], two["output_tokens"]) == (2.0, 14688, 12790)


def test_aiperf_aggregate_export(tmp_path, ingest_one):
    export = {
        "request_throughput": {"unit": "requests/sec", "avg": 13.16},
        "request_latency": {"unit": "ms", "avg": 6550.36, "p50": 5799.9, "p99": 9381.63},
        "time_to_first_token": {"unit": "ms", "avg": 1588.8, "p50": 787.54, "p95": 4051.43},
        "inter_token_latency": {"unit": "ms", "avg": 51.76, "p99": 55.87},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 1274.63},
        "benchmark_duration": {"unit": "sec", "avg": 15.2}, "request_count": {"unit": "requests", "avg": 200.0},
        "error_request_count": None, "end_time": "2025-10-17T20:22:24.967633", "error_summary": [],
        "input_config": {"endpoint": {"model_names": ["openai/gpt-oss-20b"]}, "loadgen": {"concurrency": 100}},
    }
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(export, indent=2))
    result, run = ingest_one(path)
    assert result.sources[0].format == "bench-json" and result.sources[0].unparsed == 0
    (row,) = bench(run)
    assert (row["tool"], row["model"], row["max_concurrency"], row["completed"]) == ("aiperf", "openai/gpt-oss-20b", 100, 200)
    assert (row["ttft_mean"], row["ttft_p95"], row["tpot_mean"], row["e2e_p99"]) == (1588.8, 4051.43, 51.76, 9381.63)
    assert (row["output_throughput"], row["duration_s"], row["ts"].year) == (1274.63, 15.2, 2025)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    if not REF.exists():
        pytest.skip("reference fixtures not generated")
    store = tmp_path_factory.mktemp("bench") / "store"
    for name in ("vllm-baseline", "sglang-base", "sglang-eagle3"):
        files = sorted((REF / name).glob("bench*")) + [REF / name / "server.log"]
        paths = [f for p in files for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
        la.ingest(paths, run=name, store=store)
    return store


def test_reference_sweeps(reference):
    eagle = la.open_run("sglang-eagle3", reference).metrics()["sweep"]
    assert eagle.summary["levels"] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert (eagle.summary["knee_level"], eagle.summary["plateau_cause"]) == (64, "cap reached")
    assert eagle.summary["server_join"] == "order of levels"
    steps = {r["c"]: r for r in eagle.frames["levels"].to_dicts()}
    assert (steps[128]["running_median"], steps[128]["queued_max"]) == (48, 80)
    assert (steps[16]["running_median"], steps[16]["queued_max"], steps[16]["cause"]) == (16, 0, "compute-bound")
    vllm = la.open_run("vllm-baseline", reference).metrics()["sweep"]
    assert vllm.summary["server_join"] == "time window"
    assert vllm.notes["single_stream_tok_s"] == "output tok/s at C=1"


def test_reference_compare_table(reference):
    runs = [la.open_run(n, reference) for n in ("vllm-baseline", "sglang-base", "sglang-eagle3")]
    table = {r["run"]: r for r in compare(runs).to_dicts()}
    expected = {"vllm-baseline": (82.5, 1536.0), "sglang-base": (63.6, 2370.0), "sglang-eagle3": (62.9, 849.0)}
    for name, (single, peak) in expected.items():
        row = table[name]
        assert (row["single_stream_tok_s"], row["peak_tok_s"], row["peak_c"]) == (single, peak, 128)
    eagle = table["sglang-eagle3"]
    assert (eagle["engine"], eagle["version"], eagle["cap"]) == ("sglang", "0.5.6", 48)
    assert eagle["speculative"] == "EAGLE3 (steps 3, topk 1, draft 4)"
    assert 1.65 <= eagle["accept_length"] <= 1.82 and eagle["max_accept_length"] == 4
    assert 0.40 <= eagle["accept_rate_low"] <= eagle["accept_rate_high"] <= 0.48
    assert eagle["peak_delta"] == pytest.approx(849 / 1536 - 1)
    assert table["sglang-base"]["cap"] == 2048 and table["vllm-baseline"]["version"] == "0.16.0"
    code = CliRunner().invoke(main, ["compare", "vllm-baseline", "sglang-base", "sglang-eagle3", "--store",
                                     str(reference)])
    assert code.exit_code == 0, code.output
    assert "1,536 (C=128)" in code.output and "849 (C=128)" in code.output and "62.9" in code.output
    csv = CliRunner().invoke(main, ["compare", "sglang-base", "sglang-eagle3", "--store", str(reference),
                                    "--format", "csv"]).output
    assert pl.read_csv(csv.encode())["peak_tok_s"].to_list() == [2370.0, 849.0]


def test_reference_speculation_net_negative_against_base(reference):
    eagle, base = (la.open_run(n, reference) for n in ("sglang-eagle3", "sglang-base"))
    found = diagnose(eagle, base)
    order = [f.id for f in found]
    assert order.index("concurrency-cap") < order.index("spec-net-negative")  # the cause before its effect
    net = found[order.index("spec-net-negative")]
    assert net.severity == "critical" and 128 in net.metrics["hurts"] and net.metrics["helps"] == []
    assert net.metrics["lost_tok_s"] == pytest.approx(2370 - 849, abs=1)
    assert "cap of 48" in net.verdict and "C=128" in net.verdict
    assert {e.path.split("/")[-2] for e in net.evidence} == {"sglang-eagle3", "sglang-base"}
    cap = found[order.index("concurrency-cap")]
    assert cap.metrics["cap_hit_at_c"] == 64 and "plateaus at 849" in cap.verdict
    assert not [i for i in ids(base) if i.startswith("bench-")]


def test_result_object_on_one_line_of_a_console_log(ingest_one):
    """bench/13: sglang's --output-file line echoed after a settings line, in a text file
    another format claims: the object is still one bench row, read as the results file is."""
    _, run = ingest_one(sample("bench", "13_"))
    (row,) = bench(run)
    assert (row["tool"], row["completed"], row["output_tokens"], row["output_tokens_retokenized"]) == (
        "sglang.bench_serving", 300, 300000, 0)
    assert "bench-failures" in ids(run)


def test_progress_bar_total_counts_the_prompts_sent(ingest_one):
    """bench/24: vLLM before `Failed requests:` existed; `100/100` on the bar above a block
    with `Successful requests: 1` is 99 failures."""
    _, run = ingest_one(sample("bench", "24_"))
    assert run.config()["bench.num_prompts"] == "100"
    found = {f.id: f for f in diagnose(run)}
    assert found["bench-failures"].metrics["failed"] == 99 and found["bench-failures"].severity == "critical"


def test_every_prompt_in_flight_at_once_is_a_flood(ingest_one):
    """bench/02: no rate line, the block cut before TPOT, but `Peak concurrent requests: 1000`
    of 1000 completed: they were all sent at once."""
    _, run = ingest_one(sample("bench", "02_"))
    (finding,) = [f for f in diagnose(run) if f.id == "bench-overload"]
    assert "1000 of 1000 requests were in flight at once" in finding.verdict
    assert finding.confidence == "low"  # medium, less a step: the block it reads is cut


@pytest.mark.parametrize("prefix,want", [
    ("07_", {"completed": 120, "failed": 0, "duration_s": 115.56, "ttft_mean": 510.0, "itl_mean": 80.0}),  # per minute, (s)
    ("18_", {"duration_s": 166.88, "request_throughput": 5.99, "e2e_mean": 67590.0}),  # vLLM 0.1, no banner
    ("40_", {"tool": "trtllm-bench", "request_throughput": 248.4751, "e2e_mean": 53522.9014}),
    ("47_", {"duration_s": 295.3, "request_throughput": 10.159, "output_throughput": 2353.993}),  # LMDeploy
    ("51_", {"completed": 100, "failed": 0, "max_concurrency": 128, "ttft_mean": None}),  # evalscope: no unit, no TTFT
    ("55_", {"completed": 100, "failed": 0, "request_throughput": 7.17, "output_throughput": 3624.51}),
    ("57_", {"ttft_mean": 20.88, "tpot_mean": 20.88}),  # OpenVINO's `mean ± std ms`
    ("50_", {"request_rate": 50.0, "request_throughput": 2.0004955480459414}),  # fw-ai: `Concurrency: QPS 50.0 constant`
    ("41_", {"tool": "trtllm-bench", "line_no": 3, "request_rate": 1.1684e17, "server_cap": 1024,  # its sections,
             "concurrency": 1018.8281, "request_throughput": 7.3411}),  # then the overview: one result
])
def test_other_clients_summary_blocks_read_by_label_words(prefix, want, ingest_one):
    _, run = ingest_one(sample("bench", prefix))
    (row,) = bench(run)
    assert {k: row[k] for k in want} == pytest.approx(want) if all(
        isinstance(v, float) for v in want.values()) else {k: row[k] for k in want} == want


def test_the_clients_run_phases_are_events(ingest_one):
    """benchmark_serving.py's single-prompt test run before the timed requests (bench/108) and
    `vllm bench serve`'s hint when termplotlib is missing (bench/100): the client's own lines."""
    _, run = ingest_one(sample("bench", "108_"))
    phases = run.table("events").filter(pl.col("kind") == "bench_phase").sort("line_no").collect()
    assert phases.select("line_no", "message").rows() == [
        (1, "Starting initial single prompt test run..."),
        (2, "Initial test run completed. Starting main benchmark run...")]
    result, run = ingest_one(sample("bench", "100_"), name="tip")
    assert result.sources[0].unparsed == 2  # the author's `TP2` and `Base`
    assert run.table("events").filter(pl.col("kind") == "bench_phase").collect()["line_no"].to_list() == [4]


def test_a_termplotlib_chart_before_the_result_is_the_clients(ingest_one):
    """bench/106 (sglang#14165): the output-throughput plot, cut inside, then its bottom border
    and x axis: two chart records (the rows, the axis), the result block after them."""
    result, run = ingest_one(sample("bench", "106_"))
    assert result.sources[0].unparsed == 0 and bench(run)[0]["line_no"] == 17
    charts = run.table("events").filter(pl.col("kind") == "bench_chart").sort("line_no").collect()
    assert charts.select("line_no", "span").rows() == [(1, 13), (14, 2)]


def test_evalscope_progress_and_closing_line(ingest_one, tmp_path):
    """evalscope's own bar behind its logging header (bench/102's last line) gives the run's
    request count as a tqdm bar does, as does vLLM's `Benchmarking:` bar; the summary of one
    request ends with `Too little data to calculate quantiles!` (bench/103), part of the block."""
    log = tmp_path / "bars.log"
    log.write_text("2026-03-17 14:10:22 - evalscope - INFO: Processing[parallel_10_number_30] 100%| 30/30 "
                   "[Elapsed: 00:00 < Remaining: 00:00, 168.74it/s]\n"
                   "Benchmarking: 100%|██████████| 1000/1000 [00:30<00:00, 33.0it/s]\n"
                   "============ Serving Benchmark Result ============\n"
                   "Successful requests:                     1000\n")
    _, run = ingest_one(log)
    got = run.table("config").sort("line_no").collect().select("line_no", "key", "value").rows()
    assert got == [(1, "bench.num_prompts", "30"), (2, "bench.num_prompts", "1000")]
    result, run = ingest_one(sample("bench", "103_"), name="few")
    assert result.sources[0].unparsed == 0 and bench(run)[0]["completed"] == 1


def test_evalscope_minus_one_is_no_value(ingest_one):
    """bench/102 (evalscope#1231): 0 of 30 succeeded and every metric printed as -1: the
    failures are the finding, not a -1000 ms latency nor an achieved concurrency of 1."""
    _, run = ingest_one(sample("bench", "102_"))
    (row,) = bench(run)
    assert (row["completed"], row["failed"], row["e2e_mean"], row["ttft_mean"], row["request_throughput"]) == (
        0, 30, None, None, None)
    assert {"key": "Average latency (s)", "value": "-1"} in row["extra"]
    assert [(f.id, f.severity) for f in diagnose(run)] == [("bench-failures", "critical")]


def test_failures_name_the_status_the_server_answered(ingest_one):
    """Recorded vLLM 0.32 run: prompts up to 300 tokens against --max-model-len 256; the
    server's access lines say 400 for the 81 requests the client counts as failed."""
    _, run = ingest_one(FIXTURES / "engines" / "vllm-0.32" / "too-long-prompts")
    (finding,) = [f for f in diagnose(run) if f.id == "bench-failures"]
    assert "81 with HTTP 400" in finding.verdict and "max_model_len is 256" in finding.verdict
    assert "max-model-len" in finding.recommendation
    assert any('" 400 Bad Request' in e.text for e in finding.evidence)


def test_client_that_says_it_was_the_bottleneck(ingest_one):
    """Recorded GuideLLM 0.8 run on 2 busy cores: its own warning says data generation limited
    it; the other recorded GuideLLM run, with only late dispatches, gets no such finding."""
    engines = FIXTURES / "engines" / "vllm-0.32"
    _, run = ingest_one(engines / "guidellm-client-bound")
    (finding,) = [f for f in diagnose(run) if f.id == "client-bottleneck"]
    assert "bottlenecked by the data generation" in finding.verdict and finding.metrics == {"benchmarks": ["concurrent@2"]}
    _, run = ingest_one(engines / "guidellm", name="capped")
    assert "client-bottleneck" not in ids(run)


@pytest.mark.parametrize("prefix,problem,lines,numbers", [
    # sglang --output-file: TTFT and ITL 0 over 300 requests of 1000 tokens, retokenized 0
    ("13_", "zero-latency", [2], {"ttft_mean": 0.0, "itl_mean": 0.0, "output_tokens": 300000}),
    ("25_", "zero-latency", [1], {"ttft_mean": 0.0, "itl_mean": 0.0, "output_tokens": 300000}),
    # vLLM: median TTFT 0.00 while the mean is 26.56 (first chunks without text, PR 5895)
    ("15_", "zero-latency", [12, 6], {"ttft_median": 0.0, "output_tokens": 81299}),
    # vLLM: TPOT 0.10 ms, 778 in flight under --max-concurrency 64 (an echo backend)
    ("03_", "mock-backend", [19, 12, 5], {"tpot_mean": 0.1, "peak_concurrency": 778.0, "max_concurrency": 64}),
])
def test_latencies_that_cannot_be_true(prefix, problem, lines, numbers, ingest_one):
    _, run = ingest_one(sample("bench", prefix))
    (finding,) = [f for f in diagnose(run) if f.id == "bench-invalid"]
    assert finding.metrics["problem"] == problem and finding.severity == "warning"
    assert {k: finding.metrics[k] for k in numbers} == numbers
    assert [e.line for e in finding.evidence] == lines
    assert "client side" in finding.recommendation and "Do not change the server" in finding.recommendation


@pytest.mark.parametrize("engine,prefix", [("bench", "01_"), ("bench", "04_"), ("sglang", "11_"), ("vllm", "32_")])
def test_plausible_latencies_are_not_called_invalid(engine, prefix, ingest_one):
    _, run = ingest_one(sample(engine, prefix))
    assert "bench-invalid" not in ids(run)


def test_retokenized_zero_says_no_text_arrived(ingest_one):
    _, run = ingest_one(sample("bench", "13_"))
    (finding,) = [f for f in diagnose(run) if f.metrics.get("problem") == "retokenized-mismatch"]
    assert "no generated text reached the client" in finding.verdict and "round-trip" not in finding.verdict


def test_retokenized_gap_of_a_broken_stream_is_bench_invalids_alone(ingest_one):
    """bench/96 (hold-out 5): ITL 0.00 and median TPOT -0.00 with half the output re-tokenized:
    the stream fault explains the gap, which bench-invalid names; no request failed, so no
    bench-failures finding."""
    _, run = ingest_one(sample("bench", "96_"))
    (found,) = diagnose(run)
    assert found.id == "bench-invalid" and "re-tokenized 103,837 tokens" in found.verdict


def test_offered_rate_printed_as_the_load_row_is_an_overload(ingest_one):
    """bench/50: fw-ai's benchmark offered 50 requests/s (`Concurrency: QPS 50.0 constant`)
    and completed 2.0 per second."""
    _, run = ingest_one(sample("bench", "50_"))
    (finding,) = [f for f in diagnose(run) if f.id == "bench-overload"]
    assert finding.metrics["request_rate"] == 50.0


def test_json_fragments_pasted_from_results_files(ingest_one):
    """Results files pasted in part: one GuideLLM distribution without the report around it
    (bench/38), evalscope's summary glued to a progress line and never closed (bench/52),
    awscurl's results, the first one cut at the top, between log lines (bench/53)."""
    _, run = ingest_one(sample("bench", "38_"))
    (row,) = bench(run)
    assert (row["tool"], row["line_no"]) == ("guidellm", 2)
    assert (row["ttft_mean"], row["ttft_median"], row["ttft_max"]) == pytest.approx(
        (-1715507074412.1443, -1750878354510.5388, 89488.18135261536))
    _, run = ingest_one(sample("bench", "52_"), name="evalscope")
    (row,) = bench(run)
    assert {k: row[k] for k in ("tool", "completed", "failed", "max_concurrency")} == {
        "tool": "evalscope", "completed": 480, "failed": 0, "max_concurrency": 10}
    assert (row["ttft_mean"], row["e2e_mean"], row["duration_s"], row["request_throughput"]) == pytest.approx(
        (47.0, 7823.0, 375.537, 1.278))  # keys in seconds: `Average time to first token (s)`
    result, run = ingest_one(sample("bench", "53_"), name="awscurl")
    first, second = bench(run)
    assert (first["line_no"], second["line_no"]) == (2, 17)
    assert second["failed"] == 0 and second["ttft_mean"] is None  # `timeToFirstByte` names no unit
    assert {"key": "timeToFirstByte", "value": "122.06"} in second["extra"]
    assert result.sources[0].lines_by_table["unparsed"] == 5  # the fences and the INFO lines


def test_a_finding_on_a_partial_result_says_so_with_less_confidence(ingest_one):
    """bench/16: the block stops before its footer (the paste ends at `Total Token throughput`):
    the overload finding built on it drops from medium to low confidence and names the result."""
    _, run = ingest_one(sample("bench", "16_"))
    (row,) = bench(run)
    assert row["partial"] is True
    (found,) = diagnose(run)
    assert (found.id, found.confidence) == ("bench-overload", "low")
    assert found.metrics["partial_evidence"] == [f"{sample('bench', '16_')}:11"]
    assert "Partial evidence: the benchmark result at" in found.verdict


def test_a_block_under_its_own_banner_is_whole_one_without_a_banner_partial(ingest_one):
    """trtllm-bench's PERFORMANCE OVERVIEW (bench/40) has no footer to miss; OpenVINO's
    `Load time:` list (bench/57) prints no banner, so nothing tells a cut one from a whole one."""
    _, run = ingest_one(sample("bench", "40_"))
    assert [r["partial"] for r in bench(run)] == [False]
    _, run = ingest_one(sample("bench", "57_"), name="o")
    assert [r["partial"] for r in bench(run)] == [True]


# ---- hold-out 13: clients and shapes first met there ----

def test_llmperf_summary_counts_its_errors_and_their_status(ingest_one):
    """bench/260: LLMPerf's summary JSON, 130 of 150 requests answered 429: the failures, with
    the status the client counted, and the latencies of the 20 that succeeded in ms."""
    _, run = ingest_one(sample("bench", "260_"))
    (row,) = bench(run)
    assert (row["tool"], row["num_prompts"], row["completed"], row["failed"], row["max_concurrency"]) == \
        ("llmperf", 150, 20, 130, 5)
    assert (round(row["ttft_mean"], 1), round(row["itl_median"], 2)) == (899.5, 30.27)
    (finding,) = [f for f in diagnose(run) if f.metrics.get("problem") == "failed-requests"]
    assert finding.severity == "critical" and "HTTP 429" in finding.verdict


def test_inference_perf_report_cut_short_is_read(ingest_one):
    """bench/264: inference-perf's lifecycle report, pasted and cut inside its TTFT statistics:
    10 of 10 at the rate 1.0 asked, latencies in seconds kept as ms, healthy."""
    _, run = ingest_one(sample("bench", "264_"))
    (row,) = bench(run)
    assert (row["tool"], row["request_rate"], row["num_prompts"], row["completed"]) == ("inference-perf", 1.0, 10, 10)
    assert (round(row["e2e_median"], 1), round(row["tpot_mean"], 2), round(row["ttft_mean"], 1)) == (6200.6, 19.51, 196.8)
    assert ids(run) == []


def test_trtllm_session_benchmark_lines_of_both_runtimes(ingest_one):
    """bench/259: TensorRT-LLM 0.10's `[BENCHMARK] key value ...` lines, the C++ and the Python
    benchmark's orders: one result per line, batch size as the load."""
    _, run = ingest_one(sample("bench", "259_"))
    cpp, py = bench(run)
    assert (cpp["tool"], cpp["batch_size"], cpp["input_len"], cpp["output_len"]) == ("trtllm.benchmark", 1, 1024, 128)
    assert (cpp["e2e_mean"], cpp["output_throughput"]) == (2561.35, 49.97)
    assert (py["e2e_mean"], py["e2e_p99"], py["output_throughput"]) == (41.362, 42.102, 483.54)
    assert ids(run) == []


def test_sglang_task_benchmark_results_carry_the_accept_length(ingest_one):
    """sglang/251: SGLang's mtbench prints one line a run (`#questions: 80, Throughput: ...,
    Acceptance length: 5.39`); sglang/246 the rows of a derived script (`Latency: 34.241 s`:
    the run's time, not a request's)."""
    _, run = ingest_one(sample("sglang", "251_"))
    assert [(r["num_prompts"], r["output_throughput"], r["accept_length"]) for r in bench(run)] == \
        [(80, 378.57, 5.39), (80, 361.7, 4.68), (80, 230.08, 3.76)]
    _, run = ingest_one(sample("sglang", "246_"), name="t2")
    (row,) = bench(run)
    assert (row["tool"], row["duration_s"], row["accept_length"], row["e2e_mean"]) == \
        ("sglang.benchmark", 34.241, 3.219, None)


def test_a_client_console_cut_at_its_traceback_is_the_clients(ingest_one):
    """bench/269: sglang.bench_serving's dataset totals and warm-up, the bar at 1000/1000, then
    ConnectionRefusedError: the client's file, whose run measured nothing (not a server crash)."""
    result, run = ingest_one(sample("bench", "269_"))
    assert result.sources[0].format == "bench"
    assert run.config()["bench.dataset_input_tokens"] == "296523"
    assert ids(run) == ["bench-failures"]


def test_unstreamed_burst_is_no_overload(ingest_one):
    """sglang/250: 128 prompts at rate inf with --disable-stream: TTFT 37300.18 ms is the E2E
    latency (37300.16 ms), not a queue, and the server ran them all at once."""
    _, run = ingest_one(sample("sglang", "250_"))
    assert "bench-overload" not in ids(run)


def test_server_stats_logged_among_a_block_are_the_servers(ingest_one, tmp_path):
    """bench/97's lines without the one the paste cut at a comma: vLLM's stats lines right under
    the client's result block (its `=` rule, a blank line) have a block row's `label: value`
    shape, their leader peeled, but are the server's lines (hold-out 13's bench/276 showed it)."""
    lines = sample("bench", "97_").read_text().splitlines()
    path = tmp_path / "block-then-stats.log"
    path.write_text("\n".join(line for line in lines if not line.startswith(", Running")) + "\n")
    _, run = ingest_one(path)
    assert run.table("stats").collect().height == 2
    assert not [line for r in bench(run) for line in r["block"] or [] if "Avg prompt throughput" in line]


def test_a_client_whose_requests_the_server_refused(ingest_one):
    """bench/287: benchmark_serving.py's command line, then the server's `"POST /chat/completions
    HTTP/1.1" 404 Not Found` and no result: the requests were turned away."""
    _, run = ingest_one(sample("bench", "287_"))
    (finding,) = diagnose(run)
    assert (finding.id, finding.metrics["problem"], finding.metrics["status"]) == ("bench-failures", "refused", 404)


def test_a_retokenized_gap_of_random_prompts_is_no_mismatch(ingest_one):
    """bench/288: 128,753 re-tokenized of 204,800 generated (37 %) on a healthy run of random
    prompts: under the mismatch threshold."""
    _, run = ingest_one(sample("bench", "288_"))
    assert ids(run) == []


def test_293_a_pasted_client_command_and_its_error_are_the_clients(ingest_one):
    """bench/293 (hold-out 15): genai-bench's command line, then its ValueError, no result."""
    _, run = ingest_one(sample("bench", "293_"))
    (f,) = diagnose(run)
    assert f.id == "bench-failures" and "It ended with `ValueError: No values found for metric 'tpot'." in f.verdict


def test_296_a_markdown_table_with_bold_cells_is_one_result_a_row(ingest_one):
    """bench/296 (hold-out 15): SpecForge's bench_eagle3 table, `|**Benchmark**|**Latency (ms)**|...`."""
    _, run = ingest_one(sample("bench", "296_"))
    rows = run.table("bench").sort("line_no").collect()
    assert rows["label"].to_list() == ["mtbench", "gsm8k", "humaneval", "math500"]
    assert rows["accept_length"].to_list() == [2.59, 3.13, 3.45, 3.52]
    assert rows["output_throughput"].to_list() == [234.52, 234.18, 304.63, 317.04]
    assert rows["e2e_mean"].to_list() == [461.65, 137.10, 309.11, 515.99]
    assert diagnose(run) == []


def test_295_a_table_without_outer_pipes_is_read_by_its_header(ingest_one):
    _, run = ingest_one(sample("bench", "295_"))
    rows = run.table("bench").sort("line_no").collect()
    assert rows["concurrency"].to_list()[:3] == [1.0, 1.0, 1.0] and rows["accept_length"].to_list()[:3] == [1.86, 2.2, 1.99]


def test_313_a_clients_initial_test_run_that_failed_is_the_clients(ingest_one):
    """bench/313 (hold-out 17): `max benchmark` dying on a reset connection in its own code."""
    _, run = ingest_one(sample("bench", "313_"))
    (f,) = diagnose(run)
    assert f.id == "bench-failures" and "ConnectionResetError: [Errno 104] Connection reset by peer" in f.verdict


def test_316_perf_analyzers_lost_requests_are_failures(ingest_one):
    _, run = ingest_one(sample("bench", "316_"))
    (f,) = diagnose(run)
    assert f.id == "bench-failures" and f.metrics["lines"] == 2


def test_325_a_sweep_past_the_knee_measures_the_queue(ingest_one):
    """bench/325 (hold-out 18): flat at ~1,045 tok/s from C=256 on, TTFT `39,891` to `640,807` ms."""
    _, run = ingest_one(sample("bench", "325_"))
    (f,) = diagnose(run)
    assert (f.id, f.metrics["knee_level"], f.metrics["queued_levels"]) == ("bench-overload", 64, [256, 1024, 4096])
    assert run.table("bench").sort("line_no").collect()["ttft_mean"].to_list()[-1] == 640807.0


def test_331_a_rate_just_above_capacity_with_a_queue_is_a_flood(ingest_one):
    """bench/331 (hold-out 19): 40/s offered, 35.36 served, TTFT 19 s against an ITL of 34 ms (no TPOT rows)."""
    _, run = ingest_one(sample("bench", "331_"))
    (f,) = diagnose(run)
    assert (f.id, f.metrics["request_rate"], f.metrics["request_throughput"]) == ("bench-overload", 40.0, 35.36)
