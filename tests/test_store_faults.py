"""Faults: kill -9 at any moment, a full disk, a damaged store, hostile input.

The store must be as it was before an ingest or after it, never in between; every
failure a user can meet is one line (`loganalyze: error: ...`, exit 2), not a traceback.
"""

from __future__ import annotations

import ctypes
import errno
import gzip
import hashlib
import importlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
import zstandard
from click.testing import CliRunner

import loganalyze as la
from loganalyze.check import check
from loganalyze.cli import main
from loganalyze.errors import LoganalyzeError
from loganalyze.store import Store
from store_helpers import ROOT, cli, cli_command, counts, rows_on_disk, sglang_log, snapshot

INGEST = importlib.import_module("loganalyze.ingestion.source")  # one input: opening, parsing, staging
LOCALFS = importlib.import_module("loganalyze.localfs")  # the local backend, whose writes a full disk fails

KILLS = 10
KILLS_LONG = 14
STEP_STRIDE = 7  # the default suite kills at every 7th write or rename; the long one at each


def run_cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def one_line_error(code: int, out: str, message: str) -> None:
    assert code == 2, out
    assert out.startswith("loganalyze: error: ") and len(out.strip().splitlines()) == 1, out
    assert message in out, out


# -- kill -9 at a random moment ---------------------------------------------------------


@dataclass
class Clean:
    """What an uninterrupted ingest of `logs` into run `r` of the base store leaves, and how
    long the CLI takes to start (`startup`) and to finish it (`seconds`)."""

    logs: list[Path]
    base: Path
    counts: dict
    startup: float
    seconds: float


def timed(*args) -> float:
    start = time.monotonic()
    assert cli(*args).returncode == 0
    return time.monotonic() - start


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Clean:
    """A multi-MB log and two small ones: one ingest commits three sources at once."""
    folder = tmp_path_factory.mktemp("kill")
    logs = [sglang_log(folder / "server.log", 24_000, seed=0)]
    logs += [sglang_log(folder / f"small{i}.log", 100, seed=i) for i in (1, 2)]
    base = folder / "base"
    la.ingest([sglang_log(folder / "other.log", 100, seed=99)], run="base", store=base)
    store = folder / "clean"
    shutil.copytree(base, store)
    seconds = timed("ingest", "-q", *logs, "--run", "r", "--store", store)
    return Clean(logs, base, counts(store), timed("--version"), seconds)


def kill_loop(clean: Clean, kills: int, tmp_path: Path, seed: int) -> Counter:
    """Kill an ingest at a random moment, check the store is before or after it, then ingest again.

    The moments are drawn from the end of the interpreter's start-up to the end of the ingest."""
    rng = random.Random(seed)
    seen: Counter = Counter()
    for i in range(kills):
        store = tmp_path / f"s{i}"
        shutil.copytree(clean.base, store)
        proc = subprocess.Popen(cli_command("ingest", "-q", *clean.logs, "--run", "r", "--store", store), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(clean.startup * 0.8, clean.seconds * 1.05))
        proc.kill()
        proc.wait()
        found = counts(store)
        assert found["base"] == clean.counts["base"], f"kill {i}: base run changed"
        assert found.get("r") in (None, clean.counts["r"]), f"kill {i}: run r half-written: {found.get('r')}"
        assert check(Store(store)).ok, f"kill {i}: {check(Store(store)).text()}"
        seen["after" if "r" in found else "before"] += 1
        la.ingest(clean.logs, run="r", store=store)
        assert counts(store) == clean.counts == rows_on_disk(store), f"kill {i}"
        assert Store(store).leftovers() == [], f"kill {i}: leftovers not cleaned"
        shutil.rmtree(store)
    return seen


def test_kill_at_random_moments(clean, tmp_path):
    seen = kill_loop(clean, KILLS, tmp_path, seed=1)
    assert sum(seen.values()) == KILLS


@pytest.mark.long
def test_kill_at_random_moments_long(clean, tmp_path):
    seen = kill_loop(clean, KILLS_LONG, tmp_path, seed=2)
    assert seen["before"] and sum(seen.values()) == KILLS_LONG


