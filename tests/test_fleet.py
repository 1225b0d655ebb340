"""Fleet scale: the store on an S3-compatible server (moto, on 127.0.0.1), object inputs
and globs, partition columns and pruning, fleet summary, and the Ray engine against the
local one, row for row. Skipped, saying why, without moto[server] or ray (the test extra has both)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import uuid
from datetime import timedelta

import polars as pl
import pytest
from click.testing import CliRunner

import loganalyze as la
from conftest import ROOT
from loganalyze.cli import main
from loganalyze.errors import LoganalyzeError
from loganalyze.fleet import summary
from loganalyze.query import tables
from loganalyze.store import Store

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e '.[test]')")
boto3 = pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[test]')")
sys.path.insert(0, str(ROOT / "benchmarks"))
from fleet import write_logs  # noqa: E402

SERVERS = 200
RAY_SERVERS = 20
FORMATS = ROOT / "fixtures" / "formats"
logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
DAY = "s3://logs/2026-11-29"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 with the `logs` bucket holding 200 small server logs,
    and the environment that points loganalyze (and Ray workers) at it."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_address[1]}"
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"),
                           ("AWS_DEFAULT_REGION", "us-east-1"), ("LOGANALYZE_S3_ENDPOINT", endpoint)):
            mp.setenv(key, value)
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket="logs")
        client.create_bucket(Bucket="fleet")
        local = tmp_path_factory.mktemp("logs")
        for path in write_logs(local, SERVERS, 40):
            client.upload_file(str(path), "logs", f"2026-11-29/{path.relative_to(local)}")
        yield {"client": client, "endpoint": endpoint, "local": local}
    server.stop()


def fresh() -> str:
    return f"s3://fleet/{uuid.uuid4().hex[:8]}"


def cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def tables_of(store) -> dict[str, pl.DataFrame]:
    """Every table of every run, rows in a fixed order, with the partition columns."""
    got = tables(store)
    return {t: f.drop("run").collect().sort(pl.all()) for t, f in got.items() if t in ("stats", "config", "unparsed")}


def test_store_on_s3_ingest_query_diagnose_report(s3, tmp_path):
    store = fresh()
    out = cli("ingest", f"{DAY}/c0/host000?.log.gz", "--store", store, "--label", "cluster=c0", "-q",
              "--format", "json")
    assert '"run": "run1"' in out and out.count('"format": "sglang"') == 10
    counts = cli("query", 'SELECT host, "cluster", count(*) AS n FROM stats GROUP BY host, "cluster" ORDER BY host',
                 "--store", store, "--format", "csv")
    assert counts.splitlines()[:2] == ["host,cluster,n", "host0000,c0,40"] and len(counts.splitlines()) == 11
    assert cli("diagnose", "run1", "--store", store).startswith("run run1: ")
    cli("report", "run1", "--store", store, "-o", str(tmp_path / "r.md"))
    assert "run1" in (tmp_path / "r.md").read_text()
    listing = cli("fleet", "summary", "--store", store, "--since", "1d").splitlines()
    assert " of 10 servers with findings (runs since " in listing[0]
    assert listing[1].split()[:3] == ["warning", "c0", "host0000"] and "kv-pressure" in listing[1]


def test_s3_store_matches_local_store(s3, tmp_path):
    local = tmp_path / "store"
    la.ingest(sorted(str(p) for p in (s3["local"] / "c1").glob("*.log.gz"))[:5], store=local)
    remote = fresh()
    la.ingest([f"{DAY}/c1/host005{i}.log.gz" for i in range(5)], store=remote)
    for table, frame in tables_of(local).items():
        assert tables_of(remote)[table].drop("date").equals(frame.drop("date")), table


def test_s3_store_commits_chunk_by_chunk(s3, tmp_path, monkeypatch):
    """Chunks of 2 objects on S3: one conditional catalog PUT each, into the one run the
    first made; the same ingest again adds nothing; the tables equal one local commit's."""
    local = tmp_path / "store"
    la.ingest(sorted(str(p) for p in (s3["local"] / "c1").glob("*.log.gz"))[:5], store=local)
    monkeypatch.setattr(sys.modules["loganalyze.ingestion.inputs"], "CHUNK_FILES", 2)
    remote, inputs = fresh(), [f"{DAY}/c1/host005{i}.log.gz" for i in range(5)]
    assert la.ingest(inputs, store=remote).run == "run1"
    again = la.ingest(inputs, run="run1", store=remote)
    assert [s.skipped for s in again.sources] == [True] * 5 and list(Store(remote).runs()) == ["run1"]
    for table, frame in tables_of(local).items():
        assert tables_of(remote)[table].drop("date").equals(frame.drop("date")), table


