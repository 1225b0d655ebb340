"""Ingest at scale: the benchmark generator, and the shortcuts that must give the tables of the plain code."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent


def test_speculative_reset_line_becomes_a_config_row(tmp_path, ingest_one):
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-02 03:00:00 TP0] Decode batch, #running-req: 3, #token: 10, token usage: 0.01, #queue-req: 0\n"
        "[2026-01-02 03:00:00] Max running requests is reset to 48 for speculative decoding. You can override "
        "this by explicitly setting --max-running-requests.\n"
    )
    _, run = ingest_one(log)
    rows = run.table("config").filter(pl.col("origin") == "speculative_reset").collect()
    assert rows.select("key", "value", "value_num").row(0) == ("max_running_requests", "48", 48.0)


def test_reader_splits_lines_like_python_does():
    """polars' line splitter (valid UTF-8) and the Python fallback agree on CRs, blanks, U+FFFD."""
    from loganalyze.reader import _split_lines

    def python(chunk: bytes) -> tuple[list[str], int]:
        text = chunk.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [x.removesuffix("\r") for x in lines], text.count("\ufffd")

    for chunk in (b"a\n\n  \nb\r\nc\rd\n", b"x\ny", b"\n\nz\n", b"\n", b"a\r\n\r\n", b"a\r\r\n", b"a\r",
                  "caf\u00e9 \ufffd \u2502 ok\n".encode(), b"bad \xff\xfe byte\nok\r\n", b"\t\x0b\n"):
        lines, bad = _split_lines(chunk)
        assert (lines.to_list(), bad) == python(chunk), chunk


def test_blank_line_test_matches_strip():
    s = pl.Series(["\u00a0", "\u200b", "\u3000 ", "\x1c", "\x85", "\ufeff", " a ", "", "\x0b\x0c\t"])
    assert s.str.contains(r"^\s*$").to_list() == (s.str.strip_chars().str.len_bytes() == 0).to_list()


def test_unwrap_shortcut_gives_the_same_frame():
    """A batch where no line starts like a wrapper skips the patterns: same columns, same values."""
    from polars.testing import assert_frame_equal

    from loganalyze import wrappers

    plain = pl.DataFrame({"line_no": [1, 2], "text": ["[2026-01-02 03:00:00 TP0] Decode batch, #token: 1", "x"]})
    wrapped = plain.vstack(pl.DataFrame({"line_no": [3], "text": ["(EngineCore pid=1) y"]}))
    for frame in (plain, wrapped):
        got = wrappers.unwrap(frame, 2026)
        anchor = frame.vstack(pl.DataFrame({"line_no": [0], "text": ["(P pid=2) z"]}))
        full = wrappers.unwrap(anchor, 2026).head(frame.height)  # one wrapped line forces every pattern
        assert_frame_equal(got, full)


def test_files_staged_in_processes_make_the_same_store(tmp_path, monkeypatch):
    """Many small files go to worker processes: same tables, same catalog, a repeat still counted once."""
    import json

    import loganalyze as la

    ingest_module = sys.modules["loganalyze.ingestion.executors"]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    files = []
    for i in range(3):
        files.append(tmp_path / f"s{i}.log")
        generate(files[-1], "sglang", 300_000, seed=i)
    args = [str(f) for f in files] + [str(files[0])]
    monkeypatch.setattr(ingest_module, "POOL_MIN_BYTES", 1)
    assert ingest_module.worth_processes(la.store.Store(tmp_path / "a"), args) == 2
    pooled = la.ingest(args, run="r", store=tmp_path / "a")
    monkeypatch.setattr(ingest_module, "POOL_MIN_BYTES", 1 << 60)
    plain = la.ingest(args, run="r", store=tmp_path / "b")
    assert [s.to_dict() for s in pooled.sources] == [s.to_dict() for s in plain.sources]
    assert pooled.sources[-1].skipped
    for table in ("stats", "requests", "events", "config"):
        a = la.open_run("r", tmp_path / "a").table(table).collect().sort("source", "line_no")
        b = la.open_run("r", tmp_path / "b").table(table).collect().sort("source", "line_no")
        assert a.equals(b), table

    def entries(root):
        return [{k: v for k, v in s.items() if k != "ingested"}
                for s in json.loads((root / "catalog.json").read_text())["runs"]["r"]["sources"]]
    assert entries(tmp_path / "a") == entries(tmp_path / "b")
    assert not list((tmp_path / "a" / ".tmp").glob("*"))


