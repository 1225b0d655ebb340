"""A progress line on stderr for long ingests: bytes read, lines per second, files done.

Shown only when stderr is a terminal, so logs and CI output stay clean.
"""

from __future__ import annotations

import sys
import time


class ProgressBar:
    def __init__(self, enabled: bool = True, every: float = 0.5):
        self.enabled = enabled and sys.stderr.isatty()
        self.every = every
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, bytes_read: int, lines: int, files_done: int = 0, files: int = 1) -> None:
        """What the ingest has read so far; with many files, how many of them are done and how fast."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        spent = max(now - self.start, 1e-9)
        line = f"{bytes_read / 1e6:,.0f} MB read, {lines:,} lines, {lines / spent:,.0f} lines/s"
        if files > 1:
            line = f"{files_done:,} of {files:,} files ({files_done / spent:,.1f} files/s), {line}"
        sys.stderr.write(f"\r  {line} ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
