"""What a report shows, gathered once and redacted once, for the HTML and Markdown renderers.

The report reads metrics families and findings, never tables of raw lines; the one
exception is the `unparsed` table, summarised as masked templates (`unparsed_templates`).
Redaction happens here, before any escaping: an escaped quote (`&#x27;`) would hide a
secret from the patterns, so renderers only see strings that are already clean. The one
exception is chart data: frames stay as they are (millions of rows) and the few hundred
points drawn from them are redacted where the specs are built (html.chart_specs).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from loganalyze import metrics
from loganalyze.diagnosis import FINDERS, rank
from loganalyze.diagnosis.base import Case, Finding
from loganalyze.metrics.base import Family
from loganalyze.metrics.breakeven import break_even
from loganalyze.redact import redact_expr, redact_obj
from loganalyze.run import Run
from loganalyze.version import __version__

# Columns of metric frames that hold log text: the report never draws or prints them.
LOG_TEXT_COLUMNS = ("raw", "text", "message", "fields")
UNPARSED_TEMPLATES = 8
TEMPLATE_CHARS = 240
SOURCE_KEYS = ("path", "format", "version", "sha256", "lines", "blank", "unparsed", "size")


@dataclass
class RunData:
    """One run as the report sees it: metrics, findings (dicts), config and sources."""

    name: str
    families: dict[str, Family]
    findings: list[dict[str, Any]]
    config: dict[str, str]
    sources: list[dict[str, Any]]
    unparsed: pl.DataFrame
    is_baseline: bool = False

    def verdict(self) -> list[tuple[str, str]]:
        """One paragraph as (lead-in, text) pairs, lead-ins set in bold: the two largest findings
        with their numbers, the others by title, then the first fix."""
        if not self.findings:
            return [("No findings:", "nothing in these logs points to a problem loganalyze knows.")]
        out = [(f"{f['title']}.", f["verdict"]) for f in self.findings[:2]]
        rest = [f"{f['title']} ({f['severity']})" for f in self.findings[2:]]
        if rest:
            out.append(("Also found:", "; ".join(rest) + "."))
        return out + [("First fix:", self.findings[0]["recommendation"])]


@dataclass
class ReportData:
    """Every run of the report (a baseline that is not under study first) and how it was built."""

    runs: list[RunData]
    baseline: str | None
    inputs_digest: str
    redacted: bool = True

    @property
    def subjects(self) -> list[RunData]:
        """The runs the report is about (the baseline is only a point of comparison)."""
        return [r for r in self.runs if not r.is_baseline]

    @property
    def title(self) -> str:
        names = [r.name for r in self.subjects]
        against = f" (baseline {self.baseline})" if self.baseline and self.baseline not in names else ""
        return ("loganalyze report: " + ", ".join(names) if len(names) == 1 else
                "loganalyze comparison: " + " vs ".join(names)) + against


def builder_version() -> str:
    """loganalyze's version and the vendored Vega JS version, recorded in every report."""
    import vl_convert

    return f"{__version__}+vl-convert.{vl_convert.__version__}"


def inputs_digest(sources_by_run: dict[str, list[str]], baseline: str | None) -> str:
    """Content hash of what the report was built from: run names, input sha256s, builder."""
    h = hashlib.sha256(builder_version().encode())
    for run in sorted(sources_by_run):
        h.update(f"\n{run}{' (baseline)' if run == baseline else ''}:".encode())
        h.update(",".join(sorted(sources_by_run[run])).encode())
    return h.hexdigest()


def _identity(x: Any) -> Any:
    return x


def _clean_family(family: Family, redact: bool) -> Family:
    """The family without log-text columns, its summary and notes redacted.

    Frames are not redacted here: only the few hundred chart points drawn from them leave
    the report (html.chart_specs redacts those), and a 1 GB run's frames hold millions of rows.
    """
    clean = redact_obj if redact else _identity
    frames = {name: frame.drop([c for c in LOG_TEXT_COLUMNS if c in frame.columns])
              for name, frame in family.frames.items()}
    return replace(family, summary=clean(family.summary), frames=frames, notes=clean(family.notes))


