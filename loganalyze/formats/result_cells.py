"""The cells of benchmark result tables (loganalyze/formats/result_tables.py): numbers as the
clients print them, the unit a row or column name states, the statistics' names, a load level."""

from __future__ import annotations

import regex


NUMBER = regex.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

STATS = {"avg": "mean", "mean": "mean", "value": "mean", "p50": "median", "median": "median", "mdn": "median",
         "std": "std", "max": "max", "p90": "p90", "p95": "p95", "p99": "p99"}


def cell_number(cell: str) -> float | None:
    """A cell's value: `4,110,623,430`, `--->  1,764.61` (a user's marker), `1.8 ± 0.4`
    (GuideLLM's interval: its mean), `3.2*`; None for `N/A` and blanks."""
    found = NUMBER.search(cell.replace(",", ""))
    return float(found.group()) if found else None


def unit_of(name: str) -> tuple[str, str | None]:
    """`Time To First Token (ms)` -> ("time to first token", "ms")."""
    found = regex.match(r"^(.*?)\s*\(([^()]*)\)\s*$", name.strip())
    if not found:
        return name.strip().lower(), None
    return found.group(1).lower(), found.group(2).strip().lower()


def load_level(name: str) -> dict[str, object]:
    """GuideLLM's load level from its benchmark's name (the tables print it, benchmarks.json
    gives its parts): `concurrent@8` is 8 streams, `constant@26.21` and
    `poisson@5` a request rate, `synchronous` one stream at a time."""
    kind, _, level = name.partition("@")
    out: dict[str, object] = {"label": name}
    if kind == "synchronous":
        out["max_concurrency"] = 1
    elif kind == "concurrent" and cell_number(level) is not None:
        out["max_concurrency"] = int(cell_number(level))
    elif kind in ("constant", "poisson", "asynchronous") and cell_number(level) is not None:
        out["request_rate"] = cell_number(level)  # 0.1 named a fixed rate `asynchronous@2.00 req/sec`
    return out
