"""Labels: the `key=value` pairs (cluster, host, date, engine, ...) stored with each
source on ingest, which queries and fleet summaries select by (partition columns)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from loganalyze.errors import LoganalyzeError

LABEL_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
RESERVED_LABELS = frozenset({"run", "source"})  # the columns every table is joined to its labels on


def parse_labels(pairs: Iterable[str]) -> dict[str, str]:
    """`key=value` pairs (--label cluster=a) as a dict; a key is what a SQL column can be named."""
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not LABEL_KEY.fullmatch(key):
            raise LoganalyzeError(f"bad label {pair!r}: use key=value, the key of a-z 0-9 _ (e.g. cluster=a)")
        if key in RESERVED_LABELS:
            raise LoganalyzeError(f"bad label {pair!r}: {key!r} is reserved (every table has its own {key} column)")
        labels[key] = value
    return labels
