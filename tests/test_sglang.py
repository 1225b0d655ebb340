"""SGLang samples from public bug reports: real values parsed, the diagnosis SOURCES.md gives."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import SAMPLES, sample
from loganalyze import metrics
from loganalyze.diagnosis import diagnose

SGLANG = sorted((SAMPLES / "sglang").glob("*.log"))


# The first labelled samples (01-25); tests/test_real_corpus.py holds the whole corpus.
@pytest.mark.parametrize("path", [p for p in SGLANG if int(p.name.split("_")[0]) < 40], ids=lambda p: p.name[:2])
def test_every_sample_ingests_and_every_line_is_accounted(path, ingest_one):
    result, _ = ingest_one(path)
    src = result.sources[0]
    assert src.format == "sglang"
    assert sum(src.lines_by_table.values()) + src.blank == src.lines


def decode(run) -> pl.DataFrame:
    return run.table("stats").filter(pl.col("phase") == "decode").sort("line_no").collect()


def ids(run) -> list[str]:
    return [f.id for f in diagnose(run)]


def test_01_v01_fill_batch(ingest_one):
    _, run = ingest_one(sample("sglang", "01_"))
    row = run.table("stats").collect().row(0, named=True)
    assert (row["phase"], row["new_seq"], row["cached_tokens"], row["new_tokens"]) == ("prefill", 1, 330, 2172)
    assert (row["queued"], row["running"], row["cache_hit_rate"]) == (57, 9, pytest.approx(0.6916))
    assert "concurrency-cap" not in ids(run)


def test_02_gpu_prefix_kv_full(ingest_one):
    _, run = ingest_one(sample("sglang", "02_"))
    row = decode(run).row(0, named=True)
    assert (row["gpu"], row["running"], row["queued"], row["token_usage"]) == ("0", 381, 1549, 0.96)
    assert row["gen_throughput"] == pytest.approx(93.97)
    assert ids(run) == ["kv-pressure"]


def test_03_kv_bound_not_a_cap(ingest_one):
    _, run = ingest_one(sample("sglang", "03_"))
    row = decode(run).row(0, named=True)
    assert (row["running"], row["queued"], row["token_usage"]) == (1010, 12279, 0.93)
    assert ids(run) == ["kv-pressure"]


def test_04_eagle2_prefills_one_by_one(ingest_one):
    result, run = ingest_one(sample("sglang", "04_"))
    prefill = run.table("stats").filter(pl.col("phase") == "prefill").sort("line_no").collect()
    assert prefill["new_seq"].to_list() == [1] * 7
    assert prefill["queued"].to_list()[1:] == [62, 61, 60, 59, 58, 57]
    assert prefill["rank"].unique().to_list() == ["TP0"]
    assert run.table("requests").collect()["path"].to_list() == ["/get_model_info"]
    assert result.sources[0].lines_by_table == {"stats": 7, "requests": 1}


def test_06_largest_len_trailing_comma_keeps_unknown_key(ingest_one):
    _, run = ingest_one(sample("sglang", "06_"))
    d = decode(run)
    assert d["running"].to_list() == [509, 454, 397, 346, 301, 235, 182]
    assert d["queued"].to_list() == [0] * 7
    assert d["extra"][0].to_list() == [{"key": "largest-len", "value": "0"}]
    found = diagnose(run)
    assert [f.id for f in found] == ["drain-excluded"]
    assert "509 -> 182" in found[0].verdict


def test_08_steady_decode_is_healthy(ingest_one):
    _, run = ingest_one(sample("sglang", "08_"))
    d = decode(run)
    assert d["running"].unique().to_list() == [8]
    assert d["tokens"].diff().drop_nulls().unique().to_list() == [320]
    assert all(f.severity == "info" for f in diagnose(run))


def test_15_abbreviated_swa_lines(ingest_one):
    _, run = ingest_one(sample("sglang", "15_"))
    d = decode(run)
    assert d["token_usage"].unique().to_list() == [0.92]
    assert d["swa_token_usage"].unique().to_list() == [0.09]
    assert d["tokens"][0] == 2435072
    assert d["queued"].null_count() == d.height
    assert d["ts"][0].hour == 3 and d["ts"][0].minute == 51
    assert ids(run) == ["kv-pressure", "slow-decode"]


def test_16_pd_decode_low_acceptance(ingest_one):
    _, run = ingest_one(sample("sglang", "16_"))
    d = decode(run)
    assert d["accept_len"].to_list() == [1.67, 1.68, 1.73, 1.72]
    assert d["accept_rate"].to_list() == [0.13, 0.14, 0.14, 0.14]
    assert d["transfer_req"].to_list() == [1, 2, 3, 3]
    assert d["graph"].all()
    spec = metrics.compute(run)["speculative"].summary
    assert spec["accept_len_mean"] == pytest.approx(1.70, abs=0.005)
    assert spec["max_accept_len"] == pytest.approx(6.1, abs=0.1)
    found = diagnose(run)
    assert [f.id for f in found] == ["low-acceptance"]
    assert "mismatch" in found[0].verdict


def test_18_npu_tp_ep_healthy_acceptance(ingest_one):
    _, run = ingest_one(sample("sglang", "18_"))
    d = decode(run)
    assert d["rank"].unique().to_list() == ["TP0 EP0"]
    assert d["accept_len"].max() == 3.05 and d["accept_len"].min() == 2.63
    assert d["graph"].all()
    assert "low-acceptance" not in ids(run)


def test_19_kv_full_is_not_a_cap(ingest_one):
    _, run = ingest_one(sample("sglang", "19_"))
    d = decode(run)
    assert (d["running"][0], d["queued"][0], d["token_usage"][0], d["tokens"][0]) == (6, 5, 0.94, 1920)
    assert metrics.compute(run)["concurrency"].summary["cap"] is None
    assert ids(run) == ["kv-pressure"]


def test_20_watchdog_on_every_rank(ingest_one):
    _, run = ingest_one(sample("sglang", "20_"))
    ev = run.table("events").collect()
    wd = ev.filter(pl.col("kind") == "watchdog_timeout")
    assert wd.height == 8 and sorted(wd["rank"].to_list()) == [f"TP{i}" for i in range(8)]
    assert wd["fields"].str.json_decode().struct.field("timeout_s").unique().to_list() == [300.0]
    assert set(ev["kind"]) == {"watchdog_timeout", "child_failed", "killed"}


def fields_of(events: pl.DataFrame, kind: str) -> list[dict]:
    return [json.loads(f) for f in events.filter(pl.col("kind") == kind)["fields"]]


def test_22_startup_lines_without_prefix(ingest_one):
    result, run = ingest_one(sample("sglang", "22_"))
    ev = run.table("events").collect()
    begin = ev.filter(pl.col("kind") == "load_weight_begin")
    assert begin["fields"].str.json_decode().struct.field("avail_mem_gb").to_list() == [46.81]
    shards = ev.filter(pl.col("kind") == "shard_progress")["fields"].str.json_decode()
    assert shards.struct.field("percent").to_list()[:2] == [0.0, 25.0]
    # Every line is typed: Gloo's peer counts, the import skip and the HF snapshot are events,
    # the chat template's content format a setting.
    assert result.sources[0].unparsed == 0
    assert [f["peers"] for f in fields_of(ev, "gloo_connected")] == [0, 0, 0, 0]
    assert run.config()["chat_template_content_format"] == "string"
    found = diagnose(run)
    assert [(f.id, f.severity, f.title) for f in found] == [("slow-startup", "info", "Still loading weights, not hung")]
    assert "0% -> 25%" in found[0].verdict


def test_24_truncated_server_args_shows_speculative_reset_value(ingest_one):
    _, run = ingest_one(sample("sglang", "24_"))
    cfg = run.config()
    assert cfg["max_running_requests"] == "48"
    assert cfg["mem_fraction_static"] == "0.835"
    assert cfg["model_path"].startswith("/models/Qwen/Qwen3-4B/")
    assert "max_total_token" not in cfg  # the cut-off last key is not invented
    types = dict(run.table("config").select("key", "value_type").collect().iter_rows())
    assert (types["port"], types["trust_remote_code"], types["context_length"]) == ("int", "bool", "none")


def test_25_per_rank_startup(ingest_one):
    _, run = ingest_one(sample("sglang", "25_"))
    ev = run.table("events").collect()
    begin = ev.filter(pl.col("kind") == "load_weight_begin")
    assert sorted(begin["rank"].to_list()) == ["TP0", "TP1"]
    assert not [f for f in diagnose(run) if f.severity != "info"]


def test_53_faulthandler_dump_is_a_hang_in_broadcast_not_a_crash(ingest_one):
    _, run = ingest_one(sample("sglang", "53_"))
    dumps = run.table("events").filter(pl.col("kind") == "stack_dump").sort("line_no").collect()
    assert dumps["line_no"].to_list() == [1, 4, 11]  # the cut block's frames, then two threads
    assert dumps["span"].to_list() == [2, 6, 8]
    top = dumps["fields"].str.json_decode().struct.field("top")
    assert top[2] == 'File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2425 in broadcast'
    found = diagnose(run)
    assert [f.id for f in found] == ["hang"]
    assert "broadcast (distributed_c10d.py:2425) <- wrapper (c10d_logger.py:83) <- broadcast_pyobj" in found[0].verdict
    assert "collective" in found[0].verdict and found[0].evidence[0].line == 11


def test_71_watchdog_pyspy_dump_names_the_python_code_not_a_collective(ingest_one):
    _, run = ingest_one(sample("sglang", "71_"))
    dumps = run.table("events").filter(pl.col("kind") == "stack_dump").sort("line_no").collect()
    fields = dumps["fields"].str.json_decode()
    main = dumps.filter(fields.struct.field("thread_name") == "MainThread").row(0, named=True)
    assert (main["line_no"], main["span"]) == (20, 9)
    assert fields.struct.field("pid").drop_nulls().to_list() == [309]
    assert fields.struct.field("command").drop_nulls().to_list() == ["sglang::scheduler_TP6"]
    hang = next(f for f in diagnose(run) if f.id == "hang")
    assert "TP6's MainThread in _apply (penaltylib/min_new_tokens.py:78)" in hang.verdict
    assert "running its own code" in hang.verdict and "typically" not in hang.verdict


def test_72_missing_pyspy_is_typed_and_recommended(ingest_one):
    _, run = ingest_one(sample("sglang", "72_"))
    failed = run.table("events").filter(pl.col("kind") == "dump_failed").collect()
    assert failed["fields"].str.json_decode().struct.field("pid").to_list() == [113688]
    hang = next(f for f in diagnose(run) if f.id == "hang")
    assert "install py-spy" in hang.recommendation


def test_63_first_line_cut_inside_its_date_is_still_a_stats_line(ingest_one):
    _, run = ingest_one(sample("sglang", "63_"))
    d = decode(run)
    assert d.height == 8
    first = d.row(0, named=True)
    assert (first["line_no"], first["tokens"], first["gen_throughput"], first["ts"]) == (1, 1069, 81.99, None)


def test_58_pd_transfer_aborted_is_a_warning(ingest_one):
    """PD decode server, v0.5.4: one request's transfer `Aborted by AbortReq.` right after warmup."""
    _, run = ingest_one(sample("sglang", "58_"))
    (row,) = run.table("events").filter(pl.col("kind") == "kv_transfer_failed").collect().to_dicts()
    assert row["rank"] == "TP0" and row["line_no"] == 8
    (finding,) = [f for f in diagnose(run) if f.id == "kv-transfer"]
    assert (finding.severity, finding.confidence) == ("warning", "medium")
    assert finding.metrics == {"requests": 1, "lines": 1, "reason": "Aborted by AbortReq."}
    assert [e.line for e in finding.evidence] == [8]


