"""Diagnosis: every check over a run's metrics, findings ranked by estimated impact."""

from __future__ import annotations

from loganalyze import metrics
from loganalyze.diagnosis import (
    bench_evidence,
    bench_failures,
    bench_validity,
    client_bottleneck,
    client_limited,
    concurrency_cap,
    crash,
    cuda_graph,
    drain,
    hang,
    kv_pressure,
    kv_transfer,
    low_acceptance,
    nccl_bandwidth,
    nccl_error,
    nccl_gdr,
    nccl_lone_rank,
    nccl_loopback,
    nccl_tests_mpi,
    nccl_transport,
    oom,
    prefill_bound,
    slow_decode,
    slow_startup,
    spec_break_even,
    spec_depth,
    spec_idle,
    spec_net_negative,
    stall,
)
from loganalyze.diagnosis.base import SEVERITIES, Context, Finding
from loganalyze.run import Run

CHECKS = (
    concurrency_cap.check,
    low_acceptance.check,
    spec_depth.check,
    kv_pressure.check,
    kv_transfer.check,
    oom.check,
    hang.check,
    stall.check,
    nccl_error.check,
    crash.check,
    slow_decode.check,
    cuda_graph.check,
    nccl_gdr.check,
    nccl_transport.check,
    nccl_bandwidth.check,
    nccl_tests_mpi.check,
    nccl_loopback.check,
    nccl_lone_rank.check,
    spec_break_even.check,
    spec_net_negative.check,
    spec_idle.check,
    bench_failures.check,
    bench_validity.check,
    client_bottleneck.check,
    slow_startup.check,
    prefill_bound.check,
    client_limited.check,
    drain.check,
)


def rank(findings: list[Finding]) -> list[Finding]:
    """Root causes before their consequences, then largest estimated impact; info notes last."""
    return sorted(findings, key=lambda f: (f.severity == "info", f.consequence, -f.impact,
                                           SEVERITIES.index(f.severity)))


def diagnose(run: Run, baseline: Run | None = None, computed: dict | None = None,
             baseline_computed: dict | None = None) -> list[Finding]:
    """Every check's findings, ranked; pass metrics already computed to avoid computing them twice."""
    computed = computed if computed is not None else metrics.compute(run)
    if baseline is not None and baseline_computed is None:
        baseline_computed = metrics.compute(baseline)
    ctx = Context(run, computed, baseline, baseline_computed)
    found: list[Finding] = []
    for check in CHECKS:
        found += check(ctx)
    return rank(bench_evidence.qualify(run, found))


def worst(findings: list[Finding]) -> str | None:
    for severity in SEVERITIES:
        if any(f.severity == severity for f in findings):
            return severity
    return None
