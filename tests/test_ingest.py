"""Ingest end to end through the CLI: inputs of every kind, bad inputs, idempotence."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import polars as pl
import pytest
import zstandard
from click.testing import CliRunner

from conftest import FIXTURES, ROOT, sample
import loganalyze as la
from loganalyze import formats
from loganalyze.cli import main

LINES = [
    "[2026-01-02 03:04:05 TP0] Decode batch, #running-req: 48, #token: 9000, token usage: 0.10, "
    "accept len: 1.70, accept rate: 0.42, cuda graph: True, gen throughput (token/s): 849.00, #queue-req: 80, ",
    '[2026-01-02 03:04:06] INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "something no parser knows",
]


def cli(*args, input=None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=input)
    return result.exit_code, result.output


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "server.log"
    path.write_text("\n".join(LINES) + "\n\n")
    return path


def ingest_json(store, *args, input=None):
    code, out = cli("ingest", *args, "--store", store, "--format", "json", "-q", input=input)
    assert code == 0, out
    return json.loads(out)


def test_counts_add_up_and_unparsed_keeps_line_numbers(tmp_path, log):
    store = tmp_path / "s"
    out = ingest_json(store, log, "--run", "r1")
    src = out["sources"][0]
    assert out["run"] == "r1" and src["format"] == "sglang"
    assert src["lines_by_table"] == {"stats": 1, "requests": 1, "unparsed": 1}
    assert (src["lines"], src["blank"]) == (4, 1)
    code, shown = cli("show", "r1", "--store", store, "--format", "json")
    assert json.loads(shown)["tables"] == {"stats": 1, "requests": 1, "unparsed": 1}


def test_reingest_adds_nothing(tmp_path, log):
    store = tmp_path / "s"
    ingest_json(store, log, "--run", "r1")
    again = ingest_json(store, log, "--run", "r1")
    assert again["sources"][0]["skipped"] is True
    code, shown = cli("show", "r1", "--store", store, "--format", "json")
    assert json.loads(shown)["tables"]["stats"] == 1


def test_without_run_creates_next_run(tmp_path, log):
    store = tmp_path / "s"
    assert ingest_json(store, log)["run"] == "run1"
    assert ingest_json(store, sample("sglang", "06_"))["run"] == "run2"


COMPRESSORS = {"gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress, "xz": lzma.compress,
               "bz2": bz2.compress}


@pytest.mark.parametrize("compress", [*COMPRESSORS, "stdin"])
def test_compressed_and_stdin_inputs(tmp_path, log, compress):
    data = log.read_bytes()
    if compress in COMPRESSORS:
        path = tmp_path / f"server.log.{compress}"
        path.write_bytes(COMPRESSORS[compress](data))
        out = ingest_json(tmp_path / "s", path)
    else:
        out = ingest_json(tmp_path / "s", "-", input=data)
    assert out["sources"][0]["lines_by_table"]["stats"] == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_text_is_read_as_text(tmp_path, encoding):
    """Windows PowerShell 5 writes `docker logs vllm > server.log` as UTF-16 with a byte-order
    mark and CRLF: the same rows as the UTF-8 file, never 'binary data' (a real V1 log, vllm/46)."""
    text = sample("vllm", "46_").read_text()
    path = tmp_path / "server.log"
    path.write_bytes(("\ufeff" if encoding == "utf-16-be" else "").encode(encoding)
                     + text.replace("\n", "\r\n").encode(encoding))
    out = ingest_json(tmp_path / "s", path, "--run", "w")
    assert out["sources"][0]["format"] == "vllm" and out["sources"][0]["lines_by_table"] == {"stats": 5}
    import loganalyze as la
    stats = la.open_run("w", tmp_path / "s").table("stats").collect()
    assert stats["running"].to_list() == [10, 16, 22, 28, 34] and stats["raw"][0].endswith("Prefix cache hit rate: 0.0%")


@pytest.mark.parametrize("wrap", [
    "2026-01-02T03:04:05.123456789Z {}",
    "sglang-1  | {}",
    "Jan  2 03:04:05 host python3[28059]: {}",
    "\x1b[1;36m(EngineCore_DP0 pid=12)\x1b[0;0m {}",
    "{}\r",
])
def test_wrappers_are_removed(tmp_path, wrap):
    path = tmp_path / "wrapped.log"
    path.write_text("\n".join(wrap.format(line) for line in LINES[:2]) + "\n")
    out = ingest_json(tmp_path / "s", path, "--run", "w")
    assert out["sources"][0]["lines_by_table"] == {"stats": 1, "requests": 1}


def test_wrapper_timestamp_fills_a_line_without_one(tmp_path):
    path = tmp_path / "k8s.log"
    path.write_text("2026-03-04T05:06:07Z Decode batch. #running-req: 3, #token: 10, token usage: 0.01, "
                    "gen throughput (token/s): 5.00, #queue-req: 0\n")
    ingest_json(tmp_path / "s", path, "--run", "k")
    import loganalyze as la
    ts = la.open_run("k", tmp_path / "s").table("stats").collect()["ts"][0]
    assert ts.isoformat() == "2026-03-04T05:06:07"


def bad_inputs(tmp_path):
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "binary.bin").write_bytes(b"\x00\x01\x02ELF" * 100)
    (tmp_path / "trunc.log.gz").write_bytes(gzip.compress(b"Decode batch. #running-req: 1\n" * 1000)[:50])
    whole = zstandard.ZstdCompressor().compress(("\n".join(LINES) + "\n").encode() * 2000)
    (tmp_path / "trunc.log.zst").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "unknown.log").write_text("hello world\nnothing to see\n")
    (tmp_path / "adir").mkdir()
    text = ("\n".join(LINES) + "\n").encode() * 200
    (tmp_path / "trunc.log.xz").write_bytes(lzma.compress(text)[:100])
    broken = bytearray(bz2.compress(text))
    broken[20:40] = b"x" * 20
    (tmp_path / "corrupt.log.bz2").write_bytes(bytes(broken))
    with zipfile.ZipFile(tmp_path / "logs.zip", "w") as z:
        z.writestr("server.log", text)
    with tarfile.open(tmp_path / "logs.tar.gz", "w:gz") as t:
        t.add(tmp_path / "unknown.log", arcname="logs/server.log")
    return {
        "missing": (tmp_path / "nope.log", "no such file"),
        "directory": (tmp_path / "adir", "is a directory with no files"),
        "empty": (tmp_path / "empty.log", "empty file"),
        "binary": (tmp_path / "binary.bin", "binary data"),
        "truncated gzip": (tmp_path / "trunc.log.gz", "truncated or corrupt"),
        "truncated zstd": (tmp_path / "trunc.log.zst", "truncated or corrupt"),
        "unknown format": (tmp_path / "unknown.log", "unknown format (known formats: sglang"),
        "truncated xz": (tmp_path / "trunc.log.xz", "truncated or corrupt"),
        "corrupt bzip2": (tmp_path / "corrupt.log.bz2", "truncated or corrupt compressed file (Invalid data stream)"),
        "zip archive": (tmp_path / "logs.zip", "a zip archive, not a text log: unpack it and ingest the folder"),
        "tar archive": (tmp_path / "logs.tar.gz", "a tar archive, not a text log: unpack it and ingest the folder"),
    }


@pytest.mark.parametrize("case", ["missing", "directory", "empty", "binary", "truncated gzip", "truncated zstd",
                                  "unknown format", "truncated xz", "corrupt bzip2", "zip archive", "tar archive"])
def test_bad_input_is_one_line_error(tmp_path, case):
    path, message = bad_inputs(tmp_path)[case]
    code, out = cli("ingest", path, "--store", tmp_path / "s", "-q")
    assert code == 2
    assert "Traceback" not in out and message in out
    assert len(out.strip().splitlines()) == 1


@pytest.mark.parametrize("name", sorted(formats.FORMATS))
def test_blank_lines_forced_to_any_format_are_counted_blank(tmp_path, name):
    """Found by the store fuzzer: a whole-file reader was handed no lines and raised."""
    path = tmp_path / "blank.log"
    path.write_text(" \n\t\n\n")
    code, out = cli("ingest", path, "--as", name, "--store", tmp_path / "s", "--format", "json")
    assert code == 0, out
    assert json.loads(out)["sources"][0]["blank"] == 3


def test_wrapper_prefixes_with_nothing_after_them_are_blank(tmp_path):
    """An empty line as Open MPI (`[1,4]<stdout>:`) and a log shipper that stamps every line
    (CloudWatch, `kubectl logs --timestamps`) print it: blank, not unparsed."""
    path = tmp_path / "nccl.log"
    path.write_text("[1,4]<stdout>:\n"
                    "2024-05-01T10:00:00.123Z: [1,12]<stdout>:\n"
                    "2024-05-01T10:00:00.456Z\n"
                    "node01:5325:5337 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n")
    src = la.ingest([path], run="r", store=tmp_path / "s").sources[0]
    assert (src.lines, src.blank, src.unparsed) == (4, 3, 0)


def test_bad_utf8_is_replaced_with_a_warning(tmp_path):
    path = tmp_path / "bad.log"
    path.write_bytes(LINES[0].encode() + b" \xff\xfe\n")
    code, out = cli("ingest", path, "--store", tmp_path / "s", "-q")
    assert code == 0 and "2 bytes were not valid UTF-8" in out


@pytest.mark.parametrize("args,message", [
    (["show", "nope"], "no run 'nope'"),
    (["diagnose", "nope"], "no run 'nope'"),
    (["show", "../x"], "bad run name"),
    (["ingest", "x.log", "--run", "../x"], "bad run name"),
])
def test_bad_run_is_one_line_error(tmp_path, log, args, message):
    if args[0] == "ingest":
        args = ["ingest", log, *args[2:]]
    code, out = cli(*args, "--store", tmp_path / "s")
    assert code == 2 and message in out and "Traceback" not in out


def test_fail_on_gates_ci(tmp_path):
    store = tmp_path / "s"
    ingest_json(store, sample("sglang", "16_"), "--run", "spec")
    assert cli("diagnose", "spec", "--store", store, "--fail-on", "warning")[0] == 1
    assert cli("diagnose", "spec", "--store", store, "--fail-on", "critical")[0] == 0
    code, out = cli("diagnose", "spec", "--store", store, "--format", "json")
    finding = json.loads(out)["findings"][0]
    assert {"id", "severity", "title", "evidence", "recommendation"} <= finding.keys()


def test_truncated_zstd_leaves_the_store_unchanged(tmp_path):
    path, _ = bad_inputs(tmp_path)["truncated zstd"]
    code, _ = cli("ingest", path, "--store", tmp_path / "s", "-q", "--run", "z")
    assert code == 2
    assert cli("show", "z", "--store", tmp_path / "s")[0] == 2  # no run z: nothing half-ingested


def test_cr_only_line_ends_are_lines(tmp_path):
    cr, lf = tmp_path / "mac.log", tmp_path / "unix.log"
    cr.write_bytes(("\r".join(LINES) + "\r").encode())
    lf.write_text("\n".join(LINES) + "\n")
    got, want = (ingest_json(tmp_path / name, path)["sources"][0] for name, path in (("a", cr), ("b", lf)))
    assert got["lines"] == want["lines"] == len(LINES)
    assert got["lines_by_table"] == want["lines_by_table"] and len(want["lines_by_table"]) > 1


@pytest.mark.parametrize("label", ["run=x", "source=y"])
def test_reserved_label_keys_are_refused(tmp_path, log, label):
    code, out = cli("ingest", log, "--store", tmp_path / "s", "-q", "--label", label)
    assert code == 2 and "is reserved" in out and len(out.strip().splitlines()) == 1


def test_a_store_path_with_glob_characters_is_a_path(tmp_path, log):
    import loganalyze as la

    decoy, real = tmp_path / "st1", tmp_path / "st[1]"
    ingest_json(decoy, sample("sglang", "16_"), "--run", "r")
    ingest_json(real, log, "--run", "r")
    got = la.open_run("r", real).table("stats").collect().height
    assert got == 1 and la.open_run("r", decoy).table("stats").collect().height != got
    for name in ("st*", "st?"):
        ingest_json(tmp_path / name, log, "--run", "r")
        assert la.open_run("r", tmp_path / name).table("stats").collect().height == 1


def _children(pid: int) -> list[int]:
    """Worker processes (multiprocessing spawn) whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or len(os.sched_getaffinity(0)) < 2,
                    reason="reads /proc; worker processes need two cores")
