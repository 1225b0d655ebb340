"""Concurrency: ingest processes sharing one store lose nothing, duplicate nothing, and never
share a run they did not ask to share."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import loganalyze as la
from loganalyze.check import check
from loganalyze.store import Store
from store_helpers import ROOT, cli_command, counts, rows_on_disk, sglang_log

PROCESSES = 8
REPEATS = 2
REPEATS_LONG = 6


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("concurrent")
    return [sglang_log(folder / f"server{i}.log", 300, seed=i) for i in range(PROCESSES)]


@pytest.fixture(scope="module")
def expected(logs, tmp_path_factory) -> dict[str, int]:
    """Rows per table of all the logs ingested one after the other."""
    store = tmp_path_factory.mktemp("serial") / "s"
    la.ingest(logs, run="r", store=store)
    return counts(store)["r"]


def ingest_at_once(store: Path, jobs: list[list[object]]) -> list[dict]:
    """Start one `loganalyze ingest` process per job, all at once; their JSON results."""
    procs = [subprocess.Popen(cli_command("ingest", "-q", "--format", "json", "--store", store, *job), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for job in jobs]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    return results


def concurrent_rounds(logs, expected, tmp_path: Path, repeats: int) -> None:
    for i in range(repeats):
        store = tmp_path / f"s{i}"
        ingest_at_once(store, [[log, "--run", "r"] for log in logs])
        sources = Store(store).run("r")["sources"]
        assert len(sources) == len({s["id"] for s in sources}) == PROCESSES
        assert counts(store) == rows_on_disk(store) == {"r": expected}
        assert check(Store(store)).problems == []


def test_concurrent_ingests_into_one_run(logs, expected, tmp_path):
    concurrent_rounds(logs, expected, tmp_path, REPEATS)


@pytest.mark.long
def test_concurrent_ingests_into_one_run_long(logs, expected, tmp_path):
    concurrent_rounds(logs, expected, tmp_path, REPEATS_LONG)


def test_concurrent_ingests_without_run_get_distinct_runs(logs, tmp_path):
    store = tmp_path / "s"
    results = ingest_at_once(store, [[log] for log in logs])
    runs = [r["run"] for r in results]
    assert sorted(runs) == sorted(f"run{i}" for i in range(1, PROCESSES + 1))
    assert all(len(Store(store).run(run)["sources"]) == 1 for run in runs)
    assert counts(store) == rows_on_disk(store)


def test_concurrent_ingests_of_one_file_add_it_once(logs, tmp_path):
    store = tmp_path / "s"
    results = ingest_at_once(store, [[logs[0], "--run", "r"]] * 2 + [[logs[1], "--run", "other"]] * 2)
    added = Counter(r["run"] for r in results if not r["sources"][0]["skipped"])
    assert added == {"r": 1, "other": 1}
    assert counts(store) == rows_on_disk(store)
