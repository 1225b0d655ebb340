"""The run store: Parquet tables partitioned by run (Hive layout) plus a JSON catalog.

Layout: `<root>/<table>/run=<run>/<source-id>-<part>.parquet` and `<root>/catalog.json`.
The catalog is the commit point: a table file counts only once its source is in the
catalog, and the catalog is replaced atomically (write a temp file, fsync, rename). So a
crash at any moment leaves the store as it was before or after a commit (an ingest of
many files commits chunk by chunk, loganalyze/ingest/inputs.py `chunks`), with whole sources
only; files left from a crash are removed by the next writer (`cleanup`).

Writers serialise on an fcntl lock around every read-modify-write of the catalog (commit,
cleanup, repair). Readers take no lock: they see one catalog and the files it lists,
which are never changed once published.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Collection, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from loganalyze.errors import LoganalyzeError
from parsers.tables import SCHEMAS, TABLE_NAME, conform, empty

# \Z, not $: `$` also matches before a final newline, and a name is used as a path.
RUN_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}\Z")
SOURCE_ID = re.compile(r"^[0-9a-f]{16}\Z")
CATALOG = "catalog.json"
# zstd 1 writes ~15% faster than the default 3 and log tables come out the same size.
PARQUET_ZSTD_LEVEL = 1
REPAIR_HINT = "run `loganalyze check --repair`"


def default_root() -> Path:
    """$LOGANALYZE_STORE, else $XDG_DATA_HOME/loganalyze, else ~/.local/share/loganalyze."""
    if os.environ.get("LOGANALYZE_STORE"):
        return Path(os.environ["LOGANALYZE_STORE"])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "loganalyze"


def check_run_name(name: str) -> str:
    if not RUN_NAME.fullmatch(name) or name in (".", ".."):
        raise LoganalyzeError(f"bad run name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - (not '.' or '..')")
    return name


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def write_errors(root: Path, doing: str) -> Iterator[None]:
    """A full disk or a file-size limit (ENOSPC, EFBIG, ...) as one line naming the store."""
    try:
        yield
    except OSError as e:
        raise LoganalyzeError(f"store {root}: cannot {doing} ({e.strerror or e}); the store is unchanged") from None


def _write_durably(path: Path, data: bytes | memoryview) -> None:
    """Write and fsync, so that once the catalog lists a file its bytes survive a power loss too."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_FOOTERS: dict[tuple, tuple[int, int | None, int | None]] = {}
FOOTERS_KEPT = 100_000


_SOURCE_IDS: dict = {}  # "key": the catalog's (path, inode, size, mtime) the sets were read from; run -> ids


def footer(path: Path) -> tuple[int, int | None, int | None]:
    """(rows, first line_no, last line_no) of a table file, by its footer: a truncated or
    foreign file is an error naming it. The line range is None where unknown.

    Remembered by (path, inode, size, mtime): one diagnosis opens the run's tables some 30
    times, and reading 60 footers each time was a tenth of it on a 1 GB run. A file that
    is replaced or changed has another key and is read again."""
    try:
        st = os.stat(path)
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        found = _FOOTERS.get(key)
        if found is None:
            if len(_FOOTERS) >= FOOTERS_KEPT:
                _FOOTERS.clear()
            found = _FOOTERS[key] = _read_footer(path)
        return found
    except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ...
        raise LoganalyzeError(f"{path}: damaged table file ({e}); {REPAIR_HINT}") from None


def _read_footer(path: Path) -> tuple[int, int | None, int | None]:
    md = pq.read_metadata(path)
    paths = [md.schema.column(i).path for i in range(md.num_columns)]
    if "line_no" not in paths or md.num_row_groups == 0:
        return md.num_rows, None, None
    stats = [md.row_group(i).column(paths.index("line_no")).statistics for i in range(md.num_row_groups)]
    if any(s is None or not s.has_min_max for s in stats):
        return md.num_rows, None, None
    return md.num_rows, min(s.min for s in stats), max(s.max for s in stats)


def _may_hold(foot: tuple[int, int | None, int | None], lines: Collection[int]) -> bool:
    _, first, last = foot
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


