"""kv-transfer: in PD disaggregation, requests whose KV cache did not cross between the
prefill and the decode server.

SGLang aborts such a request with HTTP 500 and logs one `... transfer failed for request
rank=N ... KVTransferError(bootstrap_room=R): <reason>` line per rank (docs/formats-sources.md,
"PD disaggregation: KV transfers that failed"). The failed requests are the distinct
bootstrap rooms; the reason is the transfer backend's own words, and it says where to look
(docs/findings.md, `kv-transfer`):

* a timeout in KVPoll.Bootstrapping: the two sides never met at the bootstrap server;
* a timeout in KVPoll.WaitingForInput: the prefill side never sent the cache;
* a peer "might be dead" / "is not alive": the other server, or its transfer session, is gone;
* "unknown reason from another rank": the error is on another rank, here or on the peer;
* "Aborted by AbortReq": the request was cancelled while its transfer was pending; alone,
  that may be a client giving up, so it is a warning of medium confidence;
* "Some requests fail to receive KV Cache transfer done signal after bootstrapping": the
  decode side's waiting timeout ran out; printed once per rank and naming no request, so the
  count is "some", at medium confidence.
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.diagnosis.base import Context, Finding
from loganalyze.kinds import kind_in, kinds

KINDS = kinds("kv_transfer_failed", "kv_transfer_timeout")

# (pattern of the reason, what it means, where to look), first match wins.
CAUSES = (
    (r"timed out .*Bootstrapping", "the prefill and decode servers never met at the bootstrap server in time",
     "Check that the decode server reaches the prefill server's --disaggregation-bootstrap-port (firewall, the "
     "address the router passes), and that both sides use the same transfer backend and IB devices "
     "(--disaggregation-ib-device); raise SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT only once they connect."),
    (r"timed out .*WaitingForInput|transfer done signal", "the decode server waited for a KV cache the prefill server never sent",
     "Read the prefill server's log at the same time: an overloaded or stuck prefill (a long queue, a crash) "
     "or a transfer that stalls (RDMA errors) shows there; SGLANG_DISAGGREGATION_WAITING_TIMEOUT sets the wait."),
    (r"might be dead|not alive|is dead", "the other server, or its transfer session, was gone",
     "Read the peer server's log for its crash or restart, and check the network between the two (the transfer "
     "engine's session address in the message)."),
    (r"another rank", "the transfer failed on another rank, of this server or of its peer",
     "Read the other ranks' and the peer server's lines at the same time for the first error (an RDMA or "
     "Mooncake transfer error, often an IB device or GID configuration); this rank only reports it."),
    (r"[Aa]borted by AbortReq", "the request was aborted while its KV transfer was pending",
     "Find who aborted it: a client or router timeout (the client gave up on a transfer that never completed) "
     "or a cancel; if transfers never complete, check the bootstrap connection and the transfer backend "
     "between the two servers."),
)
ABORTED = CAUSES[-1][0]


def _cause(reason: str | None) -> tuple[str, str, str]:
    """(pattern, meaning, advice) of a reason; unknown words keep the generic advice."""
    for cause in CAUSES:
        if reason and re.search(cause[0], reason):
            return cause
    return ("", "the transfer backend failed", "Read both servers' logs at that time for the transfer backend's error.")


def check(ctx: Context) -> list[Finding]:
    rows = ctx.events(kind_in(KINDS))
    rows = rows.filter(~ctx.after_shutdown(rows))
    if rows.height == 0:
        return []
    fields = rows["fields"].str.json_decode(pl.Struct({"side": pl.String, "reason": pl.String, "room": pl.String}))
    # The waiting timeout's line names no request and is printed once per rank: "some".
    named = pl.col("kind") != "kv_transfer_timeout"
    rows = rows.with_columns(fields.struct.unnest()).with_columns(
        request=pl.when(named).then(pl.coalesce("room", pl.col("line_no").cast(pl.String))),
        side=pl.when(named).then("side").otherwise(pl.lit("Decode")))
    requests = rows["request"].drop_nulls().n_unique()
    reasons = rows.group_by("reason", maintain_order=True).agg(pl.col("request").drop_nulls().n_unique()).sort(
        "request", descending=True, maintain_order=True)
    causes = [(_cause(r), n, r) for r, n in zip(reasons["reason"], reasons["request"])]
    only_aborted = all(c[0] == ABORTED for c, _, _ in causes)
    (_, meaning, advice), _, reason = next(((c, n, r) for c, n, r in causes if c[0] != ABORTED), causes[0])
    sides = ", ".join(sorted(set(rows["side"].drop_nulls())))
    said = "; ".join(f"{n or 'some'} request(s): {r or 'no reason given'}" for _, n, r in causes[:3])
    count = f"{requests}" if requests else "Some"
    return [Finding(
        id="kv-transfer",
        severity="warning" if only_aborted else "critical",
        title=f"PD disaggregation: {count.lower()} request(s) failed their KV transfer",
        verdict=(f"{count} request(s) lost their KV cache between the prefill and the decode server "
                 f"({rows.height} line(s) from the {sides or 'server'} side; {said}). The server aborted them"
                 f"{' with HTTP 500' if requests else ''}: {meaning}. This is the disaggregation's transfer path, not the GPUs' memory or load."),
        impact=1.0 if not only_aborted else 0.5,
        impact_text="the requests that failed their transfer got no answer",
        recommendation=advice,
        confidence="medium" if only_aborted or not requests else "high",
        evidence=ctx.evidence(rows.unique("reason", keep="first", maintain_order=True).head(3)),
        metrics={"requests": requests, "lines": rows.height, "reason": reason},
    )]
