"""The formats and tables a process knows, as one object instead of module globals.

A `Registry` holds the formats by name (in the order detection tries them), every table's
schema by name, and which formats and tables came from format files. The built-in one
(`loganalyze.formats.BUILTIN`) is made once from the format modules' declarations and never
changes. Ingest, the store and the `formats` command read the process's registry,
`active()` (also `loganalyze.formats.active()`): a copy of the built-in one, which
loganalyze/formats/__init__.py `start`s, and into which `--formats`, `$LOGANALYZE_FORMATS`
and `la.load_formats` install format files. `using` puts another registry in its place for
a block and the old one back after, which is how a test, or a library user who wants a
format for one ingest only, leaves nothing behind. They live here, not in the package's
`__init__`, so that a module of the package that reads them (the format-file loader, say)
needs nothing that `__init__` imports: `__init__` may then import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from loganalyze.formats.spec import FileFormat, LogFormat
from loganalyze.formats.tables import Schema

Format = LogFormat | FileFormat


@dataclass
class Registry:
    """Formats and table schemas by name; `files`: the format file each installed format came
    from; `file_tables`: the tables format files declared (a later file may redeclare those,
    never a built-in one)."""

    formats: dict[str, Format]
    tables: dict[str, Schema]
    files: dict[str, Path] = field(default_factory=dict)
    file_tables: set[str] = field(default_factory=set)

    def copy(self) -> Registry:
        return Registry(dict(self.formats), dict(self.tables), dict(self.files), set(self.file_tables))

    def install(self, fmt: Format, tables: dict[str, Schema], path: Path) -> None:
        """Add a format loaded from `path` and the tables it declares (schemas with the common
        columns). A file may redefine a built-in format of the same name: that is how a
        format is patched for a new release without waiting for loganalyze."""
        self.tables.update(tables)
        self.file_tables.update(tables)
        self.formats[fmt.name] = fmt
        self.files[fmt.name] = path

    def embeddable(self) -> list[LogFormat]:
        """The formats that claim their lines inside any other format's file (NCCL)."""
        return [f for f in self.formats.values() if isinstance(f, LogFormat) and f.embeddable]

    def line_formats(self) -> list[str]:
        """The names of the formats read line by line (the ones a format file can say)."""
        return [n for n, f in self.formats.items() if isinstance(f, LogFormat)]


_active: Registry | None = None


def start(registry: Registry) -> None:
    """Make `registry` the process's (loganalyze/formats/__init__.py does, with a copy of the
    built-in one, when the package is imported)."""
    global _active
    _active = registry


def active() -> Registry:
    """The process's registry: the built-in formats and tables, and the format files installed."""
    assert _active is not None, "loganalyze.formats starts the registry when it is imported"
    return _active


@contextmanager
def using(registry: Registry) -> Iterator[Registry]:
    """Make `registry` the process's for the block; the one before comes back after it."""
    global _active
    before, _active = _active, registry
    try:
        yield registry
    finally:
        _active = before