def test_87_the_decode_waiting_timeout_counts_some_requests_not_one_per_rank(ingest_one):
    """PD decode server, v0.5.1: five ranks print the waiting timeout's line, which names no request."""
    _, run = ingest_one(sample("sglang", "87_"))
    assert run.table("events").filter(pl.col("kind") == "kv_transfer_timeout").collect().height == 5
    (finding,) = [f for f in diagnose(run) if f.id == "kv-transfer"]
    assert finding.title == "PD disaggregation: some request(s) failed their KV transfer"
    assert (finding.severity, finding.confidence, finding.metrics["requests"]) == ("critical", "medium", 0)
    assert "never sent" in finding.verdict and "HTTP 500" not in finding.verdict


def test_59_pd_transfer_failed_on_another_rank(ingest_one):
    """PD decode server, v0.5.2: TP1 and TP2 report the same request (one bootstrap room)
    failed 'from another rank': one request, the cause on another rank or the prefill side."""
    _, run = ingest_one(sample("sglang", "59_"))
    (finding,) = [f for f in diagnose(run) if f.id == "kv-transfer"]
    assert finding.severity == "critical" and finding.metrics["requests"] == 1 and finding.metrics["lines"] == 2
    assert "another rank" in finding.verdict and "peer server" in finding.recommendation
    assert not {"kv-pressure", "oom"} & {f.id for f in diagnose(run)}