# -- kill -9 at each write and rename of staging and commit --------------------------------

# Runs the CLI, killing itself at the N-th os.fsync or os.replace: every file the store
# writes is fsynced and every publish is a rename, so the N-th call walks through the
# staging writes, the parts' renames and the catalog's replacement one by one.
KILL_AT_STEP = textwrap.dedent("""
    import os, signal, sys
    step, calls = int(sys.argv[1]), [0]
    def killing(real):
        def call(*args, **kw):
            calls[0] += 1
            if calls[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kw)
        return call
    os.replace, os.fsync = killing(os.replace), killing(os.fsync)
    from loganalyze.cli import main
    main(sys.argv[2:])
""")


def kill_at_steps(tmp_path: Path, stride: int, skip: int = 0) -> int:
    """Kill an ingest of 3 files into a new store at every `stride`-th step, but for the
    steps 1, 1 + skip, 1 + 2 * skip, ... (another test's); returns the steps."""
    logs = [sglang_log(tmp_path / f"step{i}.log", 50, seed=i) for i in range(3)]
    expected = tmp_path / "expected"
    la.ingest(logs, run="r", store=expected)
    step = 1
    while True:
        if skip and (step - 1) % skip == 0:
            step += stride
            continue
        store = tmp_path / f"s{step}"
        args = ["ingest", "-q", *map(str, logs), "--run", "r", "--store", str(store)]
        proc = subprocess.run([sys.executable, "-c", KILL_AT_STEP, str(step), *args], cwd=ROOT, capture_output=True)
        if proc.returncode == 0:
            return step
        assert proc.returncode == -9, proc.stderr.decode()
        assert counts(store) in ({}, counts(expected)), f"killed at step {step}: half-written"
        assert check(Store(store)).ok
        la.ingest(logs, run="r", store=store)
        assert counts(store) == counts(expected) == rows_on_disk(store), f"killed at step {step}"
        assert Store(store).leftovers() == []
        step += stride


def test_kill_at_steps_of_staging_and_commit(tmp_path):
    assert kill_at_steps(tmp_path, STEP_STRIDE) > 20


@pytest.mark.long
def test_kill_at_every_step_of_staging_and_commit(tmp_path):
    """The steps the default suite's test leaves out (CI runs both)."""
    assert kill_at_steps(tmp_path, 1, skip=STEP_STRIDE) > 20


# -- kill -9 in the middle of a many-file ingest, which commits chunk by chunk --------------

# The CLI with smaller chunks (CHUNK_FILES) and, for the worker processes, no minimum size.
CHUNKED = textwrap.dedent("""
    import sys
    import loganalyze.ingestion
    sys.modules["loganalyze.ingestion.inputs"].CHUNK_FILES = int(sys.argv[1])  # the package's `ingest` is the function
    sys.modules["loganalyze.ingestion.executors"].POOL_MIN_BYTES = int(sys.argv[2])
    from loganalyze.cli import main
    main(sys.argv[3:])
""")
MANY, CHUNK = 100, 10


def sources(root: Path) -> dict[str, dict[str, int]]:
    """Rows per table of each source of run `r`, by source id, as the catalog lists them."""
    runs = Store(root).runs() if (root / "catalog.json").exists() else {}
    return {s["id"]: s["tables"] for s in runs.get("r", {}).get("sources", [])}


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> tuple[Path, Path]:
    """A folder of MANY small logs and the store a clean ingest of it into run `r` makes."""
    folder = tmp_path_factory.mktemp("many")
    logs = folder / "logs"
    logs.mkdir()
    for i in range(MANY):
        sglang_log(logs / f"host{i:03d}.log", 20, seed=i)
    la.ingest([logs], run="r", store=folder / "clean")
    return logs, folder / "clean"


