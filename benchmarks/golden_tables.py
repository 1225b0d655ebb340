"""Record every fixture's tables, or compare them with a recording: the check that a change
to the engine leaves every table identical, row for row.

    python benchmarks/golden_tables.py record /tmp/golden-main     # on the commit before
    python benchmarks/golden_tables.py compare /tmp/golden-main    # on the change
    python benchmarks/golden_tables.py together /tmp/golden-main   # all in one ingest

Each log of fixtures/real, fixtures/engines and fixtures/reference is ingested alone (one
run per file, one store), and each of its tables is written as Parquet, sorted by
(source, line_no); `compare` ingests the same way and reports every table that differs; `together` ingests
every fixture that ingests alone without an error in one ingest (one run: small files of
one format are parsed many to a batch, loganalyze/formats/sources.py) and compares each
source's rows with its recording.
The `ingested` time and other catalog fields are not tables and are left out.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

ROOT = Path(__file__).resolve().parent.parent
AREAS = ("fixtures/real", "fixtures/engines", "fixtures/reference")
NOT_LOGS = {".md", ".toml", ".py"}


def fixtures() -> list[Path]:
    return sorted(p for a in AREAS for p in (ROOT / a).rglob("*") if p.is_file() and p.suffix not in NOT_LOGS)


def tables_of(path: Path, store: Path, run: str) -> dict[str, pl.DataFrame]:
    import loganalyze as la
    from loganalyze.errors import LoganalyzeError

    try:
        la.ingest([path], run=run, store=store)
    except LoganalyzeError as e:
        return {"__error": pl.DataFrame({"error": [str(e).replace(str(path), "PATH")]})}
    opened = la.open_run(run, store)
    out = {}
    for name in sorted(opened.tables()):
        frame = opened.table(name).collect()
        keys = [c for c in ("source", "line_no") if c in frame.columns]
        out[name] = frame.sort(keys, maintain_order=True) if keys else frame
    return out


def together(where: Path) -> int:
    """Every fixture's rows from one ingest of all of them against its recording alone."""
    import loganalyze as la

    paths = [p for p in fixtures() if not (where / p.relative_to(ROOT) / "__error.parquet").exists()]
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        la.ingest(paths, run="all", store=Path(tmp) / "store")
        opened = la.open_run("all", Path(tmp) / "store")
        tables = {name: opened.table(name).collect() for name in opened.tables()}
        for path in paths:
            rel = path.relative_to(ROOT)
            for recorded in (where / rel).glob("*.parquet"):
                want = pl.read_parquet(recorded)
                if not want.height or "source" not in want.columns:
                    continue
                got = tables.get(recorded.stem, want.clear()).filter(pl.col("source") == want["source"][0])
                try:
                    assert_frame_equal(want, got.sort("source", "line_no", maintain_order=True).select(want.columns))
                except AssertionError as e:
                    print(f"{rel}: {recorded.stem}: {str(e).splitlines()[0]}")
                    differ += 1
    print(f"{differ} tables differ" if differ else f"every table identical ({len(paths)} files in one ingest)")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    mode, where = argv[0], Path(argv[1])
    if mode == "together":
        return together(where)
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(fixtures()):
            rel = path.relative_to(ROOT)
            got = tables_of(path, Path(tmp) / "store", f"f{i}")
            folder = where / rel
            if mode == "record":
                folder.mkdir(parents=True, exist_ok=True)
                for name, frame in got.items():
                    frame.write_parquet(folder / f"{name}.parquet")
                continue
            want = {p.stem: pl.read_parquet(p) for p in folder.glob("*.parquet")}
            if want.keys() != got.keys():
                print(f"{rel}: tables {sorted(want)} -> {sorted(got)}")
                differ += 1
                continue
            for name in want:
                try:
                    assert_frame_equal(want[name], got[name])
                except AssertionError as e:
                    print(f"{rel}: {name}: {str(e).splitlines()[0]}")
                    differ += 1
    if mode == "compare":
        print(f"{differ} tables differ" if differ else "every table identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
