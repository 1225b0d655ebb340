"""NCCL, nccl-tests and PyTorch watchdog samples from public issues: real values parsed, the
diagnosis fixtures/real/nccl/SOURCES.md gives, NCCL lines claimed inside a server log, fuzz."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loganalyze import formats
from conftest import SAMPLES, mutate, sample
from loganalyze.diagnosis import diagnose, hang, nccl_bandwidth, nccl_gdr, nccl_one_nic, nccl_tests_mpi, nccl_transport
from loganalyze.diagnosis.base import Case
from loganalyze.ingestion.dispatch import parse_batch
from loganalyze.metrics.nccl import nccl
from loganalyze.metrics.nccl.perf import perf_rows
from loganalyze.formats import nccl as nccl_format
from loganalyze.formats import nccl_tests
from loganalyze.formats.parse import parse
from loganalyze.formats.spec import Context
from test_line_kind_samples import frame_of

NCCL = sorted((SAMPLES / "nccl").glob("*.log"))
CTX = Context(source="t", year=2026, base_date="2026-01-01")

# Format and lines per table of every sample; `unparsed` lines are cut marks (`...`), four
# C++ frames in 21 that precede the cut, and in 19 two vLLM lines behind a bare `  | `.
EXPECTED = {
    "01_": ("nccl", {"nccl_links": 11}),
    "03_": ("nccl", {"nccl_links": 16}),
    "04_": ("nccl", {"nccl_links": 16}),
    "06_": ("nccl", {"nccl_links": 13}),
    "07_": ("nccl-tests", {"nccl_comms": 9, "nccl_perf": 5}),
    "08_": ("nccl", {"nccl_topo": 7}),
    "10_": ("nccl", {"nccl_links": 5, "nccl_comms": 11}),
    "11_": ("nccl-tests", {"nccl_links": 14, "nccl_perf": 1}),
    "12_": ("nccl", {"nccl_colls": 4}),
    "14_": ("nccl", {"nccl_colls": 7, "unparsed": 1}),
    "15_": ("nccl-tests", {"nccl_perf": 15}),
    "17_": ("nccl-tests", {"nccl_links": 2, "nccl_perf": 5, "unparsed": 3}),
    # vLLM's `Killing local vLLM worker processes` is an event (worker_exit); its `Worker ... died` line
    # behind `  | ` is not read yet
    "19_": ("vllm" if "vllm" in formats.FORMATS else "nccl", {"events": 6, "unparsed": 1}),
    "20_": ("nccl", {"events": 4}),
    "21_": ("nccl", {"events": 4, "unparsed": 4}),
    "23_": ("nccl", {"events": 6}),
    "25_": ("nccl-tests", {"nccl_links": 5, "nccl_comms": 8, "nccl_perf": 5}),
}


def table(run, name: str, what: str | None = None) -> pl.DataFrame:
    df = run.table(name).sort("line_no").collect()
    return df.filter(pl.col("what") == what) if what else df


def fields(run, kind: str) -> list[dict]:
    ev = run.table("events").filter(pl.col("kind") == kind).sort("line_no").collect()
    return [json.loads(f) for f in ev["fields"]]


def findings(run) -> dict[str, list]:
    """Every NCCL finder's findings by id (the finders are called directly with the nccl family)."""
    ctx = Case(run, {"nccl": nccl(run)})
    out: dict[str, list] = {}
    for find in (nccl_transport.find, nccl_one_nic.find, nccl_gdr.find, nccl_bandwidth.find, nccl_tests_mpi.find, hang.find):
        for f in find(ctx):
            out.setdefault(f.id, []).append(f)
    return out


def severities(run) -> dict[str, str]:
    return {k: v[0].severity for k, v in findings(run).items()}


@pytest.mark.parametrize("path", [p for p in NCCL if p.name[:3] in EXPECTED], ids=lambda p: p.name[:2])
def test_every_sample_ingests_and_every_line_is_accounted(path, ingest_one):
    result, _ = ingest_one(path)
    src = result.sources[0]
    fmt, lines = EXPECTED[path.name[:3]]
    assert (src.format, src.lines_by_table) == (fmt, lines)
    assert sum(src.lines_by_table.values()) + src.blank == src.lines


def test_01_shm_everywhere_is_a_transport_warning(ingest_one):
    _, run = ingest_one(sample("nccl", "01_"))
    links = table(run, "nccl_links", "link")
    assert links["transport"].unique().to_list() == ["SHM"]
    assert links["via"].unique().to_list() == ["SHM/direct/direct"]
    first = links.row(0, named=True)
    assert (first["channel"], first["src_rank"], first["dst_rank"], first["src_gpu"], first["dst_gpu"]) == (1, 7, 2, 7, 2)
    assert (first["host"], first["pid"], first["tid"], first["gpu"], first["peer_format"]) == (
        "node01", 3884652, 3884740, "7", "nvml")
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and f.title == "NCCL falls back to SHM instead of P2P"
    assert "11 of 11" in f.verdict and "7->2" in f.verdict and "NCCL_P2P_LEVEL=SYS" in f.recommendation


def test_03_direct_pointer_nvlink_is_healthy(ingest_one):
    _, run = ingest_one(sample("nccl", "03_"))
    links = table(run, "nccl_links")
    assert links.filter(pl.col("what") == "link")["transport"].unique().to_list() == ["P2P/direct pointer"]
    assert links.filter(pl.col("what") == "connected")["connected"].to_list() == ["all rings"] * 3
    fam = nccl(run)
    assert fam.summary["channels_max"] == 7 and fam.summary["p2p_links"] == 13
    assert severities(run) == {}  # a healthy transport stays quiet


def test_04_cumem_two_nodes_sixteen_channels(ingest_one):
    _, run = ingest_one(sample("nccl", "04_"))
    links = table(run, "nccl_links", "link")
    assert links["transport"].unique().to_list() == ["P2P/CUMEM"]
    assert sorted(links["host"].unique().to_list()) == ["node01", "node02"]
    row = links.filter(pl.col("host") == "node02").row(0, named=True)
    assert (row["src_rank"], row["src_gpu"], row["dst_rank"], row["dst_gpu"], row["conn_index"]) == (14, 6, 12, 4, 0)
    assert nccl(run).summary["channels_max"] == 16
    assert severities(run) == {}  # a healthy transport stays quiet


def test_06_bus_id_peers_ipc_read_and_one_nic(ingest_one):
    _, run = ingest_one(sample("nccl", "06_"))
    links = table(run, "nccl_links", "link")
    ipc = links.filter(pl.col("transport") == "P2P/IPC").row(0, named=True)
    assert (ipc["src_dev"], ipc["dst_dev"], ipc["peer_format"], ipc["read"], ipc["src_gpu"]) == ("a000", "7000", "busid", True, None)
    net = links.filter(pl.col("transport") == "NET/IB")
    assert net.height == 4 and net["gdr"].all() and net["direction"].unique().to_list() == ["send"]
    assert net["conn_index"].null_count() == 4
    assert "nccl-transport" not in findings(run)  # nothing wrong with how the ranks in a box talk
    (f,) = findings(run)["nccl-one-nic"]
    assert f.severity == "info" and "one NIC" in f.verdict and "NET/IB/0/GDRDMA" in f.verdict
    assert f.metrics == {"connections": 4, "net_dev": "0"}


