"""User-defined formats: a LogFormat declared in a TOML or JSON file instead of a module.

The built-in formats are `LogFormat`/`LineKind` objects (loganalyze/formats/spec.py). A data file is
turned into exactly those objects, so a user format goes through the same engine,
detection and line accounting as a built-in one, and `dump` writes a built-in format back
out as data (fixtures/formats/sglang.toml is one). Python cannot live in a data file: a
kind that needs a handler names one from HANDLERS. The file layout is in docs/formats.md.

Every problem with a definition is one line naming the file and the field, because the
person who reads it is editing that file.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any, NoReturn

import polars as pl
import regex

from loganalyze import formats
from loganalyze.errors import LoganalyzeError
from loganalyze.wrappers import unwrap
from loganalyze.formats.config import config_value, key_equals_value, repr_dump
from loganalyze.formats.parse import Context, parse
from loganalyze.formats.spec import Handler, Key, LineKind, LogFormat, Sample, TsFormat, expected
from loganalyze.formats.registry import Registry
from loganalyze.formats.tables import COMMON, TABLE_NAME, table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TYPES: dict[str, pl.DataType] = {
    "str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean,
    "list[str]": pl.List(pl.String), "list[int]": pl.List(pl.Int64), "list[float]": pl.List(pl.Float64),
}
FORMAT_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
SUFFIXES = (".toml", ".json")
ENV = "LOGANALYZE_FORMATS"
# The columns a prefix may set: any other prefix group would be dropped by every table.
PREFIX_COLUMNS = {"ts", "msg"} | set(COMMON)

FORMAT_FIELDS = ("name", "description", "releases", "prefix", "detect", "timestamps", "versions", "embeddable",
                 "gate", "hash_lines", "record_start", "record_marks", "tables", "keysets", "kinds")
KIND_FIELDS = ("name", "table", "needle", "match", "pattern", "types", "keys", "key_sep", "extra", "rewrites", "pack",
               "message", "const", "continuation", "orphan", "levels", "fallback", "handler", "samples")
_REQUIRED = object()
# What a field left out of a [[kinds]] entry means; `dump` leaves out what equals it.
KIND_DEFAULTS = LineKind(name="", table="", needle="")


# The handlers a data file may name, each a factory taking the arguments given in the file.
HANDLERS: dict[str, Callable[..., Handler]] = {
    "repr_dump": repr_dump, "key_equals_value": key_equals_value, "config_value": config_value,
}

# Built-in kinds whose Python handler one of HANDLERS does the same as, by format and kind:
# `dump` writes these as data (tests/test_userformat.py checks the equivalence on real logs).
DATA_HANDLERS: dict[str, dict[str, dict[str, str]]] = {
    "sglang": {
        "server_args": {"name": "repr_dump", "origin": "server_args"},
        "scheduler_limits": {"name": "key_equals_value", "origin": "scheduler"},
        "spec_reset": {"name": "config_value", "key": "max_running_requests", "origin": "speculative_reset"},
        "attention_backend": {"name": "config_value", "key": "attention_backend", "origin": "server"},
        "mem_fraction": {"name": "config_value", "key": "mem_fraction_static", "origin": "server"},
        "kv_cache_dtype": {"name": "config_value", "key": "kv_cache_dtype", "origin": "model_runner"},
        "chat_template": {"name": "config_value", "key": "chat_template_content_format", "origin": "server"},
    },
}


@dataclass(frozen=True)
class UserFormat:
    """A loaded definition: the format, the new tables it declares, and the file it came from."""

    format: LogFormat
    tables: Mapping[str, Mapping[str, pl.DataType]]
    path: Path


def regex_problem(pattern: str) -> str | None:
    """Why the engine could not use `pattern`, or None: it must compile for Python's `regex`
    (group names) and for polars (which runs it)."""
    try:
        regex.compile(pattern)
        pl.select(pl.lit("").str.contains(pattern))
    except (regex.error, pl.exceptions.PolarsError) as e:
        return str(e).strip().splitlines()[0]
    return None


def groups(pattern: str | None) -> list[str]:
    return list(regex.compile(pattern).groupindex) if pattern else []


class _Reader:
    """Typed access to one definition's fields; every error names the file and the field."""

    def __init__(self, path: Path, registry: Registry):
        self.path = path
        self.tables = registry.tables  # what a kind may write to without declaring a table
        self.file_tables = registry.file_tables

    def fail(self, where: str, problem: str) -> NoReturn:
        raise LoganalyzeError(f"{self.path}: {where or 'top level'}: {problem}")

    def table(self, data: object, where: str, allowed: Iterable[str]) -> dict:
        if not isinstance(data, dict):
            self.fail(where, f"expected a table, got {_kind_of(data)}")
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                self.fail(_at(where, key), f"unknown field (known: {', '.join(allowed)})")
        return data

    def get(self, data: dict, key: str, where: str, expected: type, default: Any = _REQUIRED) -> Any:
        if key not in data:
            if default is _REQUIRED:
                self.fail(_at(where, key), "missing")
            return default
        value = data[key]
        if not isinstance(value, expected):
            self.fail(_at(where, key), f"expected {TYPE_WORDS[expected]}, got {_kind_of(value)}")
        return value

    def text(self, data: dict, key: str, where: str, default: Any = _REQUIRED) -> Any:
        return self.get(data, key, where, str, default)

    def flag(self, data: dict, key: str, where: str) -> bool:
        return self.get(data, key, where, bool, False)

    def texts(self, data: dict, key: str, where: str) -> tuple[str, ...]:
        """A list of strings (empty when absent)."""
        values = self.get(data, key, where, list, [])
        for i, v in enumerate(values):
            if not isinstance(v, str):
                self.fail(f"{_at(where, key)}[{i}]", f"expected a string, got {_kind_of(v)}")
        return tuple(values)

    def one_or_many(self, data: dict, key: str, where: str, default: Any = _REQUIRED) -> Any:
        """A string or a list of strings, as LineKind.needle and LogFormat.gate take them."""
        if isinstance(data.get(key), list):
            return self.texts(data, key, where)
        return self.text(data, key, where, default)

    def pattern(self, value: str, where: str) -> str:
        if problem := regex_problem(value):
            self.fail(where, f"bad regular expression ({problem})")
        return value

    def patterns(self, values: Iterable[str], where: str) -> tuple[str, ...]:
        return tuple(self.pattern(v, f"{where}[{i}]") for i, v in enumerate(values))

    def dtype(self, value: object, where: str) -> pl.DataType:
        if value not in TYPES:
            self.fail(where, f"unknown type {value!r} (types: {', '.join(TYPES)})")
        return TYPES[value]

    def items(self, data: dict, key: str, where: str) -> list[tuple[str, dict]]:
        """An array of tables, each with the field path that names it in errors."""
        values = self.get(data, key, where, list, [])
        return [(f"{_at(where, key)}[{i}]", v) for i, v in enumerate(values)]


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