def kill_after(logs: Path, store: Path, listed: int, processes: bool) -> None:
    """Start `ingest logs --run r` in chunks of CHUNK files; kill -9 it once `listed` sources are committed."""
    proc = subprocess.Popen([sys.executable, "-c", CHUNKED, str(CHUNK), "0" if processes else str(1 << 40),
                             "ingest", "-q", str(logs), "--run", "r", "--store", str(store)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None and len(sources(store)) < listed:
            time.sleep(0.005)
    finally:
        proc.kill()
        proc.wait()


def check_kill_and_rerun(many: tuple[Path, Path], store: Path, listed: int, processes: bool) -> None:
    logs, clean = many
    kill_after(logs, store, listed, processes)
    found, whole = sources(store), sources(clean)
    assert listed <= len(found) < MANY, "the kill did not land in the middle of the ingest"
    assert all(found[sid] == whole[sid] for sid in found), "a source is partly stored"
    assert check(Store(store)).ok, check(Store(store)).text()
    rerun = cli("ingest", "-q", logs, "--run", "r", "--store", store, "--format", "json")
    assert rerun.returncode == 0, rerun.stderr
    skipped = {s["sha256"][:16] for s in json.loads(rerun.stdout)["sources"] if s["skipped"]}
    assert skipped == set(found), "the rerun did not add exactly the missing sources"
    assert counts(store) == counts(clean) == rows_on_disk(store)
    assert sources(store) == whole and Store(store).leftovers() == []


@pytest.mark.parametrize("processes", [False, True], ids=["one-by-one", "worker-processes"])
def test_kill_in_the_middle_of_a_many_file_ingest(many, tmp_path, processes):
    """Committed 10 files at a time and killed after the second chunk: whole sources only, and
    the same command again adds just the missing ones, to the counts of a clean ingest."""
    check_kill_and_rerun(many, tmp_path / "s", 2 * CHUNK, processes)


@pytest.mark.long
def test_kill_at_the_edges_of_chunks_of_a_many_file_ingest(many, tmp_path):
    """Killed in the first chunk, just after a chunk's commit, and late. Both executors
    are killed mid-ingest above; these points cost a whole 100-file ingest each, so CI runs
    three of them (every fifth file took 6.5 minutes of CI's 20)."""
    for listed in (1, CHUNK + 1, MANY - CHUNK - 1):
        check_kill_and_rerun(many, tmp_path / f"s{listed}", listed, False)


# -- full disk, file-size limit -------------------------------------------------------------


def test_file_size_limit_is_one_line_and_the_store_unchanged(clean, tmp_path):
    """ulimit -f: Python ignores SIGXFSZ, so writes fail with EFBIG instead of killing us."""
    store = tmp_path / "s"
    shutil.copytree(clean.base, store)
    before = snapshot(store)
    limit = 64 * 1024
    proc = subprocess.run(cli_command("ingest", "-q", *clean.logs, "--run", "r", "--store", store), cwd=ROOT,
                          capture_output=True, text=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    one_line_error(proc.returncode, proc.stderr, "File too large); the store is unchanged")
    assert snapshot(store) == before


@pytest.mark.parametrize("failing", [".catalog.json", "00000.parquet"])
def test_full_disk_is_one_line_and_rolls_back(clean, tmp_path, monkeypatch, failing):
    """No space for the catalog (after the parts were renamed into place) or for a part."""
    store = tmp_path / "s"
    shutil.copytree(clean.base, store)
    before = snapshot(store)
    real = LOCALFS.write_durably

    def full_disk(path, data):
        if path.name.startswith(failing) or path.name.endswith(failing):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)

    monkeypatch.setattr(LOCALFS, "write_durably", full_disk)
    with pytest.raises(LoganalyzeError, match="No space left on device"):
        la.ingest(clean.logs[:1], run="r", store=store)
    assert snapshot(store) == before


# -- concurrency and the lock ------------------------------------------------------------


def test_run_names_are_allocated_under_the_lock(tmp_path):
    """Two ingests without --run get two runs, even when both read the catalog first."""
    logs = [sglang_log(tmp_path / f"{i}.log", 50, seed=i) for i in range(2)]
    first = la.ingest([logs[0]], store=tmp_path / "s")
    second = la.ingest([logs[1]], store=tmp_path / "s")
    assert (first.run, second.run) == ("run1", "run2")


def test_an_ingest_of_several_files_is_all_or_nothing(tmp_path):
    good = sglang_log(tmp_path / "good.log", 100)
    bad = tmp_path / "bad.log"
    bad.write_text("no format knows this\n")
    store = tmp_path / "s"
    with pytest.raises(LoganalyzeError, match="unknown format"):
        la.ingest([good, bad], run="r", store=store, strict=True)
    assert counts(store) == {} and not list(store.glob("*/run=*/*"))
    # Without strict the file of no known format is left out and said so; the rest is ingested.
    result = la.ingest([good, bad], run="r", store=store)
    assert [bool(s.refused) for s in result.sources] == [False, True] and counts(store)["r"]["stats"] > 0


def test_same_file_twice_in_one_ingest_counts_once(tmp_path):
    log = sglang_log(tmp_path / "a.log", 100)
    result = la.ingest([log, log], run="r", store=tmp_path / "s")
    assert [s.skipped for s in result.sources] == [False, True]
    assert counts(tmp_path / "s") == rows_on_disk(tmp_path / "s")


# -- a damaged store ----------------------------------------------------------------------


@pytest.fixture
def two_runs(tmp_path) -> Path:
    store = tmp_path / "s"
    la.ingest([sglang_log(tmp_path / "a.log", 300, seed=1), sglang_log(tmp_path / "b.log", 300, seed=2)],
              run="r1", store=store)
    la.ingest([sglang_log(tmp_path / "c.log", 300, seed=3)], run="r2", store=store)
    return store


def test_a_table_file_damaged_after_it_was_read_is_read_again(two_runs):
    """Footers are remembered by path, inode, size and mtime: damage in place, same size, is
    still found by the next command of the same process."""
    assert run_cli("metrics", "r1", "--store", two_runs)[0] == 0
    damaged = sorted((two_runs / "stats" / "run=r1").glob("*.parquet"))[0]
    size, mtime = damaged.stat().st_size, damaged.stat().st_mtime_ns
    damaged.write_bytes(b"\0" * size)
    os.utime(damaged, ns=(mtime + 1_000_000, mtime + 1_000_000))
    code, out = run_cli("metrics", "r1", "--store", two_runs)
    one_line_error(code, out, f"{damaged}: damaged table file")


def test_check_of_a_sound_store(two_runs):
    code, out = run_cli("check", "--store", two_runs)
    assert code == 0 and "no problems" in out


def test_truncated_table_file(two_runs, tmp_path):
    damaged = sorted((two_runs / "stats" / "run=r1").glob("*.parquet"))[0]
    with open(damaged, "r+b") as f:
        f.truncate(damaged.stat().st_size // 2)
    code, out = run_cli("metrics", "r1", "--store", two_runs)
    one_line_error(code, out, f"{damaged}: damaged table file")
    code, out = run_cli("check", "--store", two_runs, "--format", "json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    [problem] = report["problems"]
    assert problem["kind"] == "unreadable" and problem["path"] == str(damaged) and problem["run"] == "r1"
    assert problem["source"].endswith(".log")
    code, out = run_cli("check", "--repair", "--store", two_runs)
    assert code == 0 and f"removed source {problem['source']} from run r1" in out and "ingest it again" in out
    assert run_cli("check", "--store", two_runs) == (0, f"store {two_runs}: no problems\n")
    la.ingest([problem["source"]], run="r1", store=two_runs)
    assert len(Store(two_runs).run("r1")["sources"]) == 2 and counts(two_runs) == rows_on_disk(two_runs)


def test_catalog_entry_whose_files_are_gone(two_runs):
    for f in (two_runs / "stats" / "run=r2").glob("*"):
        f.unlink()
    one_line_error(*run_cli("metrics", "r2", "--store", two_runs), "0 rows on disk, the catalog lists")
    code, out = run_cli("check", "--store", two_runs)
    assert code == 1 and "missing" in out and "run r2, source" in out
    code, out = run_cli("check", "--repair", "--store", two_runs)
    assert code == 0 and "from run r2" in out
    assert set(Store(two_runs).runs()) == {"r1"} and not (two_runs / "stats" / "run=r2").exists()


def test_table_files_without_a_catalog_are_damage(two_runs):
    (two_runs / "catalog.json").unlink()
    one_line_error(*run_cli("runs", "--store", two_runs), "damaged catalog (missing, but table files exist)")


def test_a_first_catalog_put_between_the_two_looks_is_no_damage(two_runs, monkeypatch):
    """Another writer may put the first catalog and publish after our read found none: the
    tables we then see are its, so the catalog is read again before calling it damage."""
    store = Store(two_runs)
    reads = [lambda: None, store.backend.read_catalog]  # none yet, then the other writer's
    monkeypatch.setattr(store.backend, "read_catalog", lambda: reads.pop(0)() if len(reads) > 1 else reads[0]())
    assert set(store.runs()) == {"r1", "r2"}


def test_unreadable_catalog_is_reported_and_rebuilt(two_runs):
    expected = counts(two_runs)
    (two_runs / "catalog.json").write_text('{"runs": {"r1": ')
    one_line_error(*run_cli("runs", "--store", two_runs), "catalog.json: damaged catalog")
    one_line_error(*run_cli("ingest", two_runs.parent / "a.log", "--store", two_runs), "damaged catalog")
    code, out = run_cli("check", "--store", two_runs)
    assert code == 1 and "catalog" in out
    code, out = run_cli("check", "--repair", "--store", two_runs)
    assert code == 0 and "catalog rebuilt" in out and "3 source(s) recovered" in out
    assert counts(two_runs) == expected == rows_on_disk(two_runs)
    assert list(two_runs.glob("catalog.json.damaged-*"))


def test_missing_catalog_with_tables_is_damage_not_leftovers(two_runs):
    """Without the catalog every table file would look unlisted: ingest must not clean them away."""
    (two_runs / "catalog.json").unlink()
    one_line_error(*run_cli("ingest", two_runs.parent / "a.log", "--store", two_runs), "missing, but table files")
    assert list(two_runs.glob("stats/run=r1/*.parquet"))


def test_leftovers_are_listed_then_cleaned_by_the_next_ingest(two_runs, tmp_path):
    dead = _dead_pid()
    (two_runs / ".tmp" / f"{dead}-0123abcd" / "stats").mkdir(parents=True)
    (two_runs / f".catalog.json.{dead}.tmp").write_text("{")
    stray = two_runs / "stats" / "run=r1" / "ffffffffffffffff-00000.parquet"
    shutil.copyfile(next((two_runs / "stats" / "run=r1").glob("*.parquet")), stray)
    code, out = run_cli("check", "--store", two_runs)
    assert code == 0 and out.count("\n  leftover ") == 3, out
    la.ingest([sglang_log(tmp_path / "d.log", 10, seed=4)], run="r3", store=two_runs)
    assert check(Store(two_runs)).problems == [] and not stray.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_check_without_a_store(tmp_path):
    one_line_error(*run_cli("check", "--store", tmp_path / "nope"), "no run store at")


# -- hostile input -----------------------------------------------------------------------------


def test_huge_line_without_newline(tmp_path):
    path = sglang_log(tmp_path / "huge.log", 100)
    with open(path, "a") as f:
        f.write("x" * 10_000_000)
    result = la.ingest([path], run="r", store=tmp_path / "s")
    src = result.sources[0]
    assert src.lines == 101 and sum(src.lines_by_table.values()) + src.blank == 101
    assert src.long_lines == 1 and src.lines_by_table["unparsed"] == 1
    text = la.open_run("r", tmp_path / "s").table("unparsed").collect()["text"]
    assert text.to_list() == ["x" * (1 << 20) + " [loganalyze: line of 10000000 bytes, truncated]"]


def test_a_line_longer_than_a_batch_keeps_only_its_head(tmp_path):
    """A 40 MB line of two-byte characters between ordinary lines: read without holding it
    (the reader keeps its head, counts the rest), cut on a whole character, its full byte
    length said; the lines around it keep their numbers."""
    path = sglang_log(tmp_path / "wide.log", 10)
    with open(path, "a") as f:
        f.write("é" * 20_000_000 + "\n")
    with open(path, "a") as f, open(sglang_log(tmp_path / "tail.log", 5, seed=3)) as tail:
        f.write(tail.read())
    result = la.ingest([path], run="r", store=tmp_path / "s")
    src = result.sources[0]
    assert (src.lines, src.long_lines, src.bad_utf8) == (16, 1, 0)
    unparsed = la.open_run("r", tmp_path / "s").table("unparsed").collect()
    long = unparsed.filter(pl.col("line_no") == 11)["text"].to_list()
    assert long == ["é" * (1 << 20) + " [loganalyze: line of 40000000 bytes, truncated]"]


@pytest.mark.parametrize("head, kept", [(b"ab", b"ab"), ("a€".encode()[:2], b"a"), ("a€".encode()[:3], b"a"),
                                         ("a€".encode(), b"a"), ("a😀".encode()[:4], b"a")])
def test_the_head_of_a_long_line_ends_on_a_whole_character(head, kept):
    from loganalyze.reader import _whole_utf8

    assert _whole_utf8(head) == (kept, len(head) - len(kept))


def test_long_stats_lines(tmp_path):
    """A 400 KB `Decode batch` line is parsed (no regex is built from it); one over 1 MiB is kept
    truncated in unparsed, with its length, and counted in the ingest summary."""
    decode = "[2026-08-14 14:02:47 TP0] Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, " \
             "gen throughput (token/s): 12.50, #queue-req: 0, "
    path = tmp_path / "long.log"
    path.write_text(f"{decode}{'y' * 400_000}\n{decode}{'z' * 2_000_000}\n{decode.rstrip(', ')}\n")
    code, out = run_cli("ingest", path, "--store", tmp_path / "s", "--run", "r", "-q")
    assert code == 0, out
    assert "stats               2 lines" in out and "unparsed            1 lines" in out
    assert "1 line over 1 MiB kept truncated in unparsed" in out
    run = la.open_run("r", tmp_path / "s")
    assert run.table("stats").collect()["running"].to_list() == [3, 3]
    text = run.table("unparsed").collect()["text"].to_list()
    assert text == [f"{decode}{'z' * ((1 << 20) - len(decode))} [loganalyze: line of {len(decode) + 2_000_000} "
                    "bytes, truncated]"]


RSS_BOUND_MB = 1024  # the bound: peak RSS under 1 GB whatever the input (README, Reliability)


@pytest.mark.long
@pytest.mark.parametrize("shape", ["line-200m", "line-400k", "normal-1g"])
def test_peak_rss_of_an_ingest_stays_bounded(tmp_path, shape):
    """A 200 MB line between two ordinary ones, a 400 KB stats line, 1 GB of ordinary lines: the ingest's own
    peak RSS (its process, waited for with wait4, as benchmarks/memory.py measures it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import memory

    log = tmp_path / f"{shape}.log"
    memory.SHAPES[shape](log)
    got = memory.peak_rss(None, log, tmp_path / "s")
    assert got["rc"] == 0, got["error"]
    assert got["rss_mb"] < RSS_BOUND_MB, got


def _drop_dac_capabilities() -> None:
    """Root reads any file; without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH it obeys modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0):  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_file_without_read_permission(tmp_path):
    path = sglang_log(tmp_path / "secret.log", 10)
    path.chmod(0)
    probe = subprocess.run([sys.executable, "-c", f"open({str(path)!r}).read()"], capture_output=True,
                           preexec_fn=_drop_dac_capabilities if os.geteuid() == 0 else None)
    if probe.returncode == 0:
        pytest.skip("this process can read a mode-000 file even without DAC capabilities")
    proc = subprocess.run(cli_command("ingest", path, "--store", tmp_path / "s"), cwd=ROOT, capture_output=True,
                          text=True, preexec_fn=_drop_dac_capabilities if os.geteuid() == 0 else None)
    one_line_error(proc.returncode, proc.stderr, "secret.log: permission denied")


def _hostile(tmp_path: Path, case: str) -> tuple[Path, str]:
    """An input of the named kind, and the message ingest must give for it."""
    path = tmp_path / case
    if case == "nul bytes":
        path.write_bytes(b"\0" * 1_000_000)
        return path, "binary data, not a text log"
    if case == "empty gz":
        path.write_bytes(b"")
        return path, "empty file"
    if case == "gz of nothing":
        path.write_bytes(gzip.compress(b""))
        return path, "no text lines"
    if case == "symlink loop":
        os.symlink(tmp_path / "loop-b", path)
        os.symlink(path, tmp_path / "loop-b")
        return path, "symlink loop"
    if case == "fifo":
        os.mkfifo(path)
        return path, "is a named pipe (FIFO)"
    if case == "device":
        return Path("/dev/zero"), "is a character device"
    if case == "directory":
        path.mkdir()
        return path, "is a directory with no files"
    if case == "not a folder":
        return Path(sglang_log(tmp_path / "plain.log", 1)) / "x.log", "not a directory"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["nul bytes", "empty gz", "gz of nothing", "symlink loop", "fifo", "device",
                                  "directory", "not a folder"])
def test_hostile_input_is_one_line_and_writes_nothing(tmp_path, case):
    """A FIFO runs in a process with a timeout: opening it must not wait for a writer."""
    store = tmp_path / "s"
    la.ingest([sglang_log(tmp_path / "ok.log", 10)], run="r", store=store)
    before = snapshot(store)
    path, message = _hostile(tmp_path, case)
    if case == "fifo":
        proc = cli("ingest", path, "--run", "r", "--store", store, timeout=60)
        one_line_error(proc.returncode, proc.stderr, message)
    else:
        one_line_error(*run_cli("ingest", path, "--run", "r", "--store", store), message)
    assert snapshot(store) == before


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".", "", "x" * 65, "r1\n"])
def test_bad_run_names_are_refused(tmp_path, name):
    with pytest.raises(LoganalyzeError, match="bad run name"):
        la.ingest([sglang_log(tmp_path / "a.log", 5)], run=name, store=tmp_path / "s")
    assert not (tmp_path / "s" / "catalog.json").exists()


