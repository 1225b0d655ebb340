"""Every kind name that metrics and diagnosis read is declared by some built-in format.

The names come from loganalyze/kinds.py, where each module registers the kinds it reads
when it is imported; the declarations are the formats' own kinds (formats.FORMATS; a whole-file
format names the kinds its rows carry).
"""

from __future__ import annotations

import importlib
import pkgutil

import loganalyze.diagnosis
import loganalyze.metrics
from loganalyze import formats
from loganalyze import kinds
from loganalyze.formats.spec import LogFormat


def declared() -> set[str]:
    return {name for fmt in formats.FORMATS.values()
            for name in ([k.name for k in fmt.kinds] if isinstance(fmt, LogFormat) else fmt.row_kinds)}


def test_every_kind_read_is_declared_by_a_format():
    for package in (loganalyze.metrics, loganalyze.diagnosis):
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
    names = declared()
    assert len(kinds.READ) >= 30, "the modules register the kinds they read (loganalyze/kinds.py)"
    assert sorted(kinds.READ - names) == []
    assert [p for p in kinds.PREFIXES if not any(n.startswith(p) for n in names)] == []
