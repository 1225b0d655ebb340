"""Record every fixture's tables, or compare them with a recording: the check that a change
to the engine leaves every table identical, row for row.

    python benchmarks/golden_tables.py record /tmp/golden-main     # on the commit before
    python benchmarks/golden_tables.py compare /tmp/golden-main    # on the change

Each log of fixtures/real, fixtures/engines and fixtures/reference is ingested alone (one
run per file, one store), and each of its tables is written as Parquet, sorted by
(source, line_no); `compare` ingests the same way and reports every table that differs.
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


def main(argv: list[str]) -> int:
    mode, where = argv[0], Path(argv[1])
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
