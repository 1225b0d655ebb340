"""`loganalyze report`: the file people attach to tickets, HTML (charts) or Markdown.

    from loganalyze.report import build_report
    html = build_report([run], baseline=None)

model.py gathers metrics, findings, config and sources (redacted there, once);
tables.py and charts.py turn them into rows and Vega-Lite specs; html.py and
markdown.py lay them out. The report never reads raw log lines, apart from the
masked templates of unparsed lines and the evidence findings already carry.
"""

from __future__ import annotations

import altair as alt

from loganalyze import metrics
from loganalyze.report.charts import PER_RUN
from loganalyze.report.html import render_html
from loganalyze.report.markdown import render_markdown
from loganalyze.report.model import collect, with_break_even
from loganalyze.run import Run

FORMATS = ("html", "md")


def command_line(runs: list[Run], baseline: Run | None, fmt: str) -> str:
    """The command that rebuilds this report, printed in it (no output path: the reader picks one)."""
    base = f" --baseline {baseline.name}" if baseline is not None else ""
    ext = "html" if fmt == "html" else "md"
    return f"loganalyze report {' '.join(r.name for r in runs)}{base} --format {fmt} -o report.{ext}"


def build_report(runs: list[Run], baseline: Run | None = None, *, fmt: str = "html", redact: bool = True) -> str:
    """One self-contained report of `runs` (several: a comparison), findings diagnosed against `baseline`."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}")
    data = collect(runs, baseline, redact=redact)
    command = command_line(runs, baseline, fmt)
    return render_html(data, command) if fmt == "html" else render_markdown(data, command)


def run_charts(run: Run, baseline: Run | None = None) -> dict[str, alt.Chart]:
    """The report's charts of one run as Altair charts, by title; charts the run has no
    data for are left out (`Run.charts` of the Python API)."""
    families = with_break_even(metrics.compute(run), metrics.compute(baseline) if baseline else None)
    drawn = {k.title: k.draw(families[k.family]) for k in PER_RUN if k.family in families}
    return {title: chart for title, chart in drawn.items() if chart is not None}
