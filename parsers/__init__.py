"""Every source format loganalyze knows, and how a file's format is chosen.

To add a format: write a module that declares a `FORMAT` (see `parsers/spec.py`) and
list it in FORMATS. Formats marked `embeddable` (NCCL, say) also claim their lines
inside any other format's file.
"""

from __future__ import annotations

import polars as pl

from parsers import sglang
from parsers.engine import score
from parsers.spec import LogFormat

FORMATS: dict[str, LogFormat] = {f.name: f for f in (sglang.FORMAT,)}

MIN_SCORE = 0.01


def embeddable() -> list[LogFormat]:
    return [f for f in FORMATS.values() if f.embeddable]


def detect(sample: pl.Series) -> tuple[LogFormat | None, dict[str, float]]:
    """The format whose detection marks cover most of the sample lines, with all scores."""
    scores = {name: score(fmt, sample) for name, fmt in FORMATS.items()}
    best = max(scores, key=lambda n: scores[n], default=None)
    if best is None or scores[best] < MIN_SCORE:
        return None, scores
    return FORMATS[best], scores