TYPE_WORDS = {str: "a string", bool: "true or false", list: "a list", dict: "a table", int: "an integer",
              float: "a number"}


def _kind_of(value: object) -> str:
    return TYPE_WORDS.get(type(value), type(value).__name__)


def _keys(r: _Reader, items: list[tuple[str, dict]]) -> tuple[Key, ...]:
    out = []
    for where, item in items:
        d = r.table(item, where, ("key", "column", "type", "percent"))
        out.append(Key(r.text(d, "key", where), r.text(d, "column", where),
                       r.dtype(d.get("type", "float"), _at(where, "type")), r.flag(d, "percent", where)))
    return tuple(out)


def _samples(r: _Reader, d: dict, where: str) -> tuple[str, ...]:
    """Sample lines: each a string, or `{ line = "...", expect = { column = value } }` for a
    line with the fields it must parse to (a Sample)."""
    out: list[str] = []
    for w, item in r.items(d, "samples", where):
        if isinstance(item, str):
            out.append(item)
            continue
        if not isinstance(item, dict):
            r.fail(w, f"expected a line, or {{ line = ..., expect = {{ ... }} }}, got {_kind_of(item)}")
        t = r.table(item, w, ("line", "expect"))
        out.append(Sample(r.text(t, "line", w), **r.get(t, "expect", w, dict)))
    return tuple(out)