@pytest.mark.parametrize("prefix,want,confidence", [
    # graphs up to 28 running, none at 36 and 46 (end-of-run drain)
    ("48_", {"lines_without_graph": 2, "decode_lines": 8, "batch_min": 36, "batch_max": 46, "largest_with_graph": 28},
     "medium"),
    # batch 48 with a graph in one run (pid 147907), without in the other (pid 151972)
    ("49_", {"lines_without_graph": 2, "decode_lines": 3, "batch_min": 48, "batch_max": 48, "largest_with_graph": 48},
     "medium"),
    # docs CI run with --disable-cuda-graph
    ("60_", {"lines_without_graph": 7, "decode_lines": 7, "batch_min": 1, "batch_max": 1, "largest_with_graph": None},
     "high"),
])
def test_decode_without_cuda_graph(prefix, want, confidence, ingest_one):
    _, run = ingest_one(sample("sglang", prefix))
    (finding,) = [f for f in diagnose(run) if f.id == "cuda-graph-off"]
    assert finding.severity == "info" and finding.confidence == confidence and finding.metrics == want


def test_cuda_graph_measured_both_ways_at_one_batch(ingest_one):
    _, run = ingest_one(sample("sglang", "49_"))
    (finding,) = [f for f in diagnose(run) if f.id == "cuda-graph-off"]
    assert "6,139 tokens/s with a graph, 5,426 without (-12%)" in finding.verdict


