"""`loganalyze check`: find what is damaged in a run store and, with `repair`, remove it.

The store's own writes are atomic, but disks fail, copies stop half-way and people delete
folders. `check` reads every table file in full and compares its rows with the catalog.
`repair` removes a damaged source whole, never part of it, so every source left is
complete, as an ingest leaves it; the report names the input files to ingest again. A
catalog that cannot be read is rebuilt from the table files that can. Through the
store's `Backend`, so the same on a folder (under its lock) and on an object store (each
catalog write conditional, leftovers only once an hour old).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from loganalyze.errors import LoganalyzeError
from loganalyze.store import CATALOG, REPAIR_HINT, RUN_NAME, SOURCE_ID, TABLE_NAME, Store, write_errors

LEFTOVER = "not in the catalog (an interrupted ingest or a removed source)"


@dataclass
class Problem:
    """One thing wrong: `kind` is catalog, missing, unreadable, rows or leftover."""

    kind: str
    path: str
    detail: str
    run: str | None = None
    source: str | None = None


@dataclass
class CheckResult:
    """The contract behind `check --format json`."""

    store: str
    problems: list[Problem] = field(default_factory=list)
    repaired: bool = False
    lost: list[dict] = field(default_factory=list)
    recovered: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Leftovers of a crash are harmless (the next ingest removes them); damage is not."""
        return self.repaired or all(p.kind == "leftover" for p in self.problems)

    def to_dict(self) -> dict:
        return {"store": self.store, "ok": self.ok, **asdict(self)}

    def text(self) -> str:
        out = [f"store {self.store}: " + (f"{len(self.problems)} problem(s)" if self.problems else "no problems")]
        for p in self.problems:
            where = f"run {p.run}, source {p.source}: " if p.run else ""
            out.append(f"  {p.kind:<10} {where}{p.path}: {p.detail}")
        if self.recovered:
            out.append(f"  catalog rebuilt from the table files: {len(self.recovered)} source(s) recovered, "
                       "without their input paths, formats and line counts")
        for lost in self.lost:
            rows = ", ".join(f"{t} {n:,} rows" for t, n in sorted(lost["tables"].items())) or "no rows"
            out.append(f"  removed source {lost['source']} from run {lost['run']} (lost {rows}); "
                       "ingest it again to restore it")
        if self.removed:
            out.append(f"  removed {len(self.removed)} file(s)")
        if self.problems and not self.repaired and not self.ok:
            out.append("  run `loganalyze check --repair` to remove what cannot be read")
        return "\n".join(out)


def _why(error: Exception, path: Path | str) -> str:
    """pyarrow's message, first line, without the path it repeats."""
    return str(error).splitlines()[0].replace(f" '{path}'", "").replace(str(path), "the file")


def _table_problems(store: Store, run: str, src: dict, table: str) -> list[Problem]:
    """One table of one source: files present, readable, with the rows the catalog lists."""
    files, expected = store.source_files(run, src["id"], table), src["tables"].get(table, 0)
    pattern = f"{store.backend.name(f'{table}/run={run}')}/{src['id']}-*.parquet"
    shown = src.get("path", src["id"])
    if expected and not files:
        return [Problem("missing", pattern, f"{expected:,} rows listed, no file", run, shown)]
    problems, rows = [], 0
    for f in files:
        try:
            rows += store.backend.read_rows(f)
        except Exception as e:  # pyarrow: ArrowInvalid, OSError, ...
            problems.append(Problem("unreadable", f, _why(e, f), run, shown))
    if not problems and rows != expected:
        problems.append(Problem("rows", pattern, f"{rows:,} rows on disk, {expected:,} listed", run, shown))
    return problems


def _source_problems(store: Store, run: str, src: dict, folders: list[str]) -> list[Problem]:
    """Every table the catalog lists for the source, and any other table holding its files
    (`folders`: the store's run folders, listed once: on an object store a listing is requests)."""
    on_disk = {folder.split("/")[0] for folder in folders if folder.endswith(f"/run={run}/")}
    return [p for table in sorted(set(src["tables"]) | on_disk) for p in _table_problems(store, run, src, table)]


