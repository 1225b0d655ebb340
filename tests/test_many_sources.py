"""Small files parsed many to a batch (loganalyze/formats/sources.py) give, source by source,
the rows and line counts each gives ingested alone; a failure in the middle of a batch
leaves the store as it was."""

from __future__ import annotations

import importlib
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import loganalyze as la
from loganalyze.errors import LoganalyzeError, UnknownFormat
from loganalyze.formats import sources
from loganalyze.store import Store
from store_helpers import counts, rows_on_disk, sglang_log

ROOT = Path(__file__).resolve().parent.parent
STAGING = importlib.import_module("loganalyze.staging")
# Every 6th real log of each area (SGLang, vLLM, NCCL, benchmark clients) and the first
# of the reference logs: server logs, NCCL traces embedded or alone, result tables,
# tracebacks, terminal-wrapped and glued lines; vLLM's carry state and go on their own.
PICKED = [p for area in sorted((ROOT / "fixtures/real").iterdir()) if area.is_dir()
          for p in sorted(area.iterdir())[::6] if p.suffix not in (".md", ".toml")]
SUMMARY = ("format", "version", "lines", "blank", "tables", "lines_by_table", "glued", "unparsed", "bad_utf8",
           "long_lines", "refused", "looked_like", "skipped")


def ingest_alone(paths: list[Path], store: Path) -> tuple[list[dict], dict[str, pl.DataFrame]]:
    """Each file in its own ingest (its own run); the sources' results and every run's tables together."""
    results, tables = [], {}
    for i, path in enumerate(paths):
        try:
            got = la.ingest([path], run=f"f{i}", store=store, year=2025)
        except UnknownFormat:  # alone, an ingest of no known format is an error; among others, left out
            results.append({"refused": True})
            continue
        results += [s.to_dict() for s in got.sources]
        opened = la.open_run(f"f{i}", store)
        for name in opened.tables():
            tables.setdefault(name, []).append(opened.table(name).collect())
    return results, {name: pl.concat(parts, how="diagonal_relaxed") for name, parts in tables.items()}


def ingest_together(paths: list[Path], store: Path) -> tuple[list[dict], dict[str, pl.DataFrame]]:
    got = la.ingest(paths, run="all", store=store, year=2025)
    opened = la.open_run("all", store)
    return [s.to_dict() for s in got.sources], {name: opened.table(name).collect() for name in opened.tables()}


def sorted_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort("source", "line_no", maintain_order=True)


def test_the_picked_logs_are_many_and_of_every_area():
    assert len(PICKED) >= 60
    assert {p.parent.name for p in PICKED} == {"bench", "nccl", "sglang", "vllm"}


def test_logs_ingested_together_match_each_ingested_alone(tmp_path):
    alone, alone_tables = ingest_alone(PICKED, tmp_path / "alone")
    together, together_tables = ingest_together(PICKED, tmp_path / "together")
    assert [bool(s["refused"]) for s in together] == [bool(s["refused"]) for s in alone]
    assert ([{k: s[k] for k in SUMMARY} for s in together if not s["refused"]]
            == [{k: s[k] for k in SUMMARY} for s in alone if not s["refused"]])
    assert sum(not s["refused"] for s in together) >= 50
    assert together_tables.keys() == alone_tables.keys()
    for name, want in alone_tables.items():
        got = together_tables[name].select(want.columns)
        assert_frame_equal(sorted_rows(got), sorted_rows(want), check_dtypes=False), name
    assert Store(tmp_path / "together").run("all")["sources"].__len__() == sum(not s["refused"] for s in together)


