"""Benchmark results that cannot be taken at face value: one module, five findings.

* bench-failures (failed-requests): requests that failed (vLLM's `Failed requests`; for sglang, which
  prints no count, and vLLM before it did, prompts sent - `Successful requests`, the prompts
  sent being the client's args or its progress bar's total). Throughput and latency then
  describe only the survivors (sample sglang/09: 1648 of 3000 succeeded).
  Where the server's access lines show error statuses, the verdict names them and what each
  says (a 400 is a request the server refused, most often longer than max_model_len).
* bench-failures (low-concurrency): the concurrency the client achieved (mean requests in flight) far
  below what was requested: the sweep step measured a lighter load than its label says
  (too few prompts to reach steady state, a request rate that throttles, a slow client).
* bench-failures (retokenized-mismatch): sglang re-tokenizes the streamed text; far fewer tokens than
  the server counted means the output does not round-trip (garbage after ignore_eos, special
  tokens, a tokenizer mismatch), so tokens/s may count tokens no user would see (sample
  sglang/11: 231736 retokenized of 512000).
* bench-failures (all-failed): the client's own warning that every request failed, where no
  result counts them: the run measured nothing.
* bench-failures (client-error-answers): where no result counts failures, the error answers in
  the client's own request lines (httpx's, bench/81): what the server answered, not how many
  requests were lost, since the OpenAI SDK retries.
* bench-overload: every prompt sent at once, or a request rate well above what the server
  completes: TTFT is time in the queue and throughput the saturated capacity (samples
  vllm/32: 1000 prompts at rate inf, TTFT 9.6 s against TPOT 78 ms; vllm/34: 65 requests/s
  offered, 4.17 served). Where the result prints no rate, only a queue in the latencies
  (mean TTFT >= 1 s and >= 10 TPOTs) says so, with low confidence: a 158 ms TTFT at 1000
  prompts (bench/04) is no flood. vLLM's `Peak concurrent requests` at >= 90 % of the
  completed requests says every prompt was in flight at once (bench/02). That reading holds only for the clients whose default
  rate is inf (vLLM's and SGLang's), never for GenAI-Perf, AIPerf or GuideLLM. A handful of
  requests at a finite rate (bench/59: 5 at 4/s, each 34 s long) is done when its slowest
  request is: its throughput is one request's latency, so fewer than MIN_BURST need a queue
  in the latencies as well.
"""

from __future__ import annotations

import json

import polars as pl

from loganalyze.diagnosis.base import TRACEBACKS, Case, Finding
from loganalyze.diagnosis.bench_evidence import bench_evidence
from loganalyze.diagnosis.bench_validity import stream_fault
from loganalyze.diagnosis.client_bottleneck import client_short
from loganalyze.kinds import kind_in, kinds

USAGE, ALL_FAILED = kinds("client_usage"), kinds("client_all_failed")
CLIENT_HTTP, RETRIES = kinds("client_http"), kinds("client_retry")

FAILED_WARNING = 0.01
FAILED_CRITICAL = 0.10
LOW_ACHIEVED = 0.7  # achieved / requested concurrency
# 1 - retokenized / generated: healthy runs differ by up to 37 % (re-tokenizing decoded
# text merges tokens: bench/46 11 %, sglang/69 12 %, sglang/235 of hold-out 12 23 %, a normal
# TPU run of random prompts; bench/288 of hold-out 14 37 %, random prompts); broken output by
# half or more (bench/96 52 %, sglang/11 55 %, sglang/47 75 %).
RETOKENIZED_GAP = 0.45
RETOKENIZED_MIN = 100  # tokens: a few tokens of a tiny run (2 output tokens per prompt) are rounding, not garbage
# Tokens per request: a few are special or template tokens that re-tokenizing the text
# counts differently (bench/46: 6 per request); garbage after EOS or another tokenizer
# differs by tens (sglang/11, sglang/47).
RETOKENIZED_PER_REQUEST = 8
OVERLOAD = 1.5  # offered request rate / completed request rate
OUTRUN = 1.1  # ... a smaller excess, where the latencies show the queue it grew
MIN_BURST = 100  # prompts sent at once before a burst is more queue than service
UNSTREAMED = 0.01  # TTFT within 1 % of E2E: the answer came in one piece
ALL_IN_FLIGHT = 0.9  # peak concurrent requests / completed: every prompt was in flight at once
QUEUED_TTFT_MS = 1000  # with no request rate printed: a mean TTFT this long ...
QUEUED_RATIO = 10  # ... and this many TPOTs is a queue in front of the server
QUEUED_ALONE_MS = 60_000  # where no TPOT is printed (a block cut): no prefill takes a minute
# Clients whose default is to send every prompt at once; GenAI-Perf, AIPerf and GuideLLM
# default to a fixed number of concurrent requests, so a result of theirs that prints no
# rate says nothing about a flood.
RATE_INF_DEFAULT = ("vllm.bench_serve", "sglang.bench_serving")


