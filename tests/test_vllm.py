"""vLLM samples from public bug reports: the values each line holds, read back from the store."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import importlib
from conftest import ROOT, SAMPLES, mutate, sample
from loganalyze import metrics, reader
from loganalyze.diagnosis import diagnose
from loganalyze.ingestion.dispatch import parse_batch
from loganalyze.formats import vllm
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context
from loganalyze.formats.vllm_defaults import default_max_num_seqs
from test_line_kind_samples import frame_of

INGEST = importlib.import_module("loganalyze.ingestion.source")  # one input: reading, parsing, staging
VLLM = sorted((SAMPLES / "vllm").glob("*.log"))
BENCH = ("32_", "34_")  # `vllm bench serve` printouts: the benchmark format's files

# Lines per table for every server-log sample: all of them parse fully (no `unparsed`).
LINES = {
    "01_": {"requests": 2, "stats": 1, "events": 4},
    "02_": {"stats": 2},
    "03_": {"spec": 1, "stats": 1},
    "05_": {"stats": 4},
    "06_": {"spec": 3},
    "07_": {"spec": 1},
    "08_": {"events": 8},
    "09_": {"stats": 5, "requests": 1},
    "12_": {"stats": 3, "requests": 4},
    "14_": {"stats": 6},
    "15_": {"events": 14},
    "16_": {"events": 1},
    "18_": {"stats": 3, "requests": 6},
    "19_": {"requests": 2, "stats": 2, "events": 1},
    "22_": {"events": 7},
    "23_": {"events": 11},
    "25_": {"events": 11},
    "27_": {"events": 3},
    "28_": {"events": 6, "config": 3},
    "29_": {"events": 5},
    "31_": {"requests": 2, "stats": 2, "spec": 2},
    "36_": {"events": 13},
    "37_": {"events": 10},
    "38_": {"events": 8},
    "39_": {"config": 8, "events": 4},
    "40_": {"spec": 1},
}


@pytest.mark.parametrize("path", [p for p in VLLM if p.name[:3] in LINES or p.name.startswith(BENCH)], ids=lambda p: p.name[:2])
def test_every_sample_ingests_and_every_line_is_accounted(path, ingest_one):
    result, _ = ingest_one(path)
    src = result.sources[0]
    assert sum(src.lines_by_table.values()) + src.blank == src.lines
    if not path.name.startswith(BENCH):
        assert src.format == "vllm"
        assert src.lines_by_table == LINES[path.name[:3]]


def table(run, name: str, kind: str | None = None) -> pl.DataFrame:
    rows = run.table(name)
    if kind:
        rows = rows.filter(pl.col("kind") == kind)
    return rows.sort("line_no").collect()


def fields(run, kind: str) -> list[dict]:
    return [json.loads(f) for f in table(run, "events", kind)["fields"]]


def config(run) -> dict[tuple[str, str], str]:
    rows = table(run, "config")
    return {(o, k): v for o, k, v in zip(rows["origin"], rows["key"], rows["value"])}


def approx(values: list[float]) -> list:
    return [pytest.approx(v) for v in values]


# ---------------------------------------------------------------- periodic stats


def test_01_v0_027_stats_access_and_finished_requests(ingest_one):
    result, run = ingest_one(sample("vllm", "01_"))
    assert result.sources[0].version == "V0 0.2.7-0.4.2"
    row = table(run, "stats").row(0, named=True)
    assert (row["phase"], row["running"], row["swapped"], row["queued"]) == ("decode", 5, 0, 0)
    assert [row["prompt_throughput"], row["gen_throughput"], row["token_usage"]] == approx([1137.2, 193.7, 0.042])
    assert row["ts"] == datetime(row["ts"].year, 2, 5, 4, 53, 21)
    assert {"key": "CPU KV cache usage", "value": "0.0%"} in row["extra"]
    requests = table(run, "requests")
    assert requests["path"].to_list() == ["/v1/chat/completions"] * 2 and requests["status"].to_list() == [200, 200]
    done = fields(run, "request_lifecycle")
    assert [f["action"] for f in done] == ["Finished"] * 4
    assert done[0]["request_id"] == "cmpl-672a8058f6cb4d1d8f5ba5397af93575"


def test_02_v0_041_single_stream(ingest_one):
    _, run = ingest_one(sample("vllm", "02_"))
    stats = table(run, "stats")
    assert stats["gen_throughput"].to_list() == [0.1, 12.0]
    assert stats["token_usage"].to_list() == approx([0.001, 0.003])
    assert stats["running"].to_list() == [1, 1]


def test_05_v0_08_bracket_header_trailing_period(ingest_one):
    result, run = ingest_one(sample("vllm", "05_"))
    assert result.sources[0].version == "0.8+"
    stats = table(run, "stats")
    assert stats["running"].to_list() == [2] * 4 and stats["queued"].to_list() == [0] * 4
    assert stats["gen_throughput"].to_list() == [0.4] * 4
    assert stats["token_usage"].to_list() == approx([0.006] * 4)


def test_09_v1_073_no_engine_prefix_trailing_spaces(ingest_one):
    result, run = ingest_one(sample("vllm", "09_"))
    assert result.sources[0].version == "V1 0.7.3-0.8.2"
    stats = table(run, "stats")
    assert stats["running"].to_list() == [1, 4, 4, 4, 4]
    assert stats["queued"].to_list() == [0] * 5
    assert stats["token_usage"].to_list() == approx([0.013, 0.071, 0.084, 0.153, 0.224])
    assert stats["prompt_throughput"].to_list() == [926.3, 2155.8, 0.0, 1480.0, 1526.3]
    assert stats["cache_hit_rate"].to_list() == [0.0] * 5
    assert table(run, "requests")["port"].to_list() == [35706]


def test_12_v1_xpu_era_running1_waiting14(ingest_one):
    result, run = ingest_one(sample("vllm", "12_"))
    assert result.sources[0].version == "0.8.3+"
    stats = table(run, "stats")
    assert stats["running"].to_list() == [1, 1, 1] and stats["queued"].to_list() == [14, 14, 14]
    assert stats["token_usage"].to_list() == approx([0.765, 0.767, 0.768])
    assert stats["cache_hit_rate"].to_list() == approx([0.92] * 3)
    assert stats["gen_throughput"].to_list() == [5.4, 5.4, 5.5]
    assert stats["process"].unique().to_list() == ["APIServer pid=851"]
    assert stats["extra"][0].to_list() == [{"key": "KV device", "value": "GPU"}, {"key": "Engine", "value": "000"}]
    assert table(run, "requests")["path"].to_list() == ["/metrics"] * 4


def test_14_v1_kv_usage_climbing(ingest_one):
    _, run = ingest_one(sample("vllm", "14_"))
    stats = table(run, "stats")
    assert stats["running"].to_list() == [8] * 6
    assert stats["token_usage"].to_list() == approx([0.939, 0.943, 0.947, 0.950, 0.954, 0.958])
    assert stats["gen_throughput"].to_list() == [240.8, 241.6, 241.6, 240.8, 240.8, 240.0]


def test_18_v0_pending_grows_with_nothing_running(ingest_one):
    _, run = ingest_one(sample("vllm", "18_"))
    stats = table(run, "stats")
    assert stats["running"].to_list() == [2, 0, 0]
    assert stats["queued"].to_list() == [0, 12, 22]
    assert stats["gen_throughput"].to_list() == [0.4, 5.6, 0.0]
    paths = table(run, "requests")["path"].to_list()
    assert paths.count("/v1/chat/completions") == 3 and paths.count("/metrics") == 2 and "/health" in paths


def test_19_v0_running30(ingest_one):
    _, run = ingest_one(sample("vllm", "19_"))
    stats = table(run, "stats")
    assert stats["running"].to_list() == [30, 30]
    assert stats["token_usage"].to_list() == approx([0.016, 0.022])
    assert stats["gen_throughput"].to_list() == [1373.7, 1222.9]


def test_v1_later_fields_and_variants_parse_by_key():
    """0.7.1's missing comma, 0.20's Deferred, 0.32's KV fetch, 0.30's device label, DP aggregation."""
    lines = (
        "INFO 01-31 10:00:00 loggers.py:72] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 9.9 "
        "tokens/s, Running: 2 reqs, Waiting: 3 reqs GPU KV cache usage: 1.0%.",
        "(APIServer pid=1) INFO 05-08 16:26:39 [loggers.py:271] Engine 001: Avg prompt throughput: 10.0 tokens/s, "
        "Avg generation throughput: 20.0 tokens/s, Running: 4 reqs, Waiting: 5 reqs, Deferred: 2 reqs, KV fetch: 1 "
        "waiting to start, 2 in progress, 3 completed waiting, Preemptions: 7, XPU KV cache usage: 55.5%, Prefix "
        "cache hit rate: 12.5%, External prefix cache hit rate: 3.0%, MM cache hit rate: 40.0%",
        "INFO 05-08 16:26:49 [loggers.py:271] 2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg "
        "generation throughput: 2.0 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.0%",
    )
    got = parse_lines(lines).tables["stats"].sort("line_no")
    cols = ["running", "queued", "preempted", "token_usage", "cache_hit_rate", "gen_throughput"]
    assert got.select(cols).rows() == [
        (2, 3, None, pytest.approx(0.01), None, 9.9),
        (4, 5, 7, pytest.approx(0.555), pytest.approx(0.125), 20.0),
        (9, 0, None, pytest.approx(0.1), None, 2.0),
    ]
    extra = {e["key"]: e["value"] for e in got["extra"][1]}
    assert extra == {"Engine": "001", "Deferred": "2", "KV fetch waiting": "1", "KV fetch in progress": "2",
                     "KV fetch completed waiting": "3", "KV device": "XPU", "External prefix cache hit rate": "3.0%",
                     "MM cache hit rate": "40.0%"}
    assert {"key": "Engines aggregated", "value": "2"} in got["extra"][2].to_list()


# ---------------------------------------------------------------- speculative decoding


def test_03_v0_cumulative_spec_metrics_and_prefix_cache(ingest_one):
    _, run = ingest_one(sample("vllm", "03_"))
    spec = table(run, "spec").row(0, named=True)
    assert (spec["drafted"], spec["accepted"], spec["drafts"]) == (13311, 8547, 4437)
    assert spec["mean_accept_len"] == pytest.approx(10616 / (13311 / 3))  # 2.39 tokens per step
    assert spec["accept_rate"] == pytest.approx(0.642, abs=1e-3)
    cache = table(run, "stats").row(0, named=True)
    assert (cache["phase"], cache["cache_hit_rate"]) == ("prefix_cache", pytest.approx(0.9435))
    assert cache["extra"] == [{"key": "CPU prefix cache hit rate", "value": "0.00%"}]


def test_v0_spec_counters_become_intervals_across_batches_and_restarts():
    line = ("INFO 10-16 19:05:{:02d} metrics.py:367] Speculative metrics: Draft acceptance rate: 0.5, System "
            "efficiency: 0.5, Number of speculative tokens: 3, Number of accepted tokens: {}, Number of draft tokens: "
            "{}, Number of emitted tokens: {}.")
    ctx = Context(source="s", year=2024, base_date="2024-01-01")
    first = parse_lines((line.format(1, 60, 90, 70), line.format(2, 150, 210, 160)), ctx)
    # Next batch: the counters continue, then the engine restarts (they drop).
    second = parse_lines((line.format(3, 210, 300, 230), line.format(4, 9, 30, 15)), ctx)
    spec = pl.concat([first.tables["spec"], second.tables["spec"]])
    assert spec["accepted"].to_list() == [60, 90, 60, 9]
    assert spec["drafted"].to_list() == [90, 120, 90, 30]
    assert spec["drafts"].to_list() == [30, 40, 30, 10]
    assert spec["mean_accept_len"].to_list() == approx([70 / 30, 90 / 40, 70 / 30, 15 / 10])


def test_06_eagle3_zero_acceptance(ingest_one):
    result, run = ingest_one(sample("vllm", "06_"))
    assert result.sources[0].version == "0.10.2+"
    spec = table(run, "spec")
    assert spec["mean_accept_len"].to_list() == [1.0] * 3
    assert spec["accepted"].to_list() == [0] * 3 and spec["drafted"].to_list() == [495] * 3
    assert spec["drafts"].to_list() == [99] * 3  # 495 draft tokens / k=5
    assert spec["per_position"].to_list() == [[0.0] * 5] * 3
    assert spec["process"].to_list() == ["APIServer pid=6485"] * 3


def test_07_unreleased_format_with_rate_first(ingest_one):
    _, run = ingest_one(sample("vllm", "07_"))
    spec = table(run, "spec").row(0, named=True)
    assert (spec["accept_rate"], spec["mean_accept_len"]) == (pytest.approx(0.888), 5.44)
    assert (spec["accepted"], spec["drafted"], spec["drafts"]) == (262, 295, 59)
    assert spec["per_position"] == [0.983, 0.949, 0.915, 0.881, 0.712]


def test_31_dflash_k5_decaying_positions(ingest_one):
    _, run = ingest_one(sample("vllm", "31_"))
    spec = table(run, "spec")
    assert spec["mean_accept_len"].to_list() == [2.63, 2.66]
    assert spec["accepted"].to_list() == [768, 777] and spec["drafted"].to_list() == [2355, 2345]
    assert spec["drafts"].to_list() == [471, 469]
    assert spec["accept_rate"].to_list() == approx([0.326, 0.331])
    assert spec["per_position"][0].to_list() == [0.726, 0.467, 0.240, 0.134, 0.064]
    stats = table(run, "stats")
    assert stats["token_usage"].to_list() == approx([0.175, 0.189])
    assert stats["gen_throughput"].to_list() == [123.8, 124.5]


def test_40_dflash_k15(ingest_one):
    _, run = ingest_one(sample("vllm", "40_"))
    spec = table(run, "spec").row(0, named=True)
    assert (spec["mean_accept_len"], spec["accepted"], spec["drafted"], spec["drafts"]) == (2.37, 89, 975, 65)
    assert spec["accept_rate"] == pytest.approx(0.091)
    assert len(spec["per_position"]) == 15 and spec["per_position"][:5] == [0.6, 0.385, 0.215, 0.108, 0.062]
    assert spec["per_position"][5:] == [0.0] * 10


def test_v1_083_form_without_mean_length():
    got = parse_lines(("INFO 04-10 08:00:00 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: 45.0%, "
                       "Accepted: 90 tokens, Drafted: 200 tokens",)).tables["spec"].row(0, named=True)
    assert (got["accept_rate"], got["accepted"], got["drafted"]) == (pytest.approx(0.45), 90, 200)
    assert got["mean_accept_len"] is None and got["drafts"] is None


# ---------------------------------------------------------------- startup, capacity, config


def test_08_v1_07_load_compile_blocks(ingest_one):
    _, run = ingest_one(sample("vllm", "08_"))
    assert fields(run, "weights_loaded")[0]["weights_gib"] == 67.7229
    assert [f["elapsed_s"] for f in fields(run, "dynamo_compile")] == [12.88, 41.86]
    assert fields(run, "torch_compile") == [{"elapsed_s": 54.73}]
    assert fields(run, "gpu_blocks") == [{"device": "GPU", "gpu_blocks": 1381, "cpu_blocks": None}]
    assert fields(run, "max_concurrency") == [{"max_model_len": 2048, "max_concurrency": 10.79}]


def test_22_indented_worker_lines(ingest_one):
    _, run = ingest_one(sample("vllm", "22_"))
    loaded = table(run, "events", "weights_loaded")
    assert loaded["process"].to_list() == [f"VllmWorkerProcess pid={p}" for p in (6923, 6922, 6921)]
    assert [f["weights_gib"] for f in fields(run, "weights_loaded")] == [6.1138] * 3
    assert fields(run, "gpu_blocks") == [{"device": "GPU", "gpu_blocks": 10039, "cpu_blocks": 1310}]
    assert table(run, "events", "graph_capture_notice").height == 3


def test_23_v0_memory_profiling_block_is_one_event(ingest_one):
    _, run = ingest_one(sample("vllm", "23_"))
    profile = table(run, "events", "memory_profile")
    assert profile["span"].to_list() == [3]
    assert fields(run, "memory_profile")[0] == {
        "elapsed_s": 3.01, "total_gpu_memory_gib": 39.49, "gpu_memory_utilization": 0.8, "usable_gib": 31.6,
        "weights_gib": 2.88, "non_torch_gib": 0.09, "activation_peak_gib": 2.62, "kv_cache_gib": 26.0}
    assert fields(run, "weights_read") == [{"elapsed_s": 8.37}]
    assert [f["elapsed_s"] for f in fields(run, "weights_loaded")] == [9.005007, 9.12179]
    assert fields(run, "gpu_blocks") == [{"device": "cuda", "gpu_blocks": 10650, "cpu_blocks": 1638}]
    warnings = table(run, "events", "other")
    assert warnings["severity"].to_list() == ["warning"] * 2
    assert warnings["message"][0].startswith("WhisperProcessor did not return `BatchFeature`")


def test_25_v1_startup_kv_and_graph_bars(ingest_one):
    result, run = ingest_one(sample("vllm", "25_"))
    assert result.sources[0].version == "0.11.1+"
    assert fields(run, "weights_loaded") == [{"weights_gib": 2.0513, "elapsed_s": 27.200487}]
    assert fields(run, "torch_compile") == [{"elapsed_s": 19.69}]
    assert fields(run, "kv_cache_memory") == [{"kv_cache_gib": 33.31}]
    assert fields(run, "kv_cache_size")[0]["tokens"] == 1_587_648
    assert fields(run, "max_concurrency") == [{"max_model_len": 2048, "max_concurrency": 775.22}]
    bars = fields(run, "progress")
    assert [(b["done"], b["total"], b["percent"]) for b in bars] == [(51, 51, 100.0), (35, 35, 100.0)]
    assert bars[0]["what"] == "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"


def test_27_worker_prefixes_and_graph_capture(ingest_one):
    _, run = ingest_one(sample("vllm", "27_"))
    assert fields(run, "graph_capture_done") == [{"elapsed_s": 38.0, "mem_gib": 1.64}]
    assert table(run, "events", "graph_capture_done")["process"].to_list() == ["Worker_TP3_EP3 pid=2709393"]
    assert [f["addresses"] for f in fields(run, "custom_allreduce_graphs")] == [12784, 12784]


def test_28_v1_0101_kv_size_eager_and_cache_config_info(ingest_one):
    _, run = ingest_one(sample("vllm", "28_"))
    assert fields(run, "kv_cache_memory") == [{"kv_cache_gib": 112.61}]
    assert fields(run, "kv_cache_size")[0]["tokens"] == 922_496
    assert fields(run, "max_concurrency") == [{"max_model_len": 40_000, "max_concurrency": 23.06}]
    assert fields(run, "engine_init") == [{"elapsed_s": 1.06, "compile_s": None}]
    assert fields(run, "cache_config_info") == [{"engine": "000", "engines": None, "gpu_blocks": 57656}]
    cfg = config(run)
    assert cfg[("engine", "enforce_eager")] == "True"
    assert cfg[("server", "supported_tasks")] == "['generate']"
    assert cfg[("model_generation_config", "default_sampling.temperature")] == "0.6"
    assert table(run, "events", "other")["severity"].to_list() == ["warning"]


def test_29_k8s_box_around_every_line(ingest_one):
    result, run = ingest_one(sample("vllm", "29_"))
    assert result.sources[0].version == "0.8+"
    assert fields(run, "torch_compile") == [{"elapsed_s": 28.77}]
    profile = fields(run, "memory_profile")[0]
    assert (profile["elapsed_s"], profile["gpu_memory_utilization"], profile["kv_cache_gib"]) == (34.26, 0.9, 56.18)
    assert fields(run, "gpu_blocks") == [{"device": "cuda", "gpu_blocks": 7191, "cpu_blocks": 512}]


def test_39_version_cli_non_default_args_and_chunked_prefill(ingest_one):
    _, run = ingest_one(sample("vllm", "39_"))
    cfg = config(run)
    assert (cfg[("server", "engine")], cfg[("server", "engine_version")]) == ("vllm", "0.10.0")
    assert cfg[("cli", "model")] == "/models/gemma-3-27b-it-FP8-Dynamic/"
    assert (cfg[("cli", "tensor_parallel_size")], cfg[("cli", "max_model_len")]) == ("2", "1024")
    assert cfg[("non_default_args", "gpu_memory_utilization")] == "0.8"
    # The terminal wrapped this line: the wrap marker `$` replaced a character of the key.
    assert cfg[("non_default_args", "max_mod$l_len")] == "1024"
    assert (cfg[("engine", "max_model_len")], cfg[("engine", "max_num_batched_tokens")]) == ("1024", "2048")
    assert cfg[("engine", "platform")] == "cuda"
    warning = table(run, "events", "python_warning").row(0, named=True)
    assert (warning["span"], json.loads(warning["fields"])["category"]) == (3, "FutureWarning")
    # max_num_seqs is not in the log: vLLM 0.10.0's default depends on the GPU's memory.
    assert default_max_num_seqs("0.10.0") is None
    assert default_max_num_seqs("0.10.0", gpu_mem_gb=44.0) == 256


def test_engine_config_dump_with_speculative_config():
    got = parse_lines((
        "INFO 08-11 10:45:30 [core.py:74] Initializing a V1 LLM engine (v0.10.1) with config: model='/m', "
        "speculative_config=SpeculativeConfig(method='eagle3', model='/d', num_spec_tokens=5), tokenizer='/m', "
        "tensor_parallel_size=2, enforce_eager=False, "
        "compilation_config={\"level\":3,\"splitting_ops\":[\"a\", \"b\"]}",
        "INFO 08-11 10:45:20 [cli_args.py:261] non-default args: {'model': '/m', 'max_num_seqs': 48, "
        "'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 5}}",
    )).tables["config"]
    cfg = {(o, k): (v, t) for o, k, v, t in got.select("origin", "key", "value", "value_type").rows()}
    assert cfg[("engine_config", "engine_version")] == ("0.10.1", "str")
    assert cfg[("engine_config", "engine")] == ("vllm", "str")
    assert cfg[("engine_config", "speculative_config.method")] == ("eagle3", "str")
    assert cfg[("engine_config", "speculative_config.num_spec_tokens")] == ("5", "int")
    assert cfg[("engine_config", "tensor_parallel_size")] == ("2", "int")
    assert cfg[("engine_config", "compilation_config")][1] == "dict"
    assert cfg[("non_default_args", "max_num_seqs")] == ("48", "int")
    assert cfg[("non_default_args", "speculative_config.num_speculative_tokens")] == ("5", "int")


@pytest.mark.parametrize("version, gpu, v0, device, expected", [
    ("0.6.3", None, False, None, 256),
    ("0.8.2", None, False, None, 1024),
    ("0.8.2", None, True, None, 256),
    ("0.9.0", 80.0, False, None, 1024),
    ("0.9.0", 80.0, False, "NVIDIA A100-SXM4-80GB", 1024),
    ("0.10.0", 80.0, False, "NVIDIA A100-SXM4-80GB", 256),
    ("v0.19.1rc1", 141.0, False, "NVIDIA H200", 1024),
    ("0.20.0", 24.0, False, None, 256),
    ("0.20.0", None, False, None, None),
    (None, 80.0, False, None, None),
    ("unknown", 80.0, False, None, None),
])
def test_default_max_num_seqs(version, gpu, v0, device, expected):
    assert default_max_num_seqs(version, gpu, v0=v0, device_name=device) == expected


# ---------------------------------------------------------------- warnings and errors


def test_15_preemption_then_rank_traceback(ingest_one):
    _, run = ingest_one(sample("vllm", "15_"))
    assert fields(run, "preemption") == [{"request_id": "147", "mode": "RECOMPUTE", "cumulative": 1}]
    tb = table(run, "events", "traceback").row(0, named=True)
    assert (tb["line_no"], tb["span"], tb["rank"], tb["severity"]) == (2, 13, "0", "error")
    assert tb["message"].endswith("step_outputs = self.llm_engine.step()")


def test_16_preemption_without_cumulative_count(ingest_one):
    _, run = ingest_one(sample("vllm", "16_"))
    assert fields(run, "preemption") == [{"request_id": "127", "mode": "RECOMPUTE", "cumulative": None}]
    assert table(run, "events")["severity"].to_list() == ["warning"]


def test_36_engine_dead_and_enginecore_traceback(ingest_one):
    _, run = ingest_one(sample("vllm", "36_"))
    events = table(run, "events")
    assert events.select("kind", "severity", "span").rows() == [
        ("engine_dead", "critical", 1), ("process_crash", "critical", 1), ("traceback", "error", 11)]
    assert events["process"].to_list() == ["APIServer pid=1", "EngineCore pid=104", "EngineCore pid=104"]
    assert "EngineDeadError" in events["message"][0]


def test_37_nccl_error_in_worker_init(ingest_one):
    _, run = ingest_one(sample("vllm", "37_"))
    assert [f["nccl_version"] for f in fields(run, "nccl_version")] == ["2.20.5"] * 5
    assert table(run, "events", "nccl_library").height == 4
    err = table(run, "events", "nccl_error").row(0, named=True)
    assert (err["severity"], err["process"]) == ("critical", "VllmWorkerProcess pid=761")
    assert json.loads(err["fields"]) == {"worker": "VllmWorkerProcess", "method": "init_device",
                                         "nccl_error": "unhandled cuda error"}


def test_38_ray_traceback_cut_mid_way_is_one_event(ingest_one):
    _, run = ingest_one(sample("vllm", "38_"))
    tb = table(run, "events").row(0, named=True)
    assert (tb["kind"], tb["span"], tb["level"]) == ("traceback", 8, "ERROR")
    assert tb["process"] == "RayWorkerWrapper pid=67451, ip=10.0.0.1"


def test_oom_and_kv_cache_insufficient_fields():
    got = parse_lines((
        "(EngineCore pid=104) ERROR 05-05 12:36:58 [core.py:1140] torch.OutOfMemoryError: CUDA out of memory. Tried "
        "to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 37.12 MiB is free.",
        "ERROR 04-01 10:00:00 [core.py:390] ValueError: To serve at least one request with the models's max seq len "
        "(131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 GiB). "
        "Based on the available memory, the estimated maximum model length is 77824. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    )).tables["events"].sort("line_no")
    assert got["kind"].to_list() == ["oom", "kv_cache_insufficient"]
    assert json.loads(got["fields"][0]) == {"tried": "50.00 MiB", "gpu_index": "0", "capacity": "23.56 GiB",
                                            "free": "37.12 MiB"}
    assert json.loads(got["fields"][1]) == {"max_model_len": 131072, "kv_tokens": None, "needed_gib": 16.0,
                                            "available_gib": 9.5, "max_len_possible": 77824}


# ---------------------------------------------------------------- headers, timestamps, batches


def parse_lines(lines: tuple[str, ...], ctx: Context | None = None):
    return parse(vllm.FORMAT, frame_of(lines), ctx or Context(source="t", year=2026, base_date="2026-01-01"))


def test_custom_headers_still_parse_by_message():
    got = parse_lines((
        "2024-12-20 15:18:19 - vllm.engine.metrics - INFO - Avg prompt throughput: 1.0 tokens/s, Avg generation "
        "throughput: 2.0 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 4 reqs, GPU KV cache usage: 5.0%, "
        "CPU KV cache usage: 0.0%.",
        "Running: 6 reqs, Waiting: 7 reqs, GPU KV cache usage: 8.0% (loggers.py:118)",
    )).tables["stats"].sort("line_no")
    assert got.select("running", "queued", "token_usage").rows() == [(3, 4, 0.05), (6, 7, 0.08)]
    assert got["ts"][0] == datetime(2024, 12, 20, 15, 18, 19) and got["level"][0] == "INFO"


BANNER = (
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299] ",
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299]        █     █     █▄   ▄█",
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.19.1rc1",
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299]   █▄█▀ █     █     █     █  model   Qwen/Qwen3-8B",
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
    "(APIServer pid=1) INFO 05-08 16:26:39 [utils.py:299] ",
)


def test_015_banner_gives_version_and_model():
    got = parse_lines(BANNER)
    cfg = dict(zip(got.tables["config"]["key"], got.tables["config"]["value"]))
    assert cfg == {"engine": "vllm", "engine_version": "0.19.1rc1", "model": "Qwen/Qwen3-8B"}
    assert got.lines == {"config": 5}  # the empty first line of the message stays unparsed


def test_year_rollover_stays_monotonic_across_batches(tmp_path, ingest_one, monkeypatch):
    stats = ("INFO {} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%")
    stamps = ["12-31 23:59:40", "12-31 23:59:50", "12-31 23:59:59", "01-01 00:00:09", "01-01 00:00:19"]
    log = tmp_path / "newyear.log"
    log.write_text("\n".join(stats.format(s) for s in stamps) + "\n")
    monkeypatch.setattr(INGEST, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=400))
    _, run = ingest_one(log, year=2025)
    ts = table(run, "stats")["ts"].to_list()
    assert [t.year for t in ts] == [2025, 2025, 2025, 2026, 2026]
    assert ts == sorted(ts)


def test_small_batches_give_the_same_tables(tmp_path, ingest_one, monkeypatch):
    """Tracebacks, memory-profile blocks and V0 counters cut by batch boundaries still add up."""
    whole, run_whole = ingest_one(sample("vllm", "36_"), name="whole")
    monkeypatch.setattr(INGEST, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=600))
    small, run_small = ingest_one(sample("vllm", "36_"), name="small")
    assert small.sources[0].lines_by_table == whole.sources[0].lines_by_table == {"events": 13}
    assert table(run_small, "events", "traceback")["span"].sum() == 11


# ---------------------------------------------------------------- fuzzing

LINES_POOL = [line for p in VLLM for line in p.read_text().splitlines() if line.strip()] + [
    s for kind in vllm.FORMAT.kinds for s in kind.samples]


NOISE = st.sampled_from(list(",:%.[]() █x9-\t'\"{}nan|│"))


@st.composite
def mutated(draw) -> str:
    return mutate(draw, draw(st.sampled_from(LINES_POOL)), st.text(alphabet=NOISE, max_size=6), "nan")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated(), min_size=1, max_size=25))
def test_fuzzed_lines_never_raise_and_are_all_accounted(lines):
    lines = [line for line in lines if line.strip()]
    if not lines:
        return
    frame = frame_of(lines)  # a pool sample may span several lines
    _, counts = parse_batch(frame, vllm.FORMAT, Context(source="fuzz", year=2026, base_date="2026-01-01"))
    assert sum(sum(n.values()) for n in counts.values()) == frame.height


def _year_end_log(path: Path, v0_from: int | None = None) -> Path:
    """Stats lines every 5 s across New Year (with V0 spec counters from line `v0_from` on)."""
    stats = ("INFO {} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: {}.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%")
    spec = ("INFO {} metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, "
            "Number of speculative tokens: 3, Number of accepted tokens: {}, Number of draft tokens: {}, "
            "Number of emitted tokens: {}.")
    start, lines = datetime(2025, 12, 31, 23, 40), []
    for i in range(480):
        stamp = (start + timedelta(seconds=5 * i)).strftime("%m-%d %H:%M:%S")
        lines.append(stats.format(stamp, i))
        if v0_from is not None and i >= v0_from:
            lines.append(spec.format(stamp, 100 * i, 160 * i, 120 * i))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("v0_from", [None, 300, 0])
def test_batches_parsed_side_by_side_give_the_tables_of_parsing_in_order(tmp_path, ingest_one, monkeypatch, v0_from):
    """Year-less timestamps and V0 counters carry from batch to batch; batches parsed on their
    own are checked against that state, and those that would differ are parsed again in order:
    the tables are those of parsing every batch in order (New Year at line 241; V0 counters
    from the start, from the middle, or not at all)."""
    log = _year_end_log(tmp_path / "year-end.log", v0_from)
    monkeypatch.setattr(INGEST, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=3000))
    _, side_by_side = ingest_one(log, name="side", year=2025)
    monkeypatch.setattr(importlib.import_module("loganalyze.ingestion.pipeline"), "settle", lambda state, alone: False)  # every batch in order
    _, in_order = ingest_one(log, name="order", year=2025)
    for name in ("stats", "spec"):
        got, want = table(side_by_side, name), table(in_order, name)
        assert got.drop("source").equals(want.drop("source")), name
    ts = table(side_by_side, "stats")["ts"]
    assert ts.is_sorted() and ts.dt.year().to_list() == [2025] * 240 + [2026] * 240
    if v0_from is not None:
        spec = table(side_by_side, "spec").sort("line_no")
        assert spec.height == 480 - v0_from and spec["accepted"][1:].unique().to_list() == [100]  # per interval


def test_settle_takes_a_batch_parsed_alone_only_where_order_would_not_change_it():
    from loganalyze.formats.timestamps import settle

    key, day = ("years", "vllm", "s"), datetime(2025, 6, 1)
    state: dict = {}
    assert settle(state, {key: {"first": day, "last": day, "years": 0}}) and state == {key: {"last": day, "years": 0}}
    assert settle(state, {key: {"first": day + timedelta(days=100), "last": day, "years": 0}})
    assert not settle(state, {key: {"first": day + timedelta(days=200), "last": day, "years": 0}})  # a year rolled
    assert not settle({key: {"last": day, "years": 1}}, {key: {"years": 0}})  # after New Year: offsets differ
    assert not settle({}, {("carry", "vllm", "spec_v0", "s"): {"last": {}}})  # counters carried over


@pytest.mark.parametrize("fail_at", [1, 2, 4, 6, 9])
def test_an_error_while_batches_wait_their_turn_stops_the_ingest(tmp_path, monkeypatch, fail_at):
    """After a batch fails the check, later batches wait on parse threads for the ones before
    them; an error then ends the ingest with that error, and nobody waits forever."""
    import threading

    import loganalyze as la

    log = _year_end_log(tmp_path / "year-end.log", v0_from=0)  # V0 counters: in order from batch 0
    monkeypatch.setattr(INGEST, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=3000))
    real, calls = INGEST.parse_batch, []

    def failing(frame, fmt, ctx):
        calls.append(1)
        if len(calls) == fail_at:
            raise RuntimeError("disk on fire")
        return real(frame, fmt, ctx)

    monkeypatch.setattr(INGEST, "parse_batch", failing)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            la.ingest([log], run="r", store=tmp_path / "s", year=2025)
        except BaseException as e:  # the test looks at it below
            raised.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "ingest hung"
    assert [str(e) for e in raised] == ["disk on fire"]
    assert not (tmp_path / "s" / "catalog.json").exists() or "r" not in json.loads((tmp_path / "s" / "catalog.json").read_text())["runs"]


def test_vllm_032_startup_recorded_here(ingest_one):
    """A real vLLM 0.32 server log (fixtures/engines): the startup hint 'Restart vllm serve with
    --enable-scale-out ...' is prose, not a command line; V1 prints 'init engine ... took'."""
    _, run = ingest_one(ROOT / "fixtures" / "engines" / "vllm-0.32" / "healthy" / "server.log")
    assert run.config()["model"] == "/tmp/rec/model"
    s = run.metrics()["startup"].summary
    assert (s["engine_init_s"], s["load_s"], s["ready"], s["still_loading"]) == (9.6, 0.0, True, False)


