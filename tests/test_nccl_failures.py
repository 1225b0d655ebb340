"""NCCL failures told from what only looks like one, on the real lines of hold-out batch 6
(fixtures/real/nccl/133-144): an HCA NCCL could not open at init is a transport downgrade,
not a fault; a return-code trail and nccl-tests' own failure line are faults."""

from __future__ import annotations

import json

import polars as pl

from conftest import sample
from loganalyze.diagnosis import diagnose


def categories(run) -> list[str]:
    warns = run.table("events").filter(pl.col("kind") == "nccl_warn").sort("line_no").collect()
    return [json.loads(f)["category"] for f in warns["fields"]]


def by_id(run) -> dict:
    return {f.id: f for f in diagnose(run)}


def test_134_an_hca_that_cannot_be_opened_is_sockets_not_a_crash(ingest_one):
    """nccl#451: in a container `Call to ibv_open_device failed`, `NET/IB : No device found`,
    `Using network Socket`; the job runs, slowly."""
    _, run = ingest_one(sample("nccl", "134_"))
    assert categories(run) == ["ib_probe_failed", "other"]
    found = by_id(run)
    assert "nccl-error" not in found
    f = found["nccl-transport"]
    assert (f.severity, f.title) == ("warning", "InfiniBand/RoCE device unusable: NCCL uses sockets")
    assert [e.line for e in f.evidence] == [2, 3, 5]  # the probe WARNs, the first socket line


def test_an_old_release_says_sockets_with_its_net_socket_line(ingest_one, tmp_path):
    """2.4-2.5 print no `Using network`: `NET/Socket : Using` after the failed probe says it."""
    old = tmp_path / "old.log"
    old.write_text("".join(line for line in sample("nccl", "134_").read_text().splitlines(keepends=True)
                           if "Using network" not in line))
    _, run = ingest_one(old)
    assert by_id(run)["nccl-transport"].title == "InfiniBand/RoCE device unusable: NCCL uses sockets"


def test_a_verb_that_fails_setting_up_a_connection_stays_a_failure(ingest_one):
    """nccl#551 (nccl/133): `Call to ibv_modify_qp failed with error No such device` fails init."""
    _, run = ingest_one(sample("nccl", "133_"))
    assert categories(run) == ["ib_call_failed"]
    f = by_id(run)["nccl-error"]
    assert f.severity == "critical" and "setting up a connection (an IB verbs call failed" in f.verdict
    assert "completion error" not in f.verdict


def test_an_ib_probe_without_a_socket_fallback_is_no_transport_finding(ingest_one, tmp_path):
    """One HCA of several failing its query while NCCL goes on with IB is no downgrade."""
    log = tmp_path / "probe.log"
    log.write_text("node01:1:1 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_query_device failed\n"
                   "node01:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n"
                   "node01:1:1 [0] NCCL INFO Using network IB\n")
    _, run = ingest_one(log)
    assert categories(run) == ["ib_probe_failed"]
    assert not {"nccl-error", "nccl-transport"} & set(by_id(run))


def test_144_a_return_code_trail_alone_is_a_failure(ingest_one):
    """nccl#697: socket channels connect, then `include/net.h:25 -> 2` and
    `transport/net.cc:515 -> 2` (ncclSystemError), no WARN line in the post."""
    _, run = ingest_one(sample("nccl", "144_"))
    f = by_id(run)["nccl-error"]
    assert f.severity == "critical" and f.metrics["events"] == 2
    assert "ncclSystemError, unwinding from include/net.h:25" in f.verdict


def test_the_plugin_loaders_probe_and_in_progress_are_no_failure(ingest_one, tmp_path):
    """nccl/57 (nccl#1053): `net.cc:79 -> 3` while NCCL looks for an external net plugin and
    goes on; `-> 7` is ncclInProgress (a non-blocking communicator), not an error."""
    log = tmp_path / "probe.log"
    log.write_text("host1:3048391:3048566 [0] NCCL INFO NCCL_IBEXT_DISABLE set by environment to 1.\n"
                   "host1:3048391:3048566 [0] NCCL INFO net.cc:79 -> 3\n"
                   "host1:3048391:3048566 [0] NCCL INFO init.cc:1562 -> 7\n"
                   "host1:3048391:3048566 [0] NCCL INFO Using network Socket\n")
    _, run = ingest_one(log)
    assert "nccl-error" not in by_id(run)


