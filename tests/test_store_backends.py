"""The store's backends: each supplies every primitive of the `Backend` protocol, and
one `Store` (staging, commit, listing) works over either; a filtered view narrows what
is read without touching the store it came from."""

from __future__ import annotations

import inspect

import polars as pl

import loganalyze as la
from conftest import FIXTURES, sample
from loganalyze.backend import Backend
from loganalyze.localfs import LocalBackend
from loganalyze.objstore import S3Backend
from loganalyze.store import Store, open_store


def protocol_methods() -> set[str]:
    return {n for n, v in vars(Backend).items() if not n.startswith("_") and callable(v)}


def test_each_backend_supplies_every_primitive_with_its_parameters():
    for backend in (LocalBackend, S3Backend):
        for name in protocol_methods():
            assert hasattr(backend, name), f"{backend.__name__} lacks {name}"
            want = list(inspect.signature(getattr(Backend, name)).parameters)
            assert list(inspect.signature(getattr(backend, name)).parameters) == want, (backend.__name__, name)
        assert isinstance(backend.local, bool)


def test_open_store_picks_the_backend_by_name(tmp_path):
    assert isinstance(open_store(tmp_path).backend, LocalBackend) and open_store(tmp_path).root == str(tmp_path)
    remote = open_store("s3://bucket/prefix/")
    assert isinstance(remote.backend, S3Backend) and remote.root == "s3://bucket/prefix"
    assert type(remote) is Store and open_store(remote) is remote


def test_filtered_view_reads_only_the_kept_sources(tmp_path):
    store = Store(tmp_path / "s")
    la.ingest([sample("sglang", "01"), sample("sglang", "02")], run="r", store=store)
    sources = store.run("r")["sources"]
    keep = sources[0]["id"]
    view = store.filtered(lambda run, src: src["id"] == keep)
    assert [s["id"] for s in view.run("r")["sources"]] == [keep]
    assert view.table_counts("r") == sources[0]["tables"]
    assert all(f.rsplit("/", 1)[1].startswith(keep) for f in view.files("r", "stats"))
    assert view.scan("r", "stats").select(pl.len()).collect().item() == sources[0]["tables"].get("stats", 0)
    assert len(store.run("r")["sources"]) == 2  # the store it came from is unchanged
    assert store.filtered(lambda run, src: False).runs() == {}


def test_a_store_written_before_a_table_gained_columns_still_reads(tmp_path):
    """A store from an earlier release: its metrics files lack `stat`, `since` and `endpoint`
    (added for AIPerf's exports). They read as null, next to files written today, and the
    findings that read the scrape still come."""
    case = FIXTURES / "engines" / "vllm-0.32" / "kv-pressure"
    store = Store(tmp_path / "s")
    la.ingest([str(case / "metrics.prom")], run="old", store=store)
    for f in store.files("old", "metrics"):
        pl.read_parquet(f).drop("stat", "since", "endpoint").write_parquet(f)
    la.ingest([str(case / "server.log")], run="old", store=store)
    metrics = la.open_run("old", store).table("metrics").collect()
    assert metrics.height > 0 and metrics["stat"].null_count() == metrics.height
    assert "kv-pressure" in {f.id for f in la.open_run("old", store).diagnose()}
