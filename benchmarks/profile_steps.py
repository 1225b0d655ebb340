"""Where ingest's time goes, step by step: CPU seconds per 100 MB of a log, on one thread.

    python benchmarks/profile_steps.py /tmp/loganalyze-bench/sglang-300M.log [--mb 100]

Reads the first --mb MB of the log as ingest does (reader, wrappers, every format's
parse.parse, Parquet encoding of the tables), serially and with polars on one thread
(POLARS_MAX_THREADS=1), under cProfile; prints the cumulative time of the engine's steps
and of the reader and the Parquet write, scaled to 100 MB. One thread makes the figures
CPU seconds that add up; ingest runs them on two cores.
"""

from __future__ import annotations

import os

os.environ["POLARS_MAX_THREADS"] = "1"

import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import polars as pl  # noqa: E402

STEPS = ("read_batches", "unwrap", "parse_batch", "split_prefix", "prefix_groups", "peel_leaders", "classify_rows",
         "attach_continuations", "claim_leftovers", "extract", "key_columns", "tokenize", "_cast", "handler",
         "write_parquet")


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_file():
        print("usage: python benchmarks/profile_steps.py LOG [--mb 100]  (a generated log: benchmarks/generate.py)")
        return 2
    log = Path(argv[0])
    mb = float(argv[argv.index("--mb") + 1]) if "--mb" in argv else 100.0
    from loganalyze import formats
    from loganalyze.ingestion.dispatch import parse_batch
    from loganalyze.reader import ReadStats, read_batches
    from loganalyze.wrappers import unwrap
    from loganalyze.formats.spec import Context

    primary = formats.FORMATS["sglang" if "sglang" in log.name else "vllm"]
    ctx = Context(source="s", year=2026, base_date="2026-01-01")
    done = 0

    def work() -> None:
        nonlocal done
        for batch in read_batches(log, ReadStats()):
            frame = unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), 2026)
            tables, _ = parse_batch(frame, primary, ctx)
            for parts in tables.values():
                pl.concat(parts, how="diagonal_relaxed").write_parquet(io.BytesIO(), compression="zstd",
                                                                       compression_level=1)
            done = batch["line_no"][-1]
            if log.stat().st_size and _read_mb(log, done) >= mb:
                break

    profile = cProfile.Profile(time.process_time)  # CPU time: the machine may be shared
    t = time.process_time()
    profile.runcall(work)
    cpu = time.process_time() - t
    read = _read_mb(log, done)
    scale = 100 / read
    stats = pstats.Stats(profile, stream=io.StringIO())
    print(f"{read:.0f} MB ({done:,} lines) in {cpu:.2f} CPU-s on one thread: {cpu * scale:.2f} CPU-s per 100 MB")
    print(f"{'step':24s} {'CPU-s / 100 MB':>15s} {'calls':>8s}")
    rows = []
    for (file, _, name), (_, calls, _, cum, _) in stats.stats.items():
        if name in STEPS and ("loganalyze" in file or name == "write_parquet"):
            rows.append((name, cum * scale, calls))
    merged: dict[str, list] = {}
    for name, cum, calls in rows:
        merged.setdefault(name, [0.0, 0])
        merged[name][0] += cum
        merged[name][1] += calls
    for name in STEPS:
        if name in merged:
            print(f"{name:24s} {merged[name][0]:15.3f} {merged[name][1]:8d}")
    return 0


_LINE_BYTES: dict[Path, float] = {}


def _read_mb(log: Path, lines: int) -> float:
    """MB read after `lines` lines, from the log's mean line length (read once)."""
    if log not in _LINE_BYTES:
        with open(log, "rb") as f:
            head = f.read(1 << 24)
        _LINE_BYTES[log] = len(head) / max(1, head.count(b"\n"))
    return lines * _LINE_BYTES[log] / 1e6


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