def test_workers_die_with_a_killed_ingest(tmp_path):
    """kill -9 of a many-file ingest: its worker processes end too, none is left orphaned."""
    import signal
    import subprocess
    import sys
    import time

    logs = []
    for i in range(4):
        path = tmp_path / f"host{i}.log"
        path.write_text(f"host {i}\n" + ("\n".join(LINES) + "\n") * 20_000)
        logs.append(str(path))
    code = ("import sys\nimport loganalyze.ingestion.executors\nsys.modules['loganalyze.ingestion.executors'].POOL_MIN_BYTES = 0\n"
            "from loganalyze.cli import main\nimport sys\n"
            f"sys.argv = ['loganalyze', 'ingest', *{logs!r}, '--store', {str(tmp_path / 's')!r}, '-q']\nmain()")
    workers: list[int] = []
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a bound for a slow machine, not a measurement
        expected = min(len(os.sched_getaffinity(0)), len(logs))
        while len(workers := _children(parent.pid)) < expected and parent.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) == expected, "the ingest did not start its worker processes"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers outlived their parent"
    finally:
        parent.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_a_folder_is_every_file_below_it_and_an_unknown_file_is_skipped(tmp_path):
    """`ingest run42/`: what is known is ingested, what is not is listed with its reason."""
    folder = tmp_path / "run42"
    (folder / "client").mkdir(parents=True)
    (folder / "server.log").write_bytes(sample("vllm", "14_").read_bytes())
    (folder / "client" / "notes.txt").write_text("the benchmark ran twice; see the ticket\n")
    (folder / ".hidden.log").write_bytes(sample("sglang", "19_").read_bytes())
    store = tmp_path / "store"
    code, out = cli("ingest", folder, "--run", "r", "--store", store, "-q", "--format", "json")
    assert code == 0
    sources = {Path(s["path"]).name: s for s in json.loads(out)["sources"]}
    assert set(sources) == {"server.log", "notes.txt"}  # hidden files left out
    assert sources["server.log"]["format"] == "vllm" and sources["server.log"]["lines_by_table"]["stats"] > 0
    assert "unknown format" in sources["notes.txt"]["refused"]
    code, out = cli("ingest", folder, "--run", "r2", "--store", store, "-q", "--strict")
    assert code == 2 and "notes.txt: unknown format" in out
    code, out = cli("ingest", folder / "client", "--run", "r3", "--store", store, "-q")
    assert code == 2 and "unknown format" in out


