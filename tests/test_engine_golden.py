"""The engine's tables on generated busy logs, row for row against golden tables.

The goldens in tests/golden/engine/ were recorded before the compiled tokenizer replaced
the polars key extraction (docs/speed.md), so they hold every change to the engine to the
tables it gave before. When a change to a format or the engine is meant to change them
(a new line kind, a fixed bug), regenerate them deliberately, and say so in the commit:

    .venv/bin/python tests/test_engine_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "engine"
# (name, format, bytes, seed, batch bytes): a batch of 50,000 bytes puts many batch edges
# (year roll-over state, continuations cut in two) into one small log.
CASES = (("sglang", "sglang", 400_000, 3, 1 << 24), ("sglang-batches", "sglang", 400_000, 3, 50_000),
         ("vllm", "vllm", 200_000, 4, 1 << 24))


def engine_tables(log: Path, batch_bytes: int) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Every format's tables for the batches of `log`, one frame per (format, table) with the
    batch number in `__batch`, and the lines and claimed rows of each (batch, format)."""
    from loganalyze import formats
    from loganalyze.reader import ReadStats, read_batches
    from loganalyze.wrappers import unwrap
    from loganalyze.formats import parse, spec

    ctx = spec.Context(source="s", year=2026, base_date="2026-01-01")
    parts: dict[str, list[pl.DataFrame]] = {}
    claims = []
    for b, batch in enumerate(read_batches(log, ReadStats(), batch_bytes)):
        frame = unwrap(batch.rename({"text": "raw"}).with_columns(text=pl.col("raw")), 2026)
        for fmt in formats.FORMATS.values():
            if isinstance(fmt, formats.LogFormat):
                got = parse.parse(fmt, frame, ctx)
                claims.append({"batch": b, "format": fmt.name, "lines": json.dumps(got.lines, sort_keys=True),
                               "claimed": got.claimed.to_list()})
                for t, df in got.tables.items():
                    df = df.select(sorted(df.columns)).sort("line_no", maintain_order=True)
                    parts.setdefault(f"{fmt.name}-{t}", []).append(df.with_columns(__batch=pl.lit(b)))
    tables = {name: pl.concat(p, how="diagonal_relaxed") for name, p in parts.items()}
    return tables, pl.DataFrame(claims)


def _log(tmp: Path, fmt: str, size: int, seed: int) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    path = tmp / f"{fmt}-{size}-{seed}.log"
    if not path.exists():
        generate(path, fmt, size, seed=seed)
    return path


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_engine_tables_match_the_goldens(tmp_path, case):
    from polars.testing import assert_frame_equal

    name, fmt, size, seed, batch = case
    tables, claims = engine_tables(_log(tmp_path, fmt, size, seed), batch)
    folder = GOLDEN / name
    assert_frame_equal(claims, pl.read_parquet(folder / "claims.parquet"))
    want = sorted(p.stem for p in folder.glob("*.parquet") if p.stem != "claims")
    assert sorted(tables) == want
    for t in want:
        assert_frame_equal(tables[t], pl.read_parquet(folder / f"{t}.parquet"))


def record() -> None:
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, fmt, size, seed, batch in CASES:
            tables, claims = engine_tables(_log(Path(tmp), fmt, size, seed), batch)
            folder = GOLDEN / name
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            claims.write_parquet(folder / "claims.parquet")
            for t, df in tables.items():
                df.write_parquet(folder / f"{t}.parquet")
            print(f"{folder}: {len(tables)} tables, {sum(df.height for df in tables.values()):,} rows")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    record()