def test_07_init_lines_inside_nccl_tests_output(ingest_one):
    result, run = ingest_one(sample("nccl", "07_"))
    comms = table(run, "nccl_comms")
    assert comms.filter(pl.col("what") == "version").select("version", "cuda").row(0) == ("2.26.5", "12.9")
    assert comms.filter(pl.col("what") == "cuda_driver")["driver"].to_list() == [12080]
    assert comms.filter(pl.col("what") == "bootstrap")["value"].to_list() == ["bond0:10.0.0.1<0>"]
    assert comms.filter(pl.col("what") == "network")["network"].to_list() == ["IB", "IB"]
    assert comms.filter(pl.col("what") == "net_ib")["value"][0].startswith("Using [0]mlx5_bond_0:1/RoCE")
    devices = table(run, "nccl_perf", "device")
    assert devices.select("dev_rank", "group", "dev_pid", "dev_host", "device", "bus", "device_name").rows() == [
        (0, 0, 7995, "gpu-node-01", 0, "0000:2c:00", "NVIDIA GeForce RTX 4090"),
        (1, 0, 7995, "gpu-node-01", 1, "0000:2d:00", "NVIDIA GeForce RTX 4090")]
    params = table(run, "nccl_perf", "params").row(0, named=True)
    assert (params["ngpus"], params["max_bytes"], params["iters"], params["agg_iters"], params["graph"]) == (
        2, 2147483648, 10, 1, 0)
    s = nccl(run).summary
    assert (s["nccl_versions"], s["cuda_driver"], s["networks"]) == (["2.26.5"], 12080, ["IB"])
    assert findings(run) == {}


def test_08_topology_phb_sys_rules_out_p2p(ingest_one):
    _, run = ingest_one(sample("nccl", "08_"))
    topo = table(run, "nccl_topo")
    paths = topo.filter(pl.col("what") == "path")
    assert paths.height == 40
    row = paths.filter((pl.col("src") == "GPU/CE000") & (pl.col("dst") == "GPU/0-cf000")).row(0, named=True)
    assert (row["hops"], row["bw"], row["path_type"]) == (4, 24.0, "PHB")
    assert topo.filter(pl.col("what") == "system").select("max_bw", "total_bw").row(0) == (24.0, 24.0)
    assert topo.filter(pl.col("what") == "link").select("link_type", "bw", "dst").row(0) == ("PCI", 24.0, "PCI/0-4b000")
    s = nccl(run).summary
    assert s["gpu_path_bw"] == {"PHB": 24.0, "SYS": 10.0} and s["topo_max_bw"] == 24.0
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and "SYS at 10 GB/s" in f.verdict and "topology-bound" in f.verdict


def test_10_two_channels_for_sixteen_ranks(ingest_one):
    _, run = ingest_one(sample("nccl", "10_"))
    rings = table(run, "nccl_links", "ring")
    assert rings.select("channel", "nchannels", "ring_len").rows() == [(0, 2, 16), (1, 2, 16)]
    assert table(run, "nccl_links", "tree")["ntrees"].to_list() == [2, 2, 2]
    comms = table(run, "nccl_comms")
    nvls = comms.filter(pl.col("what") == "nvls")
    assert nvls["nvls"].unique().to_list() == ["not available"] and sorted(nvls["cuda_dev"].to_list()) == [0, 2, 3, 4, 6, 7]
    assert comms.filter(pl.col("what") == "p2p_chunksize")["value"].unique().to_list() == ["131072"]
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and f.title == "Few NCCL channels" and "2 channel(s) for 16 ranks" in f.verdict
    assert nccl(run).summary["nvls_available"] is False


def test_11_p2p_level_sys_from_the_command_line(ingest_one):
    _, run = ingest_one(sample("nccl", "11_"))
    cmd = table(run, "nccl_perf", "command").row(0, named=True)
    assert cmd["test"] == "all_reduce_perf" and cmd["env"] == "NCCL_P2P_DISABLE=0 NCCL_P2P_LEVEL=SYS NCCL_DEBUG=info"
    connected = table(run, "nccl_links", "connected")
    assert connected.select("connected", "ring_pxn", "ring_gdr").unique().rows() == [("all rings", 0, 1)]
    s = nccl(run).summary
    assert (s["p2p_level"], s["p2p_disable"], s["transports"]) == ("SYS", "0", {"P2P/direct pointer": 9})
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "info" and "NCCL_P2P_LEVEL=SYS" in f.verdict and "Benchmark both" in f.recommendation


def test_a_benchmark_suite_naming_a_dataset_something_perf_runs_no_nccl_test(ingest_one):
    """bench/71's ais_bench command names `gsm8k_gen_0_shot_cot_str_perf`: a dataset, not nccl-tests."""
    _, run = ingest_one(sample("bench", "71_"))
    assert run.table("nccl_perf").collect().height == 0
    assert run.table("bench").collect().height == 1


def test_103_a_rank_count_worked_out_from_the_rows_says_so(ingest_one):
    """nccl/103 prints no device lines and no `nThread .. nGpus` line: the 24 ranks come from
    busbw/algbw of all_reduce, and the finding says so; with no GPU named, the floor is the
    rule of thumb's, not a GPU class's reference."""
    _, run = ingest_one(sample("nccl", "103_"))
    assert nccl(run).summary["perf_nranks"] == 24 and nccl(run).summary["perf_nranks_inferred"] is True
    low = findings(run)["nccl-bandwidth"][0]
    assert "24 ranks, worked out from busbw/algbw" in low.verdict and low.title == "NCCL busbw far below the floor"


def test_15_ranks_from_the_log_are_not_called_inferred(ingest_one):
    _, run = ingest_one(sample("nccl", "15_"))
    assert nccl(run).summary["perf_nranks"] and nccl(run).summary["perf_nranks_inferred"] is False


def test_12_coll_trace_hex_opcount_and_sizes(ingest_one):
    _, run = ingest_one(sample("nccl", "12_"))
    colls = table(run, "nccl_colls")
    assert colls["op_count"].to_list() == [0x139D, 0x139D, 0x139E, 0x139E]
    first = colls.row(0, named=True)
    assert (first["op"], first["count"], first["dtype"], first["bytes"], first["redop_name"], first["root"], first["nranks"]) == (
        "AllReduce", 7382228, "float32", 29528912, "sum", 0, 128)
    assert first["process"] == "RayTrainWorker pid=615, ip=10.0.0.1"
    assert first["host"] == "raycluster-worker-l4-8-01" and first["comm"] == "0x78cfda045840"
    s = nccl(run).summary
    assert s["coll_ops"] == {"AllReduce": 4} and s["coll_bytes_max"] == 29528912
    f = findings(run)["hang"][0]
    assert f.severity == "info" and "raycluster-worker-l4-8-01 pid 615" in f.verdict and "0x139d" in f.verdict


def test_14_send_recv_on_two_comms(ingest_one):
    _, run = ingest_one(sample("nccl", "14_"))
    colls = table(run, "nccl_colls")
    send = colls.filter(pl.col("op") == "Send")
    assert send["op_count"].to_list() == [0x12, 0x14, 0x16, 0x18, 0xD60, 0xD62]
    assert send["recvbuff"].unique().to_list() == ["(nil)"] and send["root"].to_list() == [1, 1, 1, 1, 0, 0]
    recv = colls.filter(pl.col("op") == "Recv").row(0, named=True)
    assert (recv["sendbuff"], recv["root"], recv["op_count"], recv["comm"]) == ("(nil)", 1, 0xD60, "0x7f5128002e10")
    assert sorted(colls["comm"].unique().to_list()) == ["0x7f5128002e10", "0x7f516c002e10"]
    assert findings(run) == {}  # one process: nothing to compare a rank against