def test_side_files_of_a_recording_are_skipped_by_content_and_named(tmp_path):
    """A folder of recordings: the recordings' README.md names vLLM's lines but holds none
    that a format reads, and expected.toml is no log: both are listed as skipped, not stored
    as unparsed lines. `--as` stores a file whatever it holds; a commands.txt is read for the
    client's command line (the load: AIPerf's `--concurrency 8`, a `vllm bench serve` command)."""
    engines = FIXTURES / "engines" / "vllm-0.32"
    case = tmp_path / "case"
    case.mkdir()
    result = "vllm-infqps-concurrency2-tiny-llama-20261201-131908.json"
    for name, source in ((result, "healthy"), ("commands.txt", "aiperf"), ("expected.toml", "aiperf")):
        (case / name).write_bytes((engines / source / name).read_bytes())
    (case / "README.md").write_bytes((engines / "README.md").read_bytes())
    store = tmp_path / "store"
    code, out = cli("ingest", case, "--run", "r", "--store", store, "-q")
    assert code == 0
    assert out.splitlines()[-1].startswith("skipped 2 files no format knows: README.md, expected.toml (")
    assert f"{case / 'README.md'}: skipped: looked like vllm, but no line of it is one it reads" in out
    code, out = cli("ingest", case, "--run", "j", "--store", store, "-q", "--format", "json")
    got = json.loads(out)
    assert got["unknown_format"] == [str(case / "README.md"), str(case / "expected.toml")]
    aiperf = next(s for s in got["sources"] if s["path"].endswith("commands.txt"))
    assert aiperf["lines_by_table"] == {"config": 1, "unparsed": 2}
    code, out = cli("ingest", case / "README.md", "--run", "s", "--store", store, "-q", "--strict")
    assert code == 2 and "no line of it is one a format reads (it looked like vllm; use --as vllm" in out
    code, out = cli("ingest", case / "expected.toml", "--run", "a", "--store", store, "-q", "--as", "bench")
    assert code == 0 and "unparsed            5 lines" in out
    code, out = cli("ingest", engines / "healthy" / "commands.txt", "--run", "b", "--store", store, "-q",
                    "--format", "json")
    assert json.loads(out)["sources"][0]["lines_by_table"] == {"config": 1, "unparsed": 2}


