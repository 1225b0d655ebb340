"""The bar: from the reference case's logs, the verdict the case calls for (docs/formats-sources.md#the-reference-case)."""

from __future__ import annotations

import json

import pytest

import loganalyze as la
from conftest import FIXTURES
from loganalyze import metrics
from loganalyze.diagnosis import diagnose

REF = FIXTURES / "reference"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    store = tmp_path_factory.mktemp("ref") / "store"
    for name in ("sglang-eagle3", "sglang-base"):
        la.ingest([REF / name / "server.log"], run=name, store=store)
    return la.open_run("sglang-eagle3", store), la.open_run("sglang-base", store)


def test_cap_first_then_drafter(runs):
    eagle, _ = runs
    found = diagnose(eagle)
    assert [f.id for f in found][:2] == ["concurrency-cap", "low-acceptance"]
    cap, accept = found[0], found[1]
    assert cap.severity == "critical"
    assert cap.metrics["cap"] == 48 and cap.metrics["speculative_reset"] is True
    assert cap.metrics["queue_max"] == 80
    assert cap.metrics["capped_fraction"] == pytest.approx(0.249, abs=0.01)
    assert cap.metrics["token_usage_max"] < 0.3
    assert "reset to 48" in cap.evidence[0].text
    assert accept.metrics["accept_len_mean"] == pytest.approx(1.70, abs=0.02)
    assert accept.metrics["max_accept_len"] == 4
    assert accept.metrics["drafter"] == "AQ-MedAI/Kimi-K2-Instruct-eagle3"
    assert "another model" in accept.verdict


def test_speculation_below_break_even_against_the_base_run(runs):
    eagle, base = runs
    found = {f.id: f for f in diagnose(eagle, baseline=base)}
    below = found["spec-below-break-even"]
    table = {row["running"]: row for row in below.metrics["break_even"]}
    assert table[1]["tau_star"] > table[1]["tau"]  # single stream: break-even just above 1.7
    assert table[1]["tau_star"] == pytest.approx(1.72, abs=0.1)
    assert table[48]["tau_star"] > 3 and table[48]["speedup"] < 0.6
    assert below.confidence == "high"


def test_the_load_of_model_and_draft_is_read_from_its_timestamps(runs):
    """The EAGLE3 run loads its model (the shard bar: 07:15) and then its draft: `Load weight
    begin` at 09:12:51, the draft's `Load weight end` at 09:20:56 is the whole load, 485 s."""
    eagle, _ = runs
    assert metrics.compute(eagle)["startup"].summary["load_s"] == 485.0


def test_base_run_is_healthy(runs):
    _, base = runs
    assert [f.id for f in diagnose(base) if f.severity != "info"] == []
    cap = metrics.compute(base)["concurrency"].summary
    assert (cap["cap"], cap["queue_max"]) == (2048, 0)


def test_max_regression_gates_a_deployment(tmp_path):
    from click.testing import CliRunner

    from loganalyze.cli import main

    store = tmp_path / "store"
    for name in ("sglang-eagle3", "sglang-base"):
        la.ingest([REF / name / "server.log", REF / name / "bench.jsonl"], run=name, store=store)
    runner = CliRunner()
    gate = ["diagnose", "sglang-eagle3", "--baseline", "sglang-base", "--store", str(store), "--format", "json"]
    failed = runner.invoke(main, [*gate, "--max-regression", "5%"])
    assert failed.exit_code == 1
    worst = {r["metric"]: r for r in json.loads(failed.stdout)["regressions"]}
    assert worst["peak output tok/s"]["regression"] == pytest.approx(0.642, abs=0.001)
    assert "single-stream output tok/s" not in worst  # 62.9 vs 63.6: 1.1 % only
    same = runner.invoke(main, ["diagnose", "sglang-base", *gate[2:], "--max-regression", "5%"])
    assert same.exit_code == 0 and json.loads(same.stdout)["regressions"] == []
    bad = runner.invoke(main, [*gate, "--max-regression", "lots"])
    assert bad.exit_code == 2 and "percentage" in bad.output


def test_the_gate_is_in_the_library():
    """`diagnose --fail-on`/`--max-regression` decide through regression.failed, which a CI
    script can call too."""
    from loganalyze.diagnosis.base import Finding
    from loganalyze.regression import failed

    warning = Finding("x", "warning", "t", "v", 0.0, "", "")
    assert not failed([warning], None, []) and not failed([warning], "critical", [])
    assert failed([warning], "warning", []) and failed([], None, [{"metric": "peak"}])
