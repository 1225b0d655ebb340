"""The run store's backend for a folder on this machine (loganalyze/store.py holds the store).

A key (`stats/run=r1/<id>-00000.parquet`, `catalog.json`) is a path under the folder.
What a folder gives that an object store does not, and the store relies on here:

- rename: a source's staged parts are renamed to their final names when published, and
  the catalog is replaced by writing a temp file, fsync and rename;
- an fcntl lock: writers serialise every read-modify-write of the catalog on it, so a
  catalog write never loses a race and leftovers are whatever no live writer owns
  (staging of dead processes, unlisted table files);
- footers: a table file's rows and line range are read from its Parquet footer, so the
  catalog's row counts are checked against the files (a damaged store is an error
  naming the file, not a wrong answer).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from loganalyze.backend import schema_options, verified_rows
from loganalyze.errors import LoganalyzeError
from loganalyze.formats.tables import Schema

CATALOG = "catalog.json"
REPAIR_HINT = "run `loganalyze check --repair`"
FOOTERS_KEPT = 100_000

Footer = tuple[int, "int | None", "int | None"]
_FOOTERS: dict[tuple, Footer] = {}


@contextlib.contextmanager
def write_errors(root: Path | str, doing: str) -> Iterator[None]:
    """A full disk or a file-size limit (ENOSPC, EFBIG, ...) as one line naming the store."""
    try:
        yield
    except OSError as e:
        raise LoganalyzeError(f"store {root}: cannot {doing} ({e.strerror or e}); the store is unchanged") from None


def write_durably(path: Path, data: bytes | memoryview) -> None:
    """Write and fsync, so that once the catalog lists a file its bytes survive a power loss too."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def footer(path: Path | str) -> Footer:
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


def _read_footer(path: Path | str) -> Footer:
    md = pq.read_metadata(path)
    paths = [md.schema.column(i).path for i in range(md.num_columns)]
    if "line_no" not in paths or md.num_row_groups == 0:
        return md.num_rows, None, None
    stats = [md.row_group(i).column(paths.index("line_no")).statistics for i in range(md.num_row_groups)]
    if any(s is None or not s.has_min_max for s in stats):
        return md.num_rows, None, None
    return md.num_rows, min(s.min for s in stats), max(s.max for s in stats)


class LocalBackend:
    """A run store's files in `folder` (loganalyze/backend.py `Backend` is the contract)."""

    local = True

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.root = str(self.folder)

    def name(self, key: str) -> str:
        return str(self.folder / key)

    # -- the catalog ------------------------------------------------------------------
    def version(self) -> tuple:
        """The folder and its catalog's (inode, size, mtime): every commit renames a new file in."""
        try:
            st = os.stat(self.folder / CATALOG)
        except FileNotFoundError:
            return (self.root,)
        return (self.root, st.st_ino, st.st_size, st.st_mtime_ns)

    def read_catalog(self) -> tuple[bytes, None] | None:
        try:
            return (self.folder / CATALOG).read_bytes(), None
        except FileNotFoundError:
            return None

    def put_catalog(self, data: bytes, token: str | None) -> bool:
        """Replace the catalog atomically (always wins: the caller holds the lock). The temp file goes on failure."""
        tmp = self.folder / f".{CATALOG}.{os.getpid()}.tmp"
        with write_errors(self.root, "write the catalog"):
            try:
                write_durably(tmp, data)
                os.replace(tmp, self.folder / CATALOG)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        with contextlib.suppress(OSError):  # committed already; only durability is at stake
            fsync_dir(self.folder)
        return True

    # -- locking ----------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """The store's lock, held by every write of the catalog, so that concurrent ingests
        see each other's commits and rm and check --repair run alone."""
        with write_errors(self.root, "lock the store"):
            self.folder.mkdir(parents=True, exist_ok=True)
            f = open(self.folder / ".lock", "a+")
        with f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # -- table files ------------------------------------------------------------------
    def new_staging(self) -> tuple[str, Path]:
        """A staging area named by this process (cleanup keeps a live process's), and its folder."""
        key = f".tmp/{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with write_errors(self.root, "stage tables"):
            (self.folder / key).mkdir(parents=True)
        return key, self.folder / key

    def write(self, key: str, data: bytes | memoryview) -> None:
        target = self.folder / key
        with write_errors(self.root, "stage tables"):
            target.parent.mkdir(exist_ok=True)
            write_durably(target, data)

    def publish(self, moves: list[tuple[str, str]]) -> None:
        """Rename staged parts to their final names (same filesystem), fsync each folder."""
        folders: set[Path] = set()
        with write_errors(self.root, "publish tables"):
            for staged, final in moves:
                target = self.folder / final
                if target.parent not in folders:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    folders.add(target.parent)
                os.replace(self.folder / staged, target)
            for folder in sorted(folders):
                fsync_dir(folder)

    def unpublish(self, keys: list[str]) -> None:
        """Take back the parts of a commit that failed before the catalog changed: under the
        lock no other writer can have published them."""
        for key in keys:
            (self.folder / key).unlink(missing_ok=True)

    def delete(self, keys: list[str]) -> None:
        """Remove files, and folders whole (a key ending in '/')."""
        for key in keys:
            path = self.folder / key
            if key.endswith("/") or path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def list(self, folder: str) -> list[str]:
        """Names of the entries in `folder` (a key ending in '/'); none when it is absent."""
        try:
            return [p.name for p in (self.folder / folder).iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def run_folders(self) -> dict[str, list[tuple[str, bool]]]:
        """Every `<table>/run=<run>/` with its entries, each settled (under the lock, every one is)."""
        return {f"{d.relative_to(self.folder)}/": [(p.name, True) for p in d.iterdir()]
                for d in sorted(self.folder.glob("*/run=*"))}

    def has_tables(self) -> bool:
        return any(self.folder.glob("*/run=*/*.parquet"))

    def abandoned(self) -> list[str]:
        """Catalog temp files and staging areas of processes that are gone. Meaningful under
        the lock only, where no commit is half-way (a catalog temp file then has no writer)."""
        found = [p.name for p in self.folder.glob(f".{CATALOG}.*.tmp")]
        for d in self.folder.glob(".tmp/*"):
            pid = d.name.split("-")[0]
            if not (pid.isdigit() and _pid_alive(int(pid))):
                found.append(f".tmp/{d.name}/")
        return found

    def unlisted(self, folders: list[str]) -> list[str]:
        """The folders whole: under the lock no writer is half-way."""
        return folders

    # -- reading ----------------------------------------------------------------------
    def read_rows(self, name: str) -> int:
        return verified_rows(name)

    def rows(self, names: list[str]) -> int | None:
        """The rows of table files, by their footers."""
        return sum(footer(n)[0] for n in names)

    def line_range(self, name: str) -> tuple[int | None, int | None]:
        return footer(name)[1:]

    def scan(self, names: list[str], schema: Schema | None) -> pl.LazyFrame:
        # a store path with * ? [ is a path, not a pattern
        return pl.scan_parquet(names, glob=False, **schema_options(schema))