def _prompts_line(ctx: Case, row: dict) -> list:
    """The client args line above a printed result that says how many prompts were sent."""
    args = ctx.config_rows("bench.num_prompts").filter(
        (pl.col("source") == row["source"]) & (pl.col("line_no") < row["line_no"]))
    return ctx.evidence(args.tail(1)) if row.get("block") else []


def _failed(ctx: Case, rows: pl.DataFrame) -> list[Finding]:
    # A result that counts failures and no successes (AIPerf's error summary printed alone,
    # bench/213) says none succeeded as far as it shows: its share is 1, its total unknown.
    sent = pl.col("completed").fill_null(0) + pl.col("failed")
    bad = rows.filter(pl.col("failed") > 0).with_columns(share=pl.col("failed") / sent)
    if bad.height == 0:
        return []
    worst = bad.sort("share", descending=True).row(0, named=True)
    failed = int(bad["failed"].sum())
    requests = failed + int(bad["completed"].sum()) if bad["completed"].null_count() == 0 else None
    total = f"{requests:,} requests" if requests is not None else "the requests its results count (none counts a success)"
    at = f" at C={worst['c']}" if worst["c"] is not None else ""
    errors = _client_errors(ctx) or _summary_errors(bad)
    said = (f" The client's errors: {'; '.join(e + (f' (x{n})' if n else '') for e, n in errors)}." if errors else "")
    refused, refused_evidence, status = _server_refusals(ctx)
    said += refused
    if status is None:  # no server log: the status the client's per-request errors name most
        codes = _request_errors(ctx)["code"].drop_nulls()
        status = int(codes.mode().sort()[0]) if codes.len() else None
    return [Finding(
        id="bench-failures",
        severity=("critical" if worst["share"] >= FAILED_CRITICAL else "warning" if worst["share"] >= FAILED_WARNING
                  else "info"),
        title=f"{failed:,} benchmark requests failed",
        verdict=(f"{failed:,} of {total} failed in {bad.height} benchmark result(s) (worst {worst['share']:.0%}"
                 f"{at}): throughput and latencies describe only the requests that succeeded, and a server that "
                 f"drops load looks faster than it is.{said}"),
        impact=float(worst["share"]),
        impact_text=f"{worst['share']:.0%} of the requests of one result failed",
        recommendation=(TOO_LONG if status == 400 else
                        "Find the client-side errors (timeouts, connection resets, context-length rejections) in the "
                        "client output or the server log; lower the request rate or concurrency, or raise the "
                        "client timeout, and rerun before comparing numbers."),
        evidence=_prompts_line(ctx, worst) + bench_evidence(ctx.run, worst, "completed", "failed") + refused_evidence,
        metrics={"problem": "failed-requests", "failed": failed, "requests": requests,
                 "worst_share": round(float(worst["share"]), 3)},
    )]


# What an HTTP status the server answered with says about the request it refused.
REFUSALS = {
    400: "the server refused the request as invalid; on vLLM and SGLang that is most often a prompt (or prompt plus "
         "max_tokens) longer than the model's context",
    404: "no such route or model: the client asked for a model name the server does not serve",
    413: "the request body was too large for the server",
    422: "the request did not validate (a parameter the server does not accept)",
    429: "the server's admission limit turned requests away",
    500: "the server failed while handling the request (see its tracebacks)",
    503: "the server was not ready or was shutting down",
}


TOO_LONG = ("Make the requests fit what the server accepts: prompts (plus max_tokens) within max_model_len, or a "
            "larger --max-model-len (SGLang: --context-length) if the model supports it; the server's log or the "
            "client's error text names the limit. Rerun before comparing numbers.")


def _server_refusals(ctx: Case) -> tuple[str, list, int | None]:
    """The error statuses the server's own access lines show (`"POST /v1/completions HTTP/1.1"
    400`), most frequent first, and what each says; the access lines are the evidence."""
    rows = ctx.run.table("requests").filter(
        (pl.col("status") >= 400) & ~pl.col("source").is_in(ctx.client_sources())).collect()
    if rows.height == 0:
        return "", [], None
    counted = rows.group_by("status").len().sort("len", descending=True).head(2)
    parts = [f"{n:,} with HTTP {s}" + (f" ({REFUSALS[s]})" if s in REFUSALS else "")
             for s, n in zip(counted["status"], counted["len"])]
    limit = ctx.config_rows("max_model_len").head(1)
    context = (f"; max_model_len is {limit['value'][0]}" if limit.height and counted["status"][0] == 400 else "")
    first = rows.filter(pl.col("status") == counted["status"][0]).sort("source", "line_no").head(1)
    return (f" The server's access lines answer {'; '.join(parts)}{context}.",
            ctx.evidence(first) + ctx.evidence(limit), int(counted["status"][0]))