def test_89_pyspy_dump_of_an_engine_waiting_on_its_workers(ingest_one):
    """A py-spy dump alone (the header and MainThread): a hang, and the engine is not the
    stuck process: it waits for the workers' answer on the shared-memory queue."""
    _, run = ingest_one(sample("vllm", "89_"))
    dumps = run.table("events").filter(pl.col("kind") == "stack_dump").sort("line_no").collect()
    assert dumps.select("line_no", "span").rows() == [(1, 2), (4, 8)]  # blank lines are no one's
    fields = dumps["fields"].str.json_decode()
    assert fields.struct.field("state").to_list() == [None, "idle"]
    found = diagnose(run)
    assert [f.id for f in found] == ["hang"]
    assert "waiting for a message from another process" in found[0].verdict
    assert found[0].metrics["stuck_in"].startswith("poll (zmq/sugar/poll.py:106) <- poll (zmq/sugar/socket.py:1062)")


def test_a_dump_after_a_fatal_error_is_the_crash_not_a_hang(ingest_one, tmp_path):
    """faulthandler prints the same thread blocks when a process dies of a signal: those
    belong to the crash (the lines are CPython's own format)."""
    log = tmp_path / "segv.log"
    log.write_text("INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB\n"
                   "Fatal Python error: Segmentation fault\n\n"
                   "Current thread 0x00007f3c2a5fe740 (most recent call first):\n"
                   '  File "/usr/lib/python3.10/site-packages/torch/cuda/graphs.py", line 88 in capture_end\n'
                   '  File "/workspace/vllm/worker/model_runner.py", line 1535 in capture_model\n')
    _, run = ingest_one(log)
    kinds = run.table("events").sort("line_no").collect()["kind"].to_list()
    assert kinds == ["weights_loaded", "fatal_error", "stack_dump"]
    assert [f.id for f in diagnose(run)] == ["crash"]


