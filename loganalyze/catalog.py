"""Runs as entries of the catalog: choosing them by date or engine, and removing one.

Removal follows the store's rule that the catalog is the commit point: the run leaves
the catalog first (one atomic rewrite), then its files are deleted. A crash in between
leaves only unlisted files, which the next writer's cleanup removes; the run is never
half there. Both steps hold the store's lock, so no ingest publishes into the run while
its folders are being deleted.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

from loganalyze.store import TABLE_NAME, Store, check_run_name, write_errors


def _utc(moment: datetime) -> datetime:
    """Catalog times are UTC; a date given without a zone is read as UTC too."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def select_runs(runs: dict[str, dict], since: datetime | None = None, engine: str | None = None) -> dict[str, dict]:
    """The runs created at or after `since` that have a source of format `engine` (sglang, vllm, nccl, ...)."""
    out = {}
    for name, run in runs.items():
        if since and datetime.fromisoformat(run["created"]) < _utc(since):
            continue
        if engine and not any(s.get("format", "").lower() == engine.lower() for s in run["sources"]):
            continue
        out[name] = run
    return out


def run_folders(store: Store, name: str) -> list[Path]:
    """The run's partition folder in each table (`<table>/run=<name>`)."""
    return sorted(d for d in store.root.glob(f"*/run={name}") if d.is_dir() and TABLE_NAME.match(d.parent.name))


def remove_run(name: str, store: Store | str | Path | None = None) -> list[Path]:
    """Remove a run from the catalog, then its files; returns the folders removed."""
    store = store if isinstance(store, Store) else Store(store)
    check_run_name(name)
    with store.lock():
        cat = store.catalog()
        store.run(name)
        del cat["runs"][name]
        with write_errors(store.root, "write the catalog"):
            store.write_catalog(cat)
        folders = run_folders(store, name)
        for folder in folders:
            shutil.rmtree(folder)
    return folders