def with_break_even(families: dict[str, Family], baseline: dict[str, Family] | None) -> dict[str, Family]:
    """The speculative family with a `break_even` frame (tau vs tau* by batch size) when step times exist.

    Break-even needs the steps family and, for a measured tau*, the baseline's step times,
    so it is not a family of its own; the charts read it from the speculative family.
    """
    spec, steps = families.get("speculative"), families.get("steps")
    if not spec or not steps or spec.summary.get("accept_len_mean") is None:
        return families
    table = break_even(steps, spec, (baseline or {}).get("steps"))
    return {**families, "speculative": replace(spec, frames={**spec.frames, "break_even": table})}


def findings(run: Run, families: dict[str, Family], baseline: Run | None,
             base_families: dict[str, Family] | None) -> list[Finding]:
    """What `diagnose(run, baseline)` returns, from metrics already computed: computing them
    again for the diagnosis would double the report's time (a minute on a 1 GB run)."""
    ctx = Case(run, families, baseline, base_families)
    return rank([finding for find in FINDERS for finding in find(ctx)])


def collect_run(run: Run, families: dict[str, Family], baseline: Run | None,
                base_families: dict[str, Family] | None, redact: bool, is_baseline: bool = False) -> RunData:
    """One run's report data; a baseline that is only a point of comparison gets no findings."""
    clean = redact_obj if redact else _identity
    found = [] if is_baseline else [clean(f.to_dict()) for f in findings(run, families, baseline, base_families)]
    sources = [clean({k: s.get(k) for k in SOURCE_KEYS}) for s in run.info["sources"]]
    families = with_break_even(families, base_families)
    return RunData(run.name, {k: _clean_family(f, redact) for k, f in families.items()}, found,
                   clean(run.config()), sources, unparsed_templates(run, redact), is_baseline)


def collect(runs: list[Run], baseline: Run | None, redact: bool = True) -> ReportData:
    """Every run's data, metrics computed once per run; a baseline not among `runs` comes first,
    as a column to compare against."""
    extra = [baseline] if baseline is not None and baseline.name not in {r.name for r in runs} else []
    families = {r.name: metrics.compute(r) for r in extra + list(runs)}
    base = families[baseline.name] if baseline is not None else None
    data = [collect_run(b, families[b.name], None, None, redact, is_baseline=True) for b in extra]
    for r in runs:
        against = baseline is not None and baseline.name != r.name
        data.append(collect_run(r, families[r.name], baseline if against else None, base if against else None,
                                redact))
    digest = inputs_digest({r.name: [s["sha256"] for s in r.info["sources"]] for r in extra + list(runs)},
                           baseline.name if baseline else None)
    return ReportData(data, baseline.name if baseline else None, digest, redact)


def template_expr(text: pl.Expr, redact: bool) -> pl.Expr:
    """A line's shape: secrets removed first (masking digits would leave parts of keys), then
    hex and digits masked, so that lines differing only in numbers count as one."""
    text = redact_expr(text) if redact else text
    return text.str.replace_all(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{8,}\b|[0-9]+", "#").str.slice(0, TEMPLATE_CHARS)


def unparsed_templates(run: Run, redact: bool, limit: int = UNPARSED_TEMPLATES) -> pl.DataFrame:
    """(template, count, source, line_no of the first line) of the most common unparsed templates."""
    return (run.table("unparsed")
            .select("source", "line_no", template=template_expr(pl.col("text"), redact))
            .group_by("template")
            .agg(count=pl.len(), source=pl.col("source").sort_by("source", "line_no").first(),
                 line_no=pl.col("line_no").sort_by("source", "line_no").first())
            .sort(["count", "source", "line_no"], descending=[True, False, False])
            .head(limit)
            .collect())
