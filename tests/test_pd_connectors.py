"""vLLM's KV connectors in PD disaggregation (the Mooncake connectors of vLLM and vllm-ascend,
NIXL) and the transfer engine's own connection errors: the request lines say how many
requests lost their KV cache, the engine's lines say why (fixtures/real/vllm/156-159)."""

from __future__ import annotations

import json

import polars as pl

from conftest import sample
from loganalyze.diagnosis import diagnose


def _events(run, kind: str) -> list[dict]:
    ev = run.table("events").filter(pl.col("kind") == kind).sort("line_no").collect()
    return [json.loads(f) for f in ev["fields"]]


def test_156_mooncake_connector_request_and_the_transport_that_could_not_connect(ingest_one):
    """vllm-ascend 0.11 1P1D: `Failed to connect to target: ..., status: 103900`, then the connector's
    two lines for one request: one request lost, the connection is the reason."""
    _, run = ingest_one(sample("vllm", "156_"))
    engine = _events(run, "transfer_error")
    assert [(e["peer"], e["error"]) for e in engine] == [("10.0.0.1:25482", "103900"), ("10.0.0.1:16584", None)]
    failed = _events(run, "kv_connector_failed")
    assert (failed[0]["backend"], failed[1]["reason"]) == ("Mooncake", "Mooncake transfer failed, ret: -1")
    (finding,) = diagnose(run)
    assert (finding.id, finding.severity, finding.metrics["requests"]) == ("kv-transfer", "critical", 1)
    assert "could not connect to the peer's transfer endpoint" in finding.verdict
    assert "HTTP 500" not in finding.verdict and "HCCL_IF_IP" in finding.recommendation
    assert [e.line for e in finding.evidence] == [3, 4]


def test_157_a_batch_transfer_timeout_is_why_the_tp_workers_lost_the_request(ingest_one):
    """Three `Sync batch data transfer timeout after 33 s` lines (glog I level), then two TP
    workers' `Mooncake transfer failed for request` for the same request: one request."""
    _, run = ingest_one(sample("vllm", "157_"))
    assert [e["timeout_ns"] for e in _events(run, "transfer_error")] == [33061142969, 33061132986, 33061198787]
    (finding,) = diagnose(run)
    assert finding.id == "kv-transfer" and finding.metrics == {
        "requests": 1, "lines": 2, "reason": "Mooncake transfer failed"}
    assert "stalled or failed before the KV cache arrived" in finding.verdict


def test_159_a_failed_nixl_handshake_is_the_kv_transfer_not_a_crash(ingest_one):
    """`Handshake with <engine> failed` and the traceback it starts: the decode side never reached
    the prefill engine; the line names no request, so "some"."""
    _, run = ingest_one(sample("vllm", "159_"))
    assert _events(run, "kv_connector_failed") == [{
        "backend": None, "request_id": None, "kv_request_id": None, "reason": None,
        "engine_id": "c00824be-282f-4719-9aeb-120dcb516863", "handshake": "failed", "step": None}]
    (finding,) = diagnose(run)
    assert (finding.id, finding.confidence, finding.metrics["requests"]) == ("kv-transfer", "medium", 0)
    assert finding.title == "PD disaggregation: some request(s) failed their KV transfer"
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST" in finding.recommendation


# vllm PR 26171's log of a failed metadata handshake: the zmq error's traceback tail, then the
# connector marking the request's blocks invalid (the decode side recomputes them).
HANDSHAKE_FAILED_FOR_REQUEST = """\
(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:820]   File "zmq/backend/cython/_zmq.py", line 186, in zmq.backend.cython._zmq._check_rc
(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:820]     raise Again(errno)
(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:820]     ^^^^^^^^^^^
(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:820] zmq.error.Again: Resource temporarily unavailable
(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:832] Handshake failed for request cmpl-6e8a849f-7ec0-4abe-b4c7-38bce04d53d1-0, marking blocks as invalid
"""


def test_a_handshake_failed_for_a_request_names_it(ingest_one, tmp_path):
    path = tmp_path / "decode.log"
    path.write_text(HANDSHAKE_FAILED_FOR_REQUEST)
    _, run = ingest_one(path)
    (finding,) = diagnose(run)
    assert (finding.id, finding.metrics["requests"], finding.metrics["reason"]) == (
        "kv-transfer", 1, "NIXL handshake failed")
    assert "could not complete the NIXL handshake" in finding.verdict


def test_162_nixl_connector_start_up_is_typed_and_quiet(ingest_one):
    """vllm#29369: the NIXL worker, NIXL's own `NIXL INFO _api.py` lines behind their header,
    the KV layout, the registration and the connector: a clean start, no finding."""
    result, run = ingest_one(sample("vllm", "162_"))
    connector = _events(run, "kv_connector")
    assert [c["nixl_backend"] for c in connector if c["nixl_backend"]] == ["UCX"]
    assert [c["kv_layout"] for c in connector if c["kv_layout"]] == ["HND"]
    assert (connector[-1]["connector"], connector[-1]["engine_id"]) == (
        "NixlConnector", "027a18cd-ad69-4b86-92cb-2fd78674bced")
    assert result.sources[0].lines_by_table == {"events": 9}  # the attention-backend lines: `other` events
    assert [f for f in diagnose(run) if f.severity != "info"] == []


def test_163_lmcache_hits_and_its_own_warnings_are_typed_and_quiet(ingest_one):
    """LMCache#717: per-request lookups (672 of 673 tokens hit) and LMCache's benign
    `attn_metadata is None` warnings on both TP workers."""
    result, run = ingest_one(sample("vllm", "163_"))
    assert result.sources[0].lines_by_table == {"events": 6}
    hits = [(e["total_tokens"], e["hit_tokens"], e["load_tokens"]) for e in _events(run, "lmcache")]
    assert hits == [(673, 672, 0), (724, 723, 3)]
    assert len(_events(run, "lmcache_warning")) == 4
    assert [f for f in diagnose(run) if f.severity != "info"] == []