def _client_errors(ctx: Case, most: int = 3) -> list[tuple[str, int]]:
    """The final error lines of the client's tracebacks (a refused connection, an HTTP 404),
    most frequent first: what made its requests fail."""
    rows = ctx.events(ctx.by_client() & kind_in(TRACEBACKS))
    last = rows.select(error=pl.col("message").str.extract(r"(?m)^([\w.]*(?:Error|Exception): [^\n]{0,120})", 1))
    counted = last.drop_nulls().group_by("error").len().sort("len", descending=True, maintain_order=True).head(most)
    if counted.height == 0:
        counted = _request_errors(ctx).group_by("error").len().sort("len", descending=True, maintain_order=True) \
            .head(most)
    return list(zip(counted["error"].to_list(), counted["len"].to_list()))


def _summary_errors(bad: pl.DataFrame, most: int = 3) -> list[tuple[str, int | None]]:
    """The errors a result's own summary names (AIPerf's `Code | Type | Message | Count`
    table, kept in `extra` as `error <code> <type>`): with the result's failed count where it
    names one kind only, the kinds alone where it names several."""
    if "extra" not in bad.columns:
        return []
    pairs = bad.select("extra", "failed").explode("extra").drop_nulls("extra").unnest("extra")
    pairs = pairs.filter(pl.col("key").str.starts_with("error "))
    named = [(f"HTTP {k.removeprefix('error ')}: {v[:120]}", n) for k, v, n in pairs.head(most).iter_rows()]
    return named if len(named) == 1 else [(e, None) for e, _ in named]


def _request_errors(ctx: Case) -> pl.DataFrame:
    """The error of each failed request a per-request export holds (AIPerf's profile_export.jsonl:
    `{"code": 400, "type": "Bad Request", "message": "{\"error\": {\"message\": ...}}"}`, or
    `{"type": "ClientConnectorError", "cause": ...}` where no answer came), as one short text:
    the HTTP status and the server's own message, or the client's error and its cause."""
    if "bench_requests" not in ctx.run.tables():
        return pl.DataFrame({"error": [], "code": []}, schema={"error": pl.String, "code": pl.Int64})
    e = pl.col("error")
    field = lambda path: e.str.json_path_match(path)  # noqa: E731
    message = pl.coalesce(field("$.message").str.json_path_match("$.error.message"), field("$.message"))
    text = pl.when(field("$.code").is_not_null()) \
        .then(pl.format("HTTP {} {}: {}", field("$.code"), field("$.type"), message.fill_null(""))) \
        .otherwise(pl.format("{}: {}", field("$.type"), pl.coalesce(field("$.cause"), message).fill_null("")))
    rows = ctx.run.table("bench_requests").filter(e.is_not_null() & e.str.starts_with("{")).select(e).collect()
    return rows.select(error=text.str.slice(0, 160), code=field("$.code").cast(pl.Int64, strict=False))


def _low_concurrency(ctx: Case, rows: pl.DataFrame) -> list[Finding]:
    low = rows.with_columns(ratio=pl.col("achieved") / pl.col("c")).filter(pl.col("ratio") < LOW_ACHIEVED)
    if (theirs := client_short(ctx)).height:  # the client's own shortfall: client-bottleneck names it
        low = low.join(theirs.select("source", "line_no"), on=["source", "line_no"], how="anti")
    if low.height == 0:
        return []
    worst = low.sort("ratio").row(0, named=True)
    prompts = f" with {worst['num_prompts']} prompts" if worst["num_prompts"] else ""
    return [Finding(
        id="bench-failures",
        severity="warning",
        title=f"Achieved concurrency {worst['achieved']:.0f} of {worst['c']} requested",
        verdict=(f"At C={worst['c']}{prompts} the client kept only {worst['achieved']:.1f} requests in flight on "
                 f"average ({worst['ratio']:.0%}); {low.height} result(s) fall below {LOW_ACHIEVED:.0%}. The step "
                 "measured a lighter load than its label: its throughput is not the server's at that concurrency."),
        impact=float(1 - worst["ratio"]),
        impact_text=f"{1 - worst['ratio']:.0%} of the requested concurrency never reached the server",
        recommendation=("Send at least 4-8x as many prompts as the concurrency so the run reaches a steady state, "
                        "set --request-rate inf (or high enough) so arrivals do not throttle, and check the client "
                        "machine is not the bottleneck."),
        confidence="medium",
        evidence=bench_evidence(ctx.run, worst, "max_concurrency", "concurrency", "peak_concurrency"),
        metrics={"problem": "low-concurrency", "c": worst["c"], "achieved": round(float(worst["achieved"]), 2), "results": low.height},
    )]


