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


def choose_formats(samples: list[pl.Series], paths: list[Path], as_format: str | None
                   ) -> list[formats.Format | UnknownFormat]:
    """Each file's format, from its sample (detected for all at once) or `--as`; an
    UnknownFormat for a file of no known format."""
    known = formats.active().formats
    if as_format:
        if as_format not in known:
            raise LoganalyzeError(f"unknown format {as_format!r}; known formats: {', '.join(known)}")
        return [known[as_format]] * len(samples)
    return [fmt or UnknownFormat(f"{path}: unknown format (known formats: {', '.join(known)}; use --as to force one)")
            for (fmt, _), path in zip(formats.detect_many(samples), paths)]
