"""bench-invalid: latency numbers of a benchmark result that cannot be true.

A client derives TTFT and ITL from the time it received streamed chunks that carry
text. Some results hold numbers no server could produce; they measure a fault of the
client or of the stream, and tuning the server on them chases nothing. One finding per
result, the first rule that holds (docs/findings.md, "Benchmark numbers that cannot be
true", says where each threshold comes from):

* zero-latency: mean TTFT, median TTFT or mean ITL exactly 0 while the requests
  generated tokens. vLLM's and SGLang's clients start TTFT at 0 and set it at the first
  chunk with text, so 0 means no text chunk reached the client (bench/13, bench/25:
  TTFT and ITL 0 over 300 requests of 1000 tokens, retokenized 0; bench/15: median TTFT
  0, the server's first chunks carried no text).
* negative: a negative mean or median latency: the client's timestamps are broken
  (bench/38: GuideLLM against Ollama, mean TTFT -1.7e12 ms).
* mock-backend: mean TPOT under 0.2 ms (5,000 tokens/s per stream, beyond any server
  published) while more requests were in flight at once than the client's own
  --max-concurrency allows: requests return as fast as they are sent, the signature of a
  mock or echo backend, or of a client that times the wrong thing (bench/03: TPOT 0.10
  ms, peak 778 in flight at max concurrency 64).
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Evidence, Finding
from loganalyze.diagnosis.bench_evidence import bench_evidence

FASTEST_TPOT_MS = 0.2  # 5,000 tokens/s per stream: faster than any published serving speed
NEGATIVE = ("ttft_mean", "ttft_median", "tpot_mean", "tpot_median", "itl_mean", "itl_median", "e2e_mean", "e2e_median")
NAMES = {c: f"{c.split('_')[1]} {c.split('_')[0].upper()}" for c in NEGATIVE}

CLIENT_FIX = ("Fix the measurement on the client side before reading any latency: make the client stream "
              "(a streaming backend or endpoint, `stream: true`), check that the server's streamed chunks carry "
              "text (a reasoning parser or a chat template can move it out of `content`), and use a client "
              "release that times the first chunk with tokens. Do not change the server on these numbers.")


def _generated(row: dict) -> bool:
    """Whether the result generated more than one token per request: ITL exists."""
    done, tokens = row.get("completed"), row.get("output_tokens")
    if tokens is not None and done:
        return tokens > done
    return bool(row.get("tpot_mean") or row.get("e2e_mean"))


def _zero_latency(row: dict) -> tuple[str, tuple[str, ...]] | None:
    zero = [c for c in ("ttft_mean", "ttft_median", "itl_mean") if row.get(c) == 0]
    if not zero or not _generated(row):
        return None
    named = ", ".join(NAMES[c] for c in zero)
    retok = row.get("output_tokens_retokenized")
    said = (f"; the client re-tokenized {retok:,} tokens from the text it received" if retok is not None
            and row.get("output_tokens") and retok < row["output_tokens"] else "")
    share = "at least half of the requests" if zero == ["ttft_median"] else "the requests"
    tokens = f"{row['output_tokens']:,}" if row.get("output_tokens") else "the"
    which = "TTFT and ITL" if "itl_mean" in zero and len(zero) > 1 else "ITL" if zero == ["itl_mean"] else "TTFT"
    return (f"{named[0].upper()}{named[1:]} exactly 0 ms while {tokens} tokens were generated{said}: the client "
            f"starts a request's latencies at 0 and sets them from the streamed chunks that carry text, so for {share} "
            f"no such chunk arrived (or all text came in one chunk). The {which} figures of this result are invalid",
            (*zero, "output_tokens"))


def _negative(row: dict) -> tuple[str, tuple[str, ...]] | None:
    neg = [c for c in NEGATIVE if (row.get(c) or 0) < 0]
    if not neg:
        return None
    first = neg[0]
    return (f"The {NAMES[first]} is {row[first]:,.1f} ms: a latency cannot be negative, the client's "
            "timestamps are broken (a server response it could not time, a clock that mixed epochs). Every "
            "latency of this result is invalid", tuple(neg[:2]))


def _mock_backend(row: dict) -> tuple[str, tuple[str, ...]] | None:
    tpot, peak, limit = row.get("tpot_mean"), row.get("peak_concurrency"), row.get("max_concurrency")
    if tpot is None or not 0 < tpot < FASTEST_TPOT_MS or peak is None or limit is None or peak <= limit:
        return None
    return (f"Mean TPOT {tpot:g} ms ({1000 / tpot:,.0f} tokens/s per stream, beyond any serving stack) while "
            f"{peak:.0f} requests were in flight at once under --max-concurrency {limit}: requests came back as "
            "fast as they were sent, which a mock or echo backend does, not a model. Throughput and latencies "
            "are not a measurement of a server", ("tpot_mean", "peak_concurrency", "max_concurrency"))


RULES = (("zero-latency", _zero_latency), ("negative", _negative), ("mock-backend", _mock_backend))


def stream_fault(row: dict) -> bool:
    """Whether the result's latencies show that streamed chunks did not carry the text token by
    token (zero-latency): the cause of any gap between generated and re-tokenized output too."""
    return _zero_latency(row) is not None


def _evidence(ctx: Case, row: dict, columns: tuple[str, ...]) -> list[Evidence]:
    """The result's rows that show the numbers, else the result's first line."""
    cited = bench_evidence(ctx.run, row, *columns)
    return cited or ctx.evidence(pl.DataFrame([{"source": row["source"], "line_no": row["line_no"],
                                                "raw": (row.get("raw") or "")[:240]}]))


def _finding(ctx: Case, problem: str, hits: list[tuple[dict, str, tuple[str, ...]]]) -> Finding:
    row, verdict, columns = hits[0]
    at = f" at C={row['c']}" if row.get("c") is not None else ""
    more = f" {len(hits) - 1} other result(s) show the same." if len(hits) > 1 else ""
    return Finding(
        id="bench-invalid",
        severity="warning",
        title=f"Benchmark latencies{at} cannot be true ({problem})",
        verdict=f"{verdict}.{more}",
        impact=0.0,
        impact_text="the result's figures measure a client or stream fault, not the server",
        recommendation=CLIENT_FIX,
        evidence=_evidence(ctx, row, columns),
        metrics={"problem": problem, "results": len(hits), "c": row.get("c"), **{c: row.get(c) for c in columns}},
    )


def find(ctx: Case) -> list[Finding]:
    sweep = ctx.metrics.get("sweep")
    if not sweep:
        return []
    hits: dict[str, list] = {}
    for row in sweep.frames["results"].iter_rows(named=True):  # one per printed result: a handful
        for problem, rule in RULES:
            said = rule(row)
            if said is not None:
                hits.setdefault(problem, []).append((row, *said))
                break
    return [_finding(ctx, problem, found) for problem, found in hits.items()]
