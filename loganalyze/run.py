"""A run as the analyses see it: its tables as LazyFrames, its config as a dict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from loganalyze.store import Store


@dataclass
class Run:
    name: str
    store: Store

    @property
    def info(self) -> dict:
        return self.store.run(self.name)

    def table(self, name: str) -> pl.LazyFrame:
        return self.store.scan(self.name, name)

    def config(self) -> dict[str, str]:
        """Last value seen for each config key (later lines override earlier ones)."""
        rows = self.table("config").sort("line_no").collect()
        return {k: v for k, v in zip(rows["key"], rows["value"])}

    def tables(self) -> dict[str, int]:
        return self.store.table_counts(self.name)


def open_run(name: str, store: Store | str | Path | None = None) -> Run:
    """Open an existing run; raises LoganalyzeError naming the runs that exist otherwise."""
    store = store if isinstance(store, Store) else Store(store)
    store.run(name)
    return Run(name, store)
