"""Shared test helpers: where the real logs are, and a fresh store per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import strategies as st

import loganalyze as la
from loganalyze import formats
from loganalyze.store import Store

ROOT = Path(__file__).resolve().parent.parent
# A bug in a test shows its traceback; users get a one-line "internal error" instead (cli.common.Group).
os.environ.setdefault("LOGANALYZE_TRACEBACK", "1")

FIXTURES = ROOT / "fixtures"
SAMPLES = FIXTURES / "real"


def sample(engine: str, prefix: str) -> Path:
    """The real log of `engine` in fixtures/real whose name starts with `prefix` (e.g. '16_')."""
    found = sorted((SAMPLES / engine).glob(f"{prefix}*"))
    assert found, f"fixtures/real/{engine}/{prefix}* is missing"
    return found[0]


@pytest.fixture(autouse=True)
def registry() -> Iterator[formats.Registry]:
    """Every test starts with the built-in formats and tables only: the format files it
    installs (--formats, la.load_formats) go with it (loganalyze/formats/registry.py)."""
    with formats.using(formats.BUILTIN.copy()) as fresh:
        yield fresh


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


def mutate(draw, line: str, noise: st.SearchStrategy[str], bad_number: str) -> str:
    """A sample line damaged up to three times: cut, noise inserted, truncated, a number spoiled.

    The fuzz tests of every format draw from this, each with its own noise.
    """
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(line)))
        op = draw(st.sampled_from(["cut", "insert", "truncate", "digits"]))
        if op == "cut":
            line = line[:at] + line[at + draw(st.integers(1, 8)):]
        elif op == "insert":
            line = line[:at] + draw(noise) + line[at:]
        elif op == "truncate":
            line = line[:at]
        else:
            line = line[:at] + line[at:].replace("0", bad_number, 1).replace("1", "-1", 1)
    return line
