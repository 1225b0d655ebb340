"""nccl-tests-no-mpi: the nccl-tests output is several processes that each ran alone.

nccl-tests built without `MPI=1` (or started without mpirun) runs one independent 1-rank
job per process: each prints its own header, lists itself as `Rank 0`, and measures only
its own GPU (busbw 0.00: the bus-bandwidth factor of one rank). Their tables interleave in
one terminal. Such a table says nothing about the bandwidth between GPUs or nodes, which is
what the user meant to measure; the signals are in `loganalyze/metrics/nccl/`
(`lone_processes`) and docs/findings-nccl.md.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding


def _ranks_twice(rows: pl.DataFrame) -> str | None:
    twice = rows.filter(pl.col("why") == "rank_twice")
    if twice.height == 0:
        return None
    return (f"{twice.height} processes each list themselves as the same rank in one `# Using devices` header "
            "(one job lists every rank once, Rank 0 to N-1)")


def _interleaved(rows: pl.DataFrame) -> str | None:
    mixed = rows.filter(pl.col("why") == "interleaved")
    if mixed.height == 0:
        return None
    return (f"the sizes of one table restart {mixed.height} time(s) in the middle of the sweep: the rows of several "
            "processes interleave")


def _alone(rows: pl.DataFrame) -> str | None:
    alone = rows.filter(pl.col("why") == "nranks_1")
    if alone.height == 0:
        return None
    return f"{alone.height} row(s) show busbw 0.00 at a non-zero algbw, the bus-bandwidth factor of a 1-rank job"


def _summaries(rows: pl.DataFrame) -> str | None:
    again = rows.filter(pl.col("why") == "summary_twice")
    if again.height == 0:
        return None
    return (f"{again.height} `# Avg bus bandwidth` summaries follow one another with no table row between them "
            "(one job prints one summary per test; separate processes print one each)")


def find(ctx: Case) -> list[Finding]:
    fam = ctx.metrics.get("nccl")
    if not fam or fam.frames["lone_processes"].height == 0:
        return []
    rows = fam.frames["lone_processes"]
    reasons = [r for r in (_ranks_twice(rows), _interleaved(rows), _summaries(rows), _alone(rows)) if r]
    return [Finding(
        id="nccl-tests-no-mpi", severity="warning", title="nccl-tests ran as separate jobs, not one MPI job",
        verdict="These nccl-tests results come from several processes that each ran as a job of its own, not from "
                f"one multi-rank job: {'; '.join(reasons)}. Separate jobs exchange nothing, so the table does not "
                "measure the bandwidth between their GPUs or nodes.",
        impact=0.0, impact_text="the benchmark does not measure what it was run for",
        recommendation="Build nccl-tests with MPI support (`make MPI=1 MPI_HOME=<mpi>`) and start it with mpirun "
                       "or srun, one process per GPU (`-g 1`), or as one process with `-g <GPUs>` on a single node. "
                       "A correct header lists each rank once (`Rank 0` to `Rank N-1`).",
        confidence="high" if len(reasons) > 1 else "medium",
        evidence=ctx.evidence(rows.unique("why", keep="first", maintain_order=True)),
        metrics={"signals": sorted(rows["why"].unique().to_list()), "lines": rows.height},
    )]
