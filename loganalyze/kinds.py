"""The line kinds that metrics and diagnosis read: one registry, checked against the formats.

A kind name is a contract between a format, which declares it (loganalyze/formats/*.py, or a format
file), and the code that selects its rows. Each module names the kinds it reads with
`kinds(...)` (or a family of them with `kind_prefix(...)`) at import time, and
tests/test_vocabulary.py requires some format to declare every one: a kind renamed in a
format, or misspelt where it is read, fails a test instead of silently matching nothing.
"""

from __future__ import annotations

import polars as pl

READ: set[str] = set()
PREFIXES: set[str] = set()


def kinds(*names: str) -> tuple[str, ...]:
    """Declare kinds a module reads; returns them, for `kind_in`."""
    READ.update(names)
    return names


def kind_prefix(prefix: str) -> str:
    """Declare a family of kinds read by the start of their name (`pg_`: PyTorch's NCCL lines)."""
    PREFIXES.add(prefix)
    return prefix


def kind_in(names: tuple[str, ...]) -> pl.Expr:
    """Rows whose kind is one of `names` (declared with `kinds`)."""
    return pl.col("kind").is_in(list(names))