def test_15_nccl_tests_table_at_the_pcie_bound(ingest_one):
    _, run = ingest_one(sample("nccl", "15_"))
    rows = table(run, "nccl_perf", "row")
    assert rows["size"].to_list() == [268435456, 536870912, 1073741824]
    assert rows["oop_busbw"].to_list() == [25.72, 25.82, 25.95] and rows["ip_busbw"].to_list() == [25.72, 25.83, 25.95]
    assert rows.select("count", "type", "redop", "root", "oop_time_us", "oop_algbw", "oop_wrong").row(0) == (
        67108864, "float", "sum", -1, 15654.0, 17.15, 0.0)
    assert table(run, "nccl_perf", "device")["bus"].to_list() == ["0000:85:00", "0000:86:00", "0000:89:00", "0000:8d:00"]
    s = nccl(run).summary
    assert (s["busbw_large"], s["perf_nranks"], s["perf_tests"]) == (25.95, 4, ["all_reduce_perf"])
    assert findings(run) == {}  # P2P over PCIe at the link's bound: healthy, so quiet


def test_17_nvlink_bridge_busbw_and_bare_prefixes(ingest_one):
    _, run = ingest_one(sample("nccl", "17_"))
    rows = table(run, "nccl_perf", "row")
    assert rows["ip_busbw"].to_list() == [115.56, 115.93] and rows["oop_time_us"].to_list() == [9306.7, 18535.0]
    link = table(run, "nccl_links", "link").row(0, named=True)
    assert (link["gpu"], link["host"], link["src_dev"], link["dst_dev"], link["peer_format"], link["conn_index"]) == (
        "1", None, "21000", "1000", "busid", 0)
    assert table(run, "nccl_links", "tree")["ntrees"].to_list() == [24]
    s = nccl(run).summary
    assert (s["perf_nranks"], s["busbw_large"], s["channels_max"]) == (2, 115.93, 24)  # ranks solved from busbw/algbw
    assert severities(run) == {}  # NVLink-class busbw over a healthy transport: nothing to say


def test_19_startup_allreduce_timeout(ingest_one):
    _, run = ingest_one(sample("nccl", "19_"))
    wd = fields(run, "pg_watchdog_timeout")
    assert len(wd) == 2  # the second is the `terminated with exception` repeat
    assert {k: wd[0][k] for k in ("seq_num", "op_type", "numel_in", "numel_out", "timeout_ms", "ran_for_ms")} == {
        "seq_num": 2, "op_type": "ALLREDUCE", "numel_in": 134217728, "numel_out": 134217728, "timeout_ms": 600000,
        "ran_for_ms": 600059}
    assert wd[1]["pg"] == "2"
    prog = fields(run, "pg_watchdog_progress")[0]
    assert (prog["pg"], prog["work"], prog["last_enqueued"], prog["last_completed"]) == ("2", 2, 2, 1)
    ev = run.table("events").filter(pl.col("kind").str.starts_with("pg_")).collect()
    assert ev["rank"].unique().to_list() == ["0"]
    assert nccl(run).summary["watchdog_timeouts"] == 1
    f = findings(run)["hang"][0]
    assert f.severity == "critical" and "SeqNum 2" in f.verdict and "start-up hang" in f.verdict
    assert "NCCL_P2P_DISABLE=1" in f.recommendation and "134,217,728 elements" in f.verdict


def test_20_all_ranks_blocked_in_one_collective(ingest_one):
    _, run = ingest_one(sample("nccl", "20_"))
    wd = fields(run, "pg_watchdog_timeout")
    assert [w["ran_for_ms"] for w in wd] == [600060, 600067] and {w["seq_num"] for w in wd} == {1580}
    ev = run.table("events").sort("line_no").collect()
    assert ev["rank"].to_list() == ["0", "4", "0", "3"]
    s = nccl(run).summary
    assert (s["last_enqueued"], s["last_completed"], s["timeout_numel"]) == (1582, 1579, 466119168)
    f = findings(run)["hang"][0]
    assert f.severity == "critical" and "collective-level hang" in f.verdict and "mid-run" in f.verdict


def test_21_sglang_allgather_timeout_kills_the_process(ingest_one):
    _, run = ingest_one(sample("nccl", "21_"))
    wd = fields(run, "pg_watchdog_timeout")[0]
    assert (wd["pg"], wd["seq_num"], wd["op_type"], wd["numel_in"], wd["numel_out"], wd["ran_for_ms"]) == (
        "3", 9141, "_ALLGATHER_BASE", 19008, 152064, 600020)
    ev = run.table("events").sort("line_no").collect()
    assert ev["kind"].to_list() == ["pg_abort", "pg_watchdog_timeout", "pg_cpp_exception"]
    assert ev.filter(pl.col("kind") == "pg_cpp_exception")["span"].to_list() == [2]  # with its frame #0
    assert ev.filter(pl.col("kind") == "pg_watchdog_timeout")["rank"].to_list() == ["5"]
    f = findings(run)["hang"][0]
    assert "_ALLGATHER_BASE" in f.title and "mid-run" in f.verdict and "took the process down" in f.verdict


def test_23_pg_guid_prefix(ingest_one):
    _, run = ingest_one(sample("nccl", "23_"))
    prog = fields(run, "pg_watchdog_progress")
    assert {(p["pg"], p["pg_guid"], p["pg_desc"]) for p in prog} == {("0", "0", "default_pg")}
    s = nccl(run).summary
    assert (s["timeout_ranks"], s["timeout_seqs"], s["last_enqueued"], s["last_completed"]) == (["0", "1", "2"], [808], 811, 807)
    assert "blocked in the same collective" in findings(run)["hang"][0].verdict


def test_25_old_format_init_and_version_without_prefix(ingest_one):
    result, run = ingest_one(sample("nccl", "25_"))
    comms = table(run, "nccl_comms")
    version = comms.filter(pl.col("what") == "version").row(0, named=True)
    assert (version["version"], version["cuda"], version["host"], version["level"]) == ("2.8.2", "11.1", None, None)
    assert comms.filter(pl.col("what") == "net_ib")["value"].to_list() == ["No device found."]
    assert comms.filter(pl.col("what") == "bootstrap")["value"].to_list() == ["eno1np0:10.0.0.1<0>"]
    assert comms.filter(pl.col("what") == "affinity")["cuda_dev"].to_list() == [3, 2]
    link = table(run, "nccl_links", "link").row(0, named=True)
    assert (link["src_dev"], link["dst_dev"], link["transport"], link["conn_index"]) == ("c2000", "c1000", "P2P/direct pointer", None)
    devices = table(run, "nccl_perf", "device")
    assert devices.select("dev_rank", "group", "bus", "device_name").rows() == [
        (0, None, "0xc1", "NVIDIA RTX A6000"), (1, None, "0xc2", "NVIDIA RTX A6000")]
    assert severities(run) == {}  # a healthy transport stays quiet


# ---------------------------------------------------------------- line forms not in the samples

