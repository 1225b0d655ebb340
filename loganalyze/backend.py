"""What a run store needs from where it lives: the `Backend` protocol.

The store's logic (staging, commit through the catalog, cleanup, the checked listing of
a run's tables) is written once, in loganalyze/store.py, against these primitives. Two
backends supply them: a folder on this machine (loganalyze/localfs.py) and an
S3-compatible object store (loganalyze/objstore.py); each module says what its
primitives rest on (rename and a lock; copies and a conditional PUT).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Protocol

import polars as pl
import pyarrow.parquet as pq

from loganalyze.formats.tables import Schema


def schema_options(schema: Schema | None) -> dict:
    """scan_parquet's options that read a store written by an earlier release: its files of
    a table may lack a column added since (null) or hold one dropped since (left out)."""
    if schema is None:
        return {}
    return {"schema": schema, "missing_columns": "insert", "extra_columns": "ignore"}


def verified_rows(source) -> int:
    """The rows of a Parquet file (a path or a seekable file object) read row group by row
    group with page checksums verified: every page is read, as `check` needs, but only one
    row group is held in memory at a time."""
    parquet = pq.ParquetFile(source, page_checksum_verification=True)
    return sum(parquet.read_row_group(i).num_rows for i in range(parquet.num_row_groups))


class Backend(Protocol):
    """Where a store's files live. Keys are '/'-separated paths under the store's root
    (`catalog.json`, `stats/run=r1/<id>-00000.parquet`); a key ending in '/' is a folder."""

    root: str  # the store as named in messages: a folder or s3://bucket/prefix
    local: bool  # a folder on this machine: its writers lock, and it has worker processes

    def name(self, key: str) -> str:
        """The key as a path or URL, for messages and for polars to read."""

    def version(self) -> object | None:
        """A cheap token that changes with every catalog write; None where asking costs a
        request: the store then keeps the first catalog it reads, and its listings (a snapshot)."""

    def read_catalog(self) -> tuple[bytes, str | None] | None:
        """The catalog's bytes and a token for `put_catalog`; None: no catalog yet."""

    def put_catalog(self, data: bytes, token: str | None) -> bool:
        """Replace the catalog whole; False when another writer replaced it since `token` was read."""

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Held around every command that writes the catalog or removes files (a commit, a
        cleanup, rm, check --repair): a lock, or nothing where the catalog PUT is conditional."""

    def new_staging(self) -> tuple[str, Path]:
        """The key of a new staging area, and a local folder for inputs that must be a file first."""

    def write(self, key: str, data: bytes | memoryview) -> None:
        """A file whole (durable, or absent after a crash)."""

    def publish(self, moves: list[tuple[str, str]]) -> None:
        """Staged keys to their final keys."""

    def unpublish(self, keys: list[str]) -> None:
        """Take back what a failed commit published, where no other writer can have published it too."""

    def delete(self, keys: list[str]) -> None:
        """Files, and folders whole."""

    def list(self, folder: str) -> list[str]:
        """The names in a folder."""

    def run_folders(self) -> dict[str, list[tuple[str, bool]]]:
        """Every `<table>/run=<run>/` folder: its names, each with whether it is settled (no live writer's)."""

    def has_tables(self) -> bool:
        """Whether any table file exists (a store without a catalog and with tables is damaged)."""

    def abandoned(self) -> list[str]:
        """Staging areas and temp files no live writer owns."""

    def unlisted(self, folders: list[str]) -> list[str]:
        """What to delete of folders the catalog has just stopped listing (a removed run's):
        only what no writer that commits after that catalog write relies on."""

    def rows(self, names: list[str]) -> int | None:
        """The rows of table files, or None where they are not read to list a table."""

    def read_rows(self, name: str) -> int:
        """The rows of a table file read in full, page checksums verified (`check`: a
        footer alone would miss damaged pages)."""

    def line_range(self, name: str) -> tuple[int | None, int | None]:
        """The first and last line_no of a table file; None where unknown."""

    def scan(self, names: list[str], schema: Schema | None) -> pl.LazyFrame:
        """Table files as one LazyFrame; with `schema`, a column a file lacks (it was written
        before the table gained it) reads as null, and one the table no longer has is left out."""
