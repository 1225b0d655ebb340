"""A source's table parts before they are published: the store's one Parquet write path.

Each part is encoded in memory and written through the store's `Backend` under its staging
area (loganalyze/backend.py `new_staging`); `Store.commit` (loganalyze/store.py) publishes
the parts and lists them in the catalog, or a crash leaves them for `cleanup`.
"""

from __future__ import annotations

import contextlib
import io
import shutil

import polars as pl

from loganalyze import formats
from loganalyze.backend import Backend
from loganalyze.formats.tables import conform

# zstd 1 writes ~20% faster than the default 3 and log tables come out the same size; lz4 saves
# ~10% of the write for twice the bytes (docs/speed.md, "Parquet writes").
PARQUET_ZSTD_LEVEL = 1


class Staging:
    """Table parts written for one source before they are published, under the backend's
    staging area; `dir` is a local folder for what must be a file first (standard input,
    a downloaded input)."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.key, self.dir = backend.new_staging()
        self.parts: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def part_key(self, table: str, n: int) -> str:
        return f"{self.key}/{table}/{n:05d}.parquet"

    def write(self, table: str, frame: pl.DataFrame) -> None:
        """Encode in memory, then write ourselves: polars would hide ENOSPC/EFBIG in a ComputeError."""
        if frame.height == 0:
            return
        n = self.parts.get(table, 0)
        buf = io.BytesIO()
        schema = formats.active().tables[table]
        conform(frame, schema).write_parquet(buf, compression="zstd", compression_level=PARQUET_ZSTD_LEVEL)
        self.backend.write(self.part_key(table, n), buf.getbuffer())
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + frame.height

    def moves(self, run: str, source_id: str) -> list[tuple[str, str]]:
        """(staged key, final key) of each of the source's parts."""
        return [(self.part_key(table, i), f"{table}/run={run}/{source_id}-{i:05d}.parquet")
                for table, n in self.parts.items() for i in range(n)]

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        with contextlib.suppress(Exception):  # what stays is a leftover for a later cleanup
            self.backend.delete([self.part_key(t, i) for t, n in self.parts.items() for i in range(n)])