def _retokenized(ctx: Case, rows: pl.DataFrame) -> list[Finding]:
    off = (pl.col("output_tokens") - pl.col("output_tokens_retokenized")).abs()
    gap = rows.with_columns(gap=1 - pl.col("output_tokens_retokenized") / pl.col("output_tokens")).filter(
        (pl.col("gap").abs() >= RETOKENIZED_GAP) & (off >= RETOKENIZED_MIN)
        & (off / pl.col("completed") >= RETOKENIZED_PER_REQUEST).fill_null(True))
    if gap.height == 0:
        return []
    worst = gap.sort(pl.col("gap").abs(), descending=True).row(0, named=True)
    # A stream that did not carry the text token by token (bench-invalid's zero-latency, bench/96)
    # explains the gap, and bench-invalid names both counts: no request failed, so no finding
    # here (bench/96). Where no text reached the client at all, it is one,
    # ranked after bench-invalid.
    stream = stream_fault(worst)
    if stream and worst["output_tokens_retokenized"]:
        return []
    return [Finding(
        id="bench-failures",
        severity="warning",
        title=f"Retokenized output {worst['gap']:.0%} off the generated token count",
        verdict=(f"The client re-tokenized {worst['output_tokens_retokenized']:,} tokens from the streamed text "
                 f"where the server generated {worst['output_tokens']:,}: " + (
                     "no generated text reached the client at all (see bench-invalid). "
                     if worst["output_tokens_retokenized"] == 0 else
                     "the output does not round-trip through the tokenizer (text after EOS under ignore_eos, special "
                     "tokens, a tokenizer that differs from the server's). ")
                 + "Output throughput counts tokens a user may never see."),
        consequence=stream or worst["output_tokens_retokenized"] == 0,
        impact=0.0,
        impact_text="throughput may be overstated; check the outputs before trusting it",
        recommendation=("Fix the stream first (bench-invalid), then compare the two token counts again."
                        if stream else
                        "Inspect generated texts (--output-details): drop --ignore-eos or use a dataset whose outputs "
                        "end naturally, and make the client use the server's tokenizer."),
        confidence="medium",
        evidence=bench_evidence(ctx.run, worst, "output_tokens", "output_tokens_retokenized"),
        metrics={"problem": "retokenized-mismatch", "generated": worst["output_tokens"], "retokenized": worst["output_tokens_retokenized"]},
    )]


def _offered(worst: dict) -> str:
    """What the client offered, in the words of the evidence that says so."""
    if worst["request_rate"] == float("inf"):
        cap = worst["max_concurrency"]
        return ("every prompt at once (rate inf, " + (f"--max-concurrency {cap} holds none of the "
                f"{worst['num_prompts'] or worst['completed']} back)" if cap is not None else "no --max-concurrency)"))
    if worst["request_rate"] is not None:
        return f"{worst['request_rate']:g} requests/s"
    peak, done = worst["peak_concurrency"], worst["completed"]
    if peak is not None and done and peak >= ALL_IN_FLIGHT * done:
        return f"every prompt at once (no request rate in the log; {peak:.0f} of {done} requests were in flight at once)"
    waited = (f"{worst['ttft_mean'] / worst['tpot_mean']:.0f}x as long as each token after it" if worst["tpot_mean"]
              else f"{worst['ttft_mean'] / 1000:.0f} s on average")
    return f"more than it served (no request rate in the log; the first token waited {waited})"