def _opened_then(change):
    """open_input that lets the file change right after it was opened and hashed."""
    real = INGEST.open_input

    def opened(path):
        src = real(path)
        change(path)
        return src

    return opened


def test_log_still_being_written_is_ingested_as_hashed(tmp_path, monkeypatch):
    path = sglang_log(tmp_path / "live.log", 1000)
    data = path.read_bytes()

    def grow(p):
        with open(p, "a") as f:
            f.write("[2025-01-01 00:00:00] Decode batch. #running-req: 1, #token: 5\n" * 500)

    monkeypatch.setattr(INGEST, "open_input", _opened_then(grow))
    src = la.ingest([path], run="r", store=tmp_path / "s").sources[0]
    assert src.lines == 1000 and src.sha256 == hashlib.sha256(data).hexdigest()
    assert Store(tmp_path / "s").run("r")["sources"][0]["size"] == len(data)


@pytest.mark.parametrize("how", ["rewritten", "truncated"])
def test_log_changed_while_read_is_refused(tmp_path, monkeypatch, how):
    path = sglang_log(tmp_path / "live.log", 1000)

    def change(p):
        if how == "rewritten":
            with open(p, "r+b") as f:
                f.write(b"[2025-02-02")
        else:
            os.truncate(p, 100)

    monkeypatch.setattr(INGEST, "open_input", _opened_then(change))
    with pytest.raises(LoganalyzeError, match="changed while being read"):
        la.ingest([path], run="r", store=tmp_path / "s")
    assert counts(tmp_path / "s") == {} and not list((tmp_path / "s").glob("*/run=*/*"))


def test_zstd_of_several_frames_is_read_whole(tmp_path):
    """pzstd and `cat a.zst b.zst` write several frames: every one is read."""
    lines = sglang_log(tmp_path / "plain.log", 200).read_bytes().splitlines(keepends=True)
    path = tmp_path / "multi.log.zst"
    path.write_bytes(b"".join(zstandard.ZstdCompressor().compress(b"".join(lines[i:i + 50])) for i in range(0, 200, 50)))
    assert la.ingest([path], run="r", store=tmp_path / "s").sources[0].lines == 200
