"""Plain-text, Markdown and JSON rendering of command results for the terminal.

Every renderer's output passes through the secret redaction (loganalyze/redact.py);
`redact=False` (the commands' --no-redact) is the only way to turn it off. Text for the
terminal has its control sequences made visible (loganalyze/escape.py); Markdown is
redacted value by value before it is escaped (an escaped `api\\_key` would hide a
secret from the patterns, and redacting the finished text could eat a closing backtick).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from datetime import date, datetime

from loganalyze.escape import md_cell, md_code, md_fence, md_text, one_line, terminal
from loganalyze.ingestion import IngestResult
from loganalyze.redact import redact as redact_text
from loganalyze.redact import redact_frame, redact_obj


def redacted(render):
    """Make a text renderer redact what it returns (callers pass redact=False to keep
    secrets) and make its control characters visible, always."""

    @functools.wraps(render)
    def wrapper(*args, redact: bool = True, **kwargs) -> str:
        text = render(*args, **kwargs)
        return terminal(redact_text(text) if redact else text)

    return wrapper


def _default(o):
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    return str(o)


def print_json(data, redact: bool = True) -> None:
    """JSON on stdout, strings redacted before encoding (escaped quotes would hide a secret's edges)."""
    json.dump(redact_obj(data) if redact else data, sys.stdout, indent=2, default=_default)
    sys.stdout.write("\n")


@redacted
def render_ingest(result: IngestResult) -> str:
    out = [f"run {result.run} (store {result.store})"]
    for s in result.sources:
        if s.skipped:
            out.append(f"  {one_line(s.path)}: already in run {result.run} (same sha256), nothing added")
            continue
        if s.refused:
            why = f"looked like {s.looked_like}, but no line of it is one it reads" if s.looked_like else \
                "no known format"
            out.append(f"  {one_line(s.path)}: skipped: {why}")
            continue
        version = f" {s.version}" if s.version else ""
        out.append(f"  {one_line(s.path)}: {s.format}{version}, {s.lines:,} lines ({s.blank:,} blank)")
        for table, n in sorted(s.lines_by_table.items()):
            rows = s.tables.get(table, 0)
            rows_note = f", {rows:,} rows" if rows != n else ""
            out.append(f"    {table:<10} {n:>10,} lines{rows_note}")
        if s.long_lines:
            out.append(f"    ({s.long_lines:,} line{'s' if s.long_lines > 1 else ''} over 1 MiB kept truncated in "
                       "unparsed, with their length)")
    unknown = result.unknown()
    if unknown:
        out.append(f"skipped {len(unknown):,} file{'s' if len(unknown) > 1 else ''} no format knows: "
                   f"{', '.join(one_line(n) for n in short_names(unknown)[:SKIPPED_NAMED])}"
                   f"{f' and {len(unknown) - SKIPPED_NAMED:,} more' if len(unknown) > SKIPPED_NAMED else ''}"
                   " (give --as FORMAT to force one; --strict makes a skip an error)")
    return "\n".join(out)


SKIPPED_NAMED = 20  # skipped files named in the summary line (each has its own line above)


def short_names(paths: list[str]) -> list[str]:
    """Paths below the folder they share (`commands.txt`, `artifacts/inputs.json`)."""
    parents = [os.path.dirname(p) for p in paths]
    try:
        common = os.path.commonpath(parents) if all(parents) else ""
    except ValueError:  # absolute and relative paths mixed
        common = ""
    return [os.path.relpath(p, common) if common else p for p in paths]


@redacted
def render_runs(listing: dict) -> str:
    out = [f"store: {listing['store']}"]
    if not listing["runs"]:
        out.append("  (no runs yet: loganalyze ingest FILE)")
    for name, run in sorted(listing["runs"].items()):
        fmts = sorted({s["format"] for s in run["sources"]})
        lines = sum(s["lines"] for s in run["sources"])
        out.append(f"  {name:<20} {len(run['sources'])} source(s), {lines:,} lines, {', '.join(fmts)}, "
                   f"created {run['created']}")
    return "\n".join(out)


@redacted
def render_show(data: dict) -> str:
    out = [f"run {data['run']}", "sources:"]
    for s in data["sources"]:
        version = f" {s['version']}" if s.get("version") else ""
        out.append(f"  {one_line(s['path'])}  {s['format']}{version}  {s['lines']:,} lines  sha256 {s['sha256'][:12]}"
                   f"  year {s.get('year')} from {s.get('year_source')}")
    out.append("tables:")
    out += [f"  {t:<12} {n:>10,} rows" for t, n in sorted(data["tables"].items())]
    if data["config"]:
        out.append("config:")
        out += [f"  {one_line(k)} = {one_line(v)}" for k, v in sorted(data["config"].items())]
    return "\n".join(out)


@redacted
def render_metrics(run: str, families: dict) -> str:
    out = [f"run {run}"]
    for name, fam in families.items():
        out.append(f"{name}:")
        for key, value in fam.summary.items():
            note = f"  ({fam.notes[key]})" if key in fam.notes else ""
            out.append(f"  {key:<26} {value}{note}")
    if not families:
        out.append("  no metrics: the run has no stats lines")
    return "\n".join(out)


@redacted
def metrics_csv(families: dict) -> str:
    rows = ["family,metric,value"]
    for name, fam in families.items():
        for key, value in fam.summary.items():
            text = str(value).replace('"', '""')
            rows.append(f'{name},{key},"{text}"')
    return "\n".join(rows)


BADGE = {"critical": "CRITICAL", "warning": "WARNING", "info": "info"}


@redacted
def render_findings_text(run: str, findings: list) -> str:
    if not findings:
        return f"run {run}: no findings. Nothing in these logs points to a problem loganalyze knows."
    out = [f"run {run}: {findings[0].title}.", ""]
    for i, f in enumerate(findings, 1):
        out.append(f"{i}. [{BADGE[f.severity]}] {f.id}: {f.title}")
        out.append(f"   {f.verdict}")
        out.append(f"   impact: {f.impact_text}")
        for e in f.evidence:
            out.append(f"   > {one_line(e.path)}:{e.line}: {one_line(e.text[:200])}")
        out.append(f"   fix: {f.recommendation}")
        out.append("")
    return "\n".join(out).rstrip()


def render_findings_md(run: str, findings: list, redact: bool = True) -> str:
    """Findings as Markdown: every value from the logs redacted, then escaped (prose),
    in a code span (ids) or in a fenced block (evidence)."""
    clean = redact_obj if redact else (lambda x: x)
    out = [f"# loganalyze diagnosis: {md_text(clean(run))}", ""]
    if not findings:
        out.append("No findings.")
    for f in (clean(f.to_dict()) for f in findings):
        out += [f"## {BADGE.get(f['severity'], 'info')}: {md_text(f['title'])} ({md_code(f['id'])})", "",
                md_text(f["verdict"]), "", f"**Impact:** {md_text(f['impact_text'])}", "",
                f"**Recommendation:** {md_text(f['recommendation'])}", ""]
        if f["evidence"]:
            out += md_fence([f"{e['path']}:{e['line']}: {e['text'][:300]}" for e in f["evidence"]]) + [""]
    return "\n".join(out)


def _num(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _delta(value) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _pair(a, b, digits: int, unit: str) -> str:
    return "-" if a is None and b is None else f"{_num(a, digits)} / {_num(b, digits)} {unit}"


def _rate(low, high) -> str:
    if low is None:
        return "-"
    return f"{low:.0%}" if round(low * 100) == round(high * 100) else f"{low * 100:.0f}-{high:.0%}"


def compare_cells(frame) -> list[dict[str, str]]:
    """The comparison table's cells as text, one dict per run, in the column order shown."""
    rows = []
    for i, r in enumerate(frame.iter_rows(named=True)):
        peak = "-" if r["peak_tok_s"] is None else f"{r['peak_tok_s']:,.0f} (C={r['peak_c']})"
        length = _num(r["accept_length"], 2) + (f" of {r['max_accept_length']:g}" if r["max_accept_length"] else "")
        rows.append({
            "run": r["run"], "engine": r["engine"] or "-", "version": r["version"] or "-",
            "speculative": r["speculative"], "cap": _num(r["cap"], 0),
            "single-stream tok/s": _num(r["single_stream_tok_s"]),
            "Δ single": _delta(r["single_stream_delta"]) if i else "-",
            "peak tok/s": peak, "Δ peak": _delta(r["peak_delta"]) if i else "-",
            "accept len": length if r["accept_length"] is not None else "-",
            "accept rate": _rate(r["accept_rate_low"], r["accept_rate_high"]),
            "TTFT p50/p99 at peak": _pair(r["ttft_p50_ms"], r["ttft_p99_ms"], 0, "ms"),
            "TPOT p50/p99 at peak": _pair(r["tpot_p50_ms"], r["tpot_p99_ms"], 1, "ms"),
        })
    return rows


@redacted
def render_compare_text(frame) -> str:
    cells = compare_cells(frame)
    if not cells:
        return "no runs"
    widths = {k: max(len(k), *(len(c[k]) for c in cells)) for k in cells[0]}
    lines = ["  ".join(k.ljust(w) for k, w in widths.items()).rstrip()]
    lines += ["  ".join(c[k].ljust(w) for k, w in widths.items()).rstrip() for c in cells]
    return "\n".join(lines) + f"\n(Δ against {cells[0]['run']})"


def render_compare_md(frame, redact: bool = True) -> str:
    """The comparison as a Markdown table: cells redacted, then escaped (`|`, `<`, backticks, newlines)."""
    cells = compare_cells(redact_frame(frame) if redact else frame)
    if not cells:
        return "No runs."
    head = list(cells[0])
    out = ["| " + " | ".join(md_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(md_cell(c[k]) for k in head) + " |" for c in cells]
    return "\n".join(out)