def test_74_offline_spec_decode_summary_is_one_spec_row(ingest_one):
    """examples/offline_inference/spec_decode.py's printed totals: one spec row, k from the positions."""
    _, run = ingest_one(sample("vllm", "74_"))
    row = run.table("spec").collect().row(0, named=True)
    assert (row["drafts"], row["drafted"], row["accepted"], row["mean_accept_len"]) == (20468, 204680, 48266, 3.36)
    assert row["accept_rate"] == pytest.approx(48266 / 204680)
    assert row["per_position"][:3] == [0.71, 0.5, 0.36] and len(row["per_position"]) == 10
    assert run.metrics()["speculative"].summary["steps"] == 10


def test_the_first_offline_summary_form_without_totals(ingest_one, tmp_path):
    """The example's first form printed only the mean length and `acceptance at token i:r`."""
    log = tmp_path / "eagle.log"
    log.write_text("-" * 50 + "\nmean acceptance length: 2.10\n" + "-" * 50 + "\n"
                   "acceptance at token 0:0.62\nacceptance at token 1:0.33\nacceptance at token 2:0.15\n")
    _, run = ingest_one(log)
    row = run.table("spec").collect().row(0, named=True)
    assert (row["mean_accept_len"], row["per_position"], row["drafts"]) == (2.10, [0.62, 0.33, 0.15], None)
    assert row["accept_rate"] == pytest.approx((0.62 + 0.33 + 0.15) / 3)