def _overload(ctx: Case, rows: pl.DataFrame) -> list[Finding]:
    rate = pl.col("request_rate")
    # Not printed: the clients' default is inf, but the log does not say so; only a queue
    # that the latencies show (first token far slower than the tokens after it) says it.
    # A block cut before its TPOT rows still has the ITL ones, a token's time all the same
    # (bench/331 of hold-out 19).
    token = pl.coalesce("tpot_mean", "itl_mean")
    queued = (((pl.col("ttft_mean") >= QUEUED_TTFT_MS) & (pl.col("ttft_mean") >= QUEUED_RATIO * token))
              | (token.is_null() & (pl.col("ttft_mean") >= QUEUED_ALONE_MS)))
    # Without streaming (sglang bench_serving --disable-stream) the first token comes with the
    # whole answer: TTFT is the request's latency and shows no queue, and a burst of prompts
    # that the server runs all at once is a throughput test (sglang/250 of hold-out 13). One
    # token a request also makes TTFT the latency, streamed or not (bench/17: 768 tokens for 768
    # requests, a queue all the same).
    unstreamed = (((pl.col("ttft_mean") - pl.col("e2e_mean")).abs() <= UNSTREAMED * pl.col("e2e_mean"))
                  & (pl.col("output_tokens") >= 2 * pl.col("completed"))).fill_null(False)
    burst = rate.is_infinite() & (pl.col("completed") >= MIN_BURST) & ~unstreamed
    inf_default = pl.col("tool").is_null() | pl.col("tool").is_in(RATE_INF_DEFAULT)
    # A first token that waits a minute on average is a queue whatever the client's default rate:
    # no prefill takes that long (bench/258, bench/297: ais_bench, 2,800 requests, TTFT 204-347 s).
    minute = (pl.col("ttft_mean") >= QUEUED_ALONE_MS).fill_null(False)
    unknown = (rate.is_null() & (pl.col("completed") >= MIN_BURST) & ~unstreamed
               & ((inf_default & queued.fill_null(False)) | minute))
    # A few requests at a finite rate finish at the speed of one request, not the server's
    # capacity: below MIN_BURST of them only a queue in the latencies says more was offered.
    few = (pl.col("completed") < MIN_BURST) & ~queued.fill_null(False)
    too_fast = rate.is_finite() & (rate > OVERLOAD * pl.col("request_throughput")) & ~few.fill_null(False)
    # A rate just above what the server completes still grows a queue for the whole run: where
    # the latencies show it, that is a flood too (bench/331 of hold-out 19: 40/s offered, 35.4
    # served, TTFT 19 s against 34 ms a token).
    outran = (rate.is_finite() & (rate > OUTRUN * pl.col("request_throughput")) & queued).fill_null(False)
    # No rate printed, but vLLM's `Peak concurrent requests` says they were all in flight at once.
    all_in = (rate.is_null() & (pl.col("completed") >= MIN_BURST)
              & (pl.col("peak_concurrency") >= ALL_IN_FLIGHT * pl.col("completed"))).fill_null(False)
    # With --max-concurrency the client holds requests back itself: the server is not flooded.
    # A cap as large as the prompts sent holds none back, but sending them all at once is also
    # how a throughput test is run (sglang/11: 256 at 256): a flood only where the latencies
    # show the queue (bench/218 of hold-out 9: 320 of 320, TTFT 165 s behind max_num_seqs 135).
    capped = pl.col("max_concurrency").is_not_null()
    holds_back = capped & ((pl.col("max_concurrency") < pl.coalesce("num_prompts", "completed"))
                           | ~queued.fill_null(False))
    over = rows.filter(~holds_back.fill_null(capped) & (burst | unknown | too_fast | outran | all_in))
    if over.height == 0:
        return []
    worst = over.sort("ttft_mean", descending=True, nulls_last=True).row(0, named=True)
    offered = _offered(worst)
    ttft = f"; mean TTFT {worst['ttft_mean'] / 1000:.1f} s is mostly time in the queue" if worst["ttft_mean"] else ""
    knee_text, knee = _rate_knee(ctx)
    cap_text, cap_evidence = _server_cap(ctx, worst)
    return [Finding(
        id="bench-overload",
        severity="warning",
        title="Benchmark offered more load than the server serves",
        verdict=(f"The client offered {offered} while the server completed "
                 + (f"{worst['request_throughput']:g} requests/s" if worst["request_throughput"] is not None else
                    f"{worst['completed']:,} requests (the log gives no request throughput)")
                 + f"{ttft}. Throughput is the server's saturated capacity and latencies measure queueing, "
                 "not the speed of one request." + cap_text + knee_text),
        impact=0.0,
        impact_text="latency figures describe the queue, not the server's speed",
        recommendation=("Sweep --max-concurrency (1, 2, 4 ... 128) or request rates below the measured throughput to "
                        "see latency at a load the server sustains; a server-side cap (max_num_seqs, "
                        "max_running_requests) shows in its log as requests waiting."),
        confidence="low" if worst["request_rate"] is None and "in flight" not in offered else "medium",
        evidence=bench_evidence(ctx.run, worst, "request_rate", "request_throughput", "ttft_mean", "peak_concurrency")
        + cap_evidence,
        metrics={"request_rate": worst["request_rate"], "request_throughput": worst["request_throughput"],
                 "ttft_mean_ms": worst["ttft_mean"]} | ({"rate_knee": knee} if knee is not None else {}),
    )]


SATURATED_TTFT = 10  # times the TTFT at the knee: past it the first token waits in the queue


