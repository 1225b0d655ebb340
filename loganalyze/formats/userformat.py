"""User-defined formats: a LogFormat declared in a TOML or JSON file instead of a module.

This module reads the files (`--formats`, $LOGANALYZE_FORMATS) and installs what they
declare into a registry; loganalyze/formats/definition.py checks a definition's fields and
turns it into a LogFormat, samples.py tests it against its sample lines (`formats
--test`), dump.py writes a format back out as data. The file layout is in docs/formats.md.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from loganalyze.errors import LoganalyzeError
from loganalyze.formats.definition import UserFormat, from_data
from loganalyze.formats.registry import Registry, active
from loganalyze.formats.tables import table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SUFFIXES = (".toml", ".json")
ENV = "LOGANALYZE_FORMATS"


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
    return from_data(data, path, registry or active())


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
    (registry or active()).install(user.format, tables, user.path)


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
