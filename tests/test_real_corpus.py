"""The real logs of fixtures/real/ and the recorded runs of fixtures/engines/ against their
expected.toml (see tests/accuracy.py).

Every file is ingested as a new user would, and its diagnosis judged. A file must come out
"right", or as its entry's `known` outcome says: a change that mends a known failure, or
breaks a right file, fails here until expected.toml says so. No file may be refused or
crash, and no healthy file may get a warning.
"""

from __future__ import annotations

import pytest

from accuracy import REAL, expected, judge, run_all

LABELS = expected()


@pytest.fixture(scope="module")
def outcomes():
    return {o.file: o for o in run_all()}


def test_every_real_file_is_labelled():
    files = {f"{p.parent.name}/{p.name}" for p in REAL.glob("*/*") if p.is_file() and p.name != "SOURCES.md"}
    real = {n for n in LABELS if not n.startswith("engines/")}
    assert files == real, f"unlabelled {sorted(files - real)}, gone {sorted(real - files)}"


@pytest.mark.parametrize("name", sorted(LABELS))
def test_real_file_gets_its_diagnosis(name, outcomes):
    got = outcomes[name]
    want = LABELS[name].get("known", "right").split(":")[0]
    assert got.outcome == want, f"{name}: {got.outcome} ({got.why}); expected.toml says {want}"


def test_no_false_alarm_and_every_line_accounted(outcomes):
    alarms = [o.file for o in outcomes.values() if o.outcome == "false alarm" and "known" not in LABELS[o.file]]
    assert not alarms
    assert all(o.lines >= o.unparsed for o in outcomes.values())


def test_judge_reads_labels_as_documented():
    label = {"expect": ["concurrency-cap"], "forbid": ["kv-pressure"], "max_other": "info"}
    assert judge(label, [("concurrency-cap", "critical")])[0] == "right"
    assert judge(label, [("low-acceptance", "warning"), ("concurrency-cap", "critical")])[0] == "partly"
    assert judge(label, [("kv-pressure", "warning")])[0] == "wrong"
    assert judge({"expect": [], "max_other": "info"}, [("slow-startup", "info")])[0] == "right"
    assert judge({"expect": [], "max_other": "info"}, [("hang", "warning")])[0] == "false alarm"
