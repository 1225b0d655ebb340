"""A progress line on stderr for long ingests: bytes read and lines per second.

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

    def update(self, bytes_read: int, lines: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        rate = lines / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r  {bytes_read / 1e6:,.0f} MB read, {lines:,} lines, {rate:,.0f} lines/s ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