def test_77_ray_worker_traceback_after_a_message_that_looks_like_a_frame(ingest_one):
    """Ray's own format (`<stamp>\\tERROR worker.py:861 -- Exception raised in creation task:`):
    the message line looks like a traceback's continuation, so the cut traceback starts at
    the first frame after it; the vLLM frames make the file vLLM's."""
    result, run = ingest_one(sample("vllm", "77_"))
    assert result.sources[0].format == "vllm"
    ev = run.table("events").sort("line_no").collect()
    assert ev.select("line_no", "kind", "span").rows() == [(1, "other", 1), (2, "traceback", 8)]
    crash = next(f for f in diagnose(run) if f.id == "crash")
    assert "_init_distributed_environment, wrapper, all_reduce" in crash.verdict


def test_70_early_v1_core_stats_line(ingest_one):
    """V1 0.7.0's engine core printed `RUNNING: 306 | WAITING: 628` before the loggers' line."""
    _, run = ingest_one(sample("vllm", "70_"))
    row = run.table("stats").collect().row(0, named=True)
    assert (row["line_no"], row["phase"], row["running"], row["queued"]) == (7, "decode", 306, 628)


def test_ngram_configured_that_never_drafts_is_idle_not_slow(ingest_one):
    """A recorded vLLM 0.32 run: ngram k=4, sampled output, 45 busy stats intervals and not
    one SpecDecoding line. An info note, never an acceptance or break-even verdict."""
    _, run = ingest_one(ROOT / "fixtures" / "engines" / "vllm-0.32" / "ngram-no-drafts")
    found = {f.id: f for f in diagnose(run)}
    assert found["spec-idle"].severity == "info" and found["spec-idle"].metrics == {
        "algorithm": "ngram", "busy_intervals": 45}
    assert not {"low-acceptance", "spec-below-break-even", "spec-k-too-high"} & set(found)