def test_a_failure_after_some_chunks_keeps_them_and_says_how_to_add_the_rest(tmp_path, monkeypatch):
    """Chunks of 2 files: the 5th file is empty, so the first two chunks are stored and the
    error names the run; once the file is fixed the same ingest adds the rest."""
    import loganalyze as la
    from loganalyze.errors import LoganalyzeError
    from loganalyze.store import Store

    monkeypatch.setattr(sys.modules["loganalyze.ingestion.inputs"], "CHUNK_FILES", 2)
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"host{i}.log")
        paths[-1].write_text(f"host {i}\n" + "\n".join(LINES) + "\n")
    paths[4].write_text("")
    store = tmp_path / "s"
    with pytest.raises(LoganalyzeError, match=r"host4.log: empty file \(4 file\(s\) before it were stored in run "
                                              r"run1; the same ingest with --run run1 adds the rest\)"):
        la.ingest(paths, store=store)
    assert [Path(s["path"]).name for s in Store(store).run("run1")["sources"]] == [p.name for p in paths[:4]]
    paths[4].write_text("host 4\n" + "\n".join(LINES) + "\n")
    seen = []
    result = la.ingest(paths, run="run1", store=store, progress=lambda *a: seen.append(a))
    assert [s.skipped for s in result.sources] == [True] * 4 + [False] * 2
    assert len(Store(store).run("run1")["sources"]) == 6
    assert seen[-1][2:] == (6, 6)  # files done, files in all
    assert seen[-1][:2] == (sum(p.stat().st_size for p in paths[4:]), 2 * (len(LINES) + 1))