def _keysets(r: _Reader, data: dict) -> dict[str, tuple[Key, ...]]:
    sets = r.get(data, "keysets", "", dict, {})
    return {name: _keys(r, r.items(sets, name, "keysets")) for name in sets}


def _new_tables(r: _Reader, data: dict) -> dict[str, dict[str, pl.DataType]]:
    out = {}
    declared = r.get(data, "tables", "", dict, {})
    for name in declared:
        where = f"tables.{name}"
        columns = r.get(declared, name, "tables", dict)
        if not TABLE_NAME.match(name):
            r.fail(where, "a table name is 1-64 of a-z 0-9 _, starting with a letter")
        if name in r.tables and name not in r.file_tables:
            r.fail(where, f"{name} is a built-in table: kinds write to it without declaring it")
        if taken := sorted(set(columns) & set(COMMON)):
            r.fail(_at(where, taken[0]), f"every table has this column already ({', '.join(COMMON)})")
        out[name] = {c: r.dtype(t, _at(where, c)) for c, t in columns.items()}
    return out


def _handler(r: _Reader, d: dict, where: str) -> Handler | None:
    spec = r.get(d, "handler", where, dict, None)
    if spec is None:
        return None
    where = _at(where, "handler")
    name = r.text(spec, "name", where)
    if name not in HANDLERS:
        r.fail(_at(where, "name"), f"unknown handler {name!r} (handlers: {', '.join(HANDLERS)})")
    args = {k: v for k, v in spec.items() if k != "name"}
    try:
        return HANDLERS[name](**args)
    except TypeError as e:
        r.fail(where, f"bad arguments for {name} ({e})")


def _written_columns(kind: LineKind) -> set[str]:
    """The columns a kind without a handler writes (besides those of the prefix)."""
    cols = set(kind.const)
    if kind.pack:
        cols.add(kind.pack)
    else:
        cols |= set(groups(kind.pattern)) | {k.column for k in kind.keys}
    if kind.extra:
        cols.add("extra")
    if kind.message:
        cols.add("message")
    return cols


def _kind(r: _Reader, where: str, data: object, keysets: dict, tables: dict) -> LineKind:
    d = r.table(data, where, KIND_FIELDS)
    name = r.text(d, "name", where)
    where = f"kinds.{name}"
    table = r.text(d, "table", where)
    if table not in r.tables and table not in tables:
        r.fail(_at(where, "table"), f"no table {table!r} (tables: {', '.join(sorted(r.tables))}; "
                                    "declare a new one under [tables.NAME])")
    keys = d.get("keys", ())
    if isinstance(keys, str):
        if keys not in keysets:
            r.fail(_at(where, "keys"), f"no keyset {keys!r} (keysets: {', '.join(keysets) or 'none'})")
        keys = keysets[keys]
    else:
        keys = _keys(r, r.items(d, "keys", where))
    rewrites = []
    for w, item in r.items(d, "rewrites", where):
        rw = r.table(item, w, ("pattern", "replace"))
        rewrites.append((r.pattern(r.text(rw, "pattern", w), _at(w, "pattern")), r.text(rw, "replace", w)))
    types = r.get(d, "types", where, dict, {})
    const = r.get(d, "const", where, dict, {})
    for c, v in const.items():
        if not isinstance(v, (str, int, float, bool)):
            r.fail(_at(_at(where, "const"), c), f"expected a string, number or true/false, got {_kind_of(v)}")
    optional_patterns = {f: r.text(d, f, where, None) for f in ("match", "pattern", "continuation", "orphan")}
    for f, p in optional_patterns.items():
        if p is not None:
            r.pattern(p, _at(where, f))
    kind = LineKind(
        name=name, table=table, needle=r.one_or_many(d, "needle", where),
        types={c: r.dtype(t, _at(_at(where, "types"), c)) for c, t in types.items()},
        keys=keys, key_sep=r.text(d, "key_sep", where, ": "), extra=r.flag(d, "extra", where),
        rewrites=tuple(rewrites), pack=r.text(d, "pack", where, None), message=r.flag(d, "message", where),
        const=const, levels=r.texts(d, "levels", where),
        fallback=r.flag(d, "fallback", where), handler=_handler(r, d, where), samples=_samples(r, d, where),
        **optional_patterns,
    )
    if not kind.needle:
        r.fail(_at(where, "needle"), "empty: give the text every line of this kind contains")
    if kind.types and not kind.pattern:
        r.fail(_at(where, "types"), "types given but no pattern whose groups they type")
    if kind.handler is None:
        schema = {**r.tables, **tables}[table]
        if missing := sorted(_written_columns(kind) - set(schema)):
            r.fail(where, f"column {missing[0]!r} is not in table {table} (columns: {', '.join(schema)}); "
                          "declare a new table under [tables.NAME], or set pack = \"fields\"")
    return kind