class Staging:
    """Table parts written for one source before they are published."""

    def __init__(self, root: Path):
        self.root = root
        self.dir = root / ".tmp" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with write_errors(root, "stage tables"):
            self.dir.mkdir(parents=True)
        self.parts: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def write(self, table: str, frame: pl.DataFrame) -> None:
        """Encode in memory, then write ourselves: polars would hide ENOSPC/EFBIG in a ComputeError."""
        if frame.height == 0:
            return
        n = self.parts.get(table, 0)
        target = self.dir / table / f"{n:05d}.parquet"
        buf = io.BytesIO()
        conform(table, frame).write_parquet(buf, compression="zstd", compression_level=PARQUET_ZSTD_LEVEL)
        with write_errors(self.root, "stage tables"):
            target.parent.mkdir(exist_ok=True)
            _write_durably(target, buf.getbuffer())
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + frame.height

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class Store:
    """A run store at `root`; every method that writes takes the store's lock."""

    def __new__(cls, root: Path | str | None = None):
        """`Store("s3://bucket/prefix")` (or $LOGANALYZE_STORE so set) is the object-store
        kind (loganalyze/objstore.py), so every caller that opens a store by name can use one."""
        if cls is Store and str(root or os.environ.get("LOGANALYZE_STORE", "")).startswith("s3://"):
            from loganalyze.objstore import S3Store

            return super().__new__(S3Store)
        return super().__new__(cls)

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root else default_root()

    def __getnewargs__(self) -> tuple:
        """Unpickled (in a Ray task) as the same kind of store, whatever $LOGANALYZE_STORE says there."""
        return (self.root,)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with write_errors(self.root, "lock the store"):
            self.root.mkdir(parents=True, exist_ok=True)
            f = open(self.root / ".lock", "a+")
        with f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def catalog(self) -> dict:
        path = self.root / CATALOG
        try:
            cat = json.loads(path.read_bytes())
        except FileNotFoundError:
            if any(self.root.glob("*/run=*/*.parquet")):
                raise LoganalyzeError(f"{path}: damaged catalog (missing, but table files exist); {REPAIR_HINT}") from None
            return {"version": 1, "runs": {}}
        except (OSError, ValueError) as e:
            raise LoganalyzeError(f"{path}: damaged catalog ({e}); {REPAIR_HINT}") from None
        if problem := _catalog_problem(cat):
            raise LoganalyzeError(f"{path}: damaged catalog ({problem}); {REPAIR_HINT}")
        return cat

    def write_catalog(self, cat: dict) -> None:
        """Replace the catalog atomically; call under the lock. The temp file goes on failure."""
        tmp = self.root / f".{CATALOG}.{os.getpid()}.tmp"
        try:
            _write_durably(tmp, json.dumps(cat, indent=1, sort_keys=True).encode())
            os.replace(tmp, self.root / CATALOG)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        with contextlib.suppress(OSError):  # committed already; only durability is at stake
            _fsync_dir(self.root)

    def runs(self) -> dict[str, dict]:
        return self.catalog()["runs"]

    def run(self, name: str) -> dict:
        check_run_name(name)
        runs = self.runs()
        if name not in runs:
            known = ", ".join(sorted(runs)) or "none yet"
            raise LoganalyzeError(f"no run {name!r} in store {self.root} (runs: {known})")
        return runs[name]

    def staging(self) -> Staging:
        return Staging(self.root)

    def has_source(self, run: str, source_id: str) -> bool:
        """Whether `run` lists the source; ids (sha256 prefixes) name its files, so they are the key."""
        return source_id in self.source_ids(run)

    def source_ids(self, run: str) -> frozenset[str]:
        """The ids of the sources `run` lists, read again only when the catalog was replaced
        (every commit renames a new file in): an ingest of 100,000 files asks once per file,
        and its own commits grow the catalog to 100,000 sources. Kept per process, as the
        footers are, so the worker processes of a many-file ingest read it once per commit."""
        path = self.root / CATALOG
        try:
            st = os.stat(path)
            key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            return frozenset()
        if _SOURCE_IDS.get("key") != key:
            _SOURCE_IDS.clear()
            _SOURCE_IDS["key"] = key
        if run not in _SOURCE_IDS:
            _SOURCE_IDS[run] = frozenset(s["id"] for s in self.runs().get(run, {}).get("sources", []))
        return _SOURCE_IDS[run]

    def commit(self, run: str | None, staged: list[tuple[dict, Staging]]) -> tuple[str, list[bool]]:
        """Publish staged sources into `run` (a new run<N> if None) with one catalog write.

        Under the lock, so that concurrent ingests see each other's commits: the duplicate
        check, the new run's name and the catalog's read-modify-write. When a write fails
        (full disk) the parts moved so far are removed again; after a crash or an interrupt
        they are unlisted leftovers for `cleanup`. Returns the run and, per source, whether
        it was added (False: the run already had it).
        """
        with self.lock():
            cat = self.catalog()
            if not (self.root / CATALOG).exists():  # from now on, table files without a catalog mean damage
                with write_errors(self.root, "write the catalog"):
                    self.write_catalog(cat)
            run = run or _next_run_name(cat)
            entry_of_run = cat["runs"].get(run) or {"created": _now(), "sources": []}
            published: list[Path] = []
            try:
                added = add_sources(entry_of_run, staged,
                                    lambda sid, stage: published.extend(self._publish(run, sid, stage)))
                if any(added):
                    cat["runs"][run] = entry_of_run
                    with write_errors(self.root, "write the catalog"):
                        self.write_catalog(cat)
            except LoganalyzeError:  # a write failed before the catalog changed: take the parts back
                for f in published:
                    f.unlink(missing_ok=True)
                raise
            return run, added

    def _publish(self, run: str, source_id: str, stage: Staging) -> list[Path]:
        """Move a source's staged parts to their final names (same filesystem: a rename each)."""
        moved: list[Path] = []
        with write_errors(self.root, "publish tables"):
            for table, n in stage.parts.items():
                final = self.root / table / f"run={run}"
                final.mkdir(parents=True, exist_ok=True)
                for i in range(n):
                    moved.append(final / f"{source_id}-{i:05d}.parquet")
                    os.replace(stage.dir / table / f"{i:05d}.parquet", moved[-1])
                _fsync_dir(final)
        return moved

    def leftovers(self) -> list[Path]:
        """What crashed writers left: catalog temp files, staging of dead processes, table
        files the catalog does not list (whole run folders when nothing else is in them).
        Meaningful under the lock only, where no commit is half-way (a catalog temp file
        then has no live writer)."""
        found = list(self.root.glob(f".{CATALOG}.*.tmp"))
        for d in self.root.glob(".tmp/*"):
            pid = d.name.split("-")[0]
            if not (pid.isdigit() and _pid_alive(int(pid))):
                found.append(d)
        runs = self.runs()
        for folder in self.root.glob("*/run=*"):
            ids = {s["id"] for s in runs.get(folder.name[4:], {}).get("sources", [])}
            entries = list(folder.iterdir())
            stale = [f for f in entries if f.suffix == ".parquet" and f.name.split("-")[0] not in ids]
            found += [folder] if len(stale) == len(entries) else stale
        return found

    def cleanup(self) -> list[str]:
        """Remove crash leftovers (see `leftovers`); returns what was removed."""
        if not self.root.exists():
            return []
        with self.lock():
            return remove_paths(self.leftovers())

    def source_files(self, run: str, source_id: str, table: str) -> list[Path]:
        return sorted((self.root / table / f"run={run}").glob(f"{source_id}-*.parquet"))

    def files(self, run: str, table: str) -> list[Path]:
        """A table's files in a run, checked against the catalog's row counts (footers only),
        so that a damaged store is an error naming the file rather than a wrong answer."""
        found: list[Path] = []
        for src in self.run(run)["sources"]:
            files = self.source_files(run, src["id"], table)
            rows, expected = sum(footer(f)[0] for f in files), src["tables"].get(table, 0)
            if rows != expected:
                where = f"{self.root / table / f'run={run}'}/{src['id']}-*.parquet"
                raise LoganalyzeError(f"{where}: {rows} rows on disk, the catalog lists {expected} "
                                      f"(source {src.get('path', src['id'])}); {REPAIR_HINT}")
            found += files
        return found

    def scan(self, run: str, table: str, lines: Collection[int] | None = None) -> pl.LazyFrame:
        """One table of one run as a LazyFrame (empty with the right columns if absent).

        With `lines`, only the files whose line range holds one of those line numbers:
        finding three lines of a 1 GB run then opens one or two of its 60 files."""
        files = self.files(run, table)
        if lines is not None:
            files = [f for f in files if _may_hold(footer(f), lines)]
        if not files:
            return empty(table).lazy() if table in SCHEMAS else pl.LazyFrame()
        try:
            return pl.scan_parquet(files, glob=False)  # a store path with * ? [ is a path, not a pattern
        except Exception as e:
            raise LoganalyzeError(f"cannot read table {table} of run {run}: {e}; {REPAIR_HINT}") from None

    def table_counts(self, run: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for src in self.run(run)["sources"]:
            for table, n in src.get("tables", {}).items():
                counts[table] = counts.get(table, 0) + n
        return counts


def remove_paths(paths: list[Path]) -> list[str]:
    """Remove files and folders (leftovers, damaged sources); returns their names."""
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    return [str(p) for p in paths]


def add_sources(entry_of_run: dict, staged: list[tuple[dict, Any]], publish: Callable[[str, Any], None]) -> list[bool]:
    """Add to a run's catalog entry the staged sources it does not list yet (a file ingested
    before, or given twice, counts once), publishing each one's files with
    `publish(source_id, stage)`; returns, per staged source, whether it was added. Both
    store kinds commit through this; they differ in how files are published."""
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
