"""Parquet write choices on the store's own tables: CPU seconds and bytes per choice.

    python benchmarks/parquet_choices.py /tmp/sglang-100M.log /tmp/vllm-100M.log [--runs 3]
    python benchmarks/parquet_choices.py LOG --only current,pyarrow-zstd1   # e.g. under callgrind

Ingests each log into a fresh store with `loganalyze ingest`, reads every part the store
wrote back as it was written (one frame per part file, the store's columns and types),
then encodes all of a log's parts in memory with each choice, on one thread
(POLARS_MAX_THREADS=1), the choices interleaved round by round so that each has its peers
in the same run. Prints, per choice, the median CPU seconds of a round (scaled to 100 MB
of log) and the bytes written, and each table's share of the bytes under the current
choice. docs/speed.md says what was measured with it and what the store chose.
"""

from __future__ import annotations

import os

os.environ["POLARS_MAX_THREADS"] = "1"

import argparse  # noqa: E402
import io  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import polars as pl  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

BIN = Path(sys.executable).parent
STATS_COLUMNS = ["line_no", "ts"]  # the store reads line_no's min/max from footers (loganalyze/localfs.py)


def _polars(**kw) -> Callable[[pl.DataFrame], bytes]:
    def write(frame: pl.DataFrame) -> bytes:
        buf = io.BytesIO()
        frame.write_parquet(buf, **kw)
        return buf.getvalue()
    return write


def _pyarrow(**kw) -> Callable[[pl.DataFrame], bytes]:
    def write(frame: pl.DataFrame) -> bytes:
        buf = io.BytesIO()
        pq.write_table(frame.to_arrow(), buf, **kw)
        return buf.getvalue()
    return write


def _without_raw(write: Callable[[pl.DataFrame], bytes]) -> Callable[[pl.DataFrame], bytes]:
    return lambda frame: write(frame.drop("raw") if "raw" in frame.columns else frame)


CHOICES: dict[str, Callable[[pl.DataFrame], bytes]] = {
    "current": _polars(compression="zstd", compression_level=1),
    "zstd3": _polars(compression="zstd", compression_level=3),
    "lz4": _polars(compression="lz4"),
    "snappy": _polars(compression="snappy"),
    "none": _polars(compression="uncompressed"),
    "zstd1-nostats": _polars(compression="zstd", compression_level=1, statistics=False),
    "zstd1-rg64k": _polars(compression="zstd", compression_level=1, row_group_size=65_536),
    "zstd1-rg1m": _polars(compression="zstd", compression_level=1, row_group_size=1 << 20),
    "pyarrow-zstd1": _pyarrow(compression="zstd", compression_level=1),
    "pyarrow-zstd1-nodict": _pyarrow(compression="zstd", compression_level=1, use_dictionary=False),
    "pyarrow-zstd1-stats2": _pyarrow(compression="zstd", compression_level=1, write_statistics=STATS_COLUMNS),
    "pyarrow-lz4": _pyarrow(compression="lz4"),
    "current-noraw": _without_raw(_polars(compression="zstd", compression_level=1)),
}


def store_parts(log: Path, into: Path) -> list[tuple[str, pl.DataFrame]]:
    """(table, frame) of every part file `loganalyze ingest` writes for the log."""
    subprocess.run([str(BIN / "loganalyze"), "ingest", "-q", "--store", str(into), "--run", "r", str(log)], check=True)
    return [(p.parent.parent.name, pl.read_parquet(p)) for p in sorted(into.glob("*/run=r/*.parquet"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", help="comma-separated choices (default: all)")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(CHOICES)
    for log in args.logs:
        with tempfile.TemporaryDirectory() as tmp:
            parts = store_parts(log, Path(tmp) / "store")
        scale = 100e6 / log.stat().st_size
        cpu: dict[str, list[float]] = {n: [] for n in names}
        size: dict[str, int] = {}
        for _ in range(args.runs):
            for n in names:
                t = time.process_time()
                size[n] = sum(len(CHOICES[n](frame)) for _, frame in parts)
                cpu[n].append((time.process_time() - t) * scale)
        print(f"{log.name}: {sum(f.height for _, f in parts):,} rows in {len(parts)} parts")
        print(f"{'choice':22s} {'CPU-s/100MB':>12s} {'MB':>8s}")
        for n in names:
            print(f"{n:22s} {statistics.median(cpu[n]):12.3f} {size[n] / 1e6:8.2f}")
        if "current" in names:
            tables: dict[str, int] = {}
            raw = 0
            for table, frame in parts:
                tables[table] = tables.get(table, 0) + len(CHOICES["current"](frame))
                if "raw" in frame.columns:
                    raw += len(CHOICES["current"](frame)) - len(CHOICES["current-noraw"](frame))
            print("bytes by table (current):", ", ".join(f"{t} {b / 1e6:.2f} MB" for t, b in tables.items()),
                  f"; the raw column {raw / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