@pytest.mark.parametrize("line, want", [
    ("comm 0x7fe3d4001980 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE",
     {"what": "init_complete", "nranks": 1, "nvml_dev": 0, "bus_id": None}),
    ("comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE", {"bus_id": "2000", "nvml_dev": None}),
    ("comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1234abcd - Init COMPLETE", {"comm_id": "0x1234abcd"}),
    ("comm 0x560b rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 18000 commId 0x4aaa - Init START",
     {"what": "init_start", "rank": "3", "nvml_dev": 5, "comm_id": "0x4aaa", "comm": "0x560b"}),
    ("ncclCommSplit comm 0x5e30 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 57000 parent 0x5d10 splitCount 1 color 7 "
     "key 3- Init START", {"api": "ncclCommSplit", "parent": "0x5d10", "split_count": 1, "color": 7, "key": 3}),
    ("[Rank 3] ncclCommInitRank comm 0x5e30 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 57000 commId 0xad - Init START",
     {"api": "ncclCommInitRank", "rank": "3", "cuda_dev": 3}),
    ("comm 0x5e30 rank 0 nranks 2 cudaDev 0 busId 57000 commId 0xad - Abort COMPLETE", {"what": "abort_complete"}),
    ("comm 0x8a6f rank 2 nRanks 8 nNodes 2 localRanks 4 localRank 2 MNNVL 0",
     {"what": "comm_info", "nnodes": 2, "local_ranks": 4, "local_rank": 2}),
    ("Init timings - ncclCommInitRank: rank 0 nranks 8 total 0.92 (kernels 0.21, alloc 0.01, bootstrap 0.05, "
     "allgathers 0.01, topo 0.22, graphs 0.02, connections 0.37, rest 0.03)",
     {"what": "init_timings", "init_s": 0.92, "bootstrap_s": 0.05, "connections_s": 0.37}),
    ("24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
     {"coll_channels": 24, "collnet_channels": 24, "nvls_channels": 0, "p2p_per_peer": 32}),
    ("CC Off, workFifoBytes 1048576", {"what": "cc", "cc": "Off", "value": "1048576"}),
    ("NCCL_P2P_DISABLE set by environment to 1", {"env_var": "NCCL_P2P_DISABLE", "env_value": "1"}),
    ("NCCL_SOCKET_IFNAME set by environment to eth0.", {"env_var": "NCCL_SOCKET_IFNAME", "env_value": "eth0"}),
    ("Some line NCCL does not explain", {"what": "other", "value": "Some line NCCL does not explain"}),
])
def test_comm_line_forms(line, want):
    got = parse(nccl_format.FORMAT, frame_of((f"node1:12:34 [3] NCCL INFO {line}",)), CTX)
    row = got.tables["nccl_comms"].row(0, named=True)
    assert {k: row.get(k) for k in want} == want and row["host"] == "node1" and row["gpu"] == "3"


@pytest.mark.parametrize("line, want", [
    ("node1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
     {"transport": "P2P/CUMEM", "read": True, "peer_format": "nvml"}),
    ("node1:12:34 [0] NCCL INFO Channel 02/1 : 0[0] -> 5[5] via P2P/indirect/2[2]", {"transport": "P2P/indirect"}),
    ("node1:12:34 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/CE/CE", {"transport": "SHM", "ce": True}),
    ("node1:12:34 [0] NCCL INFO Channel 00/0 : 6[44000] -> 3[4a000] [receive] via NET/IB/1(5)/GDRDMA/Shared",
     {"transport": "NET/IB", "direction": "receive", "pxn_rank": 5, "shared": True, "gdr": True}),
    ("node1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0", {"transport": "NET/Socket"}),
    ("[2025-06-01 12:00:00] node1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", {"transport": "P2P/IPC"}),
    ("[0] node1:12:34 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC", {"gpu": "2", "src_rank": 2}),
    ("[rank4]: node1:12:34 [4] NCCL INFO Channel 00/0 : 4[4] -> 5[5] via P2P/IPC", {"gpu": "4", "src_rank": 4}),
    ("[1,0]<stdout>:node1:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", {"host": "node1", "pid": "12"}),
    ("(VllmWorkerProcess pid=536) node1:536:536 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct",
     {"process": "VllmWorkerProcess pid=536", "transport": "SHM", "channel": 1}),
])
def test_link_line_forms(line, want):
    row = parse(nccl_format.FORMAT, frame_of((line,)), CTX).tables["nccl_links"].row(0, named=True)
    assert {k: row[k] for k in want} == want


# The shapes of releases before 2.7 (docs/formats-nccl.md), one per print statement of NCCL's source.
@pytest.mark.parametrize("line, want", [
    ("h:1:2 [4] NCCL INFO Ring 00 : 12[41000] -> 11[2d000] via P2P/IPC",  # 2.5-2.6
     {"channel": 0, "src_rank": 12, "src_dev": "41000", "dst_rank": 11, "peer_format": "busid", "src_gpu": None}),
    ("h:1:2 [1] NCCL INFO Ring 00 : 1[23000] -> 8[1e000] [send] via NET/IB/1/GDRDMA",
     {"direction": "send", "transport": "NET/IB", "gdr": True, "rank": "1"}),
    ("h:1:2 [3] NCCL INFO Ring 00 : 3[b0] -> 0[80] via direct shared memory", {"transport": "SHM", "peer_format": "busid"}),
    ("h:1:2 [2] NCCL INFO Ring 00 : 26[2] -> 24[0] via P2P/IPC",  # 2.3-2.4: the cudaDev
     {"peer_format": "cuda", "src_gpu": 2, "dst_gpu": 0, "transport": "P2P/IPC"}),
    ("h:1:2 [0] NCCL INFO Ring 01 : 0[0] -> 1[1] via P2P/direct pointer", {"channel": 1, "transport": "P2P/direct pointer"}),
    ("h:1:2 [0] NCCL INFO Ring 00 : 34 -> 33 [send] via NET/Socket/0",  # 2.4: NET lines carry no ids
     {"src_rank": 34, "dst_rank": 33, "src_dev": None, "peer_format": None, "transport": "NET/Socket", "rank": "34"}),
    ("h:1:2 [0] NCCL INFO Ring 00 : 16 -> 24 [receive] via NET/Socket/0", {"direction": "receive", "rank": "24"}),
    ("h:1:2 [0] NCCL INFO Ring 00 : 7 -> 8 via NET/IB/0/GDRDMA",  # 2.3: the receiver prints, no direction
     {"direction": "receive", "rank": "8", "transport": "NET/IB"}),
    ("h:1:2 [0] NCCL INFO Ring 00 : 0 -> 1 via P2P/common device", {"transport": "P2P", "peer_format": None}),
    ("1  [4] NCCL INFO Ring 00 : 12[41000] -> 13[42000] via P2P/IPC", {"gpu": "4", "host": None, "src_rank": 12}),
])
def test_old_link_line_forms(line, want):
    row = parse(nccl_format.FORMAT, frame_of((line,)), CTX).tables["nccl_links"].row(0, named=True)
    assert {k: row[k] for k in want} == want and row["what"] == "link"


@pytest.mark.parametrize("line, want", [
    ("Coll 00 : 3 [send] via COLLNET/SHARP/0/GDRDMA", {"what": "collnet", "transport": "COLLNET/SHARP", "gdr": True}),
    ("CollNet 01/0 : 5 [receive] via COLLNET/SHARP/1", {"channel": 1, "conn_index": 0, "direction": "receive"}),
    ("Ring 00 :    0   1   2   3", {"what": "ring", "ring_len": 4, "nchannels": None}),
    ("Channel 01 :    0   3   2   1", {"what": "ring", "channel": 1, "ring_len": 4}),
    ("Ring 00 : 7 -> 0 -> 1", {"what": "ring_graph", "prev": 7, "me": 0, "next": "1"}),
])
def test_collnet_and_ring_listing_forms(line, want):
    row = parse(nccl_format.FORMAT, frame_of((f"h:1:2 [0] NCCL INFO {line}",)), CTX).tables["nccl_links"].row(0, named=True)
    assert {k: row[k] for k in want} == want