@pytest.mark.parametrize("name, free, total", [("102_", 3.22, 4.0), ("103_", 31.44, 47.38)])
def test_free_memory_below_the_utilization_at_startup_is_memory_held_elsewhere(ingest_one, name, free, total):
    """vLLM V1 checks free memory against --gpu-memory-utilization before it loads anything."""
    _, run = ingest_one(sample("vllm", name))
    (f,) = [f for f in diagnose(run) if f.id == "oom"]
    assert f.title == "GPU memory already in use at startup (configuration)"
    assert (f.metrics["free_gib"], f.metrics["total_gib"]) == (free, total) and f.metrics["phase"] == "startup"


def test_120_the_request_log_line_is_typed(ingest_one):
    """vllm#16361: V1 0.8's `Received request <id>: prompt: '...', params: SamplingParams(...)`."""
    _, run = ingest_one(sample("vllm", "120_"))
    assert "unparsed" not in run.tables()
    (row,) = run.table("events").filter(pl.col("kind") == "request_received").collect().to_dicts()
    assert json.loads(row["fields"]) == {"request_id": "chatcmpl-67ed206b1edc4811911bcc917c0a0f72", "max_tokens": 8174}


def test_129_mooncake_glog_lines_alone_are_a_kv_transfer_finding_of_low_confidence(ingest_one):
    """vllm-ascend#9747: only Mooncake's `E20260530 21:16:47.670934 ... tcp_transport.cpp:175] Session::writeBody
    failed ... Bad address` (glog 0.7 prints the year): the transfer engine failed, how many requests is unknown."""
    _, run = ingest_one(sample("vllm", "129_"))
    ev = run.table("events").filter(pl.col("kind") == "transfer_error").collect()
    assert ev.height == 4 and ev["ts"][0] == datetime(2026, 5, 30, 21, 16, 47, 670934) and ev["level"][0] == "ERROR"
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity, finding.confidence) == ("kv-transfer", "warning", "low")
    assert "4 failed transfer(s)" in finding.title and "not known" in finding.verdict


