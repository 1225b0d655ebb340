"""hang: a collective that never finished (PyTorch ProcessGroupNCCL watchdog) or a forward
pass that never returned (SGLang's own watchdog).

The finding names the collective, its size, how long it ran, how far each rank got, and
what the server was doing just before (the last stats line). The rules
(docs/formats-sources.md#pytorch-watchdog-timeouts): a timeout in one of the first
collectives is a start-up hang (a peer never joined, broken P2P: ACS/IOMMU); the same
SeqNum on every rank that reported means all are blocked in one collective (a rank
outside the set died or desynced); the rank with the lowest `last completed` is the
straggler. Sources in docs/findings-nccl.md.

A stack dump (faulthandler, py-spy: stacks.py) names where the stuck process waits, with
a watchdog line or on its own: a dump is printed because a process is stuck.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis import stacks
from loganalyze.diagnosis.base import TRACEBACKS, Case, Finding
from loganalyze.kinds import kind_in, kinds
from loganalyze.metrics.nccl.colls import SGLANG_TIMEOUT

DUMP_FAILED = kinds("dump_failed")
# Gloo's transport giving up on a collective's send or receive (PyTorch's CPU process groups:
# SGLang's DP attention syncs over one, sglang/308 of hold-out 18, a two-hour deadlock).
GLOO_TIMEOUT = r"gloo/transport/\S+\] Timed out waiting (\d+)ms for (?:recv|send) operation to complete"
STARTUP_SEQ = 5  # SeqNum <= 5: init-time collective (docs/formats-sources.md#pytorch-watchdog-timeouts)
BYTES_PER_ELEMENT = 2  # bf16/fp16 activations: an assumption, stated in the verdict

RECOMMEND_STARTUP = (
    "A hang in the first collectives is almost always the platform: check P2P with `nvidia-smi topo -m` and CUDA's "
    "p2pBandwidthLatencyTest, disable ACS on the PCIe switches and set the IOMMU to passthrough (iommu=pt); re-run "
    "once with NCCL_P2P_DISABLE=1: if the hang goes away, P2P is broken on this box (local-inference-lab/rtx6kpro#15). "
)
RECOMMEND_MIDRUN = (
    "Find the rank that did not reach this collective: one that crashed, ran out of memory or is stuck in Python "
    "shows up in its own log before the timeout. "
)
RECOMMEND_CODE = (
    "The stuck process is running its own code (the frames in the verdict), not waiting for a peer: look for a known "
    "bug of that code path with these settings, or turn off the feature it belongs to, and dump it again to see "
    "whether it moves. "
)
RECOMMEND_DUMP_ALL = (
    "Dump every rank and process the same way (`py-spy dump --pid PID` on each): the one that is not waiting is "
    "where the hang is. "
)
RECOMMEND_PYSPY = (
    " The watchdog tried to dump the stuck scheduler's stack and could not: install py-spy in the server's "
    "environment (`pip install py-spy`) so that the next timeout shows where it is stuck."
)
RECOMMEND_HEARTBEAT = (
    "The watchdog thread itself was blocked: a NCCL or CUDA call did not return (a collective that never "
    "completes, or a CUDA API call another thread holds, often with the GIL). Dump the stuck ranks' stacks "
    "(`py-spy dump --native --pid PID`) before the monitor ends them; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC sets how "
    "long it waits, and raising it only delays the abort of a real hang. "
)
RECOMMEND_TOOLS = (
    "Re-run with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,COLL shows the last opCount per rank), and "
    "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 with TORCH_NCCL_DUMP_ON_TIMEOUT=1 to get a flight-recorder dump per rank "
    "(analyse with `torchfrtrace`)."
)


def human_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def _size(numel: int | None, numel_out: int | None) -> str:
    if numel is None:
        return ""
    out = f" -> {numel_out:,}" if numel_out and numel_out != numel else ""
    return f", {numel:,}{out} elements = {human_bytes(numel * BYTES_PER_ELEMENT)} at 2 B/element"


def torch_verdict(s: dict, progress: pl.DataFrame) -> str:
    seq, ranks = s["timeout_seq"], s.get("timeout_ranks") or []
    pg = f" in PG {s['timeout_pg']}" if s.get("timeout_pg") else ""
    ran, limit = s["timeout_ran_for_ms"], s["timeout_ms"]
    # A line cut after its OpType says which collective, not for how long (sglang/226 of hold-out 11).
    how_long = (f" ran for {ran / 1000:,.0f} s before the {limit / 1000:,.0f} s watchdog timeout" if ran and limit
                else " timed out (the line is cut before its times)")
    text = (f"{s['timeout_op']} (SeqNum {seq}{pg}{_size(s['timeout_numel'], s['timeout_numel_out'])}){how_long} "
            f"on rank(s) {', '.join(ranks) or '?'}.")
    if seq is not None and seq <= STARTUP_SEQ:
        text += (f" It is collective #{seq} of its process group: a start-up hang (a peer never joined or P2P is "
                 "broken), not slow steady-state communication.")
    else:
        text += f" A mid-run hang after {seq:,} collectives." if seq else ""
    if progress.height:
        text += f" Last enqueued work {s['last_enqueued']}, last completed {s['last_completed']}."
    if s.get("straggler_ranks"):
        text += f" Rank(s) {', '.join(s['straggler_ranks'])} completed the least: the straggler."
    elif len(s.get("reported_ranks") or []) > 1 and len(s.get("timeout_seqs") or []) == 1:
        text += (f" All {len(s['reported_ranks'])} ranks that reported ({', '.join(s['reported_ranks'])}) are blocked "
                 "in the same collective: a collective-level hang (a rank outside this set died or desynced), not "
                 "one slow GPU.")
    if s.get("process_abort"):
        text += " The watchdog then took the process down (terminate / c10::DistBackendError)."
    return text


def heartbeat_verdict(s: dict) -> str:
    """PyTorch's heartbeat monitor: the watchdog thread made no progress, so the ranks are stuck
    in a NCCL or CUDA call, whatever collective they were in."""
    if not s.get("heartbeat_timeouts"):
        return ""
    ranks, pgs = s.get("heartbeat_ranks") or [], s.get("heartbeat_pgs") or []
    how_long = f" for {s['watchdog_stuck_s']:,} s" if s.get("watchdog_stuck_s") else ""
    queued = f", {s['queued_works']:,} collective(s) still queued" if s.get("queued_works") else ""
    return (f" PyTorch's heartbeat monitor found the ProcessGroupNCCL watchdog thread stuck{how_long}"
            + (f" in PG {', '.join(pgs)}" if pgs else "") + (f" on rank(s) {', '.join(ranks)}" if ranks else "")
            + f"{queued}: a NCCL or CUDA call never returned, and the monitor terminates the process after "
            "dumping debug info.")


def context_text(hangs: pl.DataFrame) -> str:
    row = hangs.filter(pl.col("stats_raw").is_not_null()).head(1)
    if row.height == 0:
        return ""
    r = row.row(0, named=True)
    return f" The last stats line before it (line {r['stats_line']}): {r['stats_raw'].strip()[:200]}"


def sglang_verdict(hangs: pl.DataFrame, stuck: stacks.Stuck | None) -> str:
    sg = hangs.filter(kind_in(SGLANG_TIMEOUT))
    if sg.height == 0:
        return ""
    timeout = sg["fields"].str.json_decode().struct.field("timeout_s").drop_nulls()
    ranks = sorted(sg["rank"].drop_nulls().unique().to_list())
    secs = f"{timeout[0]:g} s" if timeout.len() else "its limit"
    where = f" {stuck.verdict()[0].upper()}{stuck.verdict()[1:]}" if stuck else " It is typically stuck in a collective."
    return (f" SGLang's watchdog fired {sg.height} time(s) (a forward batch did not finish in {secs})"
            + (f" on {', '.join(ranks)}" if ranks else "") + ": the scheduler is stuck." + where)


def dump_finding(ctx: Case, stuck: stacks.Stuck) -> Finding:
    """A stack dump with no watchdog line: the process was stuck when someone or something dumped it."""
    return Finding(
        id="hang", severity="warning", title=f"Stack dump of a stuck process ({stuck.tool})",
        verdict=(f"A stack dump was printed, by a watchdog or a user, which is done when a process is stuck; "
                 f"{stuck.verdict()} No watchdog timeout or exception is in the log, so how long it was stuck is "
                 "not known."),
        impact=1.0, impact_text="the stuck process serves nothing while it waits",
        recommendation=(RECOMMEND_MIDRUN if stuck.in_collective() else RECOMMEND_CODE if not stuck.waits else
                        RECOMMEND_DUMP_ALL) + RECOMMEND_TOOLS,
        confidence="medium", evidence=ctx.evidence(stuck.rows), metrics={"stuck_in": stuck.where(),
                                                                          "waits": stuck.waits},
    )


def laggard_finding(ctx: Case, behind: pl.DataFrame) -> Finding:
    r = behind.row(0, named=True)
    return Finding(
        id="hang", severity="info", title="A rank is behind in the COLL trace",
        verdict=(f"{r['host']} pid {r['pid']} last enqueued opCount {r['last_op_count']:#x} ({r['last_op_count']}) while "
                 "other ranks of the same communicator size got further. COLL lines are logged at enqueue, so "
                 "if the job hung, this rank stopped issuing first."),
        impact=0.0, impact_text="none by itself; localises a hang if there was one",
        recommendation="If the job hung, look at this rank's log and stack (py-spy dump) first. " + RECOMMEND_TOOLS,
        confidence="low", evidence=ctx.evidence(behind), metrics={"behind": behind.height},
    )


def gloo_finding(ctx: Case, rows: pl.DataFrame) -> Finding:
    """A collective over Gloo that timed out: every rank waits for one that never sent."""
    waited = rows["message"].str.extract(GLOO_TIMEOUT, 1).cast(pl.Int64, strict=False).max() or 0
    return Finding(
        id="hang", severity="critical", title="Gloo collective timed out",
        verdict=(f"{rows.height} Gloo send/receive(s) gave up after waiting {waited / 60000:g} min: a collective over the "
                 "CPU process group never completed, because a peer rank never reached it (stuck, crashed, or on "
                 "another code path: a deadlock). The traceback is its consequence."),
        impact=1.0, impact_text="the job stops: every rank waits on the collective",
        recommendation=RECOMMEND_MIDRUN + RECOMMEND_DUMP_ALL,
        evidence=ctx.evidence(rows.select("source", "line_no", "raw")), confidence="medium",
        metrics={"gloo_timeouts": rows.height, "waited_ms": waited},
    )


def find(ctx: Case) -> list[Finding]:
    fam = ctx.metrics.get("nccl")
    stuck = stacks.stuck(stacks.dumps(ctx))
    hangs = fam.frames["hangs"] if fam else None
    if hangs is None or hangs.height == 0:
        if stuck:
            return [dump_finding(ctx, stuck)]
        if (gloo := ctx.events(kind_in(TRACEBACKS) & pl.col("message").str.contains(GLOO_TIMEOUT))).height:
            return [gloo_finding(ctx, gloo)]
        behind = fam.frames.get("coll_behind") if fam else None
        return [laggard_finding(ctx, behind)] if behind is not None and behind.height else []
    s, f = fam.summary, fam.frames
    verdict = torch_verdict(s, f["progress"]) if s.get("watchdog_timeouts") else ""
    verdict = (verdict + heartbeat_verdict(s) + sglang_verdict(hangs, stuck) + context_text(hangs)).strip()
    errors = f["errors"]
    if errors.height:
        verdict += f" NCCL errors in the log: {errors['message'][0].strip()[:160]}"
    startup = s.get("timeout_seq") is not None and s["timeout_seq"] <= STARTUP_SEQ
    dumped = stuck.rows.select("source", "line_no", "raw") if stuck else hangs.clear().select("source", "line_no", "raw")
    evidence = pl.concat([hangs.select("source", "line_no", "raw"), f["progress"].select("source", "line_no", "raw"),
                          errors.select("source", "line_no", "raw"), dumped]).unique(["source", "line_no"], keep="first").sort("line_no", "source")
    return [Finding(
        id="hang", severity="critical",
        title=(f"{s['timeout_op']} collective hung" if s.get("watchdog_timeouts")
               else "ProcessGroupNCCL watchdog stuck" if s.get("heartbeat_timeouts") else "Scheduler watchdog timeout"),
        verdict=verdict, impact=1.0, impact_text="the server (or job) stops: every request in flight fails",
        recommendation=(RECOMMEND_CODE if stuck and not stuck.in_collective() and not s.get("watchdog_timeouts")
                        and not s.get("heartbeat_timeouts")
                        else RECOMMEND_STARTUP if startup
                        else RECOMMEND_HEARTBEAT + RECOMMEND_MIDRUN if s.get("heartbeat_timeouts")
                        else RECOMMEND_MIDRUN + RECOMMEND_STARTUP) + RECOMMEND_TOOLS
                       + (RECOMMEND_PYSPY if not stuck and ctx.events(kind_in(DUMP_FAILED)).height else ""),
        evidence=ctx.evidence(evidence),
        metrics={k: s.get(k) for k in ("watchdog_timeouts", "sglang_watchdog_timeouts", "timeout_op", "timeout_seq",
                                       "timeout_numel", "timeout_ran_for_ms", "timeout_ms", "timeout_ranks",
                                       "last_enqueued", "last_completed", "straggler_ranks", "heartbeat_timeouts",
                                       "watchdog_stuck_s")},
    )]