def test_47_old_ring_behind_user_line_numbers_is_healthy(ingest_one):
    _, run = ingest_one(sample("nccl", "47_"))
    links = table(run, "nccl_links", "link")
    assert links.height == 11 and links["host"].null_count() == 11 and links["peer_format"].unique().to_list() == ["busid"]
    assert dict(links["transport"].value_counts().iter_rows()) == {"P2P/IPC": 9, "NET/IB": 2}
    assert severities(run) == {}  # a healthy transport stays quiet


def test_50_and_63_direct_shared_memory_is_shm(ingest_one):
    _, run = ingest_one(sample("nccl", "50_"))
    links = table(run, "nccl_links", "link")
    assert links.select("src_rank", "src_dev", "dst_rank", "dst_dev").rows() == [(3, "b0", 0, "80"), (1, "90", 2, "c0")]
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and "2 of 2" in f.verdict and "host memory (SHM)" in f.verdict
    _, run = ingest_one(sample("nccl", "63_"), name="t63")
    assert table(run, "nccl_links", "link")["transport"].to_list() == ["SHM"] * 5


def test_51_old_ring_p2p_ipc_cuda_devices(ingest_one):
    _, run = ingest_one(sample("nccl", "51_"))
    links = table(run, "nccl_links", "link")
    assert links.height == 19 and links["peer_format"].unique().to_list() == ["cuda"]
    first = links.row(0, named=True)
    assert (first["host"], first["src_rank"], first["src_gpu"], first["dst_rank"], first["dst_gpu"]) == ("host4", 26, 2, 24, 0)
    assert severities(run) == {}  # a healthy transport stays quiet


def test_49_nccl24_socket_ring_across_hosts_says_tcp(ingest_one):
    _, run = ingest_one(sample("nccl", "49_"))
    links = table(run, "nccl_links", "link")
    assert links.height == 11 and links["transport"].unique().to_list() == ["NET/Socket"]
    assert links.filter(pl.col("direction") == "receive")["rank"].to_list() == ["24", "28", "52", "60", "32"]
    nic = table(run, "nccl_topo", "nic_distance")
    assert nic.height == 16 and nic.select("src", "dst", "path_type").unique().rows() == [("GPU/0", "NET/Socket", "PHB")]
    f = findings(run)["nccl-transport"][0]
    assert (f.severity, f.title) == ("info", "Inter-node traffic over TCP sockets")
    assert "(11 from 11 hosts) uses NET/Socket" in f.verdict and "No InfiniBand/RoCE device appears" in f.verdict
    assert "channel(s) for" not in f.verdict and "talk P2P" not in f.verdict  # one GPU per node: nothing P2P


def test_42_inter_node_legs_on_sockets_beside_p2p(ingest_one):
    _, run = ingest_one(sample("nccl", "42_"))
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "info" and "every inter-node connection shown (2) uses NET/Socket" in f.verdict
    assert f.metrics["socket_links"] == 2 and f.metrics["ib_devices_listed"] is False


def test_infiniband_links_get_no_socket_part(ingest_one):
    for prefix in ("06_", "52_"):
        _, run = ingest_one(sample("nccl", prefix), name=f"t{prefix}")
        assert all("TCP sockets" not in f.verdict for f in findings(run).get("nccl-transport", []))


def test_unused_ib_devices_make_the_socket_part_a_warning(tmp_path, ingest_one):
    log = tmp_path / "nccl.log"
    log.write_text("h1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
                   "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
                   "h2:3:4 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n")
    _, run = ingest_one(log)
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and "lists IB/RoCE devices but did not use them" in f.verdict
    assert f.metrics["ib_devices_listed"] is True and f.impact > 0


def test_74_two_headers_both_rank_0_are_separate_jobs(ingest_one):
    _, run = ingest_one(sample("nccl", "74_"))
    lone = nccl(run).frames["lone_processes"]
    assert lone.select("line_no", "why").rows() == [(9, "rank_twice"), (10, "rank_twice")]
    f = findings(run)["nccl-tests-no-mpi"][0]
    assert (f.severity, f.confidence) == ("warning", "medium") and "2 processes each list themselves as the same rank" in f.verdict
    assert "MPI=1" in f.recommendation


def test_75_and_76_interleaved_rows_of_lone_processes(ingest_one):
    _, run = ingest_one(sample("nccl", "75_"))
    lone = nccl(run).frames["lone_processes"]
    assert dict(lone.group_by("why").len().iter_rows()) == {"interleaved": 3, "nranks_1": 5}
    f = findings(run)["nccl-tests-no-mpi"][0]
    assert f.confidence == "high" and "restart 3 time(s)" in f.verdict and "busbw 0.00" in f.verdict
    assert "nccl-bandwidth" not in findings(run)
    _, run = ingest_one(sample("nccl", "76_"), name="t76")
    lone = nccl(run).frames["lone_processes"]
    assert lone.select("line_no", "why").rows() == [(8, "interleaved"), (10, "interleaved")]  # 8 after 256, 16 after 512


def test_a_table_printed_twice_in_a_row_is_one_process(tmp_path, ingest_one):
    """`-N 2` repeats a whole sweep: one restart, every run complete, so nothing interleaves."""
    rows = [line for line in sample("nccl", "15_").read_text().splitlines() if " float " in line]
    log = tmp_path / "cycles.log"
    log.write_text("\n".join(rows + rows + rows) + "\n")
    _, run = ingest_one(log)
    assert nccl(run).frames["lone_processes"].height == 0 and "nccl-tests-no-mpi" not in findings(run)


def test_timestamped_warn_with_function_and_its_category():
    lines = ("[2025-06-01 12:00:00] node1:12:34 [0] transport/p2p.cc:275 (p2pSetup) NCCL WARN Cuda failure "
             "'peer access is not supported between these two devices'",
             "node1:12:34 [0] NCCL INFO transport/p2p.cc:275 -> 1")
    got = parse(nccl_format.FORMAT, frame_of(lines), CTX)
    ev = got.tables["events"].sort("line_no")
    warn = ev.row(0, named=True)
    assert (warn["kind"], warn["severity"], warn["level"], str(warn["ts"])) == ("nccl_warn", "warning", "WARN", "2025-06-01 12:00:00")
    assert warn["message"].startswith("Cuda failure 'peer access")
    assert json.loads(warn["fields"]) == {"category": "cuda_failure", "src": "transport/p2p.cc:275", "func": "p2pSetup",
                                          "host": "node1", "pid": 12, "cuda_dev": 0}
    trail = json.loads(ev.row(1, named=True)["fields"])
    assert (trail["where"], trail["code"], trail["host"]) == ("transport/p2p.cc:275", 1, "node1")