def _saturated(ctx: Case) -> list[Finding]:
    """A concurrency sweep run past the server's capacity: beyond the knee (the first level where
    doubling the concurrency adds under 10 % of throughput) throughput stays flat while the first
    token waits ten times as long and at least a second, so those levels measure the queue
    (bench/325 of hold-out 18: 1,045 tok/s from C=256 to 4096, TTFT 0.6 s to 641 s)."""
    sweep = ctx.metrics.get("sweep")
    knee = sweep.summary.get("knee_level") if sweep else None
    levels = sweep.frames["levels"].sort("c") if knee else None
    if levels is None or levels.filter(pl.col("c") == knee)["ttft_mean"].drop_nulls().len() == 0:
        return []
    base = float(levels.filter(pl.col("c") == knee)["ttft_mean"][0])
    queued = levels.filter((pl.col("c") > knee) & (pl.col("ttft_mean") >= max(SATURATED_TTFT * base, QUEUED_TTFT_MS)))
    if queued.height == 0:
        return []
    worst = queued.row(-1, named=True)
    return [Finding(
        id="bench-overload", severity="warning",
        title=f"Sweep runs past the server's capacity above C={knee}",
        verdict=(f"Beyond C={knee} throughput stays at {sweep.summary['peak_tok_s']:,.0f} output tok/s while the mean "
                 f"TTFT grows from {base / 1000:.1f} s to {worst['ttft_mean'] / 1000:.1f} s at C={worst['c']}: "
                 f"{queued.height} level(s) measure the queue in front of a saturated server, not its speed."),
        impact=0.0, impact_text="latency figures above the knee describe the queue",
        recommendation=("Read the latencies at or below the knee; to serve more at once add replicas or GPUs "
                        "(tensor or data parallel), or cap the clients at the knee's concurrency."),
        confidence="medium", evidence=bench_evidence(ctx.run, worst, "ttft_mean", "output_throughput"),
        metrics={"knee_level": knee, "ttft_mean_at_knee_ms": base, "queued_levels": queued["c"].to_list()},
    )]


def _server_cap(ctx: Case, worst: dict) -> tuple[str, list]:
    """The server's own cap on requests running at once, where its settings are in the run and
    the client sent more: the rest waited in the server's queue."""
    cap = ctx.config_rows("max_num_seqs", "max_running_requests").head(1)
    sent = worst["num_prompts"] or worst["completed"]
    value = cap["value"].cast(pl.Int64, strict=False)[0] if cap.height else None
    if value is None or not sent or value >= sent:
        return "", []
    return (f" The server runs at most {value} requests at once ({cap['key'][0]} = {value}): of the {sent} sent, the "
            "others waited in its queue.", ctx.evidence(cap))


def _rate_knee(ctx: Case) -> tuple[str, float | None]:
    """Where a sweep of offered rates stops gaining throughput (loganalyze/metrics/sweep.py):
    the load the server sustains, from the client's numbers alone; which server limit holds
    it there is for the server's log to say (concurrency-cap, kv-pressure)."""
    sweep = ctx.metrics.get("sweep")
    s = sweep.summary if sweep else {}
    if s.get("rate_knee") is None:
        return "", None
    rates = ", ".join(f"{r:g}" for r in s["rate_levels"])
    ttft = (f"; median TTFT {s['ttft_p50_ms_at_rate_knee']:,.0f} ms there, up to {s['ttft_p50_ms_beyond_rate_knee']:,.0f} "
            "ms beyond" if s["ttft_p50_ms_at_rate_knee"] is not None and s["ttft_p50_ms_beyond_rate_knee"] is not None
            else "")
    return (f" Across the sweep's offered rates ({rates} req/s) output throughput stops rising at "
            f"{s['rate_peak_tok_s']:,.0f} tok/s from {s['rate_knee']:g} req/s{ttft}: about what the server sustains.",
            s["rate_knee"])


def _usage_error(ctx: Case) -> list[Finding]:
    """The client refused its own command line (argparse's `usage: ...` then `prog: error: ...`,
    fixtures/real/bench/91): it exited before it sent a request, so the run measured nothing."""
    clients = ctx.client_sources()
    rows = ctx.events(pl.col("source").is_in(clients) & kind_in(USAGE)) if clients else pl.DataFrame()
    rows = rows.with_columns(error=pl.col("fields").str.json_path_match("$.error")).filter(
        pl.col("error").is_not_null()) if rows.height else rows
    if rows.height == 0:
        return []
    first = rows.row(0, named=True)
    program = json.loads(first["fields"]).get("program") or "the client"
    return [Finding(
        id="bench-failures",
        severity="warning",
        title=f"{program} refused its command line: no load was sent",
        verdict=(f"{program} stopped on its arguments ({first['error'][:160]}) before sending a request: this run "
                 "has no benchmark result, and the server's log, if any, shows no load from it."),
        impact=1.0, impact_text="the benchmark never ran",
        recommendation=f"Fix the {program} command line (its usage line names what it accepts) and run it again.",
        evidence=ctx.evidence(rows.head(1)),
        metrics={"problem": "usage-error", "program": program, "errors": rows.height},
    )]