def test_nccl_tests_own_failure_line_is_typed_and_read_as_the_failure(ingest_one):
    """nccl-tests' NCCLCHECK line, behind mpirun's `host: ` (nccl/133, 2019) and in the 2018
    wording without `Test` after `Net : Connection closed by remote peer` (nccl/142)."""
    _, run = ingest_one(sample("nccl", "133_"))
    ev = run.table("events").filter(pl.col("kind") == "nccl_test_failure").collect()
    assert [json.loads(f) for f in ev["fields"]] == [
        {"host": "gpunode-b", "where": "common.cu:788", "error": "unhandled system error", "last_error": None}]
    _, run = ingest_one(sample("nccl", "142_"), name="t142")
    f = by_id(run)["nccl-error"]
    assert sorted(e.line for e in f.evidence) == [3, 4] and "a peer went away" in f.verdict


def test_an_ofi_completion_error_is_an_nccl_error_on_the_plugin(ingest_one):
    """nccl/265 (hold-out 14): 8x H200 over EFA, channels up through NET/AWS Libfabric, then
    `NCCL WARN NET/OFI Operation with NULL context completed with error`."""
    _, run = ingest_one(sample("nccl", "265_"))
    (finding,) = [f for f in diagnose(run) if f.id == "nccl-error"]
    assert "AWS OFI" in finding.verdict


def test_270_neuron_ccom_without_a_transport_is_an_nccl_error(ingest_one):
    """nccl/270 (hold-out 14): AWS Neuron's CCOM prints NCCL's envelope with its own tag; with the
    EFA plugin failing, `No transport found between devices` means no communicator."""
    result, run = ingest_one(sample("nccl", "270_"))
    assert result.sources[0].format == "nccl" and result.sources[0].lines_by_table["events"] == 4
    assert categories(run) == ["other", "other", "no_transport", "other"]
    f = by_id(run)["nccl-error"]
    assert f.severity == "critical" and "transport.cc:36 CCOM WARN No transport found" in f.evidence[0].text


def test_276_a_trail_line_nccl_goes_on_after_is_no_error(ingest_one):
    """nccl/276 (hold-out 15): NCCL 2.4.8 probing a veth: `Could not find real path`, then
    `include/net.h:19 -> 2`, then the NIC distances: handled, a healthy socket startup."""
    _, run = ingest_one(sample("nccl", "276_"))
    assert "nccl-error" not in by_id(run)


def test_277_a_rank_that_checked_in_twice_is_a_bootstrap_failure(ingest_one):
    _, run = ingest_one(sample("nccl", "277_"))
    assert categories(run)[-1] == "duplicate_rank"
    f = by_id(run)["nccl-error"]
    assert "two processes claimed the same rank" in f.verdict and "--ntasks-per-node" in f.recommendation


def test_280_wrong_elements_in_nccl_tests_are_corrupted_results(ingest_one):
    _, run = ingest_one(sample("nccl", "280_"))
    f = by_id(run)["nccl-error"]
    assert (f.title, f.metrics["wrong"], f.evidence[0].line) == ("nccl-tests found wrong results", 237858 + 238038, 10)


def test_281_mpi_tagged_rows_pasted_indented_are_read(ingest_one):
    result, run = ingest_one(sample("nccl", "281_"))
    assert result.sources[0].lines_by_table["nccl_perf"] == 9 and by_id(run) == {}


def test_302_libmlx5s_own_completion_error_is_an_rdma_failure(ingest_one):
    _, run = ingest_one(sample("nccl", "302_"))
    f = by_id(run)["nccl-error"]
    assert "InfiniBand/RoCE between processes" in f.verdict and "mlx5: host_unknown: got completion" in f.evidence[0].text


def test_292_a_traceback_after_nccls_failure_lines_is_their_consequence(ingest_one):
    _, run = ingest_one(sample("sglang", "292_"))
    assert list(by_id(run)) == ["nccl-error"]


def test_293_one_process_alone_is_quiet(ingest_one):
    _, run = ingest_one(sample("nccl", "293_"))
    assert by_id(run) == {}


def test_325_pytorchs_text_of_a_failed_nccl_call_is_an_nccl_error(ingest_one):
    """nccl/325 (hold-out 20): `[trainer0|0]:ncclInternalError: Internal check failed.` then `Last error:`."""
    _, run = ingest_one(sample("nccl", "325_"))
    (f,) = diagnose(run)
    assert f.id == "nccl-error"
    row = run.table("events").filter(pl.col("kind") == "nccl_result_error").collect().row(0, named=True)
    assert (row["line_no"], json.loads(row["fields"])["result"]) == (6, "ncclInternalError")
