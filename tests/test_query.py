"""query, export, rm, runs filters, --version and completion, on real SGLang samples."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import loganalyze as la
from conftest import sample
from loganalyze.runs import remove_run, select_runs
from loganalyze.cli import main
from loganalyze.errors import LoganalyzeError
from loganalyze.export import export_run


@pytest.fixture
def three(store):
    """Runs r02 (KV-bound, 381 running / 1549 queued), r16 (low acceptance) and r24 (server args only)."""
    for name, prefix in (("r02", "02_"), ("r16", "16_"), ("r24", "24_")):
        la.ingest([sample("sglang", prefix)], run=name, store=store)
    return store


def cli(store, *args: str, **kw):
    return CliRunner().invoke(main, [*args, "--store", str(store.root)], **kw)


PEAKS = "SELECT run, count(*) AS n, max(running) AS peak, max(queued) AS queue FROM stats " \
        "WHERE phase = 'decode' GROUP BY run ORDER BY run"


def test_sql_spans_runs_with_a_run_column(three):
    got = la.query(PEAKS, store=three).collect()
    assert got.rows() == [("r02", 1, 381, 1549), ("r16", 4, 3, 0)]


def test_run_filter_and_joins(three):
    got = la.query(PEAKS, runs=["r16"], store=three).collect()
    assert got.rows() == [("r16", 4, 3, 0)]
    joined = la.query("SELECT s.run, c.value FROM stats s JOIN config c ON s.run = c.run "
                      "WHERE c.key = 'max_running_requests'", store=three).collect()
    assert joined.height == 0  # r24 has the setting but no stats lines
    cap = la.query("SELECT value FROM config WHERE key = 'max_running_requests'", runs=["r24"], store=three)
    assert cap.collect()["value"].to_list() == ["48"]


def test_query_is_lazy_and_reads_only_what_it_needs(three):
    result = la.query("SELECT accept_len FROM stats WHERE run = 'r16'", store=three)
    assert isinstance(result, pl.LazyFrame)
    plan = result.explain()
    assert "accept_len" in plan and "token_usage" not in plan  # projection pushed into the scan
    assert result.collect()["accept_len"].to_list() == [1.67, 1.68, 1.73, 1.72]


def test_every_canonical_table_exists_even_empty(three):
    assert la.query("SELECT count(*) AS n FROM spec", store=three).collect()["n"].to_list() == [0]
    assert "run" in la.query("SELECT * FROM unparsed", store=three).collect_schema()


@pytest.mark.parametrize("sql, says", [
    ("SELEC * FROM stats", "sql parser error"),
    ("SELECT nope FROM stats", 'unable to find column "nope"'),
    ("SELECT * FROM nope", "relation 'nope' was not found (tables: "),
])
def test_bad_sql_is_one_line(three, sql, says):
    with pytest.raises(LoganalyzeError) as e:
        la.query(sql, store=three)
    assert says in str(e.value) and "\n" not in str(e.value)
    result = cli(three, "query", sql)
    assert result.exit_code == 2
    assert result.stderr.startswith("loganalyze: error: query: ") and result.stderr.count("\n") == 1


def test_unknown_run_names_the_runs(three):
    with pytest.raises(LoganalyzeError, match=r"no run 'zz' .*runs: r02, r16, r24"):
        la.query("SELECT 1", runs=["zz"], store=three)


def test_cli_query_formats(three, tmp_path):
    table = cli(three, "query", PEAKS)
    assert table.exit_code == 0 and "381" in table.output and "1549" in table.output
    rows = json.loads(cli(three, "query", PEAKS, "--format", "json").output)
    assert rows == [{"run": "r02", "n": 1, "peak": 381, "queue": 1549}, {"run": "r16", "n": 4, "peak": 3, "queue": 0}]
    csv = cli(three, "query", "SELECT line_no, extra FROM stats WHERE run = 'r02'", "--format", "csv").output
    assert csv.splitlines() == ["line_no,extra", "1,[]"]  # a list column as JSON text
    out = tmp_path / "peaks.parquet"
    written = cli(three, "query", PEAKS, "-o", str(out))
    assert written.exit_code == 0 and pl.read_parquet(out).rows() == [("r02", 1, 381, 1549), ("r16", 4, 3, 0)]
    binary = cli(three, "query", PEAKS, "--format", "parquet")
    assert binary.exit_code == 2 and "-o FILE.parquet" in binary.stderr


def test_export_folder_one_file_per_table(three, tmp_path):
    paths = export_run("r16", tmp_path / "out", store=three)
    assert sorted(p.name for p in paths) == ["requests.parquet", "stats.parquet"]
    stats = pl.read_parquet(tmp_path / "out" / "stats.parquet")
    assert stats["accept_rate"].to_list() == [0.13, 0.14, 0.14, 0.14]
    assert stats.schema == la.open_run("r16", three).table("stats").collect_schema()


@pytest.mark.parametrize("name, read", [("s.csv", pl.read_csv), ("s.json", pl.read_json), ("s.jsonl", pl.read_ndjson),
                                        ("s.parquet", pl.read_parquet)])
def test_export_one_table_by_extension(three, tmp_path, name, read):
    out = tmp_path / "out"
    out.mkdir()
    result = cli(three, "export", "r16", "--table", "stats", "-o", str(out / name))
    assert result.exit_code == 0, result.output
    assert read(out / name)["transfer_req"].to_list() == [1, 2, 3, 3]
    assert [p.name for p in out.iterdir()] == [name]  # no temporary file left


def test_export_errors(three, tmp_path):
    with pytest.raises(LoganalyzeError, match="a file holds one table; choose one with --table"):
        export_run("r16", tmp_path / "x.csv", store=three)
    with pytest.raises(LoganalyzeError, match="run r16 has no table 'nope'"):
        export_run("r16", tmp_path / "x", ["nope"], store=three)
    with pytest.raises(LoganalyzeError, match="the extension says csv, --format says json"):
        export_run("r16", tmp_path / "x.csv", ["stats"], "json", store=three)


def test_export_folder_as_csv_flattens_nested_columns(three, tmp_path):
    result = cli(three, "export", "r16", "-o", str(tmp_path / "csv"), "--format", "csv")
    assert result.exit_code == 0
    stats = pl.read_csv(tmp_path / "csv" / "stats.csv")
    assert stats["extra"].to_list()[0].startswith('[{"key":')


def test_rm_removes_catalog_entry_then_files(three):
    assert [Path(p).parent.name for p in remove_run("r16", three)] == ["requests", "stats"]
    assert sorted(three.runs()) == ["r02", "r24"]
    assert not list(Path(three.root).glob("*/run=r16"))
    assert la.query(PEAKS, store=three).collect()["run"].to_list() == ["r02"]
    with pytest.raises(LoganalyzeError, match="no run 'r16'"):
        remove_run("r16", three)


def test_rm_asks_unless_yes(three):
    declined = cli(three, "rm", "r02", input="n\n")
    assert declined.exit_code == 1 and "remove run r02 (1 source(s), " in declined.output
    assert "r02" in three.runs()
    assert cli(three, "rm", "r02", "--yes").output == "removed run r02\n"
    assert "r02" not in three.runs()
    missing = cli(three, "rm", "r02", "--yes")
    assert missing.exit_code == 2 and missing.stderr.startswith("loganalyze: error: no run 'r02'")


def test_runs_filters(three):
    runs = three.runs()
    assert list(select_runs(runs, engine="SGLang")) == list(runs)
    assert select_runs(runs, engine="vllm") == {}
    assert select_runs(runs, since=datetime(2999, 1, 1)) == {}
    assert list(select_runs(runs, since=datetime(2000, 1, 1))) == list(runs)
    listed = json.loads(cli(three, "runs", "--since", "2000-01-01", "--engine", "sglang", "--format", "json").output)
    assert sorted(listed["runs"]) == ["r02", "r16", "r24"]
    assert json.loads(cli(three, "runs", "--since", "2999-01-01", "--format", "json").output)["runs"] == {}


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.output == f"loganalyze, version {la.__version__}\n"


def test_shell_completion_of_commands_and_run_names(three):
    env = {"_LOGANALYZE_COMPLETE": "bash_complete", "COMP_CWORD": "1", "COMP_WORDS": "loganalyze qu",
           "LOGANALYZE_STORE": str(three.root)}
    got = CliRunner().invoke(main, [], env=env, prog_name="loganalyze")
    assert got.output.split() == ["plain,query"]
    env.update(COMP_CWORD="2", COMP_WORDS="loganalyze rm r1")
    got = CliRunner().invoke(main, [], env=env, prog_name="loganalyze")
    assert got.output.split() == ["plain,r16"]