def _format(r: _Reader, data: object) -> UserFormat:
    d = r.table(data, "", FORMAT_FIELDS)
    name = r.text(d, "name", "")
    if not FORMAT_NAME.match(name):
        r.fail("name", "a format name is 1-64 of a-z 0-9 _ . -, starting with a letter")
    prefix = r.pattern(r.text(d, "prefix", "", r"^(?P<msg>.*)$"), "prefix")
    names = groups(prefix)
    if "msg" not in names:
        r.fail("prefix", "needs a (?P<msg>...) group: the message the kinds match")
    if stray := [g for g in names if g.split("__")[0] not in PREFIX_COLUMNS]:
        r.fail("prefix", f"group {stray[0]!r} would be dropped: prefix groups are {', '.join(sorted(PREFIX_COLUMNS))}")
    detect = r.patterns(r.texts(d, "detect", ""), "detect")
    if not detect:
        r.fail("detect", "missing: give at least one pattern that marks a file of this format")
    tables = _new_tables(r, d)
    keysets = _keysets(r, d)
    kinds = tuple(_kind(r, w, k, keysets, tables) for w, k in r.items(d, "kinds", ""))
    if not kinds:
        r.fail("kinds", "missing: a format needs at least one [[kinds]]")
    names = [k.name for k in kinds]
    if dup := next((n for n in names if names.count(n) > 1), None):
        r.fail(f"kinds.{dup}", "two kinds have this name")
    fmt = LogFormat(
        name=name, description=r.text(d, "description", "", ""), prefix=prefix, kinds=kinds, detect=detect,
        ts_formats=_timestamps(r, d), versions=_versions(r, d), embeddable=r.flag(d, "embeddable", ""),
        gate=r.one_or_many(d, "gate", "", None), releases=r.text(d, "releases", "", ""),
        hash_lines=r.flag(d, "hash_lines", ""),
        record_start=r.pattern(start, "record_start") if (start := r.text(d, "record_start", "", None)) else None,
        record_marks=r.texts(d, "record_marks", ""),
    )
    return UserFormat(fmt, tables, r.path)


def _timestamps(r: _Reader, d: dict) -> tuple[TsFormat, ...]:
    out = []
    for where, item in r.items(d, "timestamps", ""):
        t = r.table(item, where, ("strftime", "complete"))
        complete = r.text(t, "complete", where, None)
        if complete not in (None, "year", "date"):
            r.fail(_at(where, "complete"), "is 'year' (the log prints no year) or 'date' (only the time of day)")
        out.append(TsFormat(r.text(t, "strftime", where), complete))
    return tuple(out)


def _versions(r: _Reader, d: dict) -> tuple[tuple[str, str], ...]:
    out = []
    for where, item in r.items(d, "versions", ""):
        v = r.table(item, where, ("pattern", "label"))
        out.append((r.pattern(r.text(v, "pattern", where), _at(where, "pattern")), r.text(v, "label", where)))
    return tuple(out)