def _remove_sources(cat: dict, damaged: set[tuple[str, str]]) -> list[dict]:
    """Drop damaged sources from the catalog (and runs left empty); their files become
    leftovers. Returns what was lost."""
    lost = []
    for run, sid in sorted(damaged):
        sources = cat["runs"].get(run, {}).get("sources", [])
        for src in [s for s in sources if s["id"] == sid]:
            sources.remove(src)
            lost.append({"run": run, "source": src.get("path", sid), "sha256": src.get("sha256", ""),
                         "tables": src["tables"]})
        if not sources:
            cat["runs"].pop(run, None)
    return lost


def _rebuild_catalog(store: Store, result: CheckResult) -> dict:
    """A catalog listing every readable table file, the damaged one kept aside for inspection.

    Input paths, formats and line counts lived only in the catalog: rebuilt sources say
    `recovered`, with their table rows. A source with an unreadable file is left out whole.
    """
    runs: dict[str, dict] = {}
    bad: set[tuple[str, str]] = set()
    files = [(folder, n) for folder, entries in store.backend.run_folders().items() for n, _ in sorted(entries)]
    for folder, n in files:
        if not n.endswith(".parquet"):
            continue
        f, (table, run), sid = store.backend.name(folder + n), folder[:-1].split("/run=", 1), n.split("-")[0]
        if not (TABLE_NAME.fullmatch(table) and RUN_NAME.fullmatch(run) and SOURCE_ID.fullmatch(sid)):
            continue
        src = runs.setdefault(run, {}).setdefault(sid, {
            "id": sid, "path": f"(recovered source {sid})", "sha256": "", "format": "unknown", "version": None,
            "lines": 0, "blank": 0, "tables": {}, "recovered": True})
        try:
            src["tables"][table] = src["tables"].get(table, 0) + store.backend.read_rows(f)
        except Exception as e:
            result.problems.append(Problem("unreadable", f, _why(e, f), run, src["path"]))
            bad.add((run, sid))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    cat = {"version": 1, "runs": {run: {"created": now, "sources": list(srcs.values())} for run, srcs in runs.items()}}
    result.lost += _remove_sources(cat, bad)
    damaged = store.backend.read_catalog()
    if damaged is not None:
        store.backend.write(f"{CATALOG}.damaged-{datetime.now():%Y%m%d-%H%M%S}", damaged[0])
    store.write_catalog(cat, damaged[1] if damaged else None)
    result.recovered = [{"run": run, "source": src["id"], "tables": src["tables"]}
                        for run, info in cat["runs"].items() for src in info["sources"]]
    return cat


def _catalog_or_rebuilt(store: Store, result: CheckResult, repair: bool) -> dict | None:
    try:
        return store.catalog()
    except LoganalyzeError as e:
        path = store.backend.name(CATALOG)
        why = str(e).removeprefix(f"{path}: ").removesuffix(f"; {REPAIR_HINT}")
        result.problems.append(Problem("catalog", path, why))
        if not repair:
            return None
        with write_errors(store.root, "repair the store"):
            return _rebuild_catalog(store, result)


def check(store: Store, repair: bool = False) -> CheckResult:
    """Check the whole store; with `repair`, leave only what can be read, and say what was lost."""
    if store.backend.local and not Path(store.root).is_dir():
        raise LoganalyzeError(f"no run store at {store.root}")
    result = CheckResult(store.root)
    with store.backend.writing():
        cat = _catalog_or_rebuilt(store, result, repair)
        if cat is None:
            return result
        damaged: set[tuple[str, str]] = set()
        folders = list(store.backend.run_folders())
        for run, info in cat["runs"].items():
            for src in info["sources"]:
                found = _source_problems(store, run, src, folders)
                result.problems += found
                damaged |= {(run, src["id"])} if found else set()
        result.problems += [Problem("leftover", store.backend.name(k), LEFTOVER) for k in store.leftovers()]
        if repair:
            _repair(store, damaged, result)
    return result


def _repair(store: Store, damaged: set[tuple[str, str]], result: CheckResult) -> None:
    """Unlist the damaged sources (one atomic catalog write), then remove every unlisted file."""
    with write_errors(store.root, "repair the store"):
        if damaged:
            lost: list[dict] = []

            def unlist(cat: dict) -> None:  # again from a newer catalog where another writer's came first
                lost[:] = _remove_sources(cat, damaged)

            store.change_catalog(unlist)
            result.lost += lost
        result.removed = store.remove(store.leftovers())
    result.repaired = True
