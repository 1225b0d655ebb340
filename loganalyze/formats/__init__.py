"""Every source format loganalyze knows, and how a file's format is chosen.

To add a format: write a module that declares a `FORMAT` (see `loganalyze/formats/spec.py`),
and its own tables in `TABLES` if it has any, and list it in BUILTIN. Formats marked
`embeddable` (NCCL, say) also claim their lines inside any other format's file. Without
code, a format is a TOML or JSON file that `loganalyze/formats/userformat.py` turns into the
same objects and installs into the process's registry (docs/formats.md).
"""

from __future__ import annotations

from types import MappingProxyType

import polars as pl

from loganalyze.formats import (bench, bench_json, bench_tables, client_log, nccl, nccl_tests, prometheus,
                                server_metrics, sglang, vllm)
from loganalyze.formats.scoring import kind_share, per_sample, samples_frame, scores
from loganalyze.formats.registry import Format, Registry, active, start, using  # noqa: F401 (formats.using)
from loganalyze.formats.spec import FileFormat, LogFormat
from loganalyze.formats.tables import CANONICAL

BUILTIN = Registry(
    formats={f.name: f for f in (sglang.FORMAT, vllm.FORMAT, bench.FORMAT, bench_json.FORMAT, nccl.FORMAT,
                                 nccl_tests.FORMAT, prometheus.FORMAT, server_metrics.FORMAT, client_log.FORMAT)},
    tables={**CANONICAL, **bench_tables.TABLES, **nccl.TABLES, **nccl_tests.TABLES, **prometheus.TABLES})
# The built-in formats by name, read-only (what format files can add is in `active()`).
FORMATS = MappingProxyType(BUILTIN.formats)

start(BUILTIN.copy())  # the process's registry, `active()`, until format files are installed into it

MIN_SCORE = 0.01
MIN_OWN = 0.02  # of the sample lines taken by a format's own kinds, for a file without its marks
MIN_SHARED = 0.3  # ... or access lines and traceback frames (every other line of a traceback), for a file of nothing else


def _scores(known: dict[str, Format], samples: list[pl.Series]) -> list[dict[str, float]]:
    """For each sample, every format's score: a structured format's sniff of the sample's text,
    the line formats' share of marked lines, all in one pass (loganalyze/formats/scoring.py `scores`)."""
    lines = [name for name, fmt in known.items() if isinstance(fmt, LogFormat)]
    out = []
    for sample, found in zip(samples, scores([known[name] for name in lines], samples)):
        found = dict(zip(lines, found))
        text = "\n".join(sample.to_list()) if len(found) < len(known) else ""
        out.append({name: found[name] if name in found else fmt.sniff(text) for name, fmt in known.items()})
    return out


# A TOML file's lines: `key = value` (a string, array, table, boolean or number), `[table]`, comments.
TOML_LINE = r'^\s*(?:#.*|\[[\w."-]+\]\s*|[A-Za-z_][\w.-]*\s*=\s*(?:"|\x27|\[|\{|true\b|false\b|[-+]?\d).*)$'
TOML_KEY = r"^\s*[A-Za-z_][\w.-]*\s*="


def settings_files(samples: list[pl.Series]) -> list[bool]:
    """For each sample, whether it is a TOML file of settings or labels (a case's
    `expected.toml` kept beside its logs, a `pyproject.toml`): every line an assignment, a
    table header or a comment. No server or client writes its output so; read as a log, a
    note in it that quotes a log line ("engine core exited unexpectedly") would become an
    event of the run."""
    blank = pl.col("text").str.strip_chars() == ""
    found = per_sample(samples_frame(samples), [
        (~blank).any().alias("some"), (blank | pl.col("text").str.contains(TOML_LINE)).all().alias("all"),
        (~blank & pl.col("text").str.contains(TOML_KEY)).any().alias("key")], len(samples))
    return [bool(one and one["some"] and one["all"] and one["key"]) for one in found]


def settings_file(sample: pl.Series) -> bool:
    """`settings_files` of one sample."""
    return settings_files([sample])[0]


def detect(sample: pl.Series) -> tuple[Format | None, dict[str, float]]:
    """`detect_many` of one sample."""
    return detect_many([sample])[0]


def detect_many(samples: list[pl.Series]) -> list[tuple[Format | None, dict[str, float]]]:
    """For each sample, the format of the process's registry that best recognises its lines,
    with every format's score; none for a settings file (`settings_files`). The samples of
    many files are scored in one pass (a small file's detection was a fixed cost per file)."""
    known = active().formats
    settings = settings_files(samples)
    found = iter(_scores(known, [s for s, skip in zip(samples, settings) if not skip]))
    return [(None, {}) if skip else _best(known, sample, next(found)) for sample, skip in zip(samples, settings)]


def _best(known: dict[str, Format], sample: pl.Series,
          found: dict[str, float]) -> tuple[Format | None, dict[str, float]]:
    """The format a sample's scores choose."""
    # An embeddable format (NCCL) is the file's own only when no other format recognises
    # it: with NCCL_DEBUG=INFO its lines can outnumber a server log's own.
    own = [n for n, s in found.items() if s >= MIN_SCORE and not getattr(known[n], "embeddable", False)]
    # A structured file's sniff checks its shape (a JSON result), a line format only words
    # in it (`sglang` in a bench JSONL): the structured format wins when it recognises the file.
    structured = [n for n in own if isinstance(known[n], FileFormat)]
    if structured or own:
        return known[max(structured or own, key=lambda n: found[n])], found
    best = max(found, key=lambda n: found[n], default=None)
    if best is not None and found[best] >= MIN_SCORE:
        return known[best], found
    mine, shared = by_kinds(sample)
    return mine or shared, found


def by_kinds(sample: pl.Series) -> tuple[Format | None, Format | None]:
    """For a file that carries none of the formats' marks (an excerpt of one section, a
    startup, a preemption warning, a traceback, pasted without the lines that name the
    server): the server format whose own line kinds take most of the sample, and the one
    whose shared lines (access lines, traceback frames) make up most of it, which counts
    only when no format's own kinds take enough."""
    known = active().formats
    found = {name: kind_share(fmt, sample) for name, fmt in known.items()
             if isinstance(fmt, LogFormat) and not fmt.embeddable}
    mine = max(found, key=lambda n: found[n][0], default=None)
    shared = max(found, key=lambda n: found[n][1], default=None)
    return (known[mine] if mine and found[mine][0] >= MIN_OWN else None,
            known[shared] if shared and found[shared][1] >= MIN_SHARED else None)