def test_progress_line_only_on_a_terminal_and_never_when_quiet(monkeypatch):
    import io

    from loganalyze.progress import ProgressBar

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, enabled, shown in ((io.StringIO(), True, False), (Tty(), False, False), (Tty(), True, True)):
        monkeypatch.setattr(sys, "stderr", stream)
        bar = ProgressBar(enabled=enabled, every=0)
        bar.update(10**6, 1000)
        bar.close()
        assert bool(stream.getvalue()) == shown


def test_drain_mask_matches_the_window_it_replaces():
    """drain_mask without a window over as many groups as rows: same flags, nulls included."""
    import random

    from loganalyze.metrics.concurrency import drain_mask

    def window(min_rows: int) -> pl.Expr:
        falling = (pl.col("running").diff() < 0) & (pl.col("queued") == 0)
        in_drain = falling & (falling.sum().over((~falling).cum_sum()) >= min_rows)
        return in_drain | in_drain.shift(-1).fill_null(False)

    rnd = random.Random(7)
    for _ in range(1500):
        n, p = rnd.randrange(0, 40), rnd.random() * 0.3
        running = [None if rnd.random() < p else rnd.randrange(0, 6) for _ in range(n)]
        queued = [rnd.choice([None, 0, 0, 1]) if rnd.random() < 0.5 else 0 for _ in range(n)]
        frame = pl.DataFrame({"running": running, "queued": queued}, schema={"running": pl.Int64, "queued": pl.Int64})
        for m in (1, 3):
            assert frame.select(drain_mask(m)).to_series().to_list() == frame.select(window(m)).to_series().to_list()


def test_in_order_means_sorting_changes_nothing():
    import datetime as dt
    import random

    from loganalyze.metrics.base import in_order

    rnd, t0 = random.Random(3), dt.datetime(2026, 1, 1)
    for _ in range(500):
        n = rnd.randrange(0, 8)
        frame = pl.DataFrame({
            "ts": [None if rnd.random() < 0.05 else t0 + dt.timedelta(seconds=rnd.randrange(3)) for _ in range(n)],
            "source": [rnd.choice("ab") for _ in range(n)], "line_no": [rnd.randrange(4) for _ in range(n)],
        }, schema={"ts": pl.Datetime("us"), "source": pl.String, "line_no": pl.Int64}).unique(["source", "line_no"])
        if in_order(frame):
            assert frame.equals(frame.sort("ts", "source", "line_no"))


def test_interval_frames_leave_the_line_text_out_and_evidence_reads_it_back(ingest_one):
    """Metrics carry (source, line_no) for millions of decode rows, not their text; a finding
    reads the text of the lines it cites back from the run, the same as the log line."""
    from loganalyze.metrics import compute

    log = ROOT / "fixtures" / "reference" / "sglang-eagle3" / "server.log"
    _, run = ingest_one(log)
    families = compute(run)
    for family, frame in [("concurrency", "timeline"), ("speculative", "timeline"), ("steps", "intervals")]:
        assert "raw" not in families[family].frames[frame].columns
    [cap] = [f for f in run.diagnose() if f.id == "concurrency-cap"]
    lines = log.read_text().splitlines()
    cited = [e for e in cap.evidence if "Decode batch" in e.text]
    assert [e.line for e in cited] == [3120, 3121]  # the first lines at the deepest queue (80)
    assert all(e.text == lines[e.line - 1].strip() and "#queue-req: 80," in e.text for e in cited)