def test_engine_is_a_deprecated_name_of_executor(tmp_path, log):
    """`--engine local` (users' scripts) still works, saying so in one line; the store is the same."""
    runner = CliRunner()
    old = runner.invoke(main, ["ingest", str(log), "--store", str(tmp_path / "a"), "-q", "--engine", "local"])
    new = runner.invoke(main, ["ingest", str(log), "--store", str(tmp_path / "b"), "-q", "--executor", "local"])
    assert old.exit_code == new.exit_code == 0
    assert old.stderr.splitlines() == ["loganalyze: --engine is deprecated, use --executor (the same values)"]
    assert new.stderr == "" and old.stdout.replace(str(tmp_path / "a"), "") == new.stdout.replace(str(tmp_path / "b"), "")
    with pytest.warns(DeprecationWarning, match="executor="):
        import loganalyze as la

        la.ingest([log], store=tmp_path / "c", engine="local")


def test_worker_processes_know_the_format_files_installed(tmp_path, monkeypatch):
    """Many small files are staged by spawned worker processes: a format file loaded here
    (--formats, la.load_formats) is loaded in each of them too, so its files are not
    'unknown format' there."""
    import loganalyze as la

    monkeypatch.setattr(sys.modules["loganalyze.ingestion.executors"], "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    formats = ROOT / "fixtures" / "formats"
    la.load_formats([formats / "llamacpp.toml"])
    paths = [tmp_path / f"server{i}.log" for i in range(2)]
    for i, path in enumerate(paths):
        path.write_text((formats / "llamacpp.log").read_text() + f"# copy {i}\n")
    from loganalyze.store import Store

    assert sys.modules["loganalyze.ingestion.executors"].worth_processes(Store(tmp_path / "s"), list(map(str, paths))) == 2
    result = la.ingest(paths, run="r", store=tmp_path / "s")
    alone = la.ingest([paths[0]], run="one", store=tmp_path / "one")
    assert [s.format for s in result.sources] == ["llamacpp-example"] * 2
    assert result.sources[0].tables == alone.sources[0].tables


def test_a_last_line_without_newline_is_read_with_the_lines_above(tmp_path):
    """The recorded unclean shutdown ends `See https://nanobind...` with no line end: the
    nanobind leak report's last line, typed with it (it was read alone, as a batch of its own)."""
    from loganalyze.reader import ReadStats, read_batches

    log = FIXTURES / "engines" / "vllm-0.32" / "unclean-shutdown" / "server.log"
    assert not log.read_bytes().endswith(b"\n")
    small = tmp_path / "cut.log"
    small.write_bytes(b"line1\nline2\nlast")
    frames = [f["text"].to_list() for f in read_batches(small, ReadStats(), batch_bytes=6)]
    assert frames == [["line1"], ["line2", "last"]]
    code, out = cli("ingest", log, "--store", tmp_path / "s", "--run", "r", "-q")
    assert code == 0, out
    run = la.open_run("r", tmp_path / "s")
    last = len(log.read_bytes().split(b"\n"))
    assert last not in run.table("unparsed").collect()["line_no"].to_list()
    owned = run.table("events").collect().filter(pl.col("line_no") + pl.col("span") > last)
    assert owned["message"].str.contains("nanobind").to_list() == [True]
