"""The run store: Parquet tables partitioned by run (Hive layout) plus a JSON catalog.

Layout: `<root>/<table>/run=<run>/<source-id>-<part>.parquet` and `<root>/catalog.json`.
The catalog is the commit point: a table file counts only once its source is in the
catalog, and the catalog is replaced atomically (write a temp file, then rename). So a
crash at any moment leaves the store as it was before or after an ingest; files left
from a crash are removed by the next writer.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from loganalyze.errors import LoganalyzeError
from parsers.tables import SCHEMAS, conform, empty

RUN_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
CATALOG = "catalog.json"


def default_root() -> Path:
    """$LOGANALYZE_STORE, else $XDG_DATA_HOME/loganalyze, else ~/.local/share/loganalyze."""
    if os.environ.get("LOGANALYZE_STORE"):
        return Path(os.environ["LOGANALYZE_STORE"])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "loganalyze"


def check_run_name(name: str) -> str:
    if not RUN_NAME.match(name) or name in (".", ".."):
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


class Staging:
    """Table parts written for one source before they are published."""

    def __init__(self, root: Path):
        self.dir = root / ".tmp" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.dir.mkdir(parents=True)
        self.parts: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def write(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height == 0:
            return
        n = self.parts.get(table, 0)
        target = self.dir / table / f"{n:05d}.parquet"
        target.parent.mkdir(exist_ok=True)
        conform(table, frame).write_parquet(target, compression="zstd")
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + frame.height

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class Store:
    """A run store at `root`; every method that writes takes the store's lock."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root else default_root()

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def catalog(self) -> dict:
        path = self.root / CATALOG
        if not path.exists():
            return {"version": 1, "runs": {}}
        try:
            return json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise LoganalyzeError(f"{path}: damaged catalog ({e})") from None

    def _write_catalog(self, cat: dict) -> None:
        tmp = self.root / f".{CATALOG}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(cat, indent=1, sort_keys=True))
        os.replace(tmp, self.root / CATALOG)

    def runs(self) -> dict[str, dict]:
        return self.catalog()["runs"]

    def run(self, name: str) -> dict:
        check_run_name(name)
        runs = self.runs()
        if name not in runs:
            known = ", ".join(sorted(runs)) or "none yet"
            raise LoganalyzeError(f"no run {name!r} in store {self.root} (runs: {known})")
        return runs[name]

    def next_run_name(self) -> str:
        taken = {int(m.group(1)) for n in self.runs() if (m := re.fullmatch(r"run(\d+)", n))}
        return f"run{max(taken, default=0) + 1}"

    def staging(self) -> Staging:
        return Staging(self.root)

    def has_source(self, run: str, sha256: str) -> bool:
        return any(s["sha256"] == sha256 for s in self.runs().get(run, {}).get("sources", []))

    def commit(self, run: str, entry: dict, staged: Staging) -> bool:
        """Publish staged tables and the source entry; False if the file was already there."""
        with self.lock():
            cat = self.catalog()
            sources = cat["runs"].setdefault(run, {"created": _now(), "sources": []})["sources"]
            if any(s["sha256"] == entry["sha256"] for s in sources):
                staged.discard()
                if not sources:
                    del cat["runs"][run]
                return False
            for table, n in staged.parts.items():
                final = self.root / table / f"run={run}"
                final.mkdir(parents=True, exist_ok=True)
                for i in range(n):
                    os.replace(staged.dir / table / f"{i:05d}.parquet", final / f"{entry['id']}-{i:05d}.parquet")
            entry["ingested"] = _now()
            sources.append(entry)
            self._write_catalog(cat)
            staged.discard()
            return True

    def cleanup(self) -> list[str]:
        """Remove what crashed writers left: staging dirs of dead processes, unlisted files."""
        removed: list[str] = []
        if not self.root.exists():
            return removed
        with self.lock():
            for d in (self.root / ".tmp").glob("*") if (self.root / ".tmp").exists() else []:
                pid = int(d.name.split("-")[0]) if d.name.split("-")[0].isdigit() else 0
                if not _pid_alive(pid):
                    shutil.rmtree(d, ignore_errors=True)
                    removed.append(str(d))
            runs = self.runs()
            for f in self.root.glob("*/run=*/*.parquet"):
                run = f.parent.name[4:]
                ids = {s["id"] for s in runs.get(run, {}).get("sources", [])}
                if f.name.split("-")[0] not in ids:
                    f.unlink()
                    removed.append(str(f))
        return removed

    def files(self, run: str, table: str) -> list[Path]:
        ids = [s["id"] for s in self.run(run)["sources"]]
        folder = self.root / table / f"run={run}"
        return sorted(p for sid in ids for p in folder.glob(f"{sid}-*.parquet"))

    def scan(self, run: str, table: str) -> pl.LazyFrame:
        """One table of one run as a LazyFrame (empty with the right columns if absent)."""
        files = self.files(run, table)
        if not files:
            return empty(table).lazy() if table in SCHEMAS else pl.LazyFrame()
        try:
            return pl.scan_parquet(files)
        except Exception as e:
            raise LoganalyzeError(f"cannot read table {table} of run {run}: {e}") from None

    def table_counts(self, run: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for src in self.run(run)["sources"]:
            for table, n in src.get("tables", {}).items():
                counts[table] = counts.get(table, 0) + n
        return counts