def test_extreme_rows_is_a_stable_sort_then_head():
    import random

    from loganalyze.diagnosis.base import extreme_rows

    rnd = random.Random(5)
    for _ in range(300):
        n = rnd.randrange(0, 12)
        frame = pl.DataFrame({"v": [None if rnd.random() < 0.1 else rnd.randrange(4) for _ in range(n)],
                              "i": list(range(n))}, schema={"v": pl.Int64, "i": pl.Int64})
        for largest in (True, False):
            want = frame.drop_nulls("v").sort("v", descending=largest, maintain_order=True).head(3)
            assert extreme_rows(frame, "v", largest=largest).equals(want)


def test_scan_for_lines_opens_only_the_files_that_hold_them(tmp_path, monkeypatch):
    """Evidence reads three lines of a run: the scan keeps the files whose footer's line range
    holds one of them, and finds the same rows as a scan of every file."""
    import importlib

    import loganalyze as la
    from loganalyze import reader
    from loganalyze.store import Store

    ingest_module = importlib.import_module("loganalyze.ingestion.source")
    monkeypatch.setattr(ingest_module, "read_batches", lambda p, s: reader.read_batches(p, s, batch_bytes=20_000))
    log = ROOT / "fixtures" / "reference" / "sglang-eagle3" / "server.log"
    store = Store(tmp_path / "s")
    la.ingest([log], run="r", store=store)
    assert len(store.files("r", "stats")) > 20
    wanted = [3120, 3121]
    some = store.scan("r", "stats", lines=wanted).collect()
    everything = store.scan("r", "stats").collect()
    assert 2 <= some.height < everything.height / 10  # one or two files of the run's many
    whole = everything.filter(pl.col("line_no").is_in(wanted))
    assert some.filter(pl.col("line_no").is_in(wanted)).equals(whole) and whole.height == 2
    lines = log.read_text().splitlines()
    assert whole["raw"].to_list() == [lines[n - 1] for n in wanted]


def test_fill_in_runs_matches_the_window_it_replaces():
    """Continuation lines find their owner without a window over as many groups as rows:
    same values as forward_fill().over(run), nulls in value and run included."""
    import random

    from loganalyze.formats import continuations

    rnd = random.Random(11)
    for _ in range(1500):
        n = rnd.randrange(0, 30)
        steps = [None if rnd.random() < 0.15 else rnd.random() < 0.4 for _ in range(n)]
        values = [rnd.randrange(100) if rnd.random() < 0.3 else None for _ in range(n)]
        frame = pl.DataFrame({"step": steps, "value": values}, schema={"step": pl.Boolean, "value": pl.Int64})
        run = pl.col("step").cast(pl.Int64).cum_sum()
        fast = frame.select(continuations.fill_in_runs(pl.col("value"), run)).to_series()
        window = frame.select(pl.col("value").forward_fill().over(run)).to_series()
        assert fast.to_list() == window.to_list(), frame


def test_evidence_of_two_sources_with_the_same_line_numbers_keeps_both(tmp_path, ingest_one):
    """Line numbers repeat across the sources of a run: evidence is told apart by (source, line)."""
    text = (ROOT / "fixtures" / "reference" / "sglang-eagle3" / "server.log").read_text()
    (tmp_path / "a.log").write_text(text)
    (tmp_path / "b.log").write_text(text + "[2026-03-03 10:30:00] Second server of the run.\n")
    _, run = ingest_one(tmp_path / "a.log", tmp_path / "b.log")
    [cap] = [f for f in run.diagnose() if f.id == "concurrency-cap"]
    cited = [(Path(e.path).name, e.line) for e in cap.evidence]
    assert cited[:4] == [("a.log", 2), ("b.log", 2), ("a.log", 4), ("b.log", 4)]
