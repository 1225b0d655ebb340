"""A run as the analyses see it: its tables as LazyFrames, its config as a dict.

Metrics and diagnosis take this `Run`; the one users get from `loganalyze.open_run`
(loganalyze/api.py) adds the analyses as methods, from the layer above them all."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from loganalyze.store import Store, open_store


@dataclass
class Run:
    """One run of the store. Tables are LazyFrames: nothing is read until `.collect()`.

        run.table("stats").filter(pl.col("queued") > 0).collect()
    """

    name: str
    store: Store

    @property
    def info(self) -> dict:
        """The run's catalog entry: creation time and its sources (path, format, version, lines...)."""
        return self.store.run(self.name)

    def table(self, name: str) -> pl.LazyFrame:
        """One table (stats, config, events, requests, unparsed, spec, or a format's own) as a LazyFrame."""
        return self.store.scan(self.name, name)

    def config(self) -> dict[str, str]:
        """Last value seen for each config key (later lines override earlier ones)."""
        rows = self.table("config").sort("line_no").collect()
        return {k: v for k, v in zip(rows["key"], rows["value"])}

    def tables(self) -> dict[str, int]:
        """Rows per table, from the catalog (no table is read)."""
        return self.store.table_counts(self.name)


def open_run(name: str, store: Store | str | Path | None = None) -> Run:
    """Open an existing run; raises LoganalyzeError naming the runs that exist otherwise."""
    store = open_store(store)
    store.run(name)
    return Run(name, store)