def test_130_nixl_expired_kv_blocks_are_a_kv_transfer_failure(ingest_one):
    """vllm#25562: the prefill side releases KV blocks that 0 decode workers read within 120 s."""
    _, run = ingest_one(sample("vllm", "130_"))
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity, finding.metrics["requests"]) == ("kv-transfer", "critical", 5)
    assert "never read the KV cache" in finding.verdict and "HTTP 500" not in finding.verdict
    assert "VLLM_NIXL_ABORT_REQUEST_TIMEOUT" in finding.recommendation


def test_a_burst_served_within_the_next_interval_is_no_cap(ingest_one, tmp_path):
    """vllm/139 (hold-out 5): 17 running and 183 waiting at 0.9 % KV is a cap when nothing
    else is known, but the next stats line shows the queue empty: the burst was admitted
    within one interval, so no cap held it back."""
    real = (ROOT / "fixtures/real/vllm").glob("139_*.log")
    stats = [ln for ln in next(real).read_text().splitlines() if "Engine 000:" in ln]
    for lines, capped in ((stats[:1], True), (stats, False)):
        path = tmp_path / f"{len(lines)}.log"
        path.write_text("\n".join(lines) + "\n")
        _, run = ingest_one(path, name=f"r{len(lines)}")
        assert ("concurrency-cap" in [f.id for f in diagnose(run)]) is capped


