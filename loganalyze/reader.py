"""Read an input file as batches of lines, whatever its compression.

Why batches: a server log may be gigabytes; every later step works on a bounded polars
frame of lines at a time, so memory does not grow with the input.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from loganalyze.errors import LoganalyzeError

BATCH_BYTES = 16 * 1024 * 1024
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class ReadStats:
    """What the reader saw, for the ingest report."""

    lines: int = 0
    blank: int = 0
    bytes_read: int = 0
    bad_utf8: int = 0


def spool_stdin() -> Path:
    """Copy standard input to a temp file so it can be hashed and read like a file."""
    fd, name = tempfile.mkstemp(prefix="loganalyze-stdin-")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1024 * 1024)
    return Path(name)


def check_readable(path: Path) -> None:
    """Fail early, in one line, on inputs that cannot be a log."""
    if not path.exists():
        raise LoganalyzeError(f"{path}: no such file")
    if path.is_dir():
        raise LoganalyzeError(f"{path}: is a directory, not a log file")
    if not os.access(path, os.R_OK):
        raise LoganalyzeError(f"{path}: permission denied")
    if path.stat().st_size == 0:
        raise LoganalyzeError(f"{path}: empty file")


def _open(path: Path) -> io.BufferedIOBase:
    with open(path, "rb") as probe:
        magic = probe.read(4)
    if magic.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")
    if magic == ZSTD_MAGIC:
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_size=BATCH_BYTES)
    return open(path, "rb")


def _chunks(path: Path, batch_bytes: int) -> Iterator[bytes]:
    """Yield byte chunks that end on a line boundary."""
    try:
        with _open(path) as f:
            rest = b""
            while True:
                block = f.read(batch_bytes)
                if not block:
                    break
                block = rest + block
                cut = block.rfind(b"\n")
                if cut < 0:
                    rest = block
                    continue
                rest = block[cut + 1 :]
                yield block[: cut + 1]
            if rest:
                yield rest
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise LoganalyzeError(f"{path}: truncated or corrupt compressed file ({e})") from None
    except Exception as e:  # zstandard raises its own ZstdError
        if type(e).__name__ == "ZstdError":
            raise LoganalyzeError(f"{path}: truncated or corrupt zstd file ({e})") from None
        raise


def _looks_binary(chunk: bytes) -> bool:
    head = chunk[:65536]
    return b"\x00" in head


def read_batches(path: Path, stats: ReadStats, batch_bytes: int = BATCH_BYTES) -> Iterator[pl.DataFrame]:
    """Yield frames of (line_no, text): decoded, CR and ANSI codes removed, 1-based numbers.

    Blank lines are counted in `stats` and not yielded: they carry nothing to keep.
    """
    first = True
    for chunk in _chunks(path, batch_bytes):
        if first and _looks_binary(chunk):
            raise LoganalyzeError(f"{path}: binary data, not a text log")
        first = False
        stats.bytes_read += len(chunk)
        text = chunk.decode("utf-8", errors="replace")
        stats.bad_utf8 += text.count("\ufffd")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        frame = pl.DataFrame({"text": pl.Series(lines, dtype=pl.String)}).with_columns(
            line_no=pl.int_range(stats.lines + 1, stats.lines + 1 + len(lines), dtype=pl.Int64),
            text=pl.col("text").str.strip_suffix("\r").str.replace_all(ANSI, ""),
        )
        stats.lines += len(lines)
        blank = frame["text"].str.strip_chars().str.len_bytes() == 0
        stats.blank += int(blank.sum())
        yield frame.filter(~blank).select("line_no", "text")