def load(path: str | Path, registry: Registry | None = None) -> UserFormat:
    """Read one definition (.toml or .json); a bad one is a LoganalyzeError naming file and field.
    Its kinds may write to the tables of `registry` (the process's by default)."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise LoganalyzeError(f"{path}: a format definition is a .toml or .json file")
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
    except OSError as e:
        raise LoganalyzeError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError) as e:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        raise LoganalyzeError(f"{path}: not valid {path.suffix[1:].upper()} ({e})") from None
    return _format(_Reader(path, registry or formats.active()), data)


def definition_files(paths: Iterable[str | Path]) -> list[Path]:
    """The definitions named: files as given, folders by their *.toml and *.json."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.suffix in SUFFIXES)
        elif p.exists():
            out.append(p)
        else:
            raise LoganalyzeError(f"{p}: no such format file or folder")
    return out


def install(user: UserFormat, registry: Registry | None = None) -> None:
    """Make a loaded format known to detection, `--as` and ingest, its new tables too: in
    `registry`, the process's by default (Registry.install)."""
    tables = {name: table(dict(columns)) for name, columns in user.tables.items()}
    (registry or formats.active()).install(user.format, tables, user.path)


def load_formats(paths: Iterable[str | Path] | None = None, registry: Registry | None = None) -> list[UserFormat]:
    """Load and install the definitions in `paths` (files or folders; default $LOGANALYZE_FORMATS,
    a list separated by os.pathsep) into `registry` (the process's by default). All are read
    before any is installed, so one bad file changes nothing."""
    if paths is None:
        paths = [p for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    loaded = [load(f, registry) for f in definition_files(paths)]
    for user in loaded:
        install(user, registry)
    return loaded


# ---- checking a definition against its own samples ----


@dataclass
class SampleCheck:
    """What one sample line became: the kind that took it and the fields it yielded."""

    kind: str
    sample: str
    claimed_by: str | None
    fields: dict[str, Any]
    problem: str | None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "sample": self.sample, "claimed_by": self.claimed_by, "fields": self.fields,
                "problem": self.problem}


def sample_frame(lines: list[str]) -> pl.DataFrame:
    """Lines as ingest hands them to the engine: numbered, collector wrappers (kubectl,
    `(EngineCore pid=1)`, ...) removed, so that samples are lines as the log has them."""
    frame = pl.DataFrame({"line_no": range(1, len(lines) + 1), "raw": lines},
                         schema={"line_no": pl.Int64, "raw": pl.String})
    return unwrap(frame.with_columns(text=pl.col("raw")), date.today().year)


# Columns that are not fields of a line: the whole message, the pairs no key names, the line count.
NOT_FIELDS = ("message", "extra", "span")


def _fields(kind: LineKind, rows: list[dict]) -> dict[str, Any]:
    """The non-null fields a line gave, as its table stores them, packed ones unpacked. A
    settings line gives one `config` row per setting: its fields are {key: value}; of another
    line with several rows (an NCCL topology line, one per path), the first row's."""
    if kind.table == "config" and kind.handler is not None:
        return {r["key"]: r["value"] for r in rows if r.get("key") is not None and r.get("value") is not None}
    row = rows[0]
    if kind.handler is not None or kind.carry is not None:  # working columns may be left: only stored ones count
        stored = formats.active().tables.get(kind.table, {})
        names = [c for c in row if c in stored and c not in COMMON]
    else:
        names = list(_written_columns(kind))
    out = {c: row[c] for c in sorted(names) if c not in kind.const and c not in NOT_FIELDS and row.get(c) is not None}
    pack = kind.pack or ("fields" if kind.table == "events" else None)  # where events keep a line's own fields
    if pack and isinstance(out.get(pack), str):
        packed = json.loads(out.pop(pack))
        out = dict(sorted({**out, **{k: v for k, v in packed.items() if v is not None}}.items()))
    return out