@pytest.mark.parametrize("line, want", [
    ("[E ProcessGroupNCCL.cpp:458] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=512, OpType=ALLREDUCE, "
     "Timeout(ms)=1800000) ran for 1800844 milliseconds before timing out.",
     {"seq_num": 512, "timeout_ms": 1800000, "ran_for_ms": 1800844, "numel_in": None}),
    ("[E ProcessGroupNCCL.cpp:414] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
     "OpType=BROADCAST, TensorShape=[1024, 8], Timeout(ms)=1800000) ran for 1803964 milliseconds before timing out.",
     {"op_type": "BROADCAST", "tensor_shape": "[1024, 8]"}),
    ("[rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:616] [PG ID 1 PG GUID 1(tp) Rank 1] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=3, OpType=_ALLGATHER_BASE, NumelIn=10, NumelOut=80, "
     "Timeout(ms)=600000) ran for 600500 milliseconds before timing out.",
     {"pg": "1", "pg_desc": "tp", "numel_out": 80}),
])
def test_three_worknccl_layouts(line, want):
    row = parse(nccl_format.FORMAT, frame_of((line,)), CTX).tables["events"].row(0, named=True)
    got = json.loads(row["fields"])
    assert row["kind"] == "pg_watchdog_timeout" and {k: got[k] for k in want} == want


# ---------------------------------------------------------------- NCCL inside a server log

SGLANG_MIXED = [
    "[2026-01-02 03:04:05 TP0] Load weight begin. avail mem=77.18 GB",
    "node01:1000:1010 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "node01:1000:1010 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 "
    "commId 0xfeed - Init START",
    "node01:1001:1011 [1] NCCL INFO ncclCommInitRank comm 0x66bb rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 "
    "commId 0xfeed - Init START",
    "node01:1000:1010 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
    "node01:1000:1010 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct",
    "node01:1001:1011 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct",
    "node01:1000:1010 [0] NCCL INFO Connected all rings",
    "node01:1000:1010 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 "
    "commId 0xfeed - Init COMPLETE",
    "[2026-01-02 03:05:00 TP0] Decode batch, #running-req: 32, #token: 9000, token usage: 0.10, cuda graph: True, "
    "gen throughput (token/s): 849.00, #queue-req: 0",
    "[rank1]:[E102 03:15:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=57344, NumelOut=57344, Timeout(ms)=600000) ran for "
    "600031 milliseconds before timing out.",
    "[2026-01-02 03:15:01 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
]


def test_nccl_lines_inside_an_sglang_log_are_claimed_by_nccl(tmp_path, ingest_one):
    path = tmp_path / "server.log"
    path.write_text("\n".join(SGLANG_MIXED) + "\n")
    result, run = ingest_one(path)
    src = result.sources[0]
    assert src.format == "sglang"  # NCCL lines outnumber SGLang's, but NCCL is embeddable
    assert src.lines_by_table == {"events": 3, "stats": 1, "nccl_comms": 5, "nccl_links": 3}
    links = table(run, "nccl_links", "link")
    assert links["transport"].to_list() == ["SHM", "SHM"]
    fam = nccl(run)
    assert fam.frames["links"]["comm_key"].unique().to_list() == ["0xfeed"]  # tied to their Init START
    assert fam.summary["p2p_disable"] == "1" and fam.summary["nccl_versions"] == ["2.21.5"]
    ev = run.table("events").sort("line_no").collect()
    assert ev["kind"].to_list() == ["load_weight_begin", "pg_watchdog_timeout", "watchdog_timeout"]
    found = findings(run)
    transport = found["nccl-transport"][0]
    assert transport.severity == "warning" and "NCCL_P2P_DISABLE=1" in transport.verdict
    h = found["hang"][0]
    assert h.severity == "critical" and "SeqNum 4411" in h.verdict and "SGLang's watchdog" in h.verdict
    assert "Decode batch, #running-req: 32" in h.verdict  # the last stats line before the timeout


def test_many_nccl_lines_do_not_take_over_detection():
    lines = [SGLANG_MIXED[9]] + [SGLANG_MIXED[5]] * 50
    fmt, scores = formats.detect(pl.Series(lines))
    assert fmt.name == "sglang" and scores["nccl"] > scores["sglang"]


def test_torch_python_error_line_is_left_to_the_server_format():
    """`...DistBackendError: NCCL error in:` ends a Python traceback the server format owns."""
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")
    assert not parse(nccl_format.FORMAT, frame_of((line,)), CTX).claimed.any()


# ---------------------------------------------------------------- fuzzing

POOL = [line for p in NCCL for line in p.read_text().splitlines() if line.strip()] + [
    s for fmt in (nccl_format.FORMAT, nccl_tests.FORMAT) for kind in fmt.kinds for s in kind.samples] + SGLANG_MIXED
NOISE = st.sampled_from(list(",:%.[]() x9-\t'\"{}/|>#=") + ["NCCL INFO ", "NCCL WARN ", " via ", "0x", "Channel "])


@st.composite
def mutated(draw) -> str:
    return mutate(draw, draw(st.sampled_from(POOL)), st.lists(NOISE, max_size=4).map("".join), "ff")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated(), min_size=1, max_size=25), st.sampled_from(["nccl", "nccl-tests", "sglang"]))
def test_fuzzed_lines_never_raise_and_are_all_accounted(lines, primary):
    lines = [line for line in lines if line.strip()]
    if not lines:
        return
    frame = frame_of(lines)  # a pool sample may span several lines
    _, counts = parse_batch(frame, formats.FORMATS[primary], CTX)
    assert sum(sum(n.values()) for n in counts.values()) == frame.height


def test_flight_recorder_and_heartbeat_notices():
    lines = (
        "[rank0]:[I1206 18:44:13.1 ProcessGroupNCCL.cpp:1302] [PG 0 Rank 0] ProcessGroupNCCL dumping nccl trace to "
        "/tmp/nccl_trace_rank_0",
        "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this local rank "
        "and we will try our best to dump the debug info. Last enqueued NCCL work: 811, last completed NCCL work: 807.",
        "[rank3]:[E1206 18:52:13.1 ProcessGroupNCCL.cpp:1400] [PG ID 0 PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL's "
        "watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
    )
    ev = parse(nccl_format.FORMAT, frame_of(lines), CTX).tables["events"].sort("line_no")
    assert ev["kind"].to_list() == ["flight_recorder", "flight_recorder", "pg_watchdog_stuck"]
    dump, signal, stuck = (json.loads(f) for f in ev["fields"])
    assert dump["path"] == "/tmp/nccl_trace_rank_0"
    assert (signal["signal_from"], signal["last_enqueued"], signal["last_completed"]) == ("this local rank", 811, 807)
    assert stuck["stuck_s"] == 480 and ev["rank"].to_list() == ["0", "0", "3"]


def test_158_heartbeat_monitor_alone_is_a_hang(ingest_one):
    """SGLang, 8 ranks: only PyTorch's heartbeat monitor lines, no collective timeout: the
    watchdog thread itself stopped on PG 3 (121 works queued), which is a hang."""
    result, run = ingest_one(sample("nccl", "158_"))
    assert result.sources[0].lines_by_table == {"events": 6}
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity, finding.title) == ("hang", "critical", "ProcessGroupNCCL watchdog stuck")
    assert finding.metrics["heartbeat_timeouts"] == 6 and finding.metrics["watchdog_timeouts"] == 0
    assert "in PG 3 on rank(s) 0, 1, 6, 7, 121 collective(s) still queued" in finding.verdict
    assert "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC" in finding.recommendation


