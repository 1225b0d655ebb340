"""The import graph of `loganalyze`: no cycles, and layers that import only downward.

Every module is parsed with `ast`, so an import inside a function (a lazy import, the
usual way to hide a cycle) or under `if TYPE_CHECKING:` counts like one at the top.
`from pkg import name` is an import of the submodule `pkg.name` when there is one, else
of `pkg` itself (its `__init__`); the parent packages Python runs on the way are not
counted, or every package would be in a cycle with its own `__init__`.

The layers, lowest first (ARCHITECTURE.md says what each owns). A module may import its
own layer and those below it. The store sits under ingest: ingest writes into it, and
nothing in the store knows how inputs are parsed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("loganalyze",)

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("reading", ("loganalyze.containers", "loganalyze.errors", "loganalyze.reader", "loganalyze.version")),
    ("formats and parsing", ("loganalyze.formats", "loganalyze.wrappers")),
    ("store", ("loganalyze.store", "loganalyze.staging", "loganalyze.backend", "loganalyze.localfs", "loganalyze.objstore",
               "loganalyze.runs", "loganalyze.check", "loganalyze.labels")),
    ("ingestion", ("loganalyze.ingestion",)),
    ("run", ("loganalyze.run",)),
    ("metrics", ("loganalyze.metrics", "loganalyze.kinds")),
    ("diagnosis", ("loganalyze.diagnosis",)),
    ("outputs", ("loganalyze.report", "loganalyze.render", "loganalyze.redact", "loganalyze.escape",
                 "loganalyze.query", "loganalyze.export", "loganalyze.formatinfo", "loganalyze.fleet",
                 "loganalyze.compare", "loganalyze.regression")),
    ("cli", ("loganalyze", "loganalyze.api", "loganalyze.cli", "loganalyze.progress")),
]

# Today's debts, each to be paid and removed (issue #19): module -> the module it may
# still import against the rules.
KNOWN_CYCLES: set[frozenset[str]] = set()
KNOWN_UPWARD: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its own name); a C
    extension by the name of its source, `_tokenizer.c` (it imports nothing of ours)."""
    found = {}
    for package in PACKAGES:
        for path in sorted([*(ROOT / package).rglob("*.py"), *(ROOT / package).rglob("*.c")]):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the packages that module `name` imports, anywhere in its code."""
    targets: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    out = set()
    for target in targets:
        while target and target not in known:  # `import pkg.mod.Name`-like spellings: the module that holds it
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) if path.suffix == ".py" else set() for name, path in known.items()}


def layer_of(module: str) -> int:
    """The index of the layer whose prefix names the module most closely."""
    best, depth = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = i, prefix.count(".")
    return best


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    assert [m for m in graph() if layer_of(m) < 0] == []


def test_no_import_cycles():
    """No cycle, once the known pairs are cut; a pair that no longer imports each other is
    taken off the known list (so the list only shrinks)."""
    edges = graph()
    mutual = {frozenset({a, b}) for a in edges for b in edges[a] if a in edges[b]}
    assert KNOWN_CYCLES <= mutual, f"no longer a cycle, remove from KNOWN_CYCLES: {KNOWN_CYCLES - mutual}"
    cut = {a: {b for b in bs if frozenset({a, b}) not in KNOWN_CYCLES and (a, b) not in KNOWN_UPWARD}
           for a, bs in edges.items()}
    assert cycles(cut) == []


def test_layers_import_only_downward():
    edges = graph()
    upward = {(a, b) for a, bs in edges.items() for b in bs if layer_of(b) > layer_of(a)}
    assert KNOWN_UPWARD <= upward, f"fixed, remove from KNOWN_UPWARD: {KNOWN_UPWARD - upward}"
    assert sorted(upward - KNOWN_UPWARD) == []


def test_the_scan_sees_every_kind_of_import(tmp_path):
    """Lazy, TYPE_CHECKING-only and relative imports are edges; a name taken from a
    package is an edge to the package unless a submodule has that name."""
    path = tmp_path / "mod.py"
    path.write_text("from typing import TYPE_CHECKING\nfrom . import base\nfrom loganalyze import ingestion, open_run\n"
                    "if TYPE_CHECKING:\n    from loganalyze.run import Run\n"
                    "def f():\n    import loganalyze.store\n    from ..errors import LoganalyzeError\n")
    known = modules()
    assert imported("loganalyze.metrics.mod", path, known) == {
        "loganalyze.metrics.base", "loganalyze.ingestion", "loganalyze", "loganalyze.run", "loganalyze.store",
        "loganalyze.errors"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_formats_import_first():
    """Importing a format module before anything else works: importing it runs
    `loganalyze/__init__` first, which imports ingestion, which imports the formats; a
    module ingestion imports at its top must not need a half-made format module back."""
    for module in ("loganalyze.formats.userformat", "loganalyze.formats.parse"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr.splitlines()[-1]