@pytest.mark.parametrize("prefix", ["18_", "23_", "77_"])
def test_prefill_lines_and_mixed_steps_are_not_graphs_off(prefix, ingest_one):
    """23 and 77: `cuda graph: False` on prefill lines (prefill never runs in a graph); 18: one
    decode line at 16 running without a graph below 22-24 with one (a mixed step)."""
    _, run = ingest_one(sample("sglang", prefix))
    assert "cuda-graph-off" not in [f.id for f in diagnose(run)]


def test_70_speculative_cap_from_the_release_without_server_args(ingest_one):
    """0.4.4 excerpt (`largest-len`: 0.4.3.post3-0.4.4.post1), accept len 2.54, 32 running and
    68 queued, no server args: 32 is that release's own cap under speculation. One decode
    line: the cap is medium-confidence (from the release), one step lower on one line."""
    _, run = ingest_one(sample("sglang", "70_"))
    c = run.metrics()["concurrency"].summary
    assert (c["cap"], c["cap_source"]) == (32, "speculative default")
    (finding,) = [f for f in diagnose(run) if f.id == "concurrency-cap"]
    assert "by the speculative-decoding reset" in finding.title and finding.confidence == "low"
    assert "0.4.3.post3-0.4.4.post1" in finding.verdict and "rests on 1 stats line only" in finding.verdict


def test_90_the_maximum_from_an_older_accept_rate_that_holds_on_every_line(ingest_one):
    """v0.5.3 EAGLE-3 without its settings: accept len / accept rate is 4.0 on every decode line
    (the rate of releases to 0.5.10), so 4 is the most a step yields, and 1.95 of it is weak."""
    _, run = ingest_one(sample("sglang", "90_"))
    (f,) = [f for f in diagnose(run) if f.id == "low-acceptance"]
    assert f.metrics["max_accept_len"] == 4 and f.metrics["accept_len_mean"] == 1.954
    assert f.severity == "warning" and f.confidence == "medium" and "settings are not in the log" in f.verdict


def test_101_decode_lines_behind_a_python_logging_module_prefix(ingest_one):
    """sglang-omni#712: `2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler_metrics_mixin: Decode batch, ...`."""
    _, run = ingest_one(sample("sglang", "101_"))
    d = decode(run)
    assert d["running"].to_list() == [1, 1, 1] and d["gen_throughput"].to_list() == [126.29, 83.17, 82.34]
    assert run.table("unparsed").collect().height == 0 if "unparsed" in run.tables() else True


