"""Shared test helpers: where the shared samples are, and a fresh store per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import loganalyze as la
from loganalyze.store import Store

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("LOGANALYZE_SHARED", ROOT.parent / "shared"))
SAMPLES = SHARED / "samples"
FIXTURES = ROOT / "fixtures"


def sample(engine: str, prefix: str) -> Path:
    """The shared sample file of `engine` whose name starts with `prefix` (e.g. '16_')."""
    found = sorted((SAMPLES / engine).glob(f"{prefix}*"))
    if not found:
        pytest.skip(f"shared sample {engine}/{prefix}* not present")
    return found[0]


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture
def ingest_one(store):
    """Ingest files into a fresh run and return (IngestResult, Run)."""

    def run(*paths: Path, name: str = "t", **kw):
        result = la.ingest([str(p) for p in paths], run=name, store=store, **kw)
        return result, la.open_run(name, store)

    return run
