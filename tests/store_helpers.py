"""Helpers for the store reliability tests: generated logs, the CLI as a process, store snapshots."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from loganalyze import formats
from loganalyze.store import Store

ROOT = Path(__file__).resolve().parent.parent
# One-line samples: a log of `lines` lines (a multi-line sample, a traceback, would add more).
SAMPLES = [s for kind in formats.FORMATS["sglang"].kinds for s in kind.samples if "\n" not in s]


def sglang_log(path: Path, lines: int, seed: int = 0) -> Path:
    """An SGLang log of the format's own sample lines behind real prefixes; each seed differs."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(lines):
            stamp = f"2025-01-{1 + seed % 28:02d} {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
            f.write(f"[{stamp} TP{rng.randrange(8)}] {rng.choice(SAMPLES)}\n")
    return path


def cli_command(*args: object) -> list[str]:
    return [sys.executable, "-m", "loganalyze.cli", *map(str, args)]


def cli(*args: object, **kw) -> subprocess.CompletedProcess:
    """Run the CLI in its own process, as a user would (stdin closed, output captured)."""
    return subprocess.run(cli_command(*args), cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


def counts(root: Path) -> dict[str, dict[str, int]]:
    """Rows per table per run, as the catalog lists them."""
    store = Store(root)
    return {run: store.table_counts(run) for run in store.runs()}


def rows_on_disk(root: Path) -> dict[str, dict[str, int]]:
    """Rows per table per run, counted by reading the tables: what the analyses would see."""
    store = Store(root)
    tables = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    found = {run: {t: store.scan(run, t).select("line_no").collect().height for t in tables} for run in store.runs()}
    return {run: {t: n for t, n in per.items() if n} for run, per in found.items()}


def snapshot(root: Path) -> tuple[str, frozenset[str]]:
    """The catalog and every file of a store except the lock: equal snapshots, unchanged store."""
    catalog = (root / "catalog.json").read_text() if (root / "catalog.json").exists() else ""
    files = frozenset(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".lock")
    return catalog, files
