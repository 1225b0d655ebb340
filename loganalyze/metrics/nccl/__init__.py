"""NCCL: which transport each communicator uses, how many channels, what nccl-tests measured,
how big the collectives are, and which collective hung.

Sources are the nccl/nccl-tests tables (loganalyze/formats/nccl/, loganalyze/formats/nccl_tests.py) plus the
PyTorch and SGLang watchdog events. Per-communicator facts come from init lines: transport
lines carry no comm pointer, so each is tied to the nearest `Init START` before it (2.18+)
or `Init COMPLETE` after it (older releases print no START) of the same host, pid and
cudaDev. The communicator key is `commId` (shared by all ranks), else the source and nranks.
The line forms are described in docs/formats-sources.md#nccl-debug-output.

`nccl` puts the family together from `comms` (communicators, links, settings, topology),
`perf` (nccl-tests) and `colls` (COLL traces, the watchdog).
"""

from __future__ import annotations

import polars as pl

from loganalyze.kinds import kind_in, kind_prefix, kinds
from loganalyze.metrics.base import Family
from loganalyze.metrics.nccl.colls import (
    ABORT, ERRORS, FLIGHT_RECORDER, SGLANG_TIMEOUT, coll_progress, coll_sizes, coll_summary, hang_context, ranks_behind,
    timeout_summary, watchdog,
)
from loganalyze.metrics.nccl.comms import (
    comm_keys, comm_summary, env_overrides, link_facts, topo_summary, transport_mix, transport_summary,
    version_summary,
)
from loganalyze.metrics.nccl.perf import DECODE_BYTES, KB, LARGE_BYTES, MB, lone_processes, perf_rows, perf_summary
from loganalyze.run import Run


PYTORCH = kind_prefix("pg_")

WARN, TRAIL = kinds("nccl_warn"), kinds("nccl_error_trail")


def nccl(run: Run) -> Family | None:
    """The NCCL family, or None when the run holds no NCCL, nccl-tests or watchdog data."""
    t = {name: run.table(name).collect() for name in ("nccl_comms", "nccl_links", "nccl_topo", "nccl_colls",
                                                      "nccl_perf")}
    events = run.table("events").filter(
        pl.col("kind").str.starts_with(PYTORCH) | kind_in(WARN + TRAIL + SGLANG_TIMEOUT + FLIGHT_RECORDER)
        | pl.col("message").str.contains("NCCL error")).collect()
    if all(df.height == 0 for df in t.values()) and events.height == 0:
        return None
    comms = comm_keys(t["nccl_comms"])
    links = link_facts(t["nccl_links"], t["nccl_comms"], comms)
    per_comm = comm_summary(links, t["nccl_links"], t["nccl_comms"], comms)
    env = env_overrides(t["nccl_comms"], t["nccl_perf"])
    perf = perf_rows(t["nccl_perf"])
    colls = t["nccl_colls"].filter(pl.col("what") == "call")
    timeouts, progress = watchdog(events)
    stats = run.table("stats").select("source", "line_no", "raw", "running", "queued", "gen_throughput")
    hangs = hang_context(events, stats)  # reads the stats table only when there is a timeout
    frames = {
        "links": links, "transport_mix": transport_mix(links), "comms": per_comm, "env": env, "busbw": perf,
        "coll_sizes": coll_sizes(colls), "coll_progress": coll_progress(colls),
        "coll_behind": ranks_behind(coll_progress(colls)), "timeouts": timeouts,
        "progress": progress, "hangs": hangs, "topo": t["nccl_topo"], "lone_processes": lone_processes(t["nccl_perf"]),
        "warns": events.filter(kind_in(WARN)),
        "errors": events.filter(kind_in(ERRORS)
                                | pl.col("message").str.contains("NCCL error")),
    }
    summary = {
        **version_summary(t["nccl_comms"]), **transport_summary(links, per_comm, env),
        **topo_summary(t["nccl_topo"]), **perf_summary(perf), **coll_summary(colls),
        **timeout_summary(timeouts, progress, hangs),
        "process_abort": events.filter(kind_in(ABORT) | pl.col("message").str.contains(
            "taking the entire process down")).height > 0,
    }
    return Family("nccl", summary, frames, notes=_notes(perf, links))


def _notes(perf: pl.DataFrame, links: pl.DataFrame) -> dict[str, str]:
    notes = {}
    if perf.height and perf["test"].null_count() == 0 and perf.height:
        notes["busbw"] = f"decode sizes {DECODE_BYTES[0] // KB} KB - {DECODE_BYTES[1] // MB} MB; large >= {LARGE_BYTES // MB} MB"
    if links.height and links["comm_key"].str.ends_with(":?").all():
        notes["comms"] = "no init lines: every transport line of a file counted as one communicator"
    return notes
