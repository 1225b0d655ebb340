"""nccl-error: NCCL failed (unhandled cuda / system error, init failure): the server cannot start or serve.

A failure during device init is the platform (driver, P2P between GPUs, container
shared memory); one across nodes is the network configuration (interface, IB/RoCE).
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.diagnosis.base import Context, Finding

KINDS = ("nccl_error",)
TEXT = r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|unhandled (?:cuda|system) error"


def check(ctx: Context) -> list[Finding]:
    events = ctx.events(
        pl.col("kind").is_in(list(KINDS)) | pl.col("message").str.contains(TEXT)
    )
    if events.height == 0:
        return []
    text = " ".join(events["message"].to_list())
    system = "system error" in text or "ncclSystemError" in text
    init = re.search(r"init_device|ncclCommInit|init_process_group|\binit\b", text) is not None
    cause = ("across nodes or sockets: the network setup (NCCL_SOCKET_IFNAME, IB/RoCE, firewall)" if system else
             "at device init: driver, P2P between GPUs or container shared memory" if init else
             "at run time")
    return [Finding(
        id="nccl-error", severity="critical", title="NCCL error",
        verdict=f"{events.height} NCCL error event(s) {cause}; this is a fault, not a performance problem.",
        impact=1.0, impact_text="the server cannot start or serve",
        recommendation=("Re-run with NCCL_DEBUG=INFO to see the failing call; check `nvidia-smi topo -m`, try "
                        "NCCL_P2P_DISABLE=1 (P2P broken) or NCCL_SHM_DISABLE=1 / a larger /dev/shm (containers), "
                        "and for several nodes set NCCL_SOCKET_IFNAME to the right interface."),
        evidence=ctx.evidence(events), metrics={"events": events.height},
    )]
