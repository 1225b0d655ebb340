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
  count is "some", at medium confidence;
* a transfer worker's exception for a room (`Unexpected transfer worker error for room R`,
  its traceback below): the exception's final line is the reason;
* vLLM's NIXL prefill side releasing `expired KV blocks for request R which were retrieved by
  0 decode worker(s) within 120 seconds` (or finding `Potentially invalid KV blocks` read
  for a request it no longer knows): the decode side never read the cache;
* a vLLM KV connector on the decode side, which pulls the cache: the Mooncake connectors'
  `Mooncake transfer failed for request R` and `Failed to transfer KV cache for request R:
  <reason>`, or NIXL's `Handshake with <engine> failed`, which names no request ("some").

The transfer engine's own errors (Mooncake's `Session::writeBody failed. Error: Bad address`,
`... ASIO exception ... Cannot assign requested address`) say why where the request lines
do not; alone (an excerpt of the engine's lines, a KV offload) they are a finding of their
own, of low confidence: how many requests they cost is not in the log.
"""

from __future__ import annotations

import json
import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.formats.sglang import KV_TRANSFER_FAILED
from loganalyze.kinds import kind_in, kinds

KINDS = kinds("kv_transfer_failed", "kv_transfer_timeout", "kv_transfer_error", "kv_transfer_expired",
              "kv_connector_failed")
BACKEND = kinds("transfer_error")
ABORT_RESPONSE = kinds("abort_response")
AFTER = 2  # lines after a transfer worker's error where its traceback starts

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
    (r"expired KV blocks|retrieved by 0 decode|may have expired",
     "the decode server never read the KV cache the prefill server kept for it, and it expired",
     "Read the decode server's log at that time: it failed, the router never sent it the request, or it could not "
     "reach the prefill side's NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_HOST / _PORT); "
     "VLLM_NIXL_ABORT_REQUEST_TIMEOUT sets how long the prefill side keeps the blocks."),
    (r"NIXL handshake", "the decode side could not complete the NIXL handshake with the prefill engine",
     "Check that the decode workers reach the prefill side's NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_HOST and "
     "_PORT: an address of the prefill host that the decode host can reach, not 127.0.0.1), that firewalls or network "
     "policies let that port through, and that both sides run the same vLLM and NIXL releases."),
    (r"Failed to connect to (?:target|segment)|Connect timeout to",
     "the transfer engine could not connect to the peer's transfer endpoint",
     "Check that each instance reaches the other's transfer address and ports (the peer in the message): the address "
     "the engine advertises (Mooncake's local_hostname; HCCL_IF_IP and the connector's use_ascend_direct on Ascend, "
     "whose transport needs a recent CANN), routes and firewalls between the hosts, and the same transfer backend on "
     "both sides."),
    (r"data transfer timeout|Transfer slice failed",
     "the transfer engine's transfers to the peer stalled or failed before the KV cache arrived",
     "Read the peer's log at the same time (a peer that stopped serving reads), and check the path between the two "
     "(RDMA devices, link errors, a congested network); the transfer engine's timeout only sets when it gives up."),
    (r"Bad address", "the transfer engine's TCP transport could not read or write the KV cache's memory (Bad address)",
     "Check the transfer backend's protocol and devices: a TCP transport cannot move GPU memory the engine was not "
     "built or registered for; RDMA with the IB devices (--disaggregation-ib-device) or the NIXL backend is the "
     "usual path."),
    (r"Cannot assign requested address", "the transfer engine could not open more connections (no local address or "
     "port left)", "Check the number of transfer connections and the host's ephemeral port range; an RDMA or NIXL "
     "backend does not open a TCP connection per transfer."),
    (r"does NOT support|not supported", "the prefill and decode servers use settings the transfer backend does not "
     "support together", "Give both sides settings the backend supports (the exception names the combination, such "
     "as different TP sizes)."),
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


def _worker_reasons(ctx: Case, rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` with a transfer worker's reason taken from the final error line of the
    traceback printed right below it, where its own line gives none."""
    worker = rows.filter(pl.col("kind") == "kv_transfer_error")
    tracebacks = ctx.events(kind_in(kinds("traceback")))
    if worker.height == 0 or tracebacks.height == 0:
        return rows
    final = tracebacks.select("source", tb_line="line_no", error=pl.col("message").str.extract(
        r"(?m)^([\w.]*(?:Error|Exception)\b.*)\z"))
    near = (worker.select("source", "line_no").join(final, on="source")
            .filter(pl.col("tb_line").is_between(pl.col("line_no") + 1, pl.col("line_no") + AFTER))
            .group_by("source", "line_no").agg(pl.col("error").drop_nulls().first()))
    return rows.join(near, on=["source", "line_no"], how="left")


def _abort_responses(ctx: Case) -> pl.DataFrame:
    """A client's abort responses whose message is a failed transfer's line, as the rows of
    that line (`kv_transfer_failed`, its fields read from the message)."""
    responses = ctx.events(kind_in(ABORT_RESPONSE))
    if responses.height == 0:
        return responses
    reason = responses["fields"].str.json_path_match("$.reason")
    inner = reason.str.extract_groups(KV_TRANSFER_FAILED)
    fields = inner.struct.unnest().select("side", "reason", "room").to_dicts()
    return (responses.with_columns(kind=pl.lit("kv_transfer_failed"), message=reason,
                                   fields=pl.Series([json.dumps(f) for f in fields]))
            .filter(inner.struct.field("side").is_not_null()))


def find(ctx: Case) -> list[Finding]:
    rows = pl.concat([ctx.events(kind_in(KINDS)), _abort_responses(ctx)], how="diagonal_relaxed")
    rows = rows.filter(~ctx.after_shutdown(rows))
    backend = ctx.events(kind_in(BACKEND))
    if rows.height == 0:
        return [_backend_only(ctx, backend)] if backend.height else []
    rows = _worker_reasons(ctx, rows)
    fields = rows["fields"].str.json_decode(pl.Struct({
        "side": pl.String, "reason": pl.String, "room": pl.String, "request_id": pl.String,
        "kv_request_id": pl.String, "backend": pl.String, "handshake": pl.String, "step": pl.String}))
    # The waiting timeout's line names no request and is printed once per rank: "some";
    # so does a failed NIXL handshake, which is per remote engine.
    connector = pl.col("kind") == "kv_connector_failed"
    named = (pl.col("kind") != "kv_transfer_timeout") & ~(connector & pl.col("handshake").is_not_null())
    # vLLM's NIXL prefill side says it in its own words, one line per request: the words
    # without the request id are the reason.
    expired = pl.col("kind") == "kv_transfer_expired"
    rows = rows.with_columns(fields.struct.unnest())
    if "error" in rows.columns:
        rows = rows.with_columns(reason=pl.coalesce("reason", "error"))
    rows = rows.with_columns(
        reason=pl.when(expired).then(pl.col("message").str.replace(r" for (?:unrecognized )?request \S+", ""))
        .when(connector).then(pl.coalesce(
            "reason", pl.when(pl.col("handshake").is_not_null()).then(pl.lit("NIXL handshake with the remote engine ")
                                                                     + pl.col("handshake")),
            pl.when(pl.col("step").is_not_null()).then(pl.lit("NIXL handshake failed")),
            pl.col("backend") + pl.lit(" transfer failed")))
        .otherwise("reason"),
        request=pl.when(named).then(pl.coalesce("room", "request_id", "kv_request_id",
                                                pl.col("line_no").cast(pl.String))),
        # vLLM's connectors pull the cache from the decode side, which logs their failures.
        side=pl.when(expired).then(pl.lit("Prefill")).when(connector).then(pl.lit("Decode")).when(named).then("side")
        .otherwise(pl.lit("Decode")))
    requests = rows["request"].drop_nulls().n_unique()
    reasons = rows.group_by("reason", maintain_order=True).agg(pl.col("request").drop_nulls().n_unique()).sort(
        "request", descending=True, maintain_order=True)
    causes = [(_cause(r), n, r) for r, n in zip(reasons["reason"], reasons["request"])]
    only_aborted = all(c[0] == ABORTED for c, _, _ in causes)
    (_, meaning, advice), _, reason = next(((c, n, r) for c, n, r in causes if c[0] != ABORTED), causes[0])
    if not _cause(reason)[0] and backend.height:
        # The request lines give no reason loganalyze knows; the transfer engine's own may.
        _, meaning, advice = _cause("\n".join(backend["message"].drop_nulls().to_list()))
    sides = ", ".join(sorted(set(rows["side"].drop_nulls())))
    said = "; ".join(f"{n or 'some'} request(s): {r or 'no reason given'}" for _, n, r in causes[:3])
    count = f"{requests}" if requests else "Some"
    # SGLang aborts a request whose transfer failed with HTTP 500 and says so on these lines;
    # the other kinds say nothing of what the server did with the request.
    logged = rows["kind"].is_in(["kv_transfer_failed", "kv_transfer_timeout"]).any()
    aborted = f"The server aborted them{' with HTTP 500' if requests else ''}: " if logged else ""
    meaning = meaning if logged else meaning[:1].upper() + meaning[1:]
    return [Finding(
        id="kv-transfer",
        severity="warning" if only_aborted else "critical",
        title=f"PD disaggregation: {count.lower()} request(s) failed their KV transfer",
        verdict=(f"{count} request(s) lost their KV cache between the prefill and the decode server "
                 f"({rows.height} line(s) from the {sides or 'server'} side; {said}). {aborted}{meaning}. "
                 "This is the disaggregation's transfer path, not the GPUs' memory or load."),
        impact=1.0 if not only_aborted else 0.5,
        impact_text="the requests that failed their transfer got no answer",
        recommendation=advice,
        confidence="medium" if only_aborted or not requests else "high",
        evidence=ctx.evidence(rows.unique("reason", keep="first", maintain_order=True).head(3)),
        metrics={"requests": requests, "lines": rows.height, "reason": reason},
    )]


def _backend_only(ctx: Case, backend: pl.DataFrame) -> Finding:
    """The transfer engine's errors with no request-level line: they say why, not how many."""
    text = "\n".join(backend["message"].drop_nulls().to_list())
    _, meaning, advice = _cause(text)
    first = backend["message"][0] or ""
    return Finding(
        id="kv-transfer", severity="warning",
        title=f"KV transfer engine: {backend.height} failed transfer(s)",
        verdict=(f"The KV transfer engine logged {backend.height} failed transfer(s) (`{first[:120]}`): {meaning}. "
                 "No request-level line (`transfer failed for request`) is in the log, so how many requests it cost "
                 "is not known."),
        impact=0.5, impact_text="the KV caches those transfers carried did not arrive",
        recommendation=advice, confidence="low",
        evidence=ctx.evidence(backend.head(3)), metrics={"lines": backend.height},
    )
