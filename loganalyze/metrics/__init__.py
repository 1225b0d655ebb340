"""Metrics families: one analysis per module, each `Run -> Family | None`."""

from __future__ import annotations

from loganalyze.metrics.base import Family
from loganalyze.metrics.concurrency import concurrency
from loganalyze.metrics.nccl import nccl
from loganalyze.metrics.speculative import speculative
from loganalyze.metrics.startup import startup
from loganalyze.metrics.steps import steps
from loganalyze.metrics.sweep import sweep
from loganalyze.run import Run

FAMILIES = (concurrency, speculative, steps, startup, sweep, nccl)


def compute(run: Run) -> dict[str, Family]:
    """Every family that has data in this run, by name."""
    out: dict[str, Family] = {}
    for family in FAMILIES:
        result = family(run)
        if result is not None:
            out[result.name] = result
    return out