def test_105_and_108_the_transfer_engine_says_why_the_kv_transfer_failed(ingest_one):
    """sglang#7118: Mooncake's glog line `E0612 ... tcp_transport.cpp:136] Session::writeBody failed. Error: Bad
    address` before `Prefill transfer failed`; sglang#23272: the same behind docker compose, `**` and a backtick."""
    _, run = ingest_one(sample("sglang", "105_"))
    (err,) = fields_of(run.table("events").collect(), "transfer_error")[:1]
    assert (err["op"], err["error"]) == ("writeBody", "Bad address (value: 14)")
    (finding,) = [f for f in diagnose(run) if f.id == "kv-transfer"]
    assert "Bad address" in finding.verdict and "RDMA" in finding.recommendation
    _, run = ingest_one(sample("sglang", "108_"), name="t108")
    assert "unparsed" not in run.tables()
    (finding,) = [f for f in diagnose(run) if f.id == "kv-transfer"]
    assert "could not open more connections" in finding.verdict


def test_109_a_transfer_worker_traceback_is_the_kv_transfer_not_a_crash(ingest_one):
    """llm-d#2433: `Unexpected transfer worker error for room R` and its traceback ending in
    `RuntimeError: PD Disaggregation does NOT support PD` (prefill TP1, decode TP4)."""
    _, run = ingest_one(sample("sglang", "109_"))
    found = diagnose(run)
    assert [f.id for f in found] == ["kv-transfer"]
    assert found[0].metrics["reason"] == "RuntimeError: PD Disaggregation does NOT support PD"


def test_133_ucx_signal_report_is_a_native_crash_with_its_libraries(ingest_one):
    """sglang#6694: NIXL's UCX TCP transport segfaults after the bootstrap GET /route; UCX's
    handler prints `[host:pid:thread:tid] Caught signal 11 (...)` and the backtrace below it."""
    result, run = ingest_one(sample("sglang", "133_"))
    assert result.sources[0].lines_by_table == {"events": 10}
    ev = run.table("events").filter(pl.col("kind") == "native_signal").collect()
    assert json.loads(ev["fields"][0]) == {
        "host": "node01", "pid": 12796, "tid": 13303, "signal": 11, "signal_name": "Segmentation fault",
        "detail": "invalid permissions for mapped object at address 0x7fbd60001400", "abseil_signal": None,
        "cpu": None}
    access = run.table("events").filter(pl.col("kind") == "aiohttp_access").collect()
    assert json.loads(access["fields"][0]) == {
        "client": "127.0.0.1", "method": "GET", "path": "/route?engine_rank=0", "status": 200, "bytes": "262"}
    (finding,) = diagnose(run)
    assert (finding.id, finding.title) == ("crash", "Native crash")
    assert "runs through libucs, libc, libucp, libuct (ucs_handle_error, uct_tcp_ep_am_bcopy)" in finding.verdict
    assert "UCX_TLS" in finding.recommendation


def test_103_a_child_sigquit_alone_is_a_crash_of_low_confidence(ingest_one):
    """sglang#12827: the only line, behind an outer `[2025-11-06T02:10:00.703Z]`."""
    _, run = ingest_one(sample("sglang", "103_"))
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity, finding.confidence) == ("crash", "critical", "low")


def test_a_child_sigquit_after_a_watchdog_timeout_is_the_hang_only(ingest_one):
    _, run = ingest_one(sample("sglang", "20_"))
    assert "crash" not in {f.id for f in diagnose(run)}


def test_107_request_log_and_bare_access_lines_are_typed(ingest_one):
    """sglang#19712: `Receive: obj=GenerateReqInput(rid=...)` and an access line that lost uvicorn's `INFO:`."""
    _, run = ingest_one(sample("sglang", "107_"))
    assert "unparsed" not in run.tables()
    assert [f["request_id"] for f in fields_of(run.table("events").collect(), "request_log")] == [
        "jJKjafC4O-zhjMwPvrWDgQc", "HEALTH_CHECK_1772327565.2404053"]
    assert run.table("requests").collect()["status"].to_list() == [200]


