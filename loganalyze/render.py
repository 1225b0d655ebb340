"""Plain-text and JSON rendering of command results for the terminal."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime

from loganalyze.ingest import IngestResult


def _default(o):
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    return str(o)


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, default=_default)
    sys.stdout.write("\n")


def render_ingest(result: IngestResult) -> str:
    out = [f"run {result.run} (store {result.store})"]
    for s in result.sources:
        if s.skipped:
            out.append(f"  {s.path}: already in run {result.run} (same sha256), nothing added")
            continue
        version = f" {s.version}" if s.version else ""
        out.append(f"  {s.path}: {s.format}{version}, {s.lines:,} lines ({s.blank:,} blank)")
        for table, n in sorted(s.lines_by_table.items()):
            rows = s.tables.get(table, 0)
            rows_note = f", {rows:,} rows" if rows != n else ""
            out.append(f"    {table:<10} {n:>10,} lines{rows_note}")
    return "\n".join(out)


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


def render_show(data: dict) -> str:
    out = [f"run {data['run']}", "sources:"]
    for s in data["sources"]:
        version = f" {s['version']}" if s.get("version") else ""
        out.append(f"  {s['path']}  {s['format']}{version}  {s['lines']:,} lines  sha256 {s['sha256'][:12]}"
                   f"  year {s.get('year')} from {s.get('year_source')}")
    out.append("tables:")
    out += [f"  {t:<12} {n:>10,} rows" for t, n in sorted(data["tables"].items())]
    if data["config"]:
        out.append("config:")
        out += [f"  {k} = {v}" for k, v in sorted(data["config"].items())]
    return "\n".join(out)
