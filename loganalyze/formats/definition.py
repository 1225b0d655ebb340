"""A format definition, the data of a TOML or JSON file, checked field by field and turned into a LogFormat.

The built-in formats are `LogFormat`/`LineKind` objects (loganalyze/formats/spec.py). A data
file is turned into exactly those objects, so a user format goes through the same engine,
detection and line accounting as a built-in one. Python cannot live in a data file: a kind
that needs a handler names one from HANDLERS. The fields are in docs/formats.md; reading the
file is loganalyze/formats/userformat.py, writing a format back out as data is dump.py.

Every problem with a definition is one line naming the file and the field, because the
person who reads it is editing that file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import polars as pl
import regex

from loganalyze.errors import LoganalyzeError
from loganalyze.formats.common import severity_from_level
from loganalyze.formats.config import command_flags, config_value, key_equals_value, repr_dump
from loganalyze.formats.registry import Registry
from loganalyze.formats.spec import Handler, Key, LineKind, LogFormat, Sample, TsFormat
from loganalyze.formats.tables import COMMON, TABLE_NAME

TYPES: dict[str, pl.DataType] = {
    "str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean,
    "list[str]": pl.List(pl.String), "list[int]": pl.List(pl.Int64), "list[float]": pl.List(pl.Float64),
}
FORMAT_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
# The columns every table has, which any prefix may set (a table's own columns too: _format).
PREFIX_COLUMNS = {"ts", "msg"} | set(COMMON)

FORMAT_FIELDS = ("name", "description", "releases", "prefix", "detect", "timestamps", "versions", "embeddable",
                 "gate", "hash_lines", "record_start", "record_marks", "record_header", "tables", "keysets", "kinds")
KIND_FIELDS = ("name", "table", "needle", "match", "pattern", "types", "keys", "key_sep", "extra", "rewrites", "pack",
               "message", "const", "continuation", "not_continuation", "orphan", "levels", "logged", "fallback", "handler", "samples")
_REQUIRED = object()


# The handlers a data file may name, each a factory taking the arguments given in the file.
HANDLERS: dict[str, Callable[..., Handler]] = {
    "repr_dump": repr_dump, "key_equals_value": key_equals_value, "config_value": config_value,
    "severity_from_level": severity_from_level, "command_flags": command_flags,
}


@dataclass(frozen=True)
class UserFormat:
    """A loaded definition: the format, the new tables it declares, and the file it came from."""

    format: LogFormat
    tables: Mapping[str, Mapping[str, pl.DataType]]
    path: Path



def from_data(data: object, path: Path, registry: Registry) -> UserFormat:
    """The format a definition's data declares; a bad one is a LoganalyzeError naming `path`
    and the field. Its kinds may write to the tables of `registry`."""
    return _format(_Reader(path, registry), data)


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


def written_columns(kind: LineKind) -> set[str]:
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
    optional_patterns = {f: r.text(d, f, where, None)
                         for f in ("match", "pattern", "continuation", "not_continuation", "orphan")}
    for f, p in optional_patterns.items():
        if p is not None:
            r.pattern(p, _at(where, f))
    kind = LineKind(
        name=name, table=table, needle=r.one_or_many(d, "needle", where),
        types={c: r.dtype(t, _at(_at(where, "types"), c)) for c, t in types.items()},
        keys=keys, key_sep=r.text(d, "key_sep", where, ": "), extra=r.flag(d, "extra", where),
        rewrites=tuple(rewrites), pack=r.text(d, "pack", where, None), message=r.flag(d, "message", where),
        const=const, levels=r.texts(d, "levels", where), logged=r.flag(d, "logged", where),
        fallback=r.flag(d, "fallback", where), handler=_handler(r, d, where), samples=_samples(r, d, where),
        **optional_patterns,
    )
    if not kind.needle and not kind.fallback:  # a catch-all takes what is left, whatever it holds
        r.fail(_at(where, "needle"), "empty: give the text every line of this kind contains")
    if kind.types and not kind.pattern:
        r.fail(_at(where, "types"), "types given but no pattern whose groups they type")
    if kind.handler is None:
        schema = {**r.tables, **tables}[table]
        if missing := sorted(written_columns(kind) - set(schema)):
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
    detect = r.patterns(r.texts(d, "detect", ""), "detect")
    if not detect:
        r.fail("detect", "missing: give at least one pattern that marks a file of this format")
    tables = _new_tables(r, d)
    # A group no table has a column for would be dropped by every table (NCCL's `host` is
    # nccl_links' column: a format's own tables take the prefix groups they declare).
    allowed = PREFIX_COLUMNS | {c for schema in {**r.tables, **tables}.values() for c in schema}
    if stray := [g for g in names if g.split("__")[0] not in allowed]:
        r.fail("prefix", f"group {stray[0]!r} would be dropped: no table has a column of that name "
                         f"(every table has {', '.join(sorted(PREFIX_COLUMNS))})")
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
        record_header=r.pattern(head, "record_header") if (head := r.text(d, "record_header", "", None)) else None,
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


def type_name(dtype: pl.DataType) -> str:
    for name, t in TYPES.items():
        if dtype == t:
            return name
    raise LoganalyzeError(f"type {dtype} has no name in a format file (types: {', '.join(TYPES)})")


