"""nccl-lone-rank: a communicator of one rank where the log suggests more were meant.

`Channel 02/32 :    0` (2.7+) or `Ring 00 :    0` lists the ranks of a ring: one number
means the communicator holds one rank, and NCCL has no peer to talk to. A one-GPU job is
like that and healthy, so one process alone gives no finding; only a reason in the log to
expect more does: lines from several hosts, each alone in its communicator, mean
the processes each built their own communicator instead of joining one (a launcher
without the rank/world-size environment, nccl-tests not built with MPI=1, a rendezvous
address each node resolved to itself). docs/findings-nccl.md, "One-rank communicators";
sample nccl/79 (thread: no communication between two nodes).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding


def find(ctx: Case) -> list[Finding]:
    tables = ctx.run.tables()
    if "nccl_links" not in tables:
        return []
    rings = ctx.run.table("nccl_links").filter(pl.col("what") == "ring").sort("source", "line_no").collect()
    if rings.height == 0 or rings["ring_len"].max() != 1:
        return []
    inits = ctx.run.table("nccl_comms").filter(pl.col("nranks") > 1).collect() if "nccl_comms" in tables \
        else pl.DataFrame()
    if inits.height:  # another communicator of the run has peers: a one-rank one beside it is by design
        return []
    hosts = rings["host"].drop_nulls().unique().sort().to_list()
    if len(hosts) < 2:  # one process alone is a one-GPU job as often as not: a healthy log stays quiet (nccl/293)
        return []
    channels = rings["nchannels"].drop_nulls().max()
    return [Finding(
        id="nccl-lone-rank",
        severity="warning",
        title="NCCL communicator of one rank",
        verdict=(f"Every ring NCCL printed holds a single rank ({rings.height} ring line(s)"
                 + (f" over {channels} channels" if channels else "") + "): the communicator has 1 rank, so NCCL "
                 f"moves no data between GPUs. Processes on {len(hosts)} hosts ({', '.join(hosts)}) are each alone "
                 "in their own communicator: they did not join one."),
        impact=0.5,
        impact_text="the GPUs meant to work together run alone",
        recommendation=("Make every process join one communicator: launch with the world size and rank set for "
                        "each process (mpirun -np N, torchrun --nnodes/--nproc-per-node, or the framework's "
                        "MASTER_ADDR/WORLD_SIZE/RANK), build nccl-tests with MPI=1, and check that `Init COMPLETE` "
                        "then reports `nranks N` on every process."),
        confidence="medium",
        evidence=ctx.evidence(rings.head(2)),
        metrics={"ring_lines": rings.height, "channels": channels, "hosts": len(hosts)},
    )]