def _all_failed(ctx: Case) -> list[Finding]:
    """The serving client's own warning that no request succeeded (`UserWarning: All requests
    failed.`, bench/222 of hold-out 9), where no result counts the failures (a paste cut after
    it, or a result too empty to read): the run measured nothing."""
    rows = ctx.events(kind_in(ALL_FAILED))
    if rows.height == 0:
        return []
    errors = _client_errors(ctx)
    said = f" The client's errors: {'; '.join(f'{e} (x{n})' for e, n in errors)}." if errors else ""
    refused, refused_evidence, status = _server_refusals(ctx)
    return [Finding(
        id="bench-failures", severity="critical",
        title="Every benchmark request failed",
        verdict=("The benchmark client warned that all its requests failed: no request succeeded, so any "
                 f"throughput or latency printed after it is empty, not the server's.{said}{refused}"),
        impact=1.0, impact_text="the benchmark measured nothing",
        recommendation=(TOO_LONG if status == 400 else
                        "Check the client's arguments against the server (--backend, --base-url or --host/--port, "
                        "--model, the dataset path) and that the server was ready; the server's log shows what it "
                        "answered. Run one request by hand (curl) before rerunning the benchmark."),
        evidence=ctx.evidence(rows.head(1)) + refused_evidence,
        metrics={"problem": "all-failed", "warnings": rows.height},
    )]


def _refused_run(ctx: Case) -> list[Finding]:
    """A client's command line and the server's access lines answering its requests with errors
    (`"POST /chat/completions HTTP/1.1" 404 Not Found`, bench/287 of hold-out 14), and no result:
    the requests were turned away, so the run measured nothing."""
    if "requests" not in ctx.run.tables() or not ctx.config_rows("bench.tool").height:
        return []
    posted = ctx.run.table("requests").filter((pl.col("status") >= 400) & (pl.col("method") == "POST")).collect()
    refused, refused_evidence, status = _server_refusals(ctx) if posted.height else ("", [], None)
    if status is None:  # a probe's 404 (GET /metrics) is no request of the client's
        return []
    return [Finding(
        id="bench-failures", severity="warning",
        title="The server turned the benchmark's requests away",
        verdict=f"The benchmark client ran and no result of it is in the logs.{refused} The run measured nothing.",
        impact=1.0, impact_text="the benchmark measured nothing",
        recommendation=(TOO_LONG if status == 400 else
                        "Check the client's route and model against the server (--endpoint, --base-url, --backend, "
                        "--model: a 404 is a path or model the server does not serve); run one request by hand "
                        "(curl) before rerunning the benchmark."),
        confidence="medium", evidence=refused_evidence,
        metrics={"problem": "refused", "status": status},
    )]


def _client_crashed(ctx: Case) -> list[Finding]:
    """The client died on a traceback and printed no result (vLLM's benchmark_serving.py with
    a --backend the server does not speak, bench/208 and bench/212 of hold-out 7; one that
    stops at its initial test request, bench/209): the run measured nothing, and the error
    is the client's, not the server's (crash leaves it out)."""
    rows = ctx.events(ctx.by_client() & kind_in(TRACEBACKS))
    if rows.height == 0:
        return []
    errors = _client_errors(ctx, most=1)
    said = f" It ended with `{errors[0][0]}`." if errors else " Its final error line is not in the log (cut)."
    return [Finding(
        id="bench-failures", severity="warning",
        title="The benchmark client failed before it printed a result",
        verdict=(f"The benchmark client raised {rows.height} traceback(s) and no benchmark result follows: this run "
                 f"measured nothing.{said} The traceback runs in the client's code, so it says nothing about the "
                 "server."),
        impact=1.0, impact_text="the benchmark produced no result",
        recommendation=("Read the client's traceback (evidence): a --backend or endpoint the server does not serve, "
                        "a server not yet ready, or a missing dataset or tokenizer stop a client before its result. "
                        "Fix it and rerun."),
        confidence="medium", evidence=ctx.evidence(rows.head(1)),
        metrics={"problem": "client-crashed", "tracebacks": rows.height},
    )]


# A client's own words for a request it lost (lework/llm-benchmark's `Error during request:
# Connection error.` and `Request 0 failed`, bench/236 of hold-out 11; the OpenAI SDK's
# `Connection error.`), at the level ERROR or WARNING of the client's log.
# perf_analyzer's `Thread [0] had error: ...` and `Failed to retrieve results from inference request.`
REQUEST_FAILED = (r"(?i)\brequest \S+ failed\b|\berror during request\b|\bconnection error\b|\bfailed request"
                  r"|^Thread \[\d+\] had error: |failed to retrieve results from inference request")