def test_104_a_clients_abort_response_holding_the_transfer_failure(ingest_one):
    """sglang#7338: the client's JSON response, `"finish_reason":{"type":"abort","message":"Decode transfer
    failed for request rank=0 ... KVTransferError(...): Failed to get kvcache from prefill instance, it might be
    dead","status_code":500`: the only line of the excerpt."""
    _, run = ingest_one(sample("sglang", "104_"))
    (row,) = fields_of(run.table("events").collect(), "abort_response")
    assert row["status"] == 500 and row["reason"].startswith("Decode transfer failed for request rank=0")
    (finding,) = diagnose(run)
    assert (finding.id, finding.metrics["requests"]) == ("kv-transfer", 1) and "might be dead" in finding.verdict


MOONCAKE_STARTUP = """\
I0917 16:19:42.193368 3936072 transfer_engine.cpp:486] Metrics reporting is disabled (set MC_TE_METRIC=1 to enable)
I0917 16:19:42.193420 3936072 transfer_engine.cpp:146] Transfer Engine RPC using P2P handshake, listening on 10.0.0.13:16590
I0917 16:19:42.193977 3936072 transfer_engine.cpp:200] Topology discovery complete. Found 1 HCAs.
I0917 16:19:42.197755 3936068 rdma_context.cpp:129] RDMA device: mlx5_3, LID: 17, GID: (GID_Index 0) fe:80:00:00:00:00:00:00:9c:63:c0:03:00:1a:42:6e
WARNING: Logging before InitGoogleLogging() is written to STDERR
"""


def test_mooncake_startup_lines_behind_glog_are_typed_and_quiet(tmp_path, ingest_one):
    """kvcache-ai/Mooncake#851 (a PD prefill server's log): the transfer engine's start-up through glog."""
    log = tmp_path / "mooncake.log"
    log.write_text(MOONCAKE_STARTUP)
    _, run = ingest_one(log)
    assert "unparsed" not in run.tables()
    ev = run.table("events").sort("line_no").collect()
    assert ev["kind"].to_list() == ["transfer_engine"] * 5 and ev["level"].to_list()[:4] == ["INFO"] * 4
    assert [json.loads(f).get("hcas") for f in ev["fields"]][2] == 1
    assert diagnose(run) == []


def test_51_a_plateau_on_a_full_cache_is_not_the_clients_limit(ingest_one):
    """DeepSeek-V3 at token usage 1.00 with 2 running and nothing queued, retracting: the KV
    cache is the limit, so no note may say "the server is not the limit" beside kv-pressure."""
    _, run = ingest_one(sample("sglang", "51_"))
    timeline = metrics.compute(run)["concurrency"].frames["timeline"]
    assert timeline["running"].unique().to_list() == [2] and timeline["queued"].max() == 0
    assert timeline["token_usage"].min() >= 0.9
    found = [f.id for f in diagnose(run)]
    assert found[0] == "kv-pressure" and "client-limited" not in found


def test_118_and_120_the_shard_bar_elapsed_is_the_load_time(ingest_one):
    """sglang#4895: `Loading safetensors checkpoint shards: 100% Completed | 4/4 [05:42<00:00, ...]` and no load
    time of SGLang's own; sglang#3254: `163/163 [1:09:28<00:00, ...]` over two nodes. The bar lines carry no
    timestamp, so the load time is the bar's elapsed, MM:SS or H:MM:SS."""
    _, run = ingest_one(sample("sglang", "118_"))
    assert metrics.compute(run)["startup"].summary["load_s"] == 342.0
    (found,) = diagnose(run)
    assert (found.id, found.severity) == ("slow-startup", "info") and "load 5.7 min" in found.verdict
    _, run = ingest_one(sample("sglang", "120_"), name="t120")
    assert metrics.compute(run)["startup"].summary["load_s"] == 4168.0
    assert [f.id for f in diagnose(run)] == ["slow-startup"]


def test_117_a_line_stamped_twice_in_sglangs_shape_keeps_the_servers_own_prefix(ingest_one):
    """sglang#4305: `[2025-03-11 16:44:27] [2025-03-11 01:44:27 TP0] Decode batch. ...`: a deployment put its local
    time in SGLang's own shape before the server's UTC prefix. The server's prefix (rank) is the line's, the time
    the deployment's, which every line of the file has."""
    result, run = ingest_one(sample("sglang", "117_"))
    assert result.sources[0].unparsed == 0
    d = decode(run)
    assert d["running"].to_list() == [5] * 7 and d["gen_throughput"].to_list()[:2] == [136.00, 136.01]
    assert d["rank"].unique().to_list() == ["TP0"] and str(d["ts"][0]) == "2025-03-11 16:44:27"
    assert str(run.table("requests").collect()["ts"][0]) == "2025-03-11 16:44:29"
    assert [(f.id, f.severity) for f in diagnose(run)] == [("client-limited", "info")]


