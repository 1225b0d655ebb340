"""A run as the analyses see it: its tables as LazyFrames, its config as a dict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from loganalyze.store import Store

if TYPE_CHECKING:  # these modules import Run: at run time they are imported where used
    import altair as alt

    from loganalyze.diagnosis.base import Finding
    from loganalyze.metrics.base import Family


@dataclass
class Run:
    """One run of the store. Tables are LazyFrames: nothing is read until `.collect()`.

        run = la.open_run("run42")
        run.table("stats").filter(pl.col("queued") > 0).collect()
        run.diagnose()[0].verdict
    """

    name: str
    store: Store

    @property
    def info(self) -> dict:
        """The run's catalog entry: creation time and its sources (path, format, version, lines...)."""
        return self.store.run(self.name)

    def table(self, name: str) -> pl.LazyFrame:
        """One table (stats, config, events, requests, unparsed, spec, or a format's own) as a LazyFrame."""
        return self.store.scan(self.name, name)

    def config(self) -> dict[str, str]:
        """Last value seen for each config key (later lines override earlier ones)."""
        rows = self.table("config").sort("line_no").collect()
        return {k: v for k, v in zip(rows["key"], rows["value"])}

    def tables(self) -> dict[str, int]:
        """Rows per table, from the catalog (no table is read)."""
        return self.store.table_counts(self.name)

    def _other(self, run: Run | str | None) -> Run | None:
        """A run given by name is looked up in this run's store."""
        return open_run(run, self.store) if isinstance(run, str) else run

    def metrics(self) -> dict[str, Family]:
        """Every metrics family with data in this run, by name (docs/metrics.md defines each number)."""
        from loganalyze.metrics import compute

        return compute(self)

    def diagnose(self, baseline: Run | str | None = None) -> list[Finding]:
        """Findings ranked by estimated impact; `baseline` (a Run, or a run name in the same store)
        is the run to compare against, e.g. the same server without speculative decoding."""
        from loganalyze.diagnosis import diagnose

        return diagnose(self, self._other(baseline))

    def report(self, path: str | Path, baseline: Run | str | None = None, redact: bool = True) -> Path:
        """Write the report to `path` (Markdown for a .md file, else self-contained HTML); returns the path."""
        from loganalyze.report import build_report

        path = Path(path)
        fmt = "md" if path.suffix.lower() == ".md" else "html"
        path.write_text(build_report([self], self._other(baseline), fmt=fmt, redact=redact), encoding="utf-8")
        return path

    def charts(self, baseline: Run | str | None = None) -> dict[str, alt.Chart]:
        """The report's charts of this run as Altair charts, by title (a chart is shown by
        evaluating it in Jupyter); charts the run has no data for are left out."""
        from loganalyze import metrics
        from loganalyze.report.charts import PER_RUN
        from loganalyze.report.model import with_break_even

        base = self._other(baseline)
        families = with_break_even(self.metrics(), metrics.compute(base) if base else None)
        drawn = {k.title: k.draw(families[k.family]) for k in PER_RUN if k.family in families}
        return {title: chart for title, chart in drawn.items() if chart is not None}


def open_run(name: str, store: Store | str | Path | None = None) -> Run:
    """Open an existing run; raises LoganalyzeError naming the runs that exist otherwise."""
    store = store if isinstance(store, Store) else Store(store)
    store.run(name)
    return Run(name, store)
