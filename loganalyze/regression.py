"""The gates of `diagnose` (CI, deployments): did this run get slower than its baseline by
more than a limit, and does it have a finding of a given severity or worse (`failed`)?

Throughput is compared where both runs have it: the benchmark sweep's single-stream and
peak output tok/s (and TTFT/TPOT at peak for latency); without sweeps, the servers'
steady-state generation throughput. A regression is the relative loss against the
baseline: (base - run) / base for throughput, (run - base) / base for latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loganalyze.diagnosis import diagnose
from loganalyze.diagnosis.base import SEVERITIES, Finding
from loganalyze.errors import LoganalyzeError
from loganalyze.metrics import compute
from loganalyze.metrics.base import Family
from loganalyze.run import Run

HIGHER_IS_BETTER = {
    ("sweep", "single_stream_tok_s"): "single-stream output tok/s",
    ("sweep", "peak_tok_s"): "peak output tok/s",
    ("concurrency", "gen_throughput_mean"): "mean generation throughput (tok/s)",
}
LOWER_IS_BETTER = {
    ("sweep", "ttft_p50_ms_at_peak"): "TTFT p50 at peak (ms)",
    ("sweep", "tpot_p50_ms_at_peak"): "TPOT p50 at peak (ms)",
}


def parse_limit(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    text = text.strip()
    try:
        limit = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise LoganalyzeError(f"--max-regression {text!r}: give a percentage such as 5% or a fraction such as 0.05") \
            from None
    if limit < 0:
        raise LoganalyzeError(f"--max-regression {text!r} is negative")
    return limit


def _value(metrics: dict[str, Family], family: str, key: str) -> float | None:
    fam = metrics.get(family)
    value = fam.summary.get(key) if fam else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def regressions(run: dict[str, Family], base: dict[str, Family], limit: float) -> list[dict]:
    """Each compared metric whose loss against the baseline exceeds `limit`, worst first."""
    keys = [k for k in HIGHER_IS_BETTER if k[0] == "sweep"] if "sweep" in run and "sweep" in base \
        else [("concurrency", "gen_throughput_mean")]
    compared = [(k, HIGHER_IS_BETTER[k], +1) for k in keys]
    if "sweep" in run and "sweep" in base:
        compared += [(k, label, -1) for k, label in LOWER_IS_BETTER.items()]
    out = []
    for (family, key), label, sign in compared:
        now, before = _value(run, family, key), _value(base, family, key)
        if now is None or before is None:
            continue
        loss = sign * (before - now) / before
        if loss > limit:
            out.append({"metric": label, "run": now, "baseline": before, "regression": round(loss, 4)})
    return sorted(out, key=lambda r: -r["regression"])


def failed(findings: Sequence[Finding], fail_on: str | None, worse: list[dict]) -> bool:
    """Whether the gate fails (`diagnose` exits 1): a regression past its limit (`worse`, from
    `regressions`), or, with `fail_on` (warning, critical), a finding of that severity or worse."""
    if worse:
        return True
    return fail_on is not None and any(SEVERITIES.index(f.severity) <= SEVERITIES.index(fail_on) for f in findings)


@dataclass
class Gate:
    """What `diagnose` prints and exits with: the findings, the regressions past the limit
    (worst first) and whether the gate fails."""

    findings: list[Finding]
    regressions: list[dict]
    failed: bool


def gate(run: Run, baseline: Run | None = None, fail_on: str | None = None, max_regression: str | None = None) -> Gate:
    """Diagnose `run` (against `baseline`) and apply the gates: `fail_on` a severity, and
    `max_regression` ('5%' or '0.05', which needs a baseline) a loss against the baseline.
    Each run's metrics are computed once, for the findings and the regressions both."""
    if max_regression and baseline is None:
        raise LoganalyzeError("--max-regression needs --baseline RUN")
    limit = parse_limit(max_regression) if max_regression else None
    computed = compute(run)
    base_computed = compute(baseline) if baseline is not None else None
    findings = diagnose(run, baseline, computed, base_computed)
    worse = regressions(computed, base_computed, limit) if limit is not None else []
    return Gate(findings, worse, failed(findings, fail_on, worse))
