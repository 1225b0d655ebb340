"""The Python API's `Run`: a run with its analyses as methods.

    run = la.open_run("run42")
    run.table("stats").filter(pl.col("queued") > 0).collect()
    run.diagnose()[0].verdict

It lives at the top of the layers because it reaches every one of them (metrics,
diagnosis, the report); the `Run` it extends (loganalyze/run.py) is what metrics and
diagnosis read, and knows none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from loganalyze import run as tables
from loganalyze.diagnosis import diagnose
from loganalyze.diagnosis.base import Finding
from loganalyze.metrics import compute
from loganalyze.metrics.base import Family
from loganalyze.store import Store

if TYPE_CHECKING:
    import altair as alt


class Run(tables.Run):
    """One run of the store: its tables (LazyFrames: nothing is read until `.collect()`),
    metrics, findings, charts and report."""

    def _other(self, run: tables.Run | str | None) -> tables.Run | None:
        """A run given by name is looked up in this run's store."""
        return open_run(run, self.store) if isinstance(run, str) else run

    def metrics(self) -> dict[str, Family]:
        """Every metrics family with data in this run, by name (docs/metrics.md defines each number)."""
        return compute(self)

    def diagnose(self, baseline: tables.Run | str | None = None) -> list[Finding]:
        """Findings ranked by estimated impact; `baseline` (a Run, or a run name in the same store)
        is the run to compare against, e.g. the same server without speculative decoding."""
        return diagnose(self, self._other(baseline))

    def report(self, path: str | Path, baseline: tables.Run | str | None = None, redact: bool = True) -> Path:
        """Write the report to `path` (Markdown for a .md file, else self-contained HTML); returns the path."""
        from loganalyze.report import build_report  # here: Altair takes a second to import, paid by reports only

        path = Path(path)
        fmt = "md" if path.suffix.lower() == ".md" else "html"
        path.write_text(build_report([self], self._other(baseline), fmt=fmt, redact=redact), encoding="utf-8")
        return path

    def charts(self, baseline: tables.Run | str | None = None) -> dict[str, alt.Chart]:
        """The report's charts of this run as Altair charts, by title (a chart is shown by
        evaluating it in Jupyter); charts the run has no data for are left out."""
        from loganalyze.report import run_charts

        return run_charts(self, self._other(baseline))


def open_run(name: str, store: Store | str | Path | None = None) -> Run:
    """Open an existing run; raises LoganalyzeError naming the runs that exist otherwise."""
    found = tables.open_run(name, store)
    return Run(found.name, found.store)
