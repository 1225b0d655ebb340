"""Diagnosis: every finder over a run's metrics, findings ranked by estimated impact."""

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
    nccl_one_nic,
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
from loganalyze.diagnosis.base import SEVERITIES, Case, Finding
from loganalyze.run import Run

FINDERS = (
    concurrency_cap.find,
    low_acceptance.find,
    spec_depth.find,
    kv_pressure.find,
    kv_transfer.find,
    oom.find,
    hang.find,
    stall.find,
    nccl_error.find,
    crash.find,
    slow_decode.find,
    cuda_graph.find,
    nccl_gdr.find,
    nccl_transport.find,
    nccl_one_nic.find,
    nccl_bandwidth.find,
    nccl_tests_mpi.find,
    nccl_loopback.find,
    nccl_lone_rank.find,
    spec_break_even.find,
    spec_net_negative.find,
    spec_idle.find,
    bench_failures.find,
    bench_validity.find,
    client_bottleneck.find,
    slow_startup.find,
    prefill_bound.find,
    client_limited.find,
    drain.find,
)


def rank(findings: list[Finding]) -> list[Finding]:
    """Root causes before their consequences, then largest estimated impact; info notes last."""
    return sorted(findings, key=lambda f: (f.severity == "info", f.consequence, -f.impact,
                                           SEVERITIES.index(f.severity)))


def diagnose(run: Run, baseline: Run | None = None, computed: dict | None = None,
             baseline_computed: dict | None = None) -> list[Finding]:
    """Every finder's findings, ranked; pass metrics already computed to avoid computing them twice."""
    computed = computed if computed is not None else metrics.compute(run)
    if baseline is not None and baseline_computed is None:
        baseline_computed = metrics.compute(baseline)
    ctx = Case(run, computed, baseline, baseline_computed)
    found: list[Finding] = []
    for find in FINDERS:
        found += find(ctx)
    return rank(bench_evidence.qualify(run, found))


def worst(findings: list[Finding]) -> str | None:
    for severity in SEVERITIES:
        if any(f.severity == severity for f in findings):
            return severity
    return None
