"""The fleet view: the servers of the runs ingested lately, each diagnosed, worst first.

A server is a source's `cluster` and `host` partition values (loganalyze/query.py: the
`ingest --label cluster=a --label host=b` labels stored with the source in the catalog;
without a host label, the file name up to its first dot). Each server is diagnosed on
its own sources only.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from loganalyze.runs import select_runs
from loganalyze.diagnosis import diagnose
from loganalyze.diagnosis.base import SEVERITIES
from loganalyze.errors import LoganalyzeError
from loganalyze.query import partition_values, restrict
from loganalyze.run import Run
from loganalyze.store import Store

UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`30m`, `12h`, `1d`, `2w` before now, or a date / date and time (UTC)."""
    if m := re.fullmatch(r"(\d+)([mhdw])", text.strip()):
        try:
            return (now or datetime.now(timezone.utc)) - timedelta(**{UNITS[m[2]]: int(m[1])})
        except OverflowError:  # before year 1: every run is newer
            return datetime.min.replace(tzinfo=timezone.utc)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise LoganalyzeError(f"bad --since {text!r}: use 30m, 12h, 1d, 2w or a date such as 2026-11-29") from None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def servers(store: Store, since: datetime | None) -> dict[tuple[str, str, str], set[str]]:
    """(run, cluster, host) -> the ids of its sources, for the runs created since `since`."""
    found: dict[tuple[str, str, str], set[str]] = {}
    for name, run in select_runs(store.runs(), since).items():
        for src in run["sources"]:
            parts = partition_values(run, src)
            key = (name, parts["cluster"] or "", parts["host"])
            found.setdefault(key, set()).add(src["id"])
    return found


def summary(store: Store, since: datetime | None, where: dict[str, str] | None = None) -> dict:
    """Every server with findings (worst severity, then most findings, first) and how many were looked at."""
    store = restrict(store, where)
    found, rows = servers(store, since), []
    for (run, cluster, host), ids in sorted(found.items()):
        only = store.filtered(lambda _, src, ids=ids: src["id"] in ids)
        findings = diagnose(Run(run, only))
        if findings:
            worst = min(findings, key=lambda f: SEVERITIES.index(f.severity)).severity
            rows.append({"cluster": cluster, "host": host, "run": run, "sources": len(ids), "worst": worst,
                         "findings": [f.id for f in findings]})
    rows.sort(key=lambda r: (SEVERITIES.index(r["worst"]), -len(r["findings"])))
    return {"since": since.isoformat() if since else None, "servers_checked": len(found),
            "servers": rows}


def render_summary(data: dict) -> str:
    head = f"{len(data['servers'])} of {data['servers_checked']} servers with findings"
    head += f" (runs since {data['since']})" if data["since"] else ""
    lines = [head] + [f"{r['worst']:<9} {r['cluster'] or '-':<12} {r['host']:<20} {r['run']:<10} "
                      f"{', '.join(r['findings'])}" for r in data["servers"]]
    return "\n".join(lines)
