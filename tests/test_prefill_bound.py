"""prefill-bound (loganalyze/diagnosis/prefill_bound.py) on sglang/89's two real prefill
lines, and on the same lines changed one fact at a time: each change takes the finding away."""

from __future__ import annotations

import pytest

from conftest import sample
from loganalyze.diagnosis import diagnose

REAL = sample("sglang", "89_")
LINES = REAL.read_text().splitlines()


def _found(run) -> list:
    return [f for f in diagnose(run) if f.id == "prefill-bound"]


def test_two_full_prefill_batches_with_a_growing_queue_are_prefill_bound(ingest_one):
    _, run = ingest_one(REAL)
    (f,) = _found(run)
    assert f.severity == "info" and f.confidence == "low"
    assert f.metrics == {"prefill_rows": 2, "full_rows": 2, "budget": 16384,
                         "budget_source": "SGLang's default max_prefill_tokens (no server args: assumed)"}
    assert "admit 3 requests, 15000 new tokens (about 5000 per request)" in f.verdict
    assert "40 -> 56 requests wait with 7-10 running at token usage 0.06-0.09" in f.verdict
    assert [e.line for e in f.evidence] == [1, 2]


@pytest.mark.parametrize("change", [
    ("#queue-req: 40", "#queue-req: 0"),  # nobody waits on the first batch: one full batch of two
    ("#new-token: 15000", "#new-token: 9000"),  # room for another 3000-token request: not full
    ("token usage: 0.09", "token usage: 0.93"),  # the KV cache is what holds requests back
    ("#queue-req: 56", "#queue-req: 4"),  # the queue drains
])
def test_one_fact_changed_and_it_is_not_prefill_bound(change, ingest_one, tmp_path):
    old, new = change
    log = tmp_path / "changed.log"
    log.write_text("\n".join(line.replace(old, new) for line in LINES) + "\n")
    _, run = ingest_one(log)
    assert not _found(run)


def test_a_stated_budget_smaller_than_a_batch_is_another_server(ingest_one, tmp_path):
    """A batch above the budget the log states means that budget is not this server's."""
    log = tmp_path / "capped.log"
    log.write_text("[2025-06-05 15:08:50 TP0] max_total_num_tokens=2795207, chunked_prefill_size=8192, "
                   "max_prefill_tokens=16384, max_running_requests=48, context_len=262144\n" + REAL.read_text())
    _, run = ingest_one(log)
    assert not _found(run)
