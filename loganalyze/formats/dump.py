"""Writing a format as a format file (TOML): `dump`, and `formats --dump NAME` for a built-in.

What `dump` writes, loganalyze/formats/userformat.py loads back into an equal LogFormat
(fixtures/formats/sglang.toml is one, made by fixtures/formats/generate.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

import polars as pl

from loganalyze.errors import LoganalyzeError
from loganalyze.formats import sglang_launch
from loganalyze.formats.definition import HANDLERS, KIND_FIELDS, PREFIX_COLUMNS, type_name
from loganalyze.formats.registry import active
from loganalyze.formats.spec import Key, LineKind, LogFormat, expected

# What a field left out of a [[kinds]] entry means; `dump` leaves out what equals it.
KIND_DEFAULTS = LineKind(name="", table="", needle="")

# Built-in kinds whose Python handler one of HANDLERS does the same as, by format and kind:
# `dump` writes these as data (tests/test_userformat.py checks the equivalence on real logs).
DATA_HANDLERS: dict[str, dict[str, dict[str, str]]] = {
    "sglang": {
        "server_args": {"name": "repr_dump", "origin": "server_args"},
        "scheduler_limits": {"name": "key_equals_value", "origin": "scheduler"},
        "spec_reset": {"name": "config_value", "key": "max_running_requests", "origin": "speculative_reset"},
        "running_cap_final": {"name": "config_value", "key": "max_running_requests", "origin": "running_cap_summary"},
        "attention_backend": {"name": "config_value", "key": "attention_backend", "origin": "server"},
        "mem_fraction": {"name": "config_value", "key": "mem_fraction_static", "origin": "server"},
        "kv_cache_dtype": {"name": "config_value", "key": "kv_cache_dtype", "origin": "model_runner"},
        "chat_template": {"name": "config_value", "key": "chat_template_content_format", "origin": "server"},
        "launch_command": {"name": "command_flags", "origin": "cli", "aliases": sglang_launch.FLAGS},
        "other": {"name": "severity_from_level", "default": "info"},
    },
}



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


def _loadable(prefix: str) -> str:
    """The prefix with each group that no table has a column for (one only a Python handler
    reads: NCCL's `elapsed_ms`) made a plain group, which a format file may not name."""
    allowed = PREFIX_COLUMNS | {c for schema in active().tables.values() for c in schema}
    return re.sub(r"\(\?P<(\w+)>", lambda m: m.group(0) if m.group(1).split("__")[0] in allowed else "(?:", prefix)


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
    head += [f"prefix = {_toml(_loadable(fmt.prefix))}", *_toml_list("detect", fmt.detect)]
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
    head += [f"record_header = {_toml(fmt.record_header)}"] if fmt.record_header else []
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
    fmt = active().formats.get(name)
    if not isinstance(fmt, LogFormat):
        known = ", ".join(active().line_formats())
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
