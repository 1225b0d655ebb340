"""How a log format is declared: data, not code.

A format is a line prefix (named groups), a list of line kinds, and detection hints.
A line kind says how to recognise a line cheaply (a literal needle, then a regex), how to
get its fields (named groups, or `key: value` pairs found by key so that a release that
reorders or adds fields still parses), the table the line goes to, and real sample lines
that double as tests (as lnav's format files do), some with the field values they must give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import polars as pl

# A handler may return rows with a boolean `unread` column: True on the lines it was given
# and could not read (a text table that is no benchmark result). The engine gives those
# lines back, with their continuation lines, to `unparsed` rather than counting them typed.
Handler = Callable[[pl.DataFrame], pl.DataFrame]
# Like a handler, plus a dict that persists across the batches of one source (cumulative
# counters need the last value of the previous batch).
Carry = Callable[[pl.DataFrame, dict], pl.DataFrame]


class Sample(str):
    """A sample line with the fields it must parse to, as lnav's format files pair a sample
    with its expected values: `Sample("... #running-req: 3, ...", running=3, queued=0)`.

    It is a `str`, so everything that reads a kind's samples as lines (the tests that wrap
    or mix them) reads it unchanged. `expect` is every non-null field of the sample's row,
    exactly (`{}`: a marker line that carries no fields); `formats --test` asserts it. A
    plain string sample is checked only for being claimed and for fields that fit their type.
    It compares equal to its line, as a str does: compare `expected(...)` for the values.
    """

    expect: Mapping[str, object]

    def __new__(cls, line: str, /, **expect: object) -> Sample:
        sample = super().__new__(cls, line)
        sample.expect = expect
        return sample

    def __repr__(self) -> str:
        return f"Sample({str.__repr__(self)}, **{self.expect!r})"


def expected(sample: str) -> Mapping[str, object] | None:
    """The fields a sample must parse to, or None for a plain line that declares none."""
    return sample.expect if isinstance(sample, Sample) else None


@dataclass(frozen=True)
class Key:
    """A field found by its printed key, wherever it stands in the line."""

    key: str
    column: str
    dtype: pl.DataType = pl.Float64
    percent: bool = False  # printed as 12.5% -> stored as 0.125


@dataclass(frozen=True)
class LineKind:
    """One kind of line: how to recognise it, what to extract, where it goes."""

    name: str
    table: str
    needle: str | tuple[str, ...]
    match: str | None = None
    pattern: str | None = None
    types: Mapping[str, pl.DataType] = field(default_factory=dict)
    keys: tuple[Key, ...] = ()
    key_sep: str = ": "
    extra: bool = False
    rewrites: tuple[tuple[str, str], ...] = ()
    pack: str | None = None
    message: bool = False
    const: Mapping[str, object] = field(default_factory=dict)
    continuation: str | None = None
    # Lines that end a record although they match `continuation` (another program's lines of
    # the same shape, logged among a client's printed rows).
    not_continuation: str | None = None
    # A run of continuation lines with no start line above it (a log cut mid-traceback,
    # a batch boundary) becomes one line of this kind when its first line matches this.
    orphan: str | None = None
    # Only lines whose prefix `level` is one of these.
    levels: tuple[str, ...] = ()
    # Only lines a logger wrote: a timestamp or a level, in the format's prefix or a
    # leader's (print output and bare text have neither).
    logged: bool = False
    # Tried last, on lines that no other kind and no continuation took.
    fallback: bool = False
    handler: Handler | None = None
    carry: Carry | None = None
    # Real lines (a `Sample` also says the fields it must give); see Sample.
    samples: tuple[str, ...] = ()


@dataclass(frozen=True)
class TsFormat:
    """A timestamp layout; `complete` adds what the log leaves out ('year' or 'date')."""

    strftime: str
    complete: str | None = None


@dataclass(frozen=True)
class LogFormat:
    """A whole source format."""

    name: str
    description: str
    prefix: str
    kinds: tuple[LineKind, ...]
    detect: tuple[str, ...]
    ts_formats: tuple[TsFormat, ...] = ()
    versions: tuple[tuple[str, str], ...] = ()
    embeddable: bool = False
    gate: str | tuple[str, ...] | None = None
    releases: str = ""
    # The format marks its own lines with `#` (nccl-tests, Prometheus): `# ` in front of its
    # lines is never peeled as a comment leader (loganalyze/formats/leader.py).
    hash_lines: bool = False
    # What starts one of the format's records wherever it stands in a line (its header; the
    # start of a stats message glued on without one): a line holding two or more is several
    # records whose newlines were lost, parsed one by one (loganalyze/formats/glued.py).
    record_start: str | None = None
    # Literals each record start holds one of: a line holds two records only where one of
    # them occurs twice, so the other lines skip the record_start regex.
    record_marks: tuple[str, ...] = ()
    # The part of record_start that is the format's own header (no bare message start): a
    # record begun in the middle of another writer's output, where no leader stands before
    # it, starts with one (loganalyze/formats/glued.py).
    record_header: str | None = None
    # Kinds read only in a file of the format's own, not where an embeddable format claims
    # its lines inside another's file: a traceback in a benchmark client's console is the
    # client's, one inside a server's log the server's.
    own_kinds: tuple[LineKind, ...] = ()

    @cached_property
    def alone(self) -> "LogFormat":
        """The format as it reads a file of its own: its kinds and its own_kinds. Made once
        per format, since the engine keys its compiled needles by the kinds tuple."""
        return replace(self, kinds=self.kinds + self.own_kinds, own_kinds=()) if self.own_kinds else self


@dataclass(frozen=True)
class FileFormat:
    """A structured file (JSON, JSONL, CSV) read whole rather than line by line.

    `sniff` scores the first lines of the file joined as text (0 to 1). `read` gets the
    whole file as a frame of (line_no, text) and a Context, and returns a `Parsed` whose
    line counts account for every row of that frame, like the line engine. Where `by_batch`
    says of the file's first lines that it holds one record a line (a JSONL of scrapes, a
    Parquet export's rows), `read` gets it batch by batch instead: memory stays one batch's,
    not the file's.
    """

    name: str
    description: str
    sniff: Callable[[str], float]
    read: Callable[..., "object"]
    by_batch: Callable[[str], bool] | None = None
    releases: str = ""
    # The kinds its rows carry, where a finder selects them (checked like a LogFormat's kinds, tests/test_vocabulary.py).
    row_kinds: tuple[str, ...] = ()


@dataclass
class Context:
    """What a parser needs to know about the source beyond its lines."""

    source: str
    year: int
    base_date: str  # YYYY-MM-DD, for logs that print only the time of day
    state: dict = field(default_factory=dict)
