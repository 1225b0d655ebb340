"""How right loganalyze is on real logs (`make accuracy`): the excerpts of public threads in
fixtures/real/ and the runs of real engines recorded here in fixtures/engines/.

Every file of fixtures/real/ has an entry in fixtures/real/expected.toml, and every case
folder of fixtures/engines/<engine>/ its own expected.toml: the findings a correct
diagnosis must give (`expect`), those it must not (`forbid`), the highest severity of any
other finding (`max_other`), and rows of tables that must be typed (`tables`, at least).
Each file (each case folder, whole, as `ingest FOLDER` reads it) is ingested on its own,
as a new user would, and judged:

- refused: ingest would not read it (unknown format, an error);
- right: every expected finding is there, the first finding is one of them, nothing
  forbidden, nothing else above `max_other`; for a healthy file, nothing above `max_other`;
- partly: some expected finding is there, but not all, or not first, or with company;
- wrong: none of the expected findings (or, for a healthy file, a false alarm);
- error: ingest or diagnose raised something other than a one-line error (a bug).

`known` in an entry records an outcome that is not right yet and why; tests/test_real_corpus.py
holds every file to its recorded outcome, so a change that mends a file must say so there.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import loganalyze as la
from loganalyze.diagnosis import SEVERITIES, diagnose
from loganalyze.errors import LoganalyzeError

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
ENGINES = REAL.parent / "engines"
OUTCOMES = ("right", "partly", "wrong", "false alarm", "refused", "error")


@dataclass
class Outcome:
    file: str
    outcome: str
    findings: list[tuple[str, str]] = field(default_factory=list)
    lines: int = 0
    unparsed: int = 0
    tables: dict[str, int] = field(default_factory=dict)
    why: str = ""
    healthy: bool = False  # labelled quiet: no finding expected

    @property
    def area(self) -> str:
        return "/".join(self.file.split("/")[:2]) if self.file.startswith("engines/") else self.file.split("/")[0]


def expected() -> dict[str, dict]:
    """Labels by case name: `area/file` for fixtures/real, `engines/<engine>/<case>` for a recorded run."""
    labels = tomllib.loads((REAL / "expected.toml").read_text(encoding="utf-8"))
    for case in sorted(ENGINES.glob("*/*/expected.toml")):
        labels[f"engines/{case.parent.parent.name}/{case.parent.name}"] = tomllib.loads(case.read_text(encoding="utf-8"))
    return labels


def inputs(name: str) -> Path:
    return REAL.parent / name if name.startswith("engines/") else REAL / name


def judge(label: dict, found: list[tuple[str, str]]) -> tuple[str, str]:
    """(outcome, why) of the findings `found` (id, severity; ranked) against `label`."""
    expect, forbid = set(label.get("expect", [])), set(label.get("forbid", []))
    ceiling = SEVERITIES.index(label.get("max_other", "info"))
    ids = [i for i, _ in found]
    extra = [f"{i} ({s})" for i, s in found if i not in expect and SEVERITIES.index(s) < ceiling]
    banned = sorted(forbid & set(ids))
    if not expect:
        bad = extra + [b for b in banned if b not in " ".join(extra)]
        return ("false alarm", "gave " + ", ".join(bad)) if bad else ("right", "")
    hit = expect & set(ids)
    if not hit:
        return "wrong", f"none of {sorted(expect)}; gave {ids or 'nothing'}"
    problems = []
    if hit != expect:
        problems.append(f"missing {sorted(expect - hit)}")
    if ids[0] not in expect:
        problems.append(f"first is {ids[0]}")
    if banned:
        problems.append(f"forbidden {banned}")
    if extra:
        problems.append(f"also {', '.join(extra)}")
    return ("partly", "; ".join(problems)) if problems else ("right", "")


def evaluate(name: str, label: dict, store: Path) -> Outcome:
    """Ingest one real file into its own run of `store` and judge its diagnosis."""
    path = inputs(name)
    run = f"r{abs(hash(name))}"
    try:
        result = la.ingest([str(path)], run=run, store=store)
        found = [(f.id, f.severity) for f in diagnose(la.open_run(run, store))]
    except LoganalyzeError as e:
        return Outcome(name, "refused", why=str(e).splitlines()[0], healthy=not label.get("expect"))
    except Exception as e:  # a bug: counted, so that one file cannot hide the others' outcomes
        return Outcome(name, "error", why=f"{type(e).__name__}: {e}"[:200], healthy=not label.get("expect"))
    outcome, why = judge(label, found)
    # What a table typed: its lines, and each record that shared a line with the one
    # before it (loganalyze/formats/glued.py).
    tables: dict[str, int] = {}
    for source in result.sources:
        for t, n in source.lines_by_table.items():
            tables[t] = tables.get(t, 0) + n + source.glued.get(t, 0)
    short = {t: (n, tables.get(t, 0)) for t, n in label.get("tables", {}).items() if tables.get(t, 0) < n}
    if short and outcome == "right":
        outcome, why = "partly", "typed too few: " + ", ".join(f"{t} {got} of {n}" for t, (n, got) in short.items())
    lines = sum(s.lines - s.blank for s in result.sources)
    return Outcome(name, outcome, found, lines, sum(s.unparsed for s in result.sources), tables, why,
                   healthy=not label.get("expect"))


def _evaluate_alone(job: tuple[str, dict, str]) -> Outcome:
    name, label, tmp = job
    return evaluate(name, label, Path(tmp) / name.replace("/", "_"))


def run_all(names: list[str] | None = None) -> list[Outcome]:
    """Every file judged in a store of its own (a new user's first ingest), on as many
    processes as there are cores: the files are independent, and the corpus is the
    longest part of the test suite. Spawned, not forked: polars' threads do not survive
    a fork."""
    labels = expected()
    names = names or sorted(labels)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(n, labels[n], tmp) for n in names]
        workers = min(os.cpu_count() or 1, 4, len(jobs))
        if workers < 2:
            return [_evaluate_alone(j) for j in jobs]
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(_evaluate_alone, jobs, chunksize=4))


def summary(outcomes: list[Outcome]) -> list[dict]:
    """The accuracy table: one row per area (sglang, vllm, nccl, bench) and one for all."""
    rows = []
    for area in sorted({o.area for o in outcomes}) + ["all"]:
        mine = [o for o in outcomes if area in ("all", o.area)]
        lines = sum(o.lines for o in mine)
        typed = lines - sum(o.unparsed for o in mine)
        count = {k: sum(o.outcome == k for o in mine) for k in OUTCOMES}
        healthy = sum(o.healthy for o in mine)
        rows.append({"area": area, "files": len(mine), "healthy": healthy, **count,
                     "typed %": round(100 * typed / lines, 1) if lines else 0.0,
                     "right %": round(100 * count["right"] / len(mine), 1) if mine else 0.0})
    return rows


def render(rows: list[dict]) -> str:
    cols = ["area", "files", "healthy", "refused", "error", "typed %", "right", "partly", "wrong", "false alarm",
            "right %"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    outcomes = run_all([a for a in argv if not a.startswith("-")] or None)
    if "--json" in argv:
        print(json.dumps([asdict(o) for o in outcomes], indent=1))
        return 0
    if "-v" in argv:
        for o in outcomes:
            if o.outcome != "right":
                print(f"{o.outcome:11} {o.file}: {o.why}")
    print(render(summary(outcomes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