def test_partition_filter_prunes_sources(s3):
    store = fresh()
    la.ingest([f"{DAY}/c0/host000{i}.log.gz" for i in range(3)], store=store, labels={"cluster": "a"})
    la.ingest([f"{DAY}/c1/host005{i}.log.gz" for i in range(2)], store=store, labels={"cluster": "b"})
    got = la.query("SELECT host FROM stats GROUP BY host ORDER BY host", store=store, where={"cluster": "b"})
    assert got.collect()["host"].to_list() == ["host0050", "host0051"]
    s3["client"].delete_object(Bucket="fleet", Key=f"{store[11:]}/stats/run=run1/"
                               f"{Store(store).runs()['run1']['sources'][0]['id']}-00000.parquet")
    with pytest.raises(LoganalyzeError, match="missing"):  # run1 (cluster a) is damaged ...
        la.query("SELECT count(*) FROM stats", store=store).collect()
    assert la.query("SELECT count(*) AS n FROM stats", store=store, where={"cluster": "b"}).collect()["n"][0] == 80


def test_failed_ingest_publishes_nothing_and_readers_trust_only_the_catalog(s3):
    store = fresh()
    s3["client"].put_object(Bucket="logs", Key="bad/not-a-log.bin", Body=b"\x00\x01binary\x00" * 100)
    with pytest.raises(LoganalyzeError):
        la.ingest([f"{DAY}/c0/host0001.log.gz", "s3://logs/bad/not-a-log.bin"], store=store)
    assert Store(store).runs() == {}
    la.ingest([f"{DAY}/c0/host0001.log.gz"], store=store)
    stray = "0123456789abcdef-00000.parquet"  # an unlisted file, as a crash before the catalog PUT leaves it
    s3["client"].copy_object(Bucket="fleet", Key=f"{store[11:]}/stats/run=run1/{stray}",
                             CopySource={"Bucket": "fleet", "Key": Store(store).files("run1", "stats")[0][11:]})
    assert la.query("SELECT count(*) AS n FROM stats", store=store).collect()["n"][0] == 40


def test_concurrent_ingests_into_one_s3_store_all_land(s3):
    """The catalog PUT is conditional: a writer that lost the race re-reads and publishes again."""
    store, errors = fresh(), []

    def one(i: int) -> None:
        try:
            la.ingest([f"{DAY}/c2/host01{i:02d}.log.gz"], store=store)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    runs = Store(store).runs()
    assert sorted(runs) == [f"run{i}" for i in range(1, 7)]
    assert sorted(s["path"] for r in runs.values() for s in r["sources"]) == \
        [f"{DAY}/c2/host01{i:02d}.log.gz" for i in range(6)]


def test_object_glob_with_no_match_is_an_error(s3):
    with pytest.raises(LoganalyzeError, match="no object matches"):
        la.ingest([f"{DAY}/nope/**/*.log.gz"], store=fresh())


def test_ray_engine_equals_local_engine_row_for_row(s3, tmp_path):
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[test]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    some = [f"{DAY}/**/host000?.log.gz", f"{DAY}/**/host001?.log.gz"]  # 20 servers, one Ray task each
    try:
        by_ray, by_local = fresh(), fresh()
        got = la.ingest(some, store=by_ray, executor="ray", labels={"cluster": "x"})
        assert len(got.sources) == RAY_SERVERS and not any(s.skipped for s in got.sources)
        la.ingest(some, store=by_local, executor="local", labels={"cluster": "x"})
        la.load_formats([FORMATS / "llamacpp.toml"])  # a format file: workers load it too (conftest.registry drops it)
        user = la.ingest([str(FORMATS / "llamacpp.log")], store=tmp_path / "store", executor="ray")
        here = la.ingest([str(FORMATS / "llamacpp.log")], store=tmp_path / "local")
        assert user.sources[0].format == "llamacpp-example" and user.sources[0].tables == here.sources[0].tables
    finally:
        ray.shutdown()
    sources = [{k: v for k, v in s.items() if k != "ingested"} for s in Store(by_ray).runs()["run1"]["sources"]]
    assert sources == [{k: v for k, v in s.items() if k != "ingested"}
                       for s in Store(by_local).runs()["run1"]["sources"]]
    for host in ("host0000", "host0001", "host0010"):  # servers diagnosed alike (two KV-bound)
        assert summary(Store(by_ray), None, {"host": host}) == summary(Store(by_local), None, {"host": host})
    assert [r["host"] for r in summary(Store(by_ray), None, {"cluster": "x", "engine": "sglang", "host": "host0010"})
            ["servers"]] == ["host0010"]
    ray_tables, local_tables = tables_of(by_ray), tables_of(by_local)
    for table, frame in local_tables.items():
        assert ray_tables[table].equals(frame), table
    assert local_tables["stats"].height == RAY_SERVERS * 40
    assert la.query("SELECT count(DISTINCT host) AS n FROM stats", store=by_ray).collect()["n"][0] == RAY_SERVERS


