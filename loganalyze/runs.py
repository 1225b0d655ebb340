"""A store's runs, whole: choosing them by date or engine, and removing one (`runs`, `rm`).

The catalog itself, and its rules, are the store's (loganalyze/store.py). Removal follows
them: the run leaves the catalog first (one atomic rewrite), then its files are deleted.
A crash in between leaves only unlisted files, which the next writer's cleanup removes;
the run is never half there. On a folder both steps hold the store's lock, so no ingest
publishes into the run while its folders are being deleted; on an object store the
catalog write is conditional and only files older than it are deleted (objstore.py,
`unlisted`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from loganalyze.store import TABLE_NAME, Store, check_run_name, open_store


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


def run_folders(store: Store, name: str) -> list[str]:
    """The run's partition folder in each table (`<table>/run=<name>/`), as keys."""
    return sorted(f for f in store.backend.run_folders()
                  if f.endswith(f"/run={name}/") and TABLE_NAME.match(f.split("/")[0]))


def remove_run(name: str, store: Store | str | Path | None = None) -> list[str]:
    """Remove a run from the catalog, then its files; returns the names removed (folders
    whole on a local store, objects on an object store)."""
    store = open_store(store)
    check_run_name(name)

    with store.backend.writing():
        store.run(name)  # raises, naming the runs there are
        store.change_catalog(lambda cat: cat["runs"].pop(name, None))
        return store.remove(store.backend.unlisted(run_folders(store, name)))
