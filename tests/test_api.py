"""The Python API: `import loganalyze as la`, on real SGLang samples; docs/python-api.md runs as written."""

from __future__ import annotations

import doctest

import altair as alt
import polars as pl
import pytest

import loganalyze as la
from conftest import ROOT, sample


def test_public_names():
    assert set(la.__all__) == {"LoganalyzeError", "Run", "ingest", "load_formats", "open_run", "query"}
    assert all(getattr(la, name).__doc__ for name in la.__all__)


def test_run_metrics_and_diagnosis(ingest_one):
    _, run = ingest_one(sample("sglang", "02_"))
    assert isinstance(run.table("stats"), pl.LazyFrame)
    concurrency = run.metrics()["concurrency"].summary
    assert (concurrency["running_max"], concurrency["queue_max"], concurrency["token_usage_max"]) == (381, 1549, 0.96)
    assert [f.id for f in run.diagnose()] == ["kv-pressure"]


def test_baseline_by_name_or_run(store):
    for name, prefix in (("spec", "16_"), ("base", "08_")):
        la.ingest([sample("sglang", prefix)], run=name, store=store)
    run = la.open_run("spec", store)
    by_name = [f.to_dict() for f in run.diagnose(baseline="base")]
    assert by_name == [f.to_dict() for f in run.diagnose(baseline=la.open_run("base", store))]
    with pytest.raises(la.LoganalyzeError, match="no run 'nope'"):
        run.diagnose(baseline="nope")


def test_charts_are_altair_objects_that_jupyter_displays(ingest_one):
    _, run = ingest_one(sample("sglang", "16_"))
    charts = run.charts()
    assert list(charts) == ["Running requests, cap and queue", "KV cache usage", "Generation throughput", "Accept length"]
    for chart in charts.values():
        assert isinstance(chart, alt.TopLevelMixin)
        assert "text/html" in chart._repr_mimebundle_()  # what Jupyter shows with Altair's default renderer
    datasets = charts["Accept length"].to_dict()["datasets"].values()
    drawn = sorted(row["value"] for rows in datasets for row in rows if row.get("series") == "accept length")
    assert drawn == [1.67, 1.68, 1.72, 1.73]


@pytest.mark.parametrize("name, marker", [("r.html", "<!doctype html>"), ("r.md", "# ")])
def test_report_writes_html_or_markdown(ingest_one, tmp_path, name, marker):
    _, run = ingest_one(sample("sglang", "16_"))
    path = run.report(tmp_path / name)
    text = path.read_text(encoding="utf-8")
    assert path == tmp_path / name and text.startswith(marker) and "low-acceptance" in text


def test_docs_session_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False, encoding="utf-8",
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0, "docs/python-api.md output differs: rerun it, paste the output"
