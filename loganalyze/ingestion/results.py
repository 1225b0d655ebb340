"""What an ingest reports: per input (`SourceResult`, the contract behind `ingest
--format json`), for the whole ingest (`IngestResult`), and progress as it goes (`Tally`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

Progress = Callable[[int, int, int, int], None]  # bytes read, lines read, files done, files in all
Reading = Callable[[int, int], None]  # bytes and lines read so far of the file being read


@dataclass
class SourceResult:
    """What one input became: the contract behind `ingest --format json`."""

    path: str
    sha256: str
    format: str
    version: str | None
    lines: int
    blank: int
    tables: dict[str, int] = field(default_factory=dict)
    lines_by_table: dict[str, int] = field(default_factory=dict)
    # Records per table that shared a line with the record before them (loganalyze/formats/glued.py):
    # their line is counted once, by its first record, in `lines_by_table`.
    glued: dict[str, int] = field(default_factory=dict)
    unparsed: int = 0
    refused: str = ""  # why the file was not ingested (an unknown format); nothing of it is stored
    looked_like: str = ""  # refused although detected as this format: none of its lines was one it reads
    bad_utf8: int = 0
    long_lines: int = 0  # lines over 1 MiB, kept truncated in `unparsed`
    year: int = 0
    year_source: str = ""
    skipped: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IngestResult:
    run: str
    store: str
    sources: list[SourceResult]

    def unknown(self) -> list[str]:
        """The files skipped because no format knows them, as shown."""
        return [s.path for s in self.sources if s.refused]

    def to_dict(self) -> dict:
        return {"run": self.run, "store": self.store, "sources": [s.to_dict() for s in self.sources],
                "unknown_format": self.unknown()}


class Tally:
    """Progress over a whole ingest: the bytes and lines of the files done plus those read
    so far of the current one, and how many files of all are done."""

    def __init__(self, progress: Progress | None, files: int):
        self.progress, self.files = progress, files
        self.bytes = self.lines = self.done = 0

    def reading(self, bytes_read: int, lines: int) -> None:
        if self.progress:
            self.progress(self.bytes + bytes_read, self.lines + lines, self.done, self.files)

    def finished(self, result: SourceResult, entry: dict | None) -> None:
        """A file is staged (`entry` None: skipped or refused, nothing of it counted but the file)."""
        size = entry["size"] if entry else 0
        self.bytes, self.lines, self.done = self.bytes + size, self.lines + result.lines, self.done + 1
        self.reading(0, 0)
