"""Every command fed hostile option values: each failure is one line on stderr and exit 2.

The tests run with $LOGANALYZE_TRACEBACK set (conftest.py), so an exception that only the
CLI's last-resort "internal error" would catch fails here with its traceback: each case
below must be handled where it happens.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loganalyze.cli import main

from conftest import FIXTURES, ROOT

REF = FIXTURES / "reference" / "sglang-base"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "store"
    result = CliRunner().invoke(main, ["ingest", str(REF / "bench.jsonl"), "--run", "r", "--store", str(root), "-q"])
    assert result.exit_code == 0, result.output
    return root


def bench_with(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "bench.jsonl"
    line = (REF / "bench.jsonl").read_text().splitlines()[0]
    assert old in line
    path.write_text(line.replace(old, new, 1) + "\n")
    return path


CASES = {
    "ingest": [
        ["ingest", "x.log", "--year", "-1"], ["ingest", "x.log", "--year", "0"], ["ingest", "x.log", "--year", "99999"],
        ["ingest", "x.log", "--year", "abc"], ["ingest", "x.log", "--label", "run=x"],
        ["ingest", "x.log", "--label", "source=y"], ["ingest", "x.log", "--label", "novalue"],
        ["ingest", "x.log", "--label", "Bad-Key=1"], ["ingest", "{bench}", "--as", "nope"],
        ["ingest", "{bench}", "--engine", "nope"], ["ingest", "/nonexistent/x.log"], ["ingest", "{bench}", "--run", "../x"],
        ["ingest", "{bench}", "--run", "a" * 200], ["ingest", "{tmp}"],
    ],
    "runs": [["runs", "--since", "yesterday"], ["runs", "--format", "xml"]],
    "show": [["show", "nope"], ["show", "../r"], ["show", "r", "--format", "yaml"]],
    "metrics": [["metrics", "nope"], ["metrics", "r", "--format", "xml"]],
    "diagnose": [
        ["diagnose", "nope"], ["diagnose", "r", "--baseline", "nope"], ["diagnose", "r", "--max-regression", "5%"],
        ["diagnose", "r", "--baseline", "r", "--max-regression", "lots"], ["diagnose", "r", "--fail-on", "info"],
        ["diagnose", "r", "--format", "pdf"],
    ],
    "compare": [["compare", "r", "nope"], ["compare", "r", "--format", "xml"]],
    "report": [
        ["report", "r", "-o", "/nonexistent/folder/r.html"], ["report", "r", "-o", "{bench}/under-a-file.html"],
        ["report", "r", "-o", "{tmp}"], ["report", "r", "-o", "x.pdf", "--format", "pdf"], ["report", "nope", "-o", "x.html"],
    ],
    "query": [
        ["query", "SELEC 1"], ["query", "SELECT * FROM nope"], ["query", "SELECT * FROM read_csv('/etc/hostname')"],
        ["query", "SELECT * FROM read_parquet('https://example.invalid/x.parquet')"],
        ["query", "SELECT 1", "--format", "parquet"], ["query", "SELECT 1", "-o", "/nonexistent/folder/x.csv"],
        ["query", "SELECT 1", "--where", "nokey"], ["query", "SELECT 1", "--run", "nope"],
        ["query", "SELECT CAST(backend AS INT) AS n FROM bench"],
    ],
    "export": [
        ["export", "nope", "-o", "{tmp}/x"], ["export", "r", "--table", "nope", "-o", "{tmp}/x"],
        ["export", "r", "-o", "{tmp}/x.csv", "--table", "bench", "--format", "json"],
        ["export", "r", "-o", "/nonexistent/folder/x.csv", "--table", "bench"], ["export", "r", "-o", "{bench}/x"],
        ["export", "r", "-o", "{tmp}/y", "--format", "xml"],
    ],
    "rm": [["rm", "nope", "--yes"], ["rm", "../r", "--yes"]],
    "check": [["check", "--store", "/nonexistent/store"]],
    "fleet": [["fleet", "summary", "--since", "1x"], ["fleet", "summary", "--since", "-5d"],
              ["fleet", "summary", "--where", "nokey"], ["fleet", "summary", "--format", "xml"]],
    "formats": [["formats", "--test", "/nonexistent.toml"], ["formats", "--test", "{bench}"]],
}


def one_line_exit_2(args: list[str], store: Path, tmp_path: Path) -> None:
    args = [a.format(bench=REF / "bench.jsonl", tmp=tmp_path) for a in args]
    if "--store" not in args:
        args += ["--store", str(store)]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
    assert result.exit_code == 2, (args, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loganalyze: error: "), (args, result.stderr)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", sorted(CASES))
def test_hostile_option_values(command, store, tmp_path):
    for args in CASES[command]:
        one_line_exit_2(args, store, tmp_path)


@pytest.mark.parametrize("old,new", [
    ('"max_concurrency": 1', '"max_concurrency": "many"'),
    ('"max_concurrency": 1', '"max_concurrency": 1e999'),
    ('"max_concurrency": 1', '"max_concurrency": true'),
    ('"backend": "sglang-oai"', '"backend": "\\ud800x"'),
    ('"backend": "sglang-oai"', '"backend": {"a": 1}'),
])
def test_bench_json_fields_of_the_wrong_type(tmp_path, old, new):
    path = bench_with(tmp_path, old, new)
    result = CliRunner().invoke(main, ["ingest", str(path), "--run", "b", "--store", str(tmp_path / "s"), "-q"])
    assert result.exit_code == 0, result.output
    got = CliRunner().invoke(main, ["query", "SELECT max_concurrency, backend, output_throughput FROM bench",
                                    "--format", "ndjson", "--store", str(tmp_path / "s")])
    import json
    row = json.loads(got.output)
    assert row["output_throughput"] == pytest.approx(63.6)  # the rest of the result is kept
    if "max_concurrency" in old:
        assert row["max_concurrency"] is None and row["backend"] == "sglang-oai"
    else:
        assert row["max_concurrency"] == 1 and row["backend"] in ("\ufffd\ufffd\ufffdx", '{"a": 1}')


def cli_process(*args: str, stdin=subprocess.DEVNULL, prelude: str = "", preexec=None) -> subprocess.CompletedProcess:
    code = f"{prelude}\nimport sys\nfrom loganalyze.cli import main\nsys.argv = ['loganalyze', *{list(args)!r}]\nmain()"
    env = {**os.environ}
    env.pop("LOGANALYZE_TRACEBACK", None)  # as a user runs it
    return subprocess.run([sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True, cwd=ROOT,
                          env=env, preexec_fn=preexec, timeout=120)


def assert_one_line(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr


def test_closed_stdin(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import sys\nfrom loganalyze.cli import main\n"
                           f"sys.argv = ['loganalyze', 'ingest', '-', '--store', {str(tmp_path / 's')!r}, '-q']\nmain()"],
                          stdin=None, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          preexec_fn=lambda: os.close(0))
    assert_one_line(proc, "standard input, but it is closed")


def test_s3_without_boto3(tmp_path):
    hide = "import sys\nfor m in ('boto3', 'botocore', 'botocore.exceptions'):\n    sys.modules[m] = None"
    assert_one_line(cli_process("ingest", "s3://bucket/k.log", "--store", str(tmp_path / "s"), prelude=hide),
                    "s3:// needs boto3")
    assert_one_line(cli_process("runs", "--store", "s3://bucket/prefix", prelude=hide), "s3:// needs boto3")


def test_report_on_a_full_disk_leaves_no_partial_file(store, tmp_path):
    target = tmp_path / "r.html"
    target.write_text("the previous report")

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = cli_process("report", "r", "-o", str(target), "--store", str(store), preexec=small_files)
    assert_one_line(proc, "cannot write")
    assert target.read_text() == "the previous report" and sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_fleet_summary_since_the_beginning_of_time(store):
    result = CliRunner().invoke(main, ["fleet", "summary", "--since", "99999999d", "--store", str(store)])
    assert result.exit_code == 0 and result.exception is None, result.output


def test_an_unexpected_error_is_one_line_for_users(tmp_path):
    boom = "import loganalyze.cli.ingest as c\ndef bad(*a, **k):\n    raise RuntimeError('boom')\nc.do_ingest = bad"
    proc = cli_process("ingest", "x.log", "--store", str(tmp_path / "s"), prelude=boom)
    assert_one_line(proc, "internal error (RuntimeError: boom)")