def _owners(fmt: LogFormat, lines: list[str]) -> dict[int, list[dict]]:
    """For each claimed line, the output rows it belongs to: its own, or for a continuation
    line those of the last line above that has rows (the engine gives continuations to the
    line above). A line has several rows when it holds several settings."""
    ctx = Context(source="check", year=date.today().year, base_date=date.today().isoformat())
    got = parse(fmt, sample_frame(lines), ctx)
    starts: dict[int, list[dict]] = {}
    for df in got.tables.values():
        for row in df.iter_rows(named=True):
            starts.setdefault(row["line_no"], []).append(row)
    owners, owner = {}, None
    for line_no in range(1, len(lines) + 1):
        owner = starts.get(line_no, owner)
        if line_no in starts or (owner is not None and line_no in got.claimed_lines):
            owners[line_no] = owner
    return owners


def _as_text(fmt: LogFormat, kind: LineKind) -> LogFormat:
    """The format with `kind`'s fields left as text: a field that is null typed but not as text
    did not fit its type (strict=False casts turn a mismatch into a silent null)."""
    text_kind = replace(kind, types={}, keys=tuple(replace(k, dtype=pl.String, percent=False) for k in kind.keys))
    return replace(fmt, kinds=tuple(text_kind if k is kind else k for k in fmt.kinds))


def _dtype_of(kind: LineKind, column: str) -> pl.DataType:
    return kind.types.get(column) or next((k.dtype for k in kind.keys if k.column == column), pl.String)


def _verdict(kind: LineKind, sample: str, rows: list[dict] | None, text_rows: list[dict] | None,
             continues: bool) -> SampleCheck:
    claimed_by = rows[0].get("kind") if rows else None
    if rows is None:
        return SampleCheck(kind.name, sample, None, {}, "no kind claims it (the needle, match or pattern does not match)")
    if claimed_by != kind.name:
        return SampleCheck(kind.name, sample, claimed_by, {},
                           f"claimed by kind {claimed_by} (listed earlier, or its needle is too broad)")
    expect = expected(sample)
    if continues:  # the rest of a block the sample above starts: judged with it
        problem = "continues the sample above, so its expected fields are never its own" if expect else None
        return SampleCheck(kind.name, sample, claimed_by, {}, problem)
    got = _fields(kind, rows)
    as_text = _fields(kind, text_rows) if text_rows else {}
    problem = None
    if expect is not None:  # the sample says which fields are null on purpose (nccl-tests' `N/A`)
        problem = _unexpected(got, expect)
    elif lost := sorted(set(as_text) - set(got)):
        problem = f"field {lost[0]}: {as_text[lost[0]]!r} is not a valid {type_name(_dtype_of(kind, lost[0]))}"
    elif (groups(kind.pattern) or kind.keys or kind.handler) and not got:
        problem = "claimed, but every field is null"
    return SampleCheck(kind.name, sample, claimed_by, got, problem)


def _unexpected(got: Mapping[str, Any], expect: Mapping[str, object]) -> str | None:
    """How the fields a sample gave differ from those it declares, first difference only."""
    for column in sorted(set(got) | set(expect)):
        if column not in expect:
            return f"field {column}: got {got[column]!r}, which the sample does not expect"
        if column not in got:
            return f"field {column}: expected {expect[column]!r}, got null"
        if got[column] != expect[column]:
            return f"field {column}: expected {expect[column]!r}, got {got[column]!r}"
    return None


def check_kind(fmt: LogFormat, kind: LineKind) -> list[SampleCheck]:
    """Parse a kind's samples together, as one small log, with the whole format.

    Each sample must be claimed by `kind` (a sample may also continue the one above, as
    the lines of a banner do) and every field it captures must fit its type. A `Sample`
    must give exactly the fields it declares; of a plain line, a kind that extracts fields
    must yield one. A sample may hold several lines joined by newlines.
    """
    if not kind.samples:
        return [SampleCheck(kind.name, "", None, {}, "no samples: add a real line under samples")]
    lines, first_lines = [], []
    for sample in kind.samples:
        first_lines.append(len(lines) + 1)
        lines += sample.split("\n")
    typed = _owners(fmt, lines)
    # Handlers and carried counters need the typed fields: only plain extraction is re-run as text.
    as_text = {} if kind.handler or kind.carry else _owners(_as_text(fmt, kind), lines)
    out = []
    for sample, first in zip(kind.samples, first_lines):
        rows = typed.get(first)
        continues = rows is not None and rows[0]["line_no"] != first
        out.append(_verdict(kind, sample, rows, as_text.get(first), continues))
    return out