def test_121_the_ngc_container_banner_is_typed_and_quiet(ingest_one):
    """sglang#3226: the NVIDIA container's banner (`== CUDA ==` between rules, `CUDA Version 12.4.1`, the licence
    lines) before the server's start-up in docker."""
    result, run = ingest_one(sample("sglang", "121_"))
    assert result.sources[0].unparsed == 0
    banner = fields_of(run.table("events").sort("line_no").collect(), "container_banner")
    assert len(banner) == 9 and banner[1]["image"] == "CUDA" and banner[3]["cuda_version"] == "12.4.1"
    assert diagnose(run) == []


def test_123_an_excerpt_that_starts_at_the_chain_line_has_one_traceback_with_its_error(ingest_one):
    """sglang#4205: the paste starts at `During handling of the above exception, another exception occurred:`, then
    the traceback through init_cuda_graphs that ends in `Exception: Capture cuda graph failed: [...gloo...]`."""
    result, run = ingest_one(sample("sglang", "123_"))
    assert result.sources[0].unparsed == 0
    ev = run.table("events").sort("line_no").collect()
    assert ev.filter(pl.col("kind").str.starts_with("traceback"))["kind"].to_list() == ["traceback_chain", "traceback"]
    (crash,) = diagnose(run)
    assert crash.id == "crash" and "init_cuda_graphs: Exception: Capture cuda graph failed" in crash.verdict


# ---- hold-out 13 ----

def test_launch_command_is_the_settings_and_a_client_accept_length_the_acceptance(ingest_one):
    """sglang/245: only the launch command (over `\\`-ended lines) and a task benchmark's
    `Average Accept length: 1.037`: the settings give at most 5 tokens a step (4 steps, topk 1),
    so the drafter is broken (low-acceptance, critical)."""
    _, run = ingest_one(sample("sglang", "245_"))
    config = run.config()
    assert (config["speculative_algorithm"], config["speculative_num_steps"], config["speculative_eagle_topk"]) == \
        ("EAGLE3", "4", "1")
    assert (config["chunked_prefill_size"], config["tp_size"]) == ("-1", "1")
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity) == ("low-acceptance", "critical")
    assert "1.04 of a possible 5" in finding.verdict


def test_abbreviated_flags_are_resolved_as_argparse_reads_them(ingest_one):
    """sglang/246: `--speculative-draft` and `--speculative-algo` (prefixes argparse accepts)."""
    _, run = ingest_one(sample("sglang", "246_"))
    config = run.config()
    assert config["speculative_draft_model_path"] == "Rayzl/qwen2.5-vl-7b-eagle3-sgl"
    assert config["speculative_algorithm"] == "EAGLE3" and config["speculative_eagle_topk"] == "6"
    assert ids(run) == []  # accept length 3.219 of a possible 5: a working drafter


def test_default_kernel_config_is_an_info_event(ingest_one):
    """sglang/252: the MoE and block-FP8 kernels' `Using default ... config. Performance might
    be sub-optimal!` on an H20-3e: read, and no finding."""
    _, run = ingest_one(sample("sglang", "252_"))
    events = run.table("events").collect()
    assert events["kind"].to_list() == ["default_kernel_config"] * 2
    assert ids(run) == []


def test_kv_pressure_from_prefill_lines_alone(ingest_one):
    """sglang/248: a PD prefill server's three lines at token usage 0.92-0.95 with 76-105
    queued: kv-pressure on prefill intervals, low confidence (three lines)."""
    _, run = ingest_one(sample("sglang", "248_"))
    (finding,) = diagnose(run)
    assert (finding.id, finding.confidence, finding.metrics["phase"]) == ("kv-pressure", "low", "prefill")
    assert "3 prefill intervals" in finding.verdict