def test_159_watchdog_stuck_in_the_pytorch_2_3_form(ingest_one):
    """vLLM under KServe: `[PG 2 Rank 1] [PG 2 Rank 1] ProcessGroupNCCL's watchdog got stuck for
    600 seconds` (an F line), the monitor's timeout and its `preparing to dump debug info`."""
    result, run = ingest_one(sample("nccl", "159_"))
    assert result.sources[0].lines_by_table == {"events": 3}
    assert table(run, "events")["kind"].to_list() == ["pg_heartbeat_timeout", "flight_recorder", "pg_watchdog_stuck"]
    (finding,) = diagnose(run)
    assert finding.id == "hang" and finding.metrics["watchdog_stuck_s"] == 600
    assert "stuck for 600 s in PG 2 on rank(s) 1, 138 collective(s) still queued" in finding.verdict


def test_the_monitors_terminating_line_alone_is_a_hang(ingest_one, tmp_path):
    """The heartbeat monitor's fatal last line, `Terminating the process after attempting to dump
    debug info, due to ProcessGroupNCCL watchdog hang.` (a real PyTorch 2.5+ line), with nothing
    else: the watchdog thread was stuck."""
    path = tmp_path / "rank0.log"
    path.write_text("[rank0]:[F919 07:00:13.418192812 ProcessGroupNCCL.cpp:1653] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                    "[PG ID 0 PG GUID 0(default_pg) Rank 0] Terminating the process after attempting to dump debug info, "
                    "due to ProcessGroupNCCL watchdog hang.\n")
    _, run = ingest_one(path)
    (finding,) = diagnose(run)
    assert (finding.id, finding.title, finding.metrics["heartbeat_timeouts"]) == (
        "hang", "ProcessGroupNCCL watchdog stuck", 1)


def test_hccl_transport_init_error_is_the_collective_library_failing_not_a_crash(ingest_one):
    """vllm/155 (vllm-ascend as a GRPO rollout server): HCCL's `EI0009 ... Transport init error`
    with its `Solution:` line, then the engine's collective_rpc traceback it explains."""
    result, run = ingest_one(sample("vllm", "155_"))
    (ev,) = fields(run, "hccl_error")
    assert (ev["code"], ev["pid"], ev["error"]) == ("EI0009", 2225827, "Transport init error")
    assert ev["reason"].startswith("[Create][DestLink]Create Dest error! createLink")
    (finding,) = diagnose(run)
    assert (finding.id, finding.title) == ("nccl-error", "HCCL error")
    assert "HCCL (the collective library of Ascend NPUs) failed creating the links between NPU ranks" in finding.verdict
    assert "HCCL_IF_IP" in finding.recommendation and result.sources[0].lines_by_table.get("unparsed", 0) == 0


def test_86_gdr_off_by_distance_is_a_note(ingest_one):
    """NCCL 2.4.7, 2 nodes x 4 GPUs, one HCA: GDR disabled for GPUs 2 and 3 (distance 3 >= 2)."""
    _, run = ingest_one(sample("nccl", "86_"))
    found = diagnose(run)
    assert found[0].id == "nccl-gdr-off" and found[0].severity == "info"
    assert found[0].metrics == {"gpus": 3, "distance": 3, "gdr_level": 2}
    assert "GPU 2, 3 on node01; 2 on node02" in found[0].verdict
    assert [e.line for e in found[0].evidence] == [3, 9, 13]


def test_213_ib_legs_without_gdrdma_are_gdr_off(ingest_one):
    """2 nodes x 4 GPUs, every inter-node leg `via NET/IBext/0`, none `/GDRDMA`, no `Disabled` line."""
    _, run = ingest_one(sample("nccl", "213_"))
    found = diagnose(run)
    assert [f.id for f in found] == ["nccl-gdr-off", "nccl-one-nic"]
    gdr = found[0]
    assert (gdr.severity, gdr.confidence) == ("info", "medium")
    assert gdr.metrics == {"ib_connections": 3, "reason": None} and "does not say why" in gdr.verdict


def test_99_gdr_off_says_no_peer_memory_module(ingest_one):
    """2 nodes x 1 GPU over NET/IB/0; NCCL prints `GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)`."""
    _, run = ingest_one(sample("nccl", "99_"))
    (gdr,) = findings(run)["nccl-gdr-off"]
    assert (gdr.confidence, gdr.metrics) == ("high", {"ib_connections": 4, "reason": "no module"})
    assert "nvidia-peermem" in gdr.verdict and [e.line for e in gdr.evidence] == [5, 6, 2]


def test_57_sockets_on_loopback_without_other_hosts_is_a_low_note(ingest_one):
    _, run = ingest_one(sample("nccl", "57_"))
    (finding,) = [f for f in diagnose(run) if f.id == "nccl-loopback"]
    assert (finding.severity, finding.confidence) == ("info", "low")
    assert finding.metrics == {"interface": "lo", "address": "127.0.0.1", "hosts": 1}
    assert "NCCL_SOCKET_IFNAME=lo" in finding.verdict and [e.line for e in finding.evidence] == [5, 7]


def test_sockets_on_loopback_with_two_hosts_is_a_warning(ingest_one, tmp_path):
    """nccl/57's lines plus nccl/86's, which come from node01 and node02: other hosts exist."""
    both = tmp_path / "two.log"
    both.write_text(sample("nccl", "57_").read_text() + sample("nccl", "86_").read_text())
    _, run = ingest_one(both)
    (finding,) = [f for f in diagnose(run) if f.id == "nccl-loopback"]
    assert finding.severity == "warning" and finding.metrics["hosts"] == 3


def test_79_one_rank_communicator(ingest_one, tmp_path):
    """One process alone (nccl/79) is what a one-GPU job prints: quiet. The same rings from two
    hosts, each alone, are processes that did not join one communicator."""
    path = sample("nccl", "79_")
    _, run = ingest_one(path)
    assert "nccl-lone-rank" not in {f.id for f in diagnose(run)}
    lines = path.read_text().splitlines(keepends=True)
    two = tmp_path / "two.log"
    two.write_text("".join(lines[:12]) + "".join(line.replace("host1:", "host2:") for line in lines[12:]))
    _, run = ingest_one(two, name="two")
    (finding,) = [f for f in diagnose(run) if f.id == "nccl-lone-rank"]
    assert (finding.severity, finding.metrics["hosts"], finding.metrics["channels"]) == ("warning", 2, 32)


@pytest.mark.parametrize("prefix", ["07_", "25_", "82_", "83_"])
def test_real_bootstrap_interfaces_are_not_loopback(prefix, ingest_one):
    _, run = ingest_one(sample("nccl", prefix))
    assert not {"nccl-loopback", "nccl-lone-rank", "nccl-gdr-off"} & {f.id for f in diagnose(run)}


def test_93_old_rows_without_redop_or_root_named_by_the_command_below(ingest_one):
    """nccl-tests of the NCCL 2.6 era print no redop/root columns; the ticket pastes the rows, then the command."""
    result, run = ingest_one(sample("nccl", "93_"))
    assert result.sources[0].lines_by_table == {"nccl_perf": 15, "unparsed": 1}  # unparsed: the ``` fence
    perf = perf_rows(run.table("nccl_perf").collect())
    assert perf.height == 12 and set(perf["test"]) == {"broadcast_perf"}
    assert perf.filter(pl.col("size") == 134217728).select("oop_busbw", "ip_busbw", "ip_wrong").row(0) == (20.34, 21.86, 0.0)
    # 20 GB/s is not low by the PCIe rule of thumb, and no GPU is named: no reference, no verdict
    assert not [f for f in diagnose(run) if f.id == "nccl-bandwidth"]


