"""The server's Prometheus metrics as AIPerf 0.13 exported them (loganalyze/formats/server_metrics.py),
read from the exports AIPerf wrote against the real vLLM 0.32 of fixtures/engines/, into
the `metrics` table a `/metrics` scrape fills; a series that several files hold counts once."""

from __future__ import annotations

import importlib
from datetime import datetime

import polars as pl
import pytest

import loganalyze as la
from loganalyze import reader
from conftest import FIXTURES, sample
from loganalyze.diagnosis import diagnose

VLLM = FIXTURES / "engines" / "vllm-0.32"
EXPORT = VLLM / "aiperf" / "artifacts" / "server_metrics_export"
SERIES = 'engine="0",model_name="tiny-llama"'


def stat(run, name: str, which: str, labels: str = SERIES) -> list:
    """(source format's file suffix, value) of one statistic, per file."""
    rows = run.table("metrics").filter((pl.col("name") == name) & (pl.col("stat") == which)
                                       & (pl.col("labels") == labels)).collect()
    return sorted(rows["value"].to_list())


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Both exports of the `aiperf` case, ingested once for the tests that read them."""
    store = tmp_path_factory.mktemp("store")
    result = la.ingest([str(EXPORT.with_suffix(".json")), str(EXPORT.with_suffix(".csv"))], run="t", store=store)
    return result, la.open_run("t", store)


def test_json_and_csv_exports_read_alike(exports):
    result, run = exports
    assert [s.format for s in result.sources] == ["server-metrics", "server-metrics"]
    assert all(s.unparsed == 0 for s in result.sources)
    # AIPerf --concurrency 8 against --max-num-seqs 8: up to 8 running, none waiting.
    assert stat(run, "vllm:num_requests_running", "max") == [8.0, 8.0]
    assert stat(run, "vllm:num_requests_waiting", "max") == [0.0, 0.0]
    assert stat(run, "vllm:kv_cache_usage_perc", "max") == pytest.approx([0.0029, 0.002930045171529727])
    # Counters: the increase over the profiling phase, 150 requests of 256 tokens.
    assert stat(run, "vllm:generation_tokens", "total") == [38400.0, 38400.0]
    done = 'engine="0",finished_reason="length",model_name="tiny-llama"'
    assert stat(run, "vllm:request_success", "total", done) == [150.0, 150.0]
    assert stat(run, "vllm:e2e_request_latency_seconds_bucket", "total",
                'engine="0",le="0.5",model_name="tiny-llama"') == [121.0, 121.0]
    info = run.table("metrics").filter(pl.col("name") == "vllm:cache_config_info").collect()
    assert info["labels"].str.contains('num_gpu_blocks="8192"').all()


def test_only_the_json_says_when(exports):
    _, run = exports
    rows = run.table("metrics").filter(pl.col("name") == "vllm:num_requests_running").collect()
    windows = set(zip(rows["since"].to_list(), rows["ts"].to_list(), rows["endpoint"].to_list()))
    assert windows == {(datetime(2026, 12, 1, 13, 33, 6, 994005), datetime(2026, 12, 1, 13, 33, 50, 430089),
                        "127.0.0.1:8000"), (None, None, "127.0.0.1:8000")}


def test_one_server_seen_twice_counts_its_preemptions_once(ingest_one, tmp_path):
    """Two scrapes of the kv-pressure server, the second after two more preemptions: 57, not 112."""
    scrape = (VLLM / "kv-pressure" / "metrics.prom").read_text()
    assert 'vllm:num_preemptions_total{engine="0",model_name="tiny-llama"} 55.0' in scrape
    later = tmp_path / "later.prom"
    later.write_text(scrape.replace('model_name="tiny-llama"} 55.0', 'model_name="tiny-llama"} 57.0'))
    _, run = ingest_one(VLLM / "kv-pressure" / "metrics.prom", later)
    (kv,) = [f for f in diagnose(run) if f.id == "kv-pressure"]
    assert kv.metrics["scraped_evictions"] == 57


def test_an_export_and_a_scrape_of_one_server_name_one_series(ingest_one):
    """AIPerf drops a counter's `_total`; the series it names is the scrape's all the same."""
    _, run = ingest_one(EXPORT.with_suffix(".json"), EXPORT.with_suffix(".csv"), VLLM / "aiperf" / "metrics.prom")
    rows = run.table("metrics").filter(pl.col("name").str.contains(r"^vllm:num_preemptions(?:_total)?$")
                                       & pl.col("value").is_not_null()
                                       & (pl.col("stat").is_null() | (pl.col("stat") == "total"))).collect()
    assert rows.height == 3
    assert rows.select(pl.col("name").str.replace("_total$", ""), "labels").unique().height == 1


KV_EXPORT = VLLM / "aiperf-kv-pressure" / "artifacts" / "server_metrics_export"


def test_exported_gauges_alone_show_kv_pressure(ingest_one, tmp_path):
    """AIPerf's CSV export of the KV-pressure run without its preemption rows: p75 of KV usage
    0.9091 (a quarter of the samples at 0.9+) and up to 6 waiting are the verdict by themselves."""
    lines = KV_EXPORT.with_suffix(".csv").read_text().splitlines(keepends=True)
    cut = tmp_path / "server_metrics_export.csv"
    cut.write_text("".join(line for line in lines if "preemption" not in line))
    _, run = ingest_one(cut)
    (kv,) = diagnose(run)
    assert (kv.id, kv.severity, kv.confidence) == ("kv-pressure", "warning", "medium")
    assert kv.metrics["near_full_min"] == 0.25 and kv.metrics["waiting_max"] == 6.0
    assert kv.evidence[0].text.startswith("127.0.0.1:8000,gauge,vllm:kv_cache_usage_perc,ratio,0.5781")


def test_the_whole_export_adds_its_preemptions(ingest_one):
    _, run = ingest_one(KV_EXPORT.with_suffix(".json"), KV_EXPORT.with_suffix(".csv"))
    (kv,) = diagnose(run)
    assert (kv.id, kv.severity, kv.metrics["scraped_evictions"]) == ("kv-pressure", "critical", 60)


def test_low_exported_usage_is_no_kv_pressure(exports):
    """The healthy AIPerf run: KV usage at most 0.003, nothing waits."""
    assert not [f for f in diagnose(exports[1]) if f.id == "kv-pressure"]


def test_exported_gauges_alone_show_a_cap(ingest_one):
    """AIPerf --concurrency 16 against --max-num-seqs 4: running p25-max 4, waiting p50 12, KV 0.0015."""
    export = VLLM / "aiperf-capped" / "artifacts" / "server_metrics_export"
    _, run = ingest_one(export.with_suffix(".json"), export.with_suffix(".csv"))
    (cap,) = diagnose(run)
    assert (cap.id, cap.severity, cap.confidence, cap.metrics["cap"]) == ("concurrency-cap", "warning", "medium", 4)
    assert "waiting p50 12, max 12" in cap.verdict and "--max-num-seqs above 4" in cap.recommendation


def test_a_kv_bound_or_healthy_export_is_no_cap(ingest_one, exports):
    """KV pressure: running p50 2 of a max 8; healthy: running p50 0, nothing waits."""
    _, run = ingest_one(KV_EXPORT.with_suffix(".csv"))
    assert [f.id for f in diagnose(run)] == ["kv-pressure"]
    assert not diagnose(exports[1])


def test_aiperf_scrapes_jsonl_is_one_row_per_sample(ingest_one):
    """bench/93 (two lines of a real Dynamo run, quoted by AIPerf's tutorial): each line one
    scrape of one endpoint; samples as a /metrics scrape's rows, at the scrape's time, a
    histogram's buckets `<name>_bucket` with `le`, and its `_sum` and `_count`."""
    result, run = ingest_one(sample("bench", "93_"))
    (source,) = result.sources
    assert (source.format, source.lines_by_table) == ("server-metrics", {"metrics": 2})
    rows = run.table("metrics").collect()
    assert rows.height == 22
    ok = rows.filter(pl.col("name") == "dynamo_frontend_requests").row(0, named=True)
    assert (ok["value"], ok["endpoint"], ok["line_no"]) == (1000.0, "localhost:9007", 2)
    assert ok["labels"] == 'endpoint="chat_completions",model="openai/gpt-oss-20b",status="success"'
    assert str(ok["ts"]) == "2025-11-19 22:26:55.220757" and ok["metric_type"] is None
    ttft = rows.filter(pl.col("name") == "dynamo_frontend_time_to_first_token_seconds_bucket")
    assert ttft.filter(pl.col("labels").str.contains('le="0.1"'))["value"].to_list() == [835.0]
    assert rows.filter(pl.col("name") == "dynamo_component_request_duration_seconds_count")["value"].to_list() == [360.0]


EXPORTS = VLLM / "aiperf-exports" / "artifacts" / "server_metrics_export"


def test_the_parquet_export_is_one_row_per_sample(ingest_one):
    """AIPerf 0.13's server_metrics_export.parquet (--server-metrics-formats parquet) of the capped
    run: its 8,390 rows are 8,390 lines, each a `metrics` row as the JSONL's sample would be."""
    result, run = ingest_one(EXPORTS.with_suffix(".parquet"))
    (source,) = result.sources
    assert (source.format, source.lines, source.lines_by_table) == ("server-metrics", 8390, {"metrics": 8390})
    rows = run.table("metrics").collect()
    running = rows.filter(pl.col("name") == "vllm:num_requests_running").sort("ts")
    assert running["value"].to_list()[:5] == [0.0, 0.0, 1.0, 4.0, 4.0] and running["labels"][0] == SERIES
    assert (running["metric_type"][0], running["endpoint"][0], running["kind"][0]) == ("gauge", "127.0.0.1:8000",
                                                                                      "server_scrape")
    assert str(running["ts"][0]) == "2026-12-02 04:09:01.965977"
    latency = rows.filter(pl.col("name").str.starts_with("vllm:e2e_request_latency_seconds_"))
    last = latency.filter(pl.col("ts") == latency["ts"].max())
    assert last.filter(pl.col("name").str.ends_with("_count"))["value"].to_list() == [48.0]
    assert last.filter(pl.col("labels").str.contains('le="\\+Inf"'))["value"].to_list() == [48.0]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_one_record_a_line_is_read_batch_by_batch_with_the_same_rows(suffix, ingest_one, monkeypatch):
    """The scrapes are read one reader batch at a time (FileFormat.by_batch: memory one batch's,
    not the file's): in batches of ~64 KB the rows are those of the file read in one batch."""
    whole = ingest_one(EXPORTS.with_suffix(suffix), name="whole")[1].table("metrics").collect()
    source = importlib.import_module("loganalyze.ingestion.source")
    monkeypatch.setattr(source, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=64 * 1024))
    result, run = ingest_one(EXPORTS.with_suffix(suffix), name="batched")
    batched = run.table("metrics").collect()
    assert result.sources[0].lines_by_table == {"metrics": result.sources[0].lines}
    assert batched.height == whole.height > 8000
    assert batched.equals(whole)


def test_scrapes_alone_show_a_cap_at_the_moments_requests_wait(ingest_one):
    """The Parquet and the JSONL of one run (the same scrapes twice): running 4 with 4 waiting in 11
    of the 20 busy scrapes, counted once; the summary's p50 of waiting (0) could not show it."""
    _, run = ingest_one(EXPORTS.with_suffix(".parquet"), EXPORTS.with_suffix(".jsonl"))
    (cap,) = diagnose(run)
    assert (cap.id, cap.metrics["cap"], cap.metrics["capped_fraction"]) == ("concurrency-cap", 4, 0.55)
    assert "in 11 of the 20 scrapes where anything runs" in cap.verdict and "--max-num-seqs above 4" in cap.recommendation


def test_a_cut_parquet_file_is_a_one_line_error(ingest_one, tmp_path):
    cut = tmp_path / "server_metrics_export.parquet"
    cut.write_bytes(EXPORTS.with_suffix(".parquet").read_bytes()[:20000])
    with pytest.raises(la.LoganalyzeError, match="not a readable Parquet file"):
        ingest_one(cut)