def test_v1_preemptions_are_read_from_their_resumption(ingest_one):
    """vllm/128 (hold-out 4): V1 logs `Preempted request X has been resumed!` and nothing when it
    preempts; two such lines are two preemptions, a KV cache that ran out (no stats lines: medium)."""
    _, run = ingest_one(next((ROOT / "fixtures/real/vllm").glob("128_*.log")))
    (f,) = [f for f in diagnose(run) if f.id == "kv-pressure"]
    assert f.metrics["evictions"] == 2 and f.confidence == "medium" and "no stats lines" in f.verdict


@pytest.mark.parametrize("name, quoted", [
    # inside a traceback: the error line, not the frame the event starts with
    (("sglang", "64_"), "RuntimeError: CUDA error: out of memory"),
    # a paste cut inside the message's parentheses: the open paren is dropped
    (("vllm", "97_"), "ValueError: The model's max seq len (30000) is larger than the maximum number of tokens that "
                      "can be stored in KV cache"),
])
def test_oom_quotes_the_line_that_says_what_ran_out(name, quoted, ingest_one):
    _, run = ingest_one(sample(*name))
    (f,) = [f for f in diagnose(run) if f.id == "oom"]
    assert f"the first: {quoted}" in f.verdict and "Traceback" not in f.verdict and "()" not in f.verdict


@pytest.mark.parametrize("running, cap", [(256, 256), (1024, 1024), (200, None)])
def test_a_plateau_at_a_default_max_num_seqs_is_the_default_even_without_a_release(running, cap, ingest_one,
                                                                                   tmp_path):
    """The first line of vllm/46 (a prefill ramp: 10 running, 90 waiting, KV 19 %) with running
    set to a value vLLM's default max_num_seqs takes: with no release or config in the log, the
    plateau is that default (low confidence: one line); at any other value one line decides nothing."""
    line = sample("vllm", "46_").read_text().splitlines()[0]
    path = tmp_path / "one.log"
    path.write_text(line.replace("Running: 10 reqs", f"Running: {running} reqs") + "\n")
    _, run = ingest_one(path, name=f"r{running}")
    assert metrics.compute(run)["concurrency"].summary["cap"] == cap
    found = {f.id: f for f in diagnose(run)}
    if cap is None:
        assert "concurrency-cap" not in found
    else:
        f = found["concurrency-cap"]
        assert (f.confidence, f.metrics["cap_source"]) == ("low", "default of some release")
        assert "No server configuration or release in the log" in f.verdict


def test_141_a_queue_behind_a_preemption_is_memory_not_a_stall(ingest_one):
    """vllm#546 (0.6.3): `Running: 2 reqs, ... Pending: 98 reqs, GPU KV cache usage: 73.8%` then 86.1 %, at
    7,220 tok/s, and `Sequence group ... is preempted by PreemptionMode.SWAP mode because there is not enough
    KV cache space`: V0 counts sequence groups, each of many sequences; the preemption says the cache is full."""
    _, run = ingest_one(sample("vllm", "141_"))
    assert table(run, "stats")["queued"].to_list() == [98, 98]
    found = diagnose(run)
    assert [f.id for f in found] == ["kv-pressure"] and "1 request(s) retracted or preempted" in found[0].verdict


def test_142_ctrl_c_echo_and_uvicorn_waiting_for_background_tasks_are_the_shutdown(ingest_one):
    """vllm#1879 (0.2.4): the KV cache fills to 97.3 % with one request, then the user's Ctrl-C:
    `^CINFO:     Shutting down` (the terminal's `^C` glued before uvicorn's line) and `INFO:     Waiting for
    background tasks to complete. (CTRL+C to force quit)`."""
    result, run = ingest_one(sample("vllm", "142_"))
    assert result.sources[0].unparsed == 0
    assert table(run, "events", "uvicorn")["line_no"].to_list() == [5, 6]
    assert [f.id for f in diagnose(run)] == ["kv-pressure"]