@pytest.mark.parametrize("prefix", ["266_", "268_"])
def test_startup_memory_wordings_are_oom(prefix, ingest_one):
    """sglang/266 (`Not enough memory. Please try to increase --mem-fraction-static`, behind
    GPUStack's lines: SGLang's flag names the file's engine) and sglang/268 (`Loaded weights
    leave no GPU memory for the KV cache under --mem-fraction-static=0.88.`)."""
    _, run = ingest_one(sample("sglang", prefix))
    assert [f.id for f in diagnose(run)][0] == "oom"


def test_graph_capture_lines_alone_are_sglangs(ingest_one):
    """sglang/264: three lines of a MUSA startup, `Capture piecewise CUDA graph end. Time
    elapsed: 176.68 s.` among them: SGLang's, typed, no finding (under five minutes)."""
    result, run = ingest_one(sample("sglang", "264_"))
    assert (result.sources[0].format, result.sources[0].unparsed) == ("sglang", 0)
    assert ids(run) == []


def test_device_side_asserts_are_the_crash_they_cause(tmp_path, ingest_one):
    """A kernel's assertion, printed per thread before the traceback it causes, is the crash's
    cause; a file of only such lines (sglang/275 of hold-out 15: a bounds check) is still read."""
    log = tmp_path / "assert.log"
    log.write_text(
        '../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [4,0,0] Assertion '
        '`-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.\n' * 2
        + "Exception in ModelRpcClient:\nTraceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/router/model_rpc.py", line 196, in exposed_step\n'
        "    self.forward_step()\nRuntimeError: CUDA error: device-side assert triggered\n")
    _, run = ingest_one(log)
    (f,) = diagnose(run)
    assert (f.id, f.title, f.evidence[0].line) == ("crash", "Device-side assert", 1)
    assert "failed in operator() (../aten/src/ATen/native/cuda/IndexKernel.cu:92), 2 line(s)" in f.verdict
    bound = tmp_path / "bound.log"
    bound.write_text("Out Of Bound Tensor access detected at dim[1]: assert(63 < 63)\n" * 3)
    _, run = ingest_one(bound, name="bound")
    assert [f.title for f in diagnose(run)] == ["Device-side assert"]


def test_278_a_pasted_baseline_at_accept_length_one_is_not_averaged_in(ingest_one):
    """sglang/278 (hold-out 15): MT-bench without speculation (`Acceptance length: 1.00`) and
    with EAGLE3 (5.88) pasted together; the 1.00 is the baseline, so acceptance is 5.88."""
    _, run = ingest_one(sample("sglang", "278_"))
    assert run.table("bench").sort("line_no").collect()["accept_length"].to_list() == [1.0, 5.88]
    assert metrics.compute(run)["speculative"].summary["accept_len_mean"] == 5.88
    assert diagnose(run) == []


def test_275_a_file_of_bounds_check_failures_is_a_device_side_assert(ingest_one):
    _, run = ingest_one(sample("sglang", "275_"))
    (f,) = diagnose(run)
    assert (f.id, f.title) == ("crash", "Device-side assert") and "`dim[1]: assert(63 < 63)`), 9 line(s)" in f.verdict


def test_283_the_multi_turn_benchmark_summary_is_read_in_seconds(ingest_one):
    _, run = ingest_one(sample("sglang", "283_"))
    (row,) = run.table("bench").collect().iter_rows(named=True)
    assert (row["tool"], row["completed"], row["request_rate"]) == ("sglang.bench_multiturn", 1280, 1.0)
    assert (row["ttft_mean"], row["ttft_median"], row["ttft_p99"], row["itl_mean"]) == (360.0, 240.0, 980.0, 20.2)
    assert diagnose(run) == []


def test_308_a_gloo_timeout_is_a_hung_collective(ingest_one):
    _, run = ingest_one(sample("sglang", "308_"))
    f = diagnose(run)[0]
    assert (f.id, f.title, f.metrics["waited_ms"]) == ("hang", "Gloo collective timed out", 7200000)


def test_306_sglang_jax_cap_summary_gives_the_cap(ingest_one):
    """sglang/306 (hold-out 18): sglang-jax's `Max running requests constraints:` block alone."""
    _, run = ingest_one(sample("sglang", "306_"))
    caps = run.table("config").filter(pl.col("key") == "max_running_requests").collect()
    assert (caps["value"].to_list(), caps["origin"].to_list()) == (["512"], ["running_cap_summary"])
    assert diagnose(run) == []
