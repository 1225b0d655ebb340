"""The report as Markdown for GitHub and Jira: the same content as the HTML, charts left out.

Log text lands in code spans or fenced blocks, where Markdown renders it literally, and
other text has Markdown's syntax characters escaped; `|` and newlines are escaped in
table cells (code spans included) so a log line cannot break a table (loganalyze/escape.py).
"""

from __future__ import annotations

from loganalyze.escape import md_code, md_fence, md_text
from loganalyze.report.html import BADGE
from loganalyze.report.model import ReportData
from loganalyze.report.tables import MISSING, Table, all_metrics, config_table, key_metrics, sources_table, unparsed_table

prose = md_text  # text from findings and logs, Markdown's syntax characters escaped
code = md_code  # an inline code span no backtick inside can end
fenced = md_fence  # a fenced block no line inside can end


def table(t: Table, code_cols: tuple[int, ...] = ()) -> list[str]:
    """A pipe table; rows that differ between runs are marked ≠ (bold would vanish in code cells)."""
    out = ["| " + " | ".join(prose(c) or " " for c in t.columns) + " |", "|" + "---|" * len(t.columns)]
    for row, differs in zip(t.rows, t.differs or [False] * len(t.rows)):
        cells = [code(c, cell=True) if i in code_cols and c not in ("", MISSING)
                 else prose(c) for i, c in enumerate(row)]
        cells[0] = ("≠ " if differs else "") + cells[0]
        out.append("| " + " | ".join(cells) + " |")
    return out + ([f"\n_{prose(t.note)}_"] if t.note else []) + [""]


def finding(f: dict) -> list[str]:
    out = [f"#### {BADGE.get(f['severity'], f['severity'].upper())}: {prose(f['title'])} ({code(f['id'])})", "",
           prose(f["verdict"]), "", f"**Impact:** {prose(f['impact_text'])}", ""]
    if f["evidence"]:
        out += fenced([f"{ev['path']}:{ev['line']}: {ev['text']}" for ev in f["evidence"]]) + [""]
    return out + [f"**Recommendation:** {prose(f['recommendation'])}", ""]


def numbers(data: ReportData) -> list[str]:
    return ["## Key numbers", "", *table(key_metrics(data)), "<details><summary>All metrics</summary>", "",
            *table(all_metrics(data)), "</details>", ""]


def render_markdown(data: ReportData, command: str) -> str:
    """Verdict, (comparing: key numbers), findings, (single run: key numbers), settings, sources."""
    several = len(data.subjects) > 1  # several runs under study: their numbers side by side come first
    out = [f"# {prose(data.title)}", "", f"<!-- loganalyze-inputs: {data.inputs_digest} -->", ""]
    for run in data.subjects:
        text = " ".join(f"**{prose(lead)}** {prose(rest)}" for lead, rest in run.verdict())
        out += [(f"**{prose(run.name)}:** " if len(data.subjects) > 1 else "") + text, ""]
    out += numbers(data) if several else []
    out += ["## Findings, largest impact first", ""]
    for run in data.subjects:
        if len(data.subjects) > 1:
            out += [f"### {prose(run.name)}", ""]
        out += [line for f in run.findings for line in finding(f)] or ["No findings.", ""]
    out += [] if several else numbers(data)
    out += ["## Configuration", "", *table(config_table(data), code_cols=tuple(range(1, len(data.runs) + 1))),
            "## Sources", "", *table(sources_table(data), code_cols=(1, 5))]
    for run in data.runs:
        t = unparsed_table(run)
        if t:
            out += [f"### {prose(t.title)}", "", *table(t, code_cols=(1, 2))]
    out += [f"_Rebuild: {code(command)} (charts are in the HTML report)._", ""]
    return "\n".join(out)