def test_149_kv_transfer_metrics_lines_are_typed_and_zero_transfers_are_quiet(ingest_one):
    """vllm#20443 (the PR's sample): `KV Transfer metrics: KVTransferAggregatedStats(avg_transfer_durations=0.0,
    avg_bytes_transferred=0.0, num_blocks_transferred=0, num_successful_transfers=0)` after each idle stats line."""
    result, run = ingest_one(sample("vllm", "149_"))
    assert result.sources[0].unparsed == 0
    assert [f["successful"] for f in fields(run, "kv_transfer_stats")] == [0, 0]
    assert diagnose(run) == []


def test_a_queue_behind_thousands_of_tokens_a_second_is_no_stall(ingest_one, tmp_path):
    """vllm/141's two stats lines (2 running, 98 pending, ~7,200 tok/s) without its preemption
    line: a stalled scheduler does not generate 3,600 tok/s per running request, so no hang."""
    lines = sample("vllm", "141_").read_text().splitlines()
    path = tmp_path / "stats.log"
    path.write_text("\n".join(line for line in lines if "preempted" not in line) + "\n")
    _, run = ingest_one(path)
    stats = run.table("stats").collect()
    assert stats["running"].to_list() == [2, 2] and stats["queued"].to_list() == [98, 98]
    assert "hang" not in {f.id for f in diagnose(run)}


def test_no_slow_decode_from_a_full_cache(ingest_one):
    """vllm/216 (hold-out 13): 7 running at 94-100 % KV with a request waiting, then a worker's
    kernel error: the throughput of those intervals counts evictions, no decode step."""
    _, run = ingest_one(sample("vllm", "216_"))
    assert [f.id for f in diagnose(run)] == ["crash", "kv-pressure"]


# ---- hold-out 14 ----

def test_ray_data_actor_tag_two_brackets_deep_and_a_broadcast_timeout(ingest_one):
    """vllm/227: `(MapWorker(MapBatches(vLLMEngineActor)) pid=1202, ip=10.0.0.1)` behind Ray's
    stamp: peeled, so the engine's traceback is read; its shm_broadcast read timed out after a
    wait for the workers: a hang, and the crash it ended in."""
    _, run = ingest_one(sample("vllm", "227_"))
    assert [f.id for f in diagnose(run)] == ["crash", "hang"]


def test_v0_engine_process_death_is_a_crash(ingest_one):
    """vllm/225: V0's `RuntimeError('Engine process (pid 77) died.')` and `MQLLMEngine is already
    dead, terminating server process` after a watchdog's C++ frames."""
    _, run = ingest_one(sample("vllm", "225_"))
    assert run.table("events").filter(pl.col("kind") == "engine_dead").collect().height == 2
    assert [f.id for f in diagnose(run)][0] == "crash"


def test_a_clock_without_seconds_is_still_vllms_header(ingest_one):
    """vllm/231: `(APIServer pid=2640) ERROR 11-03 23:14 [serving_chat.py:1145]   File ...`: the
    header read without its seconds, the traceback frames with it."""
    result, run = ingest_one(sample("vllm", "231_"))
    assert result.sources[0].format.startswith("vllm")
    assert [f.id for f in diagnose(run)] == ["crash"]


def test_232_ngram_acceptance_over_a_few_test_requests_is_no_alarm(ingest_one):
    """vllm/232 (hold-out 15): a PR's DP=8 ngram test, 185 draft tokens in two windows at 15.5 %
    and 36 %: a small sample, so info with low confidence, not a drafter to retrain."""
    _, run = ingest_one(sample("vllm", "232_"))
    f = {f.id: f for f in diagnose(run)}["low-acceptance"]
    assert (f.severity, f.confidence) == ("info", "low")
    assert "Only 185 draft tokens were counted" in f.verdict


def test_238_a_load_that_ends_in_an_error_is_no_longer_loading(ingest_one):
    """vllm/238 (hold-out 15): `Loading drafter model...`, then `WorkerProc failed to start` and
    the engine's traceback: a crash, and no 'still loading, not hung' beside it."""
    _, run = ingest_one(sample("vllm", "238_"))
    assert [f.id for f in diagnose(run)] == ["crash"]


def test_249_requests_that_crawl_while_others_wait_are_a_hang(ingest_one):
    """vllm/249 (hold-out 16): 2 running, 5-6 waiting, 0.1 tok/s, KV 3 % in three intervals of
    10 s: stuck, not a slow decode."""
    _, run = ingest_one(sample("vllm", "249_"))
    (f,) = diagnose(run)
    assert (f.id, f.title) == ("hang", "Engine stuck: requests run and almost no token is computed")
    assert "over 30 s" in f.verdict and "while 5-6 wait with KV room" in f.verdict


def test_260_fewer_kv_blocks_than_one_request_is_the_startup_oom(ingest_one):
    """vllm/260 (hold-out 17): V0 0.2.7's `# GPU blocks: 229` for max_seq_len 4096, then the traceback."""
    _, run = ingest_one(sample("vllm", "260_"))
    (f,) = diagnose(run)
    assert (f.id, f.title) == ("oom", "No GPU memory left for the KV cache (configuration)")
    assert "229 blocks of 16 tokens hold 3,664 tokens, fewer than one request of max_seq_len 4,096" in f.verdict


def test_271_running_at_the_cap_with_a_long_queue_is_no_stall(ingest_one):
    """vllm/271 (hold-out 18): 600 running at max_num_seqs 600, 4,475 pending, 3,200 tok/s."""
    _, run = ingest_one(sample("vllm", "271_"))
    assert [f.id for f in diagnose(run)] == ["concurrency-cap"]


def test_281_a_rejected_configuration_is_the_crash(ingest_one):
    """vllm/281 (hold-out 19): pydantic's `Value error, User-specified max_model_len (131072) ...` alone."""
    _, run = ingest_one(sample("vllm", "281_"))
    (f,) = diagnose(run)
    assert (f.id, f.title) == ("crash", "Configuration rejected at startup")
    assert "User-specified max_model_len (131072) is greater than the derived max_model_len" in f.verdict


def test_279_piecewise_graph_capture_alone_is_vllm(ingest_one):
    """vllm/279 (hold-out 19): only `Capturing CUDA graphs (PIECEWISE)` bars behind Ray Serve's prefix."""
    _, run = ingest_one(sample("vllm", "279_"))
    assert run.table("events").filter(pl.col("kind") == "progress").collect().height >= 8
    assert diagnose(run) == []


def test_287_v0s_engine_background_task_failed_is_the_crash(ingest_one):
    """vllm/287 (hold-out 20): IPEX-LLM's V0 `ERROR ... Engine background task failed`, no traceback pasted."""
    _, run = ingest_one(sample("vllm", "287_"))
    assert [f.id for f in diagnose(run)] == ["crash"]