def test_a_batch_of_many_logs_is_one_batch_and_its_rows_go_to_their_sources(tmp_path, monkeypatch):
    """Twelve small logs of one format: one parse, each source's rows with its own line numbers."""
    logs = [sglang_log(tmp_path / f"host{i}.log", 40, seed=i) for i in range(12)]
    alone, alone_tables = ingest_alone(logs, tmp_path / "alone")
    batches = importlib.import_module("loganalyze.ingestion.source")
    calls: list[int] = []
    real = batches.parse_batch

    def counting(frame, fmt, ctx):
        calls.append(int(frame["line_no"].max() // sources.SHIFT) + 1)
        return real(frame, fmt, ctx)

    monkeypatch.setattr(batches, "parse_batch", counting)
    together, together_tables = ingest_together(logs, tmp_path / "together")
    assert calls == [12]  # one batch of twelve sources
    assert [s["lines_by_table"] for s in together] == [s["lines_by_table"] for s in alone]
    stats = together_tables["stats"]
    assert stats["line_no"].max() <= 40  # each source's own line numbers
    assert stats["source"].n_unique() == alone_tables["stats"]["source"].n_unique() >= 9  # some logs hold no stats line
    assert_frame_equal(sorted_rows(stats), sorted_rows(alone_tables["stats"].select(stats.columns)))


def test_a_failure_in_the_middle_of_a_batch_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """The fourth source's part of a batch of six cannot be written: nothing of the ingest is
    stored, nothing stays staged, and the same ingest again stores all six, as a clean one does."""
    logs = [sglang_log(tmp_path / f"host{i}.log", 40, seed=i) for i in range(6)]
    store, clean = tmp_path / "s", tmp_path / "clean"
    la.ingest([sglang_log(tmp_path / "before.log", 40, seed=99)], run="base", store=store)
    la.ingest([sglang_log(tmp_path / "before.log", 40, seed=99)], run="base", store=clean)
    la.ingest(logs, run="r", store=clean)
    before = counts(store)
    real, written = STAGING.Staging.write, []

    def failing(self, table, frame):
        written.append(self.key)
        if len(set(written)) == 4:
            raise LoganalyzeError("disk full (injected)")
        return real(self, table, frame)

    monkeypatch.setattr(STAGING.Staging, "write", failing)
    with pytest.raises(LoganalyzeError, match="injected"):
        la.ingest(logs, run="r", store=store)
    monkeypatch.setattr(STAGING.Staging, "write", real)
    assert counts(store) == before == rows_on_disk(store)
    assert not list((store / ".tmp").iterdir()) if (store / ".tmp").exists() else True
    la.ingest(logs, run="r", store=store)
    assert counts(store) == counts(clean) == rows_on_disk(store)
    assert Store(store).leftovers() == []


VLLM_STATS = ("INFO {} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
              "throughput: {}.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%")
VLLM_V0_SPEC = ("INFO {} metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, "
                "Number of speculative tokens: 3, Number of accepted tokens: {}, Number of draft tokens: {}, "
                "Number of emitted tokens: {}.")


def vllm_log(path: Path, start: str, lines: int, counters_from: int) -> Path:
    """vLLM stats lines (year-less stamps) 5 s apart from `start` (MM-DD HH:MM:SS), each with
    a V0 spec line whose cumulative counters start at `counters_from`."""
    from datetime import datetime, timedelta

    at, out = datetime.strptime(f"2025-{start}", "%Y-%m-%d %H:%M:%S"), []
    for i in range(lines):
        stamp = (at + timedelta(seconds=5 * i)).strftime("%m-%d %H:%M:%S")
        n = counters_from + i
        out += [VLLM_STATS.format(stamp, i), VLLM_V0_SPEC.format(stamp, 100 * n, 160 * n, 120 * n)]
    path.write_text("\n".join(out) + "\n")
    return path


def test_state_carried_in_a_file_starts_afresh_in_each_file_of_a_batch(tmp_path):
    """vLLM's year-less stamps roll over where the clock runs back, and V0's counters are
    differences from the line before: in a batch of several files each starts as it does
    alone (a file of 1 January after one of 31 December is not a year later; a file's first
    counters are not differences from the file before), and one file crossing New Year rolls."""
    logs = [vllm_log(tmp_path / "a.log", "12-31 23:59:30", 10, 5000),  # its own New Year at its 7th stats line
            vllm_log(tmp_path / "b.log", "01-01 00:00:10", 10, 7),
            vllm_log(tmp_path / "c.log", "12-31 23:00:00", 10, 90),
            vllm_log(tmp_path / "d.log", "06-30 12:00:00", 10, 3)]
    alone, alone_tables = ingest_alone(logs, tmp_path / "alone")
    together, together_tables = ingest_together(logs, tmp_path / "together")
    assert [{k: s[k] for k in SUMMARY} for s in together] == [{k: s[k] for k in SUMMARY} for s in alone]
    for name, want in alone_tables.items():
        assert_frame_equal(sorted_rows(together_tables[name].select(want.columns)), sorted_rows(want)), name
    stats = sorted_rows(together_tables["stats"])
    first_of = stats.group_by("source", maintain_order=True).agg(pl.col("ts").first())["ts"].dt.year().to_list()
    assert sorted(first_of) == [2025, 2025, 2025, 2025]
    assert stats["ts"].dt.year().max() == 2026  # a.log rolled over into the new year
    spec = together_tables["spec"]
    # c.log's first interval: 100 * 90, not that less b.log's last counters
    assert spec.filter(pl.col("accepted") == 9000).height == 1


def test_a_file_given_twice_counts_once_and_one_of_no_format_is_refused_twice(tmp_path):
    """As one file after another: a copy of a stored file is skipped, a copy of a refused one
    refused again (both copies wait in one batch before either is parsed)."""
    log = sglang_log(tmp_path / "a.log", 40, seed=1)
    unknown = tmp_path / "notes.txt"
    unknown.write_text("nothing any format reads\n" * 3)
    result = la.ingest([log, unknown, log, unknown], run="r", store=tmp_path / "s")
    assert [(bool(s.refused), s.skipped) for s in result.sources] == [(False, False), (True, False), (False, True),
                                                                     (True, False)]
    assert counts(tmp_path / "s") == rows_on_disk(tmp_path / "s")


def test_continuation_lines_end_where_their_file_does(tmp_path):
    """A bench client's result block continues down its lines until one no kind takes: in a
    batch, the next file's first lines (a Decode batch line, a scheduler's traceback) are
    not the block's. They were counted into it (31 lines of 29) before runs ended at files."""
    logs = [ROOT / "fixtures/real/sglang/69_v0.5.0_bench-serving-fa4-prefill-32k-out2.log",
            ROOT / "fixtures/real/sglang/81_v0.5.15_decode-mamba-accept-len-then-scheduler-exception-cut.log"]
    alone, alone_tables = ingest_alone(logs, tmp_path / "alone")
    together, together_tables = ingest_together(logs, tmp_path / "together")
    assert [s["lines_by_table"] for s in together] == [s["lines_by_table"] for s in alone]
    assert together[0]["lines_by_table"] == {"bench": 26, "unparsed": 3}
    for name, want in alone_tables.items():
        assert_frame_equal(sorted_rows(together_tables[name].select(want.columns)), sorted_rows(want)), name
