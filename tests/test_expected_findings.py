"""Every labelled shared sample gets the finding its SOURCES.md row gives (fixtures/expected_findings.csv)."""

from __future__ import annotations

import csv

import pytest

import loganalyze as la
from conftest import FIXTURES, sample
from loganalyze.diagnosis import SEVERITIES, diagnose


def rows() -> list[dict]:
    with open(FIXTURES / "expected_findings.csv") as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]


@pytest.mark.parametrize("row", rows(), ids=lambda r: r["sample"])
def test_sample_gets_its_diagnosis(row, store):
    engine, prefix = row["sample"].split("/")
    la.ingest([sample(engine, prefix)], run="s", store=store)
    found = diagnose(la.open_run("s", store))
    ids = {f.id for f in found}
    expect, forbid = set(row["expect"].split()), set(row["forbid"].split())
    assert expect <= ids, f"missing {expect - ids}; got {sorted(ids)}"
    assert not forbid & ids, f"unexpected {forbid & ids}"
    ceiling = SEVERITIES.index(row["max_other"])
    too_severe = [(f.id, f.severity) for f in found if f.id not in expect and SEVERITIES.index(f.severity) < ceiling]
    assert not too_severe, f"more severe than {row['max_other']}: {too_severe}"
