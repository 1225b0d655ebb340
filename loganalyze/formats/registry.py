"""The formats and tables a process knows, as one object instead of module globals.

A `Registry` holds the formats by name (in the order detection tries them), every table's
schema by name, and which formats and tables came from format files. The built-in one
(`loganalyze.formats.BUILTIN`) is made once from the format modules' declarations and never
changes. Ingest, the store and the `formats` command read the process's registry,
`loganalyze.formats.active()`: a copy of the built-in one, into which `--formats`,
`$LOGANALYZE_FORMATS` and `la.load_formats` install format files. `loganalyze.formats.using`
puts another registry in its place for a block and the old one back after, which is how a
test, or a library user who wants a format for one ingest only, leaves nothing behind.
"""

from __future__ import annotations

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
