"""Rebuild the example reports in reports/ from the reference-case fixtures.

    make reports            # or: .venv/bin/python reports/build.py

Each report records a content hash of its inputs (run names, the fixtures' sha256,
loganalyze's and Vega's versions) in `<meta name="loganalyze-inputs">`. Reports carry no
generation time, and fixtures are ingested with a fixed year (vLLM lines print none, and
the default would be the file's modification time), so a rebuild is byte-for-byte stable:
tests/test_report.py rebuilds them and fails when the committed ones differ.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import loganalyze as la  # noqa: E402
from loganalyze.report import build_report  # noqa: E402
from loganalyze.store import Store  # noqa: E402

REFERENCE = "fixtures/reference"
YEAR = 2026



def fixture_files(run: str) -> tuple[str, ...]:
    """Every file of a fixture folder (server log, benchmark results, NCCL log), relative to the root."""
    folder = ROOT / REFERENCE / run
    return tuple(str(p.relative_to(ROOT)) for p in sorted(folder.rglob("*")) if p.is_file())


# Run name -> input files, relative to the repository root (paths appear in the reports).
RUNS: dict[str, tuple[str, ...]] = {run: fixture_files(run) for run in ("sglang-eagle3", "sglang-base", "vllm-baseline")}


@dataclass(frozen=True)
class Report:
    file: str
    runs: tuple[str, ...]
    baseline: str | None
    fmt: str


REPORTS = (
    Report("sglang-eagle3.html", ("sglang-eagle3",), "sglang-base", "html"),
    Report("sglang-eagle3.md", ("sglang-eagle3",), "sglang-base", "md"),
    Report("reference-comparison.html", ("sglang-eagle3", "sglang-base", "vllm-baseline"), "sglang-base", "html"),
    Report("reference-comparison.md", ("sglang-eagle3", "sglang-base", "vllm-baseline"), "sglang-base", "md"),
)


def build(out_dir: Path = ROOT / "reports") -> list[Path]:
    """Ingest the fixtures into a temporary store and write every report; returns the files written."""
    os.chdir(ROOT)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "store")
        for run, files in RUNS.items():
            la.ingest(list(files), run=run, store=store, year=YEAR)
        for report in REPORTS:
            runs = [la.open_run(r, store) for r in report.runs]
            baseline = la.open_run(report.baseline, store) if report.baseline else None
            target = out_dir / report.file
            target.write_text(build_report(runs, baseline, fmt=report.fmt), encoding="utf-8")
            written.append(target)
    return written


if __name__ == "__main__":
    for path in build():
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size:,} bytes")