def test_cleanup_removes_only_old_unlisted_objects(s3, monkeypatch):
    store = fresh()
    la.ingest([f"{DAY}/c0/host0002.log.gz"], store=store)
    prefix = store[len("s3://fleet/"):]
    for key in ("stats/run=run1/0123456789abcdef-00000.parquet", ".tmp/1234/stats/00000.parquet"):
        s3["client"].put_object(Bucket="fleet", Key=f"{prefix}/{key}", Body=b"left by a crash")
    assert Store(store).cleanup() == []  # younger than LEFTOVER_AGE: maybe a concurrent writer's
    monkeypatch.setattr("loganalyze.objstore.LEFTOVER_AGE", timedelta(0))
    assert sorted(Store(store).cleanup()) == [f"{store}/.tmp/1234/stats/00000.parquet",
                                                f"{store}/stats/run=run1/0123456789abcdef-00000.parquet"]
    assert la.query("SELECT count(*) AS n FROM stats", store=store).collect()["n"][0] == 40


def after_this_second() -> None:
    """Wait for the next whole second: S3 times objects to the second, and `rm` deletes only
    what is older than the catalog it wrote."""
    time.sleep(1.02 - time.time() % 1)


def objects(s3, store: str, under: str = "") -> list[str]:
    prefix = store[len("s3://fleet/"):]
    listed = s3["client"].list_objects_v2(Bucket="fleet", Prefix=f"{prefix}/{under}").get("Contents", [])
    return sorted(o["Key"][len(prefix) + 1:] for o in listed)


def test_endpoint_option_and_rm_on_s3(s3, monkeypatch):
    monkeypatch.delenv("LOGANALYZE_S3_ENDPOINT")
    store = fresh()
    for run, host in (("run1", "host0003"), ("run2", "host0004")):
        cli("--s3-endpoint", s3["endpoint"], "ingest", f"{DAY}/c0/{host}.log.gz", "--store", store, "--run", run, "-q")
    assert "run1" in cli("--s3-endpoint", s3["endpoint"], "runs", "--store", store)
    kept = [k for k in objects(s3, store) if "/run=run2/" in k]
    after_this_second()
    out = cli("--s3-endpoint", s3["endpoint"], "rm", "run1", "--yes", "--store", store)
    assert out == "removed run run1\n"
    assert list(Store(store).runs()) == ["run2"]
    assert [k for k in objects(s3, store) if "/run=" in k] == kept and kept
    missing = CliRunner().invoke(main, ["--s3-endpoint", s3["endpoint"], "rm", "run1", "--yes", "--store", store])
    assert missing.exit_code == 2 and "no run 'run1'" in missing.output


def test_rm_on_s3_leaves_objects_a_later_commit_may_list(s3):
    """An object written since the catalog (a writer that commits into a run of this name
    after rm) is never deleted: only objects older than the catalog are."""
    store = fresh()
    la.ingest([f"{DAY}/c0/host0005.log.gz"], run="r", store=store)
    old = objects(s3, store, "stats/run=r/")
    after_this_second()
    Store(store).change_catalog(lambda cat: None)  # the catalog is now younger than every object
    s3["client"].put_object(Bucket="fleet", Key=f"{store[len('s3://fleet/'):]}/stats/run=r/{'f' * 16}-00000.parquet",
                            Body=b"a concurrent writer's")
    assert Store(store).backend.unlisted(["stats/run=r/"]) == [f"stats/run=r/{k.split('/')[-1]}" for k in old] and old


def test_check_and_repair_on_s3(s3):
    store = fresh()
    la.ingest([f"{DAY}/c0/host0006.log.gz"], run="a", store=store)
    la.ingest([f"{DAY}/c0/host0007.log.gz"], run="b", store=store)
    assert cli("check", "--store", store) == f"store {store}: no problems\n"
    prefix = store[len("s3://fleet/"):]
    damaged = next(k for k in objects(s3, store, "stats/run=a/"))
    s3["client"].put_object(Bucket="fleet", Key=f"{prefix}/{damaged}", Body=b"not parquet")
    found = CliRunner().invoke(main, ["check", "--store", store, "--format", "json"])
    assert found.exit_code == 1
    assert [(p["kind"], p["run"]) for p in json.loads(found.output)["problems"]] == [("unreadable", "a")]
    repaired = CliRunner().invoke(main, ["check", "--repair", "--store", store, "--format", "json"])
    assert repaired.exit_code == 0 and [lost["run"] for lost in json.loads(repaired.output)["lost"]] == ["a"]
    assert list(Store(store).runs()) == ["b"]
    s3["client"].put_object(Bucket="fleet", Key=f"{prefix}/catalog.json", Body=b"{")
    assert CliRunner().invoke(main, ["check", "--store", store]).exit_code == 1
    rebuilt = CliRunner().invoke(main, ["check", "--repair", "--store", store, "--format", "json"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert sorted({r["run"] for r in json.loads(rebuilt.output)["recovered"]}) == ["b"]
    assert any(k.startswith("catalog.json.damaged-") for k in objects(s3, store, "catalog.json"))
