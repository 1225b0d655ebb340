"""nccl-loopback: NCCL's sockets bound to the loopback interface (127.0.0.1, ::1).

`NET/Socket : Using [0]lo:127.0.0.1<0>` or `Bootstrap : Using lo:127.0.0.1<0>` (most often
NCCL_SOCKET_IFNAME=lo) mean NCCL listens on an address only its own host can reach. That
is fine for one node and fatal for several: no other node can connect, so the job hangs
or times out in init. The finding is a warning only where the log shows other hosts
(NCCL lines from two host names, or inter-node NET connections); otherwise it is a note
of low confidence, since a single-node job on `lo` is healthy (docs/findings-nccl.md,
"Sockets on loopback"; sample nccl/57).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding

# `Using [0]lo:127.0.0.1<0>` (NET/Socket), `lo:127.0.0.1<0>` (Bootstrap, its value after
# `Using`), `Using interface lo:127.0.0.1<0>` (2.3-2.4).
LOOPBACK = r"(?:Using (?:interface )?)?(?:\[\d+\])?([\w.-]+):(127\.\d+\.\d+\.\d+|::1)(?:<\d+>)?"


def _hosts(ctx: Case) -> int:
    """How many hosts the run's NCCL lines name; inter-node NET connections mean two at least."""
    names = pl.concat([ctx.run.table(t).select("host") for t in ("nccl_comms", "nccl_links")
                       if t in ctx.run.tables()]).collect()["host"].drop_nulls().n_unique()
    fam = ctx.metrics.get("nccl")
    links = fam.frames["links"] if fam else pl.DataFrame()
    inter = links.height > 0 and links.filter(pl.col("transport").str.starts_with("NET")
                                              & ~pl.col("intra").fill_null(False)).height > 0
    return max(names, 2 if inter else 0)


def find(ctx: Case) -> list[Finding]:
    if "nccl_comms" not in ctx.run.tables():
        return []
    rows = ctx.run.table("nccl_comms").filter(
        pl.col("what").is_in(["net_socket", "bootstrap"]) & pl.col("value").str.contains(LOOPBACK)
    ).sort("source", "line_no").collect()
    if rows.height == 0:
        return []
    iface, address = rows["value"].str.extract_groups(LOOPBACK).struct.unnest().row(0)
    env = ctx.run.table("nccl_comms").filter(pl.col("env_var") == "NCCL_SOCKET_IFNAME").head(1).collect()
    hosts = _hosts(ctx)
    many = hosts >= 2
    why = f" (NCCL_SOCKET_IFNAME={env['env_value'][0]})" if env.height else ""
    return [Finding(
        id="nccl-loopback",
        severity="warning" if many else "info",
        title="NCCL sockets bound to loopback",
        verdict=(f"NCCL uses interface {iface}, address {address}{why}: an address only this host can reach. "
                 + (f"The log shows {hosts} hosts: the others cannot connect to it, so the job hangs or times "
                    "out in init, or runs without them." if many else
                    "Fine for a job on one node; a job across nodes cannot connect on it. The log does not show "
                    "other hosts, so whether this job spans nodes is unknown.")),
        impact=0.5 if many else 0.0,
        impact_text="other nodes cannot reach this rank" if many else "none on one node",
        recommendation=("For a multi-node job set NCCL_SOCKET_IFNAME to the interface that carries the address "
                        "the nodes reach each other on (e.g. eth0, bond0, or an =exact name), and check that "
                        "`Bootstrap : Using` and `NET/Socket : Using` name it; if that address sits on lo "
                        "(BGP unnumbered), give it its own interface, since NCCL takes the first address of lo."),
        confidence="high" if many else "low",
        evidence=ctx.evidence(pl.concat([env.select("source", "line_no", "raw"),
                                         rows.head(2).select("source", "line_no", "raw")])),
        metrics={"interface": iface, "address": address, "hosts": hosts},
    )]