def test_100_two_channels_through_one_nic_are_what_the_network_gives(ingest_one):
    """2 nodes x 8 A800, every inter-node connection on NET/IB/0: 2 channels is one NIC's share, no warning."""
    _, run = ingest_one(sample("nccl", "100_"))
    assert "nccl-transport" not in findings(run)
    (f,) = findings(run)["nccl-one-nic"]
    assert f.severity == "info" and "one NIC (NET/IB/0/GDRDMA)" in f.verdict


def test_123_two_summaries_with_no_row_between_are_two_lone_jobs(ingest_one):
    """nccl-tests#27: mpirun on two hosts of a binary built without MPI=1; each process prints
    its own `# Avg bus bandwidth` (3.94145, 3.94156), pasted inside backticks."""
    _, run = ingest_one(sample("nccl", "123_"))
    lone = nccl(run).frames["lone_processes"]
    assert lone.select("line_no", "why").rows() == [(2, "summary_twice"), (5, "summary_twice")]
    f = findings(run)["nccl-tests-no-mpi"][0]
    assert (f.severity, f.confidence) == ("warning", "medium") and "2 `# Avg bus bandwidth` summaries" in f.verdict


def test_a_summary_after_each_of_two_tables_is_one_job_each(tmp_path, ingest_one):
    """Two runs pasted one after the other, each its rows and its summary: not lone processes."""
    rows = [line for line in sample("nccl", "15_").read_text().splitlines() if " float " in line]
    log = tmp_path / "two-runs.log"
    log.write_text("\n".join(rows + ["# Avg bus bandwidth    : 3.94145 "] + rows + ["# Avg bus bandwidth    : 3.9 "]) + "\n")
    _, run = ingest_one(log)
    assert nccl(run).frames["lone_processes"].height == 0 and "nccl-tests-no-mpi" not in findings(run)


def test_120_the_old_completion_error_wording_is_a_failure(ingest_one):
    """nccl#902: NCCL 2.4-2.7 print `Got completion with error 12` without `from peer`."""
    _, run = ingest_one(sample("nccl", "120_"))
    assert [f["category"] for f in fields(run, "nccl_warn")] == ["ib_completion_error"]
    (f,) = [f for f in diagnose(run) if f.id == "nccl-error"]
    assert "InfiniBand/RoCE" in f.verdict


def test_119_fast_busbw_on_16_unnamed_ranks_gets_no_verdict(ingest_one):
    """cluster-toolkit#3644: all_gather rows only, 185 GB/s at 2 GiB on 16 ranks (from busbw/algbw), no GPU
    named: no reference fits, so nothing is said (the healthy log stays quiet)."""
    _, run = ingest_one(sample("nccl", "119_"))
    assert nccl(run).summary["busbw_large"] == 185.8 and severities(run) == {}


def test_p2p_level_is_moot_with_one_rank_a_node(ingest_one, tmp_path):
    """nccl/131 (hold-out 5): NCCL_P2P_LEVEL=LOC on three nodes of one GPU each (`localRanks 1`):
    no two GPUs share a box, so the setting turns off nothing; with two local ranks it would."""
    path = next((SAMPLES / "nccl").glob("131_*.log"))
    _, run = ingest_one(path)
    assert "nccl-transport" not in findings(run)  # a working RoCE init: nothing to say
    two = tmp_path / "two.log"
    two.write_text(path.read_text().replace("localRanks 1 localRank 0", "localRanks 2 localRank 0"))
    _, run = ingest_one(two, name="two")
    assert findings(run)["nccl-transport"][0].title == "P2P disabled by the environment"


def test_ranks_on_several_hosts_get_no_single_box_verdict(ingest_one):
    """nccl/129 (hold-out 5): 16 H100 ranks on two hosts reach 338 GB/s, bounded by the network
    between them; the 8-GPU NVSwitch reference is one box's, so it gives no verdict."""
    _, run = ingest_one(sample("nccl", "129_"))
    assert nccl(run).summary["perf_hosts"] == 2 and "nccl-bandwidth" not in findings(run)


def test_272_busbw_between_nodes_below_any_rdma_nic(ingest_one):
    """nccl/272 (hold-out 14): sendrecv between two H100 nodes over one RoCE NIC at 5.8 GB/s. The
    log names no NIC speed, so the floor is one 100 Gb NIC's, said with low confidence."""
    _, run = ingest_one(sample("nccl", "272_"))
    f = findings(run)["nccl-bandwidth"][0]
    assert (f.severity, f.confidence, f.metrics["busbw_large"], f.metrics["perf_hosts"]) == ("warning", "low", 5.86, 2)
    assert "does not give the NICs' speed" in f.verdict and "NVIDIA H100 80GB HBM3" in f.verdict


def test_273_healthy_nvlink_sendrecv_is_quiet(ingest_one):
    _, run = ingest_one(sample("nccl", "273_"))
    assert nccl(run).summary["busbw_large"] == 195.56 and findings(run) == {}


def test_137_a_header_that_lost_every_hash_is_still_nccl_tests(ingest_one):
    """nccl-tests#249: `mpirun -n 1` on one A10G, pasted without the `#` of the header lines:
    the notices and the three column lines are typed like their `#` forms, and the ssh
    `Permanently added` line of the launch before them."""
    result, run = ingest_one(sample("nccl", "137_"))
    assert result.sources[0].unparsed == 0
    assert table(run, "nccl_perf")["what"].to_list() == [
        "ssh_notice", "params", "notice", "notice", "device", "columns", "columns", "columns"]
    assert not {"nccl-bandwidth", "nccl-tests-no-mpi"} & set(findings(run))


def test_143_a_process_group_warning_in_an_nccl_log_is_typed_and_no_hang(ingest_one):
    """nccl#1646: a B200 init with PyTorch's `using GPU 6 as device used by this process is
    currently unknown ... can potentially cause a hang` between NCCL's lines: a warning
    event, not a hang."""
    result, run = ingest_one(sample("nccl", "143_"))
    assert result.sources[0].unparsed == 0
    (row,) = run.table("events").filter(pl.col("kind") == "torch_warning").collect().iter_rows(named=True)
    assert (row["line_no"], row["severity"]) == (8, "warning")
    assert not {"hang", "nccl-error"} & {f.id for f in diagnose(run)}


def test_291_could_not_enable_p2p_is_a_p2p_veto(ingest_one):
    """nccl/291 (hold-out 16): 2.10's `Could not enable P2P between dev 1(=1b000) and dev 0(=1a000)`."""
    _, run = ingest_one(sample("nccl", "291_"))
    f = findings(run)["nccl-transport"][0]
    assert f.severity == "warning" and "dev 0(=1a000) and dev 1(=1b000)" in f.verdict


def test_310_the_old_table_without_redop_makes_the_file_nccl_tests(ingest_one):
    """nccl/310 (hold-out 18): NCCL's channel lines then a 2.x table with an error column twice
    (`0e+00`) and no redop or root: read, and its 7.3 GB/s on 8 GPUs with SHM hops is low."""
    result, run = ingest_one(sample("nccl", "310_"))
    assert result.sources[0].format == "nccl-tests" and result.sources[0].lines_by_table["nccl_perf"] == 13
    assert {"nccl-bandwidth", "nccl-transport"} <= set(findings(run))