def check(fmt: LogFormat) -> list[SampleCheck]:
    """Every sample of every kind; a kind with no sample is a problem too (nothing tests it)."""
    return [result for kind in fmt.kinds for result in check_kind(fmt, kind)]


# ---- writing a format as data ----


def _toml(value: object) -> str:
    """One TOML value; strings with backslashes (regexes) are literal strings ('...') where they
    can be, so that they read as written rather than with every backslash doubled."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if "\\" in value and "'" not in value and not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value):
            return f"'{value}'"
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise LoganalyzeError(f"cannot write {value!r} as TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _toml_list(name: str, values: Iterable[object]) -> list[str]:
    """A long array one element per line, the way a person would keep it diffable."""
    return [f"{name} = [", *(f"  {_toml(v)}," for v in values), "]"]


def type_name(dtype: pl.DataType) -> str:
    for name, t in TYPES.items():
        if dtype == t:
            return name
    raise LoganalyzeError(f"type {dtype} has no name in a format file (types: {', '.join(TYPES)})")


def _key_item(k: Key) -> dict:
    item = {"key": k.key, "column": k.column, "type": type_name(k.dtype)}
    return {**item, "percent": True} if k.percent else item


def _sample_item(sample: str) -> str | dict:
    expect = expected(sample)
    return str(sample) if expect is None else {"line": str(sample), "expect": dict(expect)}


def _shared_keysets(fmt: LogFormat) -> dict[tuple[Key, ...], str]:
    """Key lists used by several kinds, named after the table of the first: written once as a keyset."""
    names: dict[tuple[Key, ...], str] = {}
    for kind in fmt.kinds:
        if kind.keys and kind.keys not in names and sum(k.keys == kind.keys for k in fmt.kinds) > 1:
            base, n = kind.table, 2
            while (name := base if n == 2 else f"{base}{n - 1}") in names.values():
                n += 1
            names[kind.keys] = name
    return names


def needs_code(kind: LineKind, handler: Mapping[str, object] | None) -> bool:
    """Whether a kind needs Python that a format file cannot hold (a handler no HANDLERS
    entry replaces, or a counter carried across batches)."""
    return kind.carry is not None or (kind.handler is not None and handler is None)


def _kind_block(kind: LineKind, handler: Mapping[str, object] | None, keysets: dict, partial: bool) -> list[str]:
    """A kind's [[kinds]] entry; with `partial`, a kind that needs code is written commented
    out, under a line that says so, instead of refused."""
    if not needs_code(kind, handler):
        return _kind_lines(kind, handler, keysets)
    if not partial:
        what = "a `carry` function" if kind.carry is not None else "a Python handler"
        raise LoganalyzeError(f"kind {kind.name} has {what}: name one of {', '.join(HANDLERS)} for it")
    module = (kind.carry or kind.handler).__module__.replace(".", "/") + ".py"
    body = _kind_lines(replace(kind, handler=None, carry=None), None, keysets)
    return [f"# Kind {kind.name} needs a Python handler ({module}), which a format file cannot hold: left",
            "# out, so its lines go to the kinds below it or to unparsed.", *(f"# {line}" for line in body)]


def _kind_lines(kind: LineKind, handler: Mapping[str, object] | None, keysets: dict) -> list[str]:
    out = ["[[kinds]]"]
    for f in KIND_FIELDS:
        value = handler if f == "handler" else getattr(kind, f)
        if f not in ("name", "table", "needle") and value == getattr(KIND_DEFAULTS, f, None):
            continue
        if f == "keys":
            if kind.keys in keysets:
                out.append(f"keys = {_toml(keysets[kind.keys])}")
            else:
                out += _toml_list("keys", [_key_item(k) for k in kind.keys])
        elif f == "types":
            out.append(f"types = {_toml({c: type_name(t) for c, t in kind.types.items()})}")
        elif f == "rewrites":
            out += _toml_list("rewrites", [{"pattern": p, "replace": r} for p, r in kind.rewrites])
        elif f == "samples":
            out += _toml_list("samples", [_sample_item(s) for s in kind.samples])
        else:
            out.append(f"{f} = {_toml(value)}")
    return out


def dump(fmt: LogFormat, handlers: Mapping[str, Mapping[str, object]] | None = None,
         tables: Mapping[str, Mapping[str, pl.DataType]] | None = None, *, partial: bool = False) -> str:
    """A format as a TOML definition that `load` turns back into an equal LogFormat.

    `handlers` names, per kind that has a Python handler, the HANDLERS entry (and its
    arguments) that does the same: code cannot be written out, so the caller vouches for
    the equivalence (tests/test_userformat.py checks it on real logs). Any other kind with
    code is refused, or with `partial` written commented out (see `dump_builtin`).
    """
    handlers = handlers or {}
    head = [f"name = {_toml(fmt.name)}", f"description = {_toml(fmt.description)}"]
    head += [f"releases = {_toml(fmt.releases)}"] if fmt.releases else []
    head += [f"prefix = {_toml(fmt.prefix)}", *_toml_list("detect", fmt.detect)]
    if fmt.ts_formats:
        head += _toml_list("timestamps", [{"strftime": t.strftime, **({"complete": t.complete} if t.complete else {})}
                                          for t in fmt.ts_formats])
    if fmt.versions:
        head += _toml_list("versions", [{"pattern": p, "label": label} for p, label in fmt.versions])
    head += ["embeddable = true"] if fmt.embeddable else []
    head += [f"gate = {_toml(fmt.gate)}"] if fmt.gate is not None else []
    head += ["hash_lines = true"] if fmt.hash_lines else []
    head += [f"record_start = {_toml(fmt.record_start)}"] if fmt.record_start else []
    head += [f"record_marks = {_toml(list(fmt.record_marks))}"] if fmt.record_marks else []
    blocks = ["\n".join(head)]
    for name, columns in (tables or {}).items():
        blocks.append("\n".join([f"[tables.{name}]", *(f"{_toml_key(c)} = {_toml(type_name(t))}"
                                                       for c, t in columns.items())]))
    keysets = _shared_keysets(fmt)
    if keysets:
        blocks.append("\n".join(["[keysets]", *(line for keys, name in keysets.items()
                                                for line in _toml_list(name, [_key_item(k) for k in keys]))]))
    blocks += ["\n".join(_kind_block(k, handlers.get(k.name), keysets, partial)) for k in fmt.kinds]
    return "\n\n".join(blocks) + "\n"


def dump_builtin(name: str) -> str:
    """A built-in format as a format file, the starting point for a user's own (`formats
    --dump`). Kinds that need Python are in it commented out, listed at the top: loaded
    back, the other kinds parse their samples to the same values (tests/test_userformat.py)."""
    fmt = formats.active().formats.get(name)
    if not isinstance(fmt, LogFormat):
        known = ", ".join(formats.active().line_formats())
        why = "reads the whole file with Python code: it has no data form" if fmt else "is not a known format"
        raise LoganalyzeError(f"{name} {why} (formats read line by line: {known})")
    handlers = DATA_HANDLERS.get(name, {})
    code = [k.name for k in fmt.kinds if needs_code(k, handlers.get(k.name))]
    head = [f"# The built-in {name} format as a format file (`loganalyze formats --dump {name}`); the fields",
            "# are in docs/formats.md. Load a copy with --formats to patch or extend it."]
    if code:
        head += [f"# {len(code)} of its {len(fmt.kinds)} kinds need Python handlers and are commented out below:",
                 *_wrapped(", ".join(code), "#   ")]
    return "\n".join(head) + "\n\n" + dump(fmt, handlers, partial=True)


def _wrapped(text: str, lead: str, width: int = 100) -> list[str]:
    lines, line = [], lead
    for word in text.split(" "):
        if len(line) + len(word) > width and line.strip(lead.strip() + " "):
            lines.append(line.rstrip())
            line = lead
        line += word + " "
    return [*lines, line.rstrip()]
