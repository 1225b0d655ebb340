"""The run store: Parquet tables partitioned by run (Hive layout) plus a JSON catalog.

Layout: `<root>/<table>/run=<run>/<source-id>-<part>.parquet` and `<root>/catalog.json`.
The catalog is the commit point: a table file counts only once its source is in the
catalog, and the catalog is replaced whole (a rename, or one conditional PUT). So a
crash at any moment leaves the store as it was before or after a commit (an ingest of
many files commits chunk by chunk, loganalyze/ingestion/inputs.py `chunks`), with whole sources
only; files left from a crash are removed by the next writer (`cleanup`).

One `Store` holds all of that logic: staging (a source's parts, loganalyze/staging.py),
commit through the catalog, cleanup, the checked listing of a run's tables. Where the store lives is its `Backend`, which
supplies a few primitives: a folder on this machine (loganalyze/localfs.py: renames, an
fcntl lock, footers) or an S3-compatible object store (loganalyze/objstore.py: copies, a
conditional catalog PUT instead of a lock, objects younger than an hour left alone).
`open_store` picks the backend from the root's name.

Writers of a local store serialise on its lock around every read-modify-write of the
catalog (commit, cleanup, rm, repair); on an object store, of two concurrent commits one
wins the conditional PUT and the other starts over from the catalog it lost to. Readers
take no lock: they see one catalog and the files it lists, which are never changed once published.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Collection
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from loganalyze import formats, objstore
from loganalyze.backend import Backend
from loganalyze.errors import LoganalyzeError
from loganalyze.localfs import CATALOG, REPAIR_HINT, LocalBackend, write_errors
from loganalyze.formats.tables import TABLE_NAME, empty
from loganalyze.staging import Staging

__all__ = ["CATALOG", "REPAIR_HINT", "RUN_NAME", "SOURCE_ID", "TABLE_NAME", "Backend", "Staging", "Store",
           "check_run_name", "default_root", "open_store", "write_errors"]

# \Z, not $: `$` also matches before a final newline, and a name is used as a path.
RUN_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}\Z")
SOURCE_ID = re.compile(r"^[0-9a-f]{16}\Z")
COMMIT_TRIES = 20  # conditional catalog PUTs lost to other writers before a commit gives up

_SOURCE_IDS: dict = {}  # "key": the backend's catalog version the sets were read from; run -> ids


def default_root() -> Path:
    """$LOGANALYZE_STORE, else $XDG_DATA_HOME/loganalyze, else ~/.local/share/loganalyze."""
    if os.environ.get("LOGANALYZE_STORE"):
        return Path(os.environ["LOGANALYZE_STORE"])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "loganalyze"


def backend_for(root: Path | str | None) -> Backend:
    """`s3://bucket/prefix` (or $LOGANALYZE_STORE so set) is an object store, anything else a folder."""
    where = str(root) if root else os.environ.get("LOGANALYZE_STORE") or str(default_root())
    return objstore.S3Backend(where) if objstore.is_url(where) else LocalBackend(where)


def check_run_name(name: str) -> str:
    if not RUN_NAME.fullmatch(name) or name in (".", ".."):
        raise LoganalyzeError(f"bad run name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - (not '.' or '..')")
    return name


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _encode(cat: dict) -> bytes:
    """The catalog as compact JSON: with `indent` the json module falls back to its pure-Python
    encoder, 5x slower (4.2 s against 0.9 s for 100,000 sources), and a commit writes it whole."""
    return json.dumps(cat, sort_keys=True, separators=(",", ":")).encode()


def _may_hold(line_range: tuple[int | None, int | None], lines: Collection[int]) -> bool:
    first, last = line_range
    return first is None or any(first <= n <= last for n in lines)


def _catalog_problem(cat: object) -> str | None:
    """Why a parsed catalog does not have the shape the store relies on, or None."""
    if not isinstance(cat, dict) or not isinstance(cat.get("runs"), dict):
        return "no 'runs' mapping"
    for name, run in cat["runs"].items():
        if not RUN_NAME.fullmatch(name) or name in (".", ".."):
            return f"bad run name {name!r}"
        if not isinstance(run, dict) or not isinstance(run.get("sources"), list):
            return f"run {name}: no 'sources' list"
        for src in run["sources"]:
            if not (isinstance(src, dict) and SOURCE_ID.fullmatch(str(src.get("id"))) and isinstance(src.get("tables"), dict)
                    and all(TABLE_NAME.fullmatch(t) and isinstance(n, int) for t, n in src["tables"].items())):
                return f"run {name}: malformed source entry"
    return None


class Store:
    """A run store on a backend (or at a root, whose backend `backend_for` picks); every
    method that writes holds the backend's `writing`."""

    def __init__(self, root: Backend | Path | str | None = None):
        self.backend: Backend = root if hasattr(root, "read_catalog") else backend_for(root)
        self._snapshot: dict | None = None
        self._listings: dict[tuple[str, str], dict[str, list[str]]] = {}
        self._ids: dict = {}
        self._keeps: tuple[Callable[[dict, dict], bool], ...] = ()

    def filtered(self, keep: Callable[[dict, dict], bool]) -> Store:
        """This store as if its runs held only the sources `keep(run, source)` accepts:
        everything read through it (run, files, scan, table_counts) opens only their files,
        and runs left without a source disappear. A view to read: it shares this store's
        backend and snapshot."""
        view = copy.copy(self)
        view._keeps = (*self._keeps, keep)
        return view

    @property
    def root(self) -> str:
        return self.backend.root

    @property
    def _snapshots(self) -> bool:
        return self.backend.version() is None

    @property
    def _hint(self) -> str:
        return f"; {REPAIR_HINT}" if self.backend.local else ""

    def read_catalog(self) -> tuple[dict, bool, str | None]:
        """The catalog as it is now, whether it exists, and the token to replace it with."""
        where = self.backend.name(CATALOG)
        found = self._decoded_catalog(where)
        if found is None and self.backend.has_tables():
            # Table files are published only once a catalog exists, so tables without one
            # are damage, unless another writer put the first catalog between the two looks.
            found = self._decoded_catalog(where)
            if found is None:
                raise LoganalyzeError(f"{where}: damaged catalog (missing, but table files exist){self._hint}")
        if found is None:
            return {"version": 1, "runs": {}}, False, None
        cat, token = found
        if problem := _catalog_problem(cat):
            raise LoganalyzeError(f"{where}: damaged catalog ({problem}){self._hint}")
        return cat, True, token

    def _decoded_catalog(self, where: str) -> tuple[dict, str] | None:
        try:
            found = self.backend.read_catalog()
            return (json.loads(found[0]), found[1]) if found else None
        except (OSError, ValueError) as e:
            raise LoganalyzeError(f"{where}: damaged catalog ({e}){self._hint}") from None

    def catalog(self) -> dict:
        """The catalog readers see: read each time from a folder; from an object store read
        once and kept (a snapshot), so that a reader sees one catalog and a fleet query does
        not pay a request per table per server. The store's own commits refresh it."""
        if self._snapshot is not None:
            return self._snapshot
        cat = self.read_catalog()[0]
        if self._snapshots:
            self._snapshot = cat
        return cat

    def write_catalog(self, cat: dict, token: str | None) -> None:
        """Replace the catalog read with `token`, within the backend's `writing`; a
        LoganalyzeError when another writer replaced it since (on an object store)."""
        if not self.backend.put_catalog(_encode(cat), token):
            raise LoganalyzeError(f"store {self.root}: another writer changed the catalog meanwhile; try again")
        self._snapshot, self._listings, self._ids = None, {}, {}

    def change_catalog(self, change: Callable[[dict], None]) -> None:
        """Read the catalog, `change` it in place and write it back, within the backend's
        `writing`; where another writer's write came first (an object store's conditional
        PUT), again from the catalog it wrote. `change` may raise to write nothing."""
        for _ in range(COMMIT_TRIES):
            cat, _, token = self.read_catalog()
            change(cat)
            if self.backend.put_catalog(_encode(cat), token):
                self._snapshot, self._listings, self._ids = None, {}, {}
                return
        raise LoganalyzeError(f"store {self.root}: the catalog changed {COMMIT_TRIES} times meanwhile; try again")

    def runs(self) -> dict[str, dict]:
        runs = self.catalog()["runs"]
        if not self._keeps:
            return runs
        kept = {name: {**run, "sources": [s for s in run["sources"] if all(keep(run, s) for keep in self._keeps)]}
                for name, run in runs.items()}
        return {name: run for name, run in kept.items() if run["sources"]}

    def run(self, name: str) -> dict:
        check_run_name(name)
        runs = self.runs()
        if name not in runs:
            known = ", ".join(sorted(runs)) or "none yet"
            raise LoganalyzeError(f"no run {name!r} in store {self.root} (runs: {known})")
        return runs[name]

    def staging(self) -> Staging:
        return Staging(self.backend)

    def has_source(self, run: str, source_id: str) -> bool:
        """Whether `run` lists the source; ids (sha256 prefixes) name its files, so they are the key."""
        return source_id in self.source_ids(run)

    def source_ids(self, run: str) -> frozenset[str]:
        """The ids of the sources `run` lists, read again only when the catalog was replaced
        (the backend's `version`): an ingest of 100,000 files asks once per file, and its
        own commits grow the catalog to 100,000 sources. Kept per process, as the footers
        are, so the worker processes of a many-file ingest read it once per commit; with a
        snapshot, kept with it."""
        version = self.backend.version()
        cache = self._ids if version is None else _SOURCE_IDS
        if cache.get("key") != version:
            cache.clear()
            cache["key"] = version
        if run not in cache:
            cache[run] = frozenset(s["id"] for s in self.runs().get(run, {}).get("sources", []))
        return cache[run]

    def commit(self, run: str | None, staged: list[tuple[dict, Staging]]) -> tuple[str, list[bool]]:
        """Publish staged sources into `run` (a new run<N> if None) with one catalog write.

        Within the backend's `writing` (a local store's lock), so that concurrent ingests see
        each other's commits: the duplicate check, the new run's name and the catalog's
        read-modify-write; on an object store, a catalog PUT that another writer's beat
        starts the commit over from the catalog it lost to. When a write fails (full disk)
        the parts published so far are taken back where the backend can; after a crash or
        an interrupt they are unlisted leftovers for `cleanup`. Returns the run and, per
        source, whether it was added (False: the run already had it).
        """
        with self.backend.writing():
            for _ in range(COMMIT_TRIES):
                cat, present, token = self.read_catalog()
                if not present:  # from now on, table files without a catalog mean damage
                    self.backend.put_catalog(_encode(cat), None)
                    continue
                name = run or _next_run_name(cat)
                entry_of_run = cat["runs"].get(name) or {"created": _now(), "sources": []}
                moves: list[tuple[str, str]] = []
                added = add_sources(entry_of_run, staged, lambda sid, stage: moves.extend(stage.moves(name, sid)))
                try:
                    self.backend.publish(moves)
                    if not any(added) or self.backend.put_catalog(
                            _encode({**cat, "runs": {**cat["runs"], name: entry_of_run}}), token):
                        self._snapshot, self._listings, self._ids = None, {}, {}
                        return name, added
                except LoganalyzeError:  # a write failed before the catalog changed
                    self.backend.unpublish([final for _, final in moves])
                    raise
        raise LoganalyzeError(f"store {self.root}: the catalog changed {COMMIT_TRIES} times while publishing; "
                              "try again")

    def leftovers(self) -> list[str]:
        """Keys of what crashed writers left: staging and temp files no live writer owns,
        settled table files the catalog does not list (whole run folders when nothing else
        is in them). On a local store meaningful under the lock only."""
        runs = self.runs()
        found = self.backend.abandoned()
        for folder, entries in self.backend.run_folders().items():
            ids = {s["id"] for s in runs.get(folder.rstrip("/").rsplit("/run=", 1)[1], {}).get("sources", [])}
            stale = [folder + n for n, settled in entries
                     if settled and n.endswith(".parquet") and n.split("-")[0] not in ids]
            found += [folder] if len(stale) == len(entries) else stale
        return found

    def remove(self, keys: list[str]) -> list[str]:
        """Remove files and folders (leftovers, damaged sources); returns their names."""
        self.backend.delete(keys)
        return [self.backend.name(k) for k in keys]

    def cleanup(self) -> list[str]:
        """Remove crash leftovers (see `leftovers`); returns what was removed."""
        if self.backend.local and not Path(self.root).exists():
            return []
        with self.backend.writing():
            return self.remove(self.leftovers())

    def _listing(self, run: str, table: str) -> dict[str, list[str]]:
        """The table's files in the run by source id, from one listing of its folder."""
        if (run, table) in self._listings:
            return self._listings[run, table]
        folder, by_source = f"{table}/run={run}/", {}
        for n in sorted(self.backend.list(f"{table}/run={run}/")):
            if n.endswith(".parquet") and SOURCE_ID.fullmatch(n.split("-")[0]):
                by_source.setdefault(n.split("-")[0], []).append(self.backend.name(folder + n))
        if self._snapshots:
            self._listings[run, table] = by_source
        return by_source

    def source_files(self, run: str, source_id: str, table: str) -> list[str]:
        return self._listing(run, table).get(source_id, [])

    def files(self, run: str, table: str) -> list[str]:
        """A table's files in a run, checked against the catalog: their row counts (footers
        only) where the backend reads them, else their presence; so that a damaged store is
        an error naming the file rather than a wrong answer."""
        listing, found = self._listing(run, table), []
        for src in self.run(run)["sources"]:
            files, expected = listing.get(src["id"], []), src["tables"].get(table, 0)
            rows = self.backend.rows(files)
            where = f"{self.backend.name(f'{table}/run={run}')}/{src['id']}-*.parquet"
            shown = src.get("path", src["id"])
            if rows is None and expected and not files:
                raise LoganalyzeError(f"{where}: missing, the catalog lists {expected} rows (source {shown})")
            if rows is not None and rows != expected:
                raise LoganalyzeError(f"{where}: {rows} rows on disk, the catalog lists {expected} "
                                      f"(source {shown}){self._hint}")
            found += files
        return found

    def scan(self, run: str, table: str, lines: Collection[int] | None = None) -> pl.LazyFrame:
        """One table of one run as a LazyFrame (empty with the right columns if absent).

        With `lines`, only the files whose line range holds one of those line numbers:
        finding three lines of a 1 GB run then opens one or two of its 60 files (where the
        backend reads footers)."""
        files = self.files(run, table)
        if lines is not None:
            files = [f for f in files if _may_hold(self.backend.line_range(f), lines)]
        schema = formats.active().tables.get(table)
        if not files:
            return empty(schema).lazy() if schema is not None else pl.LazyFrame()
        try:
            return self.backend.scan(files, schema)
        except Exception as e:
            raise LoganalyzeError(f"cannot read table {table} of run {run}: {e}{self._hint}") from None

    def table_counts(self, run: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for src in self.run(run)["sources"]:
            for table, n in src.get("tables", {}).items():
                counts[table] = counts.get(table, 0) + n
        return counts


def open_store(store: Store | Path | str | None = None) -> Store:
    """The store a caller names: a Store as it is, else the store at that root (None: `default_root`)."""
    return store if isinstance(store, Store) else Store(store)


def add_sources(entry_of_run: dict, staged: list[tuple[dict, Any]], publish: Callable[[str, Any], None]) -> list[bool]:
    """Add to a run's catalog entry the staged sources it does not list yet (a file ingested
    before, or given twice, counts once), collecting each one's files with
    `publish(source_id, stage)`; returns, per staged source, whether it was added."""
    seen = {s["id"] for s in entry_of_run["sources"]}
    added: list[bool] = []
    for entry, stage in staged:
        added.append(entry["id"] not in seen)
        if added[-1]:
            publish(entry["id"], stage)
            entry_of_run["sources"].append({**entry, "ingested": _now()})
            seen.add(entry["id"])
    return added


def _next_run_name(cat: dict) -> str:
    """run<N+1> for the highest run<N> in the catalog; called under the lock so two writers never share one."""
    taken = {int(m.group(1)) for n in cat["runs"] if (m := re.fullmatch(r"run(\d+)", n))}
    return f"run{max(taken, default=0) + 1}"
