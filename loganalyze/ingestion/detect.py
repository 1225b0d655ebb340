"""Which format a file is in (detection from a sample of its first lines, or `--as`), and
the year and date for logs whose timestamps print neither."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl

from loganalyze import formats
from loganalyze.errors import LoganalyzeError, UnknownFormat

SAMPLE_LINES = 2000  # lines of a file's first batch that detection and the version guess read


def year_for(mtime: float, year: int | None) -> tuple[int, str, str]:
    """Year and base date for logs that print neither, and where they came from."""
    if year:
        return year, f"{year}-01-01", "--year"
    stamp = datetime.fromtimestamp(mtime)
    return stamp.year, stamp.date().isoformat(), "file modification time"


def choose_format(sample: pl.Series, path: Path, as_format: str | None) -> formats.Format:
    known = formats.active().formats
    if as_format:
        if as_format not in known:
            raise LoganalyzeError(f"unknown format {as_format!r}; known formats: {', '.join(known)}")
        return known[as_format]
    fmt, _ = formats.detect(sample)
    if fmt is None:
        raise UnknownFormat(f"{path}: unknown format (known formats: {', '.join(known)}; use --as to force one)")
    return fmt