def _client_request_errors(ctx: Case) -> list[Finding]:
    """The client's log says requests failed and no result follows: how many lines say so,
    the most frequent one quoted. Not how many requests were lost (a line may be a retry)."""
    clients = ctx.client_sources()
    rows = ctx.events(pl.col("source").is_in(clients) & pl.col("severity").is_in(["error", "warning"])
                      & pl.col("message").str.contains(REQUEST_FAILED).fill_null(False)) if clients else pl.DataFrame()
    if rows.height == 0:
        return []
    said = rows.group_by("message").len().sort("len", "message", descending=[True, False]).row(0)
    return [Finding(
        id="bench-failures", severity="warning",
        title="The benchmark client's requests failed and it printed no result",
        verdict=(f"{rows.height:,} line(s) of the client's log say a request failed (the most frequent: "
                 f"`{said[0][:120]}`, x{said[1]}) and no benchmark result follows: this run measured nothing."),
        impact=1.0, impact_text="the benchmark produced no result",
        recommendation=("Check that the client reaches the server (its --url / base URL and port, the model name, "
                        "an API key) and that the server is up: run one request by hand (curl), then rerun."),
        confidence="medium", evidence=ctx.evidence(rows.head(2)),
        metrics={"problem": "client-request-errors", "lines": rows.height},
    )]


def _client_answers(ctx: Case) -> list[Finding]:
    """Error answers in the client's own request lines (httpx's `HTTP Request: POST ...
    "HTTP/1.1 503 Service Unavailable"`, fixtures/real/bench/81), where no result counts failed
    requests: an answer is not a request's end (the OpenAI SDK retries 429 and 5xx), so this
    says what the server answered, not how many requests were lost."""
    clients = ctx.client_sources()
    rows = ctx.run.table("requests").filter(pl.col("source").is_in(clients) & kind_in(CLIENT_HTTP)).collect() \
        if clients and "requests" in ctx.run.tables() else pl.DataFrame()
    bad = rows.filter(pl.col("status") >= 400) if rows.height else rows
    if bad.height == 0:
        return []
    counted = bad.group_by("status").len().sort("len", "status", descending=[True, False]).head(2)
    parts = [f"{n:,} HTTP {c}" + (f" ({REFUSALS[c]})" if c in REFUSALS else "")
             for c, n in zip(counted["status"], counted["len"])]
    retries = ctx.events(pl.col("source").is_in(clients) & kind_in(RETRIES))
    retried = (f" The client retried ({retries.height:,} retry line(s)): a retried request that then succeeds carries "
               "its wait into the latencies, and a benchmark that counts a request by its last answer can report it "
               "as a success." if retries.height else "")
    share = bad.height / rows.height
    return [Finding(
        id="bench-failures", severity="warning" if share >= FAILED_WARNING else "info",
        title=f"The server answered {bad.height:,} of the client's requests with an error",
        verdict=f"Of {rows.height:,} responses the client logged, {'; '.join(parts)}.{retried} The log holds no "
                "result that counts failed requests, so how many requests were lost in the end is not known.",
        impact=round(share, 3), impact_text=f"{share:.0%} of the logged responses were errors",
        recommendation=(TOO_LONG if counted["status"][0] == 400 else
                        "Read the server's log for the window of these answers (not ready, overloaded, shutting "
                        "down); lower the concurrency or wait for readiness, and rerun before comparing numbers."),
        evidence=ctx.evidence(bad.sort("source", "line_no").head(1)) + ctx.evidence(retries.head(1)),
        metrics={"problem": "client-error-answers", "responses": rows.height, "errors": bad.height,
                 "statuses": dict(zip(map(str, counted["status"]), counted["len"])), "retries": retries.height},
        confidence="medium",
    )]


def find(ctx: Case) -> list[Finding]:
    sweep = ctx.metrics.get("sweep")
    if not sweep:
        return ((_usage_error(ctx) or _all_failed(ctx) or _client_crashed(ctx) or _client_request_errors(ctx)
                 or _refused_run(ctx)) + _client_answers(ctx))
    # One result per level, plus the results of no level: they name none, or print no
    # throughput to rank them by (a block cut short, a run where nearly every request failed).
    levels, results = sweep.frames["levels"], sweep.frames["results"]
    unranked = results.filter(pl.col("c").is_not_null() & ~pl.col("c").is_in(levels["c"].implode()))
    rows = pl.concat([levels, results.filter(pl.col("c").is_null()), unranked.unique("c", keep="last", maintain_order=True)],
                     how="diagonal_relaxed")
    return (_usage_error(ctx) + (_failed(ctx, rows) or _all_failed(ctx)) + _low_concurrency(ctx, rows) + _retokenized(ctx, rows)
            + (_overload(ctx, rows) or _saturated(ctx)))
